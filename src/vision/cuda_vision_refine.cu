/* The attention mesh's refinement on the GPU (vis_cuda_refine): MediaPipe's
 * LandmarksRefinementCalculator as face_refine.c does it on the CPU, the
 * same float operations in the same order, so both give the same bits for
 * the same model outputs. A block per FaceMesh slot. */
#include "vision/cuda_vision.h"
#include "vision/face_refine.h"

#define REFINE_THREADS 256

__constant__ short lips_index[VIS_LIPS_POINTS] = VIS_LIPS_INDEX;
__constant__ short left_eye_index[VIS_EYE_POINTS] = VIS_LEFT_EYE_INDEX;
__constant__ short right_eye_index[VIS_EYE_POINTS] = VIS_RIGHT_EYE_INDEX;

/* Point k < n of a part's x, y over the mesh's point index[k]. */
__device__ void refine_xy(float *out, const short *index, int n, const float *xy, int k)
{
    if (k < n) {
        out[3 * index[k]] = xy[2 * k];
        out[3 * index[k] + 1] = xy[2 * k + 1];
    }
}

/* blockIdx.x: slot. */
__global__ void refine_kernel(const float *__restrict__ mesh, const float *__restrict__ lips,
                              const float *__restrict__ left_eye,
                              const float *__restrict__ right_eye,
                              const float *__restrict__ left_iris,
                              const float *__restrict__ right_iris, float *__restrict__ out)
{
    size_t slot = blockIdx.x;
    const float *m = mesh + slot * OMMA_FACE_LANDMARKS * 3;
    float *o = out + slot * OMMA_FACE_LANDMARKS_WITH_IRISES * 3;
    for (int p = threadIdx.x; p < OMMA_FACE_LANDMARKS * 3; p += blockDim.x)
        o[p] = m[p];
    __syncthreads();
    /* The three lists are disjoint (face_refine.h): one pass writes them
     * all, as the CPU's three passes one after the other do. */
    for (int k = threadIdx.x; k < VIS_EYE_POINTS || k < VIS_LIPS_POINTS; k += blockDim.x) {
        refine_xy(o, lips_index, VIS_LIPS_POINTS, lips + slot * VIS_LIPS_POINTS * 2, k);
        refine_xy(o, left_eye_index, VIS_EYE_POINTS, left_eye + slot * VIS_EYE_POINTS * 2, k);
        refine_xy(o, right_eye_index, VIS_EYE_POINTS, right_eye + slot * VIS_EYE_POINTS * 2, k);
    }
    /* Iris point k of eye e: its z the mean z of the eye's contour, summed
     * in the CPU's order (the refinement keeps z: the mesh's). */
    int k = threadIdx.x;
    if (k < 2 * VIS_IRIS_POINTS) {
        int e = k / VIS_IRIS_POINTS, i = k % VIS_IRIS_POINTS;
        const short *contour = e ? right_eye_index : left_eye_index;
        const float *xy = (e ? right_iris : left_iris) + slot * VIS_IRIS_POINTS * 2;
        float z = 0;
        for (int c = 0; c < VIS_EYE_CONTOUR_POINTS; c++)
            z += m[3 * contour[c] + 2];
        z /= VIS_EYE_CONTOUR_POINTS;
        float *to = o + 3 * (OMMA_FACE_LANDMARKS + k);
        to[0] = xy[2 * i];
        to[1] = xy[2 * i + 1];
        to[2] = z;
    }
}

extern "C" cudaError_t vis_cuda_refine(vis_gpu_shape shape, const float *mesh, const float *lips,
                                       const float *left_eye, const float *right_eye,
                                       const float *left_iris, const float *right_iris, float *out,
                                       cudaStream_t stream)
{
    if (shape.n_slots <= 0)
        return cudaSuccess;
    refine_kernel<<<(unsigned)shape.n_slots, REFINE_THREADS, 0, stream>>>(
        mesh, lips, left_eye, right_eye, left_iris, right_iris, out);
    return cudaGetLastError();
}
