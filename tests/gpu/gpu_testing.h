/* Shared by the gpu tests: skip (exit 77) where there is no GPU. */
#ifndef OMMA_GPU_TESTING_H
#define OMMA_GPU_TESTING_H

#include "omma/device.h"
#include "testing.h"

/* Exits 77 when omma sees no driver or no GPU; otherwise returns. */
static inline void gpu_test_require_device(void)
{
    int n = 0;
    omma_status st = omma_device_count(&n);
    if (st == OMMA_ERR_NO_DEVICE)
        SKIP_TEST(omma_last_error());
    if (st != OMMA_OK) {
        fprintf(stderr, "omma_device_count: %s: %s\n", omma_status_str(st), omma_last_error());
        exit(1);
    }
}

/* Contexts, for the tests that prove omma makes none of its own. */
#include <string.h>

#include "gpu/driver.h"

/* An application's own context (cuCtxCreate v4 wants a params struct). */
static inline CUresult create_context(CUcontext *out, CUdevice cu)
{
    CUctxCreateParams params;
    memset(&params, 0, sizeof params);
    return gpu_cu.cuCtxCreate(out, &params, 0, cu);
}

/* Device memory one cuCtxCreate context takes (it is used once). */
static inline size_t extra_context_cost(omma_device *dev)
{
    omma_scope scope;
    if (omma_device_enter(dev, &scope) != OMMA_OK)
        return 0;
    CUdevice cu;
    size_t before = 0, after = 0, total = 0;
    CUcontext extra = NULL;
    CUdeviceptr p = 0;
    gpu_cu.cuCtxGetDevice(&cu);
    gpu_cu.cuMemGetInfo(&before, &total);
    if (create_context(&extra, cu) == CUDA_SUCCESS) {
        if (gpu_cu.cuMemAlloc(&p, 1 << 20) == CUDA_SUCCESS)
            gpu_cu.cuMemFree(p);
        gpu_cu.cuMemGetInfo(&after, &total);
        gpu_cu.cuCtxDestroy(extra);
    }
    omma_device_leave(&scope);
    return before > after ? before - after : 0;
}

#endif
