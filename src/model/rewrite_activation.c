/* Rewrite: RELU or per-channel PRELU fused into the node producing its
 * input: a convolution (also one that already took a residual, since the
 * epilogue applies act after the residual add) or an ADD. */
#include <stdlib.h>

#include "core/error.h"
#include "model/rewrite.h"

omma_status rw_fuse_activation(gr_graph *g, int *count)
{
    int fused = 0;
    bool *drop = calloc(g->n_nodes ? (size_t)g->n_nodes : 1, sizeof *drop);
    int *uses = malloc((g->n_tensors ? (size_t)g->n_tensors : 1) * sizeof *uses);
    if (!drop || !uses) {
        free(drop);
        free(uses);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "rewrite: activation");
    }
    gr_count_uses(g, uses);
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *r = &g->nodes[i];
        if (r->op != GR_RELU && r->op != GR_PRELU)
            continue;
        int x = r->in[0];
        int p = g->tensors[x].producer;
        if (p < 0 || uses[x] != 1 || drop[p])
            continue;
        gr_node *c = &g->nodes[p];
        gr_act *act;
        int *alpha;
        if (c->op == GR_CONV2D || c->op == GR_DWCONV2D) {
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
        drop[i] = true;
        fused++;
    }
    omma_status st = fused ? gr_compact(g, drop) : OMMA_OK;
    free(drop);
    free(uses);
    if (count)
        *count = fused;
    return st;
}
