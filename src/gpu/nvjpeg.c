/* nvJPEG through dlopen (nvjpeg.h says which library and why). */
#include "gpu/nvjpeg.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/error.h"

gpu_nvjpeg gpu_jpeg;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_failure[512]; /* "" once loaded */

static void load(void)
{
    const char *chosen = getenv("OMMA_NVJPEG");
    const char *names[] = {"libnvjpeg.so.13", "libnvjpeg.so.12", "libnvjpeg.so"};
    void *lib = NULL;
    const char *name = chosen;
    char why[256] = "not found";
    if (chosen && chosen[0]) {
        lib = dlopen(chosen, RTLD_NOW | RTLD_LOCAL);
    } else {
        for (size_t i = 0; !lib && i < sizeof names / sizeof names[0]; i++) {
            name = names[i];
            lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
            const char *e = lib ? NULL : dlerror();
            if (e && i == 0)
                snprintf(why, sizeof why, "%s", e);
        }
#ifdef OMMA_CUDA_LIBRARY_DIR
        /* The toolkit omma was built with, when the loader's path lacks it. */
        static char in_toolkit[sizeof names / sizeof names[0]][512];
        for (size_t i = 0; !lib && i < sizeof names / sizeof names[0]; i++) {
            snprintf(in_toolkit[i], sizeof in_toolkit[i], "%s/%s", OMMA_CUDA_LIBRARY_DIR, names[i]);
            name = in_toolkit[i];
            lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
        }
#endif
    }
    if (!lib) {
        const char *e = chosen && chosen[0] ? dlerror() : why;
        snprintf(load_failure, sizeof load_failure,
                 "NVIDIA's JPEG decoder library %s cannot be loaded (%s): it comes with the CUDA "
                 "toolkit or NVIDIA's libnvjpeg package",
                 chosen && chosen[0] ? chosen : "libnvjpeg.so.13 (or .so.12, .so)",
                 e ? e : "not found");
        return;
    }
#define GPU_NVJPEG_RESOLVE(fn)                                                                     \
    if (!load_failure[0] && !(*(void **)&gpu_jpeg.fn = dlsym(lib, #fn)))                           \
        snprintf(load_failure, sizeof load_failure, "%.300s has no %s (nvJPEG too old)", name, #fn);
    GPU_NVJPEG_FUNCTIONS(GPU_NVJPEG_RESOLVE)
#undef GPU_NVJPEG_RESOLVE
}

omma_status gpu_nvjpeg_load(void)
{
    pthread_once(&load_once, load);
    return load_failure[0] ? OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "%s", load_failure) : OMMA_OK;
}

const char *gpu_nvjpeg_status_name(nvjpegStatus_t s)
{
    static const char *const names[] = {
        "NVJPEG_STATUS_SUCCESS",
        "NVJPEG_STATUS_NOT_INITIALIZED",
        "NVJPEG_STATUS_INVALID_PARAMETER",
        "NVJPEG_STATUS_BAD_JPEG",
        "NVJPEG_STATUS_JPEG_NOT_SUPPORTED",
        "NVJPEG_STATUS_ALLOCATOR_FAILURE",
        "NVJPEG_STATUS_EXECUTION_FAILED",
        "NVJPEG_STATUS_ARCH_MISMATCH",
        "NVJPEG_STATUS_INTERNAL_ERROR",
        "NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED",
        "NVJPEG_STATUS_INCOMPLETE_BITSTREAM",
    };
    return (unsigned)s < sizeof names / sizeof names[0] ? names[s] : "unknown nvJPEG status";
}
