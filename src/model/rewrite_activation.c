/* Rewrite: RELU or per-channel PRELU fused into the node producing its
 * input: a convolution or GR_DWPW block (also one that already took a
 * residual, since the epilogue applies act after the residual add) or an
 * ADD. */
#include <stdlib.h>

#include "core/error.h"
#include "model/rewrite.h"

omma_status rw_fuse_activation(gr_graph *g, int *count)
{
    rw_scratch s;
    OMMA_TRY(rw_scratch_begin(g, &s, "activation"));
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *r = &g->nodes[i];
        if (r->op != GR_RELU && r->op != GR_PRELU)
            continue;
        int x = r->in[0];
        int p = g->tensors[x].producer;
        if (p < 0 || s.uses[x] != 1 || s.drop[p])
            continue;
        gr_node *c = &g->nodes[p];
        gr_act *act;
        int *alpha;
        if (c->op == GR_CONV2D || c->op == GR_DWCONV2D || c->op == GR_DWPW) {
            act = &c->p.conv.act;
            alpha = &c->p.conv.alpha;
        } else if (c->op == GR_ADD) {
            act = &c->p.add.act;
            alpha = &c->p.add.alpha;
        } else {
            continue;
        }
        if (*act != GR_ACT_NONE)
            continue;
        if (r->op == GR_PRELU) {
            const gr_tensor *y = &g->tensors[x];
            if (!gr_is_const(g, r->in[1]) || g->tensors[r->in[1]].dtype != GR_F32 ||
                gr_tensor_elems(&g->tensors[r->in[1]]) != (size_t)y->dims[y->rank - 1])
                continue;
            *act = GR_ACT_PRELU;
            *alpha = r->in[1];
        } else {
            *act = GR_ACT_RELU;
        }
        c->out = r->out;
        s.drop[i] = true;
        s.changed++;
    }
    return rw_scratch_end(g, &s, OMMA_OK, count);
}
