/* Every CUDA op against the CPU reference (cpu_op_run), like ggml's
 * test-backend-ops: a table of cases (op x shape x window x activation x
 * residual x batch), each built as a small hand-made graph, validated, run
 * node by node on the CPU and on the GPU in both precisions.
 *
 * - Fresh random inputs every run (the seed is printed; pass --seed N to
 *   replay), constants random too; for fp16 the inputs are rounded through
 *   half on the device first so that the reference sees the same values.
 * - All transfers are ordered on the test's own stream (a plain cudaMemcpy
 *   from pageable memory may return before its data lands, and a
 *   non-blocking stream does not wait for it).
 * - Every GPU output buffer is poisoned (all bytes 0xFF: NaN in float and
 *   half) before its launch and has a 256-byte guard after it: an unwritten
 *   element stays NaN and fails, a write past the end changes the guard.
 * - Error = max|gpu - cpu| / max(max|cpu|, 1e-6) over a node's output (a
 *   relative error normalized by the output's scale); NaN or inf fails.
 *   Bounds: 1e-5 in fp32, 5e-3 in fp16 (activations, filters and the
 *   residual stored as half, accumulation in float).
 *
 * Usage: test_cuda_ops [--quick] [--shared-gpu] [--seed N] [--verbose].
 * --quick runs every fourth case (for compute-sanitizer); --shared-gpu
 * leaves out the free-memory check, for runs beside other processes on the
 * GPU (test_cuda_ops_shared.sh). Exits 77 where there is no GPU.
 *
 * Why one file of ~1.4k lines: it is the op table, one list of every op
 * and step kind with the graph builders its rows use; adding an op means
 * adding its rows here, where the whole table can be read at once.
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "engine/cpu_ops.h"
#include "engine/cuda_ops.h"
#include "engine/cuda_weights.h"
#include "model/graph.h"
#include "support/test_graph.h"
#include "testing.h"

#define GUARD 256
#define TOL_F32 1e-5
#define TOL_F16 5e-3

static bool verbose, quick_mode, shared_gpu;
static unsigned rng_state = 1;
static double worst[2]; /* per precision */
static int cases_run, cases_failed;

static unsigned rnd(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}

static int pick(const int *v, int n)
{
    return v[rnd() % (unsigned)n];
}
#define PICK(...)                                                                                  \
    pick((const int[]){__VA_ARGS__}, (int)(sizeof((int[]){__VA_ARGS__}) / sizeof(int)))

/* ---- cases ---------------------------------------------------------------- */

typedef enum chain { CHAIN_NONE, CHAIN_DEQUANTIZE_ADD, CHAIN_BLAZE_BLOCK } chain;

/* GR_DWPW's residual: none, at the output pixel, max-pooled 2x2/2, or the
 * block's own input (stride 1, rc = c: the BlazeBlocks that keep their
 * size). */
typedef enum res_mode { RES_NONE, RES_PIXEL, RES_POOL, RES_INPUT } res_mode;

typedef struct spec {
    gr_op op;
    int batch;
    int h, w, c; /* input 0 is [1, h, w, c] (rank 4) */
    int kh, kw, sh, sw, dil;
    int pt, pl, pb, pr; /* window padding; PAD: before/after of H and W */
    int cout, mult; /* CONV2D output channels; DWCONV2D multiplier */
    gr_act act;
    bool residual, no_bias;
    int const_operand; /* ADD: 1 = second operand constant, 2 = first */
    int pad_c0, pad_c1; /* PAD: channels before / after */
    int rank; /* PAD, RESHAPE, CONCAT: 3 for [1, h, c]-shaped tensors */
    int axis, ext[3]; /* CONCAT: axis and the inputs' extents along it */
    int oh, ow, mode; /* RESIZE_BILINEAR; mode 1 align_corners, 2 half_pixel */
    chain chain;
    res_mode res; /* GR_DWPW */
    int rc; /* GR_DWPW: residual channels (<= cout) */
    int block; /* DEPTH_TO_SPACE: output channels are c / (block * block) */
    int begin[3], stride[3]; /* STRIDED_SLICE of dims 1..3; output extents oh, ow, mode */
    int left, right, n_subset; /* LANDMARKS_TO_MATRIX: [1, h, 3] landmarks */
    short subset[GR_L2M_MAX_SUBSET][2];
} spec;

#define MAX_CASES 720
static spec cases[MAX_CASES];
static int n_cases;

static spec *add_case(gr_op op, int batch, int h, int w, int c)
{
    if (n_cases >= MAX_CASES)
        return &cases[MAX_CASES - 1];
    spec *s = &cases[n_cases++];
    memset(s, 0, sizeof *s);
    s->op = op;
    s->batch = batch;
    s->h = h, s->w = w, s->c = c;
    s->kh = s->kw = s->sh = s->sw = s->dil = 1;
    s->mult = 1;
    s->rank = 4;
    return s;
}

/* TFLite's SAME split: the extra pixel after. */
static void same_pad(int size, int k, int s, int dil, int *before, int *after)
{
    int out = (size + s - 1) / s, ke = (k - 1) * dil + 1;
    int total = (out - 1) * s + ke - size;
    if (total < 0)
        total = 0;
    *before = total / 2;
    *after = total - *before;
}

/* Sets a k x k window; grows the input to at least the window's extent so
 * that every random combination has an output. */
static void window(spec *s, int k, int stride, int dil, int padmode)
{
    int ke = (k - 1) * dil + 1;
    if (s->h < ke)
        s->h = ke;
    if (s->w < ke)
        s->w = ke;
    s->kh = s->kw = k;
    s->sh = s->sw = stride;
    s->dil = dil;
    s->pt = s->pl = s->pb = s->pr = 0;
    if (padmode == 1) { /* SAME */
        same_pad(s->h, k, stride, dil, &s->pt, &s->pb);
        same_pad(s->w, k, stride, dil, &s->pl, &s->pr);
    } else if (padmode == 2) { /* asymmetric */
        s->pt = 1, s->pl = 0, s->pb = 0, s->pr = 1;
    } else if (padmode == 3) { /* generous */
        s->pt = s->pl = s->pb = s->pr = k / 2 + 1;
    }
}

static gr_act any_act(void)
{
    return (gr_act)PICK(GR_ACT_NONE, GR_ACT_RELU, GR_ACT_RELU6, GR_ACT_PRELU);
}

static void make_cases(void)
{
    spec *s;
    /* Pointwise (GEMM) convolutions: odd and model channel counts. */
    s = add_case(GR_CONV2D, 3, 64, 64, 24); /* BlazeFace block */
    s->cout = 24, s->residual = true, s->act = GR_ACT_RELU;
    s = add_case(GR_CONV2D, 2, 16, 16, 88);
    s->cout = 96, s->act = GR_ACT_RELU;
    s = add_case(GR_CONV2D, 8, 8, 8, 96);
    s->cout = 96, s->residual = true, s->act = GR_ACT_PRELU;
    s = add_case(GR_CONV2D, 1, 12, 12, 128);
    s->cout = 128, s->act = GR_ACT_PRELU;
    s = add_case(GR_CONV2D, 1, 5, 7, 3);
    s->cout = 1, s->no_bias = true;
    /* The rows form (cuda_ops_gemm_rows.cu): full range's FPN laterals, a
     * batch of several tiles per warp, a partial tile, PRELU. */
    s = add_case(GR_CONV2D, 4, 24, 24, 64);
    s->cout = 48, s->act = GR_ACT_RELU;
    s = add_case(GR_CONV2D, 2, 12, 12, 96);
    s->cout = 64;
    s = add_case(GR_CONV2D, 64, 24, 24, 64);
    s->cout = 48, s->no_bias = true;
    s = add_case(GR_CONV2D, 5, 7, 9, 128);
    s->cout = 8, s->act = GR_ACT_RELU6;
    s = add_case(GR_CONV2D, 3, 11, 13, 32);
    s->cout = 24, s->act = GR_ACT_PRELU;
    s = add_case(GR_CONV2D, 40, 12, 12, 256); /* the float tile in the A tile's slot */
    s->cout = 96, s->act = GR_ACT_RELU;
    s = add_case(GR_CONV2D, 3, 5, 7, 160);
    s->cout = 16, s->act = GR_ACT_PRELU;
    /* A few channels in and out: BlazePose's segmentation path (8 -> 8
     * with the block's input added), its 24 -> 16, and other small K, N. */
    s = add_case(GR_CONV2D, 3, 37, 41, 8);
    s->cout = 8, s->residual = true, s->act = GR_ACT_RELU;
    s = add_case(GR_CONV2D, 2, 33, 31, 24);
    s->cout = 16;
    s = add_case(GR_CONV2D, 2, 9, 13, 32);
    s->cout = 8, s->residual = true, s->act = GR_ACT_PRELU;
    s = add_case(GR_CONV2D, 1, 16, 17, 16);
    s->cout = 16, s->residual = true, s->act = GR_ACT_RELU6, s->no_bias = true;
    /* Thin GEMMs of 4096 16-row tiles x 128-column blocks and more
     * (gemm_thin): BlazePose's 24 -> 144 (a second column block of 16),
     * K of 16 to 64 with and without residuals, partial last tiles, odd N
     * and N not a multiple of 8; K = 72 (a partial k16 step) into 8 column
     * blocks, the last partial. */
    s = add_case(GR_CONV2D, 1, 256, 256, 24);
    s->cout = 144, s->act = GR_ACT_RELU6;
    s = add_case(GR_CONV2D, 2, 64, 64, 72);
    s->cout = 1000, s->act = GR_ACT_RELU, s->residual = true;
    /* Its shape classes: the columns split into blocks of equal width
     * (the filter over 40 KB; odd N, the last block short), tasks of one
     * 64-column pass (32 -> 192 on few tiles for the warps), K = 8 (one
     * k16 step, half zeros), 112 (seven steps) and 120 (eight, half a
     * step of zeros), N = 16 (a pass of 16-byte stores), N = 88 (a pass
     * of 24 columns), partial last tiles. */
    s = add_case(GR_CONV2D, 1, 151, 149, 40);
    s->cout = 379, s->act = GR_ACT_PRELU, s->residual = true;
    s = add_case(GR_CONV2D, 2, 128, 128, 32);
    s->cout = 192, s->act = GR_ACT_PRELU, s->residual = true;
    s = add_case(GR_CONV2D, 1, 255, 257, 8);
    s->cout = 40, s->act = GR_ACT_RELU;
    s = add_case(GR_CONV2D, 1, 256, 256, 112);
    s->cout = 24, s->residual = true, s->act = GR_ACT_RELU6;
    s = add_case(GR_CONV2D, 1, 256, 255, 120);
    s->cout = 24, s->residual = true, s->no_bias = true;
    s = add_case(GR_CONV2D, 1, 257, 255, 24);
    s->cout = 16;
    s = add_case(GR_CONV2D, 1, 256, 256, 24);
    s->cout = 88, s->act = GR_ACT_RELU6, s->residual = true;
    /* K over 128 with N up to 32 (gemm_tc16_narrow's shapes before):
     * BlazePose's 144 -> 24 with the block's input, K = 184 (a last k16
     * step of zeros) into 18 columns, a partial last tile. */
    s = add_case(GR_CONV2D, 1, 256, 256, 144);
    s->cout = 24, s->residual = true;
    s = add_case(GR_CONV2D, 1, 255, 257, 184);
    s->cout = 18, s->act = GR_ACT_PRELU, s->residual = true;
    /* Long K (gemm_deep's ring of cp.async stages): BlazePose's 864 ->
     * 144 at 8x8 and 288 -> 288 at 4x4, a partial last K step and N tile,
     * K = 256 (8 steps), 144 -> 864. */
    s = add_case(GR_CONV2D, 3, 8, 8, 864);
    s->cout = 144, s->act = GR_ACT_RELU, s->residual = true;
    s = add_case(GR_CONV2D, 2, 4, 4, 288);
    s->cout = 288, s->act = GR_ACT_RELU;
    s = add_case(GR_CONV2D, 2, 5, 7, 264);
    s->cout = 66, s->act = GR_ACT_PRELU;
    s = add_case(GR_CONV2D, 1, 9, 11, 256);
    s->cout = 48, s->no_bias = true, s->residual = true;
    s = add_case(GR_CONV2D, 2, 8, 8, 144); /* 144 -> 864: 5 steps */
    s->cout = 864, s->act = GR_ACT_RELU6;
    /* gemm_deep (192 64x64 tiles and more; fewer: gemm_deep_ldsm's 32x32
     * tiles) at 144 -> 864 on 20 items at 8x8; N = 130, not a multiple of
     * 8 (pair stores, partial last tiles); N = 88 and 96, a partial last K
     * step. */
    s = add_case(GR_CONV2D, 20, 8, 8, 144);
    s->cout = 864, s->act = GR_ACT_RELU6, s->residual = true;
    s = add_case(GR_CONV2D, 1, 75, 76, 136);
    s->cout = 130, s->act = GR_ACT_PRELU, s->no_bias = true;
    s = add_case(GR_CONV2D, 33, 16, 16, 136);
    s->cout = 88, s->act = GR_ACT_RELU6, s->residual = true;
    s = add_case(GR_CONV2D, 1, 93, 91, 152);
    s->cout = 96;
    s = add_case(GR_CONV2D, 2, 181, 183, 32);
    s->cout = 24, s->residual = true, s->act = GR_ACT_PRELU;
    s = add_case(GR_CONV2D, 1, 257, 257, 16);
    s->cout = 72, s->residual = true, s->no_bias = true;
    s = add_case(GR_CONV2D, 1, 257, 256, 48); /* BlazePose's heatmap, odd N */
    s->cout = 39;
    s = add_case(GR_CONV2D, 1, 257, 257, 64);
    s->cout = 11, s->residual = true, s->act = GR_ACT_PRELU;
    s = add_case(GR_CONV2D, 1, 256, 257, 40);
    s->cout = 10, s->act = GR_ACT_RELU;
    for (int i = 0; i < 40; i++) {
        s = add_case(GR_CONV2D, PICK(1, 3, 8), PICK(1, 2, 5, 9, 16), PICK(1, 3, 7, 16),
                     PICK(1, 2, 3, 8, 16, 24, 28, 31, 42, 64, 96, 128));
        s->cout = PICK(1, 2, 6, 7, 16, 24, 28, 32, 33, 48, 64, 96, 128);
        s->act = any_act();
        s->residual = rnd() % 2;
        s->no_bias = rnd() % 5 == 0;
    }
    /* Whole-input windows (FaceMesh's heads): GEMM over items. */
    s = add_case(GR_CONV2D, 8, 3, 3, 32);
    window(s, 3, 3, 1, 0);
    s->cout = 1404;
    s = add_case(GR_CONV2D, 8, 3, 3, 32);
    window(s, 3, 3, 1, 0);
    s->cout = 1;
    s = add_case(GR_CONV2D, 3, 2, 2, 5);
    window(s, 2, 1, 1, 0);
    s->cout = 7, s->act = GR_ACT_PRELU;
    /* BlazePose's dense heads (odd N, a few tiles: gemm_wdot), one with
     * fewer items than a block's rows, and K too long for its shared
     * memory and a grid of many tiles (gemm_simt). */
    s = add_case(GR_CONV2D, 9, 2, 2, 288);
    window(s, 2, 1, 1, 0);
    s->cout = 195;
    s = add_case(GR_CONV2D, 2, 2, 2, 288);
    window(s, 2, 1, 1, 0);
    s->cout = 117, s->act = GR_ACT_PRELU, s->residual = true;
    s = add_case(GR_CONV2D, 5, 3, 3, 35);
    window(s, 3, 3, 1, 0);
    s->cout = 65, s->act = GR_ACT_RELU6, s->no_bias = true;
    s = add_case(GR_CONV2D, 3, 8, 8, 65);
    window(s, 8, 1, 1, 0);
    s->cout = 9;
    /* One and three outputs of a long dot product for a few items
     * (gemm_wdot in place of conv_dot): BlazePose's pose flag. */
    s = add_case(GR_CONV2D, 5, 2, 2, 288);
    window(s, 2, 1, 1, 0);
    s->cout = 1;
    s = add_case(GR_CONV2D, 2, 3, 3, 40);
    window(s, 3, 1, 1, 0);
    s->cout = 3, s->act = GR_ACT_PRELU, s->residual = true;
    s = add_case(GR_CONV2D, 4, 64, 66, 24);
    s->cout = 33, s->act = GR_ACT_RELU, s->residual = true;
    /* Direct convolutions: the stems and a sweep. */
    s = add_case(GR_CONV2D, 2, 128, 128, 3);
    window(s, 5, 2, 1, 1);
    s->cout = 24, s->act = GR_ACT_RELU;
    s = add_case(GR_CONV2D, 1, 192, 192, 3);
    window(s, 3, 2, 1, 1);
    s->cout = 16, s->act = GR_ACT_PRELU;
    s = add_case(GR_CONV2D, 3, 192, 192, 3); /* full-range stem */
    window(s, 3, 2, 1, 1);
    s->cout = 32, s->act = GR_ACT_RELU;
    s = add_case(GR_CONV2D, 20, 128, 128, 3); /* 320 tiles: stem blocks walk several */
    window(s, 5, 2, 1, 1);
    s->cout = 24, s->act = GR_ACT_RELU;
    s = add_case(GR_CONV2D, 9, 192, 192, 3); /* 324 tiles */
    window(s, 3, 2, 1, 1);
    s->cout = 16, s->act = GR_ACT_PRELU;
    s = add_case(GR_CONV2D, 3, 127, 129, 3); /* partial tiles, odd rows */
    window(s, 3, 2, 1, 1);
    s->cout = 32, s->act = GR_ACT_PRELU, s->residual = true;
    s = add_case(GR_CONV2D, 2, 37, 23, 3); /* generous padding, 4-byte stores */
    window(s, 5, 2, 1, 3);
    s->cout = 10, s->residual = true;
    s = add_case(GR_CONV2D, 3, 20, 45, 3);
    window(s, 3, 2, 1, 2);
    s->cout = 6, s->act = GR_ACT_RELU6, s->no_bias = true;
    s = add_case(GR_CONV2D, 5, 17, 9, 3);
    window(s, 5, 2, 1, 1);
    s->cout = 32, s->act = GR_ACT_PRELU, s->residual = true;
    s = add_case(GR_CONV2D, 1, 5, 5, 3); /* one output pixel */
    window(s, 5, 2, 1, 0);
    s->cout = 8;
    /* Few output channels from 16-byte channel vectors (conv_direct_few):
     * BlazePose's segmentation output (3x3 SAME, 8 -> 1), and 2, 3 and 8
     * outputs from 16 and 8 channels, strided and padded. */
    s = add_case(GR_CONV2D, 3, 37, 29, 8);
    window(s, 3, 1, 1, 1);
    s->cout = 1;
    s = add_case(GR_CONV2D, 2, 17, 19, 16);
    window(s, 3, 2, 1, 3);
    s->cout = 3, s->act = GR_ACT_PRELU, s->residual = true;
    s = add_case(GR_CONV2D, 2, 12, 9, 8);
    window(s, 5, 1, 2, 1);
    s->cout = 8, s->act = GR_ACT_RELU6;
    s = add_case(GR_CONV2D, 1, 9, 9, 16);
    window(s, 3, 1, 1, 2);
    s->cout = 2, s->act = GR_ACT_RELU, s->no_bias = true;
    /* 8 channels at stride 1 from a window in shared memory
     * (conv_window_few): partial tiles both ways, 5x5, VALID, PRELU. */
    s = add_case(GR_CONV2D, 2, 20, 40, 8);
    window(s, 5, 1, 1, 1);
    s->cout = 3, s->act = GR_ACT_PRELU, s->residual = true;
    s = add_case(GR_CONV2D, 3, 9, 70, 8);
    window(s, 3, 1, 1, 1);
    s->cout = 8, s->act = GR_ACT_RELU6;
    s = add_case(GR_CONV2D, 1, 19, 18, 8);
    window(s, 3, 1, 1, 0);
    s->cout = 2, s->no_bias = true;
    for (int i = 0; i < 30; i++) {
        s = add_case(GR_CONV2D, PICK(1, 3, 8), PICK(1, 4, 7, 12), PICK(1, 5, 9, 12),
                     PICK(1, 2, 3, 4, 5, 16, 32));
        window(s, PICK(1, 2, 3, 5), PICK(1, 2), PICK(1, 1, 2), PICK(0, 1, 2, 3));
        if (s->kh == 1 && s->sh == 1 && s->pt + s->pl + s->pb + s->pr == 0)
            s->sh = s->sw = 2; /* keep it off the GEMM path */
        s->cout = PICK(1, 5, 8, 13, 16, 24, 33, 40);
        s->act = any_act();
        s->residual = rnd() % 3 == 0;
        s->no_bias = rnd() % 5 == 0;
    }
    /* Depthwise. */
    s = add_case(GR_DWCONV2D, 3, 64, 64, 24);
    window(s, 3, 1, 1, 1);
    s = add_case(GR_DWCONV2D, 3, 64, 64, 28);
    window(s, 3, 2, 1, 1);
    s = add_case(GR_DWCONV2D, 8, 8, 8, 96);
    window(s, 5, 1, 1, 1);
    s->act = GR_ACT_PRELU, s->residual = true;
    /* Rows of outputs per thread (dwconv_rows, grids of 65536 threads and
     * more): 3x3 and 5x5 at strides 1 and 2, widths not a multiple of 4,
     * SAME and asymmetric padding. */
    s = add_case(GR_DWCONV2D, 4, 45, 47, 256);
    window(s, 3, 1, 1, 1);
    s->act = GR_ACT_RELU6, s->residual = true;
    s = add_case(GR_DWCONV2D, 2, 64, 61, 256);
    window(s, 5, 1, 1, 1);
    s->act = GR_ACT_PRELU;
    s = add_case(GR_DWCONV2D, 4, 91, 93, 256);
    window(s, 3, 2, 1, 1);
    s->act = GR_ACT_RELU, s->no_bias = true;
    s = add_case(GR_DWCONV2D, 4, 91, 93, 256);
    window(s, 5, 2, 1, 2);
    s->residual = true;
    /* Tiles in shared memory (dwconv_tile, the same grids): 3 channel
     * vectors a pixel in fp16 (padded columns); 9 vectors a tile with a
     * partial last tile along W and H, 5x5 at stride 2. */
    s = add_case(GR_DWCONV2D, 6, 128, 128, 24);
    window(s, 3, 1, 1, 1);
    s->act = GR_ACT_RELU6;
    s = add_case(GR_DWCONV2D, 29, 64, 61, 72);
    window(s, 5, 2, 1, 1);
    s->act = GR_ACT_PRELU, s->residual = true;
    /* 3x3 on small images with 16-byte vectors (dwconv_vec3): BlazePose's
     * 288-channel tail at 4x4 and 2x2, stride 2 from 8x8, dilation 2 with
     * generous padding. */
    s = add_case(GR_DWCONV2D, 2, 4, 4, 288);
    window(s, 3, 1, 1, 1);
    s->act = GR_ACT_RELU6;
    s = add_case(GR_DWCONV2D, 2, 8, 8, 288);
    window(s, 3, 2, 1, 1);
    s->act = GR_ACT_RELU6;
    s = add_case(GR_DWCONV2D, 3, 2, 2, 288);
    window(s, 3, 1, 1, 1);
    s->residual = true, s->no_bias = true;
    s = add_case(GR_DWCONV2D, 1, 5, 6, 40);
    window(s, 3, 1, 2, 3);
    s->act = GR_ACT_PRELU, s->residual = true;
    for (int i = 0; i < 40; i++) {
        s = add_case(GR_DWCONV2D, PICK(1, 3, 8), PICK(1, 3, 6, 11, 16), PICK(1, 4, 9, 16),
                     PICK(1, 3, 4, 8, 16, 24, 28, 42, 64, 127, 128));
        window(s, PICK(1, 3, 3, 5), PICK(1, 2), PICK(1, 1, 1, 2), PICK(0, 1, 1, 2, 3));
        s->mult = PICK(1, 1, 1, 2, 3);
        s->act = any_act();
        s->residual = rnd() % 3 == 0;
        s->no_bias = rnd() % 5 == 0;
    }
    /* Fused blocks (GR_DWPW): the models' blocks, then a sweep. */
    struct {
        int batch, h, c, k, stride, cout, rc;
        res_mode res;
        gr_act act;
    } blocks[] = {
        {3, 64, 24, 3, 1, 24, 24, RES_PIXEL, GR_ACT_RELU}, /* short range */
        {3, 64, 24, 3, 1, 28, 24, RES_PIXEL, GR_ACT_RELU}, /* + channel PAD */
        {3, 64, 28, 3, 2, 32, 28, RES_POOL, GR_ACT_RELU}, /* + MAX_POOL + PAD */
        {2, 16, 88, 3, 2, 96, 88, RES_POOL, GR_ACT_RELU},
        {2, 32, 36, 3, 1, 42, 36, RES_PIXEL, GR_ACT_RELU},
        {2, 12, 128, 3, 1, 128, 128, RES_PIXEL, GR_ACT_PRELU}, /* FaceMesh */
        {2, 6, 128, 3, 2, 128, 128, RES_POOL, GR_ACT_PRELU},
        {2, 96, 32, 3, 1, 8, 0, RES_NONE, GR_ACT_RELU}, /* full range */
        {2, 96, 8, 3, 1, 32, 32, RES_PIXEL, GR_ACT_RELU},
        {2, 6, 384, 3, 1, 96, 0, RES_NONE, GR_ACT_RELU},
        {1, 12, 256, 3, 2, 96, 0, RES_NONE, GR_ACT_RELU},
        {40, 32, 32, 3, 1, 36, 32, RES_PIXEL, GR_ACT_RELU}, /* 128-row tiles */
        {20, 32, 24, 3, 2, 24, 24, RES_POOL, GR_ACT_RELU}, /* 32-row tiles */
        {2, 9, 7, 3, 1, 5, 3, RES_PIXEL, GR_ACT_RELU}, /* odd: the FFMA form */
        {1, 5, 512, 3, 1, 16, 16, RES_PIXEL, GR_ACT_NONE}, /* the widest tile */
        {1, 96, 16, 3, 1, 16, 16, RES_PIXEL, GR_ACT_PRELU}, /* mma form: column tiles */
        {1, 20, 24, 3, 1, 96, 24, RES_PIXEL, GR_ACT_RELU6}, /* cout split over blocks */
        {1, 6, 128, 3, 1, 136, 128, RES_PIXEL, GR_ACT_PRELU}, /* 3 slices, the last short */
        {600, 4, 16, 3, 1, 24, 16, RES_PIXEL, GR_ACT_RELU}, /* several items a tile */
        {600, 4, 16, 3, 2, 16, 16, RES_POOL, GR_ACT_NONE},
        {8, 48, 48, 3, 1, 12, 0, RES_NONE, GR_ACT_RELU}, /* mma form: narrowing blocks */
        {32, 24, 64, 3, 1, 32, 32, RES_PIXEL, GR_ACT_RELU},
        {32, 24, 64, 3, 1, 64, 64, RES_PIXEL, GR_ACT_PRELU},
        {3, 64, 24, 3, 1, 24, 24, RES_INPUT, GR_ACT_RELU}, /* the input as residual */
        {3, 64, 24, 3, 1, 28, 24, RES_INPUT, GR_ACT_RELU},
        {1, 96, 16, 3, 1, 16, 16, RES_INPUT, GR_ACT_PRELU},
        {32, 24, 64, 3, 1, 64, 64, RES_INPUT, GR_ACT_PRELU},
        {2, 12, 128, 3, 1, 128, 128, RES_INPUT, GR_ACT_PRELU},
        /* Large batches: thousands of dwpw_mma tiles */
        {200, 48, 32, 3, 1, 8, 0, RES_NONE, GR_ACT_RELU},
        {200, 48, 8, 3, 1, 32, 32, RES_PIXEL, GR_ACT_RELU},
        {300, 40, 16, 3, 1, 16, 16, RES_INPUT, GR_ACT_PRELU},
        {150, 37, 24, 3, 1, 24, 24, RES_INPUT, GR_ACT_RELU6},
    };
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
        s = add_case(GR_DWPW, blocks[i].batch, blocks[i].h, blocks[i].h, blocks[i].c);
        window(s, blocks[i].k, blocks[i].stride, 1, blocks[i].stride == 1 ? 1 : 2);
        if (blocks[i].stride == 2)
            s->pt = s->pl = 0, s->pb = s->pr = 1;
        s->cout = blocks[i].cout, s->rc = blocks[i].rc, s->res = blocks[i].res;
        s->act = blocks[i].act;
    }
    for (int i = 0; i < 30; i++) {
        s = add_case(GR_DWPW, PICK(1, 3, 8), PICK(1, 3, 6, 11, 16), PICK(1, 4, 9, 16),
                     PICK(1, 2, 3, 8, 16, 24, 28, 42, 64, 96, 128));
        window(s, PICK(1, 3, 3, 5), PICK(1, 2), PICK(1, 1, 1, 2), PICK(0, 1, 1, 2, 3));
        s->cout = PICK(1, 2, 7, 16, 24, 32, 48, 96, 130);
        s->res = (res_mode)PICK(RES_NONE, RES_PIXEL, RES_POOL);
        s->rc = s->res == RES_NONE ? 0 : 1 + (int)(rnd() % (unsigned)s->cout);
        s->act = any_act();
        s->no_bias = rnd() % 5 == 0;
    }
    /* Max pooling: 2x2/2 of the models, with SAME padding, and others. */
    s = add_case(GR_MAXPOOL, 3, 64, 64, 28);
    window(s, 2, 2, 1, 0);
    s = add_case(GR_MAXPOOL, 2, 96, 96, 16);
    window(s, 2, 2, 1, 1);
    for (int i = 0; i < 16; i++) {
        s = add_case(GR_MAXPOOL, PICK(1, 3, 8), PICK(2, 5, 8, 15), PICK(2, 7, 8, 16),
                     PICK(1, 3, 7, 8, 16, 28, 64, 96));
        window(s, PICK(2, 3), PICK(1, 2), 1, PICK(0, 1));
    }
    /* Element-wise. */
    for (int i = 0; i < 14; i++) {
        s = add_case(GR_ADD, PICK(1, 3, 8), PICK(1, 4, 9), PICK(1, 5, 16),
                     PICK(1, 3, 8, 24, 28, 96));
        s->act = any_act();
    }
    s = add_case(GR_ADD, 3, 6, 6, 8);
    s->const_operand = 1, s->act = GR_ACT_RELU;
    s = add_case(GR_ADD, 8, 3, 5, 7);
    s->const_operand = 2;
    for (int i = 0; i < 6; i++) {
        s = add_case(PICK(GR_RELU, GR_PRELU), PICK(1, 3, 8), PICK(1, 4, 9), PICK(1, 5, 16),
                     PICK(1, 3, 8, 24, 32, 33));
        s->act = s->op == GR_PRELU ? GR_ACT_PRELU : GR_ACT_RELU;
    }
    /* PAD: channels (BlazeFace's 24 -> 28), spatial, both; rank 3. */
    s = add_case(GR_PAD, 3, 64, 64, 24);
    s->pad_c1 = 4;
    s = add_case(GR_PAD, 3, 16, 16, 64);
    s->pad_c1 = 8;
    s = add_case(GR_PAD, 2, 5, 7, 3);
    s->pt = 1, s->pl = 2, s->pb = 0, s->pr = 3, s->pad_c0 = 2, s->pad_c1 = 1;
    s = add_case(GR_PAD, 8, 4, 4, 8);
    s->pt = 2, s->pr = 1, s->pad_c0 = 8, s->pad_c1 = 16;
    s = add_case(GR_PAD, 3, 1, 10, 6);
    s->rank = 3, s->pl = 1, s->pr = 2, s->pad_c1 = 3;
    /* RESHAPE (a copy on the GPU when buffers differ). */
    s = add_case(GR_RESHAPE, 3, 16, 16, 2);
    s->ext[0] = 1;
    s = add_case(GR_RESHAPE, 8, 8, 8, 96);
    s->ext[0] = 16;
    /* CONCAT: BlazeFace's rank-3 axis 1, channels, rows. */
    s = add_case(GR_CONCAT, 3, 0, 0, 16);
    s->rank = 3, s->axis = 1, s->ext[0] = 512, s->ext[1] = 384;
    s = add_case(GR_CONCAT, 8, 0, 0, 1);
    s->rank = 3, s->axis = 1, s->ext[0] = 512, s->ext[1] = 384;
    s = add_case(GR_CONCAT, 2, 5, 6, 0);
    s->axis = 3, s->ext[0] = 3, s->ext[1] = 8, s->ext[2] = 5;
    s = add_case(GR_CONCAT, 3, 0, 7, 4);
    s->axis = 1, s->ext[0] = 2, s->ext[1] = 5;
    s = add_case(GR_CONCAT, 1, 4, 0, 3);
    s->axis = 2, s->ext[0] = 1, s->ext[1] = 6, s->ext[2] = 2;
    /* RESIZE_BILINEAR: full-range's 2x upsampling and odd scales, all modes. */
    s = add_case(GR_RESIZE_BILINEAR, 3, 6, 6, 96);
    s->oh = 12, s->ow = 12, s->mode = 2;
    s = add_case(GR_RESIZE_BILINEAR, 2, 24, 24, 48);
    s->oh = 48, s->ow = 48, s->mode = 2;
    for (int i = 0; i < 12; i++) {
        s = add_case(GR_RESIZE_BILINEAR, PICK(1, 3, 8), PICK(1, 3, 7, 12), PICK(1, 4, 9),
                     PICK(1, 3, 8, 24));
        s->oh = PICK(1, 2, 5, 12, 17), s->ow = PICK(1, 3, 8, 13);
        s->mode = i % 3;
    }
    /* Chains: DEQUANTIZE of an fp16 constant feeding an ADD; a BlazeFace
     * block (depthwise, channel PAD, pointwise with the padded residual). */
    s = add_case(GR_DEQUANTIZE, 1, 4, 5, 8);
    s->chain = CHAIN_DEQUANTIZE_ADD;
    s = add_case(GR_DEQUANTIZE, 1, 3, 3, 5);
    s->chain = CHAIN_DEQUANTIZE_ADD;
    s = add_case(GR_CONV2D, 3, 32, 32, 28);
    s->chain = CHAIN_BLAZE_BLOCK, s->cout = 32;
    s = add_case(GR_CONV2D, 2, 16, 16, 42);
    s->chain = CHAIN_BLAZE_BLOCK, s->cout = 48;
    /* Rows added later go last, so the earlier rows' random shapes stay
     * as they were. LOGISTIC: BlazePose's pose flag [1, 1, 1, 1], odd and vector-friendly
     * sizes. */
    s = add_case(GR_LOGISTIC, 1, 1, 1, 1);
    s = add_case(GR_LOGISTIC, 5, 1, 1, 1);
    for (int i = 0; i < 6; i++)
        s = add_case(GR_LOGISTIC, PICK(1, 2, 7), PICK(1, 3, 16), PICK(1, 5, 16), PICK(1, 3, 8, 39));
    /* DEPTH_TO_SPACE: pose detection's three (7x7x1152, 14x14x192,
     * 28x28x96, block 2), then odd channel counts and block 3. */
    s = add_case(GR_DEPTH_TO_SPACE, 2, 7, 7, 1152);
    s->block = 2;
    s = add_case(GR_DEPTH_TO_SPACE, 3, 14, 14, 192);
    s->block = 2;
    s = add_case(GR_DEPTH_TO_SPACE, 1, 28, 28, 96);
    s->block = 2;
    for (int i = 0; i < 6; i++) {
        int b = i % 3 == 2 ? 3 : 2;
        s = add_case(GR_DEPTH_TO_SPACE, PICK(1, 2, 5), PICK(1, 3, 6), PICK(1, 4, 7),
                     b * b * PICK(1, 3, 8, 24));
        s->block = b;
    }
    /* The attention mesh's ops. MUL: its [1, 468, 3] by one value, its
     * [1, 4, 4] matrices by a constant matrix, then two activations and
     * either constant side (const_operand 1: second, 2: first; rank 3 when
     * w == 0), with an activation. */
    s = add_case(GR_MUL, 3, 468, 3, 0);
    s->rank = 3, s->const_operand = 1, s->mode = 1;
    s = add_case(GR_MUL, 2, 4, 4, 0);
    s->rank = 3, s->const_operand = 2;
    for (int i = 0; i < 6; i++) {
        s = add_case(GR_MUL, PICK(1, 2, 7), PICK(1, 3, 16), PICK(1, 5, 16), PICK(1, 3, 8, 39));
        s->const_operand = i % 3;
        s->mode = i % 2; /* 1: the constant is one value */
        s->act = i == 4 ? GR_ACT_RELU : i == 5 ? GR_ACT_RELU6 : GR_ACT_NONE;
    }
    /* STRIDED_SLICE: the mesh's identity of [1, 1, 1, 1404], then begin and
     * stride drawn per dimension. */
    s = add_case(GR_STRIDED_SLICE, 2, 1, 1, 1404);
    s->oh = 1, s->ow = 1, s->mode = 1404;
    s->stride[0] = s->stride[1] = s->stride[2] = 1;
    for (int i = 0; i < 6; i++) {
        s = add_case(GR_STRIDED_SLICE, PICK(1, 3), PICK(1, 4, 9), PICK(2, 7), PICK(1, 5, 33));
        int in[3] = {s->h, s->w, s->c}, out[3];
        for (int d = 0; d < 3; d++) {
            s->stride[d] = PICK(1, 2, 3);
            s->begin[d] = (int)(rnd() % (unsigned)in[d]);
            out[d] = 1 + (int)(rnd() % (unsigned)((in[d] - 1 - s->begin[d]) / s->stride[d] + 1));
        }
        s->oh = out[0], s->ow = out[1], s->mode = out[2];
    }
    /* LANDMARKS_TO_MATRIX: the mesh's 468 landmarks with its lips subset
     * size (40 pairs), then random counts; indices and the rotation pair
     * drawn. */
    for (int i = 0; i < 6; i++) {
        s = add_case(GR_LANDMARKS_TO_MATRIX, i ? PICK(1, 2, 9) : 4, i ? PICK(2, 5, 71) : 468, 3, 0);
        s->rank = 3;
        s->oh = i ? PICK(1, 16, 24) : 16, s->ow = i ? PICK(1, 16, 7) : 16;
        s->n_subset = i ? PICK(1, 3, GR_L2M_MAX_SUBSET) : 40;
        s->left = (int)(rnd() % (unsigned)s->h);
        s->right = (int)(rnd() % (unsigned)s->h);
        for (int k = 0; k < s->n_subset; k++)
            for (int j = 0; j < 2; j++)
                s->subset[k][j] = (short)(rnd() % (unsigned)s->h);
    }
    /* TRANSFORM_BILINEAR: the mesh's 48x48x32 -> 16x16, then small inputs
     * (the random matrix lands a fair share of samples inside them). */
    s = add_case(GR_TRANSFORM_BILINEAR, 3, 48, 48, 32);
    s->oh = s->ow = 16;
    for (int i = 0; i < 6; i++) {
        s = add_case(GR_TRANSFORM_BILINEAR, PICK(1, 2, 5), PICK(2, 3, 6), PICK(2, 4, 5),
                     PICK(1, 3, 8, 33));
        s->oh = PICK(1, 4, 9), s->ow = PICK(1, 5, 16);
    }
    /* TRANSFORM_LANDMARKS: the mesh's [1, 80, 2], [1, 71, 2], [1, 5, 2],
     * then 3-D landmarks. */
    s = add_case(GR_TRANSFORM_LANDMARKS, 3, 80, 2, 0);
    s = add_case(GR_TRANSFORM_LANDMARKS, 2, 71, 2, 0);
    s = add_case(GR_TRANSFORM_LANDMARKS, 1, 5, 2, 0);
    for (int i = 0; i < 4; i++)
        s = add_case(GR_TRANSFORM_LANDMARKS, PICK(1, 2, 9), PICK(1, 7, 468), 3, 0);
}

/* ---- graphs --------------------------------------------------------------- */

static int tensor(gr_graph *g, int rank, int d1, int d2, int d3)
{
    int dims[4] = {1, d1, d2, d3}, t;
    return gr_add_tensor(g, "t", rank, dims, GR_F32, NULL, 0, &t) == OMMA_OK ? t : -1;
}

static int input(gr_graph *g, int rank, int d1, int d2, int d3)
{
    int t = tensor(g, rank, d1, d2, d3);
    if (t >= 0 && g->n_inputs < GR_MAX_IO)
        g->inputs[g->n_inputs++] = t;
    return t;
}

static int constant(gr_graph *g, int rank, int d0, int d1, int d2, int d3, float lo, float hi)
{
    int v[4] = {d0, d1, d2, d3};
    return tg_const(g, "c", v[0], rank > 1 ? v[1] : 0, rank > 2 ? v[2] : 0, rank > 3 ? v[3] : 0,
                    rnd(), lo, hi);
}

static int add_node(gr_graph *g, gr_node *n)
{
    return gr_add_node(g, n, NULL) == OMMA_OK ? n->out : -1;
}

static int window_out(int size, int pa, int pb, int k, int s, int dil)
{
    return (size + pa + pb - ((k - 1) * dil + 1)) / s + 1;
}

/* A convolution node of x (activation [1,h,w,c]) per s; residual and alpha
 * as s says. Returns the output tensor. */
static int build_conv(gr_graph *g, const spec *s, gr_op op, int x, int h, int w, int c, int cout)
{
    gr_node n = tg_node(op);
    n.n_in = 3;
    n.in[0] = x;
    n.p.conv.win = (gr_window){.kh = s->kh,
                               .kw = s->kw,
                               .stride_h = s->sh,
                               .stride_w = s->sw,
                               .dil_h = s->dil,
                               .dil_w = s->dil,
                               .pad_top = s->pt,
                               .pad_left = s->pl,
                               .pad_bottom = s->pb,
                               .pad_right = s->pr};
    int oh = window_out(h, s->pt, s->pb, s->kh, s->sh, s->dil);
    int ow = window_out(w, s->pl, s->pr, s->kw, s->sw, s->dil);
    float bound;
    if (op == GR_DWCONV2D) {
        n.p.conv.depth_multiplier = s->mult;
        cout = c * s->mult;
        bound = 1.0f / sqrtf((float)(s->kh * s->kw));
        n.in[1] = constant(g, 4, 1, s->kh, s->kw, cout, -bound, bound);
    } else {
        bound = 1.0f / sqrtf((float)(s->kh * s->kw * c));
        n.in[1] = constant(g, 4, cout, s->kh, s->kw, c, -bound, bound);
    }
    n.in[2] = s->no_bias ? -1 : constant(g, 1, cout, 0, 0, 0, -0.5f, 0.5f);
    n.p.conv.act = s->act;
    if (s->act == GR_ACT_PRELU)
        n.p.conv.alpha = constant(g, 1, cout, 0, 0, 0, -0.5f, 1.0f);
    if (s->residual)
        n.p.conv.residual = input(g, 4, oh, ow, cout);
    n.out = tensor(g, 4, oh, ow, cout);
    return add_node(g, &n);
}

/* A GR_DWPW node of a fresh input per s: depthwise window of s, pointwise
 * to s->cout, the residual a second input of s->rc channels (twice the
 * output's size when pooled). */
static int build_dwpw(gr_graph *g, const spec *s)
{
    gr_node n = tg_node(GR_DWPW);
    n.n_in = 5;
    n.in[0] = input(g, 4, s->h, s->w, s->c);
    n.p.conv.win = (gr_window){.kh = s->kh,
                               .kw = s->kw,
                               .stride_h = s->sh,
                               .stride_w = s->sw,
                               .dil_h = s->dil,
                               .dil_w = s->dil,
                               .pad_top = s->pt,
                               .pad_left = s->pl,
                               .pad_bottom = s->pb,
                               .pad_right = s->pr};
    n.p.conv.depth_multiplier = 1;
    int oh = window_out(s->h, s->pt, s->pb, s->kh, s->sh, s->dil);
    int ow = window_out(s->w, s->pl, s->pr, s->kw, s->sw, s->dil);
    float bound = 1.0f / sqrtf((float)(s->kh * s->kw));
    n.in[1] = constant(g, 4, 1, s->kh, s->kw, s->c, -bound, bound);
    n.in[2] = s->no_bias ? -1 : constant(g, 1, s->c, 0, 0, 0, -0.5f, 0.5f);
    bound = 1.0f / sqrtf((float)s->c);
    n.in[3] = constant(g, 4, s->cout, 1, 1, s->c, -bound, bound);
    n.in[4] = s->no_bias ? -1 : constant(g, 1, s->cout, 0, 0, 0, -0.5f, 0.5f);
    n.p.conv.act = s->act;
    if (s->act == GR_ACT_PRELU)
        n.p.conv.alpha = constant(g, 1, s->cout, 0, 0, 0, -0.5f, 1.0f);
    if (s->res == RES_PIXEL)
        n.p.conv.residual = input(g, 4, oh, ow, s->rc);
    if (s->res == RES_INPUT)
        n.p.conv.residual = n.in[0];
    if (s->res == RES_POOL) {
        n.p.conv.residual = input(g, 4, 2 * oh, 2 * ow, s->rc);
        n.p.conv.pool_residual = true;
    }
    n.out = tensor(g, 4, oh, ow, s->cout);
    return add_node(g, &n);
}

static int build_mesh_op(gr_graph *g, const spec *s);

static int build(gr_graph *g, const spec *s)
{
    if (s->op == GR_DWPW)
        return build_dwpw(g, s);
    if (s->op >= GR_MUL && s->op <= GR_TRANSFORM_LANDMARKS)
        return build_mesh_op(g, s);
    int x, y = -1;
    gr_node n = tg_node(s->op);
    switch (s->chain) {
    case CHAIN_DEQUANTIZE_ADD: {
        size_t e = (size_t)s->h * s->w * s->c;
        unsigned short *h = malloc(e * sizeof *h);
        if (!h)
            return -1;
        for (size_t i = 0; i < e; i++) /* finite halves of magnitude 2^-8 .. 2^4 */
            h[i] =
                (unsigned short)((rnd() & 0x8000u) | ((7u + rnd() % 12u) << 10) | (rnd() & 0x3ffu));
        int dims[4] = {1, s->h, s->w, s->c}, c16;
        omma_status st = gr_add_tensor(g, "w16", 4, dims, GR_F16, h, e * sizeof *h, &c16);
        free(h);
        if (st != OMMA_OK)
            return -1;
        x = input(g, 4, s->h, s->w, s->c);
        n.n_in = 1;
        n.in[0] = c16;
        n.out = tensor(g, 4, s->h, s->w, s->c);
        int dq = add_node(g, &n);
        gr_node a = tg_node(GR_ADD);
        a.n_in = 2;
        a.in[0] = x;
        a.in[1] = dq;
        a.out = tensor(g, 4, s->h, s->w, s->c);
        return add_node(g, &a);
    }
    case CHAIN_BLAZE_BLOCK: {
        x = input(g, 4, s->h, s->w, s->c);
        spec d = *s;
        d.kh = d.kw = 3;
        d.pt = d.pl = d.pb = d.pr = 1;
        d.act = GR_ACT_NONE;
        d.residual = false;
        int t = build_conv(g, &d, GR_DWCONV2D, x, s->h, s->w, s->c, s->c);
        gr_node p = tg_node(GR_PAD);
        p.n_in = 1;
        p.in[0] = x;
        p.p.pad.after[3] = s->cout - s->c;
        p.out = tensor(g, 4, s->h, s->w, s->cout);
        int padded = add_node(g, &p);
        gr_node c = tg_node(GR_CONV2D);
        c.n_in = 3;
        c.in[0] = t;
        c.in[1] = constant(g, 4, s->cout, 1, 1, s->c, -0.3f, 0.3f);
        c.in[2] = constant(g, 1, s->cout, 0, 0, 0, -0.5f, 0.5f);
        c.p.conv.win =
            (gr_window){.kh = 1, .kw = 1, .stride_h = 1, .stride_w = 1, .dil_h = 1, .dil_w = 1};
        c.p.conv.residual = padded;
        c.p.conv.act = GR_ACT_RELU;
        c.out = tensor(g, 4, s->h, s->w, s->cout);
        return t < 0 || padded < 0 ? -1 : add_node(g, &c);
    }
    case CHAIN_NONE:
        break;
    }
    switch (s->op) {
    case GR_CONV2D:
    case GR_DWCONV2D:
        x = input(g, 4, s->h, s->w, s->c);
        return build_conv(g, s, s->op, x, s->h, s->w, s->c, s->cout);
    case GR_MAXPOOL:
        x = input(g, 4, s->h, s->w, s->c);
        n.n_in = 1;
        n.in[0] = x;
        n.p.pool.win = (gr_window){.kh = s->kh,
                                   .kw = s->kw,
                                   .stride_h = s->sh,
                                   .stride_w = s->sw,
                                   .dil_h = 1,
                                   .dil_w = 1,
                                   .pad_top = s->pt,
                                   .pad_left = s->pl,
                                   .pad_bottom = s->pb,
                                   .pad_right = s->pr};
        n.out = tensor(g, 4, window_out(s->h, s->pt, s->pb, s->kh, s->sh, 1),
                       window_out(s->w, s->pl, s->pr, s->kw, s->sw, 1), s->c);
        return add_node(g, &n);
    case GR_ADD:
    case GR_RELU:
    case GR_PRELU:
        n.n_in = s->op == GR_RELU ? 1 : 2;
        if (s->op == GR_ADD) {
            for (int k = 0; k < 2; k++)
                n.in[k] = s->const_operand == k + 1
                              ? constant(g, 4, 1, s->h, s->w, s->c, -1.0f, 1.0f)
                              : input(g, 4, s->h, s->w, s->c);
            n.p.add.act = s->act;
            if (s->act == GR_ACT_PRELU)
                n.p.add.alpha = constant(g, 1, s->c, 0, 0, 0, -0.5f, 1.0f);
        } else {
            n.in[0] = input(g, 4, s->h, s->w, s->c);
            if (s->op == GR_PRELU)
                n.in[1] = constant(g, 3, 1, 1, s->c, 0, -0.5f, 1.0f);
        }
        n.out = tensor(g, 4, s->h, s->w, s->c);
        return add_node(g, &n);
    case GR_PAD:
        n.n_in = 1;
        if (s->rank == 3) {
            n.in[0] = input(g, 3, s->w, s->c, 0);
            n.p.pad.before[1] = s->pl, n.p.pad.after[1] = s->pr;
            n.p.pad.before[2] = s->pad_c0, n.p.pad.after[2] = s->pad_c1;
            n.out = tensor(g, 3, s->w + s->pl + s->pr, s->c + s->pad_c0 + s->pad_c1, 0);
        } else {
            n.in[0] = input(g, 4, s->h, s->w, s->c);
            n.p.pad.before[1] = s->pt, n.p.pad.after[1] = s->pb;
            n.p.pad.before[2] = s->pl, n.p.pad.after[2] = s->pr;
            n.p.pad.before[3] = s->pad_c0, n.p.pad.after[3] = s->pad_c1;
            n.out = tensor(g, 4, s->h + s->pt + s->pb, s->w + s->pl + s->pr,
                           s->c + s->pad_c0 + s->pad_c1);
        }
        return add_node(g, &n);
    case GR_RESHAPE:
        n.n_in = 1;
        n.in[0] = input(g, 4, s->h, s->w, s->c);
        n.out = tensor(g, 3, s->h * s->w * s->c / s->ext[0], s->ext[0], 0);
        return add_node(g, &n);
    case GR_CONCAT: {
        n.p.concat.axis = s->axis;
        int rank = s->rank, d[4] = {1, s->h, s->w, s->c}, sum = 0;
        if (rank == 3) /* [1, rows, c] */
            d[2] = s->c;
        for (int k = 0; k < 3 && s->ext[k] > 0; k++) {
            d[s->axis] = s->ext[k];
            sum += s->ext[k];
            n.in[n.n_in++] = input(g, rank, d[1], d[2], rank == 4 ? d[3] : 0);
        }
        d[s->axis] = sum;
        n.out = tensor(g, rank, d[1], d[2], rank == 4 ? d[3] : 0);
        return add_node(g, &n);
    }
    case GR_RESIZE_BILINEAR:
        n.n_in = 1;
        n.in[0] = input(g, 4, s->h, s->w, s->c);
        n.p.resize.align_corners = s->mode == 1;
        n.p.resize.half_pixel_centers = s->mode == 2;
        n.out = tensor(g, 4, s->oh, s->ow, s->c);
        return add_node(g, &n);
    case GR_LOGISTIC:
        n.n_in = 1;
        n.in[0] = input(g, 4, s->h, s->w, s->c);
        n.out = tensor(g, 4, s->h, s->w, s->c);
        return add_node(g, &n);
    case GR_DEPTH_TO_SPACE:
        n.n_in = 1;
        n.in[0] = input(g, 4, s->h, s->w, s->c);
        n.p.d2s.block = s->block;
        n.out = tensor(g, 4, s->h * s->block, s->w * s->block, s->c / (s->block * s->block));
        return add_node(g, &n);
    default:
        break;
    }
    (void)y;
    return -1;
}

/* The attention mesh's ops (rows at the end of make_cases). */
static int build_mesh_op(gr_graph *g, const spec *s)
{
    gr_node n = tg_node(s->op);
    int r3 = s->rank == 3 || s->c == 0;
    switch (s->op) {
    case GR_MUL: {
        n.n_in = 2;
        int rank = r3 ? 3 : 4;
        int x = input(g, rank, s->h, s->w, s->c);
        int o;
        if (s->const_operand == 0)
            o = input(g, rank, s->h, s->w, s->c);
        else if (s->mode == 1)
            o = constant(g, 1, 1, 0, 0, 0, -2.0f, 2.0f);
        else
            o = constant(g, rank, 1, s->h, s->w, s->c, -2.0f, 2.0f);
        n.in[0] = s->const_operand == 2 ? o : x;
        n.in[1] = s->const_operand == 2 ? x : o;
        n.p.add.act = s->act;
        n.p.add.alpha = -1;
        n.out = tensor(g, rank, s->h, s->w, s->c);
        return add_node(g, &n);
    }
    case GR_STRIDED_SLICE:
        n.n_in = 1;
        n.in[0] = input(g, 4, s->h, s->w, s->c);
        for (int d = 0; d < 3; d++) {
            n.p.slice.begin[d + 1] = s->begin[d];
            n.p.slice.stride[d + 1] = s->stride[d];
        }
        n.p.slice.stride[0] = 1;
        n.out = tensor(g, 4, s->oh, s->ow, s->mode);
        return add_node(g, &n);
    case GR_LANDMARKS_TO_MATRIX:
        n.n_in = 1;
        n.in[0] = input(g, 3, s->h, 3, 0);
        n.p.l2m.left = s->left, n.p.l2m.right = s->right;
        n.p.l2m.out_h = s->oh, n.p.l2m.out_w = s->ow;
        n.p.l2m.scale_x = 1.5f, n.p.l2m.scale_y = 1.25f;
        n.p.l2m.target_rotation = 0.25f;
        n.p.l2m.n_subset = s->n_subset;
        memcpy(n.p.l2m.subset, s->subset, sizeof s->subset);
        n.out = tensor(g, 3, 4, 4, 0);
        return add_node(g, &n);
    case GR_TRANSFORM_BILINEAR:
        n.n_in = 2;
        n.in[0] = input(g, 4, s->h, s->w, s->c);
        n.in[1] = input(g, 3, 4, 4, 0);
        n.out = tensor(g, 4, s->oh, s->ow, s->c);
        return add_node(g, &n);
    case GR_TRANSFORM_LANDMARKS:
        n.n_in = 2;
        n.in[0] = input(g, 3, s->h, s->w, 0);
        n.in[1] = input(g, 3, 4, 4, 0);
        n.out = tensor(g, 3, s->h, s->w, 0);
        return add_node(g, &n);
    default:
        return -1;
    }
}

static void describe(const spec *s, char *buf, size_t size)
{
    int k = snprintf(buf, size, "%s%s b%d [%d,%d,%d]", gr_op_name(s->op),
                     s->chain == CHAIN_BLAZE_BLOCK      ? "(block)"
                     : s->chain == CHAIN_DEQUANTIZE_ADD ? "(+ADD)"
                                                        : "",
                     s->batch, s->h, s->w, s->c);
    if (k < 0 || (size_t)k >= size)
        return;
    if (s->op == GR_CONV2D || s->op == GR_DWCONV2D || s->op == GR_MAXPOOL || s->op == GR_DWPW)
        snprintf(buf + k, size - (size_t)k, " k%dx%d s%d d%d pad %d,%d,%d,%d cout %d m%d %s%s%s",
                 s->kh, s->kw, s->sh, s->dil, s->pt, s->pl, s->pb, s->pr, s->cout, s->mult,
                 gr_act_name(s->act),
                 s->residual || s->res == RES_PIXEL || s->res == RES_INPUT ? " +res"
                 : s->res == RES_POOL                                      ? " +pooled res"
                                                                           : "",
                 s->no_bias ? " nobias" : "");
    else if (s->op == GR_RESIZE_BILINEAR)
        snprintf(buf + k, size - (size_t)k, " -> %dx%d mode %d", s->oh, s->ow, s->mode);
    else if (s->op == GR_DEPTH_TO_SPACE)
        snprintf(buf + k, size - (size_t)k, " block %d", s->block);
    else if (s->op == GR_ADD)
        snprintf(buf + k, size - (size_t)k, " %s const %d", gr_act_name(s->act), s->const_operand);
    else if (s->op == GR_CONCAT)
        snprintf(buf + k, size - (size_t)k, " axis %d ext %d,%d,%d", s->axis, s->ext[0], s->ext[1],
                 s->ext[2]);
}

/* ---- running -------------------------------------------------------------- */

#define CUDA_GO(call)                                                                              \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, cudaGetErrorString(e_)); \
            testing_case_failed = 1;                                                               \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

/* In run_graph: fail the case and clean up. */
#define GO(cond)                                                                                   \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: failed: %s\n", __FILE__, __LINE__, #cond);                     \
            testing_case_failed = 1;                                                               \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)
#define GO_OK(expr)                                                                                \
    do {                                                                                           \
        omma_status st_ = (expr);                                                                  \
        if (st_ != OMMA_OK) {                                                                      \
            fprintf(stderr, "%s:%d: %s: %s: %s\n", __FILE__, __LINE__, #expr,                      \
                    omma_status_str(st_), omma_last_error());                                      \
            testing_case_failed = 1;                                                               \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

typedef struct bufs {
    int n;
    float **host; /* reference values per tensor (batch items), NULL for constants */
    unsigned char **dev; /* device buffer per activation, + GUARD bytes */
    size_t *elems; /* elements per tensor at run-time batch */
} bufs;

static size_t item_of(const gr_tensor *t)
{
    size_t n = 1;
    for (int d = 1; d < t->rank; d++)
        n *= (size_t)t->dims[d];
    return n;
}

static void bufs_free(bufs *b)
{
    for (int i = 0; i < b->n; i++) {
        if (b->host)
            free(b->host[i]);
        if (b->dev && b->dev[i])
            cudaFree(b->dev[i]);
    }
    free(b->host);
    free(b->dev);
    free(b->elems);
    memset(b, 0, sizeof *b);
}

static bool guard_intact(const unsigned char *dev_guard, cudaStream_t s)
{
    unsigned char g[GUARD];
    if (cudaMemcpyAsync(g, dev_guard, GUARD, cudaMemcpyDeviceToHost, s) != cudaSuccess ||
        cudaStreamSynchronize(s) != cudaSuccess)
        return false;
    for (int i = 0; i < GUARD; i++)
        if (g[i] != 0xFF)
            return false;
    return true;
}

/* Runs graph g (nodes in order) on the CPU and on the GPU in precision p,
 * checks every node's output. as_step: the GPU runs the whole graph as one
 * step (cuda_op_launch_step), and only the outputs it must write, the
 * graph's, are checked; f32: those the step can write as float32
 * (cuda_op_step_writes_f32) it writes to poisoned float32 buffers. */
static void run_graph(const gr_graph *g, int batch, cuda_prec p, const char *label, bool as_step,
                      bool f32)
{
    size_t es = cuda_prec_size(p);
    double tol = p == CUDA_PREC_F16 ? TOL_F16 : TOL_F32;
    bufs b = {0};
    cuda_weights *w = NULL;
    cudaStream_t stream = NULL;
    float *tmp = NULL, *got = NULL;
    void *dtmp = NULL;
    bool *is_static = calloc((size_t)g->n_tensors, sizeof *is_static);
    void **f32_out = calloc((size_t)g->n_tensors, sizeof *f32_out);
    GO(f32_out);
    b.n = g->n_tensors;
    b.host = calloc((size_t)b.n, sizeof *b.host);
    b.dev = calloc((size_t)b.n, sizeof *b.dev);
    b.elems = calloc((size_t)b.n, sizeof *b.elems);
    GO(is_static && b.host && b.dev && b.elems);
    for (int t = 0; t < g->n_tensors; t++)
        is_static[t] = g->tensors[t].data != NULL;
    for (int i = 0; i < g->n_nodes; i++) {
        int r[GR_MAX_INPUTS + 2], k = gr_node_reads(&g->nodes[i], r);
        bool st = true;
        for (int j = 0; j < k; j++)
            st = st && is_static[r[j]];
        is_static[g->nodes[i].out] = st;
    }
    CUDA_GO(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    /* Activations: host reference buffers and poisoned device buffers. */
    for (int t = 0; t < g->n_tensors; t++) {
        if (g->tensors[t].data)
            continue;
        size_t e = item_of(&g->tensors[t]) * (is_static[t] ? 1 : (size_t)batch);
        b.elems[t] = e;
        b.host[t] = malloc(e * sizeof(float));
        GO(b.host[t]);
        CUDA_GO(cudaMalloc((void **)&b.dev[t], e * es + GUARD));
        CUDA_GO(cudaMemsetAsync(b.dev[t], 0xFF, e * es + GUARD, stream));
    }
    /* Graph inputs: fresh random values, stored in p, read back as the
     * reference sees them. */
    for (int i = 0; i < g->n_inputs; i++) {
        int t = g->inputs[i];
        size_t e = b.elems[t];
        tg_fill(b.host[t], e, rnd(), -1.0f, 1.0f);
        CUDA_GO(cudaMalloc(&dtmp, e * sizeof(float)));
        CUDA_GO(
            cudaMemcpyAsync(dtmp, b.host[t], e * sizeof(float), cudaMemcpyHostToDevice, stream));
        GO_OK(cuda_convert(b.dev[t], p, dtmp, CUDA_PREC_F32, e, stream));
        GO_OK(cuda_convert(dtmp, CUDA_PREC_F32, b.dev[t], p, e, stream));
        CUDA_GO(
            cudaMemcpyAsync(b.host[t], dtmp, e * sizeof(float), cudaMemcpyDeviceToHost, stream));
        CUDA_GO(cudaStreamSynchronize(stream));
        CUDA_GO(cudaFree(dtmp));
        dtmp = NULL;
    }
    GO_OK(cuda_weights_upload(g, p, &w));
    for (int t = 0; as_step && f32 && t < g->n_tensors; t++) {
        if (!cuda_op_step_writes_f32(g, 0, t))
            continue;
        CUDA_GO(cudaMalloc(&f32_out[t], b.elems[t] * sizeof(float) + GUARD));
        CUDA_GO(cudaMemsetAsync(f32_out[t], 0xFF, b.elems[t] * sizeof(float) + GUARD, stream));
    }
    if (as_step) {
        GO_OK(cuda_op_launch_step(g, 0, g->n_nodes - 1, w, batch, batch, (void *const *)b.dev,
                                  f32 ? f32_out : NULL, stream));
        CUDA_GO(cudaStreamSynchronize(stream));
        CUDA_GO(cudaGetLastError());
    }
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *n = &g->nodes[i];
        int nb = is_static[n->out] ? 1 : batch;
        const float *in[GR_MAX_INPUTS] = {0};
        const void *din[GR_MAX_INPUTS] = {0};
        for (int k = 0; k < n->n_in; k++) {
            int t = n->in[k];
            if (t < 0)
                continue;
            in[k] = g->tensors[t].data ? (const float *)g->tensors[t].data : b.host[t];
            din[k] = g->tensors[t].data ? NULL : b.dev[t];
        }
        int rt = (n->op == GR_CONV2D || n->op == GR_DWCONV2D || n->op == GR_DWPW)
                     ? n->p.conv.residual
                     : -1;
        GO_OK(cpu_op_run(g, n, nb, in, rt >= 0 ? b.host[rt] : NULL, b.host[n->out]));
        if (as_step) {
            bool out = false;
            for (int k = 0; k < g->n_outputs; k++)
                out = out || g->outputs[k] == n->out;
            if (!out)
                continue;
        } else {
            GO_OK(cuda_op_launch(g, n, w, nb, batch, din, rt >= 0 ? b.dev[rt] : NULL, b.dev[n->out],
                                 stream));
        }
        CUDA_GO(cudaStreamSynchronize(stream));
        CUDA_GO(cudaGetLastError());

        size_t e = b.elems[n->out];
        const void *written = f32_out[n->out];
        tmp = malloc(e * sizeof(float));
        GO(tmp);
        if (!written) {
            CUDA_GO(cudaMalloc(&dtmp, e * sizeof(float)));
            GO_OK(cuda_convert(dtmp, CUDA_PREC_F32, b.dev[n->out], p, e, stream));
        }
        CUDA_GO(cudaMemcpyAsync(tmp, written ? written : dtmp, e * sizeof(float),
                                cudaMemcpyDeviceToHost, stream));
        CUDA_GO(cudaStreamSynchronize(stream));
        if (dtmp)
            CUDA_GO(cudaFree(dtmp));
        dtmp = NULL;
        got = tmp;
        tmp = NULL;
        const float *ref = b.host[n->out];
        double maxref = 0, maxdiff = 0;
        size_t bad = 0, first_bad = 0;
        for (size_t j = 0; j < e; j++) {
            double d = fabs((double)got[j] - (double)ref[j]);
            if (!isfinite(got[j]) || !isfinite(d)) {
                if (!bad++)
                    first_bad = j;
                continue;
            }
            maxdiff = fmax(maxdiff, d);
            maxref = fmax(maxref, fabs((double)ref[j]));
        }
        double err = bad ? INFINITY : maxdiff / fmax(maxref, 1e-6);
        bool guard = written
                         ? guard_intact((const unsigned char *)written + e * sizeof(float), stream)
                         : guard_intact(b.dev[n->out] + e * es, stream);
        int pi = p == CUDA_PREC_F16;
        if (err > worst[pi])
            worst[pi] = err;
        if (err > tol || !guard) {
            fprintf(stderr, "FAIL %s %s node %d (%s): error %.3g (tol %.0e)%s", label,
                    cuda_prec_name(p), i, gr_op_name(n->op), err, tol,
                    guard ? "" : ", guard bytes overwritten");
            if (bad)
                fprintf(stderr, ", %zu non-finite outputs, first at %zu (gpu %g, cpu %g)", bad,
                        first_bad, (double)got[first_bad], (double)ref[first_bad]);
            fprintf(stderr, "\n");
            testing_case_failed = 1;
        } else if (verbose) {
            fprintf(stderr, "  %s %s node %d: error %.3g\n", label, cuda_prec_name(p), i, err);
        }
        free(got);
        got = NULL;
    }
done:
    if (dtmp)
        cudaFree(dtmp);
    free(tmp);
    free(got);
    cuda_weights_free(w);
    bufs_free(&b);
    for (int t = 0; f32_out && t < g->n_tensors; t++)
        if (f32_out[t])
            cudaFree(f32_out[t]);
    free(f32_out);
    free(is_static);
    if (stream)
        cudaStreamDestroy(stream);
}

static void test_op_table(void)
{
    for (int i = 0; i < n_cases; i++) {
        if (quick_mode && i % 4)
            continue;
        const spec *s = &cases[i];
        char label[256];
        describe(s, label, sizeof label);
        gr_graph *g = NULL;
        REQUIRE_OK(gr_create(&g));
        int out = build(g, s);
        if (out < 0) {
            fprintf(stderr, "case %d (%s): building the graph failed: %s\n", i, label,
                    omma_last_error());
            testing_case_failed = 1;
            gr_free(g);
            continue;
        }
        g->outputs[g->n_outputs++] = out;
        omma_status st = gr_validate(g);
        if (st != OMMA_OK) {
            fprintf(stderr, "case %d (%s): invalid graph: %s\n", i, label, omma_last_error());
            testing_case_failed = 1;
            gr_free(g);
            continue;
        }
        int before = testing_case_failed;
        testing_case_failed = 0;
        run_graph(g, s->batch, CUDA_PREC_F32, label, false, false);
        run_graph(g, s->batch, CUDA_PREC_F16, label, false, false);
        cases_run++;
        if (testing_case_failed) {
            cases_failed++;
            fprintf(stderr, "  case %d: %s\n", i, label);
        } else if (verbose) {
            fprintf(stderr, "ok case %d: %s\n", i, label);
        }
        testing_case_failed |= before;
        gr_free(g);
    }
    fprintf(stderr,
            "op table: %d cases x 2 precisions, %d failed; worst error fp32 %.3g "
            "(tol %.0e), fp16 %.3g (tol %.0e)\n",
            cases_run, cases_failed, worst[0], TOL_F32, worst[1], TOL_F16);
    CHECK(cases_failed == 0);
    CHECK(cases_run > 0);
}

/* ---- chains of blocks -------------------------------------------------------- */

/* A block of a chain: x and res are chain tensors (0 the chain's input,
 * j >= 1 block j-1's output; x -1: the block before; res -1: none; a
 * residual twice the output's size is max-pooled). */
typedef struct chain_block {
    int x, cout, stride, res;
    gr_act act;
} chain_block;

typedef struct chain_case {
    const char *name;
    int batch, h, c;
    int also_out; /* a chain tensor that is a graph output too, or 0 */
    int n;
    chain_block b[8];
} chain_case;

static const chain_case chain_cases[] = {
    {"short range 16x16 -> 8x8",
     3,
     16,
     48,
     0,
     6,
     {{-1, 56, 1, 0, GR_ACT_RELU},
      {-1, 64, 1, 1, GR_ACT_RELU},
      {-1, 72, 1, 2, GR_ACT_RELU},
      {-1, 88, 1, 3, GR_ACT_RELU},
      {-1, 96, 2, 4, GR_ACT_RELU},
      {-1, 96, 1, 5, GR_ACT_RELU}}},
    {"short range, 2 images a block",
     300,
     16,
     48,
     2,
     3,
     {{-1, 56, 1, 0, GR_ACT_RELU}, {-1, 96, 2, 1, GR_ACT_RELU}, {-1, 96, 1, 2, GR_ACT_RELU}}},
    {"8x8, 4 images a block",
     600,
     8,
     96,
     0,
     2,
     {{-1, 96, 1, 0, GR_ACT_RELU}, {-1, 96, 1, 1, GR_ACT_RELU}}},
    {"full range 12x12 -> 6x6",
     5,
     12,
     256,
     0,
     4,
     {{-1, 96, 2, -1, GR_ACT_RELU},
      {-1, 384, 1, 0, GR_ACT_RELU},
      {-1, 96, 1, -1, GR_ACT_RELU},
      {-1, 384, 1, 2, GR_ACT_RELU}}},
    {"FaceMesh branches",
     2,
     12,
     128,
     2,
     6,
     {{-1, 128, 1, 0, GR_ACT_PRELU},
      {-1, 128, 2, 1, GR_ACT_PRELU},
      {-1, 128, 1, 2, GR_ACT_PRELU},
      {-1, 128, 2, 3, GR_ACT_PRELU},
      {3, 128, 2, 3, GR_ACT_PRELU},
      {-1, 128, 1, 5, GR_ACT_PRELU}}},
    {"odd sizes",
     7,
     5,
     40,
     1,
     3,
     {{-1, 24, 1, -1, GR_ACT_RELU6}, {-1, 40, 1, 0, GR_ACT_NONE}, {-1, 40, 1, 2, GR_ACT_RELU}}},
};

/* The graph of a chain case: 3x3 blocks with TFLite's SAME padding, random
 * filters and bias; outputs: the last block's and also_out. */
static gr_graph *build_chain(const chain_case *cc)
{
    gr_graph *g = NULL;
    if (gr_create(&g) != OMMA_OK)
        return NULL;
    int t[9], h[9], c[9];
    t[0] = input(g, 4, cc->h, cc->h, cc->c);
    h[0] = cc->h, c[0] = cc->c;
    for (int k = 0; k < cc->n; k++) {
        const chain_block *b = &cc->b[k];
        int xi = b->x < 0 ? k : b->x, s = b->stride;
        int pad = s == 1 ? 1 : 0; /* before; 1 after */
        gr_node n = tg_node(GR_DWPW);
        n.n_in = 5;
        n.in[0] = t[xi];
        n.p.conv.win = (gr_window){.kh = 3,
                                   .kw = 3,
                                   .stride_h = s,
                                   .stride_w = s,
                                   .dil_h = 1,
                                   .dil_w = 1,
                                   .pad_top = pad,
                                   .pad_left = pad,
                                   .pad_bottom = 1,
                                   .pad_right = 1};
        n.p.conv.depth_multiplier = 1;
        int oh = window_out(h[xi], pad, 1, 3, s, 1);
        n.in[1] = constant(g, 4, 1, 3, 3, c[xi], -0.33f, 0.33f);
        n.in[2] = constant(g, 1, c[xi], 0, 0, 0, -0.5f, 0.5f);
        float bound = 1.0f / sqrtf((float)c[xi]);
        n.in[3] = constant(g, 4, b->cout, 1, 1, c[xi], -bound, bound);
        n.in[4] = k == 1 ? -1 : constant(g, 1, b->cout, 0, 0, 0, -0.5f, 0.5f);
        n.p.conv.act = b->act;
        if (b->act == GR_ACT_PRELU)
            n.p.conv.alpha = constant(g, 1, b->cout, 0, 0, 0, -0.5f, 1.0f);
        if (b->res >= 0) {
            n.p.conv.residual = t[b->res];
            n.p.conv.pool_residual = h[b->res] == 2 * oh;
        }
        n.out = tensor(g, 4, oh, oh, b->cout);
        t[k + 1] = add_node(g, &n);
        h[k + 1] = oh, c[k + 1] = b->cout;
    }
    g->outputs[g->n_outputs++] = t[cc->n];
    if (cc->also_out)
        g->outputs[g->n_outputs++] = t[cc->also_out];
    return g;
}

/* A graph that is one step (nodes 0 .. n-1): valid; cuda_op_step_end finds
 * the whole step in fp16 and none in fp32; run on the CPU and as the step on
 * the GPU in fp16, every graph output checked, and (node_by_node) also node
 * by node in both precisions. Frees g. */
static void check_step_graph(gr_graph *g, const char *kind, const char *name, int batch,
                             bool node_by_node)
{
    CHECK(g != NULL);
    if (!g)
        return;
    omma_status st = gr_validate(g);
    if (st != OMMA_OK)
        fprintf(stderr, "%s %s: invalid graph: %s\n", kind, name, omma_last_error());
    CHECK(st == OMMA_OK);
    int end = cuda_op_step_end(g, 0, CUDA_PREC_F16);
    if (end != g->n_nodes - 1)
        fprintf(stderr, "%s %s: the step found ends at node %d of %d\n", kind, name, end,
                g->n_nodes);
    CHECK(end == g->n_nodes - 1);
    CHECK(cuda_op_step_end(g, 0, CUDA_PREC_F32) == 0);
    if (st == OMMA_OK && end == g->n_nodes - 1) {
        int before = testing_case_failed;
        testing_case_failed = 0;
        run_graph(g, batch, CUDA_PREC_F16, name, true, false);
        bool f32 = false;
        for (int t = 0; t < g->n_tensors; t++)
            f32 = f32 || cuda_op_step_writes_f32(g, 0, t);
        if (f32)
            run_graph(g, batch, CUDA_PREC_F16, name, true, true);
        if (node_by_node) {
            run_graph(g, batch, CUDA_PREC_F16, name, false, false);
            run_graph(g, batch, CUDA_PREC_F32, name, false, false);
        }
        if (testing_case_failed)
            fprintf(stderr, "  %s %s failed\n", kind, name);
        else if (verbose)
            fprintf(stderr, "ok %s %s\n", kind, name);
        testing_case_failed |= before;
    }
    gr_free(g);
}

/* Each chain case as one step (the op table covers its blocks one by one).
 * --quick leaves out the large batches (several images a thread block). */
static void test_chains(void)
{
    for (size_t i = 0; i < sizeof chain_cases / sizeof chain_cases[0]; i++) {
        const chain_case *cc = &chain_cases[i];
        if (!quick_mode || cc->batch <= 100)
            check_step_graph(build_chain(cc), "chain", cc->name, cc->batch, false);
    }
}

/* ---- pairs of blocks on large images ------------------------------------------ */

/* Two blocks on images too large for a chain: the pair kernel
 * (cuda_ops_dwpw_pair.cu), both residual forms, partial tiles. */
static const chain_case pair_cases[] = {
    {"full range 96x96, 32 -> 8 -> 32",
     2,
     96,
     32,
     0,
     2,
     {{-1, 8, 1, -1, GR_ACT_RELU}, {-1, 32, 1, 0, GR_ACT_RELU}}},
    {"48x48, 48 -> 16 -> 64, narrower residual",
     3,
     48,
     48,
     0,
     2,
     {{-1, 16, 1, -1, GR_ACT_RELU}, {-1, 64, 1, 0, GR_ACT_RELU}}},
    {"24x24, 96 -> 32 -> 128",
     2,
     24,
     96,
     0,
     2,
     {{-1, 32, 1, -1, GR_ACT_RELU}, {-1, 128, 1, 0, GR_ACT_RELU}}},
    {"short range 64x64, own residuals, 24 -> 24 -> 28",
     2,
     64,
     24,
     0,
     2,
     {{-1, 24, 1, 0, GR_ACT_RELU}, {-1, 28, 1, 1, GR_ACT_RELU}}},
    {"FaceMesh 96x96x16, PRELU",
     1,
     96,
     16,
     0,
     2,
     {{-1, 16, 1, 0, GR_ACT_PRELU}, {-1, 16, 1, 1, GR_ACT_PRELU}}},
    {"odd sizes: 21x21, 36 -> 42 -> 42, RELU6 and none",
     3,
     21,
     36,
     0,
     2,
     {{-1, 42, 1, 0, GR_ACT_RELU6}, {-1, 42, 1, 1, GR_ACT_NONE}}},
    {"37x37, 12 -> 14 -> 16, PRELU",
     2,
     37,
     12,
     0,
     2,
     {{-1, 14, 1, 0, GR_ACT_PRELU}, {-1, 16, 1, 1, GR_ACT_RELU}}},
};

/* Each pair case as one step, and node by node. */
static void test_pairs(void)
{
    for (size_t i = 0; i < sizeof pair_cases / sizeof pair_cases[0]; i++)
        check_step_graph(build_chain(&pair_cases[i]), "pair", pair_cases[i].name,
                         pair_cases[i].batch, true);
}

/* ---- FPN levels: 1x1 convolution + upsampled level below, added ----------- */

typedef struct up_add_case {
    const char *name;
    int batch, h, c, cout, uh; /* x [h, h, c] -> [h, h, cout]; the addend [uh, uh, cout] */
    int mode; /* 1 align_corners, 2 half_pixel_centers */
    gr_act act;
    bool no_bias, resize_first; /* ADD(resize, conv) instead of ADD(conv, resize) */
} up_add_case;

static const up_add_case up_add_cases[] = {
    {"full range 12x12", 3, 12, 256, 96, 6, 2, GR_ACT_RELU, false, false},
    {"full range 48x48", 2, 48, 64, 48, 24, 2, GR_ACT_RELU, false, true},
    {"full range 24x24", 3, 24, 128, 64, 12, 2, GR_ACT_NONE, false, false},
    {"48x48, several tiles a warp", 40, 48, 64, 48, 24, 2, GR_ACT_NONE, false, false},
    {"align_corners, 7 -> 13, PRELU", 3, 13, 32, 16, 7, 1, GR_ACT_PRELU, false, true},
    {"odd sizes, align_corners", 5, 10, 40, 24, 5, 1, GR_ACT_PRELU, true, false},
    {"neither mode, 3 -> 7", 4, 7, 16, 34, 3, 0, GR_ACT_RELU6, false, true},
};

static gr_graph *build_up_add(const up_add_case *uc)
{
    gr_graph *g = NULL;
    if (gr_create(&g) != OMMA_OK)
        return NULL;
    spec s;
    memset(&s, 0, sizeof s);
    s.kh = s.kw = s.sh = s.sw = s.dil = 1;
    s.act = uc->act, s.no_bias = uc->no_bias;
    int conv = build_conv(g, &s, GR_CONV2D, input(g, 4, uc->h, uc->h, uc->c), uc->h, uc->h, uc->c,
                          uc->cout);
    gr_node r = tg_node(GR_RESIZE_BILINEAR);
    r.n_in = 1;
    r.in[0] = input(g, 4, uc->uh, uc->uh, uc->cout);
    r.p.resize.align_corners = uc->mode == 1;
    r.p.resize.half_pixel_centers = uc->mode == 2;
    r.out = tensor(g, 4, uc->h, uc->h, uc->cout);
    int up = add_node(g, &r);
    gr_node a = tg_node(GR_ADD);
    a.n_in = 2;
    a.in[0] = uc->resize_first ? up : conv;
    a.in[1] = uc->resize_first ? conv : up;
    a.out = tensor(g, 4, uc->h, uc->h, uc->cout);
    g->outputs[g->n_outputs++] = add_node(g, &a);
    return g;
}

/* Each case as one step, and node by node. */
static void test_up_add(void)
{
    for (size_t i = 0; i < sizeof up_add_cases / sizeof up_add_cases[0]; i++)
        check_step_graph(build_up_add(&up_add_cases[i]), "up-add", up_add_cases[i].name,
                         up_add_cases[i].batch, true);
}

/* ---- a block and its heads ------------------------------------------------- */

typedef struct heads_case {
    const char *name;
    int batch, h, c, cout; /* the block: [h, h, c] -> [h, h, cout], 3x3 SAME */
    res_mode res; /* RES_NONE, RES_PIXEL (rc = cout) or RES_INPUT */
    gr_act act;
    int n_heads, heads[4]; /* the heads' widths */
} heads_case;

static const heads_case heads_cases[] = {
    {"full range 48x48, 24 -> 48, heads 1 + 16", 3, 48, 24, 48, RES_PIXEL, GR_ACT_RELU, 2, {1, 16}},
    {"37x37 own residual, 32 -> 32, heads 2 + 6 + 5 (odd width)",
     2,
     37,
     32,
     32,
     RES_INPUT,
     GR_ACT_RELU6,
     3,
     {2, 6, 5}},
    {"20x20, 16 -> 12, no residual, one head of 32, PRELU",
     5,
     20,
     16,
     12,
     RES_NONE,
     GR_ACT_PRELU,
     1,
     {32}},
    {"9x9, 64 -> 64, four heads of 1 + 7 + 8 + 8, no activation",
     4,
     9,
     64,
     64,
     RES_PIXEL,
     GR_ACT_NONE,
     4,
     {1, 7, 8, 8}},
};

/* The block of a heads case and its heads (1x1 convolutions, bias, no
 * activation), their outputs the graph's. */
static gr_graph *build_heads(const heads_case *hc)
{
    gr_graph *g = NULL;
    if (gr_create(&g) != OMMA_OK)
        return NULL;
    spec s;
    memset(&s, 0, sizeof s);
    s.h = s.w = hc->h, s.c = hc->c, s.cout = hc->cout;
    s.kh = s.kw = 3, s.sh = s.sw = s.dil = 1;
    s.pt = s.pl = s.pb = s.pr = 1;
    s.act = hc->act, s.res = hc->res, s.rc = hc->cout;
    int y = build_dwpw(g, &s);
    spec hs;
    memset(&hs, 0, sizeof hs);
    hs.kh = hs.kw = hs.sh = hs.sw = hs.dil = 1;
    hs.act = GR_ACT_NONE;
    for (int k = 0; k < hc->n_heads; k++)
        g->outputs[g->n_outputs++] =
            build_conv(g, &hs, GR_CONV2D, y, hc->h, hc->h, hc->cout, hc->heads[k]);
    return g;
}

/* Each case as one step (half and float32 head outputs), and node by
 * node. */
static void test_heads(void)
{
    for (size_t i = 0; i < sizeof heads_cases / sizeof heads_cases[0]; i++)
        check_step_graph(build_heads(&heads_cases[i]), "heads", heads_cases[i].name,
                         heads_cases[i].batch, true);
}

/* ---- a depthwise convolution and a 1x1 convolution of its output -------- */

/* DEPTHWISE_CONV_2D (actd) then CONV_2D 1x1 (act, residual) on 8 channels:
 * the dwproj kernel (cuda_ops_dwproj.cu), TFLite's SAME padding, partial
 * tiles in both directions, the residual the block's input or another
 * tensor. */
typedef struct dwproj_case {
    const char *name;
    int batch, h, w, k;
    res_mode res; /* RES_NONE, RES_INPUT or RES_PIXEL */
    gr_act actd, act;
    bool no_bias;
} dwproj_case;

static const dwproj_case dwproj_cases[] = {
    {"segmentation decoder block, 3x3, residual = the input, 33x29", 3, 33, 29, 3, RES_INPUT,
     GR_ACT_RELU6, GR_ACT_RELU6, false},
    {"3x3, 64x128 (several tiles a row), residual = the input", 2, 64, 128, 3, RES_INPUT,
     GR_ACT_RELU6, GR_ACT_RELU6, false},
    {"5x5, 20x40, residual of another tensor, no bias", 2, 20, 40, 5, RES_PIXEL, GR_ACT_RELU,
     GR_ACT_NONE, true},
    {"3x3, 9x16 (a half-empty tile), no residual", 5, 9, 16, 3, RES_NONE, GR_ACT_NONE, GR_ACT_RELU,
     false},
    {"5x5, 3x17 (window taller than the image)", 4, 3, 17, 5, RES_INPUT, GR_ACT_RELU6, GR_ACT_RELU6,
     false},
};

static gr_graph *build_dwproj(int h, int w, int c, int k, res_mode res, gr_act actd, gr_act act,
                              bool no_bias)
{
    gr_graph *g = NULL;
    if (gr_create(&g) != OMMA_OK)
        return NULL;
    spec s;
    memset(&s, 0, sizeof s);
    s.kh = s.kw = k;
    s.sh = s.sw = s.dil = s.mult = 1;
    s.no_bias = no_bias;
    s.act = actd;
    same_pad(h, k, 1, 1, &s.pt, &s.pb);
    same_pad(w, k, 1, 1, &s.pl, &s.pr);
    int x = input(g, 4, h, w, c);
    int d = build_conv(g, &s, GR_DWCONV2D, x, h, w, c, c);
    s.kh = s.kw = 1;
    s.pt = s.pl = s.pb = s.pr = 0;
    s.act = act;
    s.residual = res == RES_PIXEL;
    int y = build_conv(g, &s, GR_CONV2D, d, h, w, c, c);
    if (res == RES_INPUT && g->n_nodes > 0)
        g->nodes[g->n_nodes - 1].p.conv.residual = x;
    if (x < 0 || d < 0 || y < 0) {
        gr_free(g);
        return NULL;
    }
    g->outputs[g->n_outputs++] = y;
    return g;
}

/* A graph that is one step against its nodes one by one on the GPU in
 * fp16, the same inputs and weights, choices as at `batch` items: the
 * outputs must be the same bits. */
static void step_bitwise(const gr_graph *g, int batch, const char *kind, const char *name)
{
    const int y = g->outputs[0];
    bufs b = {0};
    cuda_weights *w = NULL;
    cudaStream_t stream = NULL;
    float *host = NULL;
    void *dtmp = NULL;
    uint16_t *fused = NULL, *nodes = NULL;
    b.n = g->n_tensors;
    b.dev = calloc((size_t)b.n, sizeof *b.dev);
    b.elems = calloc((size_t)b.n, sizeof *b.elems);
    GO(b.dev && b.elems);
    CUDA_GO(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    for (int t = 0; t < g->n_tensors; t++) {
        if (g->tensors[t].data)
            continue;
        b.elems[t] = item_of(&g->tensors[t]) * (size_t)batch;
        CUDA_GO(cudaMalloc((void **)&b.dev[t], b.elems[t] * 2));
        CUDA_GO(cudaMemsetAsync(b.dev[t], 0xFF, b.elems[t] * 2, stream));
    }
    for (int i = 0; i < g->n_inputs; i++) {
        int t = g->inputs[i];
        size_t e = b.elems[t];
        host = malloc(e * sizeof(float));
        GO(host);
        tg_fill(host, e, rnd(), -1.0f, 1.0f);
        CUDA_GO(cudaMalloc(&dtmp, e * sizeof(float)));
        CUDA_GO(cudaMemcpyAsync(dtmp, host, e * sizeof(float), cudaMemcpyHostToDevice, stream));
        GO_OK(cuda_convert(b.dev[t], CUDA_PREC_F16, dtmp, CUDA_PREC_F32, e, stream));
        CUDA_GO(cudaStreamSynchronize(stream));
        CUDA_GO(cudaFree(dtmp));
        dtmp = NULL;
        free(host);
        host = NULL;
    }
    GO_OK(cuda_weights_upload(g, CUDA_PREC_F16, &w));
    size_t n = b.elems[y];
    fused = malloc(n * 2);
    nodes = malloc(n * 2);
    GO(fused && nodes);
    GO_OK(cuda_op_launch_step(g, 0, g->n_nodes - 1, w, batch, batch, (void *const *)b.dev, NULL,
                              stream));
    CUDA_GO(cudaMemcpyAsync(fused, b.dev[y], n * 2, cudaMemcpyDeviceToHost, stream));
    CUDA_GO(cudaStreamSynchronize(stream));
    CUDA_GO(cudaMemsetAsync(b.dev[y], 0xFF, n * 2, stream));
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *nd = &g->nodes[i];
        const void *din[GR_MAX_INPUTS] = {0};
        for (int k = 0; k < nd->n_in; k++)
            if (nd->in[k] >= 0 && !g->tensors[nd->in[k]].data)
                din[k] = b.dev[nd->in[k]];
        int rt = nd->op == GR_CONV2D || nd->op == GR_DWCONV2D ? nd->p.conv.residual : -1;
        GO_OK(cuda_op_launch(g, nd, w, batch, batch, din, rt >= 0 ? b.dev[rt] : NULL,
                             b.dev[nd->out], stream));
    }
    CUDA_GO(cudaMemcpyAsync(nodes, b.dev[y], n * 2, cudaMemcpyDeviceToHost, stream));
    CUDA_GO(cudaStreamSynchronize(stream));
    CUDA_GO(cudaGetLastError());
    size_t diff = 0, first = 0;
    for (size_t i = 0; i < n; i++)
        if (fused[i] != nodes[i] && !diff++)
            first = i;
    if (diff)
        fprintf(stderr,
                "FAIL %s %s: %zu of %zu fp16 outputs differ from the nodes one by one, "
                "first at %zu (0x%04x, nodes 0x%04x)\n",
                kind, name, diff, n, first, fused[first], nodes[first]);
    CHECK(diff == 0);
done:
    free(host);
    free(fused);
    free(nodes);
    if (dtmp)
        cudaFree(dtmp);
    cuda_weights_free(w);
    for (int t = 0; b.dev && t < b.n; t++)
        if (b.dev[t])
            cudaFree(b.dev[t]);
    free(b.dev);
    free(b.elems);
    if (stream)
        cudaStreamDestroy(stream);
}

/* Each case as one step against the CPU, node by node in both precisions,
 * and bitwise against its nodes (at a batch of 1 too: the nodes' kernels
 * differ there); shapes the kernel does not take stay two nodes. */
static void test_dwproj(void)
{
    for (size_t i = 0; i < sizeof dwproj_cases / sizeof dwproj_cases[0]; i++) {
        const dwproj_case *dc = &dwproj_cases[i];
        gr_graph *g = build_dwproj(dc->h, dc->w, 8, dc->k, dc->res, dc->actd, dc->act, dc->no_bias);
        if (g && gr_validate(g) == OMMA_OK && cuda_op_step_end(g, 0, CUDA_PREC_F16) == 1) {
            step_bitwise(g, dc->batch, "dwproj", dc->name);
            step_bitwise(g, 1, "dwproj batch 1", dc->name);
        }
        check_step_graph(g, "dwproj", dc->name, dc->batch, true);
    }
    /* 16 channels, an image 15 wide, stride 2: the nodes run. */
    static const int other[][4] = {{16, 20, 20, 1}, {8, 20, 15, 1}, {8, 20, 20, 2}};
    for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
        gr_graph *g = build_dwproj(other[i][1], other[i][2], other[i][0], 3, RES_INPUT,
                                   GR_ACT_RELU6, GR_ACT_RELU6, false);
        CHECK(g != NULL);
        if (!g)
            continue;
        if (other[i][3] == 2)
            g->nodes[0].p.conv.win.stride_h = g->nodes[0].p.conv.win.stride_w = 2;
        CHECK(cuda_op_step_end(g, 0, CUDA_PREC_F16) == 0);
        gr_free(g);
    }
}

/* ---- a resize and the ADD of its output ------------------------------------- */

typedef struct resize_add_case {
    const char *name;
    int batch, ih, iw, oh, ow, c;
    int mode; /* 1 align_corners, 2 half_pixel_centers */
    gr_act act;
    bool resize_second; /* ADD(other, resize) */
} resize_add_case;

static const resize_add_case resize_add_cases[] = {
    {"BlazePose FPN 32x32 -> 64x64, 48 channels", 3, 32, 32, 64, 64, 48, 2, GR_ACT_NONE, false},
    {"segmentation decoder 64x64 -> 128x128, 8 channels, ReLU6", 2, 16, 16, 32, 32, 8, 2,
     GR_ACT_RELU6, true},
    {"align_corners 7x5 -> 13x9, 24 channels", 4, 7, 5, 13, 9, 24, 1, GR_ACT_RELU, false},
    {"neither mode, 3 channels (scalar path), 4x6 -> 9x10", 2, 4, 6, 9, 10, 3, 0, GR_ACT_RELU6,
     true},
};

static gr_graph *build_resize_add(const resize_add_case *rc)
{
    gr_graph *g = NULL;
    if (gr_create(&g) != OMMA_OK)
        return NULL;
    gr_node r = tg_node(GR_RESIZE_BILINEAR);
    r.n_in = 1;
    r.in[0] = input(g, 4, rc->ih, rc->iw, rc->c);
    r.p.resize.align_corners = rc->mode == 1;
    r.p.resize.half_pixel_centers = rc->mode == 2;
    r.out = tensor(g, 4, rc->oh, rc->ow, rc->c);
    int up = add_node(g, &r);
    int other = input(g, 4, rc->oh, rc->ow, rc->c);
    gr_node a = tg_node(GR_ADD);
    a.n_in = 2;
    a.in[0] = rc->resize_second ? other : up;
    a.in[1] = rc->resize_second ? up : other;
    a.p.add.act = rc->act;
    a.out = tensor(g, 4, rc->oh, rc->ow, rc->c);
    g->outputs[g->n_outputs++] = add_node(g, &a);
    return g;
}

/* Each case as one step against the CPU and node by node, and bitwise
 * against its nodes. */
static void test_resize_add(void)
{
    for (size_t i = 0; i < sizeof resize_add_cases / sizeof resize_add_cases[0]; i++) {
        const resize_add_case *rc = &resize_add_cases[i];
        gr_graph *g = build_resize_add(rc);
        if (g && gr_validate(g) == OMMA_OK && cuda_op_step_end(g, 0, CUDA_PREC_F16) == 1)
            step_bitwise(g, rc->batch, "resize-add", rc->name);
        check_step_graph(g, "resize-add", rc->name, rc->batch, true);
    }
}

/* ---- API misuse and memory ------------------------------------------------ */

static gr_graph *small_conv_graph(void)
{
    gr_graph *g = NULL;
    if (gr_create(&g) != OMMA_OK)
        return NULL;
    spec s;
    memset(&s, 0, sizeof s);
    s.kh = s.kw = s.sh = s.sw = s.dil = 1;
    s.mult = 1;
    int x = input(g, 4, 4, 4, 8);
    int y = build_conv(g, &s, GR_CONV2D, x, 4, 4, 8, 8);
    if (y < 0) {
        gr_free(g);
        return NULL;
    }
    g->outputs[g->n_outputs++] = y;
    return g;
}

static void test_errors(void)
{
    gr_graph *g = small_conv_graph(), *other = small_conv_graph();
    cuda_weights *w = NULL;
    void *x = NULL, *y = NULL;
    GO(g && other);
    CHECK_FAILS(cuda_weights_upload(NULL, CUDA_PREC_F32, &w), OMMA_ERR_INVALID_ARG, "NULL");
    CHECK(w == NULL);
    CHECK_FAILS(cuda_weights_upload(g, (cuda_prec)7, &w), OMMA_ERR_INVALID_ARG, "precision");
    GO_OK(cuda_weights_upload(g, CUDA_PREC_F32, &w));
    /* An extra node makes `other` a different graph for the weights. */
    gr_node r = tg_node(GR_RELU);
    r.n_in = 1;
    r.in[0] = other->nodes[0].out;
    r.out = tensor(other, 4, 4, 4, 8);
    GO(gr_add_node(other, &r, NULL) == OMMA_OK);
    if (cudaMalloc(&x, 4 * 4 * 8 * 4) != cudaSuccess ||
        cudaMalloc(&y, 4 * 4 * 8 * 4) != cudaSuccess)
        goto done;
    const void *in[GR_MAX_INPUTS] = {x};
    CHECK_FAILS(cuda_op_launch(g, &g->nodes[0], w, 0, 1, in, NULL, y, NULL), OMMA_ERR_INVALID_ARG,
                "batch");
    /* Choices made as at fewer items than run: not a choice batch. */
    CHECK_FAILS(cuda_op_launch(g, &g->nodes[0], w, 2, 1, in, NULL, y, NULL), OMMA_ERR_INVALID_ARG,
                "choice batch below the batch");
    CHECK_FAILS(cuda_op_launch(other, &other->nodes[0], w, 1, 1, in, NULL, y, NULL),
                OMMA_ERR_INVALID_ARG, "weights of a graph");
    CHECK_FAILS(cuda_op_launch(g, &other->nodes[0], w, 1, 1, in, NULL, y, NULL),
                OMMA_ERR_INVALID_ARG, "not one of the graph");
    const void *none[GR_MAX_INPUTS] = {NULL};
    CHECK_FAILS(cuda_op_launch(g, &g->nodes[0], w, 1, 1, none, NULL, y, NULL), OMMA_ERR_INVALID_ARG,
                "NULL");
    CHECK(cuda_op_launch(g, &g->nodes[0], w, 1, 1, in, NULL, y, NULL) == OMMA_OK);
    CHECK(cudaDeviceSynchronize() == cudaSuccess);
done:
    cudaFree(x);
    cudaFree(y);
    cuda_weights_free(w);
    cuda_weights_free(NULL);
    gr_free(g);
    gr_free(other);
}

/* Uploading and freeing weights gives the device memory back. */
static void test_weights_memory(void)
{
    gr_graph *g = NULL;
    cuda_weights *w = NULL;
    GO_OK(gr_create(&g));
    spec s;
    memset(&s, 0, sizeof s);
    s.kh = s.kw = s.sh = s.sw = s.dil = 1;
    s.mult = 1;
    int x = input(g, 4, 8, 8, 512);
    int y = build_conv(g, &s, GR_CONV2D, x, 8, 8, 512, 1024); /* 2 MB of fp32 filter */
    GO(y >= 0);
    g->outputs[g->n_outputs++] = y;
    size_t free0, free1, free2, total;
    GO_OK(cuda_weights_upload(g, CUDA_PREC_F32, &w)); /* warm-up */
    cuda_weights_free(w);
    w = NULL;
    GO(cudaMemGetInfo(&free0, &total) == cudaSuccess);
    GO_OK(cuda_weights_upload(g, CUDA_PREC_F16, &w));
    CHECK(w->bytes >= (size_t)512 * 1024 * 2);
    GO(cudaMemGetInfo(&free1, &total) == cudaSuccess);
    cuda_weights_free(w);
    w = NULL;
    GO(cudaMemGetInfo(&free2, &total) == cudaSuccess);
    CHECK(free1 < free0);
    CHECK(free2 == free0);
    if (free2 != free0)
        fprintf(stderr, "device memory free: %zu before, %zu after upload, %zu after free\n", free0,
                free1, free2);
done:
    cuda_weights_free(w);
    gr_free(g);
}

int main(int argc, char **argv)
{
    unsigned seed = (unsigned)time(NULL);
    /* Under compute-sanitizer (scripts/gpu-check.sh sets this) the full table
     * takes too long: run the quick subset. */
    if (getenv("OMMA_TEST_SANITIZER"))
        quick_mode = true;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            quick_mode = true;
        else if (!strcmp(argv[i], "--shared-gpu"))
            shared_gpu = true;
        else if (!strcmp(argv[i], "--verbose"))
            verbose = true;
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = (unsigned)strtoul(argv[++i], NULL, 10);
    }
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)
        SKIP_TEST("no CUDA device");
    fprintf(stderr, "seed %u%s\n", seed, quick_mode ? " (quick)" : "");
    rng_state = 7; /* shapes: the same table every run */
    make_cases();
    rng_state = seed; /* values: fresh */
    RUN(test_errors);
    if (!shared_gpu) /* other processes change the free memory it measures */
        RUN(test_weights_memory);
    RUN(test_op_table);
    RUN(test_chains);
    RUN(test_up_add);
    RUN(test_pairs);
    RUN(test_heads);
    RUN(test_dwproj);
    RUN(test_resize_add);
    return testing_finish();
}
