/* Private to src/sink/: the parsed URL, the messages of the backlog and the
 * backends' operations (sink_kafka.c, sink_nats.c, sink_mqtt.c). */
#ifndef OMMA_SINK_SINK_PRIVATE_H
#define OMMA_SINK_SINK_PRIVATE_H

#include <stddef.h>
#include <stdint.h>

#include "sink/sink.h"

#define SINK_MAX_HOSTS 16
#define SINK_MAX_PARAMS 32

typedef struct sink_param {
    char *key, *value;
    int used; /* a backend took it; the others are errors */
} sink_param;

typedef struct sink_url {
    sink_kind kind;
    int tls; /* mqtts:// or nats+tls:// */
    char *user, *password; /* NULL when absent */
    int n_hosts;
    char *hosts[SINK_MAX_HOSTS]; /* "host:port" (port filled in with the default) */
    char *path; /* without the leading '/'; "" when absent */
    int n_params;
    sink_param params[SINK_MAX_PARAMS];
} sink_url;

/* Parses url; on error sets the detail naming `name` and frees what it made. */
omma_status sink_url_parse(const char *url, const char *name, sink_url *u);
void sink_url_free(sink_url *u);
/* The parameter's value (marked used), or NULL. */
const char *sink_url_param(sink_url *u, const char *key);
/* An integer parameter within [lo, hi], or def when absent. */
omma_status sink_url_int(sink_url *u, const char *name, const char *key, long lo, long hi, long def,
                         long *out);

/* One message in the backlog or in flight: the resolved subject (topic),
 * the key (the camera's name), an id unique per node, camera and seq. */
typedef struct sink_msg {
    char *subject, *key, *id;
    size_t len;
    unsigned char *data;
    size_t cap; /* bytes of its block after the struct (strings and data) */
    struct sink_msg *next; /* in the sink's pool of messages to reuse */
    uint64_t lease; /* sink_message's (0: none; a copy requeued by sink_failed has none) */
} sink_msg;

void sink_msg_free(sink_msg *m);
/* m delivered (NULL: nothing): kept for sink_publish to reuse, or freed.
 * The sender thread only (backends: from send or poll). */
void sink_msg_done(sink *s, sink_msg *m);

typedef struct sink_backend {
    /* Connects (or prepares); *impl is the backend's. Errors name the sink. */
    omma_status (*open)(sink *s, sink_url *u, const sink_options *o, void **impl);
    /* Hands *m over. OMMA_OK: sent; the backend copied what it needs (the
     * core frees *m) or kept the message itself (*m set to NULL: the
     * backend frees it with sink_msg_free once acknowledged, or gives it
     * back with sink_requeue). OMMA_ERR_BUSY: not now (disconnected,
     * library queue full): *m stays the core's, which tries again later. */
    omma_status (*send)(void *impl, sink_msg **m);
    /* Called by the sender thread between sends and when idle: serves the
     * library's callbacks, resends what timed out. */
    void (*poll)(void *impl, int timeout_ms);
    void (*close)(void *impl);
} sink_backend;

extern const sink_backend sink_kafka_backend;
extern const sink_backend sink_nats_backend;
extern const sink_backend sink_mqtt_backend;

/* From the backends, any thread. */
void sink_acked(sink *s, uint64_t n);
/* A delivery failed (error text kept as the last error); when requeue, a
 * copy of the message goes back to the head of the backlog. */
void sink_failed(sink *s, const char *error, const char *subject, const char *key, const char *id,
                 const void *data, size_t len, int requeue);
/* A message a backend kept (send set *m to NULL) and could not deliver:
 * back to the head of the backlog (counted failed; dropped when the sink is
 * stopping or the backlog is full), error (if not NULL) kept as the last
 * error. The sender thread only. */
void sink_requeue(sink *s, sink_msg *m, const char *error);
void sink_set_connected(sink *s, int connected);
void sink_set_error(sink *s, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The subject (topic) of camera "cam0", for a backend's checks at open.
 * Returns 0, or -1 when it does not fit in cap. */
int sink_probe_subject(const sink *s, char *out, size_t cap);

/* The sink's window: messages sent and not yet acknowledged, at most. */
int sink_window(const sink *s);

/* Expands {site}, {node}, {camera} of template into out (cap bytes).
 * Returns the length, or -1 when it does not fit. */
int sink_expand(const char *template, const char *site, const char *node, const char *camera,
                char *out, size_t cap);

#endif
