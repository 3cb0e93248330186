/* The host side of the CUDA ops: from a graph node to a kernel launch.
 * Shapes come from the (validated) graph, constants from cuda_weights,
 * activations from the caller; each launcher's result is checked with
 * OMMA_CK so a failed launch names the launcher and the CUDA error.
 * Steps of several nodes run as one kernel are cuda_ops_step.c's. */
#include "engine/cuda_ops.h"
#include "engine/cuda_ops_host.h"

#include <string.h>

#include "core/error.h"
#include "engine/cuda_weights.h"
#include "gpu/check.h"

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

size_t cuda_item_elems(const gr_tensor *t)
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
    int choice_batch; /* cuda_op_launch's */
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
    return (const unsigned char *)p + (size_t)l->b0 * cuda_item_elems(tensor(l, t)) * es;
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

void cuda_conv_shape(const gr_tensor *x, const gr_tensor *y, const gr_window *win,
                     cuda_conv_args *a)
{
    memset(a, 0, sizeof *a);
    a->batch = a->choice_batch = 1;
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
    cuda_conv_shape(x, y, win, &a);
    a.prec = l->w->prec;
    OMMA_TRY(input(l, 0, &a.x, NULL));
    a.y = output(l);
    a.batch = l->nb;
    a.choice_batch = l->choice_batch;
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

void cuda_dwpw_shape(const gr_graph *g, const gr_node *n, cuda_prec prec, cuda_dwpw_args *a)
{
    const gr_tensor *x = &g->tensors[n->in[0]], *y = &g->tensors[n->out];
    const gr_window *win = &n->p.conv.win;
    memset(a, 0, sizeof *a);
    a->prec = prec;
    a->batch = a->choice_batch = 1;
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

bool cuda_dwpw_weights(const gr_node *n, const cuda_node_weights *nw, cuda_dwpw_args *a)
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
    cuda_dwpw_shape(l->g, n, l->w->prec, &a);
    OMMA_TRY(input(l, 0, &a.x, NULL));
    a.y = output(l);
    a.batch = l->nb;
    a.choice_batch = l->choice_batch;
    if (n->p.conv.residual >= 0) {
        if (!l->residual)
            return fail_node(l, OMMA_ERR_INVALID_ARG, "the residual pointer is NULL");
        a.residual = item_ptr(l, l->residual, n->p.conv.residual);
    }
    if (!cuda_dwpw_weights(n, &l->w->nodes[l->idx], &a))
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
    a.n = (int)((size_t)l->nb * cuda_item_elems(y));
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

/* Where dimension d (1..rank-1) of an item of x lands in the three item
 * dimensions the copy kernels take: [B, d1..] -> [B, 1.., d1..]. */
static int item_axis(const gr_tensor *x, int d)
{
    return d + 3 - x->rank;
}

/* An item's dimensions of x and y as three, 1 where x has fewer. */
static void item_dims3(const gr_tensor *x, const gr_tensor *y, int in[3], int out[3])
{
    for (int k = 0; k < 3; k++)
        in[k] = out[k] = 1;
    for (int d = 1; d < x->rank; d++) {
        in[item_axis(x, d)] = x->dims[d];
        out[item_axis(x, d)] = y->dims[d];
    }
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
    item_dims3(x, y, a.in, a.out);
    for (int d = 1; d < x->rank; d++)
        a.before[item_axis(x, d)] = n->p.pad.before[d];
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

static omma_status run_logistic(const launch *l)
{
    cuda_unary_args a;
    memset(&a, 0, sizeof a);
    a.prec = l->w->prec;
    OMMA_TRY(input(l, 0, &a.x, NULL));
    a.y = output(l);
    a.n = (int)((size_t)l->nb * cuda_item_elems(tensor(l, l->n->out)));
    return OMMA_CK(cuda_launch_logistic(&a, l->s));
}

static omma_status run_depth_to_space(const launch *l)
{
    const gr_node *n = l->n;
    const gr_tensor *x = tensor(l, n->in[0]), *y = tensor(l, n->out);
    cuda_d2s_args a;
    memset(&a, 0, sizeof a);
    a.prec = l->w->prec;
    OMMA_TRY(input(l, 0, &a.x, NULL));
    a.y = output(l);
    a.batch = l->nb;
    a.h = x->dims[1], a.w = x->dims[2], a.c = y->dims[3];
    a.block = n->p.d2s.block;
    return OMMA_CK(cuda_launch_depth_to_space(&a, l->s));
}

static omma_status run_mul(const launch *l)
{
    const gr_node *n = l->n;
    cuda_mul_args a;
    memset(&a, 0, sizeof a);
    a.prec = l->w->prec;
    size_t item = cuda_item_elems(tensor(l, n->out));
    bool c[2];
    const void *p[2];
    int per[2];
    for (int k = 0; k < 2; k++) {
        OMMA_TRY(input(l, k, &p[k], &c[k]));
        per[k] = c[k] ? (int)gr_tensor_elems(tensor(l, n->in[k])) : (int)((size_t)l->nb * item);
    }
    a.a = p[0], a.b = p[1];
    a.a_period = per[0], a.b_period = per[1];
    a.y = output(l);
    a.n = (int)((size_t)l->nb * item);
    a.act = (int)n->p.add.act;
    return OMMA_CK(cuda_launch_mul(&a, l->s));
}

static omma_status run_strided_slice(const launch *l)
{
    const gr_node *n = l->n;
    const gr_tensor *x = tensor(l, n->in[0]), *y = tensor(l, n->out);
    cuda_slice_args a;
    memset(&a, 0, sizeof a);
    a.prec = l->w->prec;
    OMMA_TRY(input(l, 0, &a.x, NULL));
    a.y = output(l);
    a.batch = l->nb;
    item_dims3(x, y, a.in, a.out);
    for (int k = 0; k < 3; k++)
        a.stride[k] = 1;
    for (int d = 1; d < x->rank; d++) {
        a.begin[item_axis(x, d)] = n->p.slice.begin[d];
        a.stride[item_axis(x, d)] = n->p.slice.stride[d];
    }
    return OMMA_CK(cuda_launch_strided_slice(&a, l->s));
}

static omma_status run_landmarks_to_matrix(const launch *l)
{
    const gr_node *n = l->n;
    cuda_l2m_args a;
    memset(&a, 0, sizeof a);
    a.prec = l->w->prec;
    OMMA_TRY(input(l, 0, &a.x, NULL));
    a.y = output(l);
    a.batch = l->nb;
    a.landmarks = tensor(l, n->in[0])->dims[1];
    a.left = n->p.l2m.left, a.right = n->p.l2m.right;
    a.out_h = n->p.l2m.out_h, a.out_w = n->p.l2m.out_w;
    a.scale_x = n->p.l2m.scale_x, a.scale_y = n->p.l2m.scale_y;
    a.target_rotation = n->p.l2m.target_rotation;
    a.n_subset = n->p.l2m.n_subset;
    memcpy(a.subset, n->p.l2m.subset, sizeof a.subset);
    return OMMA_CK(cuda_launch_landmarks_to_matrix(&a, l->s));
}

static omma_status run_transform_bilinear(const launch *l)
{
    const gr_node *n = l->n;
    const gr_tensor *x = tensor(l, n->in[0]), *y = tensor(l, n->out);
    cuda_tbil_args a;
    memset(&a, 0, sizeof a);
    a.prec = l->w->prec;
    OMMA_TRY(input(l, 0, &a.x, NULL));
    OMMA_TRY(input(l, 1, &a.m, NULL));
    a.y = output(l);
    a.batch = l->nb;
    a.h = x->dims[1], a.w = x->dims[2], a.c = x->dims[3];
    a.oh = y->dims[1], a.ow = y->dims[2];
    return OMMA_CK(cuda_launch_transform_bilinear(&a, l->s));
}

static omma_status run_transform_landmarks(const launch *l)
{
    const gr_node *n = l->n;
    const gr_tensor *x = tensor(l, n->in[0]);
    cuda_tlm_args a;
    memset(&a, 0, sizeof a);
    a.prec = l->w->prec;
    OMMA_TRY(input(l, 0, &a.x, NULL));
    OMMA_TRY(input(l, 1, &a.m, NULL));
    a.y = output(l);
    a.batch = l->nb;
    a.landmarks = x->dims[1], a.dims = x->dims[2];
    return OMMA_CK(cuda_launch_transform_landmarks(&a, l->s));
}

static omma_status run_copy(const launch *l)
{
    const gr_node *n = l->n;
    const void *src;
    bool is_const;
    OMMA_TRY(input(l, 0, &src, &is_const));
    size_t bytes = cuda_item_elems(tensor(l, n->out)) * l->es;
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
    case GR_LOGISTIC:
        return run_logistic(l);
    case GR_DEPTH_TO_SPACE:
        return run_depth_to_space(l);
    case GR_MUL:
        return run_mul(l);
    case GR_STRIDED_SLICE:
        return run_strided_slice(l);
    case GR_LANDMARKS_TO_MATRIX:
        return run_landmarks_to_matrix(l);
    case GR_TRANSFORM_BILINEAR:
        return run_transform_bilinear(l);
    case GR_TRANSFORM_LANDMARKS:
        return run_transform_landmarks(l);
    case GR_OP_COUNT:
        break;
    }
    return fail_node(l, OMMA_ERR_UNSUPPORTED, "unknown op");
}

static omma_status launch_node(const gr_graph *g, const gr_node *n, const struct cuda_weights *w,
                               int batch, int choice_batch, const void *const *inputs,
                               const void *residual, void *out, cudaStream_t stream, bool in0_f32,
                               bool out_f32)
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
                .choice_batch = choice_batch, .inputs = inputs, .residual = residual, .out = out,
                .s = stream, .in0_f32 = in0_f32, .out_f32 = out_f32};
    if (batch < 1)
        return fail_node(&l, OMMA_ERR_INVALID_ARG, "batch below 1");
    if (choice_batch < batch)
        return fail_node(&l, OMMA_ERR_INVALID_ARG, "choice batch below the batch");
    if (n->op == GR_RESHAPE && inputs && inputs[0] == out)
        return OMMA_OK;
    /* Split the batch so that no launch spans LAUNCH_ELEMS_MAX elements of a tensor. */
    size_t item = cuda_item_elems(&g->tensors[n->out]);
    int r[GR_MAX_INPUTS + 2];
    int k = gr_node_reads(n, r);
    for (int i = 0; i < k; i++)
        if (!g->tensors[r[i]].data && !w->consts[r[i]] && cuda_item_elems(&g->tensors[r[i]]) > item)
            item = cuda_item_elems(&g->tensors[r[i]]);
    if (item == 0 || item >= LAUNCH_ELEMS_MAX)
        return fail_node(&l, OMMA_ERR_UNSUPPORTED, "a tensor item of 2^28 elements or more");
    int per = (int)(LAUNCH_ELEMS_MAX / item);
    for (int b0 = 0; b0 < batch; b0 += per) {
        l.b0 = b0;
        l.nb = batch - b0 < per ? batch - b0 : per;
        OMMA_TRY(run_items(&l));
    }
    return OMMA_OK;
}

omma_status cuda_op_launch(const gr_graph *g, const gr_node *n, const struct cuda_weights *w,
                           int batch, int choice_batch, const void *const *inputs,
                           const void *residual, void *out, cudaStream_t stream)
{
    return launch_node(g, n, w, batch, choice_batch, inputs, residual, out, stream, false, false);
}

bool cuda_op_reads_f32(const gr_graph *g, const gr_node *n, cuda_prec p)
{
    if (!g || !n || p != CUDA_PREC_F16 || n->op != GR_CONV2D || cuda_conv_is_pointwise(g, n))
        return false;
    cuda_conv_args a;
    cuda_conv_shape(&g->tensors[n->in[0]], &g->tensors[n->out], &n->p.conv.win, &a);
    a.prec = p;
    a.x_f32 = 1;
    return cuda_conv_stem_reads_f32(&a);
}

omma_status cuda_op_launch_f32_input(const gr_graph *g, const gr_node *n,
                                     const struct cuda_weights *w, int batch, int choice_batch,
                                     const void *const *inputs, const void *residual, void *out,
                                     cudaStream_t stream)
{
    if (!w || !cuda_op_reads_f32(g, n, w->prec))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "cuda op: this node cannot read float32 input in this precision");
    return launch_node(g, n, w, batch, choice_batch, inputs, residual, out, stream, true, false);
}

bool cuda_op_writes_f32(const gr_graph *g, const gr_node *n, cuda_prec p)
{
    return g && n && p == CUDA_PREC_F16 && n->op == GR_CONCAT;
}

omma_status cuda_op_launch_f32_output(const gr_graph *g, const gr_node *n,
                                      const struct cuda_weights *w, int batch, int choice_batch,
                                      const void *const *inputs, const void *residual, void *out,
                                      cudaStream_t stream)
{
    if (!w || !cuda_op_writes_f32(g, n, w->prec))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "cuda op: this node cannot write float32 output in this precision");
    return launch_node(g, n, w, batch, choice_batch, inputs, residual, out, stream, false, true);
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
