/* Loading the CUDA driver API with dlopen (see driver.h for why). */
#define _GNU_SOURCE
#include "gpu/driver.h"

#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "core/error.h"
#include "gpu/check.h"

gpu_driver gpu_cu;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static omma_status load_status;
static char load_detail[1024];

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t,
                                CUdriverProcAddressQueryResult *);

/* Entry points that CUDA 13 gave a new signature under the same base name
 * while cuda.h kept the old prototype for the plain name (cudaTypedefs.h
 * shows it: PFN_cuCtxSynchronize_v13000 takes a context). Asking for them at
 * CUDA_VERSION would return the new ABI behind the old prototype, so they
 * are resolved at the version whose signature the prototype describes.
 * Check cudaTypedefs.h for a newer PFN_<name>_vNNNNN when adding functions. */
static const struct {
    const char *name;
    int version;
} abi_versions[] = {
    {"cuCtxGetDevice", 12000},   /* _v13000 is (CUdevice *, CUcontext) */
    {"cuCtxSynchronize", 12000}, /* _v13000 is (CUcontext) */
};

static int version_of(const char *name)
{
    for (size_t i = 0; i < sizeof abi_versions / sizeof abi_versions[0]; i++)
        if (strcmp(abi_versions[i].name, name) == 0)
            return abi_versions[i].version < CUDA_VERSION ? abi_versions[i].version
                                                          : CUDA_VERSION;
    return CUDA_VERSION;
}

static omma_status resolve(get_proc_fn get_proc, const char *name, void **slot)
{
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult rc = get_proc(name, slot, version_of(name), CU_GET_PROC_ADDRESS_DEFAULT, &found);
    if (rc != CUDA_SUCCESS || found != CU_GET_PROC_ADDRESS_SUCCESS || !*slot)
        return OMMA_FAIL(OMMA_ERR_NO_DEVICE,
                         "the CUDA driver lacks %s for CUDA %d.%d (driver too old?)", name,
                         CUDA_VERSION / 1000, CUDA_VERSION % 1000 / 10);
    return OMMA_OK;
}

static omma_status load(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return OMMA_FAIL(OMMA_ERR_NO_DEVICE, "no NVIDIA driver: dlopen(libcuda.so.1) failed: %s",
                         dlerror());
    get_proc_fn get_proc = (get_proc_fn)dlsym(lib, "cuGetProcAddress_v2");
    if (!get_proc)
        return OMMA_FAIL(OMMA_ERR_NO_DEVICE,
                         "the NVIDIA driver is too old: libcuda.so.1 has no cuGetProcAddress_v2");
#define GPU_DRIVER_RESOLVE(name) OMMA_TRY(resolve(get_proc, #name, (void **)&gpu_cu.name));
    GPU_DRIVER_FUNCTIONS(GPU_DRIVER_RESOLVE)
#undef GPU_DRIVER_RESOLVE
    /* The library stays open for the life of the process, like the runtime's. */
    return OMMA_CK(gpu_cu.cuInit(0));
}

static void load_once_fn(void)
{
    load_status = load();
    if (load_status != OMMA_OK) {
        strncpy(load_detail, omma_last_error(), sizeof load_detail - 1);
        memset(&gpu_cu, 0, sizeof gpu_cu);
    }
}

omma_status gpu_driver_load(void)
{
    pthread_once(&load_once, load_once_fn);
    if (load_status != OMMA_OK)
        return core_fail_text(load_status, load_detail);
    return OMMA_OK;
}
