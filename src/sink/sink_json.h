/* Private: the JSON record of one frame, shared by omma run's and omma
 * stream's JSON Lines (src/cli/run_output.c) and the sinks' messages
 * (docs/SINKS.md, docs/omma-faces.schema.json). */
#ifndef OMMA_SINK_SINK_JSON_H
#define OMMA_SINK_SINK_JSON_H

#include <stdint.h>
#include <stdio.h>

#include "omma/face.h"
#include "omma/pose.h"

typedef struct sink_frame {
    int camera;
    const char *source;
    long frame; /* from 0 */
    double timestamp_ms; /* from the run's start */
    int has_extra; /* omma stream: gpu, latency_ms, dropped */
    int gpu;
    double latency_ms;
    unsigned long long dropped;
    const char *node; /* a sink message: node, seq, capture_unix_ns; NULL: left out */
    uint64_t seq;
    uint64_t capture_unix_ns;
    uint64_t lease; /* omma stream --cluster: the camera's lease (0: left out) */
    const omma_face *faces;
    int n_faces;
    int has_poses; /* --pose: a "pose" array after "faces" */
    const omma_pose *poses;
    int n_poses;
    const int *pose_face; /* per pose, the index in faces of its face or -1
                           * (a "face" key: that face's id or null); NULL:
                           * no "face" key (omma run) */
    const char *const *participant; /* per face, its participant's name or
                                     * NULL; NULL: no "participant" keys */
} sink_frame;

/* Writes the record as one line of JSON ending with "\n". */
void sink_json_frame(FILE *f, const sink_frame *fr);

/* s as a JSON string literal. */
void sink_json_string(FILE *f, const char *s);

#endif
