#define _POSIX_C_SOURCE 200809L /* strdup, strndup */
/* Sink URLs: SCHEME://[USER[:PASSWORD]@]HOST[:PORT][,HOST[:PORT]...][/PATH][?K=V&...]. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "sink/sink_private.h"

static const struct {
    const char *scheme;
    sink_kind kind;
    int tls;
    const char *port;
} schemes[] = {
    {"kafka", SINK_KAFKA, 0, "9092"},   {"nats", SINK_NATS, 0, "4222"},
    {"nats+tls", SINK_NATS, 1, "4222"}, {"tls", SINK_NATS, 1, "4222"},
    {"mqtt", SINK_MQTT, 0, "1883"},     {"mqtts", SINK_MQTT, 1, "8883"},
};

void sink_url_free(sink_url *u)
{
    free(u->user);
    free(u->password);
    for (int i = 0; i < u->n_hosts; i++)
        free(u->hosts[i]);
    free(u->path);
    for (int i = 0; i < u->n_params; i++) {
        free(u->params[i].key);
        free(u->params[i].value);
    }
    memset(u, 0, sizeof *u);
}

/* %XX decoding in place; -1 on a bad escape. */
static int unescape(char *s)
{
    char *w = s;
    for (char *r = s; *r; r++) {
        if (*r != '%') {
            *w++ = *r;
            continue;
        }
        char hex[3] = {r[1], r[1] ? r[2] : 0, 0};
        char *end;
        long v = strtol(hex, &end, 16);
        if (!hex[0] || !hex[1] || *end || v == 0)
            return -1;
        *w++ = (char)v;
        r += 2;
    }
    *w = 0;
    return 0;
}

static int valid_port(const char *p)
{
    if (!*p || strlen(p) > 5)
        return 0;
    for (const char *c = p; *c; c++)
        if (*c < '0' || *c > '9')
            return 0;
    long v = strtol(p, NULL, 10);
    return v >= 1 && v <= 65535;
}

static omma_status add_host(sink_url *u, const char *name, const char *h, size_t n,
                            const char *port)
{
    if (n == 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: an empty host in the URL", name);
    if (u->n_hosts == SINK_MAX_HOSTS)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: more than %d hosts", name, SINK_MAX_HOSTS);
    const char *colon = memchr(h, ':', n);
    if (h[0] == '[') /* [IPv6]:port */
        colon = memchr(h, ']', n) ? strchr(memchr(h, ']', n), ':') : NULL;
    if (colon && colon >= h + n)
        colon = NULL;
    char portbuf[16];
    if (colon) {
        size_t pn = (size_t)(h + n - colon - 1);
        if (pn >= sizeof portbuf)
            pn = sizeof portbuf - 1;
        memcpy(portbuf, colon + 1, pn);
        portbuf[pn] = 0;
        if (!valid_port(portbuf))
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: bad port '%.*s' (want 1..65535)", name,
                             (int)(h + n - colon - 1), colon + 1);
        n = (size_t)(colon - h);
        if (n == 0)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: an empty host in the URL", name);
    }
    for (size_t i = 0; i < n; i++) {
        char c = h[i];
        if (!(c == '.' || c == '-' || c == '_' || c == ':' || c == '[' || c == ']' ||
              (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')))
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: bad character '%c' in host '%.*s'",
                             name, c, (int)n, h);
    }
    size_t len = n + 1 + strlen(colon ? portbuf : port) + 1;
    char *s = malloc(len);
    if (!s)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "sink %s: out of memory", name);
    snprintf(s, len, "%.*s:%s", (int)n, h, colon ? portbuf : port);
    u->hosts[u->n_hosts++] = s;
    return OMMA_OK;
}

static omma_status parse_query(sink_url *u, const char *name, const char *q)
{
    while (*q) {
        const char *amp = strchr(q, '&');
        size_t n = amp ? (size_t)(amp - q) : strlen(q);
        const char *eq = memchr(q, '=', n);
        if (!eq || eq == q)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: bad option '%.*s' (want KEY=VALUE)",
                             name, (int)n, q);
        if (u->n_params == SINK_MAX_PARAMS)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: more than %d options", name,
                             SINK_MAX_PARAMS);
        sink_param *p = &u->params[u->n_params];
        p->key = strndup(q, (size_t)(eq - q));
        p->value = strndup(eq + 1, (size_t)(q + n - eq - 1));
        u->n_params++;
        if (!p->key || !p->value)
            return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "sink %s: out of memory", name);
        if (unescape(p->key) || unescape(p->value))
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: bad %%-escape in option '%.*s'", name,
                             (int)n, q);
        for (int i = 0; i < u->n_params - 1; i++)
            if (!strcmp(u->params[i].key, p->key))
                return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: option '%s' given twice", name,
                                 p->key);
        q += n + (amp ? 1 : 0);
    }
    return OMMA_OK;
}

static omma_status parse(const char *url, const char *name, sink_url *u)
{
    const char *sep = strstr(url, "://");
    if (!sep)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "sink %s: not a URL (want kafka://BROKERS/TOPIC, nats://HOST:PORT/SUBJECT "
                         "or mqtt://HOST:PORT/TOPIC)",
                         name);
    size_t sn = (size_t)(sep - url);
    int found = 0;
    const char *port = NULL;
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
        if (strlen(schemes[i].scheme) == sn && !strncmp(url, schemes[i].scheme, sn)) {
            u->kind = schemes[i].kind;
            u->tls = schemes[i].tls;
            port = schemes[i].port;
            found = 1;
        }
    if (!found)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "sink %s: unknown scheme '%.*s' (kafka, nats, nats+tls, mqtt, mqtts)",
                         name, (int)sn, url);
    const char *auth = sep + 3;
    const char *end = auth + strcspn(auth, "/?");
    const char *at = memchr(auth, '@', (size_t)(end - auth));
    const char *hosts = auth;
    if (at) {
        const char *colon = memchr(auth, ':', (size_t)(at - auth));
        u->user = strndup(auth, (size_t)((colon ? colon : at) - auth));
        if (colon)
            u->password = strndup(colon + 1, (size_t)(at - colon - 1));
        if (!u->user || (colon && !u->password))
            return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "sink %s: out of memory", name);
        if (unescape(u->user) || (u->password && unescape(u->password)))
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                             "sink %s: bad %%-escape in the user name or "
                             "password",
                             name);
        if (!*u->user)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: an empty user name", name);
        hosts = at + 1;
    }
    if (hosts == end)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: no host in the URL", name);
    for (const char *h = hosts; h < end;) {
        const char *comma = memchr(h, ',', (size_t)(end - h));
        const char *he = comma ? comma : end;
        OMMA_TRY(add_host(u, name, h, (size_t)(he - h), port));
        h = comma ? comma + 1 : end;
        if (comma && h == end)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: an empty host in the URL", name);
    }
    const char *path = end;
    const char *query = strchr(path, '?');
    size_t pn = query ? (size_t)(query - path) : strlen(path);
    if (pn > 0 && *path == '/') {
        path++;
        pn--;
    }
    u->path = strndup(path, pn);
    if (!u->path)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "sink %s: out of memory", name);
    if (unescape(u->path))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: bad %%-escape in the path", name);
    if (query)
        OMMA_TRY(parse_query(u, name, query + 1));
    return OMMA_OK;
}

omma_status sink_url_parse(const char *url, const char *name, sink_url *u)
{
    memset(u, 0, sizeof *u);
    omma_status st = parse(url, name, u);
    if (st != OMMA_OK)
        sink_url_free(u);
    return st;
}

const char *sink_url_param(sink_url *u, const char *key)
{
    for (int i = 0; i < u->n_params; i++)
        if (!strcmp(u->params[i].key, key)) {
            u->params[i].used = 1;
            return u->params[i].value;
        }
    return NULL;
}

omma_status sink_url_int(sink_url *u, const char *name, const char *key, long lo, long hi, long def,
                         long *out)
{
    const char *v = sink_url_param(u, key);
    *out = def;
    if (!v)
        return OMMA_OK;
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (!*v || *end || errno || x < lo || x > hi)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: option %s=%s: want an integer %ld..%ld",
                         name, key, v, lo, hi);
    *out = x;
    return OMMA_OK;
}

int sink_expand(const char *template, const char *site, const char *node, const char *camera,
                char *out, size_t cap)
{
    size_t n = 0;
    for (const char *t = template; *t;) {
        const char *val = NULL;
        size_t skip = 0;
        if (*t != '{') { /* per message: no compare for each byte */
            if (n + 1 >= cap)
                return -1;
            out[n++] = *t++;
            continue;
        }
        if (!strncmp(t, "{site}", 6))
            val = site, skip = 6;
        else if (!strncmp(t, "{node}", 6))
            val = node, skip = 6;
        else if (!strncmp(t, "{camera}", 8))
            val = camera, skip = 8;
        if (val) {
            size_t vn = strlen(val);
            if (n + vn >= cap)
                return -1;
            memcpy(out + n, val, vn);
            n += vn;
            t += skip;
        } else {
            if (n + 1 >= cap)
                return -1;
            out[n++] = *t++;
        }
    }
    if (n >= cap)
        return -1;
    out[n] = 0;
    return (int)n;
}
