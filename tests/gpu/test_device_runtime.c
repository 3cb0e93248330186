/* The CUDA runtime and omma share one context: runtime calls and kernel
 * launches inside a scope run in the primary context omma retained, and
 * memory from either side works with the other. */
#include <pthread.h>

#include "gpu/check.h"
#include "gpu/driver.h"
#include "gpu/memory.h"
#include "gpu/stream_pool.h"
#include "gpu_testing.h"
#include "test_kernels.h"

enum { N = 4096 };

static CUcontext current(void)
{
    CUcontext c = NULL;
    gpu_cu.cuCtxGetCurrent(&c);
    return c;
}

static void runtime_calls_run_in_the_primary_context(void)
{
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    CUcontext ctx = (CUcontext)omma_device_context(dev);
    omma_scope scope;
    REQUIRE_OK(omma_device_enter(dev, &scope));

    int *p = NULL;
    REQUIRE(cudaMalloc((void **)&p, N * sizeof(int)) == cudaSuccess);
    int device = -1;
    CHECK(cudaGetDevice(&device) == cudaSuccess && device == 0);
    CHECK(current() == ctx); /* the runtime did not switch contexts */

    CUcontext owner = NULL;
    CHECK(gpu_cu.cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, (CUdeviceptr)p) ==
          CUDA_SUCCESS);
    CHECK(owner == ctx);
    struct cudaPointerAttributes attr;
    CHECK(cudaPointerGetAttributes(&attr, p) == cudaSuccess);
    CHECK(attr.type == cudaMemoryTypeDevice && attr.device == 0);

    /* A runtime kernel on an omma stream, read back with an omma copy. */
    CUstream s = NULL;
    REQUIRE_OK(gpu_stream_acquire(dev, GPU_PRIORITY_NORMAL, &s));
    CHECK(test_fill(p, N, 1000, (cudaStream_t)s) == cudaSuccess);
    int *host = NULL;
    REQUIRE_OK(gpu_host_alloc(dev, N * sizeof(int), (void **)&host));
    CHECK(gpu_copy_d2h_async(dev, host, (CUdeviceptr)p, N * sizeof(int), s) == OMMA_OK);
    CHECK(cudaStreamSynchronize((cudaStream_t)s) == cudaSuccess);
    int wrong = 0;
    for (int i = 0; i < N; i++)
        wrong += host[i] != 1000 + i;
    CHECK(wrong == 0);

    /* omma's pool memory in a runtime kernel. */
    CUdeviceptr d = 0;
    REQUIRE_OK(gpu_mem_alloc(dev, N * sizeof(int), &d));
    CHECK(test_fill((int *)d, N, -5, (cudaStream_t)s) == cudaSuccess);
    CUdeviceptr sum = 0;
    REQUIRE_OK(gpu_mem_alloc_async(dev, sizeof(int), s, &sum));
    CHECK(test_block_sum((const int *)d, N, (int *)sum, (cudaStream_t)s) == cudaSuccess);
    int got = 0;
    CHECK(gpu_copy_d2h_async(dev, &got, sum, sizeof got, s) == OMMA_OK);
    CHECK(gpu_cu.cuStreamSynchronize(s) == CUDA_SUCCESS);
    long long want = 0;
    for (int i = 0; i < N; i++)
        want += -5 + i;
    CHECK(got == (int)want);
    CHECK(cudaGetLastError() == cudaSuccess);

    CHECK(gpu_mem_free_async(dev, sum, s) == OMMA_OK);
    CHECK(gpu_mem_free(dev, d) == OMMA_OK);
    CHECK(gpu_cu.cuStreamSynchronize(s) == CUDA_SUCCESS);
    gpu_host_free(dev, host, N * sizeof(int));
    gpu_stream_release(dev, s);
    CHECK(cudaFree(p) == cudaSuccess);
    REQUIRE_OK(omma_device_leave(&scope));
    omma_device_close(dev);
}

static void *runtime_thread(void *arg)
{
    CUcontext *seen = arg;
    /* No scope: the runtime makes the primary context current by itself. */
    if (cudaFree(NULL) == cudaSuccess)
        gpu_cu.cuCtxGetCurrent(seen);
    return NULL;
}

static void runtime_on_a_bare_thread_uses_the_same_context(void)
{
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    CUcontext seen = NULL;
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, runtime_thread, &seen) == 0);
    pthread_join(t, NULL);
    CHECK(seen == (CUcontext)omma_device_context(dev));
    omma_device_close(dev);
}

int main(void)
{
    gpu_test_require_device();
    RUN(runtime_calls_run_in_the_primary_context);
    RUN(runtime_on_a_bare_thread_uses_the_same_context);
    return testing_finish();
}
