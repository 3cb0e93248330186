/* MediaPipe's SsdAnchorsCalculator for the face detectors (the library's),
 * and decoding one anchor. */
#include "support/blazeface_decode.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "vision/anchors.h"

/* The anchors come from the library (src/vision/anchors.c); this file keeps
 * the one-anchor decode the engine tests use to look at the best anchor. */
static void options(bf_kind kind, vis_anchor_options *opt)
{
    if (kind == BF_FULL_RANGE)
        vis_anchor_options_full_range(opt);
    else
        vis_anchor_options_short_range(opt);
}

int bf_input_size(bf_kind kind)
{
    vis_anchor_options opt;
    options(kind, &opt);
    return opt.input_width;
}

int bf_anchor_count(bf_kind kind)
{
    vis_anchor_options opt;
    int n = 0;
    options(kind, &opt);
    return vis_anchors_generate(&opt, NULL, 0, &n) == OMMA_OK ? n : 0;
}

int bf_anchors(bf_kind kind, float *xy)
{
    vis_anchor_options opt;
    int n = bf_anchor_count(kind);
    vis_anchor *a = n > 0 ? malloc((size_t)n * sizeof *a) : NULL;
    options(kind, &opt);
    if (!a || vis_anchors_generate(&opt, a, n, &n) != OMMA_OK) {
        free(a);
        return 0;
    }
    for (int i = 0; i < n; i++)
        xy[2 * i] = a[i].x, xy[2 * i + 1] = a[i].y;
    free(a);
    return n;
}

float bf_score(float raw)
{
    float r = raw < -100.0f ? -100.0f : raw > 100.0f ? 100.0f : raw;
    return 1.0f / (1.0f + expf(-r));
}

void bf_decode(bf_kind kind, const float *raw, const float anchor_xy[2], float raw_score, int a,
               bf_detection *out)
{
    float s = (float)bf_input_size(kind);
    /* x = raw / size * anchor_w + anchor_x with anchor_w = anchor_h = 1. */
    float cx = raw[0] / s + anchor_xy[0], cy = raw[1] / s + anchor_xy[1];
    float w = raw[2] / s, h = raw[3] / s;
    out->anchor = a;
    out->score = bf_score(raw_score);
    out->box.xmin = cx - w / 2;
    out->box.ymin = cy - h / 2;
    out->box.xmax = cx + w / 2;
    out->box.ymax = cy + h / 2;
    for (int k = 0; k < 6; k++) {
        out->keypoints[k][0] = raw[4 + 2 * k] / s + anchor_xy[0];
        out->keypoints[k][1] = raw[5 + 2 * k] / s + anchor_xy[1];
    }
}

float bf_iou(const bf_box *a, const bf_box *b)
{
    float ix = fminf(a->xmax, b->xmax) - fmaxf(a->xmin, b->xmin);
    float iy = fminf(a->ymax, b->ymax) - fmaxf(a->ymin, b->ymin);
    if (ix <= 0 || iy <= 0)
        return 0.0f;
    float inter = ix * iy;
    float ua = (a->xmax - a->xmin) * (a->ymax - a->ymin) + (b->xmax - b->xmin) * (b->ymax - b->ymin) - inter;
    return ua > 0 ? inter / ua : 0.0f;
}
