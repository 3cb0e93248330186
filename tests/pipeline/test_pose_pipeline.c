/* The CPU pose pipeline (BlazePose lite and full) on a real photo:
 * testdata/messi5.jpg (548x342, Debian's opencv-doc), one footballer shot
 * full length while kicking, facing the camera: his right arm stretched to
 * the image's left (hand near x 75, y 95), his left arm to the right (hand
 * near x 365, y 160), the planted right foot near x 280, y 325, the
 * kicking left foot near x 440, y 275. The expected regions below were
 * written from the photo before the model was first run:
 *   nose               x 205..275, y  65..135, above both shoulders
 *   right shoulder 12  x 150..220, y  95..165   left shoulder 11 x 250..320, y 100..165
 *   right wrist 16     x  50..145, y  70..135   left wrist 15    x 310..390, y 130..195
 *   hips 23/24         y 195..275
 *   right ankle 28     x 230..310, y 280..342   left ankle 27    x 365..460, y 230..300
 * then: the person keeps its id on the next frame (tracked from the
 * landmarks, no detection), world landmarks in metres (shoulders 0.2..0.6
 * m apart, the hips' middle at the origin), a frame without a person gives
 * none, and option and argument errors. */
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "io/image_file.h"
#include "omma/pose.h"
#include "testing.h"

#define POSE_DETECTOR OMMA_MODELS_DIR "/pose_detection.tflite"
#define POSE_PHOTO OMMA_TESTDATA_DIR "/messi5.jpg"

typedef struct region {
    int k;
    const char *name;
    float x0, x1, y0, y1;
} region;

static const region expected[] = {
    {0, "nose", 205, 275, 65, 135},
    {12, "right shoulder", 150, 220, 95, 165},
    {11, "left shoulder", 250, 320, 100, 165},
    {16, "right wrist", 50, 145, 70, 135},
    {15, "left wrist", 310, 390, 130, 195},
    {24, "right hip", 0, 548, 195, 275},
    {23, "left hip", 0, 548, 195, 275},
    {28, "right ankle", 230, 310, 280, 342},
    {27, "left ankle", 365, 460, 230, 300},
};

static void options(omma_pose_pipeline_options *o, const char *landmark_model)
{
    omma_pose_pipeline_options_init(o);
    o->detector_model = POSE_DETECTOR;
    o->landmark_model = landmark_model;
}

static void check_pose(const char *model, const omma_pose *p)
{
    fprintf(stderr, "%s: id %d score %.3f box x %.0f..%.0f y %.0f..%.0f\n", model, p->id, p->score,
            p->box.xmin, p->box.xmax, p->box.ymin, p->box.ymax);
    CHECK(p->score >= 0.5f && p->score <= 1.0f);
    for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++) {
        const region *r = &expected[i];
        const omma_pose_landmark *l = &p->landmarks[r->k];
        bool in = l->x >= r->x0 && l->x <= r->x1 && l->y >= r->y0 && l->y <= r->y1;
        fprintf(stderr, "  %-15s (%6.1f, %6.1f) visibility %.2f presence %.2f%s\n", r->name, l->x,
                l->y, l->visibility, l->presence, in ? "" : "  <- outside its region");
        CHECK(in);
    }
    const omma_pose_landmark *lm = p->landmarks;
    CHECK(lm[0].y < lm[11].y && lm[0].y < lm[12].y); /* nose above the shoulders */
    /* The wrists are the ends of the arms: farther from the body's middle
     * than the elbows, and the elbows farther than the shoulders. */
    CHECK(lm[16].x < lm[14].x && lm[14].x < lm[12].x);
    CHECK(lm[15].x > lm[13].x && lm[13].x > lm[11].x);
    for (int k = 0; k < OMMA_POSE_LANDMARKS; k++)
        CHECK(lm[k].visibility >= 0.0f && lm[k].visibility <= 1.0f && lm[k].presence >= 0.0f &&
              lm[k].presence <= 1.0f && isfinite(lm[k].z));
    /* Clearly visible parts say so. */
    CHECK(lm[0].visibility > 0.5f && lm[15].visibility > 0.5f && lm[16].visibility > 0.5f);
    /* World landmarks: metres, origin between the hips. */
    const float(*w)[3] = p->world;
    float sw = sqrtf((w[11][0] - w[12][0]) * (w[11][0] - w[12][0]) +
                     (w[11][1] - w[12][1]) * (w[11][1] - w[12][1]) +
                     (w[11][2] - w[12][2]) * (w[11][2] - w[12][2]));
    float hx = (w[23][0] + w[24][0]) * 0.5f, hy = (w[23][1] + w[24][1]) * 0.5f;
    fprintf(stderr, "  world: shoulder width %.3f m, hips' middle (%.3f, %.3f)\n", sw, hx, hy);
    CHECK(sw > 0.2f && sw < 0.6f);
    CHECK(fabsf(hx) < 0.1f && fabsf(hy) < 0.1f);
    CHECK(w[0][1] < w[23][1] - 0.3f); /* the head is above the hips (y down) */
}

static void run_photo(const char *model)
{
    omma_pose_pipeline_options o;
    options(&o, model);
    omma_pose_pipeline *p = NULL;
    io_image img;
    REQUIRE_OK(io_image_load(POSE_PHOTO, &img));
    REQUIRE_OK(omma_pose_pipeline_create(&o, &p));
    omma_frame f = io_image_frame(&img);
    omma_pose poses[1], again[1];
    int n = -1;
    REQUIRE_OK(omma_pose_pipeline_process(p, 0, &f, poses, &n));
    CHECK(n == 1);
    if (n == 1)
        check_pose(model, &poses[0]);
    /* The same frame again: tracked from the landmarks' alignment points (a
     * region a little different from the detection's), same id, every
     * landmark still in its region and the 33 within 8 px of the first
     * frame's on average. */
    REQUIRE_OK(omma_pose_pipeline_process(p, 0, &f, again, &n));
    CHECK(n == 1);
    if (n == 1) {
        CHECK(again[0].id == poses[0].id);
        check_pose(model, &again[0]);
        float sum = 0.0f;
        for (int k = 0; k < OMMA_POSE_LANDMARKS; k++)
            sum += hypotf(again[0].landmarks[k].x - poses[0].landmarks[k].x,
                          again[0].landmarks[k].y - poses[0].landmarks[k].y);
        fprintf(stderr, "  tracked: mean move %.2f px\n", sum / OMMA_POSE_LANDMARKS);
        CHECK(sum / OMMA_POSE_LANDMARKS < 8.0f);
    }
    /* Another camera starts its own tracker: a new detection, a new id. */
    REQUIRE_OK(omma_pose_pipeline_process(p, 1, &f, again, &n));
    CHECK(n == 1);
    /* A black frame: nobody; the person is lost. */
    size_t bytes = (size_t)img.width * (size_t)img.height * 3;
    unsigned char *black = calloc(bytes, 1);
    REQUIRE(black);
    omma_frame b = f;
    b.planes[0] = black;
    b.pitch[0] = img.width * 3;
    b.format = OMMA_PIXEL_RGB;
    REQUIRE_OK(omma_pose_pipeline_process(p, 0, &b, again, &n));
    CHECK(n == 0);
    REQUIRE_OK(omma_pose_pipeline_process(p, 0, &f, again, &n));
    CHECK(n == 1 && again[0].id != poses[0].id); /* found again: a new id */
    free(black);
    omma_pose_pipeline_destroy(p);
    io_image_free(&img);
}

static void test_lite(void)
{
    run_photo(OMMA_MODELS_DIR "/pose_landmark_lite.tflite");
}
static void test_full(void)
{
    run_photo(OMMA_MODELS_DIR "/pose_landmark_full.tflite");
}

static void test_errors(void)
{
    omma_pose_pipeline_options o;
    omma_pose_pipeline *p = (omma_pose_pipeline *)&o;
    options(&o, OMMA_MODELS_DIR "/pose_landmark_lite.tflite");
    o.max_poses = 0;
    CHECK_FAILS(omma_pose_pipeline_create(&o, &p), OMMA_ERR_INVALID_ARG, "max_poses 0 not in 1..8");
    CHECK(p == NULL);
    options(&o, NULL);
    CHECK_FAILS(omma_pose_pipeline_create(&o, &p), OMMA_ERR_INVALID_ARG, "no landmark model path");
    options(&o, OMMA_MODELS_DIR "/pose_landmark_lite.tflite");
    o.min_presence = 2.0f;
    CHECK_FAILS(omma_pose_pipeline_create(&o, &p), OMMA_ERR_INVALID_ARG, "min_presence 2");
    /* The models swapped: shapes that are not BlazePose's. */
    options(&o, POSE_DETECTOR);
    CHECK_FAILS(omma_pose_pipeline_create(&o, &p), OMMA_ERR_UNSUPPORTED,
                "not a BlazePose landmark model");
    options(&o, OMMA_MODELS_DIR "/pose_landmark_lite.tflite");
    o.detector_model = OMMA_MODELS_DIR "/face_detection_short_range.tflite";
    CHECK_FAILS(omma_pose_pipeline_create(&o, &p), OMMA_ERR_UNSUPPORTED,
                "not BlazePose's detector");
    o.detector_model = OMMA_MODELS_DIR "/no_such_model.tflite";
    CHECK_FAILS(omma_pose_pipeline_create(&o, &p), OMMA_ERR_IO, "no_such_model.tflite");
    CHECK(p == NULL);

    options(&o, OMMA_MODELS_DIR "/pose_landmark_lite.tflite");
    REQUIRE_OK(omma_pose_pipeline_create(&o, &p));
    omma_pose poses[1];
    int n = -1;
    static const uint8_t px[12] = {0};
    omma_frame f = {
        .width = 2, .height = 2, .format = OMMA_PIXEL_RGB, .planes = {px}, .pitch = {6}};
    CHECK_FAILS(omma_pose_pipeline_process(p, -1, &f, poses, &n), OMMA_ERR_INVALID_ARG,
                "camera -1");
    CHECK(n == 0);
    CHECK_FAILS(omma_pose_pipeline_process(p, 0, NULL, poses, &n), OMMA_ERR_INVALID_ARG, "NULL");
    f.memory = OMMA_MEMORY_DEVICE;
    CHECK_FAILS(omma_pose_pipeline_process(p, 0, &f, poses, &n), OMMA_ERR_UNSUPPORTED,
                "device memory");
    f.memory = OMMA_MEMORY_HOST;
    f.pitch[0] = 2;
    CHECK_FAILS(omma_pose_pipeline_process(p, 0, &f, poses, &n), OMMA_ERR_INVALID_ARG, "pitch");
    f.pitch[0] = 6; /* a tiny frame is fine: nobody in it */
    REQUIRE_OK(omma_pose_pipeline_process(p, 0, &f, poses, &n));
    CHECK(n == 0);
    REQUIRE_OK(omma_pose_pipeline_reset(p, 0));
    CHECK_FAILS(omma_pose_pipeline_reset(p, OMMA_PIPELINE_MAX_CAMERAS), OMMA_ERR_INVALID_ARG,
                "camera");
    omma_pose_pipeline_destroy(p);
    omma_pose_pipeline_destroy(NULL);
}

int main(void)
{
    RUN(test_errors);
    RUN(test_lite);
    RUN(test_full);
    return testing_finish();
}
