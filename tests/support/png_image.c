/* PNG decoding with libpng's simplified API, and bilinear sampling. */
#include "support/png_image.h"

#include <math.h>
#include <png.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

omma_status rgb_image_load_png(const char *path, rgb_image *out)
{
    memset(out, 0, sizeof *out);
    png_image png;
    memset(&png, 0, sizeof png);
    png.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&png, path))
        return OMMA_FAIL(OMMA_ERR_FORMAT, "png %s: %s", path, png.message);
    png.format = PNG_FORMAT_RGB;
    size_t bytes = PNG_IMAGE_SIZE(png);
    unsigned char *buf = malloc(bytes);
    if (!buf) {
        png_image_free(&png);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "png %s: %zu bytes", path, bytes);
    }
    if (!png_image_finish_read(&png, NULL, buf, 0, NULL)) {
        free(buf);
        omma_status st = OMMA_FAIL(OMMA_ERR_FORMAT, "png %s: %s", path, png.message);
        png_image_free(&png);
        return st;
    }
    out->width = (int)png.width;
    out->height = (int)png.height;
    out->rgb = buf;
    return OMMA_OK;
}

void rgb_image_free(rgb_image *img)
{
    if (!img)
        return;
    free(img->rgb);
    img->rgb = NULL;
}

static float texel(const rgb_image *img, int x, int y, int c)
{
    if (x < 0 || y < 0 || x >= img->width || y >= img->height)
        return 0.0f;
    return img->rgb[((size_t)y * (size_t)img->width + (size_t)x) * 3 + (size_t)c];
}

void rgb_image_sample(const rgb_image *img, float x0, float y0, float x1, float y1, int out_w,
                      int out_h, float scale, float bias, float *out)
{
    float sx = (x1 - x0) / (float)out_w, sy = (y1 - y0) / (float)out_h;
    for (int oy = 0; oy < out_h; oy++) {
        float fy = y0 + ((float)oy + 0.5f) * sy - 0.5f;
        /* Inside the image, clamp to the edge pixel centres (no black halo
         * on whole-image resizes); outside, the texels read black. */
        if (fy < 0.0f && fy > -0.5f)
            fy = 0.0f;
        if (fy > (float)img->height - 1.0f && fy < (float)img->height - 0.5f)
            fy = (float)img->height - 1.0f;
        int iy = (int)floorf(fy);
        float wy = fy - (float)iy;
        for (int ox = 0; ox < out_w; ox++) {
            float fx = x0 + ((float)ox + 0.5f) * sx - 0.5f;
            if (fx < 0.0f && fx > -0.5f)
                fx = 0.0f;
            if (fx > (float)img->width - 1.0f && fx < (float)img->width - 0.5f)
                fx = (float)img->width - 1.0f;
            int ix = (int)floorf(fx);
            float wx = fx - (float)ix;
            for (int c = 0; c < 3; c++) {
                float top = texel(img, ix, iy, c) * (1 - wx) + texel(img, ix + 1, iy, c) * wx;
                float bot = texel(img, ix, iy + 1, c) * (1 - wx) + texel(img, ix + 1, iy + 1, c) * wx;
                float v = top * (1 - wy) + bot * wy;
                out[((size_t)oy * (size_t)out_w + (size_t)ox) * 3 + (size_t)c] = v * scale + bias;
            }
        }
    }
}
