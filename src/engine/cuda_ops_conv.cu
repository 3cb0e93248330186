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
 *   columns.
 * - gemm_simt (fp32, or fp16 with odd sizes): 64x64x16 tiles, 256 threads of
 *   4x4 outputs each (strided by 16 so that stores coalesce), FFMA.
 * Stem form (square 5x5 or 3x3 window, stride 2, 3 input channels, Cout <=
 * 32): register-blocked, filter and input tile in shared memory, see
 * stem_body. Direct form: one thread = one output pixel x 8 output channels (the group
 * index varies fastest so neighbours share the input pixel), filter as
 * [kh][kw][cin][cout rounded to 8], staged in shared memory as float when it
 * fits in 48 KB, read through the read-only cache otherwise. */
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

static __device__ __forceinline__ void mma_16816(float *c, const unsigned *a, const unsigned *b)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

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
 * A quarter of the load instructions of tc_load_tile, more bytes in flight. */
static __device__ __forceinline__ void tc_load_tile16(__half *s, const __half *__restrict__ g,
                                                      int rows, int K, int r0, int k0)
{
    const int chunks = TC_BK / 8; /* 4 per row */
#pragma unroll
    for (int i = 0; i < (TC_BM * chunks) / 128; i++) {
        int idx = threadIdx.x + 128 * i;
        int r = idx / chunks, c = idx % chunks;
        int row = r0 + r, k = k0 + 8 * c;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (row < rows && k < K)
            v = __ldg(reinterpret_cast<const uint4 *>(g + (size_t)row * K + k));
        *reinterpret_cast<uint4 *>(s + r * TC_LD + 8 * c) = v;
    }
}

static __device__ __forceinline__ void
gemm_tc_body(const __half *__restrict__ x, const __half *__restrict__ w,
             const float *__restrict__ bias, const __half *__restrict__ res,
             const float *__restrict__ alpha, __half *__restrict__ y, int M, int K, int N, int act,
             const int vec16, const int narrow)
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

    for (int k0 = 0; k0 < K; k0 += TC_BK) {
        if (vec16) {
            tc_load_tile16(as, x, M, K, m0, k0);
            if (narrow)
                tc_load_tile16(as + TC_BM * TC_LD, x, M, K, m0 + TC_BM, k0);
            tc_load_tile16(bs, w, N, K, n0, k0);
        } else {
            tc_load_tile(as, x, M, K, m0, k0);
            if (narrow)
                tc_load_tile(as + TC_BM * TC_LD, x, M, K, m0 + TC_BM, k0);
            tc_load_tile(bs, w, N, K, n0, k0);
        }
        __syncthreads();
#pragma unroll
        for (int kb = 0; kb < TC_BK; kb += 16) {
            unsigned a[2][4], b[4][2];
#pragma unroll
            for (int i = 0; i < 2; i++) {
                const __half *p = as + (wm + 16 * i + g) * TC_LD + kb + 2 * t;
                a[i][0] = *reinterpret_cast<const unsigned *>(p);
                a[i][1] = *reinterpret_cast<const unsigned *>(p + 8 * TC_LD);
                a[i][2] = *reinterpret_cast<const unsigned *>(p + 8);
                a[i][3] = *reinterpret_cast<const unsigned *>(p + 8 * TC_LD + 8);
            }
#pragma unroll
            for (int j = 0; j < 4; j++) {
                const __half *p = bs + (wn + 8 * j + g) * TC_LD + kb + 2 * t;
                b[j][0] = *reinterpret_cast<const unsigned *>(p);
                b[j][1] = *reinterpret_cast<const unsigned *>(p + 8);
            }
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    mma_16816(acc[i][j], a[i], b[j]);
        }
        __syncthreads();
    }

    /* Accumulator (i, j): rows m0+wm+16i+g (+8), columns n0+wn+8j+2t, +1. */
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
                *reinterpret_cast<__half2 *>(y + o) = __floats2half2_rn(v0, v1);
            }
    }
}

/* vec16 and narrow are constants in each kernel: the 16-byte loader (K % 8
 * == 0, 16-byte aligned operands) or the 4-byte one; 64x64 block tiles or
 * (N <= 32, with the 16-byte loader) 128x32. */
#define GEMM_TC_KERNEL(name, vec16, narrow)                                                      \
    __global__ void __launch_bounds__(128)                                                     \
    name(const __half *__restrict__ x, const __half *__restrict__ w,                           \
         const float *__restrict__ bias, const __half *__restrict__ res,                       \
         const float *__restrict__ alpha, __half *__restrict__ y, int M, int K, int N, int act) \
    {                                                                                          \
        gemm_tc_body(x, w, bias, res, alpha, y, M, K, N, act, vec16, narrow);                  \
    }
GEMM_TC_KERNEL(gemm_tc, 0, 0)
GEMM_TC_KERNEL(gemm_tc16, 1, 0)
GEMM_TC_KERNEL(gemm_tc16_narrow, 1, 1)

extern "C" cudaError_t cuda_launch_conv_pointwise(const cuda_conv_args *a, cudaStream_t s)
{
    int M = a->batch * a->oh * a->ow, K = a->kh * a->kw * a->cin, N = a->cout;
    /* The tensor-core kernel moves pairs of halves: even sizes, 4-byte
     * aligned buffers. */
    size_t align = (size_t)a->x | (size_t)a->w | (size_t)a->y | (size_t)a->residual;
    if (a->prec == CUDA_PREC_F16 && K % 2 == 0 && N % 2 == 0 && (align & 3) == 0) {
        int vec16 = K % 8 == 0 && (((size_t)a->x | (size_t)a->w) & 15) == 0;
        int narrow = N <= 32 && vec16;
        int bm = narrow ? 2 * TC_BM : TC_BM;
        dim3 grid((M + bm - 1) / bm, (N + TC_BN - 1) / TC_BN);
        const __half *x = (const __half *)a->x, *w = (const __half *)a->w;
        const __half *r = (const __half *)a->residual;
        __half *y = (__half *)a->y;
        if (narrow)
            gemm_tc16_narrow<<<grid, 128, 0, s>>>(x, w, a->bias, r, a->alpha, y, M, K, N, a->act);
        else if (vec16)
            gemm_tc16<<<grid, 128, 0, s>>>(x, w, a->bias, r, a->alpha, y, M, K, N, a->act);
        else
            gemm_tc<<<grid, 128, 0, s>>>(x, w, a->bias, r, a->alpha, y, M, K, N, a->act);
    } else {
        dim3 grid((M + SIMT_BM - 1) / SIMT_BM, (N + SIMT_BN - 1) / SIMT_BN);
        if (a->prec == CUDA_PREC_F16)
            gemm_simt<__half><<<grid, 256, 0, s>>>((const __half *)a->x, (const __half *)a->w,
                                                   a->bias, (const __half *)a->residual, a->alpha,
                                                   (__half *)a->y, M, K, N, a->act);
        else
            gemm_simt<float><<<grid, 256, 0, s>>>((const float *)a->x, (const float *)a->w,
                                                  a->bias, (const float *)a->residual, a->alpha,
                                                  (float *)a->y, M, K, N, a->act);
    }
    return cudaGetLastError();
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

/* 8 consecutive values of an output row (16-byte aligned) from floats. */
static __device__ __forceinline__ void st8_global(float *p, const float *v)
{
    st16(p, v);
    st16(p + 4, v + 4);
}
static __device__ __forceinline__ void st8_global(__half *p, const float *v) { st16(p, v); }

/* ---- stem convolution: KxK window, stride S, few input channels ---------
 * The models' first layer (5x5/2 3 -> 24 in BlazeFace, 3x3/2 3 -> 16 in
 * FaceMesh) has too few input channels for a GEMM and does 75 MACs per
 * output value. A block computes a STEM_TH x STEM_TW tile of output pixels of
 * one item for all output channels: the filter (as float, [K][K][CIN][coutp])
 * and the input tile it needs (as float, zero outside the image, which is the
 * padding) are staged in shared memory once. Warp w handles channel group
 * w % groups (so its filter reads are broadcasts) and 8 output rows; a lane
 * computes STEM_PX consecutive output pixels x 8 channels, keeping the input
 * row segment of one filter row in registers, so each shared-memory filter
 * read feeds STEM_PX x 8 FMAs. K, S and CIN are constants (the kernels below
 * inline the body with literals), so every loop unrolls. */
#define STEM_TH 16
#define STEM_TW 16
#define STEM_PX 4
#define STEM_XR_MAX 33 /* ((STEM_PX - 1) * S + K) * CIN for 5x5/2, 3 channels */

template <typename T>
static __device__ __forceinline__ void stem_body(const cuda_conv_args &a, int vec_out, const int K,
                                                 const int S, const int CIN)
{
    extern __shared__ float4 smem4[];
    float *sw = reinterpret_cast<float *>(smem4);
    const int coutp = (a.cout + COG - 1) / COG * COG, groups = coutp / COG;
    const int nw = K * K * CIN * coutp;
    float *sx = sw + nw;
    const int IR = (STEM_TH - 1) * S + K, IC = (STEM_TW - 1) * S + K, ICC = IC * CIN;
    const int tiles_x = (a.ow + STEM_TW - 1) / STEM_TW, tiles_y = (a.oh + STEM_TH - 1) / STEM_TH;
    int bt = blockIdx.x;
    const int tx0 = (bt % tiles_x) * STEM_TW;
    bt /= tiles_x;
    const int ty0 = (bt % tiles_y) * STEM_TH, b = bt / tiles_y;

    const T *w = static_cast<const T *>(a.w);
    for (int i = threadIdx.x; i < nw; i += blockDim.x)
        sw[i] = ld(w + i);
    const T *x = static_cast<const T *>(a.x) + (size_t)b * a.ih * a.iw * CIN;
    const int iy0 = ty0 * S - a.pt, ix0 = tx0 * S - a.pl;
    for (int i = threadIdx.x; i < IR * ICC; i += blockDim.x) {
        int r = i / ICC, cc = i % ICC;
        int iy = iy0 + r, ix = ix0 + cc / CIN, ci = cc % CIN;
        float v = 0.0f;
        if (iy >= 0 && iy < a.ih && ix >= 0 && ix < a.iw)
            v = ld(x + ((size_t)iy * a.iw + ix) * CIN + ci);
        sx[i] = v;
    }
    __syncthreads();

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = warp % groups;
    const int ly = (warp / groups) * 8 + lane / 4, lx = (lane % 4) * STEM_PX;
    float acc[STEM_PX][COG];
#pragma unroll
    for (int p = 0; p < STEM_PX; p++)
#pragma unroll
        for (int j = 0; j < COG; j++)
            acc[p][j] = 0.0f;
    const float *xs = sx + ly * S * ICC + lx * S * CIN;
    const float *ws = sw + g * COG;
    const int NX = ((STEM_PX - 1) * S + K) * CIN;
#pragma unroll
    for (int ky = 0; ky < K; ky++) {
        float xr[STEM_XR_MAX];
#pragma unroll
        for (int j = 0; j < NX; j++)
            xr[j] = xs[ky * ICC + j];
#pragma unroll
        for (int kx = 0; kx < K; kx++)
#pragma unroll
            for (int ci = 0; ci < CIN; ci++) {
                float wv[COG];
                ld8_shared(ws + ((ky * K + kx) * CIN + ci) * coutp, wv);
#pragma unroll
                for (int p = 0; p < STEM_PX; p++) {
                    float xv = xr[(p * S + kx) * CIN + ci];
#pragma unroll
                    for (int j = 0; j < COG; j++)
                        acc[p][j] = fmaf(xv, wv[j], acc[p][j]);
                }
            }
    }

    const int oy = ty0 + ly, c0 = g * COG;
    if (oy >= a.oh)
        return;
    float bv[COG];
#pragma unroll
    for (int j = 0; j < COG; j++)
        bv[j] = (a.bias && c0 + j < a.cout) ? __ldg(a.bias + c0 + j) : 0.0f;
    T *y = static_cast<T *>(a.y);
    const T *res = static_cast<const T *>(a.residual);
#pragma unroll
    for (int p = 0; p < STEM_PX; p++) {
        int ox = tx0 + lx + p;
        if (ox >= a.ow)
            break;
        size_t o = ((size_t)(b * a.oh + oy) * a.ow + ox) * a.cout + c0;
        float v[COG];
#pragma unroll
        for (int j = 0; j < COG; j++)
            v[j] = acc[p][j] + bv[j];
        if (vec_out) {
            if (res) {
                float r[COG];
                ld8_global(res + o, r);
#pragma unroll
                for (int j = 0; j < COG; j++)
                    v[j] += r[j];
            }
#pragma unroll
            for (int j = 0; j < COG; j++)
                v[j] = activate(v[j], a.act, a.alpha, c0 + j);
            st8_global(y + o, v);
        } else {
#pragma unroll
            for (int j = 0; j < COG; j++) {
                if (c0 + j >= a.cout)
                    break;
                float u = v[j];
                if (res)
                    u += ld(res + o + j);
                st(y + o + j, activate(u, a.act, a.alpha, c0 + j));
            }
        }
    }
}

template <typename T>
__global__ void __launch_bounds__(256) conv_stem_k5s2c3(cuda_conv_args a, int vec_out)
{
    stem_body<T>(a, vec_out, 5, 2, 3);
}

template <typename T>
__global__ void __launch_bounds__(256) conv_stem_k3s2c3(cuda_conv_args a, int vec_out)
{
    stem_body<T>(a, vec_out, 3, 2, 3);
}

/* Shared memory of the stem kernel (bytes) for window k, stride s. */
static size_t stem_smem(int k, int s, int cin, int coutp)
{
    int ir = (STEM_TH - 1) * s + k, ic = (STEM_TW - 1) * s + k;
    return ((size_t)k * k * cin * coutp + (size_t)ir * ic * cin) * sizeof(float);
}

template <typename T>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
conv_direct(cuda_conv_args a, int use_smem)
{
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

extern "C" cudaError_t cuda_launch_conv_direct(const cuda_conv_args *a, cudaStream_t s)
{
    int coutp = (a->cout + COG - 1) / COG * COG;
    /* The stems: square 5x5 or 3x3 window, stride 2, no dilation, 3 input
     * channels, up to 32 output channels (8 warps at most). */
    if (a->cin == 3 && a->kh == a->kw && (a->kh == 5 || a->kh == 3) && a->sh == 2 &&
        a->sw == 2 && a->dh == 1 && a->dw == 1 && coutp <= 4 * COG) {
        int groups = coutp / COG;
        size_t ssm = stem_smem(a->kh, 2, 3, coutp);
        long long tiles = (long long)a->batch * ((a->oh + STEM_TH - 1) / STEM_TH) *
                          ((a->ow + STEM_TW - 1) / STEM_TW);
        size_t es = a->prec == CUDA_PREC_F16 ? 2 : 4;
        size_t addr = (size_t)a->y | (size_t)a->residual;
        int vec_out = a->cout % COG == 0 && (addr & 15) == 0 && (a->cout * es) % 16 == 0;
        int threads = 32 * groups * (STEM_TH / 8);
        if (ssm <= DIRECT_SMEM_MAX && tiles < (1LL << 31) && threads <= 256) {
            unsigned blocks = (unsigned)tiles;
            if (a->prec == CUDA_PREC_F16) {
                if (a->kh == 5)
                    conv_stem_k5s2c3<__half><<<blocks, threads, ssm, s>>>(*a, vec_out);
                else
                    conv_stem_k3s2c3<__half><<<blocks, threads, ssm, s>>>(*a, vec_out);
            } else {
                if (a->kh == 5)
                    conv_stem_k5s2c3<float><<<blocks, threads, ssm, s>>>(*a, vec_out);
                else
                    conv_stem_k3s2c3<float><<<blocks, threads, ssm, s>>>(*a, vec_out);
            }
            return cudaGetLastError();
        }
    }
    size_t smem = (size_t)a->kh * a->kw * a->cin * coutp * sizeof(float);
    int use_smem = smem <= DIRECT_SMEM_MAX;
    if (!use_smem)
        smem = 0;
    long long total = (long long)a->batch * a->oh * a->ow * (coutp / COG);
    unsigned blocks = cuda_ops_blocks(total, CUDA_OPS_THREADS);
    if (a->prec == CUDA_PREC_F16)
        conv_direct<__half><<<blocks, CUDA_OPS_THREADS, smem, s>>>(*a, use_smem);
    else
        conv_direct<float><<<blocks, CUDA_OPS_THREADS, smem, s>>>(*a, use_smem);
    return cudaGetLastError();
}
