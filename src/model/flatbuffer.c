/* The checked FlatBuffers accessors of flatbuffer.h. */
#include "model/flatbuffer.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"

omma_status fb_bad(const fb_reader *r, const char *fmt, ...)
{
    char msg[384];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return OMMA_FAIL(OMMA_ERR_FORMAT, "%s: %s", r->what, msg);
}

omma_status fb_table_at(const fb_reader *r, size_t pos, const char *obj, fb_table *t)
{
    if (pos > r->n - 4)
        return fb_bad(r, "%s table at offset %zu runs past the end of the file (size %zu)", obj,
                      pos, r->n);
    if (pos % 4)
        return fb_bad(r, "%s table at offset %zu is not 4-byte aligned", obj, pos);
    long long vt = (long long)pos - (long long)fb_rd_i32(r->b + pos);
    if (vt < 0 || vt > (long long)(r->n - 4))
        return fb_bad(r,
                      "%s table at offset %zu has its vtable at offset %lld, outside the file "
                      "(size %zu)",
                      obj, pos, vt, r->n);
    if (vt % 2)
        return fb_bad(r, "%s vtable at offset %lld is not 2-byte aligned", obj, vt);
    t->pos = pos;
    t->vt = (size_t)vt;
    t->vsize = fb_rd_u16(r->b + t->vt);
    t->tsize = fb_rd_u16(r->b + t->vt + 2);
    t->obj = obj;
    if (t->vsize < 4 || t->vsize % 2 || t->vsize > r->n - t->vt)
        return fb_bad(r, "%s vtable at offset %zu has size %u: %s", obj, t->vt, t->vsize,
                      t->vsize < 4 || t->vsize % 2 ? "not an even size >= 4"
                                                   : "runs past the end of the file");
    if (t->tsize < 4 || t->tsize > r->n - pos)
        return fb_bad(
            r, "%s table at offset %zu declares %u bytes: %s (size %zu)", obj, pos, t->tsize,
            t->tsize < 4 ? "smaller than its vtable offset" : "runs past the end of the file",
            r->n);
    return OMMA_OK;
}

/* Position of field `id` of `size` bytes, 0 when the field is absent. */
omma_status fb_field(const fb_reader *r, const fb_table *t, int id, unsigned size,
                     const char *field, size_t *at)
{
    unsigned entry = 4 + 2 * (unsigned)id;
    *at = 0;
    if (entry + 2 > t->vsize)
        return OMMA_OK;
    unsigned fo = fb_rd_u16(r->b + t->vt + entry);
    if (fo == 0)
        return OMMA_OK;
    if (fo < 4 || fo + size > t->tsize)
        return fb_bad(r,
                      "%s field %s at offset %zu lies outside its table (%u bytes at offset "
                      "%zu)",
                      t->obj, field, t->pos + fo, t->tsize, t->pos);
    if ((t->pos + fo) % size)
        return fb_bad(r, "%s field %s at offset %zu is not %u-byte aligned", t->obj, field,
                      t->pos + fo, size);
    *at = t->pos + fo;
    return OMMA_OK;
}

omma_status fb_field_u8(const fb_reader *r, const fb_table *t, int id, const char *field,
                        uint8_t dflt, uint8_t *v)
{
    size_t at;
    OMMA_TRY(fb_field(r, t, id, 1, field, &at));
    *v = at ? r->b[at] : dflt;
    return OMMA_OK;
}

omma_status fb_field_i32(const fb_reader *r, const fb_table *t, int id, const char *field,
                         int32_t dflt, int32_t *v)
{
    size_t at;
    OMMA_TRY(fb_field(r, t, id, 4, field, &at));
    *v = at ? fb_rd_i32(r->b + at) : dflt;
    return OMMA_OK;
}

omma_status fb_field_u32(const fb_reader *r, const fb_table *t, int id, const char *field,
                         uint32_t *v)
{
    size_t at;
    OMMA_TRY(fb_field(r, t, id, 4, field, &at));
    *v = at ? fb_rd_u32(r->b + at) : 0;
    return OMMA_OK;
}

omma_status fb_field_u64(const fb_reader *r, const fb_table *t, int id, const char *field,
                         uint64_t *v)
{
    size_t at;
    OMMA_TRY(fb_field(r, t, id, 8, field, &at));
    *v = at ? fb_rd_u64(r->b + at) : 0;
    return OMMA_OK;
}

/* Follows the offset stored at `at` (inside the file, 4 bytes) to a
 * 4-aligned position inside the file. */
omma_status fb_follow(const fb_reader *r, size_t at, const char *obj, const char *field,
                      size_t *target)
{
    uint32_t v = fb_rd_u32(r->b + at);
    if (v > r->n - 4 - at) /* at <= n - 4 always holds here */
        return fb_bad(r,
                      "%s %s at offset %zu points to offset %llu, past the end of the file "
                      "(size %zu)",
                      obj, field, at, (unsigned long long)at + v, r->n);
    if ((at + v) % 4)
        return fb_bad(r, "%s %s at offset %zu points to offset %zu, not 4-byte aligned", obj, field,
                      at, at + v);
    *target = at + v;
    return OMMA_OK;
}

/* A sub-table field; *present false when absent. */
omma_status fb_subtable(const fb_reader *r, const fb_table *t, int id, const char *field,
                        const char *obj, fb_table *sub, bool *present)
{
    size_t at = 0, pos = 0;
    *present = false;
    OMMA_TRY(fb_field(r, t, id, 4, field, &at));
    if (!at)
        return OMMA_OK;
    OMMA_TRY(fb_follow(r, at, t->obj, field, &pos));
    OMMA_TRY(fb_table_at(r, pos, obj, sub));
    *present = true;
    return OMMA_OK;
}

/* A vector field of `elem` byte elements: *start (first element) and *len;
 * len 0 when absent. */
omma_status fb_vector_kind(const fb_reader *r, const fb_table *t, int id, size_t elem,
                           const char *field, const char *kind, size_t *start, size_t *len)
{
    size_t at = 0, pos = 0;
    *start = 0;
    *len = 0;
    OMMA_TRY(fb_field(r, t, id, 4, field, &at));
    if (!at)
        return OMMA_OK;
    OMMA_TRY(fb_follow(r, at, t->obj, field, &pos));
    uint32_t count = fb_rd_u32(r->b + pos);
    size_t room = r->n - pos - 4;
    if (count > room / elem)
        return fb_bad(r,
                      "%s %s %s at offset %zu (%u x %zu bytes) runs past the end of the "
                      "file (size %zu)",
                      t->obj, field, kind, pos, count, elem, r->n);
    *start = pos + 4;
    *len = count;
    return OMMA_OK;
}

omma_status fb_vector(const fb_reader *r, const fb_table *t, int id, size_t elem, const char *field,
                      size_t *start, size_t *len)
{
    return fb_vector_kind(r, t, id, elem, field, "vector", start, len);
}

/* A string field: a pointer into the file (NUL-terminated there) or NULL. */
omma_status fb_string(const fb_reader *r, const fb_table *t, int id, const char *field,
                      const char **s)
{
    size_t start, len;
    *s = NULL;
    OMMA_TRY(fb_vector_kind(r, t, id, 1, field, "string", &start, &len));
    if (!start)
        return OMMA_OK;
    if (len >= r->n - start)
        return fb_bad(r, "%s %s string at offset %zu runs past the end of the file (size %zu)",
                      t->obj, field, start - 4, r->n);
    if (r->b[start + len] != 0)
        return fb_bad(r, "%s %s string at offset %zu is not NUL-terminated", t->obj, field,
                      start - 4);
    *s = (const char *)r->b + start;
    return OMMA_OK;
}

/* Element k of a vector of tables starting at `start`. */
omma_status fb_vector_table(const fb_reader *r, size_t start, size_t k, const char *obj,
                            fb_table *t)
{
    size_t pos = 0;
    OMMA_TRY(fb_follow(r, start + 4 * k, obj, "reference", &pos));
    return fb_table_at(r, pos, obj, t);
}

/* A vector of int32 values copied into a new array (*out NULL when empty). */
omma_status fb_int_vector(const fb_reader *r, const fb_table *t, int id, const char *field,
                          size_t max, int **out, int *count)
{
    size_t start, len;
    *out = NULL;
    *count = 0;
    OMMA_TRY(fb_vector(r, t, id, 4, field, &start, &len));
    if (len > max)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "%s: %s has %zu %s (omma reads at most %zu)",
                         r->what, t->obj, len, field, max);
    if (!len)
        return OMMA_OK;
    int *v = malloc(len * sizeof *v);
    if (!v)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: %s %s", r->what, t->obj, field);
    for (size_t i = 0; i < len; i++)
        v[i] = fb_rd_i32(r->b + start + 4 * i);
    *out = v;
    *count = (int)len;
    return OMMA_OK;
}
