/* The face pipeline on the GPU: being built (see issue 5). */
#include "core/error.h"
#include "runtime/face_pipeline_private.h"

static omma_status gpu_create(omma_face_pipeline *p, const char *detector, const char *mesh)
{
    (void)p, (void)detector, (void)mesh;
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                     "face pipeline: the CUDA backend is not built yet; use the CPU backend");
}

static void gpu_destroy(omma_face_pipeline *p)
{
    (void)p;
}

static omma_status gpu_run_batch(omma_face_pipeline *p, int n, const int *cameras,
                                 const omma_frame *frames, omma_face *faces, int *counts)
{
    (void)p, (void)n, (void)cameras, (void)frames, (void)faces, (void)counts;
    return OMMA_FAIL(OMMA_ERR_INTERNAL, "face pipeline: no CUDA backend");
}

static void gpu_reset(omma_face_pipeline *p, int n, const int *cameras)
{
    (void)p, (void)n, (void)cameras;
}

const fp_backend_ops fp_gpu_backend = {gpu_create, gpu_destroy, gpu_run_batch, gpu_reset};
