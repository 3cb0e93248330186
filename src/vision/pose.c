/* BlazePose's decoding, regions and landmarks (see pose.h): MediaPipe's
 * TensorsToDetections + NonMaxSuppression (WEIGHTED) for the person
 * detector, AlignmentPointsRects + RectTransformation for the regions,
 * TensorsToLandmarks, RefineLandmarksFromHeatmap (pose_refine.h), LandmarkProjection and
 * WorldLandmarkProjection for the landmarks. */
#include "vision/pose.h"

#include <math.h>
#include <stdlib.h>

#include "core/error.h"
#include "vision/detect_decode.h"
#include "vision/pose_refine.h"

#define POSE_SCORE_CLIP 100.0f
#define POSE_ROI_SCALE 1.25f

void vis_pose_decode_options_init(vis_pose_decode_options *opt)
{
    opt->min_score = 0.5f;
    opt->min_suppression = 0.3f;
    opt->max_poses = 1;
}

/* Pose candidates are face candidates with the first VIS_POSE_KEYPOINTS
 * keypoints used: one decoder and one suppression serve both. */
_Static_assert(VIS_POSE_KEYPOINTS <= OMMA_FACE_KEYPOINTS, "pose keypoints fit a vis_candidate");
_Static_assert(VIS_POSE_HEATMAP == VIS_POSE_REFINE_HEATMAP &&
                   VIS_POSE_RAW_LANDMARKS == VIS_POSE_REFINE_CHANNELS,
               "pose_refine.h sized as the landmark model's heatmap");

static float sigmoid(float v)
{
    return 1.0f / (1.0f + expf(-v));
}

static void to_frame(const vis_letterbox *lb, const vis_candidate *c, vis_pose_detection *d)
{
    const float s = (float)VIS_POSE_DETECT_SIZE;
    d->score = c->score;
    d->box.xmin = vis_letterbox_to_frame_x(lb, c->box.xmin * s);
    d->box.ymin = vis_letterbox_to_frame_y(lb, c->box.ymin * s);
    d->box.xmax = vis_letterbox_to_frame_x(lb, c->box.xmax * s);
    d->box.ymax = vis_letterbox_to_frame_y(lb, c->box.ymax * s);
    for (int k = 0; k < VIS_POSE_KEYPOINTS; k++) {
        d->keypoints[k][0] = vis_letterbox_to_frame_x(lb, c->kp[k][0] * s);
        d->keypoints[k][1] = vis_letterbox_to_frame_y(lb, c->kp[k][1] * s);
    }
}

/* MediaPipe's WEIGHTED suppression, as vis_weighted_nms for faces. */
static int weighted_nms(const vis_pose_decode_options *opt, const vis_letterbox *lb,
                        vis_candidate *cand, int m, vis_pose_detection *out)
{
    int found = 0;
    while (m > 0 && found < opt->max_poses) {
        vis_candidate best;
        m = vis_nms_take_cluster(cand, m, VIS_POSE_KEYPOINTS, opt->min_suppression, &best);
        to_frame(lb, &best, &out[found++]);
    }
    return found;
}

omma_status vis_pose_detect_decode(const vis_pose_decode_options *opt, const vis_anchor *anchors,
                                   int n, const float *raw_boxes, const float *raw_scores,
                                   const vis_letterbox *lb, vis_pose_detection *out, int *count)
{
    if (count)
        *count = 0;
    if (!opt || !anchors || !raw_boxes || !raw_scores || !lb || !out || !count)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "NULL argument to the pose detection decoder");
    if (n < 1)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%d anchors", n);
    if (opt->max_poses < 1 || !(opt->min_suppression >= 0.0f && opt->min_suppression <= 1.0f) ||
        !(lb->scale > 0.0f))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "pose decode options: max poses %d, suppression %g, letterbox scale %g",
                         opt->max_poses, opt->min_suppression, lb->scale);
    vis_candidate *cand = malloc((size_t)n * sizeof *cand);
    if (!cand)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "pose decoder scratch for %d anchors", n);
    const float s = (float)VIS_POSE_DETECT_SIZE;
    int m = 0;
    for (int a = 0; a < n; a++) {
        float score = vis_detection_score(raw_scores[a], POSE_SCORE_CLIP);
        if (!(score >= opt->min_score))
            continue;
        const float *raw = raw_boxes + (size_t)VIS_POSE_DETECT_VALUES * (size_t)a;
        vis_decode_box_keypoints(s, &anchors[a], a, score, raw, VIS_POSE_KEYPOINTS, &cand[m++]);
    }
    vis_sort_candidates(cand, m);
    *count = weighted_nms(opt, lb, cand, m, out);
    free(cand);
    return OMMA_OK;
}

vis_roi vis_pose_roi_from_points(float x0, float y0, float x1, float y1)
{
    const float target = 1.57079632679489661923f; /* 90 degrees */
    float side = 2.0f * sqrtf((x1 - x0) * (x1 - x0) + (y1 - y0) * (y1 - y0)) * POSE_ROI_SCALE;
    vis_roi r = {x0, y0, side, side, vis_normalize_radians(target - atan2f(-(y1 - y0), x1 - x0))};
    return r;
}

void vis_pose_landmarks(const vis_roi *roi, const vis_pose_raw *raw, omma_pose *pose, vis_roi *next)
{
    const float size = (float)VIS_POSE_LANDMARK_SIZE;
    float m[6];
    vis_roi_crop_to_frame(roi, VIS_POSE_LANDMARK_SIZE, m);
    float zs = roi->w / size;
    float pts[2][2]; /* alignment points 33 and 34 in the frame */
    pose->score = raw->flag;
    for (int k = 0; k < OMMA_POSE_LANDMARKS + 2; k++) {
        const float *r = raw->landmarks + 5 * k;
        float x = r[0] / size, y = r[1] / size;
        if (raw->heatmap)
            vis_pose_refine(raw->heatmap, k, &x, &y);
        float crop[3] = {x * size, y * size, r[2]}, f[3];
        vis_landmark_to_frame(m, zs, crop, f);
        if (k >= OMMA_POSE_LANDMARKS) {
            pts[k - OMMA_POSE_LANDMARKS][0] = f[0];
            pts[k - OMMA_POSE_LANDMARKS][1] = f[1];
            continue;
        }
        omma_pose_landmark *l = &pose->landmarks[k];
        l->x = f[0];
        l->y = f[1];
        l->z = f[2];
        l->visibility = sigmoid(r[3]);
        l->presence = sigmoid(r[4]);
    }
    omma_box b = {pose->landmarks[0].x, pose->landmarks[0].y, pose->landmarks[0].x,
                  pose->landmarks[0].y};
    for (int k = 1; k < OMMA_POSE_LANDMARKS; k++) {
        b.xmin = fminf(b.xmin, pose->landmarks[k].x);
        b.xmax = fmaxf(b.xmax, pose->landmarks[k].x);
        b.ymin = fminf(b.ymin, pose->landmarks[k].y);
        b.ymax = fmaxf(b.ymax, pose->landmarks[k].y);
    }
    pose->box = b;
    float c = cosf(roi->rotation), s = sinf(roi->rotation);
    for (int k = 0; k < OMMA_POSE_LANDMARKS; k++) {
        const float *w = raw->world + 3 * k;
        pose->world[k][0] = c * w[0] - s * w[1];
        pose->world[k][1] = s * w[0] + c * w[1];
        pose->world[k][2] = w[2];
    }
    if (next)
        *next = vis_pose_roi_from_points(pts[0][0], pts[0][1], pts[1][0], pts[1][1]);
}
