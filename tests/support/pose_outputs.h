/* Test support: BlazePose landmark models' outputs found by shape, as the
 * pose pipeline finds them (src/pipeline/pose_models.c). */
#ifndef OMMA_TESTS_POSE_OUTPUTS_H
#define OMMA_TESTS_POSE_OUTPUTS_H

#include <stdbool.h>

#include "omma/engine.h"

typedef struct pose_outputs {
    const char *used[4]; /* landmarks [1, 195], flag [1, 1], world [1, 117],
                          * heatmap [1, 64, 64, 39]: what the pipeline reads */
    const char *mask; /* segmentation [1, 256, 256, 1], NULL if absent */
} pose_outputs;

/* Fills *p with e's output names; true when the four used ones are all
 * there (the mask may be absent: a pruned engine). */
bool pose_outputs_find(const omma_engine *e, pose_outputs *p);

#endif
