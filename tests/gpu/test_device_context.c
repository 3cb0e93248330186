/* One context per GPU per process, and thread binding scopes: many threads
 * share one primary context, scopes nest, restore the host application's
 * context, and catch out-of-order leaves without corrupting the stack. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>

#include "gpu/check.h"
#include "gpu/driver.h"
#include "gpu/memory.h"
#include "gpu/schedule.h"
#include "gpu/stream_pool.h"
#include "gpu_testing.h"

static CUcontext current(void)
{
    CUcontext c = NULL;
    if (gpu_cu.cuCtxGetCurrent(&c) != CUDA_SUCCESS)
        return (CUcontext)(uintptr_t)1; /* never a real context */
    return c;
}

static size_t free_memory(omma_device *dev)
{
    omma_scope scope;
    size_t free_bytes = 0, total = 0;
    if (omma_device_enter(dev, &scope) != OMMA_OK)
        return 0;
    gpu_cu.cuCtxSynchronize();
    gpu_cu.cuMemGetInfo(&free_bytes, &total);
    omma_device_leave(&scope);
    return free_bytes;
}

/* Runs first: the policy can only be chosen before the context starts. */
static void schedule_set_before_first_use(void)
{
    REQUIRE_OK(omma_device_set_schedule(0, OMMA_SCHEDULE_YIELD));
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    omma_schedule got = OMMA_SCHEDULE_DEFAULT;
    CHECK(omma_device_get_schedule(dev, &got) == OMMA_OK);
    CHECK(got == OMMA_SCHEDULE_YIELD);
    CHECK_FAILS(omma_device_set_schedule(0, OMMA_SCHEDULE_SPIN), OMMA_ERR_BUSY, "already open");
    omma_device_info info;
    CHECK(omma_device_get_info(dev, &info) == OMMA_OK);
    CHECK(info.schedule == OMMA_SCHEDULE_YIELD);
    omma_device_close(dev);
    /* Closed and the primary context released: settable again. The default
     * policy (blocking unless OMMA_GPU_SCHEDULE says otherwise) for the rest. */
    REQUIRE_OK(omma_device_set_schedule(0, OMMA_SCHEDULE_DEFAULT));
    REQUIRE_OK(omma_device_open(0, &dev));
    CHECK(omma_device_get_schedule(dev, &got) == OMMA_OK);
    CHECK(got == gpu_schedule_default());
    omma_device_close(dev);
}

static void open_returns_one_object_per_ordinal(void)
{
    omma_device *a = NULL, *b = NULL;
    REQUIRE_OK(omma_device_open(0, &a));
    REQUIRE_OK(omma_device_open(0, &b));
    CHECK(a == b);
    CHECK(omma_device_ordinal(a) == 0);
    /* It is the device's primary context, the one the runtime uses. */
    CUdevice cu;
    CUcontext primary = NULL;
    REQUIRE(gpu_cu.cuDeviceGet(&cu, 0) == CUDA_SUCCESS);
    REQUIRE(gpu_cu.cuDevicePrimaryCtxRetain(&primary, cu) == CUDA_SUCCESS);
    CHECK(omma_device_context(a) == (void *)primary);
    gpu_cu.cuDevicePrimaryCtxRelease(cu);
    /* Opening does not make it current. */
    CHECK(current() == NULL);
    omma_device_close(b);
    omma_device_close(a);
}

static void device_facts(void)
{
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    omma_device_info in;
    REQUIRE_OK(omma_device_get_info(dev, &in));
    fprintf(stderr, "GPU 0: %s, %s, cc %d.%d, %d SMs, L2 %d KiB, %.1f/%.1f GiB free\n", in.name,
            in.pci_bus_id, in.cc_major, in.cc_minor, in.sm_count, in.l2_bytes / 1024,
            in.memory_free / 1073741824.0, in.memory_total / 1073741824.0);
    CHECK(in.name[0] != '\0');
    unsigned dom, bus, slot, fn;
    CHECK(sscanf(in.pci_bus_id, "%x:%x:%x.%x", &dom, &bus, &slot, &fn) == 4);
    CHECK(strncmp(in.uuid, "GPU-", 4) == 0 && strlen(in.uuid) == 40);
    CHECK(in.cc_major >= 5);
    CHECK(in.sm_count > 0);
    CHECK(in.l2_bytes > 0);
    CHECK(in.memory_total > 0 && in.memory_free > 0 && in.memory_free <= in.memory_total);
    CHECK(in.driver_version >= 12000);
    CHECK(in.adopted == 0);
    REQUIRE_OK(omma_device_check_health(dev));
    omma_device_close(dev);
}

static void invalid_ordinal_is_no_device(void)
{
    int n = 0;
    REQUIRE_OK(omma_device_count(&n));
    omma_device *dev = (omma_device *)&n;
    CHECK_FAILS(omma_device_open(n, &dev), OMMA_ERR_NO_DEVICE, "no GPU with ordinal");
    CHECK(dev == NULL);
    CHECK_FAILS(omma_device_open(-1, &dev), OMMA_ERR_NO_DEVICE, "no GPU with ordinal -1");
    CHECK_FAILS(omma_device_open(1000, &dev), OMMA_ERR_NO_DEVICE, "sees");
    CHECK_FAILS(omma_device_set_schedule(n, OMMA_SCHEDULE_SPIN), OMMA_ERR_NO_DEVICE, "ordinal");
}

/* ---- 16 threads -------------------------------------------------------- */

enum { THREADS = 16, WORK_BYTES = 1 << 20, ROUNDS = 20 };

typedef struct worker {
    pthread_t thread;
    pthread_barrier_t *start;
    omma_device *dev;
    CUcontext seen;          /* current context inside the scope */
    CUcontext after;         /* current context after leaving */
    int ok;
    char error[512];
} worker;

static omma_status work(worker *w)
{
    omma_device *dev = w->dev;
    CUstream s = NULL;
    CUdeviceptr d = 0;
    unsigned char *host = NULL;
    omma_status st = gpu_stream_acquire(dev, GPU_PRIORITY_NORMAL, &s);
    if (st == OMMA_OK)
        st = gpu_mem_alloc_async(dev, WORK_BYTES, s, &d);
    if (st == OMMA_OK)
        st = gpu_host_alloc(dev, WORK_BYTES, (void **)&host);
    for (int r = 0; r < ROUNDS && st == OMMA_OK; r++) {
        unsigned char value = (unsigned char)(r * 7 + 1);
        st = OMMA_CK(gpu_cu.cuMemsetD8Async(d, value, WORK_BYTES, s));
        if (st == OMMA_OK)
            st = gpu_copy_d2h_async(dev, host, d, WORK_BYTES, s);
        if (st == OMMA_OK)
            st = OMMA_CK(gpu_cu.cuStreamSynchronize(s));
        if (st == OMMA_OK && (host[0] != value || host[WORK_BYTES - 1] != value))
            st = OMMA_ERR_INTERNAL;
    }
    if (d)
        gpu_mem_free_async(dev, d, s);
    if (s)
        gpu_cu.cuStreamSynchronize(s);
    gpu_host_free(dev, host, WORK_BYTES);
    gpu_stream_release(dev, s);
    return st;
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    pthread_barrier_wait(w->start);
    omma_status st = omma_device_open(0, &w->dev);
    omma_scope scope;
    if (st == OMMA_OK)
        st = omma_device_enter(w->dev, &scope);
    if (st == OMMA_OK) {
        w->seen = current();
        st = work(w);
        omma_status left = omma_device_leave(&scope);
        if (st == OMMA_OK)
            st = left;
        w->after = current();
    }
    w->ok = st == OMMA_OK;
    if (!w->ok)
        snprintf(w->error, sizeof w->error, "%s: %s", omma_status_str(st), omma_last_error());
    /* The device stays open: the main thread closes after comparing. */
    return NULL;
}

static void sixteen_threads_share_one_context(void)
{
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    /* Warm the pools once so the comparison below counts contexts only. */
    worker warm = {.dev = NULL};
    pthread_barrier_t one;
    pthread_barrier_init(&one, NULL, 1);
    warm.start = &one;
    worker_main(&warm);
    REQUIRE(warm.ok);
    omma_device_close(warm.dev);
    pthread_barrier_destroy(&one);
    size_t free_before = free_memory(dev);

    worker w[THREADS];
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.start = &start};
        REQUIRE(pthread_create(&w[i].thread, NULL, worker_main, &w[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(w[i].thread, NULL);
    pthread_barrier_destroy(&start);
    fprintf(stderr, "%d threads joined\n", THREADS);

    for (int i = 0; i < THREADS; i++) {
        if (!w[i].ok)
            fprintf(stderr, "thread %d: %s\n", i, w[i].error);
        CHECK(w[i].ok);
        CHECK(w[i].dev == dev);
        CHECK(w[i].seen == (CUcontext)omma_device_context(dev));
        CHECK(w[i].after == NULL); /* the thread had nothing current before */
    }
    /* Each thread's stream went back to the pool: at most 16 were made. */
    gpu_pool_stats ps;
    gpu_pool_stats_get(dev, &ps);
    CHECK(ps.streams_in_use == 0);
    CHECK(ps.streams_created <= THREADS);
    CHECK(ps.streams_acquired >= THREADS + 1);

    /* Exactly one context: the 16 threads' work left device memory where it
     * was (apart from the pool's reserve and the extra streams), while one
     * more context alone costs far more. */
    REQUIRE_OK(omma_device_trim_memory(dev, 0));
    size_t free_after = free_memory(dev);
    size_t cost = extra_context_cost(dev);
    double used_mib = ((double)free_before - (double)free_after) / 1048576.0;
    fprintf(stderr, "16 threads in one context: %.1f MiB more device memory in use; one extra "
                    "cuCtxCreate context: %.1f MiB\n",
            used_mib, cost / 1048576.0);
    CHECK(cost > 0);
    const char *sanitizer = getenv("OMMA_TEST_SANITIZER");
    if (sanitizer && *sanitizer)
        fprintf(stderr, "under compute-sanitizer: memory figures not compared\n");
    else
        CHECK(used_mib < cost / 1048576.0 / 4);
    for (int i = 0; i < THREADS; i++)
        omma_device_close(w[i].dev);
    omma_device_close(dev);
}

/* ---- scopes ------------------------------------------------------------- */

static void nested_scopes(void)
{
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    CUcontext ctx = (CUcontext)omma_device_context(dev);
    REQUIRE(current() == NULL);
    omma_scope outer, inner, innermost;
    REQUIRE_OK(omma_device_enter(dev, &outer));
    CHECK(current() == ctx);
    CHECK(omma_scope_depth() == 1);
    REQUIRE_OK(omma_device_enter(dev, &inner));
    CHECK(omma_scope_depth() == 2);
    CHECK(inner.pushed_ == 0); /* already current: nothing pushed */
    REQUIRE_OK(omma_device_enter(dev, &innermost));
    CHECK(omma_scope_depth() == 3);
    REQUIRE_OK(omma_device_leave(&innermost));
    CHECK(current() == ctx);
    REQUIRE_OK(omma_device_leave(&inner));
    CHECK(current() == ctx);
    REQUIRE_OK(omma_device_leave(&outer));
    CHECK(current() == NULL);
    CHECK(omma_scope_depth() == 0);
    /* Nothing left on the context stack. */
    CUcontext popped = (CUcontext)1;
    CHECK(gpu_cu.cuCtxPopCurrent(&popped) != CUDA_SUCCESS);
    omma_device_close(dev);
}

static omma_status inside_call(void *arg)
{
    omma_device *dev = arg;
    return current() == (CUcontext)omma_device_context(dev) ? OMMA_OK
                                                            : OMMA_ERR_INTERNAL;
}

static omma_status failing_call(void *arg)
{
    (void)arg;
    return OMMA_ERR_TIMEOUT;
}

static void call_helper(void)
{
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    CHECK(omma_device_call(dev, inside_call, dev) == OMMA_OK);
    CHECK(current() == NULL);
    CHECK(omma_device_call(dev, failing_call, NULL) == OMMA_ERR_TIMEOUT);
    CHECK(current() == NULL);
    CHECK(omma_scope_depth() == 0);
    omma_device_close(dev);
}

static void host_context_is_restored(void)
{
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    CUdevice cu;
    REQUIRE(gpu_cu.cuDeviceGet(&cu, 0) == CUDA_SUCCESS);
    CUcontext app = NULL;
    REQUIRE(create_context(&app, cu) == CUDA_SUCCESS); /* current now */
    REQUIRE(current() == app);

    omma_scope scope, nested;
    REQUIRE_OK(omma_device_enter(dev, &scope));
    CHECK(current() == (CUcontext)omma_device_context(dev));
    REQUIRE_OK(omma_device_enter(dev, &nested));
    REQUIRE_OK(omma_device_leave(&nested));
    CHECK(current() == (CUcontext)omma_device_context(dev));
    REQUIRE_OK(omma_device_leave(&scope));
    CHECK(current() == app);

    /* Set (not pushed) by the application: the same. */
    CUcontext popped;
    REQUIRE(gpu_cu.cuCtxPopCurrent(&popped) == CUDA_SUCCESS && popped == app);
    REQUIRE(gpu_cu.cuCtxSetCurrent(app) == CUDA_SUCCESS);
    REQUIRE_OK(omma_device_enter(dev, &scope));
    REQUIRE_OK(omma_device_leave(&scope));
    CHECK(current() == app);
    /* The application's context still works. */
    CUdeviceptr p = 0;
    CHECK(gpu_cu.cuMemAlloc(&p, 4096) == CUDA_SUCCESS);
    CHECK(gpu_cu.cuMemFree(p) == CUDA_SUCCESS);
    REQUIRE(gpu_cu.cuCtxSetCurrent(NULL) == CUDA_SUCCESS);
    CHECK(gpu_cu.cuCtxDestroy(app) == CUDA_SUCCESS);
    omma_device_close(dev);
}

static void out_of_order_leave_is_reported(void)
{
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    CUcontext ctx = (CUcontext)omma_device_context(dev);
    CUdevice cu;
    REQUIRE(gpu_cu.cuDeviceGet(&cu, 0) == CUDA_SUCCESS);
    CUcontext app = NULL;
    REQUIRE(create_context(&app, cu) == CUDA_SUCCESS);

    omma_scope a, b;
    REQUIRE_OK(omma_device_enter(dev, &a)); /* pushes over app */
    REQUIRE_OK(omma_device_enter(dev, &b));
    CHECK_FAILS(omma_device_leave(&a), OMMA_ERR_INVALID_ARG, "out of order");
    CHECK(strstr(omma_last_error(), "depth 1") && strstr(omma_last_error(), "depth 2"));
    /* Nothing was disturbed: still inside both scopes. */
    CHECK(current() == ctx);
    CHECK(omma_scope_depth() == 2);
    REQUIRE_OK(omma_device_leave(&b));
    REQUIRE_OK(omma_device_leave(&a));
    CHECK(current() == app);
    CHECK_FAILS(omma_device_leave(&a), OMMA_ERR_INVALID_ARG, "left already");

    /* A context pushed inside the scope and not popped is caught too. */
    REQUIRE_OK(omma_device_enter(dev, &a));
    REQUIRE(gpu_cu.cuCtxPushCurrent(app) == CUDA_SUCCESS);
    CHECK_FAILS(omma_device_leave(&a), OMMA_ERR_INVALID_ARG, "changed inside the scope");
    CUcontext popped;
    REQUIRE(gpu_cu.cuCtxPopCurrent(&popped) == CUDA_SUCCESS);
    REQUIRE_OK(omma_device_leave(&a));
    CHECK(current() == app);

    REQUIRE(gpu_cu.cuCtxPopCurrent(&popped) == CUDA_SUCCESS && popped == app);
    CHECK(current() == NULL);
    CHECK(gpu_cu.cuCtxDestroy(app) == CUDA_SUCCESS);
    omma_device_close(dev);
}

typedef struct foreign_leave {
    omma_scope *scope;
    omma_status st;
    char msg[512];
} foreign_leave;

static void *leave_from_other_thread(void *arg)
{
    foreign_leave *f = arg;
    f->st = omma_device_leave(f->scope);
    snprintf(f->msg, sizeof f->msg, "%s", omma_last_error());
    return NULL;
}

static void leave_from_another_thread_is_reported(void)
{
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    omma_scope scope;
    REQUIRE_OK(omma_device_enter(dev, &scope));
    foreign_leave f = {.scope = &scope};
    pthread_t t;
    REQUIRE(pthread_create(&t, NULL, leave_from_other_thread, &f) == 0);
    pthread_join(t, NULL);
    CHECK(f.st == OMMA_ERR_INVALID_ARG);
    CHECK(strstr(f.msg, "another thread") != NULL);
    CHECK(current() == (CUcontext)omma_device_context(dev));
    REQUIRE_OK(omma_device_leave(&scope));
    CHECK(current() == NULL);
    omma_device_close(dev);
}

static void adopted_context(void)
{
    omma_device *primary = NULL;
    REQUIRE_OK(omma_device_open(0, &primary));
    CUdevice cu;
    REQUIRE(gpu_cu.cuDeviceGet(&cu, 0) == CUDA_SUCCESS);
    CUcontext app = NULL;
    REQUIRE(create_context(&app, cu) == CUDA_SUCCESS);
    CUcontext popped;
    REQUIRE(gpu_cu.cuCtxPopCurrent(&popped) == CUDA_SUCCESS);

    omma_device *a = NULL, *b = NULL;
    REQUIRE_OK(omma_device_adopt(app, &a));
    REQUIRE_OK(omma_device_adopt(app, &b));
    CHECK(a == b);
    CHECK(a != primary);
    CHECK(omma_device_context(a) == (void *)app);
    CHECK(omma_device_ordinal(a) == 0);
    omma_device_info info;
    CHECK(omma_device_get_info(a, &info) == OMMA_OK && info.adopted == 1);

    /* Scopes over the two contexts nest and unwind. */
    omma_scope s1, s2;
    REQUIRE_OK(omma_device_enter(primary, &s1));
    REQUIRE_OK(omma_device_enter(a, &s2));
    CHECK(current() == app);
    /* omma's own work runs in the adopted context. */
    CUdeviceptr d = 0;
    CHECK(gpu_mem_alloc(a, 4096, &d) == OMMA_OK);
    CUcontext owner = NULL;
    CUresult rc = gpu_cu.cuPointerGetAttribute(&owner, CU_POINTER_ATTRIBUTE_CONTEXT, d);
    fprintf(stderr, "pool buffer of the adopted device: context attribute rc %d, %p (app %p)\n",
            (int)rc, (void *)owner, (void *)app);
    CHECK(gpu_mem_free(a, d) == OMMA_OK);
    REQUIRE_OK(omma_device_leave(&s2));
    CHECK(current() == (CUcontext)omma_device_context(primary));
    REQUIRE_OK(omma_device_leave(&s1));
    omma_device_close(b);
    omma_device_close(a);

    /* omma did not destroy it: still usable. */
    REQUIRE(gpu_cu.cuCtxPushCurrent(app) == CUDA_SUCCESS);
    CUdeviceptr p = 0;
    CHECK(gpu_cu.cuMemAlloc(&p, 4096) == CUDA_SUCCESS);
    CHECK(gpu_cu.cuMemFree(p) == CUDA_SUCCESS);
    REQUIRE(gpu_cu.cuCtxPopCurrent(&popped) == CUDA_SUCCESS);
    CHECK(gpu_cu.cuCtxDestroy(app) == CUDA_SUCCESS);

    /* Adopting the primary context is opening the device. */
    omma_device *same = NULL;
    REQUIRE_OK(omma_device_adopt(omma_device_context(primary), &same));
    CHECK(same == primary);
    omma_device_close(same);
    omma_device_close(primary);
}

int main(void)
{
    gpu_test_require_device();
    RUN(schedule_set_before_first_use);
    RUN(open_returns_one_object_per_ordinal);
    RUN(device_facts);
    RUN(invalid_ordinal_is_no_device);
    RUN(sixteen_threads_share_one_context);
    RUN(nested_scopes);
    RUN(call_helper);
    RUN(host_context_is_restored);
    RUN(out_of_order_leave_is_reported);
    RUN(leave_from_another_thread_is_reported);
    RUN(adopted_context);
    return testing_finish();
}
