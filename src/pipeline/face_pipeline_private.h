/* Private: the face pipeline's shared object and its two backends. The
 * public calls (face_pipeline.c) check arguments, own the busy flag and the
 * counters, and hand a checked batch to the backend. */
#ifndef OMMA_PIPELINE_FACE_PIPELINE_PRIVATE_H
#define OMMA_PIPELINE_FACE_PIPELINE_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>

#include "omma/pipeline.h"
#include "vision/anchors.h"

#define FP_MAX_ANCHORS 2304

typedef struct fp_backend fp_backend;

/* A backend: create loads the models named in paths (opt's are NULL by
 * then), run_batch processes a checked batch (distinct cameras, frames
 * passed vis_frame_check and sit where the backend takes them) and counts
 * it with fp_stats_add_batch, reset forgets the trackers of the given
 * cameras (ids stay unique). */
typedef struct fp_backend_ops {
    omma_status (*create)(omma_face_pipeline *p, const char *detector, const char *mesh);
    void (*destroy)(omma_face_pipeline *p);
    omma_status (*run_batch)(omma_face_pipeline *p, int n, const int *cameras,
                             const omma_frame *frames, omma_face *faces, int *counts);
    void (*reset)(omma_face_pipeline *p, int n, const int *cameras);
} fp_backend_ops;

extern const fp_backend_ops fp_cpu_backend;
extern const fp_backend_ops fp_gpu_backend;

struct omma_face_pipeline {
    omma_face_pipeline_options opt; /* model paths NULL after create */
    const fp_backend_ops *ops;
    fp_backend *impl;
    omma_face *one; /* max_faces: omma_face_pipeline_process's batch */
    struct vis_geometry *geo; /* head_pose: the canonical face, else NULL */
    omma_face_pipeline_stats stats; /* under stats_lock */
    pthread_mutex_t stats_lock;
    atomic_bool busy;
};

/* Adds a batch of n frames with counts[i] faces each, and delta's
 * detector_images, mesh_images, bytes and copies, to the stats. Any
 * thread. */
void fp_stats_add_batch(omma_face_pipeline *p, int n, const int *counts,
                        const omma_face_pipeline_stats *delta);

/* With head_pose, the head pose of each face of a batch (counts[i] faces
 * at faces[i * max_faces ..] of frame i, frames[i]'s size): the CPU
 * backend's after its batch, the GPU's when a step completes (also the
 * runtime's steps). Any thread; p->geo is read only. */
void fp_head_poses(const omma_face_pipeline *p, int n, const omma_frame *frames, omma_face *faces,
                   const int *counts);

/* What the pipeline needs to know of the detector: its input side (128 or
 * 192), the anchors that go with it, and which outputs are the [1, anchors,
 * 16] boxes and [1, anchors, 1] scores. */
typedef struct fp_detector_spec {
    int size;
    int box_output, score_output;
    int n_anchors;
    vis_anchor anchors[FP_MAX_ANCHORS];
} fp_detector_spec;

/* FaceMesh's outputs: 1404 landmark values and the face flag; with the
 * attention mesh (points 478) also its lips [160], left eye [142], right
 * eye [142], left iris [10] and right iris [10] (face_refine.h), in the
 * model's order, -1 otherwise. */
typedef struct fp_mesh_spec {
    int landmark_output, flag_output;
    int points; /* 468 or 478 */
    int lips, left_eye, right_eye, left_iris, right_iris;
} fp_mesh_spec;

/* Check a loaded engine against what the pipeline expects; errors are
 * OMMA_ERR_UNSUPPORTED naming path and the expected shapes. */
omma_status fp_inspect_detector(const omma_engine *e, const char *path, fp_detector_spec *out);
omma_status fp_inspect_mesh(const omma_engine *e, const char *path, int want_points,
                            fp_mesh_spec *out);

#endif
