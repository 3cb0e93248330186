/* Depthwise convolution, memory-bound: each thread computes one output pixel
 * for 16 bytes of channels (4 floats or 8 halves), so a warp reads and
 * writes contiguous channel runs with 16-byte accesses; the filter
 * ([kh][kw][C], a few KB) stays in L1. Odd channel counts and depth
 * multipliers above 1 take the scalar kernel (one thread per output
 * element, channel fastest). Large grids of 3x3 and 5x5 windows at stride
 * 1 or 2 take dwconv_tile (tiles staged in shared memory,
 * cuda_ops_dwconv_tile.cu); all sum the same taps in the same order, so
 * they give the same bits. */
#include "engine/cuda_ops_device.h"

/* V depthwise sums of channels c0.. at output element o: + bias, +
 * residual, the activation, stored (dwconv_vec, dwconv_vec3). */
template <typename T>
static __device__ __forceinline__ void dw_vec_store(const cuda_conv_args &a, float *acc, size_t o,
                                                    int c0, const int V)
{
    if (a.bias)
#pragma unroll
        for (int i = 0; i < vec16<T>::n; i++)
            if (i < V)
                acc[i] += __ldg(a.bias + c0 + i);
    if (a.residual) {
        float r[vec16<T>::n];
        ldv(static_cast<const T *>(a.residual) + o, r, V);
#pragma unroll
        for (int i = 0; i < vec16<T>::n; i++)
            if (i < V)
                acc[i] += r[i];
    }
#pragma unroll
    for (int i = 0; i < vec16<T>::n; i++)
        if (i < V)
            acc[i] = activate(acc[i], a.act, a.alpha, c0 + i);
    stv(static_cast<T *>(a.y) + o, acc, V);
}

template <typename T>
static __device__ __forceinline__ void dwconv_vec_body(const cuda_conv_args &a, const int V)
{
    const int groups = a.cout / V;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= a.batch * a.oh * a.ow * groups)
        return;
    int c0 = (idx % groups) * V, p = idx / groups;
    int ox = p % a.ow, q = p / a.ow;
    int oy = q % a.oh, b = q / a.oh;
    const T *x = static_cast<const T *>(a.x) + (size_t)b * a.ih * a.iw * a.cin + c0;
    const T *w = static_cast<const T *>(a.w) + c0;
    float acc[vec16<T>::n];
#pragma unroll
    for (int i = 0; i < V; i++)
        acc[i] = 0.0f;
    for (int ky = 0; ky < a.kh; ky++) {
        int iy = oy * a.sh - a.pt + ky * a.dh;
        if (iy < 0 || iy >= a.ih)
            continue;
        for (int kx = 0; kx < a.kw; kx++) {
            int ix = ox * a.sw - a.pl + kx * a.dw;
            if (ix < 0 || ix >= a.iw)
                continue;
            float xv[vec16<T>::n], wv[vec16<T>::n];
            ldv(x + ((size_t)iy * a.iw + ix) * a.cin, xv, V);
            ldv(w + (size_t)(ky * a.kw + kx) * a.cout, wv, V);
#pragma unroll
            for (int i = 0; i < V; i++)
                acc[i] = fmaf(xv[i], wv[i], acc[i]);
        }
    }
    dw_vec_store<T>(a, acc, (size_t)p * a.cout + c0, c0, V);
}

/* V: elements per thread, 16, 8 or 4 bytes of them (the widest that the
 * channel count and alignment allow). */
template <typename T>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
dwconv_vec(cuda_conv_args a, int V)
{
    pdl_begin();
    if (V == vec16<T>::n)
        dwconv_vec_body<T>(a, vec16<T>::n);
    else if (V == vec16<T>::n / 2)
        dwconv_vec_body<T>(a, vec16<T>::n / 2);
    else
        dwconv_vec_body<T>(a, vec16<T>::n / 4);
}

/* 16 bytes (vec16<T>::n elements) as floats, as ld16 converts them. */
static __device__ __forceinline__ void unpack16(const uint4 &q, float *v, const float *)
{
    const float4 f = *reinterpret_cast<const float4 *>(&q);
    v[0] = f.x;
    v[1] = f.y;
    v[2] = f.z;
    v[3] = f.w;
}

static __device__ __forceinline__ void unpack16(const uint4 &q, float *v, const __half *)
{
    unpack16(q, v);
}

/* dwconv_vec for a 3x3 window and whole 16-byte vectors (the small images
 * that dwconv_rows leaves, e.g. BlazePose's 4x4 and 2x2 x 288 tail): the
 * window's inputs are all requested before the first FMA, so a thread
 * waits out one load latency, not one per tap (dwconv_vec's loads sit
 * behind its per-tap tests); the filter taps (a few KB, in L1) are read
 * per tap, which keeps 58 registers (4 blocks an SM). The sum is
 * dwconv_vec's: fmaf over the taps inside the input in ky, kx order from
 * +0, then + bias, + residual, the activation, one rounding. */
template <typename T>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
dwconv_vec3(cuda_conv_args a)
{
    constexpr int V = vec16<T>::n;
    pdl_begin();
    const int groups = a.cout / V;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= a.batch * a.oh * a.ow * groups)
        return;
    int c0 = (idx % groups) * V, p = idx / groups;
    int ox = p % a.ow, q = p / a.ow;
    int oy = q % a.oh, b = q / a.oh;
    const T *x = static_cast<const T *>(a.x) + (size_t)b * a.ih * a.iw * a.cin + c0;
    const T *w = static_cast<const T *>(a.w) + c0;
    uint4 xr[9];
    bool in[9];
#pragma unroll
    for (int t = 0; t < 9; t++) {
        const int iy = oy * a.sh - a.pt + (t / 3) * a.dh, ix = ox * a.sw - a.pl + (t % 3) * a.dw;
        in[t] = iy >= 0 && iy < a.ih && ix >= 0 && ix < a.iw;
        xr[t] = make_uint4(0, 0, 0, 0);
        if (in[t])
            xr[t] = __ldg(reinterpret_cast<const uint4 *>(x + ((size_t)iy * a.iw + ix) * a.cin));
    }
    float acc[V];
#pragma unroll
    for (int i = 0; i < V; i++)
        acc[i] = 0.0f;
#pragma unroll
    for (int t = 0; t < 9; t++) {
        if (!in[t])
            continue;
        float xv[V], wv[V];
        unpack16(xr[t], xv, x);
        unpack16(__ldg(reinterpret_cast<const uint4 *>(w + (size_t)t * a.cout)), wv, x);
#pragma unroll
        for (int i = 0; i < V; i++)
            acc[i] = fmaf(xv[i], wv[i], acc[i]);
    }
    dw_vec_store<T>(a, acc, (size_t)p * a.cout + c0, c0, V);
}

template <typename T>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
dwconv_scalar(cuda_conv_args a)
{
    pdl_begin();
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= a.batch * a.oh * a.ow * a.cout)
        return;
    int c = idx % a.cout, p = idx / a.cout;
    int ox = p % a.ow, q = p / a.ow;
    int oy = q % a.oh, b = q / a.oh;
    int ci = c / a.mult;
    const T *x = static_cast<const T *>(a.x) + (size_t)b * a.ih * a.iw * a.cin + ci;
    const T *w = static_cast<const T *>(a.w) + c;
    float acc = 0.0f;
    for (int ky = 0; ky < a.kh; ky++) {
        int iy = oy * a.sh - a.pt + ky * a.dh;
        if (iy < 0 || iy >= a.ih)
            continue;
        for (int kx = 0; kx < a.kw; kx++) {
            int ix = ox * a.sw - a.pl + kx * a.dw;
            if (ix < 0 || ix >= a.iw)
                continue;
            acc = fmaf(ld(x + ((size_t)iy * a.iw + ix) * a.cin),
                       ld(w + (size_t)(ky * a.kw + kx) * a.cout), acc);
        }
    }
    if (a.bias)
        acc += __ldg(a.bias + c);
    if (a.residual)
        acc += ld(static_cast<const T *>(a.residual) + idx);
    st(static_cast<T *>(a.y) + idx, activate(acc, a.act, a.alpha, c));
}

/* Rows of outputs: one thread computes DW_ROW_R outputs along W of one
 * 16-byte channel vector, a K x K window at stride S (dilation 1). Per
 * window row it loads the K filter vectors once (not once per output) and
 * each input pixel of the row's span once, adding it to every output whose
 * window holds it; dwconv_vec's index arithmetic, filter loads and
 * conversions per output made it instruction-bound. Each output's sum runs
 * in dwconv_vec's order (ky, then kx, skipping taps outside the input), so
 * the results are its own. */
#define DW_ROW_R 4

template <typename T, int K, int S>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
dwconv_rows(cuda_conv_args a)
{
    pdl_begin();
    const int V = vec16<T>::n, R = DW_ROW_R, NX = (R - 1) * S + K;
    const int groups = a.cout / V, xblocks = (a.ow + R - 1) / R;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= a.batch * a.oh * xblocks * groups)
        return;
    int c0 = (idx % groups) * V, p = idx / groups;
    int xb = p % xblocks, q = p / xblocks;
    int oy = q % a.oh, b = q / a.oh;
    const int ox0 = xb * R, ix0 = ox0 * S - a.pl;
    const T *x = static_cast<const T *>(a.x) + (size_t)b * a.ih * a.iw * a.cin + c0;
    const T *w = static_cast<const T *>(a.w) + c0;
    float acc[R][V];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int i = 0; i < V; i++)
            acc[r][i] = 0.0f;
    for (int ky = 0; ky < K; ky++) {
        int iy = oy * S - a.pt + ky;
        if (iy < 0 || iy >= a.ih)
            continue;
        float wv[K][V];
#pragma unroll
        for (int kx = 0; kx < K; kx++)
            ld16(w + (size_t)(ky * K + kx) * a.cout, wv[kx]);
        const T *xr = x + (size_t)iy * a.iw * a.cin;
#pragma unroll
        for (int j = 0; j < NX; j++) {
            int ix = ix0 + j;
            if (ix < 0 || ix >= a.iw)
                continue;
            float xv[V];
            ld16(xr + (size_t)ix * a.cin, xv);
            dw_tap_column<K, S, R, V>(j, xv, wv, acc);
        }
    }
    float bv[V];
#pragma unroll
    for (int i = 0; i < V; i++)
        bv[i] = a.bias ? __ldg(a.bias + c0 + i) : 0.0f;
#pragma unroll
    for (int r = 0; r < R; r++) {
        int ox = ox0 + r;
        if (ox >= a.ow)
            break;
        size_t o = (((size_t)b * a.oh + oy) * a.ow + ox) * a.cout + c0;
        if (a.bias)
#pragma unroll
            for (int i = 0; i < V; i++)
                acc[r][i] += bv[i];
        if (a.residual) {
            float rv[V];
            ld16(static_cast<const T *>(a.residual) + o, rv);
#pragma unroll
            for (int i = 0; i < V; i++)
                acc[r][i] += rv[i];
        }
#pragma unroll
        for (int i = 0; i < V; i++)
            acc[r][i] = activate(acc[r][i], a.act, a.alpha, c0 + i);
        st16(static_cast<T *>(a.y) + o, acc[r]);
    }
}

/* True where dwconv_rows takes the convolution (and dwconv_tile, where a
 * tile fits: cuda_ops_dwconv_tile.cu): a square 3x3 or 5x5 window at stride 1 or 2 without dilation, whole 16-byte
 * vectors (V elements). */
static bool dw_rows_shape(const cuda_conv_args *a, int V, int es)
{
    return V * es == 16 && a->kh == a->kw && (a->kh == 3 || a->kh == 5) && a->sh == a->sw &&
           (a->sh == 1 || a->sh == 2) && a->dh == 1 && a->dw == 1 && a->ow >= DW_ROW_R;
}

/* dwconv_rows' threads, or 0 where it does not take the convolution: its
 * shape (dw_rows_shape) and enough threads to fill a large GPU (a small
 * grid keeps dwconv_vec's four times as many threads). */
#define DW_ROW_MIN_THREADS (128 * CUDA_OPS_THREADS * 2)

static long long dw_rows_threads(const cuda_conv_args *a, int V, int es)
{
    if (!dw_rows_shape(a, V, es))
        return 0;
    long long n = (long long)a->batch * a->oh * ((a->ow + DW_ROW_R - 1) / DW_ROW_R) * (a->cout / V);
    return n >= DW_ROW_MIN_THREADS ? n : 0;
}

template <typename T>
static cudaError_t dw_rows_start(const cuda_conv_args *a, long long n, cudaStream_t s)
{
    unsigned blocks = cuda_ops_blocks(n, CUDA_OPS_THREADS);
    if (a->kh == 3)
        return a->sh == 1
                   ? cuda_ops_start(dwconv_rows<T, 3, 1>, blocks, CUDA_OPS_THREADS, 0, s, *a)
                   : cuda_ops_start(dwconv_rows<T, 3, 2>, blocks, CUDA_OPS_THREADS, 0, s, *a);
    return a->sh == 1 ? cuda_ops_start(dwconv_rows<T, 5, 1>, blocks, CUDA_OPS_THREADS, 0, s, *a)
                      : cuda_ops_start(dwconv_rows<T, 5, 2>, blocks, CUDA_OPS_THREADS, 0, s, *a);
}

extern "C" cudaError_t cuda_launch_dwconv_as(const cuda_conv_args *a, cuda_dw_kernel k,
                                             cudaStream_t s)
{
    int es = a->prec == CUDA_PREC_F16 ? 2 : 4;
    size_t addr = (size_t)a->x | (size_t)a->w | (size_t)a->y | (size_t)a->residual;
    int V = a->mult == 1 ? cuda_ops_vec(es, a->cout, addr) : 0;
    const bool f16 = a->prec == CUDA_PREC_F16, automatic = k == CUDA_DW_AUTO;
    if (k == CUDA_DW_AUTO && V && dw_rows_threads(a, V, es)) {
        /* the grids that dwconv_rows took: tiles, where one fits */
        cudaError_t e = cuda_launch_dwconv_tile(a, s);
        if (e != cudaErrorNotSupported)
            return e;
        k = CUDA_DW_ROWS;
    } else if (k == CUDA_DW_AUTO)
        k = V ? CUDA_DW_VEC : CUDA_DW_SCALAR;
    if (k == CUDA_DW_TILE)
        return cuda_launch_dwconv_tile(a, s);
    if (k == CUDA_DW_ROWS) {
        if (!V || !dw_rows_shape(a, V, es))
            return cudaErrorNotSupported;
        long long n = (long long)a->batch * a->oh * ((a->ow + DW_ROW_R - 1) / DW_ROW_R) *
                      (a->cout / V);
        return f16 ? dw_rows_start<__half>(a, n, s) : dw_rows_start<float>(a, n, s);
    }
    if (k == CUDA_DW_VEC && !V)
        return cudaErrorNotSupported;
    long long total = (long long)a->batch * a->oh * a->ow * (V ? a->cout / V : a->cout);
    unsigned blocks = cuda_ops_blocks(total, CUDA_OPS_THREADS);
    /* 3x3 with whole 16-byte vectors where no rows kernel takes it (small
     * images): dwconv_vec3, dwconv_vec's sums with every tap's loads first. */
    if (k == CUDA_DW_VEC && automatic && V * es == 16 && a->kh == 3 && a->kw == 3)
        return f16 ? cuda_ops_start(dwconv_vec3<__half>, blocks, CUDA_OPS_THREADS, 0, s, *a)
                   : cuda_ops_start(dwconv_vec3<float>, blocks, CUDA_OPS_THREADS, 0, s, *a);
    if (k == CUDA_DW_VEC)
        return f16 ? cuda_ops_start(dwconv_vec<__half>, blocks, CUDA_OPS_THREADS, 0, s, *a, V)
                   : cuda_ops_start(dwconv_vec<float>, blocks, CUDA_OPS_THREADS, 0, s, *a, V);
    return f16 ? cuda_ops_start(dwconv_scalar<__half>, blocks, CUDA_OPS_THREADS, 0, s, *a)
               : cuda_ops_start(dwconv_scalar<float>, blocks, CUDA_OPS_THREADS, 0, s, *a);
}

extern "C" cudaError_t cuda_launch_dwconv(const cuda_conv_args *a, cudaStream_t s)
{
    return cuda_launch_dwconv_as(a, CUDA_DW_AUTO, s);
}
