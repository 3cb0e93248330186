/* Private: the CPU reference of the detector preprocessing: a frame in any
 * omma_pixel_format -> letterboxed, resized, normalized NHWC float input.
 * No shared state: any thread. */
#ifndef OMMA_VISION_PREPROCESS_REF_H
#define OMMA_VISION_PREPROCESS_REF_H

#include "omma/face.h"
#include "omma/status.h"
#include "vision/letterbox.h"

/* Resizes the frame, aspect kept, into a size x size RGB image centred with
 * a black border (MediaPipe's keep_aspect_ratio with a zero border, applied
 * to the pixels: the border reads pixel value 0, i.e. `bias` after the
 * normalization), bilinear at pixel centres (no antialiasing), and writes
 * value * scale + bias per channel, NHWC, into out (size * size * 3 floats).
 * scale 1/127.5, bias -1 gives the detectors' [-1, 1]. The transform from
 * frame to input pixels goes to *lb (may be NULL).
 * Errors: OMMA_ERR_INVALID_ARG for a bad frame (see vis_frame_check), NULL
 * out, size not in 1..4096. */
omma_status vis_preprocess_ref(const omma_frame *frame, int size, float scale, float bias,
                               float *out, vis_letterbox *lb);

#endif
