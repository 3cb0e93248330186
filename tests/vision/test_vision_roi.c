/* ROIs from detections and landmarks, the crop's affine map and its
 * inverse, landmark back-projection, and the rotated crop on a synthetic
 * frame whose pixels encode their own position. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "testing.h"
#include "vision/crop_ref.h"
#include "vision/face_roi.h"

static const float pi = 3.14159265358979f;

static omma_detection detection(float x0, float y0, float x1, float y1, float ex0, float ey0,
                                float ex1, float ey1)
{
    omma_detection d;
    memset(&d, 0, sizeof d);
    d.score = 0.9f;
    d.box.xmin = x0, d.box.ymin = y0, d.box.xmax = x1, d.box.ymax = y1;
    d.keypoints[0][0] = ex0, d.keypoints[0][1] = ey0;
    d.keypoints[1][0] = ex1, d.keypoints[1][1] = ey1;
    return d;
}

static void test_roi_from_detection(void)
{
    omma_detection d = detection(100, 50, 180, 110, 120, 70, 160, 70);
    vis_roi r = vis_roi_from_detection(&d);
    CHECK_NEAR(r.cx, 140, 1e-4);
    CHECK_NEAR(r.cy, 80, 1e-4);
    CHECK_NEAR(r.w, 120, 1e-4); /* 1.5 x the long side (80) */
    CHECK_NEAR(r.h, 120, 1e-4);
    CHECK_NEAR(r.rotation, 0, 1e-6);
    /* Eyes one above the other, left eye lower: face turned clockwise. */
    d = detection(0, 0, 10, 40, 5, 10, 5, 30);
    r = vis_roi_from_detection(&d);
    CHECK_NEAR(r.rotation, pi / 2, 1e-5);
    CHECK_NEAR(r.w, 60, 1e-4);
    d = detection(0, 0, 10, 10, 5, 30, 5, 10);
    CHECK_NEAR(vis_roi_from_detection(&d).rotation, -pi / 2, 1e-5);
    /* Upside down: normalized into [-pi, pi). */
    d = detection(0, 0, 10, 10, 8, 5, 2, 5);
    CHECK_NEAR(fabsf(vis_roi_from_detection(&d).rotation), pi, 1e-5);
    /* 30 degrees clockwise on screen (y down). */
    d = detection(0, 0, 10, 10, 0, 0, cosf(pi / 6), sinf(pi / 6));
    CHECK_NEAR(vis_roi_from_detection(&d).rotation, pi / 6, 1e-5);
}

static void test_roi_from_landmarks(void)
{
    static float lm[OMMA_FACE_LANDMARKS * 3];
    /* Points on a 40 x 60 box at (200, 100), eyes 33 and 263 level. */
    for (int i = 0; i < OMMA_FACE_LANDMARKS; i++) {
        lm[3 * i] = 200 + (float)(i % 9) * 5;
        lm[3 * i + 1] = 100 + (float)(i % 13) * 5;
        lm[3 * i + 2] = (float)i;
    }
    lm[3 * 33] = 205, lm[3 * 33 + 1] = 120;
    lm[3 * 263] = 235, lm[3 * 263 + 1] = 120;
    omma_box box;
    vis_roi r = vis_roi_from_landmarks(lm, &box);
    CHECK(box.xmin == 200 && box.xmax == 240 && box.ymin == 100 && box.ymax == 160);
    CHECK_NEAR(r.cx, 220, 1e-4);
    CHECK_NEAR(r.cy, 130, 1e-4);
    CHECK_NEAR(r.w, 90, 1e-4);
    CHECK_NEAR(r.h, 90, 1e-4);
    CHECK_NEAR(r.rotation, 0, 1e-6);
    lm[3 * 263] = 205, lm[3 * 263 + 1] = 150; /* left eye straight below */
    CHECK_NEAR(vis_roi_from_landmarks(lm, NULL).rotation, pi / 2, 1e-5);
}

static void apply(const float m[6], float u, float v, float *x, float *y)
{
    *x = m[0] * u + m[1] * v + m[2];
    *y = m[3] * u + m[4] * v + m[5];
}

static void test_crop_transform(void)
{
    vis_roi r = {100, 50, 96, 96, 0};
    float m[6], inv[6], x, y;
    vis_roi_crop_to_frame(&r, 192, m);
    apply(m, 96, 96, &x, &y);
    CHECK_NEAR(x, 100, 1e-4);
    CHECK_NEAR(y, 50, 1e-4);
    apply(m, 0, 0, &x, &y);
    CHECK_NEAR(x, 52, 1e-4);
    CHECK_NEAR(y, 2, 1e-4);
    /* Turned +90 degrees: the crop's right edge middle lies below the
     * centre, its bottom edge middle left of it. */
    r.rotation = pi / 2;
    vis_roi_crop_to_frame(&r, 192, m);
    apply(m, 192, 96, &x, &y);
    CHECK_NEAR(x, 100, 1e-3);
    CHECK_NEAR(y, 98, 1e-3);
    apply(m, 96, 192, &x, &y);
    CHECK_NEAR(x, 52, 1e-3);
    CHECK_NEAR(y, 50, 1e-3);
    /* The inverse, on a non-square rotated ROI. */
    vis_roi q = {321.5f, 87.25f, 140, 90, 0.7f};
    vis_roi_crop_to_frame(&q, 192, m);
    vis_roi_frame_to_crop(&q, 192, inv);
    for (int k = 0; k < 4; k++) {
        float u = 13.0f + 50 * (float)k, v = 170.0f - 41 * (float)k, fu, fv;
        apply(m, u, v, &x, &y);
        apply(inv, x, y, &fu, &fv);
        CHECK_NEAR(fu, u, 1e-3);
        CHECK_NEAR(fv, v, 1e-3);
    }
    vis_roi zero = {1, 1, 0, 0, 0};
    vis_roi_frame_to_crop(&zero, 192, inv);
    CHECK(inv[0] == 0 && inv[4] == 0 && inv[2] == 0);
}

static void test_landmark_back_projection(void)
{
    vis_roi r = {100, 50, 96, 96, pi / 2};
    float in[6] = {96, 96, 10, 192, 96, -4}, out[6];
    vis_landmarks_to_frame(&r, 192, in, 2, out);
    CHECK_NEAR(out[0], 100, 1e-3);
    CHECK_NEAR(out[1], 50, 1e-3);
    CHECK_NEAR(out[2], 5, 1e-5); /* z scaled like x: 96 / 192 */
    CHECK_NEAR(out[3], 100, 1e-3);
    CHECK_NEAR(out[4], 98, 1e-3);
    CHECK_NEAR(out[5], -2, 1e-5);
    vis_landmarks_to_frame(&r, 192, in, 2, in); /* in place */
    CHECK(memcmp(in, out, sizeof out) == 0);
    CHECK(vis_face_presence(0.0f) == 0.5f);
    CHECK(vis_face_presence(5.0f) > 0.99f && vis_face_presence(-5.0f) < 0.01f);
}

static void test_crop_ref_rotated(void)
{
    /* R = x, G = y, B = 7: the bilinear value at continuous (x, y) is
     * (x - 0.5, y - 0.5) away from the edges. */
    enum { W = 200, H = 150, P = 3 * W + 5 };
    uint8_t *px = malloc((size_t)P * H);
    float *out = malloc(64 * 64 * 3 * sizeof *out);
    if (!px || !out) {
        CHECK(!"out of memory");
        goto done;
    }
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            uint8_t *p = px + (size_t)y * P + 3 * (size_t)x;
            p[0] = (uint8_t)x, p[1] = (uint8_t)y, p[2] = 7;
        }
    omma_frame f = {W, H, OMMA_PIXEL_RGB, {px, NULL, NULL}, {P, 0, 0}, OMMA_MEMORY_HOST};
    vis_roi r = {100, 70, 64, 64, pi / 2};
    REQUIRE_OK(vis_crop_ref(&f, &r, 64, out));
    float m[6], worst = 0;
    vis_roi_crop_to_frame(&r, 64, m);
    for (int v = 0; v < 64; v++)
        for (int u = 0; u < 64; u++) {
            float x, y;
            apply(m, (float)u + 0.5f, (float)v + 0.5f, &x, &y);
            const float *o = out + (v * 64 + u) * 3;
            worst = fmaxf(worst, fabsf(o[0] * 255 - (x - 0.5f)));
            worst = fmaxf(worst, fabsf(o[1] * 255 - (y - 0.5f)));
            worst = fmaxf(worst, fabsf(o[2] * 255 - 7));
        }
    CHECK(worst < 2e-3f);
    /* The crop's first row runs down the frame (rotation +90). */
    CHECK(out[(0 * 64 + 63) * 3 + 1] > out[(0 * 64 + 0) * 3 + 1] + 0.2f);
    /* Outside the frame the edge replicates: up and left of the corner
     * everything is pixel (0, 0); past the right edge, column W - 1. */
    vis_roi off = {-100, -100, 20, 20, 0.3f};
    REQUIRE_OK(vis_crop_ref(&f, &off, 64, out));
    int bad = 0;
    for (int i = 0; i < 64 * 64; i++)
        bad += out[3 * i] != 0.0f || out[3 * i + 1] != 0.0f || fabsf(out[3 * i + 2] * 255 - 7) > 1e-4f;
    CHECK(bad == 0);
    vis_roi right = {W + 40, 75, 20, 20, 0.0f};
    REQUIRE_OK(vis_crop_ref(&f, &right, 64, out));
    bad = 0;
    for (int y = 0; y < 64; y++)
        for (int x = 0; x < 64; x++) {
            const float *o = out + (y * 64 + x) * 3;
            float row = 65.0f + ((float)y + 0.5f) * 20 / 64 - 0.5f;
            bad += fabsf(o[0] * 255 - (float)(W - 1)) > 1e-4f || fabsf(o[1] * 255 - row) > 1e-3f;
        }
    CHECK(bad == 0);

    /* Bad arguments. */
    CHECK_FAILS(vis_crop_ref(&f, NULL, 64, out), OMMA_ERR_INVALID_ARG, "NULL ROI");
    vis_roi broken = {10, 10, 0, 0, 0};
    CHECK_FAILS(vis_crop_ref(&f, &broken, 64, out), OMMA_ERR_INVALID_ARG, "ROI 0x0");
    broken.w = broken.h = NAN;
    CHECK_FAILS(vis_crop_ref(&f, &broken, 64, out), OMMA_ERR_INVALID_ARG, "ROI nan");
    CHECK_FAILS(vis_crop_ref(&f, &r, 0, out), OMMA_ERR_INVALID_ARG, "crop size 0");
    omma_frame g = f;
    g.pitch[0] = 3 * W - 1;
    CHECK_FAILS(vis_crop_ref(&g, &r, 64, out), OMMA_ERR_INVALID_ARG, "smaller than its row");
    g = f, g.format = OMMA_PIXEL_I420;
    CHECK_FAILS(vis_crop_ref(&g, &r, 64, out), OMMA_ERR_INVALID_ARG, "I420 frame: plane 1 is NULL");
done:
    free(px);
    free(out);
}

static void test_crop_ref_nv12(void)
{
    /* A flat BT.601 limited-range red (Y 81, U 90, V 240), odd size. */
    enum { W = 33, H = 17, CW = 17, CH = 9 };
    uint8_t y[W * H], uv[2 * CW * CH];
    memset(y, 81, sizeof y);
    for (int i = 0; i < CW * CH; i++)
        uv[2 * i] = 90, uv[2 * i + 1] = 240;
    omma_frame f = {W, H, OMMA_PIXEL_NV12, {y, uv, NULL}, {W, 2 * CW, 0}, OMMA_MEMORY_HOST};
    vis_roi r = {16, 8, 10, 10, 1.0f};
    float out[8 * 8 * 3];
    REQUIRE_OK(vis_crop_ref(&f, &r, 8, out));
    for (int i = 0; i < 8 * 8; i++) {
        CHECK_NEAR(out[3 * i], 1.0, 0.01);
        CHECK_NEAR(out[3 * i + 1], 0.0, 0.01);
        CHECK_NEAR(out[3 * i + 2], 0.0, 0.01);
    }
}

int main(void)
{
    RUN(test_roi_from_detection);
    RUN(test_roi_from_landmarks);
    RUN(test_crop_transform);
    RUN(test_landmark_back_projection);
    RUN(test_crop_ref_rotated);
    RUN(test_crop_ref_nv12);
    return testing_finish();
}
