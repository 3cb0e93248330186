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

/* The mesh points the lips', left eye's and right eye's outputs refine. */
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
