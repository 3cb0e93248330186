#define _POSIX_C_SOURCE 200809L
/* The Kafka sink (librdkafka): an idempotent producer (enable.idempotence:
 * no duplicates or reordering from its own retries), each message keyed by
 * its camera so a camera's results stay in one partition, in order; the
 * delivery reports count acknowledgements and failures (a message that
 * timed out, message.timeout.ms, goes back to the backlog). The URL's
 * other options are librdkafka properties, passed through. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "sink/sink_private.h"

#if OMMA_HAVE_RDKAFKA
#include <librdkafka/rdkafka.h>

typedef struct kafka_sink {
    sink *s;
    const char *name;
    rd_kafka_t *rk;
} kafka_sink;

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    kafka_sink *k = opaque;
    if (!m->err) {
        sink_set_connected(k->s, 1);
        sink_acked(k->s, 1);
        return;
    }
    char err[SINK_ERROR_MAX];
    snprintf(err, sizeof err, "delivery to %s failed: %s", rd_kafka_topic_name(m->rkt),
             rd_kafka_err2str(m->err));
    int requeue = m->err != RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE &&
                  m->err != RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED &&
                  m->err != RD_KAFKA_RESP_ERR__PURGE_QUEUE &&
                  m->err != RD_KAFKA_RESP_ERR__PURGE_INFLIGHT;
    char key[SINK_SUBJECT_MAX + 1] = "", id[256] = "";
    if (m->key)
        snprintf(key, sizeof key, "%.*s", (int)m->key_len, (const char *)m->key);
    rd_kafka_headers_t *h = NULL;
    const void *v = NULL;
    size_t vn = 0;
    if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR &&
        rd_kafka_header_get_last(h, "omma-id", &v, &vn) == RD_KAFKA_RESP_ERR_NO_ERROR)
        snprintf(id, sizeof id, "%.*s", (int)vn, (const char *)v);
    sink_failed(k->s, err, rd_kafka_topic_name(m->rkt), key, id, m->payload, m->len, requeue);
}

static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    (void)rk;
    kafka_sink *k = opaque;
    if (err == RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN || err == RD_KAFKA_RESP_ERR__TRANSPORT)
        sink_set_connected(k->s, 0);
    sink_set_error(k->s, "%s: %s", rd_kafka_err2name((rd_kafka_resp_err_t)err), reason);
}

static void close_kafka(void *impl)
{
    kafka_sink *k = impl;
    if (!k)
        return;
    if (k->rk) {
        /* What is not delivered now is the core's to count. */
        rd_kafka_purge(k->rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT |
                                  RD_KAFKA_PURGE_F_NON_BLOCKING);
        rd_kafka_poll(k->rk, 0);
        rd_kafka_destroy(k->rk);
    }
    free(k);
}

static omma_status conf_set(rd_kafka_conf_t *conf, const char *name, const char *key,
                            const char *value)
{
    char err[512];
    if (rd_kafka_conf_set(conf, key, value, err, sizeof err) != RD_KAFKA_CONF_OK)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: option %s=%s: %s", name, key, value, err);
    return OMMA_OK;
}

static omma_status open_kafka(sink *s, sink_url *u, const sink_options *o, void **impl)
{
    (void)o;
    const char *name = sink_name(s);
    kafka_sink *k = calloc(1, sizeof *k);
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    omma_status st = OMMA_OK;
    if (!k || !conf) {
        st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "sink %s: out of memory", name);
        goto fail;
    }
    k->s = s;
    k->name = name;
    char brokers[SINK_MAX_HOSTS * 300] = "";
    for (int i = 0; i < u->n_hosts; i++) {
        size_t n = strlen(brokers);
        snprintf(brokers + n, sizeof brokers - n, "%s%s", i ? "," : "", u->hosts[i]);
    }
    if ((st = conf_set(conf, name, "bootstrap.servers", brokers)) != OMMA_OK ||
        (st = conf_set(conf, name, "enable.idempotence", "true")) != OMMA_OK ||
        (st = conf_set(conf, name, "client.id", "omma")) != OMMA_OK ||
        (st = conf_set(conf, name, "linger.ms", "2")) != OMMA_OK)
        goto fail;
    if (u->user) {
        if ((st = conf_set(conf, name, "sasl.username", u->user)) != OMMA_OK ||
            (st = conf_set(conf, name, "sasl.password", u->password ? u->password : "")) != OMMA_OK)
            goto fail;
    }
    for (int i = 0; i < u->n_params; i++) {
        sink_param *p = &u->params[i];
        if (p->used)
            continue;
        p->used = 1;
        if ((st = conf_set(conf, name, p->key, p->value)) != OMMA_OK)
            goto fail;
    }
    rd_kafka_conf_set_opaque(conf, k);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    rd_kafka_conf_set_error_cb(conf, on_error);
    char err[512];
    k->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!k->rk) {
        st = OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: %s", name, err);
        goto fail;
    }
    conf = NULL; /* the producer's now */
    sink_set_connected(s, 1);
    *impl = k;
    return OMMA_OK;
fail:
    if (conf)
        rd_kafka_conf_destroy(conf);
    close_kafka(k);
    return st;
}

static omma_status send_kafka(void *impl, sink_msg **mp)
{
    const sink_msg *m = *mp; /* copied: the core frees it */
    kafka_sink *k = impl;
    rd_kafka_resp_err_t err = rd_kafka_producev(
        k->rk, RD_KAFKA_V_TOPIC(m->subject), RD_KAFKA_V_KEY(m->key, strlen(m->key)),
        RD_KAFKA_V_VALUE(m->data, m->len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
        RD_KAFKA_V_HEADER("omma-id", m->id, (ssize_t)strlen(m->id)), RD_KAFKA_V_END);
    if (!err)
        return OMMA_OK;
    if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL)
        return OMMA_ERR_BUSY;
    sink_set_error(k->s, "produce to %s: %s", m->subject, rd_kafka_err2str(err));
    return OMMA_ERR_INVALID_ARG;
}

static void poll_kafka(void *impl, int timeout_ms)
{
    kafka_sink *k = impl;
    rd_kafka_poll(k->rk, timeout_ms);
}

const sink_backend sink_kafka_backend = {open_kafka, send_kafka, poll_kafka, close_kafka};

#else /* !OMMA_HAVE_RDKAFKA */

static omma_status open_kafka(sink *s, sink_url *u, const sink_options *o, void **impl)
{
    (void)u;
    (void)o;
    *impl = NULL;
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                     "sink %s: omma was built without librdkafka (install librdkafka-dev and "
                     "rebuild)",
                     sink_name(s));
}

static omma_status send_kafka(void *impl, sink_msg **m)
{
    (void)impl;
    (void)m;
    return OMMA_ERR_UNSUPPORTED;
}

static void poll_kafka(void *impl, int timeout_ms)
{
    (void)impl;
    (void)timeout_ms;
}

static void close_kafka(void *impl)
{
    (void)impl;
}

const sink_backend sink_kafka_backend = {open_kafka, send_kafka, poll_kafka, close_kafka};

#endif
