/* Letterbox resize as one affine sample: input pixel u reads frame point
 * (u - offset) / scale. */
#include "vision/preprocess_ref.h"

#include "core/error.h"
#include "vision/frame.h"

omma_status vis_preprocess_ref(const omma_frame *frame, int size, float scale, float bias,
                               float *out, vis_letterbox *lb)
{
    OMMA_TRY(vis_frame_check(frame));
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "NULL output for the preprocessing");
    if (size < 1 || size > 4096)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "input size %d not in 1..4096", size);
    vis_letterbox l = vis_letterbox_make(frame->width, frame->height, size);
    float m[6];
    vis_letterbox_input_to_frame(&l, m);
    vis_frame_sample_affine(frame, m, size, size, VIS_BORDER_ZERO, scale, bias, out);
    if (lb)
        *lb = l;
    return OMMA_OK;
}
