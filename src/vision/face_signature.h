/* Private: a face-shape signature from FaceMesh landmarks, to tell
 * enrolled people apart after their track is lost (runtime/participants.h).
 *
 * The signature is the 3-D shape of VIS_SIGNATURE_POINTS landmarks that
 * move little with expression (the face's outline, the nose, the eye
 * corners and the brows), centred on their mean and scaled to unit size
 * (the root of the sum of squared coordinates is 1), so it does not depend
 * on where the face is or how large. Two signatures are compared after the
 * rotation that best aligns them (orthogonal Procrustes, solved with
 * Horn's quaternion method), so head pose does not count either:
 *   d(A, B) = sqrt(max(0, 2 - 2 max_R trace(R A^T B)))
 * 0 for the same shape; at most 2. An enrolled template is the mean of
 * several signatures, each rotated onto the first, re-centred and
 * re-scaled. Pure maths, any thread. */
#ifndef OMMA_VISION_FACE_SIGNATURE_H
#define OMMA_VISION_FACE_SIGNATURE_H

#include "omma/face.h"

#define VIS_SIGNATURE_POINTS 60

typedef struct vis_signature {
    float p[VIS_SIGNATURE_POINTS][3];
} vis_signature;

/* The signature of a face's landmarks (frame pixels, z on x's scale).
 * Returns 0 when the points are degenerate (all the same). */
int vis_signature_make(const float landmarks[OMMA_FACE_LANDMARKS][3], vis_signature *out);

/* The Procrustes distance between two signatures (above). */
double vis_signature_distance(const vis_signature *a, const vis_signature *b);

/* Averages n signatures (n >= 1) into *out: each rotated onto s[0]. */
void vis_signature_mean(const vis_signature *s, int n, vis_signature *out);

#endif
