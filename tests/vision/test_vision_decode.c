/* SSD anchors against hand-computed values and the test-support table, and
 * the detection decoder (weighted NMS, threshold, max faces, letterbox) on
 * hand-made raw tensors. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "support/blazeface_decode.h"
#include "testing.h"
#include "vision/anchors.h"
#include "vision/detect_decode.h"

static void test_short_range_anchors(void)
{
    vis_anchor_options o;
    vis_anchor_options_short_range(&o);
    int n = -1;
    REQUIRE_OK(vis_anchors_generate(&o, NULL, 0, &n));
    CHECK(n == 896);
    vis_anchor *a = malloc(896 * sizeof *a);
    REQUIRE(a);
    omma_status st = vis_anchors_generate(&o, a, 896, &n);
    CHECK(st == OMMA_OK && n == 896);
    if (st == OMMA_OK) {
        /* 16x16 cells of 2 anchors (stride 8), then 8x8 cells of 6 (the
         * three stride-16 layers share a grid). */
        CHECK(a[0].x == 0.5f / 16 && a[0].y == 0.5f / 16 && a[0].w == 1.0f && a[0].h == 1.0f);
        CHECK(a[1].x == a[0].x && a[1].y == a[0].y);
        CHECK(a[2].x == 1.5f / 16 && a[2].y == 0.5f / 16);
        CHECK(a[511].x == 15.5f / 16 && a[511].y == 15.5f / 16);
        CHECK(a[512].x == 0.5f / 8 && a[512].y == 0.5f / 8);
        CHECK(a[517].x == 0.5f / 8 && a[518].x == 1.5f / 8);
        CHECK(a[895].x == 7.5f / 8 && a[895].y == 7.5f / 8);
        /* Every centre: cell i / 2 of 16x16, then cell (i - 512) / 6 of 8x8. */
        int diff = 0;
        for (int i = 0; i < 896; i++) {
            int c = i < 512 ? i / 2 : (i - 512) / 6, g = i < 512 ? 16 : 8;
            diff += a[i].x != ((float)(c % g) + 0.5f) / (float)g ||
                    a[i].y != ((float)(c / g) + 0.5f) / (float)g || a[i].w != 1.0f;
        }
        CHECK(diff == 0);
        /* The test-support table the engine tests use is this one. */
        float xy[2 * 896];
        CHECK(bf_anchors(BF_SHORT_RANGE, xy) == 896 && bf_anchor_count(BF_SHORT_RANGE) == 896);
        CHECK(xy[2 * 895] == a[895].x && xy[2 * 600 + 1] == a[600].y);
    }
    /* Sizes when not fixed: layer scales 0.1484375 + k * (0.75 - 0.1484375) / 3,
     * the interpolated anchor sqrt(s_k * s_k+1) (1 after the last layer). */
    o.fixed_anchor_size = 0;
    st = vis_anchors_generate(&o, a, 896, &n);
    CHECK(st == OMMA_OK);
    if (st == OMMA_OK) {
        double s0 = 0.1484375, s1 = s0 + (0.75 - s0) / 3, s2 = s0 + 2 * (0.75 - s0) / 3, s3 = 0.75;
        CHECK_NEAR(a[0].w, s0, 1e-6);
        CHECK_NEAR(a[1].w, sqrt(s0 * s1), 1e-6);
        CHECK_NEAR(a[512].w, s1, 1e-6);
        CHECK_NEAR(a[513].w, sqrt(s1 * s2), 1e-6);
        CHECK_NEAR(a[514].w, s2, 1e-6);
        CHECK_NEAR(a[515].h, sqrt(s2 * s3), 1e-6);
        CHECK_NEAR(a[516].w, s3, 1e-6);
        CHECK_NEAR(a[517].w, sqrt(s3 * 1.0), 1e-6);
    }
    /* Too small a buffer says how many are needed. */
    CHECK_FAILS(vis_anchors_generate(&o, a, 100, &n), OMMA_ERR_INVALID_ARG, "896 anchors");
    CHECK(n == 0);
    free(a);
}

static void test_full_range_anchors(void)
{
    vis_anchor_options o;
    vis_anchor_options_full_range(&o);
    int n = -1;
    vis_anchor *a = malloc(2304 * sizeof *a);
    REQUIRE(a);
    omma_status st = vis_anchors_generate(&o, a, 2304, &n);
    CHECK(st == OMMA_OK && n == 2304);
    if (st == OMMA_OK) {
        CHECK(a[0].x == 0.5f / 48 && a[0].y == 0.5f / 48 && a[0].w == 1.0f);
        CHECK(a[1].x == 1.5f / 48 && a[1].y == 0.5f / 48);
        CHECK(a[48].x == 0.5f / 48 && a[48].y == 1.5f / 48);
        CHECK(a[2303].x == 47.5f / 48 && a[2303].y == 47.5f / 48);
        int diff = 0;
        for (int i = 0; i < 2304; i++)
            diff += a[i].x != ((float)(i % 48) + 0.5f) / 48 ||
                    a[i].y != ((float)(i / 48) + 0.5f) / 48 || a[i].h != 1.0f;
        CHECK(diff == 0);
        CHECK(bf_anchor_count(BF_FULL_RANGE) == 2304 && bf_input_size(BF_FULL_RANGE) == 192);
        /* One layer: its scale is (min + max) / 2. */
        o.fixed_anchor_size = 0;
        CHECK(vis_anchors_generate(&o, a, 2304, &n) == OMMA_OK);
        CHECK_NEAR(a[0].w, (0.1484375 + 0.75) / 2, 1e-6);
    }
    free(a);
}

static void test_anchor_bad_options(void)
{
    vis_anchor_options o;
    int n;
    vis_anchor_options_short_range(&o);
    o.num_layers = 0;
    CHECK_FAILS(vis_anchors_generate(&o, NULL, 0, &n), OMMA_ERR_INVALID_ARG, "anchor layers 0");
    vis_anchor_options_short_range(&o);
    o.strides[2] = 0;
    CHECK_FAILS(vis_anchors_generate(&o, NULL, 0, &n), OMMA_ERR_INVALID_ARG, "stride 0 of layer 2");
    vis_anchor_options_short_range(&o);
    o.input_width = 0;
    CHECK_FAILS(vis_anchors_generate(&o, NULL, 0, &n), OMMA_ERR_INVALID_ARG, "input size 0x128");
    CHECK_FAILS(vis_anchors_generate(NULL, NULL, 0, &n), OMMA_ERR_INVALID_ARG, "NULL");
}

/* Raw tensors for the short-range model, every logit -100 (score 0). */
typedef struct raw {
    vis_anchor anchors[896];
    float boxes[896 * 16];
    float scores[896];
} raw;

static int raw_init(raw *r)
{
    vis_anchor_options o;
    int n;
    vis_anchor_options_short_range(&o);
    memset(r->boxes, 0, sizeof r->boxes);
    for (int i = 0; i < 896; i++)
        r->scores[i] = -100.0f;
    return vis_anchors_generate(&o, r->anchors, 896, &n) == OMMA_OK && n == 896;
}

/* A face at anchor a: box offset (dx, dy) and size s input pixels, keypoint
 * k at offset (dx + k, dy - k). */
static void raw_put(raw *r, int a, float logit, float dx, float dy, float s)
{
    float *b = r->boxes + 16 * a;
    b[0] = dx, b[1] = dy, b[2] = s, b[3] = s;
    for (int k = 0; k < 6; k++)
        b[4 + 2 * k] = dx + (float)k, b[5 + 2 * k] = dy - (float)k;
    r->scores[a] = logit;
}

static float sig(float x)
{
    return 1.0f / (1.0f + expf(-x));
}

/* Anchor index of short-range 16x16 cell (x, y), anchor k of 2: its centre
 * is ((x + 0.5) * 8, (y + 0.5) * 8) input pixels. */
static int cell(int x, int y, int k)
{
    return 2 * (y * 16 + x) + k;
}

static void test_weighted_nms(void)
{
    static raw r;
    REQUIRE(raw_init(&r));
    /* Two overlapping: centres 68 and 72 (IoU 28/36 = 0.78), scores
     * sigmoid(2) and sigmoid(0) = 0.5 (kept: >= 0.5); a far one at 20;
     * one below the threshold; one huge logit (clipped, score 1) far too. */
    raw_put(&r, cell(8, 8, 0), 2.0f, 0.0f, 0.0f, 32.0f);
    raw_put(&r, cell(8, 8, 1), 0.0f, 4.0f, 2.0f, 32.0f);
    raw_put(&r, cell(2, 2, 0), 1.0f, 0.0f, 0.0f, 16.0f);
    raw_put(&r, cell(13, 2, 0), -0.01f, 0.0f, 0.0f, 16.0f);
    raw_put(&r, cell(2, 13, 1), 1000.0f, 0.0f, 0.0f, 16.0f);
    vis_decode_options o;
    vis_decode_options_init(&o, 128);
    vis_letterbox id = vis_letterbox_make(128, 128, 128);
    omma_detection d[4];
    int n = -1;
    REQUIRE_OK(vis_detect_decode(&o, r.anchors, 896, r.boxes, r.scores, &id, d, &n));
    CHECK(n == 3);
    if (n != 3)
        return;
    /* Best first: the clipped one (score exactly 1), then the cluster, then
     * the far one. */
    CHECK(d[0].score == 1.0f);
    CHECK_NEAR(d[0].box.xmin, 20 - 8, 1e-4);
    CHECK_NEAR(d[0].box.ymin, 108 - 8, 1e-4);
    float w1 = sig(2.0f), w2 = 0.5f;
    CHECK_NEAR(d[1].score, w1, 1e-6);
    double cx = (68 * w1 + 72 * w2) / (w1 + w2), cy = (68 * w1 + 70 * w2) / (w1 + w2);
    CHECK_NEAR(d[1].box.xmin, cx - 16, 1e-4);
    CHECK_NEAR(d[1].box.xmax, cx + 16, 1e-4);
    CHECK_NEAR(d[1].box.ymin, cy - 16, 1e-4);
    CHECK_NEAR(d[1].box.ymax, cy + 16, 1e-4);
    for (int k = 0; k < 6; k++) {
        CHECK_NEAR(d[1].keypoints[k][0], cx + k, 1e-4);
        CHECK_NEAR(d[1].keypoints[k][1], cy - k, 1e-4);
    }
    CHECK_NEAR(d[2].score, sig(1.0f), 1e-6);
    CHECK_NEAR(d[2].box.xmin, 12.0, 1e-4);
    CHECK_NEAR(d[2].box.xmax, 28.0, 1e-4);
    CHECK_NEAR(d[2].keypoints[5][1], 20.0 - 5, 1e-4);

    /* A stricter suppression threshold (0.8 > 0.78) keeps the pair apart. */
    o.min_suppression = 0.8f;
    REQUIRE_OK(vis_detect_decode(&o, r.anchors, 896, r.boxes, r.scores, &id, d, &n));
    CHECK(n == 4);
    if (n == 4) {
        CHECK_NEAR(d[1].box.xmin, 68 - 16, 1e-4);
        CHECK_NEAR(d[3].score, 0.5, 1e-6);
        CHECK_NEAR(d[3].box.xmin, 72 - 16, 1e-4);
    }
    /* A higher score threshold drops the 0.5 one: back to 3, unweighted. */
    o.min_suppression = 0.3f;
    o.min_score = 0.6f;
    REQUIRE_OK(vis_detect_decode(&o, r.anchors, 896, r.boxes, r.scores, &id, d, &n));
    CHECK(n == 3);
    if (n == 3)
        CHECK_NEAR(d[1].box.xmin, 68 - 16, 1e-4);
    /* Max faces: the best ones only. */
    o.min_score = 0.5f;
    o.max_faces = 2;
    REQUIRE_OK(vis_detect_decode(&o, r.anchors, 896, r.boxes, r.scores, &id, d, &n));
    CHECK(n == 2);
    CHECK(d[0].score == 1.0f && fabsf(d[1].score - w1) < 1e-6f);
    /* Nothing above the threshold: no detections, no error. */
    o.min_score = 1.1f;
    REQUIRE_OK(vis_detect_decode(&o, r.anchors, 896, r.boxes, r.scores, &id, d, &n));
    CHECK(n == 0);
}

static void test_letterbox_removal(void)
{
    static raw r;
    REQUIRE(raw_init(&r));
    raw_put(&r, cell(8, 8, 0), 3.0f, 0.0f, 0.0f, 32.0f);
    vis_decode_options o;
    vis_decode_options_init(&o, 128);
    /* A 640x480 frame: scale 0.2, 16 rows of border at the top. */
    vis_letterbox lb = vis_letterbox_make(640, 480, 128);
    CHECK_NEAR(lb.scale, 0.2, 1e-7);
    CHECK(lb.offset_x == 0.0f);
    CHECK_NEAR(lb.offset_y, 16.0, 1e-5);
    omma_detection d[4];
    int n;
    REQUIRE_OK(vis_detect_decode(&o, r.anchors, 896, r.boxes, r.scores, &lb, d, &n));
    REQUIRE(n == 1);
    CHECK_NEAR(d[0].box.xmin, (68 - 16) / 0.2, 1e-3);
    CHECK_NEAR(d[0].box.xmax, (68 + 16) / 0.2, 1e-3);
    CHECK_NEAR(d[0].box.ymin, (68 - 16 - 16) / 0.2, 1e-3);
    CHECK_NEAR(d[0].keypoints[2][0], (68 + 2) / 0.2, 1e-3);
    CHECK_NEAR(d[0].keypoints[2][1], (68 - 2 - 16) / 0.2, 1e-3);
}

static void test_decode_non_finite(void)
{
    /* NaN logits score 0 (the clamp maps NaN to -100); a scoring anchor with
     * a NaN box overlaps nothing, not even itself: it comes out alone and
     * the loop still ends. */
    static raw r;
    REQUIRE(raw_init(&r));
    raw_put(&r, cell(8, 8, 0), 3.0f, 0.0f, 0.0f, 32.0f);
    raw_put(&r, cell(2, 2, 0), 2.0f, NAN, 0.0f, 16.0f);
    r.scores[cell(4, 4, 0)] = NAN;
    vis_decode_options o;
    vis_decode_options_init(&o, 128);
    vis_letterbox id = vis_letterbox_make(128, 128, 128);
    omma_detection d[4];
    int n = -1;
    REQUIRE_OK(vis_detect_decode(&o, r.anchors, 896, r.boxes, r.scores, &id, d, &n));
    CHECK(n == 2);
    CHECK(n >= 1 && d[0].score == sig(3.0f) && d[0].box.xmin == 68 - 16);
}

static void test_decode_bad_args(void)
{
    static raw r;
    REQUIRE(raw_init(&r));
    vis_decode_options o;
    vis_decode_options_init(&o, 128);
    vis_letterbox lb = vis_letterbox_make(128, 128, 128);
    omma_detection d[4];
    int n = 7;
    CHECK_FAILS(vis_detect_decode(&o, r.anchors, 896, NULL, r.scores, &lb, d, &n),
                OMMA_ERR_INVALID_ARG, "NULL");
    CHECK(n == 0);
    CHECK_FAILS(vis_detect_decode(&o, r.anchors, 0, r.boxes, r.scores, &lb, d, &n),
                OMMA_ERR_INVALID_ARG, "0 anchors");
    o.max_faces = 0;
    CHECK_FAILS(vis_detect_decode(&o, r.anchors, 896, r.boxes, r.scores, &lb, d, &n),
                OMMA_ERR_INVALID_ARG, "max faces 0");
}

int main(void)
{
    RUN(test_short_range_anchors);
    RUN(test_full_range_anchors);
    RUN(test_anchor_bad_options);
    RUN(test_weighted_nms);
    RUN(test_letterbox_removal);
    RUN(test_decode_non_finite);
    RUN(test_decode_bad_args);
    return testing_finish();
}
