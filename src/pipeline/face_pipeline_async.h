/* Private: the GPU face pipeline's batches in flight, for the multi-camera
 * runtime. A pipeline created with the CUDA backend and `lanes` > 1 runs up
 * to `lanes` batches at once, each on its own lane (stream, execs,
 * buffers). One thread submits (the runtime's GPU worker: it never waits
 * on the GPU) and one thread completes (the runtime's sink: it waits for a
 * batch's results); a camera may be in one batch in flight at a time. Not
 * to be mixed with omma_face_pipeline_process* calls while batches are in
 * flight. */
#ifndef OMMA_PIPELINE_FACE_PIPELINE_ASYNC_H
#define OMMA_PIPELINE_FACE_PIPELINE_ASYNC_H

#include "gpu/driver.h"
#include "omma/pipeline.h"

/* Enqueues a checked batch (1..max_batch frames of distinct cameras in
 * 0..OMMA_PIPELINE_MAX_CAMERAS-1; frames checked by vis_frame_check; host
 * frames are uploaded, device frames read in place) on a free lane and
 * returns without waiting: *lane is the ticket for fp_async_complete.
 * ready[i] (ready may be NULL, entries may be NULL) is an event the step
 * waits for on the GPU before reading frame i (cuStreamWaitEvent). The
 * frames must stay unchanged until the lane's stream has passed the batch
 * (record an event on fp_async_stream, or complete it). timing (may be
 * NULL) is two events (with timing) recorded around the step's kernels.
 * Errors: OMMA_ERR_INVALID_ARG (not the CUDA backend, a camera with a
 * batch in flight), OMMA_ERR_BUSY (every lane has a batch in flight),
 * OMMA_ERR_CUDA, OMMA_ERR_DEVICE_LOST, engine errors; on an error past the
 * checks the batch's cameras start afresh at their next frame. */
omma_status fp_async_submit(omma_face_pipeline *p, int n, const int *cameras,
                            const omma_frame *frames, const CUevent *ready, const CUevent *timing,
                            int *lane);

/* Waits on the host for the lane's batch and writes its results as
 * omma_face_pipeline_process_batch does (faces[i * max_faces ..],
 * counts[i] for the batch's frame i); frees the lane and its cameras.
 * Errors: OMMA_ERR_INVALID_ARG (no batch in flight on that lane),
 * OMMA_ERR_CUDA, OMMA_ERR_DEVICE_LOST, OMMA_ERR_INTERNAL; counts are 0
 * then and the cameras start afresh. */
omma_status fp_async_complete(omma_face_pipeline *p, int lane, omma_face *faces, int *counts);

/* The lane the next fp_async_submit takes (-1: none is free). */
int fp_async_next_lane(const omma_face_pipeline *p);
/* The pipeline's lanes (0 for the CPU backend). */
int fp_async_lanes(const omma_face_pipeline *p);
/* The lane's stream: the batch's reads of its frames are ordered on it. */
CUstream fp_async_stream(const omma_face_pipeline *p, int lane);
/* Nonzero while the camera is in a batch in flight. Any thread. */
int fp_async_camera_busy(const omma_face_pipeline *p, int camera);
/* Launches the lane's last batch made: 1 for the step graph (or each
 * kernel without graphs), event waits, the result copy. */
int fp_async_launches(const omma_face_pipeline *p, int lane);

#endif
