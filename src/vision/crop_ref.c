/* The crop is one affine sample of the frame, like the preprocessing, but
 * with the edge replicated: MediaPipe's FaceMesh crop is an
 * ImageToTensorCalculator with no border_mode, i.e. BORDER_REPLICATE (the
 * older graphs said BORDER_REPLICATE to ImageCroppingCalculator), while the
 * detector's letterbox asks for BORDER_ZERO. */
#include "vision/crop_ref.h"

#include <math.h>

#include "core/error.h"
#include "vision/frame.h"

omma_status vis_crop_ref(const omma_frame *frame, const vis_roi *roi, int size, float *out)
{
    OMMA_TRY(vis_frame_check(frame));
    if (!roi || !out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "NULL ROI or output for the crop");
    if (size < 1 || size > 4096)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "crop size %d not in 1..4096", size);
    if (!(roi->w > 0.0f && roi->h > 0.0f && isfinite(roi->w) && isfinite(roi->h) &&
          isfinite(roi->cx) && isfinite(roi->cy) && isfinite(roi->rotation)))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "ROI %gx%g at (%g, %g) rotation %g", roi->w,
                         roi->h, roi->cx, roi->cy, roi->rotation);
    float m[6];
    vis_roi_crop_to_frame(roi, size, m);
    vis_frame_sample_affine(frame, m, size, size, VIS_BORDER_REPLICATE, 1.0f / 255.0f, 0.0f,
                            out);
    return OMMA_OK;
}
