/* Test support: MediaPipe's SSD anchors for the BlazeFace detectors (made by
 * the library's src/vision/anchors.c) and the decoding of one anchor's raw
 * outputs (../shared/REFERENCE.md); the library's full decoder with weighted
 * NMS is src/vision/detect_decode.c. */
#ifndef OMMA_TESTS_BLAZEFACE_DECODE_H
#define OMMA_TESTS_BLAZEFACE_DECODE_H

typedef enum bf_kind {
    BF_SHORT_RANGE, /* 128x128, strides 8,16,16,16: 896 anchors */
    BF_FULL_RANGE,  /* 192x192, stride 4: 2304 anchors */
} bf_kind;

/* Input size in pixels (128 or 192), also the decode scale. */
int bf_input_size(bf_kind kind);

/* Number of anchors of a detector. */
int bf_anchor_count(bf_kind kind);

/* Writes the anchor centres (x, y normalized to [0, 1]) in the model's
 * output order into xy (2 * bf_anchor_count floats). Anchor size is fixed
 * (w = h = 1). Returns the count. */
int bf_anchors(bf_kind kind, float *xy);

/* sigmoid(clamp(raw, -100, 100)). */
float bf_score(float raw);

typedef struct bf_box {
    float xmin, ymin, xmax, ymax; /* normalized to the input image */
} bf_box;

typedef struct bf_detection {
    int anchor;
    float score;
    bf_box box;
    float keypoints[6][2]; /* right eye, left eye, nose, mouth, right ear, left ear */
} bf_detection;

/* Decodes anchor a: raw = its 16 regressor values, anchor = its centre. */
void bf_decode(bf_kind kind, const float *raw16, const float anchor_xy[2], float raw_score,
               int a, bf_detection *out);

/* Intersection over union of two boxes (0 when either is empty). */
float bf_iou(const bf_box *a, const bf_box *b);

#endif
