#define _POSIX_C_SOURCE 200809L /* strdup */
/* Cameras added and removed while the GPU runtime runs (runtime.h's
 * rt_runtime_add_camera, rt_runtime_remove_camera and
 * rt_runtime_interrupt_camera; the slots of runtime_private.h). An add
 * opens the camera outside the locks (a source may take seconds), places
 * it on a GPU, makes its ring there, forgets the GPU pipeline's tracker of
 * its index (a camera removed from it had one) and starts its thread (a
 * synthetic camera: a driver of its own). A remove closes its ring, waits
 * for its thread or driver to let go of it and for its GPU's worker and
 * sink to be done with its frames, then frees it. No lock is held across
 * a GPU wait (the ring's destroy waits for its slots' events). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "runtime/runtime_backend.h"
#include "runtime/runtime_private.h"

/* The camera's GPU by the placement policy: the fewest pixels per second
 * (least loaded), or the fewest cameras (round robin, with holes left by
 * removed cameras). A video decoded on a GPU stays there. */
static void place(rt_gpu_runtime *rt, rt_cam *cam)
{
    pthread_mutex_lock(&rt->place_lock);
    if (!cam->gpu) {
        int best = 0;
        for (int k = 1; k < rt->n_gpus; k++) {
            const rt_gpu *g = &rt->gpus[k], *b = &rt->gpus[best];
            if (rt->cfg.placement == RT_PLACE_LEAST_LOADED ? g->load_px_per_s < b->load_px_per_s
                                                           : g->n_cams < b->n_cams)
                best = k;
        }
        cam->gpu = &rt->gpus[best];
    }
    cam->gpu->n_cams++;
    cam->gpu->load_px_per_s += cam->pixels_per_s;
    pthread_mutex_unlock(&rt->place_lock);
}

/* Undoes place (placed) and the decoders' share open_source counted. */
static void unplace(rt_gpu_runtime *rt, rt_cam *cam, int placed)
{
    rt_gpu *g = cam->gpu;
    if (!g)
        return;
    pthread_mutex_lock(&rt->place_lock);
    if (placed) {
        g->n_cams--;
        g->load_px_per_s -= cam->pixels_per_s;
    }
    g->decode_px_per_s -= cam->decode_px_per_s;
    pthread_mutex_unlock(&rt->place_lock);
    cam->decode_px_per_s = 0;
    cam->gpu = NULL;
}

/* Under the runtime's lock: the camera's source and ring closed; its
 * thread or driver ends it, the worker takes the frames put before. */
static void end_source(rt_cam *cam)
{
    atomic_store(&cam->removing, 1);
    rt_source_interrupt(cam->src);
    rt_ring_close(cam->ring);
    if (cam->ring)
        rt_gpu_notify(cam->gpu, cam);
}

/* Under the GPU's lock: whether a batch in flight (submitted, not yet
 * reported by the sink) holds a frame of camera `index` (frames pose
 * handed back for the worker to release: rt_pose_holds). */
static int in_flight(const rt_gpu *g, int index)
{
    int lanes = g->rt->cfg.pipeline.lanes;
    for (int i = 0; i < g->pending_count; i++) {
        const rt_batch *b = &g->batches[g->pending[(g->pending_head + i) % lanes]];
        for (int k = 0; k < b->n; k++)
            if (b->cams[k] == index)
                return 1;
    }
    return 0;
}

/* Under the GPU's lock: camera `index` out of the ready list (its slot
 * may be another camera's, on another GPU, next). */
static void unqueue(rt_gpu *g, rt_cam *cam)
{
    int kept = 0;
    for (int i = 0; i < g->ready_count; i++) {
        int c = g->ready[(g->ready_head + i) % g->ready_cap];
        if (c != cam->index)
            g->ready[(g->ready_head + kept++) % g->ready_cap] = c;
    }
    g->ready_count = kept;
    cam->queued = 0;
}

/* The slot's own allocations; under the runtime's lock, the slot free. */
static void free_slot(rt_gpu_runtime *rt, rt_cam *cam)
{
    free(cam->own);
    free(cam->spec_copy);
    free(cam->name_copy);
    pthread_mutex_lock(&rt->lock);
    cam->own = NULL;
    cam->spec_copy = cam->name_copy = NULL;
    cam->state = RT_CAM_FREE;
    pthread_mutex_unlock(&rt->lock);
}

omma_status rt_gpu_remove_camera(void *impl, int index)
{
    rt_gpu_runtime *rt = impl;
    pthread_mutex_lock(&rt->lock);
    if (index < 0 || index >= rt->cap || rt->cams[index].state != RT_CAM_RUNNING) {
        int removing =
            index >= 0 && index < rt->cap &&
            (rt->cams[index].state == RT_CAM_REMOVING || rt->cams[index].state == RT_CAM_CLOSING);
        pthread_mutex_unlock(&rt->lock);
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "runtime: camera %d: %s", index,
                         removing ? "being removed already" : "no such camera");
    }
    rt_cam *cam = &rt->cams[index];
    cam->state = RT_CAM_REMOVING;
    end_source(cam);
    pthread_mutex_unlock(&rt->lock);

    /* Its thread or driver lets go of it (a start-up driver's camera: the
     * driver sees it removed at its next frame time). */
    if (cam->started) {
        pthread_join(cam->thread, NULL);
        cam->started = 0;
    } else if (cam->own) {
        if (cam->own->started)
            pthread_join(cam->own->thread, NULL);
        cam->own->started = 0;
    } else if (rt_cam_synthetic(cam)) {
        pthread_mutex_lock(&rt->lock);
        while (!cam->let_go)
            pthread_cond_wait(&rt->ended, &rt->lock);
        pthread_mutex_unlock(&rt->lock);
    }

    /* The worker takes what its ring holds, then finds it closed; the sink
     * reports the batches with its frames. */
    rt_gpu *g = cam->gpu;
    rt_gpu_notify(g, cam);
    pthread_mutex_lock(&g->lock);
    g->removals++;
    while (!cam->drained && !g->worker_done)
        pthread_cond_wait(&g->gone, &g->lock);
    while (in_flight(g, index) || rt_pose_holds(g, index))
        pthread_cond_wait(&g->gone, &g->lock);
    unqueue(g, cam);
    if (!cam->drained) { /* the worker ended first (an error) */
        cam->drained = 1;
        g->open_cams--;
    }
    g->removals--;
    pthread_mutex_unlock(&g->lock);

    /* Out of stop's and the stats' reach, then freed outside the locks. */
    pthread_mutex_lock(&rt->lock);
    cam->state = RT_CAM_CLOSING;
    rt->removed_decode_ns += atomic_load(&cam->decode_ns);
    rt->removed_decode_cpu_ns += atomic_load(&cam->decode_cpu_ns);
    core_cpu_parts_add_to(&cam->cpu, &rt->removed_cpu);
    pthread_mutex_unlock(&rt->lock);
    rt_cam_close(cam);
    unplace(rt, cam, 1);
    if (rt->cfg.metrics)
        metrics_remove_camera(rt->cfg.metrics, index);
    free_slot(rt, cam);
    return OMMA_OK;
}

void rt_gpu_interrupt_camera(void *impl, int index)
{
    rt_gpu_runtime *rt = impl;
    pthread_mutex_lock(&rt->lock);
    if (index >= 0 && index < rt->cap && rt->cams[index].state == RT_CAM_RUNNING)
        end_source(&rt->cams[index]);
    pthread_mutex_unlock(&rt->lock);
}

/* An added synthetic camera's own driver (one camera, its frames from
 * the time it starts). */
static omma_status make_own_driver(rt_gpu_runtime *rt, rt_cam *cam)
{
    rt_driver *d = calloc(1, sizeof *d);
    if (!d)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "runtime: camera %d's driver", cam->index);
    d->rt = rt;
    d->one_cam = cam->index;
    d->cams = &d->one_cam;
    d->done = &d->one_done;
    d->count = 1;
    cam->own = d;
    return OMMA_OK;
}

/* Undoes an add that failed before its camera ran: the slot free again. */
static void unreserve(rt_gpu_runtime *rt, rt_cam *cam, int placed, int registered)
{
    if (registered && rt->cfg.metrics)
        metrics_remove_camera(rt->cfg.metrics, cam->index);
    rt_cam_close(cam);
    unplace(rt, cam, placed);
    free_slot(rt, cam);
}

omma_status rt_gpu_add_camera(void *impl, const rt_camera_config *cfg, int *index)
{
    rt_gpu_runtime *rt = impl;
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
    while (i < rt->cap && rt->cams[i].state != RT_CAM_FREE)
        i++;
    if (rt_stopping(rt) || i == rt->cap) {
        pthread_mutex_unlock(&rt->lock);
        if (i == rt->cap)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                             "runtime: camera %s: no room (max cameras %d, all in use)", what,
                             rt->cap);
        return OMMA_FAIL(OMMA_ERR_CLOSED, "runtime: camera %s: the runtime is stopping", what);
    }
    rt_cam *cam = &rt->cams[i];
    memset(cam, 0, sizeof *cam);
    atomic_init(&cam->removing, 0);
    atomic_init(&cam->decode_ns, 0);
    atomic_init(&cam->decode_cpu_ns, 0);
    core_cpu_parts_init(&cam->cpu);
    cam->rt = rt;
    cam->index = i;
    cam->state = RT_CAM_RESERVED;
    pthread_mutex_unlock(&rt->lock);

    cam->cfg = *cfg;
    int placed = 0, registered = 0;
    omma_status st = rt_copy_string(cfg->spec, &cam->spec_copy);
    if (st == OMMA_OK)
        st = rt_copy_string(cfg->name, &cam->name_copy);
    cam->cfg.spec = cam->spec_copy;
    cam->cfg.name = cam->name_copy;
    if (st == OMMA_OK)
        st = rt_cam_open(rt, cam);
    if (st == OMMA_OK) {
        place(rt, cam);
        placed = 1;
        st = rt_cam_prepare(cam);
    }
    /* A camera removed from this index had its faces tracked: not the new
     * one's (no batch of this index is in flight on that GPU). */
    if (st == OMMA_OK)
        st = omma_face_pipeline_reset_cameras(cam->gpu->pipe, 1, &i);
    if (st == OMMA_OK)
        rt_pose_forget(cam->gpu, i); /* nor its people */
    if (st == OMMA_OK && rt_cam_synthetic(cam))
        st = make_own_driver(rt, cam);
    if (st == OMMA_OK && (st = rt_register_camera(rt, cam)) == OMMA_OK)
        registered = 1;
    pthread_mutex_lock(&rt->lock);
    if (st == OMMA_OK && rt_stopping(rt))
        st = OMMA_FAIL(OMMA_ERR_CLOSED, "runtime: camera %s: the runtime is stopping", what);
    if (st == OMMA_OK) {
        rt_gpu *g = cam->gpu;
        pthread_mutex_lock(&g->lock);
        g->open_cams++; /* its worker waits for it from now */
        pthread_mutex_unlock(&g->lock);
        cam->state = RT_CAM_RUNNING;
        rt->threads_left++; /* its thread's, before a wait can miss it */
    }
    pthread_mutex_unlock(&rt->lock);
    if (st != OMMA_OK) {
        char detail[512];
        snprintf(detail, sizeof detail, "%s", omma_last_error());
        unreserve(rt, cam, placed, registered);
        return OMMA_FAIL(st, "%s", detail);
    }
    st = cam->own
             ? rt_start_thread(rt, &cam->own->thread, rt_synthetic_driver, cam->own,
                               &cam->own->started, "synth-c", i, 1)
             : rt_start_thread(rt, &cam->thread, rt_cam_thread, cam, &cam->started, "cam", i, 1);
    if (st != OMMA_OK) {
        char detail[512];
        snprintf(detail, sizeof detail, "%s", omma_last_error());
        (void)rt_gpu_remove_camera(rt, i); /* no thread to let go of it */
        return OMMA_FAIL(st, "%s", detail);
    }
    *index = i;
    return OMMA_OK;
}
