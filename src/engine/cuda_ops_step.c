/* The host side of the CUDA ops' multi-node steps (cuda_ops.h, "steps"):
 * which nodes from a given one run as one kernel (a chain of blocks on
 * small images, a pair of blocks on large ones, an FPN level, a block and
 * its heads, a depthwise + 1x1 pair on few channels, a resize and an
 * add), whether that pays at the exec's choice batch, and the launch.
 * Single nodes are cuda_ops.c's. */
#include <string.h>

#include "core/error.h"
#include "engine/cuda_ops.h"
#include "engine/cuda_ops_host.h"
#include "engine/cuda_weights.h"
#include "gpu/check.h"

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
        cuda_dwpw_shape(g, n, p, &a->block[k - first]);
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
                                const struct cuda_weights *w, int batch, int choice_batch,
                                void *const *acts, cudaStream_t stream)
{
    cuda_chain_args a;
    if (!chain_shape(g, first, last, w->prec, &a))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "cuda step: nodes %d..%d are not a chain the kernel runs", first, last);
    size_t item = 0; /* the largest item of a tensor the chain reads or writes */
    for (int k = first; k <= last; k++) {
        const gr_node *n = &g->nodes[k];
        cuda_dwpw_args *b = &a.block[k - first];
        if (!cuda_dwpw_weights(n, &w->nodes[k], b))
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: node %d: weights of another graph",
                             k);
        b->x = acts[n->in[0]];
        b->residual = n->p.conv.residual >= 0 ? acts[n->p.conv.residual] : NULL;
        b->y = k == last || read_outside(g, n->out, first, last) ? acts[n->out] : NULL;
        if ((a.x_from[k - first] == 0 && !b->x) || (k == last && !b->y) ||
            (n->p.conv.residual >= 0 && a.res_from[k - first] == 0 && !b->residual))
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: node %d: a NULL activation", k);
        size_t xi = cuda_item_elems(&g->tensors[n->in[0]]),
               yi = cuda_item_elems(&g->tensors[n->out]);
        item = xi > item ? xi : item;
        item = yi > item ? yi : item;
    }
    /* Split the batch so that no launch spans LAUNCH_ELEMS_MAX elements of a tensor. */
    int per = (int)(LAUNCH_ELEMS_MAX / item);
    size_t es = cuda_prec_size(w->prec);
    for (int b0 = 0; b0 < batch; b0 += per) {
        cuda_chain_args part = a;
        for (int k = 0; k < a.n; k++) {
            const gr_node *n = &g->nodes[first + k];
            cuda_dwpw_args *b = &part.block[k];
            size_t r = (size_t)b->oh * b->ow * b->rc * (b->pool_residual ? 4 : 1);
            b->batch = batch - b0 < per ? batch - b0 : per;
            b->choice_batch = choice_batch;
            b->x = items_on(b->x, b0, cuda_item_elems(&g->tensors[n->in[0]]), es);
            b->residual = items_on(b->residual, b0, r, es);
            b->y = (void *)items_on(b->y, b0, cuda_item_elems(&g->tensors[n->out]), es);
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
    cuda_dwpw_shape(g, n0, p, &a->a);
    cuda_dwpw_shape(g, n1, p, &a->b);
    return cuda_dwpw_pair_fits(a);
}

static omma_status launch_pair(const gr_graph *g, int first, const struct cuda_weights *w,
                               int batch, int choice_batch, void *const *acts, cudaStream_t stream)
{
    cuda_pair_args a;
    if (!pair_shape(g, first, w->prec, &a))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "cuda step: nodes %d..%d are not a pair of blocks the kernel runs", first,
                         first + 1);
    const gr_node *n0 = &g->nodes[first], *n1 = &g->nodes[first + 1];
    if (!cuda_dwpw_weights(n0, &w->nodes[first], &a.a) ||
        !cuda_dwpw_weights(n1, &w->nodes[first + 1], &a.b))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: nodes %d..%d: weights of another graph",
                         first, first + 1);
    const void *x = acts[n0->in[0]];
    void *z = acts[n1->out];
    if (!x || !z)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: nodes %d..%d: a NULL activation", first,
                         first + 1);
    size_t xi = cuda_item_elems(&g->tensors[n0->in[0]]), zi = cuda_item_elems(&g->tensors[n1->out]);
    size_t yi = cuda_item_elems(&g->tensors[n0->out]), item = xi > zi ? xi : zi;
    item = yi > item ? yi : item;
    int per = (int)(LAUNCH_ELEMS_MAX / item);
    size_t es = cuda_prec_size(w->prec);
    for (int b0 = 0; b0 < batch; b0 += per) {
        a.a.batch = a.b.batch = batch - b0 < per ? batch - b0 : per;
        a.a.choice_batch = a.b.choice_batch = choice_batch;
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
    cuda_conv_shape(x, y, &c->p.conv.win, a);
    a->prec = p;
    a->act = (int)c->p.conv.act;
    a->uh = u->dims[1], a->uw = u->dims[2];
    a->up_align_corners = r->p.resize.align_corners;
    a->up_half_pixel = r->p.resize.half_pixel_centers;
    return !cuda_conv_dot_fits(a->cout, a->kh * a->kw * a->cin) && cuda_conv_up_ok(a);
}

static omma_status launch_up_add(const gr_graph *g, int first, const struct cuda_weights *w,
                                 int batch, int choice_batch, void *const *acts,
                                 cudaStream_t stream)
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
    size_t xi = cuda_item_elems(&g->tensors[c->in[0]]), ui = cuda_item_elems(&g->tensors[r->in[0]]);
    size_t yi = cuda_item_elems(&g->tensors[d->out]);
    size_t item = xi > yi ? xi : yi;
    int per = (int)(LAUNCH_ELEMS_MAX / (item > ui ? item : ui));
    size_t es = cuda_prec_size(w->prec);
    for (int b0 = 0; b0 < batch; b0 += per) {
        a.batch = batch - b0 < per ? batch - b0 : per;
        a.choice_batch = choice_batch;
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
    if (p != CUDA_PREC_F16 || last <= first || last - first > CUDA_HEADS_MAX || last >= g->n_nodes)
        return false;
    const gr_node *b = &g->nodes[first];
    if (b->op != GR_DWPW || g->tensors[b->in[0]].rank != 4 || g->tensors[b->out].rank != 4 ||
        read_outside(g, b->out, first, last))
        return false;
    cuda_dwpw_shape(g, b, p, &a->block);
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
                                const struct cuda_weights *w, int batch, int choice_batch,
                                void *const *acts, void *const *f32, cudaStream_t stream)
{
    cuda_heads_args a;
    if (!heads_shape(g, first, last, w->prec, &a))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "cuda step: nodes %d..%d are not a block and its heads", first, last);
    const gr_node *b = &g->nodes[first];
    if (!cuda_dwpw_weights(b, &w->nodes[first], &a.block))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: node %d: weights of another graph",
                         first);
    const int rt = b->p.conv.residual;
    const void *x = acts[b->in[0]], *res = rt >= 0 ? acts[rt] : NULL;
    if (!x || (rt >= 0 && !res))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: node %d: a NULL activation", first);
    size_t xi = cuda_item_elems(&g->tensors[b->in[0]]),
           ri = rt >= 0 ? cuda_item_elems(&g->tensors[rt]) : 0;
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
        yi[k - first - 1] = cuda_item_elems(&g->tensors[n->out]);
        item = yi[k - first - 1] > item ? yi[k - first - 1] : item;
    }
    int per = (int)(LAUNCH_ELEMS_MAX / item);
    size_t es = cuda_prec_size(w->prec);
    for (int b0 = 0; b0 < batch; b0 += per) {
        a.block.batch = batch - b0 < per ? batch - b0 : per;
        a.block.choice_batch = choice_batch;
        a.block.x = items_on(x, b0, xi, es);
        a.block.residual = items_on(res, b0, ri, es);
        for (int j = 0; j < a.n_heads; j++)
            a.head[j].y = (void *)items_on(y[j], b0, yi[j], a.head[j].y_f32 ? sizeof(float) : es);
        OMMA_TRY(OMMA_CK(cuda_launch_dwpw_heads(&a, stream)));
    }
    return OMMA_OK;
}

/* ---- a depthwise convolution and the 1x1 convolution of its output ------ */

/* Nodes first, first+1 as a depthwise convolution and a 1x1 convolution
 * of its output (GEMM form, no PRELU), the depthwise output read by
 * nothing else, that cuda_dwproj_fits takes. Fills a's shapes (no
 * pointers). */
static bool dwproj_shape(const gr_graph *g, int first, cuda_prec p, cuda_dwproj_args *a)
{
    memset(a, 0, sizeof *a);
    if (p != CUDA_PREC_F16 || first + 1 >= g->n_nodes)
        return false;
    const gr_node *d = &g->nodes[first], *q = &g->nodes[first + 1];
    if (d->op != GR_DWCONV2D || d->p.conv.depth_multiplier != 1 || d->p.conv.residual >= 0 ||
        d->p.conv.act == GR_ACT_PRELU || gr_is_const(g, d->in[0]) || q->op != GR_CONV2D ||
        q->in[0] != d->out || q->p.conv.win.kh != 1 || q->p.conv.win.kw != 1 ||
        !cuda_conv_is_pointwise(g, q) || q->p.conv.act == GR_ACT_PRELU ||
        q->p.conv.residual == d->out || read_outside(g, d->out, first + 1, first + 1))
        return false;
    const gr_tensor *x = &g->tensors[d->in[0]], *xd = &g->tensors[d->out];
    const gr_tensor *y = &g->tensors[q->out];
    if (x->rank != 4 || xd->rank != 4 || y->rank != 4 || x->dims[3] != xd->dims[3] ||
        memcmp(xd->dims + 1, y->dims + 1, 2 * sizeof(int)) != 0)
        return false;
    if (q->p.conv.residual >= 0) {
        const gr_tensor *rt = &g->tensors[q->p.conv.residual];
        if (rt->rank != 4 || memcmp(rt->dims + 1, y->dims + 1, 3 * sizeof(int)) != 0)
            return false;
    }
    const gr_window *win = &d->p.conv.win;
    a->prec = p;
    a->batch = 1;
    a->ih = x->dims[1], a->iw = x->dims[2], a->c = x->dims[3];
    a->oh = y->dims[1], a->ow = y->dims[2], a->cout = y->dims[3];
    a->kh = win->kh, a->kw = win->kw, a->sh = win->stride_h, a->sw = win->stride_w;
    a->dh = win->dil_h, a->dw = win->dil_w, a->pt = win->pad_top, a->pl = win->pad_left;
    a->actd = (int)d->p.conv.act, a->act = (int)q->p.conv.act;
    return cuda_dwproj_fits(a);
}

static omma_status launch_dwproj(const gr_graph *g, int first, const struct cuda_weights *w,
                                 int batch, void *const *acts, cudaStream_t stream)
{
    cuda_dwproj_args a;
    if (!dwproj_shape(g, first, w->prec, &a))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "cuda step: nodes %d..%d are not a depthwise and 1x1 convolution", first,
                         first + 1);
    const gr_node *d = &g->nodes[first], *q = &g->nodes[first + 1];
    const cuda_node_weights *wd = &w->nodes[first], *wq = &w->nodes[first + 1];
    a.wd = wd->filter, a.bd = wd->bias;
    a.w = wq->filter, a.bias = wq->bias;
    if (!a.wd || !a.w || (d->in[2] >= 0 && !a.bd) || (q->in[2] >= 0 && !a.bias))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: nodes %d..%d: weights of another graph",
                         first, first + 1);
    const int rt = q->p.conv.residual;
    const void *x = acts[d->in[0]], *res = rt >= 0 ? acts[rt] : NULL;
    void *y = acts[q->out];
    if (!x || !y || (rt >= 0 && !res))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: nodes %d..%d: a NULL activation", first,
                         first + 1);
    size_t xi = cuda_item_elems(&g->tensors[d->in[0]]), yi = cuda_item_elems(&g->tensors[q->out]);
    int per = (int)(LAUNCH_ELEMS_MAX / (xi > yi ? xi : yi));
    size_t es = cuda_prec_size(w->prec);
    for (int b0 = 0; b0 < batch; b0 += per) {
        a.batch = batch - b0 < per ? batch - b0 : per;
        a.x = items_on(x, b0, xi, es);
        a.residual = items_on(res, b0, yi, es);
        a.y = (void *)items_on(y, b0, yi, es);
        OMMA_TRY(OMMA_CK(cuda_launch_dwproj(&a, stream)));
    }
    return OMMA_OK;
}

/* ---- a resize and the ADD of its output ------------------------------------- */

/* Nodes first, first+1 as a RESIZE_BILINEAR of an activation and the ADD
 * of its output and another activation of the same shape (no PRELU), the
 * resized tensor read by nothing else. Fills a's shapes and the addend's
 * tensor (no pointers). */
static bool resize_add_shape(const gr_graph *g, int first, cuda_prec p, cuda_resize_args *a,
                             int *addend)
{
    memset(a, 0, sizeof *a);
    if (p != CUDA_PREC_F16 || first + 1 >= g->n_nodes)
        return false;
    const gr_node *r = &g->nodes[first], *d = &g->nodes[first + 1];
    if (r->op != GR_RESIZE_BILINEAR || d->op != GR_ADD || d->n_in != 2 ||
        d->p.add.act == GR_ACT_PRELU || gr_is_const(g, r->in[0]) ||
        read_outside(g, r->out, first + 1, first + 1))
        return false;
    const int other = d->in[0] == r->out ? d->in[1] : d->in[0];
    if ((d->in[0] != r->out && d->in[1] != r->out) || other == r->out || gr_is_const(g, other))
        return false;
    const gr_tensor *x = &g->tensors[r->in[0]], *y = &g->tensors[r->out];
    const gr_tensor *o = &g->tensors[other], *z = &g->tensors[d->out];
    if (x->rank != 4 || y->rank != 4 || o->rank != 4 || z->rank != 4 ||
        memcmp(y->dims + 1, o->dims + 1, 3 * sizeof(int)) != 0 ||
        memcmp(y->dims + 1, z->dims + 1, 3 * sizeof(int)) != 0)
        return false;
    a->prec = p;
    a->batch = 1;
    a->ih = x->dims[1], a->iw = x->dims[2], a->c = x->dims[3];
    a->oh = y->dims[1], a->ow = y->dims[2];
    a->align_corners = r->p.resize.align_corners;
    a->half_pixel_centers = r->p.resize.half_pixel_centers;
    a->act = (int)d->p.add.act;
    *addend = other;
    return true;
}

static omma_status launch_resize_add(const gr_graph *g, int first, int batch, void *const *acts,
                                     cudaStream_t stream)
{
    cuda_resize_args a;
    int other;
    if (!resize_add_shape(g, first, CUDA_PREC_F16, &a, &other))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "cuda step: nodes %d..%d are not a resize and add",
                         first, first + 1);
    const gr_node *r = &g->nodes[first], *d = &g->nodes[first + 1];
    const void *x = acts[r->in[0]], *u = acts[other];
    void *y = acts[d->out];
    if (!x || !u || !y)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: nodes %d..%d: a NULL activation", first,
                         first + 1);
    size_t xi = cuda_item_elems(&g->tensors[r->in[0]]), yi = cuda_item_elems(&g->tensors[d->out]);
    int per = (int)(LAUNCH_ELEMS_MAX / (xi > yi ? xi : yi));
    size_t es = cuda_prec_size(CUDA_PREC_F16);
    for (int b0 = 0; b0 < batch; b0 += per) {
        a.batch = batch - b0 < per ? batch - b0 : per;
        a.x = items_on(x, b0, xi, es);
        a.addend = items_on(u, b0, yi, es);
        a.y = (void *)items_on(y, b0, yi, es);
        OMMA_TRY(OMMA_CK(cuda_launch_resize_bilinear(&a, stream)));
    }
    return OMMA_OK;
}

/* ---- steps ------------------------------------------------------------------ */

int cuda_op_step_end(const gr_graph *g, int first, cuda_prec p)
{
    if (!g || first < 0 || first >= g->n_nodes || p != CUDA_PREC_F16)
        return first;
    cuda_dwproj_args dp;
    if (dwproj_shape(g, first, p, &dp))
        return first + 1;
    cuda_resize_args ra;
    int addend;
    if (resize_add_shape(g, first, p, &ra, &addend))
        return first + 1;
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

bool cuda_op_step_pays(const gr_graph *g, int first, int choice_batch)
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
        pair.a.choice_batch = pair.b.choice_batch = choice_batch;
        return cuda_dwpw_pair_pays(&pair);
    }
    return cuda_dwpw_chain_pays(choice_batch);
}

omma_status cuda_op_launch_step(const gr_graph *g, int first, int last,
                                const struct cuda_weights *w, int batch, int choice_batch,
                                void *const *acts, void *const *f32, cudaStream_t stream)
{
    if (!g || !w || !acts)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: NULL graph, weights or tensors");
    if (w->n_nodes != g->n_nodes || w->n_tensors != g->n_tensors)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: weights of another graph");
    if (first < 0 || last >= g->n_nodes || first >= last || batch < 1 || choice_batch < batch)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda step: nodes %d..%d, batch %d, choice batch %d",
                         first, last, batch, choice_batch);
    if (g->nodes[first].op == GR_DWCONV2D)
        return launch_dwproj(g, first, w, batch, acts, stream);
    if (g->nodes[first].op == GR_RESIZE_BILINEAR)
        return launch_resize_add(g, first, batch, acts, stream);
    if (g->nodes[first].op == GR_CONV2D && last == first + 2)
        return launch_up_add(g, first, w, batch, choice_batch, acts, stream);
    if (g->nodes[first + 1].op == GR_CONV2D)
        return launch_heads(g, first, last, w, batch, choice_batch, acts, f32, stream);
    cuda_chain_args chain;
    if (last == first + 1 && !chain_shape(g, first, last, w->prec, &chain))
        return launch_pair(g, first, w, batch, choice_batch, acts, stream);
    return launch_chain(g, first, last, w, batch, choice_batch, acts, stream);
}
