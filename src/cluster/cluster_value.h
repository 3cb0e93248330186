/* Private: the values omma keeps in the cluster's JetStream key-value
 * buckets (docs/CLUSTER.md). They are untrusted input (anyone who may
 * write the bucket writes them): parsed strictly, bounded, every error
 * says what is wrong and where (fuzz/fuzz_cluster.c).
 *
 * A value is lines of KEY=VALUE ('\n' ends a line; an empty line and a
 * line starting with '#' are skipped; no NUL, no other control
 * character):
 *   camera  cam.ID    source=SPEC (a source of source.h, or "synthetic"),
 *                     max_frames=N (optional, 0..1e12)
 *   node    node.NAME weight=W (0..1e6; 0: no limit), cameras=K, draining=0|1
 *   owner   own.ID    node=NAME
 * Names (camera ids, node names) are 1..CLUSTER_NAME_MAX-1 bytes of
 * [A-Za-z0-9_-]: they are key and subject tokens. */
#ifndef OMMA_CLUSTER_CLUSTER_VALUE_H
#define OMMA_CLUSTER_CLUSTER_VALUE_H

#include <stddef.h>

#include "omma/status.h"

#define CLUSTER_NAME_MAX 64 /* with the NUL */
#define CLUSTER_SPEC_MAX 2048 /* a camera's source, with the NUL */
#define CLUSTER_VALUE_MAX 4096 /* a value's bytes */

typedef struct cluster_camera {
    char source[CLUSTER_SPEC_MAX]; /* "synthetic" for a synthetic camera */
    long long max_frames; /* 0: no limit */
} cluster_camera;

typedef struct cluster_node_info {
    long weight; /* cameras at most (0: no limit) */
    long cameras; /* owned now */
    int draining;
} cluster_node_info;

/* 1 when name is a valid camera id or node name, else 0. */
int cluster_name_valid(const char *name);

/* Each parses len bytes of data (not NUL-terminated). Errors:
 * OMMA_ERR_INVALID_ARG naming `what` (e.g. the key) and the line. */
omma_status cluster_camera_parse(const void *data, size_t len, const char *what,
                                 cluster_camera *out);
omma_status cluster_node_parse(const void *data, size_t len, const char *what,
                               cluster_node_info *out);
/* The owner's node name into node (CLUSTER_NAME_MAX bytes). */
omma_status cluster_owner_parse(const void *data, size_t len, const char *what, char *node);

/* The values as written (a line per field). Return the length, or -1 when
 * out (cap bytes) is too small. */
int cluster_camera_format(const cluster_camera *c, char *out, size_t cap);
int cluster_node_format(const cluster_node_info *n, char *out, size_t cap);
int cluster_owner_format(const char *node, char *out, size_t cap);

#endif
