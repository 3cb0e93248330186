/* The load-time rewrite pipeline: every rewrite in order, then validation. */
#include "model/rewrite.h"

#include "core/error.h"

omma_status rw_apply_all(gr_graph *g, rw_stats *stats)
{
    rw_stats s = {.nodes_before = g->n_nodes};
    OMMA_TRY(rw_fold_dequantize(g, &s.dequantize_folded));
    OMMA_TRY(rw_fold_pad(g, &s.pads_folded));
    OMMA_TRY(rw_fuse_bias(g, &s.bias_fused));
    OMMA_TRY(rw_fuse_residual(g, &s.residual_fused));
    OMMA_TRY(rw_fuse_activation(g, &s.activation_fused));
    s.nodes_after = g->n_nodes;
    OMMA_TRY(gr_validate(g));
    if (stats)
        *stats = s;
    return OMMA_OK;
}
