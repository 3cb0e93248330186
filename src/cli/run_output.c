/* JSON Lines and CSV writers of omma run, and the temporary-file output. */
#define _POSIX_C_SOURCE 200809L /* mkstemp, fchmod, fdopen, open_memstream */
#include "cli/run_output.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/run_progress.h"
#include "sink/sink_json.h"

/* A number with `digits` decimals; null in JSON (empty in CSV) for NaN and
 * infinities. */
static void num(FILE *f, float v, int digits, const char *missing)
{
    if (isfinite(v))
        fprintf(f, "%.*f", digits, (double)v);
    else
        fputs(missing, f);
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

/* A CSV field: quoted (quotes doubled) when it holds a comma, quote or
 * line break (RFC 4180). */
static void csv_string(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* face_id, score, presence, the box, keypoints, landmarks; then what
 * o->columns adds. */
#define CSV_FACE_FIELDS (3 + 4 + 2 * OMMA_FACE_KEYPOINTS + 3 * OMMA_FACE_LANDMARKS)
#define CSV_IRIS_FIELDS (2 * OMMA_FACE_IRIS_LANDMARKS)
#define CSV_HEAD_POSE_FIELDS (3 + 16)

static void csv_header(FILE *f, unsigned columns)
{
    fputs("camera,source,frame,timestamp_ms,face_id,score,presence,x0,y0,x1,y1", f);
    for (int k = 0; k < OMMA_FACE_KEYPOINTS; k++)
        fprintf(f, ",kp%d_x,kp%d_y", k, k);
    for (int k = 0; k < OMMA_FACE_LANDMARKS; k++)
        fprintf(f, ",lm%d_x,lm%d_y,lm%d_z", k, k, k);
    if (columns & CLI_CSV_IRISES)
        for (int k = OMMA_FACE_LANDMARKS; k < OMMA_FACE_LANDMARKS_WITH_IRISES; k++)
            fprintf(f, ",lm%d_x,lm%d_y", k, k);
    if (columns & CLI_CSV_HEAD_POSE) {
        fputs(",yaw,pitch,roll", f);
        for (int k = 0; k < 16; k++)
            fprintf(f, ",hp%d", k);
    }
    fputc('\n', f);
}

static void csv_empty(FILE *f, int fields)
{
    for (int k = 0; k < fields; k++)
        fputc(',', f);
}

/* A face's iris and head pose columns: empty for a face without them (468
 * landmarks; no solution to its pose). */
static void csv_extra(FILE *f, unsigned columns, const omma_face *face)
{
    if (columns & CLI_CSV_IRISES) {
        if (face->n_landmarks != OMMA_FACE_LANDMARKS_WITH_IRISES)
            csv_empty(f, CSV_IRIS_FIELDS);
        else
            for (int k = 0; k < OMMA_FACE_IRIS_LANDMARKS; k++)
                for (int c = 0; c < 2; c++) {
                    fputc(',', f);
                    num(f, face->irises[k][c], 2, "");
                }
    }
    if (columns & CLI_CSV_HEAD_POSE) {
        if (!face->has_head_pose) {
            csv_empty(f, CSV_HEAD_POSE_FIELDS);
            return;
        }
        const float angles[3] = {face->yaw, face->pitch, face->roll};
        for (int k = 0; k < 3; k++) {
            fputc(',', f);
            num(f, angles[k], 2, "");
        }
        for (int k = 0; k < 16; k++) {
            fputc(',', f);
            num(f, face->head_pose[k], 4, "");
        }
    }
}

static void csv_frame(FILE *f, unsigned columns, int camera, const char *source, long frame,
                      double ts, const omma_face *faces, int n)
{
    for (int i = 0; i < (n > 0 ? n : 1); i++) {
        fprintf(f, "%d,", camera);
        csv_string(f, source);
        fprintf(f, ",%ld,", frame);
        millis(f, ts);
        if (n == 0) { /* the face fields, empty */
            csv_empty(f, CSV_FACE_FIELDS + (columns & CLI_CSV_IRISES ? CSV_IRIS_FIELDS : 0) +
                             (columns & CLI_CSV_HEAD_POSE ? CSV_HEAD_POSE_FIELDS : 0));
            fputc('\n', f);
            continue;
        }
        const omma_face *face = &faces[i];
        fprintf(f, ",%d,", face->id);
        num(f, face->score, 4, "");
        fputc(',', f);
        num(f, face->presence, 4, "");
        const float box[4] = {face->box.xmin, face->box.ymin, face->box.xmax, face->box.ymax};
        for (int k = 0; k < 4; k++) {
            fputc(',', f);
            num(f, box[k], 2, "");
        }
        for (int k = 0; k < OMMA_FACE_KEYPOINTS; k++)
            for (int c = 0; c < 2; c++) {
                fputc(',', f);
                num(f, face->keypoints[k][c], 2, "");
            }
        for (int k = 0; k < OMMA_FACE_LANDMARKS; k++)
            for (int c = 0; c < 3; c++) {
                fputc(',', f);
                num(f, face->landmarks[k][c], 2, "");
            }
        csv_extra(f, columns, face);
        fputc('\n', f);
    }
}

static const char *name_of(const cli_output *o)
{
    return o->path ? o->path : "stdout";
}

/* Writes the record held in [buf, buf + n) with one fwrite and a flush. */
static int put(cli_output *o, const char *buf, size_t n)
{
    if (o->failed)
        return 0;
    errno = 0;
    if (fwrite(buf, 1, n, o->f) != n || (!o->path && fflush(o->f) != 0)) {
        cli_run_error("%s: writing failed: %s", name_of(o), errno ? strerror(errno) : "I/O error");
        o->failed = 1;
        return 0;
    }
    return 1;
}

/* A record is formatted into a memstream, then put() whole. */
static int record_begin(cli_output *o, FILE **m, char **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    if (o->failed)
        return 0;
    *m = open_memstream(buf, len);
    if (!*m) {
        cli_run_error("%s: out of memory formatting a record", name_of(o));
        o->failed = 1;
        return 0;
    }
    return 1;
}

/* buf and len are the memstream's: valid after fclose. */
static int record_end(cli_output *o, FILE *m, char **buf, size_t *len)
{
    int ok = fclose(m) == 0;
    if (!ok) {
        cli_run_error("%s: out of memory formatting a record", name_of(o));
        o->failed = 1;
    } else {
        ok = put(o, *buf, *len);
    }
    free(*buf);
    return ok;
}

int cli_output_line(cli_output *o, const char *line, size_t n)
{
    return o->csv ? 1 : put(o, line, n);
}

int cli_output_frame(cli_output *o, int camera, const char *source, long frame, double timestamp_ms,
                     const omma_face *faces, int n)
{
    return cli_output_frame_extra(o, camera, source, frame, timestamp_ms, NULL, faces, n);
}

int cli_output_frame_extra(cli_output *o, int camera, const char *source, long frame,
                           double timestamp_ms, const cli_frame_extra *extra,
                           const omma_face *faces, int n)
{
    return cli_output_frame_poses(o, camera, source, frame, timestamp_ms, extra, faces, n, NULL,
                                  -1);
}

/* n_poses -1: no "pose" field. */
int cli_output_frame_poses(cli_output *o, int camera, const char *source, long frame,
                           double timestamp_ms, const cli_frame_extra *extra,
                           const omma_face *faces, int n, const omma_pose *poses, int n_poses)
{
    FILE *m;
    char *buf;
    size_t len;
    if (!record_begin(o, &m, &buf, &len))
        return 0;
    if (o->csv) {
        csv_frame(m, o->columns, camera, source, frame, timestamp_ms, faces, n);
    } else {
        sink_frame fr = {.camera = camera,
                         .source = source,
                         .frame = frame,
                         .timestamp_ms = timestamp_ms,
                         .faces = faces,
                         .n_faces = n,
                         .has_poses = n_poses >= 0,
                         .poses = poses,
                         .n_poses = n_poses > 0 ? n_poses : 0};
        if (extra) {
            fr.has_extra = 1;
            fr.gpu = extra->gpu;
            fr.latency_ms = extra->latency_ms;
            fr.dropped = extra->dropped;
        }
        sink_json_frame(m, &fr);
    }
    return record_end(o, m, &buf, &len);
}

int cli_output_frame_result(cli_output *o, int camera, const char *source, double timestamp_ms,
                            const cli_frame_extra *extra, const rt_result *r)
{
    if (o->csv)
        return cli_output_frame_extra(o, camera, source, (long)r->seq - 1, timestamp_ms, extra,
                                      r->faces, r->n_faces);
    FILE *m;
    char *buf;
    size_t len;
    if (!record_begin(o, &m, &buf, &len))
        return 0;
    sink_frame fr = {.camera = camera,
                     .source = source,
                     .frame = (long)r->seq - 1,
                     .timestamp_ms = timestamp_ms,
                     .faces = r->faces,
                     .n_faces = r->n_faces,
                     .has_poses = r->poses != NULL,
                     .poses = r->poses,
                     .n_poses = r->n_poses,
                     .pose_face = r->pose_face,
                     .participant = r->participant};
    if (extra) {
        fr.has_extra = 1;
        fr.gpu = extra->gpu;
        fr.latency_ms = extra->latency_ms;
        fr.dropped = extra->dropped;
    }
    sink_json_frame(m, &fr);
    return record_end(o, m, &buf, &len);
}

int cli_output_open(cli_output *o, const char *path, int csv)
{
    return cli_output_open_columns(o, path, csv, 0);
}

int cli_output_open_columns(cli_output *o, const char *path, int csv, unsigned columns)
{
    memset(o, 0, sizeof *o);
    o->csv = csv;
    o->columns = columns;
    if (!path) {
        o->f = stdout;
    } else {
        o->path = path;
        size_t n = strlen(path) + sizeof ".tmp.XXXXXX";
        o->tmp = malloc(n);
        if (!o->tmp) {
            cli_run_error("%s: out of memory", path);
            return 0;
        }
        snprintf(o->tmp, n, "%s.tmp.XXXXXX", path);
        int fd = mkstemp(o->tmp);
        if (fd < 0) {
            cli_run_error("%s: cannot create a temporary file beside it: %s", path,
                          strerror(errno));
            free(o->tmp);
            return 0;
        }
        (void)fchmod(fd, 0644);
        o->f = fdopen(fd, "w");
        if (!o->f) {
            cli_run_error("%s: %s", o->tmp, strerror(errno));
            close(fd);
            unlink(o->tmp);
            free(o->tmp);
            return 0;
        }
    }
    if (csv) {
        FILE *m;
        char *buf;
        size_t len;
        if (!record_begin(o, &m, &buf, &len))
            return cli_output_close(o, 0), 0;
        csv_header(m, columns);
        if (!record_end(o, m, &buf, &len))
            return cli_output_close(o, 0), 0;
    }
    return 1;
}

int cli_output_close(cli_output *o, int keep)
{
    errno = 0;
    int ok = !o->failed && fflush(o->f) == 0 && !ferror(o->f);
    int err = errno;
    if (!o->path) {
        if (!ok && !o->failed)
            cli_run_error("writing to stdout failed: %s", err ? strerror(err) : "I/O error");
        return ok;
    }
    if (fclose(o->f) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    if (!ok && !o->failed)
        cli_run_error("%s: writing failed: %s", o->path, err ? strerror(err) : "I/O error");
    if (ok && keep && rename(o->tmp, o->path) != 0) {
        cli_run_error("%s: cannot rename %s to it: %s", o->path, o->tmp, strerror(errno));
        ok = 0;
    }
    if (!ok || !keep)
        unlink(o->tmp);
    free(o->tmp);
    o->tmp = NULL;
    return ok;
}
