#define _POSIX_C_SOURCE 200809L /* clock_nanosleep */
/* The runtime's cameras (runtime.h): opening each source, its ring on its
 * GPU, its capture thread (read, stage, put into the ring, tell the GPU's
 * worker), and the drivers of the synthetic cameras (each takes its
 * cameras' next pool frames at their rate). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"
#include "gpu/check.h"
#include "gpu/memory.h"
#include "gpu/stream_pool.h"
#include "omma/log.h"
#include "runtime/runtime_private.h"
#include "vision/frame.h"

static double pixel_rate(const rt_source_info *info)
{
    return (double)info->width * info->height * (info->fps > 0 ? info->fps : 30.0);
}

/* Opens the camera's source. Videos decoded on a GPU (decode GPU, or AUTO
 * within the GPU's decoding budget) are placed on that GPU now, round
 * robin; an AUTO camera past the budget is opened again on the CPU. */
static omma_status open_source(rt_gpu_runtime *rt, rt_cam *cam)
{
    const rt_runtime_config *cfg = &rt->cfg;
    rt_source_options so;
    rt_link_watch_init(&cam->link, cfg, cam->index, &so);
    cam->link.camera_ctx = cam->cfg.ctx;
    so.record = cam->cfg.record;
    so.cpu = cfg->measure_cpu ? &cam->cpu : NULL;
    rt_gpu *g = NULL;
    if (so.decode != IO_DECODE_CPU) {
        g = &rt->gpus[cam->index % rt->n_gpus];
        so.device = g->dev;
    }
    OMMA_TRY(rt_source_open(cam->cfg.spec, &so, &cam->src));
    const rt_source_info *info = rt_source_get_info(cam->src);
    cam->pixels_per_s = pixel_rate(info);
    if (so.decode != IO_DECODE_CPU && info->decoder[0]) /* where it went, once per camera */
        omma_log(OMMA_LOG_INFO, "camera %d (%s): decoding: %s", cam->index, cam->cfg.spec,
                 info->decoder);
    if (info->memory != OMMA_MEMORY_DEVICE)
        return OMMA_OK;
    if (strncmp(info->decoder, "gpu (nvjpeg", 11) == 0)
        return OMMA_OK; /* MJPEG on the NVJPG engines: not NVDEC's budget */
    double budget = (double)cfg->decode_gpu_streams * 1920.0 * 1080.0 * 30.0;
    /* Cameras added live open at the same time as others: one check and
     * count for each. */
    pthread_mutex_lock(&rt->place_lock);
    int full = so.decode == IO_DECODE_AUTO && cfg->decode_gpu_streams > 0 &&
               g->decode_px_per_s + cam->pixels_per_s > budget;
    if (!full) {
        g->decode_px_per_s += cam->pixels_per_s;
        cam->decode_px_per_s = cam->pixels_per_s;
        cam->gpu = g;
    }
    pthread_mutex_unlock(&rt->place_lock);
    if (full) {
        omma_log(OMMA_LOG_INFO,
                 "camera %d (%s): GPU %d's decoders are full (%d 1080p30 streams): decoding on "
                 "the CPU",
                 cam->index, cam->cfg.spec, g->ordinal, cfg->decode_gpu_streams);
        rt_source_close(cam->src);
        cam->src = NULL;
        so.decode = IO_DECODE_CPU;
        so.device = NULL;
        OMMA_TRY(rt_source_open(cam->cfg.spec, &so, &cam->src));
    }
    return OMMA_OK;
}

omma_status rt_cam_open(rt_gpu_runtime *rt, rt_cam *cam)
{
    const rt_runtime_config *cfg = &rt->cfg;
    if (!cam->cfg.spec) {
        cam->fmt = (rt_ring_format){cfg->synthetic.width, cfg->synthetic.height, OMMA_PIXEL_NV12};
        cam->live = 1;
        cam->pixels_per_s = (double)cam->fmt.width * cam->fmt.height * cfg->synthetic.fps;
        cam->fps = cfg->synthetic.fps;
        cam->phase = (long)cam->index * 7919 % (cfg->pool_frames > 0 ? cfg->pool_frames : 1);
        return OMMA_OK;
    }
    if (rt_bus_spec(cam->cfg.spec))
        return rt_bus_cam_open(cam);
    OMMA_TRY(open_source(rt, cam));
    const rt_source_info *info = rt_source_get_info(cam->src);
    cam->fmt = (rt_ring_format){info->width, info->height, info->format};
    cam->live = info->live;
    cam->fps = info->fps;
    return OMMA_OK;
}

omma_status rt_cam_prepare(rt_cam *cam)
{
    rt_gpu *g = cam->gpu;
    const rt_runtime_config *cfg = &cam->rt->cfg;
    rt_ring_policy policy = cam->live ? RT_RING_KEEP_NEWEST : RT_RING_BLOCK;
    int by_ref = rt_cam_synthetic(cam) && cfg->pool_memory == OMMA_MEMORY_DEVICE;
    if (by_ref && cam->rt->bus)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "camera %d: synthetic frames from a device pool are referenced, not "
                         "copied into a ring, so they cannot be published; use the pinned pool",
                         cam->index);
    if (by_ref)
        return rt_ring_create_ref(g->dev, cfg->ring_slots, &cam->fmt, policy, &cam->ring);
    if (cam->rt->bus) {
        /* Subscribers hold frames too: slots for them beside the worker's. */
        int slots = cfg->ring_slots + cfg->publish_subscribers * cfg->publish_holds;
        if (slots > RT_RING_MAX_SLOTS)
            slots = RT_RING_MAX_SLOTS;
        OMMA_TRY(rt_ring_create_bus(g->dev, slots, &cam->fmt, policy, cam->rt->bus, cam->index,
                                    cam->cfg.name ? cam->cfg.name : cam->cfg.spec, &cam->ring));
    } else {
        OMMA_TRY(rt_ring_create(g->dev, cfg->ring_slots, &cam->fmt, policy, &cam->ring));
    }
    cam->frame_bytes = rt_ring_frame_bytes(cam->ring);
    OMMA_TRY(gpu_stream_acquire(g->dev, GPU_PRIORITY_NORMAL, &cam->upload));
    if (cam->bus_name[0])
        return rt_bus_cam_prepare(cam); /* copied on the GPU: no staging */
    if (!cam->src || rt_source_get_info(cam->src)->memory == OMMA_MEMORY_DEVICE)
        return OMMA_OK; /* pool frames are pinned already; decoded frames are on the GPU */
    for (int i = 0; i < 2; i++) {
        OMMA_TRY(gpu_host_alloc(g->dev, cam->frame_bytes, &cam->staging[i]));
        OMMA_TRY(gpu_event_acquire(g->dev, GPU_EVENT_SYNC, &cam->staged[i]));
    }
    return OMMA_OK;
}

void rt_cam_close(rt_cam *cam)
{
    rt_gpu *g = cam->gpu;
    rt_ring_destroy(cam->ring);
    cam->ring = NULL;
    if (g) {
        omma_scope scope;
        int entered = omma_device_enter(g->dev, &scope) == OMMA_OK;
        for (int i = 0; i < 2; i++) {
            if (cam->staged[i]) {
                (void)gpu_cu.cuEventSynchronize(cam->staged[i]);
                gpu_event_release(g->dev, cam->staged[i]);
            }
            if (cam->staging[i])
                gpu_host_free(g->dev, cam->staging[i], cam->frame_bytes);
        }
        if (cam->upload)
            gpu_stream_release(g->dev, cam->upload);
        if (entered)
            (void)omma_device_leave(&scope);
    }
    memset(cam->staged, 0, sizeof cam->staged);
    memset(cam->staging, 0, sizeof cam->staging);
    cam->upload = NULL;
    rt_source_close(cam->src);
    cam->src = NULL;
    rt_bus_cam_close(cam);
}

void rt_cam_let_go(rt_cam *cam)
{
    rt_gpu_runtime *rt = cam->rt;
    pthread_mutex_lock(&rt->lock);
    cam->let_go = 1;
    pthread_cond_broadcast(&rt->ended); /* a remove waits for it there */
    pthread_mutex_unlock(&rt->lock);
}

void rt_cam_report(rt_cam *cam, metrics_camera_state state, omma_status st, const char *detail)
{
    const rt_runtime_config *cfg = &cam->rt->cfg;
    metrics_camera_set_state(cfg->metrics, cam->index, state);
    if (cfg->on_camera) {
        rt_camera_event e = {cam->index, state, st, detail, cam->cfg.ctx};
        cfg->on_camera(cfg->ctx, &e);
    }
}

void rt_cam_failed(rt_cam *cam, omma_status st)
{
    char detail[512];
    snprintf(detail, sizeof detail, "%s", omma_last_error());
    rt_cam_report(cam, METRICS_CAMERA_FAILED, st, detail);
}

/* A source's frame, packed into staging buffer k (once its last upload
 * has run) and put. */
static omma_status put_staged(rt_cam *cam, const omma_frame *f, uint64_t capture_ns, int k)
{
    rt_gpu *g = cam->gpu;
    omma_scope scope;
    OMMA_TRY(omma_device_enter(g->dev, &scope));
    omma_status st = OMMA_CK(gpu_cu.cuEventSynchronize(cam->staged[k]));
    omma_frame packed = *f;
    uint8_t *to = cam->staging[k];
    for (int p = 0; p < 3 && st == OMMA_OK; p++) {
        size_t row = (size_t)vis_frame_row_bytes(f, p), rows = (size_t)vis_frame_plane_rows(f, p);
        if (!row)
            break;
        for (size_t y = 0; y < rows; y++)
            memcpy(to + y * row, f->planes[p] + y * (size_t)f->pitch[p], row);
        packed.planes[p] = to;
        packed.pitch[p] = (int)row;
        to += row * rows;
    }
    if (st == OMMA_OK)
        st = rt_ring_put(cam->ring, &packed, cam->upload, capture_ns, cam->live ? 0 : -1);
    if (st == OMMA_OK)
        st = OMMA_CK(gpu_cu.cuEventRecord(cam->staged[k], cam->upload));
    omma_status left = omma_device_leave(&scope);
    return st != OMMA_OK ? st : left;
}

/* Adds what the source's decoder took since the last frame. */
static void count_decoding(rt_cam *cam)
{
    io_video_stats vs;
    rt_source_get_video_stats(cam->src, &vs);
    if (vs.decode_ns < cam->seen_decode_ns) /* reopened: counts from 0 */
        cam->seen_decode_ns = cam->seen_decode_cpu_ns = 0;
    atomic_fetch_add(&cam->decode_ns, vs.decode_ns - cam->seen_decode_ns);
    atomic_fetch_add(&cam->decode_cpu_ns, vs.decode_cpu_ns - cam->seen_decode_cpu_ns);
    cam->seen_decode_ns = vs.decode_ns;
    cam->seen_decode_cpu_ns = vs.decode_cpu_ns;
}

static void run_source(rt_cam *cam)
{
    const rt_runtime_config *cfg = &cam->rt->cfg;
    core_cpu_parts *cpu = cfg->measure_cpu ? &cam->cpu : NULL;
    rt_link_watch_sync(&cam->link, cam->src);
    uint64_t frame_mark = core_cpu_mark(cpu);
    for (long k = 0;; k++) {
        if (cam->cfg.max_frames > 0 && k >= cam->cfg.max_frames) {
            rt_cam_report(cam, METRICS_CAMERA_ENDED, OMMA_OK, "max frames");
            return;
        }
        omma_frame f;
        uint64_t capture_ns = 0;
        int eof = 0;
        omma_status st = rt_source_read(cam->src, &f, &capture_ns, &eof);
        if (st == OMMA_ERR_CLOSED || (st == OMMA_OK && rt_cam_stopping(cam)))
            return; /* stopped or removed */
        if (st != OMMA_OK) {
            rt_cam_failed(cam, st);
            return;
        }
        if (eof) {
            rt_cam_report(cam, METRICS_CAMERA_ENDED, OMMA_OK, "end of stream");
            return;
        }
        count_decoding(cam);
        metrics_frame_in(cfg->metrics, cam->index);
        atomic_fetch_add_explicit(&cam->rt->frames_in, 1, memory_order_relaxed);
        uint64_t mark = core_cpu_mark(cpu);
        if (f.memory == OMMA_MEMORY_DEVICE) /* one copy on the decoder's stream */
            st = rt_ring_put_copy(cam->ring, &f, NULL, (CUstream)rt_source_stream(cam->src),
                                  capture_ns, cam->live ? 0 : -1);
        else
            st = put_staged(cam, &f, capture_ns, (int)(k & 1));
        core_cpu_lap(cpu, CORE_CPU_COPY, &mark);
        if (st == OMMA_ERR_CLOSED)
            return;
        if (st != OMMA_OK) {
            rt_cam_failed(cam, st);
            return;
        }
        rt_gpu_notify(cam->gpu, cam);
        core_cpu_lap(cpu, CORE_CPU_HANDOFF, &mark);
        core_cpu_lap(cpu, CORE_CPU_THREAD, &frame_mark);
    }
}

/* Sleeps until t_ns; an added camera's own driver in steps of at most
 * 100 ms, so that its removal is seen soon at low frame rates. */
static void sleep_until(rt_driver *d, uint64_t t_ns)
{
    for (;;) {
        uint64_t now = core_now_ns(), until = t_ns;
        if (d->cams == &d->one_cam) {
            if (now >= t_ns || rt_cam_stopping(&d->rt->cams[d->one_cam]))
                return;
            if (t_ns - now > 100000000u)
                until = now + 100000000u;
        }
        struct timespec ts = {(time_t)(until / 1000000000u), (long)(until % 1000000000u)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
        }
        if (until == t_ns)
            return;
    }
}

/* Frame k of a synthetic camera into its ring. Returns 0 when the camera
 * is done (max frames, closed, failed). */
static int put_synthetic(rt_cam *cam, long k)
{
    const rt_runtime_config *cfg = &cam->rt->cfg;
    if (cam->cfg.max_frames > 0 && k >= cam->cfg.max_frames) {
        rt_cam_report(cam, METRICS_CAMERA_ENDED, OMMA_OK, "max frames");
        return 0;
    }
    rt_gpu *g = cam->gpu;
    omma_frame f = rt_synthetic_pool_frame(g->pool, k + cam->phase, NULL);
    uint64_t now = core_now_ns();
    metrics_frame_in(cfg->metrics, cam->index);
    atomic_fetch_add_explicit(&cam->rt->frames_in, 1, memory_order_relaxed);
    omma_status st = f.memory == OMMA_MEMORY_DEVICE
                         ? rt_ring_put_device(cam->ring, &f, NULL, now, 0)
                         : rt_ring_put(cam->ring, &f, cam->upload, now, 0);
    if (st == OMMA_ERR_CLOSED)
        return 0;
    if (st != OMMA_OK) {
        rt_cam_failed(cam, st);
        return 0;
    }
    rt_gpu_notify(g, cam);
    return 1;
}

static void end_camera(rt_cam *cam)
{
    /* The worker takes what is left, then sees the ring closed. */
    rt_ring_close(cam->ring);
    rt_gpu_notify(cam->gpu, cam);
}

/* The driver is done with camera i (ended, removed, stopping): its ring
 * closed, and its slot may be another camera's from now on. */
static void driver_done(rt_driver *d, int i)
{
    rt_cam *cam = &d->rt->cams[d->cams[i]];
    d->done[i] = 1;
    cam->ended = 1;
    end_camera(cam);
    rt_cam_let_go(cam); /* the last touch */
}

void *rt_synthetic_driver(void *arg)
{
    rt_driver *d = arg;
    rt_gpu_runtime *rt = d->rt;
    uint64_t period = (uint64_t)(1e9 / rt->cfg.synthetic.fps), t0 = core_now_ns() + d->offset_ns;
    int live = d->count;
    for (long k = 0; live > 0 && !rt_stopping(rt); k++) {
        sleep_until(d, t0 + (uint64_t)k * period);
        for (int i = 0; i < d->count && !rt_stopping(rt); i++) {
            if (d->done[i])
                continue;
            rt_cam *cam = &rt->cams[d->cams[i]];
            if (atomic_load(&cam->removing) || !put_synthetic(cam, k)) {
                driver_done(d, i);
                live--;
            }
        }
    }
    for (int i = 0; i < d->count; i++)
        if (!d->done[i])
            driver_done(d, i);
    rt_thread_ended(rt);
    return NULL;
}

void *rt_cam_thread(void *arg)
{
    rt_cam *cam = arg;
    if (cam->bus_name[0]) {
        rt_bus_cam_run(cam);
    } else {
        /* Its GPU's context current for the thread's life: the reader's,
         * the decoder's and the ring's calls then find it current instead
         * of pushing and popping it for each call. */
        omma_scope scope;
        int entered = cam->gpu && omma_device_enter(cam->gpu->dev, &scope) == OMMA_OK;
        run_source(cam);
        if (entered)
            (void)omma_device_leave(&scope);
    }
    end_camera(cam);
    rt_cam_let_go(cam);
    rt_thread_ended(cam->rt);
    return NULL;
}

/* The pool frame a synthetic camera's frame seq (from 1) showed. */
long rt_cam_pool_frame(const rt_cam *cam, uint64_t seq)
{
    return (long)(seq - 1) + cam->phase;
}
