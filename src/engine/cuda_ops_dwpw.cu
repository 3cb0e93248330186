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
 * Blocks with few channels, and narrowing blocks on large images, run on
 * the tensor cores throughout (cuda_ops_dwpw_mma.cu, see cuda_dwpw_mma_ok);
 * the others here. Two forms of the second step:
 * - dwpw_tc (fp16, even channel counts): the tile is kept as half, C padded
 *   to a multiple of 16 with zeros, and the 64-channel slice of the filter is
 *   staged next to it; 8 warps multiply with mma.sync m16n8k16 (fp32
 *   accumulators), each a 32-row x (8 * BM / 32)-column warp tile. BM is
 *   128 where that still gives two blocks per SM, else 32; with 32-row
 *   tiles short of one block per SM (batch 1: the latency is what counts)
 *   the blocks also split the output channels (launch_tc).
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

/* V elements of T as they are in memory (one load), and as floats. */
template <typename T, int V> struct dp_raw;
template <> struct dp_raw<__half, 8> { uint4 v; };
template <> struct dp_raw<__half, 4> { uint2 v; };
template <> struct dp_raw<__half, 2> { unsigned v; };
template <> struct dp_raw<__half, 1> { unsigned short v; };
template <> struct dp_raw<float, 4> { float4 v; };
template <> struct dp_raw<float, 2> { float2 v; };
template <> struct dp_raw<float, 1> { float v; };

template <typename T, int V>
static __device__ __forceinline__ dp_raw<T, V> dp_load(const T *p)
{
    dp_raw<T, V> r;
    r.v = __ldg(reinterpret_cast<const decltype(r.v) *>(p));
    return r;
}

template <typename T, int V>
static __device__ __forceinline__ dp_raw<T, V> dp_zero()
{
    dp_raw<T, V> r;
    memset(&r, 0, sizeof r);
    return r;
}

template <typename T, int V>
static __device__ __forceinline__ void dp_unpack(const dp_raw<T, V> &r, float *f)
{
    if constexpr (sizeof(T) == 2) {
        if constexpr (V == 1) {
            f[0] = __half2float(__ushort_as_half(r.v));
        } else {
            const __half2 *h = reinterpret_cast<const __half2 *>(&r.v);
#pragma unroll
            for (int i = 0; i < V / 2; i++) {
                float2 x = __half22float2(h[i]);
                f[2 * i] = x.x;
                f[2 * i + 1] = x.y;
            }
        }
    } else {
        const float *x = reinterpret_cast<const float *>(&r.v);
#pragma unroll
        for (int i = 0; i < V; i++)
            f[i] = x[i];
    }
}

/* V values of a shared-memory array (aligned to the vector) as floats. */
template <typename T, int V>
static __device__ __forceinline__ void dp_lds(const T *p, float *f)
{
    dp_raw<T, V> r;
    r.v = *reinterpret_cast<const decltype(r.v) *>(p);
    dp_unpack<T, V>(r, f);
}

/* Asynchronous copy of V elements (V * sizeof(T) bytes: 16, 8, 4 or 2)
 * from global to shared memory; 2-byte pieces go through registers. */
template <typename T, int V>
static __device__ __forceinline__ void dp_copy(T *s, const T *g)
{
    constexpr int bytes = V * (int)sizeof(T);
    if constexpr (bytes >= 4) {
        unsigned sa = (unsigned)__cvta_generic_to_shared(s);
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(sa), "l"(g), "n"(bytes));
    } else {
        *s = *g;
    }
}

static __device__ __forceinline__ void dp_copy_wait(void)
{
    asm volatile("cp.async.wait_all;\n" ::);
}

/* Zeros into V elements of shared memory. */
template <typename T, int V>
static __device__ __forceinline__ void dp_clear(T *s)
{
    *reinterpret_cast<decltype(dp_raw<T, V>::v) *>(s) = dp_zero<T, V>().v;
}

/* Starts copying the [rows][C] matrix g into s ([rows][ld], channels
 * 0 .. kp-1; zeros past C and past `valid` rows). Finished by
 * dp_copy_wait() + __syncthreads(). */
template <typename T, int V>
static __device__ __forceinline__ void dp_copy_matrix(T *s, int ld, const T *g, int rows,
                                                      int valid, int c, int kp)
{
    const int groups = kp / V;
    for (int idx = threadIdx.x; idx < rows * groups; idx += DP_THREADS) {
        int r = idx / groups, k = (idx % groups) * V;
        if (r < valid && k < c)
            dp_copy<T, V>(s + r * ld + k, g + (size_t)r * c + k);
        else
            dp_clear<T, V>(s + r * ld + k);
    }
}

/* V depthwise outputs (+ dw bias) of pixel m, channels c0 .. c0+V-1; the
 * filter wt ([kh*kw][ldw]) in shared memory. K = 3: a 3x3 window without
 * dilation, every tap's load issued before the first multiply; K = 0: any
 * window. */
template <typename T, int V, int K>
static __device__ __forceinline__ void dp_depthwise(const cuda_dwpw_args &a, const T *wt, int ldw,
                                                    int m, int c0, float *acc)
{
    const dp_pixel p = dp_decode(a, m);
    const T *x = static_cast<const T *>(a.x) + (size_t)p.b * a.ih * a.iw * a.c + c0;
#pragma unroll
    for (int i = 0; i < V; i++)
        acc[i] = a.dw_bias ? __ldg(a.dw_bias + c0 + i) : 0.0f;
    const int y0 = p.oy * a.sh - a.pt, x0 = p.ox * a.sw - a.pl;
    if constexpr (K == 3) {
        dp_raw<T, V> in[9];
#pragma unroll
        for (int ky = 0; ky < 3; ky++)
#pragma unroll
            for (int kx = 0; kx < 3; kx++) {
                int iy = y0 + ky, ix = x0 + kx;
                bool ok = iy >= 0 && iy < a.ih && ix >= 0 && ix < a.iw;
                in[ky * 3 + kx] = ok ? dp_load<T, V>(x + ((size_t)iy * a.iw + ix) * a.c)
                                     : dp_zero<T, V>();
            }
#pragma unroll
        for (int t = 0; t < 9; t++) {
            float xv[V], wv[V];
            dp_unpack<T, V>(in[t], xv);
            dp_lds<T, V>(wt + t * ldw + c0, wv);
#pragma unroll
            for (int i = 0; i < V; i++)
                acc[i] = fmaf(xv[i], wv[i], acc[i]);
        }
    } else {
        for (int ky = 0; ky < a.kh; ky++) {
            int iy = y0 + ky * a.dh;
            if (iy < 0 || iy >= a.ih)
                continue;
            for (int kx = 0; kx < a.kw; kx++) {
                int ix = x0 + kx * a.dw;
                if (ix < 0 || ix >= a.iw)
                    continue;
                float xv[V], wv[V];
                dp_unpack<T, V>(dp_load<T, V>(x + ((size_t)iy * a.iw + ix) * a.c), xv);
                dp_lds<T, V>(wt + (ky * a.kw + kx) * ldw + c0, wv);
#pragma unroll
                for (int i = 0; i < V; i++)
                    acc[i] = fmaf(xv[i], wv[i], acc[i]);
            }
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

/* Four output pixels ox .. ox+3 of one row (ow % 4 == 0), channels c0 ..
 * c0+3, 3x3 window without dilation: each input row's 3s + 3 columns are
 * loaded and converted once and feed all 12 taps of that row (a third of
 * the loads and conversions of four separate pixels at stride 1). */
template <typename T, int S>
static __device__ __forceinline__ void dp_depthwise4(const cuda_dwpw_args &a, const T *wt, int ldw,
                                                     int m, int c0, float (*acc)[4])
{
    constexpr int NC = 3 * S + 3;
    const dp_pixel p = dp_decode(a, m);
    const T *x = static_cast<const T *>(a.x) + (size_t)p.b * a.ih * a.iw * a.c + c0;
    float bias[4];
#pragma unroll
    for (int i = 0; i < 4; i++)
        bias[i] = a.dw_bias ? __ldg(a.dw_bias + c0 + i) : 0.0f;
#pragma unroll
    for (int q = 0; q < 4; q++)
#pragma unroll
        for (int i = 0; i < 4; i++)
            acc[q][i] = bias[i];
    const int y0 = p.oy * S - a.pt, x0 = p.ox * S - a.pl;
#pragma unroll
    for (int ky = 0; ky < 3; ky++) {
        const int iy = y0 + ky;
        const bool row_ok = iy >= 0 && iy < a.ih;
        const T *xr = x + (size_t)iy * a.iw * a.c;
        float col[NC][4];
#pragma unroll
        for (int j = 0; j < NC; j++) {
            int ix = x0 + j;
            dp_raw<T, 4> r = row_ok && ix >= 0 && ix < a.iw ? dp_load<T, 4>(xr + (size_t)ix * a.c)
                                                            : dp_zero<T, 4>();
            dp_unpack<T, 4>(r, col[j]);
        }
#pragma unroll
        for (int kx = 0; kx < 3; kx++) {
            float wv[4];
            dp_lds<T, 4>(wt + (ky * 3 + kx) * ldw + c0, wv);
#pragma unroll
            for (int q = 0; q < 4; q++)
#pragma unroll
                for (int i = 0; i < 4; i++)
                    acc[q][i] = fmaf(col[q * S + kx][i], wv[i], acc[q][i]);
        }
    }
}

/* Step 1: the depthwise outputs of rows m0 .. m0+bm-1 into s ([bm][ld],
 * channels 0 .. kp-1, zeros past C and past the last pixel). Rows of four
 * pixels x four channels when the window is 3x3 at stride 1 or 2, the
 * output width a multiple of 4 and C of 4 (bm and m0 are multiples of 4,
 * so a group of four never leaves its output row); else one pixel x V
 * channels per thread. */
template <typename T, typename S, int V, int K>
static __device__ __forceinline__ void dp_stage(const cuda_dwpw_args &a, const T *wt, S *s, int ld,
                                                int kp, int m0, int bm, int M)
{
    if (K == 3 && V >= 4 && a.ow % 4 == 0 && (a.sh == 1 || a.sh == 2) && a.sh == a.sw) {
        const int groups = kp / 4;
        for (int idx = threadIdx.x; idx < (bm / 4) * groups; idx += DP_THREADS) {
            int r = (idx / groups) * 4, c0 = (idx % groups) * 4;
            float acc[4][4];
            if (m0 + r < M && c0 < a.c) {
                if (a.sh == 1)
                    dp_depthwise4<T, 1>(a, wt, kp, m0 + r, c0, acc);
                else
                    dp_depthwise4<T, 2>(a, wt, kp, m0 + r, c0, acc);
            } else {
#pragma unroll
                for (int q = 0; q < 4; q++)
#pragma unroll
                    for (int i = 0; i < 4; i++)
                        acc[q][i] = 0.0f;
            }
#pragma unroll
            for (int q = 0; q < 4; q++)
                dp_put<4>(s + (r + q) * ld + c0, acc[q]);
        }
        return;
    }
    const int groups = kp / V;
    for (int idx = threadIdx.x; idx < bm * groups; idx += DP_THREADS) {
        int r = idx / groups, c0 = (idx % groups) * V;
        float acc[V];
        if (m0 + r < M && c0 < a.c) {
            dp_depthwise<T, V, K>(a, wt, kp, m0 + r, c0, acc);
        } else {
#pragma unroll
            for (int i = 0; i < V; i++)
                acc[i] = 0.0f;
        }
        dp_put<V>(s + r * ld + c0, acc);
    }
}

/* The residual at pixel m, channel n (below rc): FFMA form. */
template <typename T>
static __device__ __forceinline__ float dp_residual1(const cuda_dwpw_args &a, int m, int n)
{
    const T *r = static_cast<const T *>(a.residual);
    if (!a.pool_residual)
        return ld(r + (size_t)m * a.rc + n);
    const dp_pixel p = dp_decode(a, m);
    const int rw = 2 * a.ow;
    const T *q = r + (((size_t)p.b * 2 * a.oh + 2 * p.oy) * rw + 2 * p.ox) * a.rc + n;
    const T *q2 = q + (size_t)rw * a.rc;
    return fmaxf(fmaxf(ld(q), ld(q + a.rc)), fmaxf(ld(q2), ld(q2 + a.rc)));
}

/* The residual's first element for pixel m: the pixel itself, or the
 * top-left of its 2x2 block when pooled. */
template <typename T>
static __device__ __forceinline__ const T *dp_residual_at(const cuda_dwpw_args &a, int m)
{
    const T *r = static_cast<const T *>(a.residual);
    if (!a.pool_residual)
        return r + (size_t)m * a.rc;
    const dp_pixel p = dp_decode(a, m);
    return r + (((size_t)p.b * 2 * a.oh + 2 * p.oy) * (2 * a.ow) + 2 * p.ox) * a.rc;
}

/* Adds the residual's channels n .. n+VO-1 that are below rc, read at q:
 * VO-wide loads when rc is a multiple of VO (every row stays aligned),
 * pairs when rc is even, else one by one. */
template <typename T, int VO>
static __device__ __forceinline__ void dp_add_residual(const cuda_dwpw_args &a, const T *q, int n,
                                                       float *v)
{
    const size_t row = (size_t)2 * a.ow * a.rc;
    if (a.rc % VO == 0) {
        float r[VO];
        ldv(q + n, r, VO);
        if (a.pool_residual) {
            float r1[VO], r2[VO], r3[VO];
            ldv(q + n + a.rc, r1, VO);
            ldv(q + n + row, r2, VO);
            ldv(q + n + row + a.rc, r3, VO);
#pragma unroll
            for (int i = 0; i < VO; i++)
                r[i] = fmaxf(fmaxf(r[i], r1[i]), fmaxf(r2[i], r3[i]));
        }
#pragma unroll
        for (int i = 0; i < VO; i++)
            v[i] += r[i];
        return;
    }
    if (VO > 2 && a.rc % 2 == 0) {
#pragma unroll
        for (int i = 0; i < VO; i += 2) {
            if (n + i >= a.rc)
                break;
            dp_add_residual<T, 2>(a, q, n + i, v + i);
        }
        return;
    }
#pragma unroll
    for (int i = 0; i < VO; i++) {
        if (n + i >= a.rc)
            break;
        const T *e = q + n + i;
        float r = ld(e);
        if (a.pool_residual)
            r = fmaxf(fmaxf(r, ld(e + a.rc)), fmaxf(ld(e + row), ld(e + row + a.rc)));
        v[i] += r;
    }
}

/* Step 3: the epilogue of output channels n0 .. n0+63 from the float tile
 * c ([bm][cld], the products) to y: + bias + residual, activation, VO-wide
 * stores (cout % VO == 0). */
template <typename T, int VO>
static __device__ __forceinline__ void dp_epilogue(const cuda_dwpw_args &a, const float *c, int cld,
                                                   int m0, int bm, int M, int n0)
{
    const int width = min(DP_BN, a.cout - n0), groups = width / VO;
    for (int idx = threadIdx.x; idx < bm * groups; idx += DP_THREADS) {
        int r = idx / groups, j = (idx % groups) * VO, m = m0 + r, n = n0 + j;
        if (m >= M)
            continue;
        float v[VO];
#pragma unroll
        for (int i = 0; i < VO; i++)
            v[i] = c[r * cld + j + i] + (a.bias ? __ldg(a.bias + n + i) : 0.0f);
        if (a.residual && n < a.rc)
            dp_add_residual<T, VO>(a, dp_residual_at<T>(a, m), n, v);
#pragma unroll
        for (int i = 0; i < VO; i++)
            v[i] = activate(v[i], a.act, a.alpha, n + i);
        stv(static_cast<T *>(a.y) + (size_t)m * a.cout + n, v, VO);
    }
}

/* ---- fp16 on the tensor cores -------------------------------------------- */

/* Shared memory of dwpw_tc: the depthwise filter [kh*kw][kp] and the tile
 * [bm][kp+8] and the pointwise filter's rows the block uses [rows][kp+8]
 * in halves (all np = cout rounded up to 8, or one 64-channel slice when
 * the blocks split the output channels, dp_tc_rows), then the epilogue
 * tile [bm][cld] floats (cld: one 64-channel slice or less, + 4). */
static __host__ __device__ inline int dp_np(int cout)
{
    return (cout + 7) / 8 * 8;
}

static __host__ __device__ inline int dp_cld(int cout)
{
    return min(DP_BN, dp_np(cout)) + 4;
}

static __host__ __device__ inline int dp_tc_rows(int cout, int split)
{
    return split > 1 ? min(DP_BN, dp_np(cout)) : dp_np(cout);
}

static __host__ __device__ inline size_t dp_tc_smem_halves(int bm, int kp, int taps, int rows)
{
    return (size_t)taps * kp + (size_t)(bm + rows) * (kp + 8);
}

static __host__ __device__ inline size_t dp_tc_smem(int bm, int kp, int taps, int cout, int split)
{
    return (dp_tc_smem_halves(bm, kp, taps, dp_tc_rows(cout, split)) * 2 + 15) / 16 * 16 +
           (size_t)bm * dp_cld(cout) * 4;
}

/* BM rows per block: BM / 32 warps along the rows, the rest along 64
 * output channels, each warp 32 rows x NJ * 8 channels. SPLIT: gridDim.y
 * is the number of 64-channel slices of the output, and a block computes
 * slice blockIdx.y and stages only its rows of the pointwise filter (a
 * template parameter: the kernel without it stays as fast as before). */
template <int V, int BM, int K, int VO, bool SPLIT>
__global__ void __launch_bounds__(DP_THREADS, VO == 8 ? 4 : 3) dwpw_tc(cuda_dwpw_args a, int kp)
{
    extern __shared__ __align__(16) unsigned char dp_smem[];
    constexpr int WARPS_M = BM / 32, WARPS_N = 8 / WARPS_M, NJ = DP_BN / (8 * WARPS_N);
    const int ld = kp + 8; /* halves per row: an odd multiple of 16 bytes, conflict-free */
    const int taps = a.kh * a.kw, np = dp_np(a.cout), cld = dp_cld(a.cout);
    const int n_first = SPLIT ? blockIdx.y * DP_BN : 0;
    const int rows = dp_tc_rows(a.cout, SPLIT ? 2 : 1), n_end = SPLIT ? n_first + 1 : a.cout;
    __half *wt = reinterpret_cast<__half *>(dp_smem);
    __half *as = wt + taps * kp;
    __half *bs = as + BM * ld;
    float *cs = reinterpret_cast<float *>(
        dp_smem + (dp_tc_smem_halves(BM, kp, taps, rows) * 2 + 15) / 16 * 16);
    const int M = a.batch * a.oh * a.ow, m0 = blockIdx.x * BM;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, t = lane % 4;
    const int wm = (warp / WARPS_N) * 32, wn = (warp % WARPS_N) * NJ * 8;

    /* Both filters start arriving while the depthwise filter is waited for
     * and the tile computed. */
    dp_copy_matrix<__half, V>(wt, kp, static_cast<const __half *>(a.dw_w), taps, taps, a.c, kp);
    dp_copy_matrix<__half, V>(bs, ld, static_cast<const __half *>(a.pw_w) + (size_t)n_first * a.c,
                              rows, a.cout - n_first, a.c, kp);
    pdl_begin(); /* the filters above are constants */
    dp_copy_wait();
    __syncthreads();
    dp_stage<__half, __half, V, K>(a, wt, as, ld, kp, m0, BM, M);
    __syncthreads();
    for (int n0 = n_first; n0 < n_end; n0 += DP_BN) {
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
                if (n0 + wn + 8 * j >= np) /* past cout: the warp skips it */
                    continue;
                const __half *p = bs + (n0 - n_first + wn + 8 * j + g) * ld + kb + 2 * t;
                bf[j][0] = *reinterpret_cast<const unsigned *>(p);
                bf[j][1] = *reinterpret_cast<const unsigned *>(p + 8);
            }
#pragma unroll
            for (int i = 0; i < 2; i++)
#pragma unroll
                for (int j = 0; j < NJ; j++)
                    if (n0 + wn + 8 * j < np)
                        mma_16816(acc[i][j], af[i], bf[j]);
        }
        if (n0 != n_first)
            __syncthreads(); /* the previous slice's epilogue is done with cs */
        /* Accumulator (i, j): rows wm+16i+g (+8), columns wn+8j+2t, +1. */
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int j = 0; j < NJ; j++)
#pragma unroll
                for (int h = 0; h < 2; h++)
                    if (n0 + wn + 8 * j < np)
                        *reinterpret_cast<float2 *>(cs + (wm + 16 * i + g + 8 * h) * cld + wn +
                                                    8 * j + 2 * t) =
                            make_float2(acc[i][j][2 * h], acc[i][j][2 * h + 1]);
        __syncthreads();
        dp_epilogue<__half, VO>(a, cs, cld, m0, BM, M, n0);
    }
}

/* ---- FFMA ------------------------------------------------------------------ */

#define DP_SIMT_BM 64

/* Shared memory of dwpw_simt: the depthwise filter [kh*kw][kp] in T, the
 * tile [64][kp+4] floats. */
static size_t dp_simt_smem(int kp, int taps, size_t es)
{
    return ((size_t)taps * kp * es + 15) / 16 * 16 + (size_t)DP_SIMT_BM * (kp + 4) * 4;
}

template <typename T, int V, int K>
__global__ void __launch_bounds__(DP_THREADS)
dwpw_simt(cuda_dwpw_args a, int kp)
{
    extern __shared__ __align__(16) unsigned char dp_smem[];
    const int taps = a.kh * a.kw;
    const int lda = kp + 4; /* floats: rows stay 16-byte aligned */
    T *wt = reinterpret_cast<T *>(dp_smem);
    float *as = reinterpret_cast<float *>(dp_smem + ((size_t)taps * kp * sizeof(T) + 15) / 16 * 16);
    const int M = a.batch * a.oh * a.ow, m0 = blockIdx.x * DP_SIMT_BM;
    const int tx = threadIdx.x % 16, ty = threadIdx.x / 16;
    const T *w = static_cast<const T *>(a.pw_w);

    dp_copy_matrix<T, V>(wt, kp, static_cast<const T *>(a.dw_w), taps, taps, a.c, kp);
    pdl_begin(); /* the filters above are constants */
    dp_copy_wait();
    __syncthreads();
    dp_stage<T, float, V, K>(a, wt, as, lda, kp, m0, DP_SIMT_BM, M);
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
                    v += dp_residual1<T>(a, m, n);
                st(static_cast<T *>(a.y) + (size_t)m * a.cout + n, activate(v, a.act, a.alpha, n));
            }
        }
    }
}

/* ---- launch ------------------------------------------------------------------ */

/* Shared memory for 128-row tiles to keep two blocks per SM. */
#define DP_BIG_SMEM (110 * 1024)

/* When 32-row tiles are fewer than the SMs (small batches), the blocks
 * also split the output channels over gridDim.y, a 64-channel slice each:
 * more blocks, each staging a slice of the pointwise filter. Every slice
 * computes the depthwise tile again, which costs more than it gains once
 * the tiles fill the GPU (H100, batch 128: 3-7% slower per model; batch 1:
 * 8-17% faster). */
template <int V, int K, int VO>
static cudaError_t launch_tc(const cuda_dwpw_args *a, int M, int kp, cudaStream_t s)
{
    const int taps = a->kh * a->kw;
    int sms = 0;
    cudaError_t e = cuda_ops_sm_count(&sms);
    if (e != cudaSuccess)
        return e;
    size_t smem = dp_tc_smem(128, kp, taps, a->cout, 1);
    if (cuda_ops_blocks(M, 128) >= 2u * sms && smem <= DP_BIG_SMEM)
        return cuda_ops_start(dwpw_tc<V, 128, K, VO, false>, cuda_ops_blocks(M, 128), DP_THREADS,
                              smem, s, *a, kp);
    unsigned blocks = cuda_ops_blocks(M, 32), split = 1;
    if (blocks < (unsigned)sms)
        split = (unsigned)((dp_np(a->cout) + DP_BN - 1) / DP_BN);
    if (split > 1)
        return cuda_ops_start(dwpw_tc<V, 32, K, VO, true>, dim3(blocks, split), DP_THREADS,
                              dp_tc_smem(32, kp, taps, a->cout, (int)split), s, *a, kp);
    return cuda_ops_start(dwpw_tc<V, 32, K, VO, false>, blocks, DP_THREADS,
                          dp_tc_smem(32, kp, taps, a->cout, 1), s, *a, kp);
}

template <int V, int K>
static cudaError_t launch_tc_vo(const cuda_dwpw_args *a, int M, int kp, cudaStream_t s)
{
    if (a->cout % 8 == 0 && ((size_t)a->y & 15) == 0)
        return launch_tc<V, K, 8>(a, M, kp, s);
    if (a->cout % 4 == 0 && ((size_t)a->y & 7) == 0)
        return launch_tc<V, K, 4>(a, M, kp, s);
    return launch_tc<V, K, 2>(a, M, kp, s);
}

template <int V>
static cudaError_t launch_tc_k(const cuda_dwpw_args *a, int M, int kp, cudaStream_t s)
{
    if (a->kh == 3 && a->kw == 3 && a->dh == 1 && a->dw == 1)
        return launch_tc_vo<V, 3>(a, M, kp, s);
    return launch_tc_vo<V, 0>(a, M, kp, s);
}

template <typename T, int V>
static cudaError_t launch_simt(const cuda_dwpw_args *a, int M, int kp, cudaStream_t s)
{
    size_t smem = dp_simt_smem(kp, a->kh * a->kw, sizeof(T));
    unsigned blocks = cuda_ops_blocks(M, DP_SIMT_BM);
    if (a->kh == 3 && a->kw == 3 && a->dh == 1 && a->dw == 1)
        return cuda_ops_start(dwpw_simt<T, V, 3>, blocks, DP_THREADS, smem, s, *a, kp);
    return cuda_ops_start(dwpw_simt<T, V, 0>, blocks, DP_THREADS, smem, s, *a, kp);
}

/* The tensor-core form: fp16, even channel counts (pairs of halves in the
 * fragments and the residual), 4-byte aligned buffers. */
static bool dp_tc_ok(const cuda_dwpw_args *a)
{
    size_t addr = (size_t)a->x | (size_t)a->dw_w | (size_t)a->pw_w | (size_t)a->y |
                  (size_t)a->residual;
    return a->prec == CUDA_PREC_F16 && a->c % 2 == 0 && a->cout % 2 == 0 && (addr & 3) == 0;
}

extern "C" bool cuda_dwpw_fits(const cuda_dwpw_args *a)
{
    int kp = (a->c + 15) / 16 * 16, taps = a->kh * a->kw;
    if (cuda_dwpw_mma_ok(a))
        return true;
    if (dp_tc_ok(a))
        return dp_tc_smem(32, kp, taps, a->cout, 1) <= CUDA_DWPW_SMEM_MAX;
    return dp_simt_smem(kp, taps, cuda_prec_size(a->prec)) <= CUDA_DWPW_SMEM_MAX;
}

extern "C" cudaError_t cuda_launch_dwpw(const cuda_dwpw_args *a, cudaStream_t s)
{
    const int M = a->batch * a->oh * a->ow, kp = (a->c + 15) / 16 * 16;
    if (a->choice_batch < a->batch)
        return cudaErrorInvalidValue;
    if (M <= 0 || a->cout <= 0)
        return cudaSuccess;
    if (!cuda_dwpw_fits(a))
        return cudaErrorInvalidValue;
    if (cuda_dwpw_mma_ok(a))
        return cuda_launch_dwpw_mma(a, s);
    int es = (int)cuda_prec_size(a->prec);
    int V = cuda_ops_vec(es, a->c, (size_t)a->x | (size_t)a->dw_w | (size_t)a->pw_w);
    if (dp_tc_ok(a)) {
        if (V == 8)
            return launch_tc_k<8>(a, M, kp, s);
        if (V == 4)
            return launch_tc_k<4>(a, M, kp, s);
        return launch_tc_k<2>(a, M, kp, s); /* c is even */
    }
    if (a->prec == CUDA_PREC_F16) {
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
