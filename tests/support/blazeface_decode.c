/* MediaPipe's SsdAnchorsCalculator for the face detectors, and decoding. */
#include "support/blazeface_decode.h"

#include <math.h>
#include <stddef.h>

typedef struct layout {
    int size;
    int n_layers;
    int strides[4];
    int anchors_per_layer; /* aspect ratio 1.0, plus the interpolated one if any */
} layout;

static const layout layouts[] = {
    [BF_SHORT_RANGE] = {128, 4, {8, 16, 16, 16}, 2},
    [BF_FULL_RANGE] = {192, 1, {4}, 1},
};

int bf_input_size(bf_kind kind)
{
    return layouts[kind].size;
}

/* Layers with the same stride share one grid; their anchors are
 * interleaved per cell, as the calculator emits them. */
static int generate(bf_kind kind, float *xy)
{
    const layout *l = &layouts[kind];
    int n = 0;
    for (int i = 0; i < l->n_layers;) {
        int j = i;
        while (j < l->n_layers && l->strides[j] == l->strides[i])
            j++;
        int per_cell = l->anchors_per_layer * (j - i);
        int fm = (l->size + l->strides[i] - 1) / l->strides[i];
        for (int y = 0; y < fm; y++)
            for (int x = 0; x < fm; x++)
                for (int k = 0; k < per_cell; k++) {
                    if (xy) {
                        xy[2 * n] = ((float)x + 0.5f) / (float)fm;
                        xy[2 * n + 1] = ((float)y + 0.5f) / (float)fm;
                    }
                    n++;
                }
        i = j;
    }
    return n;
}

int bf_anchor_count(bf_kind kind)
{
    return generate(kind, NULL);
}

int bf_anchors(bf_kind kind, float *xy)
{
    return generate(kind, xy);
}

float bf_score(float raw)
{
    float r = raw < -100.0f ? -100.0f : raw > 100.0f ? 100.0f : raw;
    return 1.0f / (1.0f + expf(-r));
}

void bf_decode(bf_kind kind, const float *raw, const float anchor_xy[2], float raw_score, int a,
               bf_detection *out)
{
    float s = (float)layouts[kind].size;
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
