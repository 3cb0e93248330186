/* Private: the face pipeline's vision stages as CUDA kernels, for a whole
 * batch step at once. Each stage runs the same VIS_HD code as the CPU
 * reference (frame.h, letterbox.h, detect_decode.h, face_roi.h, tracker.h)
 * on the GPU, so the two backends differ only by float rounding.
 *
 * A step is a batch of frames of distinct cameras, described by a
 * vis_gpu_step. vis_cuda_step_load puts it into device memory as the
 * parameter of one kernel (no host-to-device copy: kernel parameters hold
 * up to 32 KiB on Volta and newer); the other kernels read it there. Their
 * launch sizes depend only on the step's shape (vis_gpu_shape), so a CUDA
 * graph captured for one step replays any step of the same shape once its
 * load kernel's parameter is updated. Per step, on one stream:
 *   vis_cuda_step_load    the descriptor -> device memory
 *   vis_cuda_letterbox    frames with detect >= 0 -> detector input
 *   (detector)
 *   vis_cuda_decode       detector output -> up to max_faces detections per
 *                         frame (decode, rank sort, weighted NMS)
 *   vis_cuda_track_begin  per camera: begin frame, add detections, each
 *                         tracked face's ROI into its FaceMesh slot
 *   vis_cuda_crop         every slot's ROI -> FaceMesh input (empty slots:
 *                         zeros)
 *   (FaceMesh)
 *   vis_cuda_refine       the attention mesh only: lips, eyes and irises
 *                         into its 478 points (face_refine.h)
 *   vis_cuda_track_finish landmarks to frame pixels, presence, tracker
 *                         update and end of frame, the frame's faces
 *                         compacted at the start of its slots, its count.
 * Launchers enqueue and return the launch's error (cudaGetLastError); none
 * allocates or synchronizes. Pointers are device pointers, the step `s`
 * included (loaded by vis_cuda_step_load). */
#ifndef OMMA_VISION_CUDA_VISION_H
#define OMMA_VISION_CUDA_VISION_H

#include <cuda_runtime_api.h>

#include "omma/face.h"
#include "vision/anchors.h"
#include "vision/detect_decode.h"
#include "vision/face_roi.h"
#include "vision/tracker.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VIS_GPU_MAX_FRAMES 256

/* One frame of a step and what the step does with it. */
typedef struct vis_gpu_step_frame {
    omma_frame frame; /* planes in device memory */
    int camera; /* index of its tracker */
    int detect; /* its image among the detector's, -1: detector not run */
    int slot_base; /* its first FaceMesh slot */
    int slots; /* slots reserved: its tracks after detection fit in them */
    int fresh; /* start the camera's tracker afresh (ids keep counting) */
} vis_gpu_step_frame;

typedef struct vis_gpu_step {
    int n; /* frames */
    int n_slots; /* FaceMesh slots, sum of slots */
    vis_gpu_step_frame f[VIS_GPU_MAX_FRAMES];
} vis_gpu_step;

/* What the launches are sized for: n frames (the step's) and n_slots
 * FaceMesh slots (at least the step's; the slots past the step's get zero
 * crops and their results are ignored). */
typedef struct vis_gpu_shape {
    int n, n_slots;
} vis_gpu_shape;

/* Copies the used part of *host (header and n frames) to dev, a device
 * vis_gpu_step, as the parameter of one kernel. */
cudaError_t vis_cuda_step_load(const vis_gpu_step *host, vis_gpu_step *dev, cudaStream_t stream);

/* Letterbox resize and normalization (value / 127.5 - 1, zero border) of
 * every frame with detect >= 0 into image `detect` of out (size x size x 3
 * floats per image, NHWC). */
cudaError_t vis_cuda_letterbox(const vis_gpu_step *s, vis_gpu_shape shape, int size, float *out,
                               cudaStream_t stream);

/* Decoding of detector image d = f.detect of every frame: boxes [d][n][16]
 * and score logits [d][n] for n anchors -> dets[d * opt.max_faces ..],
 * det_counts[d], in frame pixels. Scratch: key_score and key_anchor hold
 * n per image, cand n per image. */
cudaError_t vis_cuda_decode(const vis_gpu_step *s, vis_gpu_shape shape,
                            const vis_decode_options *opt, const vis_anchor *anchors, int n,
                            const float *boxes, const float *scores, float *key_score,
                            int *key_anchor, vis_candidate *cand, omma_detection *dets,
                            int *det_counts, cudaStream_t stream);

/* Per frame i: trackers[camera] (reset first when fresh, with topt) begins
 * the frame and takes the frame's detections (dets[detect * max_faces ..],
 * det_counts[detect]) when it has some; its tracks' ROIs go to slot_roi,
 * slot_valid 1, for slot_base + j, j < tracks; the rest of its slots get
 * slot_valid 0; slot_frame = i for all of them. counts[i] = -1 flags a
 * frame with more tracks than slots (a bug). */
cudaError_t vis_cuda_track_begin(const vis_gpu_step *s, vis_gpu_shape shape, vis_tracker *trackers,
                                 const vis_tracker_options *topt, const omma_detection *dets,
                                 const int *det_counts, int max_faces, vis_roi *slot_roi,
                                 int *slot_valid, int *slot_frame, int *counts,
                                 cudaStream_t stream);

/* FaceMesh input (size x size x 3 floats per slot, value / 255, edge
 * replicated) of every valid slot's ROI of its frame; zeros elsewhere
 * (shape.n_slots slots). */
cudaError_t vis_cuda_crop(const vis_gpu_step *s, vis_gpu_shape shape, const vis_roi *slot_roi,
                          const int *slot_valid, const int *slot_frame, int size, float *out,
                          cudaStream_t stream);

/* The attention mesh's outputs of shape.n_slots slots (per slot: mesh
 * [468 * 3], lips [80 * 2], eyes [71 * 2], irises [5 * 2], crop pixels)
 * -> out[478 * 3] per slot, as vis_refine_attention. */
cudaError_t vis_cuda_refine(vis_gpu_shape shape, const float *mesh, const float *lips,
                            const float *left_eye, const float *right_eye, const float *left_iris,
                            const float *right_iris, float *out, cudaStream_t stream);

/* Per frame i: the landmarks (crop pixels, points (468 or 478) x 3 per
 * slot: FaceMesh's, or vis_cuda_refine's) and face flags (one per slot) of
 * its tracks -> frame pixels; tracker update (from the first 468 points)
 * and end of frame; the tracks kept as omma_faces (oldest first) at
 * faces[slot_base ..], with points 468..477 in irises and n_landmarks
 * points, their number in counts[i] (left at -1 when vis_cuda_track_begin
 * flagged the frame). */
cudaError_t vis_cuda_track_finish(const vis_gpu_step *s, vis_gpu_shape shape, vis_tracker *trackers,
                                  int size, int points, const float *mesh_landmarks,
                                  const float *mesh_flags, omma_face *faces, int *counts,
                                  cudaStream_t stream);

/* The live view's preview (vision/thumb.h): the tw x th thumbnail of the
 * frame (planes in device memory, passed by value) as packed RGB8 into out
 * (tw * th * 3 bytes of device memory), the same pixels as vis_thumb_ref
 * but for float rounding. One thread per output pixel. */
cudaError_t vis_cuda_thumb(omma_frame frame, int tw, int th, uint8_t *out, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
