/* Private: MediaPipe's face tracking loop, the state of one camera.
 *
 * Per frame:
 *   if (vis_tracker_begin_frame(t))   -> run the detector, then
 *       vis_tracker_add_detections(t, dets, n)
 *   for each t->tracks[i]: run FaceMesh on t->tracks[i].roi, then
 *       vis_tracker_update(t, i, landmarks, presence)
 *   vis_tracker_end_frame(t)          -> lost faces removed, next ROIs set
 * Unlike MediaPipe's loop, which follows whatever its landmarks land on,
 * it notices scene cuts, where another face took the place of a tracked
 * one: FaceMesh, run on the old ROI, then sees part of the new face, with
 * full presence, and its ROI drifts over to it frame by frame, taking the
 * old id along (the new face's detection overlaps the track and is
 * dropped) or leaving a stale box beside the new track. A track ends on
 * the frame (vis_tracker_update) when
 *   - its ROI from this frame's landmarks jumped or changed size more than
 *     a face does between frames (cut_move), or
 *   - the detector ran on the frame, found a face overlapping the track's
 *     landmarks, and no face whose eyes lie on the landmarks' eyes
 *     (cut_agree): the detector and FaceMesh see different faces there.
 *     Both look at the same frame, so fast motion does not matter; or
 *   - its presence fell below cut_presence while the detector found a face
 *     elsewhere and none on the track.
 * The new face then gets a new id when the detector finds it.
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
/* A detection whose box overlaps a track's landmark box with at least this
 * IoU is "on" the track (cut_agree). */
#define VIS_CUT_OVERLAP 0.1f

typedef struct vis_tracker_options {
    int max_faces; /* faces tracked at most (4) */
    int detect_every; /* also run the detector when this many frames have
                       * passed since it last ran; 0 = only when fewer
                       * faces than max_faces are tracked (0) */
    float overlap_iou; /* a detection whose ROI overlaps a tracked face's
                        * with IoU >= this is dropped (0.5) */
    float min_presence; /* a face whose presence falls below this is lost (0.5) */
    float cut_move; /* scene cut: a track whose ROI from this frame's
                     * landmarks moved more than this times its side since
                     * the last frame, or whose side changed by more than
                     * this fraction, ends; 0 = never (0.3) */
    float cut_agree; /* scene cut: a detection agrees with a track's
                      * landmarks when each of its eyes lies within this
                      * times the landmarks' box side of theirs; a track
                      * that detections overlap (VIS_CUT_OVERLAP) but none
                      * agrees with ends; 0 = never (0.22: the same
                      * face's eyes differ by ~0.03, up to ~0.17 seen on
                      * a photo panned over a canvas; the cut of
                      * testdata/faces_cut.mp4 is missed from ~0.3) */
    float cut_presence; /* scene cut: a track whose presence falls below
                         * this on a frame where the detector found a face
                         * elsewhere and none on the track ends; 0 = never
                         * (0.9) */
} vis_tracker_options;

typedef struct vis_track {
    int id;
    float score; /* of the detection that started the track */
    vis_roi roi; /* where FaceMesh looks in the current frame */
    int updated; /* vis_tracker_update called this frame */
    float presence; /* from the last update */
    int detected; /* a detection of this frame overlaps roi (overlap_iou),
                   * or the track started this frame */
    int cut; /* a scene cut replaced its face this frame: it ends */
    int age; /* frames it ended kept, saturating (0: started this frame) */
} vis_track;

/* What the cut checks keep of a detection of the frame. */
typedef struct vis_seen_face {
    omma_box box;
    float eyes[2][2]; /* keypoints 0 and 1: right, left eye */
} vis_seen_face;

typedef struct vis_tracker {
    vis_tracker_options opt;
    vis_track tracks[VIS_TRACKER_MAX_FACES];
    int count;
    int next_id;
    long frame; /* frames begun */
    long frames_since_detect; /* frames begun since the detector last ran */
    int detector_ran; /* on this frame */
    int faces_elsewhere; /* this frame's detections that overlap no track
                          * it began with */
    int n_seen;
    vis_seen_face seen[VIS_TRACKER_MAX_FACES]; /* this frame's detections */
} vis_tracker;

/* Defaults as in the comments above. */
void vis_tracker_options_init(vis_tracker_options *opt);

/* Starts an empty tracker (opt NULL: defaults). Errors:
 * OMMA_ERR_INVALID_ARG for NULL t, max_faces not in 1..64, detect_every <
 * 0, thresholds outside [0, 1], cut_move outside [0, 10], cut_agree
 * outside [0, 1]. */
omma_status vis_tracker_init(vis_tracker *t, const vis_tracker_options *opt);

/* Starts a frame; returns nonzero when the detector must run on it: fewer
 * faces tracked than max_faces, or detect_every frames since it last ran. */
VIS_HD int vis_tracker_begin_frame(vis_tracker *t)
{
    t->frame++;
    t->frames_since_detect++;
    t->detector_ran = 0;
    t->faces_elsewhere = 0;
    t->n_seen = 0;
    for (int i = 0; i < t->count; i++) {
        t->tracks[i].updated = 0;
        t->tracks[i].detected = 0;
        t->tracks[i].cut = 0;
    }
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

/* Marks detected the first n_tracks tracks whose ROI b overlaps
 * (overlap_iou); returns how many. */
VIS_HD int vis_tracker_mark_detected(vis_tracker *t, int n_tracks, const omma_box *b)
{
    int hits = 0;
    for (int i = 0; i < n_tracks; i++) {
        omma_box tb = vis_roi_box(&t->tracks[i].roi);
        if (vis_box_iou(&tb, b) >= t->opt.overlap_iou) {
            t->tracks[i].detected = 1;
            hits++;
        }
    }
    return hits;
}

/* Takes the detector's results for this frame (best first): each whose
 * ROI overlaps a tracked face's (overlap_iou) is dropped, as is each beyond
 * max_faces; the others start tracks with new ids. Tracks a detection
 * overlaps are marked detected; detections that overlap none of the tracks
 * the frame began with are counted in faces_elsewhere (scene cuts). Returns
 * the number of tracks started. Resets the detect_every count. */
VIS_HD int vis_tracker_add_detections(vis_tracker *t, const omma_detection *dets, int n)
{
    int added = 0, tracked = t->count;
    t->frames_since_detect = 0;
    t->detector_ran = 1;
    for (int d = 0; d < n; d++) {
        if (t->n_seen < VIS_TRACKER_MAX_FACES) {
            vis_seen_face *s = &t->seen[t->n_seen++];
            s->box = dets[d].box;
            for (int k = 0; k < 2; k++)
                for (int c = 0; c < 2; c++)
                    s->eyes[k][c] = dets[d].keypoints[k][c];
        }
        vis_roi roi = vis_roi_from_detection(&dets[d]);
        omma_box b = vis_roi_box(&roi);
        if (!vis_tracker_mark_detected(t, tracked, &b))
            t->faces_elsewhere++;
        /* Against every track, the ones this call started included: the
         * decoder's NMS already merged near-duplicates, this catches the rest. */
        if (t->count >= t->opt.max_faces || vis_tracker_overlaps(t, t->count, &b))
            continue;
        vis_track *tr = &t->tracks[t->count++];
        memset(tr, 0, sizeof *tr);
        tr->id = t->next_id++;
        tr->score = dets[d].score;
        tr->roi = roi;
        tr->detected = 1;
        added++;
    }
    return added;
}

/* Nonzero when the ROI next, placed from this frame's landmarks, cannot be
 * the face of the ROI prev of the last frame (cut_move): a face moves and
 * scales by a fraction of its size between frames; another face after a
 * scene cut, which FaceMesh partly sees in the old ROI, pulls the ROI away
 * or shrinks it. */
VIS_HD int vis_tracker_jumped(const vis_tracker_options *o, const vis_roi *prev,
                              const vis_roi *next)
{
    if (!(o->cut_move > 0.0f) || !(prev->w > 0.0f))
        return 0;
    float dx = next->cx - prev->cx, dy = next->cy - prev->cy;
    float limit = o->cut_move * prev->w;
    return !(dx * dx + dy * dy <= limit * limit) || !(fabsf(next->w - prev->w) <= limit);
}

/* Nonzero when this frame's detections say that the face under the
 * landmarks lm (their box lbox) is not the tracked one (cut_agree,
 * cut_presence; see the top). */
VIS_HD int vis_tracker_replaced(const vis_tracker *t, const vis_track *tr, const float *lm,
                                const omma_box *lbox)
{
    if (!t->detector_ran)
        return 0;
    /* The landmarks' eyes, as vis_tracker_face's keypoints 0 and 1. */
    float eyes[2][2] = {
        {0.5f * (lm[3 * 33] + lm[3 * 133]), 0.5f * (lm[3 * 33 + 1] + lm[3 * 133 + 1])},
        {0.5f * (lm[3 * 362] + lm[3 * 263]), 0.5f * (lm[3 * 362 + 1] + lm[3 * 263 + 1])}};
    float side = fmaxf(lbox->xmax - lbox->xmin, lbox->ymax - lbox->ymin);
    float limit = t->opt.cut_agree * side;
    int on = 0;
    for (int d = 0; d < t->n_seen; d++) {
        const vis_seen_face *s = &t->seen[d];
        if (!(vis_box_iou(&s->box, lbox) >= VIS_CUT_OVERLAP))
            continue;
        on = 1;
        int agree = 1;
        for (int k = 0; k < 2; k++) {
            float dx = s->eyes[k][0] - eyes[k][0], dy = s->eyes[k][1] - eyes[k][1];
            agree = agree && dx * dx + dy * dy <= limit * limit;
        }
        if (agree)
            return 0;
    }
    if (on)
        return t->opt.cut_agree > 0.0f;
    return !tr->detected && t->faces_elsewhere > 0 && tr->presence < t->opt.cut_presence;
}

/* Records FaceMesh's result for track i of this frame: landmarks are 468
 * (x, y, z) in frame pixels. A face present enough gets its next ROI from
 * the landmarks; one below min_presence is removed at the frame's end, as
 * is one a scene cut replaced (vis_tracker_jumped, vis_tracker_replaced;
 * not checked on the frame a track starts, whose ROI came from a
 * detection). */
VIS_HD void vis_tracker_update(vis_tracker *t, int i, const float *landmarks, float presence)
{
    if (i < 0 || i >= t->count)
        return;
    vis_track *tr = &t->tracks[i];
    tr->updated = 1;
    tr->presence = presence;
    if (!(presence >= t->opt.min_presence))
        return;
    omma_box lbox;
    vis_roi next = vis_roi_from_landmarks(landmarks, &lbox);
    if (tr->age > 0 && (vis_tracker_jumped(&t->opt, &tr->roi, &next) ||
                        vis_tracker_replaced(t, tr, landmarks, &lbox)))
        tr->cut = 1;
    else
        tr->roi = next;
}

/* FaceMesh points whose mean is each detector keypoint, in omma_detection's
 * order: right eye (outer and inner corner), left eye (inner, outer), nose
 * tip, mouth centre (inner lips), right and left ear tragion (the face
 * contour at ear level). */
#define VIS_KEYPOINT_LANDMARKS                                                                     \
    {                                                                                              \
        {33, 133}, {362, 263}, {1, 1}, {13, 14}, {234, 234},                                       \
        {                                                                                          \
            454, 454                                                                               \
        }                                                                                          \
    }

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
    out->n_landmarks = OMMA_FACE_LANDMARKS;
    for (int k = 0; k < OMMA_FACE_IRIS_LANDMARKS; k++)
        out->irises[k][0] = out->irises[k][1] = out->irises[k][2] = 0.0f;
    out->has_head_pose = 0;
}

/* Ends the frame: removes lost faces and faces not updated, and of two
 * tracks whose ROIs now overlap (overlap_iou) keeps the older one. */
VIS_HD void vis_tracker_end_frame(vis_tracker *t)
{
    int kept = 0;
    for (int i = 0; i < t->count; i++) {
        vis_track *tr = &t->tracks[i];
        if (!tr->updated || !(tr->presence >= t->opt.min_presence) || tr->cut)
            continue;
        tr->age += tr->age < (1 << 30); /* saturates: only 0 vs more matters */
        /* Two tracks that converged on one face: the older (earlier) wins. */
        omma_box b = vis_roi_box(&tr->roi);
        if (vis_tracker_overlaps(t, kept, &b))
            continue;
        t->tracks[kept++] = *tr;
    }
    t->count = kept;
}

#endif
