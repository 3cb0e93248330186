/* Fault injection walk: the Nth device allocation, pinned allocation,
 * stream or event creation fails, for N = 1, 2, ... until an operation that
 * uses every kind succeeds; each failure is reported with its status and
 * leaves nothing behind. Needs a build with -DOMMA_FAULT_INJECTION=ON. */
#include "core/error.h"
#include "gpu/check.h"
#include "gpu/device_private.h"
#include "gpu/driver.h"
#include "gpu/fault.h"
#include "gpu/memory.h"
#include "gpu/stream_pool.h"
#include "gpu_testing.h"

static int leaks; /* objects still out after a failed operation */

/* Everything on one device, undone in reverse on any failure. */
static omma_status steps(omma_device *dev)
{
    CUstream s = NULL;
    CUevent e = NULL;
    CUdeviceptr a = 0, b = 0;
    void *h = NULL;
    omma_status st = gpu_stream_acquire(dev, GPU_PRIORITY_HIGH, &s);
    if (st == OMMA_OK)
        st = gpu_event_acquire(dev, GPU_EVENT_SYNC, &e);
    if (st == OMMA_OK)
        st = gpu_mem_alloc(dev, 1 << 20, &a); /* pool + its stream + buffer */
    if (st == OMMA_OK)
        st = gpu_mem_alloc_async(dev, 4096, s, &b);
    if (st == OMMA_OK)
        st = gpu_host_alloc(dev, 4096, &h);
    if (st == OMMA_OK)
        st = gpu_copy_h2d_async(dev, b, h, 4096, s);
    if (st == OMMA_OK) {
        omma_scope scope;
        st = omma_device_enter(dev, &scope);
        if (st == OMMA_OK) {
            st = OMMA_CK(gpu_cu.cuEventRecord(e, s));
            if (st == OMMA_OK)
                st = OMMA_CK(gpu_cu.cuEventSynchronize(e));
            st = gpu_leave_keep(&scope, st);
        }
    }
    if (b)
        gpu_mem_free_async(dev, b, s);
    if (s) {
        omma_scope scope;
        if (omma_device_enter(dev, &scope) == OMMA_OK) {
            gpu_cu.cuStreamSynchronize(s);
            omma_device_leave(&scope);
        }
    }
    gpu_host_free(dev, h, 4096);
    gpu_mem_free(dev, a);
    gpu_event_release(dev, e);
    gpu_stream_release(dev, s);
    return st;
}

static omma_status operation(void)
{
    omma_device *dev = NULL;
    OMMA_TRY(omma_device_open(0, &dev));
    omma_status st = steps(dev);
    char detail[1024];
    snprintf(detail, sizeof detail, "%s", omma_last_error());
    /* Whatever happened, nothing may be left out. */
    gpu_pool_stats ps;
    gpu_pool_stats_get(dev, &ps);
    omma_memory_stats ms = {0};
    omma_device_get_memory_stats(dev, &ms);
    if (ps.streams_in_use || ps.events_in_use || ms.live_allocations || ms.pinned_bytes) {
        fprintf(stderr, "leak: %llu streams, %llu events, %llu buffers, %llu pinned bytes\n",
                (unsigned long long)ps.streams_in_use, (unsigned long long)ps.events_in_use,
                (unsigned long long)ms.live_allocations, (unsigned long long)ms.pinned_bytes);
        leaks++;
    }
    omma_device_close(dev);
    return st == OMMA_OK ? OMMA_OK : core_fail_text(st, detail);
}

static void walk_every_fault_point(void)
{
    /* Unarmed: count the points one operation passes. */
    gpu_fault_arm(0);
    REQUIRE_OK(operation());
    long points = gpu_fault_points();
    fprintf(stderr, "one operation passes %ld fault points\n", points);
    CHECK(points >= 7);
    for (long n = 1; n <= points + 1; n++) {
        gpu_fault_arm(n);
        omma_status st = operation();
        if (n <= points) {
            CHECK(st == OMMA_ERR_OUT_OF_MEMORY || st == OMMA_ERR_CUDA);
            CHECK(strstr(omma_last_error(), "injected fault") != NULL);
            fprintf(stderr, "fault %ld: %s: %s\n", n, omma_status_str(st), omma_last_error());
        } else {
            CHECK(st == OMMA_OK); /* past the last point: nothing fails */
        }
        CHECK(leaks == 0);
    }
    gpu_fault_arm(0);
    /* The device is fine afterwards. */
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    CHECK(omma_device_check_health(dev) == OMMA_OK);
    omma_device_close(dev);
}

int main(void)
{
    if (!gpu_fault_enabled())
        SKIP_TEST("built without -DOMMA_FAULT_INJECTION=ON");
    gpu_test_require_device();
    RUN(walk_every_fault_point);
    return testing_finish();
}
