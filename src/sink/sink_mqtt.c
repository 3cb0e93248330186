#define _POSIX_C_SOURCE 200809L
/* The MQTT sink (libmosquitto): its network thread (mosquitto_loop_start)
 * connects, reconnects with backoff (1 s doubling to 10 s) and resends the
 * QoS 1 messages not acknowledged when the connection broke; a publish is
 * acknowledged by the broker's PUBACK (QoS 1) or written (QoS 0). */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "sink/sink_private.h"

#if OMMA_HAVE_MOSQUITTO
#include <mosquitto.h>
#include <pthread.h>

typedef struct mqtt_sink {
    sink *s;
    const char *name;
    struct mosquitto *mosq;
    int qos, loop_started;
    atomic_int connected, refused; /* refused: the CONNACK's code + 1 */
} mqtt_sink;

static pthread_once_t lib_once = PTHREAD_ONCE_INIT;

static void lib_init(void)
{
    mosquitto_lib_init();
}

static void on_connect(struct mosquitto *mosq, void *obj, int rc)
{
    (void)mosq;
    mqtt_sink *q = obj;
    if (rc == 0) {
        atomic_store(&q->connected, 1);
        sink_set_connected(q->s, 1);
    } else {
        atomic_store(&q->refused, rc + 1);
        sink_set_error(q->s, "connection refused: %s", mosquitto_connack_string(rc));
    }
}

static void on_disconnect(struct mosquitto *mosq, void *obj, int rc)
{
    (void)mosq;
    mqtt_sink *q = obj;
    atomic_store(&q->connected, 0);
    sink_set_connected(q->s, 0);
    if (rc != 0)
        sink_set_error(q->s, "disconnected (%s); reconnecting", mosquitto_strerror(rc));
}

static void on_publish(struct mosquitto *mosq, void *obj, int mid)
{
    (void)mosq;
    (void)mid;
    mqtt_sink *q = obj;
    sink_acked(q->s, 1);
}

static void close_mqtt(void *impl)
{
    mqtt_sink *q = impl;
    if (!q)
        return;
    if (q->mosq) {
        mosquitto_disconnect(q->mosq);
        if (q->loop_started)
            mosquitto_loop_stop(q->mosq, true);
        mosquitto_destroy(q->mosq);
    }
    free(q);
}

static omma_status mosq_fail(const char *name, int rc, const char *what)
{
    return OMMA_FAIL(rc == MOSQ_ERR_NOMEM   ? OMMA_ERR_OUT_OF_MEMORY
                     : rc == MOSQ_ERR_INVAL ? OMMA_ERR_INVALID_ARG
                                            : OMMA_ERR_IO,
                     "sink %s: %s: %s", name, what,
                     rc == MOSQ_ERR_ERRNO ? "system error" : mosquitto_strerror(rc));
}

static omma_status open_mqtt(sink *s, sink_url *u, const sink_options *o, void **impl)
{
    const char *name = sink_name(s);
    pthread_once(&lib_once, lib_init);
    mqtt_sink *q = calloc(1, sizeof *q);
    if (!q)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "sink %s: out of memory", name);
    q->s = s;
    q->name = name;
    long qos = 1, keepalive = 30;
    const char *client_id = sink_url_param(u, "client_id");
    const char *cafile = sink_url_param(u, "cafile"), *capath = sink_url_param(u, "capath");
    const char *certfile = sink_url_param(u, "certfile"), *keyfile = sink_url_param(u, "keyfile");
    const char *insecure = sink_url_param(u, "insecure");
    omma_status st = sink_url_int(u, name, "qos", 0, 1, 1, &qos);
    if (st == OMMA_OK)
        st = sink_url_int(u, name, "keepalive", 5, 3600, 30, &keepalive);
    if (st != OMMA_OK)
        goto fail;
    if (u->n_hosts != 1) {
        st = OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: MQTT takes one broker, not %d", name,
                       u->n_hosts);
        goto fail;
    }
    if ((certfile != NULL) != (keyfile != NULL)) {
        st = OMMA_FAIL(OMMA_ERR_INVALID_ARG, "sink %s: certfile and keyfile go together", name);
        goto fail;
    }
    q->qos = (int)qos;
    char id[128];
    if (client_id)
        snprintf(id, sizeof id, "%s", client_id);
    else
        snprintf(id, sizeof id, "omma-%d-%llx", (int)getpid(),
                 (unsigned long long)(core_now_ns() & 0xffffffffffu));
    q->mosq = mosquitto_new(id, true, q);
    if (!q->mosq) {
        st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "sink %s: mosquitto_new failed", name);
        goto fail;
    }
    mosquitto_connect_callback_set(q->mosq, on_connect);
    mosquitto_disconnect_callback_set(q->mosq, on_disconnect);
    mosquitto_publish_callback_set(q->mosq, on_publish);
    mosquitto_reconnect_delay_set(q->mosq, 1, 10, true);
    mosquitto_max_inflight_messages_set(q->mosq, 0); /* the core bounds them */
    int rc = MOSQ_ERR_SUCCESS;
    if (u->user)
        rc = mosquitto_username_pw_set(q->mosq, u->user, u->password);
    if (rc == MOSQ_ERR_SUCCESS && (u->tls || cafile || capath))
        rc = mosquitto_tls_set(q->mosq, cafile, cafile || capath ? capath : "/etc/ssl/certs",
                               certfile, keyfile, NULL);
    if (rc == MOSQ_ERR_SUCCESS && insecure && !strcmp(insecure, "1"))
        rc = mosquitto_tls_insecure_set(q->mosq, true);
    if (rc != MOSQ_ERR_SUCCESS) {
        st = mosq_fail(name, rc, "options (user, TLS files)");
        goto fail;
    }
    char host[256];
    snprintf(host, sizeof host, "%s", u->hosts[0]);
    char *colon = strrchr(host, ':');
    int port = atoi(colon + 1);
    *colon = 0;
    if (host[0] == '[') { /* [IPv6] */
        memmove(host, host + 1, strlen(host));
        host[strlen(host) - 1] = 0;
    }
    rc = mosquitto_connect_async(q->mosq, host, port, (int)keepalive);
    if (rc != MOSQ_ERR_SUCCESS) {
        st = mosq_fail(name, rc, "cannot connect");
        if (rc == MOSQ_ERR_ERRNO)
            st = OMMA_FAIL(OMMA_ERR_IO, "sink %s: cannot connect to %s:%d", name, host, port);
        goto fail;
    }
    rc = mosquitto_loop_start(q->mosq);
    if (rc != MOSQ_ERR_SUCCESS) {
        st = mosq_fail(name, rc, "starting its network thread");
        goto fail;
    }
    q->loop_started = 1;
    uint64_t deadline = core_now_ns() + (uint64_t)o->connect_timeout_ms * 1000000u;
    while (!atomic_load(&q->connected) && !atomic_load(&q->refused) && core_now_ns() < deadline) {
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    if (atomic_load(&q->refused)) {
        st = OMMA_FAIL(OMMA_ERR_IO, "sink %s: the broker refused the connection: %s", name,
                       mosquitto_connack_string(atomic_load(&q->refused) - 1));
        goto fail;
    }
    if (!atomic_load(&q->connected)) {
        st = OMMA_FAIL(OMMA_ERR_IO, "sink %s: cannot connect to %s:%d within %d ms", name, host,
                       port, o->connect_timeout_ms);
        goto fail;
    }
    *impl = q;
    return OMMA_OK;
fail:
    close_mqtt(q);
    return st;
}

static omma_status send_mqtt(void *impl, sink_msg **mp)
{
    const sink_msg *m = *mp; /* copied: the core frees it */
    mqtt_sink *q = impl;
    if (!atomic_load(&q->connected))
        return OMMA_ERR_BUSY;
    int mid = 0;
    int rc = mosquitto_publish(q->mosq, &mid, m->subject, (int)m->len, m->data, q->qos, false);
    if (rc == MOSQ_ERR_SUCCESS)
        return OMMA_OK;
    if (rc == MOSQ_ERR_NO_CONN || rc == MOSQ_ERR_CONN_LOST || rc == MOSQ_ERR_NOMEM ||
        rc == MOSQ_ERR_OVERSIZE_PACKET)
        return OMMA_ERR_BUSY;
    sink_set_error(q->s, "publish to %s: %s", m->subject, mosquitto_strerror(rc));
    return OMMA_ERR_INVALID_ARG;
}

static void poll_mqtt(void *impl, int timeout_ms)
{
    (void)impl;
    if (timeout_ms > 0) {
        struct timespec ts = {0, (long)timeout_ms * 1000000};
        nanosleep(&ts, NULL);
    }
}

const sink_backend sink_mqtt_backend = {open_mqtt, send_mqtt, poll_mqtt, close_mqtt};

#else /* !OMMA_HAVE_MOSQUITTO */

static omma_status open_mqtt(sink *s, sink_url *u, const sink_options *o, void **impl)
{
    (void)u;
    (void)o;
    *impl = NULL;
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                     "sink %s: omma was built without libmosquitto (install libmosquitto-dev "
                     "and rebuild)",
                     sink_name(s));
}

static omma_status send_mqtt(void *impl, sink_msg **m)
{
    (void)impl;
    (void)m;
    return OMMA_ERR_UNSUPPORTED;
}

static void poll_mqtt(void *impl, int timeout_ms)
{
    (void)impl;
    (void)timeout_ms;
}

static void close_mqtt(void *impl)
{
    (void)impl;
}

const sink_backend sink_mqtt_backend = {open_mqtt, send_mqtt, poll_mqtt, close_mqtt};

#endif
