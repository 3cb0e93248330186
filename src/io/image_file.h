/* Private: still images from files (PNG with libpng, JPEG with
 * libjpeg(-turbo) where the build found it: OMMA_HAVE_JPEG) decoded into
 * 8-bit RGB that an omma_frame can point at. The format is detected from the
 * file's first bytes, never from its name. No shared state: any thread. */
#ifndef OMMA_IO_IMAGE_FILE_H
#define OMMA_IO_IMAGE_FILE_H

#include <stdint.h>

#include "omma/face.h"
#include "omma/status.h"

typedef struct io_image {
    int width, height;
    uint8_t *rgb; /* width * height * 3 bytes, rows packed (pitch 3 * width) */
} io_image;

/* Largest side accepted (as vis_frame_check), most pixels (8192 x 8192:
 * a damaged header cannot make omma allocate gigabytes), largest file read. */
#define IO_IMAGE_MAX_SIDE 32768
#define IO_IMAGE_MAX_PIXELS ((long long)8192 * 8192)
#define IO_IMAGE_MAX_FILE_BYTES ((long)1 << 30)

/* Decodes the PNG or JPEG file at path into *out (owned by the caller:
 * io_image_free). PNG: any bit depth and colour type (16-bit reduced to 8,
 * palette and grey expanded, alpha dropped; no gamma conversion). JPEG:
 * grey or YCbCr/RGB; CMYK/YCCK is refused. Decoding is strict: a truncated
 * or damaged file fails even where the decoder could paper over it (a JPEG
 * decoder warning counts as a failure).
 * Errors, each message naming the file and the problem:
 *   OMMA_ERR_INVALID_ARG  NULL path or out;
 *   OMMA_ERR_IO           missing, unreadable, a directory, over the size cap;
 *   OMMA_ERR_FORMAT       empty, neither PNG nor JPEG, corrupt or truncated;
 *   OMMA_ERR_UNSUPPORTED  a valid image omma does not take (CMYK JPEG, a
 *                         side above IO_IMAGE_MAX_SIDE or more than
 *                         IO_IMAGE_MAX_PIXELS, JPEG in a build
 *                         without libjpeg);
 *   OMMA_ERR_OUT_OF_MEMORY.
 * On failure *out is zeroed. */
omma_status io_image_load(const char *path, io_image *out);

/* Writes packed RGB (width x height, rows pitch bytes apart) as an 8-bit
 * PNG with libpng, to a temporary file beside path renamed over it when
 * complete (never a half-written PNG). Errors naming the path:
 * OMMA_ERR_INVALID_ARG (NULL, sizes out of range, pitch too small),
 * OMMA_ERR_IO (cannot create, write or rename). */
omma_status io_image_save_png(const char *path, const uint8_t *rgb, int width, int height,
                              int pitch);

/* Frees the pixels and zeroes *img; accepts NULL and zeroed images. */
void io_image_free(io_image *img);

/* An RGB frame descriptor over img's pixels (valid while img lives). */
omma_frame io_image_frame(const io_image *img);

#endif
