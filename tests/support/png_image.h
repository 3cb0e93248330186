/* Test support: RGB images from files (the library's PNG/JPEG decoder), and
 * bilinear sampling of a rectangle of one into a float NHWC tensor. */
#ifndef OMMA_TESTS_PNG_IMAGE_H
#define OMMA_TESTS_PNG_IMAGE_H

#include "omma/status.h"

typedef struct rgb_image {
    int width, height;
    unsigned char *rgb; /* width * height * 3, row-major */
} rgb_image;

/* Reads a PNG (any bit depth or colour type; alpha dropped, grey expanded)
 * into 8-bit RGB with io_image_load. OMMA_ERR_IO / OMMA_ERR_FORMAT with the
 * reason. */
omma_status rgb_image_load_png(const char *path, rgb_image *out);

void rgb_image_free(rgb_image *img);

/* Samples the source rectangle [x0, x1) x [y0, y1) (pixel units, may reach
 * outside the image: those samples are black) onto out_w x out_h pixels with
 * bilinear interpolation at pixel centres (no antialiasing, like MediaPipe's
 * image-to-tensor step), writing v * scale + bias per channel into out
 * (out_h * out_w * 3 floats, NHWC). */
void rgb_image_sample(const rgb_image *img, float x0, float y0, float x1, float y1, int out_w,
                      int out_h, float scale, float bias, float *out);

#endif
