/* RESIZE_BILINEAR with TFLite's arithmetic (reference_ops::ResizeBilinear):
 * source coordinate (o + 0.5) * scale - 0.5 with half_pixel_centers, o *
 * scale otherwise; scale = in / out, or (in - 1) / (out - 1) with
 * align_corners; lower neighbour max(floor, 0), upper min(ceil, in - 1),
 * weights from the distance to the (clamped) lower neighbour. One thread per
 * output pixel x V channels (16, 8 or 4 bytes of them when the channel
 * count and alignment allow, else one), channel fastest: the four source
 * pixels are read as contiguous channel runs with vector loads. With an
 * addend (a RESIZE + ADD step) each resized value is rounded to the storage
 * precision as the node would store it, then the ADD node's sum and
 * activation follow, so the step's results are the two nodes'. */
#include "engine/cuda_ops_device.h"

template <typename T, int V, bool ADD>
static __device__ __forceinline__ void resize_body(const cuda_resize_args &a, float sy, float sx)
{
    const int groups = a.c / V;
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= a.batch * a.oh * a.ow * groups)
        return;
    int c = (idx % groups) * V, t = idx / groups;
    int ox = t % a.ow;
    t /= a.ow;
    int oy = t % a.oh, b = t / a.oh;
    float ly, lx;
    int y0, y1, x0, x1;
    resize_source(oy, sy, a.half_pixel_centers, a.ih, &y0, &y1, &ly);
    resize_source(ox, sx, a.half_pixel_centers, a.iw, &x0, &x1, &lx);
    const T *x = static_cast<const T *>(a.x) + (size_t)b * a.ih * a.iw * a.c + c;
    float v00[V], v01[V], v10[V], v11[V], v[V];
    ldv(x + ((size_t)y0 * a.iw + x0) * a.c, v00, V);
    ldv(x + ((size_t)y0 * a.iw + x1) * a.c, v01, V);
    ldv(x + ((size_t)y1 * a.iw + x0) * a.c, v10, V);
    ldv(x + ((size_t)y1 * a.iw + x1) * a.c, v11, V);
#pragma unroll
    for (int i = 0; i < V; i++)
        v[i] = v00[i] * (1.0f - ly) * (1.0f - lx) + v10[i] * ly * (1.0f - lx) +
               v01[i] * (1.0f - ly) * lx + v11[i] * ly * lx;
    const size_t o = ((size_t)((size_t)b * a.oh + oy) * a.ow + ox) * a.c + c;
    if (ADD) { /* the ADD node's arithmetic on the stored resized value */
        float u[V];
        ldv(static_cast<const T *>(a.addend) + o, u, V);
#pragma unroll
        for (int i = 0; i < V; i++)
            v[i] = activate(ld_as_stored<T>(v[i]) + u[i], a.act, nullptr, 0);
    }
    stv(static_cast<T *>(a.y) + o, v, V);
}

template <typename T, bool ADD>
__global__ void __launch_bounds__(CUDA_OPS_THREADS)
resize_bilinear(cuda_resize_args a, float sy, float sx, int V)
{
    pdl_begin();
    if (V == vec16<T>::n)
        resize_body<T, vec16<T>::n, ADD>(a, sy, sx);
    else if (V == vec16<T>::n / 2)
        resize_body<T, vec16<T>::n / 2, ADD>(a, sy, sx);
    else if (V == vec16<T>::n / 4)
        resize_body<T, vec16<T>::n / 4, ADD>(a, sy, sx);
    else
        resize_body<T, 1, ADD>(a, sy, sx);
}

template <typename T>
static cudaError_t resize_start(const cuda_resize_args *a, unsigned blocks, float sy, float sx,
                                int V, cudaStream_t s)
{
    if (a->addend)
        return cuda_ops_start(resize_bilinear<T, true>, blocks, CUDA_OPS_THREADS, 0, s, *a, sy, sx,
                              V);
    return cuda_ops_start(resize_bilinear<T, false>, blocks, CUDA_OPS_THREADS, 0, s, *a, sy, sx, V);
}

extern "C" cudaError_t cuda_launch_resize_bilinear(const cuda_resize_args *a, cudaStream_t s)
{
    long long total = (long long)a->batch * a->oh * a->ow * a->c;
    if (total == 0)
        return cudaSuccess;
    float sy = resize_scale(a->ih, a->oh, a->align_corners);
    float sx = resize_scale(a->iw, a->ow, a->align_corners);
    int es = a->prec == CUDA_PREC_F16 ? 2 : 4;
    if (a->addend && a->act == GR_ACT_PRELU)
        return cudaErrorInvalidValue;
    int V = cuda_ops_vec(es, a->c, (size_t)a->x | (size_t)a->y | (size_t)a->addend);
    if (V == 0)
        V = 1;
    unsigned blocks = cuda_ops_blocks(total / V, CUDA_OPS_THREADS);
    return a->prec == CUDA_PREC_F16 ? resize_start<__half>(a, blocks, sy, sx, V, s)
                                    : resize_start<float>(a, blocks, sy, sx, V, s);
}
