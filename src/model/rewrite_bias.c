/* Rewrite: ADD of a per-channel constant folded into the bias of the
 * convolution that produces the other operand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/rewrite.h"

/* Whether constant c (same shape as the conv output, channels last) holds
 * the same value at every position for each channel. */
static bool per_channel(const gr_tensor *c, int channels)
{
    if (c->dtype != GR_F32 || !c->data || channels <= 0)
        return false;
    const float *v = c->data;
    size_t n = gr_tensor_elems(c);
    for (size_t k = (size_t)channels; k < n; k++)
        if (memcmp(&v[k], &v[k % (size_t)channels], sizeof *v) != 0)
            return false;
    return true;
}

static bool fusable_conv(const gr_graph *g, const int *uses, int t)
{
    int p = g->tensors[t].producer;
    if (p < 0 || uses[t] != 1)
        return false;
    const gr_node *c = &g->nodes[p];
    return (c->op == GR_CONV2D || c->op == GR_DWCONV2D) && c->p.conv.act == GR_ACT_NONE &&
           c->p.conv.residual < 0;
}

static omma_status fuse_one(gr_graph *g, int add_index, int conv_index, int const_t)
{
    gr_node *c = &g->nodes[conv_index];
    const gr_tensor *y = &g->tensors[c->out];
    int cout = y->dims[3];
    float *bias = malloc((size_t)cout * sizeof *bias);
    if (!bias)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "rewrite: bias");
    const float *add = g->tensors[const_t].data;
    const float *old = c->in[2] >= 0 ? g->tensors[c->in[2]].data : NULL;
    for (int k = 0; k < cout; k++)
        bias[k] = (old ? old[k] : 0.0f) + add[k];
    char name[256];
    snprintf(name, sizeof name, "%s/fused_bias", g->tensors[const_t].name);
    int dims[1] = {cout}, t;
    omma_status st = gr_add_tensor(g, name, 1, dims, GR_F32, bias, (size_t)cout * sizeof *bias, &t);
    free(bias);
    OMMA_TRY(st);
    c = &g->nodes[conv_index]; /* tensors may have moved, nodes did not */
    const gr_node *a = &g->nodes[add_index];
    c->in[2] = t;
    c->out = a->out;
    c->p.conv.act = a->p.add.act;
    c->p.conv.alpha = a->p.add.alpha;
    return OMMA_OK;
}

omma_status rw_fuse_bias(gr_graph *g, int *count)
{
    rw_scratch s;
    OMMA_TRY(rw_scratch_begin(g, &s, "bias"));
    omma_status st = OMMA_OK;
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *a = &g->nodes[i];
        if (a->op != GR_ADD)
            continue;
        for (int k = 0; k < 2; k++) {
            int t = a->in[k], other = a->in[1 - k];
            if (!fusable_conv(g, s.uses, t) || !gr_is_const(g, other))
                continue;
            const gr_tensor *y = &g->tensors[t];
            if (y->rank != 4 || !per_channel(&g->tensors[other], y->dims[3]))
                continue;
            if ((st = fuse_one(g, i, g->tensors[t].producer, other)) != OMMA_OK)
                return rw_scratch_end(g, &s, st, count);
            s.drop[i] = true;
            s.changed++;
            break;
        }
    }
    return rw_scratch_end(g, &s, OMMA_OK, count);
}
