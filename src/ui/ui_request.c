/* The live view's request parsing (ui_request.h). Everything here reads
 * bounded prefixes of its input and writes only inside given buffers. */
#define _POSIX_C_SOURCE 200809L /* strnlen */
#include "ui/ui_request.h"

#include <stdio.h>
#include <string.h>

static int is_path_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
           c == '.' || c == '_' || c == '-';
}

static int is_token_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

/* A decimal 0..n-1 spelled exactly in [s, s + len): its value, or -1. */
static int index_in(const char *s, size_t len, int n)
{
    if (len == 0 || len > 9 || (len > 1 && s[0] == '0'))
        return -1;
    long v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v < n ? (int)v : -1;
}

ui_route ui_route_parse(const char *path, int n_cameras, int *arg)
{
    int dummy;
    if (!arg)
        arg = &dummy;
    *arg = -1;
    if (!path || path[0] != '/')
        return UI_ROUTE_BAD;
    size_t len = strnlen(path, UI_URL_MAX + 1);
    if (len > UI_URL_MAX)
        return UI_ROUTE_BAD;
    for (size_t i = 0; i < len; i++)
        if (!is_path_char(path[i]))
            return UI_ROUTE_BAD;
    /* Segments: none empty (but the root's), none "." or "..". */
    for (const char *seg = path + 1; len > 1;) {
        const char *end = strchr(seg, '/');
        size_t n = end ? (size_t)(end - seg) : strlen(seg);
        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
            return UI_ROUTE_BAD;
        if (!end)
            break;
        seg = end + 1;
    }
    if (strcmp(path, "/") == 0 || strcmp(path, "/index.html") == 0) {
        for (int i = 0; i < ui_n_assets; i++)
            if (strcmp(ui_assets[i].name, "index.html") == 0)
                return *arg = i, UI_ROUTE_ASSET;
        return UI_ROUTE_NOT_FOUND;
    }
    if (strcmp(path, "/api/events") == 0)
        return UI_ROUTE_EVENTS;
    if (strcmp(path, "/metrics") == 0)
        return UI_ROUTE_METRICS;
    static const char preview[] = "/api/preview/";
    if (strncmp(path, preview, sizeof preview - 1) == 0) {
        const char *n = path + sizeof preview - 1;
        size_t nlen = strlen(n);
        if (nlen < 5 || strcmp(n + nlen - 4, ".jpg") != 0)
            return UI_ROUTE_NOT_FOUND;
        int cam = index_in(n, nlen - 4, n_cameras);
        if (cam < 0)
            return UI_ROUTE_NOT_FOUND;
        return *arg = cam, UI_ROUTE_PREVIEW;
    }
    if (strchr(path + 1, '/') == NULL)
        for (int i = 0; i < ui_n_assets; i++)
            if (strcmp(ui_assets[i].name, path + 1) == 0)
                return *arg = i, UI_ROUTE_ASSET;
    return UI_ROUTE_NOT_FOUND;
}

int ui_parse_cameras(const char *list, int n_cameras, int *out, int max)
{
    if (!list || !list[0])
        return 0;
    if (strnlen(list, 1025) > 1024)
        return -1;
    int count = 0;
    for (const char *p = list;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int cam = index_in(p, len, n_cameras);
        if (cam < 0)
            return -1;
        int dup = 0;
        for (int i = 0; i < count && !dup; i++)
            dup = out[i] == cam;
        if (!dup) {
            if (count == max)
                return -1;
            out[count++] = cam;
        }
        if (!comma)
            return count;
        p = comma + 1;
    }
}

int ui_parse_size(const char *v)
{
    if (!v || strcmp(v, "thumb") == 0)
        return 0;
    return strcmp(v, "large") == 0 ? 1 : -1;
}

int ui_token_valid(const char *v)
{
    if (!v)
        return 0;
    size_t len = strnlen(v, UI_TOKEN_MAX + 1);
    if (len < UI_TOKEN_MIN || len > UI_TOKEN_MAX)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!is_token_char(v[i]))
            return 0;
    return 1;
}

int ui_token_equal(const char *given, const char *expected)
{
    if (!given || !expected)
        return 0;
    size_t n = strlen(expected);
    size_t g = strnlen(given, UI_TOKEN_MAX + 1);
    unsigned diff = (unsigned)(g != n);
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned)((unsigned char)(i < g ? given[i] : 0) ^ (unsigned char)expected[i]);
    return diff == 0;
}

/* The token in [s, s + len) into out when well-formed. */
static int take_token(const char *s, size_t len, char out[UI_TOKEN_MAX + 1])
{
    if (len < UI_TOKEN_MIN || len > UI_TOKEN_MAX)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!is_token_char(s[i]))
            return 0;
    memcpy(out, s, len);
    out[len] = 0;
    return 1;
}

int ui_token_from_header(const char *authorization, char out[UI_TOKEN_MAX + 1])
{
    static const char bearer[] = "Bearer ";
    if (!authorization || strncmp(authorization, bearer, sizeof bearer - 1) != 0)
        return 0;
    const char *t = authorization + sizeof bearer - 1;
    return take_token(t, strnlen(t, UI_TOKEN_MAX + 1), out);
}

int ui_token_from_cookie(const char *cookie, char out[UI_TOKEN_MAX + 1])
{
    static const char key[] = "omma_token=";
    if (!cookie)
        return 0;
    size_t total = strnlen(cookie, 8192);
    for (size_t i = 0; i + sizeof key - 1 <= total; i++) {
        if ((i == 0 || cookie[i - 1] == ' ' || cookie[i - 1] == ';') &&
            strncmp(cookie + i, key, sizeof key - 1) == 0) {
            const char *t = cookie + i + sizeof key - 1;
            size_t len = 0;
            while (t + len < cookie + total && t[len] != ';')
                len++;
            return take_token(t, len, out);
        }
    }
    return 0;
}

int ui_parse_listen(const char *v, char *addr, size_t addr_cap, int *port, char *err,
                    size_t err_cap)
{
    const char *p = v;
    size_t alen = 0;
    const char *a = NULL;
    if (!v || !v[0] || strnlen(v, 128) >= 128) {
        snprintf(err, err_cap, "expected [ADDR:]PORT");
        return 0;
    }
    if (v[0] == '[') { /* [IPv6]:PORT */
        const char *close = strchr(v, ']');
        if (!close || close[1] != ':') {
            snprintf(err, err_cap, "expected [IPV6]:PORT");
            return 0;
        }
        a = v + 1, alen = (size_t)(close - a), p = close + 2;
    } else {
        const char *colon = strrchr(v, ':');
        if (colon) {
            if (memchr(v, ':', (size_t)(colon - v))) {
                snprintf(err, err_cap, "an IPv6 address goes in brackets: [ADDR]:PORT");
                return 0;
            }
            a = v, alen = (size_t)(colon - v), p = colon + 1;
        }
    }
    if (a && alen == 0) {
        snprintf(err, err_cap, "empty address before the port");
        return 0;
    }
    long n = 0;
    size_t plen = strlen(p);
    if (plen == 0 || plen > 5) {
        snprintf(err, err_cap, "expected a port 0..65535");
        return 0;
    }
    for (size_t i = 0; i < plen; i++) {
        if (p[i] < '0' || p[i] > '9') {
            snprintf(err, err_cap, "expected a port 0..65535");
            return 0;
        }
        n = n * 10 + (p[i] - '0');
    }
    if (n > 65535) {
        snprintf(err, err_cap, "port %ld out of 0..65535", n);
        return 0;
    }
    if (!a)
        a = "127.0.0.1", alen = 9;
    if (alen + 1 > addr_cap) {
        snprintf(err, err_cap, "address too long");
        return 0;
    }
    memcpy(addr, a, alen);
    addr[alen] = 0;
    *port = (int)n;
    return 1;
}

int ui_addr_is_loopback(const char *addr)
{
    if (!addr)
        return 0;
    if (strcmp(addr, "::1") == 0)
        return 1;
    unsigned a, b, c, d;
    char tail;
    return sscanf(addr, "%u.%u.%u.%u%c", &a, &b, &c, &d, &tail) == 4 && a == 127 && b < 256 &&
           c < 256 && d < 256;
}
