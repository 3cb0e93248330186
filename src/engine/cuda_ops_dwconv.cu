/* Depthwise convolution, memory-bound: each thread computes one output pixel
 * for 16 bytes of channels (4 floats or 8 halves), so a warp reads and
 * writes contiguous channel runs with 16-byte accesses; the filter
 * ([kh][kw][C], a few KB) stays in L1. Odd channel counts and depth
 * multipliers above 1 take the scalar kernel (one thread per output
 * element, channel fastest). */
#include "engine/cuda_ops_device.h"

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
    size_t o = (size_t)p * a.cout + c0;
    if (a.bias)
#pragma unroll
        for (int i = 0; i < V; i++)
            acc[i] += __ldg(a.bias + c0 + i);
    if (a.residual) {
        float r[vec16<T>::n];
        ldv(static_cast<const T *>(a.residual) + o, r, V);
#pragma unroll
        for (int i = 0; i < V; i++)
            acc[i] += r[i];
    }
#pragma unroll
    for (int i = 0; i < V; i++)
        acc[i] = activate(acc[i], a.act, a.alpha, c0 + i);
    stv(static_cast<T *>(a.y) + o, acc, V);
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

extern "C" cudaError_t cuda_launch_dwconv(const cuda_conv_args *a, cudaStream_t s)
{
    int es = a->prec == CUDA_PREC_F16 ? 2 : 4;
    size_t addr = (size_t)a->x | (size_t)a->w | (size_t)a->y | (size_t)a->residual;
    int V = a->mult == 1 ? cuda_ops_vec(es, a->cout, addr) : 0;
    long long total = (long long)a->batch * a->oh * a->ow * (V ? a->cout / V : a->cout);
    unsigned blocks = cuda_ops_blocks(total, CUDA_OPS_THREADS);
    if (a->prec == CUDA_PREC_F16) {
        if (V)
            return cuda_ops_start(dwconv_vec<__half>, blocks, CUDA_OPS_THREADS, 0, s, *a, V);
        else
            return cuda_ops_start(dwconv_scalar<__half>, blocks, CUDA_OPS_THREADS, 0, s, *a);
    } else {
        if (V)
            return cuda_ops_start(dwconv_vec<float>, blocks, CUDA_OPS_THREADS, 0, s, *a, V);
        else
            return cuda_ops_start(dwconv_scalar<float>, blocks, CUDA_OPS_THREADS, 0, s, *a);
    }
}
