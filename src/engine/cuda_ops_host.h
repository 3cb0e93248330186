/* Private to the host side of the CUDA ops: what the single-node launchers
 * (cuda_ops.c) share with the launchers of multi-node steps
 * (cuda_ops_step.c): a node's shapes as kernel arguments. */
#ifndef OMMA_ENGINE_CUDA_OPS_HOST_H
#define OMMA_ENGINE_CUDA_OPS_HOST_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/cuda_ops.h"
#include "engine/cuda_weights.h"

/* Elements of one tensor per launch at most: kernels index with int, some
 * with four times a tensor's elements (a pooled residual), so that every
 * kernel's guard against overflow holds at any batch (a guard that failed
 * at some batch sizes only would change the kernel, and the sums, with the
 * batch: cuda_ops.h, "Batch invariance"). */
#define LAUNCH_ELEMS_MAX ((size_t)1 << 28)

/* Elements per batch item (dims after the first). */
size_t cuda_item_elems(const gr_tensor *t);

/* The shapes and window of a convolution or pool from x to y (batch 1, no
 * buffers, no epilogue yet). */
void cuda_conv_shape(const gr_tensor *x, const gr_tensor *y, const gr_window *win,
                     cuda_conv_args *a);

/* A DWPW node's shapes, window and epilogue for batch 1, no pointers. */
void cuda_dwpw_shape(const gr_graph *g, const gr_node *n, cuda_prec prec, cuda_dwpw_args *a);

/* A DWPW node's constants into a; false when w lacks one the node needs. */
bool cuda_dwpw_weights(const gr_node *n, const cuda_node_weights *nw, cuda_dwpw_args *a);

#endif
