/* Private: the live view's parsing of what a browser (or anyone who can
 * reach the port) sends: the request's path, its query values, the access
 * token, and the --ui option. Pure functions on bounded strings, no
 * allocation, no shared state: any thread; fuzz/fuzz_ui.c feeds them
 * arbitrary bytes. */
#ifndef OMMA_UI_UI_REQUEST_H
#define OMMA_UI_UI_REQUEST_H

#include <stddef.h>

/* Longest path the server looks at (longer: UI_ROUTE_BAD). */
#define UI_URL_MAX 256
/* Most cameras one event stream follows. */
#define UI_MAX_WATCH 64
/* Access tokens: 16..128 characters of [A-Za-z0-9_-]. */
#define UI_TOKEN_MIN 16
#define UI_TOKEN_MAX 128

typedef enum ui_route {
    UI_ROUTE_BAD = 0, /* not a path this server could ever serve: 400 */
    UI_ROUTE_NOT_FOUND, /* a clean path that is not one of ours: 404 */
    UI_ROUTE_ASSET, /* a static file: *arg = its index in ui_assets */
    UI_ROUTE_EVENTS, /* /api/events: the Server-Sent Events stream */
    UI_ROUTE_PREVIEW, /* /api/preview/N.jpg: *arg = N */
    UI_ROUTE_METRICS, /* /metrics: OpenMetrics */
} ui_route;

/* The static files compiled in (ui_assets.c, generated from src/ui/web/
 * by cmake/embed_files.cmake). */
typedef struct ui_asset {
    const char *name; /* "index.html" */
    const unsigned char *data;
    size_t size;
} ui_asset;
extern const ui_asset ui_assets[];
extern const int ui_n_assets;

/* The route of a request path (without its query: libmicrohttpd splits it
 * off). A path is clean when it starts with '/', is at most UI_URL_MAX
 * bytes, holds only [A-Za-z0-9/._-] and has no empty, "." or ".."
 * segment; anything else is UI_ROUTE_BAD (no traversal, no encodings to
 * decode twice). "/" is index.html. *arg gets the asset or camera index
 * (else -1); a camera N is checked against n_cameras (0..n-1, decimal,
 * no leading zeros) and otherwise UI_ROUTE_NOT_FOUND. */
ui_route ui_route_parse(const char *path, int n_cameras, int *arg);

/* A comma-separated list of camera indices ("0,3,17"; each 0..n-1, at
 * most max of them, duplicates dropped) into out. Returns the count, or
 * -1 for anything else (empty items, signs, spaces, out of range, too
 * many, longer than 1024 bytes). NULL or "" is 0 cameras. */
int ui_parse_cameras(const char *list, int n_cameras, int *out, int max);

/* The preview size asked for: "thumb" (or NULL) 0, "large" 1, else -1. */
int ui_parse_size(const char *v);

/* 1 when v is a well-formed token (see UI_TOKEN_MIN). */
int ui_token_valid(const char *v);

/* 1 when given equals expected, in time independent of where they differ
 * (the length of given is bounded by UI_TOKEN_MAX + 1 reads). */
int ui_token_equal(const char *given, const char *expected);

/* The token of an "Authorization: Bearer TOKEN" header value, or a
 * "omma_token=TOKEN" cookie in a Cookie header value: copied into out
 * (UI_TOKEN_MAX + 1 bytes) when well-formed; 0 when absent or malformed. */
int ui_token_from_header(const char *authorization, char out[UI_TOKEN_MAX + 1]);
int ui_token_from_cookie(const char *cookie, char out[UI_TOKEN_MAX + 1]);

/* --ui's value "[ADDR:]PORT" ("8080", "0.0.0.0:8080", "[::1]:8080"):
 * addr (addr_cap bytes) gets the address ("127.0.0.1" when none), *port
 * 0..65535. Returns 1, or 0 with a message in err (err_cap bytes). The
 * address is not resolved: the server checks it is numeric. */
int ui_parse_listen(const char *v, char *addr, size_t addr_cap, int *port, char *err,
                    size_t err_cap);

/* 1 when a numeric address is a loopback one (127.0.0.0/8, ::1). */
int ui_addr_is_loopback(const char *addr);

#endif
