/* The attention mesh's refinement kernel (vis_cuda_refine) against the CPU
 * reference (vis_refine_attention): 37 slots of model outputs (x, y in the
 * crop's 0..192, z in -30..30, from a fixed generator) give bitwise the
 * same 478 points per slot (the same float operations in the same order);
 * a shape of 0 slots launches nothing and leaves the output untouched.
 * Skips (77) without a GPU. */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_testing.h"
#include "vision/cuda_vision.h"
#include "vision/face_refine.h"

#define SLOTS 37

/* Per slot: mesh, lips, left eye, right eye, left iris, right iris. */
static const int sizes[6] = {OMMA_FACE_LANDMARKS * 3, VIS_LIPS_POINTS * 2, VIS_EYE_POINTS * 2,
                             VIS_EYE_POINTS * 2,      VIS_IRIS_POINTS * 2, VIS_IRIS_POINTS * 2};

static float next_value(unsigned *state, float lo, float hi)
{
    *state = *state * 1664525u + 1013904223u;
    return lo + (hi - lo) * (float)(*state >> 8) / (float)(1u << 24);
}

static void test_matches_cpu(void)
{
    float *host[6], *dev[6], *out = NULL;
    unsigned state = 12345;
    for (int k = 0; k < 6; k++) {
        size_t n = (size_t)SLOTS * (size_t)sizes[k];
        host[k] = malloc(n * sizeof(float));
        REQUIRE(host[k] != NULL);
        for (size_t i = 0; i < n; i++) /* mesh: z every third value */
            host[k][i] =
                k == 0 && i % 3 == 2 ? next_value(&state, -30, 30) : next_value(&state, 0, 192);
        REQUIRE(cudaMalloc((void **)&dev[k], n * sizeof(float)) == cudaSuccess);
        REQUIRE(cudaMemcpy(dev[k], host[k], n * sizeof(float), cudaMemcpyHostToDevice) ==
                cudaSuccess);
    }
    size_t per = OMMA_FACE_LANDMARKS_WITH_IRISES * 3, bytes = SLOTS * per * sizeof(float);
    float *got = malloc(bytes), *want = malloc(bytes);
    REQUIRE(got && want);
    REQUIRE(cudaMalloc((void **)&out, bytes) == cudaSuccess);
    REQUIRE(cudaMemset(out, 0xff, bytes) == cudaSuccess);

    vis_gpu_shape none = {1, 0};
    REQUIRE(vis_cuda_refine(none, dev[0], dev[1], dev[2], dev[3], dev[4], dev[5], out, 0) ==
            cudaSuccess);
    REQUIRE(cudaMemcpy(got, out, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
    unsigned char ff[64];
    memset(ff, 0xff, sizeof ff);
    CHECK(memcmp(got, ff, sizeof ff) == 0); /* untouched */

    vis_gpu_shape shape = {1, SLOTS};
    REQUIRE(vis_cuda_refine(shape, dev[0], dev[1], dev[2], dev[3], dev[4], dev[5], out, 0) ==
            cudaSuccess);
    REQUIRE(cudaMemcpy(got, out, bytes, cudaMemcpyDeviceToHost) == cudaSuccess);
    int differ = 0;
    for (int s = 0; s < SLOTS; s++) {
        const float *in[6];
        for (int k = 0; k < 6; k++)
            in[k] = host[k] + (size_t)s * (size_t)sizes[k];
        vis_refine_attention(in[0], in[1], in[2], in[3], in[4], in[5], want + s * per);
        if (memcmp(got + s * per, want + s * per, per * sizeof(float)) != 0) {
            if (!differ)
                for (size_t i = 0; i < per; i++)
                    if (memcmp(&got[s * per + i], &want[s * per + i], sizeof(float)) != 0) {
                        fprintf(stderr, "slot %d value %zu (point %zu): GPU %.9g, CPU %.9g\n", s, i,
                                i / 3, got[s * per + i], want[s * per + i]);
                        break;
                    }
            differ++;
        }
    }
    CHECK(differ == 0);
    /* the refinement did something: an iris point and a lip point moved */
    CHECK(want[OMMA_FACE_LANDMARKS * 3] == host[4][0]);
    CHECK(want[3 * vis_lips_index[0]] == host[1][0]);
    for (int k = 0; k < 6; k++) {
        cudaFree(dev[k]);
        free(host[k]);
    }
    cudaFree(out);
    free(got);
    free(want);
}

int main(void)
{
    gpu_test_require_device();
    RUN(test_matches_cpu);
    return testing_finish();
}
