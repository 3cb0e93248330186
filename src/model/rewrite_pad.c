/* Rewrite: spatial PAD folded into the window padding of its consumer(s).
 *
 * A convolution's padding is zero padding, exactly what PAD adds, so the
 * fold is always legal there. A max pool's padding is ignored rather than
 * zero, so folding changes nothing only when the padded zeros could never
 * win a maximum (the input is >= 0) and every window still sees real input. */
#include <stdlib.h>

#include "core/error.h"
#include "model/rewrite.h"

static bool spatial_only(const gr_node *p, const gr_tensor *x)
{
    if (x->rank != 4)
        return false;
    return p->p.pad.before[0] == 0 && p->p.pad.after[0] == 0 && p->p.pad.before[3] == 0 &&
           p->p.pad.after[3] == 0;
}

/* Whether tensor t is known >= 0: the output of RELU, or of a node whose
 * fused activation is RELU/RELU6. */
static bool non_negative(const gr_graph *g, int t)
{
    int p = g->tensors[t].producer;
    if (p < 0)
        return false;
    const gr_node *n = &g->nodes[p];
    switch (n->op) {
    case GR_RELU:
        return true;
    case GR_CONV2D:
    case GR_DWCONV2D:
    case GR_DWPW:
        return n->p.conv.act == GR_ACT_RELU || n->p.conv.act == GR_ACT_RELU6;
    case GR_ADD:
        return n->p.add.act == GR_ACT_RELU || n->p.add.act == GR_ACT_RELU6;
    default:
        return false;
    }
}

static int consumer_of(const gr_graph *g, int from, int t)
{
    for (int i = from; i < g->n_nodes; i++) {
        int r[GR_MAX_INPUTS + 2];
        int k = gr_node_reads(&g->nodes[i], r);
        for (int j = 0; j < k; j++)
            if (r[j] == t)
                return i;
    }
    return -1;
}

static void add_pads(gr_window *w, const gr_node *p)
{
    w->pad_top += p->p.pad.before[1];
    w->pad_bottom += p->p.pad.after[1];
    w->pad_left += p->p.pad.before[2];
    w->pad_right += p->p.pad.after[2];
}

#define MAX_CONV_READERS 8

/* The nodes after `from` reading tensor t, when there are `uses` reads of
 * it (every one: t is no graph output), at most MAX_CONV_READERS, and each
 * is a convolution reading t as its input and nowhere else. Returns how
 * many (listed in readers), or 0. */
static int conv_readers(const gr_graph *g, int from, int t, int uses, int *readers)
{
    int n = 0;
    if (uses > MAX_CONV_READERS)
        return 0;
    for (int i = from; i < g->n_nodes; i++) {
        int r[GR_MAX_INPUTS + 2];
        int k = gr_node_reads(&g->nodes[i], r), hits = 0;
        for (int j = 0; j < k; j++)
            hits += r[j] == t;
        if (!hits)
            continue;
        const gr_node *c = &g->nodes[i];
        if (hits != 1 || c->in[0] != t || (c->op != GR_CONV2D && c->op != GR_DWCONV2D))
            return 0;
        readers[n++] = i;
    }
    return n == uses ? n : 0;
}

omma_status rw_fold_pad(gr_graph *g, int *count)
{
    rw_scratch s;
    OMMA_TRY(rw_scratch_begin(g, &s, "pad"));
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *p = &g->nodes[i];
        if (p->op != GR_PAD || !spatial_only(p, &g->tensors[p->in[0]]))
            continue;
        /* Read by several convolutions (BlazePose's detector heads): into
         * each of them. */
        int readers[MAX_CONV_READERS];
        int nr = s.uses[p->out] > 1 ? conv_readers(g, i + 1, p->out, s.uses[p->out], readers) : 0;
        for (int k = 0; k < nr; k++) {
            add_pads(&g->nodes[readers[k]].p.conv.win, p);
            g->nodes[readers[k]].in[0] = p->in[0];
        }
        if (nr) {
            s.drop[i] = true;
            s.changed++;
            continue;
        }
        if (s.uses[p->out] != 1)
            continue;
        int ci = consumer_of(g, i + 1, p->out);
        if (ci < 0)
            continue;
        gr_node *c = &g->nodes[ci];
        if (c->in[0] != p->out)
            continue;
        if (c->op == GR_CONV2D || c->op == GR_DWCONV2D) {
            add_pads(&c->p.conv.win, p);
        } else if (c->op == GR_MAXPOOL) {
            gr_window w = c->p.pool.win;
            add_pads(&w, p);
            if (!non_negative(g, p->in[0]) || w.pad_top >= w.kh || w.pad_bottom >= w.kh ||
                w.pad_left >= w.kw || w.pad_right >= w.kw)
                continue;
            c->p.pool.win = w;
        } else {
            continue;
        }
        c->in[0] = p->in[0];
        s.drop[i] = true;
        s.changed++;
    }
    return rw_scratch_end(g, &s, OMMA_OK, count);
}
