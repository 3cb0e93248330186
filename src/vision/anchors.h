/* Private: SSD anchors as MediaPipe's SsdAnchorsCalculator generates them,
 * from its options (the BlazeFace detectors' settings are presets). No
 * state: any thread. */
#ifndef OMMA_VISION_ANCHORS_H
#define OMMA_VISION_ANCHORS_H

#include "omma/status.h"

#define VIS_ANCHOR_MAX_LAYERS 8
#define VIS_ANCHOR_MAX_RATIOS 4

typedef struct vis_anchor_options {
    int input_width, input_height; /* model input in pixels */
    int num_layers;
    int strides[VIS_ANCHOR_MAX_LAYERS]; /* one per layer; equal consecutive
                                         * strides share one feature map */
    float min_scale, max_scale;
    float offset_x, offset_y;          /* anchor centre within its cell */
    float aspect_ratios[VIS_ANCHOR_MAX_RATIOS];
    int num_aspect_ratios;
    float interpolated_scale_aspect_ratio; /* > 0: one more anchor per layer */
    int reduce_boxes_in_lowest_layer;
    int fixed_anchor_size;             /* nonzero: every anchor w = h = 1 */
} vis_anchor_options;

/* An anchor, normalized to the input: centre (x, y) and size (w, h). */
typedef struct vis_anchor {
    float x, y, w, h;
} vis_anchor;

/* face_detection_short_range: 128x128, strides 8, 16, 16, 16, scales
 * 0.1484375..0.75, offsets 0.5, ratio 1 + interpolated 1, fixed size:
 * 16x16x2 + 8x8x6 = 896 anchors. */
void vis_anchor_options_short_range(vis_anchor_options *opt);

/* face_detection_full_range: 192x192, one layer of stride 4, ratio 1, no
 * interpolated anchor, fixed size: 48x48 = 2304 anchors. */
void vis_anchor_options_full_range(vis_anchor_options *opt);

/* pose_detection (MediaPipe's pose_detection_cpu.pbtxt): 224x224, strides
 * 8, 16, 32, 32, 32, scales 0.1484375..0.75, offsets 0.5, ratio 1 +
 * interpolated 1, fixed size: 28x28x2 + 14x14x2 + 7x7x6 = 2254 anchors. */
void vis_anchor_options_pose(vis_anchor_options *opt);

/* Generates the anchors in the order of the model's outputs. With out NULL
 * only counts them. Writes the number into *count; out (when not NULL) must
 * hold `capacity` anchors. Errors: OMMA_ERR_INVALID_ARG for NULL opt/count,
 * option values out of range (sizes, layers, strides, ratios), or more
 * anchors than capacity (the message gives the number needed). */
omma_status vis_anchors_generate(const vis_anchor_options *opt, vis_anchor *out, int capacity,
                                 int *count);

#endif
