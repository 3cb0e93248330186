/* The face pipeline on the GPU (face_pipeline_gpu.h): the backend's set-up,
 * the planning of a step from the host's mirror of the trackers, the
 * submission of a step on a lane and its completion.
 *
 * The trackers live in device memory. The host keeps a mirror of what it
 * needs to plan the next step without asking the GPU: each camera's face
 * count (from the results) and frames since its last detection (the same
 * rule as vis_tracker_begin_frame). A frame gets FaceMesh slots for its
 * tracked faces, or max_faces when the detector runs on it (new faces fit
 * whatever the detector finds); slots nobody fills are zero crops whose
 * results are dropped.
 *
 * Threads: one thread submits (fp_async_submit, or the synchronous batch)
 * and one completes (fp_async_complete); a camera's mirror is written by
 * the completion and read by the next submission of that camera, which
 * waits for the camera's busy flag (release/acquire) to be clear. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/driver.h"
#include "gpu/memory.h"
#include "pipeline/face_pipeline_async.h"
#include "pipeline/face_pipeline_gpu.h"
#include "vision/frame.h"

static omma_status open_models(omma_face_pipeline *p, fp_backend *b, const char *detector,
                               const char *mesh)
{
    omma_engine_options eo;
    omma_engine_options_init(&eo);
    eo.backend = OMMA_BACKEND_CUDA;
    eo.precision = p->opt.precision;
    OMMA_TRY(omma_engine_load(b->dev, detector, &eo, &b->det));
    OMMA_TRY(fp_inspect_detector(b->det, detector, &b->dspec));
    OMMA_TRY(omma_engine_load(b->dev, mesh, &eo, &b->mesh));
    return fp_inspect_mesh(b->mesh, mesh, p->opt.mesh_points, &b->mspec);
}

static omma_status gpu_open(omma_face_pipeline *p, fp_backend *b, const char *detector,
                            const char *mesh)
{
    OMMA_TRY(open_models(p, b, detector, mesh));
    vis_decode_options_init(&b->dopt, b->dspec.size);
    b->dopt.min_score = p->opt.min_detection_score;
    b->dopt.min_suppression = p->opt.nms_threshold;
    b->dopt.max_faces = p->opt.max_faces;
    vis_tracker_options_init(&b->topt);
    b->topt.max_faces = p->opt.max_faces;
    b->topt.detect_every = p->opt.detect_every;
    b->topt.min_presence = p->opt.min_presence;
    b->topt.cut_move = p->opt.cut_move;
    b->topt.cut_agree = p->opt.cut_agree;
    b->topt.cut_presence = p->opt.cut_presence;
    size_t anchors = (size_t)b->dspec.n_anchors * sizeof(vis_anchor);
    size_t trackers = OMMA_PIPELINE_MAX_CAMERAS * sizeof(vis_tracker);
    OMMA_TRY(gpu_mem_alloc(b->dev, anchors, &b->anchors));
    OMMA_TRY(gpu_mem_alloc(b->dev, trackers, &b->trackers));
    for (int i = 0; i < p->opt.lanes; i++) {
        b->n_lanes = i + 1;
        OMMA_TRY(fp_lane_open(p, b, &b->lanes[i]));
    }
    /* Set-up, not per frame: the anchors go up once; trackers start zeroed
     * (every camera's first frame resets its own). */
    CUstream s = b->lanes[0].stream;
    OMMA_TRY(gpu_copy_h2d_async(b->dev, b->anchors, b->dspec.anchors, anchors, s));
    OMMA_TRY(OMMA_CK(gpu_cu.cuMemsetD8Async(b->trackers, 0, trackers, s)));
    OMMA_TRY(OMMA_CK(gpu_cu.cuStreamSynchronize(s)));
    for (int c = 0; c < OMMA_PIPELINE_MAX_CAMERAS; c++) {
        b->mirror[c].fresh = 1;
        atomic_init(&b->camera_busy[c], 0);
    }
    return OMMA_OK;
}

static void gpu_destroy(omma_face_pipeline *p)
{
    fp_backend *b = p->impl;
    if (!b)
        return;
    omma_scope scope;
    int entered = omma_device_enter(b->dev, &scope) == OMMA_OK;
    for (int i = 0; i < b->n_lanes; i++)
        fp_lane_close(b, &b->lanes[i]);
    omma_engine_release(b->det);
    omma_engine_release(b->mesh);
    (void)gpu_mem_free(b->dev, b->anchors);
    (void)gpu_mem_free(b->dev, b->trackers);
    if (entered)
        (void)omma_device_leave(&scope);
    if (b->own_device)
        omma_device_close(b->dev);
    free(b);
    p->impl = NULL;
}

static omma_status gpu_create(omma_face_pipeline *p, const char *detector, const char *mesh)
{
    if ((long)p->opt.max_batch * p->opt.max_faces > FP_MAX_SLOTS)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "face pipeline: max_batch %d x max_faces %d FaceMesh crops per batch "
                         "is above %d",
                         p->opt.max_batch, p->opt.max_faces, FP_MAX_SLOTS);
    fp_backend *b = calloc(1, sizeof *b);
    if (!b)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "face pipeline");
    p->impl = b;
    b->max_slots = p->opt.max_batch * p->opt.max_faces;
    b->dev = p->opt.device;
    if (!b->dev) {
        OMMA_TRY(omma_device_open(0, &b->dev));
        b->own_device = 1;
    }
    omma_scope scope;
    OMMA_TRY(omma_device_enter(b->dev, &scope));
    omma_status st = gpu_open(p, b, detector, mesh);
    omma_status left = omma_device_leave(&scope);
    return st != OMMA_OK ? st : left;
}

static int round_up(int v, int to, int cap)
{
    int r = (v + to - 1) / to * to;
    return r < cap ? r : cap;
}

/* The step's plan from the mirrors: who runs the detector, who gets which
 * FaceMesh slots, and the launch shape (with graphs, the detector and
 * FaceMesh batches are rounded up so that few shapes recur). */
static void plan(omma_face_pipeline *p, fp_backend *b, fp_lane *l, int n, const int *cameras)
{
    vis_gpu_step *s = &l->step;
    int detect = 0, slots = 0;
    for (int i = 0; i < n; i++) {
        fp_camera_mirror *m = &b->mirror[cameras[i]];
        vis_gpu_step_frame *f = &s->f[i];
        if (m->fresh)
            m->count = 0, m->frames_since_detect = 0;
        long since = m->frames_since_detect + 1;
        int run = m->count < p->opt.max_faces ||
                  (p->opt.detect_every > 0 && since >= p->opt.detect_every);
        f->camera = cameras[i];
        f->fresh = m->fresh;
        f->detect = run ? detect++ : -1;
        f->slot_base = slots;
        f->slots = run ? p->opt.max_faces : m->count;
        slots += f->slots;
        m->frames_since_detect = run ? 0 : since;
    }
    s->n = n;
    s->n_slots = slots;
    l->detected = detect;
    l->shape.n = n;
    l->shape.n_detect = detect;
    l->shape.n_slots = slots;
    if (p->opt.graphs) {
        if (detect > 0)
            l->shape.n_detect = round_up(detect, 8, p->opt.max_batch);
        if (slots > 0)
            l->shape.n_slots = round_up(slots, 16, b->max_slots);
    }
    l->d2h_bytes = (size_t)l->shape.n_slots * sizeof(omma_face) + (size_t)n * sizeof(int);
}

static void forget(fp_backend *b, int n, const int *cameras)
{
    for (int i = 0; i < n; i++)
        b->mirror[cameras[i]].fresh = 1;
}

static void release_cameras(fp_backend *b, const vis_gpu_step *s)
{
    for (int i = 0; i < s->n; i++)
        atomic_store_explicit(&b->camera_busy[s->f[i].camera], 0, memory_order_release);
}

/* Enqueues the step on the lane: waits, uploads, the step, its done event. */
static omma_status enqueue_step(omma_face_pipeline *p, fp_backend *b, fp_lane *l, int n,
                                const int *cameras, const omma_frame *frames, const CUevent *ready,
                                const CUevent *timing, uint64_t *h2d_bytes, uint64_t *h2d_copies)
{
    int waits = 0;
    for (int i = 0; i < n; i++) {
        if (ready && ready[i]) {
            OMMA_TRY(OMMA_CK(gpu_cu.cuStreamWaitEvent(l->stream, ready[i], 0)));
            waits++;
        }
        OMMA_TRY(fp_lane_upload(b, l, i, &frames[i], &l->step.f[i].frame, h2d_bytes, h2d_copies));
    }
    plan(p, b, l, n, cameras);
    if (timing)
        OMMA_TRY(OMMA_CK(gpu_cu.cuEventRecord(timing[0], l->stream)));
    if (p->opt.graphs)
        OMMA_TRY(fp_graph_launch(p, b, l));
    else
        OMMA_TRY(fp_lane_enqueue(p, b, l));
    if (timing)
        OMMA_TRY(OMMA_CK(gpu_cu.cuEventRecord(timing[1], l->stream)));
    OMMA_TRY(gpu_copy_d2h_async(b->dev, l->host_results, l->results, l->d2h_bytes, l->stream));
    l->launches += waits + 1;
    return OMMA_CK(gpu_cu.cuEventRecord(l->done, l->stream));
}

omma_status fp_async_submit(omma_face_pipeline *p, int n, const int *cameras,
                            const omma_frame *frames, const CUevent *ready, const CUevent *timing,
                            int *lane)
{
    *lane = -1;
    if (p->opt.backend != OMMA_BACKEND_CUDA)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face pipeline: asynchronous steps need the CUDA "
                                               "backend");
    fp_backend *b = p->impl;
    int k = fp_async_next_lane(p);
    fp_lane *l = k >= 0 ? &b->lanes[k] : NULL;
    if (!l)
        return OMMA_FAIL(OMMA_ERR_BUSY, "face pipeline: all %d lanes have a batch in flight",
                         b->n_lanes);
    for (int i = 0; i < n; i++)
        if (atomic_load_explicit(&b->camera_busy[cameras[i]], memory_order_acquire))
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                             "face pipeline: camera %d already has a batch in flight", cameras[i]);
    uint64_t h2d_bytes = 0, h2d_copies = 0;
    omma_scope scope;
    OMMA_TRY(omma_device_enter(b->dev, &scope));
    omma_status st =
        enqueue_step(p, b, l, n, cameras, frames, ready, timing, &h2d_bytes, &h2d_copies);
    if (st != OMMA_OK) {
        (void)gpu_cu.cuStreamSynchronize(l->stream); /* nothing of it still running */
        forget(b, n, cameras);
    }
    omma_status left = omma_device_leave(&scope);
    if (st == OMMA_OK)
        st = left;
    if (st != OMMA_OK)
        return st;
    for (int i = 0; i < n; i++)
        atomic_store_explicit(&b->camera_busy[cameras[i]], 1, memory_order_relaxed);
    l->h2d_bytes = h2d_bytes;
    l->h2d_copies = h2d_copies;
    atomic_store_explicit(&l->busy, 1, memory_order_release);
    *lane = k;
    return OMMA_OK;
}

/* The results in the lane's pinned buffer: faces per slot, then a count
 * per frame. */
static omma_status unpack(omma_face_pipeline *p, fp_backend *b, fp_lane *l, omma_face *faces,
                          int *counts)
{
    const vis_gpu_step *s = &l->step;
    const omma_face *slot_faces = l->host_results;
    const int *dev_counts = (const int *)(slot_faces + l->shape.n_slots);
    for (int i = 0; i < s->n; i++) {
        int c = dev_counts[i];
        if (c < 0 || c > s->f[i].slots)
            return OMMA_FAIL(OMMA_ERR_INTERNAL,
                             "face pipeline: camera %d: the GPU tracker has %d faces for %d slots",
                             s->f[i].camera, c, s->f[i].slots);
        counts[i] = c;
        memcpy(faces + (size_t)i * (size_t)p->opt.max_faces, slot_faces + s->f[i].slot_base,
               (size_t)c * sizeof *faces);
    }
    for (int i = 0; i < s->n; i++) {
        fp_camera_mirror *m = &b->mirror[s->f[i].camera];
        m->count = counts[i];
        m->fresh = 0;
    }
    omma_frame frames[VIS_GPU_MAX_FRAMES]; /* their sizes */
    for (int i = 0; i < s->n; i++)
        frames[i] = s->f[i].frame;
    fp_head_poses(p, s->n, frames, faces, counts);
    return OMMA_OK;
}

static void count_step(omma_face_pipeline *p, const fp_lane *l, const int *counts)
{
    omma_face_pipeline_stats d = {0};
    d.detector_images = (uint64_t)l->detected;
    d.mesh_images = (uint64_t)l->shape.n_slots;
    d.h2d_bytes = l->h2d_bytes;
    d.h2d_copies = l->h2d_copies;
    d.d2h_bytes = l->d2h_bytes;
    d.d2h_copies = 1;
    fp_stats_add_batch(p, l->step.n, counts, &d);
}

omma_status fp_async_complete(omma_face_pipeline *p, int lane, omma_face *faces, int *counts)
{
    fp_backend *b = p->impl;
    if (lane < 0 || lane >= b->n_lanes || !atomic_load(&b->lanes[lane].busy))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face pipeline: lane %d has no batch in flight",
                         lane);
    fp_lane *l = &b->lanes[lane];
    const vis_gpu_step *s = &l->step;
    memset(counts, 0, (size_t)s->n * sizeof *counts);
    omma_scope scope;
    omma_status st = omma_device_enter(b->dev, &scope);
    if (st == OMMA_OK) {
        st = OMMA_CK(gpu_cu.cuEventSynchronize(l->done));
        if (st == OMMA_ERR_CUDA && omma_device_check_health(b->dev) == OMMA_ERR_DEVICE_LOST)
            st = OMMA_ERR_DEVICE_LOST; /* a sticky error: the detail says so */
        if (st == OMMA_OK)
            st = unpack(p, b, l, faces, counts);
        omma_status left = omma_device_leave(&scope);
        if (st == OMMA_OK)
            st = left;
    }
    if (st == OMMA_OK) {
        count_step(p, l, counts);
    } else {
        memset(counts, 0, (size_t)s->n * sizeof *counts);
        for (int i = 0; i < s->n; i++)
            b->mirror[s->f[i].camera].fresh = 1;
    }
    release_cameras(b, s);
    atomic_store_explicit(&l->busy, 0, memory_order_release);
    return st;
}

int fp_async_next_lane(const omma_face_pipeline *p)
{
    const fp_backend *b = p->impl;
    for (int k = 0; k < b->n_lanes; k++)
        if (!atomic_load_explicit(&b->lanes[k].busy, memory_order_acquire))
            return k;
    return -1;
}

int fp_async_lanes(const omma_face_pipeline *p)
{
    return p->opt.backend == OMMA_BACKEND_CUDA ? ((const fp_backend *)p->impl)->n_lanes : 0;
}

CUstream fp_async_stream(const omma_face_pipeline *p, int lane)
{
    return ((const fp_backend *)p->impl)->lanes[lane].stream;
}

int fp_async_camera_busy(const omma_face_pipeline *p, int camera)
{
    const fp_backend *b = p->impl;
    return atomic_load_explicit(&b->camera_busy[camera], memory_order_acquire);
}

int fp_async_launches(const omma_face_pipeline *p, int lane)
{
    return ((const fp_backend *)p->impl)->lanes[lane].launches;
}

/* The synchronous batch: a step on a free lane, completed at once. */
static omma_status gpu_run_batch(omma_face_pipeline *p, int n, const int *cameras,
                                 const omma_frame *frames, omma_face *faces, int *counts)
{
    int lane;
    OMMA_TRY(fp_async_submit(p, n, cameras, frames, NULL, NULL, &lane));
    return fp_async_complete(p, lane, faces, counts);
}

static void gpu_reset(omma_face_pipeline *p, int n, const int *cameras)
{
    forget(p->impl, n, cameras);
}

const fp_backend_ops fp_gpu_backend = {gpu_create, gpu_destroy, gpu_run_batch, gpu_reset};
