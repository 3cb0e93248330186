/* The tracking loop on synthetic faces: ids stay stable while faces move
 * smoothly, the detector is asked for per the rules (fewer faces than the
 * maximum, every K frames), detections overlapping tracked faces are
 * dropped, lost faces go and their ids are not reused. */
#include <math.h>
#include <string.h>

#include "testing.h"
#include "vision/tracker.h"

/* A face of side s centred on (cx, cy): landmarks spread over the square,
 * outer eye corners 33 and 263 level at a quarter from the centre. */
static void face_landmarks(float cx, float cy, float s, float *lm)
{
    for (int i = 0; i < OMMA_FACE_LANDMARKS; i++) {
        lm[3 * i] = cx + s * ((float)(i % 11) / 10 - 0.5f);
        lm[3 * i + 1] = cy + s * ((float)(i % 17) / 16 - 0.5f);
        lm[3 * i + 2] = 0;
    }
    lm[3 * 33] = cx - s / 4, lm[3 * 33 + 1] = cy - s / 8;
    lm[3 * 263] = cx + s / 4, lm[3 * 263 + 1] = cy - s / 8;
}

static omma_detection face_detection(float cx, float cy, float s)
{
    omma_detection d;
    memset(&d, 0, sizeof d);
    d.score = 0.9f;
    d.box.xmin = cx - s / 2, d.box.ymin = cy - s / 2;
    d.box.xmax = cx + s / 2, d.box.ymax = cy + s / 2;
    d.keypoints[0][0] = cx - s / 5, d.keypoints[0][1] = cy - s / 8;
    d.keypoints[1][0] = cx + s / 5, d.keypoints[1][1] = cy - s / 8;
    return d;
}

static int find_id(const vis_tracker *t, int id)
{
    for (int i = 0; i < t->count; i++)
        if (t->tracks[i].id == id)
            return i;
    return -1;
}

/* Face A moves right and down, face B left, 4 px a frame. */
static void pos_a(int frame, float *x, float *y)
{
    *x = 100 + 4 * (float)frame, *y = 120 + 2 * (float)frame;
}
static void pos_b(int frame, float *x, float *y)
{
    *x = 500 - 4 * (float)frame, *y = 200;
}

static void test_ids_and_detector_gating(void)
{
    static float lm[OMMA_FACE_LANDMARKS * 3];
    vis_tracker_options o;
    vis_tracker_options_init(&o);
    o.max_faces = 2;
    vis_tracker t;
    REQUIRE_OK(vis_tracker_init(&t, &o));
    float ax, ay, bx, by;
    int detections = 0;
    for (int frame = 1; frame <= 20; frame++) {
        pos_a(frame, &ax, &ay);
        pos_b(frame, &bx, &by);
        int need = vis_tracker_begin_frame(&t);
        /* Fewer than 2 tracked: frames 1..4 (A only; B appears at 5) and
         * 12 (B lost at 11). */
        int want = frame <= 5 || frame == 12;
        CHECK(need == want);
        if (need) {
            detections++;
            omma_detection d[2] = {face_detection(ax, ay, 60), face_detection(bx, by, 50)};
            int n = frame >= 5 ? 2 : 1;
            int added = vis_tracker_add_detections(&t, d, n);
            /* A's detection overlaps its track after frame 1: dropped. */
            CHECK(added == (frame == 1 || frame == 5 || frame == 12));
        }
        for (int i = 0; i < t.count; i++) {
            const vis_track *tr = &t.tracks[i];
            int is_a = tr->id == 1;
            float x = is_a ? ax : bx, y = is_a ? ay : by;
            /* The ROI for this frame lies on the face (last frame's
             * landmarks, or this frame's detection), within its motion. */
            CHECK(fabsf(tr->roi.cx - x) <= 4.5f && fabsf(tr->roi.cy - y) <= 2.5f);
            face_landmarks(x, y, is_a ? 60 : 50, lm);
            float presence = !is_a && frame == 11 ? 0.2f : 0.98f;
            vis_tracker_update(&t, i, lm, presence);
            if (i == 0) {
                static omma_face face;
                vis_tracker_face(&t, i, lm, presence, &face);
                CHECK(face.id == tr->id && face.presence == presence && face.score == 0.9f);
                CHECK(face.box.xmin == lm[0] && face.landmarks[263][0] == lm[3 * 263]);
                CHECK_NEAR(face.box.xmax - face.box.xmin, is_a ? 60 : 50, 1e-3);
            }
            if (presence < 0.5f)
                continue; /* lost: its ROI is left as it was */
            /* Next ROI from the landmarks: centred, 1.5 x the face, level. */
            CHECK_NEAR(tr->roi.cx, x, 1e-3);
            CHECK_NEAR(tr->roi.w, 1.5 * (is_a ? 60 : 50), 1e-3);
            CHECK_NEAR(tr->roi.rotation, 0, 1e-6);
        }
        vis_tracker_end_frame(&t);
        /* A keeps id 1 throughout; B is 2 from frame 5 to 10, lost at 11,
         * and comes back as 3 (ids are never reused). */
        CHECK(find_id(&t, 1) == 0);
        CHECK((find_id(&t, 2) >= 0) == (frame >= 5 && frame <= 10));
        CHECK((find_id(&t, 3) >= 0) == (frame >= 12));
        CHECK(t.count == (frame >= 5 && frame != 11 ? 2 : 1));
    }
    CHECK(detections == 6);
    CHECK(t.next_id == 4);
}

static void test_detect_every_k(void)
{
    static float lm[OMMA_FACE_LANDMARKS * 3];
    vis_tracker_options o;
    vis_tracker_options_init(&o);
    o.max_faces = 1;
    o.detect_every = 3;
    vis_tracker t;
    REQUIRE_OK(vis_tracker_init(&t, &o));
    char pattern[13] = {0};
    for (int frame = 0; frame < 12; frame++) {
        int need = vis_tracker_begin_frame(&t);
        pattern[frame] = need ? 'D' : '.';
        if (need) {
            omma_detection d = face_detection(200, 200, 80);
            vis_tracker_add_detections(&t, &d, 1);
        }
        face_landmarks(200, 200, 80, lm);
        for (int i = 0; i < t.count; i++)
            vis_tracker_update(&t, i, lm, 0.9f);
        vis_tracker_end_frame(&t);
        CHECK(t.count == 1 && t.tracks[0].id == 1);
    }
    fprintf(stderr, "detector runs (max 1 face, every 3): %s\n", pattern);
    CHECK(strcmp(pattern, "D..D..D..D..") == 0);
}

static void test_overlaps_and_limits(void)
{
    static float lm[OMMA_FACE_LANDMARKS * 3];
    vis_tracker t;
    REQUIRE_OK(vis_tracker_init(&t, NULL));
    CHECK(t.opt.max_faces == 4 && t.opt.overlap_iou == 0.5f && t.opt.detect_every == 0);
    CHECK(vis_tracker_begin_frame(&t));
    /* Two near-duplicates (ROI IoU 85/95) and 4 separate faces: 4 tracks, the
     * duplicate dropped, the fifth face over the maximum. */
    omma_detection d[6] = {face_detection(100, 100, 60), face_detection(105, 100, 60),
                           face_detection(300, 100, 60), face_detection(500, 100, 60),
                           face_detection(100, 300, 60), face_detection(300, 300, 60)};
    CHECK(vis_tracker_add_detections(&t, d, 6) == 4);
    CHECK(t.count == 4);
    CHECK(t.tracks[1].roi.cx == 300.0f && t.tracks[3].roi.cy == 300.0f);
    /* A detection overlapping a track a little (IoU < 0.5) is a new face;
     * here the tracker is full anyway. */
    CHECK(vis_tracker_add_detections(&t, d + 5, 1) == 0);
    /* Tracks 0 and 2 converge on one face: the older id stays. Track 3 is
     * not updated (FaceMesh not run on it): it goes too. */
    face_landmarks(100, 100, 60, lm);
    vis_tracker_update(&t, 0, lm, 0.9f);
    vis_tracker_update(&t, 2, lm, 0.9f);
    face_landmarks(300, 100, 60, lm);
    vis_tracker_update(&t, 1, lm, 0.5f); /* exactly the threshold: kept */
    vis_tracker_end_frame(&t);
    CHECK(t.count == 2);
    CHECK(t.tracks[0].id == 1 && t.tracks[1].id == 2);
    /* Bad options. */
    vis_tracker_options o;
    vis_tracker_options_init(&o);
    o.max_faces = 0;
    CHECK_FAILS(vis_tracker_init(&t, &o), OMMA_ERR_INVALID_ARG, "max faces 0");
    vis_tracker_options_init(&o);
    o.detect_every = -1;
    CHECK_FAILS(vis_tracker_init(&t, &o), OMMA_ERR_INVALID_ARG, "detect every -1");
    vis_tracker_options_init(&o);
    o.overlap_iou = 1.5f;
    CHECK_FAILS(vis_tracker_init(&t, &o), OMMA_ERR_INVALID_ARG, "overlap 1.5");
    CHECK_FAILS(vis_tracker_init(NULL, NULL), OMMA_ERR_INVALID_ARG, "NULL tracker");
}

int main(void)
{
    RUN(test_ids_and_detector_gating);
    RUN(test_detect_every_k);
    RUN(test_overlaps_and_limits);
    return testing_finish();
}
