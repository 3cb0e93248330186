/* Convolutions: the GEMM form (pointwise 1x1 convolutions, and windows that
 * cover the whole input) and the direct form (everything else: the stem
 * convolutions of the models, strided or padded 1x1).
 *
 * GEMM form: Y[M][N] = act(X[M][K] * W[N][K]^T + bias + R), with M =
 * batch*oh*ow output pixels, K = kh*kw*cin (the input rows are contiguous
 * NHWC pixels, or whole items when the window covers the input), N = cout,
 * W the OHWI filter as stored by cuda_weights. Two kernels:
 * - gemm_tc (fp16, K and N even): 64x64x32 block tiles in shared memory, 4
 *   warps of 32x32, mma.sync m16n8k16 with fp32 accumulators, fused epilogue
 *   from the accumulator fragments (half2 stores). Variants: 16-byte tile
 *   loads when K % 8 == 0 (gemm_tc16), and for N <= 32 128x32 tiles with the
 *   4 warps stacked along M (gemm_tc16_narrow), so no warp idles on zero
 *   columns; gemm_tc16_up adds the bilinear upsampling of a coarser tensor
 *   after the activation (an FPN level: 1x1 convolution, RESIZE_BILINEAR
 *   of the level below, ADD, in one kernel).
 * - gemm_simt (fp32, or fp16 with odd sizes): 64x64x16 tiles, 256 threads of
 *   4x4 outputs each (strided by 16 so that stores coalesce), FFMA; where
 *   those tiles would be too few blocks for the GPU at choice_batch
 *   items (by the item's shape and the choice batch, not the batch: the
 *   sums differ), gemm_wdot (cuda_ops_dot.cu) instead.
 * The stems (square 5x5 or 3x3 window, stride 2, 3 input channels, Cout <=
 * 32) have kernels of their own (cuda_ops_stem.cu). Direct form: one thread
 * = one output pixel x 8 output channels (the group index varies fastest so
 * neighbours share the input pixel), filter as
 * [kh][kw][cin][cout rounded to 8], staged in shared memory as float when it
 * fits in 48 KB, read through the read-only cache otherwise; with at most 8
 * output channels and the input channels in 16-byte vectors,
 * conv_direct_few (one thread = one pixel x its few channels). */
#include "engine/cuda_ops_device.h"

/* ---- GEMM, FFMA --------------------------------------------------------- */

#define SIMT_BM 64
#define SIMT_BN 64
#define SIMT_BK 16

template <typename T>
__global__ void __launch_bounds__(256)
gemm_simt(const T *__restrict__ x, const T *__restrict__ w, const float *__restrict__ bias,
          const T *__restrict__ res, const float *__restrict__ alpha, T *__restrict__ y, int M,
          int K, int N, int act)
{
    pdl_begin();
    __shared__ float as[SIMT_BK][SIMT_BM + 1];
    __shared__ float bs[SIMT_BK][SIMT_BN + 1];
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const int m0 = blockIdx.x * SIMT_BM, n0 = blockIdx.y * SIMT_BN;
    float acc[4][4];
#pragma unroll
    for (int i = 0; i < 4; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            acc[i][j] = 0.0f;

    for (int k0 = 0; k0 < K; k0 += SIMT_BK) {
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int idx = threadIdx.x + 256 * i;
            int r = idx / SIMT_BK, kk = idx % SIMT_BK, k = k0 + kk;
            int m = m0 + r, n = n0 + r;
            as[kk][r] = (m < M && k < K) ? ld(x + (size_t)m * K + k) : 0.0f;
            bs[kk][r] = (n < N && k < K) ? ld(w + (size_t)n * K + k) : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int kk = 0; kk < SIMT_BK; kk++) {
            float a[4], b[4];
#pragma unroll
            for (int i = 0; i < 4; i++) {
                a[i] = as[kk][ty + 16 * i];
                b[i] = bs[kk][tx + 16 * i];
            }
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }

#pragma unroll
    for (int i = 0; i < 4; i++) {
        int m = m0 + ty + 16 * i;
        if (m >= M)
            continue;
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int n = n0 + tx + 16 * j;
            if (n >= N)
                continue;
            size_t o = (size_t)m * N + n;
            float v = acc[i][j];
            if (bias)
                v += __ldg(bias + n);
            if (res)
                v += ld(res + o);
            st(y + o, activate(v, act, alpha, n));
        }
    }
}

/* ---- GEMM, tensor cores (fp16) ------------------------------------------ */

#define TC_BM 64
#define TC_BN 64
#define TC_BK 32
#define TC_LD (TC_BK + 8) /* halves per shared row: 80 bytes, fragment loads conflict-free */

/* Rows [r0, r0 + 64) of a row-major [rows][K] half matrix, columns
 * [k0, k0 + 32), into s[64][TC_LD]; zeros outside. K is even, so each pair
 * of halves is one aligned 32-bit load. */
static __device__ __forceinline__ void tc_load_tile(__half *s, const __half *__restrict__ g,
                                                    int rows, int K, int r0, int k0)
{
    const int pairs = TC_BK / 2; /* 16 per row */
#pragma unroll
    for (int i = 0; i < (TC_BM * pairs) / 128; i++) {
        int idx = threadIdx.x + 128 * i;
        int r = idx / pairs, p = idx % pairs;
        int row = r0 + r, k = k0 + 2 * p;
        unsigned v = 0;
        if (row < rows && k < K)
            v = __ldg(reinterpret_cast<const unsigned *>(g + (size_t)row * K + k));
        *reinterpret_cast<unsigned *>(s + r * TC_LD + 2 * p) = v;
    }
}

/* The same tile with 16-byte loads (8 halves): K a multiple of 8 and g
 * 16-byte aligned, so a chunk is either wholly inside K or wholly outside.
 * A quarter of the load instructions of tc_load_tile, more bytes in flight.
 * In two steps, so that the next tile's loads are in flight while the
 * current one is multiplied: tc_fetch16 into registers, tc_put16 into s. */
#define TC_CHUNKS16 ((TC_BM * (TC_BK / 8)) / 128) /* 16-byte chunks per thread */

static __device__ __forceinline__ void tc_fetch16(uint4 *v, const __half *__restrict__ g, int rows,
                                                  int K, int r0, int k0)
{
    const int chunks = TC_BK / 8; /* 4 per row */
#pragma unroll
    for (int i = 0; i < TC_CHUNKS16; i++) {
        int idx = threadIdx.x + 128 * i;
        int r = idx / chunks, c = idx % chunks;
        int row = r0 + r, k = k0 + 8 * c;
        v[i] = make_uint4(0, 0, 0, 0);
        if (row < rows && k < K)
            v[i] = __ldg(reinterpret_cast<const uint4 *>(g + (size_t)row * K + k));
    }
}

static __device__ __forceinline__ void tc_put16(__half *s, const uint4 *v)
{
    const int chunks = TC_BK / 8;
#pragma unroll
    for (int i = 0; i < TC_CHUNKS16; i++) {
        int idx = threadIdx.x + 128 * i;
        *reinterpret_cast<uint4 *>(s + (idx / chunks) * TC_LD + 8 * (idx % chunks)) = v[i];
    }
}

/* The upsampled addend at channels n, n + 1 of the pixel at a. */
static __device__ __forceinline__ float2 tc_up_value(const up_addend &u, const up_source &a, int n)
{
    const float2 v00 = __half22float2(*reinterpret_cast<const __half2 *>(u.x + a.o00 + n));
    const float2 v01 = __half22float2(*reinterpret_cast<const __half2 *>(u.x + a.o01 + n));
    const float2 v10 = __half22float2(*reinterpret_cast<const __half2 *>(u.x + a.o10 + n));
    const float2 v11 = __half22float2(*reinterpret_cast<const __half2 *>(u.x + a.o11 + n));
    const float w00 = (1.0f - a.ly) * (1.0f - a.lx), w10 = a.ly * (1.0f - a.lx);
    const float w01 = (1.0f - a.ly) * a.lx, w11 = a.ly * a.lx;
    return make_float2(v00.x * w00 + v10.x * w10 + v01.x * w01 + v11.x * w11,
                       v00.y * w00 + v10.y * w10 + v01.y * w01 + v11.y * w11);
}

template <bool UP>
static __device__ __forceinline__ void
gemm_tc_body(const __half *__restrict__ x, const __half *__restrict__ w,
             const float *__restrict__ bias, const __half *__restrict__ res,
             const float *__restrict__ alpha, __half *__restrict__ y, int M, int K, int N, int act,
             const int vec16, const int narrow, const up_addend &up)
{
    __shared__ __align__(16) __half as[2 * TC_BM * TC_LD];
    __shared__ __align__(16) __half bs[TC_BN * TC_LD];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, t = lane % 4;
    /* Warp tile origin: 2x2 warps over 64x64, or (narrow, N <= 32) 4x1 warps
     * over 128x32, so no warp multiplies zero columns. */
    const int wm = narrow ? warp * 32 : (warp / 2) * 32, wn = narrow ? 0 : (warp % 2) * 32;
    const int m0 = blockIdx.x * (narrow ? 2 * TC_BM : TC_BM), n0 = blockIdx.y * TC_BN;
    float acc[2][4][4];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[i][j][e] = 0.0f;

    /* vec16: the tiles of step k0 wait in registers (fa, fa2, fb), fetched
     * during step k0 - TC_BK. */
    uint4 fa[TC_CHUNKS16], fa2[TC_CHUNKS16], fb[TC_CHUNKS16];
    if (vec16) {
        tc_fetch16(fa, x, M, K, m0, 0);
        if (narrow)
            tc_fetch16(fa2, x, M, K, m0 + TC_BM, 0);
        tc_fetch16(fb, w, N, K, n0, 0);
    }
    for (int k0 = 0; k0 < K; k0 += TC_BK) {
        if (vec16) {
            tc_put16(as, fa);
            if (narrow)
                tc_put16(as + TC_BM * TC_LD, fa2);
            tc_put16(bs, fb);
            if (k0 + TC_BK < K) {
                tc_fetch16(fa, x, M, K, m0, k0 + TC_BK);
                if (narrow)
                    tc_fetch16(fa2, x, M, K, m0 + TC_BM, k0 + TC_BK);
                tc_fetch16(fb, w, N, K, n0, k0 + TC_BK);
            }
        } else {
            tc_load_tile(as, x, M, K, m0, k0);
            if (narrow)
                tc_load_tile(as + TC_BM * TC_LD, x, M, K, m0 + TC_BM, k0);
            tc_load_tile(bs, w, N, K, n0, k0);
        }
        __syncthreads();
#pragma unroll
        for (int kb = 0; kb < TC_BK; kb += 16)
            warp_tile_mma(acc, as, bs, TC_LD, wm, wn, g, t, kb);
        __syncthreads();
    }

    /* Accumulator (i, j): rows m0+wm+16i+g (+8), columns n0+wn+8j+2t, +1. */
    up_source at[2][2];
    if (UP)
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int h = 0; h < 2; h++)
                at[i][h] = up_source_at(up, N, min(m0 + wm + 16 * i + g + 8 * h, M - 1));
#pragma unroll
    for (int j = 0; j < 4; j++) {
        int n = n0 + wn + 8 * j + 2 * t;
        if (n >= N) /* N even, so n + 1 < N too */
            continue;
        float b0 = bias ? __ldg(bias + n) : 0.0f, b1 = bias ? __ldg(bias + n + 1) : 0.0f;
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                int m = m0 + wm + 16 * i + g + 8 * h;
                if (m >= M)
                    continue;
                size_t o = (size_t)m * N + n;
                float v0 = acc[i][j][2 * h] + b0, v1 = acc[i][j][2 * h + 1] + b1;
                if (res) {
                    float2 r = __half22float2(*reinterpret_cast<const __half2 *>(res + o));
                    v0 += r.x;
                    v1 += r.y;
                }
                v0 = activate(v0, act, alpha, n);
                v1 = activate(v1, act, alpha, n + 1);
                if (UP) {
                    float2 u = tc_up_value(up, at[i][h], n);
                    v0 += u.x;
                    v1 += u.y;
                }
                *reinterpret_cast<__half2 *>(y + o) = __floats2half2_rn(v0, v1);
            }
    }
}

/* vec16 and narrow are constants in each kernel: the 16-byte loader (K % 8
 * == 0, 16-byte aligned operands) or the 4-byte one; 64x64 block tiles or
 * (N <= 32, with the 16-byte loader) 128x32. */
#define GEMM_TC_KERNEL(name, vec16, narrow, up)                                                    \
    __global__ void __launch_bounds__(128)                                                         \
        name(const __half *__restrict__ x, const __half *__restrict__ w,                           \
             const float *__restrict__ bias, const __half *__restrict__ res,                       \
             const float *__restrict__ alpha, __half *__restrict__ y, int M, int K, int N,         \
             int act, up_addend u)                                                                 \
    {                                                                                              \
        pdl_begin();                                                                               \
        gemm_tc_body<up>(x, w, bias, res, alpha, y, M, K, N, act, vec16, narrow, u);               \
    }
GEMM_TC_KERNEL(gemm_tc, 0, 0, false)
GEMM_TC_KERNEL(gemm_tc16, 1, 0, false)
GEMM_TC_KERNEL(gemm_tc16_narrow, 1, 1, false)
GEMM_TC_KERNEL(gemm_tc16_up, 1, 0, true)

/* The tensor-core kernels' conditions: fp16, even K and N, 4-byte aligned
 * buffers; vec16: K % 8 == 0 and 16-byte aligned x and w. */
static bool tc_ok(const cuda_conv_args *a, int K, int N)
{
    size_t align = (size_t)a->x | (size_t)a->w | (size_t)a->y | (size_t)a->residual | (size_t)a->up;
    return a->prec == CUDA_PREC_F16 && K % 2 == 0 && N % 2 == 0 && (align & 3) == 0;
}

static bool tc_vec16(const cuda_conv_args *a, int K)
{
    return K % 8 == 0 && (((size_t)a->x | (size_t)a->w) & 15) == 0;
}

extern "C" bool cuda_conv_up_ok(const cuda_conv_args *a)
{
    int K = a->kh * a->kw * a->cin, N = a->cout;
    return a->oh * a->ow > 0 && a->uh > 0 && a->uw > 0 && tc_ok(a, K, N) && tc_vec16(a, K);
}

extern "C" cudaError_t cuda_launch_conv_pointwise(const cuda_conv_args *a, cudaStream_t s)
{
    int M = a->batch * a->oh * a->ow, K = a->kh * a->kw * a->cin, N = a->cout;
    if ((a->up && !cuda_conv_up_ok(a)) || a->choice_batch < a->batch)
        return cudaErrorInvalidValue;
    const up_addend u = up_addend_of(a);

    /* The tensor-core kernel moves pairs of halves: even sizes, 4-byte
     * aligned buffers. */
    if (cuda_conv_rows_ok(a))
        return cuda_launch_conv_rows(a, s);
    if (cuda_conv_thin_ok(a)) /* K up to 128 (192), many pixels: cuda_ops_gemm_thin.cu */
        return cuda_launch_conv_thin(a, s);
    if (cuda_conv_deep_ok(a)) /* K from 256: cuda_ops_gemm_deep.cu */
        return cuda_launch_conv_deep(a, s);
    if (tc_ok(a, K, N)) {
        int vec16 = tc_vec16(a, K);
        int narrow = N <= 32 && vec16 && !a->up; /* gemm_tc16_up has 64x64 tiles */
        int bm = narrow ? 2 * TC_BM : TC_BM;
        dim3 grid((M + bm - 1) / bm, (N + TC_BN - 1) / TC_BN);
        const __half *x = (const __half *)a->x, *w = (const __half *)a->w;
        const __half *r = (const __half *)a->residual;
        __half *y = (__half *)a->y;
        if (a->up)
            return cuda_ops_start(gemm_tc16_up, grid, 128, 0, s, x, w, a->bias, r, a->alpha, y, M,
                                  K, N, a->act, u);
        if (narrow)
            return cuda_ops_start(gemm_tc16_narrow, grid, 128, 0, s, x, w, a->bias, r, a->alpha, y,
                                  M, K, N, a->act, u);
        else if (vec16)
            return cuda_ops_start(gemm_tc16, grid, 128, 0, s, x, w, a->bias, r, a->alpha, y, M, K,
                                  N, a->act, u);
        else
            return cuda_ops_start(gemm_tc, grid, 128, 0, s, x, w, a->bias, r, a->alpha, y, M, K, N,
                                  a->act, u);
    } else {
        /* A few tiles at choice_batch items: warps' dot products. */
        if (cuda_gemm_wdot_pays(a->oh * a->ow, a->choice_batch, K, N))
            return cuda_launch_gemm_wdot(a, s);
        dim3 grid((M + SIMT_BM - 1) / SIMT_BM, (N + SIMT_BN - 1) / SIMT_BN);
        if (a->prec == CUDA_PREC_F16)
            return cuda_ops_start(gemm_simt<__half>, grid, 256, 0, s, (const __half *)a->x,
                                  (const __half *)a->w, a->bias, (const __half *)a->residual,
                                  a->alpha, (__half *)a->y, M, K, N, a->act);
        else
            return cuda_ops_start(gemm_simt<float>, grid, 256, 0, s, (const float *)a->x,
                                  (const float *)a->w, a->bias, (const float *)a->residual,
                                  a->alpha, (float *)a->y, M, K, N, a->act);
    }
}

/* ---- direct convolution ------------------------------------------------- */

#define COG CUDA_CONV_COUT_GROUP
#define DIRECT_SMEM_MAX (48 * 1024)

/* 8 consecutive filter values from shared memory (float) or global (T). */
static __device__ __forceinline__ void ld8_shared(const float *p, float *v)
{
    float4 a = reinterpret_cast<const float4 *>(p)[0], b = reinterpret_cast<const float4 *>(p)[1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}
static __device__ __forceinline__ void ld8_global(const float *p, float *v)
{
    ld16(p, v);
    ld16(p + 4, v + 4);
}
static __device__ __forceinline__ void ld8_global(const __half *p, float *v) { ld16(p, v); }

template <typename T>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
conv_direct(cuda_conv_args a, int use_smem)
{
    pdl_begin();
    extern __shared__ float4 smem4[];
    float *sw = reinterpret_cast<float *>(smem4);
    const int coutp = (a.cout + COG - 1) / COG * COG, groups = coutp / COG;
    const T *w = static_cast<const T *>(a.w);
    if (use_smem) {
        int nw = a.kh * a.kw * a.cin * coutp;
        for (int i = threadIdx.x; i < nw; i += blockDim.x)
            sw[i] = ld(w + i);
        __syncthreads();
    }
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int total = a.batch * a.oh * a.ow * groups;
    if (idx >= total)
        return;
    int grp = idx % groups, p = idx / groups;
    int ox = p % a.ow, q = p / a.ow;
    int oy = q % a.oh, b = q / a.oh;
    int c0 = grp * COG;
    float acc[COG];
#pragma unroll
    for (int j = 0; j < COG; j++)
        acc[j] = 0.0f;
    const T *x = static_cast<const T *>(a.x) + (size_t)b * a.ih * a.iw * a.cin;
    for (int ky = 0; ky < a.kh; ky++) {
        int iy = oy * a.sh - a.pt + ky * a.dh;
        if (iy < 0 || iy >= a.ih)
            continue;
        for (int kx = 0; kx < a.kw; kx++) {
            int ix = ox * a.sw - a.pl + kx * a.dw;
            if (ix < 0 || ix >= a.iw)
                continue;
            const T *xp = x + ((size_t)iy * a.iw + ix) * a.cin;
            size_t wo = ((size_t)(ky * a.kw + kx) * a.cin) * coutp + c0;
            for (int ci = 0; ci < a.cin; ci++) {
                float xv = ld(xp + ci), wv[COG];
                if (use_smem)
                    ld8_shared(sw + wo + (size_t)ci * coutp, wv);
                else
                    ld8_global(w + wo + (size_t)ci * coutp, wv);
#pragma unroll
                for (int j = 0; j < COG; j++)
                    acc[j] = fmaf(xv, wv[j], acc[j]);
            }
        }
    }
    T *y = static_cast<T *>(a.y) + (size_t)p * a.cout;
    const T *res = static_cast<const T *>(a.residual);
#pragma unroll
    for (int j = 0; j < COG; j++) {
        int c = c0 + j;
        if (c >= a.cout)
            break;
        float v = acc[j];
        if (a.bias)
            v += __ldg(a.bias + c);
        if (res)
            v += ld(res + (size_t)p * a.cout + c);
        st(y + c, activate(v, a.act, a.alpha, c));
    }
}

/* Few output channels (cout <= 8, one group) from input channels in 16-byte
 * vectors (cin a multiple of vec16<T>::n): one thread = one output pixel x
 * NC channels (NC the power of two >= cout; the filter's zero columns up to
 * the group of 8 fill the rest), the pixel's channels read with one vector
 * load per tap. conv_direct would spend 7 of its 8 accumulators on the zero
 * columns of BlazePose's segmentation output (3x3, 8 -> 1 channels at
 * 256x256) and read the input one channel at a time. The sums run in
 * conv_direct's order (ky, kx, ci), so the results are its own. */
/* Output pixel p's sums of a few-output convolution (the first cout of
 * NC): + bias, + residual, the activation, stored (conv_direct_few,
 * conv_window_few). */
template <typename T, int NC>
static __device__ __forceinline__ void few_store(const cuda_conv_args &a, const float *acc, size_t p)
{
    T *y = static_cast<T *>(a.y) + p * a.cout;
    const T *res = static_cast<const T *>(a.residual);
#pragma unroll
    for (int j = 0; j < NC; j++) {
        if (j >= a.cout)
            break;
        float v = acc[j];
        if (a.bias)
            v += __ldg(a.bias + j);
        if (res)
            v += ld(res + p * a.cout + j);
        st(y + j, activate(v, a.act, a.alpha, j));
    }
}

/* One output pixel p of conv_direct_few; sw the filter as float. */
template <typename T, int NC>
static __device__ __forceinline__ void direct_few_pixel(const cuda_conv_args &a, const float *sw,
                                                        int p)
{
    const int V = vec16<T>::n;
    int ox = p % a.ow, q = p / a.ow;
    int oy = q % a.oh, b = q / a.oh;
    float acc[NC];
#pragma unroll
    for (int j = 0; j < NC; j++)
        acc[j] = 0.0f;
    const T *x = static_cast<const T *>(a.x) + (size_t)b * a.ih * a.iw * a.cin;
    for (int ky = 0; ky < a.kh; ky++) {
        int iy = oy * a.sh - a.pt + ky * a.dh;
        if (iy < 0 || iy >= a.ih)
            continue;
        for (int kx = 0; kx < a.kw; kx++) {
            int ix = ox * a.sw - a.pl + kx * a.dw;
            if (ix < 0 || ix >= a.iw)
                continue;
            const T *xp = x + ((size_t)iy * a.iw + ix) * a.cin;
            const float *wp = sw + (size_t)(ky * a.kw + kx) * a.cin * COG;
            for (int c0 = 0; c0 < a.cin; c0 += V) {
                float xv[V];
                ld16(xp + c0, xv);
#pragma unroll
                for (int i = 0; i < V; i++)
#pragma unroll
                    for (int j = 0; j < NC; j++)
                        acc[j] = fmaf(xv[i], wp[(c0 + i) * COG + j], acc[j]);
            }
        }
    }
    few_store<T, NC>(a, acc, (size_t)p);
}

/* Blocks walk the pixels (grid-stride), so that each loads the filter into
 * shared memory for many of them. */
template <typename T, int NC>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
conv_direct_few(cuda_conv_args a)
{
    extern __shared__ float4 smem4[];
    float *sw = reinterpret_cast<float *>(smem4);
    const int nw = a.kh * a.kw * a.cin * COG;
    const T *w = static_cast<const T *>(a.w);
    for (int i = threadIdx.x; i < nw; i += blockDim.x)
        sw[i] = ld(w + i);
    pdl_begin(); /* the filter above is a constant */
    __syncthreads();
    const int pixels = a.batch * a.oh * a.ow;
    for (int p = blockIdx.x * blockDim.x + threadIdx.x; p < pixels; p += gridDim.x * blockDim.x)
        direct_few_pixel<T, NC>(a, sw, p);
}

/* conv_direct_few on an 8-channel fp16 image at stride 1 (BlazePose's
 * segmentation output, 3x3 8 -> 1 at 256x256): the same sums, but a block
 * stages a window of the input in shared memory once (each pixel read from
 * memory once, not once per tap) and every loop is unrolled; the generic
 * kernel's per-tap index arithmetic and loops made it instruction-bound
 * (84% SM throughput, 284 us at batch 128 for 150 MB). A block of 8 warps
 * takes 8 rows x 32 columns of outputs of one image, a thread one pixel;
 * the filter's NC used columns are staged as floats, a tap's read in
 * 16-byte loads (its 8 x COG layout took a 4-byte load per product). */
#define WIN_TH 8
#define WIN_TW 32

template <int K, int NC>
__global__ void __launch_bounds__(WIN_TH * WIN_TW)
conv_window_few(cuda_conv_args a, int tiles_x, int tiles_y)
{
    constexpr int WH = WIN_TH + K - 1, WW = WIN_TW + K - 1, C = 8;
    __shared__ uint4 win[WH * WW];
    __shared__ float4 sw4[K * K * C * NC / 4]; /* [tap][ci][NC]: the filter's first NC columns */
    float *sw = reinterpret_cast<float *>(sw4);
    const __half *w = static_cast<const __half *>(a.w);
    for (int i = threadIdx.x; i < K * K * C * NC; i += blockDim.x)
        sw[i] = ld(w + i / NC * COG + i % NC);
    int tile = blockIdx.x;
    const int tx = tile % tiles_x;
    tile /= tiles_x;
    const int ty = tile % tiles_y, b = tile / tiles_y;
    const int oy0 = ty * WIN_TH, ox0 = tx * WIN_TW, wy0 = oy0 - a.pt, wx0 = ox0 - a.pl;
    const uint4 *x = static_cast<const uint4 *>(a.x) + (size_t)b * a.ih * a.iw;
    pdl_begin(); /* the filter above is a constant */
    for (int i = threadIdx.x; i < WH * WW; i += blockDim.x) {
        const int iy = wy0 + i / WW, ix = wx0 + i % WW;
        win[i] = iy >= 0 && iy < a.ih && ix >= 0 && ix < a.iw ? __ldg(x + (size_t)iy * a.iw + ix)
                                                              : make_uint4(0u, 0u, 0u, 0u);
    }
    __syncthreads();
    const int ry = threadIdx.x / WIN_TW, rx = threadIdx.x % WIN_TW;
    const int oy = oy0 + ry, ox = ox0 + rx;
    if (oy >= a.oh || ox >= a.ow)
        return;
    float acc[NC];
#pragma unroll
    for (int j = 0; j < NC; j++)
        acc[j] = 0.0f;
#pragma unroll
    for (int ky = 0; ky < K; ky++) {
        const int iy = oy - a.pt + ky;
        if (iy < 0 || iy >= a.ih)
            continue;
#pragma unroll
        for (int kx = 0; kx < K; kx++) {
            const int ix = ox - a.pl + kx;
            if (ix < 0 || ix >= a.iw)
                continue;
            const uint4 q = win[(ry + ky) * WW + rx + kx];
            const __half2 *h = reinterpret_cast<const __half2 *>(&q);
            float wp[C * NC]; /* the tap's filter, 16 bytes a load */
#pragma unroll
            for (int i = 0; i < C * NC / 4; i++) {
                const float4 f = sw4[(ky * K + kx) * C * NC / 4 + i];
                wp[4 * i] = f.x, wp[4 * i + 1] = f.y, wp[4 * i + 2] = f.z, wp[4 * i + 3] = f.w;
            }
#pragma unroll
            for (int i = 0; i < C / 2; i++) {
                const float2 xv = __half22float2(h[i]);
#pragma unroll
                for (int j = 0; j < NC; j++)
                    acc[j] = fmaf(xv.x, wp[(2 * i) * NC + j], acc[j]);
#pragma unroll
                for (int j = 0; j < NC; j++)
                    acc[j] = fmaf(xv.y, wp[(2 * i + 1) * NC + j], acc[j]);
            }
        }
    }
    few_store<__half, NC>(a, acc, ((size_t)b * a.oh + oy) * a.ow + ox);
}

/* Whether conv_window_few takes the convolution (fp16, 8 input channels,
 * at most 8 outputs, 3x3 or 5x5 at stride 1 without dilation, outputs at
 * least 16 wide). */
static bool window_few_ok(const cuda_conv_args *a)
{
    return a->prec == CUDA_PREC_F16 && !a->x_f32 && a->cin == 8 && a->cout <= COG &&
           a->kh == a->kw && (a->kh == 3 || a->kh == 5) && a->sh == 1 && a->sw == 1 &&
           a->dh == 1 && a->dw == 1 && a->ow >= WIN_TW / 2 && a->pt >= 0 && a->pl >= 0 &&
           a->pt < a->kh && a->pl < a->kw && ((size_t)a->x & 15) == 0;
}

template <int K>
static cudaError_t window_few_k(const cuda_conv_args *a, cudaStream_t s)
{
    const int tx = (a->ow + WIN_TW - 1) / WIN_TW, ty = (a->oh + WIN_TH - 1) / WIN_TH;
    const long long blocks = (long long)a->batch * tx * ty;
    if (blocks > INT_MAX)
        return cudaErrorInvalidValue;
    const unsigned n = (unsigned)blocks, th = WIN_TH * WIN_TW;
    if (a->cout == 1)
        return cuda_ops_start(conv_window_few<K, 1>, n, th, 0, s, *a, tx, ty);
    if (a->cout == 2)
        return cuda_ops_start(conv_window_few<K, 2>, n, th, 0, s, *a, tx, ty);
    if (a->cout <= 4)
        return cuda_ops_start(conv_window_few<K, 4>, n, th, 0, s, *a, tx, ty);
    return cuda_ops_start(conv_window_few<K, 8>, n, th, 0, s, *a, tx, ty);
}

#define DIRECT_FEW_BLOCKS 4096

template <typename T>
static cudaError_t direct_few(const cuda_conv_args *a, size_t smem, cudaStream_t s)
{
    unsigned blocks = cuda_ops_blocks((long long)a->batch * a->oh * a->ow, CUDA_OPS_THREADS);
    blocks = blocks < DIRECT_FEW_BLOCKS ? blocks : DIRECT_FEW_BLOCKS;
    if (a->cout == 1)
        return cuda_ops_start(conv_direct_few<T, 1>, blocks, CUDA_OPS_THREADS, smem, s, *a);
    if (a->cout == 2)
        return cuda_ops_start(conv_direct_few<T, 2>, blocks, CUDA_OPS_THREADS, smem, s, *a);
    if (a->cout <= 4)
        return cuda_ops_start(conv_direct_few<T, 4>, blocks, CUDA_OPS_THREADS, smem, s, *a);
    return cuda_ops_start(conv_direct_few<T, 8>, blocks, CUDA_OPS_THREADS, smem, s, *a);
}

extern "C" cudaError_t cuda_launch_conv_direct(const cuda_conv_args *a, cudaStream_t s)
{
    int coutp = (a->cout + COG - 1) / COG * COG;
    if (cuda_conv_is_stem(a)) /* cuda_ops_stem.cu */
        return cuda_launch_conv_stem(a, s);
    size_t smem = (size_t)a->kh * a->kw * a->cin * coutp * sizeof(float);
    int use_smem = smem <= DIRECT_SMEM_MAX;
    int es = a->prec == CUDA_PREC_F16 ? 2 : 4;
    if (window_few_ok(a))
        return a->kh == 3 ? window_few_k<3>(a, s) : window_few_k<5>(a, s);
    if (use_smem && a->cout <= COG && a->cin % (16 / es) == 0 && ((size_t)a->x & 15) == 0)
        return a->prec == CUDA_PREC_F16 ? direct_few<__half>(a, smem, s)
                                        : direct_few<float>(a, smem, s);
    if (!use_smem)
        smem = 0;
    long long total = (long long)a->batch * a->oh * a->ow * (coutp / COG);
    unsigned blocks = cuda_ops_blocks(total, CUDA_OPS_THREADS);
    if (a->prec == CUDA_PREC_F16)
        return cuda_ops_start(conv_direct<__half>, blocks, CUDA_OPS_THREADS, smem, s, *a, use_smem);
    else
        return cuda_ops_start(conv_direct<float>, blocks, CUDA_OPS_THREADS, smem, s, *a, use_smem);
}
