/* Test helper: an RGB image as an omma_frame in any pixel format, every
 * plane's rows padded (garbage in the padding). */
#ifndef OMMA_TESTS_VISION_FRAMES_H
#define OMMA_TESTS_VISION_FRAMES_H

#include <stdint.h>

#include "omma/face.h"
#include "support/png_image.h"

#define VISION_FRAME_PAD 13 /* extra bytes per row in every plane */

typedef struct vision_frame {
    omma_frame f;
    uint8_t *mem[3];
} vision_frame;

/* Builds img in format fmt (YUV: BT.601 limited range, the inverse of the
 * library's conversion, chroma averaged over 2x2). Returns 0 when out of
 * memory (b is then empty). */
int vision_frame_build(const rgb_image *img, omma_pixel_format fmt, vision_frame *b);

void vision_frame_free(vision_frame *b);

#endif
