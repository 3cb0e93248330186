/* Load-time rewrites: each one, applied alone, must leave the results of
 * the graph the same as the original's, run through the CPU executor on
 * real inputs (the astronaut photo for the three models; pseudo-random data
 * for hand-built graphs that exercise the cases the models lack). The block
 * fusion (DW_PW_BLOCK) also runs after the others, as at load time, where
 * it takes the residual branches in. */
#include <stdlib.h>
#include <string.h>

#include "model/graph.h"
#include "model/rewrite.h"
#include "model/tflite.h"
#include "support/face_inputs.h"
#include "support/test_graph.h"
#include "testing.h"

#define TOL 1e-5

typedef omma_status (*rewrite_fn)(gr_graph *g, int *count);

/* Applies fn (all rewrites when NULL) to a copy of g and checks every
 * output of the copy against ref (g's outputs on input, computed once by the
 * caller) within TOL. Returns the count the rewrite reported (nodes removed
 * for all), or -1 on any failure. A rewrite that changed nothing is not run
 * again. */
static int check_same(const gr_graph *g, float **ref, rewrite_fn fn, int batch,
                      const float *input, const char *what)
{
    gr_graph *r = NULL;
    float *outs[GR_MAX_IO];
    int count = -1;
    if (gr_clone(g, &r) != OMMA_OK)
        return -1;
    omma_status st = fn ? fn(r, &count) : OMMA_OK;
    if (st == OMMA_OK && !fn) {
        rw_stats s;
        st = rw_apply_all(r, &s);
        count = s.nodes_before - s.nodes_after;
    }
    if (st == OMMA_OK)
        st = gr_validate(r);
    if (st != OMMA_OK) {
        fprintf(stderr, "%s: rewrite failed: %s\n", what, omma_last_error());
        gr_free(r);
        return -1;
    }
    if (count == 0) {
        fprintf(stderr, "  %s: no change (%d nodes)\n", what, r->n_nodes);
        gr_free(r);
        return 0;
    }
    int nodes = 0;
    if (tg_alloc_outputs(g, batch, outs) != 0 ||
        tg_run(r, false, batch, input, outs, &nodes) != OMMA_OK) {
        fprintf(stderr, "  %s: run failed: %s\n", what, omma_last_error());
        count = -1;
    }
    for (int o = 0; count >= 0 && o < g->n_outputs; o++) {
        size_t n = (size_t)batch * gr_tensor_elems(&g->tensors[g->outputs[o]]);
        double d = tg_max_rel_diff(outs[o], ref[o], n);
        fprintf(stderr, "  %s: %d -> %d nodes (count %d), output %d max rel diff %.3g\n", what,
                g->n_nodes, nodes, count, o, d);
        if (!(d <= TOL))
            count = -1;
    }
    tg_free_outputs(outs);
    gr_free(r);
    return count;
}

/* ---- the three models on the photo -------------------------------------- */

static gr_graph *load_graph(const char *path)
{
    tfl_model *m = NULL;
    gr_graph *g = NULL;
    if (tfl_model_read_file(path, &m) != OMMA_OK) {
        fprintf(stderr, "%s: %s\n", path, omma_last_error());
        return NULL;
    }
    if (gr_build_tflite(m, &g) != OMMA_OK)
        fprintf(stderr, "%s: %s\n", path, omma_last_error());
    tfl_model_free(m);
    return g;
}

static float *photo_input(int size, bool mesh)
{
    rgb_image img;
    if (rgb_image_load_png(FACE_PHOTO, &img) != OMMA_OK)
        return NULL;
    float *in = malloc((size_t)size * size * 3 * sizeof *in);
    if (in) {
        if (mesh)
            face_mesh_input(&img, FACE_CROP_CX, FACE_CROP_CY, FACE_CROP_SIDE, in);
        else
            face_detector_input(&img, size, in);
    }
    rgb_image_free(&img);
    return in;
}

typedef struct model_case {
    const char *path;
    int size;
    bool mesh;
    int dequantize, residual, activation, blocks, total_removed;
    int pads_left, pools_left; /* after the whole pipeline */
} model_case;

/* Expected counts: DEQUANTIZE ops in each file; residual ADDs (every ADD
 * adds a conv output without activation, except the full-range model's 3
 * feature-pyramid merges, ADD(RELU(conv), RESIZE(...)), where neither operand
 * is one); RELU/PRELU fused (after the DEQUANTIZE fold, since PRELU alphas
 * are fp16 constants too: into convs, or into the ADDs left); blocks: every
 * depthwise conv, each read by one 1x1 conv; nodes removed by the whole
 * pipeline (164 -> 27, 354 -> 57, 210 -> 25: each block also takes its
 * residual branch's channel PAD and 2x2 MAX_POOL_2D, so none is left). */
static const model_case models[] = {
    {FACE_MODEL_SHORT, 128, false, 74, 16, 17, 16, 164 - 27, 0, 0},
    {FACE_MODEL_FULL, 192, false, 178, 20, 47, 40, 354 - 57, 0, 0},
    {FACE_MODEL_MESH, 192, true, 113, 20, 23, 20, 210 - 25, 0, 0},
};

/* Every rewrite but the block fusion, in rw_apply_all's order: the graph the
 * block fusion sees at load time. */
static omma_status before_blocks(gr_graph *g)
{
    static const rewrite_fn order[] = {rw_fold_dequantize, rw_fold_pad, rw_fuse_bias,
                                       rw_fuse_residual, rw_fuse_activation};
    omma_status st = OMMA_OK;
    for (size_t k = 0; st == OMMA_OK && k < sizeof order / sizeof order[0]; k++)
        st = order[k](g, NULL);
    return st;
}

/* Node counts per op of g after the whole pipeline (a copy is rewritten). */
static int ops_after_all(const gr_graph *g, int *ops)
{
    gr_graph *r = NULL;
    int rc = -1;
    if (gr_clone(g, &r) == OMMA_OK && rw_apply_all(r, NULL) == OMMA_OK) {
        gr_op_counts(r, ops);
        rc = 0;
    }
    gr_free(r);
    return rc;
}

static void run_model_case(const model_case *mc)
{
    gr_graph *g = load_graph(mc->path);
    float *in = photo_input(mc->size, mc->mesh);
    float *ref[GR_MAX_IO] = {0};
    if (!g || !in || tg_alloc_outputs(g, 1, ref) != 0) {
        gr_free(g);
        free(in);
        REQUIRE(!"model, photo and buffers");
    }
    fprintf(stderr, "%s\n", mc->path);
    omma_status st = tg_run(g, false, 1, in, ref, NULL);
    CHECK(st == OMMA_OK);
    if (st == OMMA_OK) {
        CHECK(check_same(g, ref, rw_fold_dequantize, 1, in, "dequantize") == mc->dequantize);
        CHECK(check_same(g, ref, rw_fold_pad, 1, in, "pad") == 0); /* only channel PADs */
        CHECK(check_same(g, ref, rw_fuse_bias, 1, in, "bias") == 0);
        CHECK(check_same(g, ref, rw_fuse_residual, 1, in, "residual") == mc->residual);
        gr_graph *dq = NULL;
        if (gr_clone(g, &dq) == OMMA_OK && rw_fold_dequantize(dq, NULL) == OMMA_OK)
            CHECK(check_same(dq, ref, rw_fuse_activation, 1, in, "activation") ==
                  mc->activation);
        else
            CHECK(!"dequantized copy");
        gr_free(dq);
        /* Alone on the file's graph: plain DW -> 1x1 pairs, ADDs still apart. */
        CHECK(check_same(g, ref, rw_fuse_block, 1, in, "block") == mc->blocks);
        gr_graph *pre = NULL;
        if (gr_clone(g, &pre) == OMMA_OK && before_blocks(pre) == OMMA_OK)
            CHECK(check_same(pre, ref, rw_fuse_block, 1, in, "block after the others") ==
                  mc->blocks);
        else
            CHECK(!"rewritten copy");
        gr_free(pre);
        CHECK(check_same(g, ref, NULL, 1, in, "all") == mc->total_removed);
        int ops[GR_OP_COUNT];
        if (ops_after_all(g, ops) == 0) {
            CHECK(ops[GR_DWPW] == mc->blocks);
            CHECK(ops[GR_DWCONV2D] == 0);
            CHECK(ops[GR_PAD] == mc->pads_left);
            CHECK(ops[GR_MAXPOOL] == mc->pools_left);
        } else {
            CHECK(!"all rewrites");
        }
    }
    tg_free_outputs(ref);
    gr_free(g);
    free(in);
}

static void test_short_range_rewrites(void) { run_model_case(&models[0]); }
static void test_full_range_rewrites(void) { run_model_case(&models[1]); }
static void test_face_mesh_rewrites(void) { run_model_case(&models[2]); }

/* ---- hand-built graphs -------------------------------------------------- */

static gr_graph *begin(int h, int w, int c, int *x)
{
    gr_graph *g = NULL;
    if (gr_create(&g) != OMMA_OK)
        return NULL;
    *x = tg_act(g, "input", 1, h, w, c);
    g->n_inputs = 1;
    g->inputs[0] = *x;
    return g;
}

static void finish(gr_graph *g, int y)
{
    g->n_outputs = 1;
    g->outputs[0] = y;
}

static int pad(gr_graph *g, int x, int t, int b, int l, int r, int c0, int c1, const char *name)
{
    const gr_tensor *xt = &g->tensors[x];
    int d1 = xt->dims[1] + t + b, d2 = xt->dims[2] + l + r, d3 = xt->dims[3] + c0 + c1;
    gr_node n = tg_node(GR_PAD);
    n.p.pad.before[1] = t;
    n.p.pad.after[1] = b;
    n.p.pad.before[2] = l;
    n.p.pad.after[2] = r;
    n.p.pad.before[3] = c0;
    n.p.pad.after[3] = c1;
    return tg_unary(g, n, x, name, 1, d1, d2, d3);
}

static int relu(gr_graph *g, int x, const char *name)
{
    const gr_tensor *t = &g->tensors[x];
    return tg_unary(g, tg_node(GR_RELU), x, name, t->dims[0], t->dims[1], t->dims[2], t->dims[3]);
}

static int maxpool(gr_graph *g, int x, int k, int s, const char *name)
{
    const gr_tensor *t = &g->tensors[x];
    gr_node n = tg_node(GR_MAXPOOL);
    n.p.pool.win = (gr_window){.kh = k, .kw = k, .stride_h = s, .stride_w = s, .dil_h = 1,
                               .dil_w = 1};
    return tg_unary(g, n, x, name, 1, (t->dims[1] - k) / s + 1, (t->dims[2] - k) / s + 1,
                    t->dims[3]);
}

static int add(gr_graph *g, int a, int b, const char *name)
{
    const gr_tensor *t = &g->tensors[a];
    int y = tg_act(g, name, t->dims[0], t->dims[1], t->dims[2], t->dims[3]);
    gr_node n = tg_node(GR_ADD);
    n.n_in = 2;
    n.in[0] = a;
    n.in[1] = b;
    n.out = y;
    return gr_add_node(g, &n, NULL) == OMMA_OK ? y : -1;
}

#define BATCH 2

static float *random_input(const gr_graph *g, unsigned seed)
{
    size_t n = BATCH * gr_tensor_elems(&g->tensors[g->inputs[0]]);
    float *v = malloc(n * sizeof *v);
    if (v)
        tg_fill(v, n, seed, -1.0f, 1.0f);
    return v;
}

static int hand_case(gr_graph *g, rewrite_fn fn, const char *what)
{
    float *in = random_input(g, 7);
    float *ref[GR_MAX_IO] = {0};
    int count = -1;
    if (in && tg_alloc_outputs(g, BATCH, ref) == 0 &&
        tg_run(g, false, BATCH, in, ref, NULL) == OMMA_OK)
        count = check_same(g, ref, fn, BATCH, in, what);
    else
        fprintf(stderr, "  %s: reference run failed: %s\n", what, omma_last_error());
    tg_free_outputs(ref);
    free(in);
    gr_free(g);
    return count;
}

static void test_pad_into_conv(void)
{
    int x;
    gr_graph *g = begin(9, 9, 3, &x);
    REQUIRE(g);
    /* Uneven padding, stride 2, VALID conv: the folded window pads 1/2, 2/1. */
    int p = pad(g, x, 1, 2, 2, 1, 0, 0, "pad");
    finish(g, tg_conv(g, p, false, 5, 3, 3, 2, 0, 0, 0, 0, "conv", 3));
    CHECK(hand_case(g, rw_fold_pad, "pad -> conv") == 1);

    g = begin(8, 8, 4, &x);
    REQUIRE(g);
    /* Added to a depthwise conv's own SAME padding. */
    p = pad(g, x, 1, 1, 1, 1, 0, 0, "pad");
    finish(g, tg_conv(g, p, true, 4, 3, 3, 1, 1, 1, 1, 1, "dw", 4));
    CHECK(hand_case(g, rw_fold_pad, "pad -> depthwise") == 1);

    g = begin(8, 8, 4, &x);
    REQUIRE(g);
    /* Read by two convolutions (BlazePose's detector heads): into both. */
    p = pad(g, x, 1, 1, 1, 1, 0, 0, "pad");
    int a = tg_conv(g, p, true, 4, 3, 3, 2, 0, 0, 0, 0, "dw", 4);
    int b = tg_conv(g, p, false, 4, 3, 3, 2, 0, 0, 0, 0, "conv", 6);
    finish(g, add(g, a, b, "sum"));
    CHECK(hand_case(g, rw_fold_pad, "pad -> depthwise and conv") == 1);

    g = begin(8, 8, 4, &x);
    REQUIRE(g);
    /* One of its readers is no convolution: kept. */
    p = pad(g, x, 1, 1, 1, 1, 0, 0, "pad");
    finish(g, tg_conv(g, p, false, 4, 3, 3, 1, 0, 0, 0, 0, "conv", 8));
    g->n_outputs = 2;
    g->outputs[1] = relu(g, p, "relu");
    CHECK(hand_case(g, rw_fold_pad, "pad -> conv and relu") == 0);

    g = begin(8, 8, 4, &x);
    REQUIRE(g);
    /* Read by a convolution and a graph output: kept. */
    p = pad(g, x, 1, 1, 1, 1, 0, 0, "pad");
    finish(g, tg_conv(g, p, false, 4, 3, 3, 1, 0, 0, 0, 0, "conv", 9));
    g->n_outputs = 2;
    g->outputs[1] = p;
    CHECK(hand_case(g, rw_fold_pad, "pad -> conv and graph output") == 0);
}

static void test_pad_into_maxpool_when_legal(void)
{
    int x;
    gr_graph *g = begin(7, 7, 4, &x);
    REQUIRE(g);
    /* RELU output (>= 0), padding 1 < window 2: legal. */
    int p = pad(g, relu(g, x, "relu"), 0, 1, 0, 1, 0, 0, "pad");
    finish(g, maxpool(g, p, 2, 2, "pool"));
    CHECK(hand_case(g, rw_fold_pad, "relu -> pad -> maxpool") == 1);

    g = begin(7, 7, 4, &x);
    REQUIRE(g);
    /* The input can be negative: a padded zero could win the max. Kept. */
    p = pad(g, x, 0, 1, 0, 1, 0, 0, "pad");
    finish(g, maxpool(g, p, 2, 2, "pool"));
    CHECK(hand_case(g, rw_fold_pad, "pad -> maxpool (negative input)") == 0);

    g = begin(6, 6, 4, &x);
    REQUIRE(g);
    /* Padding 2 = window 2: a window would see padding only. Kept. */
    p = pad(g, relu(g, x, "relu"), 2, 0, 2, 0, 0, 0, "pad");
    finish(g, maxpool(g, p, 2, 2, "pool"));
    CHECK(hand_case(g, rw_fold_pad, "relu -> pad 2 -> maxpool 2") == 0);
}

static void test_channel_pad_kept(void)
{
    int x;
    gr_graph *g = begin(6, 6, 4, &x);
    REQUIRE(g);
    int p = pad(g, relu(g, x, "relu"), 0, 0, 0, 0, 0, 4, "pad");
    finish(g, tg_conv(g, p, false, 6, 1, 1, 1, 0, 0, 0, 0, "conv", 5));
    CHECK(hand_case(g, rw_fold_pad, "channel pad -> conv") == 0);
}

static int channel_const(gr_graph *g, int like, bool per_channel, unsigned seed)
{
    const gr_tensor *t = &g->tensors[like];
    int h = t->dims[1], w = t->dims[2], c = t->dims[3];
    float *v = malloc((size_t)h * w * c * sizeof *v);
    if (!v)
        return -1;
    tg_fill(v, (size_t)(per_channel ? c : h * w * c), seed, -0.5f, 0.5f);
    for (int k = c; per_channel && k < h * w * c; k++)
        v[k] = v[k % c];
    int dims[4] = {1, h, w, c}, id;
    omma_status st = gr_add_tensor(g, "const", 4, dims, GR_F32, v, (size_t)h * w * c * sizeof *v, &id);
    free(v);
    return st == OMMA_OK ? id : -1;
}

static void test_bias_fusion(void)
{
    int x;
    gr_graph *g = begin(6, 6, 3, &x);
    REQUIRE(g);
    int c = tg_conv(g, x, false, 5, 3, 3, 1, 1, 1, 1, 1, "conv", 6);
    finish(g, add(g, c, channel_const(g, c, true, 8), "biased"));
    CHECK(hand_case(g, rw_fuse_bias, "conv + per-channel constant") == 1);

    g = begin(6, 6, 3, &x);
    REQUIRE(g);
    c = tg_conv(g, x, true, 3, 3, 3, 1, 1, 1, 1, 1, "dw", 6);
    g->nodes[0].in[2] = -1; /* no bias of its own */
    finish(g, add(g, channel_const(g, c, true, 9), c, "biased"));
    CHECK(hand_case(g, rw_fuse_bias, "per-channel constant + depthwise without bias") == 1);

    g = begin(6, 6, 3, &x);
    REQUIRE(g);
    c = tg_conv(g, x, false, 5, 3, 3, 1, 1, 1, 1, 1, "conv", 6);
    finish(g, add(g, c, channel_const(g, c, false, 10), "biased"));
    CHECK(hand_case(g, rw_fuse_bias, "conv + position-varying constant") == 0);
}

static void test_residual_and_activation_fusion(void)
{
    int x;
    gr_graph *g = begin(8, 8, 4, &x);
    REQUIRE(g);
    /* The BlazeFace block: r = relu(x); y = relu(r + conv1x1(dw(r))). */
    int r = relu(g, x, "r");
    int d = tg_conv(g, r, true, 4, 3, 3, 1, 1, 1, 1, 1, "dw", 11);
    int c = tg_conv(g, d, false, 4, 1, 1, 1, 0, 0, 0, 0, "pw", 12);
    finish(g, relu(g, add(g, r, c, "sum"), "y"));
    CHECK(hand_case(g, rw_fuse_residual, "residual alone") == 1);

    g = begin(8, 8, 4, &x);
    REQUIRE(g);
    r = relu(g, x, "r");
    d = tg_conv(g, r, true, 4, 3, 3, 1, 1, 1, 1, 1, "dw", 11);
    c = tg_conv(g, d, false, 4, 1, 1, 1, 0, 0, 0, 0, "pw", 12);
    finish(g, relu(g, add(g, r, c, "sum"), "y"));
    /* 5 -> 2 nodes: relu, then dw + pw (+ residual, relu) as one block. */
    CHECK(hand_case(g, NULL, "residual then activation, then block") == 3);

    g = begin(8, 8, 4, &x);
    REQUIRE(g);
    /* The conv output is read twice: no residual fusion. */
    c = tg_conv(g, x, false, 4, 1, 1, 1, 0, 0, 0, 0, "pw", 13);
    finish(g, add(g, add(g, x, c, "sum"), c, "sum2"));
    CHECK(hand_case(g, rw_fuse_residual, "conv with two readers") == 0);

    g = begin(8, 8, 4, &x);
    REQUIRE(g);
    /* The conv has its own activation: act(conv) + x != act(conv + x). */
    c = tg_conv(g, x, false, 4, 1, 1, 1, 0, 0, 0, 0, "pw", 14);
    g->nodes[0].p.conv.act = GR_ACT_RELU;
    finish(g, add(g, x, c, "sum"));
    CHECK(hand_case(g, rw_fuse_residual, "conv with activation") == 0);
}

static void test_prelu_fusion(void)
{
    int x;
    gr_graph *g = begin(8, 8, 4, &x);
    REQUIRE(g);
    int c = tg_conv(g, x, false, 6, 3, 3, 2, 0, 0, 1, 1, "conv", 15);
    gr_node p = tg_node(GR_PRELU);
    p.n_in = 2;
    p.in[1] = tg_const(g, "alpha", 1, 1, 6, 0, 16, 0.0f, 0.5f);
    finish(g, tg_unary(g, p, c, "prelu", 1, 4, 4, 6));
    CHECK(hand_case(g, rw_fuse_activation, "conv -> prelu") == 1);
}

/* ---- depthwise + pointwise blocks ---------------------------------------- */

/* A 1x1 stride-1 convolution of x to cout channels. */
static int pw(gr_graph *g, int x, int cout, const char *name, unsigned seed)
{
    return tg_conv(g, x, false, cout, 1, 1, 1, 0, 0, 0, 0, name, seed);
}

/* A k x k depthwise convolution, SAME padding (TFLite's split), stride s. */
static int dw(gr_graph *g, int x, int k, int s, const char *name, unsigned seed)
{
    const gr_tensor *t = &g->tensors[x];
    int pads[2][2];
    for (int d = 0; d < 2; d++) {
        int in = t->dims[1 + d], out = (in + s - 1) / s;
        int total = (out - 1) * s + k - in;
        if (total < 0)
            total = 0;
        pads[d][0] = total / 2;
        pads[d][1] = total - total / 2;
    }
    return tg_conv(g, x, true, 0, k, k, s, pads[0][0], pads[1][0], pads[0][1], pads[1][1], name,
                   seed);
}

static int prelu(gr_graph *g, int x, const char *name, unsigned seed)
{
    const gr_tensor *t = &g->tensors[x];
    int d1 = t->dims[1], d2 = t->dims[2], d3 = t->dims[3];
    gr_node n = tg_node(GR_PRELU);
    n.n_in = 2;
    n.in[1] = tg_const(g, "alpha", d3, 0, 0, 0, seed, 0.0f, 0.5f);
    return tg_unary(g, n, x, name, 1, d1, d2, d3);
}

/* What a block case should end as after the whole pipeline. */
typedef struct block_want {
    int blocks;   /* GR_DWPW nodes (= blocks_fused) */
    int nodes;    /* nodes left */
    int pooled;   /* blocks with pool_residual */
    int residual_channels; /* of the first block's residual, 0 = none */
} block_want;

/* Runs the whole pipeline on g (consumed): the results must match the
 * unrewritten graph's at batch 2 (hand_case), and what is left must be
 * what `want` says. */
static void block_case(gr_graph *g, block_want want, const char *what)
{
    REQUIRE(g);
    int before = g->n_nodes;
    gr_graph *r = NULL;
    rw_stats st = {0};
    REQUIRE_OK(gr_clone(g, &r));
    omma_status rc = rw_apply_all(r, &st);
    if (rc != OMMA_OK) {
        fprintf(stderr, "  %s: %s\n", what, omma_last_error());
        CHECK(rc == OMMA_OK);
        gr_free(r);
        gr_free(g);
        return;
    }
    int pooled = 0, rch = -1;
    for (int i = 0; i < r->n_nodes; i++) {
        const gr_node *n = &r->nodes[i];
        if (n->op != GR_DWPW)
            continue;
        pooled += n->p.conv.pool_residual;
        if (rch < 0)
            rch = n->p.conv.residual >= 0 ? r->tensors[n->p.conv.residual].dims[3] : 0;
    }
    fprintf(stderr, "  %s: %d blocks, %d -> %d nodes, %d pooled, residual channels %d\n", what,
            st.blocks_fused, before, r->n_nodes, pooled, rch);
    CHECK(st.blocks_fused == want.blocks);
    CHECK(r->n_nodes == want.nodes);
    CHECK(pooled == want.pooled);
    if (want.blocks)
        CHECK(rch == want.residual_channels);
    gr_free(r);
    CHECK(hand_case(g, NULL, what) == before - want.nodes);
}

static void test_block_residual_forms(void)
{
    int x;
    gr_graph *g = begin(8, 8, 4, &x);
    REQUIRE(g);
    /* No residual: dw 3x3 -> 1x1 to 6 channels, the block is the output. */
    finish(g, pw(g, dw(g, x, 3, 1, "dw", 20), 6, "pw", 21));
    block_case(g, (block_want){1, 1, 0, 0}, "block without residual");

    g = begin(8, 8, 4, &x);
    REQUIRE(g);
    /* Identity: r = relu(x); y = relu(r + pw(dw(r))), dw 3x3. */
    int r = relu(g, x, "r");
    int c = pw(g, dw(g, r, 3, 1, "dw", 22), 4, "pw", 23);
    finish(g, relu(g, add(g, r, c, "sum"), "y"));
    block_case(g, (block_want){1, 2, 0, 4}, "block, identity residual");

    g = begin(8, 8, 4, &x);
    REQUIRE(g);
    /* Channel PAD: y = relu(pw(dw(r)) + pad(r, 4 -> 7 channels)), the PAD
     * placed before the block. */
    r = relu(g, x, "r");
    int p = pad(g, r, 0, 0, 0, 0, 0, 3, "pad");
    c = pw(g, dw(g, r, 3, 1, "dw", 24), 7, "pw", 25);
    finish(g, relu(g, add(g, c, p, "sum"), "y"));
    block_case(g, (block_want){1, 2, 0, 4}, "block, PAD residual");

    g = begin(8, 8, 4, &x);
    REQUIRE(g);
    /* MAX_POOL_2D: stride-2 dw (8 -> 4), y = relu(pool(r) + pw(dw(r))). */
    r = relu(g, x, "r");
    c = pw(g, dw(g, r, 3, 2, "dw", 26), 4, "pw", 27);
    int m = maxpool(g, r, 2, 2, "pool");
    finish(g, relu(g, add(g, m, c, "sum"), "y"));
    block_case(g, (block_want){1, 2, 1, 4}, "block, MAX_POOL residual");

    g = begin(8, 8, 4, &x);
    REQUIRE(g);
    /* The models' down-sampling block: PAD(MAX_POOL(r)) to 8 channels,
     * PRELU; the input is not RELU'd, so negative maxima count. */
    m = maxpool(g, x, 2, 2, "pool");
    p = pad(g, m, 0, 0, 0, 0, 0, 4, "pad");
    c = pw(g, dw(g, x, 3, 2, "dw", 28), 8, "pw", 29);
    finish(g, prelu(g, add(g, c, p, "sum"), "y", 30));
    block_case(g, (block_want){1, 1, 1, 4}, "block, PAD(MAX_POOL) residual, PRELU");

    g = begin(12, 10, 3, &x);
    REQUIRE(g);
    /* Two blocks in a row, stride 2 then 1, on a non-square input. */
    c = pw(g, dw(g, x, 3, 2, "dw1", 31), 5, "pw1", 32);
    r = relu(g, c, "r");
    c = pw(g, dw(g, r, 3, 1, "dw2", 33), 5, "pw2", 34);
    finish(g, relu(g, add(g, r, c, "sum"), "y"));
    block_case(g, (block_want){2, 2, 0, 0}, "two blocks");
}

static void test_block_not_fused(void)
{
    int x;
    gr_graph *g = begin(8, 8, 4, &x);
    REQUIRE(g);
    /* The depthwise output is read twice (the 1x1 conv and the ADD). */
    int d = dw(g, x, 3, 1, "dw", 40);
    finish(g, add(g, pw(g, d, 4, "pw", 41), d, "sum"));
    block_case(g, (block_want){0, 2, 0, 0}, "dw output read twice");

    g = begin(8, 8, 4, &x);
    REQUIRE(g);
    /* A stride-2 1x1 conv is no pointwise tail. */
    finish(g, tg_conv(g, dw(g, x, 3, 1, "dw", 42), false, 6, 1, 1, 2, 0, 0, 0, 0, "conv", 43));
    block_case(g, (block_want){0, 2, 0, 0}, "1x1 conv at stride 2");

    g = begin(8, 8, 4, &x);
    REQUIRE(g);
    /* A 3x3 conv after the depthwise one. */
    finish(g, tg_conv(g, dw(g, x, 3, 1, "dw", 44), false, 6, 3, 3, 1, 1, 1, 1, 1, "conv", 45));
    block_case(g, (block_want){0, 2, 0, 0}, "3x3 conv after depthwise");

    g = begin(8, 8, 4, &x);
    REQUIRE(g);
    /* Depth multiplier 2: the depthwise conv makes 8 channels of 4. */
    d = dw(g, x, 3, 1, "dw", 46);
    gr_node *n = &g->nodes[0];
    n->p.conv.depth_multiplier = 2;
    n->in[1] = tg_const(g, "filter2", 1, 3, 3, 8, 47, -0.3f, 0.3f);
    n = &g->nodes[0];
    n->in[2] = tg_const(g, "bias2", 8, 0, 0, 0, 48, -0.2f, 0.2f);
    g->tensors[d].dims[3] = 8;
    finish(g, pw(g, d, 6, "pw", 49));
    REQUIRE_OK(gr_validate(g));
    block_case(g, (block_want){0, 2, 0, 0}, "depth multiplier 2");

    g = begin(8, 8, 4, &x);
    REQUIRE(g);
    /* The depthwise conv has an activation of its own (RELU fused into it). */
    finish(g, pw(g, relu(g, dw(g, x, 3, 1, "dw", 50), "r"), 6, "pw", 51));
    block_case(g, (block_want){0, 2, 0, 0}, "depthwise with its own RELU");

    g = begin(2, 2, GR_DWPW_MAX_CHANNELS, &x);
    REQUIRE(g);
    /* The most channels a block takes, then one more. */
    finish(g, pw(g, dw(g, x, 3, 1, "dw", 52), 4, "pw", 53));
    block_case(g, (block_want){1, 1, 0, 0}, "GR_DWPW_MAX_CHANNELS channels");
    g = begin(2, 2, GR_DWPW_MAX_CHANNELS + 1, &x);
    REQUIRE(g);
    finish(g, pw(g, dw(g, x, 3, 1, "dw", 54), 4, "pw", 55));
    block_case(g, (block_want){0, 2, 0, 0}, "GR_DWPW_MAX_CHANNELS + 1 channels");
    /* The pointwise side's limits: weights, output channels; the window. */
    g = begin(2, 2, 384, &x);
    REQUIRE(g);
    finish(g, pw(g, dw(g, x, 3, 1, "dw", 56), GR_DWPW_MAX_WEIGHTS / 384, "pw", 57));
    block_case(g, (block_want){1, 1, 0, 0}, "GR_DWPW_MAX_WEIGHTS weights");
    g = begin(2, 2, 384, &x);
    REQUIRE(g);
    finish(g, pw(g, dw(g, x, 3, 1, "dw", 58), GR_DWPW_MAX_WEIGHTS / 384 + 1, "pw", 59));
    block_case(g, (block_want){0, 2, 0, 0}, "GR_DWPW_MAX_WEIGHTS + 384 weights");
    g = begin(2, 2, 8, &x);
    REQUIRE(g);
    finish(g, pw(g, dw(g, x, 3, 1, "dw", 60), GR_DWPW_MAX_CHANNELS + 2, "pw", 61));
    block_case(g, (block_want){0, 2, 0, 0}, "GR_DWPW_MAX_CHANNELS + 2 output channels");
    g = begin(6, 6, 8, &x);
    REQUIRE(g);
    finish(g, pw(g, dw(g, x, 5, 1, "dw", 62), 8, "pw", 63));
    block_case(g, (block_want){0, 2, 0, 0}, "a 5x5 depthwise window");
}

static void test_block_residual_kept(void)
{
    int x;
    gr_graph *g = begin(8, 8, 4, &x);
    REQUIRE(g);
    /* The pool's output is also a graph output: the PAD is absorbed, the
     * pool stays, the block adds its 4 channels to 8 (zeros beyond). */
    int m = maxpool(g, x, 2, 2, "pool");
    int p = pad(g, m, 0, 0, 0, 0, 0, 4, "pad");
    int c = pw(g, dw(g, x, 3, 2, "dw", 60), 8, "pw", 61);
    finish(g, relu(g, add(g, c, p, "sum"), "y"));
    g->outputs[g->n_outputs++] = m;
    block_case(g, (block_want){1, 2, 0, 4}, "pool read twice");

    g = begin(8, 8, 4, &x);
    REQUIRE(g);
    /* The PAD's output is also a graph output: neither is absorbed. */
    m = maxpool(g, x, 2, 2, "pool");
    p = pad(g, m, 0, 0, 0, 0, 0, 4, "pad");
    c = pw(g, dw(g, x, 3, 2, "dw", 62), 8, "pw", 63);
    finish(g, relu(g, add(g, c, p, "sum"), "y"));
    g->outputs[g->n_outputs++] = p;
    block_case(g, (block_want){1, 3, 0, 8}, "pad read twice");

    g = begin(8, 8, 4, &x);
    REQUIRE(g);
    /* A PAD of H (rows of zeros) is no channel PAD: kept, and so is the
     * conv before it (its output is the PAD's input). */
    int s = tg_conv(g, x, false, 4, 3, 1, 1, 0, 0, 0, 0, "rows", 64); /* [1, 6, 8, 4] */
    p = pad(g, s, 1, 1, 0, 0, 0, 0, "pad");
    c = pw(g, dw(g, x, 3, 1, "dw", 65), 4, "pw", 66);
    finish(g, add(g, c, p, "sum"));
    block_case(g, (block_want){1, 3, 0, 4}, "PAD of H kept");

    g = begin(8, 8, 4, &x);
    REQUIRE(g);
    /* A PAD that puts the new channels first is kept. */
    m = maxpool(g, x, 2, 2, "pool");
    p = pad(g, m, 0, 0, 0, 0, 2, 2, "pad");
    c = pw(g, dw(g, x, 3, 2, "dw", 67), 8, "pw", 68);
    finish(g, add(g, c, p, "sum"));
    block_case(g, (block_want){1, 3, 0, 8}, "PAD of leading channels kept");

    g = begin(9, 9, 4, &x);
    REQUIRE(g);
    /* A pool of a 9x9 input drops the last row and column: not absorbed
     * (the block's pooled residual is exactly twice its size). */
    m = maxpool(g, x, 2, 2, "pool"); /* [1, 4, 4, 4] */
    c = pw(g, tg_conv(g, x, true, 4, 3, 3, 2, 0, 0, 0, 0, "dw", 69), 4, "pw", 70);
    finish(g, add(g, c, m, "sum"));
    block_case(g, (block_want){1, 2, 0, 4}, "pool of an odd size kept");

    g = begin(8, 8, 4, &x);
    REQUIRE(g);
    /* A 3x3 stride-2 pool is not the absorbed 2x2 one. */
    int r = relu(g, x, "r");
    gr_node pn = tg_node(GR_MAXPOOL);
    pn.p.pool.win = (gr_window){.kh = 3, .kw = 3, .stride_h = 2, .stride_w = 2, .dil_h = 1,
                                .dil_w = 1, .pad_bottom = 1, .pad_right = 1};
    m = tg_unary(g, pn, r, "pool", 1, 4, 4, 4);
    c = pw(g, dw(g, r, 3, 2, "dw", 71), 4, "pw", 72);
    finish(g, add(g, c, m, "sum"));
    block_case(g, (block_want){1, 3, 0, 4}, "3x3 pool kept");
}

int main(void)
{
    RUN(test_pad_into_conv);
    RUN(test_pad_into_maxpool_when_legal);
    RUN(test_channel_pad_kept);
    RUN(test_bias_fusion);
    RUN(test_residual_and_activation_fusion);
    RUN(test_prelu_fusion);
    RUN(test_block_residual_forms);
    RUN(test_block_not_fused);
    RUN(test_block_residual_kept);
    RUN(test_short_range_rewrites);
    RUN(test_full_range_rewrites);
    RUN(test_face_mesh_rewrites);
    return testing_finish();
}
