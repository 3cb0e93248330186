/* Private: annotated pictures of the pipeline's results that a person can
 * look at: the frame converted to RGB, each face's box and id, its six
 * keypoints and its 468 landmarks drawn over it. Pure drawing into a
 * caller's buffer: any thread. */
#ifndef OMMA_IO_ANNOTATE_H
#define OMMA_IO_ANNOTATE_H

#include <stdint.h>

#include "omma/face.h"
#include "omma/status.h"

/* Converts frame (host memory, any omma pixel format) to packed RGB in rgb
 * (frame->width x frame->height, rows `pitch` bytes apart), then draws the
 * n faces: box outline in a colour picked by id, the id as digits above the
 * box, keypoints as small squares, landmarks as dots; everything clipped to
 * the picture. Errors: OMMA_ERR_INVALID_ARG (bad frame, NULL rgb, pitch too
 * small, n < 0, faces NULL with n > 0). */
omma_status io_annotate(const omma_frame *frame, const omma_face *faces, int n, uint8_t *rgb,
                        int pitch);

#endif
