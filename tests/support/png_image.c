/* Test images through the library's decoder (src/io/image_file.c),
 * and bilinear sampling. */
#include "support/png_image.h"

#include <math.h>
#include <stdlib.h>

#include "io/image_file.h"

omma_status rgb_image_load_png(const char *path, rgb_image *out)
{
    io_image img;
    omma_status st = io_image_load(path, &img);
    out->width = img.width;
    out->height = img.height;
    out->rgb = img.rgb;
    return st;
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
