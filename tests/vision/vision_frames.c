/* Test frames in every pixel format from an RGB image. */
#include "vision_frames.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint8_t clamp_u8(double v)
{
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : lround(v));
}

void vision_frame_free(vision_frame *b)
{
    for (int i = 0; i < 3; i++)
        free(b->mem[i]);
    memset(b, 0, sizeof *b);
}

static int plane_alloc(vision_frame *b, int p, int row, int rows)
{
    b->f.pitch[p] = row + VISION_FRAME_PAD;
    b->mem[p] = malloc((size_t)b->f.pitch[p] * (size_t)rows);
    if (!b->mem[p])
        return 0;
    memset(b->mem[p], 0xAB, (size_t)b->f.pitch[p] * (size_t)rows); /* garbage in the padding */
    b->f.planes[p] = b->mem[p];
    return 1;
}

/* RGB -> BT.601 limited range, the inverse of the library's YUV -> RGB
 * (Y = 16 + 0.257 R + 0.504 G + 0.098 B ...), chroma averaged over 2x2. */
static int build(const rgb_image *img, omma_pixel_format fmt, vision_frame *b)
{
    int w = img->width, h = img->height, cw = (w + 1) / 2, ch = (h + 1) / 2;
    memset(b, 0, sizeof *b);
    b->f.width = w, b->f.height = h, b->f.format = fmt;
    const uint8_t *src = img->rgb;
    if (fmt <= OMMA_PIXEL_BGRA) {
        int bpp = fmt == OMMA_PIXEL_RGB || fmt == OMMA_PIXEL_BGR ? 3 : 4;
        int swap = fmt == OMMA_PIXEL_BGR || fmt == OMMA_PIXEL_BGRA;
        if (!plane_alloc(b, 0, w * bpp, h))
            return 0;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                const uint8_t *s = src + ((size_t)y * w + x) * 3;
                uint8_t *d = b->mem[0] + (size_t)y * b->f.pitch[0] + (size_t)x * bpp;
                d[0] = s[swap ? 2 : 0], d[1] = s[1], d[2] = s[swap ? 0 : 2];
                if (bpp == 4)
                    d[3] = (uint8_t)(x * 7 + y); /* alpha must not matter */
            }
        return 1;
    }
    if (!plane_alloc(b, 0, w, h))
        return 0;
    if (fmt == OMMA_PIXEL_NV12 ? !plane_alloc(b, 1, 2 * cw, ch)
                               : !plane_alloc(b, 1, cw, ch) || !plane_alloc(b, 2, cw, ch))
        return 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const uint8_t *s = src + ((size_t)y * w + x) * 3;
            b->mem[0][(size_t)y * b->f.pitch[0] + x] =
                clamp_u8(16 + 0.257 * s[0] + 0.504 * s[1] + 0.098 * s[2]);
        }
    for (int y = 0; y < ch; y++)
        for (int x = 0; x < cw; x++) {
            double u = 0, v = 0;
            int k = 0;
            for (int dy = 0; dy < 2; dy++)
                for (int dx = 0; dx < 2; dx++) {
                    int sx = 2 * x + dx, sy = 2 * y + dy;
                    if (sx >= w || sy >= h)
                        continue;
                    const uint8_t *s = src + ((size_t)sy * w + sx) * 3;
                    u += 128 - 0.148 * s[0] - 0.291 * s[1] + 0.439 * s[2];
                    v += 128 + 0.439 * s[0] - 0.368 * s[1] - 0.071 * s[2];
                    k++;
                }
            if (fmt == OMMA_PIXEL_NV12) {
                uint8_t *d = b->mem[1] + (size_t)y * b->f.pitch[1] + 2 * (size_t)x;
                d[0] = clamp_u8(u / k), d[1] = clamp_u8(v / k);
            } else {
                b->mem[1][(size_t)y * b->f.pitch[1] + x] = clamp_u8(u / k);
                b->mem[2][(size_t)y * b->f.pitch[2] + x] = clamp_u8(v / k);
            }
        }
    return 1;
}


int vision_frame_build(const rgb_image *img, omma_pixel_format fmt, vision_frame *b)
{
    if (build(img, fmt, b))
        return 1;
    vision_frame_free(b);
    return 0;
}
