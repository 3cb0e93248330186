/* The face pipeline on the CPU backend: the vision stages' reference
 * implementations around two CPU engines (detector and FaceMesh, batch 1),
 * one vis_tracker per camera. */
#include "omma/pipeline.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "vision/anchors.h"
#include "vision/crop_ref.h"
#include "vision/detect_decode.h"
#include "vision/face_roi.h"
#include "vision/frame.h"
#include "vision/preprocess_ref.h"
#include "vision/tracker.h"

#define MAX_ANCHORS 2304

struct omma_face_pipeline {
    omma_face_pipeline_options opt;
    omma_engine *det, *mesh;
    omma_exec *xdet, *xmesh;
    float *det_in, *det_boxes, *det_scores, *mesh_in, *mesh_lm, *mesh_flag;
    int det_size;
    vis_anchor *anchors;
    int n_anchors;
    vis_tracker_options topt;
    vis_tracker **trackers; /* by camera index, NULL until its first frame */
    int n_trackers;
    float (*lm)[OMMA_FACE_LANDMARKS * 3]; /* this frame's landmarks per track */
    float *presence;
    atomic_bool busy;
};

void omma_face_pipeline_options_init(omma_face_pipeline_options *opt)
{
    if (!opt)
        return;
    memset(opt, 0, sizeof *opt);
    opt->backend = OMMA_BACKEND_CPU;
    opt->max_faces = 4;
    opt->min_detection_score = 0.5f;
    opt->min_presence = 0.5f;
    opt->detect_every = 0;
    opt->nms_threshold = 0.3f;
}

static int output_with_last_dim(const omma_engine *e, int last)
{
    for (int o = 0; o < omma_engine_output_count(e); o++) {
        omma_tensor_info info;
        if (omma_engine_output_info(e, o, &info) == OMMA_OK && info.dims[info.rank - 1] == last)
            return o;
    }
    return -1;
}

static int in_unit(float v)
{
    return v >= 0.0f && v <= 1.0f; /* false for NaN */
}

static omma_status check_options(const omma_face_pipeline_options *o)
{
    if (o->backend == OMMA_BACKEND_CUDA)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "face pipeline: the CUDA backend is not built yet; use the CPU backend");
    if (o->backend != OMMA_BACKEND_CPU)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face pipeline: unknown backend %d", (int)o->backend);
    if (o->device)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face pipeline: a device given to the CPU backend");
    if (!o->detector_model || !o->mesh_model)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face pipeline: no %s model path",
                         o->detector_model ? "FaceMesh" : "detector");
    if (o->max_faces < 1 || o->max_faces > OMMA_PIPELINE_MAX_FACES)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face pipeline: max_faces %d not in 1..%d",
                         o->max_faces, OMMA_PIPELINE_MAX_FACES);
    if (o->detect_every < 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "face pipeline: detect_every %d < 0",
                         o->detect_every);
    if (!in_unit(o->min_detection_score) || !in_unit(o->min_presence) ||
        !in_unit(o->nms_threshold))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "face pipeline: min_detection_score %g, min_presence %g, nms_threshold "
                         "%g: each must be in [0, 1]",
                         (double)o->min_detection_score, (double)o->min_presence,
                         (double)o->nms_threshold);
    return OMMA_OK;
}

/* The detector: its square input size picks the anchors; its outputs are
 * [1, anchors, 16] boxes and [1, anchors, 1] scores. */
static omma_status open_detector(omma_face_pipeline *p)
{
    omma_tensor_info in, boxes;
    OMMA_TRY(omma_engine_load(NULL, p->opt.detector_model, NULL, &p->det));
    OMMA_TRY(omma_engine_input_info(p->det, 0, &in));
    vis_anchor_options ao;
    if (in.rank == 4 && in.dims[1] == 128 && in.dims[2] == 128 && in.dims[3] == 3)
        vis_anchor_options_short_range(&ao);
    else if (in.rank == 4 && in.dims[1] == 192 && in.dims[2] == 192 && in.dims[3] == 3)
        vis_anchor_options_full_range(&ao);
    else
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "%s: detector input is not [1, 128, 128, 3] or [1, 192, 192, 3]",
                         p->opt.detector_model);
    p->det_size = in.dims[1];
    p->anchors = malloc(MAX_ANCHORS * sizeof *p->anchors);
    if (!p->anchors)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "face pipeline: anchors");
    OMMA_TRY(vis_anchors_generate(&ao, p->anchors, MAX_ANCHORS, &p->n_anchors));
    int oreg = output_with_last_dim(p->det, 16), ocls = output_with_last_dim(p->det, 1);
    if (oreg < 0 || ocls < 0 || omma_engine_output_info(p->det, oreg, &boxes) != OMMA_OK ||
        boxes.rank != 3 || boxes.dims[1] != p->n_anchors)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "%s: outputs are not BlazeFace's [1, %d, 16] boxes and [1, %d, 1] scores",
                         p->opt.detector_model, p->n_anchors, p->n_anchors);
    OMMA_TRY(omma_exec_create(p->det, 1, &p->xdet));
    OMMA_TRY(omma_exec_input(p->xdet, 0, &p->det_in));
    OMMA_TRY(omma_exec_output(p->xdet, oreg, &p->det_boxes));
    OMMA_TRY(omma_exec_output(p->xdet, ocls, &p->det_scores));
    return OMMA_OK;
}

/* FaceMesh: [1, 192, 192, 3] in, 1404 landmark values and a face flag out. */
static omma_status open_mesh(omma_face_pipeline *p)
{
    omma_tensor_info in;
    OMMA_TRY(omma_engine_load(NULL, p->opt.mesh_model, NULL, &p->mesh));
    OMMA_TRY(omma_engine_input_info(p->mesh, 0, &in));
    int olm = output_with_last_dim(p->mesh, OMMA_FACE_LANDMARKS * 3);
    int oflag = output_with_last_dim(p->mesh, 1);
    if (in.rank != 4 || in.dims[1] != VIS_MESH_SIZE || in.dims[2] != VIS_MESH_SIZE ||
        in.dims[3] != 3 || olm < 0 || oflag < 0)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "%s: not a FaceMesh model ([1, %d, %d, 3] in, %d landmark values and a "
                         "face flag out)",
                         p->opt.mesh_model, VIS_MESH_SIZE, VIS_MESH_SIZE, OMMA_FACE_LANDMARKS * 3);
    OMMA_TRY(omma_exec_create(p->mesh, 1, &p->xmesh));
    OMMA_TRY(omma_exec_input(p->xmesh, 0, &p->mesh_in));
    OMMA_TRY(omma_exec_output(p->xmesh, olm, &p->mesh_lm));
    OMMA_TRY(omma_exec_output(p->xmesh, oflag, &p->mesh_flag));
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
    atomic_init(&p->busy, false);
    vis_tracker_options_init(&p->topt);
    p->topt.max_faces = opt->max_faces;
    p->topt.detect_every = opt->detect_every;
    p->topt.min_presence = opt->min_presence;
    omma_status st;
    if ((st = open_detector(p)) != OMMA_OK || (st = open_mesh(p)) != OMMA_OK)
        goto fail;
    p->opt.detector_model = p->opt.mesh_model = NULL;
    p->lm = malloc((size_t)opt->max_faces * sizeof *p->lm);
    p->presence = malloc((size_t)opt->max_faces * sizeof *p->presence);
    if (!p->lm || !p->presence) {
        st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "face pipeline: landmark scratch");
        goto fail;
    }
    *out = p;
    return OMMA_OK;
fail:
    omma_face_pipeline_destroy(p);
    return st;
}

void omma_face_pipeline_destroy(omma_face_pipeline *p)
{
    if (!p)
        return;
    omma_exec_destroy(p->xdet);
    omma_exec_destroy(p->xmesh);
    omma_engine_release(p->det);
    omma_engine_release(p->mesh);
    for (int i = 0; i < p->n_trackers; i++)
        free(p->trackers[i]);
    free(p->trackers);
    free(p->anchors);
    free(p->lm);
    free(p->presence);
    free(p);
}

static omma_status tracker_for(omma_face_pipeline *p, int camera, vis_tracker **out)
{
    if (camera >= p->n_trackers) {
        int n = camera + 1;
        vis_tracker **grown = realloc(p->trackers, (size_t)n * sizeof *grown);
        if (!grown)
            return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "face pipeline: camera %d", camera);
        memset(grown + p->n_trackers, 0, (size_t)(n - p->n_trackers) * sizeof *grown);
        p->trackers = grown;
        p->n_trackers = n;
    }
    if (!p->trackers[camera]) {
        vis_tracker *t = malloc(sizeof *t);
        if (!t)
            return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "face pipeline: tracker of camera %d",
                             camera);
        omma_status st = vis_tracker_init(t, &p->topt);
        if (st != OMMA_OK) {
            free(t);
            return st;
        }
        p->trackers[camera] = t;
    }
    *out = p->trackers[camera];
    return OMMA_OK;
}

static omma_status detect(omma_face_pipeline *p, vis_tracker *t, const omma_frame *frame)
{
    vis_letterbox lb;
    vis_decode_options dopt;
    omma_detection dets[OMMA_PIPELINE_MAX_FACES];
    int n = 0;
    OMMA_TRY(vis_preprocess_ref(frame, p->det_size, 1.0f / 127.5f, -1.0f, p->det_in, &lb));
    OMMA_TRY(omma_exec_run(p->xdet, 1));
    vis_decode_options_init(&dopt, p->det_size);
    dopt.min_score = p->opt.min_detection_score;
    dopt.min_suppression = p->opt.nms_threshold;
    dopt.max_faces = p->opt.max_faces;
    OMMA_TRY(vis_detect_decode(&dopt, p->anchors, p->n_anchors, p->det_boxes, p->det_scores, &lb,
                               dets, &n));
    vis_tracker_add_detections(t, dets, n);
    return OMMA_OK;
}

static omma_status track(omma_face_pipeline *p, vis_tracker *t, const omma_frame *frame,
                         omma_face *faces, int max, int *n)
{
    if (vis_tracker_begin_frame(t))
        OMMA_TRY(detect(p, t, frame));
    /* FaceMesh per tracked face; the landmarks are kept by slot until the
     * frame's end decides which tracks stay. */
    int ids[OMMA_PIPELINE_MAX_FACES], slots = t->count;
    for (int i = 0; i < slots; i++) {
        OMMA_TRY(vis_crop_ref(frame, &t->tracks[i].roi, VIS_MESH_SIZE, p->mesh_in));
        OMMA_TRY(omma_exec_run(p->xmesh, 1));
        p->presence[i] = vis_face_presence(p->mesh_flag[0]);
        vis_landmarks_to_frame(&t->tracks[i].roi, VIS_MESH_SIZE, p->mesh_lm, OMMA_FACE_LANDMARKS,
                               p->lm[i]);
        ids[i] = t->tracks[i].id;
        vis_tracker_update(t, i, p->lm[i], p->presence[i]);
    }
    vis_tracker_end_frame(t);
    for (int j = 0; j < t->count && *n < max; j++)
        for (int i = 0; i < slots; i++)
            if (ids[i] == t->tracks[j].id) {
                vis_tracker_face(t, j, p->lm[i], p->presence[i], &faces[(*n)++]);
                break;
            }
    return OMMA_OK;
}

omma_status omma_face_pipeline_process(omma_face_pipeline *p, int camera,
                                       const omma_frame *frame, omma_face *faces, int max,
                                       int *n)
{
    if (n)
        *n = 0;
    if (!p || !frame || !n || (!faces && max > 0))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_face_pipeline_process: NULL argument");
    if (camera < 0 || camera >= OMMA_PIPELINE_MAX_CAMERAS || max < 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "omma_face_pipeline_process: camera %d not in 0..%d or max %d < 0",
                         camera, OMMA_PIPELINE_MAX_CAMERAS - 1, max);
    OMMA_TRY(vis_frame_check(frame));
    if (atomic_exchange(&p->busy, true))
        return OMMA_FAIL(OMMA_ERR_BUSY,
                         "omma_face_pipeline_process: the pipeline is in use by another thread "
                         "(use one pipeline per thread)");
    vis_tracker *t = NULL;
    omma_status st = tracker_for(p, camera, &t);
    if (st == OMMA_OK) {
        st = track(p, t, frame, faces, max, n);
        if (st != OMMA_OK) {
            /* A half-done frame leaves no state behind; ids stay unique. */
            int next_id = t->next_id;
            *n = 0;
            vis_tracker_init(t, &p->topt);
            t->next_id = next_id;
        }
    }
    atomic_store(&p->busy, false);
    return st;
}
