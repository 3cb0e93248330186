/* Private: checking frame descriptors and sampling them (the CPU
 * reference every vision stage reads frames through). The sampling
 * functions are shared with the CUDA kernels (vision/hd.h), which call them
 * on frames whose planes are device pointers. Functions here only read the
 * frame and write their outputs: any thread. */
#ifndef OMMA_VISION_FRAME_H
#define OMMA_VISION_FRAME_H

#include <math.h>
#include <stddef.h>

#include "omma/face.h"
#include "omma/status.h"
#include "vision/hd.h"

/* OMMA_ERR_INVALID_ARG with a message naming the problem for a NULL frame,
 * a zero or negative size (or one above 32768), an unknown format, a NULL
 * plane the format needs, or a pitch smaller than the plane's row. */
omma_status vis_frame_check(const omma_frame *f);

/* Bytes of one row of plane p (0 for planes the format does not use). */
int vis_frame_row_bytes(const omma_frame *f, int p);

/* Rows of plane p (0 for planes the format does not use). */
int vis_frame_plane_rows(const omma_frame *f, int p);

/* BT.601 limited range ("studio swing", what cameras and video codecs
 * produce): Y 16..235 and U, V 16..240 map to R, G, B 0..255 by
 *   R = 1.164 (Y - 16)                 + 1.596 (V - 128)
 *   G = 1.164 (Y - 16) - 0.392 (U - 128) - 0.813 (V - 128)
 *   B = 1.164 (Y - 16) + 2.017 (U - 128)
 * clamped to 0..255 (exact inverse of the RGB -> YCbCr matrix, to 3 digits). */
VIS_HD void vis_yuv_to_rgb(float y, float u, float v, float rgb[3])
{
    float c = 1.164f * (y - 16.0f), d = u - 128.0f, e = v - 128.0f;
    float r = c + 1.596f * e, g = c - 0.392f * d - 0.813f * e, b = c + 2.017f * d;
    rgb[0] = r < 0.0f ? 0.0f : r > 255.0f ? 255.0f : r;
    rgb[1] = g < 0.0f ? 0.0f : g > 255.0f ? 255.0f : g;
    rgb[2] = b < 0.0f ? 0.0f : b > 255.0f ? 255.0f : b;
}

/* Pixel (x, y) as R, G, B in 0..255 (floats; YUV converted as above),
 * black (0, 0, 0) outside the frame. The frame must have passed
 * vis_frame_check. */
VIS_HD void vis_frame_texel(const omma_frame *f, int x, int y, float rgb[3])
{
    if (x < 0 || y < 0 || x >= f->width || y >= f->height) {
        rgb[0] = rgb[1] = rgb[2] = 0.0f;
        return;
    }
    const uint8_t *row = f->planes[0] + (size_t)y * (size_t)f->pitch[0];
    const uint8_t *px, *uv;
    switch (f->format) {
    case OMMA_PIXEL_RGB:
    case OMMA_PIXEL_RGBA:
        px = row + (size_t)x * (f->format == OMMA_PIXEL_RGB ? 3 : 4);
        rgb[0] = px[0], rgb[1] = px[1], rgb[2] = px[2];
        return;
    case OMMA_PIXEL_BGR:
    case OMMA_PIXEL_BGRA:
        px = row + (size_t)x * (f->format == OMMA_PIXEL_BGR ? 3 : 4);
        rgb[0] = px[2], rgb[1] = px[1], rgb[2] = px[0];
        return;
    case OMMA_PIXEL_NV12:
        uv = f->planes[1] + (size_t)(y / 2) * (size_t)f->pitch[1] + (size_t)(x / 2) * 2;
        vis_yuv_to_rgb(row[x], uv[0], uv[1], rgb);
        return;
    case OMMA_PIXEL_I420: {
        size_t cy = (size_t)(y / 2), cx = (size_t)(x / 2);
        vis_yuv_to_rgb(row[x], f->planes[1][cy * (size_t)f->pitch[1] + cx],
                       f->planes[2][cy * (size_t)f->pitch[2] + cx], rgb);
        return;
    }
    default:
        rgb[0] = rgb[1] = rgb[2] = 0.0f;
        return;
    }
}

/* What samples outside the frame read. */
typedef enum vis_border {
    VIS_BORDER_ZERO, /* black (pixel value 0) */
    VIS_BORDER_REPLICATE, /* the nearest edge pixel */
} vis_border;

/* Continuous coordinate -> texel coordinate (centres at integers), with the
 * half-pixel edge clamp that keeps whole-frame resizes free of a black halo. */
VIS_HD float vis_texel_coord(float p, int n)
{
    float t = p - 0.5f;
    if (t < 0.0f && t > -0.5f)
        t = 0.0f;
    if (t > (float)n - 1.0f && t < (float)n - 0.5f)
        t = (float)n - 1.0f;
    return t;
}

/* Bilinear sample of the frame at the continuous point (x, y),
 * interpolating between pixel centres: points within half a pixel inside
 * the frame's edge clamp to the edge pixel centres; further out texels read
 * per `border` (like OpenCV's warpAffine with BORDER_CONSTANT 0 or
 * BORDER_REPLICATE). Writes value * scale + bias per channel, R G B. */
VIS_HD void vis_frame_sample(const omma_frame *f, float x, float y, vis_border border, float scale,
                             float bias, float o[3])
{
    float fx = vis_texel_coord(x, f->width);
    float fy = vis_texel_coord(y, f->height);
    if (border == VIS_BORDER_REPLICATE) {
        /* Clamping the point = clamping each texel index (and keeps the int
         * conversion below in range; NaN -> 0). */
        fx = fx > 0.0f ? fminf(fx, (float)(f->width - 1)) : 0.0f;
        fy = fy > 0.0f ? fminf(fy, (float)(f->height - 1)) : 0.0f;
    } else if (!(fx > -1.0f && fy > -1.0f && fx < (float)f->width && fy < (float)f->height)) {
        /* Far outside: black without touching memory. */
        o[0] = o[1] = o[2] = bias;
        return;
    }
    float flx = floorf(fx), fly = floorf(fy);
    int ix = (int)flx, iy = (int)fly;
    float wx = fx - flx, wy = fy - fly;
    int ix1 = ix + 1, iy1 = iy + 1;
    if (border == VIS_BORDER_REPLICATE) {
        ix1 = ix1 > f->width - 1 ? f->width - 1 : ix1;
        iy1 = iy1 > f->height - 1 ? f->height - 1 : iy1;
    }
    float p00[3], p10[3], p01[3], p11[3];
    vis_frame_texel(f, ix, iy, p00);
    vis_frame_texel(f, ix1, iy, p10);
    vis_frame_texel(f, ix, iy1, p01);
    vis_frame_texel(f, ix1, iy1, p11);
    for (int c = 0; c < 3; c++) {
        float top = p00[c] * (1 - wx) + p10[c] * wx;
        float bot = p01[c] * (1 - wx) + p11[c] * wx;
        o[c] = (top * (1 - wy) + bot * wy) * scale + bias;
    }
}

/* Bilinear resampling through an affine map: output pixel (ox, oy) of an
 * out_w x out_h image reads the frame (vis_frame_sample) at the point
 *   x = m[0] * u + m[1] * v + m[2],  y = m[3] * u + m[4] * v + m[5]
 * with (u, v) = (ox + 0.5, oy + 0.5). Writes R G B, NHWC
 * (out_h * out_w * 3). */
void vis_frame_sample_affine(const omma_frame *f, const float m[6], int out_w, int out_h,
                             vis_border border, float scale, float bias, float *out);

#endif
