/* Stream and event pools hand the same objects out again instead of
 * creating new ones. */
#include <pthread.h>

#include "gpu/check.h"
#include "gpu/driver.h"
#include "gpu/stream_pool.h"
#include "gpu_testing.h"

static void streams_are_reused(void)
{
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    CUstream a = NULL, b = NULL, c = NULL;
    REQUIRE_OK(gpu_stream_acquire(dev, GPU_PRIORITY_NORMAL, &a));
    gpu_stream_release(dev, a);
    REQUIRE_OK(gpu_stream_acquire(dev, GPU_PRIORITY_NORMAL, &b));
    CHECK(b == a);
    REQUIRE_OK(gpu_stream_acquire(dev, GPU_PRIORITY_NORMAL, &c));
    CHECK(c != b); /* b is still out */
    gpu_pool_stats ps;
    gpu_pool_stats_get(dev, &ps);
    CHECK(ps.streams_created == 2 && ps.streams_acquired == 3 && ps.streams_in_use == 2);
    gpu_stream_release(dev, b);
    gpu_stream_release(dev, c);
    /* Given back twice or never handed out: logged and ignored. */
    gpu_stream_release(dev, c);
    gpu_stream_release(dev, (CUstream)&ps);
    gpu_pool_stats_get(dev, &ps);
    CHECK(ps.streams_in_use == 0 && ps.streams_created == 2);
    /* A pooled stream works and is non-blocking. */
    REQUIRE_OK(gpu_stream_acquire(dev, GPU_PRIORITY_NORMAL, &a));
    omma_scope scope;
    REQUIRE_OK(omma_device_enter(dev, &scope));
    CHECK(gpu_cu.cuStreamQuery(a) == CUDA_SUCCESS);
    REQUIRE_OK(omma_device_leave(&scope));
    gpu_stream_release(dev, a);
    omma_device_close(dev);
}

static void priorities_are_separate_classes(void)
{
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    int high = 0, low = 0, normal = 0;
    REQUIRE_OK(gpu_priority_value(dev, GPU_PRIORITY_HIGH, &high));
    REQUIRE_OK(gpu_priority_value(dev, GPU_PRIORITY_LOW, &low));
    REQUIRE_OK(gpu_priority_value(dev, GPU_PRIORITY_NORMAL, &normal));
    CHECK(high <= normal && normal <= low); /* lower number = higher priority */
    CUstream h = NULL, n = NULL, l = NULL;
    REQUIRE_OK(gpu_stream_acquire(dev, GPU_PRIORITY_HIGH, &h));
    gpu_stream_release(dev, h);
    REQUIRE_OK(gpu_stream_acquire(dev, GPU_PRIORITY_NORMAL, &n));
    CHECK(n != h); /* a free high-priority stream is not handed out as normal */
    REQUIRE_OK(gpu_stream_acquire(dev, GPU_PRIORITY_LOW, &l));
    int got = 99;
    CHECK(gpu_cu.cuStreamGetPriority(h, &got) == CUDA_SUCCESS && got == high);
    CHECK(gpu_cu.cuStreamGetPriority(l, &got) == CUDA_SUCCESS && got == low);
    CUstream h2 = NULL;
    REQUIRE_OK(gpu_stream_acquire(dev, GPU_PRIORITY_HIGH, &h2));
    CHECK(h2 == h);
    gpu_stream_release(dev, h2);
    gpu_stream_release(dev, n);
    gpu_stream_release(dev, l);
    CUstream bad = (CUstream)1;
    CHECK_FAILS(gpu_stream_acquire(dev, GPU_PRIORITY_COUNT, &bad), OMMA_ERR_INVALID_ARG,
                "priority");
    CHECK(bad == NULL);
    omma_device_close(dev);
}

static void events_are_reused(void)
{
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    CUevent e1 = NULL, e2 = NULL, t1 = NULL, t2 = NULL;
    REQUIRE_OK(gpu_event_acquire(dev, GPU_EVENT_SYNC, &e1));
    gpu_event_release(dev, e1);
    REQUIRE_OK(gpu_event_acquire(dev, GPU_EVENT_SYNC, &e2));
    CHECK(e1 == e2);
    REQUIRE_OK(gpu_event_acquire(dev, GPU_EVENT_TIMING, &t1));
    REQUIRE_OK(gpu_event_acquire(dev, GPU_EVENT_TIMING, &t2));
    CHECK(t1 != e2 && t2 != t1);
    CUstream s = NULL;
    REQUIRE_OK(gpu_stream_acquire(dev, GPU_PRIORITY_NORMAL, &s));
    omma_scope scope;
    REQUIRE_OK(omma_device_enter(dev, &scope));
    CHECK(gpu_cu.cuEventRecord(t1, s) == CUDA_SUCCESS);
    CHECK(gpu_cu.cuEventRecord(e2, s) == CUDA_SUCCESS);
    CHECK(gpu_cu.cuEventRecord(t2, s) == CUDA_SUCCESS);
    CHECK(gpu_cu.cuEventSynchronize(t2) == CUDA_SUCCESS);
    float ms = -1;
    CHECK(gpu_cu.cuEventElapsedTime(&ms, t1, t2) == CUDA_SUCCESS && ms >= 0);
    /* The sync kind has no timestamps. */
    CHECK(gpu_cu.cuEventElapsedTime(&ms, t1, e2) != CUDA_SUCCESS);
    REQUIRE_OK(omma_device_leave(&scope));
    gpu_pool_stats ps;
    gpu_pool_stats_get(dev, &ps);
    CHECK(ps.events_created == 3 && ps.events_acquired == 4 && ps.events_in_use == 3);
    gpu_event_release(dev, e2);
    gpu_event_release(dev, t1);
    gpu_event_release(dev, t2);
    gpu_stream_release(dev, s);
    gpu_pool_stats_get(dev, &ps);
    CHECK(ps.events_in_use == 0);
    omma_device_close(dev);
}

enum { THREADS = 8, ROUNDS = 500 };

static void *churn(void *arg)
{
    omma_device *dev = arg;
    for (int i = 0; i < ROUNDS; i++) {
        CUstream s = NULL;
        CUevent e = NULL;
        if (gpu_stream_acquire(dev, GPU_PRIORITY_NORMAL, &s) != OMMA_OK ||
            gpu_event_acquire(dev, GPU_EVENT_SYNC, &e) != OMMA_OK)
            return (void *)1;
        gpu_event_release(dev, e);
        gpu_stream_release(dev, s);
    }
    return NULL;
}

static void concurrent_acquire_release(void)
{
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        REQUIRE(pthread_create(&t[i], NULL, churn, dev) == 0);
    int failed = 0;
    for (int i = 0; i < THREADS; i++) {
        void *r = NULL;
        pthread_join(t[i], &r);
        failed += r != NULL;
    }
    CHECK(failed == 0);
    gpu_pool_stats ps;
    gpu_pool_stats_get(dev, &ps);
    /* Never more objects than threads holding one at once. */
    CHECK(ps.streams_created <= THREADS && ps.events_created <= THREADS);
    CHECK(ps.streams_acquired == (uint64_t)THREADS * ROUNDS);
    CHECK(ps.streams_in_use == 0 && ps.events_in_use == 0);
    fprintf(stderr, "%d acquires served by %llu streams and %llu events\n", THREADS * ROUNDS,
            (unsigned long long)ps.streams_created, (unsigned long long)ps.events_created);
    omma_device_close(dev);
}

int main(void)
{
    gpu_test_require_device();
    RUN(streams_are_reused);
    RUN(priorities_are_separate_classes);
    RUN(events_are_reused);
    RUN(concurrent_acquire_release);
    return testing_finish();
}
