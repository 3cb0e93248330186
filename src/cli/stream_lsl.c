/* omma stream --lsl: the cameras' LSL outlets (stream_lsl.h). */
#include "cli/stream_lsl.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "lsl/lsl_clock.h"
#include "lsl/lsl_layout.h"
#include "lsl/lsl_outlet.h"
#include "vision/face_measures.h"

typedef struct lsl_camera {
    pthread_mutex_t lock;
    char name[96];
    char source_id[200];
    lsl_outlet *landmarks, *face, *frames, *pose;
    int failed; /* making its outlets failed (said once) */
    float sample[LSL_LANDMARKS_CHANNELS];
} lsl_camera;

/* A participant's streams (participant mode): landmarks, face, track. */
typedef struct lsl_person {
    pthread_mutex_t lock;
    char name[96];
    char source_id[200];
    lsl_outlet *landmarks, *face, *track, *pose;
    int failed;
    float sample[LSL_LANDMARKS_CHANNELS];
} lsl_person;

struct cli_lsl_sink {
    lsl_server *server;
    int n;
    lsl_camera *cams;
    int n_people; /* 0: per camera streams */
    lsl_person *people;
    pthread_mutex_t sync_lock;
    lsl_outlet *sync; /* CoModulation */
    int sync_failed;
    const char *bind;
    int pose; /* --pose: NAME_pose streams too */
};

int cli_lsl_start(const cli_stream_opts *o, cli_lsl_sink **out)
{
    *out = NULL;
    int n = o->rt.n_cameras;
    cli_lsl_sink *l = calloc(1, sizeof *l);
    lsl_camera *cams = calloc((size_t)n, sizeof *cams);
    if (!l || !cams) {
        free(l);
        free(cams);
        return cli_fail(OMMA_ERR_OUT_OF_MEMORY, "--lsl: out of memory");
    }
    l->n = n;
    l->cams = cams;
    pthread_mutex_init(&l->sync_lock, NULL);
    if (o->n_participants > 0) {
        l->people = calloc((size_t)o->n_participants, sizeof *l->people);
        if (!l->people) {
            cli_lsl_stop(l);
            return cli_fail(OMMA_ERR_OUT_OF_MEMORY, "--lsl: out of memory");
        }
        l->n_people = o->n_participants;
        for (int p = 0; p < l->n_people; p++) {
            lsl_person *q = &l->people[p];
            pthread_mutex_init(&q->lock, NULL);
            snprintf(q->name, sizeof q->name, "%s", o->participants[p].name);
            snprintf(q->source_id, sizeof q->source_id, "omma:participant:%s", q->name);
        }
    }
    l->bind = o->lsl_bind ? o->lsl_bind : "127.0.0.1";
    l->pose = o->pose[0] != 0;
    for (int i = 0; i < n; i++) {
        lsl_camera *c = &cams[i];
        pthread_mutex_init(&c->lock, NULL);
        snprintf(c->name, sizeof c->name, "%s", o->names[i]);
        /* Stable across runs of the same setup: the name and the source. */
        const char *spec = o->cameras[i].spec ? o->cameras[i].spec : "synthetic";
        snprintf(c->source_id, sizeof c->source_id, "omma:%s:%.120s", c->name, spec);
    }
    lsl_server_options so = {.bind = l->bind};
    omma_status st = lsl_server_create(&so, &l->server);
    if (st != OMMA_OK) {
        cli_lsl_stop(l);
        return cli_fail(st, "--lsl");
    }
    *out = l;
    return -1;
}

static void make_outlets(cli_lsl_sink *l, lsl_camera *c, const rt_result *r)
{
    double rate = r->fps > 0 ? r->fps : 0;
    lsl_info spec;
    omma_status st = OMMA_OK;
    if (!l->n_people &&
        (st = lsl_layout_landmarks_info(c->name, c->source_id, rate, &spec)) == OMMA_OK) {
        st = lsl_outlet_create(l->server, &spec, 0, &c->landmarks);
        lsl_info_clear(&spec);
    }
    if (st == OMMA_OK && !l->n_people &&
        (st = lsl_layout_face_info(c->name, c->source_id, rate, &spec)) == OMMA_OK) {
        st = lsl_outlet_create(l->server, &spec, 0, &c->face);
        lsl_info_clear(&spec);
    }
    if (st == OMMA_OK &&
        (st = lsl_layout_frames_info(c->name, c->source_id, rate, &spec)) == OMMA_OK) {
        st = lsl_outlet_create(l->server, &spec, 0, &c->frames);
        lsl_info_clear(&spec);
    }
    if (st == OMMA_OK && !l->n_people && l->pose &&
        (st = lsl_layout_pose_info(c->name, c->source_id, rate, &spec)) == OMMA_OK) {
        st = lsl_outlet_create(l->server, &spec, 0, &c->pose);
        lsl_info_clear(&spec);
    }
    if (st != OMMA_OK) {
        cli_error("--lsl: camera %d (%s): %s", r->camera, c->name, omma_last_error());
        lsl_outlet_destroy(c->landmarks);
        lsl_outlet_destroy(c->face);
        lsl_outlet_destroy(c->frames);
        lsl_outlet_destroy(c->pose);
        c->landmarks = c->face = c->frames = c->pose = NULL;
        c->failed = 1;
        return;
    }
    if (c->pose)
        fprintf(stderr, "omma stream: LSL stream %s_pose (Pose, %d channels) at %g Hz on %s\n",
                c->name, LSL_POSE_CHANNELS, rate, l->bind);
    if (l->n_people)
        fprintf(stderr, "omma stream: LSL stream %s_frames (VideoSync) at %g Hz on %s\n", c->name,
                rate, l->bind);
    else
        fprintf(stderr,
                "omma stream: LSL streams %s_landmarks (Landmark, %d channels), %s_face "
                "(FaceMeasures, %d channels) and %s_frames (VideoSync) at %g Hz on %s\n",
                c->name, LSL_LANDMARKS_CHANNELS, c->name, LSL_FACE_CHANNELS, c->name, rate,
                l->bind);
}

/* The face's measures and presence; NaN and 0 without a face. */
static void face_sample(const omma_face *face, float *m)
{
    if (face) {
        vis_face_measures(face->landmarks, m);
        m[LSL_FACE_CHANNELS - 1] = face->presence;
    } else {
        for (int i = 0; i < LSL_FACE_CHANNELS - 1; i++)
            m[i] = NAN;
        m[LSL_FACE_CHANNELS - 1] = 0.0f;
    }
}

/* The pose of the frame's person followed on the camera's streams: the
 * one attached to face; without a face, the camera's oldest pose. */
static const omma_pose *pose_of(const rt_result *r, const omma_face *face)
{
    const omma_pose *pose = NULL;
    for (int k = 0; k < r->n_poses; k++) {
        const omma_pose *q = &r->poses[k];
        int f = r->pose_face ? r->pose_face[k] : -1;
        if (face ? f >= 0 && &r->faces[f] == face : !pose || q->id < pose->id)
            pose = q;
    }
    return pose;
}

void cli_lsl_result(cli_lsl_sink *l, const rt_result *r)
{
    if (!l || r->camera < 0 || r->camera >= l->n)
        return;
    lsl_camera *c = &l->cams[r->camera];
    pthread_mutex_lock(&c->lock);
    if (!c->frames && !c->failed)
        make_outlets(l, c, r);
    double ts = lsl_clock_from_ns(r->capture_ns);
    if (c->frames && l->n_people) {
        double f[LSL_FRAMES_CHANNELS];
        lsl_layout_frames_sample(r->seq - 1, ts, r->n_faces, r->dropped, f);
        lsl_outlet_push(c->frames, f, ts);
    } else if (c->landmarks) {
        /* The camera's oldest track: the first face it still follows. */
        const omma_face *face = NULL;
        for (int i = 0; i < r->n_faces; i++)
            if (!face || r->faces[i].id < face->id)
                face = &r->faces[i];
        lsl_layout_landmarks_sample(face, r->width, r->height, c->sample);
        lsl_outlet_push(c->landmarks, c->sample, ts);
        float m[LSL_FACE_CHANNELS];
        face_sample(face, m);
        lsl_outlet_push(c->face, m, ts);
        double f[LSL_FRAMES_CHANNELS];
        lsl_layout_frames_sample(r->seq - 1, ts, r->n_faces, r->dropped, f);
        lsl_outlet_push(c->frames, f, ts);
        if (c->pose) {
            float p[LSL_POSE_CHANNELS];
            lsl_layout_pose_sample(pose_of(r, face), r->width, r->height, p);
            lsl_outlet_push(c->pose, p, ts);
        }
    }
    pthread_mutex_unlock(&c->lock);
}

static void make_person(cli_lsl_sink *l, lsl_person *q, const rt_result *r)
{
    double rate = r->fps > 0 ? r->fps : 0;
    lsl_info spec;
    omma_status st = lsl_layout_landmarks_info(q->name, q->source_id, rate, &spec);
    if (st == OMMA_OK) {
        st = lsl_outlet_create(l->server, &spec, 0, &q->landmarks);
        lsl_info_clear(&spec);
    }
    if (st == OMMA_OK &&
        (st = lsl_layout_face_info(q->name, q->source_id, rate, &spec)) == OMMA_OK) {
        st = lsl_outlet_create(l->server, &spec, 0, &q->face);
        lsl_info_clear(&spec);
    }
    if (st == OMMA_OK &&
        (st = lsl_layout_track_info(q->name, q->source_id, rate, &spec)) == OMMA_OK) {
        st = lsl_outlet_create(l->server, &spec, 0, &q->track);
        lsl_info_clear(&spec);
    }
    if (st == OMMA_OK && l->pose &&
        (st = lsl_layout_pose_info(q->name, q->source_id, rate, &spec)) == OMMA_OK) {
        st = lsl_outlet_create(l->server, &spec, 0, &q->pose);
        lsl_info_clear(&spec);
    }
    if (st != OMMA_OK) {
        cli_error("--lsl: participant %s: %s", q->name, omma_last_error());
        lsl_outlet_destroy(q->landmarks);
        lsl_outlet_destroy(q->face);
        lsl_outlet_destroy(q->track);
        lsl_outlet_destroy(q->pose);
        q->landmarks = q->face = q->track = q->pose = NULL;
        q->failed = 1;
        return;
    }
    if (q->pose)
        fprintf(stderr, "omma stream: LSL stream %s_pose (Pose, %d channels) at %g Hz on %s\n",
                q->name, LSL_POSE_CHANNELS, rate, l->bind);
    fprintf(stderr,
            "omma stream: LSL streams %s_landmarks (Landmark, %d channels), %s_face "
            "(FaceMeasures, %d channels) and %s_track (Assignment) at %g Hz on %s\n",
            q->name, LSL_LANDMARKS_CHANNELS, q->name, LSL_FACE_CHANNELS, q->name, rate, l->bind);
}

void cli_lsl_participant(cli_lsl_sink *l, int p, const rt_result *r, const omma_face *face,
                         const omma_pose *pose, int change)
{
    if (!l || p < 0 || p >= l->n_people)
        return;
    lsl_person *q = &l->people[p];
    pthread_mutex_lock(&q->lock);
    if (!q->landmarks && !q->failed)
        make_person(l, q, r);
    if (q->landmarks) {
        double ts = lsl_clock_from_ns(r->capture_ns);
        lsl_layout_landmarks_sample(face, r->width, r->height, q->sample);
        lsl_outlet_push(q->landmarks, q->sample, ts);
        float m[LSL_FACE_CHANNELS];
        face_sample(face, m);
        lsl_outlet_push(q->face, m, ts);
        double t[LSL_TRACK_CHANNELS] = {r->camera, face ? face->id : -1, change};
        lsl_outlet_push(q->track, t, ts);
        if (q->pose) {
            float s[LSL_POSE_CHANNELS];
            lsl_layout_pose_sample(pose, r->width, r->height, s);
            lsl_outlet_push(q->pose, s, ts);
        }
    }
    pthread_mutex_unlock(&q->lock);
}

void cli_lsl_sync(cli_lsl_sink *l, const float *sample, int n, const char *const *labels,
                  uint64_t t_ns, double rate)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->sync_lock);
    if (!l->sync && !l->sync_failed) {
        lsl_info spec;
        omma_status st = lsl_layout_labelled_info("CoModulation", "CoModulation",
                                                  "omma:participants:CoModulation", rate, n, labels,
                                                  "correlation", &spec);
        if (st == OMMA_OK) {
            st = lsl_outlet_create(l->server, &spec, 0, &l->sync);
            lsl_info_clear(&spec);
        }
        if (st != OMMA_OK) {
            cli_error("--lsl: CoModulation: %s", omma_last_error());
            l->sync_failed = 1;
        } else {
            fprintf(stderr, "omma stream: LSL stream CoModulation (%d channels) at %g Hz on %s\n",
                    n, rate, l->bind);
        }
    }
    if (l->sync)
        lsl_outlet_push(l->sync, sample, lsl_clock_from_ns(t_ns));
    pthread_mutex_unlock(&l->sync_lock);
}

static void report(const char *name, const char *what, lsl_outlet *o)
{
    if (!o)
        return;
    lsl_outlet_stats st;
    lsl_outlet_get_stats(o, &st);
    fprintf(stderr, "omma stream: LSL %s%s%s: %llu samples, %llu lost by slow consumers\n", name,
            what[0] ? "_" : "", what, (unsigned long long)st.pushed, (unsigned long long)st.lost);
}

void cli_lsl_stop(cli_lsl_sink *l)
{
    if (!l)
        return;
    for (int i = 0; i < l->n; i++) {
        lsl_camera *c = &l->cams[i];
        report(c->name, "landmarks", c->landmarks);
        report(c->name, "face", c->face);
        report(c->name, "frames", c->frames);
        report(c->name, "pose", c->pose);
        lsl_outlet_destroy(c->pose);
        lsl_outlet_destroy(c->landmarks);
        lsl_outlet_destroy(c->face);
        lsl_outlet_destroy(c->frames);
        pthread_mutex_destroy(&c->lock);
    }
    for (int p = 0; p < l->n_people; p++) {
        lsl_person *q = &l->people[p];
        report(q->name, "landmarks", q->landmarks);
        report(q->name, "face", q->face);
        report(q->name, "track", q->track);
        report(q->name, "pose", q->pose);
        lsl_outlet_destroy(q->pose);
        lsl_outlet_destroy(q->landmarks);
        lsl_outlet_destroy(q->face);
        lsl_outlet_destroy(q->track);
        pthread_mutex_destroy(&q->lock);
    }
    if (l->sync) {
        report("CoModulation", "", l->sync);
        lsl_outlet_destroy(l->sync);
    }
    pthread_mutex_destroy(&l->sync_lock);
    lsl_server_destroy(l->server);
    free(l->people);
    free(l->cams);
    free(l);
}
