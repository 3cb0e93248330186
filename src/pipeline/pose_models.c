/* BlazePose's engines, loaded and checked (pose_models.h). */
#include "pipeline/pose_models.h"

#include <stdbool.h>

#include "core/error.h"
#include "model/tflite.h"

/* Whether a tensor of the given rank and dims is [1, want...] (rank given). */
static bool shaped(int rank, const int *dims, int want_rank, int d1, int d2, int d3)
{
    int want[4] = {1, d1, d2, d3};
    if (rank != want_rank)
        return false;
    for (int d = 0; d < rank; d++)
        if (dims[d] != want[d])
            return false;
    return true;
}

/* The output of e whose shape is [1, dims...] (rank given), or -1. */
static int output_shaped(const omma_engine *e, int rank, int d1, int d2, int d3)
{
    for (int o = 0; o < omma_engine_output_count(e); o++) {
        omma_tensor_info info;
        if (omma_engine_output_info(e, o, &info) == OMMA_OK &&
            shaped(info.rank, info.dims, rank, d1, d2, d3))
            return o;
    }
    return -1;
}

/* The name of the output of model m shaped [1, dims...], or NULL. */
static const char *file_output_shaped(const tfl_model *m, int rank, int d1, int d2, int d3)
{
    for (int o = 0; o < m->n_outputs; o++) {
        const tfl_tensor *t = &m->tensors[m->outputs[o]];
        if (shaped(t->rank, t->shape, rank, d1, d2, d3))
            return t->name;
    }
    return NULL;
}

/* Loads the landmark model computing only the outputs the pipeline reads
 * (landmarks, pose flag, world landmarks, heatmap; not the segmentation
 * mask, a third of the model's work): their names are found by shape in
 * the file first, so that the engine is loaded (its weights uploaded) once.
 * A file without them loads whole, for inspect() to say what is missing. */
static omma_status load_landmarks(omma_device *dev, const omma_engine_options *eo, const char *path,
                                  omma_engine **out)
{
    tfl_model *m = NULL;
    OMMA_TRY(tfl_model_read_file(path, &m));
    const char *names[] = {
        file_output_shaped(m, 2, VIS_POSE_RAW_LANDMARKS * 5, 0, 0),
        file_output_shaped(m, 2, 1, 0, 0),
        file_output_shaped(m, 2, VIS_POSE_RAW_LANDMARKS * 3, 0, 0),
        file_output_shaped(m, 4, VIS_POSE_HEATMAP, VIS_POSE_HEATMAP, VIS_POSE_RAW_LANDMARKS),
    };
    omma_engine_options o = *eo;
    bool all = true;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        all = all && names[i];
    if (all) {
        o.outputs = names;
        o.output_count = (int)(sizeof names / sizeof names[0]);
    }
    omma_status st = omma_engine_load(dev, path, &o, out);
    tfl_model_free(m);
    return st;
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
    OMMA_TRY(load_landmarks(dev, eo, lm_path, &m->lm));
    return inspect(m, det_path, lm_path);
}

void pp_models_release(pp_models *m)
{
    omma_engine_release(m->det);
    omma_engine_release(m->lm);
    m->det = m->lm = NULL;
}
