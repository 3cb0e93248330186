/* Private: the CPU reference of the FaceMesh crop: a rotated ROI of a frame
 * resampled (bilinear) to the model's input. No shared state: any thread. */
#ifndef OMMA_VISION_CROP_REF_H
#define OMMA_VISION_CROP_REF_H

#include "omma/face.h"
#include "omma/status.h"
#include "vision/face_roi.h"

/* Samples roi of frame into a size x size crop (vis_roi_crop_to_frame;
 * outside the frame the edge pixels are replicated), values in [0, 1], NHWC RGB (size * size
 * * 3 floats). Errors: OMMA_ERR_INVALID_ARG for a bad frame (see
 * vis_frame_check), NULL roi or out, size not in 1..4096, a ROI with a
 * non-finite or non-positive size. */
omma_status vis_crop_ref(const omma_frame *frame, const vis_roi *roi, int size, float *out);

#endif
