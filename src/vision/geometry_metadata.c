/* The protobuf wire format, read strictly for GeometryPipelineMetadata
 * (geometry_metadata.h). A message is a sequence of (key, value): key a
 * varint holding field << 3 | wire type; values: 0 varint, 1 8 bytes, 2 a
 * varint length then that many bytes (a sub-message, or a packed repeated
 * field), 5 4 bytes (a float). */
#include "vision/geometry_metadata.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define GEO_MAX_FILE ((size_t)16 << 20)
#define GEO_VERTEX_SIZE 5 /* VERTEX_PT: x, y, z, u, v */

typedef struct pb {
    const uint8_t *b;
    size_t pos, end; /* the message is b[pos, end) */
    const char *what;
} pb;

static omma_status pb_bad(const pb *p, size_t at, const char *msg)
{
    return OMMA_FAIL(OMMA_ERR_FORMAT, "%s: face geometry metadata: %s at byte %zu", p->what, msg,
                     at);
}

static omma_status varint(pb *p, uint64_t *v)
{
    uint64_t x = 0;
    size_t start = p->pos;
    for (int shift = 0; shift < 64; shift += 7) {
        if (p->pos >= p->end)
            return pb_bad(p, start, "truncated varint");
        uint8_t c = p->b[p->pos++];
        if (shift == 63 && c > 1)
            return pb_bad(p, start, "varint longer than 64 bits");
        x |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            *v = x;
            return OMMA_OK;
        }
    }
    return pb_bad(p, start, "varint longer than 10 bytes");
}

static omma_status fixed32(pb *p, float *v)
{
    if (p->end - p->pos < 4)
        return pb_bad(p, p->pos, "truncated 32-bit value");
    uint32_t u = (uint32_t)p->b[p->pos] | (uint32_t)p->b[p->pos + 1] << 8 |
                 (uint32_t)p->b[p->pos + 2] << 16 | (uint32_t)p->b[p->pos + 3] << 24;
    memcpy(v, &u, 4);
    p->pos += 4;
    return OMMA_OK;
}

/* A length-delimited value: the sub-range it spans (p moves past it). */
static omma_status delimited(pb *p, pb *sub)
{
    uint64_t n = 0;
    size_t at = p->pos;
    OMMA_TRY(varint(p, &n));
    if (n > p->end - p->pos)
        return pb_bad(p, at, "length past the end of its message");
    *sub = (pb){.b = p->b, .pos = p->pos, .end = p->pos + (size_t)n, .what = p->what};
    p->pos += (size_t)n;
    return OMMA_OK;
}

static omma_status skip(pb *p, int wire, size_t at)
{
    uint64_t v;
    pb sub = {0};
    switch (wire) {
    case 0:
        return varint(p, &v);
    case 1:
        if (p->end - p->pos < 8)
            return pb_bad(p, at, "truncated 64-bit value");
        p->pos += 8;
        return OMMA_OK;
    case 2:
        return delimited(p, &sub);
    case 5:
        if (p->end - p->pos < 4)
            return pb_bad(p, at, "truncated 32-bit value");
        p->pos += 4;
        return OMMA_OK;
    default:
        return pb_bad(p, at, "unsupported wire type (groups or reserved)");
    }
}

static omma_status key(pb *p, int *field, int *wire)
{
    uint64_t k;
    size_t at = p->pos;
    OMMA_TRY(varint(p, &k));
    if ((k >> 3) == 0 || (k >> 3) > 0x1fffffff)
        return pb_bad(p, at, "field number 0 or out of range");
    *field = (int)(k >> 3);
    *wire = (int)(k & 7);
    return OMMA_OK;
}

/* Mesh3d: vertex_type 1, primitive_type 2, vertex_buffer 3 (floats, packed
 * or not), index_buffer 4 (not needed: skipped). */
static omma_status mesh(pb *p, vis_geometry *out, int *n_floats)
{
    *n_floats = 0;
    while (p->pos < p->end) {
        int f = 0, w = 0;
        size_t at = p->pos;
        OMMA_TRY(key(p, &f, &w));
        if (f == 1 && w == 0) {
            uint64_t t;
            OMMA_TRY(varint(p, &t));
            if (t != 0)
                return pb_bad(p, at, "vertex_type is not VERTEX_PT");
        } else if (f == 3 && (w == 2 || w == 5)) {
            pb sub = *p;
            if (w == 2)
                OMMA_TRY(delimited(p, &sub));
            else
                sub.end = p->pos + 4 <= p->end ? p->pos + 4 : p->end;
            if (w == 2 && (sub.end - sub.pos) % 4)
                return pb_bad(p, at, "packed vertex_buffer not a whole number of floats");
            while (sub.pos < sub.end) {
                float v;
                size_t vat = sub.pos;
                OMMA_TRY(fixed32(&sub, &v));
                int k = (*n_floats)++;
                if (k >= OMMA_FACE_LANDMARKS * GEO_VERTEX_SIZE)
                    return pb_bad(p, vat, "more than 468 vertices");
                if (!isfinite(v))
                    return pb_bad(p, vat, "a vertex coordinate is not finite");
                if (k % GEO_VERTEX_SIZE < 3)
                    out->canonical[k / GEO_VERTEX_SIZE][k % GEO_VERTEX_SIZE] = v;
            }
            if (w == 5)
                p->pos = sub.pos;
        } else {
            OMMA_TRY(skip(p, w, at));
        }
    }
    return OMMA_OK;
}

/* WeightedLandmarkRef: landmark_id 1, weight 2. */
static omma_status basis(pb *p, size_t at, vis_geometry *out)
{
    uint64_t id = 0;
    float weight = 0;
    while (p->pos < p->end) {
        int f = 0, w = 0;
        size_t fat = p->pos;
        OMMA_TRY(key(p, &f, &w));
        if (f == 1 && w == 0)
            OMMA_TRY(varint(p, &id));
        else if (f == 2 && w == 5)
            OMMA_TRY(fixed32(p, &weight));
        else
            OMMA_TRY(skip(p, w, fat));
    }
    if (id >= OMMA_FACE_LANDMARKS)
        return pb_bad(p, at, "a basis landmark_id past the 468 landmarks");
    if (!(weight >= 0 && weight < 1e30f))
        return pb_bad(p, at, "a basis weight negative or not finite");
    if (out->weight[id] == 0 && weight > 0)
        out->n_basis++;
    out->weight[id] = weight;
    return OMMA_OK;
}

omma_status vis_geometry_parse(const uint8_t *b, size_t size, const char *what, vis_geometry *out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face geometry metadata: NULL out");
    memset(out, 0, sizeof *out);
    pb p = {.b = b, .pos = 0, .end = b ? size : 0, .what = what ? what : "metadata"};
    int n_floats = 0, meshes = 0;
    while (p.pos < p.end) {
        int f = 0, w = 0;
        size_t at = p.pos;
        OMMA_TRY(key(&p, &f, &w));
        pb sub = {0};
        if (f == 1 && w == 2) {
            OMMA_TRY(delimited(&p, &sub));
            if (meshes++)
                return pb_bad(&p, at, "a second canonical_mesh");
            OMMA_TRY(mesh(&sub, out, &n_floats));
        } else if (f == 2 && w == 2) {
            OMMA_TRY(delimited(&p, &sub));
            OMMA_TRY(basis(&sub, at, out));
        } else if (f == 3 && w == 0) {
            uint64_t src;
            OMMA_TRY(varint(&p, &src));
            if (src > 1)
                return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                                 "%s: face geometry metadata: input_source %llu (only the face "
                                 "landmark pipeline's)",
                                 p.what, (unsigned long long)src);
        } else {
            OMMA_TRY(skip(&p, w, at));
        }
    }
    if (n_floats != OMMA_FACE_LANDMARKS * GEO_VERTEX_SIZE)
        return OMMA_FAIL(OMMA_ERR_FORMAT,
                         "%s: face geometry metadata: canonical mesh of %d values, expected %d "
                         "(468 vertices of x, y, z, u, v)",
                         p.what, n_floats, OMMA_FACE_LANDMARKS * GEO_VERTEX_SIZE);
    double total = 0;
    for (int i = 0; i < OMMA_FACE_LANDMARKS; i++)
        total += out->weight[i];
    if (!(total > 1e-9))
        return OMMA_FAIL(OMMA_ERR_FORMAT,
                         "%s: face geometry metadata: the Procrustes basis has no weight", p.what);
    return OMMA_OK;
}

omma_status vis_geometry_load(const char *path, vis_geometry *out)
{
    if (!path || !out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face geometry metadata: NULL path or out");
    FILE *f = fopen(path, "rb");
    if (!f)
        return OMMA_FAIL(OMMA_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    uint8_t *b = malloc(GEO_MAX_FILE + 1);
    if (!b) {
        fclose(f);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: read buffer", path);
    }
    size_t n = fread(b, 1, GEO_MAX_FILE + 1, f);
    int err = ferror(f);
    fclose(f);
    omma_status st;
    if (err)
        st = OMMA_FAIL(OMMA_ERR_IO, "%s: read error", path);
    else if (n > GEO_MAX_FILE)
        st = OMMA_FAIL(OMMA_ERR_FORMAT, "%s: larger than 16 MiB", path);
    else
        st = vis_geometry_parse(b, n, path, out);
    free(b);
    return st;
}
