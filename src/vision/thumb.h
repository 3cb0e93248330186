/* Private: preview thumbnails of frames (the live view, src/ui): any
 * omma_pixel_format -> a small packed RGB8 image, aspect kept. One source
 * for the CPU (vis_thumb_ref) and the GPU (vis_cuda_thumb in
 * cuda_vision.h): each output pixel averages n x n bilinear samples
 * (vis_frame_sample) spread over its footprint in the frame, n the
 * downscale factor rounded up, 1..4, so a 1080p frame shrunk 12 times
 * reads as a box filter rather than as every twelfth pixel. */
#ifndef OMMA_VISION_THUMB_H
#define OMMA_VISION_THUMB_H

#include <stdint.h>

#include "omma/face.h"
#include "omma/status.h"
#include "vision/frame.h"

#define VIS_THUMB_MAX_SIDE 1280

/* The size of a thumbnail of a w x h frame whose longer side is at most
 * max_side (never larger than the frame; each side at least 1). */
VIS_HD void vis_thumb_size(int w, int h, int max_side, int *tw, int *th)
{
    int big = w > h ? w : h;
    if (big <= max_side) {
        *tw = w, *th = h;
        return;
    }
    long long a = (long long)w * max_side / big, b = (long long)h * max_side / big;
    *tw = a < 1 ? 1 : (int)a;
    *th = b < 1 ? 1 : (int)b;
}

/* Output pixel (ox, oy) of a tw x th thumbnail of f, as R G B bytes. */
VIS_HD void vis_thumb_pixel(const omma_frame *f, int tw, int th, int ox, int oy, uint8_t out[3])
{
    float sx = (float)f->width / (float)tw, sy = (float)f->height / (float)th;
    float s = sx > sy ? sx : sy;
    int n = (int)ceilf(s);
    n = n < 1 ? 1 : n > 4 ? 4 : n;
    float acc[3] = {0.0f, 0.0f, 0.0f};
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) {
            float x = ((float)ox + ((float)i + 0.5f) / (float)n) * sx;
            float y = ((float)oy + ((float)j + 0.5f) / (float)n) * sy;
            float o[3];
            vis_frame_sample(f, x, y, VIS_BORDER_REPLICATE, 1.0f, 0.0f, o);
            acc[0] += o[0], acc[1] += o[1], acc[2] += o[2];
        }
    float k = 1.0f / (float)(n * n);
    for (int c = 0; c < 3; c++) {
        float v = acc[c] * k + 0.5f;
        out[c] = (uint8_t)(v < 0.0f ? 0.0f : v > 255.0f ? 255.0f : v);
    }
}

/* The CPU reference: the tw x th thumbnail (tw, th in 1..VIS_THUMB_MAX_SIDE)
 * of a host frame into out (tw * th * 3 bytes, packed RGB).
 * Errors: OMMA_ERR_INVALID_ARG (a bad frame: vis_frame_check's message, a
 * frame not in host memory, NULL out, a size out of range). */
omma_status vis_thumb_ref(const omma_frame *f, int tw, int th, uint8_t *out);

#endif
