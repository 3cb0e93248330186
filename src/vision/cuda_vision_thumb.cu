/* The live view's thumbnails on the GPU: only the small RGB image leaves
 * the device (vision/thumb.h has the per-pixel code, shared with the CPU). */
#include "vision/cuda_vision.h"
#include "vision/thumb.h"

#define THREADS 256

__global__ void thumb_kernel(omma_frame frame, int tw, int th, uint8_t *out)
{
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (p >= tw * th)
        return;
    vis_thumb_pixel(&frame, tw, th, p % tw, p / tw, out + (size_t)p * 3);
}

extern "C" cudaError_t vis_cuda_thumb(omma_frame frame, int tw, int th, uint8_t *out,
                                      cudaStream_t stream)
{
    if (tw < 1 || th < 1)
        return cudaErrorInvalidValue;
    unsigned blocks = (unsigned)((tw * th + THREADS - 1) / THREADS);
    thumb_kernel<<<blocks, THREADS, 0, stream>>>(frame, tw, th, out);
    return cudaGetLastError();
}
