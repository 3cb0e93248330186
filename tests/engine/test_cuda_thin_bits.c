/* gemm_thin (cuda_ops_gemm_thin.cu) gives gemm_tc16's bits: the same
 * m16n8k16 products over the same k16 steps in order into fp32
 * accumulators, then bias, residual, activation and one rounding to half.
 * The launcher hands a 1x1 convolution to gemm_thin only where its tiles
 * are many at choice_batch items, so one run of BlazePose's thin shapes
 * (and a few boundaries) at a batch of 260 items of 15x17 pixels takes
 * gemm_thin, and runs of its first and last item alone (choice_batch 1)
 * take gemm_tc16; each item's outputs must be bitwise the same. This is
 * the rule the engine's choice between the two relies on (and batch
 * invariance: the last item starts mid-tile in the big run). Random
 * inputs, seed printed (--seed N to replay). Exits 77 without a GPU. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "engine/cuda_ops.h"
#include "model/graph.h"
#include "testing.h"

#define ITEM_H 15
#define ITEM_W 17
#define ITEMS 260

static unsigned rng_state = 1;

static unsigned rnd(void)
{
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}

static float frand(void) /* [-1, 1) */
{
    return (float)rnd() / (float)(1u << 23) - 1.0f;
}

/* A random half of magnitude in [2^(e0 - 15), 2^(e0 - 11)), either sign. */
static uint16_t rand_half(int e0)
{
    unsigned r = rnd();
    return (uint16_t)((r & 1) << 15 | (unsigned)(e0 + (int)(r >> 1) % 4) << 10 | (r >> 3 & 0x3ff));
}

typedef struct shape {
    int K, N;
    gr_act act;
    bool residual, bias;
} shape;

/* n random halves (rand_half(e0)) on the device; NULL on failure. */
static uint16_t *device_halves(size_t n, int e0)
{
    uint16_t *h = malloc(n * sizeof *h), *d = NULL;
    if (!h)
        return NULL;
    for (size_t i = 0; i < n; i++)
        h[i] = rand_half(e0);
    if (cudaMalloc((void **)&d, n * sizeof *h) != cudaSuccess ||
        cudaMemcpy(d, h, n * sizeof *h, cudaMemcpyHostToDevice) != cudaSuccess) {
        cudaFree(d);
        d = NULL;
    }
    free(h);
    return d;
}

static float *device_floats(int n, float lo, float hi)
{
    float *h = malloc((size_t)n * sizeof *h), *d = NULL;
    if (!h)
        return NULL;
    for (int i = 0; i < n; i++)
        h[i] = lo + (hi - lo) * 0.5f * (frand() + 1.0f);
    if (cudaMalloc((void **)&d, (size_t)n * sizeof *h) != cudaSuccess ||
        cudaMemcpy(d, h, (size_t)n * sizeof *h, cudaMemcpyHostToDevice) != cudaSuccess) {
        cudaFree(d);
        d = NULL;
    }
    free(h);
    return d;
}

/* The 1x1 convolution of `batch` items from item `first` (x, residual and y
 * offset to it) at choice_batch = batch. */
static cudaError_t run_conv(const shape *s, const uint16_t *x, const uint16_t *w, const float *bias,
                            const uint16_t *res, const float *alpha, uint16_t *y, int first,
                            int batch)
{
    const size_t px = (size_t)first * ITEM_H * ITEM_W;
    cuda_conv_args a;
    memset(&a, 0, sizeof a);
    a.prec = CUDA_PREC_F16;
    a.x = x + px * s->K;
    a.w = w;
    a.bias = bias;
    a.residual = res ? res + px * s->N : NULL;
    a.alpha = alpha;
    a.y = y + px * s->N;
    a.batch = a.choice_batch = batch;
    a.ih = a.oh = ITEM_H;
    a.iw = a.ow = ITEM_W;
    a.cin = s->K;
    a.cout = s->N;
    a.kh = a.kw = a.sh = a.sw = a.dh = a.dw = 1;
    a.mult = 1;
    a.act = s->act;
    return cuda_launch_conv_pointwise(&a, 0);
}

/* Whether the launcher hands the convolution at `batch` items (res: the
 * residual or NULL) to gemm_thin. */
static bool takes_thin(const shape *s, int batch, const void *res)
{
    cuda_conv_args a;
    memset(&a, 0, sizeof a);
    a.prec = CUDA_PREC_F16;
    a.batch = a.choice_batch = batch;
    a.ih = a.oh = ITEM_H;
    a.iw = a.ow = ITEM_W;
    a.cin = s->K;
    a.cout = s->N;
    a.kh = a.kw = a.sh = a.sw = 1;
    a.act = s->act;
    a.residual = res;
    return cuda_conv_thin_ok(&a) && !cuda_conv_rows_ok(&a);
}

static int check_shape(const shape *s)
{
    const size_t pixels = (size_t)ITEMS * ITEM_H * ITEM_W, item = (size_t)ITEM_H * ITEM_W * s->N;
    int failed = 0;
    /* x up to 1, the filter up to 1/4, the residual up to 2 in magnitude. */
    uint16_t *x = device_halves(pixels * s->K, 11), *w = device_halves((size_t)s->N * s->K, 9);
    uint16_t *res = s->residual ? device_halves(pixels * s->N, 12) : NULL;
    float *bias = s->bias ? device_floats(s->N, -0.5f, 0.5f) : NULL;
    float *alpha = s->act == GR_ACT_PRELU ? device_floats(s->N, 0.05f, 0.5f) : NULL;
    uint16_t *big = NULL, *one = NULL;
    uint16_t *hb = malloc(item * 2), *ho = malloc(item * 2);
    if (!x || !w || (s->residual && !res) || (s->bias && !bias) ||
        (s->act == GR_ACT_PRELU && !alpha) || !hb || !ho ||
        cudaMalloc((void **)&big, pixels * s->N * 2) != cudaSuccess ||
        cudaMalloc((void **)&one, pixels * s->N * 2) != cudaSuccess) {
        fprintf(stderr, "K %d N %d: out of memory\n", s->K, s->N);
        failed = 1;
        goto done;
    }
    if (!takes_thin(s, ITEMS, res) || takes_thin(s, 1, res)) {
        fprintf(stderr, "K %d N %d: gemm_thin at %d items and not at 1 expected\n", s->K, s->N,
                ITEMS);
        failed = 1;
        goto done;
    }
    cudaMemset(big, 0xff, pixels * s->N * 2);
    cudaMemset(one, 0xff, pixels * s->N * 2);
    cudaError_t e = run_conv(s, x, w, bias, res, alpha, big, 0, ITEMS);
    if (e == cudaSuccess)
        e = run_conv(s, x, w, bias, res, alpha, one, 0, 1);
    if (e == cudaSuccess)
        e = run_conv(s, x, w, bias, res, alpha, one, ITEMS - 1, 1);
    if (e == cudaSuccess)
        e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        fprintf(stderr, "K %d N %d: %s\n", s->K, s->N, cudaGetErrorString(e));
        failed = 1;
        goto done;
    }
    for (int it = 0; it < ITEMS && !failed; it += ITEMS - 1) {
        if (cudaMemcpy(hb, big + it * item, item * 2, cudaMemcpyDeviceToHost) != cudaSuccess ||
            cudaMemcpy(ho, one + it * item, item * 2, cudaMemcpyDeviceToHost) != cudaSuccess) {
            failed = 1;
            break;
        }
        for (size_t i = 0; i < item; i++) {
            if (hb[i] != ho[i] || (hb[i] & 0x7c00) == 0x7c00) {
                fprintf(stderr,
                        "K %d N %d act %d item %d: output %zu (row %zu, column %zu) is %04x "
                        "from gemm_thin, %04x from gemm_tc16\n",
                        s->K, s->N, (int)s->act, it, i, i / s->N, i % s->N, hb[i], ho[i]);
                failed = 1;
                break;
            }
        }
    }
done:
    free(hb);
    free(ho);
    cudaFree(x);
    cudaFree(w);
    cudaFree(res);
    cudaFree(bias);
    cudaFree(alpha);
    cudaFree(big);
    cudaFree(one);
    return failed;
}

static void test_thin_is_tc16(void)
{
    /* BlazePose's thin expansions (landmark full and the detector), its
     * 24 -> 48, a residual with each activation, no bias, K = 8 and 120
     * (half a k16 step of zeros, as gemm_tc16's 32-deep tiles pad), N = 16
     * (gemm_tc16_narrow at one item), N = 88 (a pass of 24 columns), N = 10
     * and 22 (whole tiles through shared memory, rows not 16-byte
     * multiples); the projections 144 -> 24 and 192 -> 32 with the block's
     * input added, and K = 184 (gemm_tc16_narrow's before, its K tiles of
     * 32: the last step all zeros). */
    static const shape shapes[] = {
        {24, 144, GR_ACT_RELU6, false, true}, {32, 192, GR_ACT_RELU6, false, true},
        {64, 384, GR_ACT_RELU6, false, true}, {88, 528, GR_ACT_RELU6, false, true},
        {80, 480, GR_ACT_RELU6, false, true}, {112, 672, GR_ACT_RELU6, false, true},
        {24, 48, GR_ACT_RELU6, false, true},  {32, 96, GR_ACT_PRELU, true, true},
        {40, 200, GR_ACT_RELU, true, false},  {24, 88, GR_ACT_NONE, true, true},
        {8, 40, GR_ACT_RELU, false, true},    {120, 24, GR_ACT_NONE, true, true},
        {24, 16, GR_ACT_NONE, false, true},   {40, 10, GR_ACT_RELU, true, true},
        {48, 22, GR_ACT_PRELU, true, false},  {144, 24, GR_ACT_NONE, true, true},
        {192, 32, GR_ACT_NONE, true, true},   {184, 18, GR_ACT_RELU6, true, false},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
        CHECK(check_shape(&shapes[i]) == 0);
}

int main(int argc, char **argv)
{
    int ndev = 0;
    unsigned seed = (unsigned)time(NULL);
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "--seed") == 0)
            seed = (unsigned)strtoul(argv[i + 1], NULL, 10);
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)
        SKIP_TEST("no CUDA device");
    fprintf(stderr, "seed %u\n", seed);
    rng_state = seed;
    RUN(test_thin_is_tc16);
    return testing_finish();
}
