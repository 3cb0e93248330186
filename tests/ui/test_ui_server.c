#define _GNU_SOURCE /* memmem; sockets, nanosleep */
/* The live view's HTTP handler over real sockets (ui_server.h): the page
 * and its files, a preview as a JPEG that decodes to the image put, the
 * event stream's stats and results, input validation (bad paths, methods,
 * camera lists, sizes: 400/404/405), the token (401 without, 403 wrong,
 * accepted from the query, the Authorization header and the cookie;
 * generated when bound off loopback), a client that never reads holding
 * nothing up, and no file descriptor left behind. Exits 77 in a build
 * without libmicrohttpd. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "io/image_decode.h"
#include "metrics/metrics.h"
#include "metrics/metrics_http.h"
#include "runtime/preview.h"
#include "testing.h"
#include "ui/ui_server.h"

static int connect_to(int port, int rcvbuf)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct timeval tv = {.tv_sec = 10};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    if (rcvbuf > 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static int send_all(int fd, const char *s)
{
    for (size_t sent = 0, n = strlen(s); sent < n;) {
        ssize_t w = send(fd, s + sent, n - sent, MSG_NOSIGNAL);
        if (w <= 0)
            return 0;
        sent += (size_t)w;
    }
    return 1;
}

/* Reads until the peer closes or `until` appears (NULL: until close), at
 * most max bytes. *len gets the bytes read. */
static char *read_until(int fd, const char *until, size_t max, size_t *len)
{
    char *buf = malloc(max + 1);
    size_t n = 0;
    if (!buf)
        return NULL;
    while (n < max) {
        ssize_t r = recv(fd, buf + n, max - n, 0);
        if (r <= 0)
            break;
        n += (size_t)r;
        buf[n] = 0;
        if (until && memmem(buf, n, until, strlen(until)))
            break;
    }
    buf[n] = 0;
    if (len)
        *len = n;
    return buf;
}

/* One request with extra header lines (each ending "\r\n"); the whole
 * answer (malloc'd) or NULL. */
static char *request(int port, const char *method, const char *path, const char *headers,
                     size_t *len)
{
    int fd = connect_to(port, 0);
    if (fd < 0)
        return NULL;
    char req[2048];
    snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n%s\r\n",
             method, path, headers ? headers : "");
    char *out = send_all(fd, req) ? read_until(fd, NULL, 4 << 20, len) : NULL;
    close(fd);
    return out;
}

static int status_of(const char *resp)
{
    int code = 0;
    return resp && sscanf(resp, "HTTP/1.%*d %d", &code) == 1 ? code : -1;
}

static int get_status(int port, const char *path, const char *headers)
{
    char *r = request(port, "GET", path, headers, NULL);
    int s = status_of(r);
    free(r);
    return s;
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

/* A 64 x 48 preview: left half red, right half blue. */
static void put_preview(rt_preview *p, int cam)
{
    static uint8_t rgb[64 * 48 * 3];
    for (int y = 0; y < 48; y++)
        for (int x = 0; x < 64; x++) {
            uint8_t *px = rgb + (y * 64 + x) * 3;
            px[0] = x < 32 ? 220 : 20, px[1] = 30, px[2] = x < 32 ? 20 : 220;
        }
    (void)rt_preview_put(p, cam, rgb, 64, 48, 1280, 960, 7, core_now_ns());
}

typedef struct fixture {
    metrics_registry *m;
    rt_preview *p;
    ui_server *u;
} fixture;

static omma_status start(fixture *f, const char *bind, const char *token)
{
    memset(f, 0, sizeof *f);
    metrics_config mc = {NULL, 0, 0};
    OMMA_TRY(metrics_create(&mc, &f->m));
    OMMA_TRY(metrics_add_camera(f->m, 0, "front door", -1));
    OMMA_TRY(metrics_add_camera(f->m, 1, "lab <b>", -1));
    OMMA_TRY(rt_preview_create(2, &f->p));
    const char *names[] = {"front door", "lab <b>"};
    ui_options o = {.bind_addr = bind,
                    .token = token,
                    .n_cameras = 2,
                    .names = names,
                    .max_faces = 2,
                    .t0_ns = core_now_ns(),
                    .metrics = f->m,
                    .preview = f->p};
    return ui_start(&o, &f->u);
}

static void stop(fixture *f)
{
    ui_stop(f->u);
    rt_preview_destroy(f->p);
    metrics_destroy(f->m);
}

static void result_of(rt_result *r, omma_face *face, uint64_t seq)
{
    memset(face, 0, sizeof *face);
    face->id = 3;
    face->score = 0.9f;
    face->box = (omma_box){100.5f, 50.25f, 300.0f, 310.75f};
    face->presence = 1.0f;
    memset(r, 0, sizeof *r);
    r->camera = 0;
    r->gpu = -1;
    r->seq = seq;
    r->capture_ns = core_now_ns();
    r->done_ns = r->capture_ns + 1000000;
    r->n_faces = 1;
    r->faces = face;
    r->width = 1280, r->height = 960;
}

static void test_page_and_validation(void)
{
    int fds = count_fds();
    fixture f;
    REQUIRE_OK(start(&f, NULL, NULL));
    int port = ui_port(f.u);
    REQUIRE(port > 0);
    CHECK(strcmp(ui_token(f.u), "") == 0); /* loopback, no token given */

    char *r = request(port, "GET", "/", NULL, NULL);
    char v[256];
    CHECK(status_of(r) == 200);
    CHECK(r && strstr(r, "text/html") && strstr(r, "omma <span>live view</span>"));
    CHECK(r && strstr(r, "Content-Security-Policy") && strstr(r, "nosniff"));
    free(r);
    (void)v;
    CHECK(get_status(port, "/ui.js", NULL) == 200);
    CHECK(get_status(port, "/ui.css", NULL) == 200);
    CHECK(get_status(port, "/metrics", NULL) == 200);
    /* Validation. */
    CHECK(get_status(port, "/../../etc/passwd", NULL) == 400);
    CHECK(get_status(port, "/%2e%2e/etc/passwd", NULL) == 400);
    CHECK(get_status(port, "//ui.js", NULL) == 400);
    CHECK(get_status(port, "/nothing", NULL) == 404);
    CHECK(get_status(port, "/api/preview/2.jpg", NULL) == 404);
    CHECK(get_status(port, "/api/preview/0.jpg?size=huge", NULL) == 400);
    CHECK(get_status(port, "/api/events?cams=0,5", NULL) == 400);
    CHECK(get_status(port, "/api/events?cams=x", NULL) == 400);
    CHECK(get_status(port, "/api/events?large=-1", NULL) == 400);
    r = request(port, "POST", "/", "Content-Length: 5\r\n", NULL);
    CHECK(status_of(r) == 405);
    free(r);
    r = request(port, "DELETE", "/api/events", NULL, NULL);
    CHECK(status_of(r) == 405);
    free(r);
    /* Headers past the memory limit: refused, nothing else breaks. */
    char *huge = malloc(70000);
    REQUIRE(huge);
    memcpy(huge, "X-Big: ", 7);
    memset(huge + 7, 'a', 70000 - 10);
    memcpy(huge + 70000 - 3, "\r\n", 3);
    r = request(port, "GET", "/", huge, NULL);
    CHECK(status_of(r) != 200);
    free(r);
    free(huge);
    CHECK(get_status(port, "/", NULL) == 200);

    /* A preview: none yet answers 503 after a short wait... */
    CHECK(get_status(port, "/api/preview/1.jpg", NULL) == 503);
    /* ...one put is served as a JPEG that decodes back to it. */
    put_preview(f.p, 0);
    size_t len = 0;
    r = request(port, "GET", "/api/preview/0.jpg?size=large", NULL, &len);
    CHECK(status_of(r) == 200);
    const char *body = r ? strstr(r, "\r\n\r\n") : NULL;
    REQUIRE(body);
    body += 4;
    CHECK(strstr(r, "image/jpeg") && strstr(r, "X-Omma-Seq: 7") &&
          strstr(r, "X-Omma-Frame-Size: 1280x960"));
    io_image img = {0};
    omma_status st =
        io_jpeg_decode("preview", (const uint8_t *)body, len - (size_t)(body - r), &img);
    CHECK(st == OMMA_OK);
    if (st == OMMA_OK) {
        CHECK(img.width == 64 && img.height == 48);
        const uint8_t *left = img.rgb + (24 * 64 + 8) * 3, *right = img.rgb + (24 * 64 + 56) * 3;
        CHECK(left[0] > 180 && left[2] < 60 && right[2] > 180 && right[0] < 60);
        io_image_free(&img);
    }
    free(r);
    ui_stats s;
    ui_get_stats(f.u, &s);
    CHECK(s.jpegs == 1 && s.refused >= 10);
    stop(&f);
    CHECK(count_fds() == fds);
}

static void test_events(void)
{
    fixture f;
    REQUIRE_OK(start(&f, NULL, NULL));
    int port = ui_port(f.u);
    int fd = connect_to(port, 0);
    REQUIRE(fd >= 0);
    REQUIRE(send_all(fd, "GET /api/events?cams=1&large=0 HTTP/1.1\r\nHost: x\r\n\r\n"));
    char *r = read_until(fd, "event: stats", 1 << 20, NULL);
    CHECK(r && strstr(r, "text/event-stream") && strstr(r, "\"name\":\"front door\"") &&
          strstr(r, "\"name\":\"lab <b>\""));
    free(r);
    /* Camera 0 is watched now: its result comes as the JSON output's line. */
    omma_face face;
    rt_result res;
    for (uint64_t seq = 1; seq <= 40; seq++) {
        result_of(&res, &face, seq);
        ui_result(f.u, &res);
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
        if (seq == 20) {
            r = read_until(fd, "\"width\":1280", 1 << 20, NULL);
            CHECK(r && strstr(r, "event: result") &&
                  strstr(r, "\"camera\":0,\"source\":\"front door\"") &&
                  strstr(r, "\"box\":[100.50,50.25,300.00,310.75]") && strstr(r, "\"id\":3"));
            free(r);
        }
    }
    close(fd);
    /* An unwatched camera's result is not kept (nothing to send). */
    result_of(&res, &face, 1);
    res.camera = 1;
    ui_result(f.u, &res);
    stop(&f);
}

typedef struct pusher {
    ui_server *u;
    int n;
} pusher;

static void *push(void *arg)
{
    pusher *p = arg;
    omma_face face;
    rt_result res;
    for (int i = 1; i <= p->n; i++) {
        result_of(&res, &face, (uint64_t)i);
        res.done_ns = core_now_ns();
        ui_result(p->u, &res);
    }
    return NULL;
}

/* A client that opens event streams and never reads: the results keep
 * going in, other clients are served, and stop ends its connection. */
static void test_stalled_client(void)
{
    int fds = count_fds();
    fixture f;
    REQUIRE_OK(start(&f, NULL, NULL));
    int port = ui_port(f.u);
    int stalled[4];
    for (int i = 0; i < 4; i++) {
        stalled[i] = connect_to(port, 1024);
        REQUIRE(stalled[i] >= 0);
        REQUIRE(
            send_all(stalled[i], "GET /api/events?cams=0,1&large=0 HTTP/1.1\r\nHost: x\r\n\r\n"));
    }
    pusher p = {f.u, 200000};
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, push, &p) == 0);
    for (int k = 0; k < 20; k++) { /* meanwhile, others are answered */
        CHECK(get_status(port, "/ui.js", NULL) == 200);
        CHECK(get_status(port, "/metrics", NULL) == 200);
    }
    pthread_join(t, NULL); /* all 200000 results went in */
    ui_stats s;
    ui_get_stats(f.u, &s);
    CHECK(s.streams == 4);
    stop(&f); /* returns: the stalled streams' threads end */
    for (int i = 0; i < 4; i++)
        close(stalled[i]);
    CHECK(count_fds() == fds);
}

static void test_token(void)
{
    fixture f;
    const char *tok = "s3cret-token_0123456789";
    REQUIRE_OK(start(&f, "127.0.0.1", tok));
    int port = ui_port(f.u);
    CHECK(strcmp(ui_token(f.u), tok) == 0);
    const char *paths[] = {"/",       "/ui.js", "/metrics", "/api/events", "/api/preview/0.jpg",
                           "/nothing"};
    for (size_t i = 0; i < sizeof paths / sizeof paths[0]; i++) {
        CHECK(get_status(port, paths[i], NULL) == 401);
        char q[256];
        snprintf(q, sizeof q, "%s?token=wrong-token-0123456789", paths[i]);
        CHECK(get_status(port, q, NULL) == 403);
    }
    CHECK(get_status(port, "/", "Authorization: Bearer wrong-token-0123456789\r\n") == 403);
    CHECK(get_status(port, "/", "Authorization: Basic eDp5\r\n") == 403);
    CHECK(get_status(port, "/", "Cookie: omma_token=wrong-token-0123456789\r\n") == 403);
    char *r = request(port, "GET", "/?token=s3cret-token_0123456789", NULL, NULL);
    CHECK(status_of(r) == 200);
    CHECK(r && strstr(r, "Set-Cookie: omma_token=s3cret-token_0123456789; Path=/; HttpOnly"));
    free(r);
    CHECK(get_status(port, "/metrics", "Authorization: Bearer s3cret-token_0123456789\r\n") == 200);
    CHECK(get_status(port, "/ui.css", "Cookie: a=b; omma_token=s3cret-token_0123456789\r\n") ==
          200);
    stop(&f);

    /* Off loopback without a token: one is made (32 hex digits). */
    REQUIRE_OK(start(&f, "0.0.0.0", NULL));
    const char *made = ui_token(f.u);
    CHECK(strlen(made) == 32 && ui_token_valid(made));
    CHECK(get_status(ui_port(f.u), "/", NULL) == 401);
    char q[128];
    snprintf(q, sizeof q, "/?token=%s", made);
    CHECK(get_status(ui_port(f.u), q, NULL) == 200);
    stop(&f);
}

static void test_bad_options(void)
{
    ui_server *u = (ui_server *)1;
    ui_options o = {.n_cameras = 1, .max_faces = 1, .token = "short"};
    CHECK_FAILS(ui_start(&o, &u), OMMA_ERR_INVALID_ARG, "--ui-token");
    CHECK(u == NULL);
    o.token = NULL;
    o.bind_addr = "localhost";
    CHECK_FAILS(ui_start(&o, &u), OMMA_ERR_INVALID_ARG, "not a numeric");
    o.bind_addr = NULL;
    o.n_cameras = 0;
    CHECK_FAILS(ui_start(&o, &u), OMMA_ERR_INVALID_ARG, "ui_start");
    CHECK_FAILS(ui_start(NULL, &u), OMMA_ERR_INVALID_ARG, "ui_start");
}

int main(void)
{
    if (!metrics_http_available()) {
        printf("SKIP: built without libmicrohttpd\n");
        return 77;
    }
    RUN(test_page_and_validation);
    RUN(test_events);
    RUN(test_stalled_client);
    RUN(test_token);
    RUN(test_bad_options);
    return testing_finish();
}
