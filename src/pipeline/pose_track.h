/* Private: the pose pipelines' tracking rule, one camera at a time
 * (pose_pipeline.c's top comment states it), shared by the host pipeline
 * (pose_pipeline.c) and the batched GPU path (pose_pipeline_batch.c) so
 * both track alike. A frame of a camera goes:
 *   pp_track_begin       -> run the detector on this frame?
 *   pp_track_detected    the detections (when it ran), new people added
 *   (the landmark model on each of c->count tracks' roi, in order)
 *   pp_track_finish      the landmarks' poses and next regions -> the
 *                        people kept, their poses with their ids.
 * Pure host functions on the caller's pp_camera: any thread. */
#ifndef OMMA_PIPELINE_POSE_TRACK_H
#define OMMA_PIPELINE_POSE_TRACK_H

#include <stdbool.h>

#include "omma/pose.h"
#include "vision/pose.h"

typedef struct pp_track {
    int id;
    vis_roi roi; /* where to look in the next frame */
} pp_track;

/* A camera's people; zeroed = nobody tracked yet. */
typedef struct pp_camera {
    int count;
    pp_track tracks[OMMA_POSE_MAX_POSES];
    int next_id;
    int since_detect; /* frames since the detector last ran */
} pp_camera;

/* OMMA_ERR_INVALID_ARG naming the first option out of range (backend,
 * precision, model paths, max_poses, scores, detect_every, threads). */
omma_status pp_check_options(const omma_pose_pipeline_options *o);

/* Starts a frame: true when the detector should run on it. */
bool pp_track_begin(pp_camera *c, const omma_pose_pipeline_options *opt);

/* The detector's n detections of the frame (best first): each one whose
 * region overlaps no tracked person's becomes a new track (a new id), up
 * to opt->max_poses. */
void pp_track_detected(pp_camera *c, const omma_pose_pipeline_options *opt,
                       const vis_pose_detection *dets, int n);

/* The landmark model's results for tracks 0..c->count-1 (poses[t] from
 * vis_pose_landmarks, next[t] its next region): the people kept (pose flag
 * >= min_presence, not a duplicate of an older track) to out with their
 * ids, oldest first, their number to *count; the camera keeps them. */
void pp_track_finish(pp_camera *c, const omma_pose_pipeline_options *opt, const omma_pose *poses,
                     const vis_roi *next, omma_pose *out, int *count);

/* Forgets the camera's people (ids keep counting). */
void pp_track_reset(pp_camera *c);

#endif
