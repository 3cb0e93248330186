/* The busy-wait kernel, as PTX loaded through the driver: the library has no
 * .cu file, and PTX of ISA 7.0 for sm_75 JIT-compiles on any GPU since. */
#include "gpu/busy.h"

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/device_private.h"

/* From: extern "C" __global__ void omma_busy_wait(unsigned long long ns)
 * { t0 = %globaltimer; do t1 = %globaltimer; while (t1 - t0 < ns); } */
static const char busy_ptx[] =
    ".version 7.0\n"
    ".target sm_75\n"
    ".address_size 64\n"
    ".visible .entry omma_busy_wait(.param .u64 omma_busy_wait_param_0)\n"
    "{\n"
    "    .reg .pred %p<2>;\n"
    "    .reg .b64 %rd<6>;\n"
    "    ld.param.u64 %rd2, [omma_busy_wait_param_0];\n"
    "    mov.u64 %rd3, %globaltimer;\n"
    "$L__BB0_1:\n"
    "    mov.u64 %rd4, %globaltimer;\n"
    "    sub.s64 %rd5, %rd4, %rd3;\n"
    "    setp.lt.u64 %p1, %rd5, %rd2;\n"
    "    @%p1 bra $L__BB0_1;\n"
    "    ret;\n"
    "}\n";

static omma_status load(omma_device *dev)
{
    if (dev->busy_fn)
        return OMMA_OK;
    CUmodule mod = NULL;
    OMMA_TRY(OMMA_CK(gpu_cu.cuModuleLoadData(&mod, busy_ptx)));
    omma_status st = OMMA_CK(gpu_cu.cuModuleGetFunction(&dev->busy_fn, mod, "omma_busy_wait"));
    if (st != OMMA_OK) {
        gpu_cu.cuModuleUnload(mod);
        return st;
    }
    dev->busy_module = mod;
    return OMMA_OK;
}

static omma_status launch(omma_device *dev, CUstream stream, uint64_t ns)
{
    pthread_mutex_lock(&dev->lock);
    omma_status st = load(dev);
    CUfunction fn = dev->busy_fn;
    pthread_mutex_unlock(&dev->lock);
    OMMA_TRY(st);
    unsigned long long arg = ns;
    void *params[] = {&arg};
    return OMMA_CK(gpu_cu.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, stream, params, NULL));
}

omma_status gpu_busy_launch(omma_device *dev, CUstream stream, uint64_t ns)
{
    if (!dev)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "gpu_busy_launch: device is NULL");
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    return gpu_leave_keep(&scope, launch(dev, stream, ns));
}

void gpu_busy_destroy(omma_device *dev)
{
    if (dev->busy_module)
        gpu_cu.cuModuleUnload(dev->busy_module);
    dev->busy_module = NULL;
    dev->busy_fn = NULL;
}
