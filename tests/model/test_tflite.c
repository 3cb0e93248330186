/* The TFLite reader on the three real models (counts, names, shapes,
 * parameters) and on broken copies of them: missing and empty files,
 * truncations, random byte changes in the flatbuffer's structure, an unknown
 * op, a custom op, an int8 tensor, another schema version. Every failure
 * must be the right status with a message naming the file and the place. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tflite.h"
#include "testing.h"

#define SHORT_RANGE OMMA_MODELS_DIR "/face_detection_short_range.tflite"
#define FULL_RANGE OMMA_MODELS_DIR "/face_detection_full_range.tflite"
#define LANDMARK OMMA_MODELS_DIR "/face_landmark.tflite"

/* ---- facts of the real models (found with an independent Python reader) */

typedef struct io_fact {
    int tensor;
    const char *name;
    int rank;
    int shape[4];
} io_fact;

typedef struct model_fact {
    const char *path;
    size_t file_size;
    int n_tensors, n_operators, n_const;
    size_t params;           /* elements of float (fp16 here) constants */
    int ops[64];             /* per builtin code */
    int n_inputs, n_outputs;
    io_fact in[1], out[2];
} model_fact;

static const model_fact facts[] = {
    {
        .path = SHORT_RANGE, .file_size = 229032,
        .n_tensors = 250, .n_operators = 164, .n_const = 85, .params = 101390,
        .ops = {[TFL_DEQUANTIZE] = 74, [TFL_CONV_2D] = 21, [TFL_RELU] = 17,
                [TFL_DEPTHWISE_CONV_2D] = 16, [TFL_ADD] = 16, [TFL_PAD] = 11,
                [TFL_MAX_POOL_2D] = 3, [TFL_RESHAPE] = 4, [TFL_CONCATENATION] = 2},
        .n_inputs = 1, .n_outputs = 2,
        .in = {{0, "input", 4, {1, 128, 128, 3}}},
        .out = {{175, "regressors", 3, {1, 896, 16}}, {174, "classificators", 3, {1, 896, 1}}},
    },
    {
        .path = FULL_RANGE, .file_size = 1083984,
        .n_tensors = 544, .n_operators = 354, .n_const = 189, .params = 514069,
        .ops = {[TFL_DEQUANTIZE] = 178, [TFL_CONV_2D] = 49, [TFL_RELU] = 47,
                [TFL_DEPTHWISE_CONV_2D] = 40, [TFL_ADD] = 23, [TFL_MAX_POOL_2D] = 4,
                [TFL_PAD] = 8, [TFL_RESIZE_BILINEAR] = 3, [TFL_RESHAPE] = 2},
        .n_inputs = 1, .n_outputs = 2,
        .in = {{0, "input", 4, {1, 192, 192, 3}}},
        .out = {{365, "reshaped_regressor_face_4", 3, {1, 2304, 16}},
                {364, "reshaped_classifier_face_4", 3, {1, 2304, 1}}},
    },
    {
        .path = LANDMARK, .file_size = 1241896,
        .n_tensors = 327, .n_operators = 210, .n_const = 116, .params = 604685,
        .ops = {[TFL_DEQUANTIZE] = 113, [TFL_CONV_2D] = 25, [TFL_PRELU] = 23,
                [TFL_DEPTHWISE_CONV_2D] = 20, [TFL_ADD] = 20, [TFL_MAX_POOL_2D] = 6,
                [TFL_PAD] = 3},
        .n_inputs = 1, .n_outputs = 2,
        .in = {{0, "input_1", 4, {1, 192, 192, 3}}},
        /* 468 landmarks x (x, y, z) and the face flag logit */
        .out = {{213, "conv2d_21", 4, {1, 1, 1, 1404}}, {210, "conv2d_31", 4, {1, 1, 1, 1}}},
    },
};
#define N_MODELS (int)(sizeof facts / sizeof facts[0])

static size_t type_size(tfl_type t) { return t == TFL_FLOAT16 ? 2 : 4; }

static size_t elems(const tfl_tensor *t)
{
    size_t e = 1;
    for (int d = 0; d < t->rank; d++)
        e *= (size_t)t->shape[d];
    return e;
}

/* Whatever the reader accepts must be internally consistent: indices in
 * range, constant data inside the file and of the size its shape says. */
static int model_consistent(const tfl_model *m)
{
    if (m->n_tensors < 0 || m->n_operators < 0 || m->version != 3)
        return 0;
    for (int i = 0; i < m->n_tensors; i++) {
        const tfl_tensor *t = &m->tensors[i];
        if (!t->name || t->rank < 0 || t->rank > TFL_MAX_RANK)
            return 0;
        if (t->type != TFL_FLOAT32 && t->type != TFL_FLOAT16 && t->type != TFL_INT32)
            return 0;
        for (int d = 0; d < t->rank; d++)
            if (t->shape[d] < 0)
                return 0;
        if (t->data) {
            if (t->data < m->file || t->data_size > m->file_size ||
                (size_t)(t->data - m->file) > m->file_size - t->data_size)
                return 0;
            if (elems(t) * type_size(t->type) != t->data_size)
                return 0;
        }
    }
    for (int i = 0; i < m->n_inputs; i++)
        if (m->inputs[i] < 0 || m->inputs[i] >= m->n_tensors)
            return 0;
    for (int i = 0; i < m->n_outputs; i++)
        if (m->outputs[i] < 0 || m->outputs[i] >= m->n_tensors)
            return 0;
    for (int i = 0; i < m->n_operators; i++) {
        const tfl_operator *o = &m->operators[i];
        if (o->n_outputs != 1 || o->n_inputs < 1)
            return 0;
        for (int k = 0; k < o->n_inputs; k++)
            if (o->inputs[k] < -1 || o->inputs[k] >= m->n_tensors)
                return 0;
        if (o->outputs[0] < 0 || o->outputs[0] >= m->n_tensors)
            return 0;
    }
    return 1;
}

static void check_model(const model_fact *f)
{
    tfl_model *m = NULL;
    REQUIRE_OK(tfl_model_read_file(f->path, &m));
    CHECK(m->file_size == f->file_size);
    CHECK(m->version == 3);
    CHECK(m->n_tensors == f->n_tensors);
    CHECK(m->n_operators == f->n_operators);
    int ops[64] = {0};
    for (int i = 0; i < m->n_operators; i++) {
        int code = (int)m->operators[i].opcode;
        if (code >= 0 && code < 64)
            ops[code]++;
    }
    for (int c = 0; c < 64; c++)
        if (ops[c] != f->ops[c]) {
            fprintf(stderr, "  %s: %d %s ops, expected %d\n", f->path, ops[c], tfl_opcode_name(c),
                    f->ops[c]);
            CHECK(ops[c] == f->ops[c]);
        }
    int n_const = 0;
    size_t params = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        const tfl_tensor *t = &m->tensors[i];
        if (!t->data)
            continue;
        n_const++;
        if (t->type != TFL_INT32)
            params += elems(t);
    }
    CHECK(n_const == f->n_const);
    CHECK(params == f->params);
    REQUIRE(m->n_inputs == f->n_inputs && m->n_outputs == f->n_outputs);
    for (int i = 0; i < f->n_inputs + f->n_outputs; i++) {
        const io_fact *want = i < f->n_inputs ? &f->in[i] : &f->out[i - f->n_inputs];
        int idx = i < f->n_inputs ? m->inputs[i] : m->outputs[i - f->n_inputs];
        CHECK(idx == want->tensor);
        REQUIRE(idx >= 0 && idx < m->n_tensors);
        const tfl_tensor *t = &m->tensors[idx];
        CHECK(strcmp(t->name, want->name) == 0);
        CHECK(t->type == TFL_FLOAT32);
        CHECK(!t->data);
        REQUIRE(t->rank == want->rank);
        for (int d = 0; d < t->rank; d++)
            CHECK(t->shape[d] == want->shape[d]);
    }
    CHECK(model_consistent(m));
    tfl_model_free(m);
}

static void test_short_range(void) { check_model(&facts[0]); }
static void test_full_range(void) { check_model(&facts[1]); }
static void test_landmark(void) { check_model(&facts[2]); }

/* Details the graph builder relies on: conv options, fp16 weights behind
 * DEQUANTIZE, PAD's int32 paddings, resize flags, PRELU's alpha. */
static void test_model_details(void)
{
    tfl_model *m = NULL;
    REQUIRE_OK(tfl_model_read_file(SHORT_RANGE, &m));
    /* op 0 dequantizes a constant fp16 tensor into an fp32 one of the same shape. */
    int convs = 0, stride2 = 0, same = 0;
    for (int i = 0; i < m->n_operators; i++) {
        const tfl_operator *o = &m->operators[i];
        if (o->opcode == TFL_DEQUANTIZE) {
            const tfl_tensor *a = &m->tensors[o->inputs[0]], *b = &m->tensors[o->outputs[0]];
            CHECK(a->type == TFL_FLOAT16 && a->data && b->type == TFL_FLOAT32 && !b->data);
            CHECK(a->rank == b->rank && elems(a) == elems(b));
        }
        if (o->opcode == TFL_CONV_2D) {
            convs++;
            CHECK(o->n_inputs == 3 && o->inputs[2] >= 0);
            CHECK(o->opt.conv.dilation_w == 1 && o->opt.conv.dilation_h == 1);
            CHECK(o->opt.conv.act == TFL_ACT_NONE);
            CHECK(o->opt.conv.stride_w == o->opt.conv.stride_h);
            stride2 += o->opt.conv.stride_w == 2;
            same += o->opt.conv.padding == TFL_PAD_SAME;
        }
        if (o->opcode == TFL_PAD) {
            const tfl_tensor *p = &m->tensors[o->inputs[1]];
            CHECK(p->type == TFL_INT32 && p->data && p->rank == 2 && p->shape[0] == 4 &&
                  p->shape[1] == 2 && p->data_size == 32);
        }
        if (o->opcode == TFL_MAX_POOL_2D)
            CHECK(o->opt.pool.filter_w == 2 && o->opt.pool.filter_h == 2 &&
                  o->opt.pool.stride_w == 2 && o->opt.pool.stride_h == 2 &&
                  o->opt.pool.padding == TFL_PAD_SAME);
        if (o->opcode == TFL_CONCATENATION)
            CHECK(o->n_inputs == 2 && o->opt.concat.axis == 1);
        if (o->opcode == TFL_DEPTHWISE_CONV_2D)
            CHECK(o->opt.dwconv.depth_multiplier == 1);
    }
    CHECK(convs == 21);
    CHECK(stride2 == 1);  /* the stem: 5x5 stride 2 */
    CHECK(same == 5);
    /* The stem's filter: 24 x 5 x 5 x 3, fp16. */
    const tfl_operator *stem = NULL;
    for (int i = 0; i < m->n_operators && !stem; i++)
        if (m->operators[i].opcode == TFL_CONV_2D)
            stem = &m->operators[i];
    REQUIRE(stem);
    const tfl_tensor *w = &m->tensors[stem->inputs[1]];
    CHECK(w->rank == 4 && w->shape[0] == 24 && w->shape[1] == 5 && w->shape[2] == 5 &&
          w->shape[3] == 3);
    CHECK(stem->inputs[0] == 0);
    tfl_model_free(m);

    REQUIRE_OK(tfl_model_read_file(FULL_RANGE, &m));
    int resizes = 0;
    for (int i = 0; i < m->n_operators; i++) {
        const tfl_operator *o = &m->operators[i];
        if (o->opcode != TFL_RESIZE_BILINEAR)
            continue;
        resizes++;
        CHECK(!o->opt.resize.align_corners && o->opt.resize.half_pixel_centers);
        const tfl_tensor *s = &m->tensors[o->inputs[1]];
        CHECK(s->type == TFL_INT32 && s->data && s->data_size == 8);
    }
    CHECK(resizes == 3);
    tfl_model_free(m);

    REQUIRE_OK(tfl_model_read_file(LANDMARK, &m));
    int prelus = 0, stride3 = 0;
    for (int i = 0; i < m->n_operators; i++) {
        const tfl_operator *o = &m->operators[i];
        if (o->opcode == TFL_PRELU) {
            prelus++;
            const tfl_tensor *x = &m->tensors[o->inputs[0]];
            const tfl_tensor *a = &m->tensors[o->inputs[1]];
            CHECK(x->rank == 4 && elems(a) == (size_t)x->shape[3]);
        }
        if (o->opcode == TFL_CONV_2D && o->opt.conv.stride_w == 3)
            stride3++;
        if (o->opcode == TFL_MAX_POOL_2D)
            CHECK(o->opt.pool.padding == TFL_PAD_VALID);
    }
    CHECK(prelus == 23);
    CHECK(stride3 == 2);
    tfl_model_free(m);
}

/* ---- files ---------------------------------------------------------------- */

/* The attention mesh: its new ops and MediaPipe's custom ops' options
 * (read independently from the file with a Python flexbuffer reader). */
static void test_attention_mesh(void)
{
    tfl_model *m = NULL;
    REQUIRE_OK(tfl_model_read_file(OMMA_MODELS_DIR "/face_landmark_with_attention.tflite", &m));
    int mul = 0, slice = 0, l2m = 0, bil = 0, tl = 0;
    for (int i = 0; i < m->n_operators; i++) {
        tfl_opcode c = m->operators[i].opcode;
        mul += c == TFL_MUL;
        slice += c == TFL_STRIDED_SLICE;
        l2m += c == TFL_CUSTOM_LANDMARKS_TO_MATRIX;
        bil += c == TFL_CUSTOM_TRANSFORM_BILINEAR;
        tl += c == TFL_CUSTOM_TRANSFORM_LANDMARKS;
    }
    CHECK(m->n_operators == 712 && mul == 6 && slice == 1 && l2m == 3 && bil == 3 && tl == 5);
    if (m->n_operators != 712) {
        tfl_model_free(m);
        return;
    }
    const tfl_operator *lips = &m->operators[192], *eye = &m->operators[193];
    CHECK(lips->opcode == TFL_CUSTOM_LANDMARKS_TO_MATRIX);
    CHECK(eye->opcode == TFL_CUSTOM_LANDMARKS_TO_MATRIX);
    CHECK(lips->opt.l2m.left == 61 && lips->opt.l2m.right == 291);
    CHECK(lips->opt.l2m.out_h == 16 && lips->opt.l2m.out_w == 16);
    CHECK(lips->opt.l2m.scale_x == 1.5f && lips->opt.l2m.scale_y == 1.5f);
    CHECK(lips->opt.l2m.target_rotation == 0.0f);
    CHECK(lips->opt.l2m.n_subset == 40); /* 80 indices */
    CHECK(lips->opt.l2m.subset[0][0] == 61 && lips->opt.l2m.subset[0][1] == 146);
    CHECK(lips->opt.l2m.subset[39][0] == 272 && lips->opt.l2m.subset[39][1] == 407);
    CHECK(eye->opt.l2m.left == 33 && eye->opt.l2m.right == 133);
    CHECK(eye->opt.l2m.n_subset == 36); /* 71 indices: the last pairs with itself */
    CHECK(eye->opt.l2m.subset[35][0] == 193 && eye->opt.l2m.subset[35][1] == 193);
    CHECK(m->operators[195].opcode == TFL_CUSTOM_TRANSFORM_BILINEAR);
    CHECK(m->operators[195].opt.bilinear.out_h == 16 && m->operators[195].opt.bilinear.out_w == 16);
    CHECK(m->operators[706].opcode == TFL_STRIDED_SLICE);
    CHECK(m->operators[706].opt.slice.begin_mask == 0 && m->operators[706].opt.slice.end_mask == 0);
    tfl_model_free(m);
}

static void test_missing_file(void)
{
    tfl_model *m = (tfl_model *)(uintptr_t)1;
    CHECK_FAILS(tfl_model_read_file(OMMA_BINARY_DIR "/no/such/model.tflite", &m), OMMA_ERR_IO,
                OMMA_BINARY_DIR "/no/such/model.tflite: cannot open");
    CHECK(m == NULL);
    CHECK_FAILS(tfl_model_read_file(OMMA_BINARY_DIR "/no/such/model.tflite", &m), OMMA_ERR_IO,
                "No such file");
    m = (tfl_model *)(uintptr_t)1;
    CHECK_FAILS(tfl_model_read_file(OMMA_MODELS_DIR, &m), OMMA_ERR_IO, "Is a directory");
    CHECK(m == NULL);
}

static void test_empty_file(void)
{
    const char *path = OMMA_BINARY_DIR "/test_tflite_empty.tflite";
    FILE *f = fopen(path, "wb");
    REQUIRE(f);
    fclose(f);
    tfl_model *m = (tfl_model *)(uintptr_t)1;
    CHECK_FAILS(tfl_model_read_file(path, &m), OMMA_ERR_FORMAT, "test_tflite_empty.tflite: the "
                "file is empty");
    CHECK(m == NULL);
    m = (tfl_model *)(uintptr_t)1;
    CHECK_FAILS(tfl_model_read_memory("", 0, "mem.tflite", &m), OMMA_ERR_FORMAT,
                "mem.tflite: the file is empty");
    CHECK(m == NULL);
    remove(path);
}

static uint8_t *load(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return b;
}

static void test_not_tflite(void)
{
    tfl_model *m = NULL;
    CHECK_FAILS(tfl_model_read_memory("TFL3", 4, "tiny.tflite", &m), OMMA_ERR_FORMAT,
                "tiny.tflite: 4 bytes is too small");
    /* A PNG signature: no identifier. */
    static const uint8_t png[16] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    CHECK_FAILS(tfl_model_read_memory(png, sizeof png, "photo.png", &m), OMMA_ERR_FORMAT,
                "photo.png: no \"TFL3\" file identifier at offset 4");
    size_t n;
    uint8_t *b = load(SHORT_RANGE, &n);
    REQUIRE(b);
    b[7] = '2';
    CHECK_FAILS(tfl_model_read_memory(b, n, "tfl2.tflite", &m), OMMA_ERR_FORMAT, "TFL3");
    b[7] = '3';
    /* The root offset pointing past the end, then misaligned. */
    b[3] = 0x7f;
    CHECK_FAILS(tfl_model_read_memory(b, n, "root.tflite", &m), OMMA_ERR_FORMAT,
                "root.tflite: model root offset at offset 0 points to offset 2130706456, past the "
                "end of the file (size 229032)");
    b[3] = 0;
    b[0] = 26;
    CHECK_FAILS(tfl_model_read_memory(b, n, "root.tflite", &m), OMMA_ERR_FORMAT,
                "not 4-byte aligned");
    CHECK(m == NULL);
    free(b);
}

/* ---- a minimal independent flatbuffer walker, to find bytes to edit ---- */

static uint32_t u32(const uint8_t *b, size_t p)
{
    return (uint32_t)b[p] | (uint32_t)b[p + 1] << 8 | (uint32_t)b[p + 2] << 16 |
           (uint32_t)b[p + 3] << 24;
}

static unsigned u16(const uint8_t *b, size_t p) { return b[p] | (unsigned)b[p + 1] << 8; }

/* Position of a field of the table at t, 0 if absent. */
static size_t field(const uint8_t *b, size_t t, int id)
{
    size_t vt = (size_t)((long long)t - (int32_t)u32(b, t));
    unsigned vs = u16(b, vt);
    if (4 + 2 * (unsigned)id + 2 > vs)
        return 0;
    unsigned fo = u16(b, vt + 4 + 2 * (unsigned)id);
    return fo ? t + fo : 0;
}

static size_t deref(const uint8_t *b, size_t p) { return p + u32(b, p); }

/* Table k of the vector of tables referenced by field `id` of table t. */
static size_t elem(const uint8_t *b, size_t t, int id, size_t k)
{
    size_t v = deref(b, field(b, t, id));
    return deref(b, v + 4 + 4 * k);
}

static size_t root(const uint8_t *b) { return deref(b, 0); }

/* The first operator using opcode code (in a model read from the same bytes). */
static int first_op(const tfl_model *m, tfl_opcode code)
{
    for (int i = 0; i < m->n_operators; i++)
        if (m->operators[i].opcode == code)
            return i;
    return -1;
}

static void test_unknown_and_custom_ops(void)
{
    size_t n;
    uint8_t *b = load(SHORT_RANGE, &n);
    REQUIRE(b);
    tfl_model *m = NULL;
    REQUIRE_OK(tfl_model_read_memory(b, n, "short.tflite", &m));
    int relu = first_op(m, TFL_RELU);
    tfl_model_free(m);
    REQUIRE(relu > 0);
    /* Operator code 1 is RELU in this file, in the deprecated int8 field only. */
    size_t oc = elem(b, root(b), 1, 1);
    size_t dep = field(b, oc, 0);
    REQUIRE(dep && b[dep] == TFL_RELU && field(b, oc, 3) == 0);
    char want[96];

    b[dep] = 25; /* SOFTMAX */
    snprintf(want, sizeof want,
             "short.tflite: op %d (SOFTMAX): operator not supported (builtin code 25)", relu);
    CHECK_FAILS(tfl_model_read_memory(b, n, "short.tflite", &m), OMMA_ERR_UNSUPPORTED, want);
    CHECK(m == NULL);

    b[dep] = 120; /* no such builtin */
    snprintf(want, sizeof want, "op %d (UNKNOWN): operator not supported (builtin code 120)", relu);
    CHECK_FAILS(tfl_model_read_memory(b, n, "short.tflite", &m), OMMA_ERR_UNSUPPORTED, want);

    b[dep] = 32; /* CUSTOM */
    snprintf(want, sizeof want, "op %d (CUSTOM): custom operator", relu);
    CHECK_FAILS(tfl_model_read_memory(b, n, "short.tflite", &m), OMMA_ERR_UNSUPPORTED, want);

    b[dep] = 21; /* RELU6 as an op: not among omma's ops */
    snprintf(want, sizeof want, "op %d (RELU6): operator not supported", relu);
    CHECK_FAILS(tfl_model_read_memory(b, n, "short.tflite", &m), OMMA_ERR_UNSUPPORTED, want);
    b[dep] = TFL_RELU;
    REQUIRE_OK(tfl_model_read_memory(b, n, "short.tflite", &m));
    tfl_model_free(m);
    free(b);

    /* The full-range file fills both fields; TFLite takes the larger. */
    b = load(FULL_RANGE, &n);
    REQUIRE(b);
    REQUIRE_OK(tfl_model_read_memory(b, n, "full.tflite", &m));
    relu = first_op(m, TFL_RELU);
    tfl_model_free(m);
    oc = elem(b, root(b), 1, 1);
    size_t code = field(b, oc, 3);
    REQUIRE(code && u32(b, code) == TFL_RELU && b[field(b, oc, 0)] == TFL_RELU);
    b[code] = 0; /* builtin_code ADD, deprecated RELU: still RELU */
    REQUIRE_OK(tfl_model_read_memory(b, n, "full.tflite", &m));
    CHECK(m->operators[relu].opcode == TFL_RELU);
    tfl_model_free(m);
    b[code] = 200; /* a newer op than omma knows */
    snprintf(want, sizeof want, "op %d (UNKNOWN): operator not supported (builtin code 200)", relu);
    CHECK_FAILS(tfl_model_read_memory(b, n, "full.tflite", &m), OMMA_ERR_UNSUPPORTED, want);
    free(b);
}

static void test_int8_tensor_and_version(void)
{
    size_t n;
    uint8_t *b = load(SHORT_RANGE, &n);
    REQUIRE(b);
    size_t sg = elem(b, root(b), 2, 0);
    /* Tensor 1 is an fp16 constant: its type field is stored (1). */
    size_t t1 = elem(b, sg, 0, 1);
    size_t type = field(b, t1, 1);
    REQUIRE(type && b[type] == TFL_FLOAT16);
    tfl_model *m = NULL;
    b[type] = 9; /* INT8 */
    CHECK_FAILS(tfl_model_read_memory(b, n, "int8.tflite", &m), OMMA_ERR_UNSUPPORTED,
                "int8.tflite: tensor 1 ");
    CHECK_FAILS(tfl_model_read_memory(b, n, "int8.tflite", &m), OMMA_ERR_UNSUPPORTED,
                "has type INT8 (9): quantized models are not supported");
    b[type] = 3; /* UINT8 */
    CHECK_FAILS(tfl_model_read_memory(b, n, "uint8.tflite", &m), OMMA_ERR_UNSUPPORTED,
                "UINT8 (3): quantized");
    b[type] = 5; /* STRING */
    CHECK_FAILS(tfl_model_read_memory(b, n, "s.tflite", &m), OMMA_ERR_UNSUPPORTED,
                "has type STRING (5)");
    b[type] = TFL_FLOAT32; /* fp16 data read as fp32: half the bytes the shape needs */
    CHECK_FAILS(tfl_model_read_memory(b, n, "f32.tflite", &m), OMMA_ERR_FORMAT,
                "elements of FLOAT32 needs");
    b[type] = TFL_FLOAT16;

    size_t version = field(b, root(b), 0);
    REQUIRE(version && u32(b, version) == 3);
    b[version] = 2;
    CHECK_FAILS(tfl_model_read_memory(b, n, "v2.tflite", &m), OMMA_ERR_UNSUPPORTED,
                "v2.tflite: schema version 2 (omma reads version 3)");
    b[version] = 3;

    /* A subgraph input index out of range. */
    size_t inputs = deref(b, field(b, sg, 1));
    REQUIRE(u32(b, inputs) == 1 && u32(b, inputs + 4) == 0);
    b[inputs + 4] = 0xfa; /* 250 = n_tensors */
    CHECK_FAILS(tfl_model_read_memory(b, n, "in.tflite", &m), OMMA_ERR_FORMAT,
                "in.tflite: subgraph inputs 0 names tensor 250 of 250");
    b[inputs + 4] = 0;

    /* An operator input out of range, and -1 where it is not optional. */
    size_t op0 = elem(b, sg, 3, 0);
    size_t op_in = deref(b, field(b, op0, 1));
    int32_t saved = (int32_t)u32(b, op_in + 4);
    memset(b + op_in + 4, 0xff, 4);
    CHECK_FAILS(tfl_model_read_memory(b, n, "op.tflite", &m), OMMA_ERR_FORMAT,
                "op.tflite: op 0 (DEQUANTIZE): input 0 names tensor -1 of 250");
    b[op_in + 4] = 0x00;
    b[op_in + 5] = 0x10; /* 4096 */
    b[op_in + 6] = b[op_in + 7] = 0;
    CHECK_FAILS(tfl_model_read_memory(b, n, "op.tflite", &m), OMMA_ERR_FORMAT,
                "input 0 names tensor 4096 of 250");
    memcpy(b + op_in + 4, &saved, 4);
    /* Two inputs for DEQUANTIZE: the count says 2, the next int is the outputs' length. */
    b[op_in] = 2;
    CHECK_FAILS(tfl_model_read_memory(b, n, "op.tflite", &m), OMMA_ERR_FORMAT,
                "op 0 (DEQUANTIZE): has 2 inputs, expected 1");
    b[op_in] = 1;
    REQUIRE_OK(tfl_model_read_memory(b, n, "ok.tflite", &m));
    tfl_model_free(m);
    free(b);
}

/* ---- truncations and byte changes ---------------------------------------- */

static uint64_t rng_state;
static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

/* One reading of damaged bytes: an error with a message naming the file, or
 * a model that is internally consistent. Returns the status. */
static omma_status read_damaged(const uint8_t *b, size_t n, const char *what, int *bad)
{
    tfl_model *m = (tfl_model *)(uintptr_t)1;
    omma_status st = tfl_model_read_memory(b, n, what, &m);
    if (st == OMMA_OK) {
        if (!m || !model_consistent(m)) {
            fprintf(stderr, "  %s (%zu bytes): accepted an inconsistent model\n", what, n);
            (*bad)++;
        }
        tfl_model_free(m);
        return st;
    }
    const char *msg = omma_last_error();
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%s: ", what);
    if (m != NULL || (st != OMMA_ERR_FORMAT && st != OMMA_ERR_UNSUPPORTED) ||
        strncmp(msg, prefix, strlen(prefix)) != 0) {
        fprintf(stderr, "  %s (%zu bytes): %s %s\n", what, n, omma_status_str(st), msg);
        (*bad)++;
    }
    return st;
}

static void test_truncations(void)
{
    for (int k = 0; k < N_MODELS; k++) {
        size_t n;
        uint8_t *full = load(facts[k].path, &n);
        REQUIRE(full);
        int bad = 0, format = 0, past_end = 0;
        for (int i = 0; i < 1000; i++) {
            /* 64 tiny ones (0..63 bytes), then spread evenly up to n - 1. */
            size_t len = i < 64 ? (size_t)i : 64 + (size_t)(i - 64) * (n - 65) / 935;
            uint8_t *b = malloc(len ? len : 1); /* exact size: ASan sees any overread */
            REQUIRE(b);
            memcpy(b, full, len);
            omma_status st = read_damaged(b, len, "cut.tflite", &bad);
            if (st == OMMA_ERR_FORMAT)
                format++;
            if (st != OMMA_OK && (strstr(omma_last_error(), "past the end of the file") ||
                                  strstr(omma_last_error(), "outside the file")))
                past_end++;
            free(b);
        }
        fprintf(stderr, "  %s: 1000 truncations: %d FORMAT, %d past/outside the end\n",
                facts[k].path, format, past_end);
        CHECK(bad == 0);
        /* Every prefix is missing something the model refers to. */
        CHECK(format == 1000);
        CHECK(past_end >= 1000 - 64 + 56); /* all but the 8 first tiny ones (header errors) */
        free(full);
    }
}

/* 1 for each byte of constant data (not structure), from a clean read. */
static uint8_t *data_mask(const tfl_model *m)
{
    uint8_t *mask = calloc(m->file_size, 1);
    for (int i = 0; mask && i < m->n_tensors; i++) {
        const tfl_tensor *t = &m->tensors[i];
        if (t->data)
            memset(mask + (t->data - m->file), 1, t->data_size);
    }
    return mask;
}

static void test_byte_flips(void)
{
    rng_state = 20261121;
    for (int k = 0; k < N_MODELS; k++) {
        size_t n;
        uint8_t *orig = load(facts[k].path, &n);
        REQUIRE(orig);
        tfl_model *clean = NULL;
        REQUIRE_OK(tfl_model_read_memory(orig, n, "clean", &clean));
        /* The structure: every byte outside the constant data. */
        size_t *structure = malloc(n * sizeof *structure), ns = 0;
        uint8_t *mask = data_mask(clean);
        REQUIRE(structure && mask);
        for (size_t p = 0; p < n; p++)
            if (!mask[p])
                structure[ns++] = p;
        free(mask);
        tfl_model_free(clean);
        uint8_t *b = malloc(n);
        REQUIRE(b);
        int bad = 0, ok = 0, format = 0, unsupported = 0;
        for (int i = 0; i < 1000; i++) {
            memcpy(b, orig, n);
            int flips = 1 + (int)(rnd() % 4);
            for (int f = 0; f < flips; f++) {
                size_t p = structure[rnd() % ns];
                switch (rnd() % 3) {
                case 0: b[p] ^= (uint8_t)(1u << (rnd() % 8)); break; /* one bit */
                case 1: b[p] = (uint8_t)rnd(); break;                  /* any value */
                default: b[p] = (rnd() & 1) ? 0xff : 0x00; break;      /* extremes */
                }
            }
            omma_status st = read_damaged(b, n, "flip.tflite", &bad);
            ok += st == OMMA_OK;
            format += st == OMMA_ERR_FORMAT;
            unsupported += st == OMMA_ERR_UNSUPPORTED;
        }
        fprintf(stderr, "  %s: %zu structure bytes; 1000 damaged copies: %d read, %d FORMAT, "
                "%d UNSUPPORTED\n", facts[k].path, ns, ok, format, unsupported);
        CHECK(bad == 0);
        CHECK(format > 0 && ok + format + unsupported == 1000);
        free(b);
        free(structure);
        free(orig);
    }
}

int main(void)
{
    RUN(test_short_range);
    RUN(test_full_range);
    RUN(test_landmark);
    RUN(test_model_details);
    RUN(test_attention_mesh);
    RUN(test_missing_file);
    RUN(test_empty_file);
    RUN(test_not_tflite);
    RUN(test_unknown_and_custom_ops);
    RUN(test_int8_tensor_and_version);
    RUN(test_truncations);
    RUN(test_byte_flips);
    return testing_finish();
}
