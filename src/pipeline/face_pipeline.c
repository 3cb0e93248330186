/* The face pipeline's public calls: options, argument checks, the busy
 * flag and the counters; the work is the backend's (face_pipeline_cpu.c,
 * face_pipeline_gpu.c). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "pipeline/face_pipeline_private.h"
#include "vision/frame.h"
#include "vision/geometry_metadata.h"
#include "vision/head_pose.h"

void omma_face_pipeline_options_init(omma_face_pipeline_options *opt)
{
    if (!opt)
        return;
    memset(opt, 0, sizeof *opt);
    opt->backend = OMMA_BACKEND_CPU;
    opt->precision = OMMA_PRECISION_FP16;
    opt->max_faces = 4;
    opt->max_batch = 16;
    opt->min_detection_score = 0.5f;
    opt->min_presence = 0.5f;
    opt->cut_move = 0.3f;
    opt->cut_agree = 0.22f;
    opt->cut_presence = 0.9f;
    opt->detect_every = 0;
    opt->nms_threshold = 0.3f;
    opt->lanes = 1;
    opt->graphs = 1;
}

static int in_unit(float v)
{
    return v >= 0.0f && v <= 1.0f; /* false for NaN */
}

static omma_status check_options(const omma_face_pipeline_options *o)
{
    if (o->backend != OMMA_BACKEND_CPU && o->backend != OMMA_BACKEND_CUDA)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face pipeline: unknown backend %d",
                         (int)o->backend);
    if (o->backend == OMMA_BACKEND_CPU && o->device)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face pipeline: a device given to the CPU backend");
    if (o->precision != OMMA_PRECISION_FP16 && o->precision != OMMA_PRECISION_FP32)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face pipeline: unknown precision %d",
                         (int)o->precision);
    if (o->head_pose && !o->geometry_metadata)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "face pipeline: head_pose needs geometry_metadata (MediaPipe's "
                         "geometry_pipeline_metadata_landmarks.binarypb)");
    if (!o->detector_model || !o->mesh_model)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face pipeline: no %s model path",
                         o->detector_model ? "FaceMesh" : "detector");
    if (o->mesh_points != 0 && o->mesh_points != OMMA_FACE_LANDMARKS &&
        o->mesh_points != OMMA_FACE_LANDMARKS_WITH_IRISES)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face pipeline: mesh_points %d (0, %d or %d)",
                         o->mesh_points, OMMA_FACE_LANDMARKS, OMMA_FACE_LANDMARKS_WITH_IRISES);
    if (o->max_faces < 1 || o->max_faces > OMMA_PIPELINE_MAX_FACES)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face pipeline: max_faces %d not in 1..%d",
                         o->max_faces, OMMA_PIPELINE_MAX_FACES);
    if (o->max_batch < 1 || o->max_batch > OMMA_PIPELINE_MAX_BATCH)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face pipeline: max_batch %d not in 1..%d",
                         o->max_batch, OMMA_PIPELINE_MAX_BATCH);
    if (o->lanes < 1 || o->lanes > OMMA_PIPELINE_MAX_LANES)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face pipeline: lanes %d not in 1..%d", o->lanes,
                         OMMA_PIPELINE_MAX_LANES);
    if (o->threads < 0 || o->threads > 256)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "face pipeline: threads %d not in 0..256 (0: all cores)", o->threads);
    if (o->detect_every < 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face pipeline: detect_every %d < 0",
                         o->detect_every);
    if (!in_unit(o->min_detection_score) || !in_unit(o->min_presence) || !in_unit(o->nms_threshold))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "face pipeline: min_detection_score %g, min_presence %g, nms_threshold "
                         "%g: each must be in [0, 1]",
                         (double)o->min_detection_score, (double)o->min_presence,
                         (double)o->nms_threshold);
    if (!(o->cut_move >= 0.0f && o->cut_move <= 10.0f) || !in_unit(o->cut_agree) ||
        !in_unit(o->cut_presence))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "face pipeline: cut_move %g (0..10), cut_agree %g (0..1), cut_presence %g "
                         "(0..1)",
                         (double)o->cut_move, (double)o->cut_agree, (double)o->cut_presence);
    return OMMA_OK;
}

omma_status omma_face_pipeline_create(const omma_face_pipeline_options *opt,
                                      omma_face_pipeline **out)
{
    if (out)
        *out = NULL;
    if (!opt || !out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_face_pipeline_create: NULL %s",
                         opt ? "out" : "options");
    OMMA_TRY(check_options(opt));
    omma_face_pipeline *p = calloc(1, sizeof *p);
    if (!p)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "face pipeline");
    p->opt = *opt;
    /* The paths are the caller's; they are only needed while loading. */
    p->opt.detector_model = p->opt.mesh_model = p->opt.geometry_metadata = NULL;
    atomic_init(&p->busy, false);
    pthread_mutex_init(&p->stats_lock, NULL);
    p->ops = opt->backend == OMMA_BACKEND_CUDA ? &fp_gpu_backend : &fp_cpu_backend;
    omma_status st = OMMA_OK;
    if (opt->head_pose) {
        p->geo = malloc(sizeof *p->geo);
        st = p->geo ? vis_geometry_load(opt->geometry_metadata, p->geo)
                    : OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "face pipeline: geometry");
    }
    if (st == OMMA_OK)
        st = p->ops->create(p, opt->detector_model, opt->mesh_model);
    if (st == OMMA_OK) {
        p->one = calloc((size_t)opt->max_faces, sizeof *p->one);
        if (!p->one)
            st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "face pipeline: result scratch");
    }
    if (st != OMMA_OK) {
        omma_face_pipeline_destroy(p);
        return st;
    }
    *out = p;
    return OMMA_OK;
}

void omma_face_pipeline_destroy(omma_face_pipeline *p)
{
    if (!p)
        return;
    p->ops->destroy(p);
    pthread_mutex_destroy(&p->stats_lock);
    free(p->geo);
    free(p->one);
    free(p);
}

static omma_status check_batch(const omma_face_pipeline *p, int n, const int *cameras,
                               const omma_frame *frames)
{
    if (n < 1 || n > p->opt.max_batch)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face pipeline: batch of %d frames not in 1..%d", n,
                         p->opt.max_batch);
    for (int i = 0; i < n; i++) {
        if (cameras[i] < 0 || cameras[i] >= OMMA_PIPELINE_MAX_CAMERAS)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                             "face pipeline: frame %d: camera %d not in 0..%d", i, cameras[i],
                             OMMA_PIPELINE_MAX_CAMERAS - 1);
        for (int j = 0; j < i; j++)
            if (cameras[j] == cameras[i])
                return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                                 "face pipeline: camera %d twice in one batch (frames %d and %d)",
                                 cameras[i], j, i);
        omma_status st = vis_frame_check(&frames[i]);
        if (st != OMMA_OK) {
            char why[256];
            snprintf(why, sizeof why, "%s", omma_last_error());
            return OMMA_FAIL(st, "face pipeline: frame %d (camera %d): %s", i, cameras[i], why);
        }
        if (frames[i].memory != OMMA_MEMORY_HOST && frames[i].memory != OMMA_MEMORY_DEVICE)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face pipeline: frame %d: unknown memory %d", i,
                             (int)frames[i].memory);
        if (frames[i].memory == OMMA_MEMORY_DEVICE && p->opt.backend != OMMA_BACKEND_CUDA)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                             "face pipeline: frame %d is in device memory; the CPU backend "
                             "takes host frames",
                             i);
    }
    return OMMA_OK;
}

/* A checked batch through the backend; the caller holds the busy flag. */
static omma_status run_batch(omma_face_pipeline *p, int n, const int *cameras,
                             const omma_frame *frames, omma_face *faces, int *counts)
{
    OMMA_TRY(check_batch(p, n, cameras, frames));
    omma_status st = p->ops->run_batch(p, n, cameras, frames, faces, counts);
    if (st != OMMA_OK) {
        /* A half-done batch leaves no state behind; ids stay unique. */
        memset(counts, 0, (size_t)n * sizeof *counts);
        p->ops->reset(p, n, cameras);
        return st;
    }
    if (p->opt.backend == OMMA_BACKEND_CPU) /* the GPU's: at its steps' completion */
        fp_head_poses(p, n, frames, faces, counts);
    return OMMA_OK;
}

void fp_head_poses(const omma_face_pipeline *p, int n, const omma_frame *frames, omma_face *faces,
                   const int *counts)
{
    if (!p->geo)
        return;
    for (int i = 0; i < n; i++) /* a face whose pose has no solution (degenerate) has none */
        for (int j = 0; j < counts[i]; j++) {
            omma_face *f = &faces[(size_t)i * (size_t)p->opt.max_faces + (size_t)j];
            f->has_head_pose =
                vis_head_pose(p->geo, &f->landmarks[0][0], frames[i].width, frames[i].height,
                              f->head_pose, &f->yaw, &f->pitch, &f->roll) == OMMA_OK;
        }
}

static omma_status acquire(omma_face_pipeline *p)
{
    if (atomic_exchange(&p->busy, true))
        return OMMA_FAIL(OMMA_ERR_BUSY, "face pipeline: in use by another thread "
                                        "(use one pipeline per thread)");
    return OMMA_OK;
}

omma_status omma_face_pipeline_process_batch(omma_face_pipeline *p, int n, const int *cameras,
                                             const omma_frame *frames, omma_face *faces,
                                             int *counts)
{
    if (!p || !cameras || !frames || !faces || !counts)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_face_pipeline_process_batch: NULL argument");
    if (n < 1 || n > p->opt.max_batch)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face pipeline: batch of %d frames not in 1..%d", n,
                         p->opt.max_batch);
    memset(counts, 0, (size_t)n * sizeof *counts);
    OMMA_TRY(acquire(p));
    omma_status st = run_batch(p, n, cameras, frames, faces, counts);
    atomic_store(&p->busy, false);
    return st;
}

omma_status omma_face_pipeline_reset_cameras(omma_face_pipeline *p, int n, const int *cameras)
{
    if (!p || !cameras)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_face_pipeline_reset_cameras: NULL argument");
    if (n < 1 || n > OMMA_PIPELINE_MAX_CAMERAS)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face pipeline: reset of %d cameras not in 1..%d", n,
                         OMMA_PIPELINE_MAX_CAMERAS);
    for (int i = 0; i < n; i++)
        if (cameras[i] < 0 || cameras[i] >= OMMA_PIPELINE_MAX_CAMERAS)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face pipeline: reset: camera %d not in 0..%d",
                             cameras[i], OMMA_PIPELINE_MAX_CAMERAS - 1);
    OMMA_TRY(acquire(p));
    p->ops->reset(p, n, cameras);
    atomic_store(&p->busy, false);
    return OMMA_OK;
}

omma_status omma_face_pipeline_process(omma_face_pipeline *p, int camera, const omma_frame *frame,
                                       omma_face *faces, int max, int *n)
{
    if (n)
        *n = 0;
    if (!p || !frame || !n || (!faces && max > 0))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_face_pipeline_process: NULL argument");
    if (camera < 0 || camera >= OMMA_PIPELINE_MAX_CAMERAS || max < 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "omma_face_pipeline_process: camera %d not in 0..%d or max %d < 0", camera,
                         OMMA_PIPELINE_MAX_CAMERAS - 1, max);
    OMMA_TRY(acquire(p));
    int count = 0;
    omma_status st = run_batch(p, 1, &camera, frame, p->one, &count);
    if (st == OMMA_OK) {
        *n = count < max ? count : max;
        if (*n > 0)
            memcpy(faces, p->one, (size_t)*n * sizeof *faces);
    }
    atomic_store(&p->busy, false);
    return st;
}

omma_status omma_face_pipeline_get_stats(const omma_face_pipeline *p,
                                         omma_face_pipeline_stats *stats)
{
    if (!p || !stats)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_face_pipeline_get_stats: NULL argument");
    pthread_mutex_lock((pthread_mutex_t *)&p->stats_lock);
    *stats = p->stats;
    pthread_mutex_unlock((pthread_mutex_t *)&p->stats_lock);
    return OMMA_OK;
}

void fp_stats_add_batch(omma_face_pipeline *p, int n, const int *counts,
                        const omma_face_pipeline_stats *delta)
{
    pthread_mutex_lock(&p->stats_lock);
    omma_face_pipeline_stats *s = &p->stats;
    s->frames += (uint64_t)n;
    s->batches++;
    for (int i = 0; i < n; i++)
        s->faces += (uint64_t)counts[i];
    s->detector_images += delta->detector_images;
    s->mesh_images += delta->mesh_images;
    s->h2d_bytes += delta->h2d_bytes;
    s->h2d_copies += delta->h2d_copies;
    s->d2h_bytes += delta->d2h_bytes;
    s->d2h_copies += delta->d2h_copies;
    pthread_mutex_unlock(&p->stats_lock);
}
