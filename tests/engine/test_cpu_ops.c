/* The CPU reference ops on small hand-computed cases, exact values: conv
 * with SAME / VALID / stride-2 padding split, OHWI layout, dilation,
 * epilogue order (bias, residual, then activation), depthwise with a depth
 * multiplier, the depthwise + pointwise block with a pooled, narrower
 * residual, max-pool ignoring padded cells, RESIZE_BILINEAR in its three
 * modes, PAD on channels, CONCATENATION, PRELU, ADD with a constant,
 * DEQUANTIZE, LOGISTIC, DEPTH_TO_SPACE over a table of shapes and blocks;
 * batch independence; argument errors. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cpu_ops.h"
#include "model/graph.h"
#include "testing.h"

static int tensor(gr_graph *g, const char *name, int rank, int d0, int d1, int d2, int d3,
                  const float *data)
{
    int dims[4] = {d0, d1, d2, d3}, idx = -1;
    size_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    if (gr_add_tensor(g, name, rank, dims, GR_F32, data, data ? n * sizeof(float) : 0, &idx))
        return -1;
    return idx;
}

static int act4(gr_graph *g, const char *name, int d0, int d1, int d2, int d3)
{
    return tensor(g, name, 4, d0, d1, d2, d3, NULL);
}

static gr_node node(gr_op op, int out)
{
    gr_node n;
    memset(&n, 0, sizeof n);
    n.op = op;
    n.out = out;
    n.src_index = 7;
    for (int i = 0; i < GR_MAX_INPUTS; i++)
        n.in[i] = -1;
    if (op == GR_CONV2D || op == GR_DWCONV2D || op == GR_DWPW) {
        n.p.conv.residual = -1;
        n.p.conv.alpha = -1;
        n.p.conv.depth_multiplier = 1;
    }
    if (op == GR_ADD)
        n.p.add.alpha = -1;
    return n;
}

static gr_window window(int k, int stride, int pt, int pl, int pb, int pr)
{
    gr_window w = {.kh = k, .kw = k, .stride_h = stride, .stride_w = stride, .dil_h = 1,
                   .dil_w = 1, .pad_top = pt, .pad_left = pl, .pad_bottom = pb,
                   .pad_right = pr};
    return w;
}

static int expect_exact(const float *got, const float *want, int n, const char *what)
{
    int bad = 0;
    for (int i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
            if (bad++ < 8)
                fprintf(stderr, "  %s[%d] = %.9g, expected %.9g\n", what, i, got[i], want[i]);
        }
    return bad == 0;
}

static const float seq9[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
static const float ones9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};

/* 3x3 all-ones filter, SAME (1 pixel each side), stride 1, bias 1. */
static void test_conv_same(void)
{
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    static const float bias[1] = {1};
    int x = act4(g, "x", 1, 3, 3, 1), y = act4(g, "y", 1, 3, 3, 1);
    int w = tensor(g, "w", 4, 1, 3, 3, 1, ones9), b = tensor(g, "b", 1, 1, 0, 0, 0, bias);
    gr_node n = node(GR_CONV2D, y);
    n.n_in = 3;
    n.in[0] = x, n.in[1] = w, n.in[2] = b;
    n.p.conv.win = window(3, 1, 1, 1, 1, 1);
    const float *in[3] = {seq9, NULL, NULL};
    float out[9];
    REQUIRE_OK(cpu_op_run(g, &n, 1, in, NULL, out));
    static const float want[9] = {13, 22, 17, 28, 46, 34, 25, 40, 29};
    CHECK(expect_exact(out, want, 9, "conv same"));
    gr_free(g);
}

/* Stride 2 SAME on 4x4 with a 3x3 window: TFLite puts the one padded row
 * and column after (bottom/right), none before. */
static void test_conv_stride2_split(void)
{
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    float xv[16];
    for (int i = 0; i < 16; i++)
        xv[i] = (float)(i + 1);
    int x = act4(g, "x", 1, 4, 4, 1), y = act4(g, "y", 1, 2, 2, 1);
    int w = tensor(g, "w", 4, 1, 3, 3, 1, ones9);
    gr_node n = node(GR_CONV2D, y);
    n.n_in = 3;
    n.in[0] = x, n.in[1] = w;
    n.p.conv.win = window(3, 2, 0, 0, 1, 1);
    const float *in[3] = {xv, NULL, NULL};
    float out[4];
    REQUIRE_OK(cpu_op_run(g, &n, 1, in, NULL, out));
    /* Windows rows/cols {0,1,2} and {2,3,pad}. */
    static const float want[4] = {54, 45, 72, 54};
    CHECK(expect_exact(out, want, 4, "conv stride 2"));

    /* The same with a filter that only keeps its top-left tap: x[2oy][2ox]. */
    static const float tap[9] = {1, 0, 0, 0, 0, 0, 0, 0, 0};
    int w2 = tensor(g, "tap", 4, 1, 3, 3, 1, tap);
    n.in[1] = w2;
    REQUIRE_OK(cpu_op_run(g, &n, 1, in, NULL, out));
    static const float want2[4] = {1, 3, 9, 11};
    CHECK(expect_exact(out, want2, 4, "conv stride 2 tap"));
    gr_free(g);
}

/* VALID, 2 input and 2 output channels: the OHWI filter layout, bias, RELU. */
static void test_conv_valid_ohwi(void)
{
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    float xv[18];
    for (int i = 0; i < 9; i++) {
        xv[2 * i] = (float)(i + 1); /* channel 0: 1..9 */
        xv[2 * i + 1] = 10;         /* channel 1: 10 */
    }
    /* [Cout=2][kh=2][kw=2][Cin=2] */
    static const float wv[16] = {
        1, 0, 1, 0, 1, 0, 1, 0, /* out 0: sums channel 0 */
        0, 1, 0, 2, 0, 3, 0, 4, /* out 1: channel 1 weighted 1..4 */
    };
    static const float bias[2] = {-13, -99};
    int x = act4(g, "x", 1, 3, 3, 2), y = act4(g, "y", 1, 2, 2, 2);
    int w = tensor(g, "w", 4, 2, 2, 2, 2, wv), b = tensor(g, "b", 1, 2, 0, 0, 0, bias);
    gr_node n = node(GR_CONV2D, y);
    n.n_in = 3;
    n.in[0] = x, n.in[1] = w, n.in[2] = b;
    n.p.conv.win = window(2, 1, 0, 0, 0, 0);
    const float *in[3] = {xv, NULL, NULL};
    float out[8];
    REQUIRE_OK(cpu_op_run(g, &n, 1, in, NULL, out));
    static const float want[8] = {-1, 1, 3, 1, 11, 1, 15, 1};
    CHECK(expect_exact(out, want, 8, "conv valid"));
    n.p.conv.act = GR_ACT_RELU;
    REQUIRE_OK(cpu_op_run(g, &n, 1, in, NULL, out));
    static const float want_relu[8] = {0, 1, 3, 1, 11, 1, 15, 1};
    CHECK(expect_exact(out, want_relu, 8, "conv valid relu"));
    /* The filter and bias may also come as buffers (computed constants). */
    static const float bias2[2] = {0, 0};
    const float *in2[3] = {xv, wv, bias2};
    n.p.conv.act = GR_ACT_NONE;
    REQUIRE_OK(cpu_op_run(g, &n, 1, in2, NULL, out));
    static const float want_nob[8] = {12, 100, 16, 100, 24, 100, 28, 100};
    CHECK(expect_exact(out, want_nob, 8, "conv given buffers"));
    gr_free(g);
}

/* 3x3 filter with dilation 2 on 5x5, VALID: one output, the 9 cells at even
 * coordinates. */
static void test_conv_dilation(void)
{
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    float xv[25];
    for (int i = 0; i < 25; i++)
        xv[i] = (float)(i + 1);
    int x = act4(g, "x", 1, 5, 5, 1), y = act4(g, "y", 1, 1, 1, 1);
    int w = tensor(g, "w", 4, 1, 3, 3, 1, ones9);
    gr_node n = node(GR_CONV2D, y);
    n.n_in = 3;
    n.in[0] = x, n.in[1] = w;
    n.p.conv.win = window(3, 1, 0, 0, 0, 0);
    n.p.conv.win.dil_h = n.p.conv.win.dil_w = 2;
    const float *in[3] = {xv, NULL, NULL};
    float out[1];
    REQUIRE_OK(cpu_op_run(g, &n, 1, in, NULL, out));
    CHECK(out[0] == 1 + 3 + 5 + 11 + 13 + 15 + 21 + 23 + 25);
    gr_free(g);
}

/* y = act(conv + bias + residual): the residual is added before the
 * activation, for NONE, RELU6 and PRELU. */
static void test_conv_epilogue(void)
{
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    static const float two[1] = {2}, one[1] = {1}, quarter[1] = {0.25f};
    int x = act4(g, "x", 1, 1, 4, 1), r = act4(g, "r", 1, 1, 4, 1), y = act4(g, "y", 1, 1, 4, 1);
    int w = tensor(g, "w", 4, 1, 1, 1, 1, two), b = tensor(g, "b", 1, 1, 0, 0, 0, one);
    int a = tensor(g, "alpha", 1, 1, 0, 0, 0, quarter);
    gr_node n = node(GR_CONV2D, y);
    n.n_in = 3;
    n.in[0] = x, n.in[1] = w, n.in[2] = b;
    n.p.conv.win = window(1, 1, 0, 0, 0, 0);
    n.p.conv.residual = r;
    static const float xv[4] = {-3, 0, 1, 4}, rv[4] = {1, -2, 0.5f, 0};
    const float *in[3] = {xv, NULL, NULL};
    float out[4];
    REQUIRE_OK(cpu_op_run(g, &n, 1, in, rv, out));
    static const float none[4] = {-4, -1, 3.5f, 9};
    CHECK(expect_exact(out, none, 4, "epilogue none"));
    n.p.conv.act = GR_ACT_RELU6;
    REQUIRE_OK(cpu_op_run(g, &n, 1, in, rv, out));
    static const float relu6[4] = {0, 0, 3.5f, 6};
    CHECK(expect_exact(out, relu6, 4, "epilogue relu6"));
    n.p.conv.act = GR_ACT_PRELU;
    n.p.conv.alpha = a;
    REQUIRE_OK(cpu_op_run(g, &n, 1, in, rv, out));
    static const float prelu[4] = {-1, -0.25f, 3.5f, 9};
    CHECK(expect_exact(out, prelu, 4, "epilogue prelu"));
    /* A residual named but not given is an error, not a silent skip. */
    CHECK_FAILS(cpu_op_run(g, &n, 1, in, NULL, out), OMMA_ERR_INVALID_ARG,
                "cpu CONV_2D (model op 7): no buffer for residual 'r'");
    gr_free(g);
}

/* Depthwise 2x2 VALID with depth multiplier 2: output channel c*2+m reads
 * input channel c. */
static void test_depthwise_multiplier(void)
{
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    float xv[18];
    for (int i = 0; i < 9; i++) {
        xv[2 * i] = (float)(i + 1);
        xv[2 * i + 1] = (float)(10 * (i + 1));
    }
    /* [1][kh=2][kw=2][C*m=4]: oc0 all ones, oc1 top-left tap, oc2 all ones,
     * oc3 bottom-right tap x2. */
    static const float wv[16] = {
        1, 1, 1, 0, /* (0,0) */
        1, 0, 1, 0, /* (0,1) */
        1, 0, 1, 0, /* (1,0) */
        1, 0, 1, 2, /* (1,1) */
    };
    static const float bias[4] = {0, 0, 0, 0.5f};
    int x = act4(g, "x", 1, 3, 3, 2), y = act4(g, "y", 1, 2, 2, 4);
    int w = tensor(g, "w", 4, 1, 2, 2, 4, wv), b = tensor(g, "b", 1, 4, 0, 0, 0, bias);
    gr_node n = node(GR_DWCONV2D, y);
    n.n_in = 3;
    n.in[0] = x, n.in[1] = w, n.in[2] = b;
    n.p.conv.win = window(2, 1, 0, 0, 0, 0);
    n.p.conv.depth_multiplier = 2;
    const float *in[3] = {xv, NULL, NULL};
    float out[16];
    REQUIRE_OK(cpu_op_run(g, &n, 1, in, NULL, out));
    static const float want[16] = {
        12, 1, 120, 100.5f, /* (0,0): window 1 2 4 5 */
        16, 2, 160, 120.5f, /* (0,1): 2 3 5 6 */
        24, 4, 240, 160.5f, /* (1,0): 4 5 7 8 */
        28, 5, 280, 180.5f, /* (1,1): 5 6 8 9 */
    };
    CHECK(expect_exact(out, want, 16, "depthwise"));

    /* Depthwise SAME 3x3 stride 2 on 3x3 (pads 1 each side), multiplier 1. */
    int x1 = act4(g, "x1", 1, 3, 3, 1), y1 = act4(g, "y1", 1, 2, 2, 1);
    int w1 = tensor(g, "w1", 4, 1, 3, 3, 1, ones9);
    gr_node m = node(GR_DWCONV2D, y1);
    m.n_in = 3;
    m.in[0] = x1, m.in[1] = w1;
    m.p.conv.win = window(3, 2, 1, 1, 1, 1);
    const float *in1[3] = {seq9, NULL, NULL};
    REQUIRE_OK(cpu_op_run(g, &m, 1, in1, NULL, out));
    static const float want1[4] = {12, 16, 24, 28};
    CHECK(expect_exact(out, want1, 4, "depthwise same stride 2"));
    gr_free(g);
}

/* DW_PW_BLOCK: depthwise 2x2 VALID on 2x2x2, bias, 1x1 to 3 channels, bias,
 * the 2x2 max pool of a 2-channel residual (channel 2 gets 0), PRELU. */
static void test_dwpw_block(void)
{
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    static const float xv[8] = {1, 2, 3, 4, 5, 6, 7, 8}; /* (y,x): (0,0) (0,1) (1,0) (1,1) */
    /* Depthwise [1][2][2][2]: channel 0 sums the window, channel 1 is
     * top-left minus bottom-right: d = (16, 2 - 8) + bias (0.5, 1) = (16.5, -5). */
    static const float dwv[8] = {1, 1, 1, 0, 1, 0, 1, -1};
    static const float dbv[2] = {0.5f, 1};
    /* Pointwise [3][1][1][2]: d0, d1, d0 + d1, bias (0, 0, -1) -> (16.5, -5, 10.5). */
    static const float pwv[6] = {1, 0, 0, 1, 1, 1};
    static const float pbv[3] = {0, 0, -1};
    static const float alphav[3] = {1, 0.5f, 1};
    /* Residual [1,2,2,2]: the max of each channel is -1 and -2. */
    static const float rv[8] = {-1, -9, -3, -2, -4, -7, -2, -8};
    int x = act4(g, "x", 1, 2, 2, 2), y = act4(g, "y", 1, 1, 1, 3);
    int r = act4(g, "r", 1, 2, 2, 2);
    gr_node n = node(GR_DWPW, y);
    n.n_in = 5;
    n.in[0] = x;
    n.in[1] = tensor(g, "dw", 4, 1, 2, 2, 2, dwv);
    n.in[2] = tensor(g, "db", 1, 2, 0, 0, 0, dbv);
    n.in[3] = tensor(g, "pw", 4, 3, 1, 1, 2, pwv);
    n.in[4] = tensor(g, "pb", 1, 3, 0, 0, 0, pbv);
    n.p.conv.win = window(2, 1, 0, 0, 0, 0);
    n.p.conv.residual = r;
    n.p.conv.pool_residual = true;
    n.p.conv.act = GR_ACT_PRELU;
    n.p.conv.alpha = tensor(g, "alpha", 1, 3, 0, 0, 0, alphav);
    const float *in[5] = {xv, NULL, NULL, NULL, NULL};
    float out[3];
    REQUIRE_OK(cpu_op_run(g, &n, 1, in, rv, out));
    /* (16.5 - 1, -5 - 2 -> PRELU 0.5, 10.5 + 0) */
    static const float want[3] = {15.5f, -3.5f, 10.5f};
    CHECK(expect_exact(out, want, 3, "dwpw pooled"));

    /* The same residual already pooled, the biases absent, RELU. */
    static const float r1v[2] = {-1, -2};
    n.p.conv.residual = act4(g, "r1", 1, 1, 1, 2);
    n.p.conv.pool_residual = false;
    n.p.conv.act = GR_ACT_RELU;
    n.in[2] = n.in[4] = -1;
    REQUIRE_OK(cpu_op_run(g, &n, 1, in, r1v, out));
    static const float want1[3] = {15, 0, 10}; /* (16 - 1, -6 - 2, 16 - 6 + 0) */
    CHECK(expect_exact(out, want1, 3, "dwpw unpooled"));

    /* Errors: a residual the wrong size, no residual buffer, a bad filter. */
    n.p.conv.pool_residual = true;
    CHECK_FAILS(cpu_op_run(g, &n, 1, in, r1v, out), OMMA_ERR_FORMAT,
                "cpu DW_PW_BLOCK (model op 7): residual 'r1' does not fit output 'y' 1x1x3 "
                "(pooled 2x2)");
    n.p.conv.residual = r;
    CHECK_FAILS(cpu_op_run(g, &n, 1, in, NULL, out), OMMA_ERR_INVALID_ARG,
                "no buffer for residual 'r'");
    n.in[3] = n.in[1];
    CHECK_FAILS(cpu_op_run(g, &n, 1, in, rv, out), OMMA_ERR_FORMAT,
                "filters 'dw' [1, 2, 2, 2] (multiplier 1) and 'dw' [1, 2, 2, 2] do not fit");
    gr_free(g);
}

/* Random values of mixed magnitudes, so that a different summation order
 * would change the bits. */
static float mixed(unsigned *state)
{
    *state = *state * 1664525u + 1013904223u;
    float u = (float)(*state >> 8) / 16777216.0f - 0.5f;
    return u * ((*state & 3u) == 0 ? 1000.0f : 1.0f);
}

/* The ops compute several outputs side by side (vector lanes), each still
 * one sum in (ky, kx, ic) order: bitwise equal to one plain loop per
 * output, over shapes with row tails, padding, strides, multipliers. */
static void test_blocked_sums_are_one_sum_per_output(void)
{
    unsigned rs = 12345u;
    int bad = 0, cases = 0;
    for (int t = 0; t < 24; t++) {
        int H = 3 + t % 7, W = 5 + (t * 3) % 13, C = 1 + (t * 5) % 11, k = 1 + 2 * (t % 3);
        int stride = 1 + t % 2, mult = t % 4 == 3 ? 2 : 1, OC = 1 + (t * 7) % 17;
        int pad = k / 2;
        int OH = (H + 2 * pad - k) / stride + 1, OW = (W + 2 * pad - k) / stride + 1;
        size_t nx = (size_t)H * W * C;
        float *x = malloc(nx * sizeof *x), *f = malloc((size_t)OC * k * k * C * sizeof *f);
        float *dwf = malloc((size_t)k * k * C * mult * sizeof *dwf);
        float *pw = malloc((size_t)OC * C * sizeof *pw), *bias = malloc((size_t)OC * sizeof *bias);
        float *db = malloc((size_t)C * sizeof *db), *res = malloc((size_t)OH * OW * OC * sizeof *res);
        float *out = malloc((size_t)OH * OW * OC * C * mult * sizeof *out);
        REQUIRE(x && f && dwf && pw && bias && db && res && out);
        for (size_t i = 0; i < nx; i++)
            x[i] = mixed(&rs);
        for (int i = 0; i < OC * k * k * C; i++)
            f[i] = mixed(&rs);
        for (int i = 0; i < k * k * C * mult; i++)
            dwf[i] = mixed(&rs);
        for (int i = 0; i < OC * C; i++)
            pw[i] = mixed(&rs);
        for (int i = 0; i < OC; i++)
            bias[i] = mixed(&rs);
        for (int i = 0; i < C; i++)
            db[i] = mixed(&rs);
        for (int i = 0; i < OH * OW * OC; i++)
            res[i] = mixed(&rs);
        gr_graph *g = NULL;
        REQUIRE_OK(gr_create(&g));
        int xt = act4(g, "x", 1, H, W, C);
        const float *in[5] = {x, NULL, NULL, NULL, NULL};
        gr_window win = window(k, stride, pad, pad, pad, pad);

        /* CONV_2D with bias and residual, no activation. */
        gr_node n = node(GR_CONV2D, act4(g, "y", 1, OH, OW, OC));
        n.n_in = 3;
        n.in[0] = xt;
        n.in[1] = tensor(g, "f", 4, OC, k, k, C, f);
        n.in[2] = tensor(g, "b", 1, OC, 0, 0, 0, bias);
        n.p.conv.win = win;
        n.p.conv.residual = act4(g, "r", 1, OH, OW, OC);
        REQUIRE_OK(cpu_op_run(g, &n, 1, in, res, out));
        for (int oy = 0; oy < OH; oy++)
            for (int ox = 0; ox < OW; ox++)
                for (int oc = 0; oc < OC; oc++) {
                    float acc = 0.0f;
                    for (int ky = 0; ky < k; ky++)
                        for (int kx = 0; kx < k; kx++) {
                            int iy = oy * stride - pad + ky, ix = ox * stride - pad + kx;
                            if (iy < 0 || iy >= H || ix < 0 || ix >= W)
                                continue;
                            for (int ic = 0; ic < C; ic++)
                                acc += x[((size_t)iy * W + ix) * C + ic] *
                                       f[(((size_t)oc * k + ky) * k + kx) * C + ic];
                        }
                    acc += bias[oc];
                    size_t o = ((size_t)oy * OW + ox) * OC + oc;
                    acc += res[o];
                    bad += memcmp(&acc, &out[o], sizeof acc) != 0;
                }

        /* DEPTHWISE_CONV_2D (multiplier 1 or 2), no bias. */
        int DC = C * mult;
        gr_node d = node(GR_DWCONV2D, act4(g, "yd", 1, OH, OW, DC));
        d.n_in = 2;
        d.in[0] = xt;
        d.in[1] = tensor(g, "df", 4, 1, k, k, DC, dwf);
        d.p.conv.win = win;
        d.p.conv.depth_multiplier = mult;
        REQUIRE_OK(cpu_op_run(g, &d, 1, in, NULL, out));
        for (int oy = 0; oy < OH; oy++)
            for (int ox = 0; ox < OW; ox++)
                for (int oc = 0; oc < DC; oc++) {
                    float acc = 0.0f;
                    for (int ky = 0; ky < k; ky++)
                        for (int kx = 0; kx < k; kx++) {
                            int iy = oy * stride - pad + ky, ix = ox * stride - pad + kx;
                            if (iy < 0 || iy >= H || ix < 0 || ix >= W)
                                continue;
                            acc += x[((size_t)iy * W + ix) * C + oc / mult] *
                                   dwf[((size_t)ky * k + kx) * DC + oc];
                        }
                    bad += memcmp(&acc, &out[((size_t)oy * OW + ox) * DC + oc], sizeof acc) != 0;
                }

        /* DW_PW_BLOCK with both biases and a residual (multiplier 1). */
        gr_node b = node(GR_DWPW, act4(g, "yb", 1, OH, OW, OC));
        b.n_in = 5;
        b.in[0] = xt;
        b.in[1] = tensor(g, "bdf", 4, 1, k, k, C, dwf);
        b.in[2] = tensor(g, "bdb", 1, C, 0, 0, 0, db);
        b.in[3] = tensor(g, "bpw", 4, OC, 1, 1, C, pw);
        b.in[4] = tensor(g, "bpb", 1, OC, 0, 0, 0, bias);
        b.p.conv.win = win;
        b.p.conv.residual = act4(g, "br", 1, OH, OW, OC);
        REQUIRE_OK(cpu_op_run(g, &b, 1, in, res, out));
        for (int oy = 0; oy < OH; oy++)
            for (int ox = 0; ox < OW; ox++) {
                float dv[16];
                for (int ch = 0; ch < C; ch++) {
                    float acc = 0.0f;
                    for (int ky = 0; ky < k; ky++)
                        for (int kx = 0; kx < k; kx++) {
                            int iy = oy * stride - pad + ky, ix = ox * stride - pad + kx;
                            if (iy < 0 || iy >= H || ix < 0 || ix >= W)
                                continue;
                            acc += x[((size_t)iy * W + ix) * C + ch] *
                                   dwf[((size_t)ky * k + kx) * C + ch];
                        }
                    dv[ch] = acc + db[ch];
                }
                for (int oc = 0; oc < OC; oc++) {
                    float acc = 0.0f;
                    for (int ic = 0; ic < C; ic++)
                        acc += dv[ic] * pw[(size_t)oc * C + ic];
                    acc += bias[oc];
                    size_t o = ((size_t)oy * OW + ox) * OC + oc;
                    acc += res[o];
                    bad += memcmp(&acc, &out[o], sizeof acc) != 0;
                }
            }
        cases += 3;
        gr_free(g);
        free(x), free(f), free(dwf), free(pw), free(bias), free(db), free(res), free(out);
    }
    if (bad)
        fprintf(stderr, "  %d outputs differ from one plain sum each\n", bad);
    CHECK(bad == 0 && cases == 72);
}

/* Max-pool: padded cells never win, even over negative values. */
static void test_maxpool_padding(void)
{
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    float xv[9];
    for (int i = 0; i < 9; i++)
        xv[i] = -(float)(i + 1);
    int x = act4(g, "x", 1, 3, 3, 1), y = act4(g, "y", 1, 2, 2, 1);
    gr_node n = node(GR_MAXPOOL, y);
    n.n_in = 1;
    n.in[0] = x;
    n.p.pool.win = window(2, 2, 0, 0, 1, 1); /* SAME 2x2 stride 2 on 3x3 */
    const float *in[1] = {xv};
    float out[4];
    REQUIRE_OK(cpu_op_run(g, &n, 1, in, NULL, out));
    static const float want[4] = {-1, -3, -7, -9};
    CHECK(expect_exact(out, want, 4, "maxpool same"));

    /* 3x3 stride 1 padded 1 all round on 2x2 x 2 channels. */
    static const float x2v[8] = {-5, 1, -2, 2, -7, 3, -3, 4};
    int x2 = act4(g, "x2", 1, 2, 2, 2), y2 = act4(g, "y2", 1, 2, 2, 2);
    gr_node m = node(GR_MAXPOOL, y2);
    m.n_in = 1;
    m.in[0] = x2;
    m.p.pool.win = window(3, 1, 1, 1, 1, 1);
    const float *in2[1] = {x2v};
    float out2[8];
    REQUIRE_OK(cpu_op_run(g, &m, 1, in2, NULL, out2));
    static const float want2[8] = {-2, 4, -2, 4, -2, 4, -2, 4};
    CHECK(expect_exact(out2, want2, 8, "maxpool pad 1"));

    /* Stride 2 VALID on 4x4 with batch 2 (second item = first + 100). */
    float x3v[32];
    for (int i = 0; i < 16; i++) {
        x3v[i] = (float)((i * 7) % 16);
        x3v[16 + i] = x3v[i] + 100;
    }
    int x3 = act4(g, "x3", 1, 4, 4, 1), y3 = act4(g, "y3", 1, 2, 2, 1);
    gr_node k = node(GR_MAXPOOL, y3);
    k.n_in = 1;
    k.in[0] = x3;
    k.p.pool.win = window(2, 2, 0, 0, 0, 0);
    const float *in3[1] = {x3v};
    float out3[8];
    REQUIRE_OK(cpu_op_run(g, &k, 2, in3, NULL, out3));
    /* x3 rows: 0 7 14 5 / 12 3 10 1 / 8 15 6 13 / 4 11 2 9 */
    static const float want3[8] = {12, 14, 15, 13, 112, 114, 115, 113};
    CHECK(expect_exact(out3, want3, 8, "maxpool valid batch 2"));
    gr_free(g);
}

/* RESIZE_BILINEAR of f(y, x) = 2y + x on a 2x2 grid, in the three modes. */
static void test_resize_bilinear(void)
{
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    static const float xv[4] = {0, 1, 2, 3};
    int x = act4(g, "x", 1, 2, 2, 1), y = act4(g, "y", 1, 4, 4, 1), y3 = act4(g, "y3", 1, 3, 3, 1);
    gr_node n = node(GR_RESIZE_BILINEAR, y);
    n.n_in = 1;
    n.in[0] = x;
    const float *in[1] = {xv};
    float out[16];

    /* Legacy (neither flag): source = o * in / out = 0, .5, 1, 1.5 (clamped to 1). */
    REQUIRE_OK(cpu_op_run(g, &n, 1, in, NULL, out));
    static const float legacy[16] = {0, 0.5f, 1, 1, 1, 1.5f, 2, 2, 2, 2.5f, 3, 3, 2, 2.5f, 3, 3};
    CHECK(expect_exact(out, legacy, 16, "resize legacy"));

    /* half_pixel_centers: source = (o + .5) * .5 - .5 = -.25, .25, .75, 1.25;
     * the lower index is clamped at 0, the upper at 1. */
    n.p.resize.half_pixel_centers = true;
    REQUIRE_OK(cpu_op_run(g, &n, 1, in, NULL, out));
    static const float half[16] = {0,    0.25f, 0.75f, 1,     0.5f, 0.75f, 1.25f, 1.5f,
                                   1.5f, 1.75f, 2.25f, 2.5f,  2,    2.25f, 2.75f, 3};
    CHECK(expect_exact(out, half, 16, "resize half pixel"));

    /* align_corners to 3x3: scale (2 - 1) / (3 - 1) = .5: source 0, .5, 1. */
    gr_node m = node(GR_RESIZE_BILINEAR, y3);
    m.n_in = 1;
    m.in[0] = x;
    m.p.resize.align_corners = true;
    REQUIRE_OK(cpu_op_run(g, &m, 1, in, NULL, out));
    static const float aligned[9] = {0, 0.5f, 1, 1, 1.5f, 2, 2, 2.5f, 3};
    CHECK(expect_exact(out, aligned, 9, "resize align corners"));
    /* Without align_corners the 3x3 scale is 2/3: source 0, 2/3, 4/3 -> 0, 2/3, 1. */
    m.p.resize.align_corners = false;
    REQUIRE_OK(cpu_op_run(g, &m, 1, in, NULL, out));
    static const double third[9] = {0, 2.0 / 3, 1, 4.0 / 3, 2, 7.0 / 3, 2, 8.0 / 3, 3};
    for (int i = 0; i < 9; i++)
        CHECK_NEAR(out[i], third[i], 1e-6);

    /* Downscale 4x4 -> 2x2 with half pixel centers: source .5 and 2.5, the
     * mean of each 2x2 block of f = 4y + x. */
    float x4v[16];
    for (int i = 0; i < 16; i++)
        x4v[i] = (float)i;
    int x4 = act4(g, "x4", 1, 4, 4, 1), y2 = act4(g, "y2", 1, 2, 2, 1);
    gr_node k = node(GR_RESIZE_BILINEAR, y2);
    k.n_in = 1;
    k.in[0] = x4;
    k.p.resize.half_pixel_centers = true;
    const float *in4[1] = {x4v};
    REQUIRE_OK(cpu_op_run(g, &k, 1, in4, NULL, out));
    static const float down[4] = {2.5f, 4.5f, 10.5f, 12.5f};
    CHECK(expect_exact(out, down, 4, "resize down half pixel"));

    /* Both flags set is malformed. */
    k.p.resize.align_corners = true;
    CHECK_FAILS(cpu_op_run(g, &k, 1, in4, NULL, out), OMMA_ERR_FORMAT,
                "align_corners and half_pixel_centers both set");
    gr_free(g);
}

/* PAD on height, width and channels (zeros), batch 2. */
static void test_pad(void)
{
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    int x = act4(g, "x", 1, 2, 2, 1), y = act4(g, "y", 1, 3, 3, 4);
    gr_node n = node(GR_PAD, y);
    n.n_in = 1;
    n.in[0] = x;
    n.p.pad.before[1] = 1, n.p.pad.after[1] = 0;
    n.p.pad.before[2] = 0, n.p.pad.after[2] = 1;
    n.p.pad.before[3] = 1, n.p.pad.after[3] = 2;
    static const float xv[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    const float *in[1] = {xv};
    float out[72];
    memset(out, 0x7f, sizeof out);
    REQUIRE_OK(cpu_op_run(g, &n, 2, in, NULL, out));
    float want[72] = {0};
    for (int b = 0; b < 2; b++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++)
                want[b * 36 + ((i + 1) * 3 + j) * 4 + 1] = xv[b * 4 + i * 2 + j];
    CHECK(expect_exact(out, want, 72, "pad"));
    CHECK(out[(1 * 3 + 0) * 4 + 1] == 1 && out[36 + (2 * 3 + 1) * 4 + 1] == 8);
    /* Padding the batch is refused. */
    n.p.pad.before[0] = 1;
    CHECK_FAILS(cpu_op_run(g, &n, 1, in, NULL, out), OMMA_ERR_UNSUPPORTED,
                "cpu PAD (model op 7): padding the batch dimension");
    gr_free(g);
}

static void test_concat(void)
{
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    /* Axis 3: [1,2,2,1] + [1,2,2,2] -> [1,2,2,3]. */
    int a = act4(g, "a", 1, 2, 2, 1), b = act4(g, "b", 1, 2, 2, 2), y = act4(g, "y", 1, 2, 2, 3);
    gr_node n = node(GR_CONCAT, y);
    n.n_in = 2;
    n.in[0] = a, n.in[1] = b;
    n.p.concat.axis = 3;
    static const float av[4] = {1, 2, 3, 4}, bv[8] = {10, 11, 12, 13, 14, 15, 16, 17};
    const float *in[2] = {av, bv};
    float out[12];
    REQUIRE_OK(cpu_op_run(g, &n, 1, in, NULL, out));
    static const float want[12] = {1, 10, 11, 2, 12, 13, 3, 14, 15, 4, 16, 17};
    CHECK(expect_exact(out, want, 12, "concat axis 3"));

    /* Axis 1 of rank-3 tensors (the detector's outputs), batch 2. */
    int p = tensor(g, "p", 3, 1, 2, 2, 0, NULL), q = tensor(g, "q", 3, 1, 1, 2, 0, NULL);
    int r = tensor(g, "r", 3, 1, 3, 2, 0, NULL);
    gr_node m = node(GR_CONCAT, r);
    m.n_in = 2;
    m.in[0] = p, m.in[1] = q;
    m.p.concat.axis = 1;
    static const float pv[8] = {1, 2, 3, 4, 5, 6, 7, 8}, qv[4] = {-1, -2, -3, -4};
    const float *in2[2] = {pv, qv};
    REQUIRE_OK(cpu_op_run(g, &m, 2, in2, NULL, out));
    static const float want2[12] = {1, 2, 3, 4, -1, -2, 5, 6, 7, 8, -3, -4};
    CHECK(expect_exact(out, want2, 12, "concat axis 1 batch 2"));
    gr_free(g);
}

static void test_prelu_relu_add(void)
{
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    static const float alpha[2] = {0.5f, 0.25f};
    int x = act4(g, "x", 1, 1, 2, 2), y = act4(g, "y", 1, 1, 2, 2);
    int a = tensor(g, "alpha", 3, 1, 1, 2, 0, alpha); /* [1, 1, C] as in face_landmark */
    gr_node n = node(GR_PRELU, y);
    n.n_in = 2;
    n.in[0] = x, n.in[1] = a;
    static const float xv[4] = {-1, 2, -3, -4};
    const float *in[2] = {xv, NULL};
    float out[8];
    REQUIRE_OK(cpu_op_run(g, &n, 1, in, NULL, out));
    static const float want[4] = {-0.5f, 2, -1.5f, -1};
    CHECK(expect_exact(out, want, 4, "prelu"));

    gr_node r = node(GR_RELU, y);
    r.n_in = 1;
    r.in[0] = x;
    static const float rv[4] = {-0.0f, 3e38f, -1e-30f, 0.5f};
    const float *rin[1] = {rv};
    REQUIRE_OK(cpu_op_run(g, &r, 1, rin, NULL, out));
    static const float rwant[4] = {0, 3e38f, 0, 0.5f};
    CHECK(expect_exact(out, rwant, 4, "relu"));

    /* ADD of an activation (batch 2) and a constant (broadcast over the
     * batch), then RELU6 and PRELU fused. */
    static const float cv[4] = {1, 1, -10, 10};
    int c = tensor(g, "c", 4, 1, 1, 2, 2, cv);
    gr_node d = node(GR_ADD, y);
    d.n_in = 2;
    d.in[0] = x, d.in[1] = c;
    static const float x2[8] = {-1, 2, -3, -4, 5, 6, 7, 8};
    const float *din[2] = {x2, NULL};
    REQUIRE_OK(cpu_op_run(g, &d, 2, din, NULL, out));
    static const float dwant[8] = {0, 3, -13, 6, 6, 7, -3, 18};
    CHECK(expect_exact(out, dwant, 8, "add const"));
    d.p.add.act = GR_ACT_RELU6;
    REQUIRE_OK(cpu_op_run(g, &d, 2, din, NULL, out));
    static const float d6[8] = {0, 3, 0, 6, 6, 6, 0, 6};
    CHECK(expect_exact(out, d6, 8, "add relu6"));
    d.p.add.act = GR_ACT_PRELU;
    d.p.add.alpha = a;
    REQUIRE_OK(cpu_op_run(g, &d, 2, din, NULL, out));
    static const float dp[8] = {0, 3, -6.5f, 6, 6, 7, -1.5f, 18};
    CHECK(expect_exact(out, dp, 8, "add prelu"));
    /* Two activations. */
    int x3 = act4(g, "x3", 1, 1, 2, 2);
    gr_node e = node(GR_ADD, y);
    e.n_in = 2;
    e.in[0] = x, e.in[1] = x3;
    static const float ones8[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    const float *ein[2] = {x2, ones8};
    REQUIRE_OK(cpu_op_run(g, &e, 2, ein, NULL, out));
    static const float ewant[8] = {0, 3, -2, -3, 6, 7, 8, 9};
    CHECK(expect_exact(out, ewant, 8, "add"));
    /* PRELU with alpha of the wrong size. */
    static const float alpha3[3] = {1, 2, 3};
    n.in[1] = tensor(g, "alpha3", 1, 3, 0, 0, 0, alpha3);
    CHECK_FAILS(cpu_op_run(g, &n, 1, in, NULL, out), OMMA_ERR_FORMAT,
                "cpu PRELU (model op 7): alpha 'alpha3' has 3 values, expected 2");
    gr_free(g);
}

static void test_reshape_dequantize(void)
{
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    int x = act4(g, "x", 1, 2, 2, 2), y = tensor(g, "y", 3, 1, 4, 2, 0, NULL);
    gr_node n = node(GR_RESHAPE, y);
    n.n_in = 1;
    n.in[0] = x;
    float xv[16], out[16];
    for (int i = 0; i < 16; i++)
        xv[i] = (float)i * 0.5f;
    const float *in[1] = {xv};
    REQUIRE_OK(cpu_op_run(g, &n, 2, in, NULL, out));
    CHECK(expect_exact(out, xv, 16, "reshape"));
    REQUIRE_OK(cpu_op_run(g, &n, 2, in, NULL, xv)); /* in place: nothing to do */

    /* fp16 -> fp32: 1, -2, 1/3 rounded, +inf, the smallest subnormal, -0. */
    static const uint16_t h[6] = {0x3c00, 0xc000, 0x3555, 0x7c00, 0x0001, 0x8000};
    int dims[2] = {2, 3}, hq = -1, f = -1;
    REQUIRE_OK(gr_add_tensor(g, "h", 2, dims, GR_F16, h, sizeof h, &hq));
    REQUIRE_OK(gr_add_tensor(g, "f", 2, dims, GR_F32, NULL, 0, &f));
    gr_node d = node(GR_DEQUANTIZE, f);
    d.n_in = 1;
    d.in[0] = hq;
    const float *din[1] = {NULL};
    REQUIRE_OK(cpu_op_run(g, &d, 1, din, NULL, out));
    static const float want[6] = {1, -2, 0.333251953125f, INFINITY, 5.9604644775390625e-8f, -0.0f};
    CHECK(expect_exact(out, want, 6, "dequantize"));
    gr_free(g);
}

/* LOGISTIC at points whose sigmoid is known in closed form: 0 -> 1/2,
 * +-ln 3 -> 3/4 and 1/4, +-ln 9 -> 9/10 and 1/10, and the saturated ends. */
static void test_logistic(void)
{
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    int x = tensor(g, "x", 2, 1, 8, 0, 0, NULL), y = tensor(g, "y", 2, 1, 8, 0, 0, NULL);
    gr_node n = node(GR_LOGISTIC, y);
    n.n_in = 1;
    n.in[0] = x;
    const float l3 = 1.0986122886681098f, l9 = 2.1972245773362196f;
    const float xv[16] = {0, l3, -l3, l9, -l9, 100, -100, 0, 1, 2, 3, 4, 5, 6, 7, 8};
    static const float want[8] = {0.5f, 0.75f, 0.25f, 0.9f, 0.1f, 1.0f, 0.0f, 0.5f};
    float out[16];
    const float *in[1] = {xv};
    REQUIRE_OK(cpu_op_run(g, &n, 2, in, NULL, out));
    for (int i = 0; i < 8; i++)
        CHECK(fabsf(out[i] - want[i]) <= 1e-6f);
    for (int i = 9; i < 16; i++) /* increasing, inside (0.5, 1) */
        CHECK(out[i] > out[i - 1] && out[i] < 1.0f && out[i] > 0.5f);
    gr_free(g);
}

/* DEPTH_TO_SPACE over shapes and blocks, against the mapping written from
 * the input side: x[b, h, w, (i*k + j)*C + c] lands at y[b, h*k + i,
 * w*k + j, c]; every output element written exactly once. */
static void test_depth_to_space(void)
{
    static const int rows[][5] = {/* batch, h, w, c (output channels), block */
                                  {1, 1, 1, 1, 2},   {1, 2, 3, 1, 2},   {2, 3, 2, 3, 2},
                                  {1, 7, 7, 288, 2}, {3, 2, 2, 5, 3},   {1, 4, 1, 2, 4},
                                  {2, 1, 5, 8, 1},   {1, 14, 14, 48, 2}};
    for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
        int B = rows[r][0], H = rows[r][1], W = rows[r][2], C = rows[r][3], k = rows[r][4];
        gr_graph *g = NULL;
        REQUIRE_OK(gr_create(&g));
        int x = act4(g, "x", 1, H, W, C * k * k), y = act4(g, "y", 1, H * k, W * k, C);
        gr_node n = node(GR_DEPTH_TO_SPACE, y);
        n.n_in = 1;
        n.in[0] = x;
        n.p.d2s.block = k;
        size_t count = (size_t)B * H * W * C * k * k;
        float *xv = malloc(count * sizeof *xv), *out = malloc(count * sizeof *out),
              *want = malloc(count * sizeof *want);
        REQUIRE(xv && out && want);
        for (size_t i = 0; i < count; i++) {
            xv[i] = (float)i;
            want[i] = -1;
        }
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int w = 0; w < W; w++)
                    for (int q = 0; q < C * k * k; q++) {
                        int i = q / (C * k), j = q / C % k, c = q % C;
                        size_t from = (((size_t)b * H + h) * W + w) * C * k * k + q;
                        size_t to = (((size_t)b * H * k + h * k + i) * W * k + w * k + j) * C + c;
                        CHECK(want[to] == -1);
                        want[to] = xv[from];
                    }
        const float *in[1] = {xv};
        REQUIRE_OK(cpu_op_run(g, &n, B, in, NULL, out));
        char what[48];
        snprintf(what, sizeof what, "depth_to_space row %zu", r);
        CHECK(expect_exact(out, want, (int)count, what));
        n.p.d2s.block = k + 1; /* a block that does not fit the shapes */
        CHECK_FAILS(cpu_op_run(g, &n, B, in, NULL, out), OMMA_ERR_FORMAT, "block");
        free(xv);
        free(out);
        free(want);
        gr_free(g);
    }
}

/* MUL: two activations, a one-value constant on either side, a constant
 * matrix per item, RELU; a constant of the wrong size is refused. */
static void test_mul(void)
{
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    const float two[1] = {2.0f};
    const float m4[4] = {1, -1, 0.5f, 3};
    int a = tensor(g, "a", 3, 1, 2, 2, 0, NULL), b = tensor(g, "b", 3, 1, 2, 2, 0, NULL);
    int k = tensor(g, "k", 1, 1, 0, 0, 0, two), m = tensor(g, "m", 3, 1, 2, 2, 0, m4);
    int y = tensor(g, "y", 3, 1, 2, 2, 0, NULL);
    const float av[8] = {1, 2, 3, 4, -1, -2, -3, -4}, bv[8] = {2, 2, 0.5f, -1, 1, 0, 2, 3};
    float out[8];
    gr_node n = node(GR_MUL, y);
    n.p.add.alpha = -1;
    n.n_in = 2;
    n.in[0] = a, n.in[1] = b;
    const float *in[2] = {av, bv};
    REQUIRE_OK(cpu_op_run(g, &n, 2, in, NULL, out));
    const float want_ab[8] = {2, 4, 1.5f, -4, -1, -0.0f, -6, -12};
    CHECK(expect_exact(out, want_ab, 8, "a*b"));
    n.in[0] = k, n.in[1] = a; /* the constant first */
    const float *in2[2] = {NULL, av};
    REQUIRE_OK(cpu_op_run(g, &n, 2, in2, NULL, out));
    const float want_2a[8] = {2, 4, 6, 8, -2, -4, -6, -8};
    CHECK(expect_exact(out, want_2a, 8, "2*a"));
    n.in[0] = a, n.in[1] = m;
    n.p.add.act = GR_ACT_RELU;
    const float *in3[2] = {av, NULL};
    REQUIRE_OK(cpu_op_run(g, &n, 2, in3, NULL, out));
    const float want_am[8] = {1, 0, 1.5f, 12, 0, 2, 0, 0};
    CHECK(expect_exact(out, want_am, 8, "relu(a*m)"));
    const float three[3] = {1, 2, 3};
    int bad = tensor(g, "bad", 1, 3, 0, 0, 0, three);
    n.in[1] = bad;
    CHECK_FAILS(cpu_op_run(g, &n, 2, in3, NULL, out), OMMA_ERR_FORMAT, "'bad' has 3 values");
    gr_free(g);
}

/* STRIDED_SLICE: every output element against the index formula; a slice
 * past the input's end is refused. */
static void test_strided_slice(void)
{
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    int x = act4(g, "x", 1, 5, 6, 7), y = act4(g, "y", 1, 2, 3, 2);
    gr_node n = node(GR_STRIDED_SLICE, y);
    n.n_in = 1;
    n.in[0] = x;
    const int b[4] = {0, 1, 0, 2}, st[4] = {1, 3, 2, 4};
    memcpy(n.p.slice.begin, b, sizeof b);
    memcpy(n.p.slice.stride, st, sizeof st);
    float xv[2 * 5 * 6 * 7], out[2 * 2 * 3 * 2], want[2 * 2 * 3 * 2];
    for (int i = 0; i < 2 * 5 * 6 * 7; i++)
        xv[i] = (float)i;
    int k = 0;
    for (int bt = 0; bt < 2; bt++)
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                for (int c = 0; c < 2; c++)
                    want[k++] = xv[((bt * 5 + 1 + 3 * i) * 6 + 2 * j) * 7 + 2 + 4 * c];
    const float *in[1] = {xv};
    REQUIRE_OK(cpu_op_run(g, &n, 2, in, NULL, out));
    CHECK(expect_exact(out, want, 24, "slice"));
    n.p.slice.begin[3] = 3; /* 3 + 4 = 7: past the 7 channels */
    CHECK_FAILS(cpu_op_run(g, &n, 2, in, NULL, out), OMMA_ERR_FORMAT, "dimension 3");
    gr_free(g);
}

/* Landmarks2TransformMatrix on landmarks whose box and rotation are known:
 * an upright 20x40 box centred at (20, 40) and, second item, a box turned
 * by a quarter (the rotation landmarks one above the other). Matrices
 * worked out by hand from MediaPipe's definition. */
static void test_landmarks_to_matrix(void)
{
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    int x = tensor(g, "lm", 3, 1, 4, 3, 0, NULL), y = tensor(g, "m", 3, 1, 4, 4, 0, NULL);
    gr_node n = node(GR_LANDMARKS_TO_MATRIX, y);
    n.n_in = 1;
    n.in[0] = x;
    n.p.l2m.left = 0, n.p.l2m.right = 1;
    n.p.l2m.out_w = n.p.l2m.out_h = 16;
    n.p.l2m.scale_x = n.p.l2m.scale_y = 1.5f;
    n.p.l2m.n_subset = 2;
    n.p.l2m.subset[0][0] = 0, n.p.l2m.subset[0][1] = 3;
    n.p.l2m.subset[1][0] = 1, n.p.l2m.subset[1][1] = 2;
    const float lm[24] = {10, 20, 0, 30, 20, 0, 10, 60, 0, 30, 60, 0, /* upright */
                          0,  0,  5, 0,  10, 5, 4,  5,  5, -4, 5,  5};
    float out[32];
    const float *in[1] = {lm};
    REQUIRE_OK(cpu_op_run(g, &n, 2, in, NULL, out));
    const float want[32] = {1.875f, 0,      0, 5, 0,       3.75f, 0, 10,    0, 0, 1, 0, 0, 0, 0, 1,
                            0,      -0.75f, 0, 6, 0.9375f, 0,     0, -2.5f, 0, 0, 1, 0, 0, 0, 0, 1};
    for (int i = 0; i < 32; i++) {
        if (!(fabsf(out[i] - want[i]) <= 1e-5f))
            fprintf(stderr, "  m[%d] = %.9g, expected %.9g\n", i, out[i], want[i]);
        CHECK(fabsf(out[i] - want[i]) <= 1e-5f);
    }
    n.p.l2m.subset[1][1] = 4; /* a landmark past the 4 */
    CHECK_FAILS(cpu_op_run(g, &n, 2, in, NULL, out), OMMA_ERR_FORMAT, "outside the 4 landmarks");
    gr_free(g);
}

/* TransformTensorBilinear of a plane v = 10 y + x + 100 c (bilinear
 * interpolation is exact on it): inside, the value at the mapped point of
 * each pixel centre; outside [0, W-1] x [0, H-1], 0. */
static void test_transform_bilinear(void)
{
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    enum { H = 4, W = 5, C = 2, OH = 6, OW = 7 };
    int x = act4(g, "x", 1, H, W, C), m = tensor(g, "m", 3, 1, 4, 4, 0, NULL);
    int y = act4(g, "y", 1, OH, OW, C);
    gr_node n = node(GR_TRANSFORM_BILINEAR, y);
    n.n_in = 2;
    n.in[0] = x, n.in[1] = m;
    float xv[H * W * C], out[OH * OW * C];
    for (int i = 0; i < H; i++)
        for (int j = 0; j < W; j++)
            for (int c = 0; c < C; c++)
                xv[(i * W + j) * C + c] = 10.0f * i + j + 100.0f * c;
    const float mv[16] = {0.75f, 0.125f, 0, -0.5f, -0.25f, 0.5f, 0, 0.75f, 0, 0, 1, 0, 0, 0, 0, 1};
    const float *in[2] = {xv, mv};
    REQUIRE_OK(cpu_op_run(g, &n, 1, in, NULL, out));
    int inside = 0, outside = 0;
    for (int oy = 0; oy < OH; oy++)
        for (int ox = 0; ox < OW; ox++) {
            double px = ox + 0.5, py = oy + 0.5;
            double tx = mv[0] * px + mv[1] * py + mv[3] - 0.5;
            double ty = mv[4] * px + mv[5] * py + mv[7] - 0.5;
            bool in_ = tx >= 0 && tx <= W - 1 && ty >= 0 && ty <= H - 1;
            inside += in_;
            outside += !in_;
            for (int c = 0; c < C; c++) {
                double want = in_ ? 10 * ty + tx + 100 * c : 0;
                float got = out[(oy * OW + ox) * C + c];
                if (!(fabs(got - want) <= 1e-4))
                    fprintf(stderr, "  (%d, %d, %d) = %.6g, expected %.6g\n", oy, ox, c, got, want);
                CHECK(fabs(got - want) <= 1e-4);
            }
        }
    CHECK(inside > 8 && outside > 8);
    gr_free(g);
}

/* TransformLandmarks: (x, y) through the first two rows, z kept (3-D), two
 * items with their own matrices. */
static void test_transform_landmarks(void)
{
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    int x = tensor(g, "lm", 3, 1, 2, 3, 0, NULL), m = tensor(g, "m", 3, 1, 4, 4, 0, NULL);
    int y = tensor(g, "y", 3, 1, 2, 3, 0, NULL);
    gr_node n = node(GR_TRANSFORM_LANDMARKS, y);
    n.n_in = 2;
    n.in[0] = x, n.in[1] = m;
    const float lm[12] = {1, 2, 7, -3, 4, -1, 0.5f, 0.25f, 2, 8, -2, 0};
    const float mv[32] = {2, 0,  9, 1,  0, 3, 9, -1, 9, 9, 9, 9, 9, 9, 9, 9,
                          0, -1, 0, 10, 1, 0, 0, 20, 0, 0, 1, 0, 0, 0, 0, 1};
    float out[12];
    const float *in[2] = {lm, mv};
    REQUIRE_OK(cpu_op_run(g, &n, 2, in, NULL, out));
    const float want[12] = {3, 5, 7, -5, 11, -1, 9.75f, 20.5f, 2, 12, 28, 0};
    CHECK(expect_exact(out, want, 12, "landmarks"));
    gr_free(g);
}

/* The same conv (3x3 SAME, stride 2, 8 -> 16 channels, bias, residual-free,
 * RELU6) on a batch of 3 gives each item's batch-1 bits exactly. */
static void test_batch_independence(void)
{
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    enum { H = 9, W = 7, C = 8, OC = 16, OH = 5, OW = 4, B = 3 };
    static float wv[OC * 3 * 3 * C], bv[OC], xv[B * H * W * C], out[B * OH * OW * OC],
        one[OH * OW * OC];
    uint32_t s = 12345;
    for (size_t i = 0; i < sizeof wv / sizeof wv[0]; i++)
        wv[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
    for (int i = 0; i < OC; i++)
        bv[i] = (float)i * 0.1f - 0.8f;
    for (size_t i = 0; i < sizeof xv / sizeof xv[0]; i++)
        xv[i] = (float)((s = s * 1664525u + 1013904223u) >> 8) / 4194304.0f - 2.0f;
    int x = act4(g, "x", 1, H, W, C), y = act4(g, "y", 1, OH, OW, OC);
    int w = tensor(g, "w", 4, OC, 3, 3, C, wv), b = tensor(g, "b", 1, OC, 0, 0, 0, bv);
    for (int dw = 0; dw < 2; dw++) {
        gr_node n = node(dw ? GR_DWCONV2D : GR_CONV2D, y);
        n.n_in = 3;
        n.in[0] = x, n.in[1] = w, n.in[2] = b;
        n.p.conv.win = window(3, 2, 1, 1, 1, 1); /* SAME: 9 -> 5 rows, 7 -> 4 columns */
        n.p.conv.act = GR_ACT_RELU6;
        if (dw) { /* depthwise 8 -> 16 with multiplier 2 reuses the filter as [1,3,3,16] */
            int w1 = tensor(g, "w1", 4, 1, 3, 3, OC, wv);
            n.in[1] = w1;
            n.p.conv.depth_multiplier = 2;
        }
        const float *in[3] = {xv, NULL, NULL};
        REQUIRE_OK(cpu_op_run(g, &n, B, in, NULL, out));
        int same = 1, nonzero = 0;
        for (int i = 0; i < B; i++) {
            const float *in1[3] = {xv + (size_t)i * H * W * C, NULL, NULL};
            REQUIRE_OK(cpu_op_run(g, &n, 1, in1, NULL, one));
            same &= memcmp(one, out + (size_t)i * OH * OW * OC, sizeof one) == 0;
            for (int k = 0; k < OH * OW * OC; k++)
                nonzero += one[k] != 0 && one[k] != 6;
        }
        CHECK(same);
        CHECK(nonzero > OH * OW * OC / 2); /* the values are not all clamped */
    }
    gr_free(g);
}

static void test_argument_errors(void)
{
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    int x = act4(g, "x", 1, 2, 2, 1), y = act4(g, "y", 1, 2, 2, 1);
    gr_node n = node(GR_RELU, y);
    n.n_in = 1;
    n.in[0] = x;
    float out[4];
    const float *none[1] = {NULL};
    CHECK_FAILS(cpu_op_run(g, &n, 1, none, NULL, out), OMMA_ERR_INVALID_ARG,
                "cpu RELU (model op 7): no buffer for input 0 'x'");
    static const float xv[4] = {1, 2, 3, 4};
    const float *in[1] = {xv};
    CHECK_FAILS(cpu_op_run(g, &n, 0, in, NULL, out), OMMA_ERR_INVALID_ARG, "batch 0");
    CHECK_FAILS(cpu_op_run(NULL, &n, 1, in, NULL, out), OMMA_ERR_INVALID_ARG, "NULL argument");
    n.out = 99;
    CHECK_FAILS(cpu_op_run(g, &n, 1, in, NULL, out), OMMA_ERR_INVALID_ARG,
                "output tensor 99");
    n.out = y;
    n.op = GR_OP_COUNT;
    CHECK_FAILS(cpu_op_run(g, &n, 1, in, NULL, out), OMMA_ERR_UNSUPPORTED,
                "has no CPU implementation");
    /* A conv whose filter does not fit the input's channels. */
    static const float w2[2] = {1, 1};
    int w = tensor(g, "w2", 4, 1, 1, 1, 2, w2);
    gr_node c = node(GR_CONV2D, y);
    c.n_in = 3;
    c.in[0] = x, c.in[1] = w;
    c.p.conv.win = window(1, 1, 0, 0, 0, 0);
    const float *cin[3] = {xv, NULL, NULL};
    CHECK_FAILS(cpu_op_run(g, &c, 1, cin, NULL, out), OMMA_ERR_FORMAT,
                "filter 'w2' [1, 1, 1, 2] does not fit input 'x' (1 channels)");
    /* A window that does not give the output's size. */
    static const float w1[1] = {1};
    c.in[1] = tensor(g, "w1", 4, 1, 1, 1, 1, w1);
    c.p.conv.win.stride_h = 2;
    CHECK_FAILS(cpu_op_run(g, &c, 1, cin, NULL, out), OMMA_ERR_FORMAT,
                "the window gives 1x2, output 'y' is 2x2");
    gr_free(g);
}

int main(void)
{
    RUN(test_conv_same);
    RUN(test_conv_stride2_split);
    RUN(test_conv_valid_ohwi);
    RUN(test_conv_dilation);
    RUN(test_conv_epilogue);
    RUN(test_depthwise_multiplier);
    RUN(test_dwpw_block);
    RUN(test_blocked_sums_are_one_sum_per_output);
    RUN(test_maxpool_padding);
    RUN(test_resize_bilinear);
    RUN(test_pad);
    RUN(test_concat);
    RUN(test_prelu_relu_add);
    RUN(test_reshape_dequantize);
    RUN(test_logistic);
    RUN(test_depth_to_space);
    RUN(test_mul);
    RUN(test_strided_slice);
    RUN(test_landmarks_to_matrix);
    RUN(test_transform_bilinear);
    RUN(test_transform_landmarks);
    RUN(test_batch_independence);
    RUN(test_argument_errors);
    return testing_finish();
}
