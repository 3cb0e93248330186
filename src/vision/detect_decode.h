/* Private: the CPU reference of the detector's decoding: raw SSD outputs
 * -> scored boxes and keypoints -> MediaPipe's weighted non-maximum
 * suppression -> detections in frame pixels. No shared state: any thread. */
#ifndef OMMA_VISION_DETECT_DECODE_H
#define OMMA_VISION_DETECT_DECODE_H

#include "omma/face.h"
#include "omma/status.h"
#include "vision/anchors.h"
#include "vision/letterbox.h"

typedef struct vis_decode_options {
    float input_size;      /* x, y, w, h scales: the input side (128 or 192) */
    float score_clip;      /* logits clamped to +-this before the sigmoid (100) */
    float min_score;       /* keep detections scoring >= this (0.5) */
    float min_suppression; /* a box joins a cluster when its IoU with the
                            * cluster's best is > this (0.3) */
    int max_faces;         /* at most this many detections out (4) */
} vis_decode_options;

/* The defaults above, for an input of input_size pixels. */
void vis_decode_options_init(vis_decode_options *opt, int input_size);

/* Decodes n anchors: raw_boxes holds 16 floats per anchor (x, y, w, h, then
 * 6 keypoints x, y; in input pixels relative to the anchor), raw_scores one
 * logit per anchor. Boxes and keypoints are x = raw / input_size * anchor.w
 * + anchor.x (likewise y and h), score = sigmoid(clamp(logit)). Detections
 * below min_score are dropped, the rest sorted by score and clustered: a
 * cluster is the best remaining detection and every remaining one whose IoU
 * with it exceeds min_suppression; its box and keypoints are the
 * score-weighted mean of the members', its score the best one's (MediaPipe's
 * WEIGHTED non-max suppression). Up to max_faces clusters, best first, are
 * written to out (capacity max_faces) mapped back through the letterbox lb
 * to frame pixels; *count gets their number.
 * Errors: OMMA_ERR_INVALID_ARG (NULL pointers, n < 1, bad option values),
 * OMMA_ERR_OUT_OF_MEMORY (scratch of n entries). On failure *count is 0. */
omma_status vis_detect_decode(const vis_decode_options *opt, const vis_anchor *anchors, int n,
                              const float *raw_boxes, const float *raw_scores,
                              const vis_letterbox *lb, omma_detection *out, int *count);

/* Intersection over union of two boxes; 0 when either is empty. */
float vis_box_iou(const omma_box *a, const omma_box *b);

#endif
