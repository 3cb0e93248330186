/* Private: the channel layouts of omma's LSL streams (docs/OUTPUT.md).
 *
 * {name}_landmarks, type "Landmark", float32, LSL_LANDMARKS_CHANNELS =
 * 1417 channels, one sample per camera frame:
 *   0 .. 1403   the 468 FaceMesh points as x, y, z per point (lm0_x,
 *               lm0_y, lm0_z, lm1_x, ...): x / frame width, y / frame
 *               height, z / frame width (MediaPipe's normalized units)
 *   1404 .. 1415 the 6 keypoints as x, y (normalized like the points):
 *               right eye, left eye, nose tip, mouth centre, right ear
 *               tragion, left ear tragion (the person's own right/left)
 *   1416        presence: FaceMesh's face probability, 0 when no face
 * A frame without a face gives NaN coordinates and presence 0, so the
 * stream's rate stays regular.
 *
 * {name}_face, type "FaceMeasures", float32, LSL_FACE_CHANNELS = 8:
 *   yaw, pitch, roll (degrees), right_eye_open, left_eye_open, mouth_open,
 *   mouth_width (ratios), presence: the measures of vision/face_measures.h
 *   in that order, then presence (NaN measures and presence 0 without a
 *   face).
 *
 * {name}_frames, type "VideoSync", double64, LSL_FRAMES_CHANNELS = 4:
 *   frame (the camera's frame number, from 0), capture_time (LSL clock
 *   seconds, the sample's timestamp too), faces (tracked in the frame),
 *   dropped (frames of the camera skipped before this one). */
#ifndef OMMA_LSL_LAYOUT_H
#define OMMA_LSL_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "lsl/lsl_info.h"
#include "omma/face.h"
#include "omma/pose.h"

#define LSL_LANDMARKS_CHANNELS (OMMA_FACE_LANDMARKS * 3 + OMMA_FACE_KEYPOINTS * 2 + 1)
#define LSL_FRAMES_CHANNELS 4
#define LSL_FACE_CHANNELS 8

/* Fills spec (name, type, format, channels, desc with labels, units and
 * types) for a landmarks / frames stream of camera base name `base`
 * (spec->desc is owned: lsl_info_clear). */
omma_status lsl_layout_landmarks_info(const char *base, const char *source_id, double rate,
                                      lsl_info *spec);
omma_status lsl_layout_frames_info(const char *base, const char *source_id, double rate,
                                   lsl_info *spec);
omma_status lsl_layout_face_info(const char *base, const char *source_id, double rate,
                                 lsl_info *spec);

/* {base}_track, type "Assignment", double64, LSL_TRACK_CHANNELS = 3:
 * camera (index), track (id, -1 none), change (0 none, -1 lost, 1 region,
 * 2 position, 3 enrollment: how the participant got its track at this
 * sample). One sample per frame of the participant's camera. */
#define LSL_TRACK_CHANNELS 3
omma_status lsl_layout_track_info(const char *base, const char *source_id, double rate,
                                  lsl_info *spec);

/* A float32 stream of n labelled channels (unit `unit`, type `type`):
 * CoModulation's (name as is; source_id as is). */
omma_status lsl_layout_labelled_info(const char *name, const char *type, const char *source_id,
                                     double rate, int n, const char *const *labels,
                                     const char *unit, lsl_info *spec);

/* {base}_pose, type "Pose", float32, LSL_POSE_CHANNELS = 33 x 4 = 132:
 * BlazePose's 33 landmarks in MediaPipe's order (omma/pose.h) as x, y, z,
 * visibility per point (nose_x, nose_y, nose_z, nose_visibility,
 * left_eye_inner_x, ...): x / frame width, y / frame height, z / frame
 * width (normalized, as the landmarks stream), visibility a probability.
 * A frame without the person's pose gives NaN coordinates and visibility
 * 0, so the rate stays regular. */
#define LSL_POSE_CHANNELS (OMMA_POSE_LANDMARKS * 4)
omma_status lsl_layout_pose_info(const char *base, const char *source_id, double rate,
                                 lsl_info *spec);
/* The label of pose channel ch ("nose_x", ..., "right_foot_index_visibility"). */
void lsl_layout_pose_label(int ch, char *out, size_t cap);
/* One pose sample from pose (NULL: none) in a width x height frame. */
void lsl_layout_pose_sample(const omma_pose *pose, int width, int height, float *out);

/* The label of landmarks channel ch ("lm0_x", ..., "presence"). */
void lsl_layout_landmarks_label(int ch, char *out, size_t cap);

/* One landmarks sample from face (NULL: no face) in a width x height frame. */
void lsl_layout_landmarks_sample(const omma_face *face, int width, int height, float *out);
/* One frames sample. */
void lsl_layout_frames_sample(uint64_t frame, double capture_time, int faces, uint64_t dropped,
                              double *out);

#endif
