/* Private: the GPU pose path's kernel (cuda_vision_pose.cu), beside the
 * face pipeline's stages (cuda_vision.h: its letterbox and crop kernels
 * serve the pose models too). Launchers enqueue and return the launch's
 * error; pointers are device pointers. */
#ifndef OMMA_VISION_CUDA_VISION_POSE_H
#define OMMA_VISION_CUDA_VISION_POSE_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* For each of n crops: its 39 x 5 raw landmarks (crop pixels of `size`)
 * with x and y refined from its 64 x 64 x 39 heatmap (vis_pose_refine,
 * pose_refine.h), the other values copied, to out (39 x 5 per crop). So
 * only the refined landmarks cross PCIe, not the heatmaps. */
cudaError_t vis_cuda_pose_refine(int n, int size, const float *landmarks, const float *heatmaps,
                                 float *out, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
