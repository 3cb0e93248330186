/* Element-wise and data-movement ops: ADD with its fused activation, RELU,
 * PRELU (one kernel: y = act(a + b)), zero PAD, CONCAT, precision
 * conversion. All memory-bound: 16-, 8- or 4-byte accesses per thread where
 * the shapes and alignment allow, one element per thread otherwise; consecutive threads
 * touch consecutive elements. */
#include "engine/cuda_ops_device.h"

/* ---- y = act(a + b) ------------------------------------------------------ */

template <typename T>
static __device__ __forceinline__ void eltwise_vec_body(const cuda_eltwise_args &a, const int V)
{
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * V;
    if (i >= a.n)
        return;
    float v[vec16<T>::n];
    ldv(static_cast<const T *>(a.a) + i, v, V);
    if (a.b) {
        float u[vec16<T>::n];
        ldv(static_cast<const T *>(a.b) + (a.b_period ? i % a.b_period : i), u, V);
#pragma unroll
        for (int e = 0; e < V; e++)
            v[e] += u[e];
    }
    int c = a.act == GR_ACT_PRELU ? i % a.c : 0;
#pragma unroll
    for (int e = 0; e < V; e++)
        v[e] = activate(v[e], a.act, a.alpha, c + e);
    stv(static_cast<T *>(a.y) + i, v, V);
}

/* V: elements per thread (16, 8 or 4 bytes of them). */
template <typename T>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
eltwise_vec(cuda_eltwise_args a, int V)
{
    pdl_begin();
    if (V == vec16<T>::n)
        eltwise_vec_body<T>(a, vec16<T>::n);
    else if (V == vec16<T>::n / 2)
        eltwise_vec_body<T>(a, vec16<T>::n / 2);
    else
        eltwise_vec_body<T>(a, vec16<T>::n / 4);
}

template <typename T>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
eltwise_scalar(cuda_eltwise_args a)
{
    pdl_begin();
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
    int es = a->prec == CUDA_PREC_F16 ? 2 : 4;
    size_t addr = (size_t)a->a | (size_t)a->y | (size_t)a->b;
    /* Every vector must stay inside one channel row (PRELU's alpha) and one
     * period of b: the vector divides n, c and b_period. */
    int V = cuda_ops_vec(es, a->c, addr);
    while (V >= 2 && (a->n % V != 0 || a->b_period % V != 0))
        V /= 2;
    if (V < 2)
        V = 0;
    unsigned blocks = cuda_ops_blocks(V ? a->n / V : a->n, CUDA_OPS_THREADS);
    if (a->prec == CUDA_PREC_F16) {
        if (V)
            return cuda_ops_start(eltwise_vec<__half>, blocks, CUDA_OPS_THREADS, 0, s, *a, V);
        else
            return cuda_ops_start(eltwise_scalar<__half>, blocks, CUDA_OPS_THREADS, 0, s, *a);
    } else {
        if (V)
            return cuda_ops_start(eltwise_vec<float>, blocks, CUDA_OPS_THREADS, 0, s, *a, V);
        else
            return cuda_ops_start(eltwise_scalar<float>, blocks, CUDA_OPS_THREADS, 0, s, *a);
    }
}

/* ---- zero padding --------------------------------------------------------- */

/* One thread per V consecutive innermost elements (V = 1, or 16, 8 or 4
 * bytes when every innermost extent and offset is a multiple of it). */
template <typename T>
static __device__ __forceinline__ void pad_body(const cuda_pad_args &a, const int V)
{
    int groups = a.out[2] / V;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= a.batch * a.out[0] * a.out[1] * groups)
        return;
    int c = (idx % groups) * V, t = idx / groups;
    int x1 = t % a.out[1];
    t /= a.out[1];
    int x0 = t % a.out[0], b = t / a.out[0];
    int i0 = x0 - a.before[0], i1 = x1 - a.before[1], i2 = c - a.before[2];
    bool inside = i0 >= 0 && i0 < a.in[0] && i1 >= 0 && i1 < a.in[1] && i2 >= 0 && i2 < a.in[2];
    size_t src = (((size_t)b * a.in[0] + i0) * a.in[1] + i1) * a.in[2] + i2;
    T *y = static_cast<T *>(a.y) + (size_t)idx * V;
    float v[vec16<T>::n];
    if (inside) {
        ldv(static_cast<const T *>(a.x) + src, v, V);
    } else {
#pragma unroll
        for (int k = 0; k < V; k++)
            v[k] = 0.0f;
    }
    stv(y, v, V);
}

template <typename T>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
pad_kernel(cuda_pad_args a, int V)
{
    pdl_begin();
    if (V == vec16<T>::n)
        pad_body<T>(a, vec16<T>::n);
    else if (V == vec16<T>::n / 2)
        pad_body<T>(a, vec16<T>::n / 2);
    else if (V == vec16<T>::n / 4)
        pad_body<T>(a, vec16<T>::n / 4);
    else
        pad_body<T>(a, 1);
}

extern "C" cudaError_t cuda_launch_pad(const cuda_pad_args *a, cudaStream_t s)
{
    int es = a->prec == CUDA_PREC_F16 ? 2 : 4;
    int V = cuda_ops_vec(es, a->in[2], (size_t)a->x | (size_t)a->y);
    while (V >= 2 && (a->out[2] % V != 0 || a->before[2] % V != 0))
        V /= 2;
    if (V < 2)
        V = 1;
    long long total = (long long)a->batch * a->out[0] * a->out[1] * (a->out[2] / V);
    unsigned blocks = cuda_ops_blocks(total, CUDA_OPS_THREADS);
    if (total == 0)
        return cudaSuccess;
    if (a->prec == CUDA_PREC_F16)
        return cuda_ops_start(pad_kernel<__half>, blocks, CUDA_OPS_THREADS, 0, s, *a, V);
    else
        return cuda_ops_start(pad_kernel<float>, blocks, CUDA_OPS_THREADS, 0, s, *a, V);
}

/* ---- concatenation ------------------------------------------------------- */

/* One thread per V consecutive elements of an output row (V = 1, or 16, 8
 * or 4 bytes when every width and pointer allows). Inputs of T, output of
 * U (float for an fp16 graph's float32 output, cuda_concat_args.y_f32). */
template <typename T, typename U>
static __device__ __forceinline__ void concat_body(const cuda_concat_args &a, const int V)
{
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    int vw = a.out_width / V;
    if (idx >= a.outer * vw)
        return;
    int row = idx / vw, col = (idx % vw) * V;
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
    float v[vec16<T>::n];
    ldv(src + (size_t)row * width + col, v, V);
    stv(static_cast<U *>(a.y) + (size_t)idx * V, v, V);
}

/* V: 1, or a vector of 16, 8 or 4 bytes of the wider of T and U. */
template <typename T, typename U>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
concat_kernel(cuda_concat_args a, int V)
{
    constexpr int VMAX = vec16<T>::n < vec16<U>::n ? vec16<T>::n : vec16<U>::n;
    pdl_begin();
    if (V == VMAX)
        concat_body<T, U>(a, VMAX);
    else if (V == VMAX / 2)
        concat_body<T, U>(a, VMAX / 2);
    else if (VMAX == 8 && V == 2)
        concat_body<T, U>(a, 2);
    else
        concat_body<T, U>(a, 1);
}

extern "C" cudaError_t cuda_launch_concat(const cuda_concat_args *a, cudaStream_t s)
{
    long long total = (long long)a->outer * a->out_width;
    if (total == 0)
        return cudaSuccess;
    bool f16 = a->prec == CUDA_PREC_F16;
    /* The vector is bounded by the wider of the two element sizes. */
    int es = f16 && !a->y_f32 ? 2 : 4;
    size_t addr = (size_t)a->y;
    for (int k = 0; k < a->n_in; k++)
        addr |= (size_t)a->x[k];
    int V = cuda_ops_vec(es, a->out_width, addr);
    for (int k = 0; k < a->n_in && V >= 2; k++)
        while (V >= 2 && a->width[k] % V != 0)
            V /= 2;
    if (V < 2)
        V = 1;
    unsigned blocks = cuda_ops_blocks(total / V, CUDA_OPS_THREADS);
    if (f16 && a->y_f32)
        return cuda_ops_start(concat_kernel<__half, float>, blocks, CUDA_OPS_THREADS, 0, s, *a, V);
    if (f16)
        return cuda_ops_start(concat_kernel<__half, __half>, blocks, CUDA_OPS_THREADS, 0, s, *a,
                              V);
    return cuda_ops_start(concat_kernel<float, float>, blocks, CUDA_OPS_THREADS, 0, s, *a, V);
}

/* ---- precision conversion ------------------------------------------------ */

/* Thread i converts elements [V i, V i + V): 8 (one 16-byte half load or
 * store, two float4) when the count and the pointers allow, else 1. */
template <int V>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
    f32_to_f16(__half *__restrict__ y, const float *__restrict__ x, int n)
{
    pdl_begin();
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * V;
    if (i >= n)
        return;
    float v[V];
    if (V == 8) {
        ldv(x + i, v, 4);
        ldv(x + i + 4, v + 4, 4);
    } else {
        ldv(x + i, v, 1);
    }
    stv(y + i, v, V);
}

template <int V>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
    f16_to_f32(float *__restrict__ y, const __half *__restrict__ x, int n)
{
    pdl_begin();
    int i = (blockIdx.x * blockDim.x + threadIdx.x) * V;
    if (i >= n)
        return;
    float v[V];
    ldv(x + i, v, V);
    if (V == 8) {
        stv(y + i, v, 4);
        stv(y + i + 4, v + 4, 4);
    } else {
        stv(y + i, v, 1);
    }
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
    const bool vec8 = n % 8 == 0 && (((size_t)dst | (size_t)src) & 15) == 0;
    if (vec8)
        blocks = cuda_ops_blocks(n / 8, CUDA_OPS_THREADS);
    if (dst_prec == CUDA_PREC_F16)
        return cuda_ops_start(vec8 ? f32_to_f16<8> : f32_to_f16<1>, blocks, CUDA_OPS_THREADS, 0, s,
                              (__half *)dst, (const float *)src, n);
    return cuda_ops_start(vec8 ? f16_to_f32<8> : f16_to_f32<1>, blocks, CUDA_OPS_THREADS, 0, s,
                          (float *)dst, (const __half *)src, n);
}
