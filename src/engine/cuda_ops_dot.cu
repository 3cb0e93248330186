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

extern "C" cudaError_t cuda_launch_conv_dot(const cuda_conv_args *a, cudaStream_t s)
{
    int rows = a->batch * a->oh * a->ow, K = a->kh * a->kw * a->cin;
    if (rows == 0)
        return cudaSuccess;
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
