/* Private: the OpenMetrics endpoint of a metrics registry, served by
 * libmicrohttpd (from Debian; built in when the build found it:
 * OMMA_HAVE_MICROHTTPD) on its own polling thread.
 *
 * GET (or HEAD) /metrics answers 200 with a fresh snapshot as OpenMetrics
 * text (METRICS_OPENMETRICS_CONTENT_TYPE); other paths answer 404, other
 * methods 405. Each scrape takes a snapshot, so it also advances the
 * registry's rate history like any other reporter.
 *
 * Threads: start and stop from one owner thread; the server reads the
 * registry from its own thread, so the registry must outlive the server. */
#ifndef OMMA_METRICS_METRICS_HTTP_H
#define OMMA_METRICS_METRICS_HTTP_H

#include "omma/status.h"
#include "metrics/metrics.h"

typedef struct metrics_http metrics_http;

/* Nonzero when this build can serve metrics over HTTP. */
int metrics_http_available(void);

/* Listens on bind_addr (a numeric IPv4 or IPv6 address; NULL: every IPv4
 * interface) and port (0: a free port the system picks; see
 * metrics_http_port) and serves m until metrics_http_stop.
 * Errors: OMMA_ERR_INVALID_ARG (NULL m or out, port out of 0..65535, an
 * address that is not numeric), OMMA_ERR_IO (the socket could not be bound
 * or listened on, e.g. the port is in use; the message names address and
 * port), OMMA_ERR_UNSUPPORTED (a build without libmicrohttpd, which the
 * message names), OMMA_ERR_OUT_OF_MEMORY, OMMA_ERR_INTERNAL (libmicrohttpd
 * refused to start). On failure *out is NULL. */
omma_status metrics_http_start(metrics_registry *m, const char *bind_addr, int port,
                               metrics_http **out);

/* ---- The same server with other pages (the live view, src/ui) ---------- */

struct MHD_Connection;

/* Answers one request (libmicrohttpd's access handler, less its version
 * argument): returns MHD_YES or MHD_NO as libmicrohttpd expects. */
typedef int (*metrics_http_handler)(void *ctx, struct MHD_Connection *conn, const char *url,
                                    const char *method, const char *upload_data,
                                    size_t *upload_size, void **con_cls);

typedef struct metrics_http_options {
    const char *bind_addr; /* as metrics_http_start */
    int port;
    metrics_http_handler handler; /* every request (NULL: /metrics only) */
    void *ctx;
    int thread_per_connection; /* 1: each connection on its own thread (its
                                * handler's content callbacks may wait, as
                                * a Server-Sent Events stream does) */
    unsigned max_connections; /* 0: 64 */
    unsigned max_per_ip; /* 0: no limit */
    unsigned timeout_s; /* idle connections closed after; 0: 10 */
    const char *name; /* in error messages; NULL: "metrics endpoint" */
} metrics_http_options;

/* As metrics_http_start, with a handler for every request (it may call
 * metrics_http_serve to answer /metrics from m). m may be NULL. Requests
 * with a body are refused by libmicrohttpd's memory limit (32 KiB of
 * headers) before the handler sees more. Errors as metrics_http_start. */
omma_status metrics_http_start_with(metrics_registry *m, const metrics_http_options *opt,
                                    metrics_http **out);

/* From a handler: answers conn with m's OpenMetrics text (as GET /metrics). */
int metrics_http_serve(metrics_registry *m, struct MHD_Connection *conn);

/* The port the server listens on (the one picked when started with 0). */
int metrics_http_port(const metrics_http *h);

/* Closes the listening socket and open connections, joins the server's
 * thread and frees h; NULL is ignored. */
void metrics_http_stop(metrics_http *h);

#endif
