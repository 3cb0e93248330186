#define _POSIX_C_SOURCE 200809L
/* A cluster node (cluster.h): one thread watching both buckets, keeping
 * its heartbeat and leases, claiming and handing over cameras. */
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cluster/cluster_private.h"
#include "core/clock.h"
#include "core/error.h"

#if OMMA_HAVE_NATS

#define TICK_MS 50
#define CLAIMS_PER_TICK 2

typedef struct cam_entry {
    char id[CLUSTER_NAME_MAX];
    int defined; /* cam.ID holds a valid camera */
    cluster_camera def;
    uint64_t def_rev;
    /* own.ID as last seen */
    int own_present; /* the key holds a value (maybe empty: free) */
    char owner[CLUSTER_NAME_MAX]; /* "" when free */
    uint64_t own_rev, own_seen_ns;
    /* This node's lease. */
    int mine, running;
    int give_up; /* cluster_give_up: hand it back (under the lock) */
    uint64_t token, rev; /* the revision when claimed; the one to update */
    uint64_t renewed_ns; /* when the last renewal that succeeded was sent */
    uint64_t retry_ns; /* not before: after a camera that failed to start */
} cam_entry;

typedef struct node_entry {
    char name[CLUSTER_NAME_MAX];
    cluster_node_info info;
    uint64_t seen_ns;
    int drain_key; /* drain.NAME in the cameras' bucket */
} node_entry;

struct cluster {
    cluster_config cfg;
    char node[CLUSTER_NAME_MAX];
    cluster_url url;
    cluster_conn conn;
    kvWatcher *wcams, *wleases;
    atomic_int stop;
    pthread_t thread;
    int started;
    FILE *log;
    uint64_t lease_ns, margin_ns, period_ns;
    uint64_t next_beat_ns, next_rebalance_ns;
    pthread_mutex_t lock; /* cams (for cluster_lease_valid), stats */
    cam_entry *cams;
    int n_cams, cap_cams;
    node_entry *nodes;
    int n_nodes, cap_nodes;
    int draining, share, alive;
    uint64_t claims, releases, lost;
};

static void logf_(cluster *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A line on the log, without the " at src/FILE.c:LINE" of the errors it
 * quotes (as the command's messages). */
static void logf_(cluster *c, const char *fmt, ...)
{
    char line[1536];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    for (char *at; (at = strstr(line, " at src/")) != NULL;) {
        char *end = at + 8;
        while (*end && *end != ':')
            end++;
        while (*end == ':' || (*end >= '0' && *end <= '9'))
            end++;
        memmove(at, end, strlen(end) + 1);
    }
    fprintf(c->log, "omma cluster %s: %s\n", c->node, line);
    fflush(c->log);
}

static cam_entry *find_cam(cluster *c, const char *id, int add)
{
    for (int i = 0; i < c->n_cams; i++)
        if (!strcmp(c->cams[i].id, id))
            return &c->cams[i];
    if (!add)
        return NULL;
    cam_entry *e = NULL;
    pthread_mutex_lock(&c->lock); /* cluster_lease_valid reads the array */
    if (c->n_cams == c->cap_cams) {
        int cap = c->cap_cams ? c->cap_cams * 2 : 64;
        cam_entry *m = realloc(c->cams, (size_t)cap * sizeof *m);
        if (m) {
            c->cams = m;
            c->cap_cams = cap;
        }
    }
    if (c->n_cams < c->cap_cams) {
        e = &c->cams[c->n_cams++];
        memset(e, 0, sizeof *e);
        snprintf(e->id, sizeof e->id, "%s", id);
    }
    pthread_mutex_unlock(&c->lock);
    return e;
}

static node_entry *find_node(cluster *c, const char *name, int add)
{
    for (int i = 0; i < c->n_nodes; i++)
        if (!strcmp(c->nodes[i].name, name))
            return &c->nodes[i];
    if (!add)
        return NULL;
    if (c->n_nodes == c->cap_nodes) {
        int cap = c->cap_nodes ? c->cap_nodes * 2 : 16;
        node_entry *m = realloc(c->nodes, (size_t)cap * sizeof *m);
        if (!m)
            return NULL;
        c->nodes = m;
        c->cap_nodes = cap;
    }
    node_entry *e = &c->nodes[c->n_nodes++];
    memset(e, 0, sizeof *e);
    snprintf(e->name, sizeof e->name, "%s", name);
    return e;
}

/* The key's name after PREFIX if it is a valid name. */
static const char *suffix(const char *key, const char *prefix)
{
    size_t n = strlen(prefix);
    if (strncmp(key, prefix, n) != 0 || !cluster_name_valid(key + n))
        return NULL;
    return key + n;
}

/* This node's lease on e ended without its consent. */
static void lose(cluster *c, cam_entry *e, const char *why)
{
    pthread_mutex_lock(&c->lock);
    int running = e->running;
    e->mine = e->running = 0;
    c->lost++;
    pthread_mutex_unlock(&c->lock);
    logf_(c, "lost camera %s: %s", e->id, why);
    if (running)
        c->cfg.on_release(c->cfg.ctx, e->id, 1);
}

static void on_cams_entry(cluster *c, kvEntry *en)
{
    const char *key = kvEntry_Key(en), *id;
    int put = kvEntry_Operation(en) == kvOp_Put;
    if ((id = suffix(key, "cam.")) != NULL) {
        cam_entry *e = find_cam(c, id, put);
        if (!e)
            return;
        if (!put) {
            e->defined = 0;
            return;
        }
        char what[CLUSTER_NAME_MAX + 64];
        snprintf(what, sizeof what, "bucket %s key %s", c->url.bucket, key);
        cluster_camera cam;
        if (cluster_camera_parse(kvEntry_Value(en), (size_t)kvEntry_ValueLen(en), what, &cam) !=
            OMMA_OK) {
            logf_(c, "camera %s ignored: %s", id, omma_last_error());
            e->defined = 0;
            return;
        }
        e->def = cam;
        e->def_rev = kvEntry_Revision(en);
        e->defined = 1;
    } else if ((id = suffix(key, "drain.")) != NULL) {
        node_entry *n = find_node(c, id, put);
        if (n)
            n->drain_key = put;
        if (!strcmp(id, c->node) && put != c->draining) {
            c->draining = put;
            logf_(c, "%s", put ? "draining: handing every camera over" : "drain ended");
        }
    }
}

static void on_leases_entry(cluster *c, kvEntry *en)
{
    const char *key = kvEntry_Key(en), *id;
    int put = kvEntry_Operation(en) == kvOp_Put;
    uint64_t now = core_now_ns();
    char what[CLUSTER_NAME_MAX + 64];
    snprintf(what, sizeof what, "bucket %s key %s", c->url.leases, key);
    if ((id = suffix(key, "node.")) != NULL) {
        node_entry *n = find_node(c, id, put);
        if (!n)
            return;
        if (!put) {
            n->seen_ns = 0;
            return;
        }
        if (cluster_node_parse(kvEntry_Value(en), (size_t)kvEntry_ValueLen(en), what, &n->info) !=
            OMMA_OK) {
            logf_(c, "node %s's heartbeat ignored: %s", id, omma_last_error());
            return;
        }
        n->seen_ns = now;
    } else if ((id = suffix(key, "own.")) != NULL) {
        cam_entry *e = find_cam(c, id, put);
        if (!e)
            return;
        char owner[CLUSTER_NAME_MAX] = "";
        if (put && kvEntry_ValueLen(en) > 0 &&
            cluster_owner_parse(kvEntry_Value(en), (size_t)kvEntry_ValueLen(en), what, owner) !=
                OMMA_OK)
            logf_(c, "owner of %s unreadable (taken as free): %s", id, omma_last_error());
        e->own_present = put;
        if (kvEntry_Revision(en) != e->own_rev) /* the same revision read again: no sign of life */
            e->own_seen_ns = now;
        e->own_rev = kvEntry_Revision(en);
        snprintf(e->owner, sizeof e->owner, "%s", put ? owner : "");
        /* A newer revision that is not ours: the lease is gone. */
        if (e->mine && e->own_rev > e->rev && strcmp(e->owner, c->node) != 0)
            lose(c, e, "another node wrote its owner key");
    }
}

/* Reads what the watchers have; makes them first. They live as long as
 * the connection: libnats' ordered consumers resume by themselves after a
 * reconnection (destroying one then races libnats' own reset of it), and
 * what a watcher could miss meanwhile the claims read again (claim). */
static void watch(cluster *c)
{
    if (!c->wcams || !c->wleases) {
        kvWatcher_Destroy(c->wcams);
        c->wcams = NULL;
        kvWatchOptions wo;
        kvWatchOptions_Init(&wo);
        wo.Timeout = 2000;
        natsStatus s = kvStore_WatchAll(&c->wcams, c->conn.cams, &wo);
        if (s == NATS_OK)
            s = kvStore_WatchAll(&c->wleases, c->conn.leases, &wo);
        if (s != NATS_OK) {
            kvWatcher_Destroy(c->wcams);
            c->wcams = NULL;
            logf_(c, "watching the buckets: %s (trying again)", natsStatus_GetText(s));
            return;
        }
    }
    for (int w = 0; w < 2; w++) {
        kvWatcher *wt = w ? c->wleases : c->wcams;
        for (int i = 0; i < 10000; i++) {
            kvEntry *en = NULL;
            natsStatus s = kvWatcher_Next(&en, wt, 1);
            if (s != NATS_OK)
                break;
            if (!en)
                continue; /* the end of the initial values */
            if (w)
                on_leases_entry(c, en);
            else
                on_cams_entry(c, en);
            kvEntry_Destroy(en);
        }
    }
}

static void own_key(const cam_entry *e, char *key, size_t cap)
{
    snprintf(key, cap, "own.%s", e->id);
}

/* Hands e over: stops it, then frees the owner key (compare-and-set: only
 * while it is still ours) so that another node claims it at once. */
static void release(cluster *c, cam_entry *e, const char *why)
{
    pthread_mutex_lock(&c->lock);
    int running = e->running;
    e->mine = e->running = 0;
    c->releases++;
    pthread_mutex_unlock(&c->lock);
    if (running)
        c->cfg.on_release(c->cfg.ctx, e->id, 0);
    char key[CLUSTER_NAME_MAX + 8];
    own_key(e, key, sizeof key);
    uint64_t rev = 0;
    natsStatus s = kvStore_Update(&rev, c->conn.leases, key, "", 0, e->rev);
    logf_(c, "handed camera %s over (%s)%s%s", e->id, why,
          s == NATS_OK ? "" : "; freeing it: ", s == NATS_OK ? "" : natsStatus_GetText(s));
}

static int alive(const cluster *c, const node_entry *n, uint64_t now)
{
    return n->seen_ns && now - n->seen_ns < c->lease_ns;
}

/* The cameras this node takes: the defined cameras split over the live,
 * undrained nodes by weight (rounded up), at most its weight. */
static int compute_share(cluster *c, uint64_t now, int defined)
{
    if (c->draining)
        return 0;
    double total = 0, mine = c->cfg.weight > 0 ? (double)c->cfg.weight : 1.0;
    int n_alive = 0;
    for (int i = 0; i < c->n_nodes; i++) {
        const node_entry *n = &c->nodes[i];
        if (!strcmp(n->name, c->node))
            continue;
        if (!alive(c, n, now) || n->info.draining || n->drain_key)
            continue;
        total += n->info.weight > 0 ? (double)n->info.weight : 1.0;
        n_alive++;
    }
    c->alive = n_alive + 1;
    total += mine;
    double share = (double)defined * mine / total;
    int s = (int)share;
    if ((double)s < share)
        s++;
    if (c->cfg.weight > 0 && s > c->cfg.weight)
        s = (int)c->cfg.weight;
    return s;
}

static void heartbeat(cluster *c, int owned)
{
    cluster_node_info info = {c->cfg.weight, owned, c->draining};
    char value[128], key[CLUSTER_NAME_MAX + 8];
    int n = cluster_node_format(&info, value, sizeof value);
    snprintf(key, sizeof key, "node.%s", c->node);
    natsStatus s = kvStore_Put(NULL, c->conn.leases, key, value, n);
    if (s != NATS_OK)
        logf_(c, "heartbeat: %s", natsStatus_GetText(s));
}

/* Renews every lease held (one round trip each; the send time is what
 * the lease is counted from). */
static void renew(cluster *c)
{
    char value[CLUSTER_NAME_MAX + 8], key[CLUSTER_NAME_MAX + 8];
    int n = cluster_owner_format(c->node, value, sizeof value);
    for (int i = 0; i < c->n_cams; i++) {
        cam_entry *e = &c->cams[i];
        if (!e->mine)
            continue;
        own_key(e, key, sizeof key);
        uint64_t sent = core_now_ns(), rev = 0;
        natsStatus s = kvStore_Update(&rev, c->conn.leases, key, value, n, e->rev);
        if (s == NATS_OK) {
            pthread_mutex_lock(&c->lock);
            e->rev = rev;
            e->renewed_ns = sent;
            pthread_mutex_unlock(&c->lock);
        } else if (s == NATS_ERR) { /* the server refused: someone else's revision */
            natsStatus last;
            const char *text = nats_GetLastError(&last);
            char why[256];
            snprintf(why, sizeof why, "renewal refused: %s", text ? text : natsStatus_GetText(s));
            lose(c, e, why);
        }
    }
}

static uint64_t claim_ns(cluster *c)
{
    return c->lease_ns + c->period_ns; /* an owner silent that long: its key has expired */
}

static int claimable(cluster *c, const cam_entry *e, uint64_t now)
{
    if (!e->defined || e->mine || now < e->retry_ns)
        return 0;
    if (!e->own_present || !e->owner[0] || !strcmp(e->owner, c->node))
        return 1; /* free, or this node's from before (a restart, a lease lost here) */
    return now - e->own_seen_ns > claim_ns(c);
}

static void claim(cluster *c, cam_entry *e, uint64_t now)
{
    char value[CLUSTER_NAME_MAX + 8], key[CLUSTER_NAME_MAX + 8];
    int n = cluster_owner_format(c->node, value, sizeof value);
    own_key(e, key, sizeof key);
    uint64_t sent = core_now_ns(), rev = 0;
    natsStatus s;
    if (e->own_present && (!e->owner[0] || !strcmp(e->owner, c->node)))
        s = kvStore_Update(&rev, c->conn.leases, key, value, n, e->own_rev);
    else
        s = kvStore_Create(&rev, c->conn.leases, key, value, n);
    if (s != NATS_OK) {
        /* Someone was first, the key has not expired yet, or it was freed
         * and the watcher has not said so yet: read it. */
        kvEntry *en = NULL;
        if (kvStore_Get(&en, c->conn.leases, key) == NATS_OK) {
            on_leases_entry(c, en);
            kvEntry_Destroy(en);
            if (e->own_present && (!e->owner[0] || !strcmp(e->owner, c->node))) {
                sent = core_now_ns();
                s = kvStore_Update(&rev, c->conn.leases, key, value, n, e->own_rev);
            }
        }
    }
    if (s != NATS_OK) {
        e->retry_ns = now + 4 * TICK_MS * 1000000ull;
        return;
    }
    pthread_mutex_lock(&c->lock);
    e->mine = 1;
    e->token = e->rev = rev;
    e->renewed_ns = sent;
    c->claims++;
    pthread_mutex_unlock(&c->lock);
    cluster_camera def = e->def;
    char id[CLUSTER_NAME_MAX];
    snprintf(id, sizeof id, "%s", e->id);
    omma_status st = c->cfg.on_claim(c->cfg.ctx, id, &def, rev);
    if (st != OMMA_OK) {
        logf_(c, "camera %s (%s) did not start: %s; handing it back", id, def.source,
              omma_last_error());
        release(c, e, "failed to start");
        e->retry_ns = core_now_ns() + 5000000000u;
        return;
    }
    pthread_mutex_lock(&c->lock);
    e->running = 1;
    pthread_mutex_unlock(&c->lock);
    logf_(c, "claimed camera %s (%s), lease %llu", id, def.source, (unsigned long long)rev);
}

static void step(cluster *c)
{
    watch(c);
    uint64_t now = core_now_ns();
    for (int i = 0; i < c->n_cams; i++) {
        cam_entry *e = &c->cams[i];
        pthread_mutex_lock(&c->lock);
        int give_up = e->give_up;
        e->give_up = 0;
        pthread_mutex_unlock(&c->lock);
        if (give_up && e->mine) {
            release(c, e, "it did not start");
            e->retry_ns = now + 5000000000u;
        }
    }
    int connected = natsConnection_Status(c->conn.nc) == NATS_CONN_STATUS_CONNECTED;
    if (connected && now >= c->next_beat_ns) {
        renew(c);
        int held = 0;
        for (int i = 0; i < c->n_cams; i++)
            held += c->cams[i].mine;
        heartbeat(c, held);
        now = core_now_ns();
        c->next_beat_ns = now + c->period_ns;
    }
    int owned = 0, defined = 0;
    for (int i = 0; i < c->n_cams; i++) {
        cam_entry *e = &c->cams[i];
        if (e->mine && now > e->renewed_ns + c->lease_ns - c->margin_ns)
            lose(c, e, "no renewal came through in time (disconnected?)");
        if (e->mine && !e->defined)
            release(c, e, "removed from the bucket");
        if (e->mine && c->draining)
            release(c, e, "draining");
        owned += e->mine;
        defined += e->defined;
    }
    int share = compute_share(c, now, defined);
    pthread_mutex_lock(&c->lock);
    c->share = share;
    pthread_mutex_unlock(&c->lock);
    if (connected && owned > share && now >= c->next_rebalance_ns) {
        for (int i = c->n_cams - 1; i >= 0; i--)
            if (c->cams[i].mine) {
                release(c, &c->cams[i], "rebalancing");
                owned--;
                break;
            }
        c->next_rebalance_ns = now + c->period_ns;
    }
    for (int i = 0, made = 0; connected && i < c->n_cams && owned < share && made < CLAIMS_PER_TICK;
         i++) {
        cam_entry *e = &c->cams[i];
        if (!claimable(c, e, now))
            continue;
        claim(c, e, now);
        made++;
        owned += e->mine;
    }
}

static void *run(void *arg)
{
    cluster *c = arg;
    while (!atomic_load(&c->stop)) {
        step(c);
        struct timespec ts = {0, TICK_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < c->n_cams; i++)
        if (c->cams[i].mine)
            release(c, &c->cams[i], "stopping");
    char key[CLUSTER_NAME_MAX + 8];
    snprintf(key, sizeof key, "node.%s", c->node);
    (void)kvStore_Delete(c->conn.leases, key);
    return NULL;
}

omma_status cluster_open(const cluster_config *cfg, cluster **out)
{
    *out = NULL;
    cluster *c = calloc(1, sizeof *c);
    if (!c)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "cluster: out of memory");
    c->cfg = *cfg;
    c->log = cfg->log ? cfg->log : stderr;
    pthread_mutex_init(&c->lock, NULL);
    omma_status st = cluster_url_parse(cfg->url, &c->url);
    if (st != OMMA_OK) {
        pthread_mutex_destroy(&c->lock);
        free(c);
        return st;
    }
    if (!cfg->node || !cluster_name_valid(cfg->node)) {
        st = OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                       "cluster %s: the node name '%.80s' is not a name (1..%d of A-Z a-z 0-9 _ "
                       "-; --node NAME)",
                       c->url.shown, cfg->node ? cfg->node : "", CLUSTER_NAME_MAX - 1);
        goto fail;
    }
    if (!cfg->on_claim || !cfg->on_release || cfg->weight < 0) {
        st = OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cluster %s: no callbacks, or a negative weight",
                       c->url.shown);
        goto fail;
    }
    snprintf(c->node, sizeof c->node, "%s", cfg->node);
    c->lease_ns = (uint64_t)c->url.lease_ms * 1000000u;
    c->period_ns = c->lease_ns / 4; /* a lease outlives two renewals missed */
    c->margin_ns = c->lease_ns / 10;
    /* A request that hangs must not outlive the leases it renews. */
    st = cluster_conn_open(&c->url, cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : 5000,
                           (int)(c->url.lease_ms / 4), 1, 1, NULL, NULL, &c->conn);
    if (st != OMMA_OK)
        goto fail;
    if (pthread_create(&c->thread, NULL, run, c) != 0) {
        st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "cluster %s: cannot start its thread", c->url.shown);
        goto fail;
    }
    c->started = 1;
    logf_(c, "joined %s (bucket %s, leases of %ld ms, weight %ld)", c->url.shown, c->url.bucket,
          c->url.lease_ms, cfg->weight);
    *out = c;
    return OMMA_OK;
fail:
    cluster_close(c);
    return st;
}

void cluster_leave(cluster *c)
{
    if (c->started) {
        atomic_store(&c->stop, 1);
        pthread_join(c->thread, NULL);
        c->started = 0;
    }
}

void cluster_close(cluster *c)
{
    if (!c)
        return;
    cluster_leave(c);
    kvWatcher_Destroy(c->wcams);
    kvWatcher_Destroy(c->wleases);
    cluster_conn_close(&c->conn);
    cluster_url_free(&c->url);
    free(c->cams);
    free(c->nodes);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

void cluster_give_up(cluster *c, const char *id, uint64_t lease)
{
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->n_cams; i++)
        if (!strcmp(c->cams[i].id, id) && c->cams[i].mine && c->cams[i].token == lease)
            c->cams[i].give_up = 1;
    pthread_mutex_unlock(&c->lock);
}

int cluster_lease_valid(cluster *c, const char *id, uint64_t lease)
{
    uint64_t now = core_now_ns();
    int ok = 0;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->n_cams; i++) {
        const cam_entry *e = &c->cams[i];
        if (strcmp(e->id, id) != 0)
            continue;
        ok = e->mine && e->token == lease && now < e->renewed_ns + c->lease_ns - c->margin_ns;
        break;
    }
    pthread_mutex_unlock(&c->lock);
    return ok;
}

void cluster_get_stats(cluster *c, cluster_stats *out)
{
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->n_cams; i++) {
        out->cameras_known += c->cams[i].defined;
        out->cameras_owned += c->cams[i].mine;
    }
    out->nodes_alive = c->alive;
    out->share = c->share;
    out->draining = c->draining;
    out->claims = c->claims;
    out->releases = c->releases;
    out->lost = c->lost;
    pthread_mutex_unlock(&c->lock);
    out->connected = natsConnection_Status(c->conn.nc) == NATS_CONN_STATUS_CONNECTED;
}

#else /* !OMMA_HAVE_NATS */

omma_status cluster_open(const cluster_config *cfg, cluster **out)
{
    (void)cfg;
    *out = NULL;
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                     "cluster: omma was built without libnats (install libnats-dev and rebuild)");
}

void cluster_leave(cluster *c)
{
    (void)c;
}

void cluster_close(cluster *c)
{
    (void)c;
}

void cluster_give_up(cluster *c, const char *id, uint64_t lease)
{
    (void)c;
    (void)id;
    (void)lease;
}

int cluster_lease_valid(cluster *c, const char *id, uint64_t lease)
{
    (void)c;
    (void)id;
    (void)lease;
    return 0;
}

void cluster_get_stats(cluster *c, cluster_stats *out)
{
    (void)c;
    memset(out, 0, sizeof *out);
}

#endif
