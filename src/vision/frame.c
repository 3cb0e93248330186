/* Frame descriptors: validation, pixel fetch in every format, and the
 * bilinear affine sampler shared by the detector preprocessing and the
 * FaceMesh crop. */
#include "vision/frame.h"

#include <math.h>
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

/* BT.601 limited range ("studio swing", what cameras and video codecs
 * produce): Y 16..235 and U, V 16..240 map to R, G, B 0..255 by
 *   R = 1.164 (Y - 16)                 + 1.596 (V - 128)
 *   G = 1.164 (Y - 16) - 0.392 (U - 128) - 0.813 (V - 128)
 *   B = 1.164 (Y - 16) + 2.017 (U - 128)
 * clamped to 0..255 (exact inverse of the RGB -> YCbCr matrix, to 3 digits). */
static void yuv_to_rgb(float y, float u, float v, float rgb[3])
{
    float c = 1.164f * (y - 16.0f), d = u - 128.0f, e = v - 128.0f;
    float r = c + 1.596f * e, g = c - 0.392f * d - 0.813f * e, b = c + 2.017f * d;
    rgb[0] = r < 0.0f ? 0.0f : r > 255.0f ? 255.0f : r;
    rgb[1] = g < 0.0f ? 0.0f : g > 255.0f ? 255.0f : g;
    rgb[2] = b < 0.0f ? 0.0f : b > 255.0f ? 255.0f : b;
}

void vis_frame_texel(const omma_frame *f, int x, int y, float rgb[3])
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
        yuv_to_rgb(row[x], uv[0], uv[1], rgb);
        return;
    case OMMA_PIXEL_I420: {
        size_t cy = (size_t)(y / 2), cx = (size_t)(x / 2);
        yuv_to_rgb(row[x], f->planes[1][cy * (size_t)f->pitch[1] + cx],
                   f->planes[2][cy * (size_t)f->pitch[2] + cx], rgb);
        return;
    }
    default:
        rgb[0] = rgb[1] = rgb[2] = 0.0f;
        return;
    }
}

/* Continuous coordinate -> texel coordinate (centres at integers), with the
 * half-pixel edge clamp that keeps whole-frame resizes free of a black halo. */
static float texel_coord(float p, int n)
{
    float t = p - 0.5f;
    if (t < 0.0f && t > -0.5f)
        t = 0.0f;
    if (t > (float)n - 1.0f && t < (float)n - 0.5f)
        t = (float)n - 1.0f;
    return t;
}

static int clampi(int v, int hi)
{
    return v < 0 ? 0 : v > hi ? hi : v;
}

void vis_frame_sample_affine(const omma_frame *f, const float m[6], int out_w, int out_h,
                             vis_border border, float scale, float bias, float *out)
{
    for (int oy = 0; oy < out_h; oy++) {
        float v = (float)oy + 0.5f;
        for (int ox = 0; ox < out_w; ox++) {
            float u = (float)ox + 0.5f;
            float fx = texel_coord(m[0] * u + m[1] * v + m[2], f->width);
            float fy = texel_coord(m[3] * u + m[4] * v + m[5], f->height);
            float *o = out + ((size_t)oy * (size_t)out_w + (size_t)ox) * 3;
            if (border == VIS_BORDER_REPLICATE) {
                /* Clamping the point = clamping each texel index (and keeps
                 * the int conversion below in range; NaN -> 0). */
                fx = fx > 0.0f ? fminf(fx, (float)(f->width - 1)) : 0.0f;
                fy = fy > 0.0f ? fminf(fy, (float)(f->height - 1)) : 0.0f;
            } else if (!(fx > -1.0f && fy > -1.0f && fx < (float)f->width &&
                         fy < (float)f->height)) {
                /* Far outside: black without touching memory. */
                o[0] = o[1] = o[2] = bias;
                continue;
            }
            float flx = floorf(fx), fly = floorf(fy);
            int ix = (int)flx, iy = (int)fly;
            float wx = fx - flx, wy = fy - fly;
            int ix1 = ix + 1, iy1 = iy + 1;
            if (border == VIS_BORDER_REPLICATE)
                ix1 = clampi(ix1, f->width - 1), iy1 = clampi(iy1, f->height - 1);
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
    }
}
