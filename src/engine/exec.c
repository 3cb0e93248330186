/* omma_exec: per-pipeline execution state, batch checks and the busy flag
 * that turns concurrent use of one exec into OMMA_ERR_BUSY. */
#include <stdlib.h>

#include "core/error.h"
#include "engine/engine_private.h"

#define EXEC_MAX_BATCH 65536

void omma_exec_options_init(omma_exec_options *opt)
{
    if (!opt)
        return;
    opt->stream = NULL;
    opt->graphs = 1;
}

omma_status omma_exec_create(omma_engine *engine, int max_batch, omma_exec **out)
{
    return omma_exec_create_with(engine, max_batch, NULL, out);
}

omma_status omma_exec_create_with(omma_engine *engine, int max_batch,
                                  const omma_exec_options *opt, omma_exec **out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_exec_create: out is NULL");
    *out = NULL;
    if (!engine)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_exec_create: engine is NULL");
    if (max_batch < 1 || max_batch > EXEC_MAX_BATCH)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_exec_create: max_batch %d (1 to %d)",
                         max_batch, EXEC_MAX_BATCH);
    omma_exec_options defaults;
    if (!opt) {
        omma_exec_options_init(&defaults);
        opt = &defaults;
    }
    if (opt->stream && engine->opt.backend != OMMA_BACKEND_CUDA)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "omma_exec_create: a stream was given to a CPU engine");
    omma_exec *x = calloc(1, sizeof *x);
    if (!x)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "omma_exec_create: allocating");
    x->engine = omma_engine_retain(engine);
    x->max_batch = max_batch;
    x->opt = *opt;
    x->arena_bytes = plan_arena_bytes(engine->plan, max_batch);
    atomic_init(&x->busy, false);
    omma_status st = engine->backend->exec_init(x);
    if (st != OMMA_OK) {
        omma_exec_destroy(x);
        return st;
    }
    *out = x;
    return OMMA_OK;
}

void omma_exec_destroy(omma_exec *exec)
{
    if (!exec)
        return;
    exec->engine->backend->exec_fini(exec);
    omma_engine_release(exec->engine);
    free(exec);
}

static omma_status io_buffer(omma_exec *x, bool input, int i, float **ptr)
{
    const char *fn = input ? "omma_exec_input" : "omma_exec_output";
    if (!x || !ptr)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: NULL argument", fn);
    *ptr = NULL;
    const gr_graph *g = x->engine->graph;
    int n = input ? g->n_inputs : g->n_outputs;
    if (i < 0 || i >= n)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: index %d of %d", fn, i, n);
    if (x->engine->backend->io_buffer) {
        *ptr = x->engine->backend->io_buffer(x, input, i);
        return OMMA_OK;
    }
    int t = input ? g->inputs[i] : g->outputs[i];
    *ptr = (float *)(void *)(x->arena + plan_offset(x->engine->plan, t, x->max_batch));
    return OMMA_OK;
}

omma_status omma_exec_input(omma_exec *exec, int i, float **ptr)
{
    return io_buffer(exec, true, i, ptr);
}

omma_status omma_exec_output(omma_exec *exec, int i, float **ptr)
{
    return io_buffer(exec, false, i, ptr);
}

omma_status omma_exec_run(omma_exec *exec, int batch)
{
    if (!exec)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_exec_run: exec is NULL");
    if (batch < 1 || batch > exec->max_batch)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_exec_run: batch %d (1 to max batch %d)",
                         batch, exec->max_batch);
    if (atomic_exchange_explicit(&exec->busy, true, memory_order_acquire))
        return OMMA_FAIL(OMMA_ERR_BUSY,
                         "omma_exec_run: this exec is running in another thread "
                         "(an exec belongs to one thread at a time; create one per thread)");
    omma_status st = exec->engine->backend->run(exec, batch);
    atomic_store_explicit(&exec->busy, false, memory_order_release);
    return st;
}

omma_status omma_exec_wait(omma_exec *exec)
{
    if (!exec)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_exec_wait: exec is NULL");
    if (!exec->engine->backend->wait)
        return OMMA_OK;
    if (atomic_exchange_explicit(&exec->busy, true, memory_order_acquire))
        return OMMA_FAIL(OMMA_ERR_BUSY,
                         "omma_exec_wait: this exec is in use in another thread "
                         "(an exec belongs to one thread at a time; create one per thread)");
    omma_status st = exec->engine->backend->wait(exec);
    atomic_store_explicit(&exec->busy, false, memory_order_release);
    return st;
}

void *omma_exec_stream(const omma_exec *exec)
{
    return exec && exec->engine->opt.backend == OMMA_BACKEND_CUDA ? exec->opt.stream : NULL;
}

omma_status omma_exec_get_stats(const omma_exec *exec, omma_exec_stats *stats)
{
    if (!exec || !stats)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_exec_get_stats: NULL argument");
    stats->arena_bytes = exec->arena_bytes;
    stats->io_bytes = exec->io_bytes;
    stats->device_bytes = exec->device_bytes;
    stats->launches = exec->launches;
    stats->graphs = exec->n_graphs;
    return OMMA_OK;
}

int omma_exec_max_batch(const omma_exec *exec)
{
    return exec ? exec->max_batch : 0;
}

omma_engine *omma_exec_engine(const omma_exec *exec)
{
    return exec ? exec->engine : NULL;
}
