/* A small, strict reader of TFLite flatbuffer model files.
 *
 * What it checks, before any byte is used:
 * - the file: at least 8 bytes, the "TFL3" identifier at offset 4, at most
 *   2 GiB, schema version 3;
 * - every table: its offset lies inside the file and is 4-aligned, its vtable
 *   (table offset minus the signed offset stored there) lies inside the file,
 *   is 2-aligned, has an even size >= 4, and the table's inline size from the
 *   vtable fits in the file; every field read lies inside its table's inline
 *   size, past the vtable offset, aligned to its own size;
 * - every offset field (uoffset) points inside the file, 4-aligned; every
 *   vector's length prefix is inside the file and its elements fit in the rest
 *   of the file (checked by division, so a huge length cannot overflow);
 *   every string has its NUL terminator inside the file;
 * - the model: exactly one subgraph, tensor types float32 / float16 / int32
 *   without quantization parameters or variables, rank <= 8; sparse
 *   constants (DENSE / SPARSE_CSR levels, identity traversal order, no block
 *   map) with every segment and index checked, densified into a copy;
 *   dimensions >= 0, buffer indices in range, constant data size equal to
 *   product(shape) x element size (overflow-checked), buffers stored after
 *   the flatbuffer (offset/size) inside the file; subgraph inputs, outputs
 *   and every operator operand index in range (-1 only for an optional conv
 *   bias); operator code index in range; the operator one of the fourteen
 *   omma runs (no custom ops), with its input/output counts, the options table of
 *   its own type, and option values omma can run (padding SAME/VALID, strides,
 *   filter sizes and dilations >= 1, fused activation NONE/RELU/RELU6, not
 *   both align_corners and half_pixel_centers).
 * Malformed bytes are OMMA_ERR_FORMAT and name the object, the field and the
 * byte offset; valid files using something omma does not run are
 * OMMA_ERR_UNSUPPORTED and name the operator (index and name) or tensor.
 * The reader never recurses and reads each object once per reference;
 * operands are capped at 64 per operator and, over all operators, at one per
 * 4 bytes of file (operators sharing vectors are refused), so its time and
 * memory are linear in the size of the file. Multi-byte values are read byte
 * by byte (little-endian), never through unaligned pointers. Tensor names
 * point into the model's own copy of the file (NUL-terminated there).
 * The FlatBuffers accessors doing the byte-level checks are flatbuffer.c's;
 * this file knows TFLite's schema. Tested by tests/model/test_tflite*.c and
 * fuzzed by fuzz/fuzz_tflite.c. */
#include "model/tflite.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/flatbuffer.h"
#include "model/flexbuffer.h"

#define TFL_SCHEMA_VERSION 3u
#define TFL_MAX_FILE ((size_t)0x7fffffff)
#define TFL_MAX_OPERANDS 64 /* per operator, inputs or outputs */
#define TFL_MAX_DENSE ((size_t)1 << 28) /* bytes of one densified sparse constant */

/* Field ids (declaration order in TFLite's schema.fbs). */
enum { F_MODEL_VERSION = 0, F_MODEL_OPCODES = 1, F_MODEL_SUBGRAPHS = 2, F_MODEL_BUFFERS = 4 };
enum { F_OPCODE_DEPRECATED = 0, F_OPCODE_CUSTOM = 1, F_OPCODE_VERSION = 2, F_OPCODE_BUILTIN = 3 };
enum { F_SG_TENSORS = 0, F_SG_INPUTS = 1, F_SG_OUTPUTS = 2, F_SG_OPERATORS = 3 };
enum {
    F_TENSOR_SHAPE = 0, F_TENSOR_TYPE = 1, F_TENSOR_BUFFER = 2, F_TENSOR_NAME = 3,
    F_TENSOR_QUANT = 4, F_TENSOR_VARIABLE = 5, F_TENSOR_SPARSITY = 6
};
enum { F_QUANT_MIN = 0, F_QUANT_MAX = 1, F_QUANT_SCALE = 2, F_QUANT_ZERO = 3, F_QUANT_DETAILS_TYPE = 4 };
enum { F_BUFFER_DATA = 0, F_BUFFER_OFFSET = 1, F_BUFFER_SIZE = 2 };
enum { F_SPARSE_ORDER = 0, F_SPARSE_BLOCK_MAP = 1, F_SPARSE_DIMS = 2 };
enum {
    F_DIM_FORMAT = 0,
    F_DIM_DENSE_SIZE = 1,
    F_DIM_SEGMENTS_TYPE = 2,
    F_DIM_SEGMENTS = 3,
    F_DIM_INDICES_TYPE = 4,
    F_DIM_INDICES = 5
};
enum {
    F_OP_OPCODE = 0,
    F_OP_INPUTS = 1,
    F_OP_OUTPUTS = 2,
    F_OP_OPTIONS_TYPE = 3,
    F_OP_OPTIONS = 4,
    F_OP_CUSTOM_OPTIONS = 5,
    F_OP_CUSTOM_FORMAT = 6
};

/* BuiltinOptions union members. */
enum {
    TFL_OPT_NONE = 0,
    TFL_OPT_CONV = 1,
    TFL_OPT_DWCONV = 2,
    TFL_OPT_POOL = 5,
    TFL_OPT_CONCAT = 10,
    TFL_OPT_ADD = 11,
    TFL_OPT_RESIZE = 15,
    TFL_OPT_RESHAPE = 17,
    TFL_OPT_MUL = 21,
    TFL_OPT_PAD = 22,
    TFL_OPT_STRIDED_SLICE = 32,
    TFL_OPT_DEQUANTIZE = 38,
    TFL_OPT_DEPTH_TO_SPACE = 94
};

#define TFL_OP_CUSTOM 32

/* An opcode table entry, resolved. */
typedef struct tfl_code {
    int code;            /* max(deprecated_builtin_code, builtin_code) */
    const char *custom;  /* custom_code inside the file, or NULL */
    int version;
} tfl_code;

typedef struct tfl_buf {
    const uint8_t *data;
    size_t size;
} tfl_buf;

/* ---- names ------------------------------------------------------------ */

const char *tfl_opcode_name(int opcode)
{
    static const char *const names[] = {
        "ADD", "AVERAGE_POOL_2D", "CONCATENATION", "CONV_2D", "DEPTHWISE_CONV_2D",
        "DEPTH_TO_SPACE", "DEQUANTIZE", "EMBEDDING_LOOKUP", "FLOOR", "FULLY_CONNECTED",
        "HASHTABLE_LOOKUP", "L2_NORMALIZATION", "L2_POOL_2D", "LOCAL_RESPONSE_NORMALIZATION",
        "LOGISTIC", "LSH_PROJECTION", "LSTM", "MAX_POOL_2D", "MUL", "RELU", "RELU_N1_TO_1",
        "RELU6", "RESHAPE", "RESIZE_BILINEAR", "RNN", "SOFTMAX", "SPACE_TO_DEPTH", "SVDF", "TANH",
        "CONCAT_EMBEDDINGS", "SKIP_GRAM", "CALL", "CUSTOM", "EMBEDDING_LOOKUP_SPARSE", "PAD",
        "UNIDIRECTIONAL_SEQUENCE_RNN", "GATHER", "BATCH_TO_SPACE_ND", "SPACE_TO_BATCH_ND",
        "TRANSPOSE", "MEAN", "SUB", "DIV", "SQUEEZE", "UNIDIRECTIONAL_SEQUENCE_LSTM",
        "STRIDED_SLICE", "BIDIRECTIONAL_SEQUENCE_RNN", "EXP", "TOPK_V2", "SPLIT", "LOG_SOFTMAX",
        "DELEGATE", "BIDIRECTIONAL_SEQUENCE_LSTM", "CAST", "PRELU",
    };
    switch (opcode) {
    case TFL_DENSIFY:
        return "DENSIFY";
    case TFL_CUSTOM_LANDMARKS_TO_MATRIX:
        return "Landmarks2TransformMatrix";
    case TFL_CUSTOM_TRANSFORM_BILINEAR:
        return "TransformTensorBilinear";
    case TFL_CUSTOM_TRANSFORM_LANDMARKS:
        return "TransformLandmarks";
    default:
        break;
    }
    if (opcode < 0 || (size_t)opcode >= sizeof names / sizeof names[0])
        return "UNKNOWN";
    return names[opcode];
}

static const char *act_name(int act)
{
    static const char *const names[] = {"NONE", "RELU", "RELU_N1_TO_1", "RELU6", "TANH",
                                        "SIGN_BIT"};
    return act >= 0 && act < 6 ? names[act] : "unknown";
}

static const char *type_name(int type)
{
    static const char *const names[] = {
        "FLOAT32", "FLOAT16", "INT32", "UINT8", "INT64", "STRING", "BOOL", "INT16",
        "COMPLEX64", "INT8", "FLOAT64", "COMPLEX128", "UINT64", "RESOURCE", "VARIANT", "UINT32",
        "UINT16", "INT4"};
    return type >= 0 && type < 18 ? names[type] : "unknown";
}

static size_t type_size(tfl_type t) { return t == TFL_FLOAT16 ? 2 : 4; }

/* ---- model parts -------------------------------------------------------- */

static omma_status read_opcodes(const fb_reader *r, const fb_table *model, tfl_code **out,
                                size_t *count)
{
    size_t start, len;
    *out = NULL;
    *count = 0;
    OMMA_TRY(fb_vector(r, model, F_MODEL_OPCODES, 4, "operator_codes", &start, &len));
    if (!len)
        return OMMA_OK;
    tfl_code *c = calloc(len, sizeof *c);
    if (!c)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: %zu operator codes", r->what, len);
    for (size_t i = 0; i < len; i++) {
        char obj[48];
        snprintf(obj, sizeof obj, "operator code %zu", i);
        fb_table t;
        uint8_t dep;
        int32_t builtin, version;
        omma_status st;
        if ((st = fb_vector_table(r, start, i, obj, &t)) != OMMA_OK ||
            (st = fb_field_u8(r, &t, F_OPCODE_DEPRECATED, "deprecated_builtin_code", 0, &dep)) !=
                OMMA_OK ||
            (st = fb_field_i32(r, &t, F_OPCODE_BUILTIN, "builtin_code", 0, &builtin)) != OMMA_OK ||
            (st = fb_field_i32(r, &t, F_OPCODE_VERSION, "version", 1, &version)) != OMMA_OK ||
            (st = fb_string(r, &t, F_OPCODE_CUSTOM, "custom_code", &c[i].custom)) != OMMA_OK) {
            free(c);
            return st;
        }
        int d = (int8_t)dep;
        c[i].code = builtin > d ? builtin : d;
        c[i].version = version;
    }
    *out = c;
    *count = len;
    return OMMA_OK;
}

static omma_status read_buffers(const fb_reader *r, const fb_table *model, tfl_buf **out,
                                size_t *count)
{
    size_t start, len;
    *out = NULL;
    *count = 0;
    OMMA_TRY(fb_vector(r, model, F_MODEL_BUFFERS, 4, "buffers", &start, &len));
    if (!len)
        return OMMA_OK;
    tfl_buf *bufs = calloc(len, sizeof *bufs);
    if (!bufs)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: %zu buffers", r->what, len);
    omma_status st = OMMA_OK;
    for (size_t i = 0; i < len && st == OMMA_OK; i++) {
        char obj[48];
        snprintf(obj, sizeof obj, "buffer %zu", i);
        fb_table t;
        size_t dstart, dlen;
        uint64_t off, size;
        if ((st = fb_vector_table(r, start, i, obj, &t)) != OMMA_OK ||
            (st = fb_vector(r, &t, F_BUFFER_DATA, 1, "data", &dstart, &dlen)) != OMMA_OK ||
            (st = fb_field_u64(r, &t, F_BUFFER_OFFSET, "offset", &off)) != OMMA_OK ||
            (st = fb_field_u64(r, &t, F_BUFFER_SIZE, "size", &size)) != OMMA_OK)
            break;
        if (dlen) {
            bufs[i].data = r->b + dstart;
            bufs[i].size = dlen;
        } else if (off > 1) { /* data stored after the flatbuffer (offset 1 = none) */
            if (off > r->n || size > r->n - off) {
                st = fb_bad(r,
                            "%s holds %llu bytes at offset %llu: runs past the end of the "
                            "file (size %zu)",
                            obj, (unsigned long long)size, (unsigned long long)off, r->n);
                break;
            }
            bufs[i].data = size ? r->b + off : NULL;
            bufs[i].size = (size_t)size;
        }
    }
    if (st != OMMA_OK) {
        free(bufs);
        return st;
    }
    *out = bufs;
    *count = len;
    return OMMA_OK;
}

/* ---- sparse constants ------------------------------------------------------ */

/* One level of a sparse tensor's traversal (TFLite's DimensionMetadata). */
typedef struct sp_level {
    bool csr;
    size_t seg, n_seg, idx, n_idx; /* CSR: vectors' first elements and lengths */
    unsigned seg_size, idx_size; /* bytes per element: 1, 2 or 4 */
} sp_level;

typedef struct sp_walk {
    const fb_reader *r;
    const tfl_tensor *t;
    int index;
    sp_level lv[TFL_MAX_RANK];
    int pos[TFL_MAX_RANK];
    size_t es, nnz, taken; /* element size, stored values, values placed so far */
    uint8_t *dense;
} sp_walk;

static uint32_t sp_read(const fb_reader *r, size_t start, unsigned size, size_t k)
{
    const uint8_t *p = r->b + start + k * size;
    return size == 1 ? p[0] : size == 2 ? fb_rd_u16(p) : fb_rd_u32(p);
}

/* A SparseIndexVector union member: Int32Vector (1), Uint16Vector (2) or
 * Uint8Vector (3), each a table whose field 0 is the values. */
static omma_status sp_vector(const fb_reader *r, const fb_table *dm, int type_id, int id,
                             const char *what, size_t *start, size_t *len, unsigned *size)
{
    uint8_t type;
    OMMA_TRY(fb_field_u8(r, dm, type_id, what, 0, &type));
    if (type < 1 || type > 3)
        return fb_bad(r, "%s: %s has index vector type %u (1 to 3 expected)", dm->obj, what, type);
    char obj[80];
    snprintf(obj, sizeof obj, "%s %s", dm->obj, what);
    fb_table v;
    bool has;
    OMMA_TRY(fb_subtable(r, dm, id, what, obj, &v, &has));
    if (!has)
        return fb_bad(r, "%s: %s is missing", dm->obj, what);
    *size = type == 1 ? 4 : type == 2 ? 2 : 1;
    return fb_vector(r, &v, 0, *size, "values", start, len);
}

/* Places the stored values under level `level` at traversal position prev
 * (TFLite's FormatConverter::Populate with an identity order). The depth is
 * the tensor's rank, at most TFL_MAX_RANK. */
static omma_status sp_populate(sp_walk *w, int level, size_t prev)
{
    const tfl_tensor *t = w->t;
    if (level == t->rank) {
        if (w->taken >= w->nnz)
            return fb_bad(w->r,
                          "sparse tensor %d '%s': the indices place more than the %zu "
                          "stored values",
                          w->index, t->name, w->nnz);
        size_t at = 0;
        for (int d = 0; d < t->rank; d++)
            at = at * (size_t)t->shape[d] + (size_t)w->pos[d];
        memcpy(w->dense + at * w->es, t->data + w->taken * w->es, w->es);
        w->taken++;
        return OMMA_OK;
    }
    const sp_level *l = &w->lv[level];
    int size = t->shape[level];
    if (!l->csr) {
        for (int i = 0; i < size; i++) {
            w->pos[level] = i;
            OMMA_TRY(sp_populate(w, level + 1, prev * (size_t)size + (size_t)i));
        }
        return OMMA_OK;
    }
    if (prev + 1 >= l->n_seg)
        return fb_bad(w->r, "sparse tensor %d '%s' level %d: segment %zu of %zu", w->index, t->name,
                      level, prev + 1, l->n_seg);
    uint32_t a = sp_read(w->r, l->seg, l->seg_size, prev);
    uint32_t b = sp_read(w->r, l->seg, l->seg_size, prev + 1);
    if (a > b || b > l->n_idx)
        return fb_bad(w->r,
                      "sparse tensor %d '%s' level %d: segment %zu is [%u, %u) of %zu "
                      "indices",
                      w->index, t->name, level, prev, a, b, l->n_idx);
    for (uint32_t k = a; k < b; k++) {
        uint32_t i = sp_read(w->r, l->idx, l->idx_size, k);
        if (i >= (uint32_t)size)
            return fb_bad(w->r,
                          "sparse tensor %d '%s' level %d: index %u at %u is outside "
                          "dimension %d",
                          w->index, t->name, level, i, k, size);
        w->pos[level] = (int)i;
        OMMA_TRY(sp_populate(w, level + 1, k));
    }
    return OMMA_OK;
}

/* Reads a constant's sparsity parameters and densifies its values into
 * t->dense (t->data then points there, data_size is the dense size). */
static omma_status densify(const fb_reader *r, const fb_table *sp, int index, size_t elems,
                           tfl_tensor *t)
{
    size_t s, n_order, n_block, dstart, n_dims;
    OMMA_TRY(fb_vector(r, sp, F_SPARSE_ORDER, 4, "traversal_order", &s, &n_order));
    for (size_t k = 0; k < n_order; k++)
        if (fb_rd_i32(r->b + s + 4 * k) != (int32_t)k)
            return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                             "%s: sparse tensor %d '%s' has a traversal "
                             "order other than the tensor's own",
                             r->what, index, t->name);
    OMMA_TRY(fb_vector(r, sp, F_SPARSE_BLOCK_MAP, 4, "block_map", &s, &n_block));
    if (n_block)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "%s: sparse tensor %d '%s' is block-sparse", r->what,
                         index, t->name);
    OMMA_TRY(fb_vector(r, sp, F_SPARSE_DIMS, 4, "dim_metadata", &dstart, &n_dims));
    if (n_order != (size_t)t->rank || n_dims != (size_t)t->rank || t->rank == 0)
        return fb_bad(r,
                      "sparse tensor %d '%s': %zu traversal dimensions and %zu dimension "
                      "metadata for rank %d",
                      index, t->name, n_order, n_dims, t->rank);
    sp_walk w = {.r = r, .t = t, .index = index, .es = type_size(t->type)};
    for (int d = 0; d < t->rank; d++) {
        char obj[80];
        snprintf(obj, sizeof obj, "tensor %d dimension metadata %d", index, d);
        fb_table dm;
        uint8_t format;
        int32_t dense_size;
        OMMA_TRY(fb_vector_table(r, dstart, (size_t)d, obj, &dm));
        OMMA_TRY(fb_field_u8(r, &dm, F_DIM_FORMAT, "format", 0, &format));
        OMMA_TRY(fb_field_i32(r, &dm, F_DIM_DENSE_SIZE, "dense_size", 0, &dense_size));
        if (format > 1)
            return fb_bad(r, "%s: format %u (0 DENSE or 1 SPARSE_CSR)", obj, format);
        sp_level *l = &w.lv[d];
        l->csr = format == 1;
        if (!l->csr && dense_size != t->shape[d])
            return fb_bad(r, "%s: dense_size %d for dimension %d", obj, (int)dense_size,
                          t->shape[d]);
        if (l->csr) {
            OMMA_TRY(sp_vector(r, &dm, F_DIM_SEGMENTS_TYPE, F_DIM_SEGMENTS, "array_segments",
                               &l->seg, &l->n_seg, &l->seg_size));
            OMMA_TRY(sp_vector(r, &dm, F_DIM_INDICES_TYPE, F_DIM_INDICES, "array_indices", &l->idx,
                               &l->n_idx, &l->idx_size));
        }
    }
    w.nnz = t->data_size / w.es;
    if (t->data_size % w.es || elems > SIZE_MAX / w.es)
        return fb_bad(r, "sparse tensor %d '%s': %zu bytes of %s values", index, t->name,
                      t->data_size, type_name(t->type));
    if (elems * w.es > TFL_MAX_DENSE)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "%s: sparse tensor %d '%s' densifies to %zu "
                         "bytes (at most %zu)",
                         r->what, index, t->name, elems * w.es, (size_t)TFL_MAX_DENSE);
    w.dense = calloc(elems ? elems * w.es : 1, 1);
    if (!w.dense)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: densifying tensor %d '%s' (%zu values)",
                         r->what, index, t->name, elems);
    omma_status st = sp_populate(&w, 0, 0);
    if (st == OMMA_OK && w.taken != w.nnz)
        st = fb_bad(r, "sparse tensor %d '%s': the indices place %zu of the %zu stored values",
                    index, t->name, w.taken, w.nnz);
    if (st != OMMA_OK) {
        free(w.dense);
        return st;
    }
    t->dense = w.dense;
    t->data = w.dense;
    t->data_size = elems * w.es;
    return OMMA_OK;
}

static omma_status read_tensor(const fb_reader *r, const fb_table *t, int index,
                               const tfl_buf *bufs, size_t n_bufs, tfl_tensor *out)
{
    size_t sstart, rank;
    OMMA_TRY(fb_vector(r, t, F_TENSOR_SHAPE, 4, "shape", &sstart, &rank));
    uint8_t type;
    uint32_t buffer;
    uint8_t variable;
    const char *name;
    size_t buffer_at;
    OMMA_TRY(fb_field_u8(r, t, F_TENSOR_TYPE, "type", 0, &type));
    OMMA_TRY(fb_field(r, t, F_TENSOR_BUFFER, 4, "buffer", &buffer_at));
    buffer = buffer_at ? fb_rd_u32(r->b + buffer_at) : 0;
    OMMA_TRY(fb_string(r, t, F_TENSOR_NAME, "name", &name));
    OMMA_TRY(fb_field_u8(r, t, F_TENSOR_VARIABLE, "is_variable", 0, &variable));
    out->name = name ? name : "";

    fb_table q;
    bool has_q;
    char qobj[64];
    snprintf(qobj, sizeof qobj, "%s quantization", t->obj);
    OMMA_TRY(fb_subtable(r, t, F_TENSOR_QUANT, "quantization", qobj, &q, &has_q));
    if (has_q) {
        size_t s, nscale, nzero, nmin, nmax;
        uint8_t details;
        OMMA_TRY(fb_vector(r, &q, F_QUANT_MIN, 4, "min", &s, &nmin));
        OMMA_TRY(fb_vector(r, &q, F_QUANT_MAX, 4, "max", &s, &nmax));
        OMMA_TRY(fb_vector(r, &q, F_QUANT_SCALE, 4, "scale", &s, &nscale));
        OMMA_TRY(fb_vector(r, &q, F_QUANT_ZERO, 8, "zero_point", &s, &nzero));
        OMMA_TRY(fb_field_u8(r, &q, F_QUANT_DETAILS_TYPE, "details_type", 0, &details));
        if (nscale || nzero || nmin || nmax || details)
            return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                             "%s: tensor %d '%s' is quantized (%zu scales, %zu zero points): "
                             "omma runs float models only", r->what, index, out->name, nscale,
                             nzero);
    }
    fb_table sp;
    bool has_sp;
    char sobj[64];
    snprintf(sobj, sizeof sobj, "%s sparsity", t->obj);
    OMMA_TRY(fb_subtable(r, t, F_TENSOR_SPARSITY, "sparsity", sobj, &sp, &has_sp));
    if (variable)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "%s: tensor %d '%s' is a variable tensor",
                         r->what, index, out->name);

    if (type != TFL_FLOAT32 && type != TFL_FLOAT16 && type != TFL_INT32) {
        bool quantized = type == 3 || type == 7 || type == 9 || type == 17; /* UINT8 INT16 INT8 INT4 */
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "%s: tensor %d '%s' has type %s (%d)%s", r->what,
                         index, out->name, type_name(type), type,
                         quantized ? ": quantized models are not supported" : "");
    }
    out->type = (tfl_type)type;
    if (rank > TFL_MAX_RANK)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "%s: tensor %d '%s' has rank %zu (at most %d)",
                         r->what, index, out->name, rank, TFL_MAX_RANK);
    out->rank = (int)rank;
    size_t elems = 1;
    bool overflow = false;
    for (size_t d = 0; d < rank; d++) {
        int32_t v = fb_rd_i32(r->b + sstart + 4 * d);
        if (v < 0)
            return fb_bad(r, "tensor %d '%s' shape at offset %zu has dimension %zu = %d", index,
                          out->name, sstart - 4, d, v);
        out->shape[d] = v;
        if (v && elems > SIZE_MAX / (size_t)v)
            overflow = true;
        elems *= (size_t)v;
    }
    if (buffer >= n_bufs)
        return fb_bad(r, "tensor %d '%s' buffer field at offset %zu names buffer %u of %zu", index,
                      out->name, buffer_at, buffer, n_bufs);
    out->data = bufs[buffer].data;
    out->data_size = bufs[buffer].size;
    if (has_sp) {
        if (!out->data)
            return fb_bad(r, "tensor %d '%s' has sparsity parameters but no data", index,
                          out->name);
        if (overflow)
            return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "%s: sparse tensor %d '%s' is too large",
                             r->what, index, out->name);
        return densify(r, &sp, index, elems, out);
    }
    if (out->data) {
        size_t es = type_size(out->type);
        if (overflow || elems > SIZE_MAX / es || elems * es != out->data_size)
            return fb_bad(r,
                          "tensor %d '%s': buffer %u holds %zu bytes, its shape of %s%zu "
                          "elements of %s needs %s%zu",
                          index, out->name, buffer, out->data_size, overflow ? "more than " : "",
                          elems, type_name(type), overflow ? "more than " : "",
                          overflow || elems > SIZE_MAX / es ? SIZE_MAX : elems * es);
    }
    return OMMA_OK;
}

/* Expected BuiltinOptions member of an op. */
static int options_type_of(int code)
{
    switch (code) {
    case TFL_CONV_2D: return TFL_OPT_CONV;
    case TFL_DEPTHWISE_CONV_2D: return TFL_OPT_DWCONV;
    case TFL_MAX_POOL_2D: return TFL_OPT_POOL;
    case TFL_CONCATENATION: return TFL_OPT_CONCAT;
    case TFL_ADD: return TFL_OPT_ADD;
    case TFL_RESIZE_BILINEAR: return TFL_OPT_RESIZE;
    case TFL_RESHAPE: return TFL_OPT_RESHAPE;
    case TFL_PAD: return TFL_OPT_PAD;
    case TFL_DEQUANTIZE: return TFL_OPT_DEQUANTIZE;
    case TFL_DEPTH_TO_SPACE:
        return TFL_OPT_DEPTH_TO_SPACE;
    case TFL_MUL:
        return TFL_OPT_MUL;
    case TFL_STRIDED_SLICE:
        return TFL_OPT_STRIDED_SLICE;
    default: return TFL_OPT_NONE;
    }
}

static bool supported_op(int code)
{
    switch (code) {
    case TFL_ADD: case TFL_CONCATENATION: case TFL_CONV_2D: case TFL_DEPTHWISE_CONV_2D:
    case TFL_DEQUANTIZE: case TFL_MAX_POOL_2D: case TFL_RELU: case TFL_RESHAPE:
    case TFL_RESIZE_BILINEAR:
    case TFL_PAD:
    case TFL_PRELU:
    case TFL_DEPTH_TO_SPACE:
    case TFL_LOGISTIC:
    case TFL_DENSIFY:
    case TFL_MUL:
    case TFL_STRIDED_SLICE:
        return true;
    default:
        return false;
    }
}

/* Context for option checks: "<file>: op 12 (CONV_2D)". */
typedef struct tfl_opctx {
    const fb_reader *r;
    int index;
    const char *name;
} tfl_opctx;

static omma_status op_unsupported(const tfl_opctx *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static omma_status op_unsupported(const tfl_opctx *c, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "%s: op %d (%s): %s", c->r->what, c->index, c->name,
                     msg);
}

static omma_status op_malformed(const tfl_opctx *c, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static omma_status op_malformed(const tfl_opctx *c, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return OMMA_FAIL(OMMA_ERR_FORMAT, "%s: op %d (%s): %s", c->r->what, c->index, c->name, msg);
}

static omma_status check_act(const tfl_opctx *c, uint8_t raw, tfl_activation *act)
{
    int a = (int8_t)raw;
    if (a == TFL_ACT_NONE || a == TFL_ACT_RELU || a == TFL_ACT_RELU6) {
        *act = (tfl_activation)a;
        return OMMA_OK;
    }
    if (a > 0 && a <= 5)
        return op_unsupported(c, "fused activation %s (%d)", act_name(a), a);
    return op_malformed(c, "fused activation code %d", a);
}

static omma_status check_padding(const tfl_opctx *c, uint8_t raw, tfl_padding *p)
{
    if (raw > TFL_PAD_VALID)
        return op_malformed(c, "padding code %d (0 SAME or 1 VALID)", (int)(int8_t)raw);
    *p = (tfl_padding)raw;
    return OMMA_OK;
}

static omma_status check_positive(const tfl_opctx *c, const char *what, int32_t v)
{
    if (v < 1)
        return op_malformed(c, "%s %d (must be >= 1)", what, (int)v);
    return OMMA_OK;
}

/* Reads the options of a supported op (defaults where the table or a field is
 * absent, as in TFLite's schema) and checks them. */
static omma_status read_options(const fb_reader *r, const tfl_opctx *c, const fb_table *o,
                                tfl_operator *op)
{
    uint8_t opt_type;
    OMMA_TRY(fb_field_u8(r, o, F_OP_OPTIONS_TYPE, "builtin_options_type", 0, &opt_type));
    int want = options_type_of((int)op->opcode);
    if (opt_type != TFL_OPT_NONE && opt_type != want)
        return op_malformed(c, "builtin options of type %u, expected %d", opt_type, want);
    char obj[64];
    snprintf(obj, sizeof obj, "%s options", o->obj);
    fb_table t;
    bool has = false;
    if (opt_type != TFL_OPT_NONE)
        OMMA_TRY(fb_subtable(r, o, F_OP_OPTIONS, "builtin_options", obj, &t, &has));
    /* An absent table reads every field's default: use an empty vtable. */
    fb_table none = {.pos = 0, .vt = 0, .vsize = 0, .tsize = 0, .obj = obj};
    const fb_table *ot = has ? &t : &none;
    uint8_t pad = 0, act = 0, b1 = 0, b2 = 0;
    int32_t sw = 0, sh = 0, a = 1, b = 1, m = 0;

    switch (op->opcode) {
    case TFL_CONV_2D:
        OMMA_TRY(fb_field_u8(r, ot, 0, "padding", 0, &pad));
        OMMA_TRY(fb_field_i32(r, ot, 1, "stride_w", 0, &sw));
        OMMA_TRY(fb_field_i32(r, ot, 2, "stride_h", 0, &sh));
        OMMA_TRY(fb_field_u8(r, ot, 3, "fused_activation_function", 0, &act));
        OMMA_TRY(fb_field_i32(r, ot, 4, "dilation_w_factor", 1, &a));
        OMMA_TRY(fb_field_i32(r, ot, 5, "dilation_h_factor", 1, &b));
        OMMA_TRY(check_padding(c, pad, &op->opt.conv.padding));
        OMMA_TRY(check_positive(c, "stride_w", sw));
        OMMA_TRY(check_positive(c, "stride_h", sh));
        OMMA_TRY(check_positive(c, "dilation_w_factor", a));
        OMMA_TRY(check_positive(c, "dilation_h_factor", b));
        OMMA_TRY(check_act(c, act, &op->opt.conv.act));
        op->opt.conv.stride_w = sw;
        op->opt.conv.stride_h = sh;
        op->opt.conv.dilation_w = a;
        op->opt.conv.dilation_h = b;
        return OMMA_OK;
    case TFL_DEPTHWISE_CONV_2D:
        OMMA_TRY(fb_field_u8(r, ot, 0, "padding", 0, &pad));
        OMMA_TRY(fb_field_i32(r, ot, 1, "stride_w", 0, &sw));
        OMMA_TRY(fb_field_i32(r, ot, 2, "stride_h", 0, &sh));
        OMMA_TRY(fb_field_i32(r, ot, 3, "depth_multiplier", 0, &m));
        OMMA_TRY(fb_field_u8(r, ot, 4, "fused_activation_function", 0, &act));
        OMMA_TRY(fb_field_i32(r, ot, 5, "dilation_w_factor", 1, &a));
        OMMA_TRY(fb_field_i32(r, ot, 6, "dilation_h_factor", 1, &b));
        OMMA_TRY(check_padding(c, pad, &op->opt.dwconv.padding));
        OMMA_TRY(check_positive(c, "stride_w", sw));
        OMMA_TRY(check_positive(c, "stride_h", sh));
        OMMA_TRY(check_positive(c, "dilation_w_factor", a));
        OMMA_TRY(check_positive(c, "dilation_h_factor", b));
        if (m < 0) /* 0 is left by some converters: the filter's shape decides */
            return op_malformed(c, "depth_multiplier %d", (int)m);
        OMMA_TRY(check_act(c, act, &op->opt.dwconv.act));
        op->opt.dwconv.stride_w = sw;
        op->opt.dwconv.stride_h = sh;
        op->opt.dwconv.dilation_w = a;
        op->opt.dwconv.dilation_h = b;
        op->opt.dwconv.depth_multiplier = m;
        return OMMA_OK;
    case TFL_MAX_POOL_2D:
        OMMA_TRY(fb_field_u8(r, ot, 0, "padding", 0, &pad));
        OMMA_TRY(fb_field_i32(r, ot, 1, "stride_w", 0, &sw));
        OMMA_TRY(fb_field_i32(r, ot, 2, "stride_h", 0, &sh));
        OMMA_TRY(fb_field_i32(r, ot, 3, "filter_width", 0, &a));
        OMMA_TRY(fb_field_i32(r, ot, 4, "filter_height", 0, &b));
        OMMA_TRY(fb_field_u8(r, ot, 5, "fused_activation_function", 0, &act));
        OMMA_TRY(check_padding(c, pad, &op->opt.pool.padding));
        OMMA_TRY(check_positive(c, "stride_w", sw));
        OMMA_TRY(check_positive(c, "stride_h", sh));
        OMMA_TRY(check_positive(c, "filter_width", a));
        OMMA_TRY(check_positive(c, "filter_height", b));
        OMMA_TRY(check_act(c, act, &op->opt.pool.act));
        op->opt.pool.stride_w = sw;
        op->opt.pool.stride_h = sh;
        op->opt.pool.filter_w = a;
        op->opt.pool.filter_h = b;
        return OMMA_OK;
    case TFL_ADD:
        OMMA_TRY(fb_field_u8(r, ot, 0, "fused_activation_function", 0, &act));
        return check_act(c, act, &op->opt.add.act);
    case TFL_CONCATENATION:
        OMMA_TRY(fb_field_i32(r, ot, 0, "axis", 0, &a));
        OMMA_TRY(fb_field_u8(r, ot, 1, "fused_activation_function", 0, &act));
        if (a < -TFL_MAX_RANK || a >= TFL_MAX_RANK)
            return op_malformed(c, "axis %d", (int)a);
        op->opt.concat.axis = a;
        return check_act(c, act, &op->opt.concat.act);
    case TFL_RESIZE_BILINEAR:
        OMMA_TRY(fb_field_u8(r, ot, 2, "align_corners", 0, &b1));
        OMMA_TRY(fb_field_u8(r, ot, 3, "half_pixel_centers", 0, &b2));
        if (b1 > 1 || b2 > 1)
            return op_malformed(c, "align_corners %u / half_pixel_centers %u are not booleans",
                                b1, b2);
        if (b1 && b2)
            return op_malformed(c, "align_corners and half_pixel_centers are both set");
        op->opt.resize.align_corners = b1;
        op->opt.resize.half_pixel_centers = b2;
        return OMMA_OK;
    case TFL_DEPTH_TO_SPACE:
        OMMA_TRY(fb_field_i32(r, ot, 0, "block_size", 0, &a));
        if (a < 1 || a > 64)
            return op_malformed(c, "block_size %d (1 to 64)", (int)a);
        op->opt.d2s.block_size = a;
        return OMMA_OK;
    case TFL_MUL:
        OMMA_TRY(fb_field_u8(r, ot, 0, "fused_activation_function", 0, &act));
        return check_act(c, act, &op->opt.mul.act);
    case TFL_STRIDED_SLICE: {
        int32_t ell = 0, na = 0, shrink = 0;
        uint8_t offset = 0;
        OMMA_TRY(fb_field_i32(r, ot, 0, "begin_mask", 0, &a));
        OMMA_TRY(fb_field_i32(r, ot, 1, "end_mask", 0, &b));
        OMMA_TRY(fb_field_i32(r, ot, 2, "ellipsis_mask", 0, &ell));
        OMMA_TRY(fb_field_i32(r, ot, 3, "new_axis_mask", 0, &na));
        OMMA_TRY(fb_field_i32(r, ot, 4, "shrink_axis_mask", 0, &shrink));
        OMMA_TRY(fb_field_u8(r, ot, 5, "offset", 0, &offset));
        if (ell || na || shrink || offset)
            return op_unsupported(c,
                                  "ellipsis_mask %d, new_axis_mask %d, shrink_axis_mask %d, "
                                  "offset %u (only begin_mask and end_mask are supported)",
                                  (int)ell, (int)na, (int)shrink, offset);
        op->opt.slice.begin_mask = a;
        op->opt.slice.end_mask = b;
        return OMMA_OK;
    }
    default: /* RESHAPE's new_shape duplicates its output's shape: not read */
        return OMMA_OK;
    }
}

/* Input/output counts: min..max inputs, exactly one output. */
static omma_status check_operands(const tfl_opctx *c, const tfl_operator *op, int n_tensors)
{
    int lo = 1, hi = 1;
    switch (op->opcode) {
    case TFL_CONV_2D: case TFL_DEPTHWISE_CONV_2D: lo = 2; hi = 3; break;
    case TFL_ADD: case TFL_PRELU: case TFL_PAD: case TFL_RESIZE_BILINEAR: lo = hi = 2; break;
    case TFL_MUL:
    case TFL_CUSTOM_TRANSFORM_BILINEAR:
    case TFL_CUSTOM_TRANSFORM_LANDMARKS:
        lo = hi = 2;
        break;
    case TFL_STRIDED_SLICE:
        lo = hi = 4;
        break;
    case TFL_CUSTOM_LANDMARKS_TO_MATRIX:
        lo = hi = 1;
        break;
    case TFL_RESHAPE: lo = 1; hi = 2; break;
    case TFL_CONCATENATION: lo = 1; hi = TFL_MAX_OPERANDS; break;
    default: break;
    }
    if (op->n_inputs < lo || op->n_inputs > hi) {
        if (lo == hi)
            return op_malformed(c, "has %d inputs, expected %d", op->n_inputs, lo);
        return op_malformed(c, "has %d inputs, expected %d to %d", op->n_inputs, lo, hi);
    }
    if (op->n_outputs != 1)
        return op_malformed(c, "has %d outputs, expected 1", op->n_outputs);
    for (int k = 0; k < op->n_inputs; k++) {
        int t = op->inputs[k];
        bool optional = k == 2 && (op->opcode == TFL_CONV_2D ||
                                   op->opcode == TFL_DEPTHWISE_CONV_2D);
        if (t == -1 && optional)
            continue;
        if (t < 0 || t >= n_tensors)
            return op_malformed(c, "input %d names tensor %d of %d", k, t, n_tensors);
    }
    if (op->outputs[0] < 0 || op->outputs[0] >= n_tensors)
        return op_malformed(c, "output 0 names tensor %d of %d", op->outputs[0], n_tensors);
    return OMMA_OK;
}

/* A custom operator omma runs: MediaPipe's, version 2. */
static omma_status custom_opcode(tfl_opctx *c, const tfl_code *code, int *opcode)
{
    static const struct {
        const char *name;
        int opcode;
    } known[] = {
        {"Landmarks2TransformMatrix", TFL_CUSTOM_LANDMARKS_TO_MATRIX},
        {"TransformTensorBilinear", TFL_CUSTOM_TRANSFORM_BILINEAR},
        {"TransformLandmarks", TFL_CUSTOM_TRANSFORM_LANDMARKS},
    };
    const char *name = code->custom ? code->custom : "";
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (!strcmp(name, known[i].name)) {
            c->name = known[i].name;
            if (code->version != 2)
                return op_unsupported(c, "version %d of custom operator '%s' (2 is supported)",
                                      code->version, name);
            *opcode = known[i].opcode;
            return OMMA_OK;
        }
    return op_unsupported(c, "custom operator '%s' is not supported", name);
}

/* One key of a custom operator's options map. */
static omma_status custom_key(const tfl_opctx *c, const fx_ref *map, const char *key, bool required,
                              fx_ref *v, bool *found)
{
    OMMA_TRY(fx_map_get(map, key, v, found));
    if (!*found && required)
        return op_malformed(c, "custom options lack '%s'", key);
    return OMMA_OK;
}

static omma_status custom_positive(const tfl_opctx *c, const fx_ref *map, const char *key, int *out)
{
    fx_ref v;
    bool found;
    int32_t x;
    OMMA_TRY(custom_key(c, map, key, true, &v, &found));
    OMMA_TRY(fx_int(&v, key, &x));
    if (x < 1 || x > 65536)
        return op_malformed(c, "custom option %s %d (1 to 65536)", key, (int)x);
    *out = x;
    return OMMA_OK;
}

/* MediaPipe's custom operators' options, as their Eval checks them. */
static omma_status read_custom_options(const tfl_opctx *c, const uint8_t *bytes, size_t size,
                                       tfl_operator *op)
{
    if (op->opcode == TFL_CUSTOM_TRANSFORM_LANDMARKS)
        return OMMA_OK; /* none: the landmarks' last dimension gives 2 or 3 */
    char what[160];
    snprintf(what, sizeof what, "%s: op %d (%s) custom options", c->r->what, c->index, c->name);
    fx_ref map, v;
    bool found;
    OMMA_TRY(fx_root(bytes, size, what, &map));
    if (op->opcode == TFL_CUSTOM_TRANSFORM_BILINEAR) {
        OMMA_TRY(custom_positive(c, &map, "output_height", &op->opt.bilinear.out_h));
        return custom_positive(c, &map, "output_width", &op->opt.bilinear.out_w);
    }
    /* TFL_CUSTOM_LANDMARKS_TO_MATRIX */
    int32_t x;
    double d;
    OMMA_TRY(custom_key(c, &map, "left_rotation_idx", true, &v, &found));
    OMMA_TRY(fx_int(&v, "left_rotation_idx", &x));
    op->opt.l2m.left = x;
    OMMA_TRY(custom_key(c, &map, "right_rotation_idx", true, &v, &found));
    OMMA_TRY(fx_int(&v, "right_rotation_idx", &x));
    op->opt.l2m.right = x;
    if (op->opt.l2m.left < 0 || op->opt.l2m.right < 0)
        return op_malformed(c, "left_rotation_idx %d / right_rotation_idx %d (must be >= 0)",
                            op->opt.l2m.left, op->opt.l2m.right);
    OMMA_TRY(custom_positive(c, &map, "output_height", &op->opt.l2m.out_h));
    OMMA_TRY(custom_positive(c, &map, "output_width", &op->opt.l2m.out_w));
    static const char *const scales[2] = {"scale_x", "scale_y"};
    for (int k = 0; k < 2; k++) {
        OMMA_TRY(custom_key(c, &map, scales[k], true, &v, &found));
        OMMA_TRY(fx_float(&v, scales[k], &d));
        if (!(d > 0 && d < 1e6))
            return op_malformed(c, "custom option %s %g (must be > 0)", scales[k], d);
        *(k ? &op->opt.l2m.scale_y : &op->opt.l2m.scale_x) = (float)d;
    }
    OMMA_TRY(custom_key(c, &map, "target_rotation_radians", false, &v, &found));
    d = 0;
    if (found)
        OMMA_TRY(fx_float(&v, "target_rotation_radians", &d));
    if (!(d >= -100 && d <= 100))
        return op_malformed(c, "target_rotation_radians %g", d);
    op->opt.l2m.target_rotation = (float)d;
    size_t n;
    OMMA_TRY(custom_key(c, &map, "subset_idxs", true, &v, &found));
    OMMA_TRY(fx_vector_len(&v, "subset_idxs", &n));
    /* Pairs of landmarks; an odd last one pairs with itself (TFLite's GPU
     * delegate's reading of the attention mesh, whose eye subsets hold 71). */
    if (n == 0)
        return op_malformed(c, "subset_idxs is empty");
    if ((n + 1) / 2 > TFL_L2M_MAX_SUBSET)
        return op_unsupported(c, "subset_idxs of %zu values (at most %d)", n,
                              2 * TFL_L2M_MAX_SUBSET);
    for (size_t k = 0; k < n; k++) {
        OMMA_TRY(fx_vector_int(&v, "subset_idxs", k, &x));
        if (x < 0)
            return op_malformed(c, "subset_idxs[%zu] is %d", k, (int)x);
        op->opt.l2m.subset[k / 2][k % 2] = x;
        if (k == n - 1 && k % 2 == 0)
            op->opt.l2m.subset[k / 2][1] = x;
    }
    op->opt.l2m.n_subset = (int)((n + 1) / 2);
    return OMMA_OK;
}

static omma_status read_operator(const fb_reader *r, const fb_table *o, int index,
                                 const tfl_code *codes, size_t n_codes, int n_tensors,
                                 size_t *operand_budget, tfl_operator *op)
{
    uint32_t ci;
    size_t at;
    OMMA_TRY(fb_field(r, o, F_OP_OPCODE, 4, "opcode_index", &at));
    ci = at ? fb_rd_u32(r->b + at) : 0;
    if (ci >= n_codes)
        return fb_bad(r, "op %d opcode_index at offset %zu names operator code %u of %zu", index,
                      at, ci, n_codes);
    const tfl_code *code = &codes[ci];
    tfl_opctx c = {.r = r, .index = index, .name = tfl_opcode_name(code->code)};
    int opcode = code->code;
    if (code->custom || code->code == TFL_OP_CUSTOM)
        OMMA_TRY(custom_opcode(&c, code, &opcode));
    else if (!supported_op(code->code)) {
        if (code->code < 0)
            return op_malformed(&c, "builtin operator code %d", code->code);
        return op_unsupported(&c, "operator not supported (builtin code %d)", code->code);
    }
    op->opcode = (tfl_opcode)opcode;
    OMMA_TRY(
        fb_int_vector(r, o, F_OP_INPUTS, "inputs", TFL_MAX_OPERANDS, &op->inputs, &op->n_inputs));
    OMMA_TRY(fb_int_vector(r, o, F_OP_OUTPUTS, "outputs", TFL_MAX_OPERANDS, &op->outputs,
                           &op->n_outputs));
    /* Operand indices copied for all operators cannot outnumber the int32
     * slots of the file, unless operators share vectors: refusing that keeps
     * memory linear in the file size. */
    size_t used = (size_t)op->n_inputs + (size_t)op->n_outputs;
    if (used > *operand_budget)
        return fb_bad(r,
                      "op %d: the operators name more operands than the file can hold "
                      "(shared operand vectors)",
                      index);
    *operand_budget -= used;
    size_t s, ncustom;
    OMMA_TRY(fb_vector(r, o, F_OP_CUSTOM_OPTIONS, 1, "custom_options", &s, &ncustom));
    bool custom = opcode >= TFL_CUSTOM_LANDMARKS_TO_MATRIX;
    if (ncustom && !custom)
        return op_unsupported(&c, "custom options (%zu bytes) on a builtin operator", ncustom);
    OMMA_TRY(check_operands(&c, op, n_tensors));
    OMMA_TRY(read_options(r, &c, o, op));
    if (!custom)
        return OMMA_OK;
    uint8_t format;
    OMMA_TRY(fb_field_u8(r, o, F_OP_CUSTOM_FORMAT, "custom_options_format", 0, &format));
    if (format != 0)
        return op_malformed(&c, "custom_options_format %u (0, FLEXBUFFERS, expected)", format);
    return read_custom_options(&c, r->b + s, ncustom, op);
}

static omma_status read_index_list(const fb_reader *r, const fb_table *sg, int id,
                                   const char *field, int n_tensors, int **out, int *count)
{
    OMMA_TRY(fb_int_vector(r, sg, id, field, (size_t)n_tensors, out, count));
    for (int i = 0; i < *count; i++)
        if ((*out)[i] < 0 || (*out)[i] >= n_tensors)
            return fb_bad(r, "subgraph %s %d names tensor %d of %d", field, i, (*out)[i],
                          n_tensors);
    return OMMA_OK;
}

static omma_status read_subgraph(const fb_reader *r, const fb_table *sg, const tfl_code *codes,
                                 size_t n_codes, const tfl_buf *bufs, size_t n_bufs, tfl_model *m)
{
    size_t tstart, nt, ostart, no;
    OMMA_TRY(fb_vector(r, sg, F_SG_TENSORS, 4, "tensors", &tstart, &nt));
    OMMA_TRY(fb_vector(r, sg, F_SG_OPERATORS, 4, "operators", &ostart, &no));
    /* Both are bounded by the file size / 4 < 2^29. */
    m->tensors = calloc(nt ? nt : 1, sizeof *m->tensors);
    m->operators = calloc(no ? no : 1, sizeof *m->operators);
    if (!m->tensors || !m->operators)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: %zu tensors, %zu operators", r->what, nt,
                         no);
    m->n_tensors = (int)nt;
    for (size_t i = 0; i < nt; i++) {
        char obj[48];
        snprintf(obj, sizeof obj, "tensor %zu", i);
        fb_table t;
        OMMA_TRY(fb_vector_table(r, tstart, i, obj, &t));
        OMMA_TRY(read_tensor(r, &t, (int)i, bufs, n_bufs, &m->tensors[i]));
    }
    OMMA_TRY(read_index_list(r, sg, F_SG_INPUTS, "inputs", m->n_tensors, &m->inputs, &m->n_inputs));
    OMMA_TRY(read_index_list(r, sg, F_SG_OUTPUTS, "outputs", m->n_tensors, &m->outputs,
                             &m->n_outputs));
    m->n_operators = (int)no; /* counted before reading so that free() sees each */
    size_t operand_budget = r->n / 4;
    for (size_t i = 0; i < no; i++) {
        char obj[48];
        snprintf(obj, sizeof obj, "op %zu", i);
        fb_table t;
        OMMA_TRY(fb_vector_table(r, ostart, i, obj, &t));
        OMMA_TRY(read_operator(r, &t, (int)i, codes, n_codes, m->n_tensors, &operand_budget,
                               &m->operators[i]));
    }
    return OMMA_OK;
}

static omma_status read_model(const fb_reader *r, tfl_model *m)
{
    if (r->n == 0)
        return fb_bad(r, "the file is empty");
    if (r->n < 8)
        return fb_bad(r, "%zu bytes is too small for a TFLite model (header is 8 bytes)", r->n);
    if (memcmp(r->b + 4, "TFL3", 4) != 0)
        return fb_bad(r, "no \"TFL3\" file identifier at offset 4: not a TFLite model");
    if (r->n > TFL_MAX_FILE)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "%s: %zu bytes (flatbuffers are at most 2 GiB)",
                         r->what, r->n);
    size_t root;
    fb_table model;
    OMMA_TRY(fb_follow(r, 0, "model", "root offset", &root));
    OMMA_TRY(fb_table_at(r, root, "model", &model));
    OMMA_TRY(fb_field_u32(r, &model, F_MODEL_VERSION, "version", &m->version));
    if (m->version != TFL_SCHEMA_VERSION)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "%s: schema version %u (omma reads version %u)",
                         r->what, m->version, TFL_SCHEMA_VERSION);

    tfl_code *codes = NULL;
    tfl_buf *bufs = NULL;
    size_t n_codes = 0, n_bufs = 0, sgstart, nsg;
    omma_status st;
    if ((st = read_opcodes(r, &model, &codes, &n_codes)) != OMMA_OK ||
        (st = read_buffers(r, &model, &bufs, &n_bufs)) != OMMA_OK ||
        (st = fb_vector(r, &model, F_MODEL_SUBGRAPHS, 4, "subgraphs", &sgstart, &nsg)) != OMMA_OK)
        goto done;
    if (nsg == 0) {
        st = fb_bad(r, "the model has no subgraph");
        goto done;
    }
    if (nsg > 1) {
        st = OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "%s: %zu subgraphs (omma runs models with one)",
                       r->what, nsg);
        goto done;
    }
    fb_table sg;
    if ((st = fb_vector_table(r, sgstart, 0, "subgraph 0", &sg)) != OMMA_OK)
        goto done;
    st = read_subgraph(r, &sg, codes, n_codes, bufs, n_bufs, m);
done:
    free(codes);
    free(bufs);
    return st;
}

/* ---- entry points -------------------------------------------------------- */

void tfl_model_free(tfl_model *m)
{
    if (!m)
        return;
    if (m->operators)
        for (int i = 0; i < m->n_operators; i++) {
            free(m->operators[i].inputs);
            free(m->operators[i].outputs);
        }
    free(m->operators);
    if (m->tensors)
        for (int i = 0; i < m->n_tensors; i++)
            free(m->tensors[i].dense);
    free(m->tensors);
    free(m->inputs);
    free(m->outputs);
    free(m->file);
    free(m);
}

/* Takes ownership of `file` (freed on failure too). */
static omma_status read_owned(uint8_t *file, size_t size, const char *what, tfl_model **out)
{
    tfl_model *m = calloc(1, sizeof *m);
    if (!m) {
        free(file);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: model", what);
    }
    m->file = file;
    m->file_size = size;
    fb_reader r = {.b = file, .n = size, .what = what};
    omma_status st = read_model(&r, m);
    if (st != OMMA_OK) {
        tfl_model_free(m);
        return st;
    }
    *out = m;
    return OMMA_OK;
}

omma_status tfl_model_read_memory(const void *bytes, size_t size, const char *what,
                                  tfl_model **out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "tfl_model_read_memory: out is NULL");
    *out = NULL;
    if (!what)
        what = "model";
    if (!bytes && size)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: NULL bytes", what);
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: copying %zu bytes", what, size);
    if (size)
        memcpy(copy, bytes, size);
    return read_owned(copy, size, what, out);
}

omma_status tfl_model_read_file(const char *path, tfl_model **out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "tfl_model_read_file: out is NULL");
    *out = NULL;
    if (!path)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "tfl_model_read_file: path is NULL");
    FILE *f = fopen(path, "rb");
    if (!f)
        return OMMA_FAIL(OMMA_ERR_IO, "%s: cannot open model file: %s", path, strerror(errno));
    uint8_t *buf = NULL;
    size_t size = 0, cap = 0;
    for (;;) {
        if (size == cap) {
            size_t ncap = cap ? cap * 2 : 1 << 16;
            if (ncap > TFL_MAX_FILE + 1)
                ncap = TFL_MAX_FILE + 1;
            if (ncap == cap) { /* more than 2 GiB: read_model reports it */
                break;
            }
            uint8_t *nb = realloc(buf, ncap);
            if (!nb) {
                free(buf);
                fclose(f);
                return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: reading %zu bytes", path, ncap);
            }
            buf = nb;
            cap = ncap;
        }
        size_t got = fread(buf + size, 1, cap - size, f);
        size += got;
        if (got == 0) {
            if (ferror(f)) {
                int e = errno;
                free(buf);
                fclose(f);
                return OMMA_FAIL(OMMA_ERR_IO, "%s: cannot read model file: %s", path,
                                 strerror(e));
            }
            break;
        }
    }
    fclose(f);
    if (!buf && !(buf = malloc(1)))
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: reading", path);
    return read_owned(buf, size, path, out);
}
