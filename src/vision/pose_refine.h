/* Private: MediaPipe's RefineLandmarksFromHeatmap for BlazePose (pose.h),
 * shared by the CPU reference (pose.c) and the GPU pose path
 * (cuda_vision_pose.cu), so both backends refine with the same code. */
#ifndef OMMA_VISION_POSE_REFINE_H
#define OMMA_VISION_POSE_REFINE_H

#include <math.h>
#include <stddef.h>

#include "vision/hd.h"

#define VIS_POSE_REFINE_HEATMAP 64 /* VIS_POSE_HEATMAP */
#define VIS_POSE_REFINE_CHANNELS 39 /* VIS_POSE_RAW_LANDMARKS */
#define VIS_POSE_REFINE_KERNEL 7
#define VIS_POSE_REFINE_MIN_CONFIDENCE 0.5f

/* One landmark k (normalized crop coordinates *x, *y) refined from the
 * 64 x 64 x 39 heatmap of logits: the sigmoid-weighted mean of the cells
 * in a 7x7 window around it, where the window's best confidence reaches
 * 0.5; left as it is otherwise (or outside the heatmap). */
VIS_HD void vis_pose_refine(const float *heatmap, int k, float *x, float *y)
{
    const int hw = VIS_POSE_REFINE_HEATMAP, ch = VIS_POSE_REFINE_CHANNELS;
    const int off = (VIS_POSE_REFINE_KERNEL - 1) / 2;
    if (!(*x >= 0.0f && *y >= 0.0f))
        return;
    int col = (int)(*x * (float)hw), row = (int)(*y * (float)hw);
    if (col < 0 || col >= hw || row < 0 || row >= hw)
        return;
    int c0 = col - off > 0 ? col - off : 0, c1 = col + off + 1 < hw ? col + off + 1 : hw;
    int r0 = row - off > 0 ? row - off : 0, r1 = row + off + 1 < hw ? row + off + 1 : hw;
    float sum = 0.0f, wc = 0.0f, wr = 0.0f, best = 0.0f;
    for (int r = r0; r < r1; r++)
        for (int c = c0; c < c1; c++) {
            float conf = 1.0f / (1.0f + expf(-heatmap[((size_t)r * hw + c) * ch + k]));
            sum += conf;
            best = fmaxf(best, conf);
            wc += (float)c * conf;
            wr += (float)r * conf;
        }
    if (best >= VIS_POSE_REFINE_MIN_CONFIDENCE && sum > 0.0f) {
        *x = wc / (float)hw / sum;
        *y = wr / (float)hw / sum;
    }
}

#endif
