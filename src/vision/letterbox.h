/* Private: the aspect-preserving letterbox that fits a frame into the
 * detector's square input, and its inverse: MediaPipe's
 * ImageToTensorCalculator with keep_aspect_ratio (the frame's rectangle
 * grows to a square on its long side, centred, and the square is resized
 * to the input) and DetectionLetterboxRemovalCalculator. Shared by the CPU
 * reference and the CUDA kernels (vision/hd.h). */
#ifndef OMMA_VISION_LETTERBOX_H
#define OMMA_VISION_LETTERBOX_H

#include "vision/hd.h"

/* Input pixel = frame pixel * scale + offset (continuous coordinates, both
 * axes the same scale); the frame is centred, the rest is border. */
typedef struct vis_letterbox {
    int size; /* the input is size x size */
    float scale; /* size / max(width, height) */
    float offset_x; /* (size - width * scale) / 2 */
    float offset_y; /* (size - height * scale) / 2 */
} vis_letterbox;

/* The letterbox of a width x height frame in a size x size input (all > 0). */
VIS_HD vis_letterbox vis_letterbox_make(int width, int height, int size)
{
    vis_letterbox lb;
    int side = width > height ? width : height;
    lb.size = size;
    lb.scale = (float)size / (float)side;
    lb.offset_x = ((float)side - (float)width) * 0.5f * lb.scale;
    lb.offset_y = ((float)side - (float)height) * 0.5f * lb.scale;
    return lb;
}

/* Input pixel -> frame pixel, one coordinate. */
VIS_HD float vis_letterbox_to_frame_x(const vis_letterbox *lb, float x)
{
    return (x - lb->offset_x) / lb->scale;
}
VIS_HD float vis_letterbox_to_frame_y(const vis_letterbox *lb, float y)
{
    return (y - lb->offset_y) / lb->scale;
}

/* The affine map input pixel -> frame point that the letterbox resize
 * samples through (vis_frame_sample_affine's m). */
VIS_HD void vis_letterbox_input_to_frame(const vis_letterbox *lb, float m[6])
{
    float inv = 1.0f / lb->scale;
    m[0] = inv;
    m[1] = 0.0f;
    m[2] = -lb->offset_x * inv;
    m[3] = 0.0f;
    m[4] = inv;
    m[5] = -lb->offset_y * inv;
}

#endif
