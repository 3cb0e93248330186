#define _POSIX_C_SOURCE 200809L /* open_memstream, nanosleep */
/* The live view's server (ui_server.h): the routes, the access check, the
 * event streams and the previews' JPEGs. */
#include "ui/ui_server.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "io/jpeg_encode.h"
#include "metrics/metrics_http.h"
#include "sink/sink_json.h"

#define MAX_STREAMS 16
#define KEEP_EVERY_NS 50000000ull /* results kept per watched camera */
#define LARGE_EVERY_NS 100000000ull /* result events of the large view */
#define THUMB_EVERY_NS 1000000000ull /* and of the others */
#define STATS_EVERY_NS 1000000000ull
#define WATCH_HOLD_NS 3000000000ull
#define POLL_NS 100000000L
#define THUMB_SIDE 320
#define LARGE_SIDE RT_PREVIEW_MAX_SIDE
#define JPEG_QUALITY 75
#define FIRST_PREVIEW_WAIT_MS 2000
#define SYNC_EVERY_NS 200000000ull /* sync events per client */
#define SYNC_MAX_BYTES 65536
#define NAME_MAX_CHARS 64 /* a participant's name, kept (RT_PARTICIPANT_NAME_MAX) */

/* A camera's newest kept result and its preview's JPEG. */
typedef struct ui_cam {
    char *name, *source;
    atomic_uint_fast64_t watched_until; /* core_now_ns() */
    atomic_uint_fast64_t next_keep;
    pthread_mutex_t lock; /* the result below */
    omma_face *faces; /* max_faces, made when first watched */
    int n_faces, width, height, gpu;
    omma_pose *poses; /* max_poses (with max_poses > 0), made with faces */
    int *pose_face;
    int n_poses, has_poses;
    char (*names)[NAME_MAX_CHARS]; /* per face: its participant ("": none) */
    int has_names;
    uint64_t seq, capture_ns, done_ns, dropped, version;
    pthread_mutex_t jpeg_lock; /* the preview below */
    rt_preview_image img;
    uint8_t *jpeg;
    size_t jpeg_len;
    uint64_t jpeg_version;
} ui_cam;

struct ui_server {
    ui_options opt;
    ui_cam *cams;
    char token[UI_TOKEN_MAX + 1];
    metrics_http *http;
    atomic_int stopping;
    atomic_int streams;
    atomic_uint_fast64_t requests, refused, events, jpegs;
    pthread_mutex_t sync_lock; /* the newest synchrony event */
    char *sync;
    size_t sync_len;
    uint64_t sync_version;
    int sync_init;
};

/* One event stream's state, on its connection's thread. */
typedef struct ui_client {
    ui_server *u;
    int cams[UI_MAX_WATCH], n_cams, large;
    uint64_t seen[UI_MAX_WATCH], next_event[UI_MAX_WATCH];
    uint64_t next_stats, next_sync, sync_seen;
    char *buf;
    size_t len, off;
    int started;
} ui_client;

#ifdef OMMA_HAVE_MICROHTTPD

#include <microhttpd.h>

#if MHD_VERSION >= 0x00097002
typedef enum MHD_Result mhd_result;
#else
typedef int mhd_result;
#endif

/* ---- Results, from the runtime's threads ------------------------------ */

void ui_result(ui_server *u, const rt_result *r)
{
    if (!u || !r || r->camera < 0 || r->camera >= u->opt.n_cameras)
        return;
    ui_cam *c = &u->cams[r->camera];
    uint64_t now = r->done_ns;
    if (atomic_load_explicit(&c->watched_until, memory_order_relaxed) <= now)
        return;
    uint_fast64_t next = atomic_load_explicit(&c->next_keep, memory_order_relaxed);
    if (now < next ||
        !atomic_compare_exchange_strong_explicit(&c->next_keep, &next, now + KEEP_EVERY_NS,
                                                 memory_order_relaxed, memory_order_relaxed))
        return;
    pthread_mutex_lock(&c->lock);
    int mp = u->opt.max_poses;
    if (!c->faces) {
        c->faces = calloc((size_t)u->opt.max_faces, sizeof *c->faces);
        c->names = calloc((size_t)u->opt.max_faces, sizeof *c->names);
        if (mp > 0) {
            c->poses = calloc((size_t)mp, sizeof *c->poses);
            c->pose_face = calloc((size_t)mp, sizeof *c->pose_face);
        }
        if (!c->names || (mp > 0 && (!c->poses || !c->pose_face))) {
            free(c->faces), free(c->names), free(c->poses), free(c->pose_face);
            c->faces = NULL, c->names = NULL, c->poses = NULL, c->pose_face = NULL;
        }
    }
    if (c->faces) {
        int n = r->n_faces < u->opt.max_faces ? r->n_faces : u->opt.max_faces;
        memcpy(c->faces, r->faces, (size_t)n * sizeof *c->faces);
        c->n_faces = n;
        c->has_names = r->participant != NULL;
        for (int i = 0; i < n; i++)
            snprintf(c->names[i], sizeof c->names[i], "%s",
                     r->participant && r->participant[i] ? r->participant[i] : "");
        c->has_poses = r->poses != NULL && mp > 0;
        c->n_poses = c->has_poses ? (r->n_poses < mp ? r->n_poses : mp) : 0;
        for (int k = 0; k < c->n_poses; k++) {
            c->poses[k] = r->poses[k];
            int f = r->pose_face ? r->pose_face[k] : -1;
            c->pose_face[k] = f >= 0 && f < n ? f : -1;
        }
        c->width = r->width, c->height = r->height, c->gpu = r->gpu;
        c->seq = r->seq, c->capture_ns = r->capture_ns, c->done_ns = r->done_ns;
        c->dropped = r->dropped;
        c->version++;
    }
    pthread_mutex_unlock(&c->lock);
}

void ui_sync(ui_server *u, const char *json, size_t len)
{
    if (!u || !json || len == 0 || len > SYNC_MAX_BYTES)
        return;
    char *copy = malloc(len + 1);
    if (!copy)
        return;
    memcpy(copy, json, len);
    copy[len] = 0;
    pthread_mutex_lock(&u->sync_lock);
    free(u->sync);
    u->sync = copy;
    u->sync_len = len;
    u->sync_version++;
    pthread_mutex_unlock(&u->sync_lock);
}

/* ---- Responses --------------------------------------------------------- */

static void security_headers(struct MHD_Response *r)
{
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
    MHD_add_response_header(r, "X-Frame-Options", "DENY");
    MHD_add_response_header(r, "Content-Security-Policy",
                            "default-src 'self'; img-src 'self' blob:; style-src 'self'; "
                            "script-src 'self'; connect-src 'self'; frame-ancestors 'none'");
}

static mhd_result respond(ui_server *u, struct MHD_Connection *conn, unsigned status,
                          const char *type, const void *body, size_t len, int copy)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(
        len, (void *)body, copy ? MHD_RESPMEM_MUST_COPY : MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    security_headers(r);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"omma\"");
    mhd_result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    atomic_fetch_add_explicit(&u->requests, 1, memory_order_relaxed);
    if (status >= 400)
        atomic_fetch_add_explicit(&u->refused, 1, memory_order_relaxed);
    return ret;
}

static mhd_result respond_text(ui_server *u, struct MHD_Connection *conn, unsigned status,
                               const char *text)
{
    return respond(u, conn, status, "text/plain; charset=utf-8", text, strlen(text), 0);
}

static const char *content_type(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (dot && strcmp(dot, ".html") == 0)
        return "text/html; charset=utf-8";
    if (dot && strcmp(dot, ".js") == 0)
        return "text/javascript; charset=utf-8";
    if (dot && strcmp(dot, ".css") == 0)
        return "text/css; charset=utf-8";
    return "application/octet-stream";
}

static mhd_result serve_asset(ui_server *u, struct MHD_Connection *conn, int i, int set_cookie)
{
    const ui_asset *a = &ui_assets[i];
    struct MHD_Response *r =
        MHD_create_response_from_buffer(a->size, (void *)a->data, MHD_RESPMEM_PERSISTENT);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, content_type(a->name));
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    security_headers(r);
    if (set_cookie && u->token[0]) {
        /* The page's own requests (images, events) carry it from now on. */
        char cookie[UI_TOKEN_MAX + 64];
        snprintf(cookie, sizeof cookie, "omma_token=%s; Path=/; HttpOnly; SameSite=Strict",
                 u->token);
        MHD_add_response_header(r, MHD_HTTP_HEADER_SET_COOKIE, cookie);
    }
    mhd_result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    atomic_fetch_add_explicit(&u->requests, 1, memory_order_relaxed);
    return ret;
}

/* ---- Previews ---------------------------------------------------------- */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static mhd_result serve_preview(ui_server *u, struct MHD_Connection *conn, int cam)
{
    if (!u->opt.preview)
        return respond_text(u, conn, MHD_HTTP_NOT_FOUND, "no previews in this run\n");
    const char *size = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "size");
    int large = ui_parse_size(size);
    if (large < 0)
        return respond_text(u, conn, MHD_HTTP_BAD_REQUEST, "size: expected thumb or large\n");
    ui_cam *c = &u->cams[cam];
    uint64_t now = core_now_ns();
    rt_preview_want(u->opt.preview, cam, large ? LARGE_SIDE : THUMB_SIDE,
                    large ? 200000000ull : 1000000000ull, now);
    pthread_mutex_lock(&c->jpeg_lock);
    int rc = rt_preview_get(u->opt.preview, cam, &c->img);
    for (int waited = 0; rc == 0 && c->img.version == 0 && waited < FIRST_PREVIEW_WAIT_MS &&
                         !atomic_load(&u->stopping);
         waited += 50) {
        pthread_mutex_unlock(&c->jpeg_lock);
        sleep_ms(50);
        pthread_mutex_lock(&c->jpeg_lock);
        rc = rt_preview_get(u->opt.preview, cam, &c->img);
    }
    if (rc < 0 || c->img.version == 0) {
        pthread_mutex_unlock(&c->jpeg_lock);
        return respond_text(u, conn, MHD_HTTP_SERVICE_UNAVAILABLE,
                            rc < 0 ? "out of memory\n" : "no frame yet\n");
    }
    if (c->jpeg_version != c->img.version) {
        uint8_t *jpeg = NULL;
        size_t len = 0;
        if (io_jpeg_encode(c->img.rgb, c->img.w, c->img.h, JPEG_QUALITY, &jpeg, &len) != OMMA_OK) {
            pthread_mutex_unlock(&c->jpeg_lock);
            return respond_text(u, conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "JPEG encoding failed\n");
        }
        free(c->jpeg);
        c->jpeg = jpeg, c->jpeg_len = len, c->jpeg_version = c->img.version;
        atomic_fetch_add_explicit(&u->jpegs, 1, memory_order_relaxed);
    }
    struct MHD_Response *r =
        MHD_create_response_from_buffer(c->jpeg_len, c->jpeg, MHD_RESPMEM_MUST_COPY);
    char seq[32], frame[32];
    snprintf(seq, sizeof seq, "%llu", (unsigned long long)c->img.seq);
    snprintf(frame, sizeof frame, "%dx%d", c->img.frame_w, c->img.frame_h);
    pthread_mutex_unlock(&c->jpeg_lock);
    if (!r)
        return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "image/jpeg");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    MHD_add_response_header(r, "X-Omma-Seq", seq);
    MHD_add_response_header(r, "X-Omma-Frame-Size", frame);
    security_headers(r);
    mhd_result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    atomic_fetch_add_explicit(&u->requests, 1, memory_order_relaxed);
    return ret;
}

/* ---- Event streams ----------------------------------------------------- */

static void put_stats(ui_client *cl, FILE *m)
{
    ui_server *u = cl->u;
    char *text = NULL;
    metrics_snapshot *snap = NULL;
    if (!u->opt.metrics || metrics_snapshot_take(u->opt.metrics, &snap) != OMMA_OK)
        return;
    omma_status st = metrics_format_json(snap, &text, NULL);
    metrics_snapshot_free(snap);
    if (st != OMMA_OK)
        return;
    size_t n = strlen(text);
    while (n > 0 && text[n - 1] == '\n')
        text[--n] = 0;
    fprintf(m, "event: stats\ndata: %s\n\n", text);
    free(text);
    atomic_fetch_add_explicit(&u->events, 1, memory_order_relaxed);
}

/* Camera k of the client's list: its newest kept result, when newer than
 * the last sent and due. */
static void put_result(ui_client *cl, int k, uint64_t now, FILE *m)
{
    ui_server *u = cl->u;
    int cam = cl->cams[k];
    ui_cam *c = &u->cams[cam];
    if (now < cl->next_event[k])
        return;
    pthread_mutex_lock(&c->lock);
    if (c->version == cl->seen[k] || !c->faces) {
        pthread_mutex_unlock(&c->lock);
        return;
    }
    const char *names[OMMA_PIPELINE_MAX_FACES];
    for (int i = 0; i < c->n_faces && i < OMMA_PIPELINE_MAX_FACES; i++)
        names[i] = c->names[i][0] ? c->names[i] : NULL;
    sink_frame fr = {.camera = cam,
                     .source = c->source,
                     .frame = (long)c->seq - 1,
                     .timestamp_ms = (double)((int64_t)c->capture_ns - (int64_t)u->opt.t0_ns) / 1e6,
                     .has_extra = 1,
                     .gpu = c->gpu,
                     .latency_ms = (double)(c->done_ns - c->capture_ns) / 1e6,
                     .dropped = (unsigned long long)c->dropped,
                     .faces = c->faces,
                     .n_faces = c->n_faces,
                     .has_poses = c->has_poses,
                     .poses = c->poses,
                     .n_poses = c->n_poses,
                     .pose_face = c->has_poses ? c->pose_face : NULL,
                     .participant = c->has_names ? names : NULL};
    fputs("event: result\ndata: ", m);
    sink_json_frame(m, &fr); /* ends with a newline */
    fprintf(m, "data: {\"width\":%d,\"height\":%d}\n\n", c->width, c->height);
    cl->seen[k] = c->version;
    pthread_mutex_unlock(&c->lock);
    cl->next_event[k] = now + (cam == cl->large ? LARGE_EVERY_NS : THUMB_EVERY_NS);
    atomic_fetch_add_explicit(&u->events, 1, memory_order_relaxed);
}

/* The newest synchrony sample, when newer than the last sent and due. */
static void put_sync(ui_client *cl, uint64_t now, FILE *m)
{
    ui_server *u = cl->u;
    if (now < cl->next_sync)
        return;
    pthread_mutex_lock(&u->sync_lock);
    if (u->sync && u->sync_version != cl->sync_seen) {
        fputs("event: sync\ndata: ", m);
        fwrite(u->sync, 1, u->sync_len, m);
        fputs("\n\n", m);
        cl->sync_seen = u->sync_version;
        cl->next_sync = now + SYNC_EVERY_NS;
        atomic_fetch_add_explicit(&u->events, 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&u->sync_lock);
}

/* The next chunk of the stream into cl->buf (empty when nothing is new). */
static void build(ui_client *cl)
{
    ui_server *u = cl->u;
    free(cl->buf);
    cl->buf = NULL;
    cl->len = cl->off = 0;
    FILE *m = open_memstream(&cl->buf, &cl->len);
    if (!m)
        return;
    uint64_t now = core_now_ns();
    if (!cl->started) {
        fputs("retry: 2000\n\n", m);
        cl->started = 1;
    }
    for (int k = 0; k < cl->n_cams; k++)
        atomic_store_explicit(&u->cams[cl->cams[k]].watched_until, now + WATCH_HOLD_NS,
                              memory_order_relaxed);
    if (now >= cl->next_stats) {
        put_stats(cl, m);
        cl->next_stats = now + STATS_EVERY_NS;
    }
    for (int k = 0; k < cl->n_cams; k++)
        put_result(cl, k, now, m);
    put_sync(cl, now, m);
    if (fclose(m) != 0) {
        free(cl->buf);
        cl->buf = NULL;
        cl->len = 0;
    }
}

static ssize_t sse_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    ui_client *cl = cls;
    (void)pos;
    while (cl->off == cl->len) {
        if (atomic_load(&cl->u->stopping))
            return MHD_CONTENT_READER_END_OF_STREAM;
        build(cl);
        if (cl->off == cl->len) {
            struct timespec ts = {0, POLL_NS};
            nanosleep(&ts, NULL);
        }
    }
    size_t n = cl->len - cl->off < max ? cl->len - cl->off : max;
    memcpy(buf, cl->buf + cl->off, n);
    cl->off += n;
    return (ssize_t)n;
}

static void sse_free(void *cls)
{
    ui_client *cl = cls;
    atomic_fetch_sub(&cl->u->streams, 1);
    free(cl->buf);
    free(cl);
}

static mhd_result serve_events(ui_server *u, struct MHD_Connection *conn)
{
    ui_client *cl = calloc(1, sizeof *cl);
    if (!cl)
        return respond_text(u, conn, MHD_HTTP_SERVICE_UNAVAILABLE, "out of memory\n");
    cl->u = u;
    cl->large = -1;
    const char *cams = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "cams");
    const char *large = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "large");
    cl->n_cams = ui_parse_cameras(cams, u->opt.n_cameras, cl->cams, UI_MAX_WATCH);
    int lg[1];
    int n_large = large ? ui_parse_cameras(large, u->opt.n_cameras, lg, 1) : 0;
    if (cl->n_cams < 0 || n_large < 0) {
        free(cl);
        return respond_text(u, conn, MHD_HTTP_BAD_REQUEST,
                            "cams / large: expected camera indices like 0,3,17 (at most 64)\n");
    }
    if (n_large == 1) {
        cl->large = lg[0];
        int have = 0;
        for (int k = 0; k < cl->n_cams; k++)
            have |= cl->cams[k] == lg[0];
        if (!have && cl->n_cams < UI_MAX_WATCH)
            cl->cams[cl->n_cams++] = lg[0];
    }
    if (atomic_fetch_add(&u->streams, 1) >= MAX_STREAMS) {
        atomic_fetch_sub(&u->streams, 1);
        free(cl);
        return respond_text(u, conn, MHD_HTTP_SERVICE_UNAVAILABLE, "too many event streams\n");
    }
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, sse_read, cl, sse_free);
    if (!r) {
        sse_free(cl);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    security_headers(r);
    mhd_result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    atomic_fetch_add_explicit(&u->requests, 1, memory_order_relaxed);
    return ret;
}

/* ---- Requests ---------------------------------------------------------- */

/* 0: allowed; else the status to refuse with. */
static unsigned check_token(ui_server *u, struct MHD_Connection *conn)
{
    if (!u->token[0])
        return 0;
    char t[UI_TOKEN_MAX + 1];
    const char *q = MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "token");
    const char *h = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization");
    const char *k = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Cookie");
    const char *given = NULL;
    if (q)
        given = q;
    else if (ui_token_from_header(h, t) || ui_token_from_cookie(k, t))
        given = t;
    if (!given && !h)
        return MHD_HTTP_UNAUTHORIZED;
    return given && ui_token_equal(given, u->token) ? 0 : MHD_HTTP_FORBIDDEN;
}

static int handle(void *ctx, struct MHD_Connection *conn, const char *url, const char *method,
                  const char *upload_data, size_t *upload_size, void **con_cls)
{
    ui_server *u = ctx;
    (void)upload_data, (void)con_cls;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return respond_text(u, conn, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");
    if (upload_size && *upload_size)
        return respond_text(u, conn, MHD_HTTP_CONTENT_TOO_LARGE, "no body expected\n");
    int arg = -1;
    ui_route route = ui_route_parse(url, u->opt.n_cameras, &arg);
    if (route == UI_ROUTE_BAD)
        return respond_text(u, conn, MHD_HTTP_BAD_REQUEST, "bad path\n");
    unsigned refuse = check_token(u, conn);
    if (refuse)
        return respond_text(u, conn, refuse,
                            refuse == MHD_HTTP_UNAUTHORIZED
                                ? "a token is needed: open the address omma stream printed\n"
                                : "wrong token\n");
    switch (route) {
    case UI_ROUTE_ASSET:
        return serve_asset(u, conn, arg, strcmp(ui_assets[arg].name, "index.html") == 0);
    case UI_ROUTE_EVENTS:
        return serve_events(u, conn);
    case UI_ROUTE_PREVIEW:
        return serve_preview(u, conn, arg);
    case UI_ROUTE_METRICS: {
        int ret = metrics_http_serve(u->opt.metrics, conn);
        atomic_fetch_add_explicit(&u->requests, 1, memory_order_relaxed);
        return ret;
    }
    default:
        return respond_text(u, conn, MHD_HTTP_NOT_FOUND, "not found\n");
    }
}

#else /* no libmicrohttpd: ui_start fails in metrics_http_start_with */

void ui_result(ui_server *u, const rt_result *r)
{
    (void)u, (void)r;
}

void ui_sync(ui_server *u, const char *json, size_t len)
{
    (void)u, (void)json, (void)len;
}

static int handle(void *ctx, struct MHD_Connection *conn, const char *url, const char *method,
                  const char *upload_data, size_t *upload_size, void **con_cls)
{
    (void)ctx, (void)conn, (void)url, (void)method, (void)upload_data, (void)upload_size;
    (void)con_cls;
    return 0;
}

#endif

/* ---- Set-up ------------------------------------------------------------ */

static omma_status random_token(char out[UI_TOKEN_MAX + 1])
{
    unsigned char bytes[16];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? read(fd, bytes, sizeof bytes) : -1;
    if (fd >= 0)
        close(fd);
    if (got != (ssize_t)sizeof bytes)
        return OMMA_FAIL(OMMA_ERR_IO, "--ui: no random bytes for the access token (/dev/urandom)");
    for (size_t i = 0; i < sizeof bytes; i++)
        snprintf(out + 2 * i, 3, "%02x", bytes[i]);
    return OMMA_OK;
}

static void free_server(ui_server *u)
{
    if (!u)
        return;
    if (u->cams) {
        for (int i = 0; i < u->opt.n_cameras; i++) {
            ui_cam *c = &u->cams[i];
            pthread_mutex_destroy(&c->lock);
            pthread_mutex_destroy(&c->jpeg_lock);
            free(c->name);
            free(c->source);
            free(c->faces);
            free(c->names);
            free(c->poses);
            free(c->pose_face);
            free(c->img.rgb);
            free(c->jpeg);
        }
        free(u->cams);
    }
    if (u->sync_init) {
        free(u->sync);
        pthread_mutex_destroy(&u->sync_lock);
    }
    free(u);
}

omma_status ui_start(const ui_options *o, ui_server **out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "ui_start: NULL out");
    *out = NULL;
    if (!o || o->n_cameras < 1 || o->max_faces < 1 || o->max_faces > OMMA_PIPELINE_MAX_FACES ||
        o->max_poses < 0 || o->max_poses > OMMA_POSE_MAX_POSES)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "ui_start: no options, cameras or faces, or "
                                               "faces or poses out of range");
    if (o->token && !ui_token_valid(o->token))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "--ui-token: expected %d..%d characters of A-Z a-z 0-9 _ -", UI_TOKEN_MIN,
                         UI_TOKEN_MAX);
    ui_server *u = calloc(1, sizeof *u);
    if (!u)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "the live view");
    u->opt = *o;
    u->opt.names = u->opt.sources = NULL;
    pthread_mutex_init(&u->sync_lock, NULL);
    u->sync_init = 1;
    if (!u->opt.bind_addr)
        u->opt.bind_addr = "127.0.0.1";
    u->cams = calloc((size_t)o->n_cameras, sizeof *u->cams);
    if (!u->cams) {
        free(u);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "the live view's %d cameras", o->n_cameras);
    }
    omma_status st = OMMA_OK;
    for (int i = 0; i < o->n_cameras; i++) {
        ui_cam *c = &u->cams[i];
        pthread_mutex_init(&c->lock, NULL);
        pthread_mutex_init(&c->jpeg_lock, NULL);
        char fallback[32];
        snprintf(fallback, sizeof fallback, "cam%d", i);
        const char *name = o->names && o->names[i] ? o->names[i] : fallback;
        c->name = strdup(name);
        c->source = strdup(o->sources && o->sources[i] ? o->sources[i] : name);
        if (!c->name || !c->source)
            st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "the live view's camera names");
    }
    if (st == OMMA_OK && o->token)
        snprintf(u->token, sizeof u->token, "%s", o->token);
    else if (st == OMMA_OK && !ui_addr_is_loopback(u->opt.bind_addr))
        st = random_token(u->token);
    if (st == OMMA_OK) {
        metrics_http_options ho = {.bind_addr = u->opt.bind_addr,
                                   .port = o->port,
                                   .handler = handle,
                                   .ctx = u,
                                   .thread_per_connection = 1,
                                   .max_connections = o->max_connections ? o->max_connections : 64,
                                   .max_per_ip = 32,
                                   .timeout_s = 10,
                                   .name = "live view (--ui)"};
        st = metrics_http_start_with(o->metrics, &ho, &u->http);
    }
    if (st != OMMA_OK) {
        free_server(u);
        return st;
    }
    *out = u;
    return OMMA_OK;
}

int ui_port(const ui_server *u)
{
    return u ? metrics_http_port(u->http) : 0;
}

const char *ui_token(const ui_server *u)
{
    return u ? u->token : "";
}

void ui_get_stats(ui_server *u, ui_stats *out)
{
    memset(out, 0, sizeof *out);
    if (!u)
        return;
    out->requests = atomic_load(&u->requests);
    out->refused = atomic_load(&u->refused);
    out->events = atomic_load(&u->events);
    out->jpegs = atomic_load(&u->jpegs);
    out->streams = atomic_load(&u->streams);
}

void ui_stop(ui_server *u)
{
    if (!u)
        return;
    atomic_store(&u->stopping, 1);
    metrics_http_stop(u->http);
    free_server(u);
}
