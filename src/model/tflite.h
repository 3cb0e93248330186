/* Private: a strict reader of TFLite flatbuffer model files.
 *
 * Every offset, vtable, vector length and string is checked against the
 * file's bounds before use; a violation is OMMA_ERR_FORMAT with a message
 * naming what is wrong and the byte offset. Ops or options omma cannot run
 * (custom ops, quantized tensors, unsupported dilation, several subgraphs...)
 * are OMMA_ERR_UNSUPPORTED naming the op and its index. Sparse constants
 * (TFLite's sparsity: dense and CSR levels in the tensor's own order, no
 * block map) are densified while reading: data then holds every element. */
#ifndef OMMA_MODEL_TFLITE_H
#define OMMA_MODEL_TFLITE_H

#include <stddef.h>
#include <stdint.h>

#include "omma/status.h"

/* TFLite's BuiltinOperator codes for the ops omma reads. */
typedef enum tfl_opcode {
    TFL_ADD = 0,
    TFL_CONCATENATION = 2,
    TFL_CONV_2D = 3,
    TFL_DEPTHWISE_CONV_2D = 4,
    TFL_DEPTH_TO_SPACE = 5,
    TFL_DEQUANTIZE = 6,
    TFL_LOGISTIC = 14,
    TFL_MAX_POOL_2D = 17,
    TFL_MUL = 18,
    TFL_RELU = 19,
    TFL_RESHAPE = 22,
    TFL_RESIZE_BILINEAR = 23,
    TFL_PAD = 34,
    TFL_STRIDED_SLICE = 45,
    TFL_PRELU = 54,
    TFL_DENSIFY = 124,
    /* MediaPipe's custom operators (version 2 of each, options in
     * flexbuffers), numbered by omma past TFLite's builtin codes. */
    TFL_CUSTOM_LANDMARKS_TO_MATRIX = 100001, /* "Landmarks2TransformMatrix" */
    TFL_CUSTOM_TRANSFORM_BILINEAR = 100002,  /* "TransformTensorBilinear" */
    TFL_CUSTOM_TRANSFORM_LANDMARKS = 100003, /* "TransformLandmarks" */
} tfl_opcode;

/* Landmarks2TransformMatrix: at most this many landmark pairs in its subset. */
#define TFL_L2M_MAX_SUBSET 128

/* TFLite's TensorType codes omma accepts. */
typedef enum tfl_type { TFL_FLOAT32 = 0, TFL_FLOAT16 = 1, TFL_INT32 = 2 } tfl_type;

typedef enum tfl_padding { TFL_PAD_SAME = 0, TFL_PAD_VALID = 1 } tfl_padding;

/* TFLite's ActivationFunctionType codes omma accepts. */
typedef enum tfl_activation { TFL_ACT_NONE = 0, TFL_ACT_RELU = 1, TFL_ACT_RELU6 = 3 } tfl_activation;

#define TFL_MAX_RANK 8

typedef struct tfl_tensor {
    const char *name;        /* NUL-terminated, inside the model's file bytes ("" if none) */
    int rank;
    int shape[TFL_MAX_RANK];
    tfl_type type;
    const uint8_t *data;     /* constant contents inside the file bytes, or NULL */
    size_t data_size;        /* bytes of data; checked against shape x type size */
    uint8_t *dense; /* a sparse constant densified (owned; data points here) */
} tfl_tensor;

typedef struct tfl_operator {
    tfl_opcode opcode;
    int n_inputs, n_outputs;
    int *inputs;             /* tensor indices; -1 for an omitted optional input */
    int *outputs;
    union {
        struct { tfl_padding padding; int stride_w, stride_h, dilation_w, dilation_h;
                 tfl_activation act; } conv;           /* CONV_2D */
        struct { tfl_padding padding; int stride_w, stride_h, dilation_w, dilation_h;
                 int depth_multiplier; tfl_activation act; } dwconv; /* DEPTHWISE_CONV_2D */
        struct { tfl_padding padding; int stride_w, stride_h, filter_w, filter_h;
                 tfl_activation act; } pool;           /* MAX_POOL_2D */
        struct { tfl_activation act; } add;            /* ADD */
        struct { int axis; tfl_activation act; } concat; /* CONCATENATION */
        struct { int align_corners, half_pixel_centers; } resize; /* RESIZE_BILINEAR */
        struct {
            int block_size;
        } d2s; /* DEPTH_TO_SPACE */
        struct { tfl_activation act; } mul; /* MUL */
        struct {
            int begin_mask, end_mask; /* ellipsis, new-axis and shrink masks must be 0 */
        } slice; /* STRIDED_SLICE */
        struct tfl_l2m {
            int left, right;          /* landmarks whose line gives the rotation */
            int out_h, out_w;         /* the crop's size */
            float scale_x, scale_y;   /* the crop's size relative to the subset's box */
            float target_rotation;    /* radians */
            int n_subset;             /* landmark pairs whose box is cropped */
            int subset[TFL_L2M_MAX_SUBSET][2];
        } l2m; /* Landmarks2TransformMatrix (custom, version 2) */
        struct {
            int out_h, out_w;
        } bilinear; /* TransformTensorBilinear (custom, version 2) */
    } opt;
} tfl_operator;

typedef struct tfl_model {
    uint8_t *file;           /* the whole file, owned */
    size_t file_size;
    uint32_t version;
    int n_tensors;
    tfl_tensor *tensors;
    int n_operators;
    tfl_operator *operators;
    int n_inputs, n_outputs;
    int *inputs, *outputs;   /* subgraph input/output tensor indices */
} tfl_model;

/* Reads and validates a model file. Errors: OMMA_ERR_IO (cannot open or
 * read, naming the path), OMMA_ERR_FORMAT (empty or malformed file: the
 * message names what is wrong and its byte offset), OMMA_ERR_UNSUPPORTED
 * (valid, but uses something omma does not run: the op's index and name or
 * the tensor), OMMA_ERR_OUT_OF_MEMORY. On failure *out is NULL. */
omma_status tfl_model_read_file(const char *path, tfl_model **out);

/* Same from memory (the bytes are copied); `what` names the source in messages. */
omma_status tfl_model_read_memory(const void *bytes, size_t size, const char *what,
                                  tfl_model **out);

/* Frees a model; accepts NULL. */
void tfl_model_free(tfl_model *m);

/* Name of an opcode ("CONV_2D", also for the builtin ones omma does not run,
 * for messages; a custom one's name for TFL_CUSTOM_*); "UNKNOWN" for codes
 * it has no name for. */
const char *tfl_opcode_name(int opcode);

#endif
