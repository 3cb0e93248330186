#define _POSIX_C_SOURCE 200809L /* sockets, inet_pton */
/* The /metrics endpoint. omma binds and listens on the socket itself and
 * hands it to libmicrohttpd (MHD_OPTION_LISTEN_SOCKET): that way a port in
 * use is reported with errno's words and the port, and port 0's pick is
 * read back with getsockname. libmicrohttpd closes the socket when stopped. */
#include "metrics/metrics_http.h"

#include <stdlib.h>

#include "core/error.h"

#ifdef OMMA_HAVE_MICROHTTPD

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#if MHD_VERSION >= 0x00097002
typedef enum MHD_Result mhd_result;
#else
typedef int mhd_result;
#endif

struct metrics_http {
    metrics_registry *metrics;
    metrics_http_handler handler;
    void *ctx;
    struct MHD_Daemon *daemon;
    int port;
};

int metrics_http_available(void)
{
    return 1;
}

static mhd_result respond_text(struct MHD_Connection *conn, unsigned status, const char *body)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer_with_free_callback(strlen(body), (void *)body, NULL);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    mhd_result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

int metrics_http_serve(metrics_registry *m, struct MHD_Connection *conn)
{
    if (!m)
        return respond_text(conn, MHD_HTTP_NOT_FOUND, "no metrics here\n");
    metrics_snapshot *snap = NULL;
    char *body = NULL;
    size_t len = 0;
    omma_status st = metrics_snapshot_take(m, &snap);
    if (st == OMMA_OK)
        st = metrics_format_openmetrics(snap, &body, &len);
    metrics_snapshot_free(snap);
    if (st != OMMA_OK)
        return respond_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "metrics snapshot failed\n");

    struct MHD_Response *r = MHD_create_response_from_buffer_with_free_callback(len, body, free);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, METRICS_OPENMETRICS_CONTENT_TYPE);
    mhd_result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

static mhd_result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *version, const char *upload_data,
                             size_t *upload_size, void **con_cls)
{
    metrics_http *h = cls;
    (void)version;
    if (h->handler)
        return (mhd_result)h->handler(h->ctx, conn, url, method, upload_data, upload_size, con_cls);
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return respond_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
    if (strcmp(url, "/metrics") != 0)
        return respond_text(conn, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n");
    return (mhd_result)metrics_http_serve(h->metrics, conn);
}

/* Opens a bound, listening, non-blocking socket in *fd_out. */
static omma_status listen_on(const char *what, const char *bind_addr, int port, int *fd_out,
                             int *port_out)
{
    struct sockaddr_storage ss;
    socklen_t ss_len;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
    const char *shown = bind_addr ? bind_addr : "0.0.0.0";
    if (!bind_addr || inet_pton(AF_INET, bind_addr, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        if (!bind_addr)
            v4->sin_addr.s_addr = htonl(INADDR_ANY);
        ss_len = sizeof *v4;
    } else if (inet_pton(AF_INET6, bind_addr, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        ss_len = sizeof *v6;
    } else {
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: \"%s\" is not a numeric IPv4 or IPv6 address",
                         what, bind_addr);
    }

    int fd = socket(ss.ss_family, SOCK_STREAM, 0);
    if (fd < 0)
        return OMMA_FAIL(OMMA_ERR_IO, "%s: socket: %s", what, strerror(errno));
    int one = 1;
    /* Reuse lets a restarted server bind while old connections sit in
     * TIME_WAIT; Linux still refuses a port that another socket listens on. */
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        fcntl(fd, F_SETFD, FD_CLOEXEC) != 0 ||
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        return OMMA_FAIL(OMMA_ERR_IO, "%s: socket options: %s", what, strerror(e));
    }
    if (bind(fd, (struct sockaddr *)&ss, ss_len) != 0) {
        int e = errno;
        close(fd);
        return OMMA_FAIL(OMMA_ERR_IO, "%s: cannot bind %s port %d: %s%s", what, shown, port,
                         strerror(e), e == EADDRINUSE ? " (the port is in use)" : "");
    }
    if (listen(fd, 64) != 0) {
        int e = errno;
        close(fd);
        return OMMA_FAIL(OMMA_ERR_IO, "%s: cannot listen on %s port %d: %s", what, shown, port,
                         strerror(e));
    }
    ss_len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &ss_len) != 0) {
        int e = errno;
        close(fd);
        return OMMA_FAIL(OMMA_ERR_IO, "%s: getsockname: %s", what, strerror(e));
    }
    *port_out = ntohs(ss.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);
    *fd_out = fd;
    return OMMA_OK;
}

omma_status metrics_http_start(metrics_registry *m, const char *bind_addr, int port,
                               metrics_http **out)
{
    if (out && !m) {
        *out = NULL;
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "metrics_http_start: NULL registry");
    }
    metrics_http_options opt = {.bind_addr = bind_addr, .port = port};
    return metrics_http_start_with(m, &opt, out);
}

omma_status metrics_http_start_with(metrics_registry *m, const metrics_http_options *opt,
                                    metrics_http **out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "metrics_http_start: NULL out");
    *out = NULL;
    if (!opt)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "metrics_http_start: NULL options");
    const char *what = opt->name ? opt->name : "metrics endpoint";
    int port = opt->port;
    if (port < 0 || port > 65535)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: port %d out of 0..65535", what, port);

    metrics_http *h = calloc(1, sizeof *h);
    if (!h)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: %zu bytes", what, sizeof *h);
    h->metrics = m;
    h->handler = opt->handler;
    h->ctx = opt->ctx;
    int fd = -1;
    omma_status st = listen_on(what, opt->bind_addr, port, &fd, &h->port);
    if (st != OMMA_OK) {
        free(h);
        return st;
    }
    unsigned flags = opt->thread_per_connection
                         ? MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD
                         : MHD_USE_AUTO_INTERNAL_THREAD;
    flags |= MHD_USE_ITC;
    unsigned max_conns = opt->max_connections ? opt->max_connections : 64;
    unsigned timeout = opt->timeout_s ? opt->timeout_s : 10;
    h->daemon =
        MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_LISTEN_SOCKET, fd,
                         MHD_OPTION_CONNECTION_TIMEOUT, timeout, MHD_OPTION_CONNECTION_LIMIT,
                         max_conns, MHD_OPTION_PER_IP_CONNECTION_LIMIT, opt->max_per_ip,
                         MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)32768, MHD_OPTION_END);
    if (!h->daemon) {
        close(fd);
        free(h);
        return OMMA_FAIL(OMMA_ERR_INTERNAL, "%s: libmicrohttpd did not start on port %d", what,
                         port);
    }
    *out = h;
    return OMMA_OK;
}

int metrics_http_port(const metrics_http *h)
{
    return h ? h->port : 0;
}

void metrics_http_stop(metrics_http *h)
{
    if (!h)
        return;
    MHD_stop_daemon(h->daemon);
    free(h);
}

#else /* no libmicrohttpd */

struct metrics_http {
    int unused;
};

int metrics_http_available(void)
{
    return 0;
}

omma_status metrics_http_start(metrics_registry *m, const char *bind_addr, int port,
                               metrics_http **out)
{
    (void)m, (void)bind_addr;
    if (out)
        *out = NULL;
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                     "metrics endpoint on port %d: omma was built without libmicrohttpd "
                     "(install libmicrohttpd-dev and rebuild)",
                     port);
}

omma_status metrics_http_start_with(metrics_registry *m, const metrics_http_options *opt,
                                    metrics_http **out)
{
    (void)m;
    if (out)
        *out = NULL;
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                     "%s on port %d: omma was built without libmicrohttpd "
                     "(install libmicrohttpd-dev and rebuild)",
                     opt && opt->name ? opt->name : "HTTP server", opt ? opt->port : 0);
}

int metrics_http_serve(metrics_registry *m, struct MHD_Connection *conn)
{
    (void)m, (void)conn;
    return 0;
}

int metrics_http_port(const metrics_http *h)
{
    (void)h;
    return 0;
}

void metrics_http_stop(metrics_http *h)
{
    free(h);
}

#endif
