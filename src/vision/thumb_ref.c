#include "vision/thumb.h"

#include "core/error.h"

omma_status vis_thumb_ref(const omma_frame *f, int tw, int th, uint8_t *out)
{
    OMMA_TRY(vis_frame_check(f));
    if (f->memory != OMMA_MEMORY_HOST)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "vis_thumb_ref: the frame is not in host memory");
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "vis_thumb_ref: NULL out");
    if (tw < 1 || th < 1 || tw > VIS_THUMB_MAX_SIDE || th > VIS_THUMB_MAX_SIDE)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "vis_thumb_ref: size %dx%d out of 1..%d", tw, th,
                         VIS_THUMB_MAX_SIDE);
    for (int y = 0; y < th; y++)
        for (int x = 0; x < tw; x++)
            vis_thumb_pixel(f, tw, th, x, y, out + ((size_t)y * (size_t)tw + (size_t)x) * 3);
    return OMMA_OK;
}
