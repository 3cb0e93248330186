/* The CPU face pipeline over the test videos that scripts/fetch-testdata.sh
 * makes from astronaut.png, whose motion is known exactly (see the script):
 *   astronaut_pan.mp4: 640x480, 24 frames; frame n is the window at
 *     x = 16 + 4n, y = 60 of the photo scaled 512 -> 768, so the face moves
 *     4 px per frame left; frame 0 has the photo's face box (x 181..270,
 *     y 84..176) at x 255.5..389, y 66..204.
 *   astronaut_rotate.mp4: 640x480, 24 frames; the window at x = 19, y = 0
 *     rotated about the frame centre (320, 240) by n * 0.625 degrees,
 *     clockwise on screen: the eye line's angle atan2(dy, dx) (y down)
 *     grows 0.625 degrees per frame, and every point turns about the centre.
 * Each video: one face in every frame with one id; the nose tip (landmark
 * 1) follows the pan, the eye line (landmarks 33 -> 263) the rotation.
 * Frames go in as the reader gives them (I420). Skipped (77) without libav. */
#include <math.h>

#include "omma/pipeline.h"
#include "io/video_file.h"
#include "support/face_inputs.h"
#include "testing.h"
#include "vision/detect_decode.h"

#define PAN_VIDEO OMMA_TESTDATA_DIR "/astronaut_pan.mp4"
#define ROTATE_VIDEO OMMA_TESTDATA_DIR "/astronaut_rotate.mp4"
#define VIDEO_FRAMES 24
#define PAN_DX (-4.0) /* px per frame */
#define ROTATE_STEP_DEG 0.625 /* per frame, clockwise on screen */
#define ROTATE_CX 320.0
#define ROTATE_CY 240.0

static const double pi = 3.14159265358979323846;

/* One video's track: per frame the face count, its id, nose, eye line. */
typedef struct track {
    int frames;
    int count[VIDEO_FRAMES];
    int id[VIDEO_FRAMES];
    double nose[VIDEO_FRAMES][2];
    double eye_deg[VIDEO_FRAMES];
    double roll[VIDEO_FRAMES], yaw[VIDEO_FRAMES], pitch[VIDEO_FRAMES]; /* head pose, degrees */
    int posed[VIDEO_FRAMES];
    omma_box box0;
} track;

/* Runs the CPU pipeline over every frame of path; 0 when it could not. */
static int run_video(const char *path, track *t)
{
    memset(t, 0, sizeof *t);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s is missing: run scripts/fetch-testdata.sh\n", path);
        return 0;
    }
    fclose(f);
    omma_face_pipeline_options o;
    omma_face_pipeline_options_init(&o);
    o.backend = OMMA_BACKEND_CPU;
    o.detector_model = FACE_MODEL_SHORT;
    o.mesh_model = FACE_MODEL_MESH;
    o.head_pose = 1;
    o.geometry_metadata = FACE_GEOMETRY;
    omma_face_pipeline *p = NULL;
    io_video *v = NULL;
    omma_face *faces = malloc(4 * sizeof *faces);
    int ok = faces != NULL;
    omma_status st = OMMA_OK;
    if (ok)
        st = omma_face_pipeline_create(&o, &p);
    if (ok && st == OMMA_OK)
        st = io_video_open(path, &v);
    if (st != OMMA_OK) {
        fprintf(stderr, "%s: %s\n", path, omma_last_error());
        ok = 0;
    }
    while (ok) {
        omma_frame fr;
        double ts;
        int eof;
        st = io_video_read(v, &fr, &ts, &eof);
        if (st != OMMA_OK) {
            fprintf(stderr, "read: %s\n", omma_last_error());
            ok = 0;
            break;
        }
        if (eof)
            break;
        if (t->frames == VIDEO_FRAMES) {
            fprintf(stderr, "%s: more than %d frames\n", path, VIDEO_FRAMES);
            ok = 0;
            break;
        }
        int n = 0;
        st = omma_face_pipeline_process(p, 0, &fr, faces, 4, &n);
        if (st != OMMA_OK) {
            fprintf(stderr, "frame %d: %s\n", t->frames, omma_last_error());
            ok = 0;
            break;
        }
        int i = t->frames++;
        t->count[i] = n;
        if (n >= 1) {
            const omma_face *fa = &faces[0];
            t->id[i] = fa->id;
            t->nose[i][0] = fa->landmarks[1][0];
            t->nose[i][1] = fa->landmarks[1][1];
            t->eye_deg[i] = atan2(fa->landmarks[263][1] - fa->landmarks[33][1],
                                  fa->landmarks[263][0] - fa->landmarks[33][0]) *
                            180.0 / pi;
            t->posed[i] = fa->has_head_pose;
            t->roll[i] = fa->roll;
            t->yaw[i] = fa->yaw;
            t->pitch[i] = fa->pitch;
            if (i == 0)
                t->box0 = fa->box;
        }
    }
    io_video_close(v);
    omma_face_pipeline_destroy(p);
    free(faces);
    return ok;
}

/* Least-squares slope of y over frame numbers 0..n-1. */
static double slope(const double *y, int n, int stride)
{
    double mx = (n - 1) / 2.0, my = 0, sxy = 0, sxx = 0;
    for (int i = 0; i < n; i++)
        my += y[i * stride];
    my /= n;
    for (int i = 0; i < n; i++) {
        sxy += (i - mx) * (y[i * stride] - my);
        sxx += (i - mx) * (i - mx);
    }
    return sxy / sxx;
}

/* One face in every frame of all VIDEO_FRAMES, always the same id. */
static int one_face_one_id(const track *t)
{
    int good = t->frames == VIDEO_FRAMES;
    for (int i = 0; i < t->frames; i++)
        if (t->count[i] != 1 || t->id[i] != t->id[0] || t->id[0] < 1) {
            fprintf(stderr, "  frame %d: %d faces, id %d (frame 0: id %d)\n", i, t->count[i],
                    t->id[i], t->id[0]);
            good = 0;
        }
    return good;
}

/* Frame 0's mesh runs on the detector's crop, later frames' on the crop
 * the previous landmarks give, so frame 0's points sit a pixel or three
 * off the line the tracked frames follow: the motion is checked from
 * frame 1 on tightly, frame 0 loosely, and the slope over all frames. */
static void test_pan(void)
{
    track *t = malloc(sizeof *t);
    REQUIRE(t);
    int ran = run_video(PAN_VIDEO, t);
    CHECK(ran);
    if (!ran || t->frames < 2) {
        free(t);
        return;
    }
    CHECK(one_face_one_id(t));
    /* Frame 0: the photo's face where the scaling and window put it. */
    const omma_box expected = {181.0f * 1.5f - 16.0f, 84.0f * 1.5f - 60.0f, 270.0f * 1.5f - 16.0f,
                               176.0f * 1.5f - 60.0f};
    float iou = vis_box_iou(&t->box0, &expected);
    fprintf(stderr, "  frame 0 box x %.1f..%.1f y %.1f..%.1f, IoU %.3f with the expected\n",
            t->box0.xmin, t->box0.xmax, t->box0.ymin, t->box0.ymax, iou);
    CHECK(iou >= 0.6f);
    double first_step = 0, worst_step = 0, worst_pos = 0;
    for (int i = 1; i < t->frames; i++) {
        double step =
            hypot(t->nose[i][0] - t->nose[i - 1][0] - PAN_DX, t->nose[i][1] - t->nose[i - 1][1]);
        if (i == 1)
            first_step = step;
        else
            worst_step = fmax(worst_step, step);
        double ex = t->nose[1][0] + PAN_DX * (i - 1), ey = t->nose[1][1];
        worst_pos = fmax(worst_pos, hypot(t->nose[i][0] - ex, t->nose[i][1] - ey));
    }
    double sx = slope(&t->nose[0][0], t->frames, 2), sy = slope(&t->nose[0][1], t->frames, 2);
    fprintf(stderr,
            "  nose: frame 0 (%.1f, %.1f), last (%.1f, %.1f); slope %.3f, %.3f px/frame "
            "(expected %.1f, 0); step error: frame 0 -> 1 %.2f px, worst after %.2f px; "
            "worst distance from frame 1 + known motion %.2f px\n",
            t->nose[0][0], t->nose[0][1], t->nose[t->frames - 1][0], t->nose[t->frames - 1][1], sx,
            sy, PAN_DX, first_step, worst_step, worst_pos);
    CHECK(fabs(sx - PAN_DX) <= 0.1 * fabs(PAN_DX));
    CHECK(fabs(sy) <= 0.1 * fabs(PAN_DX));
    CHECK(first_step <= 4.0);
    CHECK(worst_step <= 2.0);
    CHECK(worst_pos <= 2.0);
    if (testing_case_failed)
        for (int i = 0; i < t->frames; i++)
            fprintf(stderr, "  frame %d: nose (%.2f, %.2f)\n", i, t->nose[i][0], t->nose[i][1]);
    free(t);
}

/* p turned by deg degrees (clockwise on screen) about the frame centre. */
static void turn(const double p[2], double deg, double out[2])
{
    double r = deg * pi / 180.0, dx = p[0] - ROTATE_CX, dy = p[1] - ROTATE_CY;
    out[0] = ROTATE_CX + dx * cos(r) - dy * sin(r);
    out[1] = ROTATE_CY + dx * sin(r) + dy * cos(r);
}

static void test_rotate(void)
{
    track *t = malloc(sizeof *t);
    REQUIRE(t);
    int ran = run_video(ROTATE_VIDEO, t);
    CHECK(ran);
    if (!ran || t->frames < 2) {
        free(t);
        return;
    }
    CHECK(one_face_one_id(t));
    double rel[VIDEO_FRAMES], worst_angle = 0, worst_tracked = 0, worst_nose = 0, e[2];
    for (int i = 0; i < t->frames; i++) {
        rel[i] = t->eye_deg[i] - t->eye_deg[0];
        worst_angle = fmax(worst_angle, fabs(rel[i] - ROTATE_STEP_DEG * i));
        if (i == 0)
            continue;
        worst_tracked =
            fmax(worst_tracked, fabs(t->eye_deg[i] - t->eye_deg[1] - ROTATE_STEP_DEG * (i - 1)));
        /* The nose turns about the frame centre with the picture. */
        turn(t->nose[1], ROTATE_STEP_DEG * (i - 1), e);
        worst_nose = fmax(worst_nose, hypot(t->nose[i][0] - e[0], t->nose[i][1] - e[1]));
    }
    turn(t->nose[1], -ROTATE_STEP_DEG, e);
    double nose0 = hypot(t->nose[0][0] - e[0], t->nose[0][1] - e[1]);
    double s = slope(rel, t->frames, 1);
    fprintf(stderr,
            "  eye line: frame 0 %.2f deg, last %+.2f deg from it (expected %+.3f); slope %.4f "
            "deg/frame (expected %.4f); worst angle error from frame 0 %.2f deg, from frame 1 "
            "%.2f deg; nose off the turn from frame 1: worst %.2f px, frame 0 %.2f px\n",
            t->eye_deg[0], rel[t->frames - 1], ROTATE_STEP_DEG * (t->frames - 1), s,
            ROTATE_STEP_DEG, worst_angle, worst_tracked, worst_nose, nose0);
    CHECK(fabs(s - ROTATE_STEP_DEG) <= 0.1 * ROTATE_STEP_DEG);
    CHECK(worst_angle <= 2.0);
    CHECK(worst_tracked <= 1.0);
    CHECK(worst_nose <= 3.0); /* a point on a turning face: the mesh shifts it a little */
    CHECK(nose0 <= 4.0);
    /* Head pose (docs/OUTPUT.md): roll > 0 is counter-clockwise on screen,
     * so the clockwise turn makes it fall by the step per frame; yaw and
     * pitch stay put. */
    double roll_rel[VIDEO_FRAMES], worst_roll = 0, yaw_span = 0, pitch_span = 0;
    int posed = 1;
    for (int i = 0; i < t->frames; i++) {
        posed = posed && t->posed[i];
        roll_rel[i] = t->roll[i] - t->roll[0];
        if (i > 0)
            worst_roll =
                fmax(worst_roll, fabs(t->roll[i] - t->roll[1] + ROTATE_STEP_DEG * (i - 1)));
        yaw_span = fmax(yaw_span, fabs(t->yaw[i] - t->yaw[0]));
        pitch_span = fmax(pitch_span, fabs(t->pitch[i] - t->pitch[0]));
    }
    double rs = slope(roll_rel, t->frames, 1);
    fprintf(stderr,
            "  head pose: roll frame 0 %.2f deg, slope %.4f deg/frame (expected %.4f), worst "
            "off the turn from frame 1 %.2f deg; yaw %.2f and pitch %.2f at frame 0, spans "
            "%.2f, %.2f deg\n",
            t->roll[0], rs, -ROTATE_STEP_DEG, worst_roll, t->yaw[0], t->pitch[0], yaw_span,
            pitch_span);
    CHECK(posed);
    CHECK(fabs(rs + ROTATE_STEP_DEG) <= 0.1 * ROTATE_STEP_DEG);
    CHECK(worst_roll <= 1.0);
    CHECK(yaw_span <= 3.0 && pitch_span <= 3.0);
    if (testing_case_failed)
        for (int i = 0; i < t->frames; i++)
            fprintf(stderr, "  frame %d: eye line %+.2f deg from frame 0, nose (%.2f, %.2f)\n", i,
                    rel[i], t->nose[i][0], t->nose[i][1]);
    free(t);
}

int main(void)
{
    if (!io_video_available())
        SKIP_TEST("omma was built without FFmpeg (libavformat/libavcodec)");
    RUN(test_pan);
    RUN(test_rotate);
    return testing_finish();
}
