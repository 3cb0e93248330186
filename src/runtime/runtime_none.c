/* The GPU runtime in a build without CUDA (OMMA_CUDA=OFF): starting a
 * runtime whose pipeline backend is OMMA_BACKEND_CUDA fails with
 * OMMA_ERR_NO_DEVICE and says why; the CPU runtime is unchanged. */
#include <string.h>

#include "gpu/none.h"
#include "runtime/runtime_backend.h"

static omma_status none_start(const rt_runtime_config *cfg, void **out)
{
    (void)cfg;
    *out = NULL;
    return GPU_NONE_FAIL("the GPU runtime (use the CPU backend)");
}

static void none_stop(void *impl)
{
    (void)impl;
}

static omma_status none_wait(void *impl, int timeout_ms)
{
    (void)impl, (void)timeout_ms;
    return GPU_NONE_FAIL("the GPU runtime");
}

static void none_destroy(void *impl)
{
    (void)impl;
}

static void none_get_stats(void *impl, rt_runtime_stats *out)
{
    (void)impl;
    memset(out, 0, sizeof *out);
}

static omma_status none_add_camera(void *impl, const rt_camera_config *cam, int *index)
{
    (void)impl, (void)cam, (void)index;
    return GPU_NONE_FAIL("the GPU runtime");
}

static omma_status none_remove_camera(void *impl, int index)
{
    (void)impl, (void)index;
    return GPU_NONE_FAIL("the GPU runtime");
}

const rt_backend rt_gpu_backend = {"gpu (not built)", none_start,         none_stop,
                                   none_wait,         none_destroy,       none_get_stats,
                                   none_add_camera,   none_remove_camera, NULL};
