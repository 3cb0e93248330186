/* Private: MediaPipe's face tracking loop, the state of one camera.
 *
 * Per frame:
 *   if (vis_tracker_begin_frame(t))   -> run the detector, then
 *       vis_tracker_add_detections(t, dets, n)
 *   for each t->tracks[i]: run FaceMesh on t->tracks[i].roi, then
 *       vis_tracker_update(t, i, landmarks, presence)
 *   vis_tracker_end_frame(t)          -> lost faces removed, next ROIs set
 * Pure logic: no engine calls, no allocation; shared by the CPU reference
 * and the CUDA kernels (vision/hd.h). One owner at a time. */
#ifndef OMMA_VISION_TRACKER_H
#define OMMA_VISION_TRACKER_H

#include <string.h>

#include "omma/face.h"
#include "omma/status.h"
#include "vision/detect_decode.h"
#include "vision/face_roi.h"
#include "vision/hd.h"

#define VIS_TRACKER_MAX_FACES 64

typedef struct vis_tracker_options {
    int max_faces; /* faces tracked at most (4) */
    int detect_every; /* also run the detector when this many frames have
                       * passed since it last ran; 0 = only when fewer
                       * faces than max_faces are tracked (0) */
    float overlap_iou; /* a detection whose ROI overlaps a tracked face's
                        * with IoU >= this is dropped (0.5) */
    float min_presence; /* a face whose presence falls below this is lost (0.5) */
} vis_tracker_options;

typedef struct vis_track {
    int id;
    float score; /* of the detection that started the track */
    vis_roi roi; /* where FaceMesh looks in the current frame */
    int updated; /* vis_tracker_update called this frame */
    float presence; /* from the last update */
} vis_track;

typedef struct vis_tracker {
    vis_tracker_options opt;
    vis_track tracks[VIS_TRACKER_MAX_FACES];
    int count;
    int next_id;
    long frame; /* frames begun */
    long frames_since_detect; /* frames begun since the detector last ran */
} vis_tracker;

/* Defaults as in the comments above. */
void vis_tracker_options_init(vis_tracker_options *opt);

/* Starts an empty tracker (opt NULL: defaults). Errors:
 * OMMA_ERR_INVALID_ARG for NULL t, max_faces not in 1..64, detect_every <
 * 0, thresholds outside [0, 1]. */
omma_status vis_tracker_init(vis_tracker *t, const vis_tracker_options *opt);

/* Starts a frame; returns nonzero when the detector must run on it: fewer
 * faces tracked than max_faces, or detect_every frames since it last ran. */
VIS_HD int vis_tracker_begin_frame(vis_tracker *t)
{
    t->frame++;
    t->frames_since_detect++;
    for (int i = 0; i < t->count; i++)
        t->tracks[i].updated = 0;
    if (t->count < t->opt.max_faces)
        return 1;
    return t->opt.detect_every > 0 && t->frames_since_detect >= t->opt.detect_every;
}

/* Nonzero when b overlaps (overlap_iou) the ROI of one of the first
 * n_tracks tracks. */
VIS_HD int vis_tracker_overlaps(const vis_tracker *t, int n_tracks, const omma_box *b)
{
    for (int i = 0; i < n_tracks; i++) {
        omma_box tb = vis_roi_box(&t->tracks[i].roi);
        if (vis_box_iou(&tb, b) >= t->opt.overlap_iou)
            return 1;
    }
    return 0;
}

/* Takes the detector's results for this frame (best first): each whose
 * ROI overlaps a tracked face's (overlap_iou) is dropped, as is each beyond
 * max_faces; the others start tracks with new ids. Returns the number of
 * tracks started. Resets the detect_every count. */
VIS_HD int vis_tracker_add_detections(vis_tracker *t, const omma_detection *dets, int n)
{
    int added = 0;
    t->frames_since_detect = 0;
    for (int d = 0; d < n && t->count < t->opt.max_faces; d++) {
        vis_roi roi = vis_roi_from_detection(&dets[d]);
        omma_box b = vis_roi_box(&roi);
        /* Against every track, the ones this call started included: the
         * decoder's NMS already merged near-duplicates, this catches the rest. */
        if (vis_tracker_overlaps(t, t->count, &b))
            continue;
        vis_track *tr = &t->tracks[t->count++];
        memset(tr, 0, sizeof *tr);
        tr->id = t->next_id++;
        tr->score = dets[d].score;
        tr->roi = roi;
        added++;
    }
    return added;
}

/* Records FaceMesh's result for track i of this frame: landmarks are 468
 * (x, y, z) in frame pixels. A face present enough gets its next ROI from
 * the landmarks; one below min_presence is removed at the frame's end. */
VIS_HD void vis_tracker_update(vis_tracker *t, int i, const float *landmarks, float presence)
{
    if (i < 0 || i >= t->count)
        return;
    vis_track *tr = &t->tracks[i];
    tr->updated = 1;
    tr->presence = presence;
    if (presence >= t->opt.min_presence)
        tr->roi = vis_roi_from_landmarks(landmarks, NULL);
}

/* FaceMesh points whose mean is each detector keypoint, in omma_detection's
 * order: right eye (outer and inner corner), left eye (inner, outer), nose
 * tip, mouth centre (inner lips), right and left ear tragion (the face
 * contour at ear level). */
#define VIS_KEYPOINT_LANDMARKS {{33, 133}, {362, 263}, {1, 1}, {13, 14}, {234, 234}, {454, 454}}

/* The public result for track i of this frame: id and score from the
 * track, landmarks (468 x, y, z in frame pixels) and presence as given,
 * box = the landmarks' bounding box, keypoints from the landmarks (so they
 * follow the face between detections). landmarks may be out->landmarks. */
VIS_HD void vis_tracker_face(const vis_tracker *t, int i, const float *landmarks, float presence,
                             omma_face *out)
{
    const int from[OMMA_FACE_KEYPOINTS][2] = VIS_KEYPOINT_LANDMARKS;
    const vis_track *tr = &t->tracks[i];
    out->id = tr->id;
    out->score = tr->score;
    for (int k = 0; k < OMMA_FACE_KEYPOINTS; k++)
        for (int c = 0; c < 2; c++)
            out->keypoints[k][c] =
                0.5f * (landmarks[3 * from[k][0] + c] + landmarks[3 * from[k][1] + c]);
    if (landmarks != &out->landmarks[0][0])
        memcpy(out->landmarks, landmarks, sizeof out->landmarks);
    out->presence = presence;
    vis_roi_from_landmarks(landmarks, &out->box);
}

/* Ends the frame: removes lost faces and faces not updated, and of two
 * tracks whose ROIs now overlap (overlap_iou) keeps the older one. */
VIS_HD void vis_tracker_end_frame(vis_tracker *t)
{
    int kept = 0;
    for (int i = 0; i < t->count; i++) {
        vis_track *tr = &t->tracks[i];
        if (!tr->updated || !(tr->presence >= t->opt.min_presence))
            continue;
        /* Two tracks that converged on one face: the older (earlier) wins. */
        omma_box b = vis_roi_box(&tr->roi);
        if (vis_tracker_overlaps(t, kept, &b))
            continue;
        t->tracks[kept++] = *tr;
    }
    t->count = kept;
}

#endif
