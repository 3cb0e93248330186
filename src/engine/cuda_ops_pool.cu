/* Max pooling over NHWC: like the depthwise kernels, one thread per output
 * pixel and 16 (or 8, 4) bytes of channels when the channel count allows,
 * one per element otherwise. Padding positions are skipped (TFLite's semantics: they
 * never win); validation guarantees each window holds an input. */
#include <math.h>

#include "engine/cuda_ops_device.h"

template <typename T>
static __device__ __forceinline__ void maxpool_vec_body(const cuda_conv_args &a, const int V)
{
    const int groups = a.cout / V;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= a.batch * a.oh * a.ow * groups)
        return;
    int c0 = (idx % groups) * V, p = idx / groups;
    int ox = p % a.ow, q = p / a.ow;
    int oy = q % a.oh, b = q / a.oh;
    const T *x = static_cast<const T *>(a.x) + (size_t)b * a.ih * a.iw * a.cin + c0;
    float m[vec16<T>::n];
#pragma unroll
    for (int i = 0; i < V; i++)
        m[i] = -INFINITY;
    for (int ky = 0; ky < a.kh; ky++) {
        int iy = oy * a.sh - a.pt + ky;
        if (iy < 0 || iy >= a.ih)
            continue;
        for (int kx = 0; kx < a.kw; kx++) {
            int ix = ox * a.sw - a.pl + kx;
            if (ix < 0 || ix >= a.iw)
                continue;
            float v[vec16<T>::n];
            ldv(x + ((size_t)iy * a.iw + ix) * a.cin, v, V);
#pragma unroll
            for (int i = 0; i < V; i++)
                m[i] = fmaxf(m[i], v[i]);
        }
    }
    stv(static_cast<T *>(a.y) + (size_t)p * a.cout + c0, m, V);
}

/* V: elements per thread (16, 8 or 4 bytes of them). */
template <typename T>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
maxpool_vec(cuda_conv_args a, int V)
{
    pdl_begin();
    if (V == vec16<T>::n)
        maxpool_vec_body<T>(a, vec16<T>::n);
    else if (V == vec16<T>::n / 2)
        maxpool_vec_body<T>(a, vec16<T>::n / 2);
    else
        maxpool_vec_body<T>(a, vec16<T>::n / 4);
}

template <typename T>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
maxpool_scalar(cuda_conv_args a)
{
    pdl_begin();
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= a.batch * a.oh * a.ow * a.cout)
        return;
    int c = idx % a.cout, p = idx / a.cout;
    int ox = p % a.ow, q = p / a.ow;
    int oy = q % a.oh, b = q / a.oh;
    const T *x = static_cast<const T *>(a.x) + (size_t)b * a.ih * a.iw * a.cin + c;
    float m = -INFINITY;
    for (int ky = 0; ky < a.kh; ky++) {
        int iy = oy * a.sh - a.pt + ky;
        if (iy < 0 || iy >= a.ih)
            continue;
        for (int kx = 0; kx < a.kw; kx++) {
            int ix = ox * a.sw - a.pl + kx;
            if (ix < 0 || ix >= a.iw)
                continue;
            m = fmaxf(m, ld(x + ((size_t)iy * a.iw + ix) * a.cin));
        }
    }
    st(static_cast<T *>(a.y) + idx, m);
}

extern "C" cudaError_t cuda_launch_maxpool(const cuda_conv_args *a, cudaStream_t s)
{
    int V = cuda_ops_vec(a->prec == CUDA_PREC_F16 ? 2 : 4, a->cout, (size_t)a->x | (size_t)a->y);
    long long total = (long long)a->batch * a->oh * a->ow * (V ? a->cout / V : a->cout);
    unsigned blocks = cuda_ops_blocks(total, CUDA_OPS_THREADS);
    if (a->prec == CUDA_PREC_F16) {
        if (V)
            return cuda_ops_start(maxpool_vec<__half>, blocks, CUDA_OPS_THREADS, 0, s, *a, V);
        else
            return cuda_ops_start(maxpool_scalar<__half>, blocks, CUDA_OPS_THREADS, 0, s, *a);
    } else {
        if (V)
            return cuda_ops_start(maxpool_vec<float>, blocks, CUDA_OPS_THREADS, 0, s, *a, V);
        else
            return cuda_ops_start(maxpool_scalar<float>, blocks, CUDA_OPS_THREADS, 0, s, *a);
    }
}
