/* The GPU face pipeline in a build without CUDA (OMMA_CUDA=OFF):
 * omma_face_pipeline_create with OMMA_BACKEND_CUDA fails with
 * OMMA_ERR_NO_DEVICE and says why; the CPU backend is unchanged. */
#include "gpu/none.h"
#include "pipeline/face_pipeline_private.h"

static omma_status none_create(omma_face_pipeline *p, const char *detector, const char *mesh)
{
    (void)p, (void)detector, (void)mesh;
    return GPU_NONE_FAIL("omma_face_pipeline_create: the GPU backend");
}

static void none_destroy(omma_face_pipeline *p)
{
    (void)p;
}

static omma_status none_run_batch(omma_face_pipeline *p, int n, const int *cameras,
                                  const omma_frame *frames, omma_face *faces, int *counts)
{
    (void)p, (void)n, (void)cameras, (void)frames, (void)faces, (void)counts;
    return GPU_NONE_FAIL("the GPU face pipeline");
}

static void none_reset(omma_face_pipeline *p, int n, const int *cameras)
{
    (void)p, (void)n, (void)cameras;
}

const fp_backend_ops fp_gpu_backend = {none_create, none_destroy, none_run_batch, none_reset};
