/* BlazePose landmark outputs by shape (pose_outputs.h). */
#include "support/pose_outputs.h"

#include <string.h>

static bool is_shape(const omma_tensor_info *t, int rank, int d1, int d2, int d3)
{
    int want[4] = {1, d1, d2, d3};
    if (t->rank != rank)
        return false;
    for (int d = 0; d < rank; d++)
        if (t->dims[d] != want[d])
            return false;
    return true;
}

bool pose_outputs_find(const omma_engine *e, pose_outputs *p)
{
    memset(p, 0, sizeof *p);
    for (int o = 0; o < omma_engine_output_count(e); o++) {
        omma_tensor_info t;
        if (omma_engine_output_info(e, o, &t) != OMMA_OK)
            return false;
        if (is_shape(&t, 2, 195, 0, 0))
            p->used[0] = t.name;
        else if (is_shape(&t, 2, 1, 0, 0))
            p->used[1] = t.name;
        else if (is_shape(&t, 2, 117, 0, 0))
            p->used[2] = t.name;
        else if (is_shape(&t, 4, 64, 64, 39))
            p->used[3] = t.name;
        else if (is_shape(&t, 4, 256, 256, 1))
            p->mask = t.name;
    }
    return p->used[0] && p->used[1] && p->used[2] && p->used[3];
}
