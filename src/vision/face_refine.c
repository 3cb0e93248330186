/* MediaPipe's refinement of the attention mesh (face_refine.h): the CPU
 * reference (the GPU's is cuda_vision_refine.cu). */
#include "vision/face_refine.h"

#include <string.h>

const short vis_lips_index[VIS_LIPS_POINTS] = VIS_LIPS_INDEX;

const short vis_left_eye_index[VIS_EYE_POINTS] = VIS_LEFT_EYE_INDEX;

const short vis_right_eye_index[VIS_EYE_POINTS] = VIS_RIGHT_EYE_INDEX;

static void refine_xy(float *out, const short *index, int n, const float *xy)
{
    for (int k = 0; k < n; k++) {
        out[3 * index[k]] = xy[2 * k];
        out[3 * index[k] + 1] = xy[2 * k + 1];
    }
}

static void iris(float *out, int first, const float *xy, const short *contour)
{
    float z = 0;
    for (int k = 0; k < VIS_EYE_CONTOUR_POINTS; k++)
        z += out[3 * contour[k] + 2];
    z /= VIS_EYE_CONTOUR_POINTS;
    for (int k = 0; k < VIS_IRIS_POINTS; k++) {
        out[3 * (first + k)] = xy[2 * k];
        out[3 * (first + k) + 1] = xy[2 * k + 1];
        out[3 * (first + k) + 2] = z;
    }
}

void vis_refine_attention(const float *mesh, const float *lips, const float *left_eye,
                          const float *right_eye, const float *left_iris, const float *right_iris,
                          float *out)
{
    memcpy(out, mesh, OMMA_FACE_LANDMARKS * 3 * sizeof *out);
    refine_xy(out, vis_lips_index, VIS_LIPS_POINTS, lips);
    refine_xy(out, vis_left_eye_index, VIS_EYE_POINTS, left_eye);
    refine_xy(out, vis_right_eye_index, VIS_EYE_POINTS, right_eye);
    iris(out, OMMA_FACE_LANDMARKS, left_iris, vis_left_eye_index);
    iris(out, OMMA_FACE_LANDMARKS + VIS_IRIS_POINTS, right_iris, vis_right_eye_index);
}
