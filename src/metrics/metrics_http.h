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

/* The port the server listens on (the one picked when started with 0). */
int metrics_http_port(const metrics_http *h);

/* Closes the listening socket and open connections, joins the server's
 * thread and frees h; NULL is ignored. */
void metrics_http_stop(metrics_http *h);

#endif
