/* The pose pipeline (omma/pose.h): two engines (person detector, landmark
 * model), one small tracker per camera, frames one after the other on the
 * host: vis_preprocess_ref / vis_crop_ref in, vision/pose.c out.
 *
 * Tracking rule (MediaPipe's pose loop, extended to several people): a
 * person is tracked from a detection; each frame the landmark model runs on
 * the person's region (from the detection on its first frame, from the
 * previous frame's alignment points after), and the person is lost when
 * the pose flag falls below min_presence. The detector runs when nobody is
 * tracked, and every detect_every frames while fewer than max_poses are; a
 * detection whose region overlaps a tracked person's (IoU > 0.5) is that
 * person. Two tracks whose regions come to overlap that much are one
 * person: the newer one ends. (pose_track.c; the batched GPU path,
 * pose_pipeline_batch.c, tracks with the same code.) */
#include <math.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "omma/pipeline.h"
#include "omma/pose.h"
#include "pipeline/pose_models.h"
#include "pipeline/pose_pipeline_copy.h"
#include "pipeline/pose_track.h"
#include "vision/crop_ref.h"
#include "vision/detect_decode.h"
#include "vision/frame.h"
#include "vision/pose.h"
#include "vision/preprocess_ref.h"

struct omma_pose_pipeline {
    omma_pose_pipeline_options opt; /* model paths NULL after create */
    omma_device *own_device; /* opened here when opt.device was NULL */
    omma_device *dev; /* CUDA: the device the engines run on */
    pp_models m;
    omma_exec *xdet, *xlm;
    float *det_in, *lm_in; /* host inputs */
    float *boxes, *scores, *landmarks, *flag, *heatmap, *world; /* host outputs */
    bool device_io; /* CUDA: inputs/outputs are device memory, staged here */
    float *dev_det_in, *dev_boxes, *dev_scores, *dev_lm_in, *dev_landmarks, *dev_flag, *dev_heatmap,
        *dev_world;
    pp_camera *cameras[OMMA_PIPELINE_MAX_CAMERAS];
    atomic_bool busy;
};

void omma_pose_pipeline_options_init(omma_pose_pipeline_options *opt)
{
    if (!opt)
        return;
    memset(opt, 0, sizeof *opt);
    opt->backend = OMMA_BACKEND_CPU;
    opt->precision = OMMA_PRECISION_FP16;
    opt->max_poses = 1;
    opt->min_detection_score = 0.5f;
    opt->min_presence = 0.5f;
    opt->detect_every = 30;
}

void omma_pose_pipeline_destroy(omma_pose_pipeline *p)
{
    if (!p)
        return;
    omma_exec_destroy(p->xdet);
    omma_exec_destroy(p->xlm);
    pp_models_release(&p->m);
    if (p->device_io) {
        free(p->det_in);
        free(p->lm_in);
        free(p->boxes);
        free(p->scores);
        free(p->landmarks);
        free(p->flag);
        free(p->heatmap);
        free(p->world);
    }
    omma_device_close(p->own_device);
    for (int i = 0; i < OMMA_PIPELINE_MAX_CAMERAS; i++)
        free(p->cameras[i]);
    free(p);
}

static omma_status create(omma_pose_pipeline *p)
{
    omma_engine_options eo;
    omma_engine_options_init(&eo);
    eo.threads = p->opt.threads;
    omma_device *dev = NULL;
    if (p->opt.backend == OMMA_BACKEND_CUDA) {
        eo.backend = OMMA_BACKEND_CUDA;
        eo.precision = p->opt.precision;
        eo.threads = 0;
        dev = p->opt.device;
        if (!dev) {
            OMMA_TRY(omma_device_open(0, &p->own_device));
            dev = p->own_device;
        }
        p->dev = dev;
    }
    OMMA_TRY(pp_models_load(dev, &eo, p->opt.detector_model, p->opt.landmark_model, &p->m));
    OMMA_TRY(omma_exec_create(p->m.det, 1, &p->xdet));
    OMMA_TRY(omma_exec_create(p->m.lm, 1, &p->xlm));
    float **din[3] = {&p->det_in, &p->boxes, &p->scores};
    float **lin[5] = {&p->lm_in, &p->landmarks, &p->flag, &p->heatmap, &p->world};
    if (p->opt.backend == OMMA_BACKEND_CUDA) { /* the engine's buffers are device memory */
        din[0] = &p->dev_det_in, din[1] = &p->dev_boxes, din[2] = &p->dev_scores;
        lin[0] = &p->dev_lm_in, lin[1] = &p->dev_landmarks, lin[2] = &p->dev_flag;
        lin[3] = &p->dev_heatmap, lin[4] = &p->dev_world;
    }
    OMMA_TRY(omma_exec_input(p->xdet, 0, din[0]));
    OMMA_TRY(omma_exec_output(p->xdet, p->m.det_boxes, din[1]));
    OMMA_TRY(omma_exec_output(p->xdet, p->m.det_scores, din[2]));
    OMMA_TRY(omma_exec_input(p->xlm, 0, lin[0]));
    OMMA_TRY(omma_exec_output(p->xlm, p->m.lm_landmarks, lin[1]));
    OMMA_TRY(omma_exec_output(p->xlm, p->m.lm_flag, lin[2]));
    OMMA_TRY(omma_exec_output(p->xlm, p->m.lm_heatmap, lin[3]));
    OMMA_TRY(omma_exec_output(p->xlm, p->m.lm_world, lin[4]));
    if (p->opt.backend == OMMA_BACKEND_CUDA) {
        p->device_io = true;
        const size_t ds = VIS_POSE_DETECT_SIZE, ls = VIS_POSE_LANDMARK_SIZE;
        p->det_in = malloc(ds * ds * 3 * sizeof(float));
        p->lm_in = malloc(ls * ls * 3 * sizeof(float));
        p->boxes = malloc((size_t)VIS_POSE_ANCHORS * VIS_POSE_DETECT_VALUES * sizeof(float));
        p->scores = malloc((size_t)VIS_POSE_ANCHORS * sizeof(float));
        p->landmarks = malloc(VIS_POSE_RAW_LANDMARKS * 5 * sizeof(float));
        p->flag = malloc(sizeof(float));
        p->heatmap = malloc((size_t)VIS_POSE_HEATMAP * VIS_POSE_HEATMAP * VIS_POSE_RAW_LANDMARKS *
                            sizeof(float));
        p->world = malloc(VIS_POSE_RAW_LANDMARKS * 3 * sizeof(float));
        if (!p->det_in || !p->lm_in || !p->boxes || !p->scores || !p->landmarks || !p->flag ||
            !p->heatmap || !p->world)
            return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "pose pipeline: host staging");
    }
    return OMMA_OK;
}

omma_status omma_pose_pipeline_create(const omma_pose_pipeline_options *opt,
                                      omma_pose_pipeline **out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_pose_pipeline_create: out is NULL");
    *out = NULL;
    if (!opt)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_pose_pipeline_create: options are NULL");
    OMMA_TRY(pp_check_options(opt));
    omma_pose_pipeline *p = calloc(1, sizeof *p);
    if (!p)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "pose pipeline");
    p->opt = *opt;
    atomic_init(&p->busy, false);
    omma_status st = create(p);
    p->opt.detector_model = p->opt.landmark_model = NULL;
    if (st != OMMA_OK) {
        omma_pose_pipeline_destroy(p);
        return st;
    }
    *out = p;
    return OMMA_OK;
}

/* Runs an exec on its staged input (CUDA: copied in and the outputs out). */
static omma_status run_model(omma_pose_pipeline *p, omma_exec *x, float *host_in, float *dev_in,
                             size_t in_floats, float **host_out, float **dev_out,
                             const size_t *out_floats, int n_out)
{
    if (!p->device_io)
        return omma_exec_run(x, 1);
    OMMA_TRY(pp_copy_in(p->dev, x, dev_in, host_in, in_floats * sizeof(float)));
    OMMA_TRY(omma_exec_run(x, 1));
    for (int i = 0; i < n_out; i++)
        OMMA_TRY(pp_copy_out(p->dev, x, host_out[i], dev_out[i], out_floats[i] * sizeof(float)));
    return omma_exec_wait(x);
}

static omma_status detect(omma_pose_pipeline *p, const omma_frame *frame, vis_pose_detection *dets,
                          int *n)
{
    vis_letterbox lb;
    OMMA_TRY(vis_preprocess_ref(frame, VIS_POSE_DETECT_SIZE, 1.0f / 127.5f, -1.0f, p->det_in, &lb));
    float *hout[2] = {p->boxes, p->scores}, *dout[2] = {p->dev_boxes, p->dev_scores};
    size_t nout[2] = {(size_t)VIS_POSE_ANCHORS * VIS_POSE_DETECT_VALUES, VIS_POSE_ANCHORS};
    OMMA_TRY(run_model(p, p->xdet, p->det_in, p->dev_det_in,
                       (size_t)VIS_POSE_DETECT_SIZE * VIS_POSE_DETECT_SIZE * 3, hout, dout, nout,
                       2));
    vis_pose_decode_options dopt;
    vis_pose_decode_options_init(&dopt);
    dopt.min_score = p->opt.min_detection_score;
    dopt.max_poses = p->opt.max_poses;
    return vis_pose_detect_decode(&dopt, p->m.anchors, VIS_POSE_ANCHORS, p->boxes, p->scores, &lb,
                                  dets, n);
}

static omma_status landmarks(omma_pose_pipeline *p, const omma_frame *frame, const vis_roi *roi,
                             omma_pose *pose, vis_roi *next)
{
    OMMA_TRY(vis_crop_ref(frame, roi, VIS_POSE_LANDMARK_SIZE, p->lm_in));
    float *hout[4] = {p->landmarks, p->flag, p->heatmap, p->world};
    float *dout[4] = {p->dev_landmarks, p->dev_flag, p->dev_heatmap, p->dev_world};
    size_t nout[4] = {VIS_POSE_RAW_LANDMARKS * 5, 1,
                      (size_t)VIS_POSE_HEATMAP * VIS_POSE_HEATMAP * VIS_POSE_RAW_LANDMARKS,
                      VIS_POSE_RAW_LANDMARKS * 3};
    OMMA_TRY(run_model(p, p->xlm, p->lm_in, p->dev_lm_in,
                       (size_t)VIS_POSE_LANDMARK_SIZE * VIS_POSE_LANDMARK_SIZE * 3, hout, dout,
                       nout, 4));
    vis_pose_raw raw = {p->landmarks, p->world, p->heatmap, p->flag[0]};
    vis_pose_landmarks(roi, &raw, pose, next);
    return OMMA_OK;
}

static omma_status process(omma_pose_pipeline *p, pp_camera *c, const omma_frame *frame,
                           omma_pose *poses, int *count)
{
    if (pp_track_begin(c, &p->opt)) {
        vis_pose_detection dets[OMMA_POSE_MAX_POSES];
        int n = 0;
        OMMA_TRY(detect(p, frame, dets, &n));
        pp_track_detected(c, &p->opt, dets, n);
    }
    omma_pose found[OMMA_POSE_MAX_POSES];
    vis_roi next[OMMA_POSE_MAX_POSES];
    for (int t = 0; t < c->count; t++)
        OMMA_TRY(landmarks(p, frame, &c->tracks[t].roi, &found[t], &next[t]));
    pp_track_finish(c, &p->opt, found, next, poses, count);
    return OMMA_OK;
}

omma_status omma_pose_pipeline_process(omma_pose_pipeline *p, int camera, const omma_frame *frame,
                                       omma_pose *poses, int *count)
{
    if (count)
        *count = 0;
    if (!p || !frame || !poses || !count)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_pose_pipeline_process: NULL argument");
    if (camera < 0 || camera >= OMMA_PIPELINE_MAX_CAMERAS)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "pose pipeline: camera %d not in 0..%d", camera,
                         OMMA_PIPELINE_MAX_CAMERAS - 1);
    if (frame->memory != OMMA_MEMORY_HOST)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "pose pipeline: frames in device memory are not supported yet");
    OMMA_TRY(vis_frame_check(frame));
    bool idle = false;
    if (!atomic_compare_exchange_strong(&p->busy, &idle, true))
        return OMMA_FAIL(OMMA_ERR_BUSY, "pose pipeline: already in use by another thread");
    omma_status st = OMMA_OK;
    if (!p->cameras[camera] && !(p->cameras[camera] = calloc(1, sizeof(pp_camera))))
        st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "pose pipeline: camera %d", camera);
    if (st == OMMA_OK)
        st = process(p, p->cameras[camera], frame, poses, count);
    if (st != OMMA_OK)
        *count = 0;
    atomic_store(&p->busy, false);
    return st;
}

omma_status omma_pose_pipeline_reset(omma_pose_pipeline *p, int camera)
{
    if (!p)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_pose_pipeline_reset: NULL pipeline");
    if (camera < 0 || camera >= OMMA_PIPELINE_MAX_CAMERAS)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "pose pipeline: camera %d not in 0..%d", camera,
                         OMMA_PIPELINE_MAX_CAMERAS - 1);
    bool idle = false;
    if (!atomic_compare_exchange_strong(&p->busy, &idle, true))
        return OMMA_FAIL(OMMA_ERR_BUSY, "pose pipeline: already in use by another thread");
    if (p->cameras[camera])
        pp_track_reset(p->cameras[camera]);
    atomic_store(&p->busy, false);
    return OMMA_OK;
}
