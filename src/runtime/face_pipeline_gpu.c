/* The face pipeline on the GPU. Per batch, on one stream and without a
 * host wait until the end: frames in host memory are uploaded (one 2D copy
 * per plane, exactly the frame's bytes; device frames are read in place),
 * then the vision kernels (vision/cuda_vision.h) and the two execs run the
 * step, and one device-to-host copy brings back the results: one omma_face
 * per FaceMesh slot plus a count per frame.
 *
 * The trackers live in device memory. The host keeps a mirror of what it
 * needs to plan the next step without asking the GPU: each camera's face
 * count (from the results) and frames since its last detection (the same
 * rule as vis_tracker_begin_frame). A frame gets FaceMesh slots for its
 * tracked faces, or max_faces when the detector runs on it (new faces fit
 * whatever the detector finds); slots nobody fills are zero crops whose
 * results are dropped. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/driver.h"
#include "gpu/memory.h"
#include "gpu/stream_pool.h"
#include "omma/device.h"
#include "runtime/face_pipeline_private.h"
#include "vision/cuda_vision.h"
#include "vision/frame.h"

/* FaceMesh slots per step at most: the mesh exec's batch (its input is
 * 442 KiB per slot). */
#define MAX_SLOTS 4096

/* What the host knows of a camera's tracker. */
typedef struct camera_mirror {
    int count; /* faces tracked after its last frame */
    long frames_since_detect; /* as vis_tracker */
    int fresh; /* its device tracker must start afresh */
} camera_mirror;

/* Device copy of a host frame, grown as needed. */
typedef struct staging {
    CUdeviceptr ptr;
    size_t bytes;
} staging;

struct fp_backend {
    omma_device *dev;
    int own_device; /* opened by the pipeline (options gave none) */
    CUstream stream;
    omma_engine *det, *mesh;
    omma_exec *xdet, *xmesh;
    float *det_in, *det_boxes, *det_scores, *mesh_in, *mesh_lm, *mesh_flag;
    fp_detector_spec dspec;
    vis_decode_options dopt;
    vis_tracker_options topt;
    int max_slots;
    /* Device buffers. */
    CUdeviceptr anchors, key_score, key_anchor, cand, dets, det_counts;
    CUdeviceptr trackers, slot_roi, slot_valid, slot_frame, results;
    size_t results_bytes;
    void *host_results; /* pinned, results_bytes */
    staging frames[VIS_GPU_MAX_FRAMES];
    camera_mirror mirror[OMMA_PIPELINE_MAX_CAMERAS];
    vis_gpu_step step;
};

static omma_status alloc(fp_backend *b, size_t bytes, CUdeviceptr *out)
{
    return gpu_mem_alloc(b->dev, bytes, out);
}

static omma_status open_models(omma_face_pipeline *p, fp_backend *b, const char *detector,
                               const char *mesh)
{
    omma_engine_options eo;
    omma_engine_options_init(&eo);
    eo.backend = OMMA_BACKEND_CUDA;
    eo.precision = p->opt.precision;
    omma_exec_options xo;
    omma_exec_options_init(&xo);
    xo.stream = b->stream;
    fp_mesh_spec mspec;
    OMMA_TRY(omma_engine_load(b->dev, detector, &eo, &b->det));
    OMMA_TRY(fp_inspect_detector(b->det, detector, &b->dspec));
    OMMA_TRY(omma_exec_create_with(b->det, p->opt.max_batch, &xo, &b->xdet));
    OMMA_TRY(omma_exec_input(b->xdet, 0, &b->det_in));
    OMMA_TRY(omma_exec_output(b->xdet, b->dspec.box_output, &b->det_boxes));
    OMMA_TRY(omma_exec_output(b->xdet, b->dspec.score_output, &b->det_scores));
    OMMA_TRY(omma_engine_load(b->dev, mesh, &eo, &b->mesh));
    OMMA_TRY(fp_inspect_mesh(b->mesh, mesh, &mspec));
    OMMA_TRY(omma_exec_create_with(b->mesh, b->max_slots, &xo, &b->xmesh));
    OMMA_TRY(omma_exec_input(b->xmesh, 0, &b->mesh_in));
    OMMA_TRY(omma_exec_output(b->xmesh, mspec.landmark_output, &b->mesh_lm));
    OMMA_TRY(omma_exec_output(b->xmesh, mspec.flag_output, &b->mesh_flag));
    return OMMA_OK;
}

static omma_status open_buffers(omma_face_pipeline *p, fp_backend *b)
{
    size_t images = (size_t)p->opt.max_batch, n = (size_t)b->dspec.n_anchors;
    size_t faces = (size_t)p->opt.max_faces, slots = (size_t)b->max_slots;
    size_t trackers = OMMA_PIPELINE_MAX_CAMERAS * sizeof(vis_tracker);
    OMMA_TRY(alloc(b, n * sizeof(vis_anchor), &b->anchors));
    OMMA_TRY(alloc(b, images * n * sizeof(float), &b->key_score));
    OMMA_TRY(alloc(b, images * n * sizeof(int), &b->key_anchor));
    OMMA_TRY(alloc(b, images * n * sizeof(vis_candidate), &b->cand));
    OMMA_TRY(alloc(b, images * faces * sizeof(omma_detection), &b->dets));
    OMMA_TRY(alloc(b, images * sizeof(int), &b->det_counts));
    OMMA_TRY(alloc(b, trackers, &b->trackers));
    OMMA_TRY(alloc(b, slots * sizeof(vis_roi), &b->slot_roi));
    OMMA_TRY(alloc(b, slots * sizeof(int), &b->slot_valid));
    OMMA_TRY(alloc(b, slots * sizeof(int), &b->slot_frame));
    b->results_bytes = slots * sizeof(omma_face) + images * sizeof(int);
    OMMA_TRY(alloc(b, b->results_bytes, &b->results));
    OMMA_TRY(gpu_host_alloc(b->dev, b->results_bytes, &b->host_results));
    /* Set-up, not per frame: the anchors go up once; trackers start zeroed
     * (every camera's first frame resets its own). */
    OMMA_TRY(gpu_copy_h2d_async(b->dev, b->anchors, b->dspec.anchors, n * sizeof(vis_anchor),
                                b->stream));
    OMMA_TRY(OMMA_CK(gpu_cu.cuMemsetD8Async(b->trackers, 0, trackers, b->stream)));
    OMMA_TRY(OMMA_CK(gpu_cu.cuStreamSynchronize(b->stream)));
    return OMMA_OK;
}

static omma_status gpu_open(omma_face_pipeline *p, fp_backend *b, const char *detector,
                            const char *mesh)
{
    OMMA_TRY(gpu_stream_acquire(b->dev, GPU_PRIORITY_NORMAL, &b->stream));
    OMMA_TRY(open_models(p, b, detector, mesh));
    vis_decode_options_init(&b->dopt, b->dspec.size);
    b->dopt.min_score = p->opt.min_detection_score;
    b->dopt.min_suppression = p->opt.nms_threshold;
    b->dopt.max_faces = p->opt.max_faces;
    vis_tracker_options_init(&b->topt);
    b->topt.max_faces = p->opt.max_faces;
    b->topt.detect_every = p->opt.detect_every;
    b->topt.min_presence = p->opt.min_presence;
    OMMA_TRY(open_buffers(p, b));
    for (int c = 0; c < OMMA_PIPELINE_MAX_CAMERAS; c++)
        b->mirror[c].fresh = 1;
    return OMMA_OK;
}

static void gpu_destroy(omma_face_pipeline *p)
{
    fp_backend *b = p->impl;
    if (!b)
        return;
    if (b->stream)
        (void)gpu_cu.cuStreamSynchronize(b->stream);
    omma_exec_destroy(b->xdet);
    omma_exec_destroy(b->xmesh);
    omma_engine_release(b->det);
    omma_engine_release(b->mesh);
    CUdeviceptr bufs[] = {b->anchors,    b->key_score,  b->key_anchor, b->cand,
                          b->dets,       b->det_counts, b->trackers,   b->slot_roi,
                          b->slot_valid, b->slot_frame, b->results};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        (void)gpu_mem_free(b->dev, bufs[i]);
    for (int i = 0; i < VIS_GPU_MAX_FRAMES; i++)
        (void)gpu_mem_free(b->dev, b->frames[i].ptr);
    if (b->host_results)
        gpu_host_free(b->dev, b->host_results, b->results_bytes);
    if (b->stream)
        gpu_stream_release(b->dev, b->stream);
    if (b->own_device)
        omma_device_close(b->dev);
    free(b);
    p->impl = NULL;
}

static omma_status gpu_create(omma_face_pipeline *p, const char *detector, const char *mesh)
{
    if ((long)p->opt.max_batch * p->opt.max_faces > MAX_SLOTS)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "face pipeline: max_batch %d x max_faces %d FaceMesh crops per batch "
                         "is above %d",
                         p->opt.max_batch, p->opt.max_faces, MAX_SLOTS);
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

/* Frame i on the device: host frames are copied plane by plane (tight
 * rows) into the i-th staging buffer. */
static omma_status upload(omma_face_pipeline *p, fp_backend *b, int i, const omma_frame *in,
                          omma_frame *out)
{
    *out = *in;
    if (in->memory == OMMA_MEMORY_DEVICE)
        return OMMA_OK;
    size_t bytes = 0;
    for (int k = 0; k < 3; k++)
        bytes += (size_t)vis_frame_row_bytes(in, k) * (size_t)vis_frame_plane_rows(in, k);
    staging *s = &b->frames[i];
    if (s->bytes < bytes) {
        OMMA_TRY(gpu_mem_free(b->dev, s->ptr));
        s->ptr = 0;
        s->bytes = 0;
        OMMA_TRY(gpu_mem_alloc(b->dev, bytes, &s->ptr));
        s->bytes = bytes;
    }
    CUdeviceptr at = s->ptr;
    for (int k = 0; k < 3; k++) {
        size_t row = (size_t)vis_frame_row_bytes(in, k), rows = (size_t)vis_frame_plane_rows(in, k);
        if (!row)
            continue;
        OMMA_TRY(gpu_copy_h2d_2d_async(b->dev, at, row, in->planes[k], (size_t)in->pitch[k], row,
                                       rows, b->stream));
        out->planes[k] = (const uint8_t *)(uintptr_t)at;
        out->pitch[k] = (int)row;
        at += row * rows;
        p->stats.h2d_copies++;
    }
    p->stats.h2d_bytes += bytes;
    out->memory = OMMA_MEMORY_DEVICE;
    return OMMA_OK;
}

/* The step's plan from the mirrors: who runs the detector, who gets which
 * FaceMesh slots. */
static void plan(omma_face_pipeline *p, fp_backend *b, int n, const int *cameras)
{
    vis_gpu_step *s = &b->step;
    int detect = 0, slots = 0;
    for (int i = 0; i < n; i++) {
        camera_mirror *m = &b->mirror[cameras[i]];
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
}

static omma_status launched(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return OMMA_OK;
    return OMMA_FAIL(OMMA_ERR_CUDA, "face pipeline: %s launch failed: %s", what,
                     cudaGetErrorString(e));
}

static omma_status enqueue(omma_face_pipeline *p, fp_backend *b, int n_detect)
{
    vis_gpu_step *s = &b->step;
    cudaStream_t st = (cudaStream_t)b->stream;
    int *counts = (int *)(uintptr_t)(b->results + (size_t)s->n_slots * sizeof(omma_face));
    if (n_detect > 0) {
        OMMA_TRY(launched(vis_cuda_letterbox(s, b->dspec.size, b->det_in, st), "letterbox"));
        OMMA_TRY(omma_exec_run(b->xdet, n_detect));
        OMMA_TRY(
            launched(vis_cuda_decode(
                         s, &b->dopt, (const vis_anchor *)(uintptr_t)b->anchors, b->dspec.n_anchors,
                         b->det_boxes, b->det_scores, (float *)(uintptr_t)b->key_score,
                         (int *)(uintptr_t)b->key_anchor, (vis_candidate *)(uintptr_t)b->cand,
                         (omma_detection *)(uintptr_t)b->dets, (int *)(uintptr_t)b->det_counts, st),
                     "decode"));
    }
    OMMA_TRY(launched(vis_cuda_track_begin(s, (vis_tracker *)(uintptr_t)b->trackers, &b->topt,
                                           (const omma_detection *)(uintptr_t)b->dets,
                                           (const int *)(uintptr_t)b->det_counts, p->opt.max_faces,
                                           (vis_roi *)(uintptr_t)b->slot_roi,
                                           (int *)(uintptr_t)b->slot_valid,
                                           (int *)(uintptr_t)b->slot_frame, counts, st),
                      "track begin"));
    if (s->n_slots > 0) {
        OMMA_TRY(launched(vis_cuda_crop(s, (const vis_roi *)(uintptr_t)b->slot_roi,
                                        (const int *)(uintptr_t)b->slot_valid,
                                        (const int *)(uintptr_t)b->slot_frame, VIS_MESH_SIZE,
                                        b->mesh_in, st),
                          "crop"));
        OMMA_TRY(omma_exec_run(b->xmesh, s->n_slots));
    }
    OMMA_TRY(launched(vis_cuda_track_finish(s, (vis_tracker *)(uintptr_t)b->trackers, VIS_MESH_SIZE,
                                            b->mesh_lm, b->mesh_flag,
                                            (omma_face *)(uintptr_t)b->results, counts, st),
                      "track finish"));
    size_t bytes = (size_t)s->n_slots * sizeof(omma_face) + (size_t)s->n * sizeof(int);
    OMMA_TRY(gpu_copy_d2h_async(b->dev, b->host_results, b->results, bytes, b->stream));
    p->stats.d2h_bytes += bytes;
    p->stats.d2h_copies++;
    p->stats.detector_images += (uint64_t)n_detect;
    p->stats.mesh_images += (uint64_t)s->n_slots;
    return OMMA_OK;
}

/* The results, once the stream is done: counts after the slots' faces. */
static omma_status unpack(omma_face_pipeline *p, fp_backend *b, omma_face *faces, int *counts)
{
    vis_gpu_step *s = &b->step;
    const omma_face *slot_faces = b->host_results;
    const int *dev_counts = (const int *)(slot_faces + s->n_slots);
    for (int i = 0; i < s->n; i++) {
        int c = dev_counts[i];
        if (c < 0 || c > s->f[i].slots)
            return OMMA_FAIL(OMMA_ERR_INTERNAL,
                             "face pipeline: camera %d: the GPU tracker has %d faces for %d slots",
                             s->f[i].camera, c, s->f[i].slots);
        counts[i] = c;
        memcpy(faces + (size_t)i * (size_t)p->opt.max_faces, slot_faces + s->f[i].slot_base,
               (size_t)c * sizeof *faces);
        camera_mirror *m = &b->mirror[s->f[i].camera];
        m->count = c;
        m->fresh = 0;
    }
    return OMMA_OK;
}

static omma_status run_step(omma_face_pipeline *p, fp_backend *b, int n, const int *cameras,
                            const omma_frame *frames, omma_face *faces, int *counts)
{
    OMMA_TRY(omma_device_check_health(b->dev));
    for (int i = 0; i < n; i++)
        OMMA_TRY(upload(p, b, i, &frames[i], &b->step.f[i].frame));
    plan(p, b, n, cameras);
    int n_detect = 0;
    for (int i = 0; i < n; i++)
        n_detect += b->step.f[i].detect >= 0;
    OMMA_TRY(enqueue(p, b, n_detect));
    OMMA_TRY(OMMA_CK(gpu_cu.cuStreamSynchronize(b->stream)));
    return unpack(p, b, faces, counts);
}

static omma_status gpu_run_batch(omma_face_pipeline *p, int n, const int *cameras,
                                 const omma_frame *frames, omma_face *faces, int *counts)
{
    fp_backend *b = p->impl;
    omma_scope scope;
    OMMA_TRY(omma_device_enter(b->dev, &scope));
    omma_status st = run_step(p, b, n, cameras, frames, faces, counts);
    if (st != OMMA_OK)
        (void)gpu_cu.cuStreamSynchronize(b->stream); /* nothing of it still running */
    omma_status left = omma_device_leave(&scope);
    return st != OMMA_OK ? st : left;
}

static void gpu_reset(omma_face_pipeline *p, int n, const int *cameras)
{
    fp_backend *b = p->impl;
    for (int i = 0; i < n; i++)
        b->mirror[cameras[i]].fresh = 1;
}

const fp_backend_ops fp_gpu_backend = {gpu_create, gpu_destroy, gpu_run_batch, gpu_reset};
