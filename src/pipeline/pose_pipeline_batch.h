/* Private: the pose pipeline batched on the GPU, for frames in device
 * memory (the GPU runtime's rings, NVDEC's surfaces): one call takes a
 * frame of each of n distinct cameras and runs MediaPipe's pose loop for
 * all of them at once, as omma_pose_pipeline_process does for one frame
 * (the same tracking code, pose_track.h, and the same decoding,
 * vision/pose.h):
 *   - the detector's letterbox of every frame whose camera wants a
 *     detection (vis_cuda_letterbox, the face pipeline's kernel), ONE
 *     detector batch, its raw outputs copied back once; decoding and new
 *     tracks on the host;
 *   - every tracked person's region of its frame (vis_cuda_crop, the face
 *     pipeline's kernel), ONE landmark batch, the landmarks refined from
 *     the heatmaps on the GPU (vis_cuda_pose_refine: the heatmaps stay
 *     there), the landmarks, flags and world landmarks copied back once;
 *     back-projection and tracking on the host.
 * Batch sizes are rounded up to a few sizes (powers of two to 16, then
 * multiples of 16) so the execs capture few CUDA graphs; the padding's
 * results are ignored. The call waits on the host for the GPU (twice when
 * a frame needs the detector), on its own stream.
 *
 * Threads: one thread at a time (a concurrent call returns OMMA_ERR_BUSY);
 * the models are loaded once per object (one per GPU). */
#ifndef OMMA_PIPELINE_POSE_PIPELINE_BATCH_H
#define OMMA_PIPELINE_POSE_PIPELINE_BATCH_H

#include "gpu/driver.h"
#include "omma/pose.h"

typedef struct pp_batch pp_batch;

typedef struct pp_batch_options {
    omma_pose_pipeline_options pose; /* backend ignored (CUDA); device
                                      * required; threads unused */
    int max_batch; /* frames per call, 1..256 */
    int graphs; /* the execs capture a CUDA graph per batch size (1) */
} pp_batch_options;

/* Defaults: omma_pose_pipeline_options_init's, max_batch 64, graphs on. */
void pp_batch_options_init(pp_batch_options *opt);

/* Loads the models on opt->pose.device and sizes the buffers. Errors:
 * OMMA_ERR_INVALID_ARG (NULL, no device, options out of range), the
 * models' errors (pose_models.h), OMMA_ERR_OUT_OF_MEMORY, OMMA_ERR_CUDA.
 * On failure *out is NULL. Any thread. */
omma_status pp_batch_create(const pp_batch_options *opt, pp_batch **out);

/* Frees it (waits for its stream first); accepts NULL. */
void pp_batch_destroy(pp_batch *b);

/* One frame of each of n cameras (1..max_batch, distinct, each in
 * 0..OMMA_PIPELINE_MAX_CAMERAS-1; frames in device memory of the object's
 * device): up to max_poses poses per frame to poses[i * max_poses ..],
 * their number to counts[i]. ready (may be NULL, entries may be NULL):
 * events the work waits for on the GPU before reading frame i. The frames
 * are read only during the call. Errors: OMMA_ERR_INVALID_ARG (NULL, n or
 * a camera out of range, a camera twice, a bad frame), OMMA_ERR_UNSUPPORTED
 * (a frame in host memory), OMMA_ERR_BUSY, OMMA_ERR_CUDA, engine errors;
 * counts are 0 then and the batch's cameras start afresh. */
omma_status pp_batch_process(pp_batch *b, int n, const int *cameras, const omma_frame *frames,
                             const CUevent *ready, omma_pose *poses, int *counts);

/* Forgets camera's people (a new scene); ids stay unique. Errors:
 * OMMA_ERR_INVALID_ARG, OMMA_ERR_BUSY. */
omma_status pp_batch_reset(pp_batch *b, int camera);

#endif
