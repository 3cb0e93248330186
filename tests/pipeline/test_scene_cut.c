/* The CPU face pipeline across a scene cut between two people
 * (scene_cut.h): the first person's track ends at the cut, no box stays
 * where she was, the second gets a new id. With the cut checks off
 * (cut_move, cut_agree and cut_presence 0: MediaPipe's own loop) the same
 * video keeps a box on the old place beside the new face: the check can
 * fail.
 * Skipped (77) without libav. */
#include "io/video_file.h"
#include "pipeline/scene_cut.h"
#include "support/face_inputs.h"
#include "testing.h"

static void options(omma_face_pipeline_options *o)
{
    omma_face_pipeline_options_init(o);
    o->backend = OMMA_BACKEND_CPU;
    o->detector_model = FACE_MODEL_SHORT;
    o->mesh_model = FACE_MODEL_MESH;
}

static void test_cut_new_id(void)
{
    static scene_cut_result r;
    omma_face_pipeline_options o;
    options(&o);
    REQUIRE(scene_cut_run(&o, &r));
    CHECK(scene_cut_ok(&r, 1));
}

static void test_cut_checks_off(void)
{
    static scene_cut_result r;
    omma_face_pipeline_options o;
    options(&o);
    o.cut_move = 0.0f;
    o.cut_agree = 0.0f;
    o.cut_presence = 0.0f;
    REQUIRE(scene_cut_run(&o, &r));
    fprintf(stderr, "  with the cut checks off (expected to fail):\n");
    CHECK(!scene_cut_ok(&r, 1));
}

static void test_cut_options(void)
{
    omma_face_pipeline_options o;
    omma_face_pipeline *p = NULL;
    options(&o);
    CHECK(o.cut_move == 0.3f && o.cut_agree == 0.22f && o.cut_presence == 0.9f);
    o.cut_move = -0.1f;
    CHECK_FAILS(omma_face_pipeline_create(&o, &p), OMMA_ERR_INVALID_ARG, "cut_move");
    CHECK(p == NULL);
    options(&o);
    o.cut_agree = -1.0f;
    CHECK_FAILS(omma_face_pipeline_create(&o, &p), OMMA_ERR_INVALID_ARG, "cut_agree");
    options(&o);
    o.cut_presence = 1.5f;
    CHECK_FAILS(omma_face_pipeline_create(&o, &p), OMMA_ERR_INVALID_ARG, "cut_presence");
    CHECK(p == NULL);
}

int main(void)
{
    if (!io_video_available())
        SKIP_TEST("omma was built without FFmpeg (libavformat/libavcodec)");
    RUN(test_cut_options);
    RUN(test_cut_new_id);
    RUN(test_cut_checks_off);
    return testing_finish();
}
