/* The load-time rewrite pipeline: every rewrite in order, then validation. */
#include "model/rewrite.h"

#include <stdlib.h>

#include "core/error.h"

omma_status rw_scratch_begin(const gr_graph *g, rw_scratch *s, const char *rewrite)
{
    s->changed = 0;
    s->drop = calloc(g->n_nodes ? (size_t)g->n_nodes : 1, sizeof *s->drop);
    s->uses = malloc((g->n_tensors ? (size_t)g->n_tensors : 1) * sizeof *s->uses);
    if (!s->drop || !s->uses) {
        free(s->drop);
        free(s->uses);
        s->drop = NULL;
        s->uses = NULL;
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "rewrite: %s", rewrite);
    }
    gr_count_uses(g, s->uses);
    return OMMA_OK;
}

omma_status rw_scratch_end(gr_graph *g, rw_scratch *s, omma_status st, int *count)
{
    omma_status compacted = s->changed ? gr_compact(g, s->drop) : OMMA_OK;
    free(s->drop);
    free(s->uses);
    s->drop = NULL;
    s->uses = NULL;
    if (count)
        *count = s->changed;
    return st != OMMA_OK ? st : compacted;
}

omma_status rw_apply_all(gr_graph *g, rw_stats *stats)
{
    rw_stats s = {.nodes_before = g->n_nodes};
    OMMA_TRY(rw_fold_dequantize(g, &s.dequantize_folded));
    OMMA_TRY(rw_fold_pad(g, &s.pads_folded));
    OMMA_TRY(rw_fuse_bias(g, &s.bias_fused));
    OMMA_TRY(rw_fuse_residual(g, &s.residual_fused));
    OMMA_TRY(rw_fuse_activation(g, &s.activation_fused));
    OMMA_TRY(rw_fuse_block(g, &s.blocks_fused));
    s.nodes_after = g->n_nodes;
    OMMA_TRY(gr_validate(g));
    if (stats)
        *stats = s;
    return OMMA_OK;
}
