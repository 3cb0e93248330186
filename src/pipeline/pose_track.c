/* The pose pipelines' tracking rule (pose_track.h). */
#include "pipeline/pose_track.h"

#include <math.h>

#include "core/error.h"

#include "vision/detect_decode.h"

#define POSE_SAME_PERSON_IOU 0.5f

static bool in_unit(float v)
{
    return v >= 0.0f && v <= 1.0f;
}

omma_status pp_check_options(const omma_pose_pipeline_options *o)
{
    if (o->backend != OMMA_BACKEND_CPU && o->backend != OMMA_BACKEND_CUDA)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "pose pipeline: unknown backend %d",
                         (int)o->backend);
    if (o->backend == OMMA_BACKEND_CPU && o->device)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "pose pipeline: a device given to the CPU backend");
    if (o->precision != OMMA_PRECISION_FP16 && o->precision != OMMA_PRECISION_FP32)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "pose pipeline: unknown precision %d",
                         (int)o->precision);
    if (!o->detector_model || !o->landmark_model)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "pose pipeline: no %s model path",
                         o->detector_model ? "landmark" : "detector");
    if (o->max_poses < 1 || o->max_poses > OMMA_POSE_MAX_POSES)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "pose pipeline: max_poses %d not in 1..%d",
                         o->max_poses, OMMA_POSE_MAX_POSES);
    if (!in_unit(o->min_detection_score) || !in_unit(o->min_presence))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "pose pipeline: min_detection_score %g, min_presence %g: each must be "
                         "in [0, 1]",
                         (double)o->min_detection_score, (double)o->min_presence);
    if (o->detect_every < 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "pose pipeline: detect_every %d < 0",
                         o->detect_every);
    if (o->threads < 0 || o->threads > 256)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "pose pipeline: threads %d not in 0..256",
                         o->threads);
    return OMMA_OK;
}

static bool overlaps(const vis_roi *a, const vis_roi *b)
{
    omma_box ba = vis_roi_box(a), bb = vis_roi_box(b);
    return vis_box_iou(&ba, &bb) > POSE_SAME_PERSON_IOU;
}

bool pp_track_begin(pp_camera *c, const omma_pose_pipeline_options *opt)
{
    c->since_detect++;
    return c->count == 0 || (c->count < opt->max_poses && opt->detect_every > 0 &&
                             c->since_detect >= opt->detect_every);
}

void pp_track_detected(pp_camera *c, const omma_pose_pipeline_options *opt,
                       const vis_pose_detection *dets, int n)
{
    c->since_detect = 0;
    for (int i = 0; i < n && c->count < opt->max_poses; i++) {
        vis_roi roi = vis_pose_roi_from_points(dets[i].keypoints[0][0], dets[i].keypoints[0][1],
                                               dets[i].keypoints[1][0], dets[i].keypoints[1][1]);
        if (!(roi.w > 0.0f) || !isfinite(roi.w))
            continue;
        bool known = false;
        for (int t = 0; t < c->count && !known; t++)
            known = overlaps(&roi, &c->tracks[t].roi);
        if (known)
            continue;
        c->tracks[c->count].id = ++c->next_id; /* ids from 1, as faces */
        c->tracks[c->count++].roi = roi;
    }
}

void pp_track_finish(pp_camera *c, const omma_pose_pipeline_options *opt, const omma_pose *poses,
                     const vis_roi *next, omma_pose *out, int *count)
{
    int kept = 0;
    for (int t = 0; t < c->count; t++) {
        int id = c->tracks[t].id;
        if (!(poses[t].score >= opt->min_presence) || !(next[t].w > 0.0f) || !isfinite(next[t].w))
            continue;
        bool dup = false; /* tracks are in age order: an older one keeps the person */
        for (int k = 0; k < kept && !dup; k++)
            dup = overlaps(&next[t], &c->tracks[k].roi);
        if (dup)
            continue;
        out[kept] = poses[t];
        out[kept].id = id;
        c->tracks[kept].id = id;
        c->tracks[kept].roi = next[t];
        kept++;
    }
    c->count = kept;
    *count = kept;
}

void pp_track_reset(pp_camera *c)
{
    c->count = 0;
    c->since_detect = 0;
}
