/* The CPU pipeline end to end on the astronaut photo through the public
 * engine API: preprocess -> short-range detector -> decode + weighted NMS
 * -> ROI -> crop -> FaceMesh -> back-projection -> next ROI (a second
 * pass on it); then the same photo turned 90 degrees clockwise, whose
 * landmarks must be the upright ones turned.
 * Expected face box: x 181..270, y 84..176 (tests/engine/test_face_evidence.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "omma/engine.h"
#include "support/face_inputs.h"
#include "support/png_image.h"
#include "testing.h"
#include "vision/anchors.h"
#include "vision/crop_ref.h"
#include "vision/detect_decode.h"
#include "vision/face_roi.h"
#include "vision/preprocess_ref.h"
#include "vision_frames.h"

static const omma_box expected_face = {181.0f, 84.0f, 270.0f, 176.0f};
static const float pi = 3.14159265358979f;

typedef struct models {
    omma_engine *det, *mesh;
    omma_exec *xdet, *xmesh;
    float *det_in, *det_boxes, *det_scores, *mesh_in, *mesh_lm, *mesh_flag;
    vis_anchor anchors[896];
    int n_anchors;
} models;

static int output_with_last_dim(omma_engine *e, int last)
{
    for (int o = 0; o < omma_engine_output_count(e); o++) {
        omma_tensor_info info;
        if (omma_engine_output_info(e, o, &info) == OMMA_OK && info.dims[info.rank - 1] == last)
            return o;
    }
    return -1;
}

static void models_close(models *m)
{
    omma_exec_destroy(m->xdet);
    omma_exec_destroy(m->xmesh);
    omma_engine_release(m->det);
    omma_engine_release(m->mesh);
    memset(m, 0, sizeof *m);
}

static omma_status models_open(models *m)
{
    omma_status st;
    memset(m, 0, sizeof *m);
    vis_anchor_options ao;
    vis_anchor_options_short_range(&ao);
    if ((st = vis_anchors_generate(&ao, m->anchors, 896, &m->n_anchors)) != OMMA_OK ||
        (st = omma_engine_load(NULL, FACE_MODEL_SHORT, NULL, &m->det)) != OMMA_OK ||
        (st = omma_engine_load(NULL, FACE_MODEL_MESH, NULL, &m->mesh)) != OMMA_OK ||
        (st = omma_exec_create(m->det, 1, &m->xdet)) != OMMA_OK ||
        (st = omma_exec_create(m->mesh, 1, &m->xmesh)) != OMMA_OK)
        goto fail;
    int oreg = output_with_last_dim(m->det, 16), ocls = output_with_last_dim(m->det, 1);
    int olm = output_with_last_dim(m->mesh, 1404), oflag = output_with_last_dim(m->mesh, 1);
    omma_tensor_info info;
    st = OMMA_ERR_INTERNAL;
    if (oreg < 0 || ocls < 0 || olm < 0 || oflag < 0)
        goto fail;
    /* The anchors generated from the options match the model's outputs. */
    if (omma_engine_output_info(m->det, oreg, &info) != OMMA_OK || info.dims[1] != m->n_anchors)
        goto fail;
    if ((st = omma_exec_input(m->xdet, 0, &m->det_in)) != OMMA_OK ||
        (st = omma_exec_output(m->xdet, oreg, &m->det_boxes)) != OMMA_OK ||
        (st = omma_exec_output(m->xdet, ocls, &m->det_scores)) != OMMA_OK ||
        (st = omma_exec_input(m->xmesh, 0, &m->mesh_in)) != OMMA_OK ||
        (st = omma_exec_output(m->xmesh, olm, &m->mesh_lm)) != OMMA_OK ||
        (st = omma_exec_output(m->xmesh, oflag, &m->mesh_flag)) != OMMA_OK)
        goto fail;
    return OMMA_OK;
fail:
    models_close(m);
    return st;
}

typedef struct result {
    int n_faces;
    omma_detection det;
    vis_roi det_roi, roi, next_roi;
    float presence;
    float lm[OMMA_FACE_LANDMARKS * 3];
} result;

static omma_status run_pipeline(models *m, const omma_frame *f, int refine, result *r)
{
    vis_letterbox lb;
    vis_decode_options dopt;
    omma_detection dets[4];
    memset(r, 0, sizeof *r);
    OMMA_TRY(vis_preprocess_ref(f, 128, 1.0f / 127.5f, -1.0f, m->det_in, &lb));
    OMMA_TRY(omma_exec_run(m->xdet, 1));
    vis_decode_options_init(&dopt, 128);
    OMMA_TRY(vis_detect_decode(&dopt, m->anchors, m->n_anchors, m->det_boxes, m->det_scores, &lb,
                               dets, &r->n_faces));
    if (r->n_faces < 1)
        return OMMA_OK;
    r->det = dets[0];
    r->det_roi = r->roi = vis_roi_from_detection(&dets[0]);
    for (int it = 0; it <= refine; it++) {
        if (it > 0)
            r->roi = r->next_roi;
        OMMA_TRY(vis_crop_ref(f, &r->roi, VIS_MESH_SIZE, m->mesh_in));
        OMMA_TRY(omma_exec_run(m->xmesh, 1));
        r->presence = vis_face_presence(m->mesh_flag[0]);
        vis_landmarks_to_frame(&r->roi, VIS_MESH_SIZE, m->mesh_lm, OMMA_FACE_LANDMARKS, r->lm);
        r->next_roi = vis_roi_from_landmarks(r->lm, NULL);
        fprintf(stderr, "  pass %d: ROI rotation %.2f deg -> landmarks' %.2f deg, presence %.4f\n",
                it, r->roi.rotation * 180 / pi, r->next_roi.rotation * 180 / pi, r->presence);
    }
    return OMMA_OK;
}

static void print_result(const char *what, const result *r)
{
    const float *nose = r->lm + 3, *e33 = r->lm + 3 * 33, *e263 = r->lm + 3 * 263;
    fprintf(stderr,
            "%s: %d face(s), score %.4f, box x %.1f..%.1f y %.1f..%.1f; ROI centre (%.1f, %.1f) "
            "side %.1f rotation %.2f deg; presence %.4f; nose (%.1f, %.1f, z %.1f), 33 (%.1f, "
            "%.1f), 263 (%.1f, %.1f); next ROI centre (%.1f, %.1f) side %.1f rotation %.2f deg\n",
            what, r->n_faces, r->det.score, r->det.box.xmin, r->det.box.xmax, r->det.box.ymin,
            r->det.box.ymax, r->roi.cx, r->roi.cy, r->roi.w, r->roi.rotation * 180 / pi,
            r->presence, nose[0], nose[1], nose[2], e33[0], e33[1], e263[0], e263[1],
            r->next_roi.cx, r->next_roi.cy, r->next_roi.w, r->next_roi.rotation * 180 / pi);
    for (int k = 0; k < 6; k++)
        fprintf(stderr, "  kp%d (%.1f, %.1f)", k, r->det.keypoints[k][0], r->det.keypoints[k][1]);
    fprintf(stderr, "\n");
}

/* The upright result, for the comparisons of the second test. */
static result upright;
static int have_upright;

static void test_astronaut_upright_and_rotated(void)
{
    rgb_image img;
    REQUIRE_OK(rgb_image_load_png(FACE_PHOTO, &img));
    int w = img.width, h = img.height;
    /* Turned 90 degrees clockwise: pixel (x, y) goes to (h - 1 - y, x), so
     * the continuous point (x, y) goes to (h - y, x). */
    unsigned char *rot = malloc((size_t)w * h * 3);
    result *up = malloc(sizeof *up), *rr = malloc(sizeof *rr);
    models m;
    omma_status st = OMMA_ERR_OUT_OF_MEMORY;
    if (!rot || !up || !rr || (st = models_open(&m)) != OMMA_OK) {
        fprintf(stderr, "setup: %s %s\n", omma_status_str(st), omma_last_error());
        CHECK(st == OMMA_OK);
        goto done;
    }
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            memcpy(rot + ((size_t)x * h + (size_t)(h - 1 - y)) * 3,
                   img.rgb + ((size_t)y * w + x) * 3, 3);
    omma_frame f = {w, h, OMMA_PIXEL_RGB, {img.rgb, NULL, NULL}, {3 * w, 0, 0}, OMMA_MEMORY_HOST};
    omma_frame fr = {h, w, OMMA_PIXEL_RGB, {rot, NULL, NULL}, {3 * h, 0, 0}, OMMA_MEMORY_HOST};

    st = run_pipeline(&m, &f, 1, up);
    CHECK(st == OMMA_OK);
    if (st != OMMA_OK)
        fprintf(stderr, "upright: %s\n", omma_last_error());
    print_result("upright", up);
    CHECK(up->n_faces == 1);
    float iou = vis_box_iou(&up->det.box, &expected_face);
    fprintf(stderr, "upright: IoU with the expected face box %.3f\n", iou);
    CHECK(iou >= 0.6f);
    /* Eyes within ~10 degrees of level in this photo. */
    CHECK(fabsf(up->roi.rotation) < 12 * pi / 180);
    CHECK(up->presence > 0.9f);
    const float *nose = up->lm + 3, *e33 = up->lm + 3 * 33, *e263 = up->lm + 3 * 263;
    CHECK(nose[0] > expected_face.xmin && nose[0] < expected_face.xmax);
    CHECK(nose[1] > expected_face.ymin && nose[1] < expected_face.ymax);
    /* 33 is the person's right outer eye corner: image left when upright. */
    CHECK(e33[0] < nose[0] && nose[0] < e263[0]);
    CHECK(e33[1] < nose[1] && e263[1] < nose[1]);
    /* The landmarks' ROI lands on the same face as the detection's. */
    CHECK(hypotf(up->next_roi.cx - up->det_roi.cx, up->next_roi.cy - up->det_roi.cy) <
          0.1f * up->det_roi.w);
    CHECK(fabsf(up->next_roi.w / up->det_roi.w - 1) < 0.25f);
    if (st == OMMA_OK && up->n_faces == 1) {
        upright = *up;
        have_upright = 1;
    }
    CHECK(fabsf(up->next_roi.rotation - up->det_roi.rotation) < 10 * pi / 180);

    /* The tracking loop on a still frame: the detection's ROI, then four
     * passes of landmarks -> next ROI. */
    st = run_pipeline(&m, &fr, 4, rr);
    CHECK(st == OMMA_OK);
    print_result("rotated 90 cw", rr);
    CHECK(rr->n_faces == 1);
    omma_box turned = {(float)h - expected_face.ymax, expected_face.xmin,
                       (float)h - expected_face.ymin, expected_face.xmax};
    float iou_r = vis_box_iou(&rr->det.box, &turned);
    fprintf(stderr, "rotated: IoU with the turned expected box %.3f\n", iou_r);
    CHECK(iou_r >= 0.6f);
    CHECK(rr->presence > 0.9f);
    /* The face's right-eye -> left-eye line now points down the image
     * (+y): the ROI turns its x axis onto it, so +90 degrees in the y-down
     * frame (clockwise on screen, like the photo's turn); -90 would be a
     * face upside down relative to the crop. BlazeFace's eye keypoints are
     * poor on a face lying on its side (its ROI comes out at ~46 degrees),
     * the landmarks then pull the ROI to the face's true angle within a few
     * frames, as in MediaPipe's loop. */
    CHECK(rr->det_roi.rotation > 20 * pi / 180 && rr->det_roi.rotation < 120 * pi / 180);
    CHECK(fabsf(rr->roi.rotation - pi / 2) < 8 * pi / 180);
    CHECK(fabsf(rr->next_roi.rotation - pi / 2 - up->next_roi.rotation) < 3 * pi / 180);
    float worst = 0, nose_err = 0;
    for (int i = 0; i < OMMA_FACE_LANDMARKS; i++) {
        float ex = (float)h - up->lm[3 * i + 1], ey = up->lm[3 * i];
        float e = hypotf(rr->lm[3 * i] - ex, rr->lm[3 * i + 1] - ey);
        worst = fmaxf(worst, e);
        if (i == 1)
            nose_err = e;
    }
    fprintf(stderr, "rotated: nose tip %.2f px from the turned upright nose; worst landmark %.2f px\n",
            nose_err, worst);
    CHECK(nose_err < 3.0f);
    CHECK(worst < 6.0f);
done:
    if (rot && up && rr && m.det)
        models_close(&m);
    free(rot);
    free(up);
    free(rr);
    rgb_image_free(&img);
}


/* One run of the pipeline (one mesh pass after the detection's, like the
 * upright run) on frame b, compared with the upright RGB result shifted by
 * (0, dy): same face, same landmarks. */
static void check_same_face(models *m, const char *what, const omma_frame *f, float dy,
                            float min_iou, result *r)
{
    omma_status st = run_pipeline(m, f, 1, r);
    CHECK(st == OMMA_OK);
    if (st != OMMA_OK)
        fprintf(stderr, "%s: %s\n", what, omma_last_error());
    CHECK(r->n_faces == 1);
    if (r->n_faces != 1)
        return;
    omma_box want = upright.det.box;
    want.ymin += dy, want.ymax += dy;
    float iou = vis_box_iou(&r->det.box, &want), worst = 0;
    for (int i = 0; i < OMMA_FACE_LANDMARKS; i++)
        worst = fmaxf(worst, hypotf(r->lm[3 * i] - upright.lm[3 * i],
                                    r->lm[3 * i + 1] - (upright.lm[3 * i + 1] + dy)));
    float nose = hypotf(r->lm[3] - upright.lm[3], r->lm[4] - (upright.lm[4] + dy));
    fprintf(stderr,
            "%s: box IoU with the upright RGB detection %.4f, nose tip %.2f px away, worst "
            "landmark %.2f px, presence %.4f\n",
            what, iou, nose, worst, r->presence);
    CHECK(iou >= min_iou);
    CHECK(nose < 1.5f);
    CHECK(worst < 3.0f);
    CHECK(r->presence > 0.9f);
}

static void test_yuv_letterbox_and_full_range(void)
{
    REQUIRE(have_upright);
    rgb_image img, band;
    REQUIRE_OK(rgb_image_load_png(FACE_PHOTO, &img));
    models m;
    vision_frame b = {0};
    result *r = malloc(sizeof *r);
    omma_engine *full = NULL;
    omma_exec *xfull = NULL;
    vis_anchor *anchors = malloc(2304 * sizeof *anchors);
    omma_status st = r && anchors ? models_open(&m) : OMMA_ERR_OUT_OF_MEMORY;
    if (st != OMMA_OK) {
        CHECK(st == OMMA_OK);
        free(r);
        free(anchors);
        rgb_image_free(&img);
        return;
    }
    /* The whole photo as NV12 (padded rows): the same face within the YUV
     * round trip. */
    if (vision_frame_build(&img, OMMA_PIXEL_NV12, &b)) {
        check_same_face(&m, "NV12", &b.f, 0.0f, 0.95f, r);
        vision_frame_free(&b);
    }
    /* A 512x384 band (rows 64..447) as I420: letterboxed with 16 border
     * rows each side of the 128x128 input, the detection mapped back to
     * the band's own pixels. The input's content rows sample the same
     * photo points as the square photo's, but the black bands change the
     * detector's context (its box moves a few px: IoU ~0.92); the landmarks,
     * from the ROI of the landmarks, agree closely. */
    band.width = 512, band.height = 384, band.rgb = img.rgb + (size_t)64 * 512 * 3;
    if (vision_frame_build(&band, OMMA_PIXEL_I420, &b)) {
        check_same_face(&m, "I420 512x384 band", &b.f, -64.0f, 0.88f, r);
        vision_frame_free(&b);
    }
    /* The full-range detector through the same decoder: 2304 anchors from
     * its options match its output, one face on the expected box. */
    vis_anchor_options ao;
    vis_anchor_options_full_range(&ao);
    int n = 0;
    float *in, *boxes, *scores;
    omma_tensor_info info;
    if ((st = vis_anchors_generate(&ao, anchors, 2304, &n)) == OMMA_OK &&
        (st = omma_engine_load(NULL, FACE_MODEL_FULL, NULL, &full)) == OMMA_OK &&
        (st = omma_exec_create(full, 1, &xfull)) == OMMA_OK) {
        int oreg = output_with_last_dim(full, 16), ocls = output_with_last_dim(full, 1);
        CHECK(oreg >= 0 && ocls >= 0);
        if (oreg >= 0 && ocls >= 0 && omma_engine_output_info(full, oreg, &info) == OMMA_OK) {
            CHECK(info.dims[1] == n && n == 2304);
            omma_frame f = {512, 512, OMMA_PIXEL_RGB, {img.rgb, NULL, NULL}, {3 * 512, 0, 0}, OMMA_MEMORY_HOST};
            vis_letterbox lb;
            vis_decode_options dopt;
            omma_detection dets[4];
            int found = 0;
            vis_decode_options_init(&dopt, 192);
            if ((st = omma_exec_input(xfull, 0, &in)) == OMMA_OK &&
                (st = omma_exec_output(xfull, oreg, &boxes)) == OMMA_OK &&
                (st = omma_exec_output(xfull, ocls, &scores)) == OMMA_OK &&
                (st = vis_preprocess_ref(&f, 192, 1.0f / 127.5f, -1.0f, in, &lb)) == OMMA_OK &&
                (st = omma_exec_run(xfull, 1)) == OMMA_OK)
                st = vis_detect_decode(&dopt, anchors, n, boxes, scores, &lb, dets, &found);
            CHECK(st == OMMA_OK);
            CHECK(found == 1);
            if (found >= 1) {
                float iou = vis_box_iou(&dets[0].box, &expected_face);
                fprintf(stderr,
                        "full range: %d face(s), score %.4f, box x %.1f..%.1f y %.1f..%.1f, "
                        "IoU with the expected box %.3f\n",
                        found, dets[0].score, dets[0].box.xmin, dets[0].box.xmax, dets[0].box.ymin,
                        dets[0].box.ymax, iou);
                CHECK(iou >= 0.6f);
            }
        }
    }
    CHECK(st == OMMA_OK);
    omma_exec_destroy(xfull);
    omma_engine_release(full);
    models_close(&m);
    free(r);
    free(anchors);
    rgb_image_free(&img);
}

int main(void)
{
    RUN(test_astronaut_upright_and_rotated);
    RUN(test_yuv_letterbox_and_full_range);
    return testing_finish();
}
