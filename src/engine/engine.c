/* omma_engine: loading a model, its immutable state, reference counting. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "engine/cpu_pool.h"
#include "engine/engine_private.h"
#include "model/prune.h"
#include "model/tflite.h"

void omma_engine_options_init(omma_engine_options *opt)
{
    if (!opt)
        return;
    memset(opt, 0, sizeof *opt);
    opt->backend = OMMA_BACKEND_CPU;
    opt->precision = OMMA_PRECISION_FP32;
    opt->rewrites = 1;
}

int omma_cpu_thread_count(int threads)
{
    if (threads < 0 || threads > CPU_POOL_MAX_THREADS)
        return 0;
    return cpu_pool_resolve(threads);
}

static omma_status check_options(omma_device *dev, const omma_engine_options *o)
{
    if (o->backend != OMMA_BACKEND_CPU && o->backend != OMMA_BACKEND_CUDA)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "engine: unknown backend %d", (int)o->backend);
    if (o->precision != OMMA_PRECISION_FP32 && o->precision != OMMA_PRECISION_FP16)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "engine: unknown precision %d", (int)o->precision);
    if (o->threads < 0 || o->threads > CPU_POOL_MAX_THREADS)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "engine: threads %d not in 0..%d (0: all cores)",
                         o->threads, CPU_POOL_MAX_THREADS);
    if (o->output_count < 0 || (o->output_count > 0 && !o->outputs))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "engine: outputs: %d named but the list is %s (NULL and 0: all outputs)",
                         o->output_count, o->outputs ? "not NULL" : "NULL");
    if (o->outputs && o->output_count == 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "engine: outputs: an empty list (name at least one, or pass NULL and 0 "
                         "for all outputs)");
    if (o->backend == OMMA_BACKEND_CUDA) {
        if (!dev)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "engine: the CUDA backend needs a device");
        return OMMA_OK;
    }
    if (dev)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "engine: the CPU backend takes no device (pass NULL)");
    if (o->precision != OMMA_PRECISION_FP32)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "engine: the CPU backend computes in fp32 only");
    return OMMA_OK;
}

static void engine_free(omma_engine *e)
{
    if (!e)
        return;
    if (e->backend && e->backend->engine_fini)
        e->backend->engine_fini(e);
    plan_free(e->plan);
    free(e->step_end);
    free(e->lost_uses);
    gr_free(e->graph);
    free(e);
}

omma_status eng_engine_from_graph(gr_graph *g, const omma_engine_options *opt,
                                  omma_engine **out)
{
    return eng_engine_create(NULL, g, opt, out);
}

/* Keeps only the outputs opt.outputs names (model/prune.h): after the
 * rewrites and the CUDA steps, so that every kept node, fusion and step is
 * the one of the engine with all outputs; steps are kept whole and
 * renumbered. */
static omma_status prune_outputs(omma_engine *e, const omma_engine_options *opt)
{
    gr_graph *g = e->graph;
    gr_prune_result r;
    OMMA_TRY(gr_prune(g, opt->outputs, opt->output_count, e->step_end, &r));
    if (e->step_end) {
        int *steps = malloc((g->n_nodes ? (size_t)g->n_nodes : 1) * sizeof *steps);
        if (!steps) {
            gr_prune_result_free(&r);
            return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "engine: allocating");
        }
        for (int i = 0; i < r.n_nodes_before; i++)
            if (r.node_map[i] >= 0)
                steps[r.node_map[i]] = r.node_map[e->step_end[i]];
        free(e->step_end);
        e->step_end = steps;
    }
    e->lost_uses = r.lost_uses;
    r.lost_uses = NULL;
    e->stats.nodes_pruned = r.nodes_removed;
    e->stats.params = gr_param_count(g);
    gr_prune_result_free(&r);
    return OMMA_OK;
}

omma_status eng_engine_create(omma_device *dev, gr_graph *g, const omma_engine_options *opt,
                              omma_engine **out)
{
    omma_engine_options defaults;
    omma_status st;
    *out = NULL;
    if (!opt) {
        omma_engine_options_init(&defaults);
        opt = &defaults;
    }
    omma_engine *e = calloc(1, sizeof *e);
    if (!e) {
        gr_free(g);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "engine: allocating");
    }
    e->graph = g;
    e->opt = *opt;
    e->opt.outputs = NULL; /* the caller's: read during the load only */
    e->opt.output_count = 0;
    e->dev = dev;
    e->backend = opt->backend == OMMA_BACKEND_CUDA ? &eng_cuda_backend : &eng_cpu_backend;
    atomic_init(&e->refs, 1);
    if ((st = check_options(dev, opt)) != OMMA_OK || (st = gr_validate(g)) != OMMA_OK)
        goto fail;
    e->stats.nodes_loaded = g->n_nodes;
    e->stats.params = gr_param_count(g);
    if (opt->rewrites && (st = rw_apply_all(g, &e->rewrites)) != OMMA_OK)
        goto fail;
    if (opt->backend == OMMA_BACKEND_CUDA && (st = eng_cuda_steps(e)) != OMMA_OK)
        goto fail;
    if (opt->outputs && (st = prune_outputs(e, opt)) != OMMA_OK)
        goto fail;
    e->stats.nodes = g->n_nodes;
    if ((st = plan_build(g, e->step_end, &e->plan)) != OMMA_OK)
        goto fail;
    e->stats.arena_bytes_batch1 = plan_arena_bytes(e->plan, 1);
    e->stats.arena_bytes_per_item = e->plan->item_bytes;
    if (opt->backend == OMMA_BACKEND_CUDA && (st = eng_cuda_engine_init(e)) != OMMA_OK)
        goto fail;
    *out = e;
    return OMMA_OK;
fail:
    engine_free(e);
    return st;
}

omma_status omma_engine_load(omma_device *dev, const char *path,
                             const omma_engine_options *opt, omma_engine **out)
{
    omma_engine_options defaults;
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_engine_load: out is NULL");
    *out = NULL;
    if (!path)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_engine_load: path is NULL");
    if (!opt) {
        omma_engine_options_init(&defaults);
        opt = &defaults;
    }
    OMMA_TRY(check_options(dev, opt));
    if (opt->backend == OMMA_BACKEND_CUDA)
        return eng_cuda_engine_load(dev, path, opt, out);
    gr_graph *g = NULL;
    OMMA_TRY(eng_read_graph(path, &g));
    return eng_engine_create(dev, g, opt, out);
}

omma_status eng_read_graph(const char *path, gr_graph **out)
{
    tfl_model *m = NULL;
    *out = NULL;
    OMMA_TRY(tfl_model_read_file(path, &m));
    omma_status st = gr_build_tflite(m, out);
    tfl_model_free(m);
    return st;
}

omma_engine *omma_engine_retain(omma_engine *engine)
{
    if (engine)
        atomic_fetch_add_explicit(&engine->refs, 1, memory_order_relaxed);
    return engine;
}

void omma_engine_release(omma_engine *engine)
{
    if (!engine)
        return;
    if (atomic_fetch_sub_explicit(&engine->refs, 1, memory_order_acq_rel) == 1) {
        if (engine->cuda)
            eng_cuda_engine_uncache(engine);
        engine_free(engine);
    }
}

const gr_graph *eng_engine_graph(const omma_engine *engine)
{
    return engine->graph;
}

int omma_engine_input_count(const omma_engine *engine)
{
    return engine ? engine->graph->n_inputs : 0;
}

int omma_engine_output_count(const omma_engine *engine)
{
    return engine ? engine->graph->n_outputs : 0;
}

static omma_status tensor_info(const omma_engine *e, int t, omma_tensor_info *info)
{
    const gr_tensor *x = &e->graph->tensors[t];
    memset(info, 0, sizeof *info);
    info->name = x->name;
    info->rank = x->rank;
    for (int d = 0; d < x->rank; d++)
        info->dims[d] = x->dims[d];
    info->item_elems = gr_tensor_elems(x) / (size_t)(x->rank > 0 ? x->dims[0] : 1);
    return OMMA_OK;
}

omma_status omma_engine_input_info(const omma_engine *engine, int i, omma_tensor_info *info)
{
    if (!engine || !info)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_engine_input_info: NULL argument");
    if (i < 0 || i >= engine->graph->n_inputs)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_engine_input_info: input %d of %d", i,
                         engine->graph->n_inputs);
    return tensor_info(engine, engine->graph->inputs[i], info);
}

omma_status omma_engine_output_info(const omma_engine *engine, int i, omma_tensor_info *info)
{
    if (!engine || !info)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_engine_output_info: NULL argument");
    if (i < 0 || i >= engine->graph->n_outputs)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_engine_output_info: output %d of %d", i,
                         engine->graph->n_outputs);
    return tensor_info(engine, engine->graph->outputs[i], info);
}

static int find(const gr_graph *g, const int *list, int n, const char *name)
{
    for (int i = 0; name && i < n; i++)
        if (strcmp(g->tensors[list[i]].name, name) == 0)
            return i;
    return -1;
}

int omma_engine_find_input(const omma_engine *engine, const char *name)
{
    return engine ? find(engine->graph, engine->graph->inputs, engine->graph->n_inputs, name) : -1;
}

int omma_engine_find_output(const omma_engine *engine, const char *name)
{
    return engine ? find(engine->graph, engine->graph->outputs, engine->graph->n_outputs, name)
                  : -1;
}

omma_status omma_engine_get_stats(const omma_engine *engine, omma_engine_stats *stats)
{
    if (!engine || !stats)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_engine_get_stats: NULL argument");
    *stats = engine->stats;
    return OMMA_OK;
}

omma_backend omma_engine_backend(const omma_engine *engine)
{
    return engine ? engine->opt.backend : OMMA_BACKEND_CPU;
}
