/* The face pipeline on the CPU backend: the vision stages' reference
 * implementations around two CPU engines (detector and FaceMesh, batch 1,
 * each run on opt.threads threads), one vis_tracker per camera, frames one
 * after the other. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "pipeline/face_pipeline_private.h"
#include "vision/crop_ref.h"
#include "vision/detect_decode.h"
#include "vision/face_refine.h"
#include "vision/face_roi.h"
#include "vision/preprocess_ref.h"
#include "vision/tracker.h"

struct fp_backend {
    omma_engine *det, *mesh;
    omma_exec *xdet, *xmesh;
    float *det_in, *det_boxes, *det_scores, *mesh_in, *mesh_lm, *mesh_flag;
    float *mesh_parts[5]; /* attention mesh: lips, eyes, irises (face_refine.h) */
    float refined[OMMA_FACE_LANDMARKS_WITH_IRISES * 3];
    fp_mesh_spec mspec;
    fp_detector_spec dspec;
    vis_tracker_options topt;
    vis_tracker *trackers[OMMA_PIPELINE_MAX_CAMERAS]; /* NULL until a camera's
                                                         first frame */
    float (*lm)[OMMA_FACE_LANDMARKS_WITH_IRISES * 3]; /* this frame's landmarks per track */
    float *presence;
    omma_face_pipeline_stats moved; /* the batch's detector and FaceMesh runs */
};

static omma_status cpu_create(omma_face_pipeline *p, const char *detector, const char *mesh)
{
    fp_backend *b = calloc(1, sizeof *b);
    if (!b)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "face pipeline");
    p->impl = b;
    vis_tracker_options_init(&b->topt);
    b->topt.max_faces = p->opt.max_faces;
    b->topt.detect_every = p->opt.detect_every;
    b->topt.min_presence = p->opt.min_presence;
    b->topt.cut_move = p->opt.cut_move;
    b->topt.cut_agree = p->opt.cut_agree;
    b->topt.cut_presence = p->opt.cut_presence;
    omma_engine_options eo;
    omma_engine_options_init(&eo);
    eo.threads = p->opt.threads;
    OMMA_TRY(omma_engine_load(NULL, detector, &eo, &b->det));
    OMMA_TRY(fp_inspect_detector(b->det, detector, &b->dspec));
    OMMA_TRY(omma_exec_create(b->det, 1, &b->xdet));
    OMMA_TRY(omma_exec_input(b->xdet, 0, &b->det_in));
    OMMA_TRY(omma_exec_output(b->xdet, b->dspec.box_output, &b->det_boxes));
    OMMA_TRY(omma_exec_output(b->xdet, b->dspec.score_output, &b->det_scores));
    OMMA_TRY(omma_engine_load(NULL, mesh, &eo, &b->mesh));
    OMMA_TRY(fp_inspect_mesh(b->mesh, mesh, p->opt.mesh_points, &b->mspec));
    OMMA_TRY(omma_exec_create(b->mesh, 1, &b->xmesh));
    OMMA_TRY(omma_exec_input(b->xmesh, 0, &b->mesh_in));
    OMMA_TRY(omma_exec_output(b->xmesh, b->mspec.landmark_output, &b->mesh_lm));
    OMMA_TRY(omma_exec_output(b->xmesh, b->mspec.flag_output, &b->mesh_flag));
    if (b->mspec.points == OMMA_FACE_LANDMARKS_WITH_IRISES) {
        const int parts[5] = {b->mspec.lips, b->mspec.left_eye, b->mspec.right_eye,
                              b->mspec.left_iris, b->mspec.right_iris};
        for (int k = 0; k < 5; k++)
            OMMA_TRY(omma_exec_output(b->xmesh, parts[k], &b->mesh_parts[k]));
    }
    b->lm = malloc((size_t)p->opt.max_faces * sizeof *b->lm);
    b->presence = malloc((size_t)p->opt.max_faces * sizeof *b->presence);
    if (!b->lm || !b->presence)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "face pipeline: landmark scratch");
    return OMMA_OK;
}

static void cpu_destroy(omma_face_pipeline *p)
{
    fp_backend *b = p->impl;
    if (!b)
        return;
    omma_exec_destroy(b->xdet);
    omma_exec_destroy(b->xmesh);
    omma_engine_release(b->det);
    omma_engine_release(b->mesh);
    for (int i = 0; i < OMMA_PIPELINE_MAX_CAMERAS; i++)
        free(b->trackers[i]);
    free(b->lm);
    free(b->presence);
    free(b);
    p->impl = NULL;
}

static omma_status tracker_for(fp_backend *b, int camera, vis_tracker **out)
{
    if (!b->trackers[camera]) {
        vis_tracker *t = malloc(sizeof *t);
        if (!t)
            return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "face pipeline: tracker of camera %d", camera);
        omma_status st = vis_tracker_init(t, &b->topt);
        if (st != OMMA_OK) {
            free(t);
            return st;
        }
        b->trackers[camera] = t;
    }
    *out = b->trackers[camera];
    return OMMA_OK;
}

static omma_status detect(omma_face_pipeline *p, vis_tracker *t, const omma_frame *frame)
{
    fp_backend *b = p->impl;
    vis_letterbox lb;
    vis_decode_options dopt;
    omma_detection dets[OMMA_PIPELINE_MAX_FACES];
    int n = 0;
    OMMA_TRY(vis_preprocess_ref(frame, b->dspec.size, 1.0f / 127.5f, -1.0f, b->det_in, &lb));
    OMMA_TRY(omma_exec_run(b->xdet, 1));
    b->moved.detector_images++;
    vis_decode_options_init(&dopt, b->dspec.size);
    dopt.min_score = p->opt.min_detection_score;
    dopt.min_suppression = p->opt.nms_threshold;
    dopt.max_faces = p->opt.max_faces;
    OMMA_TRY(vis_detect_decode(&dopt, b->dspec.anchors, b->dspec.n_anchors, b->det_boxes,
                               b->det_scores, &lb, dets, &n));
    vis_tracker_add_detections(t, dets, n);
    return OMMA_OK;
}

/* One frame: detector when the tracker asks, FaceMesh per tracked face, the
 * faces still tracked at the frame's end to faces (max_faces room). */
static omma_status track(omma_face_pipeline *p, vis_tracker *t, const omma_frame *frame,
                         omma_face *faces, int *n)
{
    fp_backend *b = p->impl;
    if (vis_tracker_begin_frame(t))
        OMMA_TRY(detect(p, t, frame));
    /* The landmarks are kept by slot until the frame's end decides which
     * tracks stay. */
    int ids[OMMA_PIPELINE_MAX_FACES], slots = t->count;
    for (int i = 0; i < slots; i++) {
        OMMA_TRY(vis_crop_ref(frame, &t->tracks[i].roi, VIS_MESH_SIZE, b->mesh_in));
        OMMA_TRY(omma_exec_run(b->xmesh, 1));
        b->moved.mesh_images++;
        b->presence[i] = vis_face_presence(b->mesh_flag[0]);
        const float *lm = b->mesh_lm;
        if (b->mspec.points == OMMA_FACE_LANDMARKS_WITH_IRISES) {
            vis_refine_attention(b->mesh_lm, b->mesh_parts[0], b->mesh_parts[1], b->mesh_parts[2],
                                 b->mesh_parts[3], b->mesh_parts[4], b->refined);
            lm = b->refined;
        }
        vis_landmarks_to_frame(&t->tracks[i].roi, VIS_MESH_SIZE, lm, b->mspec.points, b->lm[i]);
        ids[i] = t->tracks[i].id;
        vis_tracker_update(t, i, b->lm[i], b->presence[i]);
    }
    vis_tracker_end_frame(t);
    for (int j = 0; j < t->count; j++)
        for (int i = 0; i < slots; i++)
            if (ids[i] == t->tracks[j].id) {
                omma_face *f = &faces[(*n)++];
                vis_tracker_face(t, j, b->lm[i], b->presence[i], f);
                if (b->mspec.points == OMMA_FACE_LANDMARKS_WITH_IRISES) {
                    f->n_landmarks = OMMA_FACE_LANDMARKS_WITH_IRISES;
                    memcpy(f->irises, b->lm[i] + OMMA_FACE_LANDMARKS * 3, sizeof f->irises);
                }
                break;
            }
    return OMMA_OK;
}

static omma_status cpu_run_batch(omma_face_pipeline *p, int n, const int *cameras,
                                 const omma_frame *frames, omma_face *faces, int *counts)
{
    fp_backend *b = p->impl;
    memset(&b->moved, 0, sizeof b->moved);
    for (int i = 0; i < n; i++) {
        vis_tracker *t = NULL;
        OMMA_TRY(tracker_for(b, cameras[i], &t));
        OMMA_TRY(track(p, t, &frames[i], faces + (size_t)i * (size_t)p->opt.max_faces, &counts[i]));
    }
    fp_stats_add_batch(p, n, counts, &b->moved);
    return OMMA_OK;
}

static void cpu_reset(omma_face_pipeline *p, int n, const int *cameras)
{
    fp_backend *b = p->impl;
    for (int i = 0; i < n; i++) {
        vis_tracker *t = b->trackers[cameras[i]];
        if (!t)
            continue;
        int next_id = t->next_id;
        vis_tracker_init(t, &b->topt);
        t->next_id = next_id;
    }
}

const fp_backend_ops fp_cpu_backend = {cpu_create, cpu_destroy, cpu_run_batch, cpu_reset};
