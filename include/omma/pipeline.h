/* omma — the face pipeline: frames in, tracked faces out.
 *
 * An omma_face_pipeline loads the face detector and FaceMesh once and runs
 * MediaPipe's face-mesh loop per camera: the detector when the camera's
 * tracker asks for it (fewer faces than max_faces, or every detect_every
 * frames), FaceMesh on each tracked face's region, then the tracker, which
 * gives each face an id stable while it is tracked. Each camera index has
 * its own tracker; cameras share the models.
 *
 * Backends: OMMA_BACKEND_CPU (the plain-C reference: correct, slow). The
 * CUDA pipeline is not built yet: asking for it fails with
 * OMMA_ERR_UNSUPPORTED.
 *
 * Threads: a pipeline belongs to one thread at a time. Calling
 * omma_face_pipeline_process on one pipeline from two threads at once is
 * detected and the second call returns OMMA_ERR_BUSY; use one pipeline per
 * thread. Different pipelines run concurrently. */
#ifndef OMMA_PIPELINE_H
#define OMMA_PIPELINE_H

#include "omma/engine.h"
#include "omma/face.h"
#include "omma/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct omma_face_pipeline omma_face_pipeline;

#define OMMA_PIPELINE_MAX_FACES 64
#define OMMA_PIPELINE_MAX_CAMERAS 1024

typedef struct omma_face_pipeline_options {
    omma_backend backend;      /* OMMA_BACKEND_CPU (default); CUDA: not yet */
    omma_device *device;       /* CUDA: the device; must be NULL for the CPU */
    const char *detector_model; /* face_detection_short_range.tflite (128x128
                                 * input) or face_detection_full_range.tflite
                                 * (192x192): the anchors follow the input size */
    const char *mesh_model;     /* face_landmark.tflite (FaceMesh, 468 points) */
    int max_faces;              /* faces tracked per camera, 1..64 (4) */
    float min_detection_score;  /* detections scoring below are dropped (0.5) */
    float min_presence;         /* a face whose FaceMesh presence falls below
                                 * is lost (0.5) */
    int detect_every;           /* also run the detector every this many
                                 * frames while max_faces are tracked; 0 =
                                 * only when fewer are tracked (0) */
    float nms_threshold;        /* IoU above which detections merge in the
                                 * weighted non-maximum suppression (0.3) */
} omma_face_pipeline_options;

/* Fills *opt with the defaults above (model paths NULL). */
void omma_face_pipeline_options_init(omma_face_pipeline_options *opt);

/* Loads the two models and prepares the pipeline. opt must name both
 * models. Errors: OMMA_ERR_INVALID_ARG (NULL opt/out/model path, values out
 * of range, a device given to the CPU backend), OMMA_ERR_UNSUPPORTED (the
 * CUDA backend: not built yet; a detector whose input is neither 128 nor
 * 192 pixels square, models whose outputs are not those of BlazeFace and
 * FaceMesh), and those of omma_engine_load (OMMA_ERR_IO, OMMA_ERR_FORMAT,
 * ...). On failure *out is NULL. Any thread; the pipeline then belongs to
 * its creator (see top). */
omma_status omma_face_pipeline_create(const omma_face_pipeline_options *opt,
                                      omma_face_pipeline **out);

/* Frees the pipeline, its trackers and its model references; accepts NULL.
 * Must not run concurrently with another call on the same pipeline. */
void omma_face_pipeline_destroy(omma_face_pipeline *p);

/* Processes one frame of camera `camera` (0..OMMA_PIPELINE_MAX_CAMERAS-1;
 * each index has its own tracker, made at its first frame): writes up to
 * max faces, oldest track first, to faces and their number to *n. Frames of
 * one camera must come in order. The frame is only read during the call.
 * Errors: OMMA_ERR_INVALID_ARG (NULL pointers, camera out of range, max <
 * 0, a bad frame descriptor), OMMA_ERR_BUSY (another thread is in a call on
 * this pipeline), OMMA_ERR_OUT_OF_MEMORY, engine errors. On failure *n is 0;
 * a failure past the argument checks also resets the camera's tracker (its
 * next frame starts afresh, with new ids). */
omma_status omma_face_pipeline_process(omma_face_pipeline *p, int camera,
                                       const omma_frame *frame, omma_face *faces, int max,
                                       int *n);

#ifdef __cplusplus
}
#endif
#endif
