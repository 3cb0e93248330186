/* libFuzzer target for the cluster's untrusted input (src/cluster/): the
 * values anyone who may write the cluster's JetStream buckets writes, as
 * every node reads them, and the cluster URL. The first byte picks one:
 *   0: a camera (cluster_camera_parse); a parsed camera must write back
 *      and parse again to the same source and max_frames
 *   1: a node's heartbeat (cluster_node_parse), written back and parsed
 *   2: an owner (cluster_owner_parse): its node must be a valid name
 *   3: a cluster URL (cluster_url_parse, NUL-terminated copy)
 * A failure must be OMMA_ERR_INVALID_ARG with a message naming the input;
 * anything else traps, and ASan/UBSan catch the rest. Built and run by
 * fuzz/run.sh cluster (make fuzz; a short run inside make test). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster_private.h"
#include "cluster/cluster_value.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void expect_refusal(omma_status st, const char *prefix)
{
    if (st != OMMA_ERR_INVALID_ARG || strncmp(omma_last_error(), prefix, strlen(prefix)) != 0)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    char buf[CLUSTER_VALUE_MAX + 64];
    switch (data[0] % 4) {
    case 0: {
        cluster_camera a, b;
        omma_status st = cluster_camera_parse(text, len, "cam.f", &a);
        if (st != OMMA_OK) {
            expect_refusal(st, "cam.f: ");
            break;
        }
        int n = cluster_camera_format(&a, buf, sizeof buf);
        if (n < 0 || cluster_camera_parse(buf, (size_t)n, "again", &b) != OMMA_OK ||
            strcmp(a.source, b.source) || a.max_frames != b.max_frames)
            __builtin_trap();
        break;
    }
    case 1: {
        cluster_node_info a, b;
        omma_status st = cluster_node_parse(text, len, "node.f", &a);
        if (st != OMMA_OK) {
            expect_refusal(st, "node.f: ");
            break;
        }
        int n = cluster_node_format(&a, buf, sizeof buf);
        if (n < 0 || cluster_node_parse(buf, (size_t)n, "again", &b) != OMMA_OK ||
            a.weight != b.weight || a.cameras != b.cameras || a.draining != b.draining)
            __builtin_trap();
        break;
    }
    case 2: {
        char node[CLUSTER_NAME_MAX];
        omma_status st = cluster_owner_parse(text, len, "own.f", node);
        if (st != OMMA_OK)
            expect_refusal(st, "own.f: ");
        else if (!cluster_name_valid(node))
            __builtin_trap();
        break;
    }
    default: {
        char *url = malloc(len + 1);
        if (!url)
            return 0;
        memcpy(url, text, len);
        url[len] = 0;
        cluster_url u;
        omma_status st = cluster_url_parse(url, &u);
        if (st == OMMA_OK) {
            if (u.n_servers < 1 || !cluster_name_valid(u.bucket) || u.lease_ms < 300)
                __builtin_trap();
            cluster_url_free(&u);
        } else {
            expect_refusal(st, "cluster ");
        }
        free(url);
        break;
    }
    }
    return 0;
}
