/* Kernels that replace others for speed give the same bits (needs a GPU).
 *
 * gemm_deep (cuda_ops_gemm_deep.cu) against gemm_tc: the same fp16 1x1
 * convolution launched through cuda_launch_conv_pointwise twice, once with
 * x 16-byte aligned (cuda_conv_deep_ok: gemm_deep, or gemm_deep_ldsm's
 * 128x64 tiles for N a multiple of 64 or over 512, its tiles across N for
 * 65-160 columns over many rows, or for grids of few tiles its 32x32
 * ones) and once with the same x 4 bytes off (no
 * 16-byte loader: gemm_tc, the 64x64 tiles gemm_deep's sums must repeat).
 * Then batch invariance: the first items at a smaller batch (choice_batch
 * kept) give the same bits. Shapes: BlazePose's long-K layers at batch 128
 * (288 -> 288 at 2x2 and 4x4, 864 -> 144, 144 -> 864 and 864 -> 48 at 8x8,
 * 528 -> 88 and 384 -> 64 at 16x16), partial tiles, N not a multiple of 8
 * (pair stores), a few rows, each activation, with and without residual
 * and bias.
 *
 * dwconv_vec3 (cuda_ops_dwconv.cu: 3x3, 16-byte vectors) against
 * dwconv_vec with 8-byte vectors (the same x 8 bytes off), fp16 and fp32:
 * BlazePose's 288-channel tail at 4x4 and 2x2, stride 2, dilation 2,
 * padding on every side, residual.
 *
 * Every output must be equal bit for bit (the same fp32 operations in the
 * same order, the same rounding). Inputs hold zeros of both signs; fresh
 * random values every run (the seed is printed; --seed N replays). Exits
 * 77 where there is no GPU. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "engine/cuda_ops.h"
#include "model/graph.h"
#include "testing.h"

static unsigned rng_state = 1;

static unsigned rnd(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}

/* Uniform in [-1, 1). */
static float urand(void)
{
    return (float)(rnd() & 0xFFFF) / 32768.0f - 1.0f;
}

/* n random fp16 bit patterns: either sign, exponent fields e0 .. e0 + 4
 * (magnitudes 2^(e0 - 15) to 2^(e0 - 10)), any mantissa; one in 16 a zero
 * of either sign. */
static void fill_half(uint16_t *h, size_t n, unsigned e0)
{
    for (size_t i = 0; i < n; i++) {
        unsigned r = rnd();
        uint16_t sign = (uint16_t)((r >> 4) & 1u) << 15;
        if (r % 16 == 0)
            h[i] = sign;
        else
            h[i] = (uint16_t)(sign | ((e0 + (r >> 5) % 5) << 10) | ((r >> 8) & 0x3FFu));
    }
}

typedef struct gcase {
    int batch, h, w, k, n;
    gr_act act;
    bool residual, bias;
    int small_batch; /* batch-invariance run: this many items, choice_batch = batch */
} gcase;

static const gcase gcases[] = {
    {128, 2, 2, 288, 288, GR_ACT_RELU6, true, true, 7},
    {128, 4, 4, 288, 288, GR_ACT_NONE, true, true, 7},
    {128, 8, 8, 864, 144, GR_ACT_NONE, true, true, 7},
    {128, 8, 8, 144, 864, GR_ACT_RELU6, false, true, 7},
    {128, 8, 8, 864, 48, GR_ACT_RELU6, false, true, 1},
    {128, 16, 16, 528, 88, GR_ACT_NONE, true, true, 7},
    {128, 16, 16, 384, 64, GR_ACT_RELU, false, true, 3},
    {20, 8, 8, 136, 130, GR_ACT_PRELU, false, false, 3},
    {1, 75, 76, 136, 130, GR_ACT_PRELU, true, false, 0},
    {33, 16, 16, 136, 96, GR_ACT_RELU, true, true, 2},
    {1, 93, 91, 152, 66, GR_ACT_PRELU, true, true, 0},
    {1, 1, 3, 256, 34, GR_ACT_RELU, false, true, 0},
    {3, 5, 7, 264, 40, GR_ACT_RELU6, true, false, 1},
    /* gemm_deep_ldsm's 128x64 tiles (N a multiple of 64 or over 512): the
     * expansions 160 -> 960 and 272 -> 1632 (a half-empty last N tile),
     * a partial last M tile, N = 514 (pair stores). */
    {128, 16, 16, 160, 960, GR_ACT_RELU6, false, true, 5},
    {128, 8, 8, 272, 1632, GR_ACT_RELU6, false, true, 3},
    {40, 13, 15, 192, 192, GR_ACT_PRELU, true, true, 2},
    {20, 9, 9, 136, 514, GR_ACT_PRELU, true, false, 3},
    /* Its one tile across 65-160 columns (96, 128, 160 wide): heavy's 960
     * -> 160, the detector's 480 -> 112 at 14x14, N = 130 (pair stores)
     * with a partial last row tile. */
    {128, 16, 16, 960, 160, GR_ACT_NONE, true, true, 3},
    {128, 14, 14, 480, 112, GR_ACT_RELU6, true, true, 2},
    {100, 15, 17, 136, 130, GR_ACT_PRELU, true, false, 4},
};

#define CUDA_REQUIRE(expr)                                                                         \
    do {                                                                                           \
        cudaError_t e_ = (expr);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr, cudaGetErrorString(e_)); \
            testing_case_failed = 1;                                                               \
            goto out;                                                                              \
        }                                                                                          \
    } while (0)

/* Index of the first differing half of a and b (n halves), or -1. */
static long first_diff(const uint16_t *a, const uint16_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i] != b[i])
            return (long)i;
    return -1;
}

static void run_case(const gcase *c)
{
    const size_t M = (size_t)c->batch * c->h * c->w, K = (size_t)c->k, N = (size_t)c->n;
    uint16_t *hx = malloc(M * K * sizeof *hx), *hw = malloc(N * K * sizeof *hw);
    uint16_t *hr = malloc(M * N * sizeof *hr), *hy[3] = {NULL, NULL, NULL};
    float *hb = malloc(N * sizeof *hb), *ha = malloc(N * sizeof *ha);
    void *dx = NULL, *dw = NULL, *dr = NULL, *dy[3] = {NULL, NULL, NULL};
    float *db = NULL, *da = NULL;
    cudaStream_t s = NULL;
    for (int i = 0; i < 3; i++)
        hy[i] = malloc(M * N * sizeof(uint16_t));
    REQUIRE(hx && hw && hr && hb && ha && hy[0] && hy[1] && hy[2]);

    fill_half(hx, M * K, 11); /* up to 2 */
    fill_half(hw, N * K, 5); /* up to 1/16 */
    fill_half(hr, M * N, 11);
    for (size_t i = 0; i < N; i++) {
        hb[i] = urand();
        ha[i] = 0.25f * urand();
    }

    CUDA_REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    /* x twice: at 16-byte alignment and 4 bytes after it. */
    CUDA_REQUIRE(cudaMalloc(&dx, 2 * (M * K + 8) * sizeof(uint16_t)));
    CUDA_REQUIRE(cudaMalloc(&dw, N * K * sizeof(uint16_t)));
    CUDA_REQUIRE(cudaMalloc(&dr, M * N * sizeof(uint16_t)));
    CUDA_REQUIRE(cudaMalloc((void **)&db, N * sizeof(float)));
    CUDA_REQUIRE(cudaMalloc((void **)&da, N * sizeof(float)));
    for (int i = 0; i < 3; i++) {
        CUDA_REQUIRE(cudaMalloc(&dy[i], M * N * sizeof(uint16_t)));
        CUDA_REQUIRE(cudaMemsetAsync(dy[i], 0xFF, M * N * sizeof(uint16_t), s)); /* NaN */
    }
    uint16_t *x_al = (uint16_t *)dx, *x_off = (uint16_t *)dx + M * K + 8 + 2;
    CUDA_REQUIRE(cudaMemcpyAsync(x_al, hx, M * K * sizeof(uint16_t), cudaMemcpyHostToDevice, s));
    CUDA_REQUIRE(cudaMemcpyAsync(x_off, hx, M * K * sizeof(uint16_t), cudaMemcpyHostToDevice, s));
    CUDA_REQUIRE(cudaMemcpyAsync(dw, hw, N * K * sizeof(uint16_t), cudaMemcpyHostToDevice, s));
    CUDA_REQUIRE(cudaMemcpyAsync(dr, hr, M * N * sizeof(uint16_t), cudaMemcpyHostToDevice, s));
    CUDA_REQUIRE(cudaMemcpyAsync(db, hb, N * sizeof(float), cudaMemcpyHostToDevice, s));
    CUDA_REQUIRE(cudaMemcpyAsync(da, ha, N * sizeof(float), cudaMemcpyHostToDevice, s));

    cuda_conv_args a;
    memset(&a, 0, sizeof a);
    a.prec = CUDA_PREC_F16;
    a.w = dw;
    a.bias = c->bias ? db : NULL;
    a.residual = c->residual ? dr : NULL;
    a.alpha = c->act == GR_ACT_PRELU ? da : NULL;
    a.batch = a.choice_batch = c->batch;
    a.ih = a.oh = c->h;
    a.iw = a.ow = c->w;
    a.cin = c->k;
    a.cout = c->n;
    a.kh = a.kw = a.sh = a.sw = a.dh = a.dw = 1;
    a.mult = 1;
    a.act = c->act;

    a.x = x_al;
    a.y = dy[0];
    CHECK(cuda_conv_deep_ok(&a) && !cuda_conv_rows_ok(&a) && !cuda_conv_thin_ok(&a));
    CUDA_REQUIRE(cuda_launch_conv_pointwise(&a, s));
    a.x = x_off;
    a.y = dy[1];
    CHECK(!cuda_conv_deep_ok(&a) && !cuda_conv_rows_ok(&a) && !cuda_conv_thin_ok(&a));
    CUDA_REQUIRE(cuda_launch_conv_pointwise(&a, s));
    if (c->small_batch > 0) {
        a.x = x_al;
        a.y = dy[2];
        a.batch = c->small_batch;
        CUDA_REQUIRE(cuda_launch_conv_pointwise(&a, s));
    }
    for (int i = 0; i < 3; i++)
        CUDA_REQUIRE(
            cudaMemcpyAsync(hy[i], dy[i], M * N * sizeof(uint16_t), cudaMemcpyDeviceToHost, s));
    CUDA_REQUIRE(cudaStreamSynchronize(s));

    long d = first_diff(hy[0], hy[1], M * N);
    if (d >= 0) {
        fprintf(stderr, "  %dx%dx%d K %d N %d: gemm_deep != gemm_tc at row %ld column %ld\n",
                c->batch, c->h, c->w, c->k, c->n, d / (long)N, d % (long)N);
        testing_case_failed = 1;
    }
    /* gemm_tc's outputs are finite (no NaN left from the poison). */
    for (size_t i = 0; i < M * N; i++)
        if ((hy[1][i] & 0x7C00u) == 0x7C00u) {
            fprintf(stderr, "  output %zu not written\n", i);
            testing_case_failed = 1;
            break;
        }
    if (c->small_batch > 0) {
        size_t n = (size_t)c->small_batch * c->h * c->w * N;
        d = first_diff(hy[0], hy[2], n);
        if (d >= 0) {
            fprintf(stderr, "  %dx%dx%d K %d N %d: batch %d differs at row %ld column %ld\n",
                    c->batch, c->h, c->w, c->k, c->n, c->small_batch, d / (long)N, d % (long)N);
            testing_case_failed = 1;
        }
        if (n < M * N && hy[2][n] != 0xFFFF) {
            fprintf(stderr, "  batch %d wrote past its rows\n", c->small_batch);
            testing_case_failed = 1;
        }
    }
out:
    for (int i = 0; i < 3; i++) {
        cudaFree(dy[i]);
        free(hy[i]);
    }
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dr);
    cudaFree(db);
    cudaFree(da);
    if (s)
        cudaStreamDestroy(s);
    free(hx);
    free(hw);
    free(hr);
    free(hb);
    free(ha);
}

static void test_deep_vs_tc(void)
{
    for (size_t i = 0; i < sizeof gcases / sizeof gcases[0]; i++) {
        const int before = testing_case_failed;
        testing_case_failed = 0;
        run_case(&gcases[i]);
        if (testing_case_failed)
            fprintf(stderr, "  case %zu failed\n", i);
        testing_case_failed |= before;
    }
}

/* ---- dwconv_vec3 against dwconv_vec ------------------------------------- */

typedef struct dcase {
    cuda_prec prec;
    int batch, h, w, c, stride, dil, pt, pl, pb, pr;
    gr_act act;
    bool residual, bias;
} dcase;

static const dcase dcases[] = {
    {CUDA_PREC_F16, 128, 4, 4, 288, 1, 1, 1, 1, 1, 1, GR_ACT_RELU6, false, true},
    {CUDA_PREC_F16, 128, 8, 8, 288, 2, 1, 0, 0, 1, 1, GR_ACT_RELU6, false, true},
    {CUDA_PREC_F16, 128, 2, 2, 288, 1, 1, 1, 1, 1, 1, GR_ACT_NONE, true, true},
    {CUDA_PREC_F16, 3, 5, 6, 40, 1, 2, 3, 3, 3, 3, GR_ACT_PRELU, true, false},
    {CUDA_PREC_F16, 2, 7, 9, 16, 2, 1, 1, 0, 0, 1, GR_ACT_RELU, true, true},
    {CUDA_PREC_F32, 16, 4, 4, 288, 1, 1, 1, 1, 1, 1, GR_ACT_RELU6, true, true},
    {CUDA_PREC_F32, 3, 5, 6, 40, 2, 2, 3, 2, 1, 3, GR_ACT_PRELU, false, true},
};

/* n random values of element size es (2: fp16 bit patterns as fill_half,
 * 4: floats in [-2, 2), one in 16 a zero of either sign). */
static void fill_any(void *p, size_t n, int es, unsigned e0)
{
    if (es == 2) {
        fill_half(p, n, e0);
        return;
    }
    float *f = p;
    for (size_t i = 0; i < n; i++) {
        unsigned r = rnd();
        f[i] = r % 16 == 0 ? (r % 32 == 0 ? -0.0f : 0.0f) : 2.0f * urand();
    }
}

static void run_dw_case(const dcase *c)
{
    const int es = c->prec == CUDA_PREC_F16 ? 2 : 4, ke = 2 * c->dil + 1;
    const int oh = (c->h + c->pt + c->pb - ke) / c->stride + 1;
    const int ow = (c->w + c->pl + c->pr - ke) / c->stride + 1;
    const size_t nx = (size_t)c->batch * c->h * c->w * c->c, nw = 9 * (size_t)c->c;
    const size_t ny = (size_t)c->batch * oh * ow * c->c;
    unsigned char *hx = malloc(nx * es), *hw = malloc(nw * es), *hr = malloc(ny * es);
    unsigned char *hy[2] = {malloc(ny * es), malloc(ny * es)};
    float *hb = malloc(c->c * sizeof *hb), *ha = malloc(c->c * sizeof *ha);
    unsigned char *dx = NULL, *dw = NULL, *dr = NULL, *dy[2] = {NULL, NULL};
    float *db = NULL, *da = NULL;
    cudaStream_t s = NULL;
    REQUIRE(hx && hw && hr && hy[0] && hy[1] && hb && ha);
    fill_any(hx, nx, es, 11);
    fill_any(hw, nw, es, 11);
    fill_any(hr, ny, es, 11);
    for (int i = 0; i < c->c; i++) {
        hb[i] = urand();
        ha[i] = 0.25f * urand();
    }

    CUDA_REQUIRE(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    /* x twice: at 16-byte alignment and 8 bytes after it. */
    CUDA_REQUIRE(cudaMalloc((void **)&dx, 2 * nx * es + 64));
    CUDA_REQUIRE(cudaMalloc((void **)&dw, nw * es));
    CUDA_REQUIRE(cudaMalloc((void **)&dr, ny * es));
    CUDA_REQUIRE(cudaMalloc((void **)&db, c->c * sizeof(float)));
    CUDA_REQUIRE(cudaMalloc((void **)&da, c->c * sizeof(float)));
    for (int i = 0; i < 2; i++) {
        CUDA_REQUIRE(cudaMalloc((void **)&dy[i], ny * es));
        CUDA_REQUIRE(cudaMemsetAsync(dy[i], 0xFF, ny * es, s));
    }
    unsigned char *x_al = dx, *x_off = dx + (nx * es + 31) / 16 * 16 + 8;
    CUDA_REQUIRE(cudaMemcpyAsync(x_al, hx, nx * es, cudaMemcpyHostToDevice, s));
    CUDA_REQUIRE(cudaMemcpyAsync(x_off, hx, nx * es, cudaMemcpyHostToDevice, s));
    CUDA_REQUIRE(cudaMemcpyAsync(dw, hw, nw * es, cudaMemcpyHostToDevice, s));
    CUDA_REQUIRE(cudaMemcpyAsync(dr, hr, ny * es, cudaMemcpyHostToDevice, s));
    CUDA_REQUIRE(cudaMemcpyAsync(db, hb, c->c * sizeof(float), cudaMemcpyHostToDevice, s));
    CUDA_REQUIRE(cudaMemcpyAsync(da, ha, c->c * sizeof(float), cudaMemcpyHostToDevice, s));

    cuda_conv_args a;
    memset(&a, 0, sizeof a);
    a.prec = c->prec;
    a.w = dw;
    a.bias = c->bias ? db : NULL;
    a.residual = c->residual ? dr : NULL;
    a.alpha = c->act == GR_ACT_PRELU ? da : NULL;
    a.batch = a.choice_batch = c->batch;
    a.ih = c->h;
    a.iw = c->w;
    a.cin = a.cout = c->c;
    a.oh = oh;
    a.ow = ow;
    a.kh = a.kw = 3;
    a.sh = a.sw = c->stride;
    a.dh = a.dw = c->dil;
    a.pt = c->pt;
    a.pl = c->pl;
    a.mult = 1;
    a.act = c->act;
    for (int i = 0; i < 2; i++) {
        a.x = i == 0 ? x_al : x_off;
        a.y = dy[i];
        CUDA_REQUIRE(cuda_launch_dwconv(&a, s));
        CUDA_REQUIRE(cudaMemcpyAsync(hy[i], dy[i], ny * es, cudaMemcpyDeviceToHost, s));
    }
    CUDA_REQUIRE(cudaStreamSynchronize(s));
    for (size_t i = 0; i < ny; i++) {
        if (memcmp(hy[0] + i * es, hy[1] + i * es, es) != 0) {
            fprintf(stderr, "  dw %s %dx%dx%dx%d s%d d%d: dwconv_vec3 != dwconv_vec at %zu\n",
                    es == 2 ? "fp16" : "fp32", c->batch, c->h, c->w, c->c, c->stride, c->dil, i);
            testing_case_failed = 1;
            break;
        }
        uint32_t bits = 0;
        memcpy(&bits, hy[1] + i * es, es);
        if (bits == (es == 2 ? 0xFFFFu : 0xFFFFFFFFu)) {
            fprintf(stderr, "  dw output %zu not written\n", i);
            testing_case_failed = 1;
            break;
        }
    }
out:
    for (int i = 0; i < 2; i++) {
        cudaFree(dy[i]);
        free(hy[i]);
    }
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dr);
    cudaFree(db);
    cudaFree(da);
    if (s)
        cudaStreamDestroy(s);
    free(hx);
    free(hw);
    free(hr);
    free(hb);
    free(ha);
}

static void test_dwconv_vec3(void)
{
    for (size_t i = 0; i < sizeof dcases / sizeof dcases[0]; i++) {
        const int before = testing_case_failed;
        testing_case_failed = 0;
        run_dw_case(&dcases[i]);
        if (testing_case_failed)
            fprintf(stderr, "  dw case %zu failed\n", i);
        testing_case_failed |= before;
    }
}

int main(int argc, char **argv)
{
    unsigned seed = (unsigned)time(NULL);
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = (unsigned)strtoul(argv[++i], NULL, 10);
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)
        SKIP_TEST("no CUDA device");
    fprintf(stderr, "seed %u\n", seed);
    rng_state = seed;
    RUN(test_deep_vs_tc);
    RUN(test_dwconv_vec3);
    return testing_finish();
}
