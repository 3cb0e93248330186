/* Evidence that the CPU engine computes the face models right, on a real
 * photo: testdata/astronaut.png (512x512, one face), run through the public
 * engine API.
 *
 * The expected face box was derived by looking at the photo, zoomed 4x with
 * a 10-pixel grid over x 140..320, y 40..220 (before running any model):
 * - eye centres at about (204, 101) (image left: the person's right eye) and
 *   (246, 101); nose tip about (224, 127); mouth centre about (224, 145);
 * - the lowest skin of the chin at y ~ 176;
 * - the outer edges of the cheeks (skin, not hair) at x ~ 181 and x ~ 270 at
 *   cheekbone height;
 * - eyebrows at y ~ 90, hairline at y ~ 77.
 * MediaPipe's face box spans cheek to cheek and from the forehead just above
 * the eyebrows to the chin, so the expected box is x 181..270, y 84..176
 * (89 x 92 pixels). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "omma/engine.h"
#include "support/blazeface_decode.h"
#include "support/face_inputs.h"
#include "testing.h"

static const bf_box expected_face = {181.0f / 512, 84.0f / 512, 270.0f / 512, 176.0f / 512};

/* The short-range detection, kept for the FaceMesh crop. */
static bf_detection short_best;
static bool have_short_best;

static int output_with_last_dim(omma_engine *e, int last)
{
    for (int o = 0; o < omma_engine_output_count(e); o++) {
        omma_tensor_info info;
        if (omma_engine_output_info(e, o, &info) == OMMA_OK && info.dims[info.rank - 1] == last)
            return o;
    }
    return -1;
}

static void detect(const char *path, bf_kind kind, bf_detection *best_out)
{
    rgb_image img;
    omma_engine *e = NULL;
    omma_exec *x = NULL;
    float *in, *reg, *cls;
    int size = bf_input_size(kind);
    REQUIRE_OK(rgb_image_load_png(FACE_PHOTO, &img));
    omma_status st = omma_engine_load(NULL, path, NULL, &e);
    if (st == OMMA_OK)
        st = omma_exec_create(e, 1, &x);
    if (st != OMMA_OK) {
        rgb_image_free(&img);
        omma_engine_release(e);
        REQUIRE_OK(st);
    }
    int oreg = output_with_last_dim(e, 16), ocls = output_with_last_dim(e, 1);
    int n = bf_anchor_count(kind);
    omma_tensor_info info;
    CHECK(oreg >= 0 && ocls >= 0);
    if (oreg >= 0 && omma_engine_output_info(e, oreg, &info) == OMMA_OK)
        CHECK(info.dims[1] == n); /* 896 or 2304 anchors, as the model says */
    float *anchors = malloc((size_t)n * 2 * sizeof *anchors);
    if (oreg >= 0 && ocls >= 0 && anchors && omma_exec_input(x, 0, &in) == OMMA_OK &&
        omma_exec_output(x, oreg, &reg) == OMMA_OK && omma_exec_output(x, ocls, &cls) == OMMA_OK) {
        bf_anchors(kind, anchors);
        face_detector_input(&img, size, in);
        st = omma_exec_run(x, 1);
        CHECK(st == OMMA_OK);
        if (st == OMMA_OK) {
            int best = 0, firing = 0;
            for (int a = 0; a < n; a++) {
                if (cls[a] > cls[best])
                    best = a;
                firing += bf_score(cls[a]) > 0.5f;
            }
            bf_detection d;
            bf_decode(kind, reg + 16 * best, anchors + 2 * best, cls[best], best, &d);
            /* One face means one cluster: every anchor above 0.5 decodes to a
             * box overlapping the best one with IoU > 0.5 (weighted NMS would
             * merge them all into one detection). */
            float min_iou = 1.0f;
            for (int a = 0; a < n; a++) {
                if (bf_score(cls[a]) <= 0.5f)
                    continue;
                bf_detection o;
                bf_decode(kind, reg + 16 * a, anchors + 2 * a, cls[a], a, &o);
                float iou = bf_iou(&o.box, &d.box);
                if (iou < min_iou)
                    min_iou = iou;
            }
            float iou = bf_iou(&d.box, &expected_face);
            fprintf(stderr,
                    "%s: %d anchors above 0.5 (min IoU with the best %.3f); best anchor %d "
                    "score %.4f box x %.1f..%.1f y %.1f..%.1f px; IoU with the expected "
                    "face %.3f\n",
                    path, firing, min_iou, best, d.score, d.box.xmin * 512, d.box.xmax * 512,
                    d.box.ymin * 512, d.box.ymax * 512, iou);
            CHECK(firing >= 1);
            CHECK(min_iou > 0.5f);
            CHECK(d.score > 0.5f);
            CHECK(iou >= 0.6f);
            /* Keypoints 0 and 1 are the person's right and left eye: the
             * right eye appears on the image left. Nose below the eyes. */
            CHECK(d.keypoints[0][0] < d.keypoints[2][0] && d.keypoints[2][0] < d.keypoints[1][0]);
            CHECK(d.keypoints[2][1] > d.keypoints[0][1] && d.keypoints[3][1] > d.keypoints[2][1]);
            if (best_out)
                *best_out = d;
        }
    }
    free(anchors);
    omma_exec_destroy(x);
    omma_engine_release(e);
    rgb_image_free(&img);
}

static void test_short_range_detects_the_face(void)
{
    detect(FACE_MODEL_SHORT, BF_SHORT_RANGE, &short_best);
    have_short_best = short_best.score > 0.5f;
}

static void test_full_range_detects_the_face(void)
{
    detect(FACE_MODEL_FULL, BF_FULL_RANGE, NULL);
}

static float sigmoid(float v)
{
    return 1.0f / (1.0f + expf(-v));
}

static void test_face_mesh_on_the_crop(void)
{
    REQUIRE(have_short_best);
    /* The ROI as MediaPipe makes it from a detection (rotation left out:
     * the eyes are within ~10 degrees of level): square on the long side,
     * scaled 1.5 around the box centre. */
    const bf_box *b = &short_best.box;
    float cx = (b->xmin + b->xmax) / 2 * 512, cy = (b->ymin + b->ymax) / 2 * 512;
    float side = 1.5f * fmaxf(b->xmax - b->xmin, b->ymax - b->ymin) * 512;
    rgb_image img;
    omma_engine *e = NULL;
    omma_exec *x = NULL;
    float *in, *lm, *flag;
    REQUIRE_OK(rgb_image_load_png(FACE_PHOTO, &img));
    omma_status st = omma_engine_load(NULL, FACE_MODEL_MESH, NULL, &e);
    if (st == OMMA_OK)
        st = omma_exec_create(e, 1, &x);
    int olm = output_with_last_dim(e, 1404), oflag = output_with_last_dim(e, 1);
    if (st == OMMA_OK && (olm < 0 || oflag < 0))
        st = OMMA_ERR_INTERNAL;
    if (st == OMMA_OK && (st = omma_exec_input(x, 0, &in)) == OMMA_OK &&
        (st = omma_exec_output(x, olm, &lm)) == OMMA_OK &&
        (st = omma_exec_output(x, oflag, &flag)) == OMMA_OK) {
        face_mesh_input(&img, cx, cy, side, in);
        st = omma_exec_run(x, 1);
    }
    CHECK(st == OMMA_OK);
    if (st == OMMA_OK) {
        float presence = sigmoid(flag[0]);
        int outside = 0;
        for (int i = 0; i < 468; i++) {
            float px = lm[3 * i], py = lm[3 * i + 1];
            outside += !(px >= 0 && px <= 192 && py >= 0 && py <= 192);
        }
        const float *nose = lm + 3 * 1, *reye = lm + 3 * 33, *leye = lm + 3 * 263;
        const float *lip_up = lm + 3 * 13, *lip_low = lm + 3 * 14;
        fprintf(stderr,
                "face mesh on crop centre (%.1f, %.1f) side %.1f: presence %.4f, %d landmarks "
                "outside; nose (%.1f, %.1f), 33 (%.1f, %.1f), 263 (%.1f, %.1f), 13 (%.1f, %.1f), "
                "14 (%.1f, %.1f)\n",
                cx, cy, side, presence, outside, nose[0], nose[1], reye[0], reye[1], leye[0],
                leye[1], lip_up[0], lip_up[1], lip_low[0], lip_low[1]);
        CHECK(presence > 0.9f);
        CHECK(outside == 0);
        /* 33 is the person's right eye outer corner: on the image left. */
        CHECK(reye[0] < nose[0] && nose[0] < leye[0]);
        CHECK(reye[1] < nose[1] && leye[1] < nose[1]);
        CHECK(lip_up[1] > nose[1] && lip_low[1] > nose[1]);
        CHECK(lip_low[1] > lip_up[1]);
    }
    omma_exec_destroy(x);
    omma_engine_release(e);
    rgb_image_free(&img);
}

int main(void)
{
    RUN(test_short_range_detects_the_face);
    RUN(test_full_range_detects_the_face);
    RUN(test_face_mesh_on_the_crop);
    return testing_finish();
}
