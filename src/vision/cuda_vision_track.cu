/* MediaPipe's tracking loop on the GPU: every camera's vis_tracker lives in
 * device memory and is driven by the CPU reference's own functions
 * (tracker.h), one thread per camera for the decisions and a block per
 * frame to map its landmarks back to the frame. */
#include "vision/cuda_vision.h"

#define FINISH_THREADS 256

__global__ void track_begin_kernel(const vis_gpu_step *__restrict__ s, vis_tracker *trackers,
                                   const vis_tracker_options topt, const omma_detection *dets,
                                   const int *det_counts, int max_faces, vis_roi *slot_roi,
                                   int *slot_valid, int *slot_frame, int *counts)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= s->n)
        return;
    const vis_gpu_step_frame *f = &s->f[i];
    vis_tracker *t = &trackers[f->camera];
    if (f->fresh) {
        int next_id = t->next_id > 0 ? t->next_id : 1;
        memset(t, 0, sizeof *t);
        t->opt = topt;
        t->next_id = next_id;
    }
    vis_tracker_begin_frame(t);
    if (f->detect >= 0)
        vis_tracker_add_detections(t, dets + (size_t)f->detect * max_faces, det_counts[f->detect]);
    counts[i] = 0;
    if (t->count > f->slots) {
        counts[i] = -1;
        t->count = f->slots;
    }
    for (int j = 0; j < f->slots; j++) {
        int slot = f->slot_base + j;
        slot_frame[slot] = i;
        slot_valid[slot] = j < t->count;
        if (j < t->count)
            slot_roi[slot] = t->tracks[j].roi;
    }
}

extern "C" cudaError_t vis_cuda_track_begin(const vis_gpu_step *s, vis_gpu_shape shape,
                                            vis_tracker *trackers, const vis_tracker_options *topt,
                                            const omma_detection *dets, const int *det_counts,
                                            int max_faces, vis_roi *slot_roi, int *slot_valid,
                                            int *slot_frame, int *counts, cudaStream_t stream)
{
    unsigned blocks = (unsigned)((shape.n + 63) / 64);
    track_begin_kernel<<<blocks, 64, 0, stream>>>(s, trackers, *topt, dets, det_counts, max_faces,
                                                  slot_roi, slot_valid, slot_frame, counts);
    return cudaGetLastError();
}

/* Point p of a face: a landmark, or past the 468 an iris point. */
__device__ float *face_point(omma_face *f, int p)
{
    return p < OMMA_FACE_LANDMARKS ? f->landmarks[p] : f->irises[p - OMMA_FACE_LANDMARKS];
}

/* blockIdx.x: frame. */
__global__ void track_finish_kernel(const vis_gpu_step *__restrict__ s, vis_tracker *trackers,
                                    int size, int points, const float *mesh_landmarks,
                                    const float *mesh_flags, omma_face *faces, int *counts)
{
    __shared__ int ids[VIS_TRACKER_MAX_FACES], src[VIS_TRACKER_MAX_FACES];
    __shared__ float presence[VIS_TRACKER_MAX_FACES];
    __shared__ int kept;
    const vis_gpu_step_frame *f = &s->f[blockIdx.x];
    vis_tracker *t = &trackers[f->camera];
    omma_face *out = faces + f->slot_base;
    int tracks = t->count;
    /* Landmarks of track j (slot base + j) to frame pixels, through the ROI
     * it was cropped with. */
    for (int j = 0; j < tracks; j++) {
        float m[6];
        vis_roi_crop_to_frame(&t->tracks[j].roi, size, m);
        float zs = t->tracks[j].roi.w / (float)size;
        const float *in = mesh_landmarks + (size_t)(f->slot_base + j) * (size_t)points * 3;
        for (int p = threadIdx.x; p < points; p += blockDim.x)
            vis_landmark_to_frame(m, zs, in + 3 * p, face_point(&out[j], p));
    }
    __syncthreads();
    if (threadIdx.x == 0) {
        for (int j = 0; j < tracks; j++) {
            ids[j] = t->tracks[j].id;
            presence[j] = vis_face_presence(mesh_flags[f->slot_base + j]);
            vis_tracker_update(t, j, &out[j].landmarks[0][0], presence[j]);
        }
        vis_tracker_end_frame(t);
        /* The tracks kept are a subsequence of the slots, in order. */
        int k = 0;
        for (int j = 0; j < tracks && k < t->count; j++)
            if (ids[j] == t->tracks[k].id)
                src[k++] = j;
        kept = k;
    }
    __syncthreads();
    /* Compact: face k moves down from slot src[k] >= k; one face at a time,
     * as a later source may be an earlier destination. */
    for (int k = 0; k < kept; k++) {
        if (src[k] != k)
            for (int p = threadIdx.x; p < points * 3; p += blockDim.x)
                face_point(&out[k], p / 3)[p % 3] = face_point(&out[src[k]], p / 3)[p % 3];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        for (int k = 0; k < kept; k++) {
            /* vis_tracker_face zeroes the irises (a 468-point face's) */
            float irises[OMMA_FACE_IRIS_LANDMARKS][3] = {{0}};
            if (points == OMMA_FACE_LANDMARKS_WITH_IRISES)
                memcpy(irises, out[k].irises, sizeof irises);
            vis_tracker_face(t, k, &out[k].landmarks[0][0], presence[src[k]], &out[k]);
            if (points == OMMA_FACE_LANDMARKS_WITH_IRISES) {
                out[k].n_landmarks = points;
                memcpy(out[k].irises, irises, sizeof irises);
            }
        }
        if (counts[blockIdx.x] >= 0)
            counts[blockIdx.x] = kept;
    }
}

extern "C" cudaError_t vis_cuda_track_finish(const vis_gpu_step *s, vis_gpu_shape shape,
                                             vis_tracker *trackers, int size, int points,
                                             const float *mesh_landmarks, const float *mesh_flags,
                                             omma_face *faces, int *counts, cudaStream_t stream)
{
    track_finish_kernel<<<(unsigned)shape.n, FINISH_THREADS, 0, stream>>>(
        s, trackers, size, points, mesh_landmarks, mesh_flags, faces, counts);
    return cudaGetLastError();
}
