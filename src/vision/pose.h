/* Private: BlazePose's stages as MediaPipe's pose graphs run them
 * (mediapipe/modules/pose_detection and pose_landmark):
 * - pose_detection decoding: 2254 SSD anchors (vis_anchor_options_pose),
 *   12 values per anchor (box x, y, w, h, then 4 keypoints x, y, in input
 *   pixels relative to the anchor, scale 224), sigmoid scores clipped at
 *   +-100, minimum score 0.5, weighted non-max suppression at IoU 0.3
 *   (TensorsToDetections + NonMaxSuppression), letterbox undone;
 * - the ROI of a person from two alignment points (AlignmentPointsRects:
 *   centre = point 0 (the hips' middle), size = 2 x |point 1 - point 0|,
 *   rotation that brings point 0 -> point 1 to 90 degrees, i.e. upright),
 *   then RectTransformation scale 1.25, square on the long side. Detection
 *   keypoints 0 and 1 give the first ROI, landmarks 33 and 34 (the model's
 *   auxiliary points) the next frame's;
 * - landmarks (TensorsToLandmarks, 39 x (x, y, z, visibility, presence) in
 *   crop pixels of 256, visibility and presence through a sigmoid),
 *   RefineLandmarksFromHeatmap (7x7 window of the 64x64x39 heatmap, refined
 *   where its best sigmoid confidence >= 0.5), then LandmarkProjection to
 *   frame pixels through the ROI (z scaled like x), and world landmarks
 *   (metres, origin between the hips) turned by the ROI's rotation
 *   (WorldLandmarkProjection).
 * The landmark crop is vis_crop_ref's (edge pixels replicated, values in
 * [0, 1]); the detector's input is vis_preprocess_ref's letterbox ([-1, 1],
 * zero border). Pure functions: any thread. */
#ifndef OMMA_VISION_POSE_H
#define OMMA_VISION_POSE_H

#include "omma/face.h"
#include "omma/pose.h"
#include "omma/status.h"
#include "vision/anchors.h"
#include "vision/face_roi.h"
#include "vision/letterbox.h"

#define VIS_POSE_DETECT_SIZE 224
#define VIS_POSE_ANCHORS 2254
#define VIS_POSE_DETECT_VALUES 12
#define VIS_POSE_KEYPOINTS 4
#define VIS_POSE_LANDMARK_SIZE 256
#define VIS_POSE_RAW_LANDMARKS 39 /* 33 + 2 alignment points + 4 unused */
#define VIS_POSE_HEATMAP 64

/* A person detection in frame pixels. Keypoints: 0 the middle of the hips,
 * 1 a point whose distance from it gives the body's size and whose
 * direction its rotation, 2 the middle of the shoulders, 3 a point above
 * the head (MediaPipe's pose detector). */
typedef struct vis_pose_detection {
    float score;
    omma_box box;
    float keypoints[VIS_POSE_KEYPOINTS][2];
} vis_pose_detection;

typedef struct vis_pose_decode_options {
    float min_score; /* 0.5 */
    float min_suppression; /* 0.3 */
    int max_poses; /* detections out, best first */
} vis_pose_decode_options;

void vis_pose_decode_options_init(vis_pose_decode_options *opt);

/* Decodes the detector's raw outputs (n anchors: raw_boxes 12 floats each,
 * raw_scores 1 logit each) to at most opt->max_poses detections in frame
 * pixels through lb. Errors: OMMA_ERR_INVALID_ARG (NULL pointers, n < 1,
 * options out of range), OMMA_ERR_OUT_OF_MEMORY. On failure *count is 0. */
omma_status vis_pose_detect_decode(const vis_pose_decode_options *opt, const vis_anchor *anchors,
                                   int n, const float *raw_boxes, const float *raw_scores,
                                   const vis_letterbox *lb, vis_pose_detection *out, int *count);

/* The ROI from two alignment points (frame pixels): see the top. */
vis_roi vis_pose_roi_from_points(float x0, float y0, float x1, float y1);

/* The landmark model's raw outputs for one crop. */
typedef struct vis_pose_raw {
    const float *landmarks; /* 39 x 5, crop pixels */
    const float *world; /* 39 x 3, metres */
    const float *heatmap; /* 64 x 64 x 39, logits; NULL: no refinement */
    float flag; /* pose presence, already a probability */
} vis_pose_raw;

/* Fills pose (all but id) from the raw outputs of the crop of roi, and
 * writes the next frame's ROI (from the alignment points 33 and 34) to
 * *next. pose->score is the presence flag. */
void vis_pose_landmarks(const vis_roi *roi, const vis_pose_raw *raw, omma_pose *pose,
                        vis_roi *next);

#endif
