/* FlexBuffers, read strictly (flexbuffer.h). The format: the last byte is
 * the root's width, the one before it the root's packed type, the root
 * before that. A value of an offset type (map, vector, string, indirect
 * scalar) holds an unsigned distance back from its own slot to the data.
 * A vector's length precedes its elements; an untyped vector's element
 * types follow them, one byte each. A map is an untyped vector of values
 * preceded by (keys offset, keys width, length): its keys are a typed
 * vector of offsets to NUL-terminated strings, sorted. */
#include "model/flexbuffer.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "core/error.h"

enum {
    FX_NULL = 0,
    FX_INT = 1,
    FX_UINT = 2,
    FX_FLOAT = 3,
    FX_KEY = 4,
    FX_STRING = 5,
    FX_INDIRECT_INT = 6,
    FX_INDIRECT_UINT = 7,
    FX_INDIRECT_FLOAT = 8,
    FX_MAP = 9,
    FX_VECTOR = 10,
    FX_VECTOR_INT = 11,
    FX_VECTOR_UINT = 12,
    FX_VECTOR_FLOAT = 13,
    FX_VECTOR_KEY = 14,
    FX_BOOL = 26,
    FX_VECTOR_BOOL = 36,
};

#define FX_MAX_KEYS 4096

static omma_status fx_bad(const fx_ref *r, size_t at, const char *what)
{
    return OMMA_FAIL(OMMA_ERR_FORMAT, "%s: flexbuffer: %s at byte %zu", r->what, what, at);
}

static bool fits(const fx_ref *r, size_t pos, size_t n)
{
    return pos <= r->size && n <= r->size - pos;
}

static uint64_t rd_u(const uint8_t *p, int w)
{
    uint64_t v = 0;
    for (int i = w - 1; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

static int64_t rd_i(const uint8_t *p, int w)
{
    uint64_t v = rd_u(p, w);
    if (w < 8 && (v >> (8 * w - 1)) & 1)
        v |= ~(uint64_t)0 << (8 * w);
    return (int64_t)v;
}

static bool valid_width(int w)
{
    return w == 1 || w == 2 || w == 4 || w == 8;
}

/* The data an offset slot points to, with `before` bytes of prefix needed. */
static omma_status follow(const fx_ref *r, size_t before, size_t *target)
{
    if (!fits(r, r->pos, (size_t)r->slot_width))
        return fx_bad(r, r->pos, "value outside the buffer");
    uint64_t off = rd_u(r->b + r->pos, r->slot_width);
    if (off > r->pos || r->pos - off < before)
        return fx_bad(r, r->pos, "offset points outside the buffer");
    *target = r->pos - (size_t)off;
    return OMMA_OK;
}

omma_status fx_root(const uint8_t *b, size_t size, const char *what, fx_ref *out)
{
    memset(out, 0, sizeof *out);
    out->b = b;
    out->size = size;
    out->what = what ? what : "flexbuffer";
    if (!b || size < 3)
        return fx_bad(out, 0, "fewer than 3 bytes");
    int w = b[size - 1], packed = b[size - 2];
    if (!valid_width(w) || (size_t)w > size - 2)
        return fx_bad(out, size - 1, "bad root width");
    out->pos = size - 2 - (size_t)w;
    out->slot_width = w;
    out->type = packed >> 2;
    out->width = 1 << (packed & 3);
    return OMMA_OK;
}

/* A vector's data position and length (typed or untyped, or a map's values). */
static omma_status vector_at(const fx_ref *r, size_t extra_before, size_t *data, size_t *len)
{
    size_t t;
    OMMA_TRY(follow(r, (size_t)r->width * (1 + extra_before), &t));
    uint64_t n = rd_u(r->b + t - (size_t)r->width, r->width);
    bool untyped = r->type == FX_MAP || r->type == FX_VECTOR;
    size_t per = (size_t)r->width + (untyped ? 1 : 0);
    if (n > (r->size - t) / per)
        return fx_bad(r, t, "vector longer than the buffer");
    *data = t;
    *len = (size_t)n;
    return OMMA_OK;
}

/* Element k of a vector at data (untyped: with its type byte). */
static void element(const fx_ref *v, size_t data, size_t len, size_t k, fx_ref *out)
{
    *out = *v;
    out->pos = data + k * (size_t)v->width;
    out->slot_width = v->width;
    if (v->type == FX_MAP || v->type == FX_VECTOR) {
        int packed = v->b[data + len * (size_t)v->width + k];
        out->type = packed >> 2;
        out->width = 1 << (packed & 3);
    } else {
        out->type = v->type == FX_VECTOR_INT     ? FX_INT
                    : v->type == FX_VECTOR_UINT  ? FX_UINT
                    : v->type == FX_VECTOR_FLOAT ? FX_FLOAT
                    : v->type == FX_VECTOR_BOOL  ? FX_BOOL
                                                 : FX_KEY;
        out->width = v->width;
    }
}

omma_status fx_map_get(const fx_ref *m, const char *key, fx_ref *out, bool *found)
{
    *found = false;
    if (m->type != FX_MAP || !valid_width(m->width))
        return fx_bad(m, m->pos, "expected a map");
    size_t data, len;
    OMMA_TRY(vector_at(m, 2, &data, &len));
    if (len > FX_MAX_KEYS)
        return fx_bad(m, data, "map of too many keys");
    /* keys: (offset, width) stored before the length */
    fx_ref k = *m;
    k.pos = data - 3 * (size_t)m->width;
    k.slot_width = m->width;
    k.type = FX_VECTOR_KEY;
    uint64_t kw = rd_u(m->b + data - 2 * (size_t)m->width, m->width);
    if (!valid_width((int)(kw > 8 ? 0 : kw)))
        return fx_bad(m, data - 2 * (size_t)m->width, "bad key vector width");
    k.width = (int)kw;
    size_t kdata, klen;
    OMMA_TRY(vector_at(&k, 0, &kdata, &klen));
    if (klen != len)
        return fx_bad(m, kdata, "map with different numbers of keys and values");
    size_t want = strlen(key);
    for (size_t i = 0; i < len; i++) {
        fx_ref ki;
        element(&k, kdata, klen, i, &ki);
        size_t s;
        OMMA_TRY(follow(&ki, 0, &s));
        const uint8_t *z = memchr(m->b + s, 0, m->size - s);
        if (!z)
            return fx_bad(m, s, "key without its NUL");
        if ((size_t)(z - (m->b + s)) == want && !memcmp(m->b + s, key, want)) {
            element(m, data, len, i, out);
            *found = true;
            return OMMA_OK;
        }
    }
    return OMMA_OK;
}

/* An inline or indirect scalar, as int64 (integers) or double. */
static omma_status scalar(const fx_ref *r, const char *key, bool *is_float, int64_t *iv, double *fv)
{
    char msg[96];
    size_t at = r->pos;
    int w = r->slot_width, type = r->type;
    if (type == FX_INDIRECT_INT || type == FX_INDIRECT_UINT || type == FX_INDIRECT_FLOAT) {
        OMMA_TRY(follow(r, 0, &at));
        w = r->width;
        type = type - FX_INDIRECT_INT + FX_INT;
    }
    if (!valid_width(w) || !fits(r, at, (size_t)w)) {
        snprintf(msg, sizeof msg, "'%s' outside the buffer", key);
        return fx_bad(r, at, msg);
    }
    *is_float = false;
    switch (type) {
    case FX_INT:
        *iv = rd_i(r->b + at, w);
        return OMMA_OK;
    case FX_UINT:
    case FX_BOOL: {
        uint64_t u = rd_u(r->b + at, w);
        if (u > INT64_MAX)
            break;
        *iv = (int64_t)u;
        return OMMA_OK;
    }
    case FX_FLOAT:
        if (w == 4) {
            uint32_t u = (uint32_t)rd_u(r->b + at, 4);
            float f;
            memcpy(&f, &u, 4);
            *fv = f;
        } else if (w == 8) {
            uint64_t u = rd_u(r->b + at, 8);
            memcpy(fv, &u, 8);
        } else {
            break;
        }
        *is_float = true;
        return OMMA_OK;
    default:
        break;
    }
    snprintf(msg, sizeof msg, "'%s' is not a number (type %d, width %d)", key, type, w);
    return fx_bad(r, at, msg);
}

omma_status fx_int(const fx_ref *r, const char *key, int32_t *v)
{
    bool f;
    int64_t i = 0;
    double d = 0;
    OMMA_TRY(scalar(r, key, &f, &i, &d));
    if (f) {
        if (!(d >= INT32_MIN && d <= INT32_MAX) || d != floor(d))
            return OMMA_FAIL(OMMA_ERR_FORMAT, "%s: '%s' is %g, expected an integer", r->what, key,
                             d);
        *v = (int32_t)d;
        return OMMA_OK;
    }
    if (i < INT32_MIN || i > INT32_MAX)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "%s: '%s' is %lld, out of range", r->what, key,
                         (long long)i);
    *v = (int32_t)i;
    return OMMA_OK;
}

omma_status fx_float(const fx_ref *r, const char *key, double *v)
{
    bool f;
    int64_t i = 0;
    double d = 0;
    OMMA_TRY(scalar(r, key, &f, &i, &d));
    *v = f ? d : (double)i;
    return OMMA_OK;
}

static omma_status want_int_vector(const fx_ref *r, const char *key)
{
    if (r->type == FX_VECTOR_INT || r->type == FX_VECTOR_UINT || r->type == FX_VECTOR)
        return valid_width(r->width) ? OMMA_OK : fx_bad(r, r->pos, "bad vector width");
    char msg[96];
    snprintf(msg, sizeof msg, "'%s' is not a vector of integers (type %d)", key, r->type);
    return fx_bad(r, r->pos, msg);
}

omma_status fx_vector_len(const fx_ref *r, const char *key, size_t *len)
{
    OMMA_TRY(want_int_vector(r, key));
    size_t data;
    return vector_at(r, 0, &data, len);
}

omma_status fx_vector_int(const fx_ref *r, const char *key, size_t k, int32_t *v)
{
    OMMA_TRY(want_int_vector(r, key));
    size_t data, len;
    OMMA_TRY(vector_at(r, 0, &data, &len));
    if (k >= len)
        return fx_bad(r, data, "vector index out of range");
    fx_ref e;
    element(r, data, len, k, &e);
    if (e.type != FX_INT && e.type != FX_UINT)
        return fx_bad(r, e.pos, "vector element is not an integer");
    return fx_int(&e, key, v);
}
