#define _POSIX_C_SOURCE 200809L /* strdup, gethostname, clock_gettime */
/* The sink core: the bounded backlog, the sender thread, the counters. The
 * backends (sink_kafka.c, sink_nats.c, sink_mqtt.c) only hand messages to
 * their library and report acknowledgements. */
#include "sink/sink.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "sink/sink_private.h"

#define POOL_BYTES (4 << 20) /* delivered messages kept for reuse, at most */
#define POOL_MSG_BYTES 16384 /* larger ones are freed */
#define DEFAULT_BACKLOG 10000
#define DEFAULT_WINDOW 1000
#define IDLE_WAIT_NS 2000000 /* the sender's nap when it has nothing to do */

struct sink {
    sink_kind kind;
    const sink_backend *backend;
    void *impl;
    char name[SINK_NAME_MAX];
    char site[64], node[64];
    char *template; /* subject/topic with {site}, {node}, {camera} */
    char run[32]; /* this process's run, in message ids */
    char id_prefix[128]; /* "node-run-": the start of every message id */
    size_t id_prefix_len;
    int window;

    pthread_mutex_t lock; /* the backlog, closing, last_error */
    pthread_cond_t cond;
    sink_msg **ring;
    int cap, head, count;
    int held; /* taken by the sender, not yet sent or put back */
    int closing, stop;
    char last_error[SINK_ERROR_MAX];
    pthread_t thread;
    int thread_started;

    atomic_uint_fast64_t published, sent, acked, failed, dropped, fenced;
    int (*fence)(void *ctx, const char *camera, uint64_t lease);
    void *fence_ctx;
    atomic_int connected;

    /* Delivered messages kept for sink_publish to reuse: allocated by the
     * publishers and freed by the sender thread, each malloc and free took
     * the allocator's slow path (another thread's arena, its lock, heap
     * trimming): ~0.15 us a message. The sender thread pushes (the one
     * producer); publishers take the whole stack at once, under pool_lock,
     * so no ABA. */
    _Atomic(sink_msg *) pool;
    atomic_size_t pool_bytes;
    pthread_mutex_t pool_lock;
    sink_msg *pool_taken; /* under pool_lock */
};

const char *sink_kind_str(sink_kind kind)
{
    switch (kind) {
    case SINK_KAFKA:
        return "kafka";
    case SINK_NATS:
        return "nats";
    case SINK_MQTT:
        return "mqtt";
    default:
        return "unknown";
    }
}

void sink_msg_free(sink_msg *m)
{
    if (!m)
        return;
    free(m);
}

/* A message of the pool with room for need bytes, or NULL. */
static sink_msg *pool_get(sink *s, size_t need)
{
    if (!atomic_load_explicit(&s->pool_bytes, memory_order_relaxed))
        return NULL;
    pthread_mutex_lock(&s->pool_lock);
    if (!s->pool_taken)
        s->pool_taken = atomic_exchange(&s->pool, NULL);
    sink_msg *m = s->pool_taken;
    if (m)
        s->pool_taken = m->next;
    pthread_mutex_unlock(&s->pool_lock);
    if (!m)
        return NULL;
    atomic_fetch_sub_explicit(&s->pool_bytes, m->cap, memory_order_relaxed);
    if (m->cap < need) {
        free(m);
        return NULL;
    }
    return m;
}

void sink_msg_done(sink *s, sink_msg *m)
{
    if (!m)
        return;
    if (m->cap > POOL_MSG_BYTES ||
        atomic_load_explicit(&s->pool_bytes, memory_order_relaxed) + m->cap > POOL_BYTES) {
        free(m);
        return;
    }
    atomic_fetch_add_explicit(&s->pool_bytes, m->cap, memory_order_relaxed);
    sink_msg *head = atomic_load_explicit(&s->pool, memory_order_relaxed);
    do
        m->next = head;
    while (!atomic_compare_exchange_weak(&s->pool, &head, m));
}

static void pool_free(sink *s)
{
    for (int i = 0; i < 2; i++) {
        sink_msg *m = i ? s->pool_taken : atomic_exchange(&s->pool, NULL);
        while (m) {
            sink_msg *next = m->next;
            free(m);
            m = next;
        }
    }
    s->pool_taken = NULL;
}

/* One allocation (or one of the pool): the struct, the strings and the
 * data. */
static sink_msg *msg_new(sink *s, const char *subject, const char *key, const char *id,
                         const void *data, size_t len)
{
    size_t sn = strlen(subject) + 1, kn = strlen(key) + 1, in = strlen(id) + 1;
    size_t need = sn + kn + in + len;
    sink_msg *m = pool_get(s, need);
    if (!m) {
        m = malloc(sizeof *m + need);
        if (!m)
            return NULL;
        m->cap = need;
    }
    char *p = (char *)(m + 1);
    m->subject = memcpy(p, subject, sn);
    m->key = memcpy(p + sn, key, kn);
    m->id = memcpy(p + sn + kn, id, in);
    m->data = (unsigned char *)p + sn + kn + in;
    memcpy(m->data, data, len);
    m->len = len;
    m->lease = 0;
    return m;
}

/* Under the lock. Pushes at the tail (or the head); past the bound the
 * oldest (the head) is dropped. */
static void push(sink *s, sink_msg *m, int front)
{
    if (s->count == s->cap) {
        if (front) { /* a message put back is older than all the others */
            sink_msg_free(m);
            atomic_fetch_add(&s->dropped, 1);
            return;
        }
        sink_msg *old = s->ring[s->head];
        s->head = (s->head + 1) % s->cap;
        s->count--;
        sink_msg_free(old);
        atomic_fetch_add(&s->dropped, 1);
    }
    if (front) {
        s->head = (s->head + s->cap - 1) % s->cap;
        s->ring[s->head] = m;
    } else {
        s->ring[(s->head + s->count) % s->cap] = m;
    }
    s->count++;
}

static sink_msg *pop(sink *s)
{
    if (s->count == 0)
        return NULL;
    sink_msg *m = s->ring[s->head];
    s->head = (s->head + 1) % s->cap;
    s->count--;
    return m;
}

static uint64_t inflight(sink *s)
{
    uint64_t sent = atomic_load(&s->sent), done = atomic_load(&s->acked) + atomic_load(&s->failed);
    return sent > done ? sent - done : 0;
}

void sink_acked(sink *s, uint64_t n)
{
    atomic_fetch_add(&s->acked, n);
}

void sink_set_connected(sink *s, int connected)
{
    atomic_store(&s->connected, connected);
}

void sink_set_error(sink *s, const char *fmt, ...)
{
    char buf[SINK_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&s->lock);
    memcpy(s->last_error, buf, sizeof buf);
    pthread_mutex_unlock(&s->lock);
}

void sink_failed(sink *s, const char *error, const char *subject, const char *key, const char *id,
                 const void *data, size_t len, int requeue)
{
    sink_msg *m = requeue ? msg_new(s, subject, key ? key : "", id ? id : "", data, len) : NULL;
    pthread_mutex_lock(&s->lock);
    if (error)
        snprintf(s->last_error, sizeof s->last_error, "%s", error);
    if (m && !s->stop)
        push(s, m, 1);
    else if (requeue)
        atomic_fetch_add(&s->dropped, 1), sink_msg_free(m);
    else
        atomic_fetch_add(&s->dropped, 1);
    atomic_fetch_add(&s->failed, 1);
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

void sink_requeue(sink *s, sink_msg *m, const char *error)
{
    pthread_mutex_lock(&s->lock);
    if (error)
        snprintf(s->last_error, sizeof s->last_error, "%s", error);
    if (!s->stop) {
        push(s, m, 1);
    } else {
        sink_msg_free(m);
        atomic_fetch_add(&s->dropped, 1);
    }
    atomic_fetch_add(&s->failed, 1);
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
}

static void timed_wait(sink *s, uint64_t ns)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t t = (uint64_t)ts.tv_nsec + ns;
    ts.tv_sec += (time_t)(t / 1000000000u);
    ts.tv_nsec = (long)(t % 1000000000u);
    pthread_cond_timedwait(&s->cond, &s->lock, &ts);
}

/* Messages the sender takes from the backlog under one lock. */
#define SEND_BATCH 64

static void *sender(void *arg)
{
    sink *s = arg;
    int since_poll = 0;
    sink_msg *batch[SEND_BATCH];
    pthread_mutex_lock(&s->lock);
    while (!s->stop) {
        uint64_t busy = inflight(s);
        if (s->count == 0 || busy >= (uint64_t)s->window) {
            pthread_mutex_unlock(&s->lock);
            s->backend->poll(s->impl, 0);
            since_poll = 0;
            pthread_mutex_lock(&s->lock);
            if (!s->stop && (s->count == 0 || inflight(s) >= (uint64_t)s->window))
                timed_wait(s, IDLE_WAIT_NS);
            continue;
        }
        /* Up to SEND_BATCH, within the window: one lock round per batch. */
        uint64_t room = (uint64_t)s->window - busy;
        int nb = 0;
        while (nb < SEND_BATCH && (uint64_t)nb < room && s->count > 0)
            batch[nb++] = pop(s);
        s->held = nb;
        pthread_mutex_unlock(&s->lock);
        int i = 0;
        omma_status st = OMMA_OK;
        for (; i < nb; i++) {
            sink_msg *m = batch[i];
            if (m->lease && s->fence && !s->fence(s->fence_ctx, m->key, m->lease)) {
                sink_msg_free(m); /* its camera's lease ended: another node owns it */
                atomic_fetch_add(&s->fenced, 1);
                atomic_fetch_add(&s->dropped, 1);
                continue;
            }
            st = s->backend->send(s->impl, &m);
            if (st != OMMA_OK)
                break;
            atomic_fetch_add(&s->sent, 1);
            sink_msg_done(s, m); /* NULL: the backend kept it */
            if (++since_poll >= 64) {
                s->backend->poll(s->impl, 0);
                since_poll = 0;
            }
        }
        pthread_mutex_lock(&s->lock);
        s->held = 0;
        if (i == nb)
            continue;
        /* The ones not sent back to the head, in their order. */
        for (int k = nb - 1; k > i; k--)
            push(s, batch[k], 1);
        if (st == OMMA_ERR_BUSY) {
            push(s, batch[i], 1);
            pthread_mutex_unlock(&s->lock);
            s->backend->poll(s->impl, 5);
            since_poll = 0;
            pthread_mutex_lock(&s->lock);
        } else { /* refused for good (the backend said why) */
            sink_msg_free(batch[i]);
            atomic_fetch_add(&s->failed, 1);
            atomic_fetch_add(&s->sent, 1);
            atomic_fetch_add(&s->dropped, 1);
        }
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static const sink_backend *backend_of(sink_kind kind)
{
    switch (kind) {
    case SINK_KAFKA:
        return &sink_kafka_backend;
    case SINK_NATS:
        return &sink_nats_backend;
    case SINK_MQTT:
        return &sink_mqtt_backend;
    default:
        return NULL;
    }
}

/* The URL without its password. */
static void shown_name(const char *url, char *out, size_t cap)
{
    const char *sep = strstr(url, "://");
    const char *at = sep ? strchr(sep + 3, '@') : NULL;
    const char *slash = sep ? strchr(sep + 3, '/') : NULL;
    if (at && (!slash || at < slash)) {
        const char *colon = memchr(sep + 3, ':', (size_t)(at - sep - 3));
        if (colon) {
            snprintf(out, cap, "%.*s:***%s", (int)(colon - url), url, at);
            return;
        }
    }
    snprintf(out, cap, "%s", url);
    if (strlen(url) >= cap && cap > 4)
        memcpy(out + cap - 4, "...", 4);
}

/* v in decimal at out (20 bytes at most, no terminator); returns its length.
 * sink_publish runs for every message: no printf there (~0.5 us). */
static size_t put_decimal(char *out, uint64_t v)
{
    char digits[20];
    size_t n = 0;
    do
        digits[n++] = (char)('0' + v % 10);
    while ((v /= 10) > 0);
    for (size_t i = 0; i < n; i++)
        out[i] = digits[n - 1 - i];
    return n;
}

/* A {camera} value for subjects and topics: what NATS and MQTT accept in
 * one token (letters, digits, '-', '_'; the rest becomes '_'). */
static void camera_token(const sink_message *m, char *out, size_t cap)
{
    if (!m->camera_name) {
        if (cap < 16) { /* "cam", a sign, 10 digits */
            snprintf(out, cap, "cam%d", m->camera);
            return;
        }
        int64_t c = m->camera;
        size_t n = 3;
        memcpy(out, "cam", 3);
        if (c < 0)
            out[n++] = '-';
        n += put_decimal(out + n, (uint64_t)(c < 0 ? -c : c));
        out[n] = 0;
        return;
    }
    size_t n = 0;
    for (const char *c = m->camera_name; *c && n + 1 < cap; c++, n++) {
        char ch = *c;
        int ok = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                 ch == '-' || ch == '_';
        out[n] = ok ? ch : '_';
    }
    out[n] = 0;
}

/* The subject (topic) template of the URL's path, checked. */
static omma_status make_template(sink *s, const sink_url *u)
{
    char buf[1024];
    const char *path = u->path;
    if (s->kind == SINK_KAFKA) {
        if (!*path)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: no topic (kafka://BROKERS/TOPIC)",
                             s->name);
        snprintf(buf, sizeof buf, "%s", path);
    } else if (strchr(path, '{')) {
        snprintf(buf, sizeof buf, "%s", path);
    } else {
        const char *prefix = *path ? path : "omma";
        if (s->kind == SINK_NATS)
            snprintf(buf, sizeof buf, "%s.{site}.{camera}.faces", prefix);
        else
            snprintf(buf, sizeof buf, "%s/{site}/{camera}/faces", prefix);
    }
    if (strlen(path) > SINK_SUBJECT_MAX)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: the %s is %zu bytes (at most %d)", s->name,
                         s->kind == SINK_NATS ? "subject" : "topic", strlen(path),
                         SINK_SUBJECT_MAX);
    char probe[SINK_SUBJECT_MAX + 1];
    if (sink_expand(buf, s->site, s->node, "c", probe, sizeof probe) < 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "sink %s: the %s '%s' with site '%s' and node '%s' is longer than %d "
                         "bytes",
                         s->name, s->kind == SINK_NATS ? "subject" : "topic", buf, s->site, s->node,
                         SINK_SUBJECT_MAX);
    for (const char *c = probe; *c; c++) {
        unsigned char ch = (unsigned char)*c;
        int bad = ch <= ' ' || ch == 0x7f;
        if (s->kind == SINK_NATS)
            bad |= ch == '*' || ch == '>';
        else if (s->kind == SINK_MQTT)
            bad |= ch == '+' || ch == '#';
        else
            bad |= !((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') ||
                     (ch >= 'A' && ch <= 'Z') || ch == '.' || ch == '_' || ch == '-');
        if (bad)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                             "sink %s: the %s '%s' has a character %s "
                             "refuses ('%c')",
                             s->name, s->kind == SINK_NATS ? "subject" : "topic", probe,
                             sink_kind_str(s->kind), ch > ' ' ? ch : '?');
    }
    if (s->kind == SINK_NATS &&
        (probe[0] == '.' || strstr(probe, "..") || probe[strlen(probe) - 1] == '.'))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: the subject '%s' has an empty token",
                         s->name, probe);
    s->template = strdup(buf);
    if (!s->template)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "sink %s: out of memory", s->name);
    return OMMA_OK;
}

static omma_status check_name(const char *what, const char *v, const char *name)
{
    if (!*v || strlen(v) >= 64)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: the %s '%s' must be 1..63 bytes", name,
                         what, v);
    for (const char *c = v; *c; c++)
        if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
              *c == '-' || *c == '_'))
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                             "sink %s: the %s '%s' may hold letters, digits, '-' and '_' only",
                             name, what, v);
    return OMMA_OK;
}

/* Stops and frees; with stats, the final counters (what is left in the
 * backlog and unacknowledged counted as dropped). */
static void destroy(sink *s, sink_stats *stats)
{
    if (s->thread_started) {
        pthread_mutex_lock(&s->lock);
        s->stop = 1;
        pthread_cond_broadcast(&s->cond);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->thread, NULL);
    }
    if (s->impl)
        s->backend->close(s->impl);
    sink_msg *m;
    while ((m = pop(s)) != NULL) {
        sink_msg_free(m);
        atomic_fetch_add(&s->dropped, 1);
    }
    if (stats) {
        sink_get_stats(s, stats);
        stats->dropped += stats->inflight;
        stats->inflight = 0;
    }
    free(s->ring);
    free(s->template);
    pool_free(s);
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->pool_lock);
    free(s);
}

omma_status sink_open(const char *url, const sink_options *options, sink **out)
{
    if (out)
        *out = NULL;
    if (!url || !out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink_open: NULL argument");
    sink_options o = options ? *options : (sink_options){0};
    sink *s = calloc(1, sizeof *s);
    if (!s)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "sink %s: out of memory", url);
    shown_name(url, s->name, sizeof s->name);
    pthread_mutex_init(&s->lock, NULL);
    pthread_mutex_init(&s->pool_lock, NULL);
    pthread_cond_init(&s->cond, NULL);
    sink_url u;
    omma_status st = sink_url_parse(url, s->name, &u);
    if (st != OMMA_OK) {
        destroy(s, NULL);
        return st;
    }
    s->kind = u.kind;
    s->backend = backend_of(u.kind);
    snprintf(s->site, sizeof s->site, "%s", o.site ? o.site : "default");
    if (o.node) {
        snprintf(s->node, sizeof s->node, "%.63s", o.node);
    } else if (gethostname(s->node, sizeof s->node) != 0 || !s->node[0]) {
        snprintf(s->node, sizeof s->node, "node");
    }
    s->node[sizeof s->node - 1] = 0;
    for (char *c = s->node; *c; c++) /* host names may hold dots */
        if (*c == '.')
            *c = '_';
    snprintf(s->run, sizeof s->run, "%llx",
             (unsigned long long)core_now_ns() ^ ((unsigned long long)getpid() << 40));
    s->id_prefix_len =
        (size_t)snprintf(s->id_prefix, sizeof s->id_prefix, "%s-%s-", s->node, s->run);
    long backlog = 0, window = 0;
    if ((o.site && (st = check_name("site", o.site, s->name)) != OMMA_OK) ||
        (st = check_name("node", s->node, s->name)) != OMMA_OK ||
        (st = sink_url_int(&u, s->name, "backlog", 1, 100000000,
                           o.backlog > 0 ? o.backlog : DEFAULT_BACKLOG, &backlog)) != OMMA_OK ||
        (st = sink_url_int(&u, s->name, "window", 1, 1000000,
                           o.window > 0 ? o.window : DEFAULT_WINDOW, &window)) != OMMA_OK ||
        (st = make_template(s, &u)) != OMMA_OK)
        goto fail;
    s->cap = (int)backlog;
    s->window = (int)window;
    s->ring = calloc((size_t)s->cap, sizeof *s->ring);
    if (!s->ring) {
        st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "sink %s: out of memory for a backlog of %d",
                       s->name, s->cap);
        goto fail;
    }
    s->fence = o.fence;
    s->fence_ctx = o.fence_ctx;
    if (o.connect_timeout_ms <= 0)
        o.connect_timeout_ms = 5000;
    st = s->backend->open(s, &u, &o, &s->impl);
    if (st != OMMA_OK)
        goto fail;
    for (int i = 0; i < u.n_params; i++)
        if (!u.params[i].used) {
            st = OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: unknown option '%s'", s->name,
                           u.params[i].key);
            goto fail;
        }
    if (pthread_create(&s->thread, NULL, sender, s) != 0) {
        st = OMMA_FAIL(OMMA_ERR_INTERNAL, "sink %s: cannot start its sender thread", s->name);
        goto fail;
    }
    s->thread_started = 1;
    sink_url_free(&u);
    *out = s;
    return OMMA_OK;
fail:
    sink_url_free(&u);
    destroy(s, NULL);
    return st;
}

omma_status sink_publish(sink *s, const sink_message *m)
{
    if (!s || !m || (!m->data && m->len))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink_publish: NULL argument");
    char camera[128], subject[SINK_SUBJECT_MAX + 1], id[256];
    camera_token(m, camera, sizeof camera);
    if (sink_expand(s->template, s->site, s->node, camera, subject, sizeof subject) < 0) {
        atomic_fetch_add(&s->dropped, 1);
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "sink %s: the subject for camera '%s' is longer "
                         "than %d bytes",
                         s->name, camera, SINK_SUBJECT_MAX);
    }
    /* node-run-camera-seq: 63 + 1 + 16 + 1 + 127 + 1 + 20 bytes at most. */
    size_t cn = strlen(camera), in = s->id_prefix_len;
    memcpy(id, s->id_prefix, in);
    memcpy(id + in, camera, cn);
    in += cn;
    id[in++] = '-';
    in += put_decimal(id + in, m->seq);
    id[in] = 0;
    sink_msg *msg = msg_new(s, subject, camera, id, m->data, m->len);
    if (!msg) {
        atomic_fetch_add(&s->dropped, 1);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "sink %s: out of memory", s->name);
    }
    msg->lease = m->lease;
    pthread_mutex_lock(&s->lock);
    if (s->closing || s->stop) {
        pthread_mutex_unlock(&s->lock);
        sink_msg_free(msg);
        return OMMA_FAIL(OMMA_ERR_CLOSED, "sink %s: closing", s->name);
    }
    push(s, msg, 0);
    atomic_fetch_add(&s->published, 1);
    if (s->count == 1)
        pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
    return OMMA_OK;
}

omma_status sink_flush(sink *s, int timeout_ms)
{
    uint64_t deadline = core_now_ns() + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0) * 1000000u;
    for (;;) {
        pthread_mutex_lock(&s->lock);
        int empty = s->count == 0 && s->held == 0 && inflight(s) == 0;
        pthread_mutex_unlock(&s->lock);
        if (empty)
            return OMMA_OK;
        if (core_now_ns() >= deadline)
            return OMMA_FAIL(OMMA_ERR_TIMEOUT,
                             "sink %s: %llu messages not acknowledged after %d ms", s->name,
                             (unsigned long long)(s->count + inflight(s)), timeout_ms);
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
}

void sink_close(sink *s, int drain_ms, sink_stats *final)
{
    if (!s)
        return;
    if (drain_ms > 0)
        (void)sink_flush(s, drain_ms);
    pthread_mutex_lock(&s->lock);
    s->closing = 1;
    pthread_mutex_unlock(&s->lock);
    destroy(s, final);
}

void sink_get_stats(sink *s, sink_stats *out)
{
    memset(out, 0, sizeof *out);
    out->published = atomic_load(&s->published);
    out->sent = atomic_load(&s->sent);
    out->acked = atomic_load(&s->acked);
    out->failed = atomic_load(&s->failed);
    out->dropped = atomic_load(&s->dropped);
    out->fenced = atomic_load(&s->fenced);
    out->inflight = inflight(s);
    out->connected = atomic_load(&s->connected);
    pthread_mutex_lock(&s->lock);
    out->backlog = (uint64_t)s->count;
    memcpy(out->last_error, s->last_error, sizeof out->last_error);
    pthread_mutex_unlock(&s->lock);
}

int sink_probe_subject(const sink *s, char *out, size_t cap)
{
    return sink_expand(s->template, s->site, s->node, "cam0", out, cap) < 0 ? -1 : 0;
}

int sink_window(const sink *s)
{
    return s->window;
}

const char *sink_name(const sink *s)
{
    return s->name;
}

sink_kind sink_get_kind(const sink *s)
{
    return s->kind;
}
