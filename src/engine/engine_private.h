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
 * checked by the caller, who also holds the busy flag). */
typedef struct eng_backend {
    const char *name;
    omma_status (*exec_init)(omma_exec *x);
    void (*exec_fini)(omma_exec *x);
    omma_status (*run)(omma_exec *x, int batch);
} eng_backend;

extern const eng_backend eng_cpu_backend; /* cpu_exec.c */

struct omma_engine {
    atomic_int refs;
    omma_engine_options opt;
    omma_device *dev;
    gr_graph *graph;    /* validated, rewritten if opt.rewrites */
    plan_layout *plan;
    omma_engine_stats stats;
    rw_stats rewrites;  /* zero when rewrites are off */
    const eng_backend *backend;
};

struct omma_exec {
    omma_engine *engine; /* a reference */
    int max_batch;
    atomic_bool busy;
    unsigned char *arena; /* backend memory, plan_arena_bytes(plan, max_batch) */
    size_t arena_bytes;
    void *state;          /* backend's own */
};

/* An engine from a graph the caller built (tests, tools): takes ownership
 * of g in every case (freed on failure), validates it, applies the rewrites
 * when opt->rewrites, plans it. nodes_loaded is reported in the stats (pass
 * g->n_nodes). On failure *out is NULL. */
omma_status eng_engine_from_graph(gr_graph *g, const omma_engine_options *opt,
                                  omma_engine **out);

/* The engine's graph (immutable). */
const gr_graph *eng_engine_graph(const omma_engine *engine);

#endif
