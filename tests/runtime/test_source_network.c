/* Network camera sources (source_network.c, io/video_net.c) against an
 * HTTP MJPEG server in this process (a thread on a free loopback port,
 * serving testdata/grace_hopper.jpg, a real photo, as
 * multipart/x-mixed-replace): the first frame is the photo's size; the
 * server closing each connection after a few frames gives reconnecting
 * (attempt 1, "Stream ends prematurely") then connected, reconnects counted
 * (each keeping the reader's decoder),
 * frames again with increasing capture times; a connection that goes
 * silent is lost after the read timeout ("read timeout") and the next
 * frame comes from a new one; a server answering 404 from then on with
 * reconnect_max 2 ends the camera after two attempts ("gave up", the 404
 * quoted), its status failed; an interrupt during an hour's backoff
 * returns OMMA_ERR_CLOSED. Errors: refused (IO), a listener that never
 * answers (TIMEOUT, within the connect timeout), a 404 (IO), a URL without
 * host and bad options (INVALID_ARG); passwords redacted. Skipped without
 * FFmpeg. */
#define _POSIX_C_SOURCE 200809L /* nanosleep, strdup */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "io/video_file.h"
#include "runtime/source.h"
#include "testing.h"

#define PHOTO_JPEG OMMA_TESTDATA_DIR "/grace_hopper.jpg"

/* ---- The server ---------------------------------------------------------- */

typedef struct server {
    int lsock, port;
    pthread_t thread;
    atomic_int stop;
    atomic_int close_after; /* frames per connection before closing it (0: never) */
    atomic_int stall_after; /* frames before going silent (0: never) */
    atomic_int refuse; /* answer 404 to every request */
    atomic_int connections;
    uint8_t *jpeg;
    size_t jpeg_bytes;
} server;

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int send_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n > 0) {
        ssize_t k = send(fd, c, n, MSG_NOSIGNAL);
        if (k <= 0)
            return 0;
        c += k;
        n -= (size_t)k;
    }
    return 1;
}

static void serve(server *sv, int fd)
{
    char req[4096] = "";
    size_t got = 0;
    while (got < sizeof req - 1 && !strstr(req, "\r\n\r\n")) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 100) <= 0) {
            if (atomic_load(&sv->stop))
                return;
            continue;
        }
        ssize_t k = recv(fd, req + got, sizeof req - 1 - got, 0);
        if (k <= 0)
            return;
        got += (size_t)k;
        req[got] = '\0';
    }
    if (strncmp(req, "GET /cam ", 9) != 0 || atomic_load(&sv->refuse)) {
        const char *nf = "HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n";
        send_all(fd, nf, strlen(nf));
        return;
    }
    const char *head = "HTTP/1.0 200 OK\r\nContent-Type: multipart/x-mixed-replace; "
                       "boundary=frame\r\n\r\n";
    if (!send_all(fd, head, strlen(head)))
        return;
    for (int k = 0; !atomic_load(&sv->stop); k++) {
        int close_after = atomic_load(&sv->close_after), stall = atomic_load(&sv->stall_after);
        if (close_after && k >= close_after)
            return;
        if (stall && k >= stall) { /* silent, open, until the client leaves */
            for (;;) {
                struct pollfd p = {fd, POLLIN, 0};
                if (atomic_load(&sv->stop))
                    return;
                if (poll(&p, 1, 20) > 0 && recv(fd, req, sizeof req, 0) <= 0)
                    return;
            }
        }
        char part[128];
        int n = snprintf(part, sizeof part,
                         "--frame\r\nContent-Type: image/jpeg\r\nContent-Length: %zu\r\n\r\n",
                         sv->jpeg_bytes);
        if (!send_all(fd, part, (size_t)n) || !send_all(fd, sv->jpeg, sv->jpeg_bytes) ||
            !send_all(fd, "\r\n", 2))
            return;
        sleep_ms(20);
    }
}

static void *server_main(void *arg)
{
    server *sv = arg;
    while (!atomic_load(&sv->stop)) {
        struct pollfd p = {sv->lsock, POLLIN, 0};
        if (poll(&p, 1, 50) <= 0)
            continue;
        int fd = accept(sv->lsock, NULL, NULL);
        if (fd < 0)
            continue;
        atomic_fetch_add(&sv->connections, 1);
        serve(sv, fd); /* one client at a time: the tests have one */
        close(fd);
    }
    return NULL;
}

/* A listening socket on a free loopback port (backlog only when !accepting). */
static int listen_any(int *port)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 8) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

static int server_start(server *sv)
{
    memset(sv, 0, sizeof *sv);
    FILE *f = fopen(PHOTO_JPEG, "rb");
    if (!f)
        return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    sv->jpeg = malloc((size_t)n);
    sv->jpeg_bytes = sv->jpeg && fread(sv->jpeg, 1, (size_t)n, f) == (size_t)n ? (size_t)n : 0;
    fclose(f);
    if (!sv->jpeg_bytes)
        return 0;
    sv->lsock = listen_any(&sv->port);
    if (sv->lsock < 0)
        return 0;
    return pthread_create(&sv->thread, NULL, server_main, sv) == 0;
}

static void server_stop(server *sv)
{
    atomic_store(&sv->stop, 1);
    pthread_join(sv->thread, NULL);
    close(sv->lsock);
    free(sv->jpeg);
}

/* ---- Status seen by the observer ---------------------------------------- */

typedef struct seen {
    pthread_mutex_t lock;
    int reconnecting; /* times it went reconnecting */
    int max_attempt;
    int connected_again;
    int failed;
    char first_error[384];
} seen;

static void observe(void *ctx, const rt_source_status *st)
{
    seen *s = ctx;
    pthread_mutex_lock(&s->lock);
    if (st->state == RT_LINK_RECONNECTING) {
        if (st->attempt == 1) {
            s->reconnecting++;
            if (!s->first_error[0])
                snprintf(s->first_error, sizeof s->first_error, "%s", st->error);
        }
        if (st->attempt > s->max_attempt)
            s->max_attempt = st->attempt;
    } else if (st->state == RT_LINK_CONNECTED && st->reconnects > 0) {
        s->connected_again = (int)st->reconnects;
    } else if (st->state == RT_LINK_FAILED) {
        s->failed++;
    }
    pthread_mutex_unlock(&s->lock);
}

static void options(rt_source_options *o, seen *s)
{
    rt_source_options_init(o);
    o->connect_timeout_ms = 3000;
    o->read_timeout_ms = 1000;
    o->backoff_min_ms = 50;
    o->backoff_max_ms = 200;
    o->on_status = observe;
    o->status_ctx = s;
}

static server sv;
static char url[128];

/* ---- Tests ----------------------------------------------------------------- */

static void test_reconnect_after_close(void)
{
    seen s = {.lock = PTHREAD_MUTEX_INITIALIZER};
    rt_source_options o;
    options(&o, &s);
    atomic_store(&sv.close_after, 5);
    rt_source *src = NULL;
    REQUIRE_OK(rt_source_open(url, &o, &src));
    const rt_source_info *info = rt_source_get_info(src);
    CHECK(info->kind == RT_SOURCE_NETWORK && info->live == 1);
    CHECK(info->width == 512 && info->height == 600); /* grace_hopper.jpg */
    uint64_t last = 0;
    int increasing = 1;
    for (int k = 0; k < 14; k++) { /* three connections at least */
        omma_frame f;
        uint64_t t = 0;
        int eof = 0;
        REQUIRE_OK(rt_source_read(src, &f, &t, &eof));
        CHECK(!eof && f.width == info->width && f.height == info->height && f.planes[0]);
        increasing &= t > last;
        last = t;
    }
    CHECK(increasing);
    rt_source_status st;
    rt_source_get_status(src, &st);
    CHECK(st.state == RT_LINK_CONNECTED && st.attempt == 0);
    CHECK(st.reconnects >= 2);
    CHECK(st.stream_clock == 0); /* HTTP has no sender clock */
    CHECK(s.reconnecting >= 2 && s.connected_again >= 2);
    /* HTTP without a length: FFmpeg calls the close a read error. */
    CHECK(strstr(s.first_error, "Stream ends prematurely") != NULL ||
          strstr(s.first_error, "the stream ended") != NULL);
    CHECK(atomic_load(&sv.connections) >= 3);
    /* The same stream came back each time: the decoder was kept. */
    io_video_stats vs;
    rt_source_get_video_stats(src, &vs);
    CHECK(vs.reused_decoders >= 2 && vs.reused_decoders == st.reconnects);
    rt_source_close(src);
    atomic_store(&sv.close_after, 0);
}

static void test_read_timeout(void)
{
    seen s = {.lock = PTHREAD_MUTEX_INITIALIZER};
    rt_source_options o;
    options(&o, &s);
    atomic_store(&sv.stall_after, 3); /* each connection: 3 frames, then silence */
    rt_source *src = NULL;
    REQUIRE_OK(rt_source_open(url, &o, &src));
    omma_frame f;
    uint64_t t = 0;
    int eof = 0;
    for (int k = 0; k < 3; k++)
        REQUIRE_OK(rt_source_read(src, &f, &t, &eof));
    CHECK(s.reconnecting == 0);
    /* The fourth comes from a new connection, once the read timeout ended
     * the silent one. */
    REQUIRE_OK(rt_source_read(src, &f, &t, &eof));
    CHECK(!eof && f.width == 512);
    CHECK(s.reconnecting == 1 && s.connected_again == 1);
    CHECK(strstr(s.first_error, "no data for 1.0 s (read timeout)") != NULL);
    rt_source_close(src);
    atomic_store(&sv.stall_after, 0);
}

static void test_give_up(void)
{
    seen s = {.lock = PTHREAD_MUTEX_INITIALIZER};
    rt_source_options o;
    options(&o, &s);
    o.reconnect_max = 2;
    atomic_store(&sv.close_after, 2);
    rt_source *src = NULL;
    REQUIRE_OK(rt_source_open(url, &o, &src));
    atomic_store(&sv.refuse, 1); /* later connections: 404 */
    omma_frame f;
    uint64_t t = 0;
    int eof = 0;
    REQUIRE_OK(rt_source_read(src, &f, &t, &eof)); /* read at open */
    REQUIRE_OK(rt_source_read(src, &f, &t, &eof));
    CHECK_FAILS(rt_source_read(src, &f, &t, &eof), OMMA_ERR_IO,
                "gave up after 2 reconnection attempts; the last: ");
    CHECK(strstr(omma_last_error(), "404") != NULL);
    CHECK(s.max_attempt == 2 && s.failed == 1);
    rt_source_status st;
    rt_source_get_status(src, &st);
    CHECK(st.state == RT_LINK_FAILED && strstr(st.error, "gave up") != NULL);
    CHECK_FAILS(rt_source_read(src, &f, &t, &eof), OMMA_ERR_IO, "gave up"); /* sticky */
    rt_source_close(src);
    atomic_store(&sv.refuse, 0);
    atomic_store(&sv.close_after, 0);
}

static void *interrupt_later(void *arg)
{
    sleep_ms(200);
    rt_source_interrupt(arg);
    return NULL;
}

static void test_interrupt_backoff(void)
{
    seen s = {.lock = PTHREAD_MUTEX_INITIALIZER};
    rt_source_options o;
    options(&o, &s);
    o.backoff_min_ms = o.backoff_max_ms = 3600000; /* an hour: only the interrupt ends it */
    atomic_store(&sv.close_after, 1);
    rt_source *src = NULL;
    REQUIRE_OK(rt_source_open(url, &o, &src));
    omma_frame f;
    uint64_t t = 0;
    int eof = 0;
    REQUIRE_OK(rt_source_read(src, &f, &t, &eof));
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, interrupt_later, src) == 0);
    CHECK_FAILS(rt_source_read(src, &f, &t, &eof), OMMA_ERR_CLOSED, "interrupted");
    pthread_join(th, NULL);
    CHECK(s.reconnecting == 1);
    rt_source_close(src);
    atomic_store(&sv.close_after, 0);
}

static void test_errors(void)
{
    rt_source_options o;
    rt_source_options_init(&o);
    CHECK(o.connect_timeout_ms == 5000 && o.read_timeout_ms == 5000 && o.reconnect_max == 0 &&
          o.backoff_min_ms == 500 && o.backoff_max_ms == 30000 && o.rtsp_udp == 0);
    o.connect_timeout_ms = 500;
    rt_source *src = NULL;

    /* A listener that never accepts: the connection completes (backlog)
     * and nothing is ever said. */
    int port = 0, fd = listen_any(&port);
    REQUIRE(fd >= 0);
    char u[160];
    snprintf(u, sizeof u, "http://127.0.0.1:%d/cam", port);
    uint64_t t0 = core_now_ns();
    CHECK_FAILS(rt_source_open(u, &o, &src), OMMA_ERR_TIMEOUT, "no answer within 0.5 s");
    CHECK((double)(core_now_ns() - t0) / 1e9 < 30.0); /* not hung */
    snprintf(u, sizeof u, "rtsp://127.0.0.1:%d/cam", port);
    CHECK_FAILS(rt_source_open(u, &o, &src), OMMA_ERR_TIMEOUT, u);
    close(fd);
    CHECK_FAILS(rt_source_open(u, &o, &src), OMMA_ERR_IO, "Connection refused");

    snprintf(u, sizeof u, "http://127.0.0.1:%d/nothing", sv.port);
    CHECK_FAILS(rt_source_open(u, &o, &src), OMMA_ERR_IO, "404");
    CHECK_FAILS(rt_source_open("rtsp://", &o, &src), OMMA_ERR_INVALID_ARG, "no host");
    CHECK_FAILS(rt_source_open("http://user:pw@/x", &o, &src), OMMA_ERR_INVALID_ARG, "no host");
    snprintf(u, sizeof u, "rtsp://bob:secret@127.0.0.1:%d/cam", port);
    CHECK_FAILS(rt_source_open(u, &o, &src), OMMA_ERR_IO, "rtsp://***@127.0.0.1");
    CHECK(strstr(omma_last_error(), "secret") == NULL);

    rt_source_options bad = o;
    bad.read_timeout_ms = 0;
    CHECK_FAILS(rt_source_open(url, &bad, &src), OMMA_ERR_INVALID_ARG, "read timeout");
    bad = o;
    bad.backoff_min_ms = 1000, bad.backoff_max_ms = 10;
    CHECK_FAILS(rt_source_open(url, &bad, &src), OMMA_ERR_INVALID_ARG, "backoff");
    bad = o;
    bad.reconnect_max = -1;
    CHECK_FAILS(rt_source_open(url, &bad, &src), OMMA_ERR_INVALID_ARG, "reconnect");
    CHECK(src == NULL);

    char shown[64];
    io_video_url_redacted("rtsp://a:b@h:554/p?x=@y", shown, sizeof shown);
    CHECK(strcmp(shown, "rtsp://***@h:554/p?x=@y") == 0);
    io_video_url_redacted("http://h/p@q", shown, sizeof shown);
    CHECK(strcmp(shown, "http://h/p@q") == 0);
    CHECK(io_video_is_url("RTSP://h/x") && io_video_is_url("https://h") &&
          !io_video_is_url("file.mp4") && !io_video_is_url("rtmp://h/x"));
    CHECK(strcmp(rt_source_kind_name(RT_SOURCE_NETWORK), "network") == 0);
    CHECK(strcmp(rt_link_state_name(RT_LINK_RECONNECTING), "reconnecting") == 0);
}

int main(void)
{
    if (!io_video_available())
        SKIP_TEST("omma was built without FFmpeg");
    if (!server_start(&sv)) {
        fprintf(stderr, "cannot start the MJPEG server (%s)\n", PHOTO_JPEG);
        return 1;
    }
    snprintf(url, sizeof url, "http://127.0.0.1:%d/cam", sv.port);
    RUN(test_errors);
    RUN(test_reconnect_after_close);
    RUN(test_read_timeout);
    RUN(test_give_up);
    RUN(test_interrupt_backoff);
    server_stop(&sv);
    return testing_finish();
}
