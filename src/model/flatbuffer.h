/* Private: a strict reader of FlatBuffers data (the binary layout of TFLite
 * model files; other FlatBuffers formats can use it too). Every accessor
 * checks, before a byte is used, that what it reads lies inside the data,
 * is aligned as the format requires and fits its table or vector (see
 * tflite.c's header for the whole list); a check that fails is
 * OMMA_ERR_FORMAT naming the file, the object, the field and the byte
 * offset. Lengths are checked by division, so huge values cannot
 * overflow. Multi-byte values are read byte by byte (little-endian), never
 * through unaligned pointers. No state beyond the caller's: any thread. */
#ifndef OMMA_MODEL_FLATBUFFER_H
#define OMMA_MODEL_FLATBUFFER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "omma/status.h"

/* The data being read: n bytes at b, named `what` in messages. */
typedef struct fb_reader {
    const uint8_t *b;
    size_t n;
    const char *what; /* the file's name, for messages */
} fb_reader;

/* A table: its position, its vtable and the name of the object for messages. */
typedef struct fb_table {
    size_t pos, vt;
    unsigned vsize, tsize;
    const char *obj; /* "tensor 12" */
} fb_table;

/* Little-endian values at p (the caller checked the bytes are inside). */
static inline uint16_t fb_rd_u16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (unsigned)p[1] << 8);
}

static inline uint32_t fb_rd_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline int32_t fb_rd_i32(const uint8_t *p)
{
    uint32_t u = fb_rd_u32(p);
    int32_t v;
    memcpy(&v, &u, 4);
    return v;
}

static inline uint64_t fb_rd_u64(const uint8_t *p)
{
    return fb_rd_u32(p) | (uint64_t)fb_rd_u32(p + 4) << 32;
}

/* OMMA_ERR_FORMAT: "<what>: <message>". */
omma_status fb_bad(const fb_reader *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The table at `pos` (named obj in messages): its vtable and sizes checked. */
omma_status fb_table_at(const fb_reader *r, size_t pos, const char *obj, fb_table *t);

/* Position of field `id` of `size` bytes in t, 0 when the field is absent. */
omma_status fb_field(const fb_reader *r, const fb_table *t, int id, unsigned size,
                     const char *field, size_t *at);

/* Scalar fields, dflt (or 0) when absent. */
omma_status fb_field_u8(const fb_reader *r, const fb_table *t, int id, const char *field,
                        uint8_t dflt, uint8_t *v);
omma_status fb_field_i32(const fb_reader *r, const fb_table *t, int id, const char *field,
                         int32_t dflt, int32_t *v);
omma_status fb_field_u32(const fb_reader *r, const fb_table *t, int id, const char *field,
                         uint32_t *v);
omma_status fb_field_u64(const fb_reader *r, const fb_table *t, int id, const char *field,
                         uint64_t *v);

/* Follows the offset stored at `at` (inside the data, 4 bytes) to a
 * 4-aligned position inside the data. */
omma_status fb_follow(const fb_reader *r, size_t at, const char *obj, const char *field,
                      size_t *target);

/* A sub-table field; *present false when absent. */
omma_status fb_subtable(const fb_reader *r, const fb_table *t, int id, const char *field,
                        const char *obj, fb_table *sub, bool *present);

/* A vector field of `elem` byte elements: *start (first element) and *len;
 * len 0 when absent. `kind` names it in messages ("vector", "string"). */
omma_status fb_vector_kind(const fb_reader *r, const fb_table *t, int id, size_t elem,
                           const char *field, const char *kind, size_t *start, size_t *len);
omma_status fb_vector(const fb_reader *r, const fb_table *t, int id, size_t elem, const char *field,
                      size_t *start, size_t *len);

/* A string field: a pointer into the data (NUL-terminated there) or NULL. */
omma_status fb_string(const fb_reader *r, const fb_table *t, int id, const char *field,
                      const char **s);

/* Element k of a vector of tables starting at `start`. */
omma_status fb_vector_table(const fb_reader *r, size_t start, size_t k, const char *obj,
                            fb_table *t);

/* A vector of int32 values copied into a new array (*out NULL when empty; at
 * most `max` values, more is OMMA_ERR_UNSUPPORTED). The caller frees it. */
omma_status fb_int_vector(const fb_reader *r, const fb_table *t, int id, const char *field,
                          size_t max, int **out, int *count);

#endif
