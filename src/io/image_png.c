#define _POSIX_C_SOURCE 200809L /* mkstemp, fchmod, fdopen */
/* PNG files through libpng's progressive-free "low-level" API from memory:
 * errors longjmp back to decode() with the message kept, warnings are
 * dropped (never printed). Every colour type and depth ends as 8-bit RGB.
 * Writing (io_image_save_png) goes the same way into a temporary file. */
#include <errno.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "io/image_decode.h"

typedef struct png_ctx {
    const char *path;
    const uint8_t *data;
    size_t size, pos;
    char msg[256];
    omma_status st; /* the status a longjmp reports */
    png_structp png;
    png_infop info;
    png_bytep *rows;
    io_image img;
} png_ctx;

static void on_error(png_structp png, png_const_charp msg)
{
    png_ctx *c = png_get_error_ptr(png);
    snprintf(c->msg, sizeof c->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

static void read_bytes(png_structp png, png_bytep dst, png_size_t n)
{
    png_ctx *c = png_get_io_ptr(png);
    if (n > c->size - c->pos) {
        c->st = OMMA_ERR_FORMAT;
        png_error(png, "truncated (unexpected end of file)");
    }
    memcpy(dst, c->data + c->pos, n);
    c->pos += n;
}

/* All state lives in *c (the caller's), so nothing here is changed between
 * setjmp and longjmp. */
static omma_status decode(png_ctx *c)
{
    if (setjmp(png_jmpbuf(c->png)))
        return c->st;
    png_set_read_fn(c->png, c, read_bytes);
    png_read_info(c->png, c->info);
    png_uint_32 w, h;
    int depth, color, interlace;
    png_get_IHDR(c->png, c->info, &w, &h, &depth, &color, &interlace, NULL, NULL);
    if (depth == 16)
        png_set_strip_16(c->png);
    if (color == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(c->png);
    if (color == PNG_COLOR_TYPE_GRAY && depth < 8)
        png_set_expand_gray_1_2_4_to_8(c->png);
    if (color == PNG_COLOR_TYPE_GRAY || color == PNG_COLOR_TYPE_GRAY_ALPHA)
        png_set_gray_to_rgb(c->png);
    if (png_get_valid(c->png, c->info, PNG_INFO_tRNS))
        png_set_tRNS_to_alpha(c->png);
    png_set_strip_alpha(c->png);
    if (interlace != PNG_INTERLACE_NONE)
        png_set_interlace_handling(c->png);
    png_read_update_info(c->png, c->info);
    if (png_get_rowbytes(c->png, c->info) != (size_t)w * 3) {
        c->st = OMMA_ERR_UNSUPPORTED;
        snprintf(c->msg, sizeof c->msg, "colour type %d, depth %d does not convert to RGB", color,
                 depth);
        return OMMA_ERR_UNSUPPORTED;
    }
    c->st = io_image_alloc(c->path, w, h, &c->img);
    if (c->st != OMMA_OK)
        return c->st; /* the message is set */
    c->rows = malloc(sizeof *c->rows * h);
    if (!c->rows) {
        snprintf(c->msg, sizeof c->msg, "out of memory for %u row pointers", h);
        return c->st = OMMA_ERR_OUT_OF_MEMORY;
    }
    for (png_uint_32 y = 0; y < h; y++)
        c->rows[y] = c->img.rgb + (size_t)y * w * 3;
    c->st = OMMA_ERR_FORMAT;
    png_read_image(c->png, c->rows);
    png_read_end(c->png, NULL);
    return OMMA_OK;
}

omma_status io_png_decode(const char *path, const uint8_t *data, size_t size, io_image *out)
{
    png_ctx c;
    memset(&c, 0, sizeof c);
    memset(out, 0, sizeof *out);
    c.path = path, c.data = data, c.size = size;
    c.st = OMMA_ERR_FORMAT;
    c.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &c, on_error, on_warning);
    if (c.png)
        c.info = png_create_info_struct(c.png);
    if (!c.png || !c.info) {
        png_destroy_read_struct(&c.png, NULL, NULL);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: cannot create the PNG decoder", path);
    }
    /* Pixels above the side cap fail in io_image_alloc; this keeps libpng
     * from refusing them first with a vaguer message. */
    png_set_user_limits(c.png, 0x7fffffff, 0x7fffffff);
    omma_status st = decode(&c);
    png_destroy_read_struct(&c.png, &c.info, NULL);
    free(c.rows);
    if (st != OMMA_OK) {
        io_image_free(&c.img);
        if (!c.msg[0])
            return st; /* io_image_alloc failed and set the message */
        return OMMA_FAIL(st, "%s: PNG: %s", path, c.msg);
    }
    *out = c.img;
    return OMMA_OK;
}

/* Writing: the state lives in *c, as for decoding. */
typedef struct png_wctx {
    char msg[256];
    int err; /* errno of a failed write, 0 otherwise */
    FILE *f;
    const uint8_t *rgb;
    int width, height, pitch;
    png_structp png;
    png_infop info;
} png_wctx;

static void on_write_error(png_structp png, png_const_charp msg)
{
    png_wctx *c = png_get_error_ptr(png);
    snprintf(c->msg, sizeof c->msg, "%s", msg);
    png_longjmp(png, 1);
}

static void write_bytes(png_structp png, png_bytep src, png_size_t n)
{
    png_wctx *c = png_get_io_ptr(png);
    errno = 0;
    if (fwrite(src, 1, n, c->f) != n) {
        c->err = errno ? errno : EIO;
        png_error(png, "write failed");
    }
}

static void flush_bytes(png_structp png)
{
    png_wctx *c = png_get_io_ptr(png);
    if (fflush(c->f) != 0) {
        c->err = errno ? errno : EIO;
        png_error(png, "write failed");
    }
}

static int encode(png_wctx *c)
{
    if (setjmp(png_jmpbuf(c->png)))
        return 0;
    png_set_write_fn(c->png, c, write_bytes, flush_bytes);
    /* Annotated frames come by the hundred: fast compression. */
    png_set_compression_level(c->png, 3);
    png_set_IHDR(c->png, c->info, (png_uint_32)c->width, (png_uint_32)c->height, 8,
                 PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT,
                 PNG_FILTER_TYPE_DEFAULT);
    png_write_info(c->png, c->info);
    for (int y = 0; y < c->height; y++)
        png_write_row(c->png, c->rgb + (size_t)y * (size_t)c->pitch);
    png_write_end(c->png, NULL);
    return 1;
}

omma_status io_image_save_png(const char *path, const uint8_t *rgb, int width, int height,
                              int pitch)
{
    if (!path || !rgb)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_image_save_png: NULL %s",
                         path ? "pixels" : "path");
    if (width < 1 || height < 1 || width > IO_IMAGE_MAX_SIDE || height > IO_IMAGE_MAX_SIDE ||
        pitch / 3 < width)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "%s: cannot write a %dx%d PNG with rows %d bytes apart (sides "
                         "1..%d, rows at least 3 * width bytes)",
                         path, width, height, pitch, IO_IMAGE_MAX_SIDE);
    size_t n = strlen(path) + sizeof ".tmp.XXXXXX";
    char *tmp = malloc(n);
    if (!tmp)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: temporary name", path);
    snprintf(tmp, n, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        omma_status st = OMMA_FAIL(OMMA_ERR_IO, "%s: cannot create a temporary file beside it: %s",
                                   path, strerror(errno));
        free(tmp);
        return st;
    }
    (void)fchmod(fd, 0644); /* mkstemp makes it 0600; a picture is for reading */
    png_wctx c;
    memset(&c, 0, sizeof c);
    c.rgb = rgb, c.width = width, c.height = height, c.pitch = pitch;
    c.f = fdopen(fd, "wb");
    omma_status st = OMMA_OK;
    if (!c.f) {
        st = OMMA_FAIL(OMMA_ERR_IO, "%s: %s", tmp, strerror(errno));
        close(fd);
        goto fail;
    }
    c.png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &c, on_write_error, on_warning);
    if (c.png)
        c.info = png_create_info_struct(c.png);
    if (!c.png || !c.info) {
        png_destroy_write_struct(&c.png, NULL);
        st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: cannot create the PNG encoder", path);
        fclose(c.f);
        goto fail;
    }
    int ok = encode(&c);
    png_destroy_write_struct(&c.png, &c.info);
    errno = 0;
    if (fclose(c.f) != 0 && ok) {
        ok = 0;
        c.err = errno ? errno : EIO;
        snprintf(c.msg, sizeof c.msg, "closing failed");
    }
    if (!ok) {
        st = OMMA_FAIL(OMMA_ERR_IO, "%s: writing PNG failed: %s%s%s", path, c.msg,
                       c.err ? ": " : "", c.err ? strerror(c.err) : "");
        goto fail;
    }
    if (rename(tmp, path) != 0) {
        st = OMMA_FAIL(OMMA_ERR_IO, "%s: cannot rename %s to it: %s", path, tmp, strerror(errno));
        goto fail;
    }
    free(tmp);
    return OMMA_OK;
fail:
    unlink(tmp);
    free(tmp);
    return st;
}
