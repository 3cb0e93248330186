/* omma — inference engines and their executions.
 *
 * An omma_engine is a loaded model: its graph after the load-time rewrites,
 * its weights, its activation memory plan. It is immutable after load and
 * reference-counted, so any number of threads and pipelines may share one
 * (query it, create execs from it) at once.
 *
 * An omma_exec is one pipeline's execution state for an engine: its
 * activation arena (sized for max_batch items) and the input/output buffers
 * inside it, which the caller fills and reads in place. An exec belongs to
 * one user at a time: calling omma_exec_run on one exec from two threads at
 * once is detected and returns OMMA_ERR_BUSY (never undefined behaviour).
 * Different execs of one engine run concurrently without locks, and give
 * bitwise the same results as when run one by one. A CPU exec runs each
 * model node on several threads (omma_engine_options.threads, all cores by
 * default): the exec's own worker threads join the caller's during
 * omma_exec_run, and give bitwise the results of one thread.
 *
 * Tensors are float32, NHWC for images: an input declared [1, H, W, C] by
 * the model is a buffer of max_batch * H * W * C floats, item k at offset
 * k * H * W * C. Outputs likewise ([1, 896, 16] -> max_batch * 896 * 16).
 *
 * Backends: OMMA_BACKEND_CPU, the plain-C fp32 reference (chosen explicitly,
 * never a hidden fallback), and OMMA_BACKEND_CUDA on an omma_device, fp32 or
 * fp16.
 *
 * The CUDA backend:
 * - Loading uploads the weights once, into one device allocation. Engines
 *   are cached per device: loading the same file (same inode, size and
 *   modification time) with the same precision, rewrites and outputs
 *   (omma_engine_options.outputs: all, or the same names in the same order) on the same
 *   device returns the engine already loaded, retained, never a second copy
 *   of the weights. The cache is the one other piece of per-process state
 *   (guarded by a lock); an engine leaves it when its last reference goes.
 *   The device must stay open until every engine on it is released.
 * - An exec owns a CUDA stream (from the device's stream pool) or uses one
 *   the caller passes (omma_exec_options.stream), and one device allocation:
 *   the activation arena plus its float32 I/O buffers (omma_exec_get_stats).
 * - omma_exec_input/omma_exec_output return DEVICE pointers. Inputs and
 *   outputs are float32 at the API boundary in both precisions, so a
 *   pre-processing kernel writes straight into the input and a decoding
 *   kernel reads straight from the output (zero copy). An fp32 exec's I/O
 *   buffers are the arena slots themselves; in an fp16 exec the first
 *   convolution reads a float input directly where it can (the models'
 *   stems), other inputs are converted to half in one kernel each at the
 *   start of the run, and outputs back to float32 in one kernel per output
 *   at the end (inside the same graph).
 * - omma_exec_run is ASYNCHRONOUS: it enqueues the run on the exec's stream
 *   and returns. The results are ready after omma_exec_wait, or for work
 *   ordered after the run on omma_exec_stream (record an event there, or
 *   enqueue the next kernel on it). Do not write the inputs of a queued run
 *   from another stream before it is done.
 * - The first run at a batch size captures the launches in a CUDA graph,
 *   later runs at that size replay it (one launch); omma_exec_options.graphs
 *   = 0 launches node by node instead. Both give bitwise the same results.
 * - A device with a sticky error (illegal address, failed launch...) makes
 *   every later run and wait fail with OMMA_ERR_DEVICE_LOST.
 * - All CUDA calls are made inside the device's scope (omma_device_enter);
 *   callers need none. */
#ifndef OMMA_ENGINE_H
#define OMMA_ENGINE_H

#include <stddef.h>

#include "omma/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct omma_device omma_device; /* include/omma/device.h */
typedef struct omma_engine omma_engine;
typedef struct omma_exec omma_exec;

typedef enum omma_backend {
    OMMA_BACKEND_CPU = 0, /* reference executor on the host, fp32 */
    OMMA_BACKEND_CUDA,    /* on an omma_device, fp32 or fp16 (see top) */
} omma_backend;

typedef enum omma_precision {
    OMMA_PRECISION_FP32 = 0,
    OMMA_PRECISION_FP16, /* CUDA only: fp16 storage, fp32 accumulation */
} omma_precision;

typedef struct omma_engine_options {
    omma_backend backend;
    omma_precision precision;
    int rewrites; /* nonzero: apply the load-time rewrites (default 1) */
    int threads;  /* CPU: threads each exec of this engine runs on, the
                   * caller's included: 0 (default) = one per online CPU,
                   * 1 = the calling thread alone, up to 256. Each exec
                   * starts threads - 1 workers of its own, asleep between
                   * runs; a run splits every convolution, depthwise +
                   * pointwise block, pooling and resize by output rows
                   * among them. Results are bitwise the same for any
                   * count. Execs running at once each use their own
                   * threads: with several, set fewer per exec. Ignored by
                   * the CUDA backend. */
    /* The model outputs to compute, by name (output_count entries, 1..the
     * model's output count), or NULL and 0 (default): all of them. The
     * engine then has exactly these outputs, in this order (output i is
     * outputs[i]), and computes only what they depend on: after the
     * load-time rewrites, every node and weight no kept output needs is
     * removed (fewer nodes and weights, a smaller arena: omma_engine_stats).
     * Kept outputs are bitwise those of the engine with all outputs, on
     * either backend and precision. The names are read during
     * omma_engine_load only (not kept). */
    const char *const *outputs;
    int output_count;
} omma_engine_options;

/* Fills *opt with the defaults: CPU backend, fp32, rewrites on, threads 0
 * (all cores), all outputs. */
void omma_engine_options_init(omma_engine_options *opt);

/* The threads a CPU exec runs on for omma_engine_options.threads =
 * threads: threads itself for 1..256, the online CPUs (at most 256) for 0;
 * 0 for a value out of range. Any thread. */
int omma_cpu_thread_count(int threads);

#define OMMA_TENSOR_MAX_RANK 4

/* A model input or output as the model declares it (batch dimension 1). */
typedef struct omma_tensor_info {
    const char *name;               /* owned by the engine, valid while it lives */
    int rank;
    int dims[OMMA_TENSOR_MAX_RANK]; /* dims[0] is the batch dimension */
    size_t item_elems;              /* floats per batch item */
} omma_tensor_info;

/* What loading did, for reports (omma models inspect, benchmarks). */
typedef struct omma_engine_stats {
    int nodes_loaded;           /* graph nodes as read from the file */
    int nodes;                  /* after the load-time rewrites and pruning */
    int nodes_pruned;           /* removed because no kept output needs them
                                 * (omma_engine_options.outputs; else 0) */
    size_t params;              /* weight values (constants the nodes read;
                                 * after pruning when outputs are chosen) */
    size_t arena_bytes_batch1;  /* activation arena of an exec with max batch 1 */
    size_t arena_bytes_per_item;/* added per extra batch item */
} omma_engine_stats;

/* Loads a model file (TFLite) into a new engine with reference count 1.
 * dev: the device for OMMA_BACKEND_CUDA; must be NULL for the CPU backend.
 * opt: NULL for the defaults (omma_engine_options_init).
 * Errors: OMMA_ERR_INVALID_ARG (NULL path/out, a device given to the CPU
 * backend or none to CUDA, unknown option values, threads out of 0..256;
 * outputs: a count out of 1..the model's outputs, a NULL list or name, a
 * name that is not an output of the model or one given twice, the message
 * naming it and listing the model's outputs),
 * OMMA_ERR_IO (cannot read
 * the file), OMMA_ERR_FORMAT (malformed model, the message says what and
 * where), OMMA_ERR_UNSUPPORTED (an op, option or precision the backend cannot
 * run; fp16 on the CPU), OMMA_ERR_OUT_OF_MEMORY, OMMA_ERR_CUDA and
 * OMMA_ERR_DEVICE_LOST (uploading the weights).
 * CUDA: a cached engine may be returned (see top; the cache tells engines
 * of different outputs apart); release it like any other.
 * On failure *out is NULL. Thread safety: any thread. */
omma_status omma_engine_load(omma_device *dev, const char *path,
                             const omma_engine_options *opt, omma_engine **out);

/* Adds a reference; returns engine. Any thread. NULL is ignored. */
omma_engine *omma_engine_retain(omma_engine *engine);

/* Drops a reference; the last one frees the engine. Execs hold their own
 * reference, so an engine may be released while its execs live. Any thread;
 * accepts NULL. */
void omma_engine_release(omma_engine *engine);

/* Number of model inputs / outputs. Any thread. */
int omma_engine_input_count(const omma_engine *engine);
int omma_engine_output_count(const omma_engine *engine);

/* Describes input (output) i. Errors: OMMA_ERR_INVALID_ARG for a NULL
 * argument or i out of range. Any thread. */
omma_status omma_engine_input_info(const omma_engine *engine, int i, omma_tensor_info *info);
omma_status omma_engine_output_info(const omma_engine *engine, int i, omma_tensor_info *info);

/* Index of the input (output) named name, or -1. Any thread. */
int omma_engine_find_input(const omma_engine *engine, const char *name);
int omma_engine_find_output(const omma_engine *engine, const char *name);

/* Load statistics. Errors: OMMA_ERR_INVALID_ARG for NULL. Any thread. */
omma_status omma_engine_get_stats(const omma_engine *engine, omma_engine_stats *stats);

/* The backend the engine runs on. Any thread. */
omma_backend omma_engine_backend(const omma_engine *engine);

/* Creates an execution context able to run batches of 1..max_batch items;
 * it allocates its arena (omma_engine_stats: batch-1 bytes + per item),
 * starts its worker threads (CPU, omma_engine_options.threads) and holds a
 * reference on the engine. Errors: OMMA_ERR_INVALID_ARG (NULL, max_batch < 1
 * or above 65536), OMMA_ERR_OUT_OF_MEMORY (also when a thread cannot be
 * started). On failure *out is
 * NULL. Any thread; the exec then belongs to its creator (see top). */
omma_status omma_exec_create(omma_engine *engine, int max_batch, omma_exec **out);

/* Options of an exec (omma_exec_create_with). */
typedef struct omma_exec_options {
    void *stream; /* CUDA: a CUstream/cudaStream_t of the engine's device to run
                   * on (not the legacy NULL stream when graphs are on; the
                   * caller keeps it alive until the exec is destroyed), or
                   * NULL: the exec takes one from the device's stream pool.
                   * Must be NULL for the CPU backend. */
    int graphs;   /* CUDA: nonzero (default) captures one CUDA graph per batch
                   * size at its first run and replays it; 0 launches node by
                   * node every run. Ignored by the CPU backend. */
} omma_exec_options;

/* Fills *opt with the defaults: own stream, graphs on. */
void omma_exec_options_init(omma_exec_options *opt);

/* omma_exec_create with options (NULL: the defaults). Errors as
 * omma_exec_create, plus OMMA_ERR_INVALID_ARG for a stream given to a CPU
 * engine, OMMA_ERR_CUDA and OMMA_ERR_DEVICE_LOST (CUDA). */
omma_status omma_exec_create_with(omma_engine *engine, int max_batch,
                                  const omma_exec_options *opt, omma_exec **out);

/* Frees the exec and drops its engine reference; accepts NULL. Must not run
 * concurrently with any other call on the same exec. CUDA: waits for the
 * exec's queued runs first. */
void omma_exec_destroy(omma_exec *exec);

/* The buffer of input i (max_batch items, see top), owned by the exec and
 * valid until it is destroyed; fill the first `batch` items before
 * omma_exec_run. Inputs are left unchanged by a run. Errors:
 * OMMA_ERR_INVALID_ARG (NULL, i out of range). For the CPU backend this is
 * host memory; for the CUDA backend DEVICE memory (float32 in both
 * precisions), to be written on the exec's stream or before the run. */
omma_status omma_exec_input(omma_exec *exec, int i, float **ptr);

/* The buffer of output i, valid like the inputs'; after omma_exec_run its
 * first `batch` items hold the results, until the next run. */
omma_status omma_exec_output(omma_exec *exec, int i, float **ptr);

/* Runs the model on the first `batch` items of the inputs. Each item's
 * results are bitwise the same whatever the batch size and whatever else runs
 * concurrently. CUDA: the kernels are chosen as for max_batch items, at
 * every batch, so execs of different max_batch may differ in the last bits
 * (fp16): size max_batch to the batches the exec runs. CPU: returns when the outputs are ready. CUDA: enqueues the
 * run on the exec's stream and returns (see top: omma_exec_wait).
 * Errors: OMMA_ERR_INVALID_ARG (NULL exec, batch < 1 or > max_batch),
 * OMMA_ERR_BUSY (another thread is using this exec right now: use one exec
 * per thread), OMMA_ERR_DEVICE_LOST (the device had a sticky error),
 * OMMA_ERR_CUDA, backend errors. */
omma_status omma_exec_run(omma_exec *exec, int batch);

/* Blocks until every run queued on the exec is done (CUDA: synchronizes the
 * exec's stream, so work others queued there is waited for too). CPU:
 * returns OMMA_OK at once. Errors: OMMA_ERR_INVALID_ARG (NULL),
 * OMMA_ERR_BUSY (another thread is using the exec), OMMA_ERR_DEVICE_LOST (a
 * run hit a sticky error: the device is unusable), OMMA_ERR_CUDA. */
omma_status omma_exec_wait(omma_exec *exec);

/* The exec's CUDA stream (a CUstream as void *), NULL for the CPU backend.
 * Order work after a run on it instead of waiting on the host. */
void *omma_exec_stream(const omma_exec *exec);

typedef struct omma_exec_stats {
    size_t arena_bytes;   /* activation arena (plan for max_batch) */
    size_t io_bytes;      /* I/O buffers outside the arena (CUDA fp16: float32 I/O) */
    size_t device_bytes;  /* CUDA: device memory the exec holds (arena + I/O,
                           * rounded to alignment); 0 for the CPU backend */
    int launches;         /* kernels and copies the last run launched: the
                           * graph's node count with graphs on; 0 before a run */
    int graphs;           /* CUDA graphs captured so far (one per batch size) */
} omma_exec_stats;

/* Statistics of the exec. Errors: OMMA_ERR_INVALID_ARG for NULL. */
omma_status omma_exec_get_stats(const omma_exec *exec, omma_exec_stats *stats);

/* The max batch the exec was created with (0 for NULL). */
int omma_exec_max_batch(const omma_exec *exec);

/* The exec's engine (no new reference). */
omma_engine *omma_exec_engine(const omma_exec *exec);

#ifdef __cplusplus
}
#endif
#endif
