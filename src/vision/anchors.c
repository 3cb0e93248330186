/* MediaPipe's SsdAnchorsCalculator (mediapipe/calculators/tflite/
 * ssd_anchors_calculator.cc), the parts the face detectors use plus the
 * general ones (anchor sizes from scales and ratios, the reduced lowest
 * layer), so any SSD anchor option set gives MediaPipe's anchors. */
#include "vision/anchors.h"

#include <math.h>
#include <string.h>

#include "core/error.h"

void vis_anchor_options_short_range(vis_anchor_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->input_width = opt->input_height = 128;
    opt->num_layers = 4;
    opt->strides[0] = 8;
    opt->strides[1] = opt->strides[2] = opt->strides[3] = 16;
    opt->min_scale = 0.1484375f;
    opt->max_scale = 0.75f;
    opt->offset_x = opt->offset_y = 0.5f;
    opt->aspect_ratios[0] = 1.0f;
    opt->num_aspect_ratios = 1;
    opt->interpolated_scale_aspect_ratio = 1.0f;
    opt->fixed_anchor_size = 1;
}

void vis_anchor_options_full_range(vis_anchor_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->input_width = opt->input_height = 192;
    opt->num_layers = 1;
    opt->strides[0] = 4;
    opt->min_scale = 0.1484375f;
    opt->max_scale = 0.75f;
    opt->offset_x = opt->offset_y = 0.5f;
    opt->aspect_ratios[0] = 1.0f;
    opt->num_aspect_ratios = 1;
    opt->interpolated_scale_aspect_ratio = 0.0f;
    opt->fixed_anchor_size = 1;
}

void vis_anchor_options_pose(vis_anchor_options *opt)
{
    vis_anchor_options_short_range(opt);
    opt->input_width = opt->input_height = 224;
    opt->num_layers = 5;
    opt->strides[0] = 8;
    opt->strides[1] = 16;
    opt->strides[2] = opt->strides[3] = opt->strides[4] = 32;
}

static float layer_scale(const vis_anchor_options *opt, int layer)
{
    if (opt->num_layers == 1)
        return (opt->min_scale + opt->max_scale) * 0.5f;
    return opt->min_scale +
           (opt->max_scale - opt->min_scale) * (float)layer / (float)(opt->num_layers - 1);
}

static omma_status check_options(const vis_anchor_options *opt)
{
    if (opt->input_width <= 0 || opt->input_height <= 0 || opt->input_width > 8192 ||
        opt->input_height > 8192)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "anchor input size %dx%d is not in 1..8192",
                         opt->input_width, opt->input_height);
    if (opt->num_layers < 1 || opt->num_layers > VIS_ANCHOR_MAX_LAYERS)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "anchor layers %d not in 1..%d", opt->num_layers,
                         VIS_ANCHOR_MAX_LAYERS);
    for (int i = 0; i < opt->num_layers; i++)
        if (opt->strides[i] < 1)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "anchor stride %d of layer %d", opt->strides[i],
                             i);
    if (opt->num_aspect_ratios < 1 || opt->num_aspect_ratios > VIS_ANCHOR_MAX_RATIOS)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "anchor aspect ratio count %d not in 1..%d",
                         opt->num_aspect_ratios, VIS_ANCHOR_MAX_RATIOS);
    for (int i = 0; i < opt->num_aspect_ratios; i++)
        if (!(opt->aspect_ratios[i] > 0.0f))
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "anchor aspect ratio %g", opt->aspect_ratios[i]);
    return OMMA_OK;
}

omma_status vis_anchors_generate(const vis_anchor_options *opt, vis_anchor *out, int capacity,
                                 int *count)
{
    if (count)
        *count = 0;
    if (!opt || !count)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "NULL anchor options or count");
    OMMA_TRY(check_options(opt));
    /* At most (ratios + 1) anchors per layer, all layers on one grid. */
    enum { MAX_PER_CELL = VIS_ANCHOR_MAX_LAYERS * (VIS_ANCHOR_MAX_RATIOS + 1) };
    long n = 0;
    for (int layer = 0; layer < opt->num_layers;) {
        float ws[MAX_PER_CELL], hs[MAX_PER_CELL];
        int per_cell = 0;
        int last = layer;
        while (last < opt->num_layers && opt->strides[last] == opt->strides[layer]) {
            float scale = layer_scale(opt, last);
            if (last == 0 && opt->reduce_boxes_in_lowest_layer) {
                static const float ratios[3] = {1.0f, 2.0f, 0.5f};
                static const float scales[3] = {0.1f, 1.0f, 1.0f};
                for (int k = 0; k < 3; k++) {
                    float r = sqrtf(ratios[k]);
                    float s = k == 0 ? scales[0] : scale;
                    ws[per_cell] = s * r, hs[per_cell] = s / r, per_cell++;
                }
            } else {
                for (int k = 0; k < opt->num_aspect_ratios; k++) {
                    float r = sqrtf(opt->aspect_ratios[k]);
                    ws[per_cell] = scale * r, hs[per_cell] = scale / r, per_cell++;
                }
                if (opt->interpolated_scale_aspect_ratio > 0.0f) {
                    float next = last == opt->num_layers - 1 ? 1.0f : layer_scale(opt, last + 1);
                    float s = sqrtf(scale * next), r = sqrtf(opt->interpolated_scale_aspect_ratio);
                    ws[per_cell] = s * r, hs[per_cell] = s / r, per_cell++;
                }
            }
            last++;
        }
        int stride = opt->strides[layer];
        int fm_h = (int)ceilf((float)opt->input_height / (float)stride);
        int fm_w = (int)ceilf((float)opt->input_width / (float)stride);
        for (int y = 0; y < fm_h; y++)
            for (int x = 0; x < fm_w; x++)
                for (int k = 0; k < per_cell; k++, n++) {
                    if (!out || n >= capacity)
                        continue;
                    vis_anchor *a = &out[n];
                    a->x = ((float)x + opt->offset_x) / (float)fm_w;
                    a->y = ((float)y + opt->offset_y) / (float)fm_h;
                    a->w = opt->fixed_anchor_size ? 1.0f : ws[k];
                    a->h = opt->fixed_anchor_size ? 1.0f : hs[k];
                }
        layer = last;
    }
    if (n > 1 << 24)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%ld anchors: too many", n);
    if (out && n > capacity)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%ld anchors do not fit in %d", n, capacity);
    *count = (int)n;
    return OMMA_OK;
}
