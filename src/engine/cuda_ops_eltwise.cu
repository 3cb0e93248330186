/* Element-wise and data-movement ops: ADD with its fused activation, RELU,
 * PRELU (one kernel: y = act(a + b)), zero PAD, CONCAT, precision
 * conversion. All memory-bound: 16-byte accesses per thread where the shapes
 * and alignment allow, one element per thread otherwise; consecutive threads
 * touch consecutive elements. */
#include "engine/cuda_ops_device.h"

static bool aligned16(const void *p) { return ((size_t)p & 15) == 0; }

/* ---- y = act(a + b) ------------------------------------------------------ */

template <typename T>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
eltwise_vec(cuda_eltwise_args a)
{
    const int V = vec16<T>::n;
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * V;
    if (i >= a.n)
        return;
    float v[V];
    ld16(static_cast<const T *>(a.a) + i, v);
    if (a.b) {
        float u[V];
        ld16(static_cast<const T *>(a.b) + (a.b_period ? i % a.b_period : i), u);
#pragma unroll
        for (int e = 0; e < V; e++)
            v[e] += u[e];
    }
    int c = a.act == GR_ACT_PRELU ? i % a.c : 0;
#pragma unroll
    for (int e = 0; e < V; e++)
        v[e] = activate(v[e], a.act, a.alpha, c + e);
    st16(static_cast<T *>(a.y) + i, v);
}

template <typename T>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
eltwise_scalar(cuda_eltwise_args a)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n)
        return;
    float v = ld(static_cast<const T *>(a.a) + i);
    if (a.b)
        v += ld(static_cast<const T *>(a.b) + (a.b_period ? i % a.b_period : i));
    int c = a.act == GR_ACT_PRELU ? i % a.c : 0;
    st(static_cast<T *>(a.y) + i, activate(v, a.act, a.alpha, c));
}

extern "C" cudaError_t cuda_launch_eltwise(const cuda_eltwise_args *a, cudaStream_t s)
{
    if (a->n <= 0)
        return cudaSuccess;
    int V = a->prec == CUDA_PREC_F16 ? 8 : 4;
    bool vec = a->n % V == 0 && a->c % V == 0 && a->b_period % V == 0 && aligned16(a->a) &&
               aligned16(a->y) && (!a->b || aligned16(a->b));
    unsigned blocks = cuda_ops_blocks(vec ? a->n / V : a->n, CUDA_OPS_THREADS);
    if (a->prec == CUDA_PREC_F16) {
        if (vec)
            eltwise_vec<__half><<<blocks, CUDA_OPS_THREADS, 0, s>>>(*a);
        else
            eltwise_scalar<__half><<<blocks, CUDA_OPS_THREADS, 0, s>>>(*a);
    } else {
        if (vec)
            eltwise_vec<float><<<blocks, CUDA_OPS_THREADS, 0, s>>>(*a);
        else
            eltwise_scalar<float><<<blocks, CUDA_OPS_THREADS, 0, s>>>(*a);
    }
    return cudaGetLastError();
}

/* ---- zero padding --------------------------------------------------------- */

/* One thread per `e` consecutive innermost elements (e = 1, or 16 bytes when
 * every innermost extent and offset is a multiple of it). */
template <typename T>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
pad_kernel(cuda_pad_args a, int vec)
{
    const int V = vec16<T>::n;
    const int e = vec ? V : 1;
    int groups = a.out[2] / e;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= a.batch * a.out[0] * a.out[1] * groups)
        return;
    int c = (idx % groups) * e, t = idx / groups;
    int x1 = t % a.out[1];
    t /= a.out[1];
    int x0 = t % a.out[0], b = t / a.out[0];
    int i0 = x0 - a.before[0], i1 = x1 - a.before[1], i2 = c - a.before[2];
    bool inside = i0 >= 0 && i0 < a.in[0] && i1 >= 0 && i1 < a.in[1] && i2 >= 0 && i2 < a.in[2];
    size_t src = (((size_t)b * a.in[0] + i0) * a.in[1] + i1) * a.in[2] + i2;
    T *y = static_cast<T *>(a.y) + (size_t)idx * e;
    const T *x = static_cast<const T *>(a.x);
    if (vec) {
        float v[V];
        if (inside) {
            ld16(x + src, v);
        } else {
#pragma unroll
            for (int k = 0; k < V; k++)
                v[k] = 0.0f;
        }
        st16(y, v);
    } else {
        st(y, inside ? ld(x + src) : 0.0f);
    }
}

extern "C" cudaError_t cuda_launch_pad(const cuda_pad_args *a, cudaStream_t s)
{
    int V = a->prec == CUDA_PREC_F16 ? 8 : 4;
    int vec = a->in[2] % V == 0 && a->out[2] % V == 0 && a->before[2] % V == 0 &&
              aligned16(a->x) && aligned16(a->y);
    long long total = (long long)a->batch * a->out[0] * a->out[1] * (a->out[2] / (vec ? V : 1));
    unsigned blocks = cuda_ops_blocks(total, CUDA_OPS_THREADS);
    if (total == 0)
        return cudaSuccess;
    if (a->prec == CUDA_PREC_F16)
        pad_kernel<__half><<<blocks, CUDA_OPS_THREADS, 0, s>>>(*a, vec);
    else
        pad_kernel<float><<<blocks, CUDA_OPS_THREADS, 0, s>>>(*a, vec);
    return cudaGetLastError();
}

/* ---- concatenation ------------------------------------------------------- */

template <typename T>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
concat_kernel(cuda_concat_args a)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= a.outer * a.out_width)
        return;
    int row = idx / a.out_width, col = idx % a.out_width;
    const T *src = NULL;
    int width = 0;
    /* Unrolled with constant indices, so the arguments stay in the
     * parameter space. */
#pragma unroll
    for (int k = 0; k < GR_MAX_INPUTS; k++) {
        if (k < a.n_in && !src) {
            if (col < a.width[k]) {
                src = static_cast<const T *>(a.x[k]);
                width = a.width[k];
            } else {
                col -= a.width[k];
            }
        }
    }
    st(static_cast<T *>(a.y) + idx, ld(src + (size_t)row * width + col));
}

extern "C" cudaError_t cuda_launch_concat(const cuda_concat_args *a, cudaStream_t s)
{
    long long total = (long long)a->outer * a->out_width;
    if (total == 0)
        return cudaSuccess;
    unsigned blocks = cuda_ops_blocks(total, CUDA_OPS_THREADS);
    if (a->prec == CUDA_PREC_F16)
        concat_kernel<__half><<<blocks, CUDA_OPS_THREADS, 0, s>>>(*a);
    else
        concat_kernel<float><<<blocks, CUDA_OPS_THREADS, 0, s>>>(*a);
    return cudaGetLastError();
}

/* ---- precision conversion ------------------------------------------------ */

__global__ void __launch_bounds__(CUDA_OPS_THREADS)
f32_to_f16(__half *__restrict__ y, const float *__restrict__ x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = __float2half_rn(__ldg(x + i));
}

__global__ void __launch_bounds__(CUDA_OPS_THREADS)
f16_to_f32(float *__restrict__ y, const __half *__restrict__ x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        y[i] = __half2float(__ldg(x + i));
}

extern "C" cudaError_t cuda_launch_convert(void *dst, cuda_prec dst_prec, const void *src,
                                           cuda_prec src_prec, int n, cudaStream_t s)
{
    if (n <= 0)
        return cudaSuccess;
    unsigned blocks = cuda_ops_blocks(n, CUDA_OPS_THREADS);
    if (dst_prec == src_prec) {
        if (dst == src)
            return cudaSuccess;
        return cudaMemcpyAsync(dst, src, (size_t)n * (dst_prec == CUDA_PREC_F16 ? 2 : 4),
                               cudaMemcpyDeviceToDevice, s);
    }
    if (dst_prec == CUDA_PREC_F16)
        f32_to_f16<<<blocks, CUDA_OPS_THREADS, 0, s>>>((__half *)dst, (const float *)src, n);
    else
        f16_to_f32<<<blocks, CUDA_OPS_THREADS, 0, s>>>((float *)dst, (const __half *)src, n);
    return cudaGetLastError();
}
