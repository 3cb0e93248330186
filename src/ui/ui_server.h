/* Private: the live view of omma stream (--ui): a single page served by
 * the embedded HTTP server (metrics/metrics_http.h, libmicrohttpd, a
 * thread per connection) with the runtime's stats, results and preview
 * images. docs/UI.md says what a person sees.
 *
 * Paths (ui_request.h parses them): / and the page's files; /api/events,
 * a Server-Sent Events stream: "stats" once a second (the metrics JSON of
 * metrics_format_json) and "result" events (the JSON line omma stream
 * writes, sink_json.h) of the cameras in ?cams=LIST, ?large=N's at up to
 * 10 per second and the others' once a second, and "sync" events (ui_sync;
 * participants' synchrony) at up to 5 per second; /api/preview/N.jpg?size=
 * thumb|large, camera N's newest preview as JPEG (asking for it keeps it
 * coming: runtime/preview.h); /metrics.
 *
 * Cost: a camera nobody watches costs one relaxed atomic load per result
 * (ui_result) and one per frame (rt_preview_due). Results are kept at most
 * 20 times a second per watched camera (a copy of its faces); events are
 * formatted and previews JPEG-encoded on the connections' threads. A
 * client that stops reading holds its own thread and socket until the
 * connection times out (10 s): nothing queues for it (each event stream
 * sends the newest state when it can write, older states are dropped) and
 * no other thread waits for it. Connections are limited (max_connections
 * in all, 32 per address, 16 event streams), requests are GET or HEAD
 * with at most 32 KiB of headers, paths are checked before use.
 *
 * Access: bound to a loopback address, no token is needed unless one is
 * given; bound elsewhere, every request needs the token (given, or
 * generated: ui_token): ?token=, "Authorization: Bearer", or the cookie
 * the page sets. No token: 401; a wrong one: 403.
 *
 * Threads: ui_start/ui_stop from one owner thread; ui_result from the
 * runtime's result threads, concurrently; the rest any thread. */
#ifndef OMMA_UI_UI_SERVER_H
#define OMMA_UI_UI_SERVER_H

#include <stdint.h>

#include "metrics/metrics.h"
#include "omma/status.h"
#include "runtime/preview.h"
#include "runtime/runtime.h"
#include "ui/ui_request.h"

typedef struct ui_server ui_server;

typedef struct ui_options {
    const char *bind_addr; /* numeric IPv4 or IPv6; NULL: 127.0.0.1 */
    int port; /* 0: any free port (ui_port) */
    const char *token; /* NULL: none on loopback, generated elsewhere */
    int n_cameras;
    const char *const *names; /* the cameras' names (copied; NULL: camN) */
    const char *const *sources; /* their sources as in the JSON output ("source";
                                 * copied; NULL: the names) */
    int max_faces; /* faces a result may hold, 1..OMMA_PIPELINE_MAX_FACES */
    int max_poses; /* poses a result may hold (0: results have none) */
    uint64_t t0_ns; /* the run's start (timestamp_ms, as the JSON output) */
    metrics_registry *metrics; /* stats and /metrics; NULL: none */
    rt_preview *preview; /* previews; NULL: none */
    unsigned max_connections; /* 0: 64 */
} ui_options;

/* Starts serving. Errors: OMMA_ERR_INVALID_ARG (a bad option or token:
 * the message names it), those of metrics_http_start_with (the port in
 * use, a build without libmicrohttpd), OMMA_ERR_OUT_OF_MEMORY,
 * OMMA_ERR_IO (no random bytes for a token). *out NULL on failure. */
omma_status ui_start(const ui_options *o, ui_server **out);

/* The port it listens on; its token ("" when none is needed). */
int ui_port(const ui_server *u);
const char *ui_token(const ui_server *u);

/* A frame's result (the runtime's on_result): kept when a viewer watches
 * the camera and the last one kept is 50 ms old. */
void ui_result(ui_server *u, const rt_result *r);

/* The newest synchrony sample (omma stream's participants): one JSON
 * object, len bytes, no newline (at most 64 KiB), sent to every event
 * stream as a "sync" event at up to 5 per second. Any thread. */
void ui_sync(ui_server *u, const char *json, size_t len);

typedef struct ui_stats {
    uint64_t requests; /* answered, any status */
    uint64_t refused; /* 4xx and 5xx */
    uint64_t events; /* Server-Sent Events sent */
    uint64_t jpegs; /* previews encoded */
    int streams; /* event streams open now */
} ui_stats;
void ui_get_stats(ui_server *u, ui_stats *out);

/* Ends every connection (event streams within 0.1 s), joins the server's
 * threads and frees u. NULL is ignored. */
void ui_stop(ui_server *u);

#endif
