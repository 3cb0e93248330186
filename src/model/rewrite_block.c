/* Rewrite: a depthwise convolution and the 1x1 convolution that alone reads
 * it become one GR_DWPW node, BlazeFace's and FaceMesh's block, so that a
 * backend can keep the depthwise result on chip instead of writing it out
 * and reading it back. The residual branch of the down-sampling blocks,
 * PAD(MAX_POOL_2D(x)) with the PAD adding zero channels at the end, is
 * taken into the node too when nothing else reads it: the node then reads x
 * itself (graph.h says how). Runs last, after the epilogues are fused. */
#include <stdlib.h>

#include "core/error.h"
#include "model/rewrite.h"

/* The node producing tensor t when it has op `op`, is still in the graph and
 * t has no reader other than the one being fused. */
static int sole_producer(const gr_graph *g, const rw_scratch *s, int t, gr_op op)
{
    int p = t >= 0 ? g->tensors[t].producer : -1;
    if (p < 0 || s->drop[p] || s->uses[t] != 1 || g->nodes[p].op != op)
        return -1;
    return p;
}

static bool rank4(const gr_graph *g, int t)
{
    return t >= 0 && g->tensors[t].rank == 4;
}

/* The head of a block: a depthwise convolution with multiplier 1, nothing
 * fused into its epilogue but a bias, at most GR_DWPW_MAX_CHANNELS channels
 * and a window of at most GR_DWPW_MAX_WINDOW (graph.h). */
static bool depthwise_head(const gr_graph *g, const gr_node *d)
{
    return d->op == GR_DWCONV2D && d->n_in == 3 && d->p.conv.depth_multiplier == 1 &&
           d->p.conv.act == GR_ACT_NONE && d->p.conv.residual < 0 && rank4(g, d->in[0]) &&
           rank4(g, d->in[1]) && rank4(g, d->out) &&
           g->tensors[d->in[0]].dims[3] <= GR_DWPW_MAX_CHANNELS &&
           d->p.conv.win.kh <= GR_DWPW_MAX_WINDOW && d->p.conv.win.kw <= GR_DWPW_MAX_WINDOW;
}

/* The tail of a block: a 1x1 convolution at stride 1 without padding, at
 * most GR_DWPW_MAX_CHANNELS output channels and GR_DWPW_MAX_WEIGHTS
 * weights. */
static bool pointwise_tail(const gr_graph *g, const gr_node *p)
{
    const gr_window *w = &p->p.conv.win;
    if (!(p->op == GR_CONV2D && p->n_in == 3 && !p->p.conv.pool_residual && w->kh == 1 &&
          w->kw == 1 && w->stride_h == 1 && w->stride_w == 1 && w->dil_h == 1 &&
          w->dil_w == 1 && w->pad_top == 0 && w->pad_left == 0 && w->pad_bottom == 0 &&
          w->pad_right == 0 && rank4(g, p->in[0]) && rank4(g, p->in[1]) && rank4(g, p->out)))
        return false;
    const gr_tensor *f = &g->tensors[p->in[1]];
    return f->dims[0] <= GR_DWPW_MAX_CHANNELS &&
           (long)f->dims[0] * f->dims[3] <= GR_DWPW_MAX_WEIGHTS;
}

/* A PAD that only appends zero channels: what the block's sum does with a
 * residual of fewer channels. */
static bool channel_tail_pad(const gr_graph *g, const gr_node *p)
{
    if (!rank4(g, p->in[0]) || !rank4(g, p->out))
        return false;
    for (int d = 0; d < 4; d++)
        if (p->p.pad.before[d] != 0 || (d < 3 && p->p.pad.after[d] != 0))
            return false;
    return true;
}

/* A 2x2 stride-2 max pool without padding whose input is exactly twice its
 * output's height and width (no row or column dropped). */
static bool pool_2x2(const gr_graph *g, const gr_node *m)
{
    const gr_window *w = &m->p.pool.win;
    if (!rank4(g, m->in[0]) || !rank4(g, m->out))
        return false;
    const gr_tensor *x = &g->tensors[m->in[0]], *y = &g->tensors[m->out];
    return w->kh == 2 && w->kw == 2 && w->stride_h == 2 && w->stride_w == 2 && w->dil_h == 1 &&
           w->dil_w == 1 && w->pad_top == 0 && w->pad_left == 0 && w->pad_bottom == 0 &&
           w->pad_right == 0 && x->dims[1] == 2 * y->dims[1] && x->dims[2] == 2 * y->dims[2];
}

/* Follows residual tensor r back through a channel PAD, then a 2x2 max
 * pool, each taken only when the block is its output's one reader. Returns
 * the tensor the block reads, sets *pool, and lists the absorbed nodes
 * (-1 when none) for the caller to drop. */
static int absorb_residual(const gr_graph *g, const rw_scratch *s, int r, bool *pool,
                           int absorbed[2])
{
    absorbed[0] = absorbed[1] = -1;
    *pool = false;
    int k = sole_producer(g, s, r, GR_PAD);
    if (k >= 0 && channel_tail_pad(g, &g->nodes[k])) {
        absorbed[0] = k;
        r = g->nodes[k].in[0];
    }
    k = sole_producer(g, s, r, GR_MAXPOOL);
    if (k >= 0 && pool_2x2(g, &g->nodes[k])) {
        absorbed[1] = k;
        r = g->nodes[k].in[0];
        *pool = true;
    }
    return r;
}

omma_status rw_fuse_block(gr_graph *g, int *count)
{
    rw_scratch s;
    OMMA_TRY(rw_scratch_begin(g, &s, "block"));
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *p = &g->nodes[i];
        if (!pointwise_tail(g, p))
            continue;
        int di = sole_producer(g, &s, p->in[0], GR_DWCONV2D);
        if (di < 0 || !depthwise_head(g, &g->nodes[di]))
            continue;
        const gr_node *d = &g->nodes[di];
        /* The 1x1 conv's output, epilogue and model op index stay. */
        gr_node b = *p;
        b.op = GR_DWPW;
        b.n_in = 5;
        for (int k = 0; k < GR_MAX_INPUTS; k++)
            b.in[k] = -1;
        b.in[0] = d->in[0];
        b.in[1] = d->in[1];
        b.in[2] = d->in[2];
        b.in[3] = p->in[1];
        b.in[4] = p->in[2];
        b.p.conv.win = d->p.conv.win;
        b.p.conv.depth_multiplier = 1;
        b.p.conv.pool_residual = false;
        int absorbed[2] = {-1, -1};
        if (p->p.conv.residual >= 0)
            b.p.conv.residual = absorb_residual(g, &s, p->p.conv.residual,
                                                &b.p.conv.pool_residual, absorbed);
        /* The block runs where the 1x1 conv ran: everything it reads (x, the
         * residual's source) was computed before the nodes it replaces. */
        g->nodes[i] = b;
        s.drop[di] = true;
        for (int k = 0; k < 2; k++)
            if (absorbed[k] >= 0)
                s.drop[absorbed[k]] = true;
        s.changed++;
    }
    return rw_scratch_end(g, &s, OMMA_OK, count);
}
