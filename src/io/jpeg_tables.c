/* The standard Huffman tables of Motion JPEG (jpeg_tables.h says why). */
#include "io/jpeg_tables.h"

#include <pthread.h>
#include <stdio.h> /* before jpeglib.h: FILE */
#include <string.h>

#ifdef OMMA_HAVE_JPEG
#include <jpeglib.h>
#include <setjmp.h>
#endif

/* 4 marker and length bytes, then per table its class and id, 16 counts
 * and at most 256 values. */
static uint8_t std_dht[4 + 4 * (17 + 256)];
static size_t std_dht_bytes;
static pthread_once_t std_dht_once = PTHREAD_ONCE_INIT;

#ifdef OMMA_HAVE_JPEG
typedef struct dht_ctx {
    struct jpeg_error_mgr err; /* first: the error manager's address is the context's */
    jmp_buf jump;
    struct jpeg_compress_struct c;
} dht_ctx;

static void on_error_exit(j_common_ptr cinfo)
{
    longjmp(((dht_ctx *)cinfo->err)->jump, 1); /* never libjpeg's exit() */
}

/* The four standard tables as a DHT segment into std_dht, its size (0 on
 * failure). All state is in *x: nothing changes between setjmp and longjmp
 * but through it. */
static size_t std_tables(dht_ctx *x)
{
    if (setjmp(x->jump))
        return 0;
    jpeg_create_compress(&x->c);
    x->c.in_color_space = JCS_YCbCr;
    x->c.input_components = 3;
    jpeg_set_defaults(&x->c);
    size_t n = 4;
    for (int t = 0; t < 4; t++) { /* DC 0, AC 0 (luma), DC 1, AC 1 (chroma) */
        const JHUFF_TBL *h = t & 1 ? x->c.ac_huff_tbl_ptrs[t / 2] : x->c.dc_huff_tbl_ptrs[t / 2];
        if (!h)
            return 0;
        std_dht[n++] = (uint8_t)((t & 1) << 4 | t / 2);
        int count = 0;
        for (int i = 1; i <= 16; i++) {
            std_dht[n++] = h->bits[i];
            count += h->bits[i];
        }
        if (count > 256)
            return 0;
        memcpy(std_dht + n, h->huffval, (size_t)count);
        n += (size_t)count;
    }
    std_dht[0] = 0xff;
    std_dht[1] = 0xc4;
    std_dht[2] = (uint8_t)((n - 2) >> 8);
    std_dht[3] = (uint8_t)((n - 2) & 0xff);
    return n;
}
#endif

static void make_std_dht(void)
{
#ifdef OMMA_HAVE_JPEG
    static dht_ctx x;
    x.c.err = jpeg_std_error(&x.err);
    x.err.error_exit = on_error_exit;
    std_dht_bytes = std_tables(&x);
    jpeg_destroy_compress(&x.c);
#endif
}

const uint8_t *io_jpeg_std_dht(size_t *bytes)
{
    pthread_once(&std_dht_once, make_std_dht);
    *bytes = std_dht_bytes;
    return std_dht_bytes ? std_dht : NULL;
}

size_t io_jpeg_missing_dht_at(const uint8_t *p, size_t n)
{
    if (!p || n < 4 || p[0] != 0xff || p[1] != 0xd8)
        return 0;
    size_t at = 2;
    while (at + 4 <= n) {
        if (p[at] != 0xff)
            return 0;
        uint8_t m = p[at + 1];
        if (m == 0xff) { /* a fill byte */
            at++;
            continue;
        }
        if (m == 0xc4)
            return 0; /* it has its tables */
        if (m == 0xda)
            return at;
        if (m == 0x01 || (m >= 0xd0 && m <= 0xd7)) { /* no length */
            at += 2;
            continue;
        }
        at += 2 + ((size_t)p[at + 2] << 8 | p[at + 3]);
    }
    return 0;
}
