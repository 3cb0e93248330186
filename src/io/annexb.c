/* Length-prefixed H.264 / HEVC to Annex B (annexb.h). */
#include "io/annexb.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* Zeros after the output, as FFmpeg pads its packets, for readers that
 * look a few bytes ahead. */
#define PADDING 64

static const uint8_t start_code[4] = {0, 0, 0, 1};

typedef struct reader {
    const uint8_t *p;
    size_t left;
} reader;

static int take(reader *r, size_t n, const uint8_t **at)
{
    if (r->left < n)
        return 0;
    *at = r->p;
    r->p += n;
    r->left -= n;
    return 1;
}

static int u8(reader *r, unsigned *v)
{
    const uint8_t *b;
    if (!take(r, 1, &b))
        return 0;
    *v = b[0];
    return 1;
}

static int u16(reader *r, unsigned *v)
{
    const uint8_t *b;
    if (!take(r, 2, &b))
        return 0;
    *v = (unsigned)b[0] << 8 | b[1];
    return 1;
}

/* Appends count units (each after its 16-bit length) to the header, or
 * only adds their size when a->header is NULL. */
static int units(io_annexb *a, reader *r, unsigned count)
{
    for (unsigned i = 0; i < count; i++) {
        unsigned n;
        const uint8_t *unit;
        if (!u16(r, &n) || !take(r, n, &unit))
            return 0;
        if (a->header) {
            memcpy(a->header + a->header_size, start_code, 4);
            memcpy(a->header + a->header_size + 4, unit, n);
        }
        a->header_size += 4 + (size_t)n;
    }
    return 1;
}

/* Walks the record's parameter sets: counts their size (a->header NULL)
 * or copies them. */
static int walk(io_annexb *a, int hevc, const uint8_t *record, size_t size)
{
    reader r = {record, size};
    const uint8_t *skip;
    unsigned v, count;
    if (!hevc) { /* avcC: version, profile, compatibility, level, length size, SPS..., PPS... */
        if (!take(&r, 4, &skip) || !u8(&r, &v))
            return 0;
        a->length_size = (int)(v & 3) + 1;
        if (!u8(&r, &count) || !units(a, &r, count & 31))
            return 0;
        return u8(&r, &count) && units(a, &r, count);
    }
    /* hvcC: 21 bytes of profile and format, the length size, then arrays
     * of units (VPS, SPS, PPS, SEI), each a type byte and a count. */
    if (!take(&r, 21, &skip) || !u8(&r, &v))
        return 0;
    a->length_size = (int)(v & 3) + 1;
    unsigned arrays;
    if (!u8(&r, &arrays))
        return 0;
    for (unsigned i = 0; i < arrays; i++)
        if (!u8(&r, &v) || !u16(&r, &count) || !units(a, &r, count))
            return 0;
    return 1;
}

omma_status io_annexb_init(io_annexb *a, int hevc, const uint8_t *record, size_t size)
{
    memset(a, 0, sizeof *a);
    const char *what = hevc ? "hvcC" : "avcC";
    if (!record || size < 1 || record[0] != 1)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "the %s record is %s", what,
                         !record || size < 1 ? "empty" : "not version 1");
    if (!walk(a, hevc, record, size))
        return OMMA_FAIL(OMMA_ERR_FORMAT, "the %s record (%zu bytes) is cut short", what, size);
    if (a->length_size == 3) {
        a->header_size = 0;
        return OMMA_FAIL(OMMA_ERR_FORMAT, "the %s record gives units a 3-byte length", what);
    }
    size_t bytes = a->header_size;
    a->header_size = 0;
    a->header = malloc(bytes + PADDING);
    if (!a->header)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "the %s record's parameter sets: %zu bytes", what,
                         bytes);
    walk(a, hevc, record, size); /* the same walk again, copying */
    memset(a->header + a->header_size, 0, PADDING);
    return OMMA_OK;
}

omma_status io_annexb_convert(io_annexb *a, const uint8_t *data, size_t size, const uint8_t **out,
                              size_t *out_size)
{
    *out = NULL;
    *out_size = 0;
    size_t ls = (size_t)a->length_size, need = 0;
    /* First the units' total size (and the check that they fit), then the copy. */
    for (size_t at = 0; at < size;) {
        if (size - at < ls)
            return OMMA_FAIL(OMMA_ERR_FORMAT,
                             "a packet's unit length at byte %zu of %zu is cut short", at, size);
        size_t n = 0;
        for (size_t i = 0; i < ls; i++)
            n = n << 8 | data[at + i];
        at += ls;
        if (n > size - at)
            return OMMA_FAIL(OMMA_ERR_FORMAT,
                             "a packet's unit of %zu bytes at byte %zu runs past its end (%zu)", n,
                             at, size);
        if (n)
            need += 4 + n;
        at += n;
    }
    if (need + PADDING > a->cap) {
        size_t cap = (need + PADDING) * 2;
        uint8_t *b = realloc(a->buf, cap);
        if (!b)
            return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "Annex B: %zu bytes", cap);
        a->buf = b;
        a->cap = cap;
    }
    uint8_t *to = a->buf;
    for (size_t at = 0; at < size;) {
        size_t n = 0;
        for (size_t i = 0; i < ls; i++)
            n = n << 8 | data[at + i];
        at += ls;
        if (n) {
            memcpy(to, start_code, 4);
            memcpy(to + 4, data + at, n);
            to += 4 + n;
        }
        at += n;
    }
    memset(to, 0, PADDING);
    *out = a->buf;
    *out_size = need;
    return OMMA_OK;
}

void io_annexb_free(io_annexb *a)
{
    if (!a)
        return;
    free(a->header);
    free(a->buf);
    memset(a, 0, sizeof *a);
}
