/* The GPU pose path's heatmap refinement (cuda_vision_pose.h): one thread
 * per landmark of each crop, the CPU reference's own code (pose_refine.h). */
#include "vision/cuda_vision_pose.h"

#include "vision/pose_refine.h"

#define VALUES 5 /* x, y, z, visibility, presence */

__global__ void pose_refine_kernel(int n, int size, const float *landmarks, const float *heatmaps,
                                   float *out)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n * VIS_POSE_REFINE_CHANNELS)
        return;
    int crop = i / VIS_POSE_REFINE_CHANNELS, k = i % VIS_POSE_REFINE_CHANNELS;
    const float *r = landmarks + (size_t)i * VALUES;
    const float *heatmap = heatmaps + (size_t)crop * VIS_POSE_REFINE_HEATMAP *
                                          VIS_POSE_REFINE_HEATMAP * VIS_POSE_REFINE_CHANNELS;
    float s = (float)size, x = r[0] / s, y = r[1] / s;
    vis_pose_refine(heatmap, k, &x, &y);
    float *o = out + (size_t)i * VALUES;
    o[0] = x * s;
    o[1] = y * s;
    o[2] = r[2];
    o[3] = r[3];
    o[4] = r[4];
}

extern "C" cudaError_t vis_cuda_pose_refine(int n, int size, const float *landmarks,
                                            const float *heatmaps, float *out, cudaStream_t stream)
{
    if (n < 1)
        return cudaSuccess;
    const int threads = 128, total = n * VIS_POSE_REFINE_CHANNELS;
    pose_refine_kernel<<<(total + threads - 1) / threads, threads, 0, stream>>>(n, size, landmarks,
                                                                                heatmaps, out);
    return cudaGetLastError();
}
