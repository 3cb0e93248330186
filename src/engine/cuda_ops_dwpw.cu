/* A BlazeBlock in one kernel (GR_DWPW, made by rewrite_block.c):
 *   y = act(pw(dw(x) + dw bias) + pw bias + r),
 * r the residual, read at the output pixel or max-pooled 2x2/2 from a tensor
 * of twice the output's size, with zeros for the channels it lacks.
 *
 * Layer by layer this block was 2-4 launches (depthwise, pointwise, and on
 * the residual branch MAX_POOL_2D and a channel PAD), each writing its output
 * to memory for the next to read back. Here a block of 256 threads owns BM
 * consecutive output pixels (rows of the [pixels][channels] matrix, which
 * may span items): it computes their depthwise convolution for all C
 * channels into shared memory (one thread = one pixel x V channels, V the
 * widest vector the channel count allows; the 3x3 neighbourhood comes from
 * L1/L2), then multiplies that tile by the pointwise filter, 64 output
 * channels at a time, and writes y with the epilogue fused. The depthwise
 * output never leaves shared memory and the residual branch is read where it
 * is added, so a block reads x and writes y once.
 *
 * Two forms of the second step:
 * - dwpw_tc (fp16, even channel counts): the tile is kept as half, C padded
 *   to a multiple of 16 with zeros, and the 64-channel slice of the filter is
 *   staged next to it; 8 warps multiply with mma.sync m16n8k16 (fp32
 *   accumulators), each a 32-row x (8 * BM / 32)-column warp tile. BM is 128
 *   for large problems and 64 or 32 when that leaves fewer than two blocks
 *   per SM (batch 1: the latency is what counts).
 * - dwpw_simt (fp32, and fp16 with odd counts): the tile as float, 64 x 64
 *   outputs per pass of 256 threads (4 x 4 each, FFMA), the filter read
 *   through the read-only cache. */
#include "engine/cuda_ops_device.h"

#define DP_THREADS 256
#define DP_BN 64

/* Output pixel m (0 .. batch*oh*ow) as item, row, column. */
struct dp_pixel {
    int b, oy, ox;
};

static __device__ __forceinline__ dp_pixel dp_decode(const cuda_dwpw_args &a, int m)
{
    dp_pixel p;
    p.ox = m % a.ow;
    int q = m / a.ow;
    p.oy = q % a.oh;
    p.b = q / a.oh;
    return p;
}

/* V depthwise outputs (+ dw bias) of pixel m, channels c0 .. c0+V-1. */
template <typename T, int V>
static __device__ __forceinline__ void dp_depthwise(const cuda_dwpw_args &a, int m, int c0,
                                                    float *acc)
{
    const dp_pixel p = dp_decode(a, m);
    const T *x = static_cast<const T *>(a.x) + (size_t)p.b * a.ih * a.iw * a.c + c0;
    const T *w = static_cast<const T *>(a.dw_w) + c0;
#pragma unroll
    for (int i = 0; i < V; i++)
        acc[i] = a.dw_bias ? __ldg(a.dw_bias + c0 + i) : 0.0f;
    for (int ky = 0; ky < a.kh; ky++) {
        int iy = p.oy * a.sh - a.pt + ky * a.dh;
        if (iy < 0 || iy >= a.ih)
            continue;
        for (int kx = 0; kx < a.kw; kx++) {
            int ix = p.ox * a.sw - a.pl + kx * a.dw;
            if (ix < 0 || ix >= a.iw)
                continue;
            float xv[V], wv[V];
            ldv(x + ((size_t)iy * a.iw + ix) * a.c, xv, V);
            ldv(w + (size_t)(ky * a.kw + kx) * a.c, wv, V);
#pragma unroll
            for (int i = 0; i < V; i++)
                acc[i] = fmaf(xv[i], wv[i], acc[i]);
        }
    }
}

/* V values into a shared-memory tile row (16-byte aligned when V is 4
 * floats or 8 halves; a float tile takes 8 values as two stores). */
template <int V> static __device__ __forceinline__ void dp_put(float *p, const float *v)
{
    if (V > 4) {
#pragma unroll
        for (int i = 0; i < V; i += 4)
            st16(p + i, v + i);
    } else {
        stv(p, v, V);
    }
}

template <int V> static __device__ __forceinline__ void dp_put(__half *p, const float *v)
{
    stv(p, v, V);
}

/* Step 1: the depthwise outputs of rows m0 .. m0+BM-1 into s ([BM][ld],
 * channels 0 .. kp-1, zeros past C and past the last pixel). */
template <typename T, typename S, int V>
static __device__ __forceinline__ void dp_stage(const cuda_dwpw_args &a, S *s, int ld, int kp,
                                                int m0, int bm, int M)
{
    const int groups = kp / V;
    for (int idx = threadIdx.x; idx < bm * groups; idx += DP_THREADS) {
        int r = idx / groups, c0 = (idx % groups) * V;
        float acc[V];
        if (m0 + r < M && c0 < a.c) {
            dp_depthwise<T, V>(a, m0 + r, c0, acc);
        } else {
#pragma unroll
            for (int i = 0; i < V; i++)
                acc[i] = 0.0f;
        }
        dp_put<V>(s + r * ld + c0, acc);
    }
}

/* The residual at pixel m, channels n and n + 1 (n + 1 < rc when n < rc:
 * callers pass an even rc to the pair form). */
template <typename T>
static __device__ __forceinline__ float dp_residual(const cuda_dwpw_args &a, int m, int n)
{
    const T *r = static_cast<const T *>(a.residual);
    if (!a.pool_residual)
        return ld(r + (size_t)m * a.rc + n);
    const dp_pixel p = dp_decode(a, m);
    const int rw = 2 * a.ow;
    const T *q = r + (((size_t)p.b * 2 * a.oh + 2 * p.oy) * rw + 2 * p.ox) * a.rc + n;
    float v = fmaxf(ld(q), ld(q + a.rc));
    q += (size_t)rw * a.rc;
    return fmaxf(v, fmaxf(ld(q), ld(q + a.rc)));
}

static __device__ __forceinline__ float2 ld_half2(const __half *p)
{
    unsigned u = __ldg(reinterpret_cast<const unsigned *>(p));
    return __half22float2(*reinterpret_cast<const __half2 *>(&u));
}

static __device__ __forceinline__ float2 dp_residual2(const cuda_dwpw_args &a, int m, int n)
{
    const __half *r = static_cast<const __half *>(a.residual);
    if (!a.pool_residual)
        return ld_half2(r + (size_t)m * a.rc + n);
    const dp_pixel p = dp_decode(a, m);
    const int rw = 2 * a.ow;
    const __half *q = r + (((size_t)p.b * 2 * a.oh + 2 * p.oy) * rw + 2 * p.ox) * a.rc + n;
    float2 v0 = ld_half2(q), v1 = ld_half2(q + a.rc);
    q += (size_t)rw * a.rc;
    float2 v2 = ld_half2(q), v3 = ld_half2(q + a.rc);
    return make_float2(fmaxf(fmaxf(v0.x, v1.x), fmaxf(v2.x, v3.x)),
                       fmaxf(fmaxf(v0.y, v1.y), fmaxf(v2.y, v3.y)));
}

/* ---- fp16 on the tensor cores -------------------------------------------- */

static __device__ __forceinline__ void dp_mma(float *c, const unsigned *a, const unsigned *b)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* Rows n0 .. n0+63 of the [cout][C] filter, channels 0 .. kp-1, into
 * bs[64][ld] (zeros past cout and C), V halves per load. */
template <int V>
static __device__ __forceinline__ void dp_stage_filter(const cuda_dwpw_args &a, __half *bs, int ld,
                                                       int kp, int n0)
{
    const __half *w = static_cast<const __half *>(a.pw_w);
    const int groups = kp / V;
    for (int idx = threadIdx.x; idx < DP_BN * groups; idx += DP_THREADS) {
        int r = idx / groups, k = (idx % groups) * V;
        float v[V];
        if (n0 + r < a.cout && k < a.c) {
            ldv(w + (size_t)(n0 + r) * a.c + k, v, V);
        } else {
#pragma unroll
            for (int i = 0; i < V; i++)
                v[i] = 0.0f;
        }
        stv(bs + r * ld + k, v, V);
    }
}

/* BM rows per block: BM / 32 warps along the rows, the rest along 64
 * output channels, each warp 32 rows x NJ * 8 channels. */
template <int V, int BM>
__global__ void __launch_bounds__(DP_THREADS)
dwpw_tc(cuda_dwpw_args a, int kp)
{
    extern __shared__ __align__(16) unsigned char dp_smem[];
    constexpr int WARPS_M = BM / 32, WARPS_N = 8 / WARPS_M, NJ = DP_BN / (8 * WARPS_N);
    const int ld = kp + 8; /* halves per row: an odd multiple of 16 bytes, conflict-free */
    __half *as = reinterpret_cast<__half *>(dp_smem);
    __half *bs = as + BM * ld;
    const int M = a.batch * a.oh * a.ow, m0 = blockIdx.x * BM;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, t = lane % 4;
    const int wm = (warp / WARPS_N) * 32, wn = (warp % WARPS_N) * NJ * 8;

    dp_stage<__half, __half, V>(a, as, ld, kp, m0, BM, M);
    for (int n0 = 0; n0 < a.cout; n0 += DP_BN) {
        if (n0)
            __syncthreads(); /* every warp is done with the previous slice */
        dp_stage_filter<V>(a, bs, ld, kp, n0);
        __syncthreads();
        float acc[2][NJ][4];
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < NJ; j++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    acc[i][j][e] = 0.0f;
        for (int kb = 0; kb < kp; kb += 16) {
            unsigned af[2][4], bf[NJ][2];
#pragma unroll
            for (int i = 0; i < 2; i++) {
                const __half *p = as + (wm + 16 * i + g) * ld + kb + 2 * t;
                af[i][0] = *reinterpret_cast<const unsigned *>(p);
                af[i][1] = *reinterpret_cast<const unsigned *>(p + 8 * ld);
                af[i][2] = *reinterpret_cast<const unsigned *>(p + 8);
                af[i][3] = *reinterpret_cast<const unsigned *>(p + 8 * ld + 8);
            }
#pragma unroll
            for (int j = 0; j < NJ; j++) {
                const __half *p = bs + (wn + 8 * j + g) * ld + kb + 2 * t;
                bf[j][0] = *reinterpret_cast<const unsigned *>(p);
                bf[j][1] = *reinterpret_cast<const unsigned *>(p + 8);
            }
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int j = 0; j < NJ; j++)
                    dp_mma(acc[i][j], af[i], bf[j]);
        }
        /* Accumulator (i, j): rows m0+wm+16i+g (+8), columns n0+wn+8j+2t, +1. */
#pragma unroll
        for (int j = 0; j < NJ; j++) {
            int n = n0 + wn + 8 * j + 2 * t;
            if (n >= a.cout) /* cout even: n + 1 < cout too */
                continue;
            float b0 = a.bias ? __ldg(a.bias + n) : 0.0f;
            float b1 = a.bias ? __ldg(a.bias + n + 1) : 0.0f;
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    int m = m0 + wm + 16 * i + g + 8 * h;
                    if (m >= M)
                        continue;
                    float v0 = acc[i][j][2 * h] + b0, v1 = acc[i][j][2 * h + 1] + b1;
                    if (a.residual && n < a.rc) {
                        float2 r = dp_residual2(a, m, n);
                        v0 += r.x;
                        v1 += r.y;
                    }
                    v0 = activate(v0, a.act, a.alpha, n);
                    v1 = activate(v1, a.act, a.alpha, n + 1);
                    *reinterpret_cast<__half2 *>(static_cast<__half *>(a.y) + (size_t)m * a.cout +
                                                 n) = __floats2half2_rn(v0, v1);
                }
        }
    }
}

/* ---- FFMA ------------------------------------------------------------------ */

#define DP_SIMT_BM 64

template <typename T, int V>
__global__ void __launch_bounds__(DP_THREADS)
dwpw_simt(cuda_dwpw_args a, int kp)
{
    extern __shared__ __align__(16) unsigned char dp_smem[];
    const int lda = kp + 4; /* floats: rows stay 16-byte aligned */
    float *as = reinterpret_cast<float *>(dp_smem);
    const int M = a.batch * a.oh * a.ow, m0 = blockIdx.x * DP_SIMT_BM;
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const T *w = static_cast<const T *>(a.pw_w);

    dp_stage<T, float, V>(a, as, lda, kp, m0, DP_SIMT_BM, M);
    __syncthreads();
    for (int n0 = 0; n0 < a.cout; n0 += DP_BN) {
        float acc[4][4];
#pragma unroll
        for (int i = 0; i < 4; i++)
#pragma unroll
            for (int j = 0; j < 4; j++)
                acc[i][j] = 0.0f;
        const T *wr[4];
#pragma unroll
        for (int j = 0; j < 4; j++) {
            int n = n0 + tx + 16 * j;
            wr[j] = w + (size_t)(n < a.cout ? n : 0) * a.c;
        }
        for (int k = 0; k < a.c; k++) {
            float av[4], bv[4];
#pragma unroll
            for (int i = 0; i < 4; i++)
                av[i] = as[(ty + 16 * i) * lda + k];
#pragma unroll
            for (int j = 0; j < 4; j++)
                bv[j] = ld(wr[j] + k);
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < 4; j++)
                    acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
            int m = m0 + ty + 16 * i;
            if (m >= M)
                continue;
#pragma unroll
            for (int j = 0; j < 4; j++) {
                int n = n0 + tx + 16 * j;
                if (n >= a.cout)
                    continue;
                float v = acc[i][j] + (a.bias ? __ldg(a.bias + n) : 0.0f);
                if (a.residual && n < a.rc)
                    v += dp_residual<T>(a, m, n);
                st(static_cast<T *>(a.y) + (size_t)m * a.cout + n, activate(v, a.act, a.alpha, n));
            }
        }
    }
}

/* ---- launch ------------------------------------------------------------------ */

template <int V>
static cudaError_t launch_tc(const cuda_dwpw_args *a, int M, int kp, cudaStream_t s)
{
    /* Two blocks per SM at least (132 SMs on an H100), else smaller tiles. */
    const int want = 2 * 132;
    int bm = M >= 128 * want ? 128 : M >= 64 * want ? 64 : 32;
    size_t smem = (size_t)(bm + DP_BN) * (kp + 8) * sizeof(__half);
    unsigned blocks = cuda_ops_blocks(M, bm);
    cudaError_t e = cudaSuccess;
    if (bm == 128) {
        if (smem > 48 * 1024)
            e = cudaFuncSetAttribute(dwpw_tc<V, 128>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)smem);
        if (e == cudaSuccess)
            dwpw_tc<V, 128><<<blocks, DP_THREADS, smem, s>>>(*a, kp);
    } else if (bm == 64) {
        if (smem > 48 * 1024)
            e = cudaFuncSetAttribute(dwpw_tc<V, 64>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)smem);
        if (e == cudaSuccess)
            dwpw_tc<V, 64><<<blocks, DP_THREADS, smem, s>>>(*a, kp);
    } else {
        if (smem > 48 * 1024)
            e = cudaFuncSetAttribute(dwpw_tc<V, 32>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                     (int)smem);
        if (e == cudaSuccess)
            dwpw_tc<V, 32><<<blocks, DP_THREADS, smem, s>>>(*a, kp);
    }
    return e != cudaSuccess ? e : cudaGetLastError();
}

template <typename T, int V>
static cudaError_t launch_simt(const cuda_dwpw_args *a, int M, int kp, cudaStream_t s)
{
    size_t smem = (size_t)DP_SIMT_BM * (kp + 4) * sizeof(float);
    cudaError_t e = cudaSuccess;
    if (smem > 48 * 1024)
        e = cudaFuncSetAttribute(dwpw_simt<T, V>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                 (int)smem);
    if (e == cudaSuccess)
        dwpw_simt<T, V><<<cuda_ops_blocks(M, DP_SIMT_BM), DP_THREADS, smem, s>>>(*a, kp);
    return e != cudaSuccess ? e : cudaGetLastError();
}

extern "C" bool cuda_dwpw_fits(int channels)
{
    /* The largest tile: 128 + 64 rows of half, or 64 rows of float. */
    int kp = (channels + 15) / 16 * 16;
    return (size_t)(128 + DP_BN) * (kp + 8) * 2 <= CUDA_DWPW_SMEM_MAX &&
           (size_t)DP_SIMT_BM * (kp + 4) * 4 <= CUDA_DWPW_SMEM_MAX;
}

extern "C" cudaError_t cuda_launch_dwpw(const cuda_dwpw_args *a, cudaStream_t s)
{
    const int M = a->batch * a->oh * a->ow, kp = (a->c + 15) / 16 * 16;
    if (M <= 0 || a->cout <= 0)
        return cudaSuccess;
    if (!cuda_dwpw_fits(a->c))
        return cudaErrorInvalidValue;
    int es = a->prec == CUDA_PREC_F16 ? 2 : 4;
    size_t addr = (size_t)a->x | (size_t)a->dw_w | (size_t)a->pw_w;
    int V = cuda_ops_vec(es, a->c, addr);
    if (a->prec == CUDA_PREC_F16) {
        size_t pairs = (size_t)a->y | (size_t)a->residual;
        if (a->cout % 2 == 0 && (!a->residual || a->rc % 2 == 0) && (pairs & 3) == 0) {
            if (V == 8)
                return launch_tc<8>(a, M, kp, s);
            if (V == 4)
                return launch_tc<4>(a, M, kp, s);
            if (V == 2)
                return launch_tc<2>(a, M, kp, s);
            return launch_tc<1>(a, M, kp, s);
        }
        if (V == 8)
            return launch_simt<__half, 8>(a, M, kp, s);
        if (V == 4)
            return launch_simt<__half, 4>(a, M, kp, s);
        if (V == 2)
            return launch_simt<__half, 2>(a, M, kp, s);
        return launch_simt<__half, 1>(a, M, kp, s);
    }
    if (V == 4)
        return launch_simt<float, 4>(a, M, kp, s);
    if (V == 2)
        return launch_simt<float, 2>(a, M, kp, s);
    return launch_simt<float, 1>(a, M, kp, s);
}
