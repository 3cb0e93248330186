/* Private: omma's graph IR for small NHWC vision networks.
 *
 * A graph is built from a model file (tflite.c reads it, graph_build.c turns
 * it into this IR), validated, rewritten at load time (rewrite_*.c) and then
 * executed by a backend (engine/cpu_*.c now, CUDA later). It is immutable
 * once an engine owns it.
 *
 * Conventions
 * - Activations are NHWC float tensors; dims[0] is the batch, 1 in the model
 *   and N at run time. Rank 2..4 (a RESHAPE output may be [1, K]).
 * - Constants are fp32 in `data` after DEQUANTIZE folding (fp16 constants are
 *   kept as GR_F16 until the rewrite folds them).
 * - Nodes are stored in a valid execution (topological) order.
 * - Conv filters are OHWI [Cout, kh, kw, Cin]; depthwise filters are
 *   [1, kh, kw, C * depth_multiplier], TFLite's layouts.
 * - Convolution epilogue: y = act(conv(x) + bias + residual), where bias,
 *   residual and act are optional. act PRELU uses a per-channel alpha
 *   constant. This is the order in which the rewrites fuse them. */
#ifndef OMMA_MODEL_GRAPH_H
#define OMMA_MODEL_GRAPH_H

#include <stdbool.h>
#include <stddef.h>

#include "omma/status.h"

#define GR_MAX_RANK 4
#define GR_MAX_INPUTS 8 /* CONCATENATION of these models takes 2 */

typedef enum gr_dtype { GR_F32, GR_F16, GR_I32 } gr_dtype;

typedef struct gr_tensor {
    char *name;
    int rank;
    int dims[GR_MAX_RANK];
    gr_dtype dtype;
    void *data;       /* constant contents (owned), NULL for activations */
    size_t bytes;     /* size of data */
    int producer;     /* index of the producing node, -1 for inputs/constants */
} gr_tensor;

typedef enum gr_op {
    GR_CONV2D,
    GR_DWCONV2D,
    GR_ADD,
    GR_RELU,
    GR_PRELU,
    GR_MAXPOOL,
    GR_PAD,
    GR_RESHAPE,
    GR_CONCAT,
    GR_RESIZE_BILINEAR,
    GR_DEQUANTIZE,
    GR_OP_COUNT
} gr_op;

typedef enum gr_act { GR_ACT_NONE, GR_ACT_RELU, GR_ACT_RELU6, GR_ACT_PRELU } gr_act;

/* A sliding window with explicit padding (SAME is resolved at build time,
 * TFLite's split: the extra pixel goes to bottom/right). */
typedef struct gr_window {
    int kh, kw;
    int stride_h, stride_w;
    int dil_h, dil_w;
    int pad_top, pad_left, pad_bottom, pad_right;
} gr_window;

typedef struct gr_node {
    gr_op op;
    int src_index;             /* operator index in the model file, for messages */
    int n_in;
    int in[GR_MAX_INPUTS];     /* tensor indices; -1 = absent optional input */
    int out;                   /* the one output tensor */
    union {
        struct {               /* GR_CONV2D, GR_DWCONV2D: in = {x, filter, bias|-1} */
            gr_window win;
            int depth_multiplier; /* depthwise only */
            int residual;      /* activation tensor added before act, or -1 */
            gr_act act;
            int alpha;         /* PRELU alpha constant [C], or -1 */
        } conv;
        struct {               /* GR_MAXPOOL: in = {x} */
            gr_window win;
        } pool;
        struct {               /* GR_ADD: in = {a, b}, same shape */
            gr_act act;
            int alpha;
        } add;
        struct {               /* GR_PRELU: in = {x, alpha} */
            int unused;
        } prelu;
        struct {               /* GR_PAD: in = {x}; per-dim (before, after) */
            int before[GR_MAX_RANK];
            int after[GR_MAX_RANK];
        } pad;
        struct {               /* GR_CONCAT: in = {x0, x1, ...} */
            int axis;          /* non-negative */
        } concat;
        struct {               /* GR_RESIZE_BILINEAR: in = {x} */
            bool align_corners;
            bool half_pixel_centers;
        } resize;
    } p;
} gr_node;

typedef struct gr_graph {
    int n_tensors, cap_tensors;
    gr_tensor *tensors;
    int n_nodes, cap_nodes;
    gr_node *nodes;
    int n_inputs, inputs[4];
    int n_outputs, outputs[4];
} gr_graph;

#endif
