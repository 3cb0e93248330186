/* Private: the attention mesh's landmarks into MediaPipe's 478 points.
 *
 * face_landmark_with_attention.tflite gives the 468-point mesh and, apart,
 * refined x, y of the lips (80 points), of each eye and its surroundings
 * (71) and each iris (5). MediaPipe's LandmarksRefinementCalculator
 * (tensors_to_face_landmarks_with_attention.pbtxt) writes the lips' and
 * eyes' x, y over the mesh's points (z kept), and appends the irises as
 * points 468..472 (the model's "left" iris, the person's left eye) and
 * 473..477, their z the mean z of their eye's 16 contour points. Pure
 * arithmetic, any thread. */
#ifndef OMMA_VISION_FACE_REFINE_H
#define OMMA_VISION_FACE_REFINE_H

#include "omma/face.h"

#define VIS_LIPS_POINTS 80
#define VIS_EYE_POINTS 71
#define VIS_IRIS_POINTS 5
#define VIS_EYE_CONTOUR_POINTS 16 /* the first 16 of an eye's points */

/* The mesh points the lips', left eye's and right eye's outputs refine
 * (tensors_to_face_landmarks_with_attention.pbtxt), as initializers for
 * the CPU's tables below and the CUDA kernel's constant memory; the three
 * lists are disjoint and without repeats. */
#define VIS_LIPS_INDEX                                                                             \
    {                                                                                              \
        61, 146, 91, 181, 84, 17, 314, 405, 321, 375, 291, 185, 40, 39, 37, 0, 267, 269, 270, 409, \
            78, 95, 88, 178, 87, 14, 317, 402, 318, 324, 308, 191, 80, 81, 82, 13, 312, 311, 310,  \
            415, 76, 77, 90, 180, 85, 16, 315, 404, 320, 307, 306, 184, 74, 73, 72, 11, 302, 303,  \
            304, 408, 62, 96, 89, 179, 86, 15, 316, 403, 319, 325, 292, 183, 42, 41, 38, 12, 268,  \
            271, 272, 407                                                                          \
    }
#define VIS_LEFT_EYE_INDEX                                                                         \
    {                                                                                              \
        33, 7, 163, 144, 145, 153, 154, 155, 133, 246, 161, 160, 159, 158, 157, 173, 130, 25, 110, \
            24, 23, 22, 26, 112, 243, 247, 30, 29, 27, 28, 56, 190, 226, 31, 228, 229, 230, 231,   \
            232, 233, 244, 113, 225, 224, 223, 222, 221, 189, 35, 124, 46, 53, 52, 65, 143, 111,   \
            117, 118, 119, 120, 121, 128, 245, 156, 70, 63, 105, 66, 107, 55, 193                  \
    }
#define VIS_RIGHT_EYE_INDEX                                                                        \
    {                                                                                              \
        263, 249, 390, 373, 374, 380, 381, 382, 362, 466, 388, 387, 386, 385, 384, 398, 359, 255,  \
            339, 254, 253, 252, 256, 341, 463, 467, 260, 259, 257, 258, 286, 414, 446, 261, 448,   \
            449, 450, 451, 452, 453, 464, 342, 445, 444, 443, 442, 441, 413, 265, 353, 276, 283,   \
            282, 295, 372, 340, 346, 347, 348, 349, 350, 357, 465, 383, 300, 293, 334, 296, 336,   \
            285, 417                                                                               \
    }

extern const short vis_lips_index[VIS_LIPS_POINTS];
extern const short vis_left_eye_index[VIS_EYE_POINTS];
extern const short vis_right_eye_index[VIS_EYE_POINTS];

/* out[478 * 3] from the model's outputs, all in the crop's pixels: mesh
 * [468 * 3], lips [80 * 2], eyes [71 * 2], irises [5 * 2]. out must not
 * overlap the inputs. */
void vis_refine_attention(const float *mesh, const float *lips, const float *left_eye,
                          const float *right_eye, const float *left_iris, const float *right_iris,
                          float *out);

#endif
