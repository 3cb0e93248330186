/* omma — GPU devices: the one context per GPU, thread binding scopes,
 * scheduling policy, device facts, health, NVML readings, transfer counters.
 *
 * One context per GPU per process. omma_device_open retains the device's
 * primary context (the one the CUDA runtime, cuBLAS and cuDNN use) once per
 * ordinal and hands every caller the same reference-counted omma_device; omma
 * never creates another context. A thread that wants to make its own CUDA
 * calls on a device enters it with a scope (omma_device_enter/leave), which
 * makes the context current only for the scope's lifetime and afterwards
 * restores exactly what was current before, including a context the host
 * application made itself. omma's own functions that take an omma_device
 * enter and leave by themselves; callers need a scope only for their own
 * CUDA calls.
 *
 * The header needs no CUDA header: a CUcontext is passed as void * (it is a
 * pointer type in cuda.h, so the cast is exact).
 *
 * Thread safety: every function here may be called from any thread. An
 * omma_device is shared and internally locked; an omma_scope belongs to the
 * thread that entered it. */
#ifndef OMMA_DEVICE_H
#define OMMA_DEVICE_H

#include <stddef.h>
#include <stdint.h>

#include "omma/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An open GPU: its primary (or an adopted) context plus omma's per-device
 * state (stream and event pools, memory pool, byte counters). Opaque. */
typedef struct omma_device omma_device;

/* ---- Opening devices ---------------------------------------------------- */

/* Number of GPUs this process can see (after CUDA_VISIBLE_DEVICES).
 * Errors: OMMA_ERR_NO_DEVICE when the NVIDIA driver (libcuda.so.1) is missing
 * or sees no GPU; the detail says which. *n is 0 on failure. */
omma_status omma_device_count(int *n);

/* Opens GPU `ordinal`: the first open in the process retains the device's
 * primary context (cuDevicePrimaryCtxRetain), later opens of the same
 * ordinal, from any thread, return the same object with its reference count
 * raised. Opening does not make the context current on the calling thread.
 * Errors: OMMA_ERR_NO_DEVICE (no driver, no GPU, or no GPU with that
 * ordinal: the detail says how many there are), OMMA_ERR_CUDA,
 * OMMA_ERR_OUT_OF_MEMORY. On failure *out is NULL.
 * Ownership: each successful open must be paired with one omma_device_close. */
omma_status omma_device_open(int ordinal, omma_device **out);

/* Wraps a context the application created and owns (a CUcontext passed as
 * void *). omma uses it wherever it would use the primary context and never
 * destroys it; the application must keep it alive until the last
 * omma_device_close of the returned object. Adopting the same context twice
 * returns the same object; adopting a device's primary context returns the
 * same object as omma_device_open of that ordinal. The context's scheduling
 * policy is left alone.
 * Errors: OMMA_ERR_INVALID_ARG (NULL context), OMMA_ERR_NO_DEVICE,
 * OMMA_ERR_CUDA (not a valid context). On failure *out is NULL. */
omma_status omma_device_adopt(void *cu_context, omma_device **out);

/* Drops one reference. The last one destroys omma's pooled streams, events
 * and memory pool of the device and releases the primary context (an
 * adopted context is left alive). Accepts NULL. Every scope on the device
 * must have been left and every stream, event and buffer taken from it given
 * back first (leftovers are logged as warnings). */
void omma_device_close(omma_device *dev);

/* The device's ordinal (as passed to omma_device_open). */
int omma_device_ordinal(const omma_device *dev);

/* The CUcontext omma uses for the device (as void *): the primary context, or
 * the adopted one. Owned by omma/the application; never destroy it. */
void *omma_device_context(const omma_device *dev);

/* ---- Thread binding scopes ---------------------------------------------- */

/* State of one entered scope. Put it on the stack; its fields are private.
 * A scope belongs to the thread that entered it and is left on that thread. */
typedef struct omma_scope {
    omma_device *dev_;         /* NULL when not entered */
    void *prev_ctx_;           /* context current before enter (may be NULL) */
    struct omma_scope *outer_; /* the thread's enclosing scope */
    unsigned depth_;           /* 1 for the outermost scope of the thread */
    unsigned pushed_;          /* 1 if enter pushed the context */
} omma_scope;

/* Makes dev's context current on the calling thread until the matching
 * omma_device_leave. If it is current already (an enclosing scope, or the
 * application made it current) nothing is pushed; otherwise it is pushed on
 * the thread's context stack, above whatever was current. Scopes nest freely,
 * also across devices. Cost: one cuCtxGetCurrent, plus a push when needed
 * (see `omma bench context` and docs/PERFORMANCE.md).
 * Errors: OMMA_ERR_INVALID_ARG (NULL dev or scope), OMMA_ERR_CUDA. On
 * failure nothing changed and the scope is not entered. */
omma_status omma_device_enter(omma_device *dev, omma_scope *scope);

/* Leaves the thread's innermost scope and restores exactly the context that
 * was current before its enter (NULL, an enclosing scope's, or one the host
 * application made).
 * Errors, each leaving every scope and the context stack untouched:
 *   OMMA_ERR_INVALID_ARG  the scope was never entered or was already left;
 *                         it is not the innermost open scope of this thread
 *                         (left out of order, or from another thread): leave
 *                         the inner scopes first, then this one again; or the
 *                         current context changed inside the scope without
 *                         being restored (someone pushed or set a context and
 *                         did not pop it): restore it, then leave again.
 *   OMMA_ERR_CUDA         popping the context failed. */
omma_status omma_device_leave(omma_scope *scope);

/* The common case in one line: enters dev, runs fn(arg), leaves. Returns
 * fn's status if it failed (its detail kept), else the enter/leave status. */
omma_status omma_device_call(omma_device *dev, omma_status (*fn)(void *arg), void *arg);

/* Number of scopes open on the calling thread (0 outside any scope). */
unsigned omma_scope_depth(void);

/* ---- Scheduling policy -------------------------------------------------- */

/* How a CPU thread waits for the GPU in a synchronization (stream, event or
 * context synchronize) on the primary context. The policy belongs to the
 * context, so it is one per device per process, and is set before the
 * context is first used.
 *
 * DEFAULT is BLOCKING, chosen by measurement (`omma bench context`, numbers
 * in docs/PERFORMANCE.md). On an H100, SPIN and YIELD (and AUTO, which spins
 * there) burn a whole CPU core for the entire wait: waiting for 1 ms of GPU
 * work costs 1006 us of CPU. BLOCKING costs 25-50 us of CPU per
 * synchronization whatever the wait, for 30-85 us more wake-up latency at the
 * median. A multi-camera process has one waiting thread per pipeline, so
 * spinning would take a core from decoding and pre-processing for every
 * camera, to save under 0.1 ms of a 33 ms frame. Choose SPIN where the lowest
 * latency of a single stream matters more than CPU.
 *
 * The environment variable OMMA_GPU_SCHEDULE=auto|spin|yield|blocking
 * overrides DEFAULT (not an explicit omma_device_set_schedule). */
typedef enum omma_schedule {
    OMMA_SCHEDULE_DEFAULT = 0, /* OMMA_GPU_SCHEDULE, else BLOCKING */
    OMMA_SCHEDULE_AUTO,        /* the driver's heuristic (spins while contexts <= cores) */
    OMMA_SCHEDULE_SPIN,        /* busy-wait: lowest latency, one core per waiting thread */
    OMMA_SCHEDULE_YIELD,       /* busy-wait with sched_yield between polls */
    OMMA_SCHEDULE_BLOCKING,    /* sleep on an OS primitive until the GPU signals */
} omma_schedule;

/* Sets the policy of GPU `ordinal`'s primary context now. Call it before the
 * first omma_device_open of that ordinal and before anything else (the CUDA
 * runtime, another library) uses the primary context.
 * Errors: OMMA_ERR_INVALID_ARG (unknown policy), OMMA_ERR_NO_DEVICE,
 * OMMA_ERR_BUSY (omma already opened the device, or the primary context is
 * already active: the detail says so), OMMA_ERR_CUDA. */
omma_status omma_device_set_schedule(int ordinal, omma_schedule policy);

/* The policy in effect on an open device (read from the context's flags;
 * never DEFAULT). Errors: OMMA_ERR_INVALID_ARG, OMMA_ERR_CUDA. */
omma_status omma_device_get_schedule(omma_device *dev, omma_schedule *out);

/* "default", "auto", "spin", "yield", "blocking"; "unknown" otherwise. */
const char *omma_schedule_name(omma_schedule policy);

/* Parses one of the names above (case-insensitive). Errors:
 * OMMA_ERR_INVALID_ARG with the accepted names in the detail. */
omma_status omma_schedule_parse(const char *text, omma_schedule *out);

/* ---- Device facts and health -------------------------------------------- */

typedef struct omma_device_info {
    int ordinal;
    char name[256];           /* "NVIDIA H100 80GB HBM3" */
    char pci_bus_id[32];      /* "0000:19:00.0" */
    char uuid[48];            /* "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" */
    int cc_major, cc_minor;   /* compute capability */
    int sm_count;             /* streaming multiprocessors */
    int l2_bytes;             /* L2 cache size */
    uint64_t memory_total;    /* bytes */
    uint64_t memory_free;     /* bytes free now (all processes) */
    int driver_version;       /* CUDA version the driver supports, e.g. 13000 */
    int adopted;              /* 1 when the context is an adopted one */
    omma_schedule schedule;   /* policy in effect */
} omma_device_info;

/* Fills *out with the device's facts (memory_free is read now).
 * Errors: OMMA_ERR_INVALID_ARG, OMMA_ERR_CUDA, OMMA_ERR_DEVICE_LOST. */
omma_status omma_device_get_info(omma_device *dev, omma_device_info *out);

/* Checks that the context is still usable: waits for the device's
 * outstanding work (cuCtxSynchronize) and makes a tiny allocation. A sticky
 * error (illegal address, a failed launch, an assert in a kernel...) leaves
 * the context unusable for the rest of the process; it is returned as
 * OMMA_ERR_DEVICE_LOST with a detail naming the error, and remembered: every
 * later check fails the same way. Other failures map as usual. Blocks until
 * the device is idle, so do not call it from a hot path. */
omma_status omma_device_check_health(omma_device *dev);

/* ---- NVML readings ------------------------------------------------------ */

/* Bits of omma_device_metrics.valid: which readings NVML gave. */
enum {
    OMMA_METRIC_UTILIZATION = 1u << 0,
    OMMA_METRIC_MEMORY = 1u << 1,
    OMMA_METRIC_TEMPERATURE = 1u << 2,
    OMMA_METRIC_POWER = 1u << 3,
    OMMA_METRIC_POWER_LIMIT = 1u << 4,
    OMMA_METRIC_PCIE = 1u << 5,
    OMMA_METRIC_CLOCKS = 1u << 6,
    OMMA_METRIC_PROCESS_MEMORY = 1u << 7,
    OMMA_METRIC_DECODER = 1u << 8,
};

typedef struct omma_device_metrics {
    int available;               /* 0: NVML missing or failed; see reason */
    char reason[256];            /* why unavailable ("" when available) */
    unsigned valid;              /* OMMA_METRIC_* bits of the fields read */
    unsigned gpu_util_pct;       /* % of time a kernel ran (last sample period) */
    unsigned mem_util_pct;       /* % of time memory was read or written */
    uint64_t mem_total, mem_used, mem_free; /* bytes, all processes */
    unsigned temperature_c;
    unsigned power_mw, power_limit_mw;
    unsigned pcie_tx_kbps, pcie_rx_kbps; /* KB/s over the last ~20 ms */
    unsigned clock_sm_mhz, clock_mem_mhz, clock_graphics_mhz;
    uint64_t process_mem_used;   /* bytes this process holds on the device */
    unsigned decoder_util_pct;   /* % of time the video decoders (NVDEC) were busy */
} omma_device_metrics;

/* Reads NVML (loaded with dlopen("libnvidia-ml.so.1") on first use). Without
 * NVML it still returns OMMA_OK, with available = 0 and the reason; readings
 * the GPU does not support are left out of `valid`.
 * Errors: OMMA_ERR_INVALID_ARG only. */
omma_status omma_device_read_metrics(omma_device *dev, omma_device_metrics *out);

/* ---- Memory counters ---------------------------------------------------- */

/* Bytes and copies omma moved for this device since it was opened, counted
 * when each copy is enqueued (every host<->device copy omma makes goes
 * through the counting wrappers). */
typedef struct omma_transfer_counters {
    uint64_t h2d_bytes, h2d_copies;
    uint64_t d2h_bytes, d2h_copies;
    uint64_t d2d_bytes, d2d_copies;
} omma_transfer_counters;

/* Snapshot of the counters (take two and subtract to measure a span).
 * Errors: OMMA_ERR_INVALID_ARG. */
omma_status omma_device_get_transfers(const omma_device *dev, omma_transfer_counters *out);

typedef struct omma_memory_stats {
    uint64_t pool_reserved;      /* device memory the stream-ordered pool holds */
    uint64_t pool_used;          /* of which handed out now */
    uint64_t pool_used_high;     /* most handed out at once */
    uint64_t pool_release_threshold; /* the pool keeps up to this much when idle */
    uint64_t pinned_bytes;       /* pinned host staging memory allocated now */
    uint64_t live_allocations;   /* device buffers handed out and not freed */
} omma_memory_stats;

/* Snapshot of the device's memory pool and staging memory.
 * Errors: OMMA_ERR_INVALID_ARG, OMMA_ERR_CUDA. */
omma_status omma_device_get_memory_stats(omma_device *dev, omma_memory_stats *out);

/* Returns the memory pool's unused reserve to the driver, keeping at most
 * keep_bytes (the pool keeps everything it reserved otherwise, so the hot
 * path never waits for the driver's allocator).
 * Errors: OMMA_ERR_INVALID_ARG, OMMA_ERR_CUDA. */
omma_status omma_device_trim_memory(omma_device *dev, uint64_t keep_bytes);

#ifdef __cplusplus
}
#endif
#endif
