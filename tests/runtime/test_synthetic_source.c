/* The synthetic camera: frames show the photo's face where the ground truth
 * says, the patch moves smoothly and leaves background behind, cameras
 * differ by phase, and the CPU face pipeline finds the face on the truth
 * box. Option errors. */
#include <math.h>
#include <string.h>

#include "omma/pipeline.h"
#include "io/image_file.h"
#include "runtime/synthetic_source.h"
#include "support/face_inputs.h"
#include "testing.h"
#include "vision/detect_decode.h"

static io_image photo;

static uint8_t luma(const omma_frame *f, int x, int y)
{
    return f->planes[0][(size_t)y * (size_t)f->pitch[0] + (size_t)x];
}

static void test_frames_follow_truth(void)
{
    rt_synthetic_options o;
    rt_synthetic_options_init(&o);
    rt_synthetic *s = NULL;
    REQUIRE_OK(rt_synthetic_create(&photo, &o, &s));
    omma_frame f;
    omma_box prev = {0}, b;
    double ts;
    int moved = 0;
    for (long i = 0; i < 60; i++) {
        REQUIRE_OK(rt_synthetic_frame(s, i, &f, &ts, &b));
        CHECK(f.width == 1920 && f.height == 1080 && f.format == OMMA_PIXEL_NV12);
        CHECK(fabs(ts - (double)i * 1000.0 / 30.0) < 1e-9);
        /* The face box is ~5.9x the photo's 89x92 and inside the frame. */
        CHECK(b.xmax - b.xmin > 480.0f && b.xmax - b.xmin < 560.0f);
        CHECK(b.xmin >= 0.0f && b.ymin >= 0.0f && b.xmax <= 1920.0f && b.ymax <= 1080.0f);
        if (i > 0) {
            float step = hypotf(b.xmin - prev.xmin, b.ymin - prev.ymin);
            CHECK(step < 20.0f); /* smooth at 30 fps */
            moved += step > 0.5f;
        }
        prev = b;
    }
    CHECK(moved > 50);
    /* Frame 0 again: the patch is back there, and the place of frame 59's
     * patch that frame 0's does not cover is background again. */
    omma_box b0;
    REQUIRE_OK(rt_synthetic_frame(s, 0, &f, &ts, &b0));
    int cx = (int)((b0.xmin + b0.xmax) / 2), cy = (int)((b0.ymin + b0.ymax) / 2);
    CHECK(luma(&f, cx, cy) != luma(&f, cx, 2)); /* skin, not the background row */
    int restored = 0, checked = 0;
    for (int y = (int)prev.ymin; y < (int)prev.ymax; y += 7)
        for (int x = (int)prev.xmin; x < (int)prev.xmax; x += 7) {
            int inside0 =
                x > b0.xmin - 500 && x < b0.xmax + 500 && y > b0.ymin - 500 && y < b0.ymax + 500;
            if (inside0)
                continue;
            checked++;
            restored += luma(&f, x, y) == (uint8_t)(60 + 80 * y / 1080);
        }
    CHECK(restored == checked);
    rt_synthetic_destroy(s);
}

static void test_cameras_differ(void)
{
    rt_synthetic_options o;
    rt_synthetic_options_init(&o);
    rt_synthetic *a = NULL, *c = NULL;
    REQUIRE_OK(rt_synthetic_create(&photo, &o, &a));
    o.seed = 3;
    REQUIRE_OK(rt_synthetic_create(&photo, &o, &c));
    omma_frame f;
    omma_box ba, bc;
    double ts;
    REQUIRE_OK(rt_synthetic_frame(a, 10, &f, &ts, &ba));
    REQUIRE_OK(rt_synthetic_frame(c, 10, &f, &ts, &bc));
    CHECK(fabsf(ba.xmin - bc.xmin) + fabsf(ba.ymin - bc.ymin) > 10.0f);
    rt_synthetic_destroy(a);
    rt_synthetic_destroy(c);
}

static void test_pipeline_finds_truth(void)
{
    rt_synthetic_options o;
    rt_synthetic_options_init(&o);
    rt_synthetic *s = NULL;
    REQUIRE_OK(rt_synthetic_create(&photo, &o, &s));
    omma_face_pipeline_options po;
    omma_face_pipeline_options_init(&po);
    po.detector_model = FACE_MODEL_SHORT;
    po.mesh_model = FACE_MODEL_MESH;
    po.max_faces = 1;
    omma_face_pipeline *p = NULL;
    REQUIRE_OK(omma_face_pipeline_create(&po, &p));
    for (long i = 0; i < 2; i++) {
        omma_frame f;
        omma_box truth;
        omma_face face;
        double ts;
        int n = 0;
        REQUIRE_OK(rt_synthetic_frame(s, i * 45, &f, &ts, &truth));
        /* Far apart in time: a camera each (tracking expects smooth motion). */
        REQUIRE_OK(omma_face_pipeline_process(p, (int)i, &f, &face, 1, &n));
        CHECK(n == 1);
        if (n == 1) {
            float iou = vis_box_iou(&face.box, &truth);
            fprintf(stderr,
                    "frame %ld: truth %.0f,%.0f..%.0f,%.0f, found %.0f,%.0f..%.0f,%.0f, "
                    "IoU %.3f\n",
                    i * 45, truth.xmin, truth.ymin, truth.xmax, truth.ymax, face.box.xmin,
                    face.box.ymin, face.box.xmax, face.box.ymax, iou);
            CHECK(iou > 0.6f);
        }
    }
    omma_face_pipeline_destroy(p);
    rt_synthetic_destroy(s);
}

static void test_errors(void)
{
    rt_synthetic_options o;
    rt_synthetic *s = NULL;
    rt_synthetic_options_init(&o);
    o.width = 1919;
    CHECK_FAILS(rt_synthetic_create(&photo, &o, &s), OMMA_ERR_INVALID_ARG, "1919x1080");
    CHECK(s == NULL);
    rt_synthetic_options_init(&o);
    o.fps = 0;
    CHECK_FAILS(rt_synthetic_create(&photo, &o, &s), OMMA_ERR_INVALID_ARG, "fps");
    rt_synthetic_options_init(&o);
    o.face_box[2] = 9000;
    CHECK_FAILS(rt_synthetic_create(&photo, &o, &s), OMMA_ERR_INVALID_ARG, "face box");
    rt_synthetic_options_init(&o);
    REQUIRE_OK(rt_synthetic_create(&photo, &o, &s));
    omma_frame f;
    double ts;
    CHECK_FAILS(rt_synthetic_frame(s, -1, &f, &ts, NULL), OMMA_ERR_INVALID_ARG, "index -1");
    rt_synthetic_destroy(s);
}

int main(void)
{
    if (io_image_load(FACE_PHOTO, &photo) != OMMA_OK) {
        fprintf(stderr, "%s: %s (run scripts/fetch-testdata.sh)\n", FACE_PHOTO, omma_last_error());
        return 1;
    }
    RUN(test_errors);
    RUN(test_frames_follow_truth);
    RUN(test_cameras_differ);
    RUN(test_pipeline_finds_truth);
    io_image_free(&photo);
    return testing_finish();
}
