/* omma — the face pipeline: frames in, tracked faces out.
 *
 * An omma_face_pipeline loads the face detector and FaceMesh once and runs
 * MediaPipe's face-mesh loop per camera: the detector when the camera's
 * tracker asks for it (fewer faces than max_faces, or every detect_every
 * frames), FaceMesh on each tracked face's region, then the tracker, which
 * gives each face an id stable while it is tracked. Each camera index has
 * its own tracker; cameras share the models.
 *
 * Backends: OMMA_BACKEND_CUDA runs every stage on the GPU (letterbox
 * preprocessing of a whole batch of frames in one launch, detector, box
 * decoding and weighted NMS, tracking, one fused crop of every face, FaceMesh,
 * landmarks back to frame pixels); frames in host memory cost one
 * host-to-device copy each (none when already on the device) and results
 * come back in one device-to-host copy per batch. OMMA_BACKEND_CPU is the
 * plain-C reference: correct, slow; same results within fp16 tolerances.
 *
 * Threads: a pipeline belongs to one thread at a time. Calling
 * omma_face_pipeline_process on one pipeline from two threads at once is
 * detected and the second call returns OMMA_ERR_BUSY; use one pipeline per
 * thread. Different pipelines run concurrently. The CPU backend runs the
 * frames of a batch one after the other, each model node split by output
 * rows over its own worker threads (omma_face_pipeline_options.threads,
 * all cores by default) that sleep between calls; several CPU pipelines
 * working at once each use that many threads. */
#ifndef OMMA_PIPELINE_H
#define OMMA_PIPELINE_H

#include "omma/engine.h"
#include "omma/face.h"
#include "omma/status.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct omma_face_pipeline omma_face_pipeline;

#define OMMA_PIPELINE_MAX_FACES 64
#define OMMA_PIPELINE_MAX_CAMERAS 4096
#define OMMA_PIPELINE_MAX_BATCH 256
#define OMMA_PIPELINE_MAX_LANES 8

typedef struct omma_face_pipeline_options {
    omma_backend backend;      /* OMMA_BACKEND_CPU (default) or OMMA_BACKEND_CUDA */
    omma_device *device;       /* CUDA: the device (NULL: device 0, opened and
                                * closed by the pipeline); must be NULL for the CPU */
    omma_precision precision;  /* CUDA engines' precision (OMMA_PRECISION_FP16
                                * default); the CPU backend is always fp32 */
    int max_batch;             /* frames per omma_face_pipeline_process_batch,
                                * 1..OMMA_PIPELINE_MAX_BATCH (16) */
    const char *detector_model; /* face_detection_short_range.tflite (128x128
                                 * input) or face_detection_full_range.tflite
                                 * (192x192): the anchors follow the input size */
    const char *mesh_model;     /* face_landmark.tflite (FaceMesh, 468 points)
                                 * or face_landmark_with_attention.tflite
                                 * (478 points: irises, refined eyes and lips;
                                 * either backend) */
    int mesh_points;            /* 468 or 478: the points mesh_model must give
                                 * (a model of the other kind is an error); 0
                                 * (default) = whichever it gives */
    int head_pose;              /* nonzero: each face's head pose (omma_face.
                                 * head_pose, yaw, pitch, roll; MediaPipe's
                                 * face geometry, docs/OUTPUT.md) in the
                                 * results of omma_face_pipeline_process*;
                                 * 0 (default) = not computed */
    const char *geometry_metadata; /* with head_pose: MediaPipe's
                                 * geometry_pipeline_metadata_landmarks.binarypb
                                 * (the canonical face and its weights) */
    int max_faces;              /* faces tracked per camera, 1..64 (4) */
    float min_detection_score;  /* detections scoring below are dropped (0.5) */
    float min_presence;         /* a face whose FaceMesh presence falls below
                                 * is lost (0.5) */
    /* Scene cuts: when another face takes a tracked face's place, its
     * track ends on that frame (not reported) and the face there gets a
     * new id. A tracked face is another face when: */
    float cut_move;             /* its region moves more than this times its
                                 * size from one frame to the next, or
                                 * changes size by more than this fraction;
                                 * 0..10, 0 = off (0.3) */
    float cut_agree;            /* the detector runs on the frame and finds
                                 * a face overlapping it but none whose eyes
                                 * lie within this times its size of its
                                 * landmarks' eyes; 0..1, 0 = off (0.22) */
    float cut_presence;         /* its presence is below this on a frame
                                 * where the detector finds a face elsewhere
                                 * and none on it; 0..1, 0 = off (0.9) */
    int detect_every;           /* also run the detector every this many
                                 * frames while max_faces are tracked; 0 =
                                 * only when fewer are tracked (0) */
    float nms_threshold;        /* IoU above which detections merge in the
                                 * weighted non-maximum suppression (0.3) */
    int lanes;                  /* CUDA: batches that may be in flight at once
                                 * (the multi-camera runtime's), each with its
                                 * own stream, execs and buffers, 1..8 (1) */
    int graphs;                 /* CUDA: nonzero (default) runs each batch as
                                 * one CUDA graph per batch shape, captured at
                                 * the shape's first batch and replayed; 0
                                 * launches kernel by kernel. Same results. */
    int threads;                /* CPU: threads the models run on, the
                                 * calling thread's included: 0 (default) =
                                 * one per online CPU, 1 = the calling thread
                                 * alone, up to 256 (omma_engine_options.
                                 * threads of both engines). Faces are
                                 * bitwise the same for any count. Ignored by
                                 * the CUDA backend. */
} omma_face_pipeline_options;

/* Fills *opt with the defaults above (model paths NULL). */
void omma_face_pipeline_options_init(omma_face_pipeline_options *opt);

/* Loads the two models and prepares the pipeline. opt must name both
 * models. Errors: OMMA_ERR_INVALID_ARG (NULL opt/out/model path, values out
 * of range, a device given to the CPU backend), OMMA_ERR_NO_DEVICE (CUDA
 * backend without a usable GPU), OMMA_ERR_UNSUPPORTED (a detector whose
 * input is neither 128 nor
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

/* Processes one frame of each of n cameras as one batch (1..max_batch;
 * the cameras must differ: a camera's next frame depends on this one).
 * Frame i is of camera cameras[i]; its faces go to faces[i * max_faces ..]
 * (faces holds n * max_faces, max_faces as created) and their number to
 * counts[i]. Frames may be in host or device memory (omma_frame.memory;
 * device frames only on the CUDA backend, on the pipeline's device) and of
 * different sizes and formats. Returns when the results are in faces and
 * counts. Errors as omma_face_pipeline_process, plus OMMA_ERR_INVALID_ARG
 * for n out of range, a camera twice, a device frame on the CPU backend;
 * the frame at fault is named. On failure every count is 0 (none is
 * written when n is out of range) and, past the argument checks, the
 * batch's cameras' trackers are reset. */
omma_status omma_face_pipeline_process_batch(omma_face_pipeline *p, int n, const int *cameras,
                                             const omma_frame *frames, omma_face *faces,
                                             int *counts);

/* Forgets the trackers of n cameras (1..OMMA_PIPELINE_MAX_CAMERAS, each in
 * 0..OMMA_PIPELINE_MAX_CAMERAS-1): each one's next frame starts afresh, as
 * its first did; face ids stay unique within the pipeline. For a camera
 * index reused by another camera. Errors: OMMA_ERR_INVALID_ARG (NULL, n or
 * a camera out of range), OMMA_ERR_BUSY (another thread is in a call on
 * this pipeline). On the CUDA backend, no batch of these cameras may be in
 * flight (its results are not awaited here). */
omma_status omma_face_pipeline_reset_cameras(omma_face_pipeline *p, int n, const int *cameras);

/* What a pipeline has done and moved since it was created. Bytes and copies
 * count only transfers between host and device (the CPU backend moves
 * none): host-to-device is the frames' pixel bytes, device-to-host the
 * results. */
typedef struct omma_face_pipeline_stats {
    uint64_t frames, batches;
    uint64_t detector_images; /* frames the detector ran on */
    uint64_t mesh_images;     /* face crops FaceMesh ran on */
    uint64_t faces;           /* faces reported */
    uint64_t h2d_bytes, h2d_copies;
    uint64_t d2h_bytes, d2h_copies;
} omma_face_pipeline_stats;

/* Copies the counters to *stats. OMMA_ERR_INVALID_ARG for NULL. */
omma_status omma_face_pipeline_get_stats(const omma_face_pipeline *p,
                                         omma_face_pipeline_stats *stats);

#ifdef __cplusplus
}
#endif
#endif
