/* GEMM-form convolutions with few output channels (N <= CUDA_DOT_MAX_N):
 * the detection heads' 1-channel score maps, FaceMesh's face flag. The tiled
 * GEMMs would spend 63 of every 64 columns of their tiles on zeros; here one
 * thread computes the N outputs of one row (pixel, or item for a window
 * covering the input) as dot products over K, reading the row with the
 * widest vector loads its length and alignment allow and the filter (N x K,
 * as float) from shared memory. */
#include "engine/cuda_ops_device.h"

template <typename T, int V, int N>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
conv_dot(cuda_conv_args a, int rows, int K)
{
    extern __shared__ float dot_w[]; /* [N][K] */
    const T *w = static_cast<const T *>(a.w);
    for (int i = threadIdx.x; i < N * K; i += blockDim.x)
        dot_w[i] = ld(w + i);
    pdl_begin(); /* the filter above is a constant */
    __syncthreads();
    int m = blockIdx.x * blockDim.x + threadIdx.x;
    if (m >= rows)
        return;
    const T *x = static_cast<const T *>(a.x) + (size_t)m * K;
    float acc[N];
#pragma unroll
    for (int n = 0; n < N; n++)
        acc[n] = a.bias ? __ldg(a.bias + n) : 0.0f;
    for (int k = 0; k < K; k += V) {
        float xv[V];
        ldv(x + k, xv, V);
#pragma unroll
        for (int n = 0; n < N; n++)
#pragma unroll
            for (int i = 0; i < V; i++)
                acc[n] = fmaf(xv[i], dot_w[n * K + k + i], acc[n]);
    }
    T *y = static_cast<T *>(a.y) + (size_t)m * N;
    const T *r = static_cast<const T *>(a.residual);
#pragma unroll
    for (int n = 0; n < N; n++) {
        float v = acc[n] + (r ? ld(r + (size_t)m * N + n) : 0.0f);
        st(y + n, activate(v, a.act, a.alpha, n));
    }
}

template <typename T, int V>
static cudaError_t dot_n(const cuda_conv_args *a, int rows, int K, cudaStream_t s)
{
    unsigned blocks = cuda_ops_blocks(rows, CUDA_OPS_THREADS);
    size_t smem = (size_t)a->cout * K * sizeof(float);
    switch (a->cout) {
    case 1:
        return cuda_ops_start(conv_dot<T, V, 1>, blocks, CUDA_OPS_THREADS, smem, s, *a, rows, K);
    case 2:
        return cuda_ops_start(conv_dot<T, V, 2>, blocks, CUDA_OPS_THREADS, smem, s, *a, rows, K);
    case 3:
        return cuda_ops_start(conv_dot<T, V, 3>, blocks, CUDA_OPS_THREADS, smem, s, *a, rows, K);
    default:
        return cuda_ops_start(conv_dot<T, V, 4>, blocks, CUDA_OPS_THREADS, smem, s, *a, rows, K);
    }
}

extern "C" bool cuda_conv_dot_fits(int n, int k)
{
    return n >= 1 && n <= CUDA_DOT_MAX_N && (size_t)n * k * sizeof(float) <= 48 * 1024;
}

/* Below this many rows at choice_batch items, a long dot product (K
 * from DOT_WDOT_MIN_K) goes to gemm_wdot's warps: one thread a row would
 * leave the GPU nearly idle (BlazePose's pose flag: 128 items, K = 1152,
 * one block). By the item's shape, whatever the batch: gemm_wdot's sums are
 * ordered differently from conv_dot's. */
#define DOT_WDOT_MAX_ROWS (16 * CUDA_OPS_THREADS)
#define DOT_WDOT_MIN_K 256

static bool dot_goes_wdot(const cuda_conv_args *a, int K)
{
    const long long item = (long long)a->oh * a->ow;
    return item * a->choice_batch < DOT_WDOT_MAX_ROWS && K >= DOT_WDOT_MIN_K &&
           cuda_gemm_wdot_pays((int)item, a->choice_batch, K, a->cout);
}

extern "C" cudaError_t cuda_launch_conv_dot(const cuda_conv_args *a, cudaStream_t s)
{
    if (a->choice_batch < a->batch)
        return cudaErrorInvalidValue;
    int rows = a->batch * a->oh * a->ow, K = a->kh * a->kw * a->cin;
    if (rows == 0)
        return cudaSuccess;
    if (dot_goes_wdot(a, K))
        return cuda_launch_gemm_wdot(a, s);
    int es = a->prec == CUDA_PREC_F16 ? 2 : 4;
    int V = cuda_ops_vec(es, K, (size_t)a->x);
    if (a->prec == CUDA_PREC_F16) {
        if (V == 8)
            return dot_n<__half, 8>(a, rows, K, s);
        if (V == 4)
            return dot_n<__half, 4>(a, rows, K, s);
        if (V == 2)
            return dot_n<__half, 2>(a, rows, K, s);
        return dot_n<__half, 1>(a, rows, K, s);
    }
    if (V == 4)
        return dot_n<float, 4>(a, rows, K, s);
    if (V == 2)
        return dot_n<float, 2>(a, rows, K, s);
    return dot_n<float, 1>(a, rows, K, s);
}

/* ---- GEMMs too small for the tiles: dot products by warps ----------------
 * Y[M][N] = act(X[M][K] * W[N][K]^T + bias + R) where the 64x64 tiles of
 * gemm_simt would make a few blocks on a GPU of a hundred SMs (the dense
 * heads of BlazePose: M = items, K = 2*2*288, N = 195 or 117, odd). A block
 * takes WDOT_MB rows of X into shared memory (as float) and WDOT_NB columns
 * of W; each warp computes the WDOT_MB outputs of one column at a time, its
 * lanes striding over K with vector loads of W and adding their partial sums
 * with shuffles (fp32 throughout: the sum is gemm_simt's, reordered). */
#define WDOT_MB 4
#define WDOT_NB 32
#define WDOT_SMEM_MAX (48 * 1024)

/* v elements (1, 2 or 4, aligned to that) of a row in shared memory. */
static __device__ __forceinline__ void wdot_row(const float *p, float *v, const int n)
{
    if (n == 4) {
        float4 q = *reinterpret_cast<const float4 *>(p);
        v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
    } else if (n == 2) {
        float2 q = *reinterpret_cast<const float2 *>(p);
        v[0] = q.x, v[1] = q.y;
    } else {
        v[0] = *p;
    }
}

/* V: elements of W per lane and load, 8 bytes of them at most, so that the
 * lanes' shared-memory reads of X (V floats each) do not conflict. */
template <typename T, int V>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
gemm_wdot(const T *__restrict__ x, const T *__restrict__ w, const float *__restrict__ bias,
          const T *__restrict__ res, const float *__restrict__ alpha, T *__restrict__ y, int M,
          int K, int N, int act)
{
    extern __shared__ float wdot_x[]; /* [WDOT_MB][K] */
    pdl_begin();
    const int m0 = blockIdx.x * WDOT_MB, n0 = blockIdx.y * WDOT_NB;
    for (int i = threadIdx.x; i < WDOT_MB * K; i += blockDim.x) {
        int m = m0 + i / K;
        wdot_x[i] = m < M ? ld(x + (size_t)m0 * K + i) : 0.0f;
    }
    __syncthreads();
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
    for (int n = n0 + warp; n < n0 + WDOT_NB && n < N; n += warps) {
        const T *wr = w + (size_t)n * K;
        float acc[WDOT_MB];
#pragma unroll
        for (int r = 0; r < WDOT_MB; r++)
            acc[r] = 0.0f;
        for (int k = lane * V; k < K; k += 32 * V) {
            float wv[V];
            ldv(wr + k, wv, V);
#pragma unroll
            for (int r = 0; r < WDOT_MB; r++) {
                float xv[V];
                wdot_row(wdot_x + r * K + k, xv, V);
#pragma unroll
                for (int i = 0; i < V; i++)
                    acc[r] = fmaf(xv[i], wv[i], acc[r]);
            }
        }
#pragma unroll
        for (int r = 0; r < WDOT_MB; r++)
#pragma unroll
            for (int o = 16; o > 0; o /= 2)
                acc[r] += __shfl_xor_sync(0xffffffffu, acc[r], o);
        if (lane < WDOT_MB) {
            /* Lane r stores row m0 + r (acc indexed by constants only). */
            float v = acc[0];
#pragma unroll
            for (int r = 1; r < WDOT_MB; r++)
                v = lane == r ? acc[r] : v;
            int m = m0 + lane;
            if (m < M) {
                size_t o = (size_t)m * N + n;
                if (bias)
                    v += __ldg(bias + n);
                if (res)
                    v += ld(res + o);
                st(y + o, activate(v, act, alpha, n));
            }
        }
    }
}

static bool wdot_fits(int K)
{
    return K > 0 && (size_t)WDOT_MB * K * sizeof(float) <= WDOT_SMEM_MAX;
}

extern "C" bool cuda_gemm_wdot_pays(int item_rows, int choice_batch, int K, int N)
{
    /* gemm_simt's grid of 64x64 tiles against a hundred SMs, at
     * choice_batch items whatever the batch. */
    const long long M = (long long)item_rows * choice_batch;
    const long long tiles = (M + 63) / 64 * ((N + 63) / 64);
    return item_rows > 0 && N > 0 && tiles < 128 && wdot_fits(K);
}

template <typename T, int V>
static cudaError_t wdot_start(const cuda_conv_args *a, int M, int K, int N, cudaStream_t s)
{
    dim3 grid((M + WDOT_MB - 1) / WDOT_MB, (N + WDOT_NB - 1) / WDOT_NB);
    size_t smem = (size_t)WDOT_MB * K * sizeof(float);
    return cuda_ops_start(gemm_wdot<T, V>, grid, CUDA_OPS_THREADS, smem, s, (const T *)a->x,
                          (const T *)a->w, a->bias, (const T *)a->residual, a->alpha, (T *)a->y, M,
                          K, N, a->act);
}

extern "C" cudaError_t cuda_launch_gemm_wdot(const cuda_conv_args *a, cudaStream_t s)
{
    int M = a->batch * a->oh * a->ow, K = a->kh * a->kw * a->cin, N = a->cout;
    if (!wdot_fits(K) || N <= 0)
        return cudaErrorInvalidValue;
    if (M == 0)
        return cudaSuccess;
    int es = a->prec == CUDA_PREC_F16 ? 2 : 4;
    /* Rows of W start at n * K: K and the base decide the vector width,
     * 8 bytes at most. */
    int V = cuda_ops_vec(es, K, (size_t)a->w);
    V = V * es > 8 ? 8 / es : V;
    if (a->prec == CUDA_PREC_F16) {
        if (V == 4)
            return wdot_start<__half, 4>(a, M, K, N, s);
        if (V == 2)
            return wdot_start<__half, 2>(a, M, K, N, s);
        return wdot_start<__half, 1>(a, M, K, N, s);
    }
    if (V == 2)
        return wdot_start<float, 2>(a, M, K, N, s);
    return wdot_start<float, 1>(a, M, K, N, s);
}
