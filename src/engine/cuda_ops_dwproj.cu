/* A depthwise convolution and the 1x1 convolution of its output in one
 * kernel, on images of few channels (fp16, 8 channels in and out: the
 * segmentation decoders of BlazePose's landmark models, their blocks of
 * DEPTHWISE_CONV_2D 3x3 + ReLU6, CONV_2D 1x1 8 -> 8, the ADD of the block's
 * input and ReLU6 at 128x128 and 256x256). Apart, the two nodes write and
 * read the depthwise output and the 1x1 kernels walk 16-row tiles of 8
 * columns, one tensor-core multiply per 256 bytes read: 500 us of a
 * 256x256 block at batch 128 for 400 MB of traffic. Here a thread block
 * stages a window of the input in shared memory once and writes only the
 * block's output.
 *
 * The results are bitwise the two nodes' (dwconv_rows or dwconv_vec, then
 * gemm_thin or gemm_tc16): every value is computed by the same float
 * operations in the same order and rounded to half where they round it:
 * - the depthwise convolution: per output, fmaf over the taps inside the
 *   input in ky, kx order from +0, + bias, the activation, rounded to half;
 * - the 1x1 convolution: one m16n8k16 multiply (8 input channels, zeros
 *   past them in both operands) into fp32 accumulators from +0, + bias
 *   (+0 without), + residual, the activation, rounded to half.
 *
 * A block of 8 warps takes DP_TH x DP_TW output pixels of one image, a
 * warp DP_RW rows of DP_TW: it stages the input window ((DP_TH + k - 1) x
 * (DP_TW + k - 1) pixels of 16 bytes), each thread computes the 8
 * depthwise outputs of DP_RW pixels one above the other from it into
 * shared memory (each window row read and converted once for both; on
 * the H100 at batch 128 lite went 2.976 -> 2.958 ms, full 3.869 -> 3.852
 * against one row a warp), and each warp multiplies its rows as 16-pixel m tiles, the accumulator
 * fragments stored as pairs: a warp's store covers 8 consecutive pixels,
 * 128 contiguous bytes.
 * A residual that is the block's input (the decoder's blocks) is read from
 * the window, not again from memory. The two activations are template
 * parameters (no switch per value). */
#include <climits>

#include "engine/cuda_ops_device.h"
#include "engine/cuda_ops_mma.h"

#define DP_THREADS 256
#define DP_RW 2  /* output rows of a warp */
#define DP_TH (8 * DP_RW) /* output rows of a block */
#define DP_TW 32 /* output columns of a block: one a lane */
#define DP_C 8   /* channels in and out: one 16-byte vector a pixel */

struct dp_shape {
    int ih, iw, oh, ow, pt, pl;
    int tiles_x, tiles_y;
    int res_in; /* the residual is the input (same size): read from the window */
};

/* Blocks a SM holds (__launch_bounds__: at most 64 registers a thread, the
 * depthwise filter read from shared memory). */
#define DP_PER_SM 4

template <int K, int ACTD, int ACT>
__global__ void __launch_bounds__(DP_THREADS, DP_PER_SM)
    dwproj_few(const uint4 *__restrict__ x, const __half *__restrict__ wd,
               const float *__restrict__ bd, const __half *__restrict__ w,
               const float *__restrict__ bias, const __half *__restrict__ res,
               __half *__restrict__ y, dp_shape s)
{
    constexpr int WH = DP_TH + K - 1, WW = DP_TW + K - 1;
    __shared__ uint4 win[WH * WW];       /* the input window */
    __shared__ uint4 dwo[DP_TH * DP_TW];   /* the depthwise outputs, half */
    __shared__ float4 wds[K * K][DP_C / 4]; /* the depthwise filter as floats */

    /* The filters first (constants), then the input (the previous kernel's). */
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
    if (threadIdx.x < K * K) {
        float f[DP_C];
        unpack16(__ldg(reinterpret_cast<const uint4 *>(wd) + threadIdx.x), f);
        wds[threadIdx.x][0] = make_float4(f[0], f[1], f[2], f[3]);
        wds[threadIdx.x][1] = make_float4(f[4], f[5], f[6], f[7]);
    }
    /* The 1x1 filter's B fragment: output channel g, input channels 2t, 2t + 1
     * (the upper 8 of the k16 step are zeros). */
    const unsigned b[2] = {__ldg(reinterpret_cast<const unsigned *>(w + g * DP_C) + t), 0u};
    const int n = 2 * t;
    const float b0 = bias ? __ldg(bias + n) : 0.0f, b1 = bias ? __ldg(bias + n + 1) : 0.0f;

    int tile = blockIdx.x;
    const int tx = tile % s.tiles_x;
    tile /= s.tiles_x;
    const int ty = tile % s.tiles_y, item = tile / s.tiles_y;
    const int oy0 = ty * DP_TH, ox0 = tx * DP_TW;
    const int wy0 = oy0 - s.pt, wx0 = ox0 - s.pl;
    x += (size_t)item * s.ih * s.iw;

    pdl_begin();
    for (int i = threadIdx.x; i < WH * WW; i += DP_THREADS) {
        const int iy = wy0 + i / WW, ix = wx0 + i % WW;
        win[i] = iy >= 0 && iy < s.ih && ix >= 0 && ix < s.iw ? __ldg(x + (size_t)iy * s.iw + ix)
                                                              : make_uint4(0u, 0u, 0u, 0u);
    }
    __syncthreads();

    /* The depthwise outputs of pixels (oy0 + DP_RW * warp + r, ox0 + lane),
     * r < DP_RW: each input row of the window read and converted once for
     * all the pixels whose taps use it. */
    {
        const int wy = DP_RW * warp, ox = ox0 + lane;
        float acc[DP_RW][DP_C];
#pragma unroll
        for (int r = 0; r < DP_RW; r++)
#pragma unroll
            for (int c = 0; c < DP_C; c++)
                acc[r][c] = 0.0f;
#pragma unroll
        for (int j = 0; j < K + DP_RW - 1; j++) { /* input row wy + j of the window */
            const int iy = oy0 + wy - s.pt + j;
            if (iy < 0 || iy >= s.ih)
                continue;
#pragma unroll
            for (int kx = 0; kx < K; kx++) {
                const int ix = ox - s.pl + kx;
                if (ix < 0 || ix >= s.iw)
                    continue;
                float xv[DP_C];
                unpack16(win[(wy + j) * WW + lane + kx], xv);
#pragma unroll
                for (int r = 0; r < DP_RW; r++) {
                    const int ky = j - r; /* pixel r's tap row: a constant after unrolling */
                    if (ky < 0 || ky >= K)
                        continue;
                    const float4 w0 = wds[ky * K + kx][0], w1 = wds[ky * K + kx][1];
                    const float wv[DP_C] = {w0.x, w0.y, w0.z, w0.w, w1.x, w1.y, w1.z, w1.w};
#pragma unroll
                    for (int c = 0; c < DP_C; c++)
                        acc[r][c] = fmaf(xv[c], wv[c], acc[r][c]);
                }
            }
        }
#pragma unroll
        for (int r = 0; r < DP_RW; r++) {
            unsigned h[DP_C / 2];
#pragma unroll
            for (int c = 0; c < DP_C; c += 2) {
                float v0 = acc[r][c], v1 = acc[r][c + 1];
                if (bd) {
                    v0 += __ldg(bd + c);
                    v1 += __ldg(bd + c + 1);
                }
                h[c / 2] =
                    pack_half2(activate_slope(v0, ACTD, 0.0f), activate_slope(v1, ACTD, 0.0f));
            }
            dwo[(wy + r) * DP_TW + lane] = make_uint4(h[0], h[1], h[2], h[3]);
        }
    }
    __syncwarp();

    /* The 1x1 convolution of the warp's rows: two m16 tiles each. */
#pragma unroll
    for (int r = 0; r < DP_RW; r++) {
        const int wr = DP_RW * warp + r, oy = oy0 + wr;
        if (oy >= s.oh)
            return;
        const unsigned *d = reinterpret_cast<const unsigned *>(dwo + wr * DP_TW);
#pragma unroll
        for (int mt = 0; mt < DP_TW / 16; mt++) {
            const unsigned a[4] = {d[(16 * mt + g) * 4 + t], d[(16 * mt + g + 8) * 4 + t], 0u, 0u};
            float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            mma_16816(acc, a, b);
#pragma unroll
            for (int hh = 0; hh < 2; hh++) {
                const int ox = ox0 + 16 * mt + g + 8 * hh;
                if (ox >= s.ow)
                    continue;
                const size_t o = (((size_t)item * s.oh + oy) * s.ow + ox) * DP_C + n;
                float v0 = acc[2 * hh] + b0, v1 = acc[2 * hh + 1] + b1;
                if (res) {
                    const __half2 *rp =
                        s.res_in ? reinterpret_cast<const __half2 *>(
                                       win + (wr + s.pt) * WW + 16 * mt + g + 8 * hh + s.pl) +
                                       t
                                 : reinterpret_cast<const __half2 *>(res + o);
                    const float2 rr = __half22float2(*rp);
                    v0 += rr.x;
                    v1 += rr.y;
                }
                *reinterpret_cast<__half2 *>(y + o) = __floats2half2_rn(
                    activate_slope(v0, ACT, 0.0f), activate_slope(v1, ACT, 0.0f));
            }
        }
    }
}

extern "C" bool cuda_dwproj_fits(const cuda_dwproj_args *a)
{
    const bool act_ok = a->actd != GR_ACT_PRELU && a->act != GR_ACT_PRELU;
    return a->prec == CUDA_PREC_F16 && a->c == DP_C && a->cout == DP_C && a->kh == a->kw &&
           (a->kh == 3 || a->kh == 5) && a->sh == 1 && a->sw == 1 && a->dh == 1 && a->dw == 1 &&
           a->ih > 0 && a->iw > 0 && a->oh > 0 && a->ow >= DP_TW / 2 && a->pt >= 0 &&
           a->pl >= 0 && a->pt < a->kh && a->pl < a->kw && act_ok;
}

template <int K, int ACTD, int ACT>
static cudaError_t dp_start(const cuda_dwproj_args *a, const dp_shape &s, cudaStream_t st)
{
    const long long blocks = (long long)a->batch * s.tiles_x * s.tiles_y;
    if (blocks > INT_MAX)
        return cudaErrorInvalidValue;
    return cuda_ops_start(dwproj_few<K, ACTD, ACT>, (unsigned)blocks, DP_THREADS, 0, st,
                          (const uint4 *)a->x, (const __half *)a->wd, a->bd, (const __half *)a->w,
                          a->bias, (const __half *)a->residual, (__half *)a->y, s);
}

/* The kernel of the activations (none, ReLU or ReLU6 each: cuda_dwproj_fits). */
template <int K, int ACTD>
static cudaError_t dp_start_act(const cuda_dwproj_args *a, const dp_shape &s, cudaStream_t st)
{
    return a->act == GR_ACT_RELU6  ? dp_start<K, ACTD, GR_ACT_RELU6>(a, s, st)
           : a->act == GR_ACT_RELU ? dp_start<K, ACTD, GR_ACT_RELU>(a, s, st)
                                   : dp_start<K, ACTD, GR_ACT_NONE>(a, s, st);
}

template <int K>
static cudaError_t dp_start_k(const cuda_dwproj_args *a, const dp_shape &s, cudaStream_t st)
{
    return a->actd == GR_ACT_RELU6  ? dp_start_act<K, GR_ACT_RELU6>(a, s, st)
           : a->actd == GR_ACT_RELU ? dp_start_act<K, GR_ACT_RELU>(a, s, st)
                                    : dp_start_act<K, GR_ACT_NONE>(a, s, st);
}

extern "C" cudaError_t cuda_launch_dwproj(const cuda_dwproj_args *a, cudaStream_t st)
{
    if (!cuda_dwproj_fits(a) || a->batch < 0)
        return cudaErrorInvalidValue;
    const size_t align =
        (size_t)a->x | (size_t)a->wd | (size_t)a->w | (size_t)a->y | (size_t)a->residual;
    if (align & 15)
        return cudaErrorInvalidValue;
    const long long px = (long long)a->batch * a->oh * a->ow;
    const long long ipx = (long long)a->batch * a->ih * a->iw;
    if (px * DP_C >= INT_MAX || ipx * DP_C >= INT_MAX)
        return cudaErrorInvalidValue;
    if (px == 0)
        return cudaSuccess;
    dp_shape s;
    s.ih = a->ih, s.iw = a->iw, s.oh = a->oh, s.ow = a->ow, s.pt = a->pt, s.pl = a->pl;
    s.tiles_x = (a->ow + DP_TW - 1) / DP_TW;
    s.tiles_y = (a->oh + DP_TH - 1) / DP_TH;
    s.res_in = a->residual == a->x && a->oh == a->ih && a->ow == a->iw;
    return a->kh == 3 ? dp_start_k<3>(a, s, st) : dp_start_k<5>(a, s, st);
}
