#define _POSIX_C_SOURCE 200809L /* strdup, strndup */
/* The cluster's URL (cluster_private.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster_private.h"
#include "core/error.h"

void cluster_url_free(cluster_url *u)
{
    for (int i = 0; i < u->n_servers; i++)
        free(u->servers[i]);
    free(u->user);
    free(u->password);
    memset(u, 0, sizeof *u);
}

static omma_status bad(cluster_url *u, const char *fmt, const char *detail)
{
    char msg[512];
    snprintf(msg, sizeof msg, fmt, detail);
    omma_status st = OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cluster %s: %s", u->shown, msg);
    cluster_url_free(u);
    return st;
}

static int valid_host_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '-' || c == '_' || c == ':' || c == '[' || c == ']';
}

static omma_status add_server(cluster_url *u, const char *h, size_t n)
{
    if (n == 0)
        return bad(u, "%san empty host", "");
    if (u->n_servers == CLUSTER_MAX_HOSTS)
        return bad(u, "more than %s hosts", "16");
    char host[200];
    if (n >= sizeof host - 8)
        return bad(u, "a host name too long%s", "");
    memcpy(host, h, n);
    host[n] = 0;
    for (const char *c = host; *c; c++)
        if (!valid_host_char(*c))
            return bad(u, "a bad character in host '%s'", host);
    const char *colon = host[0] == '[' ? strstr(host, "]:") : strrchr(host, ':');
    if (colon && host[0] == '[')
        colon++;
    if (host[0] == '[' && !strchr(host, ']'))
        return bad(u, "an unclosed '[' in host '%s'", host);
    if (colon) {
        char *e;
        errno = 0;
        long port = strtol(colon + 1, &e, 10);
        if (!colon[1] || *e || errno || port < 1 || port > 65535 || colon == host)
            return bad(u, "bad host:port '%s' (a port is 1..65535)", host);
    }
    char server[320];
    snprintf(server, sizeof server, "nats://%s%s", host, colon ? "" : ":4222");
    if (!(u->servers[u->n_servers] = strdup(server)))
        return bad(u, "out of memory%s", "");
    u->n_servers++;
    return OMMA_OK;
}

static omma_status option(cluster_url *u, const char *key, const char *value)
{
    long lo = 0, hi = 0, *out = NULL;
    if (!strcmp(key, "lease_ms"))
        out = &u->lease_ms, lo = 300, hi = 600000;
    else if (!strcmp(key, "replicas"))
        out = &u->replicas, lo = 1, hi = 5;
    else if (!strcmp(key, "storage")) {
        if (strcmp(value, "file") && strcmp(value, "memory"))
            return bad(u, "storage=%s: want file or memory", value);
        u->memory = !strcmp(value, "memory");
        return OMMA_OK;
    } else {
        return bad(u, "an unknown option '%s' (lease_ms, replicas, storage)", key);
    }
    char *e;
    errno = 0;
    long v = strtol(value, &e, 10);
    if (!*value || *e || errno || v < lo || v > hi) {
        char d[160];
        snprintf(d, sizeof d, "%.40s=%.40s: want an integer %ld..%ld", key, value, lo, hi);
        return bad(u, "option %s", d);
    }
    *out = v;
    return OMMA_OK;
}

omma_status cluster_url_parse(const char *url, cluster_url *u)
{
    memset(u, 0, sizeof *u);
    u->lease_ms = 3000;
    u->replicas = 1;
    snprintf(u->bucket, sizeof u->bucket, "omma");
    if (!url)
        url = "";
    /* The URL as shown: USER:***@ for a password. */
    const char *sep = strstr(url, "://"), *start = sep ? sep + 3 : url;
    size_t an = strcspn(start, "@/?");
    const char *pw = start[an] == '@' ? memchr(start, ':', an) : NULL;
    if (pw)
        snprintf(u->shown, sizeof u->shown, "%.*s:***%.400s", (int)(pw - url), url, start + an);
    else
        snprintf(u->shown, sizeof u->shown, "%.500s", url);
    if (strlen(url) > 2000)
        return bad(u, "the URL is longer than %s bytes", "2000");
    if (strncmp(url, "nats://", 7) != 0)
        return bad(u, "want nats://HOST:PORT[,HOST:PORT...][/BUCKET][?OPTIONS]%s", "");
    const char *p = url + 7;
    size_t auth = strcspn(p, "@/?");
    if (p[auth] == '@') {
        const char *colon = memchr(p, ':', auth);
        size_t un = colon ? (size_t)(colon - p) : auth;
        u->user = strndup(p, un);
        u->password = colon ? strndup(colon + 1, auth - un - 1) : strdup("");
        if (!u->user || !u->password)
            return bad(u, "out of memory%s", "");
        if (!un)
            return bad(u, "an empty user before '@'%s", "");
        p += auth + 1;
    }
    size_t hosts = strcspn(p, "/?");
    for (const char *h = p; h < p + hosts;) {
        const char *comma = memchr(h, ',', (size_t)(p + hosts - h));
        const char *end = comma ? comma : p + hosts;
        OMMA_TRY(add_server(u, h, (size_t)(end - h)));
        h = comma ? comma + 1 : end;
        if (comma && h == p + hosts)
            return bad(u, "%san empty host", "");
    }
    if (u->n_servers == 0)
        return bad(u, "%sno host", "");
    p += hosts;
    if (*p == '/') {
        p++;
        size_t bn = strcspn(p, "?");
        if (bn > 0) {
            char b[CLUSTER_NAME_MAX];
            if (bn >= CLUSTER_NAME_MAX - 8)
                return bad(u, "the bucket name is longer than %s bytes", "55");
            memcpy(b, p, bn);
            b[bn] = 0;
            if (!cluster_name_valid(b))
                return bad(u, "the bucket '%s' is not a name (A-Z a-z 0-9 _ -)", b);
            snprintf(u->bucket, sizeof u->bucket, "%s", b);
        }
        p += bn;
    }
    if (*p == '?') {
        p++;
        while (*p) {
            size_t n = strcspn(p, "&");
            char kv[128];
            if (n >= sizeof kv)
                return bad(u, "an option longer than %s bytes", "127");
            memcpy(kv, p, n);
            kv[n] = 0;
            char *eq = strchr(kv, '=');
            if (!eq)
                return bad(u, "option '%s': want KEY=VALUE", kv);
            *eq = 0;
            OMMA_TRY(option(u, kv, eq + 1));
            p += n + (p[n] == '&');
        }
    }
    snprintf(u->leases, sizeof u->leases, "%s-leases", u->bucket);
    return OMMA_OK;
}
