/* Private: the decoders behind io_image_load, each on a whole file held in
 * memory. path is only for messages. Errors as io_image_load; on failure
 * *out is zeroed. */
#ifndef OMMA_IO_IMAGE_DECODE_H
#define OMMA_IO_IMAGE_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include "io/image_file.h"

/* Picks the decoder from the first bytes (PNG or JPEG magic) and decodes. */
omma_status io_image_decode(const char *path, const uint8_t *data, size_t size, io_image *out);

omma_status io_png_decode(const char *path, const uint8_t *data, size_t size, io_image *out);
omma_status io_jpeg_decode(const char *path, const uint8_t *data, size_t size, io_image *out);

/* Allocates the pixels of a width x height image after checking the size
 * (OMMA_ERR_FORMAT for zero sides, OMMA_ERR_UNSUPPORTED above
 * IO_IMAGE_MAX_SIDE or IO_IMAGE_MAX_PIXELS). */
omma_status io_image_alloc(const char *path, uint32_t width, uint32_t height, io_image *out);

#endif
