/* Depthwise convolution, memory-bound: each thread computes one output pixel
 * for 16 bytes of channels (4 floats or 8 halves), so a warp reads and
 * writes contiguous channel runs with 16-byte accesses; the filter
 * ([kh][kw][C], a few KB) stays in L1. Odd channel counts and depth
 * multipliers above 1 take the scalar kernel (one thread per output
 * element, channel fastest). */
#include "engine/cuda_ops_device.h"

template <typename T>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
dwconv_vec(cuda_conv_args a)
{
    const int V = vec16<T>::n;
    const int groups = a.cout / V;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= a.batch * a.oh * a.ow * groups)
        return;
    int c0 = (idx % groups) * V, p = idx / groups;
    int ox = p % a.ow, q = p / a.ow;
    int oy = q % a.oh, b = q / a.oh;
    const T *x = static_cast<const T *>(a.x) + (size_t)b * a.ih * a.iw * a.cin + c0;
    const T *w = static_cast<const T *>(a.w) + c0;
    float acc[V];
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
            float xv[V], wv[V];
            ld16(x + ((size_t)iy * a.iw + ix) * a.cin, xv);
            ld16(w + (size_t)(ky * a.kw + kx) * a.cout, wv);
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
        float r[V];
        ld16(static_cast<const T *>(a.residual) + o, r);
#pragma unroll
        for (int i = 0; i < V; i++)
            acc[i] += r[i];
    }
#pragma unroll
    for (int i = 0; i < V; i++)
        acc[i] = activate(acc[i], a.act, a.alpha, c0 + i);
    st16(static_cast<T *>(a.y) + o, acc);
}

template <typename T>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
dwconv_scalar(cuda_conv_args a)
{
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

static bool aligned16(const void *p) { return ((size_t)p & 15) == 0; }

extern "C" cudaError_t cuda_launch_dwconv(const cuda_conv_args *a, cudaStream_t s)
{
    int V = a->prec == CUDA_PREC_F16 ? 8 : 4;
    bool vec = a->mult == 1 && a->cout % V == 0 && aligned16(a->x) && aligned16(a->w) &&
               aligned16(a->y) && (!a->residual || aligned16(a->residual));
    long long total = (long long)a->batch * a->oh * a->ow * (vec ? a->cout / V : a->cout);
    unsigned blocks = cuda_ops_blocks(total, CUDA_OPS_THREADS);
    if (a->prec == CUDA_PREC_F16) {
        if (vec)
            dwconv_vec<__half><<<blocks, CUDA_OPS_THREADS, 0, s>>>(*a);
        else
            dwconv_scalar<__half><<<blocks, CUDA_OPS_THREADS, 0, s>>>(*a);
    } else {
        if (vec)
            dwconv_vec<float><<<blocks, CUDA_OPS_THREADS, 0, s>>>(*a);
        else
            dwconv_scalar<float><<<blocks, CUDA_OPS_THREADS, 0, s>>>(*a);
    }
    return cudaGetLastError();
}
