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
 *   kept as GR_F16 until the rewrite folds them). Sparse constants are
 *   densified by the reader and a DENSIFY operator is folded by the builder:
 *   its output is a plain constant, no node.
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
    GR_DWPW, /* depthwise then pointwise convolution, one node (rewrite_block.c) */
    GR_LOGISTIC,       /* y = 1 / (1 + exp(-x)), element-wise */
    GR_DEPTH_TO_SPACE, /* TFLite's DEPTH_TO_SPACE (DCR order), 4-D NHWC */
    GR_MUL,            /* y = act(a * b), b of a's shape or one value (p.add) */
    GR_STRIDED_SLICE,  /* y[i] = x[begin + i * stride] per dimension (p.slice) */
    GR_LANDMARKS_TO_MATRIX, /* MediaPipe's Landmarks2TransformMatrix v2 (p.l2m) */
    GR_TRANSFORM_BILINEAR,  /* MediaPipe's TransformTensorBilinear v2 */
    GR_TRANSFORM_LANDMARKS, /* MediaPipe's TransformLandmarks v2 */
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

/* GR_DWPW (made by rw_fuse_block, never read from a file): a BlazeBlock in
 * one node, y = act(pw(dw(x) + dw bias) + pw bias + r). dw is a depthwise
 * convolution of x (multiplier 1, window p.conv.win, no activation), pw a
 * 1x1 convolution at stride 1 ([Cout, 1, 1, C] filter). The residual r is
 * taken from tensor R = p.conv.residual (or 0 when -1), which may have fewer
 * channels than y (the missing ones are 0: a channel PAD absorbed) and, when
 * pool_residual, twice the output's height and width (r is then the 2x2
 * stride-2 max pool of R: a MAX_POOL_2D absorbed). The rewrite makes it
 * only where the CUDA kernel's shared-memory tiles hold the block: at most
 * GR_DWPW_MAX_CHANNELS input and output channels, at most
 * GR_DWPW_MAX_WEIGHTS pointwise weights (C * Cout) and a depthwise window
 * of at most GR_DWPW_MAX_WINDOW x GR_DWPW_MAX_WINDOW. */
#define GR_DWPW_MAX_CHANNELS 512
#define GR_DWPW_MAX_WEIGHTS 49152
#define GR_DWPW_MAX_WINDOW 3

/* GR_LANDMARKS_TO_MATRIX: at most this many landmark pairs in its subset
 * (the attention mesh's largest: 40, its 80 lip points). */
#define GR_L2M_MAX_SUBSET 128

typedef struct gr_node {
    gr_op op;
    int src_index;             /* operator index in the model file, for messages */
    int n_in;
    int in[GR_MAX_INPUTS];     /* tensor indices; -1 = absent optional input */
    int out;                   /* the one output tensor */
    union {
        struct {               /* GR_CONV2D, GR_DWCONV2D: in = {x, filter, bias|-1};
                                * GR_DWPW: in = {x, dw filter, dw bias|-1,
                                *               pw filter, pw bias|-1} */
            gr_window win;     /* GR_DWPW: the depthwise window */
            int depth_multiplier; /* depthwise only (GR_DWPW: 1) */
            int residual;      /* activation tensor added before act, or -1 */
            gr_act act;
            int alpha;         /* PRELU alpha constant [C], or -1 */
            bool pool_residual; /* GR_DWPW only: see below */
        } conv;
        struct {               /* GR_MAXPOOL: in = {x} */
            gr_window win;
        } pool;
        struct {               /* GR_ADD: in = {a, b}, same shape; GR_MUL: in = {a, b},
                                * b of a's shape or a constant of one value
                                * (either operand may be the constant) */
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
        struct {               /* GR_DEPTH_TO_SPACE: in = {x} [N, H, W, b*b*C] ->
                                * y [N, H*b, W*b, C], y[n, h*b+i, w*b+j, c] =
                                * x[n, h, w, (i*b + j)*C + c] */
            int block;
        } d2s;
        struct {               /* GR_STRIDED_SLICE: in = {x}; y's dims give the counts;
                                * begin >= 0, stride >= 1, dimension 0 whole */
            int begin[GR_MAX_RANK];
            int stride[GR_MAX_RANK];
        } slice;
        struct {               /* GR_LANDMARKS_TO_MATRIX: in = {landmarks [N, L, 3]} ->
                                * y [N, 4, 4], the row-major matrix taking a crop's
                                * pixel (x, y, 0, 1) to the input's coordinates: the
                                * box of the subset's landmarks, rotated so that the
                                * line from landmark `left` to `right` makes
                                * target_rotation, scaled by scale_x/y, over an
                                * out_w x out_h crop (MediaPipe's v2 arithmetic) */
            int left, right, out_h, out_w;
            float scale_x, scale_y, target_rotation;
            int n_subset;
            short subset[GR_L2M_MAX_SUBSET][2];
        } l2m;
        /* GR_TRANSFORM_BILINEAR: in = {x [N, H, W, C], m [N, 4, 4]} -> y [N, OH, OW, C]:
         * y[oy, ox] = bilinear sample of x at (m00*ox' + m01*oy' + m03, m10*ox' +
         * m11*oy' + m13) with ox' = ox + 0.5, oy' = oy + 0.5, minus 0.5 (pixel centres),
         * 0 where that point is outside [0, W-1] x [0, H-1].
         * GR_TRANSFORM_LANDMARKS: in = {x [N, L, D], m [N, 4, 4]} -> y [N, L, D], D 2 or
         * 3: (x, y) -> (m00*x + m01*y + m03, m10*x + m11*y + m13), z kept. No params. */
    } p;
} gr_node;

#define GR_MAX_IO 8 /* graph inputs / outputs (the attention mesh has 7 outputs) */

typedef struct gr_graph {
    int n_tensors, cap_tensors;
    gr_tensor *tensors;
    int n_nodes, cap_nodes;
    gr_node *nodes;
    int n_inputs, inputs[GR_MAX_IO];
    int n_outputs, outputs[GR_MAX_IO];
} gr_graph;

struct tfl_model;

/* ---- container (graph.c) ---------------------------------------------- */

/* An empty graph. On failure *out is NULL. */
omma_status gr_create(gr_graph **out);

/* Frees a graph, its tensors' names and constant data; accepts NULL. */
void gr_free(gr_graph *g);

/* A deep copy (names and constants copied). On failure *out is NULL. */
omma_status gr_clone(const gr_graph *g, gr_graph **out);

/* Appends a tensor; name and data (bytes, may be NULL for activations) are
 * copied. The producer is -1 until a node writing it is added. *index (may be
 * NULL) receives its index. */
omma_status gr_add_tensor(gr_graph *g, const char *name, int rank, const int *dims,
                          gr_dtype dtype, const void *data, size_t bytes, int *index);

/* Appends a node (copied) and records it as the producer of n->out. */
omma_status gr_add_node(gr_graph *g, const gr_node *n, int *index);

/* Removes the nodes with drop[i] set, then every tensor no node, input or
 * output references, renumbering tensors and producers. Cannot fail except
 * for memory. */
omma_status gr_compact(gr_graph *g, const bool *drop);

/* gr_compact with the caller's scratch: map has g->n_tensors entries and
 * receives each tensor's index after (-1: removed). Cannot fail. */
void gr_compact_map(gr_graph *g, const bool *drop, int *map);

/* Recomputes every tensor's producer from the nodes. */
void gr_relink(gr_graph *g);

/* The tensors a node reads: in[] (without absent ones), the residual and the
 * PRELU alpha of a fused convolution or ADD. Returns how many (at most
 * GR_MAX_INPUTS + 2) written to tensors[]. */
int gr_node_reads(const gr_node *n, int tensors[GR_MAX_INPUTS + 2]);

/* For each tensor, how many reads of it there are (a node reading it twice
 * counts twice) plus one per appearance among the graph outputs. counts has
 * g->n_tensors entries. */
void gr_count_uses(const gr_graph *g, int *counts);

size_t gr_dtype_size(gr_dtype dt);
size_t gr_tensor_elems(const gr_tensor *t);
bool gr_is_const(const gr_graph *g, int tensor);
const char *gr_op_name(gr_op op);
const char *gr_act_name(gr_act act);
const char *gr_dtype_name(gr_dtype dt);

/* Formats dims as "[1, 64, 64, 24]" into buf (always NUL-terminated). */
const char *gr_dims_str(const gr_tensor *t, char *buf, size_t size);

/* Nodes per op (counts has GR_OP_COUNT entries). */
void gr_op_counts(const gr_graph *g, int *counts);

/* Parameters: elements of the float constants (F32 or F16) that nodes read;
 * int32 shape/padding operands are not parameters. */
size_t gr_param_count(const gr_graph *g);

/* fp16 bits to fp32 (every value exactly, subnormals, inf and NaN too). */
float gr_half_to_float(unsigned short h);

/* ---- building and checking (graph_build.c, graph_validate.c) ---------- */

/* Builds the IR from a TFLite model: tensors keep the file's indices (then
 * unreferenced ones are compacted away), SAME padding becomes explicit pads
 * with TFLite's split, options are mapped, constants copied (the graph does
 * not point into the model). The result is validated. Errors:
 * OMMA_ERR_FORMAT (inconsistent model), OMMA_ERR_UNSUPPORTED (something the
 * IR cannot express), naming the operator index. On failure *out is NULL. */
omma_status gr_build_tflite(const struct tfl_model *m, gr_graph **out);

/* Checks a graph: tensor shapes and constant sizes, node operands exist and
 * have the right kinds, every activation is produced exactly once, graph
 * inputs are not produced, nodes are in execution order without cycles, and
 * each op's shapes agree. OMMA_ERR_FORMAT with a message naming the node
 * (index, op, model operator index) and the tensor. */
omma_status gr_validate(const gr_graph *g);

#endif
