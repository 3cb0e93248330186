#define _POSIX_C_SOURCE 200809L
/* The NATS JetStream sink (libnats): asynchronous publishes acknowledged
 * by JetStream; refused ones go back to the backlog after a pause; those
 * not acknowledged within ack_timeout_ms (a server gone with the reply)
 * are sent again: at least once. A resent message may then be stored
 * twice, which consumers see by its camera and sequence number; with
 * dedup=1 each publish carries a Nats-Msg-Id and JetStream drops such
 * duplicates itself (within its duplicate window), for ~3.5 us more CPU
 * per message (libnats builds a header table for each). After a refusal
 * only one publish is in flight until one is acknowledged. libnats
 * reconnects (backoff from 100 ms to 2 s) and holds what is published
 * meanwhile in its reconnect buffer.
 *
 * The publishes are JetStream's protocol on core NATS, not libnats's
 * js_PublishMsgAsync (a reply token, a hash entry and a JSON parse per
 * message: 8-14 us of CPU each): every publish's reply subject is this
 * connection's inbox and its number (INBOX.N), one subscription takes the
 * acknowledgements of all, and the message (the backlog's own, no copy)
 * waits for its own in a table indexed by N (power of two slots, at least
 * twice the sink's window): an ack is a lookup and a test of its first
 * bytes ({"error" or a status message: refused). The sink's sender thread
 * does all of it, so the table has no lock. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"
#include "sink/sink_private.h"

#if OMMA_HAVE_NATS
#include <nats/nats.h>

/* Acknowledgements taken from the subscription, destroyed together once
 * this many: each natsMsg_Destroy hands the message to libnats's garbage
 * collector thread, woken (under its lock, which it then contends for)
 * whenever it was idle; in bursts it wakes less often than for each few. */
#define ACK_BATCH 1024

#define IO_BUF_SIZE (256 * 1024)

/* A publish waiting for its acknowledgement: the backlog's message itself,
 * kept (sink_backend.send), freed when acknowledged. */
typedef struct nats_pending {
    sink_msg *msg; /* NULL: a free slot */
    uint64_t n; /* its number, in its reply subject */
    uint64_t sent_ns; /* published (or sent again), to the sender's last poll */
} nats_pending;

typedef struct nats_sink {
    sink *s;
    const char *name;
    natsOptions *opts;
    natsConnection *nc;
    int jetstream; /* 0 with jetstream=0: core NATS publishes, no acks */
    int dedup; /* dedup=1: each publish carries its Nats-Msg-Id */
    natsInbox *inbox; /* the acks' subjects: INBOX.N */
    size_t inbox_len;
    natsSubscription *acks;
    /* The table is the sender thread's alone (send, poll; close once it
     * stopped): the acks are taken there too, so no lock. */
    nats_pending *table;
    uint64_t mask; /* slots - 1 */
    uint64_t next_n;
    uint64_t now_ns; /* at the last poll: the sends' time (no clock read per message) */
    natsMsg *done[ACK_BATCH]; /* taken acks, to destroy */
    int n_done;
    atomic_int connected;
    atomic_uint_fast64_t handed, answered; /* publishes, and acks or errors for them */
    atomic_uint_fast64_t pause_until_ns; /* after a refusal: wait before sending more */
    atomic_uint_fast64_t pause_ns; /* that wait: 100 ms doubling to 2 s, reset by an ack */
    atomic_int closing, closed; /* closed: the connection's last callback ran */
    uint64_t progress_ns, seen_answered; /* when `answered` last moved */
    int64_t ack_timeout_ns;
} nats_sink;

static void on_disconnected(natsConnection *nc, void *closure)
{
    (void)nc;
    nats_sink *n = closure;
    atomic_store(&n->connected, 0);
    sink_set_connected(n->s, 0);
    if (!atomic_load(&n->closing))
        sink_set_error(n->s, "disconnected; reconnecting");
}

static void on_reconnected(natsConnection *nc, void *closure)
{
    (void)nc;
    nats_sink *n = closure;
    atomic_store(&n->connected, 1);
    sink_set_connected(n->s, 1);
}

static void on_closed(natsConnection *nc, void *closure)
{
    (void)nc;
    nats_sink *n = closure;
    atomic_store(&n->connected, 0);
    atomic_store(&n->closed, 1);
}

static void on_error(natsConnection *nc, natsSubscription *sub, natsStatus err, void *closure)
{
    (void)nc;
    (void)sub;
    nats_sink *n = closure;
    sink_set_error(n->s, "%s", natsStatus_GetText(err));
}

static int64_t reconnect_delay(natsConnection *nc, int attempts, void *closure)
{
    (void)nc;
    (void)closure;
    int64_t ms = 100;
    for (int i = 1; i < attempts && ms < 2000; i++)
        ms *= 2;
    return ms < 2000 ? ms : 2000;
}

/* A publish refused, or not answered and not sent again: back to the
 * backlog (the core counts it failed). */
static void give_back(nats_sink *n, sink_msg *msg, const char *error)
{
    atomic_fetch_add(&n->answered, 1);
    sink_requeue(n->s, msg, error);
}

/* An acknowledgement: INBOX.N's publish is stored (returns 1: the caller
 * counts it), or refused ({"error":...}, or a status message such as "no
 * responders": no stream). */
static int on_ack(nats_sink *n, natsMsg *ack)
{
    const char *subject = natsMsg_GetSubject(ack);
    const char *data = natsMsg_GetData(ack);
    int len = natsMsg_GetDataLength(ack);
    uint64_t num = 0;
    int ok_subject = subject && strlen(subject) > n->inbox_len + 1;
    for (const char *c = ok_subject ? subject + n->inbox_len + 1 : ""; *c; c++)
        num = num * 10 + (uint64_t)(*c - '0');
    int refused = len <= 0 || !data || natsMsg_IsNoResponders(ack) ||
                  (len >= 8 && !memcmp(data, "{\"error\"", 8));
    nats_pending *p = &n->table[num & n->mask];
    sink_msg *msg = NULL;
    if (ok_subject && p->msg && p->n == num) {
        msg = p->msg;
        p->msg = NULL;
    }
    if (!msg) /* a duplicate answer (sent again), or one of a publish given up */
        return 0;
    if (!refused) {
        if (atomic_load_explicit(&n->pause_ns, memory_order_relaxed))
            atomic_store(&n->pause_ns, 0);
        sink_msg_done(n->s, msg);
        return 1;
    } else {
        char err[SINK_ERROR_MAX];
        const char *desc = data && len > 0 ? strstr(data, "\"description\":\"") : NULL;
        if (desc) {
            desc += 15;
            const char *q = strchr(desc, '"');
            snprintf(err, sizeof err, "publish to %s refused: %.*s", msg->subject,
                     (int)(q ? q - desc : (long)strlen(desc)), desc);
        } else {
            snprintf(err, sizeof err, "publish to %s refused: %s", msg->subject,
                     len > 0 ? data : "no responders (no stream holds the subject)");
        }
        give_back(n, msg, err);
        uint64_t pause = atomic_load(&n->pause_ns);
        pause = pause ? (pause < 1000000000u ? pause * 2 : 2000000000u) : 100000000u;
        atomic_store(&n->pause_ns, pause);
        atomic_store(&n->pause_until_ns, core_now_ns() + pause);
    }
    return 0;
}

static omma_status nats_fail(const char *name, natsStatus s, const char *what)
{
    natsStatus last = NATS_OK;
    const char *detail = nats_GetLastError(&last);
    return OMMA_FAIL(s == NATS_NO_SERVER || s == NATS_TIMEOUT || s == NATS_IO_ERROR ? OMMA_ERR_IO
                     : s == NATS_NO_MEMORY ? OMMA_ERR_OUT_OF_MEMORY
                                           : OMMA_ERR_IO,
                     "sink %s: %s: %s%s%s", name, what, natsStatus_GetText(s),
                     detail && *detail ? ": " : "", detail ? detail : "");
}

/* The acknowledgements come to a synchronous subscription, taken here by
 * the sender thread in bulk (between sends, when idle): no thread of
 * libnats's woken per message to hand each one over. As many as are
 * pending (NextMsg on an empty subscription formats an error), destroyed
 * in batches. */
static void destroy_acks(nats_sink *n)
{
    for (int i = 0; i < n->n_done; i++)
        natsMsg_Destroy(n->done[i]);
    n->n_done = 0;
}

static void take_acks(nats_sink *n)
{
    int pending = 0;
    if (!n->acks || natsSubscription_GetPending(n->acks, &pending, NULL) != NATS_OK)
        return;
    natsMsg *ack = NULL;
    uint64_t acked = 0;
    while (pending-- > 0 && natsSubscription_NextMsg(&ack, n->acks, 0) == NATS_OK) {
        acked += (uint64_t)on_ack(n, ack);
        n->done[n->n_done++] = ack;
        if (n->n_done == ACK_BATCH)
            destroy_acks(n);
    }
    if (acked) { /* counted once per batch */
        atomic_fetch_add(&n->answered, acked);
        sink_acked(n->s, acked);
    }
}

static uint64_t unanswered(nats_sink *n)
{
    uint64_t handed = atomic_load(&n->handed), answered = atomic_load(&n->answered);
    return handed > answered ? handed - answered : 0;
}

static void close_nats(void *impl)
{
    nats_sink *n = impl;
    if (!n)
        return;
    atomic_store(&n->closing, 1);
    /* The last acknowledgements, 100 ms at most; what is still
     * unacknowledged is the core's to count. */
    for (int i = 0; i < 50 && n->table && unanswered(n) > 0 && atomic_load(&n->connected); i++) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
        take_acks(n);
    }
    /* libnats calls back from its own threads, even after Close returns:
     * drain (what is buffered is written), close, and wait for the closed
     * callback, the last, before n goes. The acks' subscription goes
     * first: a synchronous one drains only as NextMsg is called, so the
     * drain waited its whole second and reported "Timeout" as the last
     * error. */
    if (n->acks)
        natsSubscription_Unsubscribe(n->acks);
    if (n->nc) {
        if (natsConnection_DrainTimeout(n->nc, 1000) != NATS_OK)
            natsConnection_Close(n->nc);
        for (int i = 0; i < 500 && !atomic_load(&n->closed); i++) {
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
        }
    }
    destroy_acks(n);
    natsSubscription_Destroy(n->acks);
    if (n->nc)
        natsConnection_Destroy(n->nc);
    natsOptions_Destroy(n->opts);
    if (n->table) {
        for (uint64_t i = 0; i <= n->mask; i++)
            sink_msg_free(n->table[i].msg);
        free(n->table);
    }
    natsInbox_Destroy(n->inbox);
    free(n);
}

/* Asks JetStream which streams hold subject: none is an error here, not a
 * stream of refused publishes later. */
static omma_status check_stream(nats_sink *n, const char *subject, int timeout_ms)
{
    char req[SINK_SUBJECT_MAX + 32];
    snprintf(req, sizeof req, "{\"subject\":\"%s\"}", subject);
    natsMsg *reply = NULL;
    natsStatus s = natsConnection_Request(&reply, n->nc, "$JS.API.STREAM.NAMES", req,
                                          (int)strlen(req), timeout_ms);
    if (s == NATS_NO_RESPONDERS)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "sink %s: the server has no JetStream (start nats-server with -js)",
                         n->name);
    if (s != NATS_OK)
        return nats_fail(n->name, s, "asking JetStream for its streams");
    const char *data = natsMsg_GetData(reply);
    int none = !data || strstr(data, "\"streams\":null") || strstr(data, "\"streams\":[]") ||
               strstr(data, "\"error\"");
    natsMsg_Destroy(reply);
    if (none)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "sink %s: no JetStream stream holds the subject %s (create one, e.g. "
                         "with subjects omma.>)",
                         n->name, subject);
    return OMMA_OK;
}

/* The acknowledgements' inbox, its subscription and the table. */
static omma_status open_acks(nats_sink *n, int window)
{
    uint64_t slots = 64;
    while (slots < 2 * (uint64_t)window)
        slots *= 2;
    n->table = calloc(slots, sizeof *n->table);
    if (!n->table)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "sink %s: out of memory", n->name);
    n->mask = slots - 1;
    natsStatus ns = natsInbox_Create(&n->inbox);
    char subject[256];
    if (ns == NATS_OK) {
        n->inbox_len = strlen(n->inbox);
        if (n->inbox_len > 200) /* INBOX.N fits send_nats's buffer */
            ns = NATS_ERR;
    }
    if (ns == NATS_OK) {
        snprintf(subject, sizeof subject, "%s.*", n->inbox);
        ns = natsConnection_SubscribeSync(&n->acks, n->nc, subject);
    }
    if (ns == NATS_OK) /* as many acks as publishes may be in flight */
        ns = natsSubscription_SetPendingLimits(n->acks, -1, -1);
    if (ns != NATS_OK)
        return nats_fail(n->name, ns, "the acknowledgements' subscription");
    return OMMA_OK;
}

static omma_status open_nats(sink *s, sink_url *u, const sink_options *o, void **impl)
{
    const char *name = sink_name(s);
    nats_sink *n = calloc(1, sizeof *n);
    if (!n)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "sink %s: out of memory", name);
    n->s = s;
    n->name = name;
    n->progress_ns = n->now_ns = core_now_ns();
    long ack_ms = 0;
    omma_status st = sink_url_int(u, name, "ack_timeout_ms", 100, 600000, 5000, &ack_ms);
    n->ack_timeout_ns = ack_ms * 1000000;
    const char *ca = sink_url_param(u, "ca"), *cert = sink_url_param(u, "cert"),
               *key = sink_url_param(u, "key");
    if (st != OMMA_OK)
        goto fail;
    if ((cert != NULL) != (key != NULL)) {
        st = OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: cert and key go together", name);
        goto fail;
    }
    char *servers[SINK_MAX_HOSTS] = {0};
    natsStatus ns = natsOptions_Create(&n->opts);
    for (int i = 0; i < u->n_hosts && ns == NATS_OK; i++) {
        size_t len = strlen(u->hosts[i]) + 16;
        servers[i] = malloc(len);
        if (!servers[i])
            ns = NATS_NO_MEMORY;
        else
            snprintf(servers[i], len, "%s://%s", u->tls ? "tls" : "nats", u->hosts[i]);
    }
    if (ns == NATS_OK)
        ns = natsOptions_SetServers(n->opts, (const char **)servers, u->n_hosts);
    for (int i = 0; i < u->n_hosts; i++)
        free(servers[i]);
    if (ns == NATS_OK)
        ns = natsOptions_SetTimeout(n->opts, o->connect_timeout_ms);
    if (ns == NATS_OK)
        ns = natsOptions_SetMaxReconnect(n->opts, -1);
    if (ns == NATS_OK)
        ns = natsOptions_SetCustomReconnectDelay(n->opts, reconnect_delay, n);
    if (ns == NATS_OK)
        ns = natsOptions_SetDisconnectedCB(n->opts, on_disconnected, n);
    if (ns == NATS_OK)
        ns = natsOptions_SetReconnectedCB(n->opts, on_reconnected, n);
    if (ns == NATS_OK)
        ns = natsOptions_SetClosedCB(n->opts, on_closed, n);
    if (ns == NATS_OK)
        ns = natsOptions_SetErrorHandler(n->opts, on_error, n);
    if (ns == NATS_OK)
        ns = natsOptions_SetName(n->opts, "omma");
    /* libnats writes its buffer itself when full (32 KB by default: every
     * ~70 messages of 400 bytes, besides its flusher's every 1 ms), and
     * reads as much: 256 KB, fewer system calls (docs/PERFORMANCE.md). */
    if (ns == NATS_OK)
        ns = natsOptions_SetIOBufSize(n->opts, IO_BUF_SIZE);
    if (ns == NATS_OK && u->user)
        ns = natsOptions_SetUserInfo(n->opts, u->user, u->password ? u->password : "");
    if (ns == NATS_OK && u->tls)
        ns = natsOptions_SetSecure(n->opts, true);
    if (ns == NATS_OK && ca)
        ns = natsOptions_LoadCATrustedCertificates(n->opts, ca);
    if (ns == NATS_OK && cert)
        ns = natsOptions_LoadCertificatesChain(n->opts, cert, key);
    if (ns != NATS_OK) {
        st = nats_fail(name, ns, "options");
        goto fail;
    }
    ns = natsConnection_Connect(&n->nc, n->opts);
    if (ns != NATS_OK) {
        st = nats_fail(name, ns, "cannot connect");
        goto fail;
    }
    atomic_store(&n->connected, 1);
    sink_set_connected(s, 1);
    long jetstream = 1, check = 1, dedup = 0;
    st = sink_url_int(u, name, "jetstream", 0, 1, 1, &jetstream);
    if (st == OMMA_OK)
        st = sink_url_int(u, name, "check_stream", 0, 1, 1, &check);
    if (st == OMMA_OK)
        st = sink_url_int(u, name, "dedup", 0, 1, 0, &dedup);
    if (st != OMMA_OK)
        goto fail;
    n->jetstream = (int)jetstream;
    n->dedup = (int)dedup;
    if (jetstream) {
        st = open_acks(n, sink_window(s));
        char subject[SINK_SUBJECT_MAX + 1];
        if (st == OMMA_OK && check && sink_probe_subject(s, subject, sizeof subject) == 0)
            st = check_stream(n, subject, o->connect_timeout_ms);
        if (st != OMMA_OK)
            goto fail;
    }
    *impl = n;
    return OMMA_OK;
fail:
    close_nats(n);
    return st;
}

/* Publishes msg with the reply subject INBOX.num: a plain PUB, or with
 * dedup=1 an HPUB carrying its Nats-Msg-Id (libnats builds a header table
 * per message: ~3.5 us of CPU more, docs/PERFORMANCE.md). */
static natsStatus publish(nats_sink *n, const sink_msg *msg, uint64_t num)
{
    /* INBOX.N, without printf (a few hundred ns a message). */
    char reply[256], digits[24];
    int nd = 0;
    for (uint64_t v = num; nd == 0 || v > 0; v /= 10)
        digits[nd++] = (char)('0' + v % 10);
    memcpy(reply, n->inbox, n->inbox_len);
    reply[n->inbox_len] = '.';
    for (int i = 0; i < nd; i++)
        reply[n->inbox_len + 1 + (size_t)i] = digits[nd - 1 - i];
    reply[n->inbox_len + 1 + (size_t)nd] = 0;
    if (!n->dedup || !msg->id)
        return natsConnection_PublishRequest(n->nc, msg->subject, reply, msg->data, (int)msg->len);
    natsMsg *m = NULL;
    natsStatus s = natsMsg_Create(&m, msg->subject, reply, (const char *)msg->data, (int)msg->len);
    if (s == NATS_OK)
        s = natsMsgHeader_Set(m, "Nats-Msg-Id", msg->id);
    if (s == NATS_OK)
        s = natsConnection_PublishMsg(n->nc, m);
    natsMsg_Destroy(m);
    return s;
}

static omma_status send_nats(void *impl, sink_msg **mp)
{
    sink_msg *m = *mp;
    nats_sink *n = impl;
    if (!atomic_load_explicit(&n->connected, memory_order_relaxed))
        return OMMA_ERR_BUSY;
    if (atomic_load_explicit(&n->pause_until_ns, memory_order_relaxed) &&
        core_now_ns() < atomic_load(&n->pause_until_ns))
        return OMMA_ERR_BUSY;
    /* After a refusal, one publish at a time until one is acknowledged: a
     * probe, not the whole backlog refused again. */
    if (atomic_load_explicit(&n->pause_ns, memory_order_relaxed) && unanswered(n) > 0)
        return OMMA_ERR_BUSY;
    if (!n->jetstream) { /* core NATS: written is all we learn */
        natsStatus cs = natsConnection_Publish(n->nc, m->subject, m->data, (int)m->len);
        if (cs != NATS_OK)
            return OMMA_ERR_BUSY; /* disconnected, reconnect buffer full */
        sink_acked(n->s, 1);
        return OMMA_OK;
    }
    uint64_t num = n->next_n;
    nats_pending *p = &n->table[num & n->mask];
    if (p->msg) /* an old publish still unanswered in its slot: wait */
        return OMMA_ERR_BUSY;
    if (publish(n, m, num) != NATS_OK) /* disconnected, reconnect buffer full */
        return OMMA_ERR_BUSY;
    /* Its ack is taken by this thread too (poll): in the table after the
     * send is soon enough. */
    p->msg = m;
    p->n = num;
    p->sent_ns = n->now_ns;
    *mp = NULL;
    n->next_n = num + 1;
    atomic_fetch_add(&n->handed, 1);
    return OMMA_OK;
}

/* Publishes with no answer for ack_timeout_ns are sent again (the same
 * Nats-Msg-Id: JetStream keeps one); those that cannot be (disconnected)
 * go back to the backlog. */
static void poll_nats(void *impl, int timeout_ms)
{
    nats_sink *n = impl;
    take_acks(n);
    uint64_t now = n->now_ns = core_now_ns(), answered = atomic_load(&n->answered);
    if (answered != n->seen_answered || atomic_load(&n->handed) == answered) {
        n->seen_answered = answered;
        n->progress_ns = now;
    } else if (n->jetstream && now - n->progress_ns > (uint64_t)n->ack_timeout_ns &&
               atomic_load(&n->connected)) {
        int resent = 0, back = 0;
        for (uint64_t i = 0; i <= n->mask; i++) {
            nats_pending *p = &n->table[i];
            sink_msg *msg = p->msg;
            if (!msg || now - p->sent_ns <= (uint64_t)n->ack_timeout_ns)
                continue;
            p->sent_ns = now;
            if (publish(n, msg, p->n) == NATS_OK) {
                resent++;
            } else {
                p->msg = NULL;
                give_back(n, msg, NULL);
                back++;
            }
        }
        sink_set_error(n->s, "%d publishes unacknowledged after %lld ms: sent again%s", resent,
                       (long long)(n->ack_timeout_ns / 1000000),
                       back ? "; others back to the backlog" : "");
        n->progress_ns = now;
    }
    if (timeout_ms > 0) {
        struct timespec ts = {0, (long)timeout_ms * 1000000};
        nanosleep(&ts, NULL);
    }
}

const sink_backend sink_nats_backend = {open_nats, send_nats, poll_nats, close_nats};

#else /* !OMMA_HAVE_NATS */

static omma_status open_nats(sink *s, sink_url *u, const sink_options *o, void **impl)
{
    (void)u;
    (void)o;
    *impl = NULL;
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                     "sink %s: omma was built without libnats (install libnats-dev and rebuild)",
                     sink_name(s));
}

static omma_status send_nats(void *impl, sink_msg **m)
{
    (void)impl;
    (void)m;
    return OMMA_ERR_UNSUPPORTED;
}

static void poll_nats(void *impl, int timeout_ms)
{
    (void)impl;
    (void)timeout_ms;
}

static void close_nats(void *impl)
{
    (void)impl;
}

const sink_backend sink_nats_backend = {open_nats, send_nats, poll_nats, close_nats};

#endif
