#define _POSIX_C_SOURCE 200809L /* clock_gettime, pthread_condattr_setclock */
/* The GPU frame ring of one camera (see frame_ring.h): device slots and
 * events around the pure slot bookkeeping of frame_ring_slots.h. The mutex
 * guards the bookkeeping only; CUDA calls that enqueue work (copies, event
 * records, stream waits) run outside it, on slots the calling side owns
 * (WRITING for the producer, TAKEN for the consumer). cuEventQuery, which
 * never blocks, runs under it. */
#include "runtime/frame_ring.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"
#include "gpu/check.h"
#include "gpu/memory.h"
#include "gpu/stream_pool.h"
#include "ipc/bus_publisher.h"
#include "omma/log.h"
#include "runtime/frame_ring_slots.h"
#include "vision/frame.h"

#define MAX_SIDE 32768
/* Slot starts are aligned like a fresh allocation, for the kernels' loads. */
#define SLOT_ALIGN 256

struct rt_ring {
    omma_device *dev;
    rt_ring_format fmt;
    int planes; /* planes the format uses */
    size_t plane_offset[3]; /* within a slot */
    size_t row_bytes[3], rows[3];
    size_t frame_bytes; /* all planes, packed */
    size_t slot_stride; /* frame_bytes rounded up to SLOT_ALIGN */
    CUdeviceptr base; /* slots * slot_stride bytes; 0 for a reference ring */
    int by_ref; /* rt_ring_create_ref: slots hold the producer's frames */
    omma_frame ref[RT_RING_MAX_SLOTS]; /* by_ref: the frame put in the slot */
    CUevent ref_ready[RT_RING_MAX_SLOTS]; /* by_ref: its event (may be NULL) */
    CUevent ready[RT_RING_MAX_SLOTS];
    CUstream ready_on[RT_RING_MAX_SLOTS]; /* the stream ready[i] was last recorded on
                                           * (the producer's) */
    CUevent done[RT_RING_MAX_SLOTS];
    bus_pub *bus; /* rt_ring_create_bus: the slots' memory is the bus's,
                   * shared with its subscribers */
    int bus_camera;

    pthread_mutex_t lock;
    pthread_cond_t freed; /* a slot was released, or close */
    pthread_cond_t published; /* a frame was published, or close */
    rt_slots s; /* guarded by lock */
    uint64_t blocked_puts, blocked_ns, timeouts; /* guarded by lock */

    int last_written; /* the slot of the last upload enqueued (-1: none) */
    atomic_int in_put, in_take; /* one producer, one consumer */
};

static const char *format_name(omma_pixel_format f)
{
    static const char *const names[] = {"RGB", "BGR", "RGBA", "BGRA", "NV12", "I420"};
    return (int)f >= 0 && f < OMMA_PIXEL_FORMAT_COUNT ? names[f] : "unknown-format";
}

const char *rt_ring_policy_name(rt_ring_policy policy)
{
    switch (policy) {
    case RT_RING_KEEP_NEWEST:
        return "keep-newest";
    case RT_RING_BLOCK:
        return "block";
    default:
        return "unknown";
    }
}

int rt_ring_slots(const rt_ring *ring)
{
    return ring ? ring->s.n : 0;
}

rt_ring_format rt_ring_get_format(const rt_ring *ring)
{
    return ring ? ring->fmt : (rt_ring_format){0};
}

size_t rt_ring_frame_bytes(const rt_ring *ring)
{
    return ring ? ring->frame_bytes : 0;
}

/* The device frame over slot i. */
static omma_frame slot_frame(const rt_ring *ring, int i)
{
    if (ring->by_ref)
        return ring->ref[i];
    omma_frame f = {0};
    f.width = ring->fmt.width;
    f.height = ring->fmt.height;
    f.format = ring->fmt.format;
    f.memory = OMMA_MEMORY_DEVICE;
    CUdeviceptr slot = ring->base + (CUdeviceptr)i * ring->slot_stride;
    for (int p = 0; p < ring->planes; p++) {
        f.planes[p] = (const uint8_t *)(uintptr_t)(slot + ring->plane_offset[p]);
        f.pitch[p] = (int)ring->row_bytes[p];
    }
    return f;
}

static void free_ring(rt_ring *ring)
{
    for (int i = 0; i < RT_RING_MAX_SLOTS; i++) {
        gpu_event_release(ring->dev, ring->ready[i]);
        gpu_event_release(ring->dev, ring->done[i]);
    }
    if (!ring->bus)
        gpu_mem_free(ring->dev, ring->base);
    pthread_cond_destroy(&ring->published);
    pthread_cond_destroy(&ring->freed);
    pthread_mutex_destroy(&ring->lock);
    free(ring);
}

static omma_status init_sync(rt_ring *ring)
{
    if (pthread_mutex_init(&ring->lock, NULL) != 0)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "frame ring: pthread_mutex_init");
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "frame ring: pthread_condattr_init");
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&ring->freed, &attr);
    if (rc == 0)
        rc = pthread_cond_init(&ring->published, &attr);
    pthread_condattr_destroy(&attr);
    if (rc != 0)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "frame ring: pthread_cond_init");
    return OMMA_OK;
}

/* Leaves the scope, keeping an earlier failure's status and detail. */
static omma_status leave_keep(omma_scope *scope, omma_status st)
{
    omma_status left = omma_device_leave(scope);
    return st != OMMA_OK ? st : left;
}

static int bus_busy(void *ctx, int slot)
{
    rt_ring *ring = ctx;
    return bus_pub_slot_busy(ring->bus, ring->bus_camera, slot);
}

static omma_status create(omma_device *dev, int slots, const rt_ring_format *fmt,
                          rt_ring_policy policy, int by_ref, bus_pub *bus, int bus_camera,
                          const char *bus_name, rt_ring **out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_ring_create: out is NULL");
    *out = NULL;
    if (!dev || !fmt)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_ring_create: %s is NULL",
                         dev ? "format" : "device");
    if (slots < 1 || slots > RT_RING_MAX_SLOTS)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_ring_create: %d slots is not in 1..%d", slots,
                         RT_RING_MAX_SLOTS);
    if (fmt->width <= 0 || fmt->height <= 0 || fmt->width > MAX_SIDE || fmt->height > MAX_SIDE)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_ring_create: frame size %dx%d is not in 1..%d",
                         fmt->width, fmt->height, MAX_SIDE);
    if ((int)fmt->format < 0 || fmt->format >= OMMA_PIXEL_FORMAT_COUNT)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_ring_create: unknown pixel format %d",
                         (int)fmt->format);
    if ((int)policy < 0 || policy >= RT_RING_POLICY_COUNT)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_ring_create: unknown policy %d", (int)policy);

    rt_ring *ring = calloc(1, sizeof *ring);
    if (!ring)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "rt_ring_create: ring state");
    ring->dev = dev;
    ring->fmt = *fmt;
    ring->by_ref = by_ref;
    ring->last_written = -1;
    rt_slots_init(&ring->s, slots, policy);
    omma_frame shape = {.width = fmt->width, .height = fmt->height, .format = fmt->format};
    for (int p = 0; p < 3; p++) {
        ring->row_bytes[p] = (size_t)vis_frame_row_bytes(&shape, p);
        ring->rows[p] = (size_t)vis_frame_plane_rows(&shape, p);
        if (ring->row_bytes[p] == 0)
            break;
        ring->planes = p + 1;
        ring->plane_offset[p] = ring->frame_bytes;
        ring->frame_bytes += ring->row_bytes[p] * ring->rows[p];
    }
    ring->slot_stride = (ring->frame_bytes + SLOT_ALIGN - 1) / SLOT_ALIGN * SLOT_ALIGN;

    omma_status st = init_sync(ring);
    if (st != OMMA_OK) {
        free(ring); /* on Linux a mutex or condvar holds no resource to destroy */
        return st;
    }
    if (bus) {
        /* The bus owns the slots' memory: its subscribers map it. */
        bus_pub_slots shared;
        omma_scope scope;
        st = omma_device_enter(dev, &scope);
        if (st == OMMA_OK) {
            st = bus_pub_add_camera(bus, bus_camera, bus_name, dev, slots, fmt->width, fmt->height,
                                    fmt->format, ring->frame_bytes, ring->slot_stride,
                                    policy == RT_RING_BLOCK, &shared);
            st = leave_keep(&scope, st);
        }
        if (st == OMMA_OK) {
            ring->bus = bus;
            ring->bus_camera = bus_camera;
            ring->base = shared.base;
            ring->s.busy = bus_busy;
            ring->s.busy_ctx = ring;
        }
    } else if (!by_ref) {
        st = gpu_mem_alloc(dev, ring->slot_stride * (size_t)slots, &ring->base);
    }
    for (int i = 0; i < slots && st == OMMA_OK; i++) {
        st = gpu_event_acquire(dev, GPU_EVENT_SYNC, &ring->ready[i]);
        if (st == OMMA_OK)
            st = gpu_event_acquire(dev, GPU_EVENT_SYNC, &ring->done[i]);
    }
    if (st != OMMA_OK) {
        free_ring(ring);
        return st;
    }
    *out = ring;
    return OMMA_OK;
}

omma_status rt_ring_create(omma_device *dev, int slots, const rt_ring_format *fmt,
                           rt_ring_policy policy, rt_ring **out)
{
    return create(dev, slots, fmt, policy, 0, NULL, 0, NULL, out);
}

omma_status rt_ring_create_bus(omma_device *dev, int slots, const rt_ring_format *fmt,
                               rt_ring_policy policy, bus_pub *bus, int camera, const char *name,
                               rt_ring **out)
{
    if (!bus) {
        if (out)
            *out = NULL;
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_ring_create_bus: bus is NULL");
    }
    return create(dev, slots, fmt, policy, 0, bus, camera, name, out);
}

omma_status rt_ring_create_ref(omma_device *dev, int slots, const rt_ring_format *fmt,
                               rt_ring_policy policy, rt_ring **out)
{
    return create(dev, slots, fmt, policy, 1, NULL, 0, NULL, out);
}

/* ---- producer ----------------------------------------------------------- */

static int done_query(void *ctx, int slot)
{
    rt_ring *ring = ctx;
    /* An error other than NOT_READY means a broken context: call the slot
     * done and let the next enqueue report the error. */
    return gpu_cu.cuEventQuery(ring->done[slot]) != CUDA_ERROR_NOT_READY;
}

static omma_status check_frame(const rt_ring *ring, const omma_frame *f, omma_memory memory)
{
    if (ring->by_ref != (memory == OMMA_MEMORY_DEVICE))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         ring->by_ref ? "rt_ring_put: a reference ring takes device frames "
                                        "(rt_ring_put_device)"
                                      : "rt_ring_put_device: this ring uploads host frames "
                                        "(rt_ring_put); reference rings take device frames");
    if (f->width != ring->fmt.width || f->height != ring->fmt.height ||
        f->format != ring->fmt.format)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "rt_ring_put: the frame is %dx%d %s but the ring holds %dx%d %s frames",
                         f->width, f->height, format_name(f->format), ring->fmt.width,
                         ring->fmt.height, format_name(ring->fmt.format));
    if (f->memory != memory)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         memory == OMMA_MEMORY_HOST
                             ? "rt_ring_put: the frame is in device memory; the ring uploads "
                               "host frames"
                             : "rt_ring_put_device: the frame is in host memory");
    return vis_frame_check(f);
}

/* Planes back to back with packed rows, as in a slot: one copy. */
static int is_packed(const rt_ring *ring, const omma_frame *f)
{
    for (int p = 0; p < ring->planes; p++)
        if ((size_t)f->pitch[p] != ring->row_bytes[p] ||
            f->planes[p] != f->planes[0] + ring->plane_offset[p])
            return 0;
    return 1;
}

/* Enqueues the copy of f (host memory: an upload; device memory: a
 * device-to-device copy after `f_ready`) into WRITING slot i (frame seq)
 * on stream (context current); a bus announces the frame once the copy has
 * run. */
/* 1 when f's planes follow one another at one pitch, each row as wide as
 * the slot's, as the slot's do (NVDEC's NV12 surfaces: the chroma rows
 * after the luma's): one 2D copy of *rows rows then copies the frame. */
static int stacked_rows(const rt_ring *ring, const omma_frame *f, size_t *rows)
{
    size_t n = 0;
    for (int p = 0; p < ring->planes; p++) {
        if (ring->row_bytes[p] != ring->row_bytes[0] || f->pitch[p] != f->pitch[0] ||
            ring->plane_offset[p] != ring->row_bytes[0] * n ||
            f->planes[p] != f->planes[0] + (size_t)f->pitch[0] * n)
            return 0;
        n += ring->rows[p];
    }
    *rows = n;
    return ring->planes > 1;
}

static omma_status upload(rt_ring *ring, int i, uint64_t seq, uint64_t capture_ns, int after_done,
                          const omma_frame *f, CUevent f_ready, CUstream stream)
{
    /* The slot's previous upload may still be in flight (a frame dropped
     * before it was taken), maybe on another stream; on this one it is
     * ordered already (a camera puts on its decoder's or upload stream). */
    if (ring->ready_on[i] != stream)
        OMMA_TRY(OMMA_CK(gpu_cu.cuStreamWaitEvent(stream, ring->ready[i], 0)));
    if (after_done)
        OMMA_TRY(OMMA_CK(gpu_cu.cuStreamWaitEvent(stream, ring->done[i], 0)));
    CUdeviceptr slot = ring->base + (CUdeviceptr)i * ring->slot_stride;
    if (f->memory == OMMA_MEMORY_DEVICE && f_ready)
        OMMA_TRY(OMMA_CK(gpu_cu.cuStreamWaitEvent(stream, f_ready, 0)));
    size_t rows = 0;
    if (f->memory == OMMA_MEMORY_DEVICE && is_packed(ring, f)) {
        OMMA_TRY(gpu_copy_d2d_async(ring->dev, slot, (CUdeviceptr)(uintptr_t)f->planes[0],
                                    ring->frame_bytes, stream));
    } else if (f->memory == OMMA_MEMORY_DEVICE && stacked_rows(ring, f, &rows)) {
        OMMA_TRY(gpu_copy_d2d_2d_async(ring->dev, slot, ring->row_bytes[0],
                                       (CUdeviceptr)(uintptr_t)f->planes[0], (size_t)f->pitch[0],
                                       ring->row_bytes[0], rows, stream));
    } else if (f->memory == OMMA_MEMORY_DEVICE) { /* a decoder's pitched surface */
        for (int p = 0; p < ring->planes; p++)
            OMMA_TRY(gpu_copy_d2d_2d_async(ring->dev, slot + ring->plane_offset[p],
                                           ring->row_bytes[p], (CUdeviceptr)(uintptr_t)f->planes[p],
                                           (size_t)f->pitch[p], ring->row_bytes[p], ring->rows[p],
                                           stream));
    } else if (is_packed(ring, f)) {
        OMMA_TRY(gpu_copy_h2d_async(ring->dev, slot, f->planes[0], ring->frame_bytes, stream));
    } else {
        for (int p = 0; p < ring->planes; p++)
            OMMA_TRY(gpu_copy_h2d_2d_async(ring->dev, slot + ring->plane_offset[p],
                                           ring->row_bytes[p], f->planes[p], (size_t)f->pitch[p],
                                           ring->row_bytes[p], ring->rows[p], stream));
    }
    OMMA_TRY(OMMA_CK(gpu_cu.cuEventRecord(ring->ready[i], stream)));
    ring->ready_on[i] = stream;
    if (ring->bus)
        OMMA_TRY(bus_pub_frame_ready(ring->bus, ring->bus_camera, i, seq, capture_ns, stream));
    return OMMA_OK;
}

static struct timespec deadline_after(int timeout_ms)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += timeout_ms / 1000;
    t.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

/* Under the lock: the plan for one frame, waiting (BLOCK) for a slot. */
/* KEEP_NEWEST: the last frame's upload has not run yet (the copy engine is
 * behind its work): a new upload would only queue behind it. */
static int upload_behind(const rt_ring *ring)
{
    return ring->s.policy == RT_RING_KEEP_NEWEST && !ring->by_ref && !ring->s.closed &&
           ring->last_written >= 0 &&
           gpu_cu.cuEventQuery(ring->ready[ring->last_written]) == CUDA_ERROR_NOT_READY;
}

/* Under the lock: the slots' plan for one frame. A published ring holds
 * the bus's lock from the busy checks to the claim of the chosen slot. */
static rt_put_plan begin_put(rt_ring *ring)
{
    if (!ring->bus)
        return rt_slots_begin_put(&ring->s, done_query, ring);
    bus_pub_lock(ring->bus);
    rt_put_plan p = rt_slots_begin_put(&ring->s, done_query, ring);
    if (p.kind == RT_PUT_WRITE || p.kind == RT_PUT_WRITE_AFTER_DONE)
        bus_pub_slot_write(ring->bus, ring->bus_camera, p.slot, p.seq);
    bus_pub_unlock(ring->bus);
    return p;
}

static omma_status plan_put(rt_ring *ring, int timeout_ms, rt_put_plan *plan)
{
    if (upload_behind(ring)) {
        *plan = rt_slots_reject(&ring->s);
        return OMMA_OK;
    }
    *plan = begin_put(ring);
    if (plan->kind != RT_PUT_WAIT)
        return OMMA_OK;
    uint64_t t0 = core_now_ns();
    struct timespec deadline = deadline_after(timeout_ms > 0 ? timeout_ms : 0);
    int timed_out = timeout_ms == 0;
    ring->blocked_puts += !timed_out;
    while (plan->kind == RT_PUT_WAIT && !timed_out) {
        int rc;
        if (ring->bus) {
            /* A subscriber's release does not signal the ring: look again
             * every millisecond. */
            struct timespec soon = deadline_after(1);
            int last = timeout_ms >= 0 &&
                       (soon.tv_sec > deadline.tv_sec ||
                        (soon.tv_sec == deadline.tv_sec && soon.tv_nsec >= deadline.tv_nsec));
            rc = pthread_cond_timedwait(&ring->freed, &ring->lock, last ? &deadline : &soon);
            if (rc == ETIMEDOUT && !last)
                rc = 0;
        } else {
            rc = timeout_ms < 0 ? pthread_cond_wait(&ring->freed, &ring->lock)
                                : pthread_cond_timedwait(&ring->freed, &ring->lock, &deadline);
        }
        timed_out = rc == ETIMEDOUT;
        *plan = begin_put(ring);
    }
    ring->blocked_ns += core_now_ns() - t0;
    if (plan->kind == RT_PUT_WAIT) {
        ring->timeouts++;
        return OMMA_FAIL(OMMA_ERR_TIMEOUT,
                         "rt_ring_put: no free slot within %d ms (%d slots, all held by the "
                         "consumer or waiting to be taken)",
                         timeout_ms, ring->s.n);
    }
    return OMMA_OK;
}

/* rt_ring_put and rt_ring_put_copy: f in host or device memory. */
static omma_status put_copy(rt_ring *ring, const char *fn, const omma_frame *f, CUevent f_ready,
                            CUstream stream, uint64_t capture_ns, int timeout_ms)
{
    if (atomic_exchange(&ring->in_put, 1))
        return OMMA_FAIL(OMMA_ERR_BUSY,
                         "%s: another thread is putting into this ring (one "
                         "producer at a time)",
                         fn);
    omma_scope scope;
    omma_status st = omma_device_enter(ring->dev, &scope);
    if (st != OMMA_OK) {
        atomic_store(&ring->in_put, 0);
        return st;
    }
    rt_put_plan plan;
    pthread_mutex_lock(&ring->lock);
    st = plan_put(ring, timeout_ms, &plan);
    pthread_mutex_unlock(&ring->lock);
    if (st == OMMA_OK && plan.kind == RT_PUT_CLOSED)
        st = OMMA_FAIL(OMMA_ERR_CLOSED, "%s: the ring is closed", fn);
    if (st == OMMA_OK && (plan.kind == RT_PUT_WRITE || plan.kind == RT_PUT_WRITE_AFTER_DONE)) {
        st = upload(ring, plan.slot, plan.seq, capture_ns, plan.kind == RT_PUT_WRITE_AFTER_DONE, f,
                    f_ready, stream);
        if (st != OMMA_OK && ring->bus)
            bus_pub_slot_unwritten(ring->bus, ring->bus_camera, plan.slot, plan.seq);
        pthread_mutex_lock(&ring->lock);
        rt_slots_end_put(&ring->s, plan.slot, capture_ns, st == OMMA_OK);
        if (st == OMMA_OK)
            ring->last_written = plan.slot;
        pthread_cond_signal(&ring->published);
        pthread_mutex_unlock(&ring->lock);
    }
    st = leave_keep(&scope, st);
    atomic_store(&ring->in_put, 0);
    return st;
}

omma_status rt_ring_put(rt_ring *ring, const omma_frame *host_frame, CUstream upload_stream,
                        uint64_t capture_ns, int timeout_ms)
{
    if (!ring || !host_frame)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_ring_put: %s is NULL", ring ? "frame" : "ring");
    OMMA_TRY(check_frame(ring, host_frame, OMMA_MEMORY_HOST));
    return put_copy(ring, "rt_ring_put", host_frame, NULL, upload_stream, capture_ns, timeout_ms);
}

omma_status rt_ring_put_copy(rt_ring *ring, const omma_frame *device_frame, CUevent ready,
                             CUstream stream, uint64_t capture_ns, int timeout_ms)
{
    if (!ring || !device_frame)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_ring_put_copy: %s is NULL",
                         ring ? "frame" : "ring");
    if (ring->by_ref)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "rt_ring_put_copy: a reference ring takes frames by reference "
                         "(rt_ring_put_device)");
    if (device_frame->memory != OMMA_MEMORY_DEVICE)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "rt_ring_put_copy: the frame is in host memory");
    if (device_frame->width != ring->fmt.width || device_frame->height != ring->fmt.height ||
        device_frame->format != ring->fmt.format)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "rt_ring_put_copy: the frame is %dx%d %s but the ring holds %dx%d %s "
                         "frames",
                         device_frame->width, device_frame->height,
                         format_name(device_frame->format), ring->fmt.width, ring->fmt.height,
                         format_name(ring->fmt.format));
    for (int p = 0; p < ring->planes; p++)
        if (!device_frame->planes[p] || (size_t)device_frame->pitch[p] < ring->row_bytes[p])
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                             "rt_ring_put_copy: plane %d of the device frame is %s", p,
                             device_frame->planes[p] ? "narrower than its rows" : "NULL");
    return put_copy(ring, "rt_ring_put_copy", device_frame, ready, stream, capture_ns, timeout_ms);
}

omma_status rt_ring_put_device(rt_ring *ring, const omma_frame *device_frame, CUevent ready,
                               uint64_t capture_ns, int timeout_ms)
{
    if (!ring || !device_frame)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_ring_put_device: %s is NULL",
                         ring ? "frame" : "ring");
    OMMA_TRY(check_frame(ring, device_frame, OMMA_MEMORY_DEVICE));
    if (atomic_exchange(&ring->in_put, 1))
        return OMMA_FAIL(OMMA_ERR_BUSY, "rt_ring_put_device: another thread is putting into "
                                        "this ring (one producer at a time)");
    omma_scope scope; /* for the done events' queries */
    omma_status st = omma_device_enter(ring->dev, &scope);
    if (st != OMMA_OK) {
        atomic_store(&ring->in_put, 0);
        return st;
    }
    rt_put_plan plan;
    pthread_mutex_lock(&ring->lock);
    st = plan_put(ring, timeout_ms, &plan);
    if (st == OMMA_OK && (plan.kind == RT_PUT_WRITE || plan.kind == RT_PUT_WRITE_AFTER_DONE)) {
        /* Only the reference is written: nothing waits on the GPU. */
        ring->ref[plan.slot] = *device_frame;
        ring->ref_ready[plan.slot] = ready;
        rt_slots_end_put(&ring->s, plan.slot, capture_ns, 1);
        pthread_cond_signal(&ring->published);
    }
    pthread_mutex_unlock(&ring->lock);
    if (st == OMMA_OK && plan.kind == RT_PUT_CLOSED)
        st = OMMA_FAIL(OMMA_ERR_CLOSED, "rt_ring_put_device: the ring is closed");
    st = leave_keep(&scope, st);
    atomic_store(&ring->in_put, 0);
    return st;
}

/* ---- consumer ----------------------------------------------------------- */

static omma_status consumer_enter(rt_ring *ring, const char *fn)
{
    if (atomic_exchange(&ring->in_take, 1))
        return OMMA_FAIL(OMMA_ERR_BUSY,
                         "%s: another thread is taking from or releasing to this "
                         "ring (one consumer at a time)",
                         fn);
    return OMMA_OK;
}

/* Under the lock: hands over slot i (TAKEN). */
static void fill_item(const rt_ring *ring, int i, rt_ring_item *out)
{
    out->has_frame = 1;
    out->frame = slot_frame(ring, i);
    out->seq = ring->s.slot[i].seq;
    out->capture_ns = ring->s.slot[i].capture_ns;
    out->ready = ring->by_ref ? ring->ref_ready[i] : ring->ready[i];
    out->slot_ = i;
}

static omma_status take(rt_ring *ring, rt_ring_item *out, int wait, int timeout_ms, const char *fn)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: item is NULL", fn);
    *out = (rt_ring_item){.slot_ = -1};
    if (!ring)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: ring is NULL", fn);
    OMMA_TRY(consumer_enter(ring, fn));
    struct timespec deadline = deadline_after(timeout_ms > 0 ? timeout_ms : 0);
    int slot = -1;
    pthread_mutex_lock(&ring->lock);
    rt_take_kind k = rt_slots_take(&ring->s, &slot);
    while (k == RT_TAKE_NONE && wait && timeout_ms != 0) {
        int rc = timeout_ms < 0 ? pthread_cond_wait(&ring->published, &ring->lock)
                                : pthread_cond_timedwait(&ring->published, &ring->lock, &deadline);
        k = rt_slots_take(&ring->s, &slot);
        if (rc == ETIMEDOUT)
            break;
    }
    if (k == RT_TAKE_FRAME) {
        fill_item(ring, slot, out);
        out->take_again = ring->s.closed || rt_slots_count(&ring->s, RT_SLOT_PUBLISHED) > 0;
    }
    pthread_mutex_unlock(&ring->lock);
    atomic_store(&ring->in_take, 0);
    if (k == RT_TAKE_CLOSED)
        return OMMA_FAIL(OMMA_ERR_CLOSED, "%s: the ring is closed and every frame was taken", fn);
    return OMMA_OK;
}

omma_status rt_ring_take(rt_ring *ring, rt_ring_item *out)
{
    return take(ring, out, 0, 0, "rt_ring_take");
}

omma_status rt_ring_take_wait(rt_ring *ring, rt_ring_item *out, int timeout_ms)
{
    return take(ring, out, 1, timeout_ms, "rt_ring_take_wait");
}

omma_status rt_ring_release(rt_ring *ring, rt_ring_item *item, CUstream stream)
{
    if (!ring || !item)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_ring_release: %s is NULL",
                         ring ? "item" : "ring");
    OMMA_TRY(consumer_enter(ring, "rt_ring_release"));
    int i = item->slot_;
    pthread_mutex_lock(&ring->lock);
    /* Only this thread moves a TAKEN slot on, so the answer holds after
     * unlocking. */
    int ok = item->has_frame && rt_slots_is_taken(&ring->s, i, item->seq);
    pthread_mutex_unlock(&ring->lock);
    omma_status st = OMMA_OK;
    if (!ok) {
        st = OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                       "rt_ring_release: the item (slot %d, seq %llu) is not a frame taken from "
                       "this ring (never taken, or released already)",
                       i, (unsigned long long)item->seq);
    } else {
        omma_scope scope;
        st = omma_device_enter(ring->dev, &scope);
        if (st == OMMA_OK)
            st = leave_keep(&scope, OMMA_CK(gpu_cu.cuEventRecord(ring->done[i], stream)));
    }
    if (st == OMMA_OK) {
        pthread_mutex_lock(&ring->lock);
        rt_slots_release(&ring->s, i, item->seq);
        pthread_cond_signal(&ring->freed);
        pthread_mutex_unlock(&ring->lock);
        *item = (rt_ring_item){.slot_ = -1};
    }
    atomic_store(&ring->in_take, 0);
    return st;
}

/* ---- both --------------------------------------------------------------- */

void rt_ring_close(rt_ring *ring)
{
    if (!ring)
        return;
    pthread_mutex_lock(&ring->lock);
    rt_slots_close(&ring->s);
    pthread_cond_broadcast(&ring->freed);
    pthread_cond_broadcast(&ring->published);
    pthread_mutex_unlock(&ring->lock);
}

void rt_ring_destroy(rt_ring *ring)
{
    if (!ring)
        return;
    rt_ring_close(ring);
    int held = rt_slots_count(&ring->s, RT_SLOT_TAKEN);
    omma_scope scope;
    if (omma_device_enter(ring->dev, &scope) == OMMA_OK) {
        if (held) {
            omma_log(OMMA_LOG_WARN,
                     "frame ring destroyed with %d frame(s) taken and not released: waiting for "
                     "the whole device",
                     held);
            gpu_cu.cuCtxSynchronize();
        }
        for (int i = 0; i < ring->s.n; i++) {
            gpu_cu.cuEventSynchronize(ring->ready[i]);
            gpu_cu.cuEventSynchronize(ring->done[i]);
        }
        omma_device_leave(&scope);
    }
    free_ring(ring);
}

omma_status rt_ring_get_stats(rt_ring *ring, rt_ring_stats *out)
{
    if (!ring || !out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_ring_get_stats: %s is NULL",
                         ring ? "out" : "ring");
    pthread_mutex_lock(&ring->lock);
    const rt_slots *s = &ring->s;
    *out = (rt_ring_stats){
        .put = s->put,
        .taken = s->taken,
        .released = s->released,
        .dropped = rt_slots_dropped(s),
        .overwritten = s->overwritten,
        .skipped = s->skipped,
        .rejected = s->rejected,
        .failed = s->failed,
        .blocked_puts = ring->blocked_puts,
        .blocked_ns = ring->blocked_ns,
        .timeouts = ring->timeouts,
        .published = rt_slots_count(s, RT_SLOT_PUBLISHED),
        .held = rt_slots_count(s, RT_SLOT_TAKEN),
    };
    pthread_mutex_unlock(&ring->lock);
    return OMMA_OK;
}
