/* The cluster's key-value values (cluster_value.h): KEY=VALUE lines. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster_value.h"
#include "core/error.h"

int cluster_name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n >= CLUSTER_NAME_MAX)
        return 0;
    for (const char *c = name; *c; c++)
        if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
              *c == '_' || *c == '-'))
            return 0;
    return 1;
}

/* Calls field(ctx, key, value) for each KEY=VALUE line; key and value are
 * NUL-terminated copies (bounded). */
typedef omma_status (*field_fn)(void *ctx, const char *what, int line, const char *key,
                                const char *value);

static omma_status each_line(const void *data, size_t len, const char *what, field_fn field,
                             void *ctx)
{
    if (len > CLUSTER_VALUE_MAX)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: the value is %zu bytes (at most %d)", what, len,
                         CLUSTER_VALUE_MAX);
    const char *p = data, *end = p + len;
    char key[32], value[CLUSTER_SPEC_MAX];
    for (int line = 1; p < end; line++) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            eol = end;
        for (const char *c = p; c < eol; c++)
            if ((unsigned char)*c < 0x20 || *c == 0x7f)
                return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: line %d: a control character (0x%02x)",
                                 what, line, (unsigned char)*c);
        size_t n = (size_t)(eol - p);
        if (n > 0 && *p != '#') {
            const char *eq = memchr(p, '=', n);
            if (!eq || eq == p)
                return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: line %d: want KEY=VALUE", what, line);
            size_t kn = (size_t)(eq - p), vn = n - kn - 1;
            if (kn >= sizeof key)
                return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: line %d: an unknown key '%.*s...'",
                                 what, line, (int)(sizeof key - 1), p);
            if (vn >= sizeof value)
                return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                                 "%s: line %d: the value of %.*s is %zu bytes (at most %zu)", what,
                                 line, (int)kn, p, vn, sizeof value - 1);
            memcpy(key, p, kn);
            key[kn] = 0;
            memcpy(value, eq + 1, vn);
            value[vn] = 0;
            OMMA_TRY(field(ctx, what, line, key, value));
        }
        p = eol + 1;
    }
    return OMMA_OK;
}

static omma_status integer(const char *what, int line, const char *key, const char *v, long long lo,
                           long long hi, long long *out)
{
    char *e;
    errno = 0;
    long long x = strtoll(v, &e, 10);
    if (!*v || *e || errno || x < lo || x > hi || !(*v >= '0' && *v <= '9'))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: line %d: %s=%s: want an integer %lld..%lld",
                         what, line, key, v, lo, hi);
    *out = x;
    return OMMA_OK;
}

typedef struct camera_ctx {
    cluster_camera *c;
    int has_source, has_max;
} camera_ctx;

static omma_status camera_field(void *ctx, const char *what, int line, const char *key,
                                const char *value)
{
    camera_ctx *cc = ctx;
    if (!strcmp(key, "source")) {
        if (cc->has_source++)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: line %d: source given twice", what, line);
        if (!*value)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: line %d: an empty source", what, line);
        snprintf(cc->c->source, sizeof cc->c->source, "%s", value);
        return OMMA_OK;
    }
    if (!strcmp(key, "max_frames")) {
        if (cc->has_max++)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: line %d: max_frames given twice", what,
                             line);
        return integer(what, line, key, value, 0, 1000000000000LL, &cc->c->max_frames);
    }
    return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                     "%s: line %d: an unknown key '%s' (a camera has source, max_frames)", what,
                     line, key);
}

omma_status cluster_camera_parse(const void *data, size_t len, const char *what,
                                 cluster_camera *out)
{
    memset(out, 0, sizeof *out);
    camera_ctx cc = {out, 0, 0};
    omma_status st = each_line(data, len, what, camera_field, &cc);
    if (st == OMMA_OK && !cc.has_source)
        st = OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: no source= line", what);
    if (st != OMMA_OK)
        memset(out, 0, sizeof *out);
    return st;
}

typedef struct node_ctx {
    cluster_node_info *n;
    unsigned seen;
} node_ctx;

static omma_status node_field(void *ctx, const char *what, int line, const char *key,
                              const char *value)
{
    node_ctx *nc = ctx;
    static const char *const keys[] = {"weight", "cameras", "draining"};
    static const long long hi[] = {1000000, 1000000, 1};
    for (int i = 0; i < 3; i++) {
        if (strcmp(key, keys[i]) != 0)
            continue;
        if (nc->seen & (1u << i))
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: line %d: %s given twice", what, line, key);
        nc->seen |= 1u << i;
        long long v = 0;
        OMMA_TRY(integer(what, line, key, value, 0, hi[i], &v));
        if (i == 0)
            nc->n->weight = (long)v;
        else if (i == 1)
            nc->n->cameras = (long)v;
        else
            nc->n->draining = (int)v;
        return OMMA_OK;
    }
    return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                     "%s: line %d: an unknown key '%s' (a node has weight, cameras, draining)",
                     what, line, key);
}

omma_status cluster_node_parse(const void *data, size_t len, const char *what,
                               cluster_node_info *out)
{
    memset(out, 0, sizeof *out);
    node_ctx nc = {out, 0};
    omma_status st = each_line(data, len, what, node_field, &nc);
    if (st != OMMA_OK)
        memset(out, 0, sizeof *out);
    return st;
}

typedef struct owner_ctx {
    char *node;
} owner_ctx;

static omma_status owner_field(void *ctx, const char *what, int line, const char *key,
                               const char *value)
{
    owner_ctx *oc = ctx;
    if (strcmp(key, "node") != 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "%s: line %d: an unknown key '%s' (an owner has node)", what, line, key);
    if (oc->node[0])
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: line %d: node given twice", what, line);
    if (!cluster_name_valid(value))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "%s: line %d: node '%.64s' is not a name (1..%d of A-Z a-z 0-9 _ -)", what,
                         line, value, CLUSTER_NAME_MAX - 1);
    snprintf(oc->node, CLUSTER_NAME_MAX, "%s", value);
    return OMMA_OK;
}

omma_status cluster_owner_parse(const void *data, size_t len, const char *what, char *node)
{
    node[0] = 0;
    owner_ctx oc = {node};
    omma_status st = each_line(data, len, what, owner_field, &oc);
    if (st == OMMA_OK && !node[0])
        st = OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: no node= line", what);
    if (st != OMMA_OK)
        node[0] = 0;
    return st;
}

static int fit(int n, size_t cap)
{
    return n < 0 || (size_t)n >= cap ? -1 : n;
}

int cluster_camera_format(const cluster_camera *c, char *out, size_t cap)
{
    if (c->max_frames > 0)
        return fit(snprintf(out, cap, "source=%s\nmax_frames=%lld\n", c->source, c->max_frames),
                   cap);
    return fit(snprintf(out, cap, "source=%s\n", c->source), cap);
}

int cluster_node_format(const cluster_node_info *n, char *out, size_t cap)
{
    return fit(snprintf(out, cap, "weight=%ld\ncameras=%ld\ndraining=%d\n", n->weight, n->cameras,
                        n->draining),
               cap);
}

int cluster_owner_format(const char *node, char *out, size_t cap)
{
    return fit(snprintf(out, cap, "node=%s\n", node), cap);
}
