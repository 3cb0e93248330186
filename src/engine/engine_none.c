/* The CUDA backend's entry points in a build without CUDA (OMMA_CUDA=OFF):
 * omma_engine_load with OMMA_BACKEND_CUDA fails with OMMA_ERR_NO_DEVICE and
 * says why. No CUDA engine can exist, so the backend's hooks never run;
 * they fail the same way. */
#include "engine/engine_private.h"
#include "gpu/none.h"

omma_status eng_cuda_engine_load(omma_device *dev, const char *path, const omma_engine_options *opt,
                                 omma_engine **out)
{
    (void)dev, (void)path, (void)opt;
    *out = NULL;
    return GPU_NONE_FAIL("omma_engine_load: the CUDA backend");
}

omma_status eng_cuda_steps(omma_engine *e)
{
    (void)e;
    return GPU_NONE_FAIL("the CUDA backend");
}

omma_status eng_cuda_engine_init(omma_engine *e)
{
    (void)e;
    return GPU_NONE_FAIL("the CUDA backend");
}

void eng_cuda_engine_uncache(omma_engine *e)
{
    (void)e;
}

static omma_status exec_init(omma_exec *x)
{
    (void)x;
    return GPU_NONE_FAIL("the CUDA backend");
}

static void exec_fini(omma_exec *x)
{
    (void)x;
}

static omma_status run(omma_exec *x, int batch)
{
    (void)x, (void)batch;
    return GPU_NONE_FAIL("the CUDA backend");
}

const eng_backend eng_cuda_backend = {
    "cuda (not built)", exec_init, exec_fini, run, NULL, NULL, NULL};
