/* Device memory pool, pinned staging memory and the byte counters. */
#include "gpu/check.h"
#include "gpu/driver.h"
#include "gpu/memory.h"
#include "gpu/stream_pool.h"
#include "gpu_testing.h"

static void too_large_is_out_of_memory(void)
{
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    omma_device_info info;
    REQUIRE_OK(omma_device_get_info(dev, &info));
    size_t huge = (size_t)info.memory_total * 2;
    CUdeviceptr p = 1;
    CHECK_FAILS(gpu_mem_alloc(dev, huge, &p), OMMA_ERR_OUT_OF_MEMORY, "cuMemAllocFromPoolAsync");
    fprintf(stderr, "message: %s\n", omma_last_error());
    CHECK(strstr(omma_last_error(), "CUDA_ERROR_OUT_OF_MEMORY") != NULL);
    CHECK(strstr(omma_last_error(), "device 0: allocating") != NULL);
    CHECK(p == 0);
    CUstream s = NULL;
    REQUIRE_OK(gpu_stream_acquire(dev, GPU_PRIORITY_NORMAL, &s));
    p = 1;
    CHECK_FAILS(gpu_mem_alloc_async(dev, huge, s, &p), OMMA_ERR_OUT_OF_MEMORY,
                "cuMemAllocFromPoolAsync");
    CHECK(p == 0);
    /* Not sticky: the device is fine and small allocations work. */
    CHECK(omma_device_check_health(dev) == OMMA_OK);
    REQUIRE_OK(gpu_mem_alloc_async(dev, 1 << 20, s, &p));
    CHECK(gpu_mem_free_async(dev, p, s) == OMMA_OK);
    CHECK(gpu_cu.cuStreamSynchronize(s) == CUDA_SUCCESS);
    gpu_stream_release(dev, s);
    /* 0 bytes is a caller error. */
    CHECK_FAILS(gpu_mem_alloc(dev, 0, &p), OMMA_ERR_INVALID_ARG, "0 bytes");
    void *h = NULL;
    CHECK_FAILS(gpu_host_alloc(dev, 0, &h), OMMA_ERR_INVALID_ARG, "0 bytes");
    omma_device_close(dev);
}

static omma_transfer_counters minus(omma_transfer_counters a, omma_transfer_counters b)
{
    return (omma_transfer_counters){a.h2d_bytes - b.h2d_bytes, a.h2d_copies - b.h2d_copies,
                                    a.d2h_bytes - b.d2h_bytes, a.d2h_copies - b.d2h_copies,
                                    a.d2d_bytes - b.d2d_bytes, a.d2d_copies - b.d2d_copies};
}

static void counters_count_exactly_the_copies(void)
{
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    CUstream s = NULL;
    REQUIRE_OK(gpu_stream_acquire(dev, GPU_PRIORITY_NORMAL, &s));
    enum { BIG = 3 << 20 };
    unsigned char *up = NULL, *down = NULL;
    REQUIRE_OK(gpu_host_alloc(dev, BIG, (void **)&up));
    REQUIRE_OK(gpu_host_alloc(dev, BIG, (void **)&down));
    omma_memory_stats ms;
    REQUIRE_OK(omma_device_get_memory_stats(dev, &ms));
    CHECK(ms.pinned_bytes >= 2ull * BIG);
    for (size_t i = 0; i < BIG; i++)
        up[i] = (unsigned char)(i * 31 + 7);
    CUdeviceptr a = 0, b = 0;
    REQUIRE_OK(gpu_mem_alloc_async(dev, BIG, s, &a));
    REQUIRE_OK(gpu_mem_alloc_async(dev, BIG, s, &b));

    omma_transfer_counters before, after;
    REQUIRE_OK(omma_device_get_transfers(dev, &before));
    CHECK(gpu_copy_h2d_async(dev, a, up, BIG, s) == OMMA_OK);           /* h2d BIG */
    CHECK(gpu_copy_h2d_async(dev, a + 100, up, 1000, s) == OMMA_OK);    /* h2d 1000 */
    CHECK(gpu_copy_h2d_async(dev, a, up, BIG, s) == OMMA_OK);           /* h2d BIG (restore) */
    CHECK(gpu_copy_d2d_async(dev, b, a, BIG, s) == OMMA_OK);            /* d2d BIG */
    CHECK(gpu_copy_d2d_async(dev, b + 1, a + 1, 777, s) == OMMA_OK);    /* d2d 777 */
    CHECK(gpu_copy_d2h_async(dev, down, b, BIG, s) == OMMA_OK);         /* d2h BIG */
    CHECK(gpu_copy_d2h_async(dev, down, b, 123, s) == OMMA_OK);         /* d2h 123 */
    CHECK(gpu_copy_d2h_async(dev, down, b, 0, s) == OMMA_OK);           /* nothing */
    CHECK(gpu_cu.cuStreamSynchronize(s) == CUDA_SUCCESS);
    REQUIRE_OK(omma_device_get_transfers(dev, &after));
    omma_transfer_counters d = minus(after, before);
    CHECK(d.h2d_bytes == 2ull * BIG + 1000 && d.h2d_copies == 3);
    CHECK(d.d2d_bytes == (uint64_t)BIG + 777 && d.d2d_copies == 2);
    CHECK(d.d2h_bytes == (uint64_t)BIG + 123 && d.d2h_copies == 2);
    CHECK(memcmp(up, down, BIG) == 0);

    CHECK(gpu_mem_free_async(dev, a, s) == OMMA_OK);
    CHECK(gpu_mem_free_async(dev, b, s) == OMMA_OK);
    CHECK(gpu_cu.cuStreamSynchronize(s) == CUDA_SUCCESS);
    gpu_host_free(dev, up, BIG);
    gpu_host_free(dev, down, BIG);
    REQUIRE_OK(omma_device_get_memory_stats(dev, &ms));
    CHECK(ms.pinned_bytes == 0);
    CHECK(ms.live_allocations == 0);
    gpu_stream_release(dev, s);
    omma_device_close(dev);
}

static void pool_reuses_and_trims(void)
{
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    CUstream s = NULL;
    REQUIRE_OK(gpu_stream_acquire(dev, GPU_PRIORITY_NORMAL, &s));
    enum { SIZE = 8 << 20 };
    CUdeviceptr p = 0;
    REQUIRE_OK(gpu_mem_alloc_async(dev, SIZE, s, &p));
    CHECK(gpu_mem_free_async(dev, p, s) == OMMA_OK);
    CHECK(gpu_cu.cuStreamSynchronize(s) == CUDA_SUCCESS);
    omma_memory_stats warm;
    REQUIRE_OK(omma_device_get_memory_stats(dev, &warm));
    CHECK(warm.pool_release_threshold == UINT64_MAX);
    CHECK(warm.pool_reserved >= SIZE);
    CHECK(warm.pool_used == 0);
    /* Steady state: the same size again and again comes from the reserve. */
    for (int i = 0; i < 100; i++) {
        REQUIRE_OK(gpu_mem_alloc_async(dev, SIZE, s, &p));
        CHECK(gpu_mem_free_async(dev, p, s) == OMMA_OK);
    }
    CHECK(gpu_cu.cuStreamSynchronize(s) == CUDA_SUCCESS);
    omma_memory_stats after;
    REQUIRE_OK(omma_device_get_memory_stats(dev, &after));
    CHECK(after.pool_reserved == warm.pool_reserved);
    CHECK(after.pool_used == 0 && after.live_allocations == 0);
    CHECK(after.pool_used_high >= SIZE);
    REQUIRE_OK(omma_device_trim_memory(dev, 0));
    REQUIRE_OK(omma_device_get_memory_stats(dev, &after));
    CHECK(after.pool_reserved == 0);
    /* The synchronous pair gives a buffer usable from any stream. */
    REQUIRE_OK(gpu_mem_alloc(dev, SIZE, &p));
    CHECK(gpu_cu.cuMemsetD8Async(p, 0xab, SIZE, s) == CUDA_SUCCESS);
    CHECK(gpu_cu.cuStreamSynchronize(s) == CUDA_SUCCESS);
    CHECK(gpu_mem_free(dev, p) == OMMA_OK);
    CHECK(gpu_mem_free(dev, 0) == OMMA_OK);
    gpu_stream_release(dev, s);
    omma_device_close(dev);
}

int main(void)
{
    gpu_test_require_device();
    RUN(too_large_is_out_of_memory);
    RUN(counters_count_exactly_the_copies);
    RUN(pool_reuses_and_trims);
    return testing_finish();
}
