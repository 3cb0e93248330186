/* Participants (src/runtime/participants.c) on made-up frames: regions,
 * faces crossing (their tracks keep their names), a track ending (an
 * event), position when unambiguous and nothing when not, enrollment
 * re-identifying two people who come back on each other's side, bad
 * configs; and the synchrony sets of participant_sync.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/participant_sync.h"
#include "runtime/participants.h"
#include "testing.h"

static float shapes[2][OMMA_FACE_LANDMARKS][3];

static void make_shapes(void)
{
    srand(7);
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < OMMA_FACE_LANDMARKS; i++)
            for (int k = 0; k < 3; k++)
                shapes[s][i][k] = (float)(rand() % 1000) / 10.0f - 50.0f;
}

/* Face `id` of person `who` (0 or 1) centred at (x, y). */
static omma_face face(int id, int who, float x, float y)
{
    omma_face f;
    memset(&f, 0, sizeof f);
    f.id = id;
    f.presence = 1.0f;
    f.box = (omma_box){x - 50, y - 50, x + 50, y + 50};
    for (int i = 0; i < OMMA_FACE_LANDMARKS; i++) {
        f.landmarks[i][0] = shapes[who][i][0] + x;
        f.landmarks[i][1] = shapes[who][i][1] + y;
        f.landmarks[i][2] = shapes[who][i][2];
    }
    return f;
}

static rt_participant_spec spec(const char *name, int camera, double x, double y, double w,
                                double h)
{
    rt_participant_spec s;
    memset(&s, 0, sizeof s);
    snprintf(s.name, sizeof s.name, "%s", name);
    s.camera = camera;
    if (w > 0) {
        s.has_region = 1;
        s.region[0] = x, s.region[1] = y, s.region[2] = w, s.region[3] = h;
    }
    return s;
}

static int track_of(const rt_participants_frame *f, const omma_face *faces, int p)
{
    return f->face[p] >= 0 ? faces[f->face[p]].id : -1;
}

static void regions_and_crossing(void)
{
    rt_participant_spec p[2] = {spec("ann", 0, 0, 0, 0.5, 1), spec("bob", 0, 0.5, 0, 0.5, 1)};
    rt_participants_config c = {2, p, 0, 0, 0};
    rt_participants *ps = NULL;
    REQUIRE_OK(rt_participants_create(&c, &ps));
    rt_participants_frame f;
    omma_face fs[3] = {face(1, 0, 100, 200), face(2, 1, 500, 200)};
    rt_participants_update(ps, 0, 640, 480, fs, 2, &f);
    CHECK(track_of(&f, fs, 0) == 1 && track_of(&f, fs, 1) == 2);
    CHECK(f.n_events == 2 && f.events[0].how == RT_ASSIGN_REGION &&
          f.events[0].previous_track == -1);
    CHECK(f.n_unassigned == 0);
    /* They cross: the tracks keep their names, no event. */
    fs[0] = face(1, 0, 500, 100);
    fs[1] = face(2, 1, 100, 300);
    rt_participants_update(ps, 0, 640, 480, fs, 2, &f);
    CHECK(track_of(&f, fs, 0) == 1 && track_of(&f, fs, 1) == 2 && f.n_events == 0);
    /* bob's track ends; a new track in ann's region is not bob's: it is
     * reported unassigned, and bob is lost. */
    fs[0] = face(1, 0, 500, 100);
    fs[1] = face(3, 1, 100, 300);
    rt_participants_update(ps, 0, 640, 480, fs, 2, &f);
    CHECK(track_of(&f, fs, 0) == 1 && track_of(&f, fs, 1) == -1);
    CHECK(f.n_events == 1 && f.events[0].how == RT_ASSIGN_LOST && f.events[0].previous_track == 2 &&
          f.events[0].track == -1);
    CHECK(f.n_unassigned == 1 && f.unassigned[0] == 1);
    /* It moves into bob's region: bob's, by region. */
    fs[1] = face(3, 1, 600, 300);
    rt_participants_update(ps, 0, 640, 480, fs, 2, &f);
    CHECK(track_of(&f, fs, 1) == 3 && f.n_events == 1 && f.events[0].how == RT_ASSIGN_REGION);
    /* Another camera's frames leave these participants alone. */
    rt_participants_update(ps, 1, 640, 480, fs, 2, &f);
    CHECK(f.face[0] == -1 && f.face[1] == -1 && f.n_events == 0 && f.n_unassigned == 2);
    rt_participants_destroy(ps);
}

static void position(void)
{
    rt_participant_spec p[2] = {spec("ann", 0, 0, 0, 0, 0), spec("bob", 0, 0, 0, 0, 0)};
    rt_participants_config c = {2, p, 0, 0, 0};
    rt_participants *ps = NULL;
    REQUIRE_OK(rt_participants_create(&c, &ps));
    rt_participants_frame f;
    omma_face fs[2] = {face(4, 1, 500, 200), face(5, 0, 100, 200)};
    rt_participants_update(ps, 0, 640, 480, fs, 1, &f); /* one face, two people: ambiguous */
    CHECK(f.face[0] == -1 && f.face[1] == -1 && f.n_unassigned == 1 && f.n_events == 0);
    rt_participants_update(ps, 0, 640, 480, fs, 2, &f); /* left to right, in order */
    CHECK(track_of(&f, fs, 0) == 5 && track_of(&f, fs, 1) == 4);
    CHECK(f.n_events == 2 && f.events[0].how == RT_ASSIGN_POSITION);
    rt_participants_destroy(ps);
}

static void enrollment(void)
{
    rt_participant_spec p[2] = {spec("ann", 0, 0, 0, 0, 0), spec("bob", 0, 0, 0, 0, 0)};
    rt_participants_config c = {2, p, 1, 3, 0.05};
    rt_participants *ps = NULL;
    REQUIRE_OK(rt_participants_create(&c, &ps));
    rt_participants_frame f;
    omma_face fs[2];
    for (int i = 0; i < 3; i++) {
        fs[0] = face(1, 0, 100 + i, 200);
        fs[1] = face(2, 1, 500 - i, 200);
        rt_participants_update(ps, 0, 640, 480, fs, 2, &f);
    }
    CHECK(f.enrolled[0] && f.enrolled[1]);
    rt_participants_update(ps, 0, 640, 480, fs, 0, &f); /* both gone */
    CHECK(f.n_events == 2 && f.events[0].how == RT_ASSIGN_LOST);
    /* Back on each other's side: position would swap them, signatures do
     * not; bob first, alone. */
    fs[0] = face(3, 1, 100, 250);
    rt_participants_update(ps, 0, 640, 480, fs, 1, &f);
    CHECK(track_of(&f, fs, 1) == 3 && f.face[0] == -1);
    CHECK(f.n_events == 1 && f.events[0].how == RT_ASSIGN_ENROLLMENT &&
          f.events[0].distance < 0.01);
    fs[1] = face(4, 0, 500, 250);
    rt_participants_update(ps, 0, 640, 480, fs, 2, &f);
    CHECK(track_of(&f, fs, 0) == 4 && track_of(&f, fs, 1) == 3);
    rt_participants_destroy(ps);
}

static void bad_configs(void)
{
    rt_participants *ps = NULL;
    rt_participant_spec p[2] = {spec("ann", 0, 0, 0, 0, 0), spec("ann", 1, 0, 0, 0, 0)};
    rt_participants_config c = {2, p, 0, 0, 0};
    CHECK_FAILS(rt_participants_create(&c, &ps), OMMA_ERR_INVALID_ARG, "ann given twice");
    p[1] = spec("bob", 0, 0.6, 0, 0.5, 1); /* past the right edge */
    CHECK_FAILS(rt_participants_create(&c, &ps), OMMA_ERR_INVALID_ARG, "bob: region");
    c.n = 0;
    CHECK_FAILS(rt_participants_create(&c, &ps), OMMA_ERR_INVALID_ARG, "participants");
    CHECK(ps == NULL);
}

static void sync_sets(void)
{
    rt_psync *s = NULL;
    REQUIRE_OK(rt_psync_create(3, 4, NULL, &s));
    CHECK(rt_psync_channels(s) == 3 * VIS_MEASURE_COUNT);
    const char *names[3] = {"ann", "bob", "cy"};
    char label[64];
    rt_psync_label(s, names, 0, label, sizeof label);
    CHECK(strcmp(label, "ann-bob_yaw_r") == 0);
    rt_psync_label(s, names, 2 * VIS_MEASURE_COUNT + 5, label, sizeof label);
    CHECK(strcmp(label, "bob-cy_mouth_open_r") == 0);
    float out[3 * VIS_MEASURE_COUNT], v[VIS_MEASURE_COUNT];
    uint64_t t = 0;
    int samples = 0;
    for (int i = 0; i < 8; i++) {
        for (int k = 0; k < VIS_MEASURE_COUNT; k++)
            v[k] = (float)(i * i + k);
        /* ann and bob on one camera, cy on another, pushed twice as often */
        samples += rt_psync_push(s, 2, v, 1000u + (uint64_t)i, out, &t);
        samples += rt_psync_push(s, 2, v, 1000u + (uint64_t)i, out, &t);
        samples += rt_psync_push(s, 0, v, 2000u + (uint64_t)i, out, &t);
        CHECK(samples == i); /* not yet: bob is missing */
        samples += rt_psync_push(s, 1, v, 2000u + (uint64_t)i, out, &t);
        CHECK(samples == i + 1 && t == 2000u + (uint64_t)i);
    }
    CHECK_NEAR(out[0], 1.0, 1e-5); /* the same signal everywhere */
    rt_psync_destroy(s);
    s = NULL;
    vis_comod_params cm;
    vis_comod_params_init(&cm);
    REQUIRE_OK(rt_psync_create(2, 60, &cm, &s));
    CHECK(rt_psync_channels(s) == 2 * VIS_MEASURE_COUNT);
    rt_psync_label(s, names, VIS_MEASURE_COUNT, label, sizeof label);
    CHECK(strcmp(label, "ann-bob_yaw_comod") == 0);
    rt_psync_destroy(s);
    CHECK_FAILS(rt_psync_create(1, 60, NULL, &s), OMMA_ERR_INVALID_ARG, "2..16");
}

int main(void)
{
    make_shapes();
    RUN(regions_and_crossing);
    RUN(position);
    RUN(enrollment);
    RUN(bad_configs);
    RUN(sync_sets);
    return testing_finish();
}
