/* Private: a face's head pose from its landmarks, as MediaPipe's face
 * geometry computes the facial transformation matrix
 * (mediapipe/modules/face_geometry/libs/geometry_pipeline.cc, the face
 * landmark pipeline's path, origin at the top-left corner).
 *
 * Camera model (MediaPipe's defaults): a perspective camera at the origin
 * looking down -z, y up, vertical field of view 63 degrees, near plane 1,
 * far plane 10000, the frame's aspect ratio. The landmarks (x, y in frame
 * pixels, z relative depth scaled like x) are normalized by the frame's
 * size, put on the near plane, their depth moved and rescaled so that the
 * canonical face fits them (two weighted Procrustes passes to estimate the
 * scale), un-projected, and the weighted orthogonal Procrustes problem
 * (rotation, uniform scale, translation) from the canonical face (cm) to
 * them solved with the metadata's weights. The result maps the canonical
 * face into camera space (cm). Uses the first 468 landmarks (468 or 478).
 *
 * Angles (degrees) from the rotation relative to the line of sight: R'
 * = V^T R, R the matrix's upper 3x3 divided by its scale, V the rotation
 * Ry Rx taking the camera's -z onto the ray from the camera to the face's
 * origin (so a face looking into the camera has 0, 0, 0 wherever it is in
 * the frame), R' = Ry(yaw) Rx(pitch) Rz(roll) about camera space's axes
 * (x right, y up, z towards the viewer): yaw > 0 the face turns towards
 * the image's right (the person's left), pitch > 0 it looks down, roll > 0
 * it tilts counter-clockwise on screen. Pure arithmetic, any thread. */
#ifndef OMMA_VISION_HEAD_POSE_H
#define OMMA_VISION_HEAD_POSE_H

#include "omma/status.h"
#include "vision/geometry_metadata.h"

#define VIS_CAMERA_FOV_DEG 63.0
#define VIS_CAMERA_NEAR 1.0
#define VIS_CAMERA_FAR 10000.0

/* landmarks [468 * 3] of a frame width x height. matrix: row-major 4x4.
 * OMMA_ERR_INVALID_ARG for a degenerate face (landmarks too compact, or a
 * Procrustes problem without solution) or frame size. */
omma_status vis_head_pose(const vis_geometry *geo, const float *landmarks, int width, int height,
                          float matrix[16], float *yaw, float *pitch, float *roll);

#endif
