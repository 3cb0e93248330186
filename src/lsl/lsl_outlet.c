#define _GNU_SOURCE /* accept4 */
/* LSL outlets: the sample ring that pushes fill, and the consumers that
 * the server thread feeds from it (lsl_outlet.h, lsl_feed.h). */
#include "lsl/lsl_server_private.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/error.h"
#include "lsl/lsl_clock.h"
#include "lsl/lsl_query.h"
#include "omma/log.h"

static char *render(const lsl_info *info, int full, size_t *len)
{
    lsl_buf b = {0};
    lsl_info_write(info, full, &b);
    if (b.failed) {
        lsl_buf_free(&b);
        return NULL;
    }
    *len = b.len;
    return b.data;
}

omma_status lsl_outlet_create(lsl_server *s, const lsl_info *spec, int buffer_samples,
                              lsl_outlet **out)
{
    *out = NULL;
    if (!s || !spec || !spec->name[0])
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "lsl outlet: a server and a named stream needed");
    size_t vsize = lsl_format_size(spec->format);
    if (vsize == 0)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "lsl outlet %s: channel format %s is not served",
                         spec->name, lsl_format_name(spec->format));
    if (spec->channel_count < 1 || spec->channel_count > LSL_MAX_CHANNELS)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "lsl outlet %s: %d channels (1..%d)", spec->name,
                         spec->channel_count, LSL_MAX_CHANNELS);
    if (!(spec->nominal_srate >= 0) || spec->nominal_srate > 1e9)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "lsl outlet %s: nominal rate %g", spec->name,
                         spec->nominal_srate);
    if (buffer_samples < 0 || (buffer_samples > 0 && buffer_samples < 16))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "lsl outlet %s: buffer of %d samples (0 or >= 16)",
                         spec->name, buffer_samples);
    lsl_outlet *o = calloc(1, sizeof *o);
    if (!o)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "lsl outlet: out of memory");
    o->server = s;
    o->listen_fd = -1;
    pthread_mutex_init(&o->lock, NULL);
    omma_status st = lsl_info_copy(&o->info, spec);
    if (st != OMMA_OK)
        goto fail;
    lsl_info *in = &o->info;
    if ((st = lsl_info_new_uid(in)) != OMMA_OK)
        goto fail;
    snprintf(in->session_id, sizeof in->session_id, "default");
    snprintf(in->hostname, sizeof in->hostname, "%s", s->hostname);
    in->v4address[0] = '\0';
    in->version = LSL_PROTOCOL_VERSION;
    in->created_at = lsl_clock_now();
    in->v4service_port = s->service_port;
    o->value_bytes = (size_t)in->channel_count * vsize;
    o->slot_bytes = 9 + o->value_bytes;
    uint64_t cap = (uint64_t)buffer_samples;
    if (cap == 0) {
        cap = (uint64_t)(in->nominal_srate * 10);
        if (cap < 1024)
            cap = 1024;
    }
    o->capacity = cap;
    o->ring = malloc(cap * o->slot_bytes);
    if (!o->ring) {
        st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "lsl outlet %s: ring of %llu samples", in->name,
                       (unsigned long long)cap);
        goto fail;
    }
    /* The data port: an ephemeral TCP port on the server's address (its
     * number travels in the stream info). */
    o->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr = s->bind_addr};
    socklen_t sl = sizeof sa;
    if (o->listen_fd < 0 || bind(o->listen_fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(o->listen_fd, 16) != 0 ||
        getsockname(o->listen_fd, (struct sockaddr *)&sa, &sl) != 0) {
        st = OMMA_FAIL(OMMA_ERR_IO, "lsl outlet %s: data port: %s", in->name, strerror(errno));
        goto fail;
    }
    in->v4data_port = ntohs(sa.sin_port);
    o->shortinfo = render(in, 0, &o->shortinfo_len);
    o->fullinfo = render(in, 1, &o->fullinfo_len);
    if (!o->shortinfo || !o->fullinfo) {
        st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "lsl outlet: out of memory");
        goto fail;
    }
    pthread_mutex_lock(&s->lock);
    if (s->stop) {
        pthread_mutex_unlock(&s->lock);
        st = OMMA_FAIL(OMMA_ERR_CLOSED, "lsl outlet %s: the server has stopped", in->name);
        goto fail;
    }
    o->next = s->outlets;
    s->outlets = o;
    pthread_mutex_unlock(&s->lock);
    lsl_server_wake(s);
    *out = o;
    return OMMA_OK;
fail:
    if (o->listen_fd >= 0)
        close(o->listen_fd);
    free(o->ring);
    free(o->shortinfo);
    free(o->fullinfo);
    lsl_info_clear(&o->info);
    pthread_mutex_destroy(&o->lock);
    free(o);
    return st;
}

static void consumer_free(lsl_consumer *c)
{
    if (c->fd >= 0)
        close(c->fd);
    free(c->out);
    free(c);
}

void lsl_outlet_close_sockets(lsl_outlet *o)
{
    while (o->consumers) {
        lsl_consumer *c = o->consumers;
        o->consumers = c->next;
        consumer_free(c);
    }
    o->n_consumers = 0;
    o->n_connections = 0;
    if (o->listen_fd >= 0)
        close(o->listen_fd);
    o->listen_fd = -1;
}

void lsl_outlet_destroy(lsl_outlet *o)
{
    if (!o)
        return;
    lsl_server *s = o->server;
    pthread_mutex_lock(&s->lock);
    o->dead = 1;
    if (s->stop) {
        /* No thread to reap it: unlink it here. */
        for (lsl_outlet **p = &s->outlets; *p; p = &(*p)->next)
            if (*p == o) {
                *p = o->next;
                break;
            }
        lsl_outlet_close_sockets(o);
        o->reaped = 1;
    }
    lsl_server_wake(s);
    while (!o->reaped)
        pthread_cond_wait(&s->reaped, &s->lock);
    pthread_mutex_unlock(&s->lock);
    free(o->ring);
    free(o->shortinfo);
    free(o->fullinfo);
    lsl_info_clear(&o->info);
    pthread_mutex_destroy(&o->lock);
    free(o);
}

const lsl_info *lsl_outlet_info(const lsl_outlet *o)
{
    return &o->info;
}

omma_status lsl_outlet_push(lsl_outlet *o, const void *values, double timestamp)
{
    if (!o || !values)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "lsl outlet push: NULL argument");
    pthread_mutex_lock(&o->lock);
    uint8_t *slot = o->ring + (o->head % o->capacity) * o->slot_bytes;
    lsl_sample_encode(slot, timestamp, values, o->value_bytes);
    o->head++;
    pthread_mutex_unlock(&o->lock);
    lsl_server_wake(o->server);
    return OMMA_OK;
}

void lsl_outlet_get_stats(lsl_outlet *o, lsl_outlet_stats *st)
{
    memset(st, 0, sizeof *st);
    pthread_mutex_lock(&o->lock);
    st->pushed = o->head;
    pthread_mutex_unlock(&o->lock);
    pthread_mutex_lock(&o->server->lock);
    st->sent = o->sent;
    st->lost = o->lost;
    st->consumers = o->n_consumers;
    pthread_mutex_unlock(&o->server->lock);
}

/* --- consumers (server thread, under the server's lock) --- */

int lsl_consumer_wants_write(const lsl_consumer *c)
{
    return c->out_len > c->out_off;
}

static int out_reserve(lsl_consumer *c, size_t n)
{
    if (c->out_off > 0 && c->out_off == c->out_len)
        c->out_off = c->out_len = 0;
    if (c->out_len + n <= c->out_cap)
        return 1;
    if (c->out_off > 0) {
        memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
        c->out_len -= c->out_off;
        c->out_off = 0;
        if (c->out_len + n <= c->out_cap)
            return 1;
    }
    size_t cap = c->out_cap ? c->out_cap : 4096;
    while (cap < c->out_len + n)
        cap *= 2;
    uint8_t *p = realloc(c->out, cap);
    if (!p)
        return 0;
    c->out = p;
    c->out_cap = cap;
    return 1;
}

static void out_append(lsl_consumer *c, const void *p, size_t n)
{
    if (!out_reserve(c, n)) {
        c->state = CONSUMER_CLOSING;
        c->out_off = c->out_len; /* nothing more to send: close */
        return;
    }
    memcpy(c->out + c->out_len, p, n);
    c->out_len += n;
}

void lsl_outlet_accept(lsl_outlet *o)
{
    for (int i = 0; i < 16; i++) {
        int fd = accept4(o->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return;
        if (o->n_connections >= LSL_MAX_CONNECTIONS) {
            omma_log(OMMA_LOG_WARN, "lsl %s: more than %d connections; one refused", o->info.name,
                     LSL_MAX_CONNECTIONS);
            close(fd);
            continue;
        }
        lsl_consumer *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            return;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        c->fd = fd;
        c->readable = 1; /* its request may be there already */
        c->state = CONSUMER_REQUEST;
        c->deadline_ns = core_now_ns() + LSL_REQUEST_TIMEOUT_NS;
        c->next = o->consumers;
        o->consumers = c;
        o->n_connections++;
    }
}

static void reply_text(lsl_consumer *c, const char *text)
{
    out_append(c, text, strlen(text));
    c->state = CONSUMER_CLOSING;
}

/* A whole request is in c->in: answer it. */
static void start_feed(lsl_outlet *o, lsl_consumer *c, const char *req, size_t len)
{
    lsl_feed_request rq;
    if (lsl_feed_request_parse(req, len, &rq) != OMMA_OK) {
        omma_log(OMMA_LOG_DEBUG, "lsl %s: bad feed request: %s", o->info.name, omma_last_error());
        c->state = CONSUMER_CLOSING;
        return;
    }
    if (rq.version / 100 > LSL_PROTOCOL_VERSION / 100 || rq.version < 110) {
        /* 1.00 (portable binary archives) is not served. */
        reply_text(c, "LSL/110 505 Version not supported\r\n");
        return;
    }
    if (rq.uid[0] && strcmp(rq.uid, o->info.uid) != 0) {
        reply_text(c, "LSL/110 404 Not found\r\n");
        return;
    }
    size_t vsize = lsl_format_size(o->info.format);
    if (!rq.has_ieee754 || (rq.value_size >= 0 && (size_t)rq.value_size != vsize) ||
        rq.protocol_version < 110) {
        reply_text(c, "LSL/110 505 Version not supported\r\n");
        return;
    }
    int suppress =
        (o->info.format == LSL_FORMAT_FLOAT32 || o->info.format == LSL_FORMAT_DOUBLE64) &&
        !rq.supports_subnormals;
    char head[256];
    int hn = snprintf(head, sizeof head,
                      "LSL/110 200 OK\r\nUID: %s\r\nByte-Order: 1234\r\n"
                      "Suppress-Subnormals: %d\r\nData-Protocol-Version: 110\r\n\r\n",
                      o->info.uid, suppress);
    out_append(c, head, (size_t)hn);
    uint8_t *tmp = malloc(o->slot_bytes);
    uint8_t *vals = malloc(o->value_bytes);
    if (!tmp || !vals) {
        free(tmp);
        free(vals);
        c->state = CONSUMER_CLOSING;
        return;
    }
    for (int k = 0; k < 2; k++) {
        lsl_test_pattern(o->info.format, o->info.channel_count, k == 0 ? 4 : 2, vals);
        lsl_sample_encode(tmp, LSL_TEST_PATTERN_TIME, vals, o->value_bytes);
        out_append(c, tmp, o->slot_bytes);
    }
    free(tmp);
    free(vals);
    if (rq.max_buffer_length == 0) {
        c->state = CONSUMER_CLOSING; /* as liblsl: the header only */
        return;
    }
    c->backlog = o->capacity;
    if (rq.max_buffer_length > 0 && (uint64_t)rq.max_buffer_length < c->backlog)
        c->backlog = (uint64_t)rq.max_buffer_length;
    pthread_mutex_lock(&o->lock);
    c->cursor = o->head; /* samples pushed from now on */
    pthread_mutex_unlock(&o->lock);
    c->state = CONSUMER_FEED;
    c->counted = 1;
    o->n_consumers++;
}

/* Parses what has come of the request; answers once it is whole. */
static void handle_request(lsl_outlet *o, lsl_consumer *c)
{
    const char *in = c->in;
    const char *nl = memchr(in, '\n', c->in_len);
    if (!nl)
        goto check_full;
    size_t ml = (size_t)(nl - in);
    while (ml && (in[ml - 1] == '\r' || in[ml - 1] == ' '))
        ml--;
    if (ml == 12 && memcmp(in, "LSL:fullinfo", 12) == 0) {
        out_append(c, o->fullinfo, o->fullinfo_len);
        c->state = CONSUMER_CLOSING;
        return;
    }
    if (ml == 13 && memcmp(in, "LSL:shortinfo", 13) == 0) {
        const char *q = nl + 1;
        size_t rest = c->in_len - (size_t)(q - in);
        const char *qe = memchr(q, '\n', rest);
        if (!qe)
            goto check_full;
        size_t ql = (size_t)(qe - q);
        while (ql && (q[ql - 1] == '\r' || q[ql - 1] == ' '))
            ql--;
        int match = 0;
        if (lsl_query_match(q, ql, &o->info, &match) == OMMA_OK && match)
            out_append(c, o->shortinfo, o->shortinfo_len);
        c->state = CONSUMER_CLOSING;
        return;
    }
    if (ml >= 14 && memcmp(in, "LSL:streamfeed", 14) == 0) {
        if (ml == 14) {
            /* 1.00: request line and parameter line; not served. */
            c->state = CONSUMER_CLOSING;
            return;
        }
        /* 1.10: through the blank line. */
        for (size_t i = 0; i + 1 < c->in_len; i++) {
            if (c->in[i] == '\n' &&
                (c->in[i + 1] == '\n' ||
                 (i + 2 < c->in_len && c->in[i + 1] == '\r' && c->in[i + 2] == '\n'))) {
                size_t end = i + (c->in[i + 1] == '\n' ? 2 : 3);
                start_feed(o, c, c->in, end);
                return;
            }
        }
        goto check_full;
    }
    c->state = CONSUMER_CLOSING; /* unknown method: liblsl closes too */
    return;
check_full:
    if (c->in_len >= sizeof c->in)
        c->state = CONSUMER_CLOSING;
}

/* Copies ring samples into c's buffer while it has room. */
static void fill_from_ring(lsl_outlet *o, lsl_consumer *c)
{
    pthread_mutex_lock(&o->lock);
    uint64_t head = o->head;
    if (head - c->cursor > c->backlog) {
        uint64_t skip = head - c->backlog - c->cursor;
        o->lost += skip;
        c->cursor += skip;
    }
    while (c->cursor < head) {
        size_t pending = c->out_len - c->out_off;
        if (pending + o->slot_bytes > LSL_CONSUMER_BUFFER && pending > 0)
            break;
        if (!out_reserve(c, o->slot_bytes)) {
            c->state = CONSUMER_CLOSING;
            break;
        }
        memcpy(c->out + c->out_len, o->ring + (c->cursor % o->capacity) * o->slot_bytes,
               o->slot_bytes);
        c->out_len += o->slot_bytes;
        c->cursor++;
        o->sent++;
    }
    pthread_mutex_unlock(&o->lock);
}

/* 1: keep the consumer; 0: close it. */
static int serve_consumer(lsl_outlet *o, lsl_consumer *c, uint64_t now_ns)
{
    /* Read: the request, or (feeding) anything the peer sends, to see it
     * close. */
    for (int i = 0; i < 4 && c->readable; i++) {
        char sink[4096];
        char *dst = c->state == CONSUMER_REQUEST ? c->in + c->in_len : sink;
        size_t room = c->state == CONSUMER_REQUEST ? sizeof c->in - c->in_len : sizeof sink;
        if (room == 0)
            break;
        ssize_t n = recv(c->fd, dst, room, MSG_DONTWAIT);
        if (n == 0) {
            if (c->state != CONSUMER_CLOSING)
                return 0; /* the peer is gone */
            break;
        }
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
                c->readable = 0; /* until poll says so again */
                break;
            }
            return 0;
        }
        if (c->state == CONSUMER_REQUEST) {
            c->in_len += (size_t)n;
            handle_request(o, c);
        }
    }
    if (c->state == CONSUMER_REQUEST && now_ns > c->deadline_ns)
        return 0;
    if (c->state == CONSUMER_FEED)
        fill_from_ring(o, c);
    while (c->out_len > c->out_off) {
        ssize_t n =
            send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
                break;
            return 0;
        }
        c->out_off += (size_t)n;
        if (c->state == CONSUMER_FEED && c->out_len - c->out_off < LSL_CONSUMER_BUFFER / 2)
            fill_from_ring(o, c);
    }
    if (c->state == CONSUMER_CLOSING && c->out_len == c->out_off)
        return 0;
    return 1;
}

void lsl_outlet_serve(lsl_outlet *o, uint64_t now_ns)
{
    for (lsl_consumer **p = &o->consumers; *p;) {
        lsl_consumer *c = *p;
        if (serve_consumer(o, c, now_ns)) {
            p = &c->next;
            continue;
        }
        if (c->counted)
            o->n_consumers--;
        o->n_connections--;
        *p = c->next;
        consumer_free(c);
    }
}
