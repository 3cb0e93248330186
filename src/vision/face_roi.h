/* Private: face regions of interest as MediaPipe's face-mesh graph makes
 * them (from a detection, from the previous frame's landmarks), the affine
 * map between a ROI and the FaceMesh crop, and the landmarks' way back.
 * MediaPipe: DetectionsToRectsCalculator (rotation from two keypoints,
 * computed in pixels), RectTransformationCalculator (scale 1.5,
 * square_long), LandmarksToDetection (bounding box of all landmarks),
 * ImageToTensor's rotated sub-rectangle transform and
 * LandmarkProjectionCalculator. Pure functions shared by the CPU reference
 * and the CUDA kernels (vision/hd.h): any thread. */
#ifndef OMMA_VISION_FACE_ROI_H
#define OMMA_VISION_FACE_ROI_H

#include <math.h>

#include "omma/face.h"
#include "vision/hd.h"

#define VIS_MESH_SIZE 192 /* FaceMesh input side */

/* A rotated square region in frame pixels. rotation is in radians, in the
 * image's y-down frame: the ROI's x axis is the frame's x axis turned by
 * rotation towards +y, i.e. positive = clockwise as seen on screen. */
typedef struct vis_roi {
    float cx, cy; /* centre */
    float w, h; /* size along the ROI's own axes */
    float rotation;
} vis_roi;

/* a in (-pi, pi]. */
VIS_HD float vis_normalize_radians(float a)
{
    const float two_pi = 6.28318530717958647692f;
    return a - two_pi * floorf((a + 3.14159265358979323846f) / two_pi);
}

/* Rotation that levels the line p0 -> p1 (target angle 0): the angle is
 * measured with y up, hence the minus. */
VIS_HD float vis_rotation_from(float x0, float y0, float x1, float y1)
{
    return vis_normalize_radians(0.0f - atan2f(-(y1 - y0), x1 - x0));
}

/* A square ROI on the long side of a w x h box, scaled 1.5. */
VIS_HD vis_roi vis_square_scaled(float cx, float cy, float w, float h, float rotation)
{
    float side = 1.5f * fmaxf(w, h);
    vis_roi r = {cx, cy, side, side, rotation};
    return r;
}

/* The ROI of a detection: centre of its box, rotation that brings the line
 * keypoint 0 -> keypoint 1 (right eye -> left eye) level (target angle 0),
 * side = 1.5 * the box's long side (MediaPipe's DetectionsToRects with
 * rotation from the eyes, then RectTransformation scale 1.5, square long). */
VIS_HD vis_roi vis_roi_from_detection(const omma_detection *d)
{
    const omma_box *b = &d->box;
    return vis_square_scaled((b->xmin + b->xmax) * 0.5f, (b->ymin + b->ymax) * 0.5f,
                             b->xmax - b->xmin, b->ymax - b->ymin,
                             vis_rotation_from(d->keypoints[0][0], d->keypoints[0][1],
                                               d->keypoints[1][0], d->keypoints[1][1]));
}

/* The next frame's ROI from 468 landmarks (x, y, z in frame pixels; z not
 * used): centre and size of the bounding box of all landmarks, rotation
 * from landmark 33 to 263 (outer eye corners), square on the long side,
 * scaled 1.5. The bounding box goes to *box when box is not NULL. */
VIS_HD vis_roi vis_roi_from_landmarks(const float *lm, omma_box *box)
{
    omma_box b = {lm[0], lm[1], lm[0], lm[1]};
    for (int i = 1; i < OMMA_FACE_LANDMARKS; i++) {
        b.xmin = fminf(b.xmin, lm[3 * i]);
        b.xmax = fmaxf(b.xmax, lm[3 * i]);
        b.ymin = fminf(b.ymin, lm[3 * i + 1]);
        b.ymax = fmaxf(b.ymax, lm[3 * i + 1]);
    }
    if (box)
        *box = b;
    return vis_square_scaled(
        (b.xmin + b.xmax) * 0.5f, (b.ymin + b.ymax) * 0.5f, b.xmax - b.xmin, b.ymax - b.ymin,
        vis_rotation_from(lm[3 * 33], lm[3 * 33 + 1], lm[3 * 263], lm[3 * 263 + 1]));
}

/* The affine map crop pixel (u, v) -> frame point (x, y) of a ROI sampled
 * into a size x size crop: x = m[0] u + m[1] v + m[2], y = m[3] u + m[4] v
 * + m[5] (continuous coordinates). */
VIS_HD void vis_roi_crop_to_frame(const vis_roi *roi, int size, float m[6])
{
    /* (u, v) -> offsets from the centre along the ROI's axes, then rotated. */
    float c = cosf(roi->rotation), s = sinf(roi->rotation);
    float sx = roi->w / (float)size, sy = roi->h / (float)size;
    m[0] = c * sx;
    m[1] = -s * sy;
    m[3] = s * sx;
    m[4] = c * sy;
    m[2] = roi->cx - (m[0] + m[1]) * (float)size * 0.5f;
    m[5] = roi->cy - (m[3] + m[4]) * (float)size * 0.5f;
}

/* Its inverse: frame point -> crop pixel. A zero-size ROI gives zeros. */
VIS_HD void vis_roi_frame_to_crop(const vis_roi *roi, int size, float m[6])
{
    float f[6];
    vis_roi_crop_to_frame(roi, size, f);
    float det = f[0] * f[4] - f[1] * f[3];
    if (det == 0.0f) {
        for (int i = 0; i < 6; i++)
            m[i] = 0.0f;
        return;
    }
    m[0] = f[4] / det;
    m[1] = -f[1] / det;
    m[3] = -f[3] / det;
    m[4] = f[0] / det;
    m[2] = -(m[0] * f[2] + m[1] * f[5]);
    m[5] = -(m[3] * f[2] + m[4] * f[5]);
}

/* Maps FaceMesh point i (x, y, z in crop pixels of a size x size crop of
 * roi, through the map m of vis_roi_crop_to_frame) to the frame: z scaled
 * like x (z * roi.w / size). in and out may be the same array. */
VIS_HD void vis_landmark_to_frame(const float m[6], float zs, const float *in, float *out)
{
    float u = in[0], v = in[1], z = in[2];
    out[0] = m[0] * u + m[1] * v + m[2];
    out[1] = m[3] * u + m[4] * v + m[5];
    out[2] = z * zs;
}

/* The same for n points. */
VIS_HD void vis_landmarks_to_frame(const vis_roi *roi, int size, const float *in, int n, float *out)
{
    float m[6];
    vis_roi_crop_to_frame(roi, size, m);
    float zs = roi->w / (float)size;
    for (int i = 0; i < n; i++)
        vis_landmark_to_frame(m, zs, in + 3 * i, out + 3 * i);
}

/* Face presence from FaceMesh's face-flag logit: its sigmoid. */
VIS_HD float vis_face_presence(float flag_logit)
{
    return 1.0f / (1.0f + expf(-flag_logit));
}

/* Axis-aligned box of a ROI ignoring its rotation (what MediaPipe's rect
 * association compares). */
VIS_HD omma_box vis_roi_box(const vis_roi *roi)
{
    omma_box b = {roi->cx - roi->w * 0.5f, roi->cy - roi->h * 0.5f, roi->cx + roi->w * 0.5f,
                  roi->cy + roi->h * 0.5f};
    return b;
}

#endif
