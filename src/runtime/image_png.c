/* PNG files through libpng's progressive-free "low-level" API from memory:
 * errors longjmp back to decode() with the message kept, warnings are
 * dropped (never printed). Every colour type and depth ends as 8-bit RGB. */
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "runtime/image_decode.h"

typedef struct png_ctx {
    const char *path;
    const uint8_t *data;
    size_t size, pos;
    char msg[256];
    omma_status st; /* the status a longjmp reports */
    png_structp png;
    png_infop info;
    png_bytep *rows;
    rt_image img;
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
        snprintf(c->msg, sizeof c->msg, "colour type %d, depth %d does not convert to RGB",
                 color, depth);
        return OMMA_ERR_UNSUPPORTED;
    }
    c->st = rt_image_alloc(c->path, w, h, &c->img);
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

omma_status rt_png_decode(const char *path, const uint8_t *data, size_t size, rt_image *out)
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
    /* Pixels above the side cap fail in rt_image_alloc; this keeps libpng
     * from refusing them first with a vaguer message. */
    png_set_user_limits(c.png, 0x7fffffff, 0x7fffffff);
    omma_status st = decode(&c);
    png_destroy_read_struct(&c.png, &c.info, NULL);
    free(c.rows);
    if (st != OMMA_OK) {
        rt_image_free(&c.img);
        if (!c.msg[0])
            return st; /* rt_image_alloc failed and set the message */
        return OMMA_FAIL(st, "%s: PNG: %s", path, c.msg);
    }
    *out = c.img;
    return OMMA_OK;
}
