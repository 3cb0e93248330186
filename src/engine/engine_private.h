/* Private: the engine and exec objects shared by engine.c, exec.c and the
 * backends (cpu_exec.c now, CUDA later). */
#ifndef OMMA_ENGINE_PRIVATE_H
#define OMMA_ENGINE_PRIVATE_H

#include <stdatomic.h>
#include <stdbool.h>

#include "model/graph.h"
#include "model/plan.h"
#include "model/rewrite.h"
#include "omma/engine.h"

/* What a backend provides. exec_init allocates the exec's arena
 * (plan_arena_bytes(plan, max_batch) bytes, PLAN_ALIGN-aligned) into
 * x->arena and any state of its own; exec_fini frees them (also after a
 * failed init); run executes the graph for `batch` items (1..max_batch,
 * checked by the caller, who also holds the busy flag). The optional hooks
 * (NULL for the CPU backend): io_buffer gives the buffer of input/output i
 * when it is not the arena slot (CUDA fp16 execs keep float32 I/O buffers of
 * their own); wait blocks until the exec's queued runs are done;
 * engine_fini frees backend state of the engine (e->cuda). */
typedef struct eng_backend {
    const char *name;
    omma_status (*exec_init)(omma_exec *x);
    void (*exec_fini)(omma_exec *x);
    omma_status (*run)(omma_exec *x, int batch);
    float *(*io_buffer)(omma_exec *x, bool input, int i);
    omma_status (*wait)(omma_exec *x);
    void (*engine_fini)(omma_engine *e);
} eng_backend;

extern const eng_backend eng_cpu_backend;  /* cpu_exec.c */
extern const eng_backend eng_cuda_backend; /* cuda_exec.c */

struct omma_engine {
    atomic_int refs;
    omma_engine_options opt;
    omma_device *dev;
    gr_graph *graph;    /* validated, rewritten if opt.rewrites */
    plan_layout *plan;
    int *step_end; /* plan_build's steps: the CUDA backend's fused runs, or NULL */
    /* Pruned to omma_engine_options.outputs (prune_outputs): per tensor, the
     * uses pruning removed (gr_prune_result.lost_uses), else NULL. Whatever
     * a backend decides from a tensor's uses counts these too, so that the
     * kept nodes run as in the engine with all outputs. */
    int *lost_uses;
    /* CUDA: input i is handed to its readers as float32 (an fp16 exec's
     * stems read the API's buffer), decided on the graph before pruning. */
    bool input_f32[GR_MAX_IO];
    omma_engine_stats stats;
    rw_stats rewrites;  /* zero when rewrites are off */
    const eng_backend *backend;
    void *cuda;         /* cuda_exec.c's engine state (weights, cache key) */
};

struct omma_exec {
    omma_engine *engine; /* a reference */
    int max_batch;
    atomic_bool busy;
    unsigned char *arena; /* backend memory, plan_arena_bytes(plan, max_batch) */
    size_t arena_bytes;
    void *state;          /* backend's own */
    omma_exec_options opt;
    size_t io_bytes, device_bytes; /* omma_exec_stats */
    int launches, n_graphs;        /* omma_exec_stats, written by the backend's run */
};

/* An engine from a graph the caller built (tests, tools): takes ownership
 * of g in every case (freed on failure), validates it, applies the rewrites
 * when opt->rewrites, plans it. nodes_loaded is reported in the stats (pass
 * g->n_nodes). On failure *out is NULL. */
omma_status eng_engine_from_graph(gr_graph *g, const omma_engine_options *opt,
                                  omma_engine **out);

/* The CUDA part of omma_engine_load (cuda_exec.c): under the per-process
 * engine cache's lock, returns a retained cached engine of the same file,
 * precision and rewrites on dev, or loads one (via eng_engine_create), uploads
 * its weights and caches it. */
omma_status eng_cuda_engine_load(omma_device *dev, const char *path,
                                 const omma_engine_options *opt, omma_engine **out);

/* Makes an engine from g on dev (NULL for the CPU backend): takes ownership
 * of g; validates, rewrites, plans, and for CUDA uploads the weights. */
omma_status eng_engine_create(omma_device *dev, gr_graph *g, const omma_engine_options *opt,
                              omma_engine **out);

/* Reads a model file into a graph (the TFLite reader and builder). */
omma_status eng_read_graph(const char *path, gr_graph **out);

/* The CUDA backend's steps for plan_build (cuda_exec.c): e->step_end, the
 * runs of nodes one kernel computes (cuda_op_step_end); NULL for fp32. Also
 * e->input_f32. Made on the graph before pruning (which keeps steps whole
 * and carries them over). */
omma_status eng_cuda_steps(omma_engine *e);

/* Uploads e's weights on e->dev (cuda_exec.c); engine_fini frees them. */
omma_status eng_cuda_engine_init(omma_engine *e);

/* Drops the engine from the cache when its last reference goes (cuda_exec.c). */
void eng_cuda_engine_uncache(omma_engine *e);

/* The engine's graph (immutable). */
const gr_graph *eng_engine_graph(const omma_engine *engine);

#endif
