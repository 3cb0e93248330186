#define _POSIX_C_SOURCE 200809L /* clock_gettime, pthread_condattr_setclock */
/* The multi-camera runtime on the CPU (runtime.h; rt_cpu_backend of
 * runtime_backend.h): the cameras' threads put frames into host buffers
 * (runtime_cpu_camera.c); one worker takes the newest frame of every
 * camera that has one, oldest ready first, up to max_batch, and runs them
 * as one batch of the CPU face pipeline, whose models use
 * cfg->pipeline.threads threads, then (with cfg->pose) each frame through
 * the pose pipeline, the poses attached to their faces
 * (vision/pose_attach.h); then it reports the results. While it
 * works, live cameras keep replacing their ready frame (those replaced are
 * the dropped ones) and files wait. */
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
#include "runtime/preview.h"
#include "runtime/runtime_cpu_private.h"
#include "vision/pose_attach.h"
#include "vision/thumb.h"

int rt_cpu_stopping(const rt_cpu_runtime *rt)
{
    return atomic_load_explicit(&rt->stopping, memory_order_relaxed);
}

void rt_cpu_thread_ended(rt_cpu_runtime *rt)
{
    pthread_mutex_lock(&rt->lock);
    rt->threads_left--;
    pthread_cond_broadcast(&rt->ended);
    pthread_mutex_unlock(&rt->lock);
}

static void cpu_stop(void *impl);

void rt_cpu_fail(rt_cpu_runtime *rt, omma_status st, const char *detail)
{
    pthread_mutex_lock(&rt->lock);
    if (rt->error == OMMA_OK) {
        rt->error = st;
        snprintf(rt->error_detail, sizeof rt->error_detail, "%s", detail);
    }
    pthread_mutex_unlock(&rt->lock);
    omma_log(OMMA_LOG_ERROR, "runtime: %s", detail);
    cpu_stop(rt);
}

/* A batch's poses (the runtime's pose pipeline on each frame), each
 * attached to its face. */
typedef struct cpu_poses {
    omma_pose *poses; /* max_poses per frame of the batch */
    int *counts;
    int *face_of; /* max_poses per frame */
} cpu_poses;

static omma_status pose_step(rt_cpu_runtime *rt, int n, const int *cams, const omma_frame *frames,
                             const omma_face *faces, const int *counts, cpu_poses *out)
{
    const int mp = rt->cfg.pose.max_poses, mf = rt->cfg.pipeline.max_faces;
    for (int i = 0; i < n; i++) {
        omma_pose *p = out->poses + (size_t)i * (size_t)mp;
        OMMA_TRY(omma_pose_pipeline_process(rt->pose, cams[i], &frames[i], p, &out->counts[i]));
        vis_pose_attach(faces + (size_t)i * (size_t)mf, counts[i], p, out->counts[i],
                        out->face_of + (size_t)i * (size_t)mp);
    }
    return OMMA_OK;
}

/* The results of a batch: callbacks, metrics, counters. */
static void report(rt_cpu_runtime *rt, int n, rt_cpu_cam *const *cams, const omma_face *faces,
                   const int *counts, const cpu_poses *poses, const uint64_t *dropped,
                   uint64_t done_ns)
{
    const rt_runtime_config *cfg = &rt->cfg;
    const size_t mp = (size_t)cfg->pose.max_poses;
    for (int i = 0; i < n; i++) {
        const rt_cpu_frame *b = &cams[i]->bufs[cams[i]->work];
        rt_result r = {.camera = cams[i]->index,
                       .gpu = -1,
                       .seq = b->seq,
                       .capture_ns = b->capture_ns,
                       .done_ns = done_ns,
                       .dropped = dropped[i],
                       .n_faces = counts[i],
                       .faces = faces + (size_t)i * (size_t)cfg->pipeline.max_faces,
                       .truth = b->has_truth ? &b->truth : NULL,
                       .width = b->frame.width,
                       .height = b->frame.height,
                       .fps = cams[i]->fps,
                       .camera_ctx = cams[i]->cfg.ctx};
        if (rt->pose) {
            r.n_poses = poses->counts[i];
            r.poses = poses->poses + (size_t)i * mp;
            r.pose_face = poses->face_of + (size_t)i * mp;
            atomic_fetch_add_explicit(&rt->poses, (uint64_t)r.n_poses, memory_order_relaxed);
        }
        if (dropped[i])
            metrics_frames_dropped(cfg->metrics, r.camera, dropped[i]);
        metrics_frame_done(cfg->metrics, r.camera, done_ns - b->capture_ns);
        atomic_fetch_add_explicit(&rt->frames_dropped, dropped[i], memory_order_relaxed);
        atomic_fetch_add_explicit(&rt->faces, (uint64_t)counts[i], memory_order_relaxed);
        if (cfg->on_result)
            cfg->on_result(cfg->ctx, &r);
    }
    atomic_fetch_add_explicit(&rt->frames_done, (uint64_t)n, memory_order_relaxed);
    atomic_fetch_add_explicit(&rt->batches, 1, memory_order_relaxed);
}

/* Under the lock: the ready frames of up to `max` cameras, oldest ready
 * first, move to their work buffers; cameras closed with nothing left
 * leave. Returns how many frames were taken; those of cameras added into
 * a slot since the last batch also go to fresh (*n_fresh of them). */
static int take(rt_cpu_runtime *rt, int max, rt_cpu_cam **picked, int *fresh, int *n_fresh)
{
    int n = 0;
    *n_fresh = 0;
    while (rt->ready_count > 0 && n < max) {
        rt_cpu_cam *cam = &rt->cams[rt->ready_list[rt->ready_head]];
        rt->ready_head = (rt->ready_head + 1) % rt->cap;
        rt->ready_count--;
        cam->queued = 0;
        if (cam->has_ready && atomic_load(&cam->removing)) {
            /* Being removed: not into a batch (its removal waits for
             * none), counted dropped. */
            cam->has_ready = 0;
            atomic_fetch_add_explicit(&rt->frames_dropped, 1, memory_order_relaxed);
            metrics_frames_dropped(rt->cfg.metrics, cam->index, 1);
        } else if (cam->has_ready) {
            int work = cam->work;
            cam->work = cam->ready;
            cam->ready = work;
            cam->has_ready = 0;
            cam->in_work = 1;
            if (cam->fresh) {
                cam->fresh = 0;
                fresh[(*n_fresh)++] = cam->index;
            }
            picked[n++] = cam;
        }
        if (cam->closed && !cam->has_ready && !cam->drained) {
            cam->drained = 1;
            rt->open_cams--;
        }
    }
    if (n > 0)
        pthread_cond_broadcast(&rt->taken);
    return n;
}

/* The previews due of the batch's cameras, from the frames the worker
 * still holds (preview.h); scratch holds the largest one. */
static void previews(rt_cpu_runtime *rt, int n, rt_cpu_cam *const *cams, uint8_t *scratch)
{
    rt_preview *p = rt->cfg.preview;
    uint64_t now = core_now_ns();
    for (int i = 0; i < n; i++) {
        int side = rt_preview_due(p, cams[i]->index, now);
        if (!side)
            continue;
        const rt_cpu_frame *b = &cams[i]->bufs[cams[i]->work];
        int tw, th;
        vis_thumb_size(b->frame.width, b->frame.height, side, &tw, &th);
        if (vis_thumb_ref(&b->frame, tw, th, scratch) == OMMA_OK)
            (void)rt_preview_put(p, cams[i]->index, scratch, tw, th, b->frame.width,
                                 b->frame.height, b->seq, b->capture_ns);
    }
}

static void *worker(void *arg)
{
    rt_cpu_runtime *rt = arg;
    const rt_runtime_config *cfg = &rt->cfg;
    int max = cfg->pipeline.max_batch;
    rt_cpu_cam **picked = calloc((size_t)max, sizeof *picked);
    int *cams = calloc((size_t)max, sizeof *cams), *counts = calloc((size_t)max, sizeof *counts);
    int *fresh = calloc((size_t)max, sizeof *fresh), n_fresh = 0;
    omma_frame *frames = calloc((size_t)max, sizeof *frames);
    uint64_t *dropped = calloc((size_t)max, sizeof *dropped);
    omma_face *faces = calloc((size_t)max * (size_t)cfg->pipeline.max_faces, sizeof *faces);
    uint8_t *scratch =
        cfg->preview ? malloc((size_t)RT_PREVIEW_MAX_SIDE * RT_PREVIEW_MAX_SIDE * 3) : NULL;
    cpu_poses poses = {0};
    if (rt->pose) {
        size_t mp = (size_t)max * (size_t)cfg->pose.max_poses;
        poses.poses = calloc(mp, sizeof *poses.poses);
        poses.counts = calloc((size_t)max, sizeof *poses.counts);
        poses.face_of = calloc(mp, sizeof *poses.face_of);
    }
    int pose_ok = !rt->pose || (poses.poses && poses.counts && poses.face_of);
    omma_status st = picked && cams && counts && fresh && frames && dropped && faces &&
                             (scratch || !cfg->preview) && pose_ok
                         ? OMMA_OK
                         : OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "runtime: worker buffers");
    uint64_t cpu0 = core_thread_cpu_ns();
    pthread_mutex_lock(&rt->lock);
    while (st == OMMA_OK) {
        /* With cameras added live, until stopped. */
        while (rt->ready_count == 0 &&
               (rt->open_cams > 0 || (cfg->max_cameras > 0 && !rt_cpu_stopping(rt))))
            pthread_cond_wait(&rt->wake, &rt->lock);
        if (rt->ready_count == 0)
            break; /* every camera drained */
        int n = take(rt, max, picked, fresh, &n_fresh);
        pthread_mutex_unlock(&rt->lock);
        if (n_fresh > 0) /* a slot's new camera: not its predecessor's faces */
            st = omma_face_pipeline_reset_cameras(rt->pipe, n_fresh, fresh);
        for (int i = 0; i < n_fresh && st == OMMA_OK && rt->pose; i++)
            st = omma_pose_pipeline_reset(rt->pose, fresh[i]); /* nor its people */
        for (int i = 0; i < n; i++) {
            rt_cpu_cam *cam = picked[i];
            const rt_cpu_frame *b = &cam->bufs[cam->work];
            cams[i] = cam->index;
            frames[i] = b->frame;
            dropped[i] = b->seq - cam->last_seq - 1;
            cam->last_seq = b->seq;
        }
        if (n > 0 && st == OMMA_OK) {
            st = omma_face_pipeline_process_batch(rt->pipe, n, cams, frames, faces, counts);
            if (st == OMMA_OK && rt->pose)
                st = pose_step(rt, n, cams, frames, faces, counts, &poses);
            if (st == OMMA_OK)
                report(rt, n, picked, faces, counts, &poses, dropped, core_now_ns());
            if (st == OMMA_OK && scratch)
                previews(rt, n, picked, scratch);
        }
        uint64_t cpu = core_thread_cpu_ns();
        atomic_fetch_add_explicit(&rt->worker_cpu_ns, cpu - cpu0, memory_order_relaxed);
        cpu0 = cpu;
        pthread_mutex_lock(&rt->lock);
        for (int i = 0; i < n; i++)
            picked[i]->in_work = 0;
        if (rt->removals > 0)
            pthread_cond_broadcast(&rt->taken);
    }
    rt->worker_done = 1;
    pthread_cond_broadcast(&rt->taken);
    pthread_mutex_unlock(&rt->lock);
    if (st != OMMA_OK)
        rt_cpu_fail(rt, st, omma_last_error());
    free(picked);
    free(cams);
    free(counts);
    free(fresh);
    free(frames);
    free(dropped);
    free(faces);
    free(scratch);
    free(poses.poses);
    free(poses.counts);
    free(poses.face_of);
    rt_cpu_thread_ended(rt);
    return NULL;
}

static omma_status start_thread(rt_cpu_runtime *rt, pthread_t *t, void *(*fn)(void *), void *arg,
                                int *started)
{
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_mutex_lock(&rt->lock);
    rt->threads_left++;
    pthread_mutex_unlock(&rt->lock);
    int rc = pthread_create(t, &attr, fn, arg);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        rt_cpu_thread_ended(rt);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "runtime: pthread_create: %s", strerror(rc));
    }
    *started = 1;
    return OMMA_OK;
}

static omma_status register_camera(rt_cpu_runtime *rt, const rt_cpu_cam *cam)
{
    return rt_metrics_register(rt->cfg.metrics, cam->index, &cam->cfg, -1, cam->src); /* no GPU */
}

static omma_status register_metrics(rt_cpu_runtime *rt)
{
    for (int i = 0; i < rt->n_cams; i++)
        OMMA_TRY(register_camera(rt, &rt->cams[i]));
    return OMMA_OK;
}

/* The synthetic cameras in groups of synthetic_per_thread, a synthetic
 * source per group (its creation checks the synthetic options). */
static omma_status make_drivers(rt_cpu_runtime *rt)
{
    int synthetic = 0, per = rt->cfg.synthetic_per_thread;
    for (int i = 0; i < rt->n_cams; i++)
        synthetic += !rt->cfg.cameras[i].spec;
    if (!synthetic)
        return OMMA_OK;
    rt->n_drivers = (synthetic + per - 1) / per;
    rt->drivers = calloc((size_t)rt->n_drivers, sizeof *rt->drivers);
    rt->driver_cams = calloc((size_t)synthetic, sizeof *rt->driver_cams);
    rt->driver_done = calloc((size_t)synthetic, 1);
    if (!rt->drivers || !rt->driver_cams || !rt->driver_done)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "runtime: synthetic drivers");
    int k = 0;
    for (int i = 0; i < rt->n_cams; i++) {
        if (rt->cfg.cameras[i].spec)
            continue;
        rt_cpu_driver *d = &rt->drivers[k / per];
        if (d->count == 0) {
            d->rt = rt;
            d->cams = &rt->driver_cams[k];
            d->done = &rt->driver_done[k];
            OMMA_TRY(rt_synthetic_create(rt->cfg.photo, &rt->cfg.synthetic, &d->synth));
        }
        d->cams[d->count++] = i;
        k++;
    }
    return OMMA_OK;
}

static omma_status open_all(rt_cpu_runtime *rt)
{
    OMMA_TRY(make_drivers(rt));
    for (int i = 0; i < rt->n_cams; i++)
        OMMA_TRY(rt_cpu_cam_open(rt, &rt->cams[i]));
    omma_face_pipeline_options po = rt->cfg.pipeline;
    po.backend = OMMA_BACKEND_CPU;
    po.device = NULL;
    OMMA_TRY(omma_face_pipeline_create(&po, &rt->pipe));
    if (rt->cfg.pose.landmark_model) {
        omma_pose_pipeline_options pp = rt->cfg.pose;
        pp.backend = OMMA_BACKEND_CPU;
        pp.device = NULL;
        pp.threads = rt->cfg.pipeline.threads;
        OMMA_TRY(omma_pose_pipeline_create(&pp, &rt->pose));
    }
    OMMA_TRY(register_metrics(rt));
    OMMA_TRY(start_thread(rt, &rt->worker, worker, rt, &rt->worker_started));
    for (int i = 0; i < rt->n_cams; i++)
        if (rt->cams[i].src)
            OMMA_TRY(start_thread(rt, &rt->cams[i].thread, rt_cpu_cam_thread, &rt->cams[i],
                                  &rt->cams[i].started));
    for (int d = 0; d < rt->n_drivers; d++)
        OMMA_TRY(start_thread(rt, &rt->drivers[d].thread, rt_cpu_synthetic_driver, &rt->drivers[d],
                              &rt->drivers[d].started));
    return OMMA_OK;
}

static void cpu_destroy(void *impl);

/* Everything of a camera's slot (its thread or driver joined). */
static void close_slot(rt_cpu_cam *cam)
{
    rt_cpu_driver *own = cam->own;
    if (own) {
        if (own->started)
            pthread_join(own->thread, NULL);
        rt_synthetic_destroy(own->synth);
        free(own);
        cam->own = NULL;
    }
    rt_cpu_cam_close(cam);
    free(cam->spec_copy);
    free(cam->name_copy);
    cam->spec_copy = cam->name_copy = NULL;
}

static omma_status cpu_start(const rt_runtime_config *cfg, void **out)
{
    *out = NULL;
    if (cfg->publish)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "runtime: the frame bus shares GPU memory: --publish needs the GPU "
                         "backend");
    rt_cpu_runtime *rt = calloc(1, sizeof *rt);
    int cap = cfg->max_cameras > 0 ? cfg->max_cameras : cfg->n_cameras;
    if (rt) {
        rt->cams = calloc((size_t)cap, sizeof *rt->cams);
        rt->ready_list = calloc((size_t)cap, sizeof *rt->ready_list);
    }
    if (!rt || !rt->cams || !rt->ready_list) {
        if (rt)
            free(rt->cams);
        free(rt);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "runtime");
    }
    rt->cfg = *cfg;
    rt->n_cams = cfg->n_cameras;
    rt->cap = cap;
    rt->open_cams = cfg->n_cameras;
    for (int i = 0; i < rt->cap; i++) {
        rt->cams[i].rt = rt;
        rt->cams[i].index = i;
        if (i < rt->n_cams) {
            rt->cams[i].cfg = cfg->cameras[i];
            rt->cams[i].state = RT_CPU_SLOT_RUNNING;
        }
    }
    pthread_mutex_init(&rt->lock, NULL);
    pthread_cond_init(&rt->wake, NULL);
    pthread_cond_init(&rt->taken, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&rt->ended, &attr);
    pthread_condattr_destroy(&attr);
    omma_status st = open_all(rt);
    if (st != OMMA_OK) {
        char detail[512];
        snprintf(detail, sizeof detail, "%s", omma_last_error());
        cpu_destroy(rt);
        return OMMA_FAIL(st, "%s", detail);
    }
    *out = rt;
    return OMMA_OK;
}

static void cpu_stop(void *impl)
{
    rt_cpu_runtime *rt = impl;
    if (!rt || atomic_exchange(&rt->stopping, 1))
        return;
    pthread_mutex_lock(&rt->lock);
    /* No frame is put from now on (put checks under the lock), and files
     * waiting for the worker give up theirs. The worker takes the frames
     * ready now, then sees every camera closed, whether or not its thread
     * is still there to say so. Under the lock: a remove closes sources. */
    for (int i = 0; i < rt->cap; i++) {
        rt_cpu_cam *cam = &rt->cams[i];
        if (cam->state != RT_CPU_SLOT_RUNNING && cam->state != RT_CPU_SLOT_REMOVING)
            continue;
        rt_source_interrupt(cam->src);
        cam->closed = 1;
        rt_cpu_cam_queue(cam);
    }
    pthread_cond_broadcast(&rt->taken);
    pthread_cond_signal(&rt->wake);
    pthread_mutex_unlock(&rt->lock);
}

static omma_status cpu_wait(void *impl, int timeout_ms)
{
    rt_cpu_runtime *rt = impl;
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

static void cpu_destroy(void *impl)
{
    rt_cpu_runtime *rt = impl;
    if (!rt)
        return;
    cpu_stop(rt);
    (void)cpu_wait(rt, -1);
    if (rt->worker_started)
        pthread_join(rt->worker, NULL);
    for (int i = 0; i < rt->cap; i++)
        if (rt->cams[i].started)
            pthread_join(rt->cams[i].thread, NULL);
    for (int d = 0; d < rt->n_drivers; d++) {
        if (rt->drivers[d].started)
            pthread_join(rt->drivers[d].thread, NULL);
        rt_synthetic_destroy(rt->drivers[d].synth);
    }
    for (int i = 0; i < rt->cap; i++)
        close_slot(&rt->cams[i]);
    omma_face_pipeline_destroy(rt->pipe);
    omma_pose_pipeline_destroy(rt->pose);
    pthread_cond_destroy(&rt->wake);
    pthread_cond_destroy(&rt->taken);
    pthread_cond_destroy(&rt->ended);
    pthread_mutex_destroy(&rt->lock);
    free(rt->drivers);
    free(rt->driver_cams);
    free(rt->driver_done);
    free(rt->ready_list);
    free(rt->cams);
    free(rt);
}

static void cpu_get_stats(void *impl, rt_runtime_stats *out)
{
    rt_cpu_runtime *rt = impl;
    memset(out, 0, sizeof *out);
    out->frames_in = atomic_load(&rt->frames_in);
    out->frames_done = atomic_load(&rt->frames_done);
    out->frames_dropped = atomic_load(&rt->frames_dropped);
    out->faces = atomic_load(&rt->faces);
    out->poses = atomic_load(&rt->poses);
    out->batches = atomic_load(&rt->batches);
    out->worker_cpu_ns = atomic_load(&rt->worker_cpu_ns);
}

static void cpu_interrupt_camera(void *impl, int index)
{
    rt_cpu_runtime *rt = impl;
    pthread_mutex_lock(&rt->lock);
    if (index >= 0 && index < rt->cap && rt->cams[index].state == RT_CPU_SLOT_RUNNING) {
        rt_cpu_cam *cam = &rt->cams[index];
        atomic_store(&cam->removing, 1);
        rt_source_interrupt(cam->src);
        rt_cpu_cam_queue(cam); /* its ready frame out of the list, dropped */
        pthread_cond_broadcast(&rt->taken); /* a file's thread waiting for the worker */
    }
    pthread_mutex_unlock(&rt->lock);
}

static omma_status cpu_remove_camera(void *impl, int index)
{
    rt_cpu_runtime *rt = impl;
    pthread_mutex_lock(&rt->lock);
    if (index < 0 || index >= rt->cap || rt->cams[index].state != RT_CPU_SLOT_RUNNING) {
        int removing =
            index >= 0 && index < rt->cap && rt->cams[index].state == RT_CPU_SLOT_REMOVING;
        pthread_mutex_unlock(&rt->lock);
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "runtime: camera %d: %s", index,
                         removing ? "being removed already" : "no such camera");
    }
    rt_cpu_cam *cam = &rt->cams[index];
    cam->state = RT_CPU_SLOT_REMOVING;
    rt->removals++;
    atomic_store(&cam->removing, 1);
    rt_source_interrupt(cam->src);
    pthread_cond_broadcast(&rt->taken); /* a file's thread waiting for the worker */
    if (cam->src && !cam->started) { /* its thread never started */
        cam->closed = 1;
        rt_cpu_cam_queue(cam);
    }
    pthread_mutex_unlock(&rt->lock);
    /* Its thread (or its own driver) ends it: closed, its ready frame left
     * for the worker. A start-up driver's camera: the driver lets go. */
    if (cam->started)
        pthread_join(cam->thread, NULL);
    cam->started = 0;
    if (cam->own && cam->own->started) {
        pthread_join(cam->own->thread, NULL);
        cam->own->started = 0;
    }
    pthread_mutex_lock(&rt->lock);
    while (!cam->closed && !rt_cpu_stopping(rt))
        pthread_cond_wait(&rt->taken, &rt->lock);
    cam->closed = 1;
    rt_cpu_cam_queue(cam);
    while (!(cam->drained && !cam->in_work) && !rt->worker_done)
        pthread_cond_wait(&rt->taken, &rt->lock);
    /* Out of stop's reach, then freed outside the lock. */
    rt_source *src = cam->src;
    cam->src = NULL;
    pthread_mutex_unlock(&rt->lock);
    rt_source_close(src);
    close_slot(cam);
    if (rt->cfg.metrics)
        metrics_remove_camera(rt->cfg.metrics, index);
    pthread_mutex_lock(&rt->lock);
    rt->removals--;
    cam->state = RT_CPU_SLOT_FREE;
    pthread_mutex_unlock(&rt->lock);
    return OMMA_OK;
}

/* Undoes an add that failed before its camera ran: the slot free again. */
static void unreserve(rt_cpu_runtime *rt, rt_cpu_cam *cam, int registered)
{
    if (registered && rt->cfg.metrics)
        metrics_remove_camera(rt->cfg.metrics, cam->index);
    close_slot(cam);
    pthread_mutex_lock(&rt->lock);
    cam->state = RT_CPU_SLOT_FREE;
    pthread_mutex_unlock(&rt->lock);
}

/* An added synthetic camera's own driver and synthetic source. */
static omma_status make_own_driver(rt_cpu_runtime *rt, rt_cpu_cam *cam)
{
    rt_cpu_driver *d = calloc(1, sizeof *d);
    if (!d)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "runtime: camera %d's driver", cam->index);
    d->rt = rt;
    d->one_cam = cam->index;
    d->cams = &d->one_cam;
    d->done = &d->one_done;
    d->count = 1;
    cam->own = d;
    return rt_synthetic_create(rt->cfg.photo, &rt->cfg.synthetic, &d->synth);
}

static omma_status cpu_add_camera(void *impl, const rt_camera_config *cfg, int *index)
{
    rt_cpu_runtime *rt = impl;
    const char *what = cfg->name ? cfg->name : cfg->spec ? "a source's camera" : "synthetic";
    if (rt->cfg.max_cameras <= 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "runtime: camera %s: cameras are added only to a runtime started with "
                         "max cameras",
                         what);
    if (!cfg->spec && !rt->cfg.photo)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "runtime: camera %s: synthetic, and no photo", what);
    pthread_mutex_lock(&rt->lock);
    int i = 0;
    while (i < rt->cap && rt->cams[i].state != RT_CPU_SLOT_FREE)
        i++;
    if (rt_cpu_stopping(rt) || i == rt->cap) {
        pthread_mutex_unlock(&rt->lock);
        if (i == rt->cap)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                             "runtime: camera %s: no room (max cameras %d, all in use)", what,
                             rt->cap);
        return OMMA_FAIL(OMMA_ERR_CLOSED, "runtime: camera %s: the runtime is stopping", what);
    }
    rt_cpu_cam *cam = &rt->cams[i];
    memset(cam, 0, sizeof *cam);
    cam->rt = rt;
    cam->index = i;
    cam->state = RT_CPU_SLOT_RESERVED;
    pthread_mutex_unlock(&rt->lock);

    cam->cfg = *cfg;
    int registered = 0;
    omma_status st = rt_copy_string(cfg->spec, &cam->spec_copy);
    if (st == OMMA_OK)
        st = rt_copy_string(cfg->name, &cam->name_copy);
    cam->cfg.spec = cam->spec_copy;
    cam->cfg.name = cam->name_copy;
    if (st == OMMA_OK)
        st = rt_cpu_cam_open(rt, cam);
    if (st == OMMA_OK && !cfg->spec)
        st = make_own_driver(rt, cam);
    if (st == OMMA_OK && (st = register_camera(rt, cam)) == OMMA_OK)
        registered = 1;
    pthread_mutex_lock(&rt->lock);
    if (st == OMMA_OK && rt_cpu_stopping(rt))
        st = OMMA_FAIL(OMMA_ERR_CLOSED, "runtime: camera %s: the runtime is stopping", what);
    if (st == OMMA_OK) {
        cam->state = RT_CPU_SLOT_RUNNING;
        cam->fresh = 1;
        rt->open_cams++;
    }
    pthread_mutex_unlock(&rt->lock);
    if (st != OMMA_OK) {
        char detail[512];
        snprintf(detail, sizeof detail, "%s", omma_last_error());
        unreserve(rt, cam, registered);
        return OMMA_FAIL(st, "%s", detail);
    }
    st = cam->own ? start_thread(rt, &cam->own->thread, rt_cpu_synthetic_driver, cam->own,
                                 &cam->own->started)
                  : start_thread(rt, &cam->thread, rt_cpu_cam_thread, cam, &cam->started);
    if (st != OMMA_OK) {
        char detail[512];
        snprintf(detail, sizeof detail, "%s", omma_last_error());
        pthread_mutex_lock(&rt->lock); /* no thread to end it */
        cam->closed = 1;
        rt_cpu_cam_queue(cam);
        pthread_mutex_unlock(&rt->lock);
        (void)cpu_remove_camera(rt, i);
        return OMMA_FAIL(st, "%s", detail);
    }
    *index = i;
    return OMMA_OK;
}

const rt_backend rt_cpu_backend = {"cpu",          cpu_start,         cpu_stop,
                                   cpu_wait,       cpu_destroy,       cpu_get_stats,
                                   cpu_add_camera, cpu_remove_camera, cpu_interrupt_camera};
