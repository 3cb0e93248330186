/* libFuzzer target for the live view's parsers of request input
 * (src/ui/ui_request.c): the first byte picks one, the rest (as a C
 * string) is its input.
 *   0: a request path (ui_route_parse); a path accepted as an asset or a
 *      preview must be clean: no "..", no "//", only [A-Za-z0-9/._-]
 *   1: a camera list (ui_parse_cameras): every index in range, no two equal
 *   2: a token from the query / header / cookie: what is taken is valid
 *   3: --ui's [ADDR:]PORT (ui_parse_listen): a port in range, a message
 *      when refused
 * Anything wrong traps; ASan/UBSan catch the rest. Built and run by
 * fuzz/run.sh ui (make fuzz; a short run inside make test). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ui/ui_request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The page's files as the build embeds them (names only matter here). */
static const unsigned char empty[1] = {0};
const ui_asset ui_assets[] = {{"index.html", empty, 0}, {"ui.js", empty, 0}, {"ui.css", empty, 0}};
const int ui_n_assets = 3;

/* 1 when a segment of the path is "", "." or ".." (the root "/" aside). */
static int dot_segment(const char *s)
{
    if (strcmp(s, "/") == 0)
        return 0;
    for (const char *seg = s + 1;;) {
        const char *end = strchr(seg, '/');
        size_t n = end ? (size_t)(end - seg) : strlen(seg);
        if (n == 0 || (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.'))
            return 1;
        if (!end)
            return 0;
        seg = end + 1;
    }
}

static void check_path(const char *s)
{
    int arg = 12345;
    ui_route r = ui_route_parse(s, 8, &arg);
    if (r == UI_ROUTE_BAD || r == UI_ROUTE_NOT_FOUND || r == UI_ROUTE_EVENTS ||
        r == UI_ROUTE_METRICS) {
        if (arg != -1)
            __builtin_trap();
    }
    if (r == UI_ROUTE_ASSET && (arg < 0 || arg >= ui_n_assets))
        __builtin_trap();
    if (r == UI_ROUTE_PREVIEW && (arg < 0 || arg >= 8))
        __builtin_trap();
    if (r != UI_ROUTE_BAD) {
        if (s[0] != '/' || dot_segment(s) || strlen(s) > UI_URL_MAX)
            __builtin_trap();
        for (const char *p = s; *p; p++)
            if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-", *p))
                __builtin_trap();
    }
}

static void check_cameras(const char *s)
{
    int out[UI_MAX_WATCH];
    int n = ui_parse_cameras(s, 100, out, UI_MAX_WATCH);
    if (n < -1 || n > UI_MAX_WATCH)
        __builtin_trap();
    for (int i = 0; i < n; i++) {
        if (out[i] < 0 || out[i] >= 100)
            __builtin_trap();
        for (int k = 0; k < i; k++)
            if (out[k] == out[i])
                __builtin_trap();
    }
}

static void check_token(const char *s)
{
    char out[UI_TOKEN_MAX + 1];
    if (ui_token_from_header(s, out) && !ui_token_valid(out))
        __builtin_trap();
    if (ui_token_from_cookie(s, out) && !ui_token_valid(out))
        __builtin_trap();
    if (ui_token_valid(s) && !ui_token_equal(s, s))
        __builtin_trap();
    (void)ui_token_equal(s, "abcdefghijklmnop");
}

static void check_listen(const char *s)
{
    char addr[64], err[128];
    int port = -1;
    err[0] = 0;
    if (ui_parse_listen(s, addr, sizeof addr, &port, err, sizeof err)) {
        if (port < 0 || port > 65535 || !addr[0] || strlen(addr) >= sizeof addr)
            __builtin_trap();
        (void)ui_addr_is_loopback(addr);
    } else if (!err[0]) {
        __builtin_trap();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    char *s = malloc(size);
    if (!s)
        return 0;
    memcpy(s, data + 1, size - 1);
    s[size - 1] = 0;
    switch (data[0] % 4) {
    case 0:
        check_path(s);
        break;
    case 1:
        check_cameras(s);
        break;
    case 2:
        check_token(s);
        break;
    default:
        check_listen(s);
        break;
    }
    free(s);
    return 0;
}
