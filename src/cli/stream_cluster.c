#define _POSIX_C_SOURCE 200809L
/* omma stream --cluster (stream_cluster.h). One runtime for the node
 * (either backend): a claimed camera is added to it, a released one
 * removed (rt_runtime_add_camera, rt_runtime_remove_camera), without
 * touching the others; the models are loaded once (once per GPU).
 * Starting and stopping take time (sources, joining threads, the last
 * frames) that the cluster's thread, which renews the leases, cannot wait
 * for: a thread of ours does them, in the order claimed and released. */
#include "cli/stream_cluster.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cluster/cluster.h"
#include "core/error.h"
#include "io/video_file.h"
#include "metrics/metrics.h"

typedef struct slot {
    cli_cluster_node *cc;
    int index;
    char id[CLUSTER_NAME_MAX];
    char source[CLUSTER_SPEC_MAX];
    rt_camera_config cam;
    int running; /* ours: in the node's runtime (as camera `camera`) */
    int camera;
    uint64_t lease;
    atomic_uint_fast64_t seq;
} slot;

/* A start or stop for the jobs' thread. */
typedef struct job {
    slot *s;
    int start;
    uint64_t lease;
    cluster_camera cam;
    struct job *next;
} job;

struct cli_cluster_node {
    cli_stream_opts *o;
    pthread_t thread;
    int started, stop;
    pthread_cond_t wake;
    job *head, *tail; /* under lock */
    cli_cluster_result_fn fn;
    void *ctx;
    cluster *cl;
    rt_runtime *rt; /* the node's runtime */
    pthread_mutex_t lock; /* slots */
    slot **slots;
    int n_slots, cap_slots;
    atomic_uint_fast64_t fenced; /* results dropped here: the lease had ended */
};

static slot *find_slot(cli_cluster_node *c, const char *id, int add)
{
    slot *s = NULL;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < c->n_slots && !s; i++)
        if (!strcmp(c->slots[i]->id, id))
            s = c->slots[i];
    if (!s && add) {
        if (c->n_slots == c->cap_slots) {
            int cap = c->cap_slots ? c->cap_slots * 2 : 64;
            slot **m = realloc(c->slots, (size_t)cap * sizeof *m);
            if (m) {
                c->slots = m;
                c->cap_slots = cap;
            }
        }
        if (c->n_slots < c->cap_slots && (s = calloc(1, sizeof *s)) != NULL) {
            s->cc = c;
            s->index = c->n_slots;
            snprintf(s->id, sizeof s->id, "%s", id);
            c->slots[c->n_slots++] = s;
        }
    }
    pthread_mutex_unlock(&c->lock);
    return s;
}

static void on_result(void *ctx, const rt_result *r)
{
    (void)ctx;
    slot *s = r->camera_ctx;
    cli_cluster_node *c = s->cc;
    if (!cluster_lease_valid(c->cl, s->id, s->lease)) {
        atomic_fetch_add(&c->fenced, 1);
        return;
    }
    uint64_t seq = atomic_fetch_add(&s->seq, 1) + 1;
    c->fn(c->ctx, r, s->index, s->id, s->source, seq, s->lease);
}

static void on_camera(void *ctx, const rt_camera_event *e)
{
    (void)ctx;
    slot *s = e->camera_ctx;
    char name[512];
    io_video_url_redacted(s->source, name, sizeof name); /* no passwords */
    fprintf(stderr, "omma: camera %s (%s) %s: %s\n", s->id, name,
            e->state == METRICS_CAMERA_FAILED         ? "failed"
            : e->state == METRICS_CAMERA_RECONNECTING ? "reconnecting"
            : e->state == METRICS_CAMERA_RUNNING      ? "running again"
                                                      : "ended",
            e->detail);
}

/* The jobs' thread: adds a camera to the node's runtime under its lease. */
static void start(cli_cluster_node *c, slot *s, const cluster_camera *cam, uint64_t lease)
{
    if (!cluster_lease_valid(c->cl, s->id, lease))
        return; /* released (or lost) while this waited */
    snprintf(s->source, sizeof s->source, "%s", cam->source);
    s->cam.spec = strcmp(cam->source, "synthetic") ? s->source : NULL;
    s->cam.name = s->id;
    s->cam.max_frames = cam->max_frames > 0 ? (long)cam->max_frames : c->o->max_frames;
    s->lease = lease;
    s->cam.ctx = s;
    int camera = -1;
    omma_status st = OMMA_OK;
    if (!s->cam.spec && !c->o->rt.photo)
        st = OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                       "synthetic, and this node has no photo for it (scripts/fetch-testdata.sh)");
    else
        st = rt_runtime_add_camera(c->rt, &s->cam, &camera);
    if (st != OMMA_OK) {
        char name[512];
        io_video_url_redacted(s->source, name, sizeof name);
        fprintf(stderr, "omma: camera %s (%s) did not start: %s; handing it back\n", s->id, name,
                omma_last_error());
        cluster_give_up(c->cl, s->id, lease);
        return;
    }
    pthread_mutex_lock(&c->lock);
    s->camera = camera;
    s->running = 1;
    pthread_mutex_unlock(&c->lock);
}

/* The jobs' thread: the camera's last frames out, its resources freed. */
static void stop(cli_cluster_node *c, slot *s)
{
    pthread_mutex_lock(&c->lock);
    int running = s->running, camera = s->camera;
    pthread_mutex_unlock(&c->lock);
    if (running)
        (void)rt_runtime_remove_camera(c->rt, camera); /* after its last result */
    pthread_mutex_lock(&c->lock);
    s->running = 0;
    s->camera = -1;
    pthread_mutex_unlock(&c->lock);
}

static void *jobs(void *arg)
{
    cli_cluster_node *c = arg;
    pthread_mutex_lock(&c->lock);
    for (;;) {
        while (!c->head && !c->stop)
            pthread_cond_wait(&c->wake, &c->lock);
        job *j = c->head;
        if (!j)
            break; /* stopping, nothing left */
        c->head = j->next;
        if (!c->head)
            c->tail = NULL;
        pthread_mutex_unlock(&c->lock);
        if (j->start)
            start(c, j->s, &j->cam, j->lease);
        else
            stop(c, j->s);
        free(j);
        pthread_mutex_lock(&c->lock);
    }
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

static omma_status queue(cli_cluster_node *c, slot *s, int start_it, const cluster_camera *cam,
                         uint64_t lease)
{
    job *j = calloc(1, sizeof *j);
    if (!j)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "camera %s: out of memory", s->id);
    j->s = s;
    j->start = start_it;
    j->lease = lease;
    if (cam)
        j->cam = *cam;
    pthread_mutex_lock(&c->lock);
    if (c->tail)
        c->tail->next = j;
    else
        c->head = j;
    c->tail = j;
    pthread_cond_signal(&c->wake);
    pthread_mutex_unlock(&c->lock);
    return OMMA_OK;
}

static omma_status on_claim(void *ctx, const char *id, const cluster_camera *cam, uint64_t lease)
{
    cli_cluster_node *c = ctx;
    slot *s = find_slot(c, id, 1);
    if (!s)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "camera %s: out of memory", id);
    return queue(c, s, 1, cam, lease);
}

static void on_release(void *ctx, const char *id, int lost)
{
    (void)lost;
    cli_cluster_node *c = ctx;
    slot *s = find_slot(c, id, 0);
    if (!s)
        return;
    /* Every camera released starts stopping now (its threads end while the
     * jobs' thread removes those before it); under the lock, which the
     * jobs' thread holds to read the camera's index before removing it. */
    pthread_mutex_lock(&c->lock);
    if (s->running) /* its frames out of the batches from now */
        rt_runtime_interrupt_camera(c->rt, s->camera);
    pthread_mutex_unlock(&c->lock);
    if (queue(c, s, 0, NULL, 0) != OMMA_OK) /* no memory: stop it here */
        stop(c, s);
}

int cli_cluster_start(cli_stream_opts *o, cli_cluster_result_fn fn, void *ctx,
                      cli_cluster_node **out)
{
    *out = NULL;
    cli_cluster_node *c = calloc(1, sizeof *c);
    if (!c)
        return cli_fail(OMMA_ERR_OUT_OF_MEMORY, "--cluster");
    c->o = o;
    c->fn = fn;
    c->ctx = ctx;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->wake, NULL);
    if (pthread_create(&c->thread, NULL, jobs, c) != 0) {
        pthread_cond_destroy(&c->wake);
        pthread_mutex_destroy(&c->lock);
        free(c);
        return cli_fail(OMMA_ERR_OUT_OF_MEMORY, "--cluster: a thread");
    }
    c->started = 1;
    /* The node's runtime: room for its weight in cameras (or as many as
     * the metrics hold), models loaded once (per GPU), running until
     * left. */
    rt_runtime_config node_cfg = o->rt;
    node_cfg.n_cameras = 0;
    node_cfg.cameras = NULL;
    node_cfg.max_cameras = o->cluster_weight > 0 && o->cluster_weight < METRICS_MAX_CAMERAS
                               ? (int)o->cluster_weight
                               : METRICS_MAX_CAMERAS;
    if (node_cfg.max_cameras > OMMA_PIPELINE_MAX_CAMERAS)
        node_cfg.max_cameras = OMMA_PIPELINE_MAX_CAMERAS;
    node_cfg.preview = NULL;
    node_cfg.on_result = on_result;
    node_cfg.on_camera = on_camera;
    node_cfg.ctx = c;
    omma_status rs = rt_runtime_start(&node_cfg, &c->rt);
    if (rs != OMMA_OK) {
        int code = cli_fail(rs, "--cluster: the node's runtime");
        cli_cluster_free(c);
        return code;
    }
    cluster_config cfg = {.url = o->cluster,
                          .node = o->node,
                          .weight = o->cluster_weight,
                          .on_claim = on_claim,
                          .on_release = on_release,
                          .ctx = c};
    /* Claims wait on the lock (on_claim) until c->cl is there. */
    pthread_mutex_lock(&c->lock);
    omma_status st = cluster_open(&cfg, &c->cl);
    pthread_mutex_unlock(&c->lock);
    if (st != OMMA_OK) {
        int rc = cli_fail(st, "--cluster");
        cli_cluster_free(c);
        return rc;
    }
    *out = c;
    return -1;
}

void cli_cluster_leave(cli_cluster_node *c)
{
    if (c->cl)
        cluster_leave(c->cl); /* releases every camera: their stops queued */
    if (c->started) {
        pthread_mutex_lock(&c->lock);
        c->stop = 1;
        pthread_cond_signal(&c->wake);
        pthread_mutex_unlock(&c->lock);
        pthread_join(c->thread, NULL); /* after the jobs queued */
        c->started = 0;
    }
    rt_runtime_destroy(c->rt); /* every camera removed by the jobs */
    c->rt = NULL;
}

void cli_cluster_free(cli_cluster_node *c)
{
    if (!c)
        return;
    cli_cluster_leave(c);
    for (int i = 0; i < c->n_slots; i++)
        free(c->slots[i]);
    cluster_close(c->cl); /* no runtime or sink asks it any more */
    free(c->slots);
    pthread_cond_destroy(&c->wake);
    pthread_mutex_destroy(&c->lock);
    free(c);
}

int cli_cluster_fence(void *ctx, const char *camera, uint64_t lease)
{
    cli_cluster_node *c = ctx;
    return cluster_lease_valid(c->cl, camera, lease);
}

void cli_cluster_status(cli_cluster_node *c, FILE *to)
{
    cluster_stats st;
    cluster_get_stats(c->cl, &st);
    fprintf(to,
            "{\"cluster\":{\"node\":\"%s\",\"connected\":%s,\"draining\":%s,\"cameras\":%d,"
            "\"owned\":%d,\"share\":%d,\"nodes\":%d,\"claims\":%llu,\"releases\":%llu,"
            "\"lost\":%llu,\"fenced\":%llu,\"owned_ids\":[",
            c->o->node, st.connected ? "true" : "false", st.draining ? "true" : "false",
            st.cameras_known, st.cameras_owned, st.share, st.nodes_alive,
            (unsigned long long)st.claims, (unsigned long long)st.releases,
            (unsigned long long)st.lost, (unsigned long long)atomic_load(&c->fenced));
    pthread_mutex_lock(&c->lock);
    for (int i = 0, k = 0; i < c->n_slots; i++)
        if (c->slots[i]->running)
            fprintf(to, "%s\"%s\"", k++ ? "," : "", c->slots[i]->id);
    pthread_mutex_unlock(&c->lock);
    fputs("]}}\n", to);
    fflush(to);
}
