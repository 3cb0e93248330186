#define _POSIX_C_SOURCE 200809L /* sockets */
/* The metrics endpoint over real sockets: a plain client in this file sends
 * requests to 127.0.0.1 and reads the whole answer. GET /metrics, 404, 405,
 * a port in use, bad arguments, stop and start again on the same port, and
 * no file descriptor left behind. Exits 77 (skipped) in a build without
 * libmicrohttpd, after checking that starting says so. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "metrics/metrics.h"
#include "metrics/metrics_http.h"
#include "testing.h"

/* Sends `request` to 127.0.0.1:port and returns everything the server sent
 * until it closed (malloc'd), or NULL. */
static char *http_exchange(int port, const char *request)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return NULL;
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    char *buf = NULL;
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        fprintf(stderr, "connect 127.0.0.1:%d: %s\n", port, strerror(errno));
        goto out;
    }
    for (size_t sent = 0, n = strlen(request); sent < n;) {
        ssize_t w = send(fd, request + sent, n - sent, 0);
        if (w <= 0)
            goto out;
        sent += (size_t)w;
    }
    size_t len = 0, cap = 65536;
    buf = malloc(cap);
    for (;;) {
        if (!buf)
            goto out;
        if (cap - len < 4096) {
            char *p = realloc(buf, cap *= 2);
            if (!p) {
                free(buf);
                buf = NULL;
                goto out;
            }
            buf = p;
        }
        ssize_t r = recv(fd, buf + len, cap - len - 1, 0);
        if (r < 0) {
            fprintf(stderr, "recv: %s\n", strerror(errno));
            free(buf);
            buf = NULL;
            goto out;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    buf[len] = '\0';
out:
    close(fd);
    return buf;
}

static char *http_request(int port, const char *method, const char *path)
{
    char req[256];
    snprintf(req, sizeof req,
             "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
             method, path);
    return http_exchange(port, req);
}

/* The value of a response header (case-insensitive name), or NULL. */
static const char *header(const char *resp, const char *name, char *value, size_t size)
{
    const char *end = strstr(resp, "\r\n\r\n");
    size_t n = strlen(name);
    for (const char *p = strstr(resp, "\r\n"); p && p < end; p = strstr(p + 2, "\r\n")) {
        if (strncasecmp(p + 2, name, n) == 0 && p[2 + n] == ':') {
            const char *v = p + 3 + n;
            while (*v == ' ')
                v++;
            const char *e = strstr(v, "\r\n");
            snprintf(value, size, "%.*s", (int)(e - v), v);
            return value;
        }
    }
    return NULL;
}

static const char *body_of(const char *resp)
{
    const char *b = strstr(resp, "\r\n\r\n");
    return b ? b + 4 : "";
}

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    while (readdir(d))
        n++;
    closedir(d);
    return n;
}

static metrics_registry *registry(void)
{
    static const char *const stages[] = {"detector", "step"};
    metrics_config cfg = {.stage_names = stages, .n_stages = 2};
    metrics_registry *m = NULL;
    if (metrics_create(&cfg, &m) != OMMA_OK || metrics_add_camera(m, 0, "cam0", 0) ||
        metrics_add_gpu(m, 0, "g")) {
        fprintf(stderr, "registry: %s\n", omma_last_error());
        metrics_destroy(m);
        return NULL;
    }
    for (int i = 0; i < 3; i++) {
        metrics_frame_in(m, 0);
        metrics_frame_done(m, 0, 8000000);
    }
    return m;
}

static void test_get_metrics(void)
{
    metrics_registry *m = registry();
    REQUIRE(m);
    metrics_http *h = NULL;
    REQUIRE_OK(metrics_http_start(m, NULL, 0, &h));
    int port = metrics_http_port(h);
    CHECK(port > 0 && port <= 65535);

    char *r = http_request(port, "GET", "/metrics");
    REQUIRE(r);
    char v[256];
    CHECK(strncmp(r, "HTTP/1.1 200 OK\r\n", 17) == 0);
    CHECK(header(r, "Content-Type", v, sizeof v) &&
          strcmp(v, "application/openmetrics-text; version=1.0.0; charset=utf-8") == 0);
    const char *body = body_of(r);
    size_t n = strlen(body);
    CHECK(n > 6 && strcmp(body + n - 6, "# EOF\n") == 0);
    CHECK(strstr(body, "omma_camera_frames_in_total{camera=\"cam0\"} 3\n"));
    CHECK(strstr(body, "omma_camera_latency_seconds_count{camera=\"cam0\"} 3\n"));
    CHECK(header(r, "Content-Length", v, sizeof v) && (size_t)atol(v) == n);
    free(r);

    /* Counters move between scrapes. */
    metrics_frame_in(m, 0);
    r = http_request(port, "GET", "/metrics");
    REQUIRE(r);
    CHECK(strstr(r, "omma_camera_frames_in_total{camera=\"cam0\"} 4\n"));
    free(r);

    /* HEAD: the headers without a body. */
    r = http_request(port, "HEAD", "/metrics");
    REQUIRE(r);
    CHECK(strncmp(r, "HTTP/1.1 200 OK\r\n", 17) == 0);
    CHECK(*body_of(r) == '\0');
    free(r);

    r = http_request(port, "GET", "/nope");
    REQUIRE(r);
    CHECK(strncmp(r, "HTTP/1.1 404 ", 13) == 0);
    free(r);
    r = http_request(port, "GET", "/metrics/extra");
    REQUIRE(r);
    CHECK(strncmp(r, "HTTP/1.1 404 ", 13) == 0);
    free(r);

    r = http_request(port, "POST", "/metrics");
    REQUIRE(r);
    CHECK(strncmp(r, "HTTP/1.1 405 ", 13) == 0);
    CHECK(header(r, "Allow", v, sizeof v) && strcmp(v, "GET, HEAD") == 0);
    free(r);
    r = http_request(port, "DELETE", "/other");
    REQUIRE(r);
    CHECK(strncmp(r, "HTTP/1.1 405 ", 13) == 0);
    free(r);

    metrics_http_stop(h);
    metrics_destroy(m);
}

static void test_port_in_use_and_restart(void)
{
    int fds_before = count_fds();
    metrics_registry *m = registry();
    REQUIRE(m);
    metrics_http *a = NULL, *b = NULL;
    REQUIRE_OK(metrics_http_start(m, "127.0.0.1", 0, &a));
    int port = metrics_http_port(a);
    char port_text[16];
    snprintf(port_text, sizeof port_text, "port %d", port);

    b = (metrics_http *)1;
    CHECK_FAILS(metrics_http_start(m, "127.0.0.1", port, &b), OMMA_ERR_IO, port_text);
    CHECK(b == NULL);
    CHECK(strstr(omma_last_error(), "in use"));
    CHECK_FAILS(metrics_http_start(m, NULL, port, &b), OMMA_ERR_IO, port_text);

    /* A client is served while the refused second server is gone. */
    char *r = http_request(port, "GET", "/metrics");
    CHECK(r && strncmp(r, "HTTP/1.1 200 OK\r\n", 17) == 0);
    free(r);

    /* Stop, then the same port again: free, and served. */
    metrics_http_stop(a);
    REQUIRE_OK(metrics_http_start(m, "127.0.0.1", port, &a));
    CHECK(metrics_http_port(a) == port);
    r = http_request(port, "GET", "/metrics");
    CHECK(r && strncmp(r, "HTTP/1.1 200 OK\r\n", 17) == 0);
    free(r);
    metrics_http_stop(a);

    /* Several cycles leave no descriptor or thread behind. */
    for (int i = 0; i < 5; i++) {
        REQUIRE_OK(metrics_http_start(m, NULL, 0, &a));
        metrics_http_stop(a);
    }
    metrics_http_stop(NULL);
    metrics_destroy(m);
    CHECK(count_fds() == fds_before);
}

static void test_bad_arguments(void)
{
    metrics_registry *m = registry();
    REQUIRE(m);
    metrics_http *h = (metrics_http *)1;
    CHECK_FAILS(metrics_http_start(m, NULL, 70000, &h), OMMA_ERR_INVALID_ARG, "70000");
    CHECK(h == NULL);
    CHECK_FAILS(metrics_http_start(m, NULL, -1, &h), OMMA_ERR_INVALID_ARG, "port -1");
    CHECK_FAILS(metrics_http_start(m, "localhost", 0, &h), OMMA_ERR_INVALID_ARG,
                "\"localhost\" is not a numeric");
    CHECK_FAILS(metrics_http_start(NULL, NULL, 0, &h), OMMA_ERR_INVALID_ARG, "NULL registry");
    CHECK_FAILS(metrics_http_start(m, NULL, 0, NULL), OMMA_ERR_INVALID_ARG, "NULL out");
    /* An address this machine does not have cannot be bound. */
    CHECK_FAILS(metrics_http_start(m, "192.0.2.1", 0, &h), OMMA_ERR_IO, "192.0.2.1 port 0");
    metrics_destroy(m);
}

int main(void)
{
    if (!metrics_http_available()) {
        metrics_registry *m = registry();
        metrics_http *h = NULL;
        omma_status st = metrics_http_start(m, NULL, 0, &h);
        int ok = st == OMMA_ERR_UNSUPPORTED && strstr(omma_last_error(), "libmicrohttpd") && !h;
        metrics_destroy(m);
        if (!ok) {
            fprintf(stderr, "without libmicrohttpd: %s %s\n", omma_status_str(st),
                    omma_last_error());
            return 1;
        }
        SKIP_TEST("built without libmicrohttpd");
    }
    RUN(test_get_metrics);
    RUN(test_port_in_use_and_restart);
    RUN(test_bad_arguments);
    return testing_finish();
}
