#define _POSIX_C_SOURCE 200809L /* clock_gettime(CLOCK_REALTIME) */
/* The metrics registry: per-camera and per-GPU slots published through
 * atomic pointers, counters and histogram buckets as relaxed atomics (a
 * report needs each number exact, not a cross-counter instant), and a short
 * history of counters kept by the snapshots for the rates. */
#include "metrics/metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"

/* Snapshots push a history entry at most every window/4; 16 entries keep
 * about four windows when snapshots come often, and longer spans when not. */
#define HISTORY 16

typedef struct hist_atomic {
    _Atomic uint64_t buckets[METRICS_BUCKETS];
    _Atomic uint64_t sum_ns;
} hist_atomic;

typedef struct camera {
    /* Written by the update path. */
    _Atomic uint64_t frames_in, frames_processed, frames_dropped;
    _Atomic uint64_t damaged_frames, dropped_packets, reconnects;
    _Atomic int state, gpu, attempt, stream_clock;
    hist_atomic latency;
    /* Set at registration. */
    int index;
    char name[METRICS_NAME_MAX];
    /* Under the registry's lock: counters at history entries seq >= first_seq. */
    uint64_t first_seq;
    uint64_t h_in[HISTORY], h_processed[HISTORY];
    char error[METRICS_ERROR_MAX]; /* the link's last error */
    char decoder[METRICS_ERROR_MAX]; /* how its video is decoded */
} camera;

typedef struct gpu {
    int index;
    char name[METRICS_NAME_MAX];
    pthread_mutex_t lock; /* guards reading */
    omma_device_metrics reading;
    hist_atomic stages[METRICS_MAX_STAGES];
} gpu;

struct metrics_registry {
    uint64_t le_ns[METRICS_BOUNDS];
    int n_stages;
    char stage_names[METRICS_MAX_STAGES][METRICS_STAGE_NAME_MAX];
    uint64_t window_ns;
    uint64_t created_ns;
    _Atomic(camera *) cameras[METRICS_MAX_CAMERAS];
    _Atomic(gpu *) gpus[METRICS_MAX_GPUS];

    pthread_mutex_t lock; /* registration, snapshots, the history below */
    int n_cameras, n_gpus;
    uint64_t h_next; /* entries pushed so far; entry seq lives at seq % HISTORY */
    uint64_t h_t[HISTORY], h_cpu[HISTORY], h_frames[HISTORY];
    uint64_t last_now_ns;
    int n_sinks;
    metrics_sink_reader sink_read[METRICS_MAX_SINKS];
    void *sink_ctx[METRICS_MAX_SINKS];
};

/* ---- Buckets ------------------------------------------------------------ */

uint64_t metrics_bucket_le_ns(int k)
{
    if (k < 0)
        k = 0;
    if (k >= METRICS_BOUNDS)
        k = METRICS_BOUNDS - 1;
    return (uint64_t)llround(1000.0 * pow(10.0, (double)k / METRICS_BUCKETS_PER_DECADE));
}

/* The first bucket whose bound is >= v (METRICS_BOUNDS above 10 s). */
static int bucket_of(const uint64_t *le, uint64_t v)
{
    int lo = 0, hi = METRICS_BOUNDS;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (le[mid] >= v)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

static void hist_add(const metrics_registry *m, hist_atomic *h, uint64_t v)
{
    atomic_fetch_add_explicit(&h->buckets[bucket_of(m->le_ns, v)], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_ns, v, memory_order_relaxed);
}

static void hist_read(hist_atomic *h, metrics_hist *out)
{
    out->sum_ns = atomic_load_explicit(&h->sum_ns, memory_order_relaxed);
    out->count = 0;
    for (int k = 0; k < METRICS_BUCKETS; k++) {
        out->buckets[k] = atomic_load_explicit(&h->buckets[k], memory_order_relaxed);
        out->count += out->buckets[k];
    }
}

double metrics_hist_quantile_ns(const metrics_hist *h, double q)
{
    if (!h || h->count == 0 || !(q >= 0.0 && q <= 1.0))
        return NAN;
    uint64_t rank = (uint64_t)ceil(q * (double)h->count);
    if (rank < 1)
        rank = 1;
    if (rank > h->count)
        rank = h->count;
    uint64_t seen = 0;
    int k = 0;
    for (; k < METRICS_BUCKETS - 1; k++) {
        seen += h->buckets[k];
        if (seen >= rank)
            break;
    }
    if (k == 0)
        return (double)metrics_bucket_le_ns(0);
    if (k >= METRICS_BOUNDS)
        return (double)metrics_bucket_le_ns(METRICS_BOUNDS - 1);
    return sqrt((double)metrics_bucket_le_ns(k - 1) * (double)metrics_bucket_le_ns(k));
}

/* ---- Registration ------------------------------------------------------- */

const char *metrics_camera_state_str(metrics_camera_state state)
{
    switch (state) {
    case METRICS_CAMERA_RUNNING:
        return "running";
    case METRICS_CAMERA_ENDED:
        return "ended";
    case METRICS_CAMERA_FAILED:
        return "failed";
    case METRICS_CAMERA_RECONNECTING:
        return "reconnecting";
    }
    return "unknown";
}

/* Strict UTF-8: no overlong forms, surrogates or code points past U+10FFFF. */
static int utf8_valid(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    while (*s) {
        unsigned c = *s;
        int n;
        unsigned min;
        if (c < 0x80) {
            s++;
            continue;
        } else if ((c & 0xE0) == 0xC0) {
            n = 1, min = 0x80, c &= 0x1F;
        } else if ((c & 0xF0) == 0xE0) {
            n = 2, min = 0x800, c &= 0x0F;
        } else if ((c & 0xF8) == 0xF0) {
            n = 3, min = 0x10000, c &= 0x07;
        } else {
            return 0;
        }
        for (int i = 1; i <= n; i++) {
            if ((s[i] & 0xC0) != 0x80)
                return 0;
            c = (c << 6) | (s[i] & 0x3F);
        }
        if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
            return 0;
        s += n + 1;
    }
    return 1;
}

static omma_status check_name(const char *what, const char *name, size_t max)
{
    size_t n = strlen(name);
    if (n == 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s name is empty", what);
    if (n >= max)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s name \"%.40s...\" is %zu bytes, over %zu", what,
                         name, n, max - 1);
    if (!utf8_valid(name))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s name is not valid UTF-8", what);
    return OMMA_OK;
}

omma_status metrics_create(const metrics_config *config, metrics_registry **out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "metrics_create: NULL out");
    *out = NULL;
    metrics_config none = {0};
    if (!config)
        config = &none;
    if (config->n_stages < 0 || config->n_stages > METRICS_MAX_STAGES)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "metrics_create: %d stages (0..%d)",
                         config->n_stages, METRICS_MAX_STAGES);
    if (config->n_stages > 0 && !config->stage_names)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "metrics_create: NULL stage_names");
    for (int i = 0; i < config->n_stages; i++) {
        const char *s = config->stage_names[i];
        if (!s)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "metrics_create: stage %d has no name", i);
        OMMA_TRY(check_name("stage", s, METRICS_STAGE_NAME_MAX));
        for (int j = 0; j < i; j++)
            if (strcmp(config->stage_names[j], s) == 0)
                return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "metrics_create: stage \"%s\" twice", s);
    }

    metrics_registry *m = calloc(1, sizeof *m);
    if (!m)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "metrics_create: %zu bytes", sizeof *m);
    if (pthread_mutex_init(&m->lock, NULL) != 0) {
        free(m);
        return OMMA_FAIL(OMMA_ERR_INTERNAL, "metrics_create: pthread_mutex_init failed");
    }
    for (int k = 0; k < METRICS_BOUNDS; k++)
        m->le_ns[k] = metrics_bucket_le_ns(k);
    m->n_stages = config->n_stages;
    for (int i = 0; i < m->n_stages; i++)
        snprintf(m->stage_names[i], sizeof m->stage_names[i], "%s", config->stage_names[i]);
    m->window_ns = config->rate_window_ns ? config->rate_window_ns : 1000000000ull;
    m->created_ns = core_now_ns();
    for (int i = 0; i < METRICS_MAX_CAMERAS; i++)
        atomic_init(&m->cameras[i], NULL);
    for (int i = 0; i < METRICS_MAX_GPUS; i++)
        atomic_init(&m->gpus[i], NULL);
    *out = m;
    return OMMA_OK;
}

void metrics_destroy(metrics_registry *m)
{
    if (!m)
        return;
    for (int i = 0; i < METRICS_MAX_CAMERAS; i++)
        free(atomic_load_explicit(&m->cameras[i], memory_order_relaxed));
    for (int i = 0; i < METRICS_MAX_GPUS; i++) {
        gpu *g = atomic_load_explicit(&m->gpus[i], memory_order_relaxed);
        if (g) {
            pthread_mutex_destroy(&g->lock);
            free(g);
        }
    }
    pthread_mutex_destroy(&m->lock);
    free(m);
}

omma_status metrics_add_camera(metrics_registry *m, int index, const char *name, int gpu_index)
{
    if (!m)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "metrics_add_camera: NULL registry");
    if (index < 0 || index >= METRICS_MAX_CAMERAS)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "camera index %d out of range 0..%d", index,
                         METRICS_MAX_CAMERAS - 1);
    char fallback[16];
    if (!name) {
        snprintf(fallback, sizeof fallback, "cam%d", index);
        name = fallback;
    }
    OMMA_TRY(check_name("camera", name, METRICS_NAME_MAX));

    camera *c = calloc(1, sizeof *c);
    if (!c)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "camera %d metrics: %zu bytes", index, sizeof *c);
    c->index = index;
    snprintf(c->name, sizeof c->name, "%s", name);
    atomic_init(&c->state, METRICS_CAMERA_RUNNING);
    atomic_init(&c->gpu, gpu_index < 0 ? -1 : gpu_index);

    pthread_mutex_lock(&m->lock);
    omma_status st = OMMA_OK;
    if (atomic_load_explicit(&m->cameras[index], memory_order_relaxed)) {
        st = OMMA_FAIL(OMMA_ERR_INVALID_ARG, "camera %d is already registered", index);
    } else {
        for (int i = 0; i < METRICS_MAX_CAMERAS && st == OMMA_OK; i++) {
            camera *o = atomic_load_explicit(&m->cameras[i], memory_order_relaxed);
            if (o && strcmp(o->name, name) == 0)
                st = OMMA_FAIL(OMMA_ERR_INVALID_ARG, "camera name \"%s\" is camera %d's", name, i);
        }
    }
    if (st == OMMA_OK) {
        c->first_seq = m->h_next;
        atomic_store_explicit(&m->cameras[index], c, memory_order_release);
        m->n_cameras++;
    }
    pthread_mutex_unlock(&m->lock);
    if (st != OMMA_OK)
        free(c);
    return st;
}

void metrics_remove_camera(metrics_registry *m, int index)
{
    if (!m || index < 0 || index >= METRICS_MAX_CAMERAS)
        return;
    pthread_mutex_lock(&m->lock);
    camera *c = atomic_load_explicit(&m->cameras[index], memory_order_relaxed);
    if (c) {
        atomic_store_explicit(&m->cameras[index], NULL, memory_order_release);
        m->n_cameras--;
    }
    pthread_mutex_unlock(&m->lock);
    free(c);
}

omma_status metrics_add_sink(metrics_registry *m, metrics_sink_reader read, void *ctx)
{
    if (!m || !read)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "metrics_add_sink: NULL argument");
    pthread_mutex_lock(&m->lock);
    omma_status st = OMMA_OK;
    if (m->n_sinks == METRICS_MAX_SINKS) {
        st = OMMA_FAIL(OMMA_ERR_INVALID_ARG, "more than %d sinks", METRICS_MAX_SINKS);
    } else {
        m->sink_read[m->n_sinks] = read;
        m->sink_ctx[m->n_sinks] = ctx;
        m->n_sinks++;
    }
    pthread_mutex_unlock(&m->lock);
    return st;
}

void metrics_remove_sinks(metrics_registry *m)
{
    if (!m)
        return;
    pthread_mutex_lock(&m->lock);
    m->n_sinks = 0;
    pthread_mutex_unlock(&m->lock);
}

omma_status metrics_add_gpu(metrics_registry *m, int index, const char *name)
{
    if (!m)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "metrics_add_gpu: NULL registry");
    if (index < 0 || index >= METRICS_MAX_GPUS)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "GPU index %d out of range 0..%d", index,
                         METRICS_MAX_GPUS - 1);
    char fallback[16];
    if (!name) {
        snprintf(fallback, sizeof fallback, "gpu%d", index);
        name = fallback;
    }
    OMMA_TRY(check_name("GPU", name, METRICS_NAME_MAX));

    gpu *g = calloc(1, sizeof *g);
    if (!g)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "GPU %d metrics: %zu bytes", index, sizeof *g);
    if (pthread_mutex_init(&g->lock, NULL) != 0) {
        free(g);
        return OMMA_FAIL(OMMA_ERR_INTERNAL, "GPU %d metrics: pthread_mutex_init failed", index);
    }
    g->index = index;
    snprintf(g->name, sizeof g->name, "%s", name);
    snprintf(g->reading.reason, sizeof g->reading.reason, "no reading yet");

    pthread_mutex_lock(&m->lock);
    omma_status st = OMMA_OK;
    if (atomic_load_explicit(&m->gpus[index], memory_order_relaxed)) {
        st = OMMA_FAIL(OMMA_ERR_INVALID_ARG, "GPU %d is already registered", index);
    } else {
        atomic_store_explicit(&m->gpus[index], g, memory_order_release);
        m->n_gpus++;
    }
    pthread_mutex_unlock(&m->lock);
    if (st != OMMA_OK) {
        pthread_mutex_destroy(&g->lock);
        free(g);
    }
    return st;
}

/* ---- Updates ------------------------------------------------------------ */

static camera *camera_at(metrics_registry *m, int index)
{
    if (!m || index < 0 || index >= METRICS_MAX_CAMERAS)
        return NULL;
    return atomic_load_explicit(&m->cameras[index], memory_order_acquire);
}

static gpu *gpu_at(metrics_registry *m, int index)
{
    if (!m || index < 0 || index >= METRICS_MAX_GPUS)
        return NULL;
    return atomic_load_explicit(&m->gpus[index], memory_order_acquire);
}

void metrics_frame_in(metrics_registry *m, int index)
{
    camera *c = camera_at(m, index);
    if (c)
        atomic_fetch_add_explicit(&c->frames_in, 1, memory_order_relaxed);
}

void metrics_frames_dropped(metrics_registry *m, int index, uint64_t n)
{
    camera *c = camera_at(m, index);
    if (c)
        atomic_fetch_add_explicit(&c->frames_dropped, n, memory_order_relaxed);
}

void metrics_frame_done(metrics_registry *m, int index, uint64_t latency_ns)
{
    camera *c = camera_at(m, index);
    if (!c)
        return;
    hist_add(m, &c->latency, latency_ns);
    atomic_fetch_add_explicit(&c->frames_processed, 1, memory_order_relaxed);
}

void metrics_camera_set_state(metrics_registry *m, int index, metrics_camera_state state)
{
    camera *c = camera_at(m, index);
    if (c)
        atomic_store_explicit(&c->state, (int)state, memory_order_relaxed);
}

void metrics_camera_set_decoder(metrics_registry *m, int index, const char *decoder)
{
    camera *c = camera_at(m, index);
    if (!c)
        return;
    pthread_mutex_lock(&m->lock);
    snprintf(c->decoder, sizeof c->decoder, "%s", decoder ? decoder : "");
    pthread_mutex_unlock(&m->lock);
}

void metrics_camera_set_link(metrics_registry *m, int index, metrics_camera_state state,
                             int attempt, uint64_t reconnects, const char *error)
{
    camera *c = camera_at(m, index);
    if (!c)
        return;
    pthread_mutex_lock(&m->lock);
    snprintf(c->error, sizeof c->error, "%s", error ? error : "");
    atomic_store_explicit(&c->attempt, attempt, memory_order_relaxed);
    atomic_store_explicit(&c->reconnects, reconnects, memory_order_relaxed);
    atomic_store_explicit(&c->state, (int)state, memory_order_relaxed);
    pthread_mutex_unlock(&m->lock);
}

void metrics_camera_source(metrics_registry *m, int index, uint64_t damaged_frames,
                           uint64_t dropped_packets, int stream_clock)
{
    camera *c = camera_at(m, index);
    if (!c)
        return;
    atomic_store_explicit(&c->damaged_frames, damaged_frames, memory_order_relaxed);
    atomic_store_explicit(&c->dropped_packets, dropped_packets, memory_order_relaxed);
    atomic_store_explicit(&c->stream_clock, stream_clock, memory_order_relaxed);
}

void metrics_camera_set_gpu(metrics_registry *m, int index, int gpu_index)
{
    camera *c = camera_at(m, index);
    if (c)
        atomic_store_explicit(&c->gpu, gpu_index < 0 ? -1 : gpu_index, memory_order_relaxed);
}

void metrics_stage_time(metrics_registry *m, int gpu_index, int stage, uint64_t ns)
{
    gpu *g = gpu_at(m, gpu_index);
    if (g && stage >= 0 && stage < m->n_stages)
        hist_add(m, &g->stages[stage], ns);
}

void metrics_gpu_reading(metrics_registry *m, int gpu_index, const omma_device_metrics *reading)
{
    gpu *g = gpu_at(m, gpu_index);
    if (!g || !reading)
        return;
    pthread_mutex_lock(&g->lock);
    g->reading = *reading;
    g->reading.reason[sizeof g->reading.reason - 1] = '\0';
    if (!g->reading.available)
        g->reading.valid = 0;
    pthread_mutex_unlock(&g->lock);
}

/* ---- Snapshots ---------------------------------------------------------- */

/* The history entry to measure a rate from at `now`: the newest one at
 * least a window old, else the oldest one, among entries >= first_seq.
 * Returns -1 when there is none older than now. */
static int64_t rate_base(const metrics_registry *m, uint64_t first_seq, uint64_t now)
{
    uint64_t oldest = m->h_next > HISTORY ? m->h_next - HISTORY : 0;
    if (first_seq > oldest)
        oldest = first_seq;
    if (oldest >= m->h_next)
        return -1;
    for (uint64_t seq = m->h_next; seq-- > oldest;) {
        if (m->h_t[seq % HISTORY] + m->window_ns <= now)
            return (int64_t)seq;
    }
    return m->h_t[oldest % HISTORY] < now ? (int64_t)oldest : -1;
}

static double rate(uint64_t now_count, uint64_t then_count, uint64_t span_ns)
{
    if (now_count < then_count)
        return NAN;
    return (double)(now_count - then_count) * 1e9 / (double)span_ns;
}

omma_status metrics_snapshot_take_at(metrics_registry *m, uint64_t now_ns, uint64_t process_cpu_ns,
                                     metrics_snapshot **out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "metrics_snapshot_take: NULL out");
    *out = NULL;
    if (!m)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "metrics_snapshot_take: NULL registry");

    pthread_mutex_lock(&m->lock);
    omma_status st = OMMA_OK;
    metrics_snapshot *s = NULL;
    if (now_ns < m->last_now_ns) {
        st = OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                       "metrics_snapshot_take_at: time went back (%llu ns < %llu ns)",
                       (unsigned long long)now_ns, (unsigned long long)m->last_now_ns);
        goto done;
    }
    size_t cams_bytes = (size_t)m->n_cameras * sizeof(metrics_camera_snap);
    size_t gpus_bytes = (size_t)m->n_gpus * sizeof(metrics_gpu_snap);
    s = calloc(1, sizeof *s + cams_bytes + gpus_bytes);
    if (!s) {
        st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "metrics snapshot: %zu bytes",
                       sizeof *s + cams_bytes + gpus_bytes);
        goto done;
    }
    s->cameras = (metrics_camera_snap *)(s + 1);
    s->gpus = (metrics_gpu_snap *)((char *)s->cameras + cams_bytes);

    s->now_ns = now_ns;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    s->unix_ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    s->uptime_ns = now_ns > m->created_ns ? now_ns - m->created_ns : 0;
    s->process_cpu_ns = process_cpu_ns;
    s->n_stages = m->n_stages;
    memcpy(s->stage_names, m->stage_names, sizeof s->stage_names);

    int n = 0;
    for (int i = 0; i < METRICS_MAX_CAMERAS && n < m->n_cameras; i++) {
        camera *c = atomic_load_explicit(&m->cameras[i], memory_order_relaxed);
        if (!c)
            continue;
        metrics_camera_snap *cs = &s->cameras[n++];
        cs->index = c->index;
        memcpy(cs->name, c->name, sizeof cs->name);
        cs->gpu = atomic_load_explicit(&c->gpu, memory_order_relaxed);
        cs->state = (metrics_camera_state)atomic_load_explicit(&c->state, memory_order_relaxed);
        hist_read(&c->latency, &cs->latency);
        cs->frames_in = atomic_load_explicit(&c->frames_in, memory_order_relaxed);
        cs->frames_processed = atomic_load_explicit(&c->frames_processed, memory_order_relaxed);
        cs->frames_dropped = atomic_load_explicit(&c->frames_dropped, memory_order_relaxed);
        cs->damaged_frames = atomic_load_explicit(&c->damaged_frames, memory_order_relaxed);
        cs->dropped_packets = atomic_load_explicit(&c->dropped_packets, memory_order_relaxed);
        cs->reconnects = atomic_load_explicit(&c->reconnects, memory_order_relaxed);
        cs->attempt = atomic_load_explicit(&c->attempt, memory_order_relaxed);
        cs->stream_clock = atomic_load_explicit(&c->stream_clock, memory_order_relaxed);
        memcpy(cs->error, c->error, sizeof cs->error); /* under the lock, as its writer */
        memcpy(cs->decoder, c->decoder, sizeof cs->decoder);
        s->frames_processed += cs->frames_processed;

        cs->fps_in = cs->fps_processed = NAN;
        int64_t base = rate_base(m, c->first_seq, now_ns);
        if (base >= 0) {
            int slot = (int)(base % HISTORY);
            cs->rate_span_ns = now_ns - m->h_t[slot];
            cs->fps_in = rate(cs->frames_in, c->h_in[slot], cs->rate_span_ns);
            cs->fps_processed = rate(cs->frames_processed, c->h_processed[slot], cs->rate_span_ns);
        }
    }
    s->n_cameras = n;

    s->cpu_ns_per_frame = NAN;
    int64_t base = rate_base(m, 0, now_ns);
    if (base >= 0) {
        int slot = (int)(base % HISTORY);
        s->cpu_span_ns = now_ns - m->h_t[slot];
        if (s->frames_processed > m->h_frames[slot] && process_cpu_ns >= m->h_cpu[slot])
            s->cpu_ns_per_frame = (double)(process_cpu_ns - m->h_cpu[slot]) /
                                  (double)(s->frames_processed - m->h_frames[slot]);
    }

    n = 0;
    for (int i = 0; i < METRICS_MAX_GPUS && n < m->n_gpus; i++) {
        gpu *g = atomic_load_explicit(&m->gpus[i], memory_order_relaxed);
        if (!g)
            continue;
        metrics_gpu_snap *gs = &s->gpus[n++];
        gs->index = g->index;
        memcpy(gs->name, g->name, sizeof gs->name);
        pthread_mutex_lock(&g->lock);
        gs->reading = g->reading;
        pthread_mutex_unlock(&g->lock);
        for (int k = 0; k < m->n_stages; k++)
            hist_read(&g->stages[k], &gs->stages[k]);
    }
    s->n_gpus = n;

    for (int i = 0; i < m->n_sinks; i++) {
        m->sink_read[i](m->sink_ctx[i], &s->sinks[i]);
        s->sinks[i].name[METRICS_SINK_NAME_MAX - 1] = 0;
        s->sinks[i].kind[sizeof s->sinks[i].kind - 1] = 0;
        s->sinks[i].last_error[METRICS_SINK_ERROR_MAX - 1] = 0;
    }
    s->n_sinks = m->n_sinks;

    /* Push a history entry a quarter window after the last one. */
    if (m->h_next == 0 || now_ns - m->h_t[(m->h_next - 1) % HISTORY] >= m->window_ns / 4) {
        int slot = (int)(m->h_next % HISTORY);
        m->h_t[slot] = now_ns;
        m->h_cpu[slot] = process_cpu_ns;
        m->h_frames[slot] = s->frames_processed;
        for (int i = 0; i < s->n_cameras; i++) {
            camera *c =
                atomic_load_explicit(&m->cameras[s->cameras[i].index], memory_order_relaxed);
            c->h_in[slot] = s->cameras[i].frames_in;
            c->h_processed[slot] = s->cameras[i].frames_processed;
        }
        m->h_next++;
    }
    m->last_now_ns = now_ns;

done:
    pthread_mutex_unlock(&m->lock);
    if (st == OMMA_OK)
        *out = s;
    return st;
}

omma_status metrics_snapshot_take(metrics_registry *m, metrics_snapshot **out)
{
    return metrics_snapshot_take_at(m, core_now_ns(), core_process_cpu_ns(), out);
}

void metrics_snapshot_free(metrics_snapshot *s)
{
    free(s);
}
