/* Private: face regions of interest as MediaPipe's face-mesh graph makes
 * them (from a detection, from the previous frame's landmarks), the affine
 * map between a ROI and the FaceMesh crop, and the landmarks' way back.
 * Pure functions: any thread. */
#ifndef OMMA_VISION_FACE_ROI_H
#define OMMA_VISION_FACE_ROI_H

#include "omma/face.h"

#define VIS_MESH_SIZE 192 /* FaceMesh input side */

/* A rotated square region in frame pixels. rotation is in radians, in the
 * image's y-down frame: the ROI's x axis is the frame's x axis turned by
 * rotation towards +y, i.e. positive = clockwise as seen on screen. */
typedef struct vis_roi {
    float cx, cy; /* centre */
    float w, h;   /* size along the ROI's own axes */
    float rotation;
} vis_roi;

/* The ROI of a detection: centre of its box, rotation that brings the line
 * keypoint 0 -> keypoint 1 (right eye -> left eye) level (target angle 0),
 * side = 1.5 * the box's long side (MediaPipe's DetectionsToRects with
 * rotation from the eyes, then RectTransformation scale 1.5, square long). */
vis_roi vis_roi_from_detection(const omma_detection *d);

/* The next frame's ROI from 468 landmarks (x, y, z in frame pixels; z not
 * used): centre and size of the bounding box of all landmarks, rotation
 * from landmark 33 to 263 (outer eye corners), square on the long side,
 * scaled 1.5. The bounding box goes to *box when box is not NULL. */
vis_roi vis_roi_from_landmarks(const float *landmarks, omma_box *box);

/* The affine map crop pixel (u, v) -> frame point (x, y) of a ROI sampled
 * into a size x size crop: x = m[0] u + m[1] v + m[2], y = m[3] u + m[4] v
 * + m[5] (continuous coordinates). */
void vis_roi_crop_to_frame(const vis_roi *roi, int size, float m[6]);

/* Its inverse: frame point -> crop pixel. A zero-size ROI gives zeros. */
void vis_roi_frame_to_crop(const vis_roi *roi, int size, float m[6]);

/* Maps n FaceMesh points (x, y, z in crop pixels of a size x size crop of
 * roi) to the frame: x, y through vis_roi_crop_to_frame, z scaled like x
 * (z * roi.w / size). in and out may be the same array. */
void vis_landmarks_to_frame(const vis_roi *roi, int size, const float *in, int n, float *out);

/* Face presence from FaceMesh's face-flag logit: its sigmoid. */
float vis_face_presence(float flag_logit);

/* Axis-aligned box of a ROI ignoring its rotation (what MediaPipe's rect
 * association compares). */
omma_box vis_roi_box(const vis_roi *roi);

#endif
