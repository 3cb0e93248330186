/* Private: BlazePose's two engines as the pose pipelines load them (the
 * host pipeline, pose_pipeline.c, and the batched GPU path,
 * pose_pipeline_batch.c): the person detector and a landmark model, their
 * shapes checked, their outputs' indices and the detector's anchors. */
#ifndef OMMA_PIPELINE_POSE_MODELS_H
#define OMMA_PIPELINE_POSE_MODELS_H

#include "omma/engine.h"
#include "vision/anchors.h"
#include "vision/pose.h"

typedef struct pp_models {
    omma_engine *det, *lm;
    int det_boxes, det_scores; /* detector output indices */
    int lm_landmarks, lm_flag, lm_heatmap, lm_world; /* landmark model outputs */
    vis_anchor anchors[VIS_POSE_ANCHORS];
} pp_models;

/* Loads the two models on dev (NULL: the CPU) with eo and checks that they
 * are BlazePose's. The landmark model computes only the four outputs the
 * pipelines read (omma_engine_options.outputs: its segmentation mask is
 * pruned away). Errors: the engine's load errors, OMMA_ERR_UNSUPPORTED
 * (a model whose inputs or outputs are not BlazePose's, naming the file).
 * On failure the engines loaded are left in *m: pp_models_release frees
 * them. Any thread. */
omma_status pp_models_load(omma_device *dev, const omma_engine_options *eo, const char *det_path,
                           const char *lm_path, pp_models *m);

/* Releases the engines; accepts a zeroed or half-loaded *m. */
void pp_models_release(pp_models *m);

#endif
