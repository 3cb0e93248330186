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

static mhd_result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                             const char *method, const char *version, const char *upload_data,
                             size_t *upload_size, void **con_cls)
{
    metrics_http *h = cls;
    (void)version, (void)upload_data, (void)upload_size, (void)con_cls;

    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return respond_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
    if (strcmp(url, "/metrics") != 0)
        return respond_text(conn, MHD_HTTP_NOT_FOUND, "not found: try /metrics\n");

    metrics_snapshot *snap = NULL;
    char *body = NULL;
    size_t len = 0;
    omma_status st = metrics_snapshot_take(h->metrics, &snap);
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

/* Opens a bound, listening, non-blocking socket in *fd_out. */
static omma_status listen_on(const char *bind_addr, int port, int *fd_out, int *port_out)
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
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "metrics endpoint: \"%s\" is not a numeric IPv4 or IPv6 address",
                         bind_addr);
    }

    int fd = socket(ss.ss_family, SOCK_STREAM, 0);
    if (fd < 0)
        return OMMA_FAIL(OMMA_ERR_IO, "metrics endpoint: socket: %s", strerror(errno));
    int one = 1;
    /* Reuse lets a restarted server bind while old connections sit in
     * TIME_WAIT; Linux still refuses a port that another socket listens on. */
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        fcntl(fd, F_SETFD, FD_CLOEXEC) != 0 ||
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
        int e = errno;
        close(fd);
        return OMMA_FAIL(OMMA_ERR_IO, "metrics endpoint: socket options: %s", strerror(e));
    }
    if (bind(fd, (struct sockaddr *)&ss, ss_len) != 0) {
        int e = errno;
        close(fd);
        return OMMA_FAIL(OMMA_ERR_IO, "metrics endpoint: cannot bind %s port %d: %s%s", shown, port,
                         strerror(e), e == EADDRINUSE ? " (the port is in use)" : "");
    }
    if (listen(fd, 64) != 0) {
        int e = errno;
        close(fd);
        return OMMA_FAIL(OMMA_ERR_IO, "metrics endpoint: cannot listen on %s port %d: %s", shown,
                         port, strerror(e));
    }
    ss_len = sizeof ss;
    if (getsockname(fd, (struct sockaddr *)&ss, &ss_len) != 0) {
        int e = errno;
        close(fd);
        return OMMA_FAIL(OMMA_ERR_IO, "metrics endpoint: getsockname: %s", strerror(e));
    }
    *port_out = ntohs(ss.ss_family == AF_INET ? v4->sin_port : v6->sin6_port);
    *fd_out = fd;
    return OMMA_OK;
}

omma_status metrics_http_start(metrics_registry *m, const char *bind_addr, int port,
                               metrics_http **out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "metrics_http_start: NULL out");
    *out = NULL;
    if (!m)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "metrics_http_start: NULL registry");
    if (port < 0 || port > 65535)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "metrics endpoint: port %d out of 0..65535", port);

    metrics_http *h = calloc(1, sizeof *h);
    if (!h)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "metrics endpoint: %zu bytes", sizeof *h);
    h->metrics = m;
    int fd = -1;
    omma_status st = listen_on(bind_addr, port, &fd, &h->port);
    if (st != OMMA_OK) {
        free(h);
        return st;
    }
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ITC;
    h->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, h, MHD_OPTION_LISTEN_SOCKET, fd,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned)64, MHD_OPTION_END);
    if (!h->daemon) {
        close(fd);
        free(h);
        return OMMA_FAIL(OMMA_ERR_INTERNAL,
                         "metrics endpoint: libmicrohttpd did not start on "
                         "port %d",
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
