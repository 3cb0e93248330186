/* The live view's thumbnails on the CPU (vision/thumb.h): sizes, the
 * astronaut photo shrunk in every pixel format compared with the mean of
 * the source pixels each thumbnail pixel covers, the YUV formats against
 * RGB, and the errors. */
#include <stdlib.h>

#include "support/png_image.h"
#include "testing.h"
#include "vision/thumb.h"
#include "vision_frames.h"

static void test_sizes(void)
{
    int w, h;
    vis_thumb_size(1920, 1080, 320, &w, &h);
    CHECK(w == 320 && h == 180);
    vis_thumb_size(1080, 1920, 640, &w, &h);
    CHECK(w == 360 && h == 640);
    vis_thumb_size(512, 512, 640, &w, &h); /* never larger than the frame */
    CHECK(w == 512 && h == 512);
    vis_thumb_size(32768, 2, 320, &w, &h); /* a side never 0 */
    CHECK(w == 320 && h == 1);
}

/* The mean of img's pixels over the thumbnail pixel (x, y)'s footprint. */
static void footprint_mean(const rgb_image *img, int tw, int th, int x, int y, double m[3])
{
    double sx = (double)img->width / tw, sy = (double)img->height / th;
    int x0 = (int)(x * sx), x1 = (int)((x + 1) * sx), y0 = (int)(y * sy), y1 = (int)((y + 1) * sy);
    double n = 0;
    m[0] = m[1] = m[2] = 0;
    for (int j = y0; j < y1; j++)
        for (int i = x0; i < x1; i++, n++)
            for (int c = 0; c < 3; c++)
                m[c] += img->rgb[((size_t)j * img->width + i) * 3 + c];
    for (int c = 0; c < 3; c++)
        m[c] /= n;
}

static void test_astronaut(void)
{
    rgb_image img;
    REQUIRE_OK(rgb_image_load_png(OMMA_TESTDATA_DIR "/astronaut.png", &img));
    int tw, th;
    vis_thumb_size(img.width, img.height, 128, &tw, &th);
    REQUIRE(tw == 128 && th == 128);
    uint8_t *rgb = malloc((size_t)tw * th * 3), *other = malloc((size_t)tw * th * 3);
    REQUIRE(rgb && other);
    vision_frame b;
    REQUIRE(vision_frame_build(&img, OMMA_PIXEL_RGB, &b));
    REQUIRE_OK(vis_thumb_ref(&b.f, tw, th, rgb));
    vision_frame_free(&b);
    /* Each pixel: the mean of the 4 x 4 source pixels it covers, within
     * what bilinear taps between pixel centres move it. */
    double worst = 0, sum = 0;
    for (int y = 0; y < th; y++)
        for (int x = 0; x < tw; x++) {
            double m[3];
            footprint_mean(&img, tw, th, x, y, m);
            for (int c = 0; c < 3; c++) {
                double d = fabs(rgb[((size_t)y * tw + x) * 3 + c] - m[c]);
                worst = d > worst ? d : worst;
                sum += d;
            }
        }
    double mean = sum / (tw * th * 3);
    fprintf(stderr, "  RGB thumbnail vs footprint means: mean |d| %.2f, max %.1f\n", mean, worst);
    CHECK(mean < 0.5 && worst <= 1.0); /* 4 x 4 taps on pixel centres: the box filter */
    /* Every other format gives the same picture (YUV: within the
     * conversion's rounding and the chroma's half resolution). */
    for (int f = OMMA_PIXEL_BGR; f < OMMA_PIXEL_FORMAT_COUNT; f++) {
        REQUIRE(vision_frame_build(&img, (omma_pixel_format)f, &b));
        REQUIRE_OK(vis_thumb_ref(&b.f, tw, th, other));
        vision_frame_free(&b);
        double s = 0;
        int big = 0;
        for (int i = 0; i < tw * th * 3; i++) {
            int d = abs(other[i] - rgb[i]);
            s += d;
            big = d > big ? d : big;
        }
        int yuv = f == OMMA_PIXEL_NV12 || f == OMMA_PIXEL_I420;
        fprintf(stderr, "  format %d vs RGB: mean |d| %.2f, max %d\n", f, s / (tw * th * 3), big);
        CHECK(yuv ? s / (tw * th * 3) < 4.0 : big == 0);
    }
    free(rgb);
    free(other);
    rgb_image_free(&img);
}

static void test_errors(void)
{
    uint8_t out[12];
    uint8_t px[12] = {0};
    omma_frame f = {2, 2, OMMA_PIXEL_RGB, {px, NULL, NULL}, {6, 0, 0}, OMMA_MEMORY_HOST};
    CHECK(vis_thumb_ref(&f, 2, 2, out) == OMMA_OK);
    CHECK_FAILS(vis_thumb_ref(&f, 0, 2, out), OMMA_ERR_INVALID_ARG, "size 0x2");
    CHECK_FAILS(vis_thumb_ref(&f, 2, VIS_THUMB_MAX_SIDE + 1, out), OMMA_ERR_INVALID_ARG, "size");
    CHECK_FAILS(vis_thumb_ref(&f, 2, 2, NULL), OMMA_ERR_INVALID_ARG, "NULL out");
    f.memory = OMMA_MEMORY_DEVICE;
    CHECK_FAILS(vis_thumb_ref(&f, 2, 2, out), OMMA_ERR_INVALID_ARG, "not in host memory");
    f.memory = OMMA_MEMORY_HOST;
    f.pitch[0] = 5;
    CHECK_FAILS(vis_thumb_ref(&f, 2, 2, out), OMMA_ERR_INVALID_ARG, "pitch");
}

int main(void)
{
    RUN(test_sizes);
    RUN(test_astronaut);
    RUN(test_errors);
    return testing_finish();
}
