/* The tracking half of MediaPipe's face_landmark_front graph: landmarks ->
 * next ROI (vis_roi_from_landmarks), detector gated on the face count
 * (plus our every-K-frames refresh), AssociationNormRectCalculator keeping
 * tracked ROIs over overlapping new detections. */
#include "vision/tracker.h"

#include <string.h>

#include "core/error.h"
#include "vision/detect_decode.h"

void vis_tracker_options_init(vis_tracker_options *opt)
{
    opt->max_faces = 4;
    opt->detect_every = 0;
    opt->overlap_iou = 0.5f;
    opt->min_presence = 0.5f;
}

omma_status vis_tracker_init(vis_tracker *t, const vis_tracker_options *opt)
{
    vis_tracker_options o;
    if (!t)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "NULL tracker");
    if (opt)
        o = *opt;
    else
        vis_tracker_options_init(&o);
    if (o.max_faces < 1 || o.max_faces > VIS_TRACKER_MAX_FACES || o.detect_every < 0 ||
        !(o.overlap_iou >= 0.0f && o.overlap_iou <= 1.0f) ||
        !(o.min_presence >= 0.0f && o.min_presence <= 1.0f))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "tracker options: max faces %d (1..%d), detect every %d, overlap %g, "
                         "presence %g",
                         o.max_faces, VIS_TRACKER_MAX_FACES, o.detect_every, o.overlap_iou,
                         o.min_presence);
    memset(t, 0, sizeof *t);
    t->opt = o;
    t->next_id = 1;
    return OMMA_OK;
}

int vis_tracker_begin_frame(vis_tracker *t)
{
    t->frame++;
    t->frames_since_detect++;
    for (int i = 0; i < t->count; i++)
        t->tracks[i].updated = 0;
    if (t->count < t->opt.max_faces)
        return 1;
    return t->opt.detect_every > 0 && t->frames_since_detect >= t->opt.detect_every;
}

static int overlaps_track(const vis_tracker *t, int n_tracks, const omma_box *b)
{
    for (int i = 0; i < n_tracks; i++) {
        omma_box tb = vis_roi_box(&t->tracks[i].roi);
        if (vis_box_iou(&tb, b) >= t->opt.overlap_iou)
            return 1;
    }
    return 0;
}

int vis_tracker_add_detections(vis_tracker *t, const omma_detection *dets, int n)
{
    int added = 0;
    t->frames_since_detect = 0;
    for (int d = 0; d < n && t->count < t->opt.max_faces; d++) {
        vis_roi roi = vis_roi_from_detection(&dets[d]);
        omma_box b = vis_roi_box(&roi);
        /* Against every track, the ones this call started included: the
         * decoder's NMS already merged near-duplicates, this catches the rest. */
        if (overlaps_track(t, t->count, &b))
            continue;
        vis_track *tr = &t->tracks[t->count++];
        memset(tr, 0, sizeof *tr);
        tr->id = t->next_id++;
        tr->score = dets[d].score;
        memcpy(tr->keypoints, dets[d].keypoints, sizeof tr->keypoints);
        tr->roi = roi;
        added++;
    }
    return added;
}

void vis_tracker_update(vis_tracker *t, int i, const float *landmarks, float presence)
{
    if (i < 0 || i >= t->count)
        return;
    vis_track *tr = &t->tracks[i];
    tr->updated = 1;
    tr->presence = presence;
    if (presence >= t->opt.min_presence)
        tr->roi = vis_roi_from_landmarks(landmarks, NULL);
}

void vis_tracker_face(const vis_tracker *t, int i, const float *landmarks, float presence,
                      omma_face *out)
{
    const vis_track *tr = &t->tracks[i];
    out->id = tr->id;
    out->score = tr->score;
    memcpy(out->keypoints, tr->keypoints, sizeof out->keypoints);
    memcpy(out->landmarks, landmarks, sizeof out->landmarks);
    out->presence = presence;
    vis_roi_from_landmarks(landmarks, &out->box);
}

void vis_tracker_end_frame(vis_tracker *t)
{
    int kept = 0;
    for (int i = 0; i < t->count; i++) {
        vis_track *tr = &t->tracks[i];
        if (!tr->updated || !(tr->presence >= t->opt.min_presence))
            continue;
        /* Two tracks that converged on one face: the older (earlier) wins. */
        omma_box b = vis_roi_box(&tr->roi);
        if (overlaps_track(t, kept, &b))
            continue;
        t->tracks[kept++] = *tr;
    }
    t->count = kept;
}
