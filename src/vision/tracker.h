/* Private: MediaPipe's face tracking loop, the state of one camera.
 *
 * Per frame:
 *   if (vis_tracker_begin_frame(t))   -> run the detector, then
 *       vis_tracker_add_detections(t, dets, n)
 *   for each t->tracks[i]: run FaceMesh on t->tracks[i].roi, then
 *       vis_tracker_update(t, i, landmarks, presence)
 *   vis_tracker_end_frame(t)          -> lost faces removed, next ROIs set
 * Pure logic: no engine calls, no allocation. One owner at a time. */
#ifndef OMMA_VISION_TRACKER_H
#define OMMA_VISION_TRACKER_H

#include "omma/face.h"
#include "omma/status.h"
#include "vision/face_roi.h"

#define VIS_TRACKER_MAX_FACES 64

typedef struct vis_tracker_options {
    int max_faces;      /* faces tracked at most (4) */
    int detect_every;   /* also run the detector when this many frames have
                         * passed since it last ran; 0 = only when fewer
                         * faces than max_faces are tracked (0) */
    float overlap_iou;  /* a detection whose ROI overlaps a tracked face's
                         * with IoU >= this is dropped (0.5) */
    float min_presence; /* a face whose presence falls below this is lost (0.5) */
} vis_tracker_options;

typedef struct vis_track {
    int id;
    float score;         /* of the detection that started the track */
    float keypoints[OMMA_FACE_KEYPOINTS][2];
    vis_roi roi;         /* where FaceMesh looks in the current frame */
    int updated;         /* vis_tracker_update called this frame */
    float presence;      /* from the last update */
} vis_track;

typedef struct vis_tracker {
    vis_tracker_options opt;
    vis_track tracks[VIS_TRACKER_MAX_FACES];
    int count;
    int next_id;
    long frame;              /* frames begun */
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
int vis_tracker_begin_frame(vis_tracker *t);

/* Takes the detector's results for this frame (best first): each whose
 * ROI overlaps a tracked face's (overlap_iou) is dropped, as is each beyond
 * max_faces; the others start tracks with new ids. Returns the number of
 * tracks started. Resets the detect_every count. */
int vis_tracker_add_detections(vis_tracker *t, const omma_detection *dets, int n);

/* Records FaceMesh's result for track i of this frame: landmarks are 468
 * (x, y, z) in frame pixels. A face present enough gets its next ROI from
 * the landmarks; one below min_presence is removed at the frame's end. */
void vis_tracker_update(vis_tracker *t, int i, const float *landmarks, float presence);

/* The public result for track i of this frame: id, score, keypoints from
 * the track, landmarks (468 x, y, z in frame pixels) and presence as given,
 * box = the landmarks' bounding box. */
void vis_tracker_face(const vis_tracker *t, int i, const float *landmarks, float presence,
                      omma_face *out);

/* Ends the frame: removes lost faces and faces not updated, and of two
 * tracks whose ROIs now overlap (overlap_iou) keeps the older one. */
void vis_tracker_end_frame(vis_tracker *t);

#endif
