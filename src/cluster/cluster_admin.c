/* omma cluster's operations (cluster.h): add, rm, drain, ls. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cluster/cluster_private.h"
#include "core/clock.h"
#include "core/error.h"

#if OMMA_HAVE_NATS

static omma_status check_name(const cluster_url *u, const char *what, const char *name)
{
    if (name && cluster_name_valid(name))
        return OMMA_OK;
    return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                     "cluster %s: the %s '%.80s' is not a name (1..%d of A-Z a-z 0-9 _ -)",
                     u->shown, what, name ? name : "", CLUSTER_NAME_MAX - 1);
}

static omma_status open_admin(const char *url, int timeout_ms, int create, int with_leases,
                              cluster_url *u, cluster_conn *c)
{
    OMMA_TRY(cluster_url_parse(url, u));
    omma_status st =
        cluster_conn_open(u, timeout_ms, timeout_ms, create, with_leases, NULL, NULL, c);
    if (st != OMMA_OK)
        cluster_url_free(u);
    return st;
}

omma_status cluster_add(const char *url, int timeout_ms, const char *id, const cluster_camera *cam)
{
    cluster_url u;
    cluster_conn c;
    OMMA_TRY(cluster_url_parse(url, &u));
    omma_status st = check_name(&u, "camera id", id);
    char value[CLUSTER_VALUE_MAX + 1];
    int n = st == OMMA_OK ? cluster_camera_format(cam, value, sizeof value) : 0;
    cluster_camera back;
    if (st == OMMA_OK &&
        (n < 0 || cluster_camera_parse(value, (size_t)n, "the camera", &back) != OMMA_OK))
        st = OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cluster %s: camera %s: %s", u.shown, id,
                       n < 0 ? "the source is too long" : omma_last_error());
    cluster_url_free(&u);
    OMMA_TRY(st);
    OMMA_TRY(open_admin(url, timeout_ms, 1, 0, &u, &c));
    char key[CLUSTER_NAME_MAX + 8];
    snprintf(key, sizeof key, "cam.%s", id);
    natsStatus s = kvStore_Put(NULL, c.cams, key, value, n);
    if (s != NATS_OK)
        st = cluster_nats_fail(&u, s, "adding the camera");
    cluster_conn_close(&c);
    cluster_url_free(&u);
    return st;
}

/* Deletes KEY, or puts "1" there (set). */
static omma_status put_or_delete(const char *url, int timeout_ms, const char *what,
                                 const char *prefix, const char *name, int set, int must_exist)
{
    cluster_url u;
    cluster_conn c;
    OMMA_TRY(cluster_url_parse(url, &u));
    omma_status st = check_name(&u, what, name);
    cluster_url_free(&u);
    OMMA_TRY(st);
    OMMA_TRY(open_admin(url, timeout_ms, set, 0, &u, &c));
    char key[CLUSTER_NAME_MAX + 16];
    snprintf(key, sizeof key, "%s%s", prefix, name);
    natsStatus s = NATS_OK;
    if (must_exist) {
        kvEntry *e = NULL;
        s = kvStore_Get(&e, c.cams, key);
        kvEntry_Destroy(e);
        if (s == NATS_NOT_FOUND)
            st = OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cluster %s: no %s %s in the bucket %s", u.shown,
                           what, name, u.bucket);
        else if (s != NATS_OK)
            st = cluster_nats_fail(&u, s, "reading the bucket");
    }
    if (st == OMMA_OK) {
        s = set ? kvStore_PutString(NULL, c.cams, key, "1") : kvStore_Delete(c.cams, key);
        if (s != NATS_OK)
            st = cluster_nats_fail(&u, s, set ? "writing the bucket" : "deleting from the bucket");
    }
    cluster_conn_close(&c);
    cluster_url_free(&u);
    return st;
}

omma_status cluster_remove(const char *url, int timeout_ms, const char *id)
{
    return put_or_delete(url, timeout_ms, "camera", "cam.", id, 0, 1);
}

omma_status cluster_drain(const char *url, int timeout_ms, const char *node, int drain)
{
    return put_or_delete(url, timeout_ms, "node", "drain.", node, drain, 0);
}

/* Each key of kv with prefix, and its value (NULL: unreadable). */
typedef struct listed {
    char name[CLUSTER_NAME_MAX];
    kvEntry *entry;
} listed;

static omma_status list_prefix(const cluster_url *u, kvStore *kv, const char *prefix, listed **out,
                               int *n_out)
{
    *out = NULL;
    *n_out = 0;
    kvKeysList keys = {0};
    natsStatus s = kvStore_Keys(&keys, kv, NULL);
    if (s == NATS_NOT_FOUND)
        return OMMA_OK; /* an empty bucket */
    if (s != NATS_OK)
        return cluster_nats_fail(u, s, "listing the keys");
    listed *l = calloc((size_t)keys.Count + 1, sizeof *l);
    if (!l) {
        kvKeysList_Destroy(&keys);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "cluster %s: out of memory", u->shown);
    }
    int n = 0;
    size_t pn = strlen(prefix);
    for (int i = 0; i < keys.Count; i++) {
        const char *k = keys.Keys[i];
        if (strncmp(k, prefix, pn) != 0 || !cluster_name_valid(k + pn))
            continue;
        snprintf(l[n].name, sizeof l[n].name, "%s", k + pn);
        if (kvStore_Get(&l[n].entry, kv, k) != NATS_OK)
            l[n].entry = NULL;
        n++;
    }
    kvKeysList_Destroy(&keys);
    *out = l;
    *n_out = n;
    return OMMA_OK;
}

static void free_listed(listed *l, int n)
{
    for (int i = 0; i < n; i++)
        kvEntry_Destroy(l[i].entry);
    free(l);
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", (unsigned char)*s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

omma_status cluster_list(const char *url, int timeout_ms, int json, FILE *out)
{
    cluster_url u;
    cluster_conn c;
    OMMA_TRY(open_admin(url, timeout_ms, 0, 0, &u, &c));
    listed *cams = NULL, *owners = NULL, *nodes = NULL, *drains = NULL;
    int n_cams = 0, n_owners = 0, n_nodes = 0, n_drains = 0;
    omma_status st = list_prefix(&u, c.cams, "cam.", &cams, &n_cams);
    if (st == OMMA_OK)
        st = list_prefix(&u, c.cams, "drain.", &drains, &n_drains);
    /* No leases' bucket before a first node: no node, no owner. */
    natsStatus s = js_KeyValue(&c.leases, c.js, u.leases);
    if (st == OMMA_OK && s != NATS_OK && s != NATS_NOT_FOUND)
        st = cluster_nats_fail(&u, s, "the leases' bucket");
    if (st == OMMA_OK && c.leases)
        st = list_prefix(&u, c.leases, "own.", &owners, &n_owners);
    if (st == OMMA_OK && c.leases)
        st = list_prefix(&u, c.leases, "node.", &nodes, &n_nodes);
    if (st != OMMA_OK)
        goto done;
    if (json)
        fputs("{\"nodes\":[", out);
    else
        fprintf(out, "nodes (%d):\n", n_nodes);
    for (int i = 0; i < n_nodes; i++) {
        cluster_node_info info = {0};
        int ok = nodes[i].entry && cluster_node_parse(kvEntry_Value(nodes[i].entry),
                                                      (size_t)kvEntry_ValueLen(nodes[i].entry),
                                                      "heartbeat", &info) == OMMA_OK;
        int drain = info.draining;
        for (int d = 0; d < n_drains; d++)
            drain |= !strcmp(drains[d].name, nodes[i].name);
        if (json) {
            fputs(i ? ",{\"name\":" : "{\"name\":", out);
            json_string(out, nodes[i].name);
            fprintf(out, ",\"valid\":%s,\"weight\":%ld,\"cameras\":%ld,\"draining\":%s}",
                    ok ? "true" : "false", info.weight, info.cameras, drain ? "true" : "false");
        } else {
            fprintf(out, "  %-20s %s weight %ld, %ld camera%s%s\n", nodes[i].name,
                    ok ? "" : "(unreadable heartbeat)", info.weight, info.cameras,
                    info.cameras == 1 ? "" : "s", drain ? ", draining" : "");
        }
    }
    if (json)
        fputs("],\"cameras\":[", out);
    else
        fprintf(out, "cameras (%d):\n", n_cams);
    for (int i = 0; i < n_cams; i++) {
        cluster_camera cam;
        int ok = cams[i].entry && cluster_camera_parse(kvEntry_Value(cams[i].entry),
                                                       (size_t)kvEntry_ValueLen(cams[i].entry),
                                                       "camera", &cam) == OMMA_OK;
        char owner[CLUSTER_NAME_MAX] = "";
        uint64_t lease = 0;
        for (int o = 0; o < n_owners; o++)
            if (!strcmp(owners[o].name, cams[i].name) && owners[o].entry &&
                kvEntry_ValueLen(owners[o].entry) > 0 &&
                cluster_owner_parse(kvEntry_Value(owners[o].entry),
                                    (size_t)kvEntry_ValueLen(owners[o].entry), "owner",
                                    owner) == OMMA_OK)
                lease = kvEntry_Revision(owners[o].entry);
        if (json) {
            fputs(i ? ",{\"id\":" : "{\"id\":", out);
            json_string(out, cams[i].name);
            fputs(",\"source\":", out);
            json_string(out, ok ? cam.source : "");
            fprintf(out, ",\"valid\":%s,\"owner\":", ok ? "true" : "false");
            if (owner[0])
                json_string(out, owner);
            else
                fputs("null", out);
            fprintf(out, ",\"lease\":%llu}", (unsigned long long)lease);
        } else {
            fprintf(out, "  %-20s %-20s %s\n", cams[i].name, owner[0] ? owner : "-",
                    ok ? cam.source : "(invalid: see the node logs)");
        }
    }
    if (json)
        fputs("]}\n", out);
done:
    free_listed(cams, n_cams);
    free_listed(drains, n_drains);
    free_listed(owners, n_owners);
    free_listed(nodes, n_nodes);
    cluster_conn_close(&c);
    cluster_url_free(&u);
    return st;
}

#else /* !OMMA_HAVE_NATS */

static omma_status no_nats(void)
{
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                     "cluster: omma was built without libnats (install libnats-dev and rebuild)");
}

omma_status cluster_add(const char *url, int timeout_ms, const char *id, const cluster_camera *cam)
{
    (void)url, (void)timeout_ms, (void)id, (void)cam;
    return no_nats();
}

omma_status cluster_remove(const char *url, int timeout_ms, const char *id)
{
    (void)url, (void)timeout_ms, (void)id;
    return no_nats();
}

omma_status cluster_drain(const char *url, int timeout_ms, const char *node, int drain)
{
    (void)url, (void)timeout_ms, (void)node, (void)drain;
    return no_nats();
}

omma_status cluster_list(const char *url, int timeout_ms, int json, FILE *out)
{
    (void)url, (void)timeout_ms, (void)json, (void)out;
    return no_nats();
}

#endif
