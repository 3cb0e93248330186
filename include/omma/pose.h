/* omma — body pose: frames in, tracked people's 33 landmarks out.
 *
 * An omma_pose_pipeline loads MediaPipe's BlazePose models once (the person
 * detector pose_detection.tflite and one landmark model,
 * pose_landmark_lite/full/heavy.tflite) and runs MediaPipe's pose loop per
 * camera: the detector when the camera tracks nobody (and every
 * detect_every frames while it tracks fewer than max_poses people), the
 * landmark model on each tracked person's region, and the next frame's
 * region from the landmarks' alignment points; a person is tracked while
 * the model's pose flag stays >= min_presence, and keeps one id meanwhile.
 *
 * Backends: OMMA_BACKEND_CPU runs the models on the CPU reference engine;
 * OMMA_BACKEND_CUDA runs the same two models on the GPU engine of a device
 * (fp16 or fp32), with the pre- and post-processing on the host (frames in
 * host memory only, for now).
 *
 * Threads: a pipeline belongs to one thread at a time; a second concurrent
 * call returns OMMA_ERR_BUSY. Different pipelines run concurrently. */
#ifndef OMMA_POSE_H
#define OMMA_POSE_H

#include "omma/engine.h"
#include "omma/face.h"
#include "omma/pipeline.h"
#include "omma/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* MediaPipe's pose landmarks, in order: 0 nose, 1-3 left eye (inner, centre,
 * outer), 4-6 right eye, 7 left ear, 8 right ear, 9 mouth left, 10 mouth
 * right, 11 left shoulder, 12 right shoulder, 13/14 elbows, 15/16 wrists,
 * 17/18 pinkies, 19/20 index fingers, 21/22 thumbs, 23/24 hips, 25/26 knees,
 * 27/28 ankles, 29/30 heels, 31/32 foot index (odd = the person's left). */
#define OMMA_POSE_LANDMARKS 33
#define OMMA_POSE_MAX_POSES 8

typedef struct omma_pose_landmark {
    float x, y; /* frame pixels */
    float z; /* depth relative to the hips, in pixels scaled like x;
              * smaller = nearer the camera */
    float visibility; /* probability that the point is visible (not occluded) */
    float presence; /* probability that the point is inside the frame */
} omma_pose_landmark;

/* One tracked person in one frame. */
typedef struct omma_pose {
    int id; /* stable while the person is tracked; never reused by a
             * camera's tracker */
    float score; /* the landmark model's pose flag (presence), 0..1 */
    omma_box box; /* bounding box of the 33 landmarks */
    omma_pose_landmark landmarks[OMMA_POSE_LANDMARKS];
    float world[OMMA_POSE_LANDMARKS][3]; /* metres, origin between the hips,
                                          * x right, y down, z towards the camera's far side, as
                                          * the frame sees it (the region's rotation undone) */
} omma_pose;

typedef struct omma_pose_pipeline omma_pose_pipeline;

typedef struct omma_pose_pipeline_options {
    omma_backend backend; /* OMMA_BACKEND_CPU (default) or OMMA_BACKEND_CUDA */
    omma_device *device; /* CUDA: the device (NULL: device 0, opened and
                          * closed by the pipeline); NULL for the CPU */
    omma_precision precision; /* CUDA engines' precision (fp16 default) */
    const char *detector_model; /* pose_detection.tflite */
    const char *landmark_model; /* pose_landmark_{lite,full,heavy}.tflite */
    int max_poses; /* people tracked per camera, 1..8 (1, as
                    * MediaPipe's Pose solution) */
    float min_detection_score; /* detections below are dropped (0.5) */
    float min_presence; /* a person whose pose flag falls below is lost (0.5) */
    int detect_every; /* with fewer than max_poses tracked, also run
                       * the detector every this many frames; 0 =
                       * only when nobody is tracked (30) */
    int threads; /* CPU backend: threads per model node (0: all cores) */
} omma_pose_pipeline_options;

/* Defaults as given above; the model paths NULL. */
void omma_pose_pipeline_options_init(omma_pose_pipeline_options *opt);

/* Loads the models and checks their shapes. Errors: OMMA_ERR_INVALID_ARG
 * (NULL, options out of range, a model path missing), the engine's load
 * errors (OMMA_ERR_IO, OMMA_ERR_FORMAT, OMMA_ERR_UNSUPPORTED naming the
 * file), OMMA_ERR_UNSUPPORTED (a model whose inputs or outputs are not
 * BlazePose's). On failure *out is NULL. Any thread. */
omma_status omma_pose_pipeline_create(const omma_pose_pipeline_options *opt,
                                      omma_pose_pipeline **out);

/* Frees the pipeline; accepts NULL. Not concurrently with another call on it. */
void omma_pose_pipeline_destroy(omma_pose_pipeline *p);

/* Runs one frame of camera `camera` (0..OMMA_PIPELINE_MAX_CAMERAS-1 of
 * omma/pipeline.h, each with its own tracker): up to max_poses people to
 * poses (room for max_poses), their number to *count. The frame must be in
 * host memory. Errors: OMMA_ERR_INVALID_ARG (NULL, bad frame or camera),
 * OMMA_ERR_UNSUPPORTED (a device frame), OMMA_ERR_BUSY, engine errors. */
omma_status omma_pose_pipeline_process(omma_pose_pipeline *p, int camera, const omma_frame *frame,
                                       omma_pose *poses, int *count);

/* Forgets camera's tracked people (a new scene); ids stay unique. */
omma_status omma_pose_pipeline_reset(omma_pose_pipeline *p, int camera);

#ifdef __cplusplus
}
#endif

#endif
