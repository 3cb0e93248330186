/* Private: cameras shared out across machines through NATS JetStream's
 * key-value store (docs/CLUSTER.md). No coordinator of its own: every
 * node runs the same loop against two buckets.
 *
 *   BUCKET        (no expiry)  cam.ID = the camera (cluster_value.h),
 *                              drain.NODE = "1": that node hands its
 *                              cameras over and claims none
 *   BUCKET-leases (TTL lease_ms) node.NAME = a node's heartbeat (weight,
 *                              cameras, draining), own.ID = the camera's
 *                              owner (node=NAME)
 *
 * A node watches both buckets, puts its heartbeat every lease_ms / 4 and
 * renews each lease it holds by compare-and-set on the revision it last
 * wrote (kvStore_Update). It claims an unowned camera with kvStore_Create
 * (which fails while any owner's key exists): at most one owner by
 * construction. A dead node's keys expire with the bucket's TTL; others
 * then claim its cameras. A node claims while it holds fewer than its
 * share: the cameras split over the live, undrained nodes by weight
 * (rounded up), and no more than its own weight; above its share it hands
 * over one camera per lease_ms / 4 (rebalancing when a node joins).
 *
 * Fencing: a lease is valid here until `lease_ms - margin` after the send
 * of its last renewal that succeeded (a local clock, no clock shared
 * between machines): the key cannot expire on the server before that, so
 * no other node owns the camera while cluster_lease_valid says yes. A
 * renewal refused (someone else's revision) or overdue ends the lease at
 * once: on_release(lost 1) is called and cluster_lease_valid says no.
 *
 * Threads: cluster_open/cluster_close by the owner; the callbacks run on
 * the cluster's thread, which renews the leases: they must not block;
 * cluster_lease_valid, cluster_give_up and cluster_get_stats from any
 * thread. */
#ifndef OMMA_CLUSTER_CLUSTER_H
#define OMMA_CLUSTER_CLUSTER_H

#include <stdint.h>
#include <stdio.h>

#include "cluster/cluster_value.h"
#include "omma/status.h"

typedef struct cluster cluster;

typedef struct cluster_config {
    const char *url; /* nats://HOST:PORT[,HOST:PORT...][/BUCKET][?lease_ms=&replicas=] */
    const char *node; /* this node's name (cluster_name_valid) */
    long weight; /* cameras at most (0: no limit); also its share's weight (0 counts 1) */
    int connect_timeout_ms; /* 0: 5000 */
    /* A camera claimed: start it, without blocking (the thread renews the
     * leases: hand the work to a thread of yours). lease is the revision of
     * its owner key when claimed (a token for cluster_lease_valid). A
     * failure here, or cluster_give_up later, hands the camera back (tried
     * again here after 5 s). */
    omma_status (*on_claim)(void *ctx, const char *id, const cluster_camera *cam, uint64_t lease);
    /* A camera released (handed over, removed, drained, or lost: lost 1
     * when the lease ended without this node's consent). Stop it, without
     * blocking: cluster_lease_valid already says no, and the owner key is
     * freed next so that another node claims it at once. */
    void (*on_release)(void *ctx, const char *id, int lost);
    void *ctx;
    FILE *log; /* claims, releases, errors; NULL: stderr */
} cluster_config;

/* Connects, makes the buckets if missing (the leases' TTL is lease_ms:
 * every node of a cluster must use the same), starts the node's thread.
 * Errors: OMMA_ERR_INVALID_ARG (a malformed URL or option, a bad node
 * name), OMMA_ERR_IO (unreachable, no JetStream), OMMA_ERR_OUT_OF_MEMORY.
 * All name the URL. *out NULL on failure. */
omma_status cluster_open(const cluster_config *cfg, cluster **out);

/* Leaves: releases every camera (on_release, then the owner keys freed so
 * others claim them at once), deletes the heartbeat and stops the thread;
 * no callback after it. The object stays (cluster_lease_valid says no) for
 * cameras still stopping. Idempotent. */
void cluster_leave(cluster *c);

/* cluster_leave, then frees. NULL ok. */
void cluster_close(cluster *c);

/* The camera of lease `lease` could not start: hand it back (any thread). */
void cluster_give_up(cluster *c, const char *id, uint64_t lease);

/* 1 while this node holds the camera's lease `lease` (see top). */
int cluster_lease_valid(cluster *c, const char *id, uint64_t lease);

typedef struct cluster_stats {
    int cameras_known, cameras_owned, nodes_alive;
    int share; /* cameras this node claims up to now */
    int connected, draining;
    uint64_t claims, releases, lost; /* so far */
} cluster_stats;
void cluster_get_stats(cluster *c, cluster_stats *out);

/* omma cluster's operations, each on its own connection (timeout_ms for
 * the connection and each request). Errors name the URL. */
omma_status cluster_add(const char *url, int timeout_ms, const char *id, const cluster_camera *cam);
omma_status cluster_remove(const char *url, int timeout_ms, const char *id);
omma_status cluster_drain(const char *url, int timeout_ms, const char *node, int drain);
/* Writes the nodes (heartbeat, cameras owned) and the cameras (source,
 * owner) to out as text, or as one JSON object with json. */
omma_status cluster_list(const char *url, int timeout_ms, int json, FILE *out);

#endif
