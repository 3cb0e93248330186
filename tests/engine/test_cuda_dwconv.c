/* The depthwise kernels against each other, bitwise: dwconv_tile (input
 * window staged in shared memory) and dwconv_rows against dwconv_vec (one
 * output a thread), which sum the same taps in the same order (ky, then
 * kx, taps outside the input skipped; then bias, residual, activation, one
 * rounding), so every output must have the same bits (memcmp), fp16 and
 * fp32. Inputs and filters hold -0, infinities and NaNs besides random
 * finite values: a tap read as zero instead of skipped, or a sum in
 * another order, changes some output's bits. Shapes: BlazePose's
 * depthwise layers that take dwconv_rows (at batch 2), then edges (partial
 * tiles along every axis, partial channel slabs, 1 to 3 channel vectors,
 * SAME / asymmetric / generous padding, widths not a multiple of 4, each
 * activation, with and without bias and residual). Also that the
 * launcher's choice at a large grid is the tile kernel and matches, and
 * that kernels refuse what they do not take.
 *
 * Exits 77 where there is no GPU. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "engine/cuda_ops.h"
#include "model/graph.h"
#include "testing.h"

static uint32_t rng = 12345;

static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

/* A random value's bits: mostly finite values of magnitude 2^-4 .. 2^3,
 * some zeros of either sign, a few infinities and NaNs (`specials` in
 * 1000). */
static uint16_t rnd_half(int specials)
{
    uint32_t r = rnd() % 1000;
    uint16_t sign = (uint16_t)((rnd() & 1) << 15);
    if (r < (uint32_t)specials) {
        switch (rnd() % 4) {
        case 0:
            return (uint16_t)(sign | 0x7c00); /* inf */
        case 1:
            return 0x7e00; /* NaN */
        default:
            return sign; /* +-0 */
        }
    }
    if (r < 60)
        return sign; /* +-0 */
    uint16_t e = (uint16_t)(11 + rnd() % 7);
    return (uint16_t)(sign | e << 10 | (rnd() & 0x3ff));
}

static float rnd_float(int specials)
{
    uint32_t r = rnd() % 1000;
    uint32_t sign = (rnd() & 1) << 31, bits;
    if (r < (uint32_t)specials) {
        uint32_t k = rnd() % 4;
        bits = k == 0 ? sign | 0x7f800000u : k == 1 ? 0x7fc00000u : sign;
    } else if (r < 60) {
        bits = sign;
    } else {
        bits = sign | (123u + rnd() % 7) << 23 | (rnd() & 0x7fffff);
    }
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

typedef struct dw_case {
    int batch, ih, iw, c, k, s, pt, pl, oh, ow;
    int act;
    bool bias, residual;
} dw_case;

/* TFLite's SAME: output ceil(in / s), the extra padding after. */
static void same(dw_case *d)
{
    d->oh = (d->ih + d->s - 1) / d->s;
    d->ow = (d->iw + d->s - 1) / d->s;
    int th = (d->oh - 1) * d->s + d->k - d->ih, tw = (d->ow - 1) * d->s + d->k - d->iw;
    d->pt = th > 0 ? th / 2 : 0;
    d->pl = tw > 0 ? tw / 2 : 0;
}

/* Explicit padding before (pt, pl) and after (pb, pr). */
static void padded(dw_case *d, int pt, int pl, int pb, int pr)
{
    d->pt = pt, d->pl = pl;
    d->oh = (d->ih + pt + pb - d->k) / d->s + 1;
    d->ow = (d->iw + pl + pr - d->k) / d->s + 1;
}

static const char *kernel_name(cuda_dw_kernel k)
{
    return k == CUDA_DW_TILE   ? "tile"
           : k == CUDA_DW_ROWS ? "rows"
           : k == CUDA_DW_VEC  ? "vec"
                               : "auto";
}

/* Device buffers of one case. */
typedef struct dev {
    void *x, *w, *res, *y[2];
    float *bias, *alpha;
} dev;

static void dev_free(dev *d)
{
    cudaFree(d->x);
    cudaFree(d->w);
    cudaFree(d->res);
    cudaFree(d->y[0]);
    cudaFree(d->y[1]);
    cudaFree(d->bias);
    cudaFree(d->alpha);
    memset(d, 0, sizeof *d);
}

static int n_compared;

/* Runs `k` and dwconv_vec on the case in precision p and compares their
 * outputs bitwise; false on a difference or an error (printed). */
static bool compare(const dw_case *d, cuda_prec p, cuda_dw_kernel k, bool expect_taken)
{
    const size_t es = p == CUDA_PREC_F16 ? 2 : 4;
    const size_t nx = (size_t)d->batch * d->ih * d->iw * d->c;
    const size_t ny = (size_t)d->batch * d->oh * d->ow * d->c;
    const size_t nw = (size_t)d->k * d->k * d->c;
    unsigned char *hx = malloc(nx * es), *hw = malloc(nw * es), *hr = malloc(ny * es);
    unsigned char *hy[2] = {malloc(ny * es), malloc(ny * es)};
    float *hb = malloc(d->c * sizeof(float)), *ha = malloc(d->c * sizeof(float));
    dev g = {0};
    bool ok = false;
    if (!hx || !hw || !hr || !hy[0] || !hy[1] || !hb || !ha)
        goto done;
    for (size_t i = 0; i < nx; i++) {
        if (es == 2) {
            uint16_t h = rnd_half(4);
            memcpy(hx + 2 * i, &h, 2);
        } else {
            float f = rnd_float(4);
            memcpy(hx + 4 * i, &f, 4);
        }
    }
    for (size_t i = 0; i < nw; i++) {
        if (es == 2) {
            uint16_t h = rnd_half(1);
            memcpy(hw + 2 * i, &h, 2);
        } else {
            float f = rnd_float(1);
            memcpy(hw + 4 * i, &f, 4);
        }
    }
    for (size_t i = 0; i < ny; i++) {
        if (es == 2) {
            uint16_t h = rnd_half(1);
            memcpy(hr + 2 * i, &h, 2);
        } else {
            float f = rnd_float(1);
            memcpy(hr + 4 * i, &f, 4);
        }
    }
    for (int i = 0; i < d->c; i++) {
        hb[i] = rnd() % 10 == 0 ? 0.0f : rnd_float(0);
        ha[i] = rnd_float(0);
    }
    if (cudaMalloc(&g.x, nx * es) || cudaMalloc(&g.w, nw * es) || cudaMalloc(&g.res, ny * es) ||
        cudaMalloc(&g.y[0], ny * es) || cudaMalloc(&g.y[1], ny * es) ||
        cudaMalloc((void **)&g.bias, d->c * sizeof(float)) ||
        cudaMalloc((void **)&g.alpha, d->c * sizeof(float))) {
        fprintf(stderr, "cudaMalloc failed\n");
        goto done;
    }
    cudaMemcpy(g.x, hx, nx * es, cudaMemcpyHostToDevice);
    cudaMemcpy(g.w, hw, nw * es, cudaMemcpyHostToDevice);
    cudaMemcpy(g.res, hr, ny * es, cudaMemcpyHostToDevice);
    cudaMemcpy(g.bias, hb, d->c * sizeof(float), cudaMemcpyHostToDevice);
    cudaMemcpy(g.alpha, ha, d->c * sizeof(float), cudaMemcpyHostToDevice);
    /* Outputs pre-set to different garbage, so an output left unwritten
     * differs. */
    cudaMemset(g.y[0], 0x11, ny * es);
    cudaMemset(g.y[1], 0x7f, ny * es);
    cuda_conv_args a;
    memset(&a, 0, sizeof a);
    a.prec = p;
    a.x = g.x, a.w = g.w, a.bias = d->bias ? g.bias : NULL;
    a.residual = d->residual ? g.res : NULL, a.alpha = g.alpha;
    a.batch = d->batch, a.ih = d->ih, a.iw = d->iw, a.cin = d->c;
    a.oh = d->oh, a.ow = d->ow, a.cout = d->c, a.choice_batch = d->batch;
    a.kh = a.kw = d->k, a.sh = a.sw = d->s, a.dh = a.dw = 1, a.pt = d->pt, a.pl = d->pl;
    a.mult = 1, a.act = d->act;
    const cuda_dw_kernel ks[2] = {CUDA_DW_VEC, k};
    for (int i = 0; i < 2; i++) {
        a.y = g.y[i];
        cudaError_t e = cuda_launch_dwconv_as(&a, ks[i], 0);
        if (i == 1 && !expect_taken) {
            ok = e == cudaErrorNotSupported;
            if (!ok)
                fprintf(stderr, "%s took a case it should refuse (%s)\n", kernel_name(k),
                        cudaGetErrorName(e));
            goto done;
        }
        if (e == cudaSuccess)
            e = cudaDeviceSynchronize();
        if (e != cudaSuccess) {
            fprintf(stderr, "%s: %s\n", kernel_name(ks[i]), cudaGetErrorString(e));
            goto done;
        }
    }
    cudaMemcpy(hy[0], g.y[0], ny * es, cudaMemcpyDeviceToHost);
    cudaMemcpy(hy[1], g.y[1], ny * es, cudaMemcpyDeviceToHost);
    ok = memcmp(hy[0], hy[1], ny * es) == 0;
    if (!ok) {
        size_t i = 0;
        while (memcmp(hy[0] + i * es, hy[1] + i * es, es) == 0)
            i++;
        uint32_t v0 = 0, v1 = 0;
        memcpy(&v0, hy[0] + i * es, es);
        memcpy(&v1, hy[1] + i * es, es);
        size_t ch = i % d->c, px = i / d->c;
        fprintf(stderr,
                "%s %s vs vec: b%d %dx%dx%d k%d s%d pad %d,%d -> %dx%d act %d%s%s: element %zu "
                "(pixel %zu of the batch, channel %zu): vec 0x%x, %s 0x%x\n",
                kernel_name(k), p == CUDA_PREC_F16 ? "fp16" : "fp32", d->batch, d->ih, d->iw, d->c,
                d->k, d->s, d->pt, d->pl, d->oh, d->ow, d->act, d->bias ? " bias" : "",
                d->residual ? " residual" : "", i, px, ch, v0, kernel_name(k), v1);
    }
    n_compared++;
done:
    dev_free(&g);
    free(hx);
    free(hw);
    free(hr);
    free(hy[0]);
    free(hy[1]);
    free(hb);
    free(ha);
    return ok;
}

/* BlazePose's depthwise layers that dwconv_rows took at batch 128 (the
 * landmark models', then the detector's), at batch 2: tile and rows both. */
static void test_models(void)
{
    /* ih, iw, c, k, s (SAME, or explicit padding folded from a PAD: pad) */
    static const struct {
        int ih, iw, c, k, s, pad;
    } layers[] = {{128, 128, 24, 3, 1, -1}, {130, 130, 64, 3, 2, 0},  {64, 64, 144, 3, 1, -1},
                  {64, 64, 24, 3, 1, -1},   {68, 68, 144, 5, 2, 0},   {32, 32, 192, 5, 1, -1},
                  {32, 32, 32, 3, 1, -1},   {34, 34, 192, 3, 2, 0},   {16, 16, 384, 3, 1, -1},
                  {16, 16, 384, 5, 1, -1},  {16, 16, 528, 5, 1, -1},  {16, 16, 88, 3, 1, -1},
                  {20, 20, 528, 5, 2, 0},   {8, 8, 864, 5, 1, -1},    {8, 8, 864, 3, 1, -1},
                  {256, 256, 8, 3, 1, -1},  {128, 128, 16, 3, 1, -1}, {112, 112, 24, 3, 1, -1},
                  {114, 114, 64, 3, 2, 0},  {56, 56, 144, 3, 1, -1},  {59, 59, 144, 5, 2, 0},
                  {28, 28, 240, 5, 1, -1},  {30, 30, 240, 3, 2, 0},   {14, 14, 480, 3, 1, -1},
                  {14, 14, 672, 5, 1, -1},  {17, 17, 672, 5, 2, 0},   {7, 7, 1152, 5, 1, -1},
                  {7, 7, 1152, 3, 1, -1}};
    for (size_t i = 0; i < sizeof layers / sizeof layers[0]; i++) {
        dw_case d = {0};
        d.batch = 2, d.ih = layers[i].ih, d.iw = layers[i].iw, d.c = layers[i].c;
        d.k = layers[i].k, d.s = layers[i].s;
        if (layers[i].pad < 0)
            same(&d);
        else
            padded(&d, 0, 0, 0, 0);
        d.act = GR_ACT_RELU6, d.bias = true, d.residual = i % 3 == 1;
        for (int p = 0; p < 2; p++) {
            cuda_prec prec = p ? CUDA_PREC_F32 : CUDA_PREC_F16;
            CHECK(compare(&d, prec, CUDA_DW_TILE, true));
            CHECK(compare(&d, prec, CUDA_DW_ROWS, true));
        }
    }
}

/* Edges: random shapes, paddings, activations, bias and residual. */
static void test_edges(void)
{
    static const int channels[] = {8, 16, 24, 40, 64, 72, 104, 136, 200, 264};
    for (int i = 0; i < 60; i++) {
        dw_case d = {0};
        d.batch = 1 + (int)(rnd() % 3);
        d.k = rnd() % 2 ? 3 : 5;
        d.s = 1 + (int)(rnd() % 2);
        d.ih = d.k + (int)(rnd() % 40);
        d.iw = 4 * d.s + d.k + (int)(rnd() % 70);
        d.c = channels[rnd() % (sizeof channels / sizeof channels[0])];
        switch (rnd() % 4) {
        case 0:
            padded(&d, 0, 0, 0, 0);
            break;
        case 1:
            padded(&d, 1, 0, 0, 1); /* asymmetric */
            break;
        case 2:
            padded(&d, d.k / 2 + 1, d.k / 2 + 1, d.k / 2 + 1, d.k / 2 + 1); /* generous */
            break;
        default:
            same(&d);
        }
        if (d.ow < 4) {
            i--; /* rows and tile need 4 output columns */
            continue;
        }
        d.act = (int)(rnd() % 4) == 0   ? GR_ACT_NONE
                : (int)(rnd() % 3) == 0 ? GR_ACT_RELU
                : rnd() % 2             ? GR_ACT_RELU6
                                        : GR_ACT_PRELU;
        d.bias = rnd() % 5 != 0;
        d.residual = rnd() % 3 == 0;
        for (int p = 0; p < 2; p++) {
            cuda_prec prec = p ? CUDA_PREC_F32 : CUDA_PREC_F16;
            if (d.c * (p ? 4 : 2) % 16)
                continue; /* whole 16-byte vectors only */
            CHECK(compare(&d, prec, CUDA_DW_TILE, true));
        }
    }
}

/* The launcher's own choice at a grid of dwconv_rows' size (the tile
 * kernel), and what the tile and rows kernels refuse. */
static void test_choice_and_refusals(void)
{
    dw_case d = {0};
    d.batch = 8, d.ih = 64, d.iw = 64, d.c = 144, d.k = 3, d.s = 1;
    same(&d);
    d.act = GR_ACT_RELU6, d.bias = true;
    CHECK(compare(&d, CUDA_PREC_F16, CUDA_DW_AUTO, true));
    CHECK(compare(&d, CUDA_PREC_F32, CUDA_DW_AUTO, true));
    dw_case bad = d;
    bad.k = 1; /* 1x1 windows: not theirs */
    same(&bad);
    CHECK(compare(&bad, CUDA_PREC_F16, CUDA_DW_TILE, false));
    CHECK(compare(&bad, CUDA_PREC_F16, CUDA_DW_ROWS, false));
    bad = d;
    bad.c = 12; /* 24 bytes of fp16 a pixel: not whole 16-byte vectors */
    CHECK(compare(&bad, CUDA_PREC_F16, CUDA_DW_TILE, false));
    bad = d;
    bad.iw = 3, bad.ow = 3; /* fewer than 4 output columns */
    CHECK(compare(&bad, CUDA_PREC_F32, CUDA_DW_TILE, false));
}

/* Every comparison above ran. */
static void test_count(void)
{
    fprintf(stderr, "%d comparisons\n", n_compared);
    CHECK(n_compared > 100);
}

int main(void)
{
    int ndev = 0;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0)
        SKIP_TEST("no CUDA device");
    RUN(test_models);
    RUN(test_edges);
    RUN(test_choice_and_refusals);
    RUN(test_count);
    return testing_finish();
}
