/* The CPU reference backend: runs the planned graph node by node through
 * the reference kernels of cpu_ops.c, on a host arena, each node split over
 * the exec's thread pool (omma_engine_options.threads). */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "engine/cpu_ops.h"
#include "engine/engine_private.h"

static omma_status cpu_exec_init(omma_exec *x)
{
    size_t bytes = x->arena_bytes ? x->arena_bytes : PLAN_ALIGN;
    bytes = (bytes + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN;
    x->arena = aligned_alloc(PLAN_ALIGN, bytes);
    if (!x->arena)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "cpu exec: arena of %zu bytes", bytes);
    /* Zeroed so that items beyond a run's batch read back deterministically. */
    memset(x->arena, 0, bytes);
    int threads = cpu_pool_resolve(x->engine->opt.threads);
    if (threads > 1) {
        cpu_pool *pool = NULL;
        OMMA_TRY(cpu_pool_create(threads, &pool));
        x->state = pool;
    }
    return OMMA_OK;
}

static void cpu_exec_fini(omma_exec *x)
{
    cpu_pool_destroy(x->state);
    x->state = NULL;
    free(x->arena);
    x->arena = NULL;
}

/* The arena buffer of an activation; NULL for a constant (the kernels read
 * constants from the graph, cpu_ops.h). */
static const float *tensor_ptr(const omma_exec *x, int t)
{
    const gr_graph *g = x->engine->graph;
    if (g->tensors[t].data)
        return NULL;
    return (const float *)(const void *)(x->arena + plan_offset(x->engine->plan, t, x->max_batch));
}

static omma_status cpu_run(omma_exec *x, int batch)
{
    const gr_graph *g = x->engine->graph;
    const plan_layout *p = x->engine->plan;
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *n = &g->nodes[i];
        const float *in[GR_MAX_INPUTS] = {0};
        for (int k = 0; k < n->n_in; k++)
            in[k] = n->in[k] >= 0 ? tensor_ptr(x, n->in[k]) : NULL;
        const float *residual = NULL;
        if ((n->op == GR_CONV2D || n->op == GR_DWCONV2D || n->op == GR_DWPW) &&
            n->p.conv.residual >= 0)
            residual = tensor_ptr(x, n->p.conv.residual);
        float *out = (float *)(void *)(x->arena + plan_offset(p, n->out, x->max_batch));
        if (n->op == GR_RESHAPE && in[0] == out)
            continue; /* the plan aliased it: the bytes are already there */
        /* Nodes computed from constants only (DEQUANTIZE of an unrewritten
         * graph) have no batch dimension. */
        int nb = p->slots[n->out].batched ? batch : 1;
        OMMA_TRY(cpu_op_run_pool(x->state, g, n, nb, in, residual, out));
    }
    return OMMA_OK;
}

const eng_backend eng_cpu_backend = {
    .name = "cpu",
    .exec_init = cpu_exec_init,
    .exec_fini = cpu_exec_fini,
    .run = cpu_run,
};
