/* JPEG files through libjpeg(-turbo) from memory. Its errors would call
 * exit(); error_exit longjmps back to decode() instead, with the formatted
 * message kept. Its warnings (corrupt data it papers over, a premature end
 * of file) fail the decode the same way: omma wants the picture the file
 * holds, not a grey-filled guess. */
#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "io/image_decode.h"

#ifdef OMMA_HAVE_JPEG

#include <jpeglib.h>
#include <setjmp.h>

typedef struct jpeg_ctx {
    struct jpeg_error_mgr err; /* first: the error manager's address is the context's */
    jmp_buf jump;
    const char *path;
    char msg[JMSG_LENGTH_MAX];
    omma_status st;
    struct jpeg_decompress_struct cinfo;
    io_image img;
} jpeg_ctx;

static void on_error_exit(j_common_ptr cinfo)
{
    jpeg_ctx *c = (jpeg_ctx *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, c->msg);
    longjmp(c->jump, 1);
}

/* A warning ends the decode at once (no grey-filled rest to compute);
 * trace messages (level >= 0) are dropped. */
static void on_message(j_common_ptr cinfo, int level)
{
    jpeg_ctx *c = (jpeg_ctx *)cinfo->err;
    if (level >= 0)
        return;
    cinfo->err->num_warnings++;
    (*cinfo->err->format_message)(cinfo, c->msg);
    c->st = OMMA_ERR_FORMAT;
    longjmp(c->jump, 1);
}

/* All state lives in *c, so nothing here is changed between setjmp and
 * longjmp. */
static omma_status decode(jpeg_ctx *c, const uint8_t *data, size_t size)
{
    if (setjmp(c->jump))
        return c->st;
    jpeg_mem_src(&c->cinfo, data, (unsigned long)size);
    jpeg_read_header(&c->cinfo, TRUE);
    if (c->cinfo.jpeg_color_space == JCS_CMYK || c->cinfo.jpeg_color_space == JCS_YCCK) {
        snprintf(c->msg, sizeof c->msg, "CMYK colour is not supported (convert it to RGB)");
        return c->st = OMMA_ERR_UNSUPPORTED;
    }
    c->cinfo.out_color_space = JCS_RGB;
    jpeg_calc_output_dimensions(&c->cinfo);
    c->st = io_image_alloc(c->path, c->cinfo.output_width, c->cinfo.output_height, &c->img);
    if (c->st != OMMA_OK) {
        c->msg[0] = 0; /* io_image_alloc set the message */
        return c->st;
    }
    c->st = OMMA_ERR_FORMAT;
    jpeg_start_decompress(&c->cinfo);
    if (c->cinfo.output_components != 3) {
        snprintf(c->msg, sizeof c->msg, "%d components after conversion to RGB",
                 c->cinfo.output_components);
        return c->st = OMMA_ERR_UNSUPPORTED;
    }
    size_t pitch = (size_t)c->img.width * 3;
    while (c->cinfo.output_scanline < c->cinfo.output_height) {
        JSAMPROW row = c->img.rgb + (size_t)c->cinfo.output_scanline * pitch;
        jpeg_read_scanlines(&c->cinfo, &row, 1);
    }
    jpeg_finish_decompress(&c->cinfo);
    return OMMA_OK;
}

/* jpeg_create_decompress reports failure through error_exit too. */
static int create(jpeg_ctx *c)
{
    if (setjmp(c->jump))
        return 0;
    jpeg_create_decompress(&c->cinfo);
    return 1;
}

omma_status io_jpeg_decode(const char *path, const uint8_t *data, size_t size, io_image *out)
{
    jpeg_ctx c;
    memset(&c, 0, sizeof c);
    memset(out, 0, sizeof *out);
    c.path = path;
    c.st = OMMA_ERR_FORMAT;
    c.cinfo.err = jpeg_std_error(&c.err);
    c.err.error_exit = on_error_exit;
    c.err.emit_message = on_message;
    if (!create(&c)) {
        jpeg_destroy_decompress(&c.cinfo);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: cannot create the JPEG decoder: %s", path,
                         c.msg);
    }
    omma_status st = decode(&c, data, size);
    jpeg_destroy_decompress(&c.cinfo);
    if (st != OMMA_OK) {
        io_image_free(&c.img);
        if (!c.msg[0])
            return st;
        return OMMA_FAIL(st, "%s: JPEG: %s", path, c.msg);
    }
    *out = c.img;
    return OMMA_OK;
}

#else

omma_status io_jpeg_decode(const char *path, const uint8_t *data, size_t size, io_image *out)
{
    (void)data;
    (void)size;
    memset(out, 0, sizeof *out);
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                     "%s: JPEG file, but this omma was built without libjpeg (install "
                     "libjpeg-dev and rebuild)",
                     path);
}

#endif
