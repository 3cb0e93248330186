#define _POSIX_C_SOURCE 200809L /* open_memstream */
/* omma stream's participants (stream_people.h). */
#include "cli/stream_people.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "runtime/participant_sync.h"
#include "sink/sink_json.h"
#include "vision/face_measures.h"

struct cli_people {
    int n;
    const rt_participant_spec *spec;
    rt_participants *ps;
    pthread_mutex_t lock; /* sync, labels */
    rt_psync *sync; /* made at the first frame (its rate known); 2+ participants */
    int sync_failed, channels;
    double rate;
    char **labels;
    float *sample;
    const char *names[RT_PARTICIPANTS_MAX];
    double window_s;
    int comod;
    unsigned long long changes[RT_PARTICIPANTS_MAX];
};

int cli_people_start(const cli_stream_opts *o, cli_people **out)
{
    *out = NULL;
    if (o->n_participants == 0)
        return -1;
    cli_people *cp = calloc(1, sizeof *cp);
    if (!cp)
        return cli_fail(OMMA_ERR_OUT_OF_MEMORY, "--participant: out of memory");
    pthread_mutex_init(&cp->lock, NULL);
    cp->n = o->n_participants;
    cp->spec = o->participants;
    cp->window_s = o->sync_window_s;
    cp->comod = o->comodulation;
    for (int p = 0; p < cp->n; p++)
        cp->names[p] = o->participants[p].name;
    rt_participants_config pc = {o->n_participants, o->participants, o->enroll, o->enroll_frames,
                                 o->enroll_distance};
    omma_status st = rt_participants_create(&pc, &cp->ps);
    if (st != OMMA_OK) {
        cli_people_stop(cp);
        return cli_fail(st, "--participant");
    }
    *out = cp;
    return -1;
}

/* The synchrony state, at the first frame (under cp->lock). */
static void make_sync(cli_people *cp, const rt_result *r)
{
    cp->rate = r->fps > 0 ? r->fps : 30.0;
    int window = (int)lround(cp->window_s * cp->rate);
    vis_comod_params cm;
    vis_comod_params_init(&cm);
    cm.neutral_pushes = (int)lround(cp->rate);
    omma_status st =
        rt_psync_create(cp->n, window < 2 ? 2 : window, cp->comod ? &cm : NULL, &cp->sync);
    if (st == OMMA_OK) {
        cp->channels = rt_psync_channels(cp->sync);
        cp->labels = calloc((size_t)cp->channels, sizeof *cp->labels);
        cp->sample = calloc((size_t)cp->channels, sizeof *cp->sample);
        for (int i = 0; cp->labels && i < cp->channels; i++) {
            cp->labels[i] = malloc(3 * RT_PARTICIPANT_NAME_MAX);
            if (!cp->labels[i])
                break;
            rt_psync_label(cp->sync, cp->names, i, cp->labels[i], 3 * RT_PARTICIPANT_NAME_MAX);
        }
        if (!cp->labels || !cp->sample || (cp->channels && !cp->labels[cp->channels - 1]))
            st = OMMA_ERR_OUT_OF_MEMORY;
    }
    if (st != OMMA_OK) {
        cli_error("--participant: synchrony: %s", omma_last_error());
        cp->sync_failed = 1;
    }
}

static void box_json(FILE *m, const omma_face *f)
{
    fprintf(m, "[%.2f,%.2f,%.2f,%.2f]", f->box.xmin, f->box.ymin, f->box.xmax, f->box.ymax);
}

static void track_json(FILE *m, int track)
{
    if (track >= 0)
        fprintf(m, "%d", track);
    else
        fputs("null", m);
}

/* The live view's "sync" event of a CoModulation sample (under cp->lock):
 * {"t_ms": capture time from the run's start, "channels": [{"a", "b",
 * "signal", "kind": "r"|"comod", "value"}...]}. */
static void ui_sync_event(cli_people *cp, ui_server *ui, uint64_t t_ns, uint64_t t0_ns)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return;
    fprintf(m, "{\"t_ms\":%.3f,\"channels\":[", (double)((int64_t)t_ns - (int64_t)t0_ns) / 1e6);
    for (int ch = 0; ch < cp->channels; ch++) {
        int a, b, comod;
        const char *signal;
        rt_psync_channel(cp->sync, ch, &a, &b, &signal, &comod);
        fputs(ch ? ",{\"a\":" : "{\"a\":", m);
        sink_json_string(m, cp->names[a]);
        fputs(",\"b\":", m);
        sink_json_string(m, cp->names[b]);
        fprintf(m, ",\"signal\":\"%s\",\"kind\":\"%s\",\"value\":", signal, comod ? "comod" : "r");
        if (isfinite(cp->sample[ch]))
            fprintf(m, "%.4f}", (double)cp->sample[ch]);
        else
            fputs("null}", m);
    }
    fputs("]}", m);
    if (fclose(m) == 0)
        ui_sync(ui, buf, len);
    free(buf);
}

int cli_people_result(cli_people *cp, const rt_result *r, double timestamp_ms, cli_lsl_sink *lsl,
                      cli_data_sink *data, ui_server *ui, const char **names, char **json,
                      size_t *len)
{
    *json = NULL;
    *len = 0;
    int mine = 0;
    for (int p = 0; p < cp->n; p++)
        mine |= cp->spec[p].camera == r->camera;
    if (!mine)
        return 0;
    rt_participants_frame f;
    rt_participants_update(cp->ps, r->camera, r->width, r->height, r->faces, r->n_faces, &f);
    for (int i = 0; names && i < r->n_faces; i++)
        names[i] = NULL;
    for (int p = 0; names && p < cp->n; p++)
        if (cp->spec[p].camera == r->camera && f.face[p] >= 0 && f.face[p] < r->n_faces)
            names[f.face[p]] = cp->names[p];
    int change[RT_PARTICIPANTS_MAX] = {0};
    for (int e = 0; e < f.n_events; e++) {
        const rt_participant_event *ev = &f.events[e];
        change[ev->participant] = ev->how == RT_ASSIGN_LOST ? -1 : (int)ev->how;
        cp->changes[ev->participant]++;
        if (ev->how == RT_ASSIGN_LOST)
            fprintf(stderr, "omma stream: participant %s lost (track %d ended), frame %llu\n",
                    cp->names[ev->participant], ev->previous_track,
                    (unsigned long long)(r->seq - 1));
        else
            fprintf(stderr, "omma stream: participant %s is track %d (by %s), frame %llu\n",
                    cp->names[ev->participant], ev->track, rt_assign_how_name(ev->how),
                    (unsigned long long)(r->seq - 1));
    }
    if (cp->n >= 2) {
        pthread_mutex_lock(&cp->lock);
        if (!cp->sync && !cp->sync_failed)
            make_sync(cp, r);
        pthread_mutex_unlock(&cp->lock);
    }
    for (int p = 0; p < cp->n; p++) {
        if (cp->spec[p].camera != r->camera)
            continue;
        const omma_face *face = f.face[p] >= 0 ? &r->faces[f.face[p]] : NULL;
        const omma_pose *pose = NULL; /* the pose attached to the participant's face */
        for (int k = 0; face && k < r->n_poses && r->pose_face; k++)
            if (r->pose_face[k] == f.face[p])
                pose = &r->poses[k];
        cli_lsl_participant(lsl, p, r, face, pose, change[p]);
        cli_data_participant(data, p, r, face);
        if (cp->sync) {
            float m[VIS_MEASURE_COUNT];
            if (face)
                vis_face_measures(face->landmarks, m);
            else
                for (int i = 0; i < VIS_MEASURE_COUNT; i++)
                    m[i] = NAN;
            pthread_mutex_lock(&cp->lock);
            uint64_t t_ns;
            if (rt_psync_push(cp->sync, p, m, r->capture_ns, cp->sample, &t_ns)) {
                cli_lsl_sync(lsl, cp->sample, cp->channels, (const char *const *)cp->labels, t_ns,
                             cp->rate);
                if (ui)
                    ui_sync_event(cp, ui, t_ns, r->capture_ns - (uint64_t)(timestamp_ms * 1e6));
            }
            pthread_mutex_unlock(&cp->lock);
        }
    }
    FILE *m = open_memstream(json, len);
    if (!m)
        return 1;
    fprintf(m, "{\"camera\":%d,\"frame\":%llu,\"timestamp_ms\":%.3f,\"participants\":[", r->camera,
            (unsigned long long)(r->seq - 1), timestamp_ms);
    int first = 1;
    for (int p = 0; p < cp->n; p++) {
        if (cp->spec[p].camera != r->camera)
            continue;
        fprintf(m, "%s{\"name\":\"%s\",\"track\":", first ? "" : ",", cp->names[p]);
        first = 0;
        const omma_face *face = f.face[p] >= 0 ? &r->faces[f.face[p]] : NULL;
        track_json(m, face ? face->id : -1);
        if (face) {
            fputs(",\"box\":", m);
            box_json(m, face);
        }
        fprintf(m, ",\"enrolled\":%s}", f.enrolled[p] ? "true" : "false");
    }
    fputs("],\"unassigned\":[", m);
    for (int i = 0; i < f.n_unassigned; i++) {
        const omma_face *u = &r->faces[f.unassigned[i]];
        fprintf(m, "%s{\"track\":%d,\"box\":", i ? "," : "", u->id);
        box_json(m, u);
        fputc('}', m);
    }
    fputs("]}\n", m);
    for (int e = 0; e < f.n_events; e++) {
        const rt_participant_event *ev = &f.events[e];
        fprintf(m,
                "{\"event\":\"%s\",\"participant\":\"%s\",\"camera\":%d,\"frame\":%llu,"
                "\"timestamp_ms\":%.3f,\"track\":",
                ev->how == RT_ASSIGN_LOST ? "lost" : "assigned", cp->names[ev->participant],
                r->camera, (unsigned long long)(r->seq - 1), timestamp_ms);
        track_json(m, ev->track);
        fputs(",\"previous_track\":", m);
        track_json(m, ev->previous_track);
        if (ev->how != RT_ASSIGN_LOST)
            fprintf(m, ",\"by\":\"%s\"", rt_assign_how_name(ev->how));
        if (ev->how == RT_ASSIGN_ENROLLMENT)
            fprintf(m, ",\"distance\":%.4f", ev->distance);
        fputs("}\n", m);
    }
    if (fclose(m) != 0) {
        free(*json);
        *json = NULL;
        *len = 0;
    }
    return 1;
}

void cli_people_stop(cli_people *cp)
{
    if (!cp)
        return;
    for (int p = 0; p < cp->n && cp->ps; p++)
        fprintf(stderr, "omma stream: participant %s: %llu assignment changes\n", cp->names[p],
                cp->changes[p]);
    for (int i = 0; cp->labels && i < cp->channels; i++)
        free(cp->labels[i]);
    free(cp->labels);
    free(cp->sample);
    rt_psync_destroy(cp->sync);
    rt_participants_destroy(cp->ps);
    pthread_mutex_destroy(&cp->lock);
    free(cp);
}
