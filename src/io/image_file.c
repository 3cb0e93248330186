#define _POSIX_C_SOURCE 200809L /* fileno */
/* Reading an image file whole and handing it to the decoder its first
 * bytes name. */
#include "io/image_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/error.h"
#include "io/image_decode.h"

static const uint8_t png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
static const uint8_t jpeg_magic[3] = {0xff, 0xd8, 0xff};

static omma_status read_whole(const char *path, uint8_t **data, size_t *size)
{
    *data = NULL;
    *size = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return OMMA_FAIL(OMMA_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return OMMA_FAIL(OMMA_ERR_IO, "%s: not a regular file", path);
    }
    if (sb.st_size == 0) {
        fclose(f);
        return OMMA_FAIL(OMMA_ERR_FORMAT, "%s: empty file (0 bytes)", path);
    }
    if (sb.st_size > IO_IMAGE_MAX_FILE_BYTES) {
        fclose(f);
        return OMMA_FAIL(OMMA_ERR_IO, "%s: %lld bytes, more than the %ld an image may have", path,
                         (long long)sb.st_size, IO_IMAGE_MAX_FILE_BYTES);
    }
    size_t n = (size_t)sb.st_size;
    uint8_t *buf = malloc(n);
    if (!buf) {
        fclose(f);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: %zu bytes", path, n);
    }
    size_t got = fread(buf, 1, n, f);
    int err = ferror(f);
    fclose(f);
    if (got != n) {
        free(buf);
        return OMMA_FAIL(OMMA_ERR_IO, "%s: read %zu of %zu bytes%s", path, got, n,
                         err ? " (read error)" : "");
    }
    *data = buf;
    *size = n;
    return OMMA_OK;
}

omma_status io_image_alloc(const char *path, uint32_t width, uint32_t height, io_image *out)
{
    memset(out, 0, sizeof *out);
    if (width == 0 || height == 0)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "%s: image of size %ux%u", path, width, height);
    if (width > IO_IMAGE_MAX_SIDE || height > IO_IMAGE_MAX_SIDE ||
        (long long)width * height > IO_IMAGE_MAX_PIXELS)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "%s: image of %ux%u pixels (at most %d a side, %lld in all)", path, width,
                         height, IO_IMAGE_MAX_SIDE, IO_IMAGE_MAX_PIXELS);
    size_t bytes = (size_t)width * height * 3;
    out->rgb = malloc(bytes);
    if (!out->rgb)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: %zu bytes of pixels", path, bytes);
    out->width = (int)width;
    out->height = (int)height;
    return OMMA_OK;
}

omma_status io_image_load(const char *path, io_image *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!path || !out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_image_load: NULL %s", path ? "out" : "path");
    uint8_t *data;
    size_t size;
    OMMA_TRY(read_whole(path, &data, &size));
    omma_status st = io_image_decode(path, data, size, out);
    free(data);
    return st;
}

omma_status io_image_decode(const char *path, const uint8_t *data, size_t size, io_image *out)
{
    memset(out, 0, sizeof *out);
    if (size >= sizeof png_magic && memcmp(data, png_magic, sizeof png_magic) == 0)
        return io_png_decode(path, data, size, out);
    if (size >= sizeof jpeg_magic && memcmp(data, jpeg_magic, sizeof jpeg_magic) == 0)
        return io_jpeg_decode(path, data, size, out);
    return OMMA_FAIL(OMMA_ERR_FORMAT, "%s: not a PNG or JPEG file (unknown first bytes)", path);
}

void io_image_free(io_image *img)
{
    if (!img)
        return;
    free(img->rgb);
    memset(img, 0, sizeof *img);
}

omma_frame io_image_frame(const io_image *img)
{
    omma_frame f = {img->width,
                    img->height,
                    OMMA_PIXEL_RGB,
                    {img->rgb, NULL, NULL},
                    {3 * img->width, 0, 0},
                    OMMA_MEMORY_HOST};
    return f;
}
