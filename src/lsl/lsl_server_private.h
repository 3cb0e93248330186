/* Private to lsl_server.c and lsl_outlet.c: the server, its outlets and
 * their consumers (TCP connections). */
#ifndef OMMA_LSL_SERVER_PRIVATE_H
#define OMMA_LSL_SERVER_PRIVATE_H

#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "lsl/lsl_feed.h"
#include "lsl/lsl_outlet.h"

#define LSL_MAX_DISCOVERY_SOCKETS 2
#define LSL_CONSUMER_BUFFER (256 * 1024)
#define LSL_MAX_CONNECTIONS 64 /* per outlet, feeds and requests */
#define LSL_REQUEST_TIMEOUT_NS (10ull * 1000000000ull)

typedef enum { CONSUMER_REQUEST, CONSUMER_FEED, CONSUMER_CLOSING } consumer_state;

typedef struct lsl_consumer {
    int fd;
    consumer_state state;
    int counted; /* in its outlet's n_consumers */
    int readable; /* poll saw it readable (or it was not polled yet) */
    char in[LSL_FEED_MAX_REQUEST_BYTES];
    size_t in_len;
    uint8_t *out;
    size_t out_len, out_off, out_cap;
    uint64_t cursor; /* next ring sample to send */
    uint64_t backlog; /* most samples it may lag behind */
    uint64_t deadline_ns; /* to finish its request */
    struct lsl_consumer *next;
} lsl_consumer;

struct lsl_outlet {
    lsl_server *server;
    lsl_info info;
    char *shortinfo, *fullinfo;
    size_t shortinfo_len, fullinfo_len;
    size_t value_bytes, slot_bytes;
    /* The ring: samples [head - min(head, capacity), head), under lock. */
    pthread_mutex_t lock;
    uint8_t *ring;
    uint64_t capacity, head;
    /* Server thread only (under the server's lock). */
    int listen_fd;
    lsl_consumer *consumers;
    uint64_t sent, lost;
    int n_consumers;
    int n_connections; /* consumers in any state */
    int dead; /* destroy asked; the thread closes its sockets */
    int reaped; /* ... and says so */
    struct lsl_outlet *next;
};

struct lsl_server {
    pthread_mutex_t lock; /* outlets, their server-thread fields, stop */
    pthread_cond_t reaped;
    pthread_t thread;
    int wake_fd; /* eventfd */
    atomic_int wake_pending;
    int stop;
    struct in_addr bind_addr;
    int discovery_fds[LSL_MAX_DISCOVERY_SOCKETS];
    int n_discovery;
    int service_fd, service_port;
    char hostname[256];
    lsl_outlet *outlets;
};

/* Wakes the server thread (cheap when a wake is already pending). */
void lsl_server_wake(lsl_server *s);

/* Server thread, under s->lock: accept on the outlet's data port, serve
 * its consumers (readable/writable), fill their buffers from the ring. */
void lsl_outlet_accept(lsl_outlet *o);
void lsl_outlet_serve(lsl_outlet *o, uint64_t now_ns);
/* Closes the outlet's sockets and consumers (server thread). */
void lsl_outlet_close_sockets(lsl_outlet *o);
/* Does any consumer have bytes to send? (for POLLOUT) */
int lsl_consumer_wants_write(const lsl_consumer *c);

#endif
