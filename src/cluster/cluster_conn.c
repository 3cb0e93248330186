#define _POSIX_C_SOURCE 200809L
/* The connection to the cluster's buckets (cluster_private.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster/cluster_private.h"
#include "core/clock.h"
#include "core/error.h"

#if OMMA_HAVE_NATS

omma_status cluster_nats_fail(const cluster_url *u, natsStatus s, const char *what)
{
    natsStatus last = NATS_OK;
    const char *detail = nats_GetLastError(&last);
    return OMMA_FAIL(s == NATS_NO_MEMORY ? OMMA_ERR_OUT_OF_MEMORY : OMMA_ERR_IO,
                     "cluster %s: %s: %s%s%s", u->shown, what, natsStatus_GetText(s),
                     detail && *detail ? ": " : "", detail ? detail : "");
}

void cluster_conn_close(cluster_conn *c)
{
    kvStore_Destroy(c->cams);
    kvStore_Destroy(c->leases);
    jsCtx_Destroy(c->js);
    if (c->nc) {
        natsConnection_Close(c->nc);
        natsConnection_Destroy(c->nc);
    }
    natsOptions_Destroy(c->opts);
    memset(c, 0, sizeof *c);
}

/* JetStream's answer for bucket, asked again while its API times out
 * (a cluster electing the leaders of its streams, just started or after
 * a node went: seconds), until deadline_ns. */
static natsStatus lookup(cluster_conn *c, const char *bucket, uint64_t deadline_ns, kvStore **out)
{
    for (;;) {
        natsStatus s = js_KeyValue(out, c->js, bucket);
        if (s != NATS_TIMEOUT || core_now_ns() >= deadline_ns)
            return s;
        struct timespec ts = {0, 200000000};
        nanosleep(&ts, NULL);
    }
}

/* Binds bucket, or makes it (create) when missing. */
static omma_status bind_bucket(const cluster_url *u, cluster_conn *c, const char *bucket,
                               int64_t ttl_ms, int create, uint64_t deadline_ns, kvStore **out)
{
    natsStatus s = lookup(c, bucket, deadline_ns, out);
    if (s == NATS_NOT_FOUND && create) {
        kvConfig kc;
        kvConfig_Init(&kc);
        kc.Bucket = bucket;
        kc.History = 1;
        kc.TTL = ttl_ms * 1000000; /* libnats: nanoseconds */
        kc.Replicas = (int)u->replicas;
        kc.StorageType = u->memory ? js_MemoryStorage : js_FileStorage;
        s = js_CreateKeyValue(out, c->js, &kc);
        if (s != NATS_OK) {
            char what[128];
            snprintf(what, sizeof what, "making the bucket %s", bucket);
            return cluster_nats_fail(u, s, what);
        }
    }
    if (s == NATS_NOT_FOUND)
        return OMMA_FAIL(OMMA_ERR_IO,
                         "cluster %s: no bucket %s there (no omma node or omma cluster add has "
                         "used this URL yet)",
                         u->shown, bucket);
    if (s != NATS_OK) {
        char what[128];
        snprintf(what, sizeof what, "the bucket %s", bucket);
        return cluster_nats_fail(u, s, what);
    }
    if (ttl_ms > 0) { /* every node must agree on the leases' life */
        kvStatus *st = NULL;
        if (kvStore_Status(&st, *out) == NATS_OK) {
            int64_t have = kvStatus_TTL(st) / 1000000;
            kvStatus_Destroy(st);
            if (have != ttl_ms)
                return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                                 "cluster %s: the bucket %s keeps leases %lld ms, this node asks "
                                 "lease_ms=%lld (every node of a cluster uses the same)",
                                 u->shown, bucket, (long long)have, (long long)ttl_ms);
        }
    }
    return OMMA_OK;
}

omma_status cluster_conn_open(const cluster_url *u, int timeout_ms, int request_ms, int create,
                              int with_leases, natsConnectionHandler on_reconnected, void *closure,
                              cluster_conn *out)
{
    memset(out, 0, sizeof *out);
    natsStatus s = natsOptions_Create(&out->opts);
    if (s == NATS_OK)
        s = natsOptions_SetServers(out->opts, (const char **)u->servers, u->n_servers);
    if (s == NATS_OK)
        s = natsOptions_SetTimeout(out->opts, timeout_ms);
    if (s == NATS_OK)
        s = natsOptions_SetMaxReconnect(out->opts, -1);
    if (s == NATS_OK)
        s = natsOptions_SetReconnectWait(out->opts, 250);
    if (s == NATS_OK)
        s = natsOptions_SetName(out->opts, "omma-cluster");
    if (s == NATS_OK && u->user)
        s = natsOptions_SetUserInfo(out->opts, u->user, u->password);
    if (s == NATS_OK && on_reconnected)
        s = natsOptions_SetReconnectedCB(out->opts, on_reconnected, closure);
    omma_status st = OMMA_OK;
    if (s != NATS_OK) {
        st = cluster_nats_fail(u, s, "options");
        goto fail;
    }
    s = natsConnection_Connect(&out->nc, out->opts);
    if (s != NATS_OK) {
        st = cluster_nats_fail(u, s, "cannot connect");
        goto fail;
    }
    jsOptions jo;
    jsOptions_Init(&jo);
    jo.Wait = request_ms;
    s = natsConnection_JetStream(&out->js, out->nc, &jo);
    if (s != NATS_OK) {
        st = cluster_nats_fail(u, s, "JetStream context");
        goto fail;
    }
    /* Its API may time out for a while on a cluster just started: asked
     * again for the connect timeout, then an error. */
    uint64_t deadline = core_now_ns() + (uint64_t)timeout_ms * 1000000u;
    st = bind_bucket(u, out, u->bucket, 0, create, deadline, &out->cams);
    if (st == OMMA_OK && with_leases)
        st = bind_bucket(u, out, u->leases, u->lease_ms, create, deadline, &out->leases);
    if (st != OMMA_OK)
        goto fail;
    return OMMA_OK;
fail:
    cluster_conn_close(out);
    return st;
}

#endif
