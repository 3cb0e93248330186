/* The pose pipeline batched on the GPU for device frames
 * (pose_pipeline_batch.h): the face pipeline's letterbox and crop kernels
 * (cuda_vision.h) feed the pose models, the heatmap refinement runs on the
 * GPU (cuda_vision_pose.h), and the host decodes and tracks with the host
 * pipeline's own code (vision/pose.h, pose_track.h). */
#include "pipeline/pose_pipeline_batch.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/memory.h"
#include "gpu/stream_pool.h"
#include "omma/pipeline.h"
#include "pipeline/pose_models.h"
#include "pipeline/pose_track.h"
#include "vision/cuda_vision.h"
#include "vision/cuda_vision_pose.h"
#include "vision/frame.h"
#include "vision/letterbox.h"

#define LM_VALUES (VIS_POSE_RAW_LANDMARKS * 5)
#define WORLD_VALUES (VIS_POSE_RAW_LANDMARKS * 3)
#define DET_IMAGE_FLOATS ((size_t)VIS_POSE_ANCHORS * (VIS_POSE_DETECT_VALUES + 1))

/* A camera's people and the call that last saw it (a camera twice in one
 * call is an error). */
typedef struct batch_camera {
    pp_camera track;
    uint64_t call;
} batch_camera;

/* The landmark batch's slots, host side (copied to the device as one). */
typedef struct slot_table {
    vis_roi *roi;
    int *valid, *frame;
} slot_table;

struct pp_batch {
    pp_batch_options opt;
    omma_device *dev;
    pp_models m;
    CUstream stream;
    omma_exec *xdet, *xlm;
    float *det_in, *det_boxes, *det_scores; /* the execs' device buffers */
    float *lm_in, *lm_landmarks, *lm_flag, *lm_heatmap, *lm_world;
    int max_slots;
    /* Device: the step, the slots (roi, valid, frame back to back) and the
     * refined landmarks. */
    CUdeviceptr step_dev, slots_dev, refined_dev;
    size_t slots_bytes;
    /* Pinned host: the slots, then the detector's outputs (boxes, scores per
     * image), the refined landmarks, flags and world landmarks. */
    uint8_t *host;
    size_t host_bytes;
    slot_table slots;
    float *boxes, *scores, *landmarks, *flags, *world;
    vis_gpu_step step;
    int *slot_track; /* slot -> its track's index in its camera */
    omma_pose *found; /* per slot: the landmark model's pose */
    vis_roi *next;
    batch_camera *cameras[OMMA_PIPELINE_MAX_CAMERAS];
    uint64_t calls;
    atomic_int busy;
};

void pp_batch_options_init(pp_batch_options *opt)
{
    memset(opt, 0, sizeof *opt);
    omma_pose_pipeline_options_init(&opt->pose);
    opt->pose.backend = OMMA_BACKEND_CUDA;
    opt->max_batch = 64;
    opt->graphs = 1;
}

/* The batch size the execs run for k items (<= max): 1, 2, 4, 8, 16, then
 * multiples of 16. */
static int bucket(int k, int max)
{
    int b = 1;
    while (b < k && b < 16)
        b *= 2;
    if (k > 16)
        b = (k + 15) / 16 * 16;
    return b < max ? b : max;
}

void pp_batch_destroy(pp_batch *b)
{
    if (!b)
        return;
    if (b->stream) {
        omma_scope scope;
        if (omma_device_enter(b->dev, &scope) == OMMA_OK) {
            (void)gpu_cu.cuStreamSynchronize(b->stream);
            (void)omma_device_leave(&scope);
        }
    }
    omma_exec_destroy(b->xdet);
    omma_exec_destroy(b->xlm);
    pp_models_release(&b->m);
    CUdeviceptr bufs[] = {b->step_dev, b->slots_dev, b->refined_dev};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        if (bufs[i])
            (void)gpu_mem_free(b->dev, bufs[i]);
    if (b->host)
        gpu_host_free(b->dev, b->host, b->host_bytes);
    if (b->stream)
        gpu_stream_release(b->dev, b->stream);
    free(b->slot_track);
    free(b->found);
    free(b->next);
    for (int i = 0; i < OMMA_PIPELINE_MAX_CAMERAS; i++)
        free(b->cameras[i]);
    free(b);
}

static omma_status open_execs(pp_batch *b)
{
    omma_exec_options xo;
    omma_exec_options_init(&xo);
    xo.stream = b->stream;
    xo.graphs = b->opt.graphs;
    OMMA_TRY(omma_exec_create_with(b->m.det, b->opt.max_batch, &xo, &b->xdet));
    OMMA_TRY(omma_exec_create_with(b->m.lm, b->max_slots, &xo, &b->xlm));
    OMMA_TRY(omma_exec_input(b->xdet, 0, &b->det_in));
    OMMA_TRY(omma_exec_output(b->xdet, b->m.det_boxes, &b->det_boxes));
    OMMA_TRY(omma_exec_output(b->xdet, b->m.det_scores, &b->det_scores));
    OMMA_TRY(omma_exec_input(b->xlm, 0, &b->lm_in));
    OMMA_TRY(omma_exec_output(b->xlm, b->m.lm_landmarks, &b->lm_landmarks));
    OMMA_TRY(omma_exec_output(b->xlm, b->m.lm_flag, &b->lm_flag));
    OMMA_TRY(omma_exec_output(b->xlm, b->m.lm_heatmap, &b->lm_heatmap));
    return omma_exec_output(b->xlm, b->m.lm_world, &b->lm_world);
}

static omma_status create(pp_batch *b)
{
    omma_engine_options eo;
    omma_engine_options_init(&eo);
    eo.backend = OMMA_BACKEND_CUDA;
    eo.precision = b->opt.pose.precision;
    OMMA_TRY(
        pp_models_load(b->dev, &eo, b->opt.pose.detector_model, b->opt.pose.landmark_model, &b->m));
    OMMA_TRY(gpu_stream_acquire(b->dev, GPU_PRIORITY_NORMAL, &b->stream));
    OMMA_TRY(open_execs(b));
    size_t frames = (size_t)b->opt.max_batch, slots = (size_t)b->max_slots;
    b->slots_bytes = slots * (sizeof(vis_roi) + 2 * sizeof(int));
    OMMA_TRY(gpu_mem_alloc(b->dev, sizeof(vis_gpu_step), &b->step_dev));
    OMMA_TRY(gpu_mem_alloc(b->dev, b->slots_bytes, &b->slots_dev));
    OMMA_TRY(gpu_mem_alloc(b->dev, slots * LM_VALUES * sizeof(float), &b->refined_dev));
    size_t floats = frames * DET_IMAGE_FLOATS + slots * (LM_VALUES + 1 + WORLD_VALUES);
    b->host_bytes = b->slots_bytes + floats * sizeof(float);
    OMMA_TRY(gpu_host_alloc(b->dev, b->host_bytes, (void **)&b->host));
    b->slots.roi = (vis_roi *)b->host;
    b->slots.valid = (int *)(b->slots.roi + slots);
    b->slots.frame = b->slots.valid + slots;
    b->boxes = (float *)(b->host + b->slots_bytes);
    b->scores = b->boxes + frames * VIS_POSE_ANCHORS * VIS_POSE_DETECT_VALUES;
    b->landmarks = b->scores + frames * VIS_POSE_ANCHORS;
    b->flags = b->landmarks + slots * LM_VALUES;
    b->world = b->flags + slots;
    b->slot_track = calloc(slots, sizeof *b->slot_track);
    b->found = calloc(slots, sizeof *b->found);
    b->next = calloc(slots, sizeof *b->next);
    if (!b->slot_track || !b->found || !b->next)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "batched pose: host buffers");
    return OMMA_OK;
}

omma_status pp_batch_create(const pp_batch_options *opt, pp_batch **out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "pp_batch_create: out is NULL");
    *out = NULL;
    if (!opt || !opt->pose.device)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "batched pose: %s",
                         opt ? "no device" : "options are NULL");
    if (opt->max_batch < 1 || opt->max_batch > VIS_GPU_MAX_FRAMES)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "batched pose: max batch %d not in 1..%d",
                         opt->max_batch, VIS_GPU_MAX_FRAMES);
    pp_batch_options o = *opt;
    o.pose.backend = OMMA_BACKEND_CUDA;
    OMMA_TRY(pp_check_options(&o.pose));
    pp_batch *b = calloc(1, sizeof *b);
    if (!b)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "batched pose");
    b->opt = o;
    b->dev = o.pose.device;
    b->max_slots = o.max_batch * o.pose.max_poses;
    atomic_init(&b->busy, 0);
    omma_scope scope;
    omma_status st = omma_device_enter(b->dev, &scope);
    if (st == OMMA_OK) {
        st = create(b);
        (void)omma_device_leave(&scope);
    }
    b->opt.pose.detector_model = b->opt.pose.landmark_model = NULL;
    if (st != OMMA_OK) {
        pp_batch_destroy(b);
        return st;
    }
    *out = b;
    return OMMA_OK;
}

static omma_status check_batch(pp_batch *b, int n, const int *cameras, const omma_frame *frames)
{
    if (n < 1 || n > b->opt.max_batch)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "batched pose: %d frames not in 1..%d", n,
                         b->opt.max_batch);
    for (int i = 0; i < n; i++) {
        if (cameras[i] < 0 || cameras[i] >= OMMA_PIPELINE_MAX_CAMERAS)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "batched pose: camera %d not in 0..%d",
                             cameras[i], OMMA_PIPELINE_MAX_CAMERAS - 1);
        OMMA_TRY(vis_frame_check(&frames[i]));
        if (frames[i].memory != OMMA_MEMORY_DEVICE)
            return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                             "batched pose: frame %d is in host memory (device frames only; "
                             "omma_pose_pipeline_process runs host frames)",
                             i);
    }
    return OMMA_OK;
}

/* The batch's cameras' states (made on first use), each seen once. */
static omma_status cameras_of(pp_batch *b, int n, const int *cameras, batch_camera **cams)
{
    b->calls++;
    for (int i = 0; i < n; i++) {
        batch_camera **c = &b->cameras[cameras[i]];
        if (!*c && !(*c = calloc(1, sizeof **c)))
            return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "batched pose: camera %d", cameras[i]);
        if ((*c)->call == b->calls)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "batched pose: camera %d twice in a batch",
                             cameras[i]);
        (*c)->call = b->calls;
        cams[i] = *c;
    }
    return OMMA_OK;
}

static omma_status copy_back(pp_batch *b, float *dst, const float *src, size_t floats)
{
    return gpu_copy_d2h_async(b->dev, dst, (CUdeviceptr)(uintptr_t)src, floats * sizeof(float),
                              b->stream);
}

/* The detector on the frames that want it, decoded into their tracks. */
static omma_status detect(pp_batch *b, int n, batch_camera **cams, const int *want)
{
    int nd = 0;
    for (int i = 0; i < n; i++)
        b->step.f[i].detect = want[i] ? nd++ : -1;
    b->step.n = n;
    b->step.n_slots = 0;
    OMMA_TRY(OMMA_CK(vis_cuda_step_load(&b->step, (vis_gpu_step *)(uintptr_t)b->step_dev,
                                        (cudaStream_t)b->stream)));
    if (nd == 0)
        return OMMA_OK;
    vis_gpu_shape shape = {n, 0};
    OMMA_TRY(OMMA_CK(vis_cuda_letterbox((const vis_gpu_step *)(uintptr_t)b->step_dev, shape,
                                        VIS_POSE_DETECT_SIZE, b->det_in, (cudaStream_t)b->stream)));
    OMMA_TRY(omma_exec_run(b->xdet, bucket(nd, b->opt.max_batch)));
    OMMA_TRY(copy_back(b, b->boxes, b->det_boxes,
                       (size_t)nd * VIS_POSE_ANCHORS * VIS_POSE_DETECT_VALUES));
    OMMA_TRY(copy_back(b, b->scores, b->det_scores, (size_t)nd * VIS_POSE_ANCHORS));
    OMMA_TRY(OMMA_CK(gpu_cu.cuStreamSynchronize(b->stream)));
    vis_pose_decode_options dopt;
    vis_pose_decode_options_init(&dopt);
    dopt.min_score = b->opt.pose.min_detection_score;
    dopt.max_poses = b->opt.pose.max_poses;
    for (int i = 0; i < n; i++) {
        int d = b->step.f[i].detect;
        if (d < 0)
            continue;
        const omma_frame *f = &b->step.f[i].frame;
        vis_letterbox lb = vis_letterbox_make(f->width, f->height, VIS_POSE_DETECT_SIZE);
        vis_pose_detection dets[OMMA_POSE_MAX_POSES];
        int found = 0;
        OMMA_TRY(
            vis_pose_detect_decode(&dopt, b->m.anchors, VIS_POSE_ANCHORS,
                                   b->boxes + (size_t)d * VIS_POSE_ANCHORS * VIS_POSE_DETECT_VALUES,
                                   b->scores + (size_t)d * VIS_POSE_ANCHORS, &lb, dets, &found));
        pp_track_detected(&cams[i]->track, &b->opt.pose, dets, found);
    }
    return OMMA_OK;
}

/* The landmark model on every track's region; the frames' poses. */
static omma_status landmarks(pp_batch *b, int n, batch_camera **cams, omma_pose *poses, int *counts)
{
    int ns = 0;
    for (int i = 0; i < n; i++) {
        const pp_camera *c = &cams[i]->track;
        b->step.f[i].slot_base = ns;
        b->step.f[i].slots = c->count;
        for (int t = 0; t < c->count; t++, ns++) {
            b->slots.roi[ns] = c->tracks[t].roi;
            b->slots.valid[ns] = 1;
            b->slots.frame[ns] = i;
            b->slot_track[ns] = t;
        }
    }
    if (ns > 0) {
        int nb = bucket(ns, b->max_slots);
        for (int s = ns; s < nb; s++)
            b->slots.valid[s] = 0, b->slots.frame[s] = 0;
        b->step.n_slots = nb;
        /* The slot arrays go as one copy: roi, valid, frame at max_slots
         * strides. */
        size_t ms = (size_t)b->max_slots;
        CUdeviceptr roi = b->slots_dev, valid = roi + ms * sizeof(vis_roi);
        CUdeviceptr frame = valid + ms * sizeof(int);
        OMMA_TRY(gpu_copy_h2d_async(b->dev, b->slots_dev, b->host, b->slots_bytes, b->stream));
        OMMA_TRY(OMMA_CK(vis_cuda_step_load(&b->step, (vis_gpu_step *)(uintptr_t)b->step_dev,
                                            (cudaStream_t)b->stream)));
        vis_gpu_shape shape = {n, nb};
        OMMA_TRY(OMMA_CK(vis_cuda_crop((const vis_gpu_step *)(uintptr_t)b->step_dev, shape,
                                       (const vis_roi *)(uintptr_t)roi,
                                       (const int *)(uintptr_t)valid, (const int *)(uintptr_t)frame,
                                       VIS_POSE_LANDMARK_SIZE, b->lm_in, (cudaStream_t)b->stream)));
        OMMA_TRY(omma_exec_run(b->xlm, nb));
        float *refined = (float *)(uintptr_t)b->refined_dev;
        OMMA_TRY(OMMA_CK(vis_cuda_pose_refine(ns, VIS_POSE_LANDMARK_SIZE, b->lm_landmarks,
                                              b->lm_heatmap, refined, (cudaStream_t)b->stream)));
        OMMA_TRY(copy_back(b, b->landmarks, refined, (size_t)ns * LM_VALUES));
        OMMA_TRY(copy_back(b, b->flags, b->lm_flag, (size_t)ns));
        OMMA_TRY(copy_back(b, b->world, b->lm_world, (size_t)ns * WORLD_VALUES));
        OMMA_TRY(OMMA_CK(gpu_cu.cuStreamSynchronize(b->stream)));
    }
    const int mp = b->opt.pose.max_poses;
    for (int i = 0; i < n; i++) {
        pp_camera *c = &cams[i]->track;
        int base = b->step.f[i].slot_base;
        for (int t = 0; t < c->count; t++) {
            int s = base + t;
            vis_pose_raw raw = {b->landmarks + (size_t)s * LM_VALUES,
                                b->world + (size_t)s * WORLD_VALUES, NULL, b->flags[s]};
            vis_pose_landmarks(&c->tracks[t].roi, &raw, &b->found[s], &b->next[s]);
        }
        pp_track_finish(c, &b->opt.pose, b->found + base, b->next + base,
                        poses + (size_t)i * (size_t)mp, &counts[i]);
    }
    return OMMA_OK;
}

static omma_status process(pp_batch *b, int n, const int *cameras, const omma_frame *frames,
                           const CUevent *ready, batch_camera **cams, omma_pose *poses, int *counts)
{
    OMMA_TRY(cameras_of(b, n, cameras, cams));
    int want[VIS_GPU_MAX_FRAMES];
    for (int i = 0; i < n; i++) {
        want[i] = pp_track_begin(&cams[i]->track, &b->opt.pose);
        memset(&b->step.f[i], 0, sizeof b->step.f[i]);
        b->step.f[i].frame = frames[i];
        b->step.f[i].camera = cameras[i];
        if (ready && ready[i])
            OMMA_TRY(OMMA_CK(gpu_cu.cuStreamWaitEvent(b->stream, ready[i], 0)));
    }
    OMMA_TRY(detect(b, n, cams, want));
    return landmarks(b, n, cams, poses, counts);
}

omma_status pp_batch_process(pp_batch *b, int n, const int *cameras, const omma_frame *frames,
                             const CUevent *ready, omma_pose *poses, int *counts)
{
    if (!b || !cameras || !frames || !poses || !counts)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "pp_batch_process: NULL argument");
    for (int i = 0; i < n && i < b->opt.max_batch; i++)
        counts[i] = 0;
    OMMA_TRY(check_batch(b, n, cameras, frames));
    int idle = 0;
    if (!atomic_compare_exchange_strong(&b->busy, &idle, 1))
        return OMMA_FAIL(OMMA_ERR_BUSY, "batched pose: already in use by another thread");
    batch_camera *cams[VIS_GPU_MAX_FRAMES] = {0};
    omma_scope scope;
    omma_status st = omma_device_enter(b->dev, &scope);
    if (st == OMMA_OK) {
        st = process(b, n, cameras, frames, ready, cams, poses, counts);
        if (st != OMMA_OK) /* no half-done work left on the frames */
            (void)gpu_cu.cuStreamSynchronize(b->stream);
        (void)omma_device_leave(&scope);
    }
    if (st != OMMA_OK)
        for (int i = 0; i < n; i++) {
            counts[i] = 0;
            if (cams[i])
                pp_track_reset(&cams[i]->track);
        }
    atomic_store(&b->busy, 0);
    return st;
}

omma_status pp_batch_reset(pp_batch *b, int camera)
{
    if (!b)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "pp_batch_reset: NULL");
    if (camera < 0 || camera >= OMMA_PIPELINE_MAX_CAMERAS)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "batched pose: camera %d not in 0..%d", camera,
                         OMMA_PIPELINE_MAX_CAMERAS - 1);
    int idle = 0;
    if (!atomic_compare_exchange_strong(&b->busy, &idle, 1))
        return OMMA_FAIL(OMMA_ERR_BUSY, "batched pose: already in use by another thread");
    if (b->cameras[camera])
        pp_track_reset(&b->cameras[camera]->track);
    atomic_store(&b->busy, 0);
    return OMMA_OK;
}

