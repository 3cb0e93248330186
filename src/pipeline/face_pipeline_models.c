/* The face pipeline's expectations of its two models, checked once at load. */
#include "pipeline/face_pipeline_private.h"

#include <stdbool.h>

#include "core/error.h"
#include "vision/face_roi.h"

static int output_with_last_dim(const omma_engine *e, int last)
{
    for (int o = 0; o < omma_engine_output_count(e); o++) {
        omma_tensor_info info;
        if (omma_engine_output_info(e, o, &info) == OMMA_OK && info.dims[info.rank - 1] == last)
            return o;
    }
    return -1;
}

omma_status fp_inspect_detector(const omma_engine *e, const char *path, fp_detector_spec *out)
{
    omma_tensor_info in, boxes;
    OMMA_TRY(omma_engine_input_info(e, 0, &in));
    vis_anchor_options ao;
    if (in.rank == 4 && in.dims[1] == 128 && in.dims[2] == 128 && in.dims[3] == 3)
        vis_anchor_options_short_range(&ao);
    else if (in.rank == 4 && in.dims[1] == 192 && in.dims[2] == 192 && in.dims[3] == 3)
        vis_anchor_options_full_range(&ao);
    else
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "%s: detector input is not [1, 128, 128, 3] or [1, 192, 192, 3]", path);
    out->size = in.dims[1];
    OMMA_TRY(vis_anchors_generate(&ao, out->anchors, FP_MAX_ANCHORS, &out->n_anchors));
    out->box_output = output_with_last_dim(e, 16);
    out->score_output = output_with_last_dim(e, 1);
    if (out->box_output < 0 || out->score_output < 0 ||
        omma_engine_output_info(e, out->box_output, &boxes) != OMMA_OK || boxes.rank != 3 ||
        boxes.dims[1] != out->n_anchors)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "%s: outputs are not BlazeFace's [1, %d, 16] boxes and "
                         "[1, %d, 1] scores",
                         path, out->n_anchors, out->n_anchors);
    return OMMA_OK;
}

/* The k-th output (k = 0, 1) whose last dimension is `last`, or -1. */
static int nth_output_with_last_dim(const omma_engine *e, int last, int k)
{
    for (int o = 0; o < omma_engine_output_count(e); o++) {
        omma_tensor_info info;
        if (omma_engine_output_info(e, o, &info) == OMMA_OK && info.dims[info.rank - 1] == last &&
            k-- == 0)
            return o;
    }
    return -1;
}

omma_status fp_inspect_mesh(const omma_engine *e, const char *path, int want_points,
                            fp_mesh_spec *out)
{
    omma_tensor_info in;
    OMMA_TRY(omma_engine_input_info(e, 0, &in));
    out->landmark_output = output_with_last_dim(e, OMMA_FACE_LANDMARKS * 3);
    out->flag_output = output_with_last_dim(e, 1);
    if (in.rank != 4 || in.dims[1] != VIS_MESH_SIZE || in.dims[2] != VIS_MESH_SIZE ||
        in.dims[3] != 3 || out->landmark_output < 0 || out->flag_output < 0)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "%s: not a FaceMesh model ([1, %d, %d, 3] in, %d landmark values and a "
                         "face flag out)",
                         path, VIS_MESH_SIZE, VIS_MESH_SIZE, OMMA_FACE_LANDMARKS * 3);
    out->lips = nth_output_with_last_dim(e, 160, 0);
    out->left_eye = nth_output_with_last_dim(e, 142, 0);
    out->right_eye = nth_output_with_last_dim(e, 142, 1);
    out->left_iris = nth_output_with_last_dim(e, 10, 0);
    out->right_iris = nth_output_with_last_dim(e, 10, 1);
    bool attention = out->lips >= 0 && out->left_eye >= 0 && out->right_eye >= 0 &&
                     out->left_iris >= 0 && out->right_iris >= 0;
    out->points = attention ? OMMA_FACE_LANDMARKS_WITH_IRISES : OMMA_FACE_LANDMARKS;
    if (want_points && want_points != out->points)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "%s: a %d-point face mesh, %d points asked for (%s)",
                         path, out->points, want_points,
                         want_points == OMMA_FACE_LANDMARKS_WITH_IRISES
                             ? "face_landmark_with_attention.tflite gives 478"
                             : "face_landmark.tflite gives 468");
    return OMMA_OK;
}
