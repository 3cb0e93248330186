/* Planar YUV -> NV12 on the GPU (cuda_nv12.h says how). */
#include "vision/cuda_nv12.h"

#define THREADS 256

/* The chroma sample covering luma pixel x of w (c of them). */
__device__ static inline int chroma_at(int x, int w, int c)
{
    return (int)((long long)x * c / w);
}

__global__ static void nv12_kernel(vis_yuv_planes s, uint8_t *dst_y, uint8_t *dst_uv,
                                   size_t dst_pitch, int bw, int bh)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= bw * bh)
        return;
    int bx = i % bw, by = i / bw;
    int x0 = 2 * bx, y0 = 2 * by;
    int x1 = min(x0 + 1, s.w - 1), y1 = min(y0 + 1, s.h - 1);
    for (int dy = 0; dy < 2 && y0 + dy < s.h; dy++)
        for (int dx = 0; dx < 2 && x0 + dx < s.w; dx++)
            dst_y[(size_t)(y0 + dy) * dst_pitch + x0 + dx] =
                s.y[(size_t)(y0 + dy) * s.y_pitch + x0 + dx];
    uint8_t *uv = dst_uv + (size_t)by * dst_pitch + 2 * bx;
    if (s.cw <= 0 || s.ch <= 0) {
        uv[0] = uv[1] = 128;
        return;
    }
    int cx0 = chroma_at(x0, s.w, s.cw), cx1 = chroma_at(x1, s.w, s.cw);
    int cy0 = chroma_at(y0, s.h, s.ch), cy1 = chroma_at(y1, s.h, s.ch);
    const uint8_t *u0 = s.u + (size_t)cy0 * s.u_pitch, *u1 = s.u + (size_t)cy1 * s.u_pitch;
    const uint8_t *v0 = s.v + (size_t)cy0 * s.v_pitch, *v1 = s.v + (size_t)cy1 * s.v_pitch;
    uv[0] = (uint8_t)((u0[cx0] + u0[cx1] + u1[cx0] + u1[cx1] + 2) >> 2);
    uv[1] = (uint8_t)((v0[cx0] + v0[cx1] + v1[cx0] + v1[cx1] + 2) >> 2);
}

extern "C" cudaError_t vis_cuda_yuv_to_nv12(vis_yuv_planes src, uint8_t *dst_y, uint8_t *dst_uv,
                                            size_t dst_pitch, cudaStream_t stream)
{
    if (src.w < 1 || src.h < 1 || !src.y || !dst_y || !dst_uv || dst_pitch < (size_t)src.w ||
        src.y_pitch < (size_t)src.w || src.cw < 0 || src.ch < 0 || src.cw > src.w ||
        src.ch > src.h || ((src.cw > 0) != (src.ch > 0)) ||
        (src.cw > 0 &&
         (!src.u || !src.v || src.u_pitch < (size_t)src.cw || src.v_pitch < (size_t)src.cw)))
        return cudaErrorInvalidValue;
    int bw = (src.w + 1) / 2, bh = (src.h + 1) / 2;
    unsigned blocks = (unsigned)(((long long)bw * bh + THREADS - 1) / THREADS);
    nv12_kernel<<<blocks, THREADS, 0, stream>>>(src, dst_y, dst_uv, dst_pitch, bw, bh);
    return cudaGetLastError();
}
