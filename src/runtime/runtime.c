#define _GNU_SOURCE /* pthread_setname_np */
/* The multi-camera runtime on GPUs (runtime.h; rt_gpu_backend of
 * runtime_backend.h): the GPU fields of the configuration, placement of
 * the cameras on the GPUs, start of the threads, stop, wait, stats, and
 * the monitor thread that reads each GPU's NVML metrics once a second
 * (cameras added and removed live: runtime_live.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"
#include "io/video_file.h"
#include "omma/log.h"
#include "runtime/runtime_backend.h"
#include "ipc/bus_publisher.h"
#include "runtime/runtime_private.h"

int rt_stopping(const rt_gpu_runtime *rt)
{
    return atomic_load_explicit(&rt->stopping, memory_order_relaxed);
}

void rt_thread_ended(rt_gpu_runtime *rt)
{
    pthread_mutex_lock(&rt->lock);
    rt->threads_left--;
    pthread_cond_broadcast(&rt->ended);
    pthread_mutex_unlock(&rt->lock);
}

void rt_fail(rt_gpu_runtime *rt, omma_status st, const char *detail)
{
    pthread_mutex_lock(&rt->lock);
    if (rt->error == OMMA_OK) {
        rt->error = st;
        snprintf(rt->error_detail, sizeof rt->error_detail, "%s", detail);
    }
    pthread_mutex_unlock(&rt->lock);
    omma_log(OMMA_LOG_ERROR, "runtime: %s", detail);
    rt_gpu_runtime_stop(rt);
}

/* The fields only the GPU runtime reads (runtime_backend.c checked the
 * others). */
static omma_status check_config(const rt_runtime_config *c)
{
    if (c->max_cameras > 0 && c->publish)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "runtime: max cameras %d: cameras added live cannot be published on the "
                         "frame bus %s (its cameras are fixed when it starts); publish a runtime "
                         "without cameras added live",
                         c->max_cameras, c->publish);
    if (c->n_gpus < 1 || c->n_gpus > RT_MAX_GPUS || !c->gpus)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "runtime: %d GPUs not in 1..%d", c->n_gpus,
                         RT_MAX_GPUS);
    for (int i = 0; i < c->n_gpus; i++)
        for (int j = 0; j < i; j++)
            if (c->gpus[i] == c->gpus[j])
                return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "runtime: GPU %d named twice", c->gpus[i]);
    if (c->placement != RT_PLACE_ROUND_ROBIN && c->placement != RT_PLACE_LEAST_LOADED)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "runtime: unknown placement %d", (int)c->placement);
    if (c->publish && (c->publish_subscribers < 1 || c->publish_subscribers > 64 ||
                       c->publish_holds < 1 || c->publish_holds > 8))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "runtime: publishing for %d subscribers (1..64) holding %d frames (1..8)",
                         c->publish_subscribers, c->publish_holds);
    if (c->ring_slots < 2 || c->ring_slots > RT_RING_MAX_SLOTS)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "runtime: %d ring slots not in 2..%d", c->ring_slots,
                         RT_RING_MAX_SLOTS);
    int synthetic = c->max_cameras > 0 && c->photo; /* synthetic cameras may be added */
    for (int i = 0; i < c->n_cameras; i++)
        synthetic |= !c->cameras[i].spec;
    if (synthetic && (c->pool_frames < 1 || c->pool_frames > RT_POOL_MAX_FRAMES))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "runtime: %d pool frames not in 1..%d",
                         c->pool_frames, RT_POOL_MAX_FRAMES);
    return OMMA_OK;
}

/* Each camera's GPU, by the placement policy. */
static void place(rt_gpu_runtime *rt)
{
    double load[RT_MAX_GPUS] = {0};
    for (int i = 0; i < rt->n_cams; i++)
        if (rt->cams[i].gpu) {
            load[rt->cams[i].gpu->index] += rt->cams[i].pixels_per_s;
            rt->cams[i].gpu->load_px_per_s += rt->cams[i].pixels_per_s;
            rt->cams[i].gpu->n_cams++;
        }
    for (int i = 0; i < rt->n_cams; i++) {
        rt_cam *cam = &rt->cams[i];
        if (cam->gpu) /* decoded on its GPU: placed when opened */
            continue;
        int best = i % rt->n_gpus;
        if (rt->cfg.placement == RT_PLACE_LEAST_LOADED)
            for (int k = 0; k < rt->n_gpus; k++)
                if (load[k] < load[best] || (load[k] == load[best] && k < best))
                    best = k;
        load[best] += cam->pixels_per_s;
        cam->gpu = &rt->gpus[best];
        rt->gpus[best].load_px_per_s += cam->pixels_per_s;
        rt->gpus[best].n_cams++;
    }
}

omma_status rt_register_camera(rt_gpu_runtime *rt, const rt_cam *cam)
{
    return rt_metrics_register(rt->cfg.metrics, cam->index, &cam->cfg, cam->gpu->index, cam->src);
}

static omma_status register_metrics(rt_gpu_runtime *rt)
{
    metrics_registry *m = rt->cfg.metrics;
    if (!m)
        return OMMA_OK;
    for (int k = 0; k < rt->n_gpus; k++) {
        omma_device_info info;
        OMMA_TRY(omma_device_get_info(rt->gpus[k].dev, &info));
        char name[METRICS_NAME_MAX];
        snprintf(name, sizeof name, "%d: %.100s", info.ordinal, info.name);
        OMMA_TRY(metrics_add_gpu(m, k, name));
    }
    for (int i = 0; i < rt->n_cams; i++)
        OMMA_TRY(rt_register_camera(rt, &rt->cams[i]));
    return OMMA_OK;
}

/* Seen in top -H, gdb, perf by its name. */
omma_status rt_start_thread(rt_gpu_runtime *rt, pthread_t *t, void *(*fn)(void *), void *arg,
                            int *started, const char *name, int k, int reserved)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    if (!reserved) {
        pthread_mutex_lock(&rt->lock);
        rt->threads_left++;
        pthread_mutex_unlock(&rt->lock);
    }
    int rc = pthread_create(t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        rt_thread_ended(rt);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "runtime: pthread_create: %s", strerror(rc));
    }
    char title[16]; /* the kernel's limit, with the NUL */
    snprintf(title, sizeof title, k >= 0 ? "omma-%s%d" : "omma-%s", name, k);
    (void)pthread_setname_np(*t, title);
    *started = 1;
    return OMMA_OK;
}

static void *monitor(void *arg)
{
    rt_gpu_runtime *rt = arg;
    pthread_mutex_lock(&rt->lock);
    /* Until only the monitor is left. */
    while (rt->threads_left > 1) {
        pthread_mutex_unlock(&rt->lock);
        for (int k = 0; k < rt->n_gpus; k++) {
            omma_device_metrics r;
            if (omma_device_read_metrics(rt->gpus[k].dev, &r) == OMMA_OK)
                metrics_gpu_reading(rt->cfg.metrics, k, &r);
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += 1;
        pthread_mutex_lock(&rt->lock);
        if (rt->threads_left > 1)
            pthread_cond_timedwait(&rt->ended, &rt->lock, &ts);
    }
    pthread_mutex_unlock(&rt->lock);
    rt_thread_ended(rt);
    return NULL;
}

static omma_status start_thread(rt_gpu_runtime *rt, pthread_t *t, void *(*fn)(void *), void *arg,
                                int *started, const char *name, int k)
{
    return rt_start_thread(rt, t, fn, arg, started, name, k, 0);
}

static omma_status start_threads(rt_gpu_runtime *rt)
{
    for (int k = 0; k < rt->n_gpus; k++) {
        rt_gpu *g = &rt->gpus[k];
        OMMA_TRY(start_thread(rt, &g->sink, rt_gpu_sink, g, &g->sink_started, "sink", k));
        OMMA_TRY(start_thread(rt, &g->worker, rt_gpu_worker, g, &g->worker_started, "gpu", k));
    }
    for (int i = 0; i < rt->n_cams; i++)
        if (!rt_cam_synthetic(&rt->cams[i]))
            OMMA_TRY(start_thread(rt, &rt->cams[i].thread, rt_cam_thread, &rt->cams[i],
                                  &rt->cams[i].started, "cam", i));
    for (int d = 0; d < rt->n_drivers; d++)
        OMMA_TRY(start_thread(rt, &rt->drivers[d].thread, rt_synthetic_driver, &rt->drivers[d],
                              &rt->drivers[d].started, "synth", d));
    if (rt->cfg.metrics)
        OMMA_TRY(start_thread(rt, &rt->monitor, monitor, rt, &rt->monitor_started, "monitor", -1));
    return OMMA_OK;
}

/* The synthetic cameras in groups of synthetic_per_thread, the groups'
 * starts spread evenly over detect_every frame periods (one period when the
 * detector runs only on losses), as cameras started at different times would
 * be: the frames of all cameras that need the detector do not fall in the
 * same period. */
static omma_status make_drivers(rt_gpu_runtime *rt)
{
    int synthetic = 0, per = rt->cfg.synthetic_per_thread;
    for (int i = 0; i < rt->n_cams; i++)
        synthetic += rt_cam_synthetic(&rt->cams[i]);
    if (!synthetic)
        return OMMA_OK;
    rt->n_drivers = (synthetic + per - 1) / per;
    rt->drivers = calloc((size_t)rt->n_drivers, sizeof *rt->drivers);
    rt->driver_cams = calloc((size_t)synthetic, sizeof *rt->driver_cams);
    rt->driver_done = calloc((size_t)synthetic, 1);
    if (!rt->drivers || !rt->driver_cams || !rt->driver_done)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "runtime: synthetic drivers");
    uint64_t period = (uint64_t)(1e9 / rt->cfg.synthetic.fps);
    uint64_t spread =
        period * (uint64_t)(rt->cfg.pipeline.detect_every > 1 ? rt->cfg.pipeline.detect_every : 1);
    int k = 0;
    for (int i = 0; i < rt->n_cams; i++) {
        if (!rt_cam_synthetic(&rt->cams[i]))
            continue;
        rt_driver *d = &rt->drivers[k / per];
        if (d->count == 0) {
            d->rt = rt;
            d->cams = &rt->driver_cams[k];
            d->done = &rt->driver_done[k];
            d->offset_ns = spread * (uint64_t)(k / per) / (uint64_t)rt->n_drivers;
        }
        d->cams[d->count++] = i;
        k++;
    }
    return OMMA_OK;
}

/* cfg.publish_wait_ms: the sources start once a subscriber is there (or
 * the wait is over: said in the log). */
static void wait_for_subscriber(rt_gpu_runtime *rt)
{
    if (!rt->bus || rt->cfg.publish_wait_ms <= 0)
        return;
    uint64_t end = core_now_ns() + (uint64_t)rt->cfg.publish_wait_ms * 1000000u;
    bus_pub_stats st;
    do {
        bus_pub_get_stats(rt->bus, &st);
        if (st.subscribers > 0)
            return;
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    } while (core_now_ns() < end && !rt_stopping(rt));
    omma_log(OMMA_LOG_WARN, "bus %s: no subscriber within %d ms; starting the cameras",
             rt->cfg.publish, rt->cfg.publish_wait_ms);
}

static omma_status open_all(rt_gpu_runtime *rt)
{
    for (int k = 0; k < rt->n_gpus; k++) {
        rt->gpus[k].index = k;
        rt->gpus[k].ordinal = rt->cfg.gpus[k];
        if (rt->cfg.source.decode != IO_DECODE_CPU) /* the sources need them */
            OMMA_TRY(omma_device_open(rt->gpus[k].ordinal, &rt->gpus[k].dev));
    }
    for (int i = 0; i < rt->n_cams; i++) {
        rt_cam *cam = &rt->cams[i];
        cam->rt = rt;
        cam->index = i;
        cam->cfg = rt->cfg.cameras[i];
        cam->state = RT_CAM_RUNNING;
        OMMA_TRY(rt_cam_open(rt, cam));
    }
    place(rt);
    for (int k = 0; k < rt->n_gpus; k++) {
        rt_gpu *g = &rt->gpus[k];
        g->rt = rt;
        g->index = k;
        g->ordinal = rt->cfg.gpus[k];
        g->open_cams = g->n_cams;
        OMMA_TRY(rt_gpu_prepare(g));
    }
    if (rt->cfg.publish) {
        bus_pub_options bo = {rt->cfg.publish,
                              NULL,
                              rt->n_cams,
                              rt->cfg.pipeline.max_faces,
                              rt->cfg.publish_subscribers,
                              -1,
                              0};
        OMMA_TRY(bus_pub_create(&bo, &rt->bus));
    }
    for (int i = 0; i < rt->n_cams; i++)
        OMMA_TRY(rt_cam_prepare(&rt->cams[i]));
    if (rt->bus)
        OMMA_TRY(bus_pub_start(rt->bus));
    OMMA_TRY(register_metrics(rt));
    OMMA_TRY(make_drivers(rt));
    wait_for_subscriber(rt);
    return start_threads(rt);
}

static void gpu_destroy(void *impl);

static omma_status gpu_start(const rt_runtime_config *cfg, void **out)
{
    *out = NULL;
    OMMA_TRY(check_config(cfg));
    rt_gpu_runtime *rt = calloc(1, sizeof *rt);
    int cap = cfg->max_cameras > 0 ? cfg->max_cameras : cfg->n_cameras;
    if (rt)
        rt->cams = calloc((size_t)(cap > 0 ? cap : 1), sizeof *rt->cams);
    if (!rt || !rt->cams) {
        free(rt);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "runtime");
    }
    rt->cfg = *cfg;
    rt->n_cams = cfg->n_cameras;
    rt->cap = cap;
    rt->n_gpus = cfg->n_gpus;
    for (int i = 0; i < cap; i++) {
        rt->cams[i].rt = rt;
        rt->cams[i].index = i;
        core_cpu_parts_init(&rt->cams[i].cpu);
    }
    pthread_mutex_init(&rt->lock, NULL);
    pthread_mutex_init(&rt->place_lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&rt->ended, &attr);
    pthread_condattr_destroy(&attr);
    omma_status st = open_all(rt);
    if (st != OMMA_OK) {
        char detail[512];
        snprintf(detail, sizeof detail, "%s", omma_last_error());
        gpu_destroy(rt);
        return OMMA_FAIL(st, "%s", detail);
    }
    *out = rt;
    return OMMA_OK;
}

void rt_gpu_runtime_stop(rt_gpu_runtime *rt)
{
    if (!rt || atomic_exchange(&rt->stopping, 1))
        return;
    /* Under the lock: a remove frees cameras. */
    pthread_mutex_lock(&rt->lock);
    for (int i = 0; i < rt->cap; i++) {
        rt_cam *cam = &rt->cams[i];
        if (cam->state != RT_CAM_RUNNING && cam->state != RT_CAM_REMOVING)
            continue;
        rt_source_interrupt(cam->src);
        rt_ring_close(cam->ring);
        /* The worker drains the ring and sees it closed, whether or not the
         * camera's thread is still there to say so. */
        if (cam->ring && cam->gpu && cam->gpu->ready)
            rt_gpu_notify(cam->gpu, cam);
    }
    pthread_mutex_unlock(&rt->lock);
    for (int k = 0; k < rt->n_gpus; k++) {
        rt_gpu *g = &rt->gpus[k];
        if (!g->ready)
            continue;
        pthread_mutex_lock(&g->lock);
        pthread_cond_signal(&g->wake);
        pthread_mutex_unlock(&g->lock);
    }
}

static void gpu_stop(void *impl)
{
    rt_gpu_runtime_stop(impl);
}

static omma_status gpu_wait(void *impl, int timeout_ms)
{
    rt_gpu_runtime *rt = impl;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (timeout_ms >= 0) {
        ts.tv_sec += timeout_ms / 1000;
        ts.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L)
            ts.tv_sec++, ts.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&rt->lock);
    int rc = 0;
    while (rt->threads_left > 0 && rc != ETIMEDOUT)
        rc = timeout_ms < 0 ? pthread_cond_wait(&rt->ended, &rt->lock)
                            : pthread_cond_timedwait(&rt->ended, &rt->lock, &ts);
    int left = rt->threads_left;
    omma_status err = rt->error;
    char detail[512];
    snprintf(detail, sizeof detail, "%s", rt->error_detail);
    pthread_mutex_unlock(&rt->lock);
    if (left > 0)
        return OMMA_FAIL(OMMA_ERR_TIMEOUT, "runtime: %d threads still running after %d ms", left,
                         timeout_ms);
    if (err != OMMA_OK)
        return OMMA_FAIL(err, "%s", detail);
    return OMMA_OK;
}

static void gpu_destroy(void *impl)
{
    rt_gpu_runtime *rt = impl;
    if (!rt)
        return;
    rt_gpu_runtime_stop(rt);
    (void)gpu_wait(rt, -1);
    for (int i = 0; i < rt->cap; i++) {
        if (rt->cams[i].started)
            pthread_join(rt->cams[i].thread, NULL);
        if (rt->cams[i].own && rt->cams[i].own->started)
            pthread_join(rt->cams[i].own->thread, NULL);
    }
    for (int d = 0; d < rt->n_drivers; d++)
        if (rt->drivers[d].started)
            pthread_join(rt->drivers[d].thread, NULL);
    for (int k = 0; k < rt->n_gpus; k++) {
        if (rt->gpus[k].worker_started)
            pthread_join(rt->gpus[k].worker, NULL);
        if (rt->gpus[k].sink_started)
            pthread_join(rt->gpus[k].sink, NULL);
    }
    if (rt->monitor_started)
        pthread_join(rt->monitor, NULL);
    for (int i = 0; i < rt->cap; i++) {
        rt_cam_close(&rt->cams[i]);
        free(rt->cams[i].own);
        free(rt->cams[i].spec_copy);
        free(rt->cams[i].name_copy);
    }
    bus_pub_destroy(rt->bus); /* after the rings that use its slots */
    for (int k = 0; k < rt->n_gpus; k++)
        rt_gpu_close(&rt->gpus[k]);
    pthread_cond_destroy(&rt->ended);
    pthread_mutex_destroy(&rt->lock);
    pthread_mutex_destroy(&rt->place_lock);
    free(rt->drivers);
    free(rt->driver_cams);
    free(rt->driver_done);
    free(rt->cams);
    free(rt);
}

static void gpu_get_stats(void *impl, rt_runtime_stats *out)
{
    rt_gpu_runtime *rt = impl;
    memset(out, 0, sizeof *out);
    out->frames_in = atomic_load(&rt->frames_in);
    out->frames_done = atomic_load(&rt->frames_done);
    out->frames_dropped = atomic_load(&rt->frames_dropped);
    out->faces = atomic_load(&rt->faces);
    out->poses = atomic_load(&rt->poses);
    out->batches = atomic_load(&rt->batches);
    out->launches = atomic_load(&rt->launches);
    out->worker_cpu_ns = atomic_load(&rt->worker_cpu_ns);
    pthread_mutex_lock(&rt->lock); /* a remove moves a camera's counts to removed_ */
    out->decode_ns = rt->removed_decode_ns;
    out->decode_cpu_ns = rt->removed_decode_cpu_ns;
    out->cpu = rt->removed_cpu;
    for (int i = 0; i < rt->cap; i++) {
        if (rt->cams[i].state != RT_CAM_RUNNING && rt->cams[i].state != RT_CAM_REMOVING)
            continue;
        out->decode_ns += atomic_load(&rt->cams[i].decode_ns);
        out->decode_cpu_ns += atomic_load(&rt->cams[i].decode_cpu_ns);
        core_cpu_parts_add_to(&rt->cams[i].cpu, &out->cpu);
    }
    pthread_mutex_unlock(&rt->lock);
    for (int k = 0; k < rt->n_gpus; k++) {
        omma_transfer_counters t;
        if (rt->gpus[k].dev && omma_device_get_transfers(rt->gpus[k].dev, &t) == OMMA_OK) {
            out->h2d_bytes += t.h2d_bytes;
            out->h2d_copies += t.h2d_copies;
            out->d2h_bytes += t.d2h_bytes;
            out->d2h_copies += t.d2h_copies;
        }
    }
}

const rt_backend rt_gpu_backend = {"gpu",
                                   gpu_start,
                                   gpu_stop,
                                   gpu_wait,
                                   gpu_destroy,
                                   gpu_get_stats,
                                   rt_gpu_add_camera,
                                   rt_gpu_remove_camera,
                                   rt_gpu_interrupt_camera};
