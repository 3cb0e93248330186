/* Private: LSL outlets, served by one thread per lsl_server.
 *
 * An lsl_server answers for all the outlets made in it: LSL discovery
 * queries (UDP "LSL:shortinfo" on port 16571, the multicast groups when
 * serving on every interface, and on a service port in 16572..16603 that
 * resolvers scanning the local port range reach), time probes
 * ("LSL:timedata" on the service port) and TCP connections on each
 * outlet's data port (streamfeed 1.10, shortinfo, fullinfo: lsl_feed.h).
 *
 * Pushing a sample copies it into the outlet's ring and wakes the server
 * thread: it never blocks on the network. Each consumer reads the ring at
 * its own pace through a bounded send buffer; one that falls more than
 * the ring (or its requested Max-Buffer-Length) behind loses the oldest
 * samples, counted in the outlet's stats, and never slows the others.
 *
 * Threads: lsl_outlet_push may be called from any thread (one at a time
 * per outlet keeps the samples in order); create/destroy from any thread;
 * an outlet is destroyed before its server. */
#ifndef OMMA_LSL_OUTLET_H
#define OMMA_LSL_OUTLET_H

#include <stdint.h>

#include "lsl/lsl_info.h"

#define LSL_DISCOVERY_PORT 16571
#define LSL_BASE_PORT 16572
#define LSL_PORT_RANGE 32

typedef struct lsl_server lsl_server;
typedef struct lsl_outlet lsl_outlet;

typedef struct lsl_server_options {
    const char *bind; /* IPv4 address to serve on: "127.0.0.1" (NULL, the
                       * default: this machine only) or "0.0.0.0" (every
                       * interface, joining LSL's multicast groups) */
    int discovery_port; /* 0: LSL_DISCOVERY_PORT */
} lsl_server_options;

/* Opens the sockets and starts the server thread. A discovery port that
 * cannot be bound (another program holds it without sharing) is reported
 * with omma_log and skipped: the service port still answers. */
omma_status lsl_server_create(const lsl_server_options *opts, lsl_server **out);
/* Stops the thread and closes the sockets; every outlet must be gone. */
void lsl_server_destroy(lsl_server *s);
/* The service port (UDP) the server answers queries and time probes on. */
int lsl_server_service_port(const lsl_server *s);

/* Makes an outlet for spec (name, type, channel_count, format, nominal
 * rate, source_id, desc are taken; uid, hostname, ports, created_at,
 * session "default" and version are filled in). buffer_samples: the ring
 * (at least 16; 0: 10 s at the nominal rate, at least 1024 samples). */
omma_status lsl_outlet_create(lsl_server *s, const lsl_info *spec, int buffer_samples,
                              lsl_outlet **out);
void lsl_outlet_destroy(lsl_outlet *o);

/* The outlet's full description (uid, ports...). */
const lsl_info *lsl_outlet_info(const lsl_outlet *o);

/* Appends one sample: channel_count values of the outlet's format and its
 * timestamp on the LSL clock (lsl_clock.h). */
omma_status lsl_outlet_push(lsl_outlet *o, const void *values, double timestamp);

typedef struct lsl_outlet_stats {
    uint64_t pushed; /* samples pushed */
    uint64_t sent; /* samples handed to consumers' sockets, summed */
    uint64_t lost; /* samples consumers missed because they fell behind */
    int consumers; /* connected data feeds */
} lsl_outlet_stats;

void lsl_outlet_get_stats(lsl_outlet *o, lsl_outlet_stats *st);

#endif
