/* Private: packed RGB8 -> a JPEG file in memory with libjpeg(-turbo) (the
 * live view's previews). No shared state: any thread. */
#ifndef OMMA_IO_JPEG_ENCODE_H
#define OMMA_IO_JPEG_ENCODE_H

#include <stddef.h>
#include <stdint.h>

#include "omma/status.h"

/* Encodes the w x h image (rows of w * 3 bytes, back to back) at quality
 * 1..100 into *out (the caller's, to free()), *len bytes.
 * Errors: OMMA_ERR_INVALID_ARG (NULL, a size out of 1..65500, a quality
 * out of range), OMMA_ERR_OUT_OF_MEMORY, OMMA_ERR_UNSUPPORTED (a build
 * without libjpeg), OMMA_ERR_INTERNAL (libjpeg failed: its message). On
 * failure *out is NULL. */
omma_status io_jpeg_encode(const uint8_t *rgb, int w, int h, int quality, uint8_t **out,
                           size_t *len);

#endif
