/* Body pose in the GPU runtime's step (runtime.h, rt_runtime_config.pose):
 * one batched pose pipeline per GPU (pipeline/pose_pipeline_batch.h: the
 * models loaded once per GPU) runs on the frames of each batch the worker
 * submits, next to the face step.
 *
 * Where it runs: in the GPU's sink thread, which waits for the GPU anyway.
 * For each batch, oldest first (so each camera's people are tracked in
 * frame order), the sink runs pose on the batch's frames (the pose work
 * waits on the GPU for each frame's ready event, on its own stream, and
 * overlaps the batch's face step), then completes the face step, attaches
 * each pose to its face (vision/pose_attach.h) and reports both.
 *
 * The frames: the worker does not release a pose batch's ring items after
 * submitting it (rt_pose_hold keeps them in the batch); the sink hands them
 * back once pose and faces are done with them (rt_pose_done), and the
 * worker, the ring's only consumer thread, releases them the next time it
 * looks for work (rt_pose_release_held, under the GPU's lock); once the
 * worker has ended, the sink releases them itself. A release records the
 * slot's done event on a stream of its own (`release`): never the pose
 * stream, which the sink may be capturing into a CUDA graph at that
 * moment (an event recorded into a capturing stream from another thread:
 * a crash in the driver at 500 cameras). Nothing more needs ordering
 * there: by rt_pose_done the host has waited for the pose work (the batch
 * path synchronizes its stream after the kernels that read the frames)
 * and for the face step (fp_async_complete). */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "gpu/stream_pool.h"
#include "pipeline/pose_pipeline_batch.h"
#include "runtime/runtime_private.h"
#include "vision/pose_attach.h"

struct rt_gpu_pose {
    pp_batch *batch;
    int max_poses;
    /* Sink only: the current batch's poses and faces of poses. */
    omma_pose *poses;
    int *counts, *face_of;
    /* Under the GPU's lock: items to release (lanes * max_batch room). */
    rt_ring_item *held;
    int *held_cam;
    int n_held, room;
    CUstream release; /* the releases' done events, recorded after the host waited */
    /* A camera index given to a new camera (rt_pose_forget): its people
     * are forgotten by the sink before its first batch. */
    atomic_bool fresh[OMMA_PIPELINE_MAX_CAMERAS];
};

omma_status rt_pose_prepare(rt_gpu *g)
{
    const rt_runtime_config *cfg = &g->rt->cfg;
    if (!cfg->pose.landmark_model)
        return OMMA_OK;
    rt_gpu_pose *p = calloc(1, sizeof *p);
    if (!p)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "runtime: GPU %d pose", g->ordinal);
    g->pose = p;
    int batch = cfg->pipeline.max_batch;
    p->max_poses = cfg->pose.max_poses;
    p->room = 2 * cfg->pipeline.lanes * batch; /* lanes batches at most: see rt_pose_done */
    p->poses = calloc((size_t)batch * (size_t)p->max_poses, sizeof *p->poses);
    p->counts = calloc((size_t)batch, sizeof *p->counts);
    p->face_of = calloc((size_t)batch * (size_t)p->max_poses, sizeof *p->face_of);
    p->held = calloc((size_t)p->room, sizeof *p->held);
    p->held_cam = calloc((size_t)p->room, sizeof *p->held_cam);
    if (!p->poses || !p->counts || !p->face_of || !p->held || !p->held_cam)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "runtime: GPU %d pose buffers", g->ordinal);
    OMMA_TRY(gpu_stream_acquire(g->dev, GPU_PRIORITY_NORMAL, &p->release));
    pp_batch_options o;
    pp_batch_options_init(&o);
    o.pose = cfg->pose;
    o.pose.backend = OMMA_BACKEND_CUDA;
    o.pose.device = g->dev;
    o.pose.precision = cfg->pipeline.precision;
    o.max_batch = batch;
    o.graphs = cfg->pipeline.graphs;
    return pp_batch_create(&o, &p->batch);
}

/* After the threads (the sink released every item it held) and the
 * cameras' rings. */
void rt_pose_close(rt_gpu *g)
{
    rt_gpu_pose *p = g->pose;
    if (!p)
        return;
    pp_batch_destroy(p->batch);
    gpu_stream_release(g->dev, p->release);
    free(p->poses);
    free(p->counts);
    free(p->face_of);
    free(p->held);
    free(p->held_cam);
    free(p);
    g->pose = NULL;
}

int rt_pose_hold(rt_gpu *g, rt_batch *b, const rt_ring_item *items)
{
    if (!g->pose)
        return 0;
    memcpy(b->items, items, (size_t)b->n * sizeof *items);
    return 1;
}

omma_status rt_pose_run(rt_gpu *g, const rt_batch *b)
{
    rt_gpu_pose *p = g->pose;
    if (!p)
        return OMMA_OK;
    omma_frame frames[OMMA_PIPELINE_MAX_BATCH];
    CUevent ready[OMMA_PIPELINE_MAX_BATCH];
    for (int i = 0; i < b->n; i++) {
        frames[i] = b->items[i].frame;
        ready[i] = b->items[i].ready;
        if (atomic_exchange(&p->fresh[b->cams[i]], false)) /* not its predecessor's people */
            OMMA_TRY(pp_batch_reset(p->batch, b->cams[i]));
    }
    return pp_batch_process(p->batch, b->n, b->cams, frames, ready, p->poses, p->counts);
}

void rt_pose_attach(rt_gpu *g, const rt_batch *b, const omma_face *faces, const int *counts)
{
    rt_gpu_pose *p = g->pose;
    if (!p)
        return;
    size_t mf = (size_t)g->rt->cfg.pipeline.max_faces, mp = (size_t)p->max_poses;
    for (int i = 0; i < b->n; i++)
        vis_pose_attach(faces + (size_t)i * mf, counts[i], p->poses + (size_t)i * mp, p->counts[i],
                        p->face_of + (size_t)i * mp);
}

void rt_pose_result(rt_gpu *g, int i, rt_result *r)
{
    rt_gpu_pose *p = g->pose;
    if (!p)
        return;
    size_t mp = (size_t)p->max_poses;
    r->n_poses = p->counts[i];
    r->poses = p->poses + (size_t)i * mp;
    r->pose_face = p->face_of + (size_t)i * mp;
    atomic_fetch_add_explicit(&g->rt->poses, (uint64_t)r->n_poses, memory_order_relaxed);
}

/* Under the GPU's lock, by the ring's consumer thread. */
static omma_status release_held(rt_gpu *g)
{
    rt_gpu_pose *p = g->pose;
    omma_status st = OMMA_OK;
    for (int i = 0; i < p->n_held; i++) {
        omma_status rs = rt_ring_release(g->rt->cams[p->held_cam[i]].ring, &p->held[i],
                                         p->release);
        if (st == OMMA_OK)
            st = rs;
    }
    p->n_held = 0;
    if (g->removals > 0) /* a remove may wait for these frames */
        pthread_cond_broadcast(&g->gone);
    return st;
}

void rt_pose_forget(rt_gpu *g, int index)
{
    if (g->pose)
        atomic_store(&g->pose->fresh[index], true);
}

int rt_pose_holds(const rt_gpu *g, int index)
{
    const rt_gpu_pose *p = g->pose;
    for (int i = 0; p && i < p->n_held; i++)
        if (p->held_cam[i] == index)
            return 1;
    return 0;
}

omma_status rt_pose_done(rt_gpu *g, rt_batch *b)
{
    rt_gpu_pose *p = g->pose;
    if (!p)
        return OMMA_OK;
    omma_status st = OMMA_OK;
    pthread_mutex_lock(&g->lock);
    if (p->n_held + b->n > p->room) /* at most lanes batches between two looks */
        st = OMMA_FAIL(OMMA_ERR_INTERNAL, "runtime: GPU %d holds %d frames for pose, room %d",
                       g->ordinal, p->n_held + b->n, p->room);
    for (int i = 0; i < b->n && p->n_held < p->room; i++) {
        p->held[p->n_held] = b->items[i];
        p->held_cam[p->n_held++] = b->cams[i];
    }
    if (g->worker_done) /* no take can run now: the sink releases */
        st = st != OMMA_OK ? st : release_held(g);
    else
        pthread_cond_signal(&g->wake);
    pthread_mutex_unlock(&g->lock);
    return st;
}

omma_status rt_pose_release_held(rt_gpu *g)
{
    return g->pose && g->pose->n_held > 0 ? release_held(g) : OMMA_OK;
}
