/* The ops BlazePose's models add: LOGISTIC (y = 1 / (1 + exp(-x)),
 * element-wise, one element per thread) and DEPTH_TO_SPACE (TFLite's DCR
 * order: y[b, h*k + i, w*k + j, c] = x[b, h, w, (i*k + j)*C + c]; one
 * thread per output pixel x V channels, 16, 8 or 4 bytes of them when the
 * channel count and alignment allow, else one). Both memory-bound. */
#include "engine/cuda_ops_device.h"

template <typename T>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
logistic_kernel(const T *__restrict__ x, T *__restrict__ y, int n)
{
    pdl_begin();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    st(y + i, 1.0f / (1.0f + expf(-ld(x + i))));
}

extern "C" cudaError_t cuda_launch_logistic(const cuda_unary_args *a, cudaStream_t s)
{
    if (a->n <= 0)
        return cudaSuccess;
    unsigned blocks = cuda_ops_blocks(a->n, CUDA_OPS_THREADS);
    if (a->prec == CUDA_PREC_F16)
        return cuda_ops_start(logistic_kernel<__half>, blocks, CUDA_OPS_THREADS, 0, s,
                              (const __half *)a->x, (__half *)a->y, a->n);
    return cuda_ops_start(logistic_kernel<float>, blocks, CUDA_OPS_THREADS, 0, s,
                          (const float *)a->x, (float *)a->y, a->n);
}

template <typename T, int V>
static __device__ __forceinline__ void d2s_body(const cuda_d2s_args &a)
{
    const int groups = a.c / V, k = a.block;
    const int oh = a.h * k, ow = a.w * k;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= a.batch * oh * ow * groups)
        return;
    int c = (idx % groups) * V, t = idx / groups;
    int ox = t % ow;
    t /= ow;
    int oy = t % oh, b = t / oh;
    int i = oy % k, j = ox % k;
    size_t src = (((size_t)b * a.h + oy / k) * a.w + ox / k) * ((size_t)a.c * k * k) +
                 ((size_t)i * k + j) * a.c + c;
    float v[V];
    ldv(static_cast<const T *>(a.x) + src, v, V);
    stv(static_cast<T *>(a.y) + (size_t)idx * V, v, V);
}

template <typename T>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
d2s_kernel(cuda_d2s_args a, int V)
{
    pdl_begin();
    if (V == vec16<T>::n)
        d2s_body<T, vec16<T>::n>(a);
    else if (V == vec16<T>::n / 2)
        d2s_body<T, vec16<T>::n / 2>(a);
    else if (V == vec16<T>::n / 4)
        d2s_body<T, vec16<T>::n / 4>(a);
    else
        d2s_body<T, 1>(a);
}

extern "C" cudaError_t cuda_launch_depth_to_space(const cuda_d2s_args *a, cudaStream_t s)
{
    long long total = (long long)a->batch * a->h * a->w * a->block * a->block * a->c;
    if (total == 0)
        return cudaSuccess;
    int es = a->prec == CUDA_PREC_F16 ? 2 : 4;
    int V = cuda_ops_vec(es, a->c, (size_t)a->x | (size_t)a->y);
    if (V < 2)
        V = 1;
    unsigned blocks = cuda_ops_blocks(total / V, CUDA_OPS_THREADS);
    if (a->prec == CUDA_PREC_F16)
        return cuda_ops_start(d2s_kernel<__half>, blocks, CUDA_OPS_THREADS, 0, s, *a, V);
    return cuda_ops_start(d2s_kernel<float>, blocks, CUDA_OPS_THREADS, 0, s, *a, V);
}
