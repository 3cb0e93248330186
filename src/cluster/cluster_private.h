/* Private to src/cluster/: the parsed cluster URL and the connection to
 * its buckets (cluster_conn.c), shared by the node (cluster.c) and the
 * admin operations (cluster_admin.c). */
#ifndef OMMA_CLUSTER_CLUSTER_PRIVATE_H
#define OMMA_CLUSTER_CLUSTER_PRIVATE_H

#include "cluster/cluster.h"

#define CLUSTER_MAX_HOSTS 16

typedef struct cluster_url {
    char shown[512]; /* the URL without its password, for messages */
    char *servers[CLUSTER_MAX_HOSTS]; /* "nats://host:port" */
    int n_servers;
    char *user, *password;
    char bucket[CLUSTER_NAME_MAX], leases[CLUSTER_NAME_MAX + 8];
    long lease_ms, replicas;
    int memory; /* storage=memory */
} cluster_url;

/* nats://[USER:PASS@]HOST[:PORT][,HOST[:PORT]...][/BUCKET][?lease_ms=N&replicas=N&storage=file|memory]
 * (defaults: bucket omma, lease_ms 3000, replicas 1, file). Errors
 * (OMMA_ERR_INVALID_ARG) name the URL without its password. */
omma_status cluster_url_parse(const char *url, cluster_url *u);
void cluster_url_free(cluster_url *u);

#if OMMA_HAVE_NATS
#include <nats/nats.h>

typedef struct cluster_conn {
    natsOptions *opts;
    natsConnection *nc;
    jsCtx *js;
    kvStore *cams, *leases; /* leases NULL unless asked for */
} cluster_conn;

/* Connects (timeout_ms) and binds the buckets (JetStream requests wait
 * up to request_ms); `create` makes missing ones (the leases'
 * with TTL lease_ms; an existing one with another TTL is an error).
 * with_leases 0: the cameras' bucket only. Callbacks (may be NULL) get
 * closure. On failure everything made is freed. */
omma_status cluster_conn_open(const cluster_url *u, int timeout_ms, int request_ms, int create,
                              int with_leases, natsConnectionHandler on_reconnected, void *closure,
                              cluster_conn *out);
void cluster_conn_close(cluster_conn *c);
/* An OMMA_ERR_IO (or _OUT_OF_MEMORY) naming the URL, what failed and
 * libnats' error text. */
omma_status cluster_nats_fail(const cluster_url *u, natsStatus s, const char *what);
#endif

#endif
