/* Private: the CPU reference implementation of every graph IR op.
 *
 * Plain C, fp32, NHWC, any batch; TFLite's semantics exactly (explicit
 * padding from gr_window, zero padding for convolutions, padded cells ignored
 * by max-pool, RESIZE_BILINEAR's align_corners / half_pixel_centers rules).
 * Deterministic: every output element is summed in a fixed order that does
 * not depend on the batch size, so batch N gives bit-identical results to N
 * runs at batch 1.
 *
 * Threads: cpu_op_run_pool splits the heavy ops (convolutions, GR_DWPW
 * blocks, max-pool, bilinear resize) by output rows over a thread pool
 * (cpu_pool.h); each output element is computed by the same loop nest
 * whichever thread does it, so results are bitwise the same for any number
 * of threads. The light ops (element-wise, copies) run on the caller.
 *
 * Thread safety: the ops keep no state; concurrent calls on different
 * output buffers (and different pools) are safe. */
#ifndef OMMA_ENGINE_CPU_OPS_H
#define OMMA_ENGINE_CPU_OPS_H

#include "engine/cpu_pool.h"
#include "model/graph.h"

/* Runs node n of graph g once on `batch` items.
 *
 * inputs[i] is the activation buffer of tensor n->in[i], or NULL where that
 * input is absent (n->in[i] == -1) or a constant: constants are read from
 * g->tensors[idx].data (fp32; fp16 for a DEQUANTIZE input, int32 never read:
 * PAD and RESHAPE take their parameters from the node). residual is the
 * activation buffer of n->p.conv.residual for a fused convolution or a
 * GR_DWPW block (NULL when residual is -1; for GR_DWPW it has that tensor's
 * own shape, which may be pooled or have fewer channels). out receives the
 * output tensor n->out.
 *
 * Shapes are g->tensors[...].dims with dims[0] replaced by `batch` for
 * activations; constants keep their own dims. A node whose inputs are all
 * constants (DEQUANTIZE of an unrewritten graph) should be run with batch 1.
 * Input and output buffers must not overlap, except RESHAPE where in[0] ==
 * out is allowed (nothing to copy).
 *
 * Errors: OMMA_ERR_INVALID_ARG (NULL pointers, batch < 1, an activation
 * input given as NULL), OMMA_ERR_UNSUPPORTED (an op, activation or dtype the
 * reference does not implement), OMMA_ERR_FORMAT (operand shapes that do not
 * agree with the op), each naming the node's op and model operator index. */
omma_status cpu_op_run(const gr_graph *g, const gr_node *n, int batch,
                       const float *const *inputs, const float *residual, float *out);

/* cpu_op_run on the threads of pool (NULL: the caller alone; see top). */
omma_status cpu_op_run_pool(cpu_pool *pool, const gr_graph *g, const gr_node *n, int batch,
                            const float *const *inputs, const float *residual, float *out);

#endif
