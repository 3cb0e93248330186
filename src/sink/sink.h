/* Private: result sinks. One sink sends each frame's result message to a
 * message system: Kafka (kafka://BROKERS/TOPIC, librdkafka), NATS JetStream
 * (nats://HOST:PORT/SUBJECT, libnats) or MQTT (mqtt://HOST:PORT/TOPIC,
 * libmosquitto). Each library is optional at build time; without it
 * sink_open fails with OMMA_ERR_UNSUPPORTED naming the library.
 *
 * A publisher never blocks: sink_publish copies the message into the
 * sink's bounded backlog (oldest dropped first past its bound, counted) and
 * returns; the sink's sender thread hands messages to the library while it
 * is connected and fewer than `window` wait for their acknowledgement.
 * Deliveries the server refuses or never acknowledges are counted as failed
 * and put back at the head of the backlog (at least once; NATS messages
 * carry a Nats-Msg-Id so JetStream drops the duplicates of a resend).
 * The libraries reconnect with backoff by themselves.
 *
 * Subjects, topics and keys name the camera: in the URL's path, {site},
 * {node} and {camera} are replaced (docs/SINKS.md).
 *
 * Threads: sink_open/sink_close by the owner; sink_publish, sink_get_stats
 * and sink_name from any thread between them. */
#ifndef OMMA_SINK_SINK_H
#define OMMA_SINK_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "omma/status.h"

#define SINK_NAME_MAX 256 /* the URL as shown (no password), with the NUL */
#define SINK_SUBJECT_MAX 255 /* a subject, topic or key, bytes */
#define SINK_ERROR_MAX 256

typedef struct sink sink;
typedef struct sink_stats sink_stats; /* below */

typedef enum sink_kind {
    SINK_KAFKA = 0,
    SINK_NATS,
    SINK_MQTT,
    SINK_KINDS,
} sink_kind;

/* "kafka", "nats", "mqtt". */
const char *sink_kind_str(sink_kind kind);

typedef struct sink_options {
    const char *site; /* {site}; NULL: "default" */
    const char *node; /* {node}; NULL: the host name */
    int backlog; /* messages held while the server is away; 0: 10000 */
    int window; /* messages handed over and not yet acknowledged; 0: 1000 */
    int connect_timeout_ms; /* sink_open's wait for a first connection; 0: 5000 */
    /* Fencing (omma stream --cluster, docs/CLUSTER.md): a message with a
     * lease is handed to the library only while fence(fence_ctx, camera,
     * lease) says 1 (the sender thread asks, just before); else it is
     * dropped, counted as fenced. NULL: no fencing. */
    int (*fence)(void *fence_ctx, const char *camera, uint64_t lease);
    void *fence_ctx;
} sink_options;

/* Opens the sink of url (query options in docs/SINKS.md: qos, backlog,
 * window, tls files, librdkafka properties...). NATS and MQTT sinks
 * connect before returning: an unreachable server or a refused login is an
 * error here. Errors name the sink: OMMA_ERR_INVALID_ARG (a malformed URL,
 * a bad option, a subject or topic too long or with characters the system
 * refuses), OMMA_ERR_UNSUPPORTED (an unknown scheme, or a library omma was
 * built without), OMMA_ERR_IO (unreachable, refused), OMMA_ERR_OUT_OF_MEMORY.
 * On failure *out is NULL. */
omma_status sink_open(const char *url, const sink_options *options, sink **out);

/* Flushes for up to drain_ms, stops the sender and frees the sink; with
 * final, its last counters there (what was still in the backlog or not
 * acknowledged then counted as dropped). NULL is ignored. */
void sink_close(sink *s, int drain_ms, sink_stats *final);

/* Waits up to timeout_ms until every message published so far is
 * acknowledged or failed for good. OMMA_OK, or OMMA_ERR_TIMEOUT. */
omma_status sink_flush(sink *s, int timeout_ms);

/* One frame's result: camera is the camera's index (the key, and the
 * {camera} of the subject is `camera_name` when it is set, else "camN"). */
typedef struct sink_message {
    int camera;
    const char *camera_name; /* NULL: "camN" */
    uint64_t seq; /* per camera, from 1, without gaps as published */
    const void *data;
    size_t len;
    uint64_t lease; /* the camera's cluster lease, for the fence (0: none) */
} sink_message;

/* Copies the message into the backlog; never blocks on the network.
 * Errors: OMMA_ERR_INVALID_ARG, OMMA_ERR_OUT_OF_MEMORY (counted dropped),
 * OMMA_ERR_CLOSED (closing). */
omma_status sink_publish(sink *s, const sink_message *m);

struct sink_stats {
    uint64_t published; /* sink_publish calls accepted */
    uint64_t sent; /* handed to the library (resends included) */
    uint64_t acked; /* acknowledged by the server (QoS 0: written) */
    uint64_t failed; /* deliveries refused or timed out (then resent) */
    uint64_t dropped; /* lost: backlog full (oldest first), or at close */
    uint64_t fenced; /* not sent: the camera's lease had ended (also in dropped) */
    uint64_t backlog; /* waiting in the backlog now */
    uint64_t inflight; /* handed over, not yet acknowledged */
    int connected;
    char last_error[SINK_ERROR_MAX]; /* "" when none */
};

void sink_get_stats(sink *s, sink_stats *out);

/* The URL as given, without a password. */
const char *sink_name(const sink *s);

sink_kind sink_get_kind(const sink *s);

#endif
