/* MediaPipe: DetectionsToRectsCalculator (rotation from two keypoints,
 * computed in pixels), RectTransformationCalculator (scale 1.5,
 * square_long), LandmarksToDetection (bounding box of all landmarks),
 * ImageToTensor's rotated sub-rectangle transform and
 * LandmarkProjectionCalculator. */
#include "vision/face_roi.h"

#include <math.h>

static float normalize_radians(float a)
{
    const float two_pi = 6.28318530717958647692f;
    return a - two_pi * floorf((a + 3.14159265358979323846f) / two_pi);
}

/* Rotation that levels the line p0 -> p1 (target angle 0): the angle is
 * measured with y up, hence the minus. */
static float rotation_from(float x0, float y0, float x1, float y1)
{
    return normalize_radians(0.0f - atan2f(-(y1 - y0), x1 - x0));
}

static vis_roi square_scaled(float cx, float cy, float w, float h, float rotation)
{
    float side = 1.5f * fmaxf(w, h);
    vis_roi r = {cx, cy, side, side, rotation};
    return r;
}

vis_roi vis_roi_from_detection(const omma_detection *d)
{
    const omma_box *b = &d->box;
    return square_scaled((b->xmin + b->xmax) * 0.5f, (b->ymin + b->ymax) * 0.5f,
                         b->xmax - b->xmin, b->ymax - b->ymin,
                         rotation_from(d->keypoints[0][0], d->keypoints[0][1],
                                       d->keypoints[1][0], d->keypoints[1][1]));
}

vis_roi vis_roi_from_landmarks(const float *lm, omma_box *box)
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
    return square_scaled((b.xmin + b.xmax) * 0.5f, (b.ymin + b.ymax) * 0.5f, b.xmax - b.xmin,
                         b.ymax - b.ymin,
                         rotation_from(lm[3 * 33], lm[3 * 33 + 1], lm[3 * 263], lm[3 * 263 + 1]));
}

void vis_roi_crop_to_frame(const vis_roi *roi, int size, float m[6])
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

void vis_roi_frame_to_crop(const vis_roi *roi, int size, float m[6])
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

void vis_landmarks_to_frame(const vis_roi *roi, int size, const float *in, int n, float *out)
{
    float m[6];
    vis_roi_crop_to_frame(roi, size, m);
    float zs = roi->w / (float)size;
    for (int i = 0; i < n; i++) {
        float u = in[3 * i], v = in[3 * i + 1], z = in[3 * i + 2];
        out[3 * i] = m[0] * u + m[1] * v + m[2];
        out[3 * i + 1] = m[3] * u + m[4] * v + m[5];
        out[3 * i + 2] = z * zs;
    }
}

float vis_face_presence(float flag_logit)
{
    return 1.0f / (1.0f + expf(-flag_logit));
}

omma_box vis_roi_box(const vis_roi *roi)
{
    omma_box b = {roi->cx - roi->w * 0.5f, roi->cy - roi->h * 0.5f, roi->cx + roi->w * 0.5f,
                  roi->cy + roi->h * 0.5f};
    return b;
}
