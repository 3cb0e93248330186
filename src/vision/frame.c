/* Frame descriptors: validation and sizes, and the CPU's affine sampler
 * (the per-point sampling is in frame.h, shared with the CUDA kernels). */
#include "vision/frame.h"

#include <stddef.h>

#include "core/error.h"

#define MAX_SIDE 32768

static const char *const format_names[] = {"RGB", "BGR", "RGBA", "BGRA", "NV12", "I420"};

static int plane_count(omma_pixel_format fmt)
{
    return fmt == OMMA_PIXEL_NV12 ? 2 : fmt == OMMA_PIXEL_I420 ? 3 : 1;
}

int vis_frame_row_bytes(const omma_frame *f, int p)
{
    int cw = (f->width + 1) / 2;
    switch (f->format) {
    case OMMA_PIXEL_RGB:
    case OMMA_PIXEL_BGR:
        return p == 0 ? 3 * f->width : 0;
    case OMMA_PIXEL_RGBA:
    case OMMA_PIXEL_BGRA:
        return p == 0 ? 4 * f->width : 0;
    case OMMA_PIXEL_NV12:
        return p == 0 ? f->width : p == 1 ? 2 * cw : 0;
    case OMMA_PIXEL_I420:
        return p == 0 ? f->width : p <= 2 ? cw : 0;
    default:
        return 0;
    }
}

omma_status vis_frame_check(const omma_frame *f)
{
    if (!f)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "frame is NULL");
    if (f->width <= 0 || f->height <= 0 || f->width > MAX_SIDE || f->height > MAX_SIDE)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "frame size %dx%d is not in 1..%d", f->width,
                         f->height, MAX_SIDE);
    if ((int)f->format < 0 || f->format >= OMMA_PIXEL_FORMAT_COUNT)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "unknown pixel format %d", (int)f->format);
    for (int p = 0; p < plane_count(f->format); p++) {
        if (!f->planes[p])
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s frame: plane %d is NULL",
                             format_names[f->format], p);
        if (f->pitch[p] < vis_frame_row_bytes(f, p))
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                             "%s frame: pitch %d of plane %d is smaller than its row (%d bytes)",
                             format_names[f->format], f->pitch[p], p, vis_frame_row_bytes(f, p));
    }
    return OMMA_OK;
}

int vis_frame_plane_rows(const omma_frame *f, int p)
{
    int ch = (f->height + 1) / 2;
    return vis_frame_row_bytes(f, p) == 0 ? 0 : p == 0 ? f->height : ch;
}

void vis_frame_sample_affine(const omma_frame *f, const float m[6], int out_w, int out_h,
                             vis_border border, float scale, float bias, float *out)
{
    for (int oy = 0; oy < out_h; oy++) {
        float v = (float)oy + 0.5f;
        for (int ox = 0; ox < out_w; ox++) {
            float u = (float)ox + 0.5f;
            vis_frame_sample(f, m[0] * u + m[1] * v + m[2], m[3] * u + m[4] * v + m[5], border,
                             scale, bias, out + ((size_t)oy * (size_t)out_w + (size_t)ox) * 3);
        }
    }
}
