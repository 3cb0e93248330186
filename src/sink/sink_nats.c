#define _POSIX_C_SOURCE 200809L
/* The NATS JetStream sink (libnats): asynchronous publishes, each with a
 * Nats-Msg-Id, acknowledged by JetStream through the ack handler; refused
 * ones go back to the backlog after a pause; those not acknowledged within
 * ack_timeout_ms (a server gone with the reply) are sent again (JetStream
 * drops the duplicates by their id). After a refusal only one publish is
 * in flight until one is acknowledged. libnats reconnects (backoff from
 * 100 ms to 2 s) and holds what is published meanwhile in its reconnect
 * buffer. */
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

typedef struct nats_sink {
    sink *s;
    const char *name;
    natsOptions *opts;
    natsConnection *nc;
    jsCtx *js; /* NULL with jetstream=0: core NATS publishes, no acks */
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
    sink_set_connected(n->s, 0);
    if (!atomic_load(&n->closing))
        sink_set_error(n->s, "disconnected; reconnecting");
}

static void on_reconnected(natsConnection *nc, void *closure)
{
    (void)nc;
    nats_sink *n = closure;
    sink_set_connected(n->s, 1);
}

static void on_closed(natsConnection *nc, void *closure)
{
    (void)nc;
    nats_sink *n = closure;
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

static void on_ack(jsCtx *js, natsMsg *msg, jsPubAck *pa, jsPubAckErr *pae, void *closure)
{
    (void)js;
    nats_sink *n = closure;
    atomic_fetch_add(&n->answered, 1);
    if (pa) {
        sink_acked(n->s, 1);
        atomic_store(&n->pause_ns, 0);
    } else {
        char err[SINK_ERROR_MAX];
        snprintf(err, sizeof err, "publish to %s refused: %s", natsMsg_GetSubject(msg),
                 pae && pae->ErrText ? pae->ErrText
                                     : natsStatus_GetText(pae ? pae->Err : NATS_ERR));
        const char *id = NULL;
        natsMsgHeader_Get(msg, "Nats-Msg-Id", &id);
        sink_failed(n->s, err, natsMsg_GetSubject(msg), NULL, id, natsMsg_GetData(msg),
                    (size_t)natsMsg_GetDataLength(msg), 1);
        uint64_t pause = atomic_load(&n->pause_ns);
        pause = pause ? (pause < 1000000000u ? pause * 2 : 2000000000u) : 100000000u;
        atomic_store(&n->pause_ns, pause);
        atomic_store(&n->pause_until_ns, core_now_ns() + pause);
    }
    natsMsg_Destroy(msg);
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

static void close_nats(void *impl)
{
    nats_sink *n = impl;
    if (!n)
        return;
    atomic_store(&n->closing, 1);
    if (n->js && atomic_load(&n->handed) > 0) {
        jsPubOptions po;
        jsPubOptions_Init(&po);
        po.MaxWait = 100;
        js_PublishAsyncComplete(n->js, &po);
        /* What is still unacknowledged is the core's to count. */
        natsMsgList pending = {0};
        if (js_PublishAsyncGetPendingList(&pending, n->js) == NATS_OK)
            natsMsgList_Destroy(&pending);
    }
    /* libnats calls back from its own threads, even after Close returns:
     * drain (the acks' subscription delivers what it holds), close, and
     * wait for the closed callback, the last, before n goes. */
    if (n->nc) {
        if (natsConnection_DrainTimeout(n->nc, 1000) != NATS_OK)
            natsConnection_Close(n->nc);
        for (int i = 0; i < 500 && !atomic_load(&n->closed); i++) {
            struct timespec ts = {0, 10000000};
            nanosleep(&ts, NULL);
        }
    }
    if (n->js)
        jsCtx_Destroy(n->js);
    if (n->nc)
        natsConnection_Destroy(n->nc);
    natsOptions_Destroy(n->opts);
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

static omma_status open_nats(sink *s, sink_url *u, const sink_options *o, void **impl)
{
    const char *name = sink_name(s);
    nats_sink *n = calloc(1, sizeof *n);
    if (!n)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "sink %s: out of memory", name);
    n->s = s;
    n->name = name;
    n->progress_ns = core_now_ns();
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
    sink_set_connected(s, 1);
    long jetstream = 1, check = 1;
    st = sink_url_int(u, name, "jetstream", 0, 1, 1, &jetstream);
    if (st == OMMA_OK)
        st = sink_url_int(u, name, "check_stream", 0, 1, 1, &check);
    if (st != OMMA_OK)
        goto fail;
    if (jetstream) {
        jsOptions jo;
        jsOptions_Init(&jo);
        jo.PublishAsync.MaxPending = 1000000;
        jo.PublishAsync.AckHandler = on_ack;
        jo.PublishAsync.AckHandlerClosure = n;
        jo.PublishAsync.StallWait = 1;
        ns = natsConnection_JetStream(&n->js, n->nc, &jo);
        if (ns != NATS_OK) {
            st = nats_fail(name, ns, "JetStream context");
            goto fail;
        }
        char subject[SINK_SUBJECT_MAX + 1];
        if (check && sink_probe_subject(s, subject, sizeof subject) == 0)
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

static omma_status send_nats(void *impl, const sink_msg *m)
{
    nats_sink *n = impl;
    uint64_t now = core_now_ns();
    if (now < atomic_load(&n->pause_until_ns) ||
        natsConnection_Status(n->nc) != NATS_CONN_STATUS_CONNECTED)
        return OMMA_ERR_BUSY;
    /* After a refusal, one publish at a time until one is acknowledged: a
     * probe, not the whole backlog refused again. */
    if (atomic_load(&n->pause_ns) && atomic_load(&n->handed) != atomic_load(&n->answered))
        return OMMA_ERR_BUSY;
    if (!n->js) { /* core NATS: written is all we learn */
        natsStatus cs = natsConnection_Publish(n->nc, m->subject, m->data, (int)m->len);
        if (cs != NATS_OK)
            return OMMA_ERR_BUSY; /* disconnected, reconnect buffer full */
        sink_acked(n->s, 1);
        return OMMA_OK;
    }
    natsMsg *msg = NULL;
    natsStatus s = natsMsg_Create(&msg, m->subject, NULL, (const char *)m->data, (int)m->len);
    if (s != NATS_OK)
        return OMMA_ERR_BUSY;
    jsPubOptions po;
    jsPubOptions_Init(&po);
    po.MsgId = m->id;
    s = js_PublishMsgAsync(n->js, &msg, &po);
    natsMsg_Destroy(msg); /* NULL when the library took it */
    if (s != NATS_OK)
        return OMMA_ERR_BUSY; /* stalled, disconnected, reconnect buffer full */
    atomic_fetch_add(&n->handed, 1);
    return OMMA_OK;
}

/* Unanswered publishes with no answer for ack_timeout_ns are sent again. */
static void poll_nats(void *impl, int timeout_ms)
{
    nats_sink *n = impl;
    uint64_t now = core_now_ns(), answered = atomic_load(&n->answered);
    if (answered != n->seen_answered || atomic_load(&n->handed) == answered) {
        n->seen_answered = answered;
        n->progress_ns = now;
    } else if (now - n->progress_ns > (uint64_t)n->ack_timeout_ns &&
               natsConnection_Status(n->nc) == NATS_CONN_STATUS_CONNECTED) {
        natsMsgList pending = {0};
        if (js_PublishAsyncGetPendingList(&pending, n->js) == NATS_OK) {
            int resent = 0;
            for (int i = 0; i < pending.Count; i++)
                if (js_PublishMsgAsync(n->js, &pending.Msgs[i], NULL) == NATS_OK)
                    resent++;
            sink_set_error(n->s, "%d publishes unacknowledged after %lld ms: sent again", resent,
                           (long long)(n->ack_timeout_ns / 1000000));
            for (int i = 0; i < pending.Count; i++)
                if (pending.Msgs[i]) { /* not resent: back to the backlog */
                    natsMsg *msg = pending.Msgs[i];
                    const char *id = NULL;
                    natsMsgHeader_Get(msg, "Nats-Msg-Id", &id);
                    atomic_fetch_add(&n->answered, 1);
                    sink_failed(n->s, NULL, natsMsg_GetSubject(msg), NULL, id, natsMsg_GetData(msg),
                                (size_t)natsMsg_GetDataLength(msg), 1);
                }
            natsMsgList_Destroy(&pending);
        }
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

static omma_status send_nats(void *impl, const sink_msg *m)
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
