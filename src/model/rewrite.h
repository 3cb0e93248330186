/* Private: load-time rewrites of the graph IR (rewrite_*.c, one per file).
 *
 * Each rewrite keeps the graph's results the same (tests run both graphs
 * through the CPU executor and compare), keeps nodes in execution order and
 * leaves a valid graph. Each returns how many places it changed in *count
 * (may be NULL). Failures are only out-of-memory; on failure the graph may
 * be partly rewritten but stays valid. */
#ifndef OMMA_MODEL_REWRITE_H
#define OMMA_MODEL_REWRITE_H

#include "model/graph.h"

/* DEQUANTIZE of an fp16 constant becomes an fp32 constant (node removed). */
omma_status rw_fold_dequantize(gr_graph *g, int *count);

/* A PAD of H and W only (zero padding, batch and channels untouched) whose
 * single consumer is a convolution (as its input) is folded into the
 * convolution's window padding; one whose readers are all convolutions,
 * each reading it once as its input, into each of them (count: PADs
 * removed). Into a max pool only when the padded values
 * cannot change a maximum: the pool's input is known non-negative (it comes
 * from RELU/RELU6) and no window would lie entirely in padding. Channel PADs
 * stay real ops. */
omma_status rw_fold_pad(gr_graph *g, int *count);

/* ADD of a convolution's output (single consumer, no activation or
 * residual yet) and a constant holding one value per channel becomes (part
 * of) the convolution's bias. */
omma_status rw_fuse_bias(gr_graph *g, int *count);

/* ADD(x, conv(...)) where the convolution has no activation, no residual and
 * the ADD is its only consumer becomes conv with residual x, taking the ADD's
 * place in the order (x may be computed between them) and its activation. */
omma_status rw_fuse_residual(gr_graph *g, int *count);

/* RELU, or PRELU with per-channel alpha, whose input is a convolution's
 * output with no activation yet and no other consumer becomes the
 * convolution's activation. */
omma_status rw_fuse_activation(gr_graph *g, int *count);

/* A depthwise convolution (multiplier 1, bias at most fused, at most
 * GR_DWPW_MAX_CHANNELS channels) whose only reader is a 1x1 stride-1
 * unpadded convolution, as that conv's input, becomes one GR_DWPW node in
 * the 1x1 conv's place, keeping its epilogue.
 * The residual is followed back through a PAD that only appends channels,
 * then a 2x2 stride-2 unpadded MAX_POOL_2D of an input exactly twice the
 * output's size, each absorbed when nothing else reads its output (the
 * node's residual is then the PAD's / pool's input, with pool_residual set
 * for the pool). The depthwise conv and absorbed nodes are removed.
 * count = blocks made. */
omma_status rw_fuse_block(gr_graph *g, int *count);

/* What every rewrite works with: which nodes it drops, how many places it
 * changed, and each tensor's consumer count when it started. */
typedef struct rw_scratch {
    bool *drop;  /* g->n_nodes flags */
    int *uses;   /* g->n_tensors counts (gr_count_uses) */
    int changed;
} rw_scratch;

/* Allocates and fills the scratch for graph g; `rewrite` names the rewrite
 * in the out-of-memory message. */
omma_status rw_scratch_begin(const gr_graph *g, rw_scratch *s, const char *rewrite);

/* Ends a rewrite: removes the dropped nodes (when it changed anything, also
 * after a failure, so the graph stays valid), frees the scratch and stores
 * the number of changes in *count (may be NULL). Returns st, or the
 * compaction's failure when st is OMMA_OK. */
omma_status rw_scratch_end(gr_graph *g, rw_scratch *s, omma_status st, int *count);

typedef struct rw_stats {
    int nodes_before, nodes_after;
    int dequantize_folded;
    int pads_folded;
    int bias_fused;
    int residual_fused;
    int activation_fused;
    int blocks_fused;
} rw_stats;

/* All of the above in a sensible order (dequantize, pad, bias, residual,
 * activation, block: the block takes the epilogue the others fused), then a
 * validation of the result. stats may be NULL. */
omma_status rw_apply_all(gr_graph *g, rw_stats *stats);

#endif
