/* Frames -> model inputs on the GPU: the detector's letterbox and the
 * FaceMesh crops, both bilinear affine samples (vis_frame_sample, the
 * CPU reference's own code), one thread per output pixel; and the step
 * descriptor's load. */
#include "vision/cuda_vision.h"

#include <stddef.h>

#include "vision/frame.h"
#include "vision/letterbox.h"

#define THREADS 256

/* blockIdx.y: frame; image f.detect of out. */
__global__ void letterbox_kernel(const vis_gpu_step *__restrict__ s, int size, float *out)
{
    const vis_gpu_step_frame *f = &s->f[blockIdx.y];
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    if (f->detect < 0 || p >= size * size)
        return;
    vis_letterbox lb = vis_letterbox_make(f->frame.width, f->frame.height, size);
    float m[6];
    vis_letterbox_input_to_frame(&lb, m);
    float u = (float)(p % size) + 0.5f, v = (float)(p / size) + 0.5f;
    float *o = out + ((size_t)f->detect * (size_t)(size * size) + (size_t)p) * 3;
    vis_frame_sample(&f->frame, m[0] * u + m[1] * v + m[2], m[3] * u + m[4] * v + m[5],
                     VIS_BORDER_ZERO, 1.0f / 127.5f, -1.0f, o);
}

extern "C" cudaError_t vis_cuda_letterbox(const vis_gpu_step *s, vis_gpu_shape shape, int size,
                                          float *out, cudaStream_t stream)
{
    dim3 grid((unsigned)((size * size + THREADS - 1) / THREADS), (unsigned)shape.n);
    letterbox_kernel<<<grid, THREADS, 0, stream>>>(s, size, out);
    return cudaGetLastError();
}

/* blockIdx.y: slot. The slot's map is computed once per block. */
__global__ void crop_kernel(const vis_gpu_step *__restrict__ s, const vis_roi *slot_roi,
                            const int *slot_valid, const int *slot_frame, int size, float *out)
{
    __shared__ float m[6];
    int slot = blockIdx.y;
    int p = blockIdx.x * blockDim.x + threadIdx.x;
    int valid = slot < s->n_slots && slot_valid[slot];
    if (valid && threadIdx.x == 0)
        vis_roi_crop_to_frame(&slot_roi[slot], size, m);
    __syncthreads();
    if (p >= size * size)
        return;
    float *o = out + ((size_t)slot * (size_t)(size * size) + (size_t)p) * 3;
    if (!valid) {
        o[0] = o[1] = o[2] = 0.0f;
        return;
    }
    const omma_frame *f = &s->f[slot_frame[slot]].frame;
    float u = (float)(p % size) + 0.5f, v = (float)(p / size) + 0.5f;
    vis_frame_sample(f, m[0] * u + m[1] * v + m[2], m[3] * u + m[4] * v + m[5],
                     VIS_BORDER_REPLICATE, 1.0f / 255.0f, 0.0f, o);
}

extern "C" cudaError_t vis_cuda_crop(const vis_gpu_step *s, vis_gpu_shape shape,
                                     const vis_roi *slot_roi, const int *slot_valid,
                                     const int *slot_frame, int size, float *out,
                                     cudaStream_t stream)
{
    if (shape.n_slots < 1)
        return cudaSuccess;
    dim3 grid((unsigned)((size * size + THREADS - 1) / THREADS), (unsigned)shape.n_slots);
    crop_kernel<<<grid, THREADS, 0, stream>>>(s, slot_roi, slot_valid, slot_frame, size, out);
    return cudaGetLastError();
}

/* The descriptor's header and its n frames, as 32-bit words. */
__global__ void step_load_kernel(const vis_gpu_step host, vis_gpu_step *dev)
{
    size_t bytes = offsetof(vis_gpu_step, f) + (size_t)host.n * sizeof(vis_gpu_step_frame);
    const unsigned *from = (const unsigned *)&host;
    unsigned *to = (unsigned *)dev;
    for (size_t w = threadIdx.x; w < bytes / sizeof(unsigned); w += blockDim.x)
        to[w] = from[w];
}

extern "C" cudaError_t vis_cuda_step_load(const vis_gpu_step *host, vis_gpu_step *dev,
                                          cudaStream_t stream)
{
    step_load_kernel<<<1, THREADS, 0, stream>>>(*host, dev);
    return cudaGetLastError();
}
