/* omma run's results: JSON Lines (one object per frame per camera) or CSV
 * (one row per face per frame, and one row with the face fields empty for
 * a frame without faces, so every frame processed appears), to stdout or
 * to a file. A file is written under a temporary name beside it and
 * renamed into place by cli_output_close, so it is complete or absent; each
 * record is formatted whole in memory and written with one call, so even
 * stdout never holds half a record from omma. One thread at a time. */
#ifndef OMMA_CLI_RUN_OUTPUT_H
#define OMMA_CLI_RUN_OUTPUT_H

#include <stdio.h>

#include "omma/face.h"
#include "omma/pose.h"
#include "runtime/runtime.h"

typedef struct cli_output {
    FILE *f;
    const char *path; /* NULL: stdout */
    char *tmp;
    int csv;
    unsigned columns; /* CSV: CLI_CSV_* */
    int failed; /* a write failed (reported once) */
} cli_output;

/* Opens stdout (path NULL) or a temporary file beside path; a CSV output
 * gets its header row. Returns 1, or 0 after printing the error. */
int cli_output_open(cli_output *o, const char *path, int csv);

/* CSV columns after the landmarks (docs/OUTPUT.md), in this order: x, y of
 * landmarks 468..477 (the irises of the 478-point mesh; empty for a face
 * with 468), the head pose's yaw, pitch, roll and matrix (empty for a face
 * without one). */
#define CLI_CSV_IRISES 1u
#define CLI_CSV_HEAD_POSE 2u

/* cli_output_open with those columns (CLI_CSV_* bits; JSON ignores them). */
int cli_output_open_columns(cli_output *o, const char *path, int csv, unsigned columns);

/* Writes the record(s) of one frame. Returns 1, or 0 after printing the
 * error (once; later calls then do nothing and return 0). */
int cli_output_frame(cli_output *o, int camera, const char *source, long frame, double timestamp_ms,
                     const omma_face *faces, int n);

/* What omma stream adds to a JSON record: the GPU that ran the frame, the
 * time from capture to result, frames of the camera dropped before it. */
typedef struct cli_frame_extra {
    int gpu;
    double latency_ms;
    unsigned long long dropped;
} cli_frame_extra;

/* cli_output_frame with those fields (JSON only; extra may be NULL). */
int cli_output_frame_extra(cli_output *o, int camera, const char *source, long frame,
                           double timestamp_ms, const cli_frame_extra *extra,
                           const omma_face *faces, int n);

/* Writes one whole JSON line of another kind (n bytes with its newline;
 * nothing for CSV). Returns 1, or 0 as cli_output_frame. */
int cli_output_line(cli_output *o, const char *line, size_t n);
/* cli_output_frame_extra with the people of the frame (JSON only): a
 * "pose" array, also when empty. */
int cli_output_frame_poses(cli_output *o, int camera, const char *source, long frame,
                           double timestamp_ms, const cli_frame_extra *extra,
                           const omma_face *faces, int n, const omma_pose *poses, int n_poses);
/* omma stream: a runtime result (its poses with their faces, its faces'
 * participant names; CSV: the faces only). */
int cli_output_frame_result(cli_output *o, int camera, const char *source, double timestamp_ms,
                            const cli_frame_extra *extra, const rt_result *r);

/* Flushes; a file is renamed into place (keep) or removed. Returns 1 when
 * everything was written. */
int cli_output_close(cli_output *o, int keep);

#endif
