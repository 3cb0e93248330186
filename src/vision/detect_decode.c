/* MediaPipe's TensorsToDetectionsCalculator (box decoding, sigmoid score
 * with clipping, threshold), NonMaxSuppressionCalculator in WEIGHTED mode
 * with IoU overlap, and DetectionLetterboxRemovalCalculator. */
#include "vision/detect_decode.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

typedef struct candidate {
    int anchor;
    float score;
    omma_box box; /* normalized to the input */
    float kp[OMMA_FACE_KEYPOINTS][2];
} candidate;

void vis_decode_options_init(vis_decode_options *opt, int input_size)
{
    opt->input_size = (float)input_size;
    opt->score_clip = 100.0f;
    opt->min_score = 0.5f;
    opt->min_suppression = 0.3f;
    opt->max_faces = 4;
}

float vis_box_iou(const omma_box *a, const omma_box *b)
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

/* Best score first; equal scores in anchor order, so every backend agrees. */
static int by_score(const void *pa, const void *pb)
{
    const candidate *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return (a->anchor > b->anchor) - (a->anchor < b->anchor);
}

static void decode_one(const vis_decode_options *opt, const vis_anchor *an, const float *raw,
                       candidate *c)
{
    float s = opt->input_size;
    float cx = raw[0] / s * an->w + an->x, cy = raw[1] / s * an->h + an->y;
    float w = raw[2] / s * an->w, h = raw[3] / s * an->h;
    c->box.xmin = cx - w * 0.5f;
    c->box.ymin = cy - h * 0.5f;
    c->box.xmax = cx + w * 0.5f;
    c->box.ymax = cy + h * 0.5f;
    for (int k = 0; k < OMMA_FACE_KEYPOINTS; k++) {
        c->kp[k][0] = raw[4 + 2 * k] / s * an->w + an->x;
        c->kp[k][1] = raw[5 + 2 * k] / s * an->h + an->y;
    }
}

static void to_frame(const vis_letterbox *lb, float size, const candidate *c, omma_detection *d)
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

omma_status vis_detect_decode(const vis_decode_options *opt, const vis_anchor *anchors, int n,
                              const float *raw_boxes, const float *raw_scores,
                              const vis_letterbox *lb, omma_detection *out, int *count)
{
    if (count)
        *count = 0;
    if (!opt || !anchors || !raw_boxes || !raw_scores || !lb || !out || !count)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "NULL argument to the detection decoder");
    if (n < 1)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%d anchors", n);
    if (!(opt->input_size > 0.0f) || !(opt->score_clip > 0.0f) || opt->max_faces < 1 ||
        !(opt->min_suppression >= 0.0f && opt->min_suppression <= 1.0f) ||
        !(lb->scale > 0.0f))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "decode options: input size %g, score clip %g, max faces %d, "
                         "suppression %g, letterbox scale %g",
                         opt->input_size, opt->score_clip, opt->max_faces, opt->min_suppression,
                         lb->scale);
    candidate *cand = malloc((size_t)n * sizeof *cand);
    if (!cand)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "decoder scratch for %d anchors", n);
    int m = 0;
    for (int a = 0; a < n; a++) {
        float r = fminf(fmaxf(raw_scores[a], -opt->score_clip), opt->score_clip);
        float score = 1.0f / (1.0f + expf(-r));
        if (!(score >= opt->min_score))
            continue;
        cand[m].anchor = a;
        cand[m].score = score;
        decode_one(opt, &anchors[a], raw_boxes + (size_t)16 * (size_t)a, &cand[m]);
        m++;
    }
    qsort(cand, (size_t)m, sizeof *cand, by_score);

    /* Weighted NMS over the sorted list: cand[0..m) are the remaining
     * detections, compacted in place as clusters are taken out. */
    int found = 0;
    while (m > 0 && found < opt->max_faces) {
        candidate best = cand[0], sum = {0};
        float total = 0.0f;
        int rest = 0;
        for (int i = 0; i < m; i++) {
            if (vis_box_iou(&cand[i].box, &best.box) > opt->min_suppression) {
                float w = cand[i].score;
                total += w;
                sum.box.xmin += cand[i].box.xmin * w;
                sum.box.ymin += cand[i].box.ymin * w;
                sum.box.xmax += cand[i].box.xmax * w;
                sum.box.ymax += cand[i].box.ymax * w;
                for (int k = 0; k < OMMA_FACE_KEYPOINTS; k++) {
                    sum.kp[k][0] += cand[i].kp[k][0] * w;
                    sum.kp[k][1] += cand[i].kp[k][1] * w;
                }
            } else {
                cand[rest++] = cand[i];
            }
        }
        if (total > 0.0f) {
            best.box.xmin = sum.box.xmin / total;
            best.box.ymin = sum.box.ymin / total;
            best.box.xmax = sum.box.xmax / total;
            best.box.ymax = sum.box.ymax / total;
            for (int k = 0; k < OMMA_FACE_KEYPOINTS; k++) {
                best.kp[k][0] = sum.kp[k][0] / total;
                best.kp[k][1] = sum.kp[k][1] / total;
            }
        }
        to_frame(lb, opt->input_size, &best, &out[found++]);
        /* A degenerate best box (IoU 0 with itself) joins no cluster: drop
         * it alone so the loop always progresses. */
        if (rest == m) {
            memmove(cand, cand + 1, (size_t)(m - 1) * sizeof *cand);
            rest = m - 1;
        }
        m = rest;
    }
    free(cand);
    *count = found;
    return OMMA_OK;
}
