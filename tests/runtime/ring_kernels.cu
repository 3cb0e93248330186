/* Kernels for the frame ring's GPU test (see ring_kernels.h). */
#include "ring_kernels.h"

static __global__ void check_frame_kernel(const uint8_t *frame, size_t bytes, ring_seen *out)
{
    unsigned long long k = 0;
    for (int b = 7; b >= 0; b--)
        k = (k << 8) | frame[b];
    unsigned int bad = 0;
    for (size_t i = 8 + (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < bytes;
         i += (size_t)gridDim.x * blockDim.x)
        bad += frame[i] != ring_pattern(k, i);
    if (bad)
        atomicAdd(&out->mismatches, bad);
    if (blockIdx.x == 0 && threadIdx.x == 0)
        out->k = k;
}

extern "C" cudaError_t ring_check_frame(const uint8_t *frame, size_t bytes, ring_seen *out,
                                        cudaStream_t stream)
{
    size_t blocks = (bytes + 255) / 256;
    check_frame_kernel<<<(unsigned)(blocks < 64 ? blocks : 64), 256, 0, stream>>>(frame, bytes,
                                                                                  out);
    return cudaGetLastError();
}
