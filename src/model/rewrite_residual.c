/* Rewrite: a residual ADD fused into the epilogue of the convolution that
 * produces one of its operands: y = act(conv(x) + bias + residual). */
#include <stdlib.h>

#include "core/error.h"
#include "model/rewrite.h"

/* The conv producing t when it can take a residual: no activation, no
 * residual yet, and the ADD is the only reader of its output. */
static int fusable_conv(const gr_graph *g, const int *uses, int t)
{
    int p = g->tensors[t].producer;
    if (p < 0 || uses[t] != 1)
        return -1;
    const gr_node *c = &g->nodes[p];
    if ((c->op != GR_CONV2D && c->op != GR_DWCONV2D) || c->p.conv.act != GR_ACT_NONE ||
        c->p.conv.residual >= 0)
        return -1;
    return p;
}

omma_status rw_fuse_residual(gr_graph *g, int *count)
{
    rw_scratch s;
    OMMA_TRY(rw_scratch_begin(g, &s, "residual"));
    for (int i = 0; i < g->n_nodes; i++) {
        gr_node *a = &g->nodes[i];
        if (a->op != GR_ADD || a->in[0] == a->in[1])
            continue;
        /* Prefer the operand computed last: its conv is then closest to the
         * ADD, so moving it there lengthens no lifetime by much. */
        int best = -1, k_best = -1;
        for (int k = 0; k < 2; k++) {
            int other = a->in[1 - k];
            int p = fusable_conv(g, s.uses, a->in[k]);
            if (p < 0 || s.drop[p] || gr_is_const(g, other) || g->tensors[other].producer == p)
                continue;
            if (p > best) {
                best = p;
                k_best = k;
            }
        }
        if (best < 0)
            continue;
        gr_node fused_node = g->nodes[best];
        fused_node.out = a->out;
        fused_node.p.conv.residual = a->in[1 - k_best];
        fused_node.p.conv.act = a->p.add.act;
        fused_node.p.conv.alpha = a->p.add.alpha;
        /* The fused node runs where the ADD ran: by then the residual exists,
         * and the conv's own inputs existed even before its old place. */
        g->nodes[i] = fused_node;
        s.drop[best] = true;
        s.changed++;
    }
    return rw_scratch_end(g, &s, OMMA_OK, count);
}
