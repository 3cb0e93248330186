/* JPEG encoding into memory. libjpeg's errors would call exit();
 * error_exit longjmps back instead with the message kept. */
#include "io/jpeg_encode.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"

#ifdef OMMA_HAVE_JPEG

#include <jpeglib.h>
#include <setjmp.h>

typedef struct enc_ctx {
    struct jpeg_error_mgr err; /* first: the error manager's address is the context's */
    jmp_buf jump;
    char msg[JMSG_LENGTH_MAX];
    struct jpeg_compress_struct cinfo;
    unsigned char *buf;
    unsigned long len;
} enc_ctx;

static void on_error_exit(j_common_ptr cinfo)
{
    enc_ctx *c = (enc_ctx *)cinfo->err;
    (*cinfo->err->format_message)(cinfo, c->msg);
    longjmp(c->jump, 1);
}

static void on_message(j_common_ptr cinfo, int level)
{
    (void)cinfo, (void)level; /* an encoder's warnings: nothing to lose */
}

/* All state lives in *c, so nothing here is changed between setjmp and
 * longjmp. */
static int encode(enc_ctx *c, const uint8_t *rgb, int w, int h, int quality)
{
    if (setjmp(c->jump))
        return 0;
    jpeg_create_compress(&c->cinfo);
    jpeg_mem_dest(&c->cinfo, &c->buf, &c->len);
    c->cinfo.image_width = (JDIMENSION)w;
    c->cinfo.image_height = (JDIMENSION)h;
    c->cinfo.input_components = 3;
    c->cinfo.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c->cinfo);
    jpeg_set_quality(&c->cinfo, quality, TRUE);
    jpeg_start_compress(&c->cinfo, TRUE);
    while (c->cinfo.next_scanline < c->cinfo.image_height) {
        JSAMPROW row = (JSAMPROW)(rgb + (size_t)c->cinfo.next_scanline * (size_t)w * 3);
        jpeg_write_scanlines(&c->cinfo, &row, 1);
    }
    jpeg_finish_compress(&c->cinfo);
    return 1;
}

omma_status io_jpeg_encode(const uint8_t *rgb, int w, int h, int quality, uint8_t **out,
                           size_t *len)
{
    if (out)
        *out = NULL;
    if (!rgb || !out || !len)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_jpeg_encode: NULL argument");
    if (w < 1 || h < 1 || w > 65500 || h > 65500)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_jpeg_encode: size %dx%d out of 1..65500", w, h);
    if (quality < 1 || quality > 100)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_jpeg_encode: quality %d out of 1..100", quality);
    enc_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "io_jpeg_encode: %zu bytes", sizeof *c);
    c->cinfo.err = jpeg_std_error(&c->err);
    c->err.error_exit = on_error_exit;
    c->err.emit_message = on_message;
    int ok = encode(c, rgb, w, h, quality);
    jpeg_destroy_compress(&c->cinfo);
    omma_status st = OMMA_OK;
    if (ok && c->buf) {
        *out = c->buf;
        *len = c->len;
    } else {
        free(c->buf);
        st = OMMA_FAIL(OMMA_ERR_INTERNAL, "io_jpeg_encode: libjpeg: %s",
                       c->msg[0] ? c->msg : "no output");
    }
    free(c);
    return st;
}

#else

omma_status io_jpeg_encode(const uint8_t *rgb, int w, int h, int quality, uint8_t **out,
                           size_t *len)
{
    (void)rgb, (void)w, (void)h, (void)quality, (void)len;
    if (out)
        *out = NULL;
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                     "JPEG encoding: omma was built without libjpeg (install libjpeg-dev)");
}

#endif
