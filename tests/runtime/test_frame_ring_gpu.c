/* The frame ring on the GPU: frames with a known byte pattern go through a
 * ring from a producer thread to a consumer that makes its stream wait for
 * each slot's ready event and runs a kernel that reads the whole frame and
 * records which frame it saw and how many bytes were wrong. Checks ordering
 * and content, the drop and block policies with a slow consumer, that
 * neither side waits for the GPU on the host, that a released slot is not
 * overwritten while the consumer's kernels still read it, device frames
 * copied in one 2D copy or one per plane, close with frames
 * in flight (everything freed), and bad arguments. Label gpu: exits 77
 * without a GPU. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "core/clock.h"
#include "gpu/busy.h"
#include "gpu/driver.h"
#include "gpu/memory.h"
#include "gpu/stream_pool.h"
#include "gpu/gpu_testing.h"
#include "runtime/ring_kernels.h"
#include "runtime/frame_ring.h"

enum { W = 64, H = 48 };
#define MS 1000000ull

static const rt_ring_format NV12 = {W, H, OMMA_PIXEL_NV12};

/* What every test needs: the device, a producer and a consumer stream,
 * `n` packed NV12 frames with the pattern of frames 1..n in pinned memory,
 * and a device array where the consumer kernel writes what it saw. */
typedef struct fixture {
    omma_device *dev;
    omma_scope scope;
    CUstream up, cons;
    int n;
    size_t bytes; /* of one frame */
    uint8_t *frames;
    CUdeviceptr seen_d;
    ring_seen *seen; /* host copy */
    uint64_t seq[4096];
    int count; /* frames the consumer took */
} fixture;

static void sleep_us(long us)
{
    struct timespec t = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&t, NULL);
}

static void fill_frame(uint8_t *p, size_t bytes, uint64_t k)
{
    for (size_t i = 0; i < bytes; i++)
        p[i] = ring_pattern(k, i);
    for (int b = 0; b < 8; b++)
        p[b] = (uint8_t)(k >> (8 * b));
}

static int fixture_open(fixture *fx, int n)
{
    memset(fx, 0, sizeof *fx);
    fx->n = n;
    fx->bytes = (size_t)W * H * 3 / 2;
    if (omma_device_open(0, &fx->dev) != OMMA_OK || omma_device_enter(fx->dev, &fx->scope) ||
        gpu_stream_acquire(fx->dev, GPU_PRIORITY_NORMAL, &fx->up) ||
        gpu_stream_acquire(fx->dev, GPU_PRIORITY_NORMAL, &fx->cons) ||
        gpu_host_alloc(fx->dev, fx->bytes * (size_t)n, (void **)&fx->frames) ||
        gpu_host_alloc(fx->dev, sizeof(ring_seen) * (size_t)n, (void **)&fx->seen) ||
        gpu_mem_alloc(fx->dev, sizeof(ring_seen) * (size_t)n, &fx->seen_d)) {
        fprintf(stderr, "fixture: %s\n", omma_last_error());
        return 0;
    }
    for (int k = 1; k <= n; k++)
        fill_frame(fx->frames + (size_t)(k - 1) * fx->bytes, fx->bytes, (uint64_t)k);
    if (gpu_cu.cuMemsetD8Async(fx->seen_d, 0, sizeof(ring_seen) * (size_t)n, fx->cons) ||
        gpu_cu.cuStreamSynchronize(fx->cons))
        return 0;
    /* Warm up what loads lazily (the busy kernel's JIT, the test module),
     * so that the timings below see only the ring. */
    if (n < 2 ||
        ring_check_frame((const uint8_t *)(uintptr_t)fx->seen_d, 8, (ring_seen *)fx->seen_d + 1,
                         (cudaStream_t)fx->cons) ||
        gpu_busy_launch(fx->dev, fx->cons, 1000) ||
        gpu_cu.cuMemsetD8Async(fx->seen_d, 0, sizeof(ring_seen) * (size_t)n, fx->cons) ||
        gpu_cu.cuStreamSynchronize(fx->cons))
        return 0;
    return 1;
}

static void fixture_close(fixture *fx)
{
    if (!fx->dev)
        return;
    gpu_cu.cuStreamSynchronize(fx->up);
    gpu_cu.cuStreamSynchronize(fx->cons);
    gpu_mem_free(fx->dev, fx->seen_d);
    gpu_host_free(fx->dev, fx->seen, sizeof(ring_seen) * (size_t)fx->n);
    gpu_host_free(fx->dev, fx->frames, fx->bytes * (size_t)fx->n);
    gpu_stream_release(fx->dev, fx->up);
    gpu_stream_release(fx->dev, fx->cons);
    omma_device_leave(&fx->scope);
    omma_device_close(fx->dev);
    fx->dev = NULL;
}

/* Packed NV12 host frame k (1-based). */
static omma_frame host_frame(const fixture *fx, int k)
{
    omma_frame f = {.width = W, .height = H, .format = OMMA_PIXEL_NV12};
    f.planes[0] = fx->frames + (size_t)(k - 1) * fx->bytes;
    f.planes[1] = f.planes[0] + (size_t)W * H;
    f.pitch[0] = f.pitch[1] = W;
    return f;
}

/* Consumer step: GPU-side wait, optional slow GPU work, the check kernel
 * into seen[fx->count], release on the same stream. No host waits. */
static int consume(fixture *fx, rt_ring *ring, rt_ring_item *it, uint64_t gpu_busy_ns)
{
    int i = fx->count;
    if (i >= fx->n || !it->has_frame)
        return 0;
    if (it->frame.memory != OMMA_MEMORY_DEVICE || it->frame.width != W || it->frame.height != H ||
        it->frame.format != OMMA_PIXEL_NV12 || it->frame.pitch[0] != W || it->frame.pitch[1] != W ||
        it->frame.planes[1] != it->frame.planes[0] + (size_t)W * H ||
        it->capture_ns != it->seq * 1000) {
        fprintf(stderr, "item %d: wrong frame descriptor or capture time\n", i);
        return 0;
    }
    fx->seq[i] = it->seq;
    if (gpu_cu.cuStreamWaitEvent(fx->cons, it->ready, 0) != CUDA_SUCCESS)
        return 0;
    if (gpu_busy_ns && gpu_busy_launch(fx->dev, fx->cons, gpu_busy_ns) != OMMA_OK)
        return 0;
    if (ring_check_frame(it->frame.planes[0], fx->bytes, (ring_seen *)fx->seen_d + i,
                         (cudaStream_t)fx->cons) != cudaSuccess)
        return 0;
    if (rt_ring_release(ring, it, fx->cons) != OMMA_OK)
        return 0;
    fx->count++;
    return 1;
}

/* Takes until CLOSED; returns 0 on any failure. */
static int consume_all(fixture *fx, rt_ring *ring, uint64_t gpu_busy_ns, long host_sleep_us)
{
    uint64_t give_up = core_now_ns() + 60000 * MS;
    for (;;) {
        rt_ring_item it;
        omma_status st = rt_ring_take_wait(ring, &it, 1000);
        if (st == OMMA_ERR_CLOSED)
            return 1;
        if (st != OMMA_OK) {
            fprintf(stderr, "take: %s\n", omma_last_error());
            return 0;
        }
        if (it.has_frame && !consume(fx, ring, &it, gpu_busy_ns))
            return 0;
        if (host_sleep_us)
            sleep_us(host_sleep_us);
        if (core_now_ns() > give_up)
            return 0;
    }
}

/* Checks what the kernel saw: frame seq[i] with every byte right. */
static int seen_matches(fixture *fx)
{
    if (gpu_copy_d2h_async(fx->dev, fx->seen, fx->seen_d, sizeof(ring_seen) * (size_t)fx->n,
                           fx->cons) != OMMA_OK ||
        gpu_cu.cuStreamSynchronize(fx->cons) != CUDA_SUCCESS)
        return 0;
    int bad = 0;
    for (int i = 0; i < fx->count; i++) {
        if (fx->seen[i].k != fx->seq[i] || fx->seen[i].mismatches != 0) {
            if (bad++ < 5)
                fprintf(stderr, "frame %d: seq %llu, kernel saw frame %llu with %u wrong bytes\n",
                        i, (unsigned long long)fx->seq[i], fx->seen[i].k, fx->seen[i].mismatches);
        }
    }
    return bad == 0;
}

typedef struct producer {
    fixture *fx;
    rt_ring *ring;
    int first, last; /* frames first..last */
    long gap_us; /* between puts */
    int timeout_ms;
    int close_after; /* close the ring after the last put */
    int failures;
    omma_status last_status;
    uint64_t max_put_ns;
} producer;

static void *produce(void *arg)
{
    producer *p = arg;
    for (int k = p->first; k <= p->last; k++) {
        omma_frame f = host_frame(p->fx, k);
        uint64_t t0 = core_now_ns();
        p->last_status = rt_ring_put(p->ring, &f, p->fx->up, (uint64_t)k * 1000, p->timeout_ms);
        uint64_t dt = core_now_ns() - t0;
        p->max_put_ns = dt > p->max_put_ns ? dt : p->max_put_ns;
        if (p->last_status != OMMA_OK) {
            fprintf(stderr, "put %d: %s\n", k, omma_last_error());
            p->failures++;
        }
        if (p->gap_us)
            sleep_us(p->gap_us);
    }
    if (p->close_after)
        rt_ring_close(p->ring);
    return NULL;
}

static void check_accounting(rt_ring *ring, rt_ring_stats *out)
{
    rt_ring_stats s;
    CHECK(rt_ring_get_stats(ring, &s) == OMMA_OK);
    CHECK(s.dropped == s.overwritten + s.skipped + s.rejected + s.failed);
    CHECK(s.put == s.taken + s.dropped + (uint64_t)s.published);
    CHECK(s.released + (uint64_t)s.held == s.taken);
    *out = s;
}

/* (1) 1000 frames through 4 slots, producer and consumer in two threads:
 * every frame, in order, with its content; one host-to-device copy each. */
static void block_delivers_every_frame_in_order(void)
{
    enum { N = 1000 };
    static fixture fx;
    REQUIRE(fixture_open(&fx, N));
    rt_ring *ring = NULL;
    REQUIRE_OK(rt_ring_create(fx.dev, 4, &NV12, RT_RING_BLOCK, &ring));
    CHECK(rt_ring_slots(ring) == 4 && rt_ring_frame_bytes(ring) == fx.bytes);
    omma_transfer_counters t0, t1;
    REQUIRE_OK(omma_device_get_transfers(fx.dev, &t0));
    producer p = {&fx, ring, 1, N, 0, 5000, 1, 0, OMMA_OK, 0};
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, produce, &p) == 0);
    CHECK(consume_all(&fx, ring, 0, 0));
    pthread_join(th, NULL);
    CHECK(p.failures == 0);
    CHECK(fx.count == N);
    for (int i = 0; i < fx.count; i++)
        CHECK(fx.seq[i] == (uint64_t)i + 1);
    CHECK(seen_matches(&fx));
    REQUIRE_OK(omma_device_get_transfers(fx.dev, &t1));
    CHECK(t1.h2d_copies - t0.h2d_copies == N);
    CHECK(t1.h2d_bytes - t0.h2d_bytes == (uint64_t)N * fx.bytes);
    rt_ring_stats s;
    check_accounting(ring, &s);
    CHECK(s.put == N && s.taken == N && s.dropped == 0 && s.released == N);
    fprintf(stderr, "block: %llu puts waited %.1f ms in all\n", (unsigned long long)s.blocked_puts,
            (double)s.blocked_ns / 1e6);
    rt_ring_destroy(ring);
    fixture_close(&fx);
}

/* The same with KEEP_NEWEST and a consumer as fast as it can be: seq
 * strictly increasing, content right, the counts add up. */
static void keep_newest_delivers_increasing_frames(void)
{
    enum { N = 1000 };
    static fixture fx;
    REQUIRE(fixture_open(&fx, N));
    rt_ring *ring = NULL;
    REQUIRE_OK(rt_ring_create(fx.dev, 4, &NV12, RT_RING_KEEP_NEWEST, &ring));
    producer p = {&fx, ring, 1, N, 20, 0, 1, 0, OMMA_OK, 0};
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, produce, &p) == 0);
    CHECK(consume_all(&fx, ring, 0, 0));
    pthread_join(th, NULL);
    CHECK(p.failures == 0);
    for (int i = 1; i < fx.count; i++)
        CHECK(fx.seq[i] > fx.seq[i - 1]);
    CHECK(seen_matches(&fx));
    rt_ring_stats s;
    check_accounting(ring, &s);
    CHECK(s.put == N && s.taken == (uint64_t)fx.count && s.put == s.taken + s.dropped);
    fprintf(stderr, "keep-newest, fast consumer: %d taken, %llu dropped\n", fx.count,
            (unsigned long long)s.dropped);
    rt_ring_destroy(ring);
    fixture_close(&fx);
}

/* (2) A slow consumer (1 ms of GPU work and 1 ms of host time per frame)
 * and a producer at 10 kHz: frames are dropped and counted, never torn,
 * and the producer never waited. */
static void keep_newest_drops_for_a_slow_consumer(void)
{
    enum { N = 300 };
    static fixture fx;
    REQUIRE(fixture_open(&fx, N));
    rt_ring *ring = NULL;
    REQUIRE_OK(rt_ring_create(fx.dev, 3, &NV12, RT_RING_KEEP_NEWEST, &ring));
    producer p = {&fx, ring, 1, N, 100, 0, 1, 0, OMMA_OK, 0};
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, produce, &p) == 0);
    CHECK(consume_all(&fx, ring, 1 * MS, 1000));
    pthread_join(th, NULL);
    CHECK(p.failures == 0);
    CHECK(p.max_put_ns < 10 * MS);
    for (int i = 1; i < fx.count; i++)
        CHECK(fx.seq[i] > fx.seq[i - 1]);
    CHECK(seen_matches(&fx));
    rt_ring_stats s;
    check_accounting(ring, &s);
    CHECK(s.put == N);
    CHECK(s.taken == (uint64_t)fx.count);
    CHECK(s.dropped == s.put - s.taken);
    CHECK(s.dropped > N / 2);
    CHECK(s.blocked_puts == 0 && s.timeouts == 0);
    fprintf(stderr,
            "keep-newest, slow consumer: %llu taken, %llu dropped (%llu overwritten, %llu "
            "skipped, %llu rejected), longest put %.2f ms\n",
            (unsigned long long)s.taken, (unsigned long long)s.dropped,
            (unsigned long long)s.overwritten, (unsigned long long)s.skipped,
            (unsigned long long)s.rejected, (double)p.max_put_ns / 1e6);
    rt_ring_destroy(ring);
    fixture_close(&fx);
}

/* (3) BLOCK with the same slow consumer: nothing dropped, all in order, and
 * the producer did wait. */
static void block_never_drops_for_a_slow_consumer(void)
{
    enum { N = 150 };
    static fixture fx;
    REQUIRE(fixture_open(&fx, N));
    rt_ring *ring = NULL;
    REQUIRE_OK(rt_ring_create(fx.dev, 3, &NV12, RT_RING_BLOCK, &ring));
    producer p = {&fx, ring, 1, N, 100, 10000, 1, 0, OMMA_OK, 0};
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, produce, &p) == 0);
    CHECK(consume_all(&fx, ring, 1 * MS, 1000));
    pthread_join(th, NULL);
    CHECK(p.failures == 0);
    CHECK(fx.count == N);
    for (int i = 0; i < fx.count; i++)
        CHECK(fx.seq[i] == (uint64_t)i + 1);
    CHECK(seen_matches(&fx));
    rt_ring_stats s;
    check_accounting(ring, &s);
    CHECK(s.put == N && s.taken == N && s.dropped == 0 && s.timeouts == 0);
    CHECK(s.blocked_puts > 0 && s.blocked_ns > 0);
    rt_ring_destroy(ring);
    fixture_close(&fx);
}

/* (4) Neither side waits for the GPU on the host. The upload stream is held
 * by a 50 ms kernel: put returns at once; take + wait event + the consumer
 * kernel + release return at once, and the consumer's stream has not run
 * yet (the dependency is on the GPU); the kernel still sees frame 1. Then,
 * with the consumer's kernels still reading slot 0 for 50 ms, the producer
 * puts frame 2 into the one-slot ring: BLOCK writes it after a GPU-side wait
 * (returns at once, and the consumer's read of frame 1 is intact),
 * KEEP_NEWEST drops it (the slot is not free yet). */
static void no_host_waits_and_no_overwrite_under_the_reader(void)
{
    for (int pol = 0; pol < RT_RING_POLICY_COUNT; pol++) {
        static fixture fx;
        REQUIRE(fixture_open(&fx, 4));
        rt_ring *ring = NULL;
        REQUIRE_OK(rt_ring_create(fx.dev, 1, &NV12, (rt_ring_policy)pol, &ring));

        REQUIRE_OK(gpu_busy_launch(fx.dev, fx.up, 50 * MS));
        omma_frame f1 = host_frame(&fx, 1);
        uint64_t t0 = core_now_ns();
        REQUIRE_OK(rt_ring_put(ring, &f1, fx.up, 1000, 1000));
        uint64_t put_ns = core_now_ns() - t0;

        t0 = core_now_ns();
        rt_ring_item it;
        REQUIRE_OK(rt_ring_take(ring, &it));
        REQUIRE(it.has_frame && it.seq == 1);
        fx.seq[0] = it.seq;
        CHECK(gpu_cu.cuStreamWaitEvent(fx.cons, it.ready, 0) == CUDA_SUCCESS);
        CHECK(ring_check_frame(it.frame.planes[0], fx.bytes, (ring_seen *)fx.seen_d,
                               (cudaStream_t)fx.cons) == cudaSuccess);
        /* The consumer keeps reading slot 0 for 50 ms more. */
        CHECK(gpu_busy_launch(fx.dev, fx.cons, 50 * MS) == OMMA_OK);
        CHECK(ring_check_frame(it.frame.planes[0], fx.bytes, (ring_seen *)fx.seen_d + 1,
                               (cudaStream_t)fx.cons) == cudaSuccess);
        fx.seq[1] = 1;
        REQUIRE_OK(rt_ring_release(ring, &it, fx.cons));
        uint64_t consumer_ns = core_now_ns() - t0;
        CHECK(gpu_cu.cuStreamQuery(fx.cons) == CUDA_ERROR_NOT_READY);
        fprintf(stderr, "%s: put %.3f ms, take + wait + kernel + release %.3f ms\n",
                rt_ring_policy_name((rt_ring_policy)pol), (double)put_ns / 1e6,
                (double)consumer_ns / 1e6);
        CHECK(put_ns < 10 * MS);
        CHECK(consumer_ns < 10 * MS);

        omma_frame f2 = host_frame(&fx, 2);
        t0 = core_now_ns();
        REQUIRE_OK(rt_ring_put(ring, &f2, fx.up, 2000, 1000));
        uint64_t put2_ns = core_now_ns() - t0;
        CHECK(put2_ns < 10 * MS);
        rt_ring_stats s;
        REQUIRE_OK(rt_ring_get_stats(ring, &s));
        fx.count = 2;
        if (pol == RT_RING_BLOCK) {
            CHECK(s.dropped == 0 && s.blocked_puts == 0 && s.published == 1);
            REQUIRE_OK(rt_ring_take(ring, &it));
            REQUIRE(it.has_frame && it.seq == 2);
            CHECK(gpu_cu.cuStreamWaitEvent(fx.cons, it.ready, 0) == CUDA_SUCCESS);
            CHECK(ring_check_frame(it.frame.planes[0], fx.bytes, (ring_seen *)fx.seen_d + 2,
                                   (cudaStream_t)fx.cons) == cudaSuccess);
            fx.seq[2] = 2;
            fx.count = 3;
            REQUIRE_OK(rt_ring_release(ring, &it, fx.cons));
        } else {
            CHECK(s.rejected == 1 && s.dropped == 1 && s.published == 0);
        }
        CHECK(seen_matches(&fx)); /* frame 1 intact under both reads */
        check_accounting(ring, &s);
        rt_ring_destroy(ring);
        fixture_close(&fx);
    }
}

/* A host frame with padded rows and planes apart: one 2D copy per plane,
 * the same bytes, the same content in the slot. */
static void pitched_frames_upload_per_plane(void)
{
    static fixture fx;
    REQUIRE(fixture_open(&fx, 2));
    enum { PITCH = W + 24 };
    uint8_t *pitched = NULL;
    size_t pbytes = (size_t)PITCH * (H + H / 2) + 4096;
    REQUIRE_OK(gpu_host_alloc(fx.dev, pbytes, (void **)&pitched));
    memset(pitched, 0xEE, pbytes);
    omma_frame f = {.width = W, .height = H, .format = OMMA_PIXEL_NV12};
    f.planes[0] = pitched;
    f.planes[1] = pitched + (size_t)PITCH * H + 4096; /* not right after plane 0 */
    f.pitch[0] = f.pitch[1] = PITCH;
    const uint8_t *packed = host_frame(&fx, 1).planes[0];
    for (int y = 0; y < H + H / 2; y++) {
        uint8_t *row = (uint8_t *)(y < H ? f.planes[0] + (size_t)y * PITCH
                                         : f.planes[1] + (size_t)(y - H) * PITCH);
        memcpy(row, packed + (size_t)y * W, W);
    }
    rt_ring *ring = NULL;
    REQUIRE_OK(rt_ring_create(fx.dev, 2, &NV12, RT_RING_BLOCK, &ring));
    omma_transfer_counters t0, t1;
    REQUIRE_OK(omma_device_get_transfers(fx.dev, &t0));
    REQUIRE_OK(rt_ring_put(ring, &f, fx.up, 1000, 0));
    REQUIRE_OK(omma_device_get_transfers(fx.dev, &t1));
    CHECK(t1.h2d_copies - t0.h2d_copies == 2);
    CHECK(t1.h2d_bytes - t0.h2d_bytes == fx.bytes);
    omma_frame packed_f = host_frame(&fx, 2);
    REQUIRE_OK(rt_ring_put(ring, &packed_f, fx.up, 2000, 0));
    REQUIRE_OK(omma_device_get_transfers(fx.dev, &t0));
    CHECK(t0.h2d_copies - t1.h2d_copies == 1);
    rt_ring_close(ring);
    CHECK(consume_all(&fx, ring, 0, 0));
    CHECK(fx.count == 2 && fx.seq[0] == 1 && fx.seq[1] == 2);
    CHECK(seen_matches(&fx));
    rt_ring_destroy(ring);
    gpu_host_free(fx.dev, pitched, pbytes);
    fixture_close(&fx);
}

/* Device frames (a decoder's pitched surfaces) copied into the slots on
 * the GPU: planes stacked at one pitch as NVDEC's NV12 surfaces are (the
 * chroma rows right after the luma's) in one 2D copy, planes apart in one
 * per plane; the same content in the slot either way. */
static void device_frames_copy_once_or_per_plane(void)
{
    static fixture fx;
    REQUIRE(fixture_open(&fx, 2));
    enum { PITCH = W + 64, APART = 8192 };
    size_t dbytes = (size_t)PITCH * (H + H / 2) + APART;
    CUdeviceptr d[2] = {0, 0};
    omma_frame f[2];
    for (int k = 0; k < 2; k++) {
        REQUIRE_OK(gpu_mem_alloc(fx.dev, dbytes, &d[k]));
        f[k] = (omma_frame){
            .width = W, .height = H, .format = OMMA_PIXEL_NV12, .memory = OMMA_MEMORY_DEVICE};
        f[k].planes[0] = (const uint8_t *)(uintptr_t)d[k];
        /* Frame 1 stacked, frame 2 with its chroma further on. */
        f[k].planes[1] = f[k].planes[0] + (size_t)PITCH * H + (k ? APART : 0);
        f[k].pitch[0] = f[k].pitch[1] = PITCH;
        const uint8_t *packed = host_frame(&fx, k + 1).planes[0];
        for (int p = 0; p < 2; p++) {
            CUDA_MEMCPY2D c;
            memset(&c, 0, sizeof c);
            c.srcMemoryType = CU_MEMORYTYPE_HOST;
            c.srcHost = packed + (p ? (size_t)W * H : 0);
            c.srcPitch = W;
            c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
            c.dstDevice = (CUdeviceptr)(uintptr_t)f[k].planes[p];
            c.dstPitch = PITCH;
            c.WidthInBytes = W;
            c.Height = p ? H / 2 : H;
            REQUIRE(gpu_cu.cuMemcpy2DAsync(&c, fx.up) == CUDA_SUCCESS);
        }
    }
    REQUIRE(gpu_cu.cuStreamSynchronize(fx.up) == CUDA_SUCCESS);
    rt_ring *ring = NULL;
    REQUIRE_OK(rt_ring_create(fx.dev, 2, &NV12, RT_RING_BLOCK, &ring));
    omma_transfer_counters t0, t1, t2;
    REQUIRE_OK(omma_device_get_transfers(fx.dev, &t0));
    REQUIRE_OK(rt_ring_put_copy(ring, &f[0], NULL, fx.up, 1000, 0));
    REQUIRE_OK(omma_device_get_transfers(fx.dev, &t1));
    REQUIRE_OK(rt_ring_put_copy(ring, &f[1], NULL, fx.up, 2000, 0));
    REQUIRE_OK(omma_device_get_transfers(fx.dev, &t2));
    CHECK(t1.d2d_copies - t0.d2d_copies == 1 && t1.d2d_bytes - t0.d2d_bytes == fx.bytes);
    CHECK(t2.d2d_copies - t1.d2d_copies == 2 && t2.d2d_bytes - t1.d2d_bytes == fx.bytes);
    CHECK(t2.h2d_bytes == t0.h2d_bytes);
    rt_ring_close(ring);
    CHECK(consume_all(&fx, ring, 0, 0));
    CHECK(fx.count == 2 && fx.seq[0] == 1 && fx.seq[1] == 2);
    CHECK(seen_matches(&fx));
    rt_ring_destroy(ring);
    gpu_cu.cuStreamSynchronize(fx.up);
    for (int k = 0; k < 2; k++)
        gpu_mem_free(fx.dev, d[k]);
    fixture_close(&fx);
}

typedef struct blocked_put {
    rt_ring *ring;
    omma_frame frame;
    CUstream stream;
    atomic_int done;
    omma_status st;
} blocked_put;

static void *put_forever(void *arg)
{
    blocked_put *b = arg;
    b->st = rt_ring_put(b->ring, &b->frame, b->stream, 7, -1);
    atomic_store(&b->done, 1);
    return NULL;
}

/* Waits until `want` puts have blocked. */
static int wait_blocked(rt_ring *ring, uint64_t want)
{
    for (int i = 0; i < 2000; i++) {
        rt_ring_stats s;
        if (rt_ring_get_stats(ring, &s) == OMMA_OK && s.blocked_puts >= want)
            return 1;
        sleep_us(1000);
    }
    return 0;
}

/* (5) close: a producer blocked in put wakes with CLOSED (a second producer
 * meanwhile gets BUSY), a put with a timeout times out, take hands out what
 * was put and then CLOSED; destroy with uploads and consumer work in flight
 * and a frame still held gives back every buffer and event. */
static void close_with_frames_in_flight_frees_everything(void)
{
    static fixture fx;
    REQUIRE(fixture_open(&fx, 8));
    omma_memory_stats m0, m1;
    gpu_pool_stats p0, p1;
    REQUIRE_OK(omma_device_get_memory_stats(fx.dev, &m0));
    gpu_pool_stats_get(fx.dev, &p0);

    rt_ring *ring = NULL;
    REQUIRE_OK(rt_ring_create(fx.dev, 1, &NV12, RT_RING_BLOCK, &ring));
    REQUIRE_OK(omma_device_get_memory_stats(fx.dev, &m1));
    gpu_pool_stats_get(fx.dev, &p1);
    CHECK(m1.live_allocations == m0.live_allocations + 1);
    CHECK(m1.pool_used >= m0.pool_used + fx.bytes);
    CHECK(p1.events_in_use == p0.events_in_use + 2);

    omma_frame f1 = host_frame(&fx, 1);
    REQUIRE_OK(rt_ring_put(ring, &f1, fx.up, 1000, 0));
    /* One slot, published: a put with a timeout gives up. */
    uint64_t t0 = core_now_ns();
    omma_frame f2 = host_frame(&fx, 2);
    CHECK_FAILS(rt_ring_put(ring, &f2, fx.up, 2000, 30), OMMA_ERR_TIMEOUT, "within 30 ms");
    CHECK(core_now_ns() - t0 >= 29 * MS);
    CHECK_FAILS(rt_ring_put(ring, &f2, fx.up, 2000, 0), OMMA_ERR_TIMEOUT, "no free slot");

    blocked_put b = {.ring = ring, .frame = f2, .stream = fx.up};
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, put_forever, &b) == 0);
    CHECK(wait_blocked(ring, 2)); /* the 30 ms put was the first */
    sleep_us(20000);
    CHECK(atomic_load(&b.done) == 0);
    CHECK_FAILS(rt_ring_put(ring, &f2, fx.up, 2000, 0), OMMA_ERR_BUSY, "one producer");
    rt_ring_close(ring);
    pthread_join(th, NULL);
    CHECK(b.st == OMMA_ERR_CLOSED);
    CHECK_FAILS(rt_ring_put(ring, &f2, fx.up, 2000, 0), OMMA_ERR_CLOSED, "closed");
    rt_ring_stats s;
    check_accounting(ring, &s);
    CHECK(s.put == 1 && s.timeouts == 2 && s.published == 1);
    rt_ring_item it;
    REQUIRE_OK(rt_ring_take(ring, &it));
    CHECK(it.has_frame && it.seq == 1);
    CHECK(consume(&fx, ring, &it, 0));
    CHECK_FAILS(rt_ring_take(ring, &it), OMMA_ERR_CLOSED, "closed");
    CHECK(it.has_frame == 0);
    CHECK_FAILS(rt_ring_take_wait(ring, &it, -1), OMMA_ERR_CLOSED, "closed");
    CHECK(seen_matches(&fx));
    rt_ring_destroy(ring);

    /* A KEEP_NEWEST ring destroyed with an upload queued behind a 30 ms
     * kernel, consumer work in flight on a released slot and a frame still
     * held. While a frame's upload has not run, newer frames are rejected
     * (the copy engine is behind), not queued behind it. */
    REQUIRE_OK(rt_ring_create(fx.dev, 4, &NV12, RT_RING_KEEP_NEWEST, &ring));
    CHECK(gpu_busy_launch(fx.dev, fx.up, 30 * MS) == OMMA_OK);
    for (int k = 1; k <= 6; k++) {
        if (k == 4) { /* upload 1 done; the stream held again */
            CHECK(gpu_cu.cuStreamSynchronize(fx.up) == CUDA_SUCCESS);
            CHECK(gpu_busy_launch(fx.dev, fx.up, 30 * MS) == OMMA_OK);
        }
        omma_frame f = host_frame(&fx, k);
        CHECK(rt_ring_put(ring, &f, fx.up, (uint64_t)k * 1000, 0) == OMMA_OK);
        if (k == 1 || k == 4) {
            REQUIRE_OK(rt_ring_take(ring, &it));
            REQUIRE(it.has_frame && it.seq == (uint64_t)k);
            CHECK(gpu_cu.cuStreamWaitEvent(fx.cons, it.ready, 0) == CUDA_SUCCESS);
            CHECK(gpu_busy_launch(fx.dev, fx.cons, 10 * MS) == OMMA_OK);
            if (k == 1)
                CHECK(rt_ring_release(ring, &it, fx.cons) == OMMA_OK);
        }
    }
    check_accounting(ring, &s);
    CHECK(s.put == 6 && s.taken == 2 && s.rejected == 4 && s.held == 1);
    CHECK(rt_ring_release(ring, &(rt_ring_item){0}, fx.cons) == OMMA_ERR_INVALID_ARG);
    rt_ring_close(ring);
    rt_ring_destroy(ring); /* it (frame 4) is still held: logged, device synchronized */
    REQUIRE_OK(omma_device_get_memory_stats(fx.dev, &m1));
    gpu_pool_stats_get(fx.dev, &p1);
    CHECK(m1.live_allocations == m0.live_allocations);
    CHECK(m1.pool_used == m0.pool_used);
    CHECK(p1.events_in_use == p0.events_in_use);
    CHECK(gpu_cu.cuStreamQuery(fx.up) == CUDA_SUCCESS); /* destroy waited */
    fixture_close(&fx);
}

typedef struct waiter {
    rt_ring *ring;
    omma_status st;
} waiter;

static void *take_forever(void *arg)
{
    waiter *w = arg;
    rt_ring_item it;
    w->st = rt_ring_take_wait(w->ring, &it, -1);
    return NULL;
}

/* take_wait: times out with no frame, wakes for a frame, wakes for close. */
static void take_wait_wakes_for_frames_and_close(void)
{
    static fixture fx;
    REQUIRE(fixture_open(&fx, 2));
    rt_ring *ring = NULL;
    REQUIRE_OK(rt_ring_create(fx.dev, 2, &NV12, RT_RING_KEEP_NEWEST, &ring));
    rt_ring_item it;
    uint64_t t0 = core_now_ns();
    REQUIRE_OK(rt_ring_take_wait(ring, &it, 20));
    CHECK(!it.has_frame && core_now_ns() - t0 >= 19 * MS);
    REQUIRE_OK(rt_ring_take(ring, &it));
    CHECK(!it.has_frame);
    producer p = {&fx, ring, 1, 1, 0, 0, 0, 0, OMMA_OK, 0};
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, produce, &p) == 0);
    REQUIRE_OK(rt_ring_take_wait(ring, &it, 5000));
    pthread_join(th, NULL);
    CHECK(it.has_frame && it.seq == 1);
    CHECK(consume(&fx, ring, &it, 0));
    waiter w = {ring, OMMA_OK};
    REQUIRE(pthread_create(&th, NULL, take_forever, &w) == 0);
    sleep_us(20000);
    rt_ring_close(ring);
    pthread_join(th, NULL);
    CHECK(w.st == OMMA_ERR_CLOSED);
    CHECK(seen_matches(&fx));
    rt_ring_destroy(ring);
    fixture_close(&fx);
}

/* (6) Bad arguments with a device. */
static void bad_arguments_are_named(void)
{
    static fixture fx;
    REQUIRE(fixture_open(&fx, 2));
    rt_ring *ring = NULL;
    CHECK_FAILS(rt_ring_create(fx.dev, 0, &NV12, RT_RING_BLOCK, &ring), OMMA_ERR_INVALID_ARG,
                "0 slots");
    CHECK(ring == NULL);
    REQUIRE_OK(rt_ring_create(fx.dev, 2, &NV12, RT_RING_BLOCK, &ring));

    omma_frame f = host_frame(&fx, 1);
    omma_frame other = f;
    other.width = 32;
    CHECK_FAILS(rt_ring_put(ring, &other, fx.up, 0, 0), OMMA_ERR_INVALID_ARG,
                "the frame is 32x48 NV12 but the ring holds 64x48 NV12 frames");
    other = f;
    other.format = OMMA_PIXEL_RGB;
    CHECK_FAILS(rt_ring_put(ring, &other, fx.up, 0, 0), OMMA_ERR_INVALID_ARG,
                "64x48 RGB but the ring holds 64x48 NV12");
    other = f;
    other.planes[1] = NULL;
    CHECK_FAILS(rt_ring_put(ring, &other, fx.up, 0, 0), OMMA_ERR_INVALID_ARG, "plane 1 is NULL");
    other = f;
    other.pitch[0] = W - 1;
    CHECK_FAILS(rt_ring_put(ring, &other, fx.up, 0, 0), OMMA_ERR_INVALID_ARG, "pitch 63");
    other = f;
    other.memory = OMMA_MEMORY_DEVICE;
    CHECK_FAILS(rt_ring_put(ring, &other, fx.up, 0, 0), OMMA_ERR_UNSUPPORTED, "device memory");
    CHECK_FAILS(rt_ring_put(ring, NULL, fx.up, 0, 0), OMMA_ERR_INVALID_ARG, "frame is NULL");
    rt_ring_stats s;
    REQUIRE_OK(rt_ring_get_stats(ring, &s));
    CHECK(s.put == 0); /* refused frames are not counted */

    REQUIRE_OK(rt_ring_put(ring, &f, fx.up, 1000, 0));
    rt_ring_item it, copy;
    REQUIRE_OK(rt_ring_take(ring, &it));
    copy = it;
    CHECK(consume(&fx, ring, &it, 0));
    CHECK(it.has_frame == 0); /* emptied by release */
    CHECK_FAILS(rt_ring_release(ring, &copy, fx.cons), OMMA_ERR_INVALID_ARG, "released already");
    CHECK_FAILS(rt_ring_release(ring, &it, fx.cons), OMMA_ERR_INVALID_ARG, "not a frame taken");
    CHECK_FAILS(rt_ring_release(ring, NULL, fx.cons), OMMA_ERR_INVALID_ARG, "item is NULL");
    CHECK_FAILS(rt_ring_take(ring, NULL), OMMA_ERR_INVALID_ARG, "item is NULL");
    CHECK_FAILS(rt_ring_get_stats(ring, NULL), OMMA_ERR_INVALID_ARG, "out is NULL");
    CHECK(seen_matches(&fx));
    check_accounting(ring, &s);
    CHECK(s.put == 1 && s.taken == 1 && s.released == 1);
    rt_ring_format got = rt_ring_get_format(ring);
    CHECK(got.width == W && got.height == H && got.format == OMMA_PIXEL_NV12);
    rt_ring_destroy(ring);
    fixture_close(&fx);
}

/* A reference ring hands over the producer's device frames and events
 * as they are: no copy, no device memory of its own. */
static void reference_ring_hands_over_device_frames(void)
{
    static fixture fx;
    REQUIRE(fixture_open(&fx, 3));
    CUdeviceptr pool = 0;
    CUevent made = NULL;
    REQUIRE(gpu_cu.cuMemAlloc(&pool, fx.bytes) == CUDA_SUCCESS);
    REQUIRE(gpu_cu.cuEventCreate(&made, CU_EVENT_DISABLE_TIMING) == CUDA_SUCCESS);
    REQUIRE(gpu_cu.cuMemcpyHtoDAsync(pool, fx.frames + 2 * fx.bytes, fx.bytes, fx.up) ==
            CUDA_SUCCESS); /* frame 3's pattern */
    REQUIRE(gpu_cu.cuEventRecord(made, fx.up) == CUDA_SUCCESS);
    omma_frame dev = host_frame(&fx, 3);
    dev.memory = OMMA_MEMORY_DEVICE;
    dev.planes[0] = (const uint8_t *)(uintptr_t)pool;
    dev.planes[1] = dev.planes[0] + (size_t)W * H;

    rt_ring *ref = NULL, *copying = NULL;
    REQUIRE_OK(rt_ring_create_ref(fx.dev, 2, &NV12, RT_RING_KEEP_NEWEST, &ref));
    REQUIRE_OK(rt_ring_create(fx.dev, 2, &NV12, RT_RING_KEEP_NEWEST, &copying));
    for (int k = 1; k <= 3; k++)
        REQUIRE_OK(rt_ring_put_device(ref, &dev, k == 3 ? made : NULL, 1000 * (uint64_t)k, 0));
    rt_ring_item it;
    REQUIRE_OK(rt_ring_take(ref, &it));
    CHECK(it.has_frame && it.seq == 3 && it.capture_ns == 3000); /* the newest */
    CHECK(it.ready == made);
    CHECK(it.frame.planes[0] == dev.planes[0] && it.frame.planes[1] == dev.planes[1]);
    CHECK(it.frame.memory == OMMA_MEMORY_DEVICE);
    CHECK(consume(&fx, ref, &it, 0)); /* the kernel reads frame 3's pattern in place */
    CHECK(seen_matches(&fx));
    rt_ring_stats s;
    check_accounting(ref, &s);
    CHECK(s.put == 3 && s.taken == 1 && s.dropped == 2);

    omma_frame host = host_frame(&fx, 1);
    CHECK_FAILS(rt_ring_put(ref, &host, fx.up, 0, 0), OMMA_ERR_UNSUPPORTED,
                "a reference ring takes device frames");
    CHECK_FAILS(rt_ring_put_device(copying, &dev, NULL, 0, 0), OMMA_ERR_UNSUPPORTED,
                "this ring uploads host frames");
    CHECK_FAILS(rt_ring_put_device(ref, &host, NULL, 0, 0), OMMA_ERR_UNSUPPORTED,
                "the frame is in host memory");
    CHECK_FAILS(rt_ring_put_device(ref, NULL, NULL, 0, 0), OMMA_ERR_INVALID_ARG, "frame is NULL");
    rt_ring_destroy(ref);
    rt_ring_destroy(copying);
    gpu_cu.cuEventDestroy(made);
    gpu_cu.cuMemFree(pool);
    fixture_close(&fx);
}

int main(void)
{
    gpu_test_require_device();
    RUN(block_delivers_every_frame_in_order);
    RUN(keep_newest_delivers_increasing_frames);
    RUN(keep_newest_drops_for_a_slow_consumer);
    RUN(block_never_drops_for_a_slow_consumer);
    RUN(no_host_waits_and_no_overwrite_under_the_reader);
    RUN(pitched_frames_upload_per_plane);
    RUN(device_frames_copy_once_or_per_plane);
    RUN(close_with_frames_in_flight_frees_everything);
    RUN(take_wait_wakes_for_frames_and_close);
    RUN(bad_arguments_are_named);
    RUN(reference_ring_hands_over_device_frames);
    return testing_finish();
}
