/* Private: the detector's decoding: raw SSD outputs -> scored boxes and
 * keypoints -> MediaPipe's weighted non-maximum suppression -> detections
 * in frame pixels. vis_detect_decode is the CPU reference; its steps
 * (VIS_HD) are shared with the CUDA kernel. No shared state: any thread. */
#ifndef OMMA_VISION_DETECT_DECODE_H
#define OMMA_VISION_DETECT_DECODE_H

#include <math.h>

#include "omma/face.h"
#include "omma/status.h"
#include "vision/anchors.h"
#include "vision/hd.h"
#include "vision/letterbox.h"

typedef struct vis_decode_options {
    float input_size; /* x, y, w, h scales: the input side (128 or 192) */
    float score_clip; /* logits clamped to +-this before the sigmoid (100) */
    float min_score; /* keep detections scoring >= this (0.5) */
    float min_suppression; /* a box joins a cluster when its IoU with the
                            * cluster's best is > this (0.3) */
    int max_faces; /* at most this many detections out (4) */
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
VIS_HD float vis_box_iou(const omma_box *a, const omma_box *b)
{
    float ix = fminf(a->xmax, b->xmax) - fmaxf(a->xmin, b->xmin);
    float iy = fminf(a->ymax, b->ymax) - fmaxf(a->ymin, b->ymin);
    if (!(ix > 0.0f && iy > 0.0f))
        return 0.0f;
    float inter = ix * iy;
    float area_a = (a->xmax - a->xmin) * (a->ymax - a->ymin);
    float area_b = (b->xmax - b->xmin) * (b->ymax - b->ymin);
    float uni = area_a + area_b - inter;
    return uni > 0.0f ? inter / uni : 0.0f;
}

/* One decoded anchor, normalized to the input. */
typedef struct vis_candidate {
    int anchor;
    float score;
    omma_box box;
    float kp[OMMA_FACE_KEYPOINTS][2];
} vis_candidate;

/* Sorts m candidates by vis_candidate_before (host only). */
void vis_sort_candidates(vis_candidate *cand, int m);

/* The score of a logit: sigmoid(clamp(logit, +-clip)). */
VIS_HD float vis_detection_score(float logit, float clip)
{
    float r = fminf(fmaxf(logit, -clip), clip);
    return 1.0f / (1.0f + expf(-r));
}

/* Candidate a (score given) from its raw values and its anchor: the box
 * (4 values), then nkp keypoints (x, y), in pixels of an s x s input. */
VIS_HD void vis_decode_box_keypoints(float s, const vis_anchor *an, int a, float score,
                                     const float *raw, int nkp, vis_candidate *c)
{
    float cx = raw[0] / s * an->w + an->x, cy = raw[1] / s * an->h + an->y;
    float w = raw[2] / s * an->w, h = raw[3] / s * an->h;
    c->anchor = a;
    c->score = score;
    c->box.xmin = cx - w * 0.5f;
    c->box.ymin = cy - h * 0.5f;
    c->box.xmax = cx + w * 0.5f;
    c->box.ymax = cy + h * 0.5f;
    for (int k = 0; k < nkp; k++) {
        c->kp[k][0] = raw[4 + 2 * k] / s * an->w + an->x;
        c->kp[k][1] = raw[5 + 2 * k] / s * an->h + an->y;
    }
}

/* A face candidate from its 16 raw values and its anchor. */
VIS_HD void vis_decode_anchor(const vis_decode_options *opt, const vis_anchor *an, int a,
                              float score, const float *raw, vis_candidate *c)
{
    vis_decode_box_keypoints(opt->input_size, an, a, score, raw, OMMA_FACE_KEYPOINTS, c);
}

/* The order of the NMS: best score first; equal scores in anchor order, so
 * every backend agrees. Nonzero when a comes before b. */
VIS_HD int vis_candidate_before(const vis_candidate *a, const vis_candidate *b)
{
    return a->score > b->score || (a->score == b->score && a->anchor < b->anchor);
}

/* A cluster's detection, mapped back through the letterbox to frame pixels. */
VIS_HD void vis_candidate_to_frame(const vis_letterbox *lb, float size, const vis_candidate *c,
                                   omma_detection *d)
{
    d->score = c->score;
    d->box.xmin = vis_letterbox_to_frame_x(lb, c->box.xmin * size);
    d->box.ymin = vis_letterbox_to_frame_y(lb, c->box.ymin * size);
    d->box.xmax = vis_letterbox_to_frame_x(lb, c->box.xmax * size);
    d->box.ymax = vis_letterbox_to_frame_y(lb, c->box.ymax * size);
    for (int k = 0; k < OMMA_FACE_KEYPOINTS; k++) {
        d->keypoints[k][0] = vis_letterbox_to_frame_x(lb, c->kp[k][0] * size);
        d->keypoints[k][1] = vis_letterbox_to_frame_y(lb, c->kp[k][1] * size);
    }
}

/* One step of MediaPipe's WEIGHTED non-max suppression over m candidates
 * sorted by vis_candidate_before: the cluster of cand[0] (every candidate
 * whose IoU with it exceeds min_suppression) becomes *best, its box and
 * first nkp keypoints the score-weighted means; the candidates outside the
 * cluster are compacted to the front of cand and their number returned. A
 * degenerate cand[0] (IoU 0 with itself) joins no cluster: it is dropped
 * alone, so every step takes at least one candidate out. */
VIS_HD int vis_nms_take_cluster(vis_candidate *cand, int m, int nkp, float min_suppression,
                                vis_candidate *best)
{
    vis_candidate sum;
    float total = 0.0f;
    int rest = 0;
    *best = cand[0];
    sum.box.xmin = sum.box.ymin = sum.box.xmax = sum.box.ymax = 0.0f;
    for (int k = 0; k < nkp; k++)
        sum.kp[k][0] = sum.kp[k][1] = 0.0f;
    for (int i = 0; i < m; i++) {
        if (vis_box_iou(&cand[i].box, &best->box) > min_suppression) {
            float w = cand[i].score;
            total += w;
            sum.box.xmin += cand[i].box.xmin * w;
            sum.box.ymin += cand[i].box.ymin * w;
            sum.box.xmax += cand[i].box.xmax * w;
            sum.box.ymax += cand[i].box.ymax * w;
            for (int k = 0; k < nkp; k++) {
                sum.kp[k][0] += cand[i].kp[k][0] * w;
                sum.kp[k][1] += cand[i].kp[k][1] * w;
            }
        } else {
            cand[rest++] = cand[i];
        }
    }
    if (total > 0.0f) {
        best->box.xmin = sum.box.xmin / total;
        best->box.ymin = sum.box.ymin / total;
        best->box.xmax = sum.box.xmax / total;
        best->box.ymax = sum.box.ymax / total;
        for (int k = 0; k < nkp; k++) {
            best->kp[k][0] = sum.kp[k][0] / total;
            best->kp[k][1] = sum.kp[k][1] / total;
        }
    }
    if (rest == m) {
        for (int i = 1; i < m; i++)
            cand[i - 1] = cand[i];
        rest = m - 1;
    }
    return rest;
}

/* MediaPipe's WEIGHTED non-max suppression over m sorted face candidates
 * (cand is compacted in place as clusters are taken out): up to
 * opt->max_faces detections to out, best first; returns their number. */
VIS_HD int vis_weighted_nms(const vis_decode_options *opt, const vis_letterbox *lb,
                            vis_candidate *cand, int m, omma_detection *out)
{
    int found = 0;
    while (m > 0 && found < opt->max_faces) {
        vis_candidate best;
        m = vis_nms_take_cluster(cand, m, OMMA_FACE_KEYPOINTS, opt->min_suppression, &best);
        vis_candidate_to_frame(lb, opt->input_size, &best, &out[found++]);
    }
    return found;
}

#endif
