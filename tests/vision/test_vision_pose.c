/* BlazePose's vision stages (vision/pose.c) on hand-made values: the 2254
 * anchors of pose_detection, the decoding of one confident anchor through
 * a letterbox, the region from two alignment points in the four
 * directions, and the landmarks' way back to the frame with the heatmap
 * refinement and the world landmarks' rotation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "testing.h"
#include "vision/pose.h"

static void test_anchors(void)
{
    vis_anchor_options o;
    vis_anchor_options_pose(&o);
    vis_anchor *a = malloc(VIS_POSE_ANCHORS * sizeof *a);
    REQUIRE(a);
    int n = 0;
    REQUIRE_OK(vis_anchors_generate(&o, a, VIS_POSE_ANCHORS, &n));
    CHECK(n == 2254);
    /* 28x28 cells of 2 (stride 8), 14x14 of 2 (16), then 7x7 of 6 (the
     * three stride-32 layers share a grid); fixed size 1. */
    CHECK(a[0].x == 0.5f / 28 && a[0].y == 0.5f / 28 && a[0].w == 1.0f && a[1].x == a[0].x);
    CHECK(a[1568].x == 0.5f / 14 && a[1568].y == 0.5f / 14);
    CHECK(a[1960].x == 0.5f / 7 && a[1965].x == 0.5f / 7 && a[1966].x == 1.5f / 7);
    CHECK(a[2253].x == 6.5f / 7 && a[2253].y == 6.5f / 7);
    free(a);
}

static void test_decode(void)
{
    vis_anchor_options o;
    vis_anchor_options_pose(&o);
    vis_anchor *a = malloc(VIS_POSE_ANCHORS * sizeof *a);
    float *boxes = calloc((size_t)VIS_POSE_ANCHORS * 12, sizeof *boxes);
    float *scores = malloc(VIS_POSE_ANCHORS * sizeof *scores);
    REQUIRE(a && boxes && scores);
    int n = 0;
    REQUIRE_OK(vis_anchors_generate(&o, a, VIS_POSE_ANCHORS, &n));
    for (int i = 0; i < VIS_POSE_ANCHORS; i++)
        scores[i] = -5.0f;
    /* Anchor 1568 (the first of stride 16: centre (8, 8) of 224): box 56
     * wide, 112 high around (+8, +4) of it, i.e. (16, 12); keypoint 0 at
     * (+8, +20), keypoint 1 at (+8, -30). */
    float *r = boxes + 1568 * 12;
    r[0] = 8, r[1] = 4, r[2] = 56, r[3] = 112, r[4] = 8, r[5] = 20, r[6] = 8, r[7] = -30;
    scores[1568] = 3.0f;
    /* A 448x224 frame: scale 0.5, 56 px of border above and below. */
    vis_letterbox lb = vis_letterbox_make(448, 224, 224);
    vis_pose_decode_options d;
    vis_pose_decode_options_init(&d);
    vis_pose_detection det[2];
    REQUIRE_OK(vis_pose_detect_decode(&d, a, VIS_POSE_ANCHORS, boxes, scores, &lb, det, &n));
    REQUIRE(n == 1);
    CHECK_NEAR(det[0].score, 1.0 / (1.0 + exp(-3.0)), 1e-6);
    CHECK_NEAR(det[0].box.xmin, (16 - 28) * 2.0, 1e-3);
    CHECK_NEAR(det[0].box.xmax, (16 + 28) * 2.0, 1e-3);
    CHECK_NEAR(det[0].box.ymin, (12 - 56 - 56) * 2.0, 1e-3);
    CHECK_NEAR(det[0].box.ymax, (12 + 56 - 56) * 2.0, 1e-3);
    CHECK_NEAR(det[0].keypoints[0][0], 32.0, 1e-3);
    CHECK_NEAR(det[0].keypoints[0][1], (28 - 56) * 2.0, 1e-3);
    CHECK_NEAR(det[0].keypoints[1][1], (-22 - 56) * 2.0, 1e-3);
    /* Below the score threshold: nothing. */
    scores[1568] = -1.0f;
    REQUIRE_OK(vis_pose_detect_decode(&d, a, VIS_POSE_ANCHORS, boxes, scores, &lb, det, &n));
    CHECK(n == 0);
    CHECK_FAILS(vis_pose_detect_decode(&d, a, 0, boxes, scores, &lb, det, &n), OMMA_ERR_INVALID_ARG,
                "0 anchors");
    free(a);
    free(boxes);
    free(scores);
}

static void test_roi(void)
{
    const double pi = 3.14159265358979323846;
    /* Upright (point 1 straight above point 0): no rotation; side 2 x 100
     * x 1.25, centred on point 0. */
    vis_roi r = vis_pose_roi_from_points(100, 200, 100, 100);
    CHECK_NEAR(r.rotation, 0.0, 1e-6);
    CHECK(r.cx == 100 && r.cy == 200);
    CHECK_NEAR(r.w, 250.0, 1e-3);
    CHECK(r.w == r.h);
    /* Lying with the head to the right: turned by -90 degrees (clockwise
     * on screen is positive), head to the left: +90, upside down: 180. */
    r = vis_pose_roi_from_points(100, 200, 180, 200);
    CHECK_NEAR(r.rotation, pi / 2, 1e-6);
    r = vis_pose_roi_from_points(100, 200, 20, 200);
    CHECK_NEAR(r.rotation, -pi / 2, 1e-6);
    r = vis_pose_roi_from_points(100, 200, 100, 260);
    CHECK_NEAR(fabs(r.rotation), pi, 1e-6);
}

static void test_landmarks(void)
{
    /* A region of side 512 centred at (300, 200), not rotated: crop pixel
     * (u, v) is frame (300 + 2 (u - 128), 200 + 2 (v - 128)). */
    vis_roi roi = {300, 200, 512, 512, 0};
    float lm[39 * 5] = {0}, world[39 * 3] = {0};
    for (int k = 0; k < 39; k++) {
        lm[5 * k] = 128 + (float)k, lm[5 * k + 1] = 64, lm[5 * k + 2] = 10;
        lm[5 * k + 3] = 0, lm[5 * k + 4] = 100;
        world[3 * k] = 0.1f, world[3 * k + 1] = 0.2f, world[3 * k + 2] = 0.3f;
    }
    lm[33 * 5] = 128, lm[33 * 5 + 1] = 128; /* alignment points: upright */
    lm[34 * 5] = 128, lm[34 * 5 + 1] = 64;
    vis_pose_raw raw = {lm, world, NULL, 0.75f};
    omma_pose p;
    vis_roi next;
    vis_pose_landmarks(&roi, &raw, &p, &next);
    CHECK(p.score == 0.75f);
    CHECK_NEAR(p.landmarks[0].x, 300.0, 1e-3);
    CHECK_NEAR(p.landmarks[0].y, 72.0, 1e-3);
    CHECK_NEAR(p.landmarks[5].x, 310.0, 1e-3);
    CHECK_NEAR(p.landmarks[0].z, 20.0, 1e-4);
    CHECK_NEAR(p.landmarks[0].visibility, 0.5, 1e-6);
    CHECK(p.landmarks[0].presence > 0.999f);
    CHECK_NEAR(p.box.xmin, 300.0, 1e-3);
    CHECK_NEAR(p.box.xmax, 364.0, 1e-3);
    CHECK_NEAR(next.cx, 300.0, 1e-3);
    CHECK_NEAR(next.cy, 200.0, 1e-3);
    CHECK_NEAR(next.w, 2 * 128 * 1.25, 1e-3);
    CHECK_NEAR(next.rotation, 0.0, 1e-6);
    CHECK_NEAR(p.world[0][0], 0.1, 1e-6);
    /* Rotated by 90 degrees: the world landmarks turn with it. */
    roi.rotation = 1.57079632679489661923f;
    vis_pose_landmarks(&roi, &raw, &p, NULL);
    CHECK_NEAR(p.world[0][0], -0.2, 1e-6);
    CHECK_NEAR(p.world[0][1], 0.1, 1e-6);
    CHECK_NEAR(p.world[0][2], 0.3, 1e-6);
    /* Heatmap refinement: landmark 0 at crop (128, 64) is heatmap cell
     * (32, 16); a confident blob at cells (34, 16) and (34, 17) moves it to
     * their middle, (34, 16.5) / 64 of the crop. */
    roi.rotation = 0;
    float *hm = malloc(64 * 64 * 39 * sizeof *hm);
    REQUIRE(hm);
    for (int i = 0; i < 64 * 64 * 39; i++)
        hm[i] = -30.0f;
    hm[(16 * 64 + 34) * 39] = 30.0f;
    hm[(17 * 64 + 34) * 39] = 30.0f;
    raw.heatmap = hm;
    vis_pose_landmarks(&roi, &raw, &p, NULL);
    CHECK_NEAR(p.landmarks[0].x, 300 + 2 * (34.0 / 64 * 256 - 128), 1e-2);
    CHECK_NEAR(p.landmarks[0].y, 200 + 2 * (16.5 / 64 * 256 - 128), 1e-2);
    CHECK_NEAR(p.landmarks[1].x, 302.0, 1e-3); /* not confident there: unchanged */
    free(hm);
}

int main(void)
{
    RUN(test_anchors);
    RUN(test_decode);
    RUN(test_roi);
    RUN(test_landmarks);
    return testing_finish();
}
