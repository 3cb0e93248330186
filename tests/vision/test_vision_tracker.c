/* The tracking loop on synthetic faces: ids stay stable while faces move
 * smoothly, the detector is asked for per the rules (fewer faces than the
 * maximum, every K frames), detections overlapping tracked faces are
 * dropped, lost faces go and their ids are not reused; scene cuts (the ROI
 * jumps or changes size, or presence drops while a face appears elsewhere)
 * end a track, fast motion does not. */
#include <math.h>
#include <string.h>

#include "testing.h"
#include "vision/tracker.h"

/* A face of side s centred on (cx, cy): landmarks spread over the square,
 * outer eye corners 33 and 263 level at a quarter from the centre, inner
 * ones 133 and 362 so that the eyes' centres are face_detection's eyes. */
static void face_landmarks(float cx, float cy, float s, float *lm)
{
    for (int i = 0; i < OMMA_FACE_LANDMARKS; i++) {
        lm[3 * i] = cx + s * ((float)(i % 11) / 10 - 0.5f);
        lm[3 * i + 1] = cy + s * ((float)(i % 17) / 16 - 0.5f);
        lm[3 * i + 2] = 0;
    }
    lm[3 * 33] = cx - s / 4, lm[3 * 33 + 1] = cy - s / 8;
    lm[3 * 263] = cx + s / 4, lm[3 * 263 + 1] = cy - s / 8;
    lm[3 * 133] = cx - 3 * s / 20, lm[3 * 133 + 1] = cy - s / 8;
    lm[3 * 362] = cx + 3 * s / 20, lm[3 * 362 + 1] = cy - s / 8;
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

/* One frame: the detector (when asked) finds dets; FaceMesh sees a face of
 * side s at (x, y) in track 0 with the given presence. Returns the ids
 * kept at the frame's end in ids[0..count). */
static int cut_frame(vis_tracker *t, const omma_detection *dets, int n, float x, float y, float s,
                     float presence, int ids[4])
{
    static float lm[OMMA_FACE_LANDMARKS * 3];
    if (vis_tracker_begin_frame(t))
        vis_tracker_add_detections(t, dets, n);
    for (int i = 0; i < t->count; i++) {
        const omma_box b = vis_roi_box(&t->tracks[i].roi);
        if (i == 0)
            face_landmarks(x, y, s, lm);
        else /* the others: a face centred in their ROI */
            face_landmarks((b.xmin + b.xmax) / 2, (b.ymin + b.ymax) / 2, (b.xmax - b.xmin) / 1.5f,
                           lm);
        vis_tracker_update(t, i, lm, i == 0 ? presence : 0.99f);
    }
    vis_tracker_end_frame(t);
    for (int i = 0; i < t->count; i++)
        ids[i] = t->tracks[i].id;
    return t->count;
}

/* A tracked at (200, 200), side 60 (ROI side 90), for two frames. */
static void cut_start(vis_tracker *t, float cut_move, float cut_presence)
{
    vis_tracker_options o;
    vis_tracker_options_init(&o);
    CHECK(o.cut_agree == 0.22f);
    o.cut_move = cut_move;
    o.cut_presence = cut_presence;
    REQUIRE_OK(vis_tracker_init(t, &o));
    omma_detection a = face_detection(200, 200, 60);
    int ids[4];
    CHECK(cut_frame(t, &a, 1, 200, 200, 60, 0.99f, ids) == 1 && ids[0] == 1);
    CHECK(cut_frame(t, &a, 1, 200, 200, 60, 0.99f, ids) == 1 && ids[0] == 1);
}

static void test_scene_cuts(void)
{
    vis_tracker t;
    int ids[4];
    omma_detection a = face_detection(200, 200, 60), far = face_detection(450, 350, 60);
    vis_tracker_options o;
    vis_tracker_options_init(&o);
    CHECK(o.cut_move == 0.3f && o.cut_presence == 0.9f);

    /* Fast motion: 25 px a frame (0.28 of the ROI's side), growing 10%:
     * one id. */
    cut_start(&t, 0.3f, 0.9f);
    float x = 200, s = 60;
    for (int f = 0; f < 6; f++) {
        x += 25, s *= 1.1f;
        omma_detection d = face_detection(x, 200, s);
        CHECK(cut_frame(&t, &d, 1, x, 200, s, 0.99f, ids) == 1 && ids[0] == 1);
    }

    /* The ROI jumps 40 px (0.44 of its side): the track ends on that frame,
     * reported nowhere; the face there is found again with a new id. With
     * cut_move 0 (MediaPipe's loop) the id follows it. */
    cut_start(&t, 0.3f, 0.9f);
    CHECK(cut_frame(&t, NULL, 0, 240, 200, 60, 0.99f, ids) == 0);
    omma_detection moved = face_detection(240, 200, 60);
    CHECK(cut_frame(&t, &moved, 1, 240, 200, 60, 0.99f, ids) == 1 && ids[0] == 2);
    cut_start(&t, 0.0f, 0.9f);
    CHECK(cut_frame(&t, NULL, 0, 240, 200, 60, 0.99f, ids) == 1 && ids[0] == 1);

    /* The same place, half the size (another, smaller face): a cut. */
    cut_start(&t, 0.3f, 0.9f);
    CHECK(cut_frame(&t, NULL, 0, 200, 200, 30, 0.99f, ids) == 0);

    /* Presence drops to 0.7 while the detector finds a face elsewhere and
     * none on the track: a cut (the new face gets id 2 that frame). With a
     * detection on the track, or presence 0.95, or cut_presence 0, not. */
    cut_start(&t, 0.3f, 0.9f);
    CHECK(cut_frame(&t, &far, 1, 200, 200, 60, 0.7f, ids) == 1 && ids[0] == 2);
    cut_start(&t, 0.3f, 0.9f);
    omma_detection both[2] = {a, far};
    CHECK(cut_frame(&t, both, 2, 200, 200, 60, 0.7f, ids) == 2 && ids[0] == 1 && ids[1] == 2);
    cut_start(&t, 0.3f, 0.9f);
    CHECK(cut_frame(&t, &far, 1, 200, 200, 60, 0.95f, ids) == 2 && ids[0] == 1 && ids[1] == 2);
    cut_start(&t, 0.3f, 0.0f);
    CHECK(cut_frame(&t, &far, 1, 200, 200, 60, 0.7f, ids) == 2 && ids[0] == 1 && ids[1] == 2);
    /* Nothing detected anywhere: presence 0.7 alone is no cut. */
    cut_start(&t, 0.3f, 0.9f);
    CHECK(cut_frame(&t, NULL, 0, 200, 200, 60, 0.7f, ids) == 1 && ids[0] == 1);

    /* FaceMesh still sees a face in the old ROI, a little moved, with full
     * presence, but the detector finds another face overlapping it whose
     * eyes are 16 px (0.26 of the face) off the landmarks': a cut (the
     * other face's detection overlapped the track's ROI and was dropped:
     * no face this frame). Eyes 3 px off (0.05): the same face. cut_agree
     * 0: not checked. */
    omma_detection other = face_detection(215, 212, 60);
    cut_start(&t, 0.3f, 0.9f);
    CHECK(cut_frame(&t, &other, 1, 205, 200, 60, 0.99f, ids) == 0);
    omma_detection near = face_detection(200, 203, 60);
    cut_start(&t, 0.3f, 0.9f);
    CHECK(cut_frame(&t, &near, 1, 200, 200, 60, 0.99f, ids) == 1 && ids[0] == 1);
    cut_start(&t, 0.3f, 0.9f);
    t.opt.cut_agree = 0.0f;
    CHECK(cut_frame(&t, &other, 1, 205, 200, 60, 0.99f, ids) == 1 && ids[0] == 1);

    /* Bad cut options. */
    vis_tracker_options_init(&o);
    o.cut_move = -1.0f;
    CHECK_FAILS(vis_tracker_init(&t, &o), OMMA_ERR_INVALID_ARG, "cut move -1");
    vis_tracker_options_init(&o);
    o.cut_agree = 1.5f;
    CHECK_FAILS(vis_tracker_init(&t, &o), OMMA_ERR_INVALID_ARG, "cut agree 1.5");
    vis_tracker_options_init(&o);
    o.cut_presence = 2.0f;
    CHECK_FAILS(vis_tracker_init(&t, &o), OMMA_ERR_INVALID_ARG, "cut presence 2");
}

int main(void)
{
    RUN(test_ids_and_detector_gating);
    RUN(test_detect_every_k);
    RUN(test_overlaps_and_limits);
    RUN(test_scene_cuts);
    return testing_finish();
}
