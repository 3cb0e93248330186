/* The host side of the CUDA ops: from a graph node to a kernel launch.
 * Shapes come from the (validated) graph, constants from cuda_weights,
 * activations from the caller; each launcher's result is checked with
 * OMMA_CK so a failed launch names the launcher and the CUDA error. */
#include "engine/cuda_ops.h"

#include <string.h>

#include "core/error.h"
#include "engine/cuda_weights.h"
#include "gpu/check.h"

/* Elements of one tensor per launch at most: kernels index with int. */
#define LAUNCH_ELEMS_MAX ((size_t)1 << 30)

size_t cuda_prec_size(cuda_prec p)
{
    return p == CUDA_PREC_F16 ? 2 : 4;
}

const char *cuda_prec_name(cuda_prec p)
{
    return p == CUDA_PREC_F16 ? "fp16" : "fp32";
}

bool cuda_conv_is_pointwise(const gr_graph *g, const gr_node *n)
{
    if (n->op != GR_CONV2D)
        return false;
    const gr_window *w = &n->p.conv.win;
    if (w->pad_top || w->pad_left || w->pad_bottom || w->pad_right)
        return false;
    if (w->kh == 1 && w->kw == 1 && w->stride_h == 1 && w->stride_w == 1)
        return true;
    const gr_tensor *x = &g->tensors[n->in[0]];
    return x->rank == 4 && w->kh == x->dims[1] && w->kw == x->dims[2] && w->dil_h == 1 &&
           w->dil_w == 1;
}

/* Elements per batch item (dims after the first). */
static size_t item_elems(const gr_tensor *t)
{
    size_t n = 1;
    for (int d = 1; d < t->rank; d++)
        n *= (size_t)t->dims[d];
    return n;
}

static size_t span(const gr_tensor *t, int from, int to)
{
    size_t n = 1;
    for (int d = from; d < to && d < t->rank; d++)
        n *= (size_t)t->dims[d];
    return n;
}

/* One launch covers items [b0, b0 + nb). */
typedef struct launch {
    const gr_graph *g;
    const gr_node *n;
    int idx; /* node index */
    const cuda_weights *w;
    int b0, nb;
    size_t es;
    bool in0_f32; /* inputs[0] is float32 (cuda_op_launch_f32_input) */
    bool out_f32; /* out is float32 (cuda_op_launch_f32_output) */
    const void *const *inputs;
    const void *residual;
    void *out;
    cudaStream_t s;
} launch;

static const gr_tensor *tensor(const launch *l, int t)
{
    return &l->g->tensors[t];
}

static omma_status fail_node(const launch *l, omma_status st, const char *what)
{
    return OMMA_FAIL(st, "cuda op: node %d (%s, model op %d): %s", l->idx, gr_op_name(l->n->op),
                     l->n->src_index, what);
}

/* Activation pointer moved to item b0. */
/* Item b0 of tensor t at p, elements of es bytes. */
static const void *item_ptr_es(const launch *l, const void *p, int t, size_t es)
{
    return (const unsigned char *)p + (size_t)l->b0 * item_elems(tensor(l, t)) * es;
}

static const void *item_ptr(const launch *l, const void *p, int t)
{
    return item_ptr_es(l, p, t, l->es);
}

/* Input k: a constant from the weights, or the caller's activation. */
static omma_status input(const launch *l, int k, const void **p, bool *is_const)
{
    int t = l->n->in[k];
    *p = NULL;
    if (is_const)
        *is_const = false;
    if (t >= 0 && l->w->consts[t]) {
        *p = l->w->consts[t];
        if (is_const)
            *is_const = true;
        return OMMA_OK;
    }
    if (!l->inputs || !l->inputs[k])
        return fail_node(l, OMMA_ERR_INVALID_ARG, "an input activation pointer is NULL");
    *p = item_ptr_es(l, l->inputs[k], t, k == 0 && l->in0_f32 ? sizeof(float) : l->es);
    return OMMA_OK;
}

static void *output(const launch *l)
{
    return (void *)item_ptr_es(l, l->out, l->n->out, l->out_f32 ? sizeof(float) : l->es);
}

/* The shapes and window of a convolution or pool from x to y (batch 1, no
 * buffers, no epilogue yet). */
static void conv_shape(const gr_tensor *x, const gr_tensor *y, const gr_window *win,
                       cuda_conv_args *a)
{
    memset(a, 0, sizeof *a);
    a->batch = 1;
    a->ih = x->dims[1], a->iw = x->dims[2], a->cin = x->dims[3];
    a->oh = y->dims[1], a->ow = y->dims[2], a->cout = y->dims[3];
    a->kh = win->kh, a->kw = win->kw, a->sh = win->stride_h, a->sw = win->stride_w;
    a->dh = win->dil_h, a->dw = win->dil_w, a->pt = win->pad_top, a->pl = win->pad_left;
    a->mult = 1;
    a->act = GR_ACT_NONE;
}

static omma_status run_conv(const launch *l, bool pool)
{
    const gr_node *n = l->n;
    const gr_tensor *x = tensor(l, n->in[0]), *y = tensor(l, n->out);
    const cuda_node_weights *nw = &l->w->nodes[l->idx];
    const gr_window *win = pool ? &n->p.pool.win : &n->p.conv.win;
    cuda_conv_args a;
    conv_shape(x, y, win, &a);
    a.prec = l->w->prec;
    OMMA_TRY(input(l, 0, &a.x, NULL));
    a.y = output(l);
    a.batch = l->nb;
    a.x_f32 = l->in0_f32;
    if (pool)
        return OMMA_CK(cuda_launch_maxpool(&a, l->s));
    a.w = nw->filter;
    a.bias = nw->bias;
    a.alpha = nw->alpha;
    a.act = (int)n->p.conv.act;
    a.mult = n->op == GR_DWCONV2D ? n->p.conv.depth_multiplier : 1;
    if (n->p.conv.residual >= 0) {
        if (!l->residual)
            return fail_node(l, OMMA_ERR_INVALID_ARG, "the residual pointer is NULL");
        a.residual = item_ptr(l, l->residual, n->p.conv.residual);
    }
    if (!a.w || (n->p.conv.act == GR_ACT_PRELU && !a.alpha) || (n->in[2] >= 0 && !a.bias))
        return fail_node(l, OMMA_ERR_INVALID_ARG, "weights of another graph");
    if (n->op == GR_DWCONV2D)
        return OMMA_CK(cuda_launch_dwconv(&a, l->s));
    if (cuda_conv_is_pointwise(l->g, n)) {
        if (cuda_conv_dot_fits(a.cout, a.kh * a.kw * a.cin))
            return OMMA_CK(cuda_launch_conv_dot(&a, l->s));
        return OMMA_CK(cuda_launch_conv_pointwise(&a, l->s));
    }
    return OMMA_CK(cuda_launch_conv_direct(&a, l->s));
}

/* A DWPW node's shapes, window and epilogue for batch 1, no pointers. */
static void dwpw_shape(const gr_graph *g, const gr_node *n, cuda_prec prec, cuda_dwpw_args *a)
{
    const gr_tensor *x = &g->tensors[n->in[0]], *y = &g->tensors[n->out];
    const gr_window *win = &n->p.conv.win;
    memset(a, 0, sizeof *a);
    a->prec = prec;
    a->batch = 1;
    a->ih = x->dims[1], a->iw = x->dims[2], a->c = x->dims[3];
    a->oh = y->dims[1], a->ow = y->dims[2], a->cout = y->dims[3];
    a->kh = win->kh, a->kw = win->kw, a->sh = win->stride_h, a->sw = win->stride_w;
    a->dh = win->dil_h, a->dw = win->dil_w, a->pt = win->pad_top, a->pl = win->pad_left;
    a->act = (int)n->p.conv.act;
    if (n->p.conv.residual >= 0) {
        const gr_tensor *r = &g->tensors[n->p.conv.residual];
        a->rc = r->dims[r->rank - 1];
        a->pool_residual = n->p.conv.pool_residual;
    }
}

/* A DWPW node's constants into a; false when w lacks one the node needs. */
static bool dwpw_weights(const gr_node *n, const cuda_node_weights *nw, cuda_dwpw_args *a)
{
    a->dw_w = nw->dw_filter;
    a->dw_bias = nw->dw_bias;
    a->pw_w = nw->filter;
    a->bias = nw->bias;
    a->alpha = nw->alpha;
    return a->pw_w && a->dw_w && (n->p.conv.act != GR_ACT_PRELU || a->alpha) &&
           (n->in[4] < 0 || a->bias) && (n->in[2] < 0 || a->dw_bias);
}

static omma_status run_dwpw(const launch *l)
{
    const gr_node *n = l->n;
    cuda_dwpw_args a;
    dwpw_shape(l->g, n, l->w->prec, &a);
    OMMA_TRY(input(l, 0, &a.x, NULL));
    a.y = output(l);
    a.batch = l->nb;
    if (n->p.conv.residual >= 0) {
        if (!l->residual)
            return fail_node(l, OMMA_ERR_INVALID_ARG, "the residual pointer is NULL");
        a.residual = item_ptr(l, l->residual, n->p.conv.residual);
    }
    if (!dwpw_weights(n, &l->w->nodes[l->idx], &a))
        return fail_node(l, OMMA_ERR_INVALID_ARG, "weights of another graph");
    if (!cuda_dwpw_fits(&a))
        return fail_node(l, OMMA_ERR_UNSUPPORTED,
                         "the block's filters do not fit in the kernel's shared memory");
    return OMMA_CK(cuda_launch_dwpw(&a, l->s));
}

static omma_status run_eltwise(const launch *l)
{
    const gr_node *n = l->n;
    const gr_tensor *y = tensor(l, n->out);
    cuda_eltwise_args a;
    memset(&a, 0, sizeof a);
    a.prec = l->w->prec;
    a.y = output(l);
    a.n = (int)((size_t)l->nb * item_elems(y));
    a.c = y->dims[y->rank - 1];
    a.alpha = l->w->nodes[l->idx].alpha;
    if (n->op == GR_ADD) {
        bool c0, c1;
        const void *p0, *p1;
        OMMA_TRY(input(l, 0, &p0, &c0));
        OMMA_TRY(input(l, 1, &p1, &c1));
        int tb = n->in[1];
        if (c0) { /* put the constant second: it repeats per item */
            const void *p = p0;
            p0 = p1, p1 = p;
            c1 = true;
            tb = n->in[0];
        }
        a.a = p0;
        a.b = p1;
        a.b_period = c1 ? (int)gr_tensor_elems(tensor(l, tb)) : 0;
        a.act = (int)n->p.add.act;
    } else {
        OMMA_TRY(input(l, 0, &a.a, NULL));
        a.act = n->op == GR_PRELU ? GR_ACT_PRELU : GR_ACT_RELU;
    }
    if (a.act == GR_ACT_PRELU && !a.alpha)
        return fail_node(l, OMMA_ERR_INVALID_ARG, "weights of another graph");
    return OMMA_CK(cuda_launch_eltwise(&a, l->s));
}

static omma_status run_pad(const launch *l)
{
    const gr_node *n = l->n;
    const gr_tensor *x = tensor(l, n->in[0]), *y = tensor(l, n->out);
    cuda_pad_args a;
    memset(&a, 0, sizeof a);
    a.prec = l->w->prec;
    OMMA_TRY(input(l, 0, &a.x, NULL));
    a.y = output(l);
    a.batch = l->nb;
    for (int k = 0; k < 3; k++)
        a.in[k] = a.out[k] = 1;
    for (int d = 1; d < x->rank; d++) { /* [B, d1..] -> [B, 1.., d1..] */
        int k = d + (4 - x->rank) - 1;
        a.in[k] = x->dims[d];
        a.out[k] = y->dims[d];
        a.before[k] = n->p.pad.before[d];
    }
    return OMMA_CK(cuda_launch_pad(&a, l->s));
}

static omma_status run_concat(const launch *l)
{
    const gr_node *n = l->n;
    const gr_tensor *y = tensor(l, n->out);
    int ax = n->p.concat.axis;
    cuda_concat_args a;
    memset(&a, 0, sizeof a);
    a.prec = l->w->prec;
    a.n_in = n->n_in;
    for (int k = 0; k < n->n_in; k++) {
        OMMA_TRY(input(l, k, &a.x[k], NULL));
        a.width[k] = (int)span(tensor(l, n->in[k]), ax, GR_MAX_RANK);
    }
    a.outer = (int)((size_t)l->nb * span(y, 1, ax));
    a.out_width = (int)span(y, ax, GR_MAX_RANK);
    a.y = output(l);
    a.y_f32 = l->out_f32;
    return OMMA_CK(cuda_launch_concat(&a, l->s));
}

static omma_status run_resize(const launch *l)
{
    const gr_node *n = l->n;
    const gr_tensor *x = tensor(l, n->in[0]), *y = tensor(l, n->out);
    cuda_resize_args a;
    memset(&a, 0, sizeof a);
    a.prec = l->w->prec;
    OMMA_TRY(input(l, 0, &a.x, NULL));
    a.y = output(l);
    a.batch = l->nb;
    a.ih = x->dims[1], a.iw = x->dims[2], a.c = x->dims[3];
    a.oh = y->dims[1], a.ow = y->dims[2];
    a.align_corners = n->p.resize.align_corners;
    a.half_pixel_centers = n->p.resize.half_pixel_centers;
    return OMMA_CK(cuda_launch_resize_bilinear(&a, l->s));
}

static omma_status run_copy(const launch *l)
{
    const gr_node *n = l->n;
    const void *src;
    bool is_const;
    OMMA_TRY(input(l, 0, &src, &is_const));
    size_t bytes = item_elems(tensor(l, n->out)) * l->es;
    unsigned char *dst = output(l);
    if (n->op == GR_RESHAPE) {
        if (is_const)
            return fail_node(l, OMMA_ERR_UNSUPPORTED, "RESHAPE of a constant");
        return OMMA_CK(cudaMemcpyAsync(dst, src, bytes * (size_t)l->nb, cudaMemcpyDeviceToDevice,
                                       l->s));
    }
    /* DEQUANTIZE: the constant (already in the storage precision), once per
     * item when the executor treats the output as batched. */
    if (!is_const)
        return fail_node(l, OMMA_ERR_UNSUPPORTED, "DEQUANTIZE of an activation");
    for (int b = 0; b < l->nb; b++)
        OMMA_TRY(OMMA_CK(cudaMemcpyAsync(dst + (size_t)b * bytes, src, bytes,
                                         cudaMemcpyDeviceToDevice, l->s)));
    return OMMA_OK;
}

static omma_status run_items(const launch *l)
{
    switch (l->n->op) {
    case GR_CONV2D:
    case GR_DWCONV2D:
        return run_conv(l, false);
    case GR_MAXPOOL:
        return run_conv(l, true);
    case GR_DWPW:
        return run_dwpw(l);
    case GR_ADD:
    case GR_RELU:
    case GR_PRELU:
        return run_eltwise(l);
    case GR_PAD:
        return run_pad(l);
    case GR_CONCAT:
        return run_concat(l);
    case GR_RESIZE_BILINEAR:
        return run_resize(l);
    case GR_RESHAPE:
    case GR_DEQUANTIZE:
        return run_copy(l);
    case GR_OP_COUNT:
        break;
    }
    return fail_node(l, OMMA_ERR_UNSUPPORTED, "unknown op");
}

static omma_status launch_node(const gr_graph *g, const gr_node *n, const struct cuda_weights *w,
                               int batch, const void *const *inputs, const void *residual,
                               void *out, cudaStream_t stream, bool in0_f32, bool out_f32)
{
    if (!g || !n || !w || !out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda op: NULL graph, node, weights or output");
    if (n < g->nodes || n >= g->nodes + g->n_nodes)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda op: the node is not one of the graph's");
    if (w->n_nodes != g->n_nodes || w->n_tensors != g->n_tensors)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "cuda op: weights of a graph with %d nodes and %d tensors, this one has "
                         "%d and %d", w->n_nodes, w->n_tensors, g->n_nodes, g->n_tensors);
    launch l = {.g = g, .n = n, .idx = (int)(n - g->nodes), .w = w, .es = cuda_prec_size(w->prec),
                .inputs = inputs, .residual = residual, .out = out, .s = stream,
                .in0_f32 = in0_f32, .out_f32 = out_f32};
    if (batch < 1)
        return fail_node(&l, OMMA_ERR_INVALID_ARG, "batch below 1");
    if (n->op == GR_RESHAPE && inputs && inputs[0] == out)
        return OMMA_OK;
    /* Split the batch so that no launch spans 2^30 elements of a tensor. */
    size_t item = item_elems(&g->tensors[n->out]);
    int r[GR_MAX_INPUTS + 2];
    int k = gr_node_reads(n, r);
    for (int i = 0; i < k; i++)
        if (!g->tensors[r[i]].data && !w->consts[r[i]] && item_elems(&g->tensors[r[i]]) > item)
            item = item_elems(&g->tensors[r[i]]);
    if (item == 0 || item >= LAUNCH_ELEMS_MAX)
        return fail_node(&l, OMMA_ERR_UNSUPPORTED, "a tensor item of 2^30 elements or more");
    int per = (int)(LAUNCH_ELEMS_MAX / item);
    for (int b0 = 0; b0 < batch; b0 += per) {
        l.b0 = b0;
        l.nb = batch - b0 < per ? batch - b0 : per;
        OMMA_TRY(run_items(&l));
    }
    return OMMA_OK;
}

omma_status cuda_op_launch(const gr_graph *g, const gr_node *n, const struct cuda_weights *w,
                           int batch, const void *const *inputs, const void *residual, void *out,
                           cudaStream_t stream)
{
    return launch_node(g, n, w, batch, inputs, residual, out, stream, false, false);
}

bool cuda_op_reads_f32(const gr_graph *g, const gr_node *n, cuda_prec p)
{
    if (!g || !n || p != CUDA_PREC_F16 || n->op != GR_CONV2D || cuda_conv_is_pointwise(g, n))
        return false;
    cuda_conv_args a;
    conv_shape(&g->tensors[n->in[0]], &g->tensors[n->out], &n->p.conv.win, &a);
    a.prec = p;
    a.x_f32 = 1;
    return cuda_conv_stem_reads_f32(&a);
}

omma_status cuda_op_launch_f32_input(const gr_graph *g, const gr_node *n,
                                     const struct cuda_weights *w, int batch,
                                     const void *const *inputs, const void *residual, void *out,
                                     cudaStream_t stream)
{
    if (!w || !cuda_op_reads_f32(g, n, w->prec))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "cuda op: this node cannot read float32 input in this precision");
    return launch_node(g, n, w, batch, inputs, residual, out, stream, true, false);
}

bool cuda_op_writes_f32(const gr_graph *g, const gr_node *n, cuda_prec p)
{
    return g && n && p == CUDA_PREC_F16 && n->op == GR_CONCAT;
}

omma_status cuda_op_launch_f32_output(const gr_graph *g, const gr_node *n,
                                      const struct cuda_weights *w, int batch,
                                      const void *const *inputs, const void *residual, void *out,
                                      cudaStream_t stream)
{
    if (!w || !cuda_op_writes_f32(g, n, w->prec))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "cuda op: this node cannot write float32 output in this precision");
    return launch_node(g, n, w, batch, inputs, residual, out, stream, false, true);
}

/* ---- chains of DWPW nodes ------------------------------------------------ */

/* Tensor t as a chain tensor of the chain starting at node first, for a
 * reader at node k: 1 + (its producer - first) when that producer is one
 * of nodes first .. k-1, else 0 (read from memory). */
static int chain_from(const gr_graph *g, int t, int first, int k)
{
    int p = g->tensors[t].producer;
    return p >= first && p < k ? p - first + 1 : 0;
}

/* The shapes of nodes first..last as a chain; false when they are not one
 * the kernel runs (every node a DWPW reading an earlier node's output,
 * shapes and shared memory as cuda_dwpw_chain_fits wants). */
static bool chain_shape(const gr_graph *g, int first, int last, cuda_prec p, cuda_chain_args *a)
{
    memset(a, 0, sizeof *a);
    if (last - first + 1 > CUDA_CHAIN_MAX)
        return false;
    a->n = last - first + 1;
    for (int k = first; k <= last; k++) {
        const gr_node *n = &g->nodes[k];
        if (n->op != GR_DWPW || g->tensors[n->in[0]].rank != 4)
            return false;
        dwpw_shape(g, n, p, &a->block[k - first]);
        a->x_from[k - first] = chain_from(g, n->in[0], first, k);
        if (k > first && a->x_from[k - first] == 0)
            return false;
        if (n->p.conv.residual >= 0)
            a->res_from[k - first] = chain_from(g, n->p.conv.residual, first, k);
    }
    return cuda_dwpw_chain_fits(a);
}

static int chain_end(const gr_graph *g, int first, cuda_prec p)
{
    cuda_chain_args a;
    int end = first;
    for (int k = first + 1; k < g->n_nodes && chain_shape(g, first, k, p, &a); k++)
        end = k;
    return end;
}

/* True when tensor t is a graph output or read by a node outside
 * first..last. */
static bool read_outside(const gr_graph *g, int t, int first, int last)
{
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] == t)
            return true;
    for (int i = 0; i < g->n_nodes; i++) {
        if (i >= first && i <= last)
            continue;
        int r[GR_MAX_INPUTS + 2];
        int k = gr_node_reads(&g->nodes[i], r);
        for (int j = 0; j < k; j++)
            if (r[j] == t)
                return true;
    }
    return false;
}

/* p moved by b0 items of n elements of es bytes (NULL stays NULL). */
static const void *items_on(const void *p, int b0, size_t n, size_t es)
{
    return p ? (const unsigned char *)p + (size_t)b0 * n * es : NULL;
}

static omma_status launch_chain(const gr_graph *g, int first, int last,
                                const struct cuda_weights *w, int batch, void *const *acts,
                                cudaStream_t stream)
{
    cuda_chain_args a;
    if (!chain_shape(g, first, last, w->prec, &a))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "cuda step: nodes %d..%d are not a chain the kernel runs", first, last);
    size_t item = 0; /* the largest item of a tensor the chain reads or writes */
    for (int k = first; k <= last; k++) {
        const gr_node *n = &g->nodes[k];
        cuda_dwpw_args *b = &a.block[k - first];
        if (!dwpw_weights(n, &w->nodes[k], b))
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: node %d: weights of another graph",
                             k);
        b->x = acts[n->in[0]];
        b->residual = n->p.conv.residual >= 0 ? acts[n->p.conv.residual] : NULL;
        b->y = k == last || read_outside(g, n->out, first, last) ? acts[n->out] : NULL;
        if ((a.x_from[k - first] == 0 && !b->x) || (k == last && !b->y) ||
            (n->p.conv.residual >= 0 && a.res_from[k - first] == 0 && !b->residual))
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: node %d: a NULL activation", k);
        size_t xi = item_elems(&g->tensors[n->in[0]]), yi = item_elems(&g->tensors[n->out]);
        item = xi > item ? xi : item;
        item = yi > item ? yi : item;
    }
    /* Split the batch so that no launch spans 2^30 elements of a tensor. */
    int per = (int)(LAUNCH_ELEMS_MAX / item);
    size_t es = cuda_prec_size(w->prec);
    for (int b0 = 0; b0 < batch; b0 += per) {
        cuda_chain_args part = a;
        for (int k = 0; k < a.n; k++) {
            const gr_node *n = &g->nodes[first + k];
            cuda_dwpw_args *b = &part.block[k];
            size_t r = (size_t)b->oh * b->ow * b->rc * (b->pool_residual ? 4 : 1);
            b->batch = batch - b0 < per ? batch - b0 : per;
            b->x = items_on(b->x, b0, item_elems(&g->tensors[n->in[0]]), es);
            b->residual = items_on(b->residual, b0, r, es);
            b->y = (void *)items_on(b->y, b0, item_elems(&g->tensors[n->out]), es);
        }
        OMMA_TRY(OMMA_CK(cuda_launch_dwpw_chain(&part, stream)));
    }
    return OMMA_OK;
}

/* ---- pairs of DWPW nodes on large images ------------------------------------ */

/* Nodes first and first + 1 as a pair (cuda_dwpw_pair_fits): two DWPW
 * nodes, the second reading the first's output, which nothing else reads;
 * residuals: each node its own input, or none in the first and the first's
 * input in the second. Fills a's shapes (no pointers). */
static bool pair_shape(const gr_graph *g, int first, cuda_prec p, cuda_pair_args *a)
{
    memset(a, 0, sizeof *a);
    if (p != CUDA_PREC_F16 || first + 1 >= g->n_nodes)
        return false;
    const gr_node *n0 = &g->nodes[first], *n1 = &g->nodes[first + 1];
    if (n0->op != GR_DWPW || n1->op != GR_DWPW || n1->in[0] != n0->out ||
        g->tensors[n0->in[0]].rank != 4 || g->tensors[n0->out].rank != 4 ||
        g->tensors[n1->out].rank != 4 || read_outside(g, n0->out, first, first + 1))
        return false;
    int r0 = n0->p.conv.residual, r1 = n1->p.conv.residual;
    if (r0 == n0->in[0] && r1 == n1->in[0])
        a->form = CUDA_PAIR_OWN;
    else if (r0 < 0 && r1 == n0->in[0])
        a->form = CUDA_PAIR_SPAN;
    else
        return false;
    dwpw_shape(g, n0, p, &a->a);
    dwpw_shape(g, n1, p, &a->b);
    return cuda_dwpw_pair_fits(a);
}

static omma_status launch_pair(const gr_graph *g, int first, const struct cuda_weights *w,
                               int batch, void *const *acts, cudaStream_t stream)
{
    cuda_pair_args a;
    if (!pair_shape(g, first, w->prec, &a))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "cuda step: nodes %d..%d are not a pair of blocks the kernel runs", first,
                         first + 1);
    const gr_node *n0 = &g->nodes[first], *n1 = &g->nodes[first + 1];
    if (!dwpw_weights(n0, &w->nodes[first], &a.a) || !dwpw_weights(n1, &w->nodes[first + 1], &a.b))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: nodes %d..%d: weights of another graph",
                         first, first + 1);
    const void *x = acts[n0->in[0]];
    void *z = acts[n1->out];
    if (!x || !z)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: nodes %d..%d: a NULL activation", first,
                         first + 1);
    size_t xi = item_elems(&g->tensors[n0->in[0]]), zi = item_elems(&g->tensors[n1->out]);
    size_t yi = item_elems(&g->tensors[n0->out]), item = xi > zi ? xi : zi;
    item = yi > item ? yi : item;
    int per = (int)(LAUNCH_ELEMS_MAX / item);
    size_t es = cuda_prec_size(w->prec);
    for (int b0 = 0; b0 < batch; b0 += per) {
        a.a.batch = a.b.batch = batch - b0 < per ? batch - b0 : per;
        a.a.x = items_on(x, b0, xi, es);
        a.b.y = (void *)items_on(z, b0, zi, es);
        OMMA_TRY(OMMA_CK(cuda_launch_dwpw_pair(&a, stream)));
    }
    return OMMA_OK;
}

/* ---- a 1x1 convolution + the upsampled level below, added (FPN) ---------- */

/* Nodes first .. first+2 as a GEMM-form convolution, a RESIZE_BILINEAR and
 * the ADD (no activation) of their outputs, which nothing else reads: in
 * fp16 one GEMM whose epilogue adds the upsampled tensor (cuda_conv_up_ok).
 * Fills a's shapes (no pointers). */
static bool up_add_shape(const gr_graph *g, int first, cuda_prec p, cuda_conv_args *a)
{
    if (p != CUDA_PREC_F16 || first + 2 >= g->n_nodes)
        return false;
    const gr_node *c = &g->nodes[first], *r = &g->nodes[first + 1], *d = &g->nodes[first + 2];
    if (c->op != GR_CONV2D || !cuda_conv_is_pointwise(g, c) || c->p.conv.residual >= 0 ||
        r->op != GR_RESIZE_BILINEAR || d->op != GR_ADD || d->p.add.act != GR_ACT_NONE)
        return false;
    int co = c->out, ro = r->out;
    if (!((d->in[0] == co && d->in[1] == ro) || (d->in[0] == ro && d->in[1] == co)))
        return false;
    if (read_outside(g, co, first + 2, first + 2) || read_outside(g, ro, first + 2, first + 2))
        return false;
    const gr_tensor *x = &g->tensors[c->in[0]], *y = &g->tensors[co];
    const gr_tensor *u = &g->tensors[r->in[0]], *ry = &g->tensors[ro];
    if (x->rank != 4 || y->rank != 4 || u->rank != 4 || ry->rank != 4 ||
        g->tensors[d->out].rank != 4)
        return false;
    for (int k = 1; k < 4; k++)
        if (ry->dims[k] != y->dims[k])
            return false;
    if (u->dims[3] != y->dims[3])
        return false;
    conv_shape(x, y, &c->p.conv.win, a);
    a->prec = p;
    a->act = (int)c->p.conv.act;
    a->uh = u->dims[1], a->uw = u->dims[2];
    a->up_align_corners = r->p.resize.align_corners;
    a->up_half_pixel = r->p.resize.half_pixel_centers;
    return !cuda_conv_dot_fits(a->cout, a->kh * a->kw * a->cin) && cuda_conv_up_ok(a);
}

static omma_status launch_up_add(const gr_graph *g, int first, const struct cuda_weights *w,
                                 int batch, void *const *acts, cudaStream_t stream)
{
    const gr_node *c = &g->nodes[first], *r = &g->nodes[first + 1], *d = &g->nodes[first + 2];
    const cuda_node_weights *nw = &w->nodes[first];
    cuda_conv_args a;
    if (!up_add_shape(g, first, w->prec, &a))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "cuda step: nodes %d..%d are not a convolution + upsample + add", first,
                         first + 2);
    a.w = nw->filter;
    a.bias = nw->bias;
    a.alpha = nw->alpha;
    if (!a.w || (c->p.conv.act == GR_ACT_PRELU && !a.alpha) || (c->in[2] >= 0 && !a.bias))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: node %d: weights of another graph",
                         first);
    const void *x = acts[c->in[0]], *up = acts[r->in[0]];
    void *y = acts[d->out];
    if (!x || !up || !y)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: nodes %d..%d: a NULL activation", first,
                         first + 2);
    size_t xi = item_elems(&g->tensors[c->in[0]]), ui = item_elems(&g->tensors[r->in[0]]);
    size_t yi = item_elems(&g->tensors[d->out]);
    size_t item = xi > yi ? xi : yi;
    int per = (int)(LAUNCH_ELEMS_MAX / (item > ui ? item : ui));
    size_t es = cuda_prec_size(w->prec);
    for (int b0 = 0; b0 < batch; b0 += per) {
        a.batch = batch - b0 < per ? batch - b0 : per;
        a.x = items_on(x, b0, xi, es);
        a.up = items_on(up, b0, ui, es);
        a.y = (void *)items_on(y, b0, yi, es);
        OMMA_TRY(OMMA_CK(cuda_launch_conv_pointwise(&a, stream)));
    }
    return OMMA_OK;
}

/* ---- a block and its heads --------------------------------------------------- */

/* Nodes first .. last as a DWPW block and its heads (cuda_dwpw_heads_fits):
 * 1x1 GEMM-form convolutions without residual or activation, each reading
 * the block's output, which nothing else reads. Fills a's shapes (no
 * pointers). */
static bool heads_shape(const gr_graph *g, int first, int last, cuda_prec p, cuda_heads_args *a)
{
    memset(a, 0, sizeof *a);
    if (p != CUDA_PREC_F16 || last <= first || last - first > CUDA_HEADS_MAX ||
        last >= g->n_nodes)
        return false;
    const gr_node *b = &g->nodes[first];
    if (b->op != GR_DWPW || g->tensors[b->in[0]].rank != 4 || g->tensors[b->out].rank != 4 ||
        read_outside(g, b->out, first, last))
        return false;
    dwpw_shape(g, b, p, &a->block);
    for (int k = first + 1; k <= last; k++) {
        const gr_node *n = &g->nodes[k];
        if (n->op != GR_CONV2D || n->in[0] != b->out || n->p.conv.win.kh != 1 ||
            n->p.conv.win.kw != 1 || !cuda_conv_is_pointwise(g, n) || n->p.conv.residual >= 0 ||
            n->p.conv.act != GR_ACT_NONE || g->tensors[n->out].rank != 4)
            return false;
        a->head[a->n_heads++].n = g->tensors[n->out].dims[3];
    }
    return cuda_dwpw_heads_fits(a);
}

/* The last node of the block-and-heads step at first, or first. */
static int heads_end(const gr_graph *g, int first, cuda_prec p)
{
    cuda_heads_args a;
    int end = first;
    for (int k = first + 1; k < g->n_nodes && k - first <= CUDA_HEADS_MAX; k++)
        if (heads_shape(g, first, k, p, &a))
            end = k;
    return end;
}

static omma_status launch_heads(const gr_graph *g, int first, int last,
                                const struct cuda_weights *w, int batch, void *const *acts,
                                void *const *f32, cudaStream_t stream)
{
    cuda_heads_args a;
    if (!heads_shape(g, first, last, w->prec, &a))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "cuda step: nodes %d..%d are not a block and its heads", first, last);
    const gr_node *b = &g->nodes[first];
    if (!dwpw_weights(b, &w->nodes[first], &a.block))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: node %d: weights of another graph",
                         first);
    const int rt = b->p.conv.residual;
    const void *x = acts[b->in[0]], *res = rt >= 0 ? acts[rt] : NULL;
    if (!x || (rt >= 0 && !res))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: node %d: a NULL activation", first);
    size_t xi = item_elems(&g->tensors[b->in[0]]), ri = rt >= 0 ? item_elems(&g->tensors[rt]) : 0;
    size_t item = xi > ri ? xi : ri, yi[CUDA_HEADS_MAX];
    void *y[CUDA_HEADS_MAX];
    for (int k = first + 1; k <= last; k++) {
        const gr_node *n = &g->nodes[k];
        const cuda_node_weights *nw = &w->nodes[k];
        cuda_head *h = &a.head[k - first - 1];
        h->w = nw->filter;
        h->bias = nw->bias;
        if (!h->w || (n->in[2] >= 0 && !h->bias))
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: node %d: weights of another graph",
                             k);
        h->y_f32 = f32 && f32[n->out];
        y[k - first - 1] = h->y_f32 ? f32[n->out] : acts[n->out];
        if (!y[k - first - 1])
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: node %d: a NULL activation", k);
        yi[k - first - 1] = item_elems(&g->tensors[n->out]);
        item = yi[k - first - 1] > item ? yi[k - first - 1] : item;
    }
    int per = (int)(LAUNCH_ELEMS_MAX / item);
    size_t es = cuda_prec_size(w->prec);
    for (int b0 = 0; b0 < batch; b0 += per) {
        a.block.batch = batch - b0 < per ? batch - b0 : per;
        a.block.x = items_on(x, b0, xi, es);
        a.block.residual = items_on(res, b0, ri, es);
        for (int j = 0; j < a.n_heads; j++)
            a.head[j].y = (void *)items_on(y[j], b0, yi[j], a.head[j].y_f32 ? sizeof(float) : es);
        OMMA_TRY(OMMA_CK(cuda_launch_dwpw_heads(&a, stream)));
    }
    return OMMA_OK;
}

/* ---- steps ------------------------------------------------------------------ */

int cuda_op_step_end(const gr_graph *g, int first, cuda_prec p)
{
    if (!g || first < 0 || first >= g->n_nodes || p != CUDA_PREC_F16)
        return first;
    cuda_conv_args a;
    if (up_add_shape(g, first, p, &a))
        return first + 2;
    int end = heads_end(g, first, p);
    if (end > first)
        return end;
    end = chain_end(g, first, p);
    cuda_pair_args pair;
    /* A block with heads takes them rather than pair with the one before. */
    if (end == first && pair_shape(g, first, p, &pair) && heads_end(g, first + 1, p) == first + 1)
        end = first + 1;
    return end;
}

bool cuda_op_step_writes_f32(const gr_graph *g, int first, int t)
{
    cuda_heads_args a;
    if (!g || first < 0 || first >= g->n_nodes)
        return false;
    int last = heads_end(g, first, CUDA_PREC_F16);
    if (last == first || !heads_shape(g, first, last, CUDA_PREC_F16, &a))
        return false;
    for (int k = first + 1; k <= last; k++)
        if (g->nodes[k].out == t)
            return true;
    return false;
}

bool cuda_op_step_pays(const gr_graph *g, int first, int batch)
{
    /* A block with heads (the step's second node a convolution, not a
     * block) always pays. */
    if (!g || first < 0 || first + 1 >= g->n_nodes || g->nodes[first].op != GR_DWPW ||
        g->nodes[first + 1].op != GR_DWPW)
        return true;
    cuda_chain_args chain;
    cuda_pair_args pair;
    if (!chain_shape(g, first, first + 1, CUDA_PREC_F16, &chain) &&
        pair_shape(g, first, CUDA_PREC_F16, &pair)) {
        pair.a.batch = pair.b.batch = batch;
        return cuda_dwpw_pair_pays(&pair);
    }
    return cuda_dwpw_chain_pays(batch);
}

omma_status cuda_op_launch_step(const gr_graph *g, int first, int last,
                                const struct cuda_weights *w, int batch, void *const *acts,
                                void *const *f32, cudaStream_t stream)
{
    if (!g || !w || !acts)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: NULL graph, weights or tensors");
    if (w->n_nodes != g->n_nodes || w->n_tensors != g->n_tensors)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: weights of another graph");
    if (first < 0 || last >= g->n_nodes || first >= last || batch < 1)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: nodes %d..%d, batch %d", first, last,
                         batch);
    if (g->nodes[first].op == GR_CONV2D && last == first + 2)
        return launch_up_add(g, first, w, batch, acts, stream);
    if (g->nodes[first + 1].op == GR_CONV2D)
        return launch_heads(g, first, last, w, batch, acts, f32, stream);
    cuda_chain_args chain;
    if (last == first + 1 && !chain_shape(g, first, last, w->prec, &chain))
        return launch_pair(g, first, w, batch, acts, stream);
    return launch_chain(g, first, last, w, batch, acts, stream);
}

omma_status cuda_convert(void *dst, cuda_prec dst_prec, const void *src, cuda_prec src_prec,
                         size_t n, cudaStream_t stream)
{
    if ((!dst || !src) && n)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda convert: NULL buffer");
    size_t ds = cuda_prec_size(dst_prec), ss = cuda_prec_size(src_prec);
    for (size_t i = 0; i < n; i += LAUNCH_ELEMS_MAX) {
        size_t m = n - i < LAUNCH_ELEMS_MAX ? n - i : LAUNCH_ELEMS_MAX;
        OMMA_TRY(OMMA_CK(cuda_launch_convert((unsigned char *)dst + i * ds, dst_prec,
                                             (const unsigned char *)src + i * ss, src_prec, (int)m,
                                             stream)));
    }
    return OMMA_OK;
}
