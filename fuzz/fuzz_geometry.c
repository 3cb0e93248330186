/* libFuzzer target for the face geometry metadata reader
 * (src/vision/geometry_metadata.c: the protobuf wire format of MediaPipe's
 * GeometryPipelineMetadata).
 *
 * Any input must give either an error (OMMA_ERR_FORMAT / UNSUPPORTED) or a
 * canonical face of finite coordinates and weights that are finite, >= 0,
 * with a positive total and n_basis of them positive; anything else traps,
 * and ASan/UBSan catch reads out of bounds and undefined behaviour. Built
 * and run by fuzz/run.sh geometry (make fuzz; a short run inside make
 * test). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "vision/geometry_metadata.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static vis_geometry g;
    if (vis_geometry_parse(data, size, "fuzz", &g) != OMMA_OK)
        return 0;
    double total = 0;
    int positive = 0;
    for (int i = 0; i < OMMA_FACE_LANDMARKS; i++) {
        for (int k = 0; k < 3; k++)
            if (!isfinite(g.canonical[i][k]))
                __builtin_trap();
        if (!(g.weight[i] >= 0) || !isfinite(g.weight[i]))
            __builtin_trap();
        total += g.weight[i];
        positive += g.weight[i] > 0;
    }
    if (!(total > 0) || positive != g.n_basis)
        __builtin_trap();
    return 0;
}
