/* The TFLite reader on small models forged by a tiny flatbuffer writer in
 * this file: a valid one-conv model, then one change at a time (quantized
 * tensors, unsupported activations, dilations, several subgraphs, custom
 * ops and options, operand counts and indices, buffer sizes, external
 * buffers, broken strings, vtables and offsets) with the exact status and
 * message expected; and every single-byte change of the valid model.
 *
 * Why one file of ~850 lines: the forging writer and the table of forged
 * changes with their expected messages read as one list.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/tflite.h"
#include "testing.h"

/* ---- a tiny flatbuffer writer ------------------------------------------
 * Objects form a tree; children are written after their parent so every
 * uoffset points forward, as flatbuffers require. Vtables are written just
 * before their table. */

enum { FB_TABLE, FB_VEC, FB_VREF, FB_STR };

typedef struct fb fb;
struct fb {
    int kind;
    int nf;
    struct { int id, size; uint64_t v; fb *ref; } f[16];  /* FB_TABLE fields */
    const void *bytes;                                    /* FB_VEC, FB_STR */
    size_t len, elem;
    fb *items[80];                                        /* FB_VREF */
    int n_items;
    size_t pos, vt; /* where it was written (table start / length prefix; vtable) */
    int emitted;    /* written once; later references share it (they must come first) */
};

static fb pool[256];
static int npool;
static uint8_t buf[1 << 16];
static size_t blen;

static fb *fb_new(int kind)
{
    if (npool >= (int)(sizeof pool / sizeof pool[0]))
        abort(); /* a bug in this test */
    fb *n = &pool[npool++];
    memset(n, 0, sizeof *n);
    n->kind = kind;
    return n;
}

static fb *table(void) { return fb_new(FB_TABLE); }

/* Sets (or replaces) a scalar field of size 1, 4 or 8 bytes. */
static void set(fb *t, int id, int size, uint64_t v)
{
    for (int i = 0; i < t->nf; i++)
        if (t->f[i].id == id) {
            t->f[i].size = size;
            t->f[i].v = v;
            t->f[i].ref = NULL;
            return;
        }
    t->f[t->nf].id = id;
    t->f[t->nf].size = size;
    t->f[t->nf].v = v;
    t->f[t->nf].ref = NULL;
    t->nf++;
}

static void ref(fb *t, int id, fb *child)
{
    set(t, id, 4, 0);
    for (int i = 0; i < t->nf; i++)
        if (t->f[i].id == id)
            t->f[i].ref = child;
}

static void unset(fb *t, int id)
{
    for (int i = 0; i < t->nf; i++)
        if (t->f[i].id == id) {
            t->f[i] = t->f[--t->nf];
            return;
        }
}

static fb *vec(const void *bytes, size_t len, size_t elem)
{
    fb *n = fb_new(FB_VEC);
    n->bytes = bytes;
    n->len = len;
    n->elem = elem;
    return n;
}

static fb *ints(int n, const int32_t *v) { return vec(v, (size_t)n, 4); }

static fb *str(const char *s)
{
    fb *n = fb_new(FB_STR);
    n->bytes = s;
    n->len = strlen(s);
    return n;
}

static fb *vref(int n, fb *const *items)
{
    fb *v = fb_new(FB_VREF);
    for (int i = 0; i < n; i++)
        v->items[i] = items[i];
    v->n_items = n;
    return v;
}

static void put(size_t at, uint64_t v, int size)
{
    for (int i = 0; i < size; i++)
        buf[at + (size_t)i] = (uint8_t)(v >> (8 * i));
}

static void pad_to(size_t a)
{
    while (blen % a)
        buf[blen++] = 0;
}

static size_t emit(fb *n);

static void link_ref(size_t at, fb *child)
{
    size_t c = emit(child);
    put(at, c - at, 4);
}

static size_t emit(fb *n)
{
    if (n->emitted)
        return n->pos;
    n->emitted = 1;
    switch (n->kind) {
    case FB_TABLE: {
        int maxid = -1;
        unsigned off[16], o = 4;
        for (int i = 0; i < n->nf; i++)
            maxid = n->f[i].id > maxid ? n->f[i].id : maxid;
        /* Inline layout: soffset, then 8-, 4- and 1-byte fields, each aligned. */
        for (int pass = 8; pass >= 1; pass /= 2)
            for (int i = 0; i < n->nf; i++)
                if (n->f[i].size == pass) {
                    while (o % (unsigned)pass)
                        o++;
                    off[i] = o;
                    o += (unsigned)pass;
                }
        unsigned tsize = (o + 3) & ~3u;
        pad_to(2);
        n->vt = blen;
        put(blen, 4 + 2 * (unsigned)(maxid + 1), 2);
        put(blen + 2, tsize, 2);
        blen += 4;
        for (int id = 0; id <= maxid; id++) {
            unsigned fo = 0;
            for (int i = 0; i < n->nf; i++)
                if (n->f[i].id == id)
                    fo = off[i];
            put(blen, fo, 2);
            blen += 2;
        }
        pad_to(8);
        n->pos = blen;
        put(blen, n->pos - n->vt, 4);
        memset(buf + blen + 4, 0, tsize - 4);
        blen += tsize;
        for (int i = 0; i < n->nf; i++)
            if (!n->f[i].ref)
                put(n->pos + off[i], n->f[i].v, n->f[i].size);
        for (int i = 0; i < n->nf; i++)
            if (n->f[i].ref)
                link_ref(n->pos + off[i], n->f[i].ref);
        return n->pos;
    }
    case FB_VEC:
        pad_to(4);
        if (n->elem == 8 && (blen + 4) % 8)
            blen += 4;
        n->pos = blen;
        put(blen, n->len, 4);
        memcpy(buf + blen + 4, n->bytes, n->len * n->elem);
        blen += 4 + n->len * n->elem;
        return n->pos;
    case FB_STR:
        pad_to(4);
        n->pos = blen;
        put(blen, n->len, 4);
        memcpy(buf + blen + 4, n->bytes, n->len);
        buf[blen + 4 + n->len] = 0;
        blen += 4 + n->len + 1;
        return n->pos;
    default: /* FB_VREF */
        pad_to(4);
        n->pos = blen;
        put(blen, (uint64_t)n->n_items, 4);
        blen += 4 + 4 * (size_t)n->n_items;
        for (int i = 0; i < n->n_items; i++)
            link_ref(n->pos + 4 + 4 * (size_t)i, n->items[i]);
        return n->pos;
    }
}

/* Writes the file: root offset, "TFL3", the model. */
static size_t finish(fb *model)
{
    memset(buf, 0, sizeof buf);
    memcpy(buf + 4, "TFL3", 4);
    blen = 8;
    for (int i = 0; i < npool; i++)
        pool[i].emitted = 0;
    size_t r = emit(model);
    put(0, r, 4);
    pad_to(16);
    return blen;
}

/* ---- the base model: y = conv1x1(x, w) + b ------------------------------ */

static const float w_data[6] = {1, 2, 3, 4, 5, 6};   /* [3, 1, 1, 2] */
static const float b_data[3] = {0.5f, -1, 2};        /* [3] */
static const int32_t x_shape[4] = {1, 4, 4, 2}, w_shape[4] = {3, 1, 1, 2}, b_shape[1] = {3};
static const int32_t y_shape[4] = {1, 4, 4, 3};
static const int32_t op_in[3] = {0, 1, 2}, op_out[1] = {3}, sg_in[1] = {0}, sg_out[1] = {3};

typedef struct forged {
    fb *model, *opcode, *subgraph, *op, *opts;
    fb *tensor[4];   /* x, w, b, y */
    fb *buffer[3];   /* empty, w, b */
    fb *subgraphs, *name_x;
} forged;

static forged base(void)
{
    forged f;
    npool = 0;
    f.model = table();
    set(f.model, 0, 4, 3); /* version */
    f.opcode = table();
    set(f.opcode, 0, 1, TFL_CONV_2D);
    ref(f.model, 1, vref(1, &f.opcode));
    f.buffer[0] = table();
    f.buffer[1] = table();
    ref(f.buffer[1], 0, vec(w_data, sizeof w_data, 1));
    f.buffer[2] = table();
    ref(f.buffer[2], 0, vec(b_data, sizeof b_data, 1));
    ref(f.model, 4, vref(3, f.buffer));

    static const char *const names[4] = {"x", "w", "b", "y"};
    const int32_t *shapes[4] = {x_shape, w_shape, b_shape, y_shape};
    const int ranks[4] = {4, 4, 1, 4}, bufs[4] = {0, 1, 2, 0};
    for (int i = 0; i < 4; i++) {
        f.tensor[i] = table();
        ref(f.tensor[i], 0, ints(ranks[i], shapes[i]));
        if (bufs[i])
            set(f.tensor[i], 2, 4, (uint64_t)bufs[i]);
        fb *name = str(names[i]);
        if (i == 0)
            f.name_x = name;
        ref(f.tensor[i], 3, name);
    }
    f.op = table();
    set(f.op, 0, 4, 0);
    ref(f.op, 1, ints(3, op_in));
    ref(f.op, 2, ints(1, op_out));
    set(f.op, 3, 1, 1); /* Conv2DOptions */
    f.opts = table();
    set(f.opts, 0, 1, TFL_PAD_VALID);
    set(f.opts, 1, 4, 1);
    set(f.opts, 2, 4, 1);
    ref(f.op, 4, f.opts);

    f.subgraph = table();
    ref(f.subgraph, 0, vref(4, f.tensor));
    ref(f.subgraph, 1, ints(1, sg_in));
    ref(f.subgraph, 2, ints(1, sg_out));
    ref(f.subgraph, 3, vref(1, &f.op));
    ref(f.subgraph, 4, str("main"));
    f.subgraphs = vref(1, &f.subgraph);
    ref(f.model, 2, f.subgraphs);
    ref(f.model, 3, str("forged by test_tflite_forge"));
    return f;
}

static omma_status read_forged(forged *f, tfl_model **m)
{
    size_t n = finish(f->model);
    return tfl_model_read_memory(buf, n, "forged.tflite", m);
}

/* Reads f and expects a failure with `st` and a message containing `text`. */
#define EXPECT(f, st, text)                                                    \
    do {                                                                       \
        tfl_model *m_ = (tfl_model *)(uintptr_t)1;                             \
        CHECK_FAILS(read_forged(&(f), &m_), st, text);                         \
        CHECK(m_ == NULL);                                                     \
    } while (0)

/* ---- valid models ------------------------------------------------------- */

static void test_base_model(void)
{
    forged f = base();
    tfl_model *m = NULL;
    REQUIRE_OK(read_forged(&f, &m));
    CHECK(m->version == 3);
    REQUIRE(m->n_tensors == 4 && m->n_operators == 1);
    CHECK(strcmp(m->tensors[0].name, "x") == 0 && strcmp(m->tensors[3].name, "y") == 0);
    CHECK(m->tensors[0].rank == 4 && m->tensors[0].shape[3] == 2 && !m->tensors[0].data);
    CHECK(m->tensors[0].type == TFL_FLOAT32);
    CHECK(m->tensors[1].data_size == sizeof w_data &&
          memcmp(m->tensors[1].data, w_data, sizeof w_data) == 0);
    CHECK(m->tensors[2].data_size == sizeof b_data && m->tensors[2].rank == 1);
    const tfl_operator *o = &m->operators[0];
    CHECK(o->opcode == TFL_CONV_2D && o->n_inputs == 3 && o->n_outputs == 1);
    CHECK(o->inputs[0] == 0 && o->inputs[1] == 1 && o->inputs[2] == 2 && o->outputs[0] == 3);
    CHECK(o->opt.conv.padding == TFL_PAD_VALID && o->opt.conv.stride_w == 1 &&
          o->opt.conv.stride_h == 1 && o->opt.conv.dilation_w == 1 &&
          o->opt.conv.dilation_h == 1 && o->opt.conv.act == TFL_ACT_NONE);
    CHECK(m->n_inputs == 1 && m->inputs[0] == 0 && m->n_outputs == 1 && m->outputs[0] == 3);
    tfl_model_free(m);
}

static void test_valid_variants(void)
{
    tfl_model *m = NULL;
    /* No bias (-1), dilation 2, RELU6, SAME, stride 2. */
    forged f = base();
    static const int32_t no_bias[3] = {0, 1, -1};
    ref(f.op, 1, ints(3, no_bias));
    set(f.opts, 0, 1, TFL_PAD_SAME);
    set(f.opts, 1, 4, 2);
    set(f.opts, 3, 1, TFL_ACT_RELU6);
    set(f.opts, 4, 4, 2);
    set(f.opts, 5, 4, 3);
    REQUIRE_OK(read_forged(&f, &m));
    const tfl_operator *o = &m->operators[0];
    CHECK(o->inputs[2] == -1 && o->opt.conv.padding == TFL_PAD_SAME);
    CHECK(o->opt.conv.stride_w == 2 && o->opt.conv.stride_h == 1);
    CHECK(o->opt.conv.dilation_w == 2 && o->opt.conv.dilation_h == 3);
    CHECK(o->opt.conv.act == TFL_ACT_RELU6);
    tfl_model_free(m);

    /* Two inputs only (bias omitted entirely). */
    f = base();
    ref(f.op, 1, ints(2, op_in));
    REQUIRE_OK(read_forged(&f, &m));
    CHECK(m->operators[0].n_inputs == 2);
    tfl_model_free(m);

    /* An empty quantization table is not quantization. */
    f = base();
    ref(f.tensor[0], 4, table());
    REQUIRE_OK(read_forged(&f, &m));
    tfl_model_free(m);

    /* builtin_code (int32) wins over the deprecated byte when larger. */
    f = base();
    set(f.opcode, 0, 1, 0);
    set(f.opcode, 3, 4, TFL_CONV_2D);
    REQUIRE_OK(read_forged(&f, &m));
    CHECK(m->operators[0].opcode == TFL_CONV_2D);
    tfl_model_free(m);

    /* A constant stored after the flatbuffer (buffer offset/size). */
    f = base();
    unset(f.buffer[1], 0);
    set(f.buffer[1], 1, 8, 0);
    set(f.buffer[1], 2, 8, sizeof w_data);
    size_t data_at = finish(f.model); /* the data goes right after the flatbuffer */
    set(f.buffer[1], 1, 8, data_at);
    REQUIRE(finish(f.model) == data_at);
    memcpy(buf + data_at, w_data, sizeof w_data);
    REQUIRE_OK(tfl_model_read_memory(buf, data_at + sizeof w_data, "ext.tflite", &m));
    CHECK(m->tensors[1].data_size == sizeof w_data &&
          memcmp(m->tensors[1].data, w_data, sizeof w_data) == 0);
    tfl_model_free(m);
    /* ... and one running past the end. */
    CHECK_FAILS(tfl_model_read_memory(buf, data_at + sizeof w_data - 1, "ext.tflite", &m),
                OMMA_ERR_FORMAT, "buffer 1 holds 24 bytes at offset");
    CHECK(m == NULL);
}

/* Every op omma reads, with its options, accepted. */
static void test_every_op(void)
{
    static const struct {
        int code, opt_type, n_in;
    } ops[] = {
        {TFL_ADD, 11, 2},
        {TFL_CONCATENATION, 10, 2},
        {TFL_CONV_2D, 1, 3},
        {TFL_DEPTHWISE_CONV_2D, 2, 3},
        {TFL_DEQUANTIZE, 0, 1},
        {TFL_MAX_POOL_2D, 5, 1},
        {TFL_RELU, 0, 1},
        {TFL_RESHAPE, 17, 1},
        {TFL_RESIZE_BILINEAR, 15, 2},
        {TFL_PAD, 0, 2},
        {TFL_PRELU, 0, 2},
        {TFL_LOGISTIC, 0, 1},
        {TFL_DEPTH_TO_SPACE, 94, 1},
        {TFL_DENSIFY, 0, 1},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
        forged f = base();
        set(f.opcode, 0, 1, (uint64_t)ops[i].code);
        ref(f.op, 1, ints(ops[i].n_in, op_in));
        set(f.op, 3, 1, (uint64_t)ops[i].opt_type);
        f.opts = table();
        if (ops[i].code == TFL_DEPTHWISE_CONV_2D) {
            set(f.opts, 1, 4, 2);
            set(f.opts, 2, 4, 2);
            set(f.opts, 3, 4, 2);  /* depth multiplier */
            set(f.opts, 4, 1, TFL_ACT_RELU);
        } else if (ops[i].code == TFL_MAX_POOL_2D) {
            set(f.opts, 0, 1, TFL_PAD_VALID);
            set(f.opts, 1, 4, 2);
            set(f.opts, 2, 4, 3);
            set(f.opts, 3, 4, 4);
            set(f.opts, 4, 4, 5);
        } else if (ops[i].code == TFL_CONCATENATION) {
            set(f.opts, 0, 4, (uint64_t)(uint32_t)-1);
        } else if (ops[i].code == TFL_RESIZE_BILINEAR) {
            set(f.opts, 3, 1, 1);
        } else if (ops[i].code == TFL_CONV_2D) {
            set(f.opts, 1, 4, 1);
            set(f.opts, 2, 4, 1);
        } else if (ops[i].code == TFL_ADD) {
            set(f.opts, 0, 1, TFL_ACT_RELU);
        } else if (ops[i].code == TFL_DEPTH_TO_SPACE) {
            set(f.opts, 0, 4, 2);
        }
        if (ops[i].opt_type)
            ref(f.op, 4, f.opts);
        else
            unset(f.op, 4);
        tfl_model *m = NULL;
        omma_status st = read_forged(&f, &m);
        if (st != OMMA_OK)
            fprintf(stderr, "  %s: %s\n", tfl_opcode_name(ops[i].code), omma_last_error());
        REQUIRE(st == OMMA_OK);
        const tfl_operator *o = &m->operators[0];
        CHECK((int)o->opcode == ops[i].code && o->n_inputs == ops[i].n_in);
        switch (o->opcode) {
        case TFL_DEPTHWISE_CONV_2D:
            CHECK(o->opt.dwconv.depth_multiplier == 2 && o->opt.dwconv.stride_w == 2 &&
                  o->opt.dwconv.padding == TFL_PAD_SAME && o->opt.dwconv.act == TFL_ACT_RELU &&
                  o->opt.dwconv.dilation_h == 1);
            break;
        case TFL_MAX_POOL_2D:
            CHECK(o->opt.pool.padding == TFL_PAD_VALID && o->opt.pool.stride_w == 2 &&
                  o->opt.pool.stride_h == 3 && o->opt.pool.filter_w == 4 &&
                  o->opt.pool.filter_h == 5 && o->opt.pool.act == TFL_ACT_NONE);
            break;
        case TFL_CONCATENATION: CHECK(o->opt.concat.axis == -1); break;
        case TFL_RESIZE_BILINEAR:
            CHECK(!o->opt.resize.align_corners && o->opt.resize.half_pixel_centers);
            break;
        case TFL_ADD: CHECK(o->opt.add.act == TFL_ACT_RELU); break;
        case TFL_DEPTH_TO_SPACE:
            CHECK(o->opt.d2s.block_size == 2);
            break;
        default: break;
        }
        tfl_model_free(m);
    }
}

/* ---- sparse constants -------------------------------------------------------- */

/* w [3, 1, 1, 2] = {1, 0, 0, 4, 5, 0} stored sparse: dims 0..2 dense, the
 * last one CSR with 3 rows of segments {0, 1, 2, 3} (uint8) and indices
 * {0, 1, 0} (uint16), values {1, 4, 5}. */
static const float sparse_values[4] = {1, 4, 5, 7};

static void make_sparse(forged *f, const uint8_t *segs, const uint16_t *idx, int n_values,
                        const int32_t *order)
{
    f->buffer[1] = table();
    ref(f->buffer[1], 0, vec(sparse_values, (size_t)n_values * 4, 1));
    ref(f->model, 4, vref(3, f->buffer));
    fb *dims[4];
    for (int d = 0; d < 3; d++) {
        dims[d] = table();
        set(dims[d], 1, 4, (uint64_t)w_shape[d]);
    }
    dims[3] = table();
    set(dims[3], 0, 1, 1); /* SPARSE_CSR */
    set(dims[3], 2, 1, 3); /* Uint8Vector */
    fb *s = table();
    ref(s, 0, vec(segs, 4, 1));
    ref(dims[3], 3, s);
    set(dims[3], 4, 1, 2); /* Uint16Vector */
    fb *ix = table();
    ref(ix, 0, vec(idx, 3, 2));
    ref(dims[3], 5, ix);
    fb *sp = table();
    ref(sp, 0, ints(4, order));
    ref(sp, 2, vref(4, dims));
    ref(f->tensor[1], 6, sp);
}

static void test_sparse(void)
{
    static const uint8_t segs[4] = {0, 1, 2, 3}, bad_segs[4] = {0, 2, 1, 3};
    static const uint16_t idx[3] = {0, 1, 0}, far[3] = {0, 2, 0};
    static const int32_t order[4] = {0, 1, 2, 3}, swapped[4] = {1, 0, 2, 3};
    static const float dense[6] = {1, 0, 0, 4, 5, 0};
    forged f = base();
    make_sparse(&f, segs, idx, 3, order);
    tfl_model *m = NULL;
    REQUIRE_OK(read_forged(&f, &m));
    CHECK(m->tensors[1].data_size == sizeof dense &&
          memcmp(m->tensors[1].data, dense, sizeof dense) == 0);
    tfl_model_free(m);

    f = base();
    make_sparse(&f, segs, far, 3, order);
    EXPECT(f, OMMA_ERR_FORMAT, "sparse tensor 1 'w' level 3: index 2 at 1 is outside dimension 2");
    f = base();
    make_sparse(&f, bad_segs, idx, 3, order);
    EXPECT(f, OMMA_ERR_FORMAT, "sparse tensor 1 'w' level 3: segment 1 is [2, 1) of 3 indices");
    f = base();
    make_sparse(&f, segs, idx, 2, order);
    EXPECT(f, OMMA_ERR_FORMAT, "the indices place more than the 2 stored values");
    f = base();
    make_sparse(&f, segs, idx, 4, order);
    EXPECT(f, OMMA_ERR_FORMAT, "the indices place 3 of the 4 stored values");
    f = base();
    make_sparse(&f, segs, idx, 3, swapped);
    EXPECT(f, OMMA_ERR_UNSUPPORTED, "has a traversal order other than the tensor's own");
    f = base();
    ref(f.tensor[1], 6, table());
    EXPECT(f, OMMA_ERR_FORMAT, "sparse tensor 1 'w': 0 traversal dimensions");
}

/* ---- unsupported features --------------------------------------------------- */

static void test_unsupported(void)
{
    forged f = base();
    fb *q = table();
    static const float scale[1] = {0.5f};
    static const int64_t zero[1] = {3};
    ref(q, 2, vec(scale, 1, 4));
    ref(q, 3, vec(zero, 1, 8));
    ref(f.tensor[0], 4, q);
    EXPECT(f, OMMA_ERR_UNSUPPORTED,
           "forged.tflite: tensor 0 'x' is quantized (1 scales, 1 zero points)");

    f = base();
    set(f.opts, 3, 1, 4);
    EXPECT(f, OMMA_ERR_UNSUPPORTED, "forged.tflite: op 0 (CONV_2D): fused activation TANH (4)");
    set(f.opts, 3, 1, 2);
    EXPECT(f, OMMA_ERR_UNSUPPORTED, "op 0 (CONV_2D): fused activation RELU_N1_TO_1 (2)");

    f = base();
    fb *sg2[2] = {f.subgraph, f.subgraph};
    ref(f.model, 2, vref(2, sg2));
    EXPECT(f, OMMA_ERR_UNSUPPORTED, "forged.tflite: 2 subgraphs (omma runs models with one)");

    f = base();
    ref(f.opcode, 1, str("Convolution2DTransposeBias"));
    set(f.opcode, 0, 1, 32);
    EXPECT(f, OMMA_ERR_UNSUPPORTED,
           "op 0 (CUSTOM): custom operator 'Convolution2DTransposeBias' is not supported");

    f = base();
    static const uint8_t opts[3] = {1, 2, 3};
    ref(f.op, 5, vec(opts, 3, 1));
    EXPECT(f, OMMA_ERR_UNSUPPORTED, "op 0 (CONV_2D): custom options (3 bytes)");

    f = base();
    set(f.tensor[0], 5, 1, 1);
    EXPECT(f, OMMA_ERR_UNSUPPORTED, "tensor 0 'x' is a variable tensor");

    f = base();
    static const int32_t rank9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    ref(f.tensor[3], 0, ints(9, rank9));
    EXPECT(f, OMMA_ERR_UNSUPPORTED, "tensor 3 'y' has rank 9 (at most 8)");

    f = base();
    set(f.tensor[0], 1, 1, 9);
    EXPECT(f, OMMA_ERR_UNSUPPORTED, "tensor 0 'x' has type INT8 (9): quantized");

    f = base();
    unset(f.model, 0);
    EXPECT(f, OMMA_ERR_UNSUPPORTED, "schema version 0");

    f = base();
    static int32_t many[65];
    ref(f.op, 1, ints(65, many));
    EXPECT(f, OMMA_ERR_UNSUPPORTED, "op 0 has 65 inputs (omma reads at most 64)");

    f = base();
    set(f.opcode, 0, 1, 25);
    EXPECT(f, OMMA_ERR_UNSUPPORTED, "op 0 (SOFTMAX): operator not supported (builtin code 25)");

    /* MediaPipe's custom ops: version 2 only; options in flexbuffers. */
    f = base();
    ref(f.opcode, 1, str("Landmarks2TransformMatrix"));
    set(f.opcode, 0, 1, 32);
    EXPECT(f, OMMA_ERR_UNSUPPORTED,
           "op 0 (Landmarks2TransformMatrix): version 1 of custom operator "
           "'Landmarks2TransformMatrix' (2 is supported)");

    static const int32_t one_in[1] = {0};
    static const uint8_t bad_flex[3] = {1, 2, 3};
    f = base();
    ref(f.opcode, 1, str("Landmarks2TransformMatrix"));
    set(f.opcode, 0, 1, 32);
    set(f.opcode, 2, 4, 2);
    ref(f.op, 1, ints(1, one_in));
    unset(f.op, 3);
    unset(f.op, 4);
    ref(f.op, 5, vec(bad_flex, 3, 1));
    EXPECT(f, OMMA_ERR_FORMAT,
           "forged.tflite: op 0 (Landmarks2TransformMatrix) custom options: flexbuffer: bad "
           "root width at byte 2");
    f = base();
    ref(f.opcode, 1, str("TransformTensorBilinear"));
    set(f.opcode, 0, 1, 32);
    set(f.opcode, 2, 4, 2);
    unset(f.op, 3);
    unset(f.op, 4);
    EXPECT(f, OMMA_ERR_FORMAT, "op 0 (TransformTensorBilinear): has 3 inputs, expected 2");
}

/* Operators sharing one table (legal flatbuffers, never written by TFLite's
 * converter) cannot make the reader copy more operands than the file holds. */
static void test_shared_operators(void)
{
    forged f = base();
    fb *same[80];
    for (int i = 0; i < 80; i++)
        same[i] = f.op;
    ref(f.subgraph, 3, vref(80, same));
    size_t n = finish(f.model);
    REQUIRE(n / 4 < 80 * 4); /* 80 ops x 4 operands */
    tfl_model *m = (tfl_model *)(uintptr_t)1;
    CHECK_FAILS(read_forged(&f, &m), OMMA_ERR_FORMAT,
                "the operators name more operands than the file can hold");
    CHECK(m == NULL);
    /* A few shared ones are fine. */
    ref(f.subgraph, 3, vref(8, same));
    REQUIRE_OK(read_forged(&f, &m));
    CHECK(m->n_operators == 8 && m->operators[7].inputs[2] == 2);
    tfl_model_free(m);
}

/* ---- malformed models ---------------------------------------------------------- */

static void test_malformed_values(void)
{
    forged f = base();
    set(f.opts, 4, 4, 0);
    EXPECT(f, OMMA_ERR_FORMAT, "forged.tflite: op 0 (CONV_2D): dilation_w_factor 0 (must be >= 1)");
    f = base();
    set(f.opts, 2, 4, 0);
    EXPECT(f, OMMA_ERR_FORMAT, "op 0 (CONV_2D): stride_h 0 (must be >= 1)");
    f = base();
    unset(f.op, 4); /* no options table: strides default to 0 */
    EXPECT(f, OMMA_ERR_FORMAT, "op 0 (CONV_2D): stride_w 0");
    f = base();
    set(f.opts, 0, 1, 2);
    EXPECT(f, OMMA_ERR_FORMAT, "op 0 (CONV_2D): padding code 2");
    f = base();
    set(f.opts, 3, 1, 77);
    EXPECT(f, OMMA_ERR_FORMAT, "op 0 (CONV_2D): fused activation code 77");
    f = base();
    set(f.op, 3, 1, 5);
    EXPECT(f, OMMA_ERR_FORMAT, "op 0 (CONV_2D): builtin options of type 5, expected 1");

    f = base();
    ref(f.op, 1, ints(1, op_in));
    EXPECT(f, OMMA_ERR_FORMAT, "op 0 (CONV_2D): has 1 inputs, expected 2 to 3");
    f = base();
    static const int32_t two_out[2] = {3, 3};
    ref(f.op, 2, ints(2, two_out));
    EXPECT(f, OMMA_ERR_FORMAT, "op 0 (CONV_2D): has 2 outputs, expected 1");
    f = base();
    static const int32_t out4[1] = {4};
    ref(f.op, 2, ints(1, out4));
    EXPECT(f, OMMA_ERR_FORMAT, "op 0 (CONV_2D): output 0 names tensor 4 of 4");
    f = base();
    static const int32_t bad_in[3] = {0, -1, 2};
    ref(f.op, 1, ints(3, bad_in));
    EXPECT(f, OMMA_ERR_FORMAT, "op 0 (CONV_2D): input 1 names tensor -1 of 4");
    f = base();
    set(f.op, 0, 4, 1);
    EXPECT(f, OMMA_ERR_FORMAT, "op 0 opcode_index at offset");
    EXPECT(f, OMMA_ERR_FORMAT, "names operator code 1 of 1");
    f = base();
    ref(f.subgraph, 2, ints(1, out4));
    EXPECT(f, OMMA_ERR_FORMAT, "subgraph outputs 0 names tensor 4 of 4");

    /* Per-op option rules. */
    f = base();
    set(f.opcode, 0, 1, TFL_RESIZE_BILINEAR);
    ref(f.op, 1, ints(2, op_in));
    set(f.op, 3, 1, 15);
    f.opts = table();
    set(f.opts, 2, 1, 1);
    set(f.opts, 3, 1, 1);
    ref(f.op, 4, f.opts);
    EXPECT(f, OMMA_ERR_FORMAT, "op 0 (RESIZE_BILINEAR): align_corners and half_pixel_centers are both set");
    set(f.opts, 3, 1, 7);
    EXPECT(f, OMMA_ERR_FORMAT, "are not booleans");
    f = base();
    set(f.opcode, 0, 1, TFL_MAX_POOL_2D);
    ref(f.op, 1, ints(1, op_in));
    set(f.op, 3, 1, 5);
    f.opts = table();
    set(f.opts, 1, 4, 1);
    set(f.opts, 2, 4, 1);
    set(f.opts, 3, 4, 2);
    ref(f.op, 4, f.opts);
    EXPECT(f, OMMA_ERR_FORMAT, "op 0 (MAX_POOL_2D): filter_height 0 (must be >= 1)");
    f = base();
    set(f.opcode, 0, 1, TFL_DEPTHWISE_CONV_2D);
    set(f.op, 3, 1, 2);
    set(f.opts, 3, 4, (uint64_t)(uint32_t)-2);
    EXPECT(f, OMMA_ERR_FORMAT, "op 0 (DEPTHWISE_CONV_2D): depth_multiplier -2");
    f = base();
    set(f.opcode, 0, 1, TFL_CONCATENATION);
    set(f.op, 3, 1, 10);
    f.opts = table();
    set(f.opts, 0, 4, 9);
    ref(f.op, 4, f.opts);
    EXPECT(f, OMMA_ERR_FORMAT, "op 0 (CONCATENATION): axis 9");
    f = base();
    set(f.opcode, 0, 1, TFL_ADD);
    unset(f.op, 4);
    set(f.op, 3, 1, 0);
    EXPECT(f, OMMA_ERR_FORMAT, "op 0 (ADD): has 3 inputs, expected 2");
    f = base();
    set(f.opcode, 0, 1, TFL_RELU);
    unset(f.op, 4);
    set(f.op, 3, 1, 0);
    ref(f.op, 1, ints(2, op_in));
    EXPECT(f, OMMA_ERR_FORMAT, "op 0 (RELU): has 2 inputs, expected 1");
    set(f.opcode, 0, 1, 0x80); /* -128 in the int8 field, -5 in the int32 one */
    set(f.opcode, 3, 4, (uint32_t)-5);
    EXPECT(f, OMMA_ERR_FORMAT, "op 0 (UNKNOWN): builtin operator code -5");

    /* Tensors and buffers. */
    f = base();
    ref(f.buffer[2], 0, vec(b_data, 8, 1));
    EXPECT(f, OMMA_ERR_FORMAT, "forged.tflite: tensor 2 'b': buffer 2 holds 8 bytes, its shape of 3 "
           "elements of FLOAT32 needs 12");
    f = base();
    set(f.tensor[2], 1, 1, TFL_FLOAT16);
    EXPECT(f, OMMA_ERR_FORMAT, "needs 6");
    f = base();
    set(f.tensor[1], 2, 4, 7);
    EXPECT(f, OMMA_ERR_FORMAT, "tensor 1 'w' buffer field at offset");
    EXPECT(f, OMMA_ERR_FORMAT, "names buffer 7 of 3");
    f = base();
    static const int32_t neg[4] = {1, -1, 4, 3};
    ref(f.tensor[3], 0, ints(4, neg));
    EXPECT(f, OMMA_ERR_FORMAT, "tensor 3 'y' shape at offset");
    EXPECT(f, OMMA_ERR_FORMAT, "has dimension 1 = -1");
    f = base();
    static const int32_t huge[4] = {0x7fffffff, 0x7fffffff, 0x7fffffff, 0x7fffffff};
    ref(f.tensor[1], 0, ints(4, huge));
    EXPECT(f, OMMA_ERR_FORMAT, "tensor 1 'w': buffer 1 holds 24 bytes, its shape of more than");
    f = base();
    ref(f.model, 2, vref(0, NULL));
    EXPECT(f, OMMA_ERR_FORMAT, "forged.tflite: the model has no subgraph");
    f = base();
    unset(f.model, 2);
    EXPECT(f, OMMA_ERR_FORMAT, "the model has no subgraph");
}

/* Broken structure: each byte change names what and where. */
static void test_malformed_structure(void)
{
    tfl_model *m = (tfl_model *)(uintptr_t)1;
    char want[160];
    forged f = base();
    size_t n = finish(f.model);

    /* A name string whose NUL is gone. */
    size_t s = f.name_x->pos;
    buf[s + 5] = 'z';
    snprintf(want, sizeof want, "forged.tflite: tensor 0 name string at offset %zu is not "
             "NUL-terminated", s);
    CHECK_FAILS(tfl_model_read_memory(buf, n, "forged.tflite", &m), OMMA_ERR_FORMAT, want);
    buf[s + 5] = 0;
    /* Its length running past the end of the file. */
    put(s, 4000, 4);
    snprintf(want, sizeof want, "forged.tflite: tensor 0 name string at offset %zu (4000 x 1 "
             "bytes) runs past the end of the file (size %zu)", s, n);
    CHECK_FAILS(tfl_model_read_memory(buf, n, "forged.tflite", &m), OMMA_ERR_FORMAT, want);
    /* Exactly up to the last byte: no room for the NUL. */
    put(s, n - s - 4, 4);
    snprintf(want, sizeof want, "tensor 0 name string at offset %zu runs past the end of the file",
             s);
    CHECK_FAILS(tfl_model_read_memory(buf, n, "forged.tflite", &m), OMMA_ERR_FORMAT, want);
    put(s, 1, 4);

    /* The tensor's table declaring more bytes than the file has. */
    fb *t0 = f.tensor[0];
    put(t0->vt + 2, 0xfff0, 2);
    snprintf(want, sizeof want, "tensor 0 table at offset %zu declares 65520 bytes: runs past the "
             "end of the file", t0->pos);
    CHECK_FAILS(tfl_model_read_memory(buf, n, "forged.tflite", &m), OMMA_ERR_FORMAT, want);
    /* ... or fewer than its fields need. */
    put(t0->vt + 2, 8, 2);
    snprintf(want, sizeof want, "tensor 0 field name at offset");
    CHECK_FAILS(tfl_model_read_memory(buf, n, "forged.tflite", &m), OMMA_ERR_FORMAT, want);
    CHECK_FAILS(tfl_model_read_memory(buf, n, "forged.tflite", &m), OMMA_ERR_FORMAT,
                "lies outside its table (8 bytes");
    put(t0->vt + 2, 2, 2);
    CHECK_FAILS(tfl_model_read_memory(buf, n, "forged.tflite", &m), OMMA_ERR_FORMAT,
                "declares 2 bytes: smaller than its vtable offset");
    finish(f.model);

    /* Vtable: odd size, too small, out of the file, misaligned. */
    put(t0->vt, 7, 2);
    snprintf(want, sizeof want, "tensor 0 vtable at offset %zu has size 7: not an even size >= 4",
             t0->vt);
    CHECK_FAILS(tfl_model_read_memory(buf, n, "forged.tflite", &m), OMMA_ERR_FORMAT, want);
    put(t0->vt, 0xfffe, 2);
    CHECK_FAILS(tfl_model_read_memory(buf, n, "forged.tflite", &m), OMMA_ERR_FORMAT,
                "has size 65534: runs past the end of the file");
    finish(f.model);
    put(t0->pos, (uint64_t)(uint32_t)-100000, 4);
    snprintf(want, sizeof want, "tensor 0 table at offset %zu has its vtable at offset %zu, "
             "outside the file (size %zu)", t0->pos, t0->pos + 100000, n);
    CHECK_FAILS(tfl_model_read_memory(buf, n, "forged.tflite", &m), OMMA_ERR_FORMAT, want);
    put(t0->pos, t0->pos - t0->vt + 1, 4);
    CHECK_FAILS(tfl_model_read_memory(buf, n, "forged.tflite", &m), OMMA_ERR_FORMAT,
                "is not 2-byte aligned");
    finish(f.model);

    /* A field misaligned inside its table. */
    put(t0->vt + 4 + 2 * 3, 5, 2); /* name's offset */
    snprintf(want, sizeof want, "tensor 0 field name at offset %zu is not 4-byte aligned",
             t0->pos + 5);
    CHECK_FAILS(tfl_model_read_memory(buf, n, "forged.tflite", &m), OMMA_ERR_FORMAT, want);
    put(t0->vt + 4 + 2 * 3, 2, 2); /* over the vtable offset */
    CHECK_FAILS(tfl_model_read_memory(buf, n, "forged.tflite", &m), OMMA_ERR_FORMAT,
                "tensor 0 field name at offset");
    finish(f.model);

    /* A reference to a table, misaligned; and past the end. */
    fb *tensors = NULL; /* the vector of tensors: subgraph field 0 */
    for (int i = 0; i < f.subgraph->nf; i++)
        if (f.subgraph->f[i].id == 0)
            tensors = f.subgraph->f[i].ref;
    REQUIRE(tensors);
    size_t e0 = tensors->pos + 4;
    uint32_t saved = (uint32_t)(buf[e0] | buf[e0 + 1] << 8 | buf[e0 + 2] << 16 |
                                (uint32_t)buf[e0 + 3] << 24);
    put(e0, saved + 2, 4);
    snprintf(want, sizeof want, "tensor 0 reference at offset %zu points to offset %zu, not "
             "4-byte aligned", e0, e0 + saved + 2);
    CHECK_FAILS(tfl_model_read_memory(buf, n, "forged.tflite", &m), OMMA_ERR_FORMAT, want);
    put(e0, n - e0 - 2, 4);
    snprintf(want, sizeof want, "tensor 0 reference at offset %zu points to offset %zu, past the "
             "end of the file (size %zu)", e0, n - 2, n);
    CHECK_FAILS(tfl_model_read_memory(buf, n, "forged.tflite", &m), OMMA_ERR_FORMAT, want);
    put(e0, saved, 4);
    /* The vector's length larger than the file can hold. */
    put(tensors->pos, 0x40000000, 4);
    snprintf(want, sizeof want, "subgraph 0 tensors vector at offset %zu (1073741824 x 4 bytes) "
             "runs past the end of the file (size %zu)", tensors->pos, n);
    CHECK_FAILS(tfl_model_read_memory(buf, n, "forged.tflite", &m), OMMA_ERR_FORMAT, want);
    put(tensors->pos, 0xffffffff, 4);
    CHECK_FAILS(tfl_model_read_memory(buf, n, "forged.tflite", &m), OMMA_ERR_FORMAT,
                "(4294967295 x 4 bytes) runs past the end of the file");
    put(tensors->pos, 4, 4);
    REQUIRE_OK(tfl_model_read_memory(buf, n, "forged.tflite", &m));
    tfl_model_free(m);
}

/* Every byte of the valid model changed to 0x00, 0xff, and each bit flipped:
 * an error naming the file, or a consistent model. Never a crash (ASan). */
static void test_every_byte(void)
{
    forged f = base();
    size_t n = finish(f.model);
    uint8_t *orig = malloc(n);
    REQUIRE(orig);
    memcpy(orig, buf, n);
    int reads = 0, ok = 0, bad = 0;
    for (size_t p = 0; p < n; p++) {
        uint8_t vals[10] = {0x00, 0xff};
        for (int k = 0; k < 8; k++)
            vals[2 + k] = (uint8_t)(orig[p] ^ (1u << k));
        for (int k = 0; k < 10; k++) {
            if (vals[k] == orig[p])
                continue;
            uint8_t *b = malloc(n);
            REQUIRE(b);
            memcpy(b, orig, n);
            b[p] = vals[k];
            tfl_model *m = (tfl_model *)(uintptr_t)1;
            omma_status st = tfl_model_read_memory(b, n, "byte.tflite", &m);
            reads++;
            if (st == OMMA_OK) {
                ok++;
                bool sane = m && m->n_operators <= 1;
                for (int i = 0; sane && i < m->n_operators; i++) {
                    const tfl_operator *o = &m->operators[i];
                    for (int j = 0; j < o->n_inputs; j++)
                        sane = sane && o->inputs[j] >= -1 && o->inputs[j] < m->n_tensors;
                    sane = sane && o->n_outputs == 1 && o->outputs[0] >= 0 &&
                           o->outputs[0] < m->n_tensors;
                }
                for (int i = 0; sane && i < m->n_tensors; i++)
                    sane = !m->tensors[i].data ||
                           (m->tensors[i].data >= m->file &&
                            m->tensors[i].data + m->tensors[i].data_size <= m->file + n);
                if (!sane)
                    bad++;
                tfl_model_free(m);
            } else if (m != NULL || strncmp(omma_last_error(), "byte.tflite: ", 13) != 0 ||
                       (st != OMMA_ERR_FORMAT && st != OMMA_ERR_UNSUPPORTED)) {
                fprintf(stderr, "  byte %zu = %u: %s %s\n", p, vals[k], omma_status_str(st),
                        omma_last_error());
                bad++;
            }
            free(b);
        }
    }
    fprintf(stderr, "  %zu-byte model: %d single-byte changes, %d still read\n", n, reads, ok);
    CHECK(bad == 0);
    CHECK(reads > 8 * (int)n);
    free(orig);
}

int main(void)
{
    RUN(test_base_model);
    RUN(test_valid_variants);
    RUN(test_every_op);
    RUN(test_sparse);
    RUN(test_unsupported);
    RUN(test_shared_operators);
    RUN(test_malformed_values);
    RUN(test_malformed_structure);
    RUN(test_every_byte);
    return testing_finish();
}
