/* omma stream --cluster (stream_cluster.c): this node's share of the
 * cluster's cameras (cluster/cluster.h), run by the node's one runtime
 * (CPU backend: each claimed camera added to it, each released one
 * removed; GPU backend: a runtime per camera, started on claim, destroyed
 * on release), results passed on only while the camera's lease holds. */
#ifndef OMMA_CLI_STREAM_CLUSTER_H
#define OMMA_CLI_STREAM_CLUSTER_H

#include <stdint.h>
#include <stdio.h>

#include "cli/stream_options.h"

typedef struct cli_cluster_node cli_cluster_node;

/* A result of camera `id` (slot: a small number per camera id on this
 * node, stable for the process) under its lease; seq counts the camera's
 * results on this node from 1 (across leases). From the runtimes'
 * threads, concurrently. */
typedef void (*cli_cluster_result_fn)(void *ctx, const rt_result *r, int slot, const char *id,
                                      const char *source, uint64_t seq, uint64_t lease);

/* Joins the cluster of o->cluster as o->node; the cameras' runtimes use
 * o->rt's options. Returns -1, or the exit code (said why). */
int cli_cluster_start(cli_stream_opts *o, cli_cluster_result_fn fn, void *ctx,
                      cli_cluster_node **out);

/* Hands every camera over and leaves; the cameras' runtimes are gone when
 * it returns, and the fence says no for every lease. */
void cli_cluster_leave(cli_cluster_node *c);

/* Leaves (if not yet) and frees: after the sinks that fence with it are
 * closed. NULL ok. */
void cli_cluster_free(cli_cluster_node *c);

/* The sinks' fence (sink_options.fence): 1 while this node holds the
 * camera's lease. ctx is the cli_cluster_node. */
int cli_cluster_fence(void *ctx, const char *camera, uint64_t lease);

/* One JSON line of the node's state: {"cluster":{...}}. */
void cli_cluster_status(cli_cluster_node *c, FILE *to);

#endif
