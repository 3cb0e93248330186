/* Private: scalar face measures from one face's FaceMesh landmarks (frame
 * pixels, z on x's scale; docs/OUTPUT.md, NAME_face): head pose and the
 * openness of the eyes and the mouth. Pure maths, any thread.
 *
 * Head pose: a head frame from the landmarks, X from the right eye's outer
 * corner (33) to the left eye's (263), up from the chin (152) to the top
 * of the forehead (10), Z = X x up, normalized (the face's normal, toward
 * the camera on a frontal face), Y = Z x X. Angles in degrees, 0 for a
 * face looking straight into the camera, upright:
 *   yaw   = atan2(Z.x, -Z.z): positive when the face turns toward the
 *           image's right (the person's left)
 *   pitch = atan2(-Z.y, hypot(Z.x, Z.z)): positive when it looks up
 *   roll  = atan2(X.y, X.x): positive when the eye line turns clockwise in
 *           the image (the head tilts toward the person's left shoulder)
 * Openness, ratios of 2-D distances in the image (so they do not depend on
 * the face's size):
 *   eye   = |upper lid - lower lid| / |outer corner - inner corner|
 *           (right: 159-145 over 33-133; left: 386-374 over 263-362)
 *   mouth = |13 - 14| / |61 - 291|     (inner lips over the mouth's width)
 *   mouth width = |61 - 291| / |33 - 263| (over the outer eye corners'
 *           distance: rises with a smile) */
#ifndef OMMA_VISION_FACE_MEASURES_H
#define OMMA_VISION_FACE_MEASURES_H

#include "omma/face.h"

enum {
    VIS_MEASURE_YAW,
    VIS_MEASURE_PITCH,
    VIS_MEASURE_ROLL,
    VIS_MEASURE_RIGHT_EYE_OPEN,
    VIS_MEASURE_LEFT_EYE_OPEN,
    VIS_MEASURE_MOUTH_OPEN,
    VIS_MEASURE_MOUTH_WIDTH,
    VIS_MEASURE_COUNT
};

/* The measures of landmarks into out[VIS_MEASURE_COUNT] (NaN where a
 * distance it divides by is 0). */
void vis_face_measures(const float landmarks[OMMA_FACE_LANDMARKS][3], float *out);

#endif
