/* The CUDA backend of the engine: weights uploaded once per engine (and
 * engines cached per device), execs with a device arena on their own stream,
 * runs enqueued asynchronously, captured as one CUDA graph per batch size at
 * their first run and replayed afterwards.
 *
 * Every CUDA call here is made inside the device's scope. Kernels come from
 * cuda_ops (one cuda_op_launch per graph node); the arena is laid out by the
 * activation plan (model/plan.h), which is made for float32 elements; an
 * fp16 exec halves every offset and size of it (all are multiples of
 * PLAN_ALIGN, so the halved layout stays disjoint and 128-byte aligned) and
 * needs half the arena.
 *
 * Per-process state: the engine cache (a list guarded by cache_lock), the
 * documented exception to "no global mutable state" in engine.h. */
#define _POSIX_C_SOURCE 200809L

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cuda_runtime_api.h>

#include "core/error.h"
#include "engine/cuda_ops.h"
#include "engine/cuda_weights.h"
#include "engine/engine_private.h"
#include "gpu/check.h"
#include "gpu/device_private.h"
#include "gpu/memory.h"
#include "gpu/stream_pool.h"

/* ---- engine: weights and the per-device cache ---------------------------- */

typedef struct cuda_engine {
    cuda_weights *w;
    bool cached;            /* linked in the cache list */
    /* cache key: device, file identity, precision, rewrites, outputs (all,
     * or when pruned the engine's own: the names in order) */
    omma_device *dev;
    dev_t st_dev;
    ino_t st_ino;
    off_t st_size;
    struct timespec st_mtim;
    omma_precision precision;
    int rewrites;
    bool pruned;
    omma_engine *engine;
    struct cuda_engine *next;
} cuda_engine;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static cuda_engine *cache_head;

static cuda_prec prec_of(const omma_engine *e)
{
    return e->opt.precision == OMMA_PRECISION_FP16 ? CUDA_PREC_F16 : CUDA_PREC_F32;
}

/* 1 for fp32, 2 for fp16: the plan's float32 bytes per stored byte. */
static size_t shrink(const omma_engine *e)
{
    return sizeof(float) / cuda_prec_size(prec_of(e));
}

/* A failed CUDA status that means the context is gone is remembered on the
 * device, so that every later run and health check reports it. */
static omma_status note_lost(omma_device *dev, omma_status st)
{
    if (st == OMMA_ERR_DEVICE_LOST)
        gpu_device_mark_lost(dev, omma_last_error());
    return st;
}

static omma_status check_alive(omma_device *dev, const char *what)
{
    if (atomic_load(&dev->lost))
        return OMMA_FAIL(OMMA_ERR_DEVICE_LOST,
                         "%s: device %d is lost after a sticky error (%s); create a new "
                         "process to use it again", what, dev->ordinal, dev->lost_detail);
    return OMMA_OK;
}

static bool read_as_f32(const gr_graph *g, int t, cuda_prec p);

omma_status eng_cuda_steps(omma_engine *e)
{
    const gr_graph *g = e->graph;
    for (int i = 0; i < g->n_inputs; i++)
        e->input_f32[i] = read_as_f32(g, g->inputs[i], prec_of(e));
    if (prec_of(e) != CUDA_PREC_F16 || g->n_nodes == 0)
        return OMMA_OK;
    e->step_end = malloc((size_t)g->n_nodes * sizeof *e->step_end);
    if (!e->step_end)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "cuda engine: allocating");
    for (int i = 0; i < g->n_nodes;) {
        int end = cuda_op_step_end(g, i, CUDA_PREC_F16);
        for (int k = i; k <= end; k++)
            e->step_end[k] = k == i ? end : k;
        i = end + 1;
    }
    return OMMA_OK;
}

omma_status eng_cuda_engine_init(omma_engine *e)
{
    cuda_engine *c = calloc(1, sizeof *c);
    if (!c)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "cuda engine: allocating");
    c->engine = e;
    c->dev = e->dev;
    e->cuda = c;
    e->stats.arena_bytes_batch1 /= shrink(e);
    e->stats.arena_bytes_per_item /= shrink(e);
    OMMA_TRY(check_alive(e->dev, "omma_engine_load"));
    omma_scope scope;
    OMMA_TRY(omma_device_enter(e->dev, &scope));
    omma_status st = cuda_weights_upload(e->graph, prec_of(e), &c->w);
    return note_lost(e->dev, gpu_leave_keep(&scope, st));
}

static void cuda_engine_fini(omma_engine *e)
{
    cuda_engine *c = e->cuda;
    if (!c)
        return;
    if (c->w) {
        omma_scope scope;
        if (omma_device_enter(e->dev, &scope) == OMMA_OK) {
            cuda_weights_free(c->w);
            omma_device_leave(&scope);
        }
    }
    free(c);
    e->cuda = NULL;
}

/* Retains e unless its count already reached zero (it is being freed by the
 * thread that dropped the last reference, which will unlink it). */
static bool retain_if_alive(omma_engine *e)
{
    int n = atomic_load_explicit(&e->refs, memory_order_relaxed);
    while (n > 0)
        if (atomic_compare_exchange_weak_explicit(&e->refs, &n, n + 1, memory_order_acq_rel,
                                                  memory_order_relaxed))
            return true;
    return false;
}

/* Whether cached engine c has the outputs opt asks for. */
static bool same_outputs(const cuda_engine *c, const omma_engine_options *opt)
{
    if (!opt->outputs)
        return !c->pruned;
    const gr_graph *g = c->engine->graph;
    if (!c->pruned || g->n_outputs != opt->output_count)
        return false;
    for (int i = 0; i < g->n_outputs; i++)
        if (!opt->outputs[i] || strcmp(opt->outputs[i], g->tensors[g->outputs[i]].name) != 0)
            return false;
    return true;
}

omma_status eng_cuda_engine_load(omma_device *dev, const char *path,
                                 const omma_engine_options *opt, omma_engine **out)
{
    struct stat sb;
    *out = NULL;
    if (stat(path, &sb) != 0)
        return OMMA_FAIL(OMMA_ERR_IO, "omma_engine_load: cannot stat %s", path);
    /* The whole load runs under the lock, so that two threads loading the
     * same model never upload it twice (loads are rare and slow anyway). */
    pthread_mutex_lock(&cache_lock);
    for (cuda_engine *c = cache_head; c; c = c->next) {
        if (c->dev == dev && c->st_dev == sb.st_dev && c->st_ino == sb.st_ino &&
            c->st_size == sb.st_size && c->st_mtim.tv_sec == sb.st_mtim.tv_sec &&
            c->st_mtim.tv_nsec == sb.st_mtim.tv_nsec && c->precision == opt->precision &&
            c->rewrites == (opt->rewrites != 0) && same_outputs(c, opt) &&
            retain_if_alive(c->engine)) {
            *out = c->engine;
            pthread_mutex_unlock(&cache_lock);
            return OMMA_OK;
        }
    }
    gr_graph *g = NULL;
    omma_status st = eng_read_graph(path, &g);
    if (st == OMMA_OK)
        st = eng_engine_create(dev, g, opt, out);
    if (st == OMMA_OK) {
        cuda_engine *c = (*out)->cuda;
        c->st_dev = sb.st_dev;
        c->st_ino = sb.st_ino;
        c->st_size = sb.st_size;
        c->st_mtim = sb.st_mtim;
        c->precision = opt->precision;
        c->rewrites = opt->rewrites != 0;
        c->pruned = opt->outputs != NULL;
        c->cached = true;
        c->next = cache_head;
        cache_head = c;
    }
    pthread_mutex_unlock(&cache_lock);
    return st;
}

void eng_cuda_engine_uncache(omma_engine *e)
{
    cuda_engine *c = e->cuda;
    if (!c || !c->cached)
        return;
    pthread_mutex_lock(&cache_lock);
    for (cuda_engine **p = &cache_head; *p; p = &(*p)->next) {
        if (*p == c) {
            *p = c->next;
            break;
        }
    }
    c->cached = false;
    pthread_mutex_unlock(&cache_lock);
}

/* ---- exec ------------------------------------------------------------------ */

typedef struct cuda_exec {
    CUstream stream;
    bool own_stream;
    CUdeviceptr mem;         /* arena + float32 I/O buffers (fp16 execs) */
    float **in, **out;       /* float32 I/O device pointers, per input/output */
    bool *in_direct;         /* per input: its readers take it as float32 (fp16 execs) */
    int *out_node;           /* per output: the node writing it as float32 into out[i], or -1 */
    void **out_f32;          /* per tensor: the out[i] a step writes it to as float32, or NULL */
    bool *skip;              /* per node: a RESHAPE whose output its input's producer writes */
    cudaGraphExec_t *graph;  /* [max_batch + 1], NULL until captured */
    int *graph_nodes;        /* [max_batch + 1] */
    void **acts;             /* per graph tensor: its arena pointer, NULL for constants */
} cuda_exec;

#define IO_ALIGN 256

static size_t round_up(size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}

static size_t tensor_item_elems(const gr_graph *g, int t)
{
    const gr_tensor *x = &g->tensors[t];
    return gr_tensor_elems(x) / (size_t)(x->rank > 0 && x->dims[0] > 0 ? x->dims[0] : 1);
}

static void *arena_ptr(const omma_exec *x, int t)
{
    return x->arena + plan_offset(x->engine->plan, t, x->max_batch) / shrink(x->engine);
}

static omma_status exec_alloc(omma_exec *x, cuda_exec *c)
{
    omma_engine *e = x->engine;
    const gr_graph *g = e->graph;
    bool f16 = prec_of(e) == CUDA_PREC_F16;
    size_t arena = round_up(x->arena_bytes ? x->arena_bytes : PLAN_ALIGN, IO_ALIGN);
    size_t io = 0;
    if (f16) {
        for (int i = 0; i < g->n_inputs; i++)
            io += round_up(tensor_item_elems(g, g->inputs[i]) * sizeof(float) *
                               (size_t)x->max_batch, IO_ALIGN);
        for (int i = 0; i < g->n_outputs; i++)
            io += round_up(tensor_item_elems(g, g->outputs[i]) * sizeof(float) *
                               (size_t)x->max_batch, IO_ALIGN);
    }
    x->io_bytes = io;
    x->device_bytes = arena + io;
    OMMA_TRY(gpu_mem_alloc(e->dev, arena + io, &c->mem));
    x->arena = (unsigned char *)(uintptr_t)c->mem;
    size_t off = arena;
    for (int i = 0; i < g->n_inputs; i++) {
        if (f16) {
            c->in[i] = (float *)(uintptr_t)(c->mem + off);
            off += round_up(tensor_item_elems(g, g->inputs[i]) * sizeof(float) *
                                (size_t)x->max_batch, IO_ALIGN);
        } else {
            c->in[i] = arena_ptr(x, g->inputs[i]);
        }
    }
    for (int i = 0; i < g->n_outputs; i++) {
        if (f16) {
            c->out[i] = (float *)(uintptr_t)(c->mem + off);
            off += round_up(tensor_item_elems(g, g->outputs[i]) * sizeof(float) *
                                (size_t)x->max_batch, IO_ALIGN);
        } else {
            c->out[i] = arena_ptr(x, g->outputs[i]);
        }
    }
    /* Zeroed so that items beyond a run's batch read back deterministically. */
    OMMA_TRY(OMMA_CK(gpu_cu.cuMemsetD8Async(c->mem, 0, arena + io, c->stream)));
    return OMMA_CK(gpu_cu.cuStreamSynchronize(c->stream));
}

/* True when every node that reads graph tensor t reads it as its input 0
 * and can take it as float32 (cuda_op_reads_f32): an fp16 exec then hands
 * the API's float input to those nodes unconverted. */
static bool read_as_f32(const gr_graph *g, int t, cuda_prec p)
{
    bool read = false;
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *n = &g->nodes[i];
        int r[GR_MAX_INPUTS + 2];
        int k = gr_node_reads(n, r);
        for (int j = 0; j < k; j++) {
            if (r[j] != t)
                continue;
            if (j != 0 || n->in[0] != t || !cuda_op_reads_f32(g, n, p))
                return false;
            read = true;
        }
    }
    return read;
}

/* Reads of tensor t, counting its being a graph input or output as one,
 * and the uses pruning removed (e->lost_uses): what the graph with all
 * outputs has. */
static int tensor_uses(const omma_engine *e, int t)
{
    const gr_graph *g = e->graph;
    int uses = e->lost_uses ? e->lost_uses[t] : 0;
    for (int i = 0; i < g->n_outputs; i++)
        uses += g->outputs[i] == t;
    for (int i = 0; i < g->n_inputs; i++)
        uses += g->inputs[i] == t;
    for (int i = 0; i < g->n_nodes; i++) {
        int r[GR_MAX_INPUTS + 2];
        int k = gr_node_reads(&g->nodes[i], r);
        for (int j = 0; j < k; j++)
            uses += r[j] == t;
    }
    return uses;
}

/* The first node of the step that covers node n, or -1. */
static int step_of(const omma_engine *e, int n)
{
    for (int i = 0; e->step_end && i <= n; i++)
        if (e->step_end[i] > i && e->step_end[i] >= n)
            return i;
    return -1;
}

/* The node that can write graph output t as float32 straight into the
 * API's output buffer, else -1 (the exec converts the output after the
 * run). It writes *u: t, or where t is a RESHAPE of a tensor nothing else
 * reads, that tensor (the same elements in the same order; *reshape is
 * then that RESHAPE node, else -1). t has no other use. The writer is a
 * node outside any step that cuda_op_writes_f32 takes, or one of a step
 * that cuda_op_step_writes_f32 says writes *u (such steps run at every
 * batch). */
static int written_as_f32(const omma_engine *e, int t, cuda_prec p, int *u, int *reshape)
{
    const gr_graph *g = e->graph;
    int pn = g->tensors[t].producer;
    *u = t;
    *reshape = -1;
    if (pn < 0 || tensor_uses(e, t) != 1)
        return -1;
    if (g->nodes[pn].op == GR_RESHAPE) {
        int v = g->nodes[pn].in[0];
        if (gr_is_const(g, v) || g->tensors[v].producer < 0 || tensor_uses(e, v) != 1)
            return -1;
        *u = v;
        *reshape = pn;
        pn = g->tensors[v].producer;
    }
    int s = step_of(e, pn);
    if (s >= 0)
        return cuda_op_step_writes_f32(g, s, *u) ? pn : -1;
    return cuda_op_writes_f32(g, &g->nodes[pn], p) ? pn : -1;
}

static omma_status exec_init_in_scope(omma_exec *x, cuda_exec *c)
{
    omma_engine *e = x->engine;
    const gr_graph *g = e->graph;
    c->in_direct = calloc((size_t)g->n_inputs + 1, sizeof *c->in_direct);
    if (!c->in_direct)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "cuda exec: allocating");
    for (int i = 0; i < g->n_inputs; i++)
        c->in_direct[i] = e->input_f32[i];
    c->out_node = calloc((size_t)g->n_outputs + 1, sizeof *c->out_node);
    if (!c->out_node)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "cuda exec: allocating");
    c->in = calloc((size_t)g->n_inputs + 1, sizeof *c->in);
    c->out = calloc((size_t)g->n_outputs + 1, sizeof *c->out);
    c->out_f32 = calloc((size_t)g->n_tensors + 1, sizeof *c->out_f32);
    c->skip = calloc((size_t)g->n_nodes + 1, sizeof *c->skip);
    if (!c->in || !c->out || !c->out_f32 || !c->skip)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "cuda exec: allocating");
    c->graph = calloc((size_t)x->max_batch + 1, sizeof *c->graph);
    c->graph_nodes = calloc((size_t)x->max_batch + 1, sizeof *c->graph_nodes);
    if (!c->graph || !c->graph_nodes)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "cuda exec: allocating");
    if (x->opt.stream) {
        c->stream = (CUstream)x->opt.stream;
    } else {
        OMMA_TRY(gpu_stream_acquire(e->dev, GPU_PRIORITY_NORMAL, &c->stream));
        c->own_stream = true;
        x->opt.stream = c->stream;
    }
    OMMA_TRY(exec_alloc(x, c));
    /* After exec_alloc: out[] holds the float32 output buffers. */
    for (int i = 0; i < g->n_outputs; i++) {
        int u, reshape;
        c->out_node[i] = written_as_f32(e, g->outputs[i], prec_of(e), &u, &reshape);
        if (c->out_node[i] < 0)
            continue;
        if (reshape >= 0)
            c->skip[reshape] = true;
        if (step_of(e, c->out_node[i]) >= 0)
            c->out_f32[u] = c->out[i];
    }
    c->acts = calloc((size_t)g->n_tensors + 1, sizeof *c->acts);
    if (!c->acts)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "cuda exec: allocating");
    for (int t = 0; t < g->n_tensors; t++)
        if (!g->tensors[t].data)
            c->acts[t] = arena_ptr(x, t);
    return OMMA_OK;
}

static omma_status cuda_exec_init(omma_exec *x)
{
    omma_device *dev = x->engine->dev;
    cuda_exec *c = calloc(1, sizeof *c);
    if (!c)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "cuda exec: allocating");
    x->state = c;
    x->arena_bytes = plan_arena_bytes(x->engine->plan, x->max_batch) / shrink(x->engine);
    OMMA_TRY(check_alive(dev, "omma_exec_create"));
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    omma_status st = exec_init_in_scope(x, c);
    return note_lost(dev, gpu_leave_keep(&scope, st));
}

static void cuda_exec_fini(omma_exec *x)
{
    cuda_exec *c = x->state;
    omma_device *dev = x->engine->dev;
    if (!c)
        return;
    omma_scope scope;
    if (omma_device_enter(dev, &scope) == OMMA_OK) {
        if (c->stream)
            (void)OMMA_CK(gpu_cu.cuStreamSynchronize(c->stream));
        for (int b = 0; c->graph && b <= x->max_batch; b++)
            if (c->graph[b])
                cudaGraphExecDestroy(c->graph[b]);
        if (c->mem)
            gpu_mem_free(dev, c->mem);
        if (c->own_stream)
            gpu_stream_release(dev, c->stream);
        omma_device_leave(&scope);
    }
    free(c->in);
    free(c->in_direct);
    free(c->out_node);
    free(c->out_f32);
    free(c->skip);
    free(c->out);
    free(c->graph);
    free(c->graph_nodes);
    free(c->acts);
    free(c);
    x->state = NULL;
    x->arena = NULL;
}

static float *cuda_io_buffer(omma_exec *x, bool input, int i)
{
    cuda_exec *c = x->state;
    return input ? c->in[i] : c->out[i];
}

/* The device pointer of an activation; NULL for a constant (cuda_op_launch
 * reads constants from the weights). */
static const void *act_ptr(const omma_exec *x, int t)
{
    if (t < 0 || x->engine->graph->tensors[t].data)
        return NULL;
    return arena_ptr(x, t);
}

/* The index of graph input t when the exec hands it to its readers as
 * float32, else -1. */
static int direct_input(const omma_exec *x, int t)
{
    const cuda_exec *c = x->state;
    const gr_graph *g = x->engine->graph;
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] == t && c->in_direct[i])
            return i;
    return -1;
}

/* The index of the graph output node i writes as float32, else -1. */
static int direct_output(const omma_exec *x, int i)
{
    const cuda_exec *c = x->state;
    for (int k = 0; k < x->engine->graph->n_outputs; k++)
        if (c->out_node[k] == i)
            return k;
    return -1;
}

/* Enqueues one whole run; *launches counts the launches made. */
static omma_status enqueue(omma_exec *x, int batch, int *launches)
{
    cuda_exec *c = x->state;
    const omma_engine *e = x->engine;
    const gr_graph *g = e->graph;
    const plan_layout *p = e->plan;
    const cuda_weights *w = ((const cuda_engine *)e->cuda)->w;
    cudaStream_t s = (cudaStream_t)c->stream;
    bool f16 = prec_of(e) == CUDA_PREC_F16;
    *launches = 0;
    if (f16) {
        for (int i = 0; i < g->n_inputs; i++) {
            if (c->in_direct[i])
                continue;
            OMMA_TRY(cuda_convert(arena_ptr(x, g->inputs[i]), CUDA_PREC_F16, c->in[i],
                                  CUDA_PREC_F32,
                                  tensor_item_elems(g, g->inputs[i]) * (size_t)batch, s));
            ++*launches;
        }
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *n = &g->nodes[i];
        if (e->step_end && e->step_end[i] > i && cuda_op_step_pays(g, i, x->max_batch)) {
            OMMA_TRY(cuda_op_launch_step(g, i, e->step_end[i], w, batch, x->max_batch, c->acts,
                                         c->out_f32, s));
            ++*launches;
            i = e->step_end[i];
            continue;
        }
        if (c->skip[i])
            continue; /* its input's producer wrote the float32 output */
        const void *in[GR_MAX_INPUTS] = {0};
        for (int k = 0; k < n->n_in; k++)
            in[k] = act_ptr(x, n->in[k]);
        int direct = f16 && n->n_in > 0 ? direct_input(x, n->in[0]) : -1;
        const void *residual = NULL;
        if ((n->op == GR_CONV2D || n->op == GR_DWCONV2D || n->op == GR_DWPW) &&
            n->p.conv.residual >= 0)
            residual = act_ptr(x, n->p.conv.residual);
        void *out = arena_ptr(x, n->out);
        if (n->op == GR_RESHAPE && in[0] == out)
            continue; /* aliased by the plan: nothing to do */
        int nb = p->slots[n->out].batched ? batch : 1;
        int out_f32 = f16 ? direct_output(x, i) : -1;
        if (out_f32 >= 0) {
            OMMA_TRY(cuda_op_launch_f32_output(g, n, w, nb, x->max_batch, in, residual,
                                               c->out[out_f32], s));
        } else if (direct >= 0) {
            in[0] = c->in[direct];
            OMMA_TRY(cuda_op_launch_f32_input(g, n, w, nb, x->max_batch, in, residual, out, s));
        } else {
            OMMA_TRY(cuda_op_launch(g, n, w, nb, x->max_batch, in, residual, out, s));
        }
        ++*launches;
    }
    if (f16) {
        for (int i = 0; i < g->n_outputs; i++) {
            if (c->out_node[i] >= 0)
                continue; /* written as float32 by its node */
            ++*launches;
            OMMA_TRY(cuda_convert(c->out[i], CUDA_PREC_F32, arena_ptr(x, g->outputs[i]),
                                  CUDA_PREC_F16,
                                  tensor_item_elems(g, g->outputs[i]) * (size_t)batch, s));
        }
    }
    return OMMA_OK;
}

/* Captures the run at `batch` into c->graph[batch]. */
static omma_status capture(omma_exec *x, int batch)
{
    cuda_exec *c = x->state;
    cudaStream_t s = (cudaStream_t)c->stream;
    cudaGraph_t graph = NULL;
    cudaGraphExec_t exec = NULL;
    int launches = 0;
    /* Thread-local mode: other threads' unsafe calls (allocations...) are
     * not affected by this capture, and it by theirs. */
    OMMA_TRY(OMMA_CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)));
    omma_status st = enqueue(x, batch, &launches);
    omma_status end = OMMA_CK(cudaStreamEndCapture(s, &graph));
    if (st == OMMA_OK)
        st = end;
    size_t nodes = 0;
    if (st == OMMA_OK)
        st = OMMA_CK(cudaGraphGetNodes(graph, NULL, &nodes));
    if (st == OMMA_OK)
        st = OMMA_CK(cudaGraphInstantiate(&exec, graph, 0));
    if (graph)
        cudaGraphDestroy(graph);
    if (st != OMMA_OK)
        return st;
    c->graph[batch] = exec;
    c->graph_nodes[batch] = (int)nodes;
    x->n_graphs++;
    return OMMA_OK;
}

static omma_status run_in_scope(omma_exec *x, int batch)
{
    cuda_exec *c = x->state;
    if (!x->opt.graphs)
        return enqueue(x, batch, &x->launches);
    if (!c->graph[batch])
        OMMA_TRY(capture(x, batch));
    x->launches = c->graph_nodes[batch];
    return OMMA_CK(cudaGraphLaunch(c->graph[batch], (cudaStream_t)c->stream));
}

static omma_status cuda_run(omma_exec *x, int batch)
{
    omma_device *dev = x->engine->dev;
    OMMA_TRY(check_alive(dev, "omma_exec_run"));
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    omma_status st = run_in_scope(x, batch);
    return note_lost(dev, gpu_leave_keep(&scope, st));
}

static omma_status cuda_wait(omma_exec *x)
{
    cuda_exec *c = x->state;
    omma_device *dev = x->engine->dev;
    OMMA_TRY(check_alive(dev, "omma_exec_wait"));
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    omma_status st = OMMA_CK(gpu_cu.cuStreamSynchronize(c->stream));
    return note_lost(dev, gpu_leave_keep(&scope, st));
}

const eng_backend eng_cuda_backend = {
    .name = "cuda",
    .exec_init = cuda_exec_init,
    .exec_fini = cuda_exec_fini,
    .run = cuda_run,
    .io_buffer = cuda_io_buffer,
    .wait = cuda_wait,
    .engine_fini = cuda_engine_fini,
};
