/* The detector preprocessing from every pixel format, with padded row
 * pitches, on the astronaut photo: all formats give the RGB path's input
 * (exactly for the RGB family, within the YUV round trip for NV12/I420);
 * the RGB path is the engine tests' resize; letterbox borders are exactly
 * black; bad frames are refused with a clear message. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "support/face_inputs.h"
#include "support/png_image.h"
#include "testing.h"
#include "vision/frame.h"
#include "vision/preprocess_ref.h"
#include "vision_frames.h"

#define S 128

static const char *const names[] = {"RGB", "BGR", "RGBA", "BGRA", "NV12", "I420"};

static void test_every_format_matches_rgb(void)
{
    rgb_image img;
    REQUIRE_OK(rgb_image_load_png(FACE_PHOTO, &img));
    float *ref = malloc(S * S * 3 * sizeof *ref), *eng = malloc(S * S * 3 * sizeof *eng);
    float *out = malloc(S * S * 3 * sizeof *out);
    vision_frame b;
    if (!ref || !eng || !out || !vision_frame_build(&img, OMMA_PIXEL_RGB, &b)) {
        CHECK(!"out of memory");
        goto done;
    }
    vis_letterbox lb;
    omma_status st = vis_preprocess_ref(&b.f, S, 1.0f / 127.5f, -1.0f, ref, &lb);
    vision_frame_free(&b);
    CHECK(st == OMMA_OK);
    /* Square photo: no border, and the same input the engine tests feed. */
    CHECK(lb.scale == 0.25f && lb.offset_x == 0.0f && lb.offset_y == 0.0f && lb.size == S);
    face_detector_input(&img, S, eng);
    float worst = 0;
    for (int i = 0; i < S * S * 3; i++)
        worst = fmaxf(worst, fabsf(ref[i] - eng[i]));
    CHECK(worst <= 1e-6f);
    for (int fmt = OMMA_PIXEL_BGR; fmt < OMMA_PIXEL_FORMAT_COUNT; fmt++) {
        if (!vision_frame_build(&img, (omma_pixel_format)fmt, &b)) {
            CHECK(!"out of memory");
            break;
        }
        st = vis_preprocess_ref(&b.f, S, 1.0f / 127.5f, -1.0f, out, NULL);
        vision_frame_free(&b);
        CHECK(st == OMMA_OK);
        double sum = 0;
        float max = 0;
        for (int i = 0; i < S * S * 3; i++) {
            float e = fabsf(out[i] - ref[i]);
            sum += e;
            max = fmaxf(max, e);
        }
        double mean = sum / (S * S * 3);
        fprintf(stderr, "%s vs RGB: mean |diff| %.5f, max %.4f (of the [-1, 1] range)\n",
                names[fmt], mean, max);
        if (fmt <= OMMA_PIXEL_BGRA) {
            CHECK(max == 0.0f);
        } else {
            /* Rounding to 8 bits twice (~1/255 each way in [-1, 1] units)
             * plus 2x2 chroma subsampling at colour edges. */
            CHECK(mean < 0.02);
            CHECK(max < 0.35f);
        }
    }
done:
    free(ref);
    free(eng);
    free(out);
    rgb_image_free(&img);
}

static void test_yuv_coefficients(void)
{
    /* Flat frames: black (Y 16), white (Y 235), pure red (BT.601 limited:
     * Y 81, U 90, V 240). */
    static const uint8_t yuv[3][3] = {{16, 128, 128}, {235, 128, 128}, {81, 90, 240}};
    static const float want[3][3] = {{0, 0, 0}, {255, 255, 255}, {255, 0, 0}};
    for (int c = 0; c < 3; c++) {
        uint8_t y[4 * 4], uv[2 * 2 * 2], u[4], v[4];
        memset(y, yuv[c][0], sizeof y);
        for (int i = 0; i < 4; i++)
            uv[2 * i] = u[i] = yuv[c][1], uv[2 * i + 1] = v[i] = yuv[c][2];
        omma_frame nv12 = {4, 4, OMMA_PIXEL_NV12, {y, uv, NULL}, {4, 4, 0}, OMMA_MEMORY_HOST};
        omma_frame i420 = {4, 4, OMMA_PIXEL_I420, {y, u, v}, {4, 2, 2}, OMMA_MEMORY_HOST};
        float p[3], q[3];
        REQUIRE_OK(vis_frame_check(&nv12));
        REQUIRE_OK(vis_frame_check(&i420));
        vis_frame_texel(&nv12, 1, 2, p);
        vis_frame_texel(&i420, 3, 3, q);
        for (int k = 0; k < 3; k++) {
            CHECK_NEAR(p[k], want[c][k], 2.0);
            CHECK(p[k] == q[k]);
        }
        if (c == 0)
            CHECK(p[0] == 0.0f && p[1] == 0.0f && p[2] == 0.0f);
    }
}

static void test_letterbox_border(void)
{
    rgb_image img, band;
    REQUIRE_OK(rgb_image_load_png(FACE_PHOTO, &img));
    /* A 512x256 band of the photo (rows 128..383): scale 1/4, 32 border
     * rows above and below in the 128x128 input. */
    band.width = 512, band.height = 256, band.rgb = img.rgb + (size_t)128 * 512 * 3;
    float *out = malloc(S * S * 3 * sizeof *out), *want = malloc(S * S * 3 * sizeof *want);
    vision_frame b;
    if (!out || !want || !vision_frame_build(&band, OMMA_PIXEL_NV12, &b)) {
        CHECK(!"out of memory");
        goto done;
    }
    vis_letterbox lb;
    omma_status st = vis_preprocess_ref(&b.f, S, 1.0f / 127.5f, -1.0f, out, &lb);
    vision_frame_free(&b);
    CHECK(st == OMMA_OK);
    CHECK(lb.scale == 0.25f && lb.offset_x == 0.0f && lb.offset_y == 32.0f);
    int bad = 0;
    for (int y = 0; y < S; y++)
        for (int i = 0; i < S * 3; i++)
            if (y < 32 || y >= 96)
                bad += out[y * S * 3 + i] != -1.0f;
    CHECK(bad == 0);
    /* RGB and a tall frame (the transposed case), against the engine tests'
     * sampler over the letterboxed square. */
    if (!vision_frame_build(&band, OMMA_PIXEL_BGRA, &b)) {
        CHECK(!"out of memory");
        goto done;
    }
    st = vis_preprocess_ref(&b.f, S, 2.0f, 0.5f, out, &lb);
    vision_frame_free(&b);
    CHECK(st == OMMA_OK);
    rgb_image_sample(&band, 0.0f, -128.0f, 512.0f, 384.0f, S, S, 2.0f, 0.5f, want);
    float worst = 0;
    for (int i = 0; i < S * S * 3; i++)
        worst = fmaxf(worst, fabsf(out[i] - want[i]));
    CHECK(worst <= 1e-4f);
    CHECK(out[0] == 0.5f && out[S * S * 3 - 1] == 0.5f);

    rgb_image tall = {100, 300, malloc(100 * 300 * 3)};
    if (!tall.rgb) {
        CHECK(!"out of memory");
        goto done;
    }
    for (int y = 0; y < 300; y++)
        memcpy(tall.rgb + (size_t)y * 300, img.rgb + (size_t)y * 512 * 3, 300);
    if (vision_frame_build(&tall, OMMA_PIXEL_RGB, &b)) {
        st = vis_preprocess_ref(&b.f, S, 1.0f, 0.0f, out, &lb);
        vision_frame_free(&b);
        CHECK(st == OMMA_OK);
        CHECK_NEAR(lb.offset_x, (300 - 100) / 2.0 * 128 / 300, 1e-4);
        CHECK(lb.offset_y == 0.0f);
        rgb_image_sample(&tall, -100.0f, 0.0f, 200.0f, 300.0f, S, S, 1.0f, 0.0f, want);
        worst = 0;
        int border_bad = 0;
        for (int y = 0; y < S; y++)
            for (int x = 0; x < S; x++)
                for (int c = 0; c < 3; c++) {
                    int i = (y * S + x) * 3 + c;
                    worst = fmaxf(worst, fabsf(out[i] - want[i]));
                    if (x < 42 || x >= 86) /* content spans x 42.67..85.33 */
                        border_bad += out[i] != 0.0f;
                }
        CHECK(worst <= 1e-3f);
        CHECK(border_bad == 0);
    }
    free(tall.rgb);
done:
    free(out);
    free(want);
    rgb_image_free(&img);
}

static void test_bad_frames(void)
{
    uint8_t px[64 * 3] = {0};
    float out[8 * 8 * 3];
    omma_frame f = {8, 8, OMMA_PIXEL_RGB, {px, NULL, NULL}, {24, 0, 0}, OMMA_MEMORY_HOST};
    REQUIRE_OK(vis_preprocess_ref(&f, 8, 1.0f, 0.0f, out, NULL));
    omma_frame g = f;
    g.width = 0;
    CHECK_FAILS(vis_preprocess_ref(&g, 8, 1.0f, 0.0f, out, NULL), OMMA_ERR_INVALID_ARG,
                "frame size 0x8");
    g = f, g.height = -3;
    CHECK_FAILS(vis_preprocess_ref(&g, 8, 1.0f, 0.0f, out, NULL), OMMA_ERR_INVALID_ARG,
                "frame size 8x-3");
    g = f, g.format = (omma_pixel_format)42;
    CHECK_FAILS(vis_preprocess_ref(&g, 8, 1.0f, 0.0f, out, NULL), OMMA_ERR_INVALID_ARG,
                "unknown pixel format 42");
    g = f, g.pitch[0] = 23;
    CHECK_FAILS(vis_preprocess_ref(&g, 8, 1.0f, 0.0f, out, NULL), OMMA_ERR_INVALID_ARG,
                "RGB frame: pitch 23 of plane 0 is smaller than its row (24 bytes)");
    g = f, g.format = OMMA_PIXEL_BGRA;
    CHECK_FAILS(vis_preprocess_ref(&g, 8, 1.0f, 0.0f, out, NULL), OMMA_ERR_INVALID_ARG,
                "pitch 24 of plane 0 is smaller than its row (32 bytes)");
    g = f, g.planes[0] = NULL;
    CHECK_FAILS(vis_preprocess_ref(&g, 8, 1.0f, 0.0f, out, NULL), OMMA_ERR_INVALID_ARG,
                "RGB frame: plane 0 is NULL");
    g = f, g.format = OMMA_PIXEL_NV12, g.pitch[0] = 8;
    CHECK_FAILS(vis_preprocess_ref(&g, 8, 1.0f, 0.0f, out, NULL), OMMA_ERR_INVALID_ARG,
                "NV12 frame: plane 1 is NULL");
    g.planes[1] = px, g.pitch[1] = 7;
    CHECK_FAILS(vis_preprocess_ref(&g, 8, 1.0f, 0.0f, out, NULL), OMMA_ERR_INVALID_ARG,
                "NV12 frame: pitch 7 of plane 1 is smaller than its row (8 bytes)");
    g = f, g.format = OMMA_PIXEL_I420, g.width = 7, g.pitch[0] = 7, g.planes[1] = px,
    g.pitch[1] = 4, g.planes[2] = px, g.pitch[2] = 3;
    CHECK_FAILS(vis_preprocess_ref(&g, 8, 1.0f, 0.0f, out, NULL), OMMA_ERR_INVALID_ARG,
                "I420 frame: pitch 3 of plane 2 is smaller than its row (4 bytes)");
    CHECK_FAILS(vis_preprocess_ref(NULL, 8, 1.0f, 0.0f, out, NULL), OMMA_ERR_INVALID_ARG,
                "frame is NULL");
    CHECK_FAILS(vis_preprocess_ref(&f, 0, 1.0f, 0.0f, out, NULL), OMMA_ERR_INVALID_ARG,
                "input size 0");
    CHECK_FAILS(vis_preprocess_ref(&f, 8, 1.0f, 0.0f, NULL, NULL), OMMA_ERR_INVALID_ARG,
                "NULL output");
}

int main(void)
{
    RUN(test_every_format_matches_rgb);
    RUN(test_yuv_coefficients);
    RUN(test_letterbox_border);
    RUN(test_bad_frames);
    return testing_finish();
}
