/* Private: a graph's constants on the device, uploaded once per engine.
 *
 * cuda_weights_upload() walks the nodes of a validated graph and copies what
 * the CUDA kernels read as constants into ONE device allocation, each piece
 * 128-byte aligned, in the layout and precision the kernels want:
 * - convolution filters in the storage precision (float or half):
 *   GEMM-form convolutions (cuda_conv_is_pointwise) keep OHWI, i.e. the
 *   [Cout][kh*kw*Cin] matrix the GEMM reads; other convolutions become
 *   [kh][kw][Cin][round_up(Cout, 8)], zero-padded; depthwise filters keep
 *   [kh][kw][C * multiplier]; a DWPW node keeps both of its filters as
 *   they are (depthwise [kh][kw][C], pointwise [Cout][C]);
 * - bias and PRELU alpha always as float (a few hundred values per node);
 * - constant operands of ADD and the fp16 inputs of DEQUANTIZE, in the
 *   storage precision, per tensor.
 * Constants may be float32 or float16 tensors, or DEQUANTIZE outputs of an
 * unrewritten graph (the fp16 source is read directly).
 *
 * The object is immutable after upload: any number of threads may launch
 * kernels reading it. The device memory is freed by cuda_weights_free() and
 * nothing else; the caller must have the device current (the engine's device
 * scope) for both calls, and must not free while kernels still read it. */
#ifndef OMMA_ENGINE_CUDA_WEIGHTS_H
#define OMMA_ENGINE_CUDA_WEIGHTS_H

#include <stddef.h>

#include "engine/cuda_ops.h"
#include "model/graph.h"
#include "omma/status.h"

/* Device pointers of one node's constants; NULL where the node has none. */
typedef struct cuda_node_weights {
    const void *filter;  /* CONV2D / DWCONV2D, layout above, storage precision;
                          * DWPW: the pointwise filter, OHWI */
    const float *bias;   /* [cout] */
    const float *alpha;  /* [channels], conv/ADD with PRELU activation, or PRELU */
    const void *dw_filter; /* DWPW: the depthwise filter, [kh][kw][C] */
    const float *dw_bias;  /* DWPW: [C] or NULL */
} cuda_node_weights;

typedef struct cuda_weights {
    cuda_prec prec;
    int n_nodes, n_tensors;   /* of the graph it was made from */
    cuda_node_weights *nodes; /* n_nodes entries */
    const void **consts;      /* n_tensors entries: constant operands, else NULL */
    void *dev;                /* the one allocation */
    size_t bytes;             /* its size */
} cuda_weights;

/* Uploads g's constants in precision prec (synchronously: the memory is
 * ready when it returns). Errors: OMMA_ERR_INVALID_ARG (NULL, unknown
 * precision), OMMA_ERR_UNSUPPORTED (a node's constant that has no value, or
 * an int32 one), OMMA_ERR_OUT_OF_MEMORY (host or device), OMMA_ERR_CUDA.
 * On failure *out is NULL and nothing is left allocated. */
omma_status cuda_weights_upload(const gr_graph *g, cuda_prec prec, cuda_weights **out);

/* Frees the device memory and the object; accepts NULL. */
void cuda_weights_free(cuda_weights *w);

#endif
