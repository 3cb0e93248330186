#define _POSIX_C_SOURCE 200809L /* clock_nanosleep */
/* The CPU runtime's cameras (runtime_cpu_private.h): opening each source
 * and its three host frame buffers, its capture thread (read, copy into
 * the free buffer, hand it over as the newest ready frame), and the
 * drivers of the synthetic cameras (each renders its cameras' frames at
 * their rate with one synthetic source). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"
#include "runtime/runtime_cpu_private.h"
#include "vision/frame.h"

/* Bytes of a frame of this size and format with its planes packed. */
static size_t packed_bytes(const omma_frame *f)
{
    size_t bytes = 0;
    for (int p = 0; p < 3; p++)
        bytes += (size_t)vis_frame_row_bytes(f, p) * (size_t)vis_frame_plane_rows(f, p);
    return bytes;
}

omma_status rt_cpu_cam_open(rt_cpu_runtime *rt, rt_cpu_cam *cam)
{
    const rt_runtime_config *cfg = &rt->cfg;
    omma_frame shape;
    memset(&shape, 0, sizeof shape);
    if (!cam->cfg.spec) {
        shape.width = cfg->synthetic.width;
        shape.height = cfg->synthetic.height;
        shape.format = OMMA_PIXEL_NV12;
        cam->live = 1;
        cam->fps = cfg->synthetic.fps;
        /* Its own place on the path: one turn is period_s * fps frames. */
        long turn = (long)(cfg->synthetic.period_s * cfg->synthetic.fps);
        cam->phase = (long)cam->index * 7919 % (turn > 0 ? turn : 1);
    } else {
        rt_source_options so;
        rt_link_watch_init(&cam->link, cfg, cam->index, &so);
        cam->link.camera_ctx = cam->cfg.ctx;
        so.record = cam->cfg.record;
        if (so.decode == IO_DECODE_GPU)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                             "camera %d (%s): decoding on the GPU needs the CUDA backend",
                             cam->index, cam->cfg.spec);
        so.decode = IO_DECODE_CPU; /* auto: the CPU runtime has no GPU */
        so.device = NULL;
        OMMA_TRY(rt_source_open(cam->cfg.spec, &so, &cam->src));
        const rt_source_info *info = rt_source_get_info(cam->src);
        shape.width = info->width;
        shape.height = info->height;
        shape.format = info->format;
        cam->live = info->live;
        cam->fps = info->fps;
    }
    size_t bytes = packed_bytes(&shape);
    for (int k = 0; k < 3; k++) {
        cam->bufs[k].data = malloc(bytes);
        if (!cam->bufs[k].data)
            return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "runtime: camera %d: %zu-byte frame buffers",
                             cam->index, bytes);
        cam->bufs[k].bytes = bytes;
    }
    cam->write = 0;
    cam->ready = 1;
    cam->work = 2;
    return OMMA_OK;
}

void rt_cpu_cam_close(rt_cpu_cam *cam)
{
    for (int k = 0; k < 3; k++) {
        free(cam->bufs[k].data);
        cam->bufs[k].data = NULL;
    }
    rt_source_close(cam->src);
    cam->src = NULL;
}

void rt_cpu_cam_queue(rt_cpu_cam *cam)
{
    rt_cpu_runtime *rt = cam->rt;
    if (cam->queued || cam->drained)
        return;
    cam->queued = 1;
    rt->ready_list[(rt->ready_head + rt->ready_count) % rt->cap] = cam->index;
    if (rt->ready_count++ == 0)
        pthread_cond_signal(&rt->wake);
}

static void report(rt_cpu_cam *cam, metrics_camera_state state, omma_status st, const char *detail)
{
    const rt_runtime_config *cfg = &cam->rt->cfg;
    metrics_camera_set_state(cfg->metrics, cam->index, state);
    if (cfg->on_camera) {
        rt_camera_event e = {cam->index, state, st, detail, cam->cfg.ctx};
        cfg->on_camera(cfg->ctx, &e);
    }
}

static void failed(rt_cpu_cam *cam, omma_status st)
{
    char detail[512];
    snprintf(detail, sizeof detail, "%s", omma_last_error());
    report(cam, METRICS_CAMERA_FAILED, st, detail);
}

/* Packs f into the camera's free buffer. */
static omma_status pack(rt_cpu_cam *cam, const omma_frame *f, rt_cpu_frame *b)
{
    size_t need = packed_bytes(f);
    if (need > b->bytes)
        return OMMA_FAIL(OMMA_ERR_FORMAT,
                         "camera %d: a %dx%d frame of %zu bytes in %zu-byte "
                         "buffers",
                         cam->index, f->width, f->height, need, b->bytes);
    omma_frame packed = *f;
    uint8_t *to = b->data;
    for (int p = 0; p < 3; p++) {
        size_t row = (size_t)vis_frame_row_bytes(f, p), rows = (size_t)vis_frame_plane_rows(f, p);
        if (!row) {
            packed.planes[p] = NULL;
            packed.pitch[p] = 0;
            continue;
        }
        for (size_t y = 0; y < rows; y++)
            memcpy(to + y * row, f->planes[p] + y * (size_t)f->pitch[p], row);
        packed.planes[p] = to;
        packed.pitch[p] = (int)row;
        to += row * rows;
    }
    packed.memory = OMMA_MEMORY_HOST;
    b->frame = packed;
    return OMMA_OK;
}

/* Hands frame f over as the camera's newest: a file waits until the worker
 * took the one before, a live camera replaces it. OMMA_ERR_CLOSED when the
 * runtime is stopping (the frame is not put). */
static omma_status put(rt_cpu_cam *cam, const omma_frame *f, uint64_t capture_ns,
                       const omma_box *truth)
{
    rt_cpu_runtime *rt = cam->rt;
    rt_cpu_frame *b = &cam->bufs[cam->write];
    OMMA_TRY(pack(cam, f, b));
    b->seq = ++cam->seq_put;
    b->capture_ns = capture_ns;
    b->has_truth = truth != NULL;
    if (truth)
        b->truth = *truth;
    pthread_mutex_lock(&rt->lock);
    while (!cam->live && cam->has_ready && !rt_cpu_stopping(rt) && !atomic_load(&cam->removing))
        pthread_cond_wait(&rt->taken, &rt->lock);
    if (rt_cpu_stopping(rt) || atomic_load(&cam->removing)) {
        pthread_mutex_unlock(&rt->lock);
        return OMMA_ERR_CLOSED;
    }
    /* Counted once put (before the worker can take it), so that every
     * frame in is processed or dropped. */
    metrics_frame_in(rt->cfg.metrics, cam->index);
    atomic_fetch_add_explicit(&rt->frames_in, 1, memory_order_relaxed);
    int was_ready = cam->ready;
    cam->ready = cam->write;
    cam->write = was_ready;
    cam->has_ready = 1;
    rt_cpu_cam_queue(cam);
    pthread_mutex_unlock(&rt->lock);
    return OMMA_OK;
}

void rt_cpu_cam_end(rt_cpu_cam *cam)
{
    rt_cpu_runtime *rt = cam->rt;
    pthread_mutex_lock(&rt->lock);
    cam->closed = 1;
    rt_cpu_cam_queue(cam);
    pthread_cond_signal(&rt->wake);
    pthread_cond_broadcast(&rt->taken); /* a remove waits for it */
    pthread_mutex_unlock(&rt->lock);
}

static void run_source(rt_cpu_cam *cam)
{
    rt_cpu_runtime *rt = cam->rt;
    rt_link_watch_sync(&cam->link, cam->src);
    for (long k = 0;; k++) {
        if (cam->cfg.max_frames > 0 && k >= cam->cfg.max_frames) {
            report(cam, METRICS_CAMERA_ENDED, OMMA_OK, "max frames");
            return;
        }
        omma_frame f;
        uint64_t capture_ns = 0;
        int eof = 0;
        omma_status st = rt_source_read(cam->src, &f, &capture_ns, &eof);
        if (st == OMMA_ERR_CLOSED ||
            (st == OMMA_OK && (rt_cpu_stopping(rt) || atomic_load(&cam->removing))))
            return; /* stopped or removed */
        if (st != OMMA_OK) {
            failed(cam, st);
            return;
        }
        if (eof) {
            report(cam, METRICS_CAMERA_ENDED, OMMA_OK, "end of stream");
            return;
        }
        st = put(cam, &f, capture_ns, NULL);
        if (st == OMMA_ERR_CLOSED)
            return;
        if (st != OMMA_OK) {
            failed(cam, st);
            return;
        }
    }
}

void *rt_cpu_cam_thread(void *arg)
{
    rt_cpu_cam *cam = arg;
    run_source(cam);
    rt_cpu_cam_end(cam);
    rt_cpu_thread_ended(cam->rt);
    return NULL;
}

/* Sleeps until t_ns, in steps of at most 100 ms so that a stop (or the
 * removal of an added camera's own driver's camera) is seen soon at low
 * frame rates. */
static void sleep_until(const rt_cpu_runtime *rt, const rt_cpu_driver *d, uint64_t t_ns)
{
    for (;;) {
        uint64_t now = core_now_ns();
        if (now >= t_ns || rt_cpu_stopping(rt) ||
            (d->cams == &d->one_cam && atomic_load(&rt->cams[d->one_cam].removing)))
            return;
        uint64_t until = t_ns - now > 100000000u ? now + 100000000u : t_ns;
        struct timespec ts = {(time_t)(until / 1000000000u), (long)(until % 1000000000u)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {
        }
    }
}

/* Frame k of a synthetic camera, rendered and put. Returns 0 when the
 * camera is done (max frames, stopping, failed). */
static int put_synthetic(rt_cpu_driver *d, rt_cpu_cam *cam, long k)
{
    if (cam->cfg.max_frames > 0 && k >= cam->cfg.max_frames) {
        report(cam, METRICS_CAMERA_ENDED, OMMA_OK, "max frames");
        return 0;
    }
    omma_frame f;
    omma_box truth;
    double timestamp_ms;
    omma_status st = rt_synthetic_frame(d->synth, k + cam->phase, &f, &timestamp_ms, &truth);
    uint64_t now = core_now_ns();
    if (st == OMMA_OK)
        st = put(cam, &f, now, &truth);
    if (st == OMMA_ERR_CLOSED)
        return 0;
    if (st != OMMA_OK) {
        failed(cam, st);
        return 0;
    }
    return 1;
}

void *rt_cpu_synthetic_driver(void *arg)
{
    rt_cpu_driver *d = arg;
    rt_cpu_runtime *rt = d->rt;
    uint64_t period = (uint64_t)(1e9 / rt->cfg.synthetic.fps), t0 = core_now_ns();
    int live = d->count;
    for (long k = 0; live > 0 && !rt_cpu_stopping(rt); k++) {
        sleep_until(rt, d, t0 + (uint64_t)k * period);
        for (int i = 0; i < d->count && !rt_cpu_stopping(rt); i++) {
            rt_cpu_cam *cam = &rt->cams[d->cams[i]];
            if (d->done[i])
                continue; /* its slot may be another camera's by now */
            if (atomic_load(&cam->removing) || !put_synthetic(d, cam, k)) {
                d->done[i] = 1;
                live--;
                rt_cpu_cam_end(cam); /* the last touch: a remove waits for it */
            }
        }
    }
    for (int i = 0; i < d->count; i++)
        if (!d->done[i])
            rt_cpu_cam_end(&rt->cams[d->cams[i]]);
    rt_cpu_thread_ended(rt);
    return NULL;
}
