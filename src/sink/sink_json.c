/* The JSON record of one frame (sink_json.h). */
#include "sink/sink_json.h"

#include <math.h>
#include <string.h>

void sink_json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* A number with `digits` decimals; null for NaN and infinities. */
static void num(FILE *f, float v, int digits)
{
    if (isfinite(v))
        fprintf(f, "%.*f", digits, (double)v);
    else
        fputs("null", f);
}

/* Milliseconds with at most 3 decimals, trailing zeros dropped (0, 66.667). */
static void millis(FILE *f, double ms)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%.3f", isfinite(ms) ? ms : 0.0);
    char *dot = strchr(buf, '.');
    if (dot) {
        char *end = buf + strlen(buf) - 1;
        while (end > dot && *end == '0')
            *end-- = 0;
        if (end == dot)
            *end = 0;
    }
    fputs(buf, f);
}

/* participant: its participant's name, or NULL: no "participant" key. */
static void json_face(FILE *f, const omma_face *face, const char *participant)
{
    fprintf(f, "{\"id\":%d,\"score\":", face->id);
    num(f, face->score, 4);
    fputs(",\"box\":[", f);
    num(f, face->box.xmin, 2);
    fputc(',', f);
    num(f, face->box.ymin, 2);
    fputc(',', f);
    num(f, face->box.xmax, 2);
    fputc(',', f);
    num(f, face->box.ymax, 2);
    fputs("],\"keypoints\":[", f);
    for (int k = 0; k < OMMA_FACE_KEYPOINTS; k++) {
        fputs(k ? ",[" : "[", f);
        num(f, face->keypoints[k][0], 2);
        fputc(',', f);
        num(f, face->keypoints[k][1], 2);
        fputc(']', f);
    }
    fputs("],\"landmarks\":[", f);
    int points = face->n_landmarks == OMMA_FACE_LANDMARKS_WITH_IRISES
                     ? OMMA_FACE_LANDMARKS_WITH_IRISES
                     : OMMA_FACE_LANDMARKS;
    for (int k = 0; k < points; k++) {
        const float *p =
            k < OMMA_FACE_LANDMARKS ? face->landmarks[k] : face->irises[k - OMMA_FACE_LANDMARKS];
        fputs(k ? ",[" : "[", f);
        for (int c = 0; c < 3; c++) {
            if (c)
                fputc(',', f);
            num(f, p[c], 2);
        }
        fputc(']', f);
    }
    fputs("],\"presence\":", f);
    num(f, face->presence, 4);
    if (participant) {
        fputs(",\"participant\":", f);
        sink_json_string(f, participant);
    }
    if (face->has_head_pose) {
        fputs(",\"head_pose\":{\"matrix\":[", f);
        for (int k = 0; k < 16; k++) {
            if (k)
                fputc(',', f);
            num(f, face->head_pose[k], 4);
        }
        fputs("],\"yaw\":", f);
        num(f, face->yaw, 2);
        fputs(",\"pitch\":", f);
        num(f, face->pitch, 2);
        fputs(",\"roll\":", f);
        num(f, face->roll, 2);
        fputc('}', f);
    }
    fputc('}', f);
}

/* A person: id, score, box, 33 landmarks [x, y, z, visibility, presence]
 * in frame pixels, 33 world landmarks [x, y, z] in metres. */
/* face_id: the id of the pose's face, 0: none (null), -1: no "face" key. */
static void json_pose(FILE *f, const omma_pose *p, int face_id)
{
    fprintf(f, "{\"id\":%d,", p->id);
    if (face_id > 0)
        fprintf(f, "\"face\":%d,", face_id);
    else if (face_id == 0)
        fputs("\"face\":null,", f);
    fputs("\"score\":", f);
    num(f, p->score, 4);
    fputs(",\"box\":[", f);
    num(f, p->box.xmin, 2);
    fputc(',', f);
    num(f, p->box.ymin, 2);
    fputc(',', f);
    num(f, p->box.xmax, 2);
    fputc(',', f);
    num(f, p->box.ymax, 2);
    fputs("],\"landmarks\":[", f);
    for (int k = 0; k < OMMA_POSE_LANDMARKS; k++) {
        const omma_pose_landmark *l = &p->landmarks[k];
        fputs(k ? ",[" : "[", f);
        num(f, l->x, 2);
        fputc(',', f);
        num(f, l->y, 2);
        fputc(',', f);
        num(f, l->z, 2);
        fputc(',', f);
        num(f, l->visibility, 4);
        fputc(',', f);
        num(f, l->presence, 4);
        fputc(']', f);
    }
    fputs("],\"world\":[", f);
    for (int k = 0; k < OMMA_POSE_LANDMARKS; k++) {
        fputs(k ? ",[" : "[", f);
        for (int c = 0; c < 3; c++) {
            if (c)
                fputc(',', f);
            num(f, p->world[k][c], 4);
        }
        fputc(']', f);
    }
    fputs("]}", f);
}

void sink_json_frame(FILE *f, const sink_frame *fr)
{
    fprintf(f, "{\"camera\":%d,\"source\":", fr->camera);
    sink_json_string(f, fr->source);
    fprintf(f, ",\"frame\":%ld,\"timestamp_ms\":", fr->frame);
    millis(f, fr->timestamp_ms);
    if (fr->has_extra) {
        fprintf(f, ",\"gpu\":%d,\"latency_ms\":", fr->gpu);
        millis(f, fr->latency_ms);
        fprintf(f, ",\"dropped\":%llu", fr->dropped);
    }
    if (fr->node) {
        fputs(",\"node\":", f);
        sink_json_string(f, fr->node);
        fprintf(f, ",\"seq\":%llu,\"capture_unix_ns\":%llu", (unsigned long long)fr->seq,
                (unsigned long long)fr->capture_unix_ns);
        if (fr->lease)
            fprintf(f, ",\"lease\":%llu", (unsigned long long)fr->lease);
    }
    fputs(",\"faces\":[", f);
    for (int i = 0; i < fr->n_faces; i++) {
        if (i)
            fputc(',', f);
        json_face(f, &fr->faces[i], fr->participant ? fr->participant[i] : NULL);
    }
    fputc(']', f);
    if (fr->has_poses) {
        fputs(",\"pose\":[", f);
        for (int i = 0; i < fr->n_poses; i++) {
            if (i)
                fputc(',', f);
            int face = -1;
            if (fr->pose_face)
                face = fr->pose_face[i] >= 0 && fr->pose_face[i] < fr->n_faces
                           ? fr->faces[fr->pose_face[i]].id
                           : 0;
            json_pose(f, &fr->poses[i], face);
        }
        fputc(']', f);
    }
    fputs("}\n", f);
}
