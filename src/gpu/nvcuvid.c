/* NVDEC's API through dlopen("libnvcuvid.so.1") (nvcuvid.h). */
#ifdef OMMA_HAVE_NVDEC

#include "gpu/nvcuvid.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#include "core/error.h"

gpu_nvcuvid gpu_cuvid;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_failure[256]; /* "" once loaded */

static void load(void)
{
    void *lib = dlopen("libnvcuvid.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        snprintf(load_failure, sizeof load_failure,
                 "NVIDIA's video decoder library libnvcuvid.so.1 cannot be loaded (%s): it comes "
                 "with the NVIDIA driver",
                 why ? why : "not found");
        return;
    }
#define GPU_NVCUVID_RESOLVE(member, type, symbol)                                                  \
    if (!load_failure[0] && !(gpu_cuvid.member = (type *)dlsym(lib, symbol)))                      \
        snprintf(load_failure, sizeof load_failure, "libnvcuvid.so.1 has no %s (driver too old)",  \
                 symbol);
    GPU_NVCUVID_FUNCTIONS(GPU_NVCUVID_RESOLVE)
#undef GPU_NVCUVID_RESOLVE
}

omma_status gpu_nvcuvid_load(void)
{
    pthread_once(&load_once, load);
    return load_failure[0] ? OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "%s", load_failure) : OMMA_OK;
}

#endif
