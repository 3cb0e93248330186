/* MediaPipe's refinement of the attention mesh (face_refine.h); the index
 * lists are those of tensors_to_face_landmarks_with_attention.pbtxt. */
#include "vision/face_refine.h"

#include <string.h>

const short vis_lips_index[VIS_LIPS_POINTS] = {
    61, 146, 91, 181, 84, 17, 314, 405, 321, 375, 291, 185, 40, 39, 37, 0,  267, 269, 270, 409,
    78, 95,  88, 178, 87, 14, 317, 402, 318, 324, 308, 191, 80, 81, 82, 13, 312, 311, 310, 415,
    76, 77,  90, 180, 85, 16, 315, 404, 320, 307, 306, 184, 74, 73, 72, 11, 302, 303, 304, 408,
    62, 96,  89, 179, 86, 15, 316, 403, 319, 325, 292, 183, 42, 41, 38, 12, 268, 271, 272, 407};

const short vis_left_eye_index[VIS_EYE_POINTS] = {
    33,  7,   163, 144, 145, 153, 154, 155, 133, 246, 161, 160, 159, 158, 157, 173, 130, 25,
    110, 24,  23,  22,  26,  112, 243, 247, 30,  29,  27,  28,  56,  190, 226, 31,  228, 229,
    230, 231, 232, 233, 244, 113, 225, 224, 223, 222, 221, 189, 35,  124, 46,  53,  52,  65,
    143, 111, 117, 118, 119, 120, 121, 128, 245, 156, 70,  63,  105, 66,  107, 55,  193};

const short vis_right_eye_index[VIS_EYE_POINTS] = {
    263, 249, 390, 373, 374, 380, 381, 382, 362, 466, 388, 387, 386, 385, 384, 398, 359, 255,
    339, 254, 253, 252, 256, 341, 463, 467, 260, 259, 257, 258, 286, 414, 446, 261, 448, 449,
    450, 451, 452, 453, 464, 342, 445, 444, 443, 442, 441, 413, 265, 353, 276, 283, 282, 295,
    372, 340, 346, 347, 348, 349, 350, 357, 465, 383, 300, 293, 334, 296, 336, 285, 417};

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
