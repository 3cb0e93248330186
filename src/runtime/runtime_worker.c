#define _POSIX_C_SOURCE 200809L /* clock_gettime, pthread_condattr_setclock */
/* A GPU of the runtime (runtime.h): its pipeline and pool, its worker
 * thread (batches the ready cameras' frames and submits them; it waits on
 * the host only for frames or a free lane, never for the GPU) and its sink
 * thread (waits for each batch's results, oldest first, and reports
 * them). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"
#include "gpu/check.h"
#include "gpu/stream_pool.h"
#include "gpu/memory.h"
#include "pipeline/face_pipeline_async.h"
#include "ipc/bus_publisher.h"
#include "runtime/preview.h"
#include "runtime/runtime_private.h"
#include "vision/cuda_vision.h"
#include "vision/thumb.h"

#define PREVIEW_SLOT_BYTES ((size_t)RT_PREVIEW_MAX_SIDE * RT_PREVIEW_MAX_SIDE * 3)

omma_status rt_gpu_prepare(rt_gpu *g)
{
    const rt_runtime_config *cfg = &g->rt->cfg;
    int lanes = cfg->pipeline.lanes, batch = cfg->pipeline.max_batch;
    pthread_mutex_init(&g->lock, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&g->wake, &attr);
    pthread_cond_init(&g->sink_wake, &attr);
    pthread_cond_init(&g->gone, &attr);
    pthread_condattr_destroy(&attr);
    g->ready_cap = g->rt->cap > 0 ? g->rt->cap : 1; /* every camera could be placed here */
    g->ready = calloc((size_t)g->ready_cap, sizeof *g->ready);
    g->batches = calloc((size_t)lanes, sizeof *g->batches);
    g->pending = calloc((size_t)lanes, sizeof *g->pending);
    g->faces = calloc((size_t)batch * (size_t)cfg->pipeline.max_faces, sizeof *g->faces);
    g->counts = calloc((size_t)batch, sizeof *g->counts);
    if (!g->ready || !g->batches || !g->pending || !g->faces || !g->counts)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "runtime: GPU %d buffers", g->ordinal);
    g->free_lanes = lanes;
    if (!g->dev) /* opened early when sources decode on the GPUs */
        OMMA_TRY(omma_device_open(g->ordinal, &g->dev));
    omma_face_pipeline_options po = cfg->pipeline;
    po.backend = OMMA_BACKEND_CUDA;
    po.device = g->dev;
    OMMA_TRY(omma_face_pipeline_create(&po, &g->pipe));
    OMMA_TRY(rt_pose_prepare(g));
    for (int l = 0; l < lanes; l++)
        for (int k = 0; k < 2; k++)
            OMMA_TRY(gpu_event_acquire(g->dev, GPU_EVENT_TIMING, &g->timing[l][k]));
    if (cfg->preview) {
        g->preview_bytes = (size_t)lanes * RT_GPU_PREVIEWS * PREVIEW_SLOT_BYTES;
        OMMA_TRY(gpu_stream_acquire(g->dev, GPU_PRIORITY_LOW, &g->preview_stream));
        OMMA_TRY(gpu_mem_alloc(g->dev, g->preview_bytes, &g->preview_dev));
        OMMA_TRY(gpu_host_alloc(g->dev, g->preview_bytes, (void **)&g->preview_host));
        for (int l = 0; l < lanes; l++)
            OMMA_TRY(gpu_event_acquire(g->dev, GPU_EVENT_SYNC, &g->preview_done[l]));
    }
    if (cfg->photo && cfg->pool_frames > 0)
        OMMA_TRY(rt_synthetic_pool_create(g->dev, cfg->photo, &cfg->synthetic, cfg->pool_frames,
                                          cfg->pool_memory, &g->pool));
    return OMMA_OK;
}

void rt_gpu_close(rt_gpu *g)
{
    omma_face_pipeline_destroy(g->pipe);
    rt_pose_close(g);
    rt_synthetic_pool_destroy(g->pool);
    for (int l = 0; l < OMMA_PIPELINE_MAX_LANES; l++)
        for (int k = 0; k < 2; k++)
            if (g->timing[l][k])
                gpu_event_release(g->dev, g->timing[l][k]);
    if (g->preview_stream) { /* the last previews' copies */
        omma_scope scope;
        if (omma_device_enter(g->dev, &scope) == OMMA_OK) {
            (void)gpu_cu.cuStreamSynchronize(g->preview_stream);
            (void)omma_device_leave(&scope);
        }
    }
    for (int l = 0; l < OMMA_PIPELINE_MAX_LANES; l++)
        if (g->preview_done[l])
            gpu_event_release(g->dev, g->preview_done[l]);
    if (g->preview_stream)
        gpu_stream_release(g->dev, g->preview_stream);
    if (g->preview_dev)
        (void)gpu_mem_free(g->dev, g->preview_dev);
    if (g->preview_host)
        gpu_host_free(g->dev, g->preview_host, g->preview_bytes);
    if (g->dev)
        omma_device_close(g->dev);
    if (g->rt) { /* prepared: the lock and conditions exist */
        pthread_cond_destroy(&g->wake);
        pthread_cond_destroy(&g->sink_wake);
        pthread_cond_destroy(&g->gone);
        pthread_mutex_destroy(&g->lock);
    }
    free(g->ready);
    free(g->batches);
    free(g->pending);
    free(g->faces);
    free(g->counts);
}

void rt_gpu_notify(rt_gpu *g, rt_cam *cam)
{
    pthread_mutex_lock(&g->lock);
    if (!cam->queued && !cam->drained) {
        cam->queued = 1;
        g->ready[(g->ready_head + g->ready_count) % g->ready_cap] = cam->index;
        if (g->ready_count++ == 0)
            g->first_ready_ns = core_now_ns();
        /* The worker sleeps until a first frame (to start the deadline) or
         * a full batch. */
        if (g->ready_count == 1 || g->ready_count == g->rt->cfg.pipeline.max_batch)
            pthread_cond_signal(&g->wake);
    }
    pthread_mutex_unlock(&g->lock);
}

static struct timespec abs_time(uint64_t t_ns)
{
    return (struct timespec){(time_t)(t_ns / 1000000000u), (long)(t_ns % 1000000000u)};
}

/* Under the lock: waits until a batch should run (a free lane, and a full
 * batch ready or the oldest ready frame's deadline passed, or stopping
 * with frames ready), releasing the frames pose handed back meanwhile.
 * Returns 0 when every camera is drained (with cameras added live: and
 * the runtime stopping), or *st failed. */
static int wait_for_batch(rt_gpu *g, omma_status *st)
{
    const rt_runtime_config *cfg = &g->rt->cfg;
    uint64_t max_wait = (uint64_t)cfg->max_wait_ms * 1000000u;
    for (;;) {
        if ((*st = rt_pose_release_held(g)) != OMMA_OK)
            return 0;
        if (g->open_cams == 0 && g->ready_count == 0 &&
            (cfg->max_cameras == 0 || rt_stopping(g->rt)))
            return 0;
        if (g->free_lanes > 0 && g->ready_count > 0) {
            uint64_t now = core_now_ns(), due = g->first_ready_ns + max_wait;
            if (g->ready_count >= cfg->pipeline.max_batch || now >= due || rt_stopping(g->rt))
                return 1;
            struct timespec ts = abs_time(due);
            pthread_cond_timedwait(&g->wake, &g->lock, &ts);
        } else {
            pthread_cond_wait(&g->wake, &g->lock);
        }
    }
}

/* Under the lock: up to max_batch ready cameras not in a batch in flight,
 * oldest first, out of the ready list (the others stay, in order). */
static int pick(rt_gpu *g, rt_cam **picked)
{
    rt_gpu_runtime *rt = g->rt;
    int n = 0, kept = 0, count = g->ready_count;
    for (int i = 0; i < count; i++) {
        int c = g->ready[(g->ready_head + i) % g->ready_cap];
        rt_cam *cam = &rt->cams[c];
        if (cam->drained) {
            cam->queued = 0; /* queued again before its last take saw it closed */
        } else if (n < rt->cfg.pipeline.max_batch && !fp_async_camera_busy(g->pipe, c)) {
            cam->queued = 0;
            picked[n++] = cam;
        } else {
            g->ready[(g->ready_head + kept++) % g->ready_cap] = c;
        }
    }
    g->ready_count = kept;
    if (kept > 0)
        g->first_ready_ns = core_now_ns(); /* the ones left wait anew */
    return n;
}

/* Takes a frame of each picked camera; drained cameras leave. */
static int take_frames(rt_gpu *g, rt_cam **picked, int n, rt_ring_item *items, rt_batch *b,
                       omma_frame *frames, CUevent *ready, rt_cam **requeue, int *n_requeue)
{
    int m = 0;
    for (int i = 0; i < n; i++) {
        rt_cam *cam = picked[i];
        rt_ring_item it;
        omma_status st = rt_ring_take(cam->ring, &it);
        if (st == OMMA_ERR_CLOSED) {
            /* Once: a notification that raced with this take may have
             * queued the camera again. */
            pthread_mutex_lock(&g->lock);
            if (!cam->drained) {
                cam->drained = 1;
                g->open_cams--;
                if (g->removals > 0)
                    pthread_cond_broadcast(&g->gone);
            }
            pthread_mutex_unlock(&g->lock);
            continue;
        }
        if (st != OMMA_OK || !it.has_frame)
            continue; /* taken by a batch before (a notification left over) */
        if (it.take_again)
            requeue[(*n_requeue)++] = cam;
        items[m] = it;
        frames[m] = it.frame;
        ready[m] = it.ready;
        b->cams[m] = cam->index;
        b->seq[m] = it.seq;
        b->capture_ns[m] = it.capture_ns;
        b->dropped[m] = it.seq - cam->last_seq - 1;
        cam->last_seq = it.seq;
        m++;
    }
    b->n = m;
    return m;
}

/* The previews due of the batch's cameras (preview.h): each a thumbnail
 * kernel on the ring slot and a copy of the thumbnail only to pinned
 * memory, on the preview stream after the frame's ready event; the batch's
 * release waits for them (submit), the sink stores them (report). A
 * failure costs the previews, never the batch. */
static void enqueue_previews(rt_gpu *g, rt_batch *b, const omma_frame *frames, const CUevent *ready)
{
    rt_preview *p = g->rt->cfg.preview;
    b->n_previews = 0;
    if (!p)
        return;
    uint64_t now = core_now_ns();
    int set = (int)(g->batch_count % (uint64_t)g->rt->cfg.pipeline.lanes), n = 0;
    omma_scope scope;
    int entered = 0;
    for (int i = 0; i < b->n && n < RT_GPU_PREVIEWS; i++) {
        int side = rt_preview_due(p, b->cams[i], now);
        if (!side)
            continue;
        if (!entered) {
            if (omma_device_enter(g->dev, &scope) != OMMA_OK)
                return;
            entered = 1;
        }
        int tw, th;
        vis_thumb_size(frames[i].width, frames[i].height, side, &tw, &th);
        size_t off = ((size_t)set * RT_GPU_PREVIEWS + (size_t)n) * PREVIEW_SLOT_BYTES;
        size_t bytes = (size_t)tw * (size_t)th * 3;
        if ((ready[i] && OMMA_CK(gpu_cu.cuStreamWaitEvent(g->preview_stream, ready[i], 0))) ||
            OMMA_CK(vis_cuda_thumb(frames[i], tw, th, (uint8_t *)(g->preview_dev + off),
                                   g->preview_stream)) ||
            gpu_copy_d2h_async(g->dev, g->preview_host + off, g->preview_dev + off, bytes,
                               g->preview_stream))
            break;
        b->preview_cam[n] = b->cams[i];
        b->preview_w[n] = tw, b->preview_h[n] = th;
        b->preview_seq[n] = b->seq[i], b->preview_capture_ns[n] = b->capture_ns[i];
        n++;
    }
    if (entered) {
        if (n > 0 &&
            OMMA_CK(gpu_cu.cuEventRecord(g->preview_done[set], g->preview_stream)) == OMMA_OK) {
            b->n_previews = n;
            b->preview_set = set;
        } else if (n > 0) {
            /* The ring slots must not be reused under the kernels: wait. */
            (void)gpu_cu.cuStreamSynchronize(g->preview_stream);
        }
        (void)omma_device_leave(&scope);
    }
}

/* The sink: the batch's previews to the viewers. */
static void store_previews(rt_gpu *g, const rt_batch *b)
{
    if (b->n_previews == 0)
        return;
    omma_scope scope;
    if (omma_device_enter(g->dev, &scope) != OMMA_OK)
        return;
    omma_status st = OMMA_CK(gpu_cu.cuEventSynchronize(g->preview_done[b->preview_set]));
    (void)omma_device_leave(&scope);
    if (st != OMMA_OK)
        return;
    for (int k = 0; k < b->n_previews; k++) {
        const rt_cam *cam = &g->rt->cams[b->preview_cam[k]];
        size_t off = ((size_t)b->preview_set * RT_GPU_PREVIEWS + (size_t)k) * PREVIEW_SLOT_BYTES;
        (void)rt_preview_put(g->rt->cfg.preview, cam->index, g->preview_host + off, b->preview_w[k],
                             b->preview_h[k], cam->fmt.width, cam->fmt.height, b->preview_seq[k],
                             b->preview_capture_ns[k]);
    }
}

static omma_status submit(rt_gpu *g, rt_batch *b, rt_ring_item *items, const omma_frame *frames,
                          const CUevent *ready)
{
    rt_gpu_runtime *rt = g->rt;
    int lane = -1, next = fp_async_next_lane(g->pipe);
    int timed = next >= 0 && g->batch_count % RT_TIMING_EVERY == 0;
    omma_status st = fp_async_submit(g->pipe, b->n, b->cams, frames, ready,
                                     timed ? g->timing[next] : NULL, &lane);
    if (b->n_previews > 0) {
        /* The slots' done events (recorded on the lane's stream) cover the
         * previews' kernels too. */
        CUstream s = lane >= 0 ? fp_async_stream(g->pipe, lane) : fp_async_stream(g->pipe, 0);
        omma_scope scope;
        omma_status ws = omma_device_enter(g->dev, &scope);
        if (ws == OMMA_OK) {
            ws = OMMA_CK(gpu_cu.cuStreamWaitEvent(s, g->preview_done[b->preview_set], 0));
            (void)omma_device_leave(&scope);
        }
        if (ws != OMMA_OK && st == OMMA_OK)
            st = ws;
    }
    /* With pose, the items stay taken until pose is done (runtime_pose.c). */
    int held = st == OMMA_OK && rt_pose_hold(g, b, items);
    for (int i = 0; i < b->n && !held; i++) {
        /* After the step on the lane's stream (or at once when it failed:
         * the lane's stream was synchronized). */
        CUstream s = lane >= 0 ? fp_async_stream(g->pipe, lane) : fp_async_stream(g->pipe, 0);
        omma_status rs = rt_ring_release(rt->cams[b->cams[i]].ring, &items[i], s);
        if (st == OMMA_OK)
            st = rs;
    }
    if (st != OMMA_OK)
        return st;
    b->lane = lane;
    b->timed = timed;
    g->batch_count++;
    atomic_fetch_add_explicit(&rt->batches, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&rt->launches, (uint64_t)fp_async_launches(g->pipe, lane),
                              memory_order_relaxed);
    return OMMA_OK;
}

void *rt_gpu_worker(void *arg)
{
    rt_gpu *g = arg;
    rt_gpu_runtime *rt = g->rt;
    int max = rt->cfg.pipeline.max_batch;
    rt_cam **picked = calloc((size_t)max, sizeof *picked);
    rt_cam **requeue = calloc((size_t)max, sizeof *requeue);
    rt_ring_item *items = calloc((size_t)max, sizeof *items);
    omma_frame *frames = calloc((size_t)max, sizeof *frames);
    CUevent *ready = calloc((size_t)max, sizeof *ready);
    rt_batch staged;
    omma_status st = picked && requeue && items && frames && ready
                         ? OMMA_OK
                         : OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "runtime: worker buffers");
    uint64_t cpu0 = core_thread_cpu_ns();
    pthread_mutex_lock(&g->lock);
    while (st == OMMA_OK && wait_for_batch(g, &st)) {
        int n = pick(g, picked);
        pthread_mutex_unlock(&g->lock);
        int n_requeue = 0;
        int m = take_frames(g, picked, n, items, &staged, frames, ready, requeue, &n_requeue);
        if (m > 0) {
            enqueue_previews(g, &staged, frames, ready);
            st = submit(g, &staged, items, frames, ready);
        }
        uint64_t cpu = core_thread_cpu_ns();
        atomic_fetch_add_explicit(&rt->worker_cpu_ns, cpu - cpu0, memory_order_relaxed);
        cpu0 = cpu;
        for (int i = 0; i < n_requeue; i++)
            rt_gpu_notify(g, requeue[i]);
        pthread_mutex_lock(&g->lock);
        if (m > 0 && st == OMMA_OK) {
            int slot = g->next_slot;
            g->next_slot = (slot + 1) % rt->cfg.pipeline.lanes;
            g->batches[slot] = staged;
            g->pending[(g->pending_head + g->pending_count++) % rt->cfg.pipeline.lanes] = slot;
            g->free_lanes--;
            pthread_cond_signal(&g->sink_wake);
        }
    }
    omma_status rs = rt_pose_release_held(g); /* later ones: the sink's */
    if (st == OMMA_OK)
        st = rs;
    g->worker_done = 1;
    pthread_cond_signal(&g->sink_wake);
    pthread_cond_broadcast(&g->gone); /* a remove waits for no more takes */
    pthread_mutex_unlock(&g->lock);
    if (st != OMMA_OK)
        rt_fail(rt, st, omma_last_error());
    free(picked);
    free(requeue);
    free(items);
    free(frames);
    free(ready);
    rt_thread_ended(rt);
    return NULL;
}

static void report(rt_gpu *g, const rt_batch *b, uint64_t done_ns)
{
    rt_gpu_runtime *rt = g->rt;
    const rt_runtime_config *cfg = &rt->cfg;
    int max_faces = cfg->pipeline.max_faces;
    for (int i = 0; i < b->n; i++) {
        rt_cam *cam = &rt->cams[b->cams[i]];
        omma_box truth;
        rt_result r = {.camera = cam->index,
                       .gpu = g->index,
                       .seq = b->seq[i],
                       .capture_ns = b->capture_ns[i],
                       .done_ns = done_ns,
                       .dropped = b->dropped[i],
                       .n_faces = g->counts[i],
                       .faces = g->faces + (size_t)i * (size_t)max_faces,
                       .width = cam->fmt.width,
                       .height = cam->fmt.height,
                       .fps = cam->fps,
                       .camera_ctx = cam->cfg.ctx};
        if (rt_cam_synthetic(cam) && g->pool) {
            (void)rt_synthetic_pool_frame(g->pool, rt_cam_pool_frame(cam, b->seq[i]), &truth);
            r.truth = &truth;
        }
        if (b->dropped[i])
            metrics_frames_dropped(cfg->metrics, cam->index, b->dropped[i]);
        metrics_frame_done(cfg->metrics, cam->index, done_ns - b->capture_ns[i]);
        atomic_fetch_add_explicit(&rt->frames_dropped, b->dropped[i], memory_order_relaxed);
        atomic_fetch_add_explicit(&rt->faces, (uint64_t)g->counts[i], memory_order_relaxed);
        if (rt->bus)
            bus_pub_results(rt->bus, cam->index, r.seq, r.capture_ns, r.faces, r.n_faces);
        rt_pose_result(g, i, &r);
        if (cfg->on_result)
            cfg->on_result(cfg->ctx, &r);
    }
    atomic_fetch_add_explicit(&rt->frames_done, (uint64_t)b->n, memory_order_relaxed);
}

static void time_step(rt_gpu *g, const rt_batch *b)
{
    float ms = 0.0f;
    omma_scope scope;
    if (omma_device_enter(g->dev, &scope) != OMMA_OK)
        return;
    if (gpu_cu.cuEventElapsedTime(&ms, g->timing[b->lane][0], g->timing[b->lane][1]) ==
        CUDA_SUCCESS)
        metrics_stage_time(g->rt->cfg.metrics, g->index, 0, (uint64_t)(ms * 1e6f));
    (void)omma_device_leave(&scope);
}

void *rt_gpu_sink(void *arg)
{
    rt_gpu *g = arg;
    rt_gpu_runtime *rt = g->rt;
    pthread_mutex_lock(&g->lock);
    for (;;) {
        while (g->pending_count == 0 && !g->worker_done)
            pthread_cond_wait(&g->sink_wake, &g->lock);
        if (g->pending_count == 0)
            break;
        rt_batch *b = &g->batches[g->pending[g->pending_head]];
        pthread_mutex_unlock(&g->lock);
        omma_status ps = rt_pose_run(g, b); /* overlaps the face step */
        omma_status st = fp_async_complete(g->pipe, b->lane, g->faces, g->counts);
        if (st == OMMA_OK)
            st = ps;
        if (st == OMMA_OK) {
            rt_pose_attach(g, b, g->faces, g->counts);
            if (b->timed)
                time_step(g, b);
            report(g, b, core_now_ns());
            store_previews(g, b);
        } else {
            rt_fail(rt, st, omma_last_error());
        }
        if ((st = rt_pose_done(g, b)) != OMMA_OK)
            rt_fail(rt, st, omma_last_error());
        pthread_mutex_lock(&g->lock);
        g->pending_head = (g->pending_head + 1) % rt->cfg.pipeline.lanes;
        g->pending_count--;
        g->free_lanes++;
        pthread_cond_signal(&g->wake);
        if (g->removals > 0) /* its cameras' results are out */
            pthread_cond_broadcast(&g->gone);
    }
    pthread_mutex_unlock(&g->lock);
    rt_thread_ended(rt);
    return NULL;
}
