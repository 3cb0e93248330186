/* BlazePose's engines, loaded and checked (pose_models.h). */
#include "pipeline/pose_models.h"

#include <stdbool.h>

#include "core/error.h"

/* The output of e whose shape is [1, dims...] (rank given), or -1. */
static int output_shaped(const omma_engine *e, int rank, int d1, int d2, int d3)
{
    int want[4] = {1, d1, d2, d3};
    for (int o = 0; o < omma_engine_output_count(e); o++) {
        omma_tensor_info info;
        if (omma_engine_output_info(e, o, &info) != OMMA_OK || info.rank != rank)
            continue;
        bool same = true;
        for (int d = 0; d < rank; d++)
            same = same && info.dims[d] == want[d];
        if (same)
            return o;
    }
    return -1;
}

static bool input_is(const omma_engine *e, int size)
{
    omma_tensor_info in;
    return omma_engine_input_count(e) == 1 && omma_engine_input_info(e, 0, &in) == OMMA_OK &&
           in.rank == 4 && in.dims[1] == size && in.dims[2] == size && in.dims[3] == 3;
}

static omma_status inspect(pp_models *p, const char *det_path, const char *lm_path)
{
    p->det_boxes = output_shaped(p->det, 3, VIS_POSE_ANCHORS, VIS_POSE_DETECT_VALUES, 0);
    p->det_scores = output_shaped(p->det, 3, VIS_POSE_ANCHORS, 1, 0);
    if (!input_is(p->det, VIS_POSE_DETECT_SIZE) || p->det_boxes < 0 || p->det_scores < 0)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "%s: not BlazePose's detector ([1, %d, %d, 3] in, [1, %d, %d] boxes and "
                         "[1, %d, 1] scores out)",
                         det_path, VIS_POSE_DETECT_SIZE, VIS_POSE_DETECT_SIZE, VIS_POSE_ANCHORS,
                         VIS_POSE_DETECT_VALUES, VIS_POSE_ANCHORS);
    p->lm_landmarks = output_shaped(p->lm, 2, VIS_POSE_RAW_LANDMARKS * 5, 0, 0);
    p->lm_flag = output_shaped(p->lm, 2, 1, 0, 0);
    p->lm_world = output_shaped(p->lm, 2, VIS_POSE_RAW_LANDMARKS * 3, 0, 0);
    p->lm_heatmap =
        output_shaped(p->lm, 4, VIS_POSE_HEATMAP, VIS_POSE_HEATMAP, VIS_POSE_RAW_LANDMARKS);
    if (!input_is(p->lm, VIS_POSE_LANDMARK_SIZE) || p->lm_landmarks < 0 || p->lm_flag < 0 ||
        p->lm_world < 0 || p->lm_heatmap < 0)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "%s: not a BlazePose landmark model ([1, %d, %d, 3] in; [1, %d] "
                         "landmarks, [1, 1] pose flag, [1, %d] world landmarks and a [1, %d, %d, "
                         "%d] heatmap out)",
                         lm_path, VIS_POSE_LANDMARK_SIZE, VIS_POSE_LANDMARK_SIZE,
                         VIS_POSE_RAW_LANDMARKS * 5, VIS_POSE_RAW_LANDMARKS * 3, VIS_POSE_HEATMAP,
                         VIS_POSE_HEATMAP, VIS_POSE_RAW_LANDMARKS);
    vis_anchor_options ao;
    vis_anchor_options_pose(&ao);
    int n = 0;
    OMMA_TRY(vis_anchors_generate(&ao, p->anchors, VIS_POSE_ANCHORS, &n));
    if (n != VIS_POSE_ANCHORS)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "pose pipeline: %d anchors, expected %d", n,
                         VIS_POSE_ANCHORS);
    return OMMA_OK;
}

omma_status pp_models_load(omma_device *dev, const omma_engine_options *eo, const char *det_path,
                           const char *lm_path, pp_models *m)
{
    OMMA_TRY(omma_engine_load(dev, det_path, eo, &m->det));
    OMMA_TRY(omma_engine_load(dev, lm_path, eo, &m->lm));
    return inspect(m, det_path, lm_path);
}

void pp_models_release(pp_models *m)
{
    omma_engine_release(m->det);
    omma_engine_release(m->lm);
    m->det = m->lm = NULL;
}
