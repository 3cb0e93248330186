/* Tracked faces to participants (participants.h). */
#include "runtime/participants.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "vision/face_signature.h"

typedef struct participant {
    rt_participant_spec spec;
    int track; /* -1: none */
    int enrolled, samples;
    vis_signature *taken; /* enroll_frames signatures while enrolling */
    vis_signature template;
} participant;

struct rt_participants {
    pthread_mutex_t lock;
    int n, enroll, enroll_frames;
    double enroll_distance;
    participant p[RT_PARTICIPANTS_MAX];
};

const char *rt_assign_how_name(rt_assign_how how)
{
    switch (how) {
    case RT_ASSIGN_REGION:
        return "region";
    case RT_ASSIGN_POSITION:
        return "position";
    case RT_ASSIGN_ENROLLMENT:
        return "enrollment";
    default:
        return "lost";
    }
}

void rt_participants_destroy(rt_participants *ps)
{
    if (!ps)
        return;
    for (int i = 0; i < ps->n; i++)
        free(ps->p[i].taken);
    pthread_mutex_destroy(&ps->lock);
    free(ps);
}

omma_status rt_participants_create(const rt_participants_config *c, rt_participants **out)
{
    *out = NULL;
    if (c->n < 1 || c->n > RT_PARTICIPANTS_MAX)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "participants: %d given (1..%d)", c->n,
                         RT_PARTICIPANTS_MAX);
    int frames = c->enroll_frames > 0 ? c->enroll_frames : 15;
    if (frames > 1000 || !(c->enroll_distance >= 0) || c->enroll_distance > 2)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "participants: enrollment over %d frames (1..1000), distance %g (0..2)",
                         frames, c->enroll_distance);
    for (int i = 0; i < c->n; i++) {
        const rt_participant_spec *s = &c->p[i];
        if (!s->name[0])
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "participant %d has no name", i + 1);
        for (int k = 0; k < i; k++)
            if (strcmp(c->p[k].name, s->name) == 0)
                return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "participant %s given twice", s->name);
        if (s->camera < 0)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "participant %s: no camera", s->name);
        if (s->has_region) {
            const double *r = s->region;
            double lim = s->region_pixels ? 1e6 : 1.0;
            if (!(r[0] >= 0 && r[1] >= 0 && r[2] > 0 && r[3] > 0 && r[0] + r[2] <= lim + 1e-9 &&
                  r[1] + r[3] <= lim + 1e-9))
                return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                                 "participant %s: region %g,%g,%g,%g is not a rectangle inside "
                                 "the frame (%s)",
                                 s->name, r[0], r[1], r[2], r[3],
                                 s->region_pixels ? "pixels" : "fractions 0..1");
        }
    }
    rt_participants *ps = calloc(1, sizeof *ps);
    if (!ps)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "participants: out of memory");
    pthread_mutex_init(&ps->lock, NULL);
    ps->n = c->n;
    ps->enroll = c->enroll;
    ps->enroll_frames = frames;
    ps->enroll_distance = c->enroll_distance > 0 ? c->enroll_distance : 0.025;
    for (int i = 0; i < c->n; i++) {
        ps->p[i].spec = c->p[i];
        ps->p[i].track = -1;
        if (c->enroll && !(ps->p[i].taken = calloc((size_t)frames, sizeof(vis_signature)))) {
            rt_participants_destroy(ps);
            return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "participants: out of memory");
        }
    }
    *out = ps;
    return OMMA_OK;
}

static void centre(const omma_face *f, double *x, double *y)
{
    *x = (f->box.xmin + f->box.xmax) * 0.5;
    *y = (f->box.ymin + f->box.ymax) * 0.5;
}

static void event(rt_participants_frame *o, int p, int track, int prev, rt_assign_how how, double d)
{
    if (o->n_events < (int)(sizeof o->events / sizeof o->events[0]))
        o->events[o->n_events++] = (rt_participant_event){p, track, prev, how, d};
}

static void give(rt_participants *ps, rt_participants_frame *o, int *taken, int p, int f,
                 const omma_face *faces, rt_assign_how how, double d)
{
    event(o, p, faces[f].id, ps->p[p].track, how, d);
    ps->p[p].track = faces[f].id;
    o->face[p] = f;
    taken[f] = 1;
}

/* Enrolled, free participants of the camera to free faces by signature. */
static void by_signature(rt_participants *ps, int camera, const omma_face *faces, int n, int *taken,
                         rt_participants_frame *o)
{
    vis_signature sig[RT_UNASSIGNED_MAX];
    int ok[RT_UNASSIGNED_MAX];
    for (int f = 0; f < n && f < RT_UNASSIGNED_MAX; f++)
        ok[f] = !taken[f] && vis_signature_make(faces[f].landmarks, &sig[f]);
    for (;;) {
        int bp = -1, bf = -1;
        double best = ps->enroll_distance;
        for (int p = 0; p < ps->n; p++) {
            participant *q = &ps->p[p];
            if (q->spec.camera != camera || q->track >= 0 || !q->enrolled)
                continue;
            for (int f = 0; f < n && f < RT_UNASSIGNED_MAX; f++) {
                if (!ok[f] || taken[f])
                    continue;
                double d = vis_signature_distance(&q->template, &sig[f]);
                if (d > best)
                    continue;
                /* The ratio test: no other enrolled person of the camera
                 * within twice that distance (a face half out of the frame
                 * is about as far from everyone). */
                int clear = 1;
                for (int k = 0; k < ps->n && clear; k++)
                    clear = k == p || ps->p[k].spec.camera != camera || !ps->p[k].enrolled ||
                            2 * d < vis_signature_distance(&ps->p[k].template, &sig[f]);
                if (clear) {
                    best = d;
                    bp = p;
                    bf = f;
                }
            }
        }
        if (bp < 0)
            return;
        give(ps, o, taken, bp, bf, faces, RT_ASSIGN_ENROLLMENT, best);
    }
}

static void by_region(rt_participants *ps, int camera, int width, int height,
                      const omma_face *faces, int n, int *taken, rt_participants_frame *o)
{
    for (int p = 0; p < ps->n; p++) {
        participant *q = &ps->p[p];
        if (q->spec.camera != camera || q->track >= 0 || !q->spec.has_region ||
            (ps->enroll && q->enrolled))
            continue;
        double sx = q->spec.region_pixels ? 1.0 : width, sy = q->spec.region_pixels ? 1.0 : height;
        double x0 = q->spec.region[0] * sx, y0 = q->spec.region[1] * sy;
        double x1 = x0 + q->spec.region[2] * sx, y1 = y0 + q->spec.region[3] * sy;
        int bf = -1;
        double best = INFINITY;
        for (int f = 0; f < n; f++) {
            double x, y;
            centre(&faces[f], &x, &y);
            if (taken[f] || x < x0 || x >= x1 || y < y0 || y >= y1)
                continue;
            double d = hypot(x - (x0 + x1) * 0.5, y - (y0 + y1) * 0.5);
            if (d < best) {
                best = d;
                bf = f;
            }
        }
        if (bf >= 0)
            give(ps, o, taken, p, bf, faces, RT_ASSIGN_REGION, 0.0);
    }
}

static void by_position(rt_participants *ps, int camera, const omma_face *faces, int n, int *taken,
                        rt_participants_frame *o)
{
    int free_p[RT_PARTICIPANTS_MAX], np = 0, free_f[RT_UNASSIGNED_MAX], nf = 0;
    for (int p = 0; p < ps->n; p++) {
        participant *q = &ps->p[p];
        if (q->spec.camera == camera && q->track < 0 && !q->spec.has_region &&
            !(ps->enroll && q->enrolled))
            free_p[np++] = p;
    }
    for (int f = 0; f < n && nf < RT_UNASSIGNED_MAX; f++)
        if (!taken[f])
            free_f[nf++] = f;
    if (np == 0 || np != nf)
        return; /* none, or ambiguous */
    for (int i = 1; i < nf; i++) /* left to right */
        for (int k = i; k > 0; k--) {
            double xa, xb, y;
            centre(&faces[free_f[k - 1]], &xa, &y);
            centre(&faces[free_f[k]], &xb, &y);
            if (xb >= xa)
                break;
            int t = free_f[k];
            free_f[k] = free_f[k - 1];
            free_f[k - 1] = t;
        }
    for (int i = 0; i < np; i++)
        give(ps, o, taken, free_p[i], free_f[i], faces, RT_ASSIGN_POSITION, 0.0);
}

void rt_participants_update(rt_participants *ps, int camera, int width, int height,
                            const omma_face *faces, int n, rt_participants_frame *o)
{
    memset(o, 0, sizeof *o);
    if (n > RT_UNASSIGNED_MAX)
        n = RT_UNASSIGNED_MAX;
    int taken[RT_UNASSIGNED_MAX] = {0};
    pthread_mutex_lock(&ps->lock);
    for (int p = 0; p < RT_PARTICIPANTS_MAX; p++)
        o->face[p] = -1;
    for (int p = 0; p < ps->n; p++) {
        participant *q = &ps->p[p];
        if (q->spec.camera != camera || q->track < 0)
            continue;
        int f = 0;
        while (f < n && faces[f].id != q->track)
            f++;
        if (f < n) {
            o->face[p] = f;
            taken[f] = 1;
        } else {
            event(o, p, -1, q->track, RT_ASSIGN_LOST, 0.0);
            q->track = -1;
        }
    }
    if (ps->enroll)
        by_signature(ps, camera, faces, n, taken, o);
    by_region(ps, camera, width, height, faces, n, taken, o);
    by_position(ps, camera, faces, n, taken, o);
    for (int f = 0; f < n; f++)
        if (!taken[f])
            o->unassigned[o->n_unassigned++] = f;
    for (int p = 0; p < ps->n; p++) {
        participant *q = &ps->p[p];
        if (ps->enroll && o->face[p] >= 0 && !q->enrolled &&
            vis_signature_make(faces[o->face[p]].landmarks, &q->taken[q->samples]) &&
            ++q->samples == ps->enroll_frames) {
            vis_signature_mean(q->taken, q->samples, &q->template);
            q->enrolled = 1;
        }
        o->enrolled[p] = q->enrolled;
    }
    pthread_mutex_unlock(&ps->lock);
}
