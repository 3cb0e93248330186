/* Private: the GPU frame ring of one camera, between the thread that
 * captures and uploads its frames (the producer) and the GPU worker that
 * runs the pipeline on them (the consumer).
 *
 * Memory. A ring holds `slots` frames of one format (width, height, pixel
 * format) in device memory, allocated once at create: one allocation for
 * the ring, each slot one contiguous range holding the frame's planes back
 * to back with packed rows (pitch = row bytes). Each slot has two CUDA
 * events from the device's pool: `ready` (recorded by the producer after
 * the upload) and `done` (recorded by the ring on the consumer's stream at
 * release). Nothing allocates after create.
 *
 * Hand-off. rt_ring_put enqueues the upload on the producer's stream (one
 * counted host-to-device copy when the host frame is packed, planes back to
 * back with pitch = row bytes; one 2D copy per plane otherwise), records
 * the slot's ready event there and publishes the slot with a sequence
 * number and the capture time. rt_ring_take hands the consumer a device
 * frame over the slot and its ready event: the consumer makes its stream
 * wait for it (cuStreamWaitEvent) and enqueues its work; it never waits on
 * the host. rt_ring_release(item, stream) records the slot's done event on
 * the consumer's stream after its last use of the slot. Neither side ever
 * waits for the GPU on the host:
 *   - a released slot is written again only once its done event has
 *     completed (cuEventQuery, non-blocking) or, in BLOCK mode when nothing
 *     else is free, after the upload stream is made to wait for that event
 *     on the GPU (cuStreamWaitEvent: the copy runs after the consumer's
 *     work, the host does not wait);
 *   - before writing a slot, the upload stream also waits for the slot's
 *     previous upload (its ready event), in case that frame was never taken
 *     and its copy, maybe on another stream, is still in flight.
 *
 * Sequence numbers. Every frame put is numbered 1, 2, 3, ... in put order,
 * dropped ones included, so a gap in what the consumer sees is the number
 * of frames lost before it.
 *
 * Policies.
 *   RT_RING_KEEP_NEWEST (live cameras): put never blocks. With no free slot
 *     the oldest published, untaken frame is overwritten (counted as
 *     overwritten and dropped); when every slot is held by the consumer
 *     (taken, or released but its done event not completed), or when the
 *     previous frame's upload has not run yet (the copy engine is behind:
 *     queueing more copies would only make every frame later), the new
 *     frame is dropped (rejected). take returns the newest published frame and
 *     drops the older untaken ones (skipped).
 *   RT_RING_BLOCK (files): nothing is ever dropped. put waits on the host,
 *     up to timeout_ms, until the consumer releases a slot; take returns
 *     frames oldest first.
 *
 * Accounting: put = taken + dropped + frames published or being written
 * now (rt_ring_stats); dropped = overwritten + skipped + rejected + failed.
 *
 * Threads. One producer thread (put) and one consumer thread (take,
 * take_wait, release) may use a ring at the same time; close may be called
 * from any thread at any time; create, destroy and get_stats from any
 * thread, destroy only once no put or take is running. A second concurrent
 * producer (or consumer) is detected and gets OMMA_ERR_BUSY. Host
 * bookkeeping is a mutex and two condition variables. Every function enters
 * the ring's device scope itself. */
#ifndef OMMA_RUNTIME_FRAME_RING_H
#define OMMA_RUNTIME_FRAME_RING_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/driver.h"
#include "omma/device.h"
#include "omma/face.h"
#include "omma/status.h"

/* Most slots a ring may have. */
#define RT_RING_MAX_SLOTS 64

typedef enum rt_ring_policy {
    RT_RING_KEEP_NEWEST = 0, /* live sources: never block, drop the oldest */
    RT_RING_BLOCK, /* files: block the producer, never drop */
    RT_RING_POLICY_COUNT
} rt_ring_policy;

/* The frames a ring holds: size 1..32768 each side, an omma_pixel_format. */
typedef struct rt_ring_format {
    int width, height;
    omma_pixel_format format;
} rt_ring_format;

typedef struct rt_ring rt_ring;

/* A frame handed to the consumer by rt_ring_take. has_frame is 0 when take
 * found nothing ready (the other fields are then zero). */
typedef struct rt_ring_item {
    int has_frame;
    omma_frame frame; /* memory = OMMA_MEMORY_DEVICE, planes into the slot,
                       * pitch = row bytes; valid until release */
    uint64_t seq; /* 1, 2, 3, ... in put order (gaps = frames dropped) */
    uint64_t capture_ns; /* as given to rt_ring_put */
    int take_again; /* frames were still published after this one, or the
                     * ring is closed: a later take has something to say */
    CUevent ready; /* make the consumer's stream wait for it before
                    * reading the frame (cuStreamWaitEvent); the ring's,
                    * or the producer's on a reference ring (maybe NULL:
                    * no wait) */
    int slot_; /* private: the slot index */
} rt_ring_item;

typedef struct rt_ring_stats {
    uint64_t put; /* frames put (accepted or dropped at once) = last seq */
    uint64_t taken; /* frames handed to the consumer */
    uint64_t released; /* frames given back by the consumer */
    uint64_t dropped; /* frames that never reached the consumer:
                       * overwritten + skipped + rejected + failed */
    uint64_t overwritten; /* KEEP_NEWEST: published frames replaced by newer puts */
    uint64_t skipped; /* KEEP_NEWEST: published frames passed over by take */
    uint64_t rejected; /* KEEP_NEWEST: new frames dropped, every slot held
                        * by the consumer or the last upload not run yet */
    uint64_t failed; /* puts whose upload failed to enqueue (CUDA error) */
    uint64_t blocked_puts; /* BLOCK: puts that had to wait for a slot */
    uint64_t blocked_ns; /* BLOCK: total time puts waited */
    uint64_t timeouts; /* BLOCK: puts that gave up (OMMA_ERR_TIMEOUT) */
    int published; /* frames ready to take now */
    int held; /* frames taken and not released now */
} rt_ring_stats;

/* Creates a ring of `slots` (1..RT_RING_MAX_SLOTS) frames of format *fmt on
 * dev (the ring keeps no reference of its own on dev: keep it open until
 * destroy): the device memory and 2 * slots pooled events are taken now.
 * Errors: OMMA_ERR_INVALID_ARG (NULL argument, slots out of range, a bad
 * size, format or policy: the message names it), OMMA_ERR_OUT_OF_MEMORY,
 * OMMA_ERR_CUDA. On failure *out is NULL and nothing is left allocated. */
omma_status rt_ring_create(omma_device *dev, int slots, const rt_ring_format *fmt,
                           rt_ring_policy policy, rt_ring **out);

/* A reference ring: as rt_ring_create, but its slots hold frames that are
 * already in device memory (a GPU decoder's, a pool of frames) by
 * reference, put with rt_ring_put_device: no device memory is allocated and
 * nothing is copied; the done events still order the slots' reuse. */
omma_status rt_ring_create_ref(omma_device *dev, int slots, const rt_ring_format *fmt,
                               rt_ring_policy policy, rt_ring **out);

struct bus_pub; /* ipc/bus_publisher.h */

/* A published ring: as rt_ring_create, but its slots' memory is made by
 * the frame bus `bus` as its camera `camera` (named `name`), so that other
 * processes map it; a slot a subscriber holds is
 * not written (KEEP_NEWEST drops the new frame when every writable slot is
 * taken; BLOCK waits), and each frame is announced on the bus once its
 * upload has run. Destroy the ring before the bus. */
omma_status rt_ring_create_bus(omma_device *dev, int slots, const rt_ring_format *fmt,
                               rt_ring_policy policy, struct bus_pub *bus, int camera,
                               const char *name, rt_ring **out);

/* Producer: uploads *host_frame (host memory, pageable or pinned: pinned for
 * an asynchronous copy; the ring's format; read during the call and by the
 * copy, so keep it unchanged until upload_stream has passed this point) into
 * a slot on upload_stream and publishes it with capture_ns. Never waits for
 * the GPU. KEEP_NEWEST never blocks (timeout_ms is ignored) and returns
 * OMMA_OK also when the frame, or an older one, was dropped (see
 * rt_ring_stats). BLOCK waits for a slot up to timeout_ms (< 0: without
 * limit, 0: not at all).
 * Errors: OMMA_ERR_INVALID_ARG (NULL ring or frame, a frame of another size
 * or format: the message names both, a bad frame: vis_frame_check's
 * message), OMMA_ERR_UNSUPPORTED (a frame in device memory),
 * OMMA_ERR_TIMEOUT (BLOCK: no slot within timeout_ms; the frame is not
 * counted), OMMA_ERR_CLOSED (the ring was closed before or while waiting;
 * not counted), OMMA_ERR_BUSY (another thread is in put), OMMA_ERR_CUDA (the
 * upload could not be enqueued: the frame counts as failed). */
omma_status rt_ring_put(rt_ring *ring, const omma_frame *host_frame, CUstream upload_stream,
                        uint64_t capture_ns, int timeout_ms);

/* Producer: as rt_ring_put, but *device_frame is in device memory on the
 * ring's device and is copied device to device on stream after stream waits
 * for `ready` (NULL: ready now): one copy when its planes are packed back
 * to back as in a slot (a frame-bus frame), one 2D copy per plane otherwise
 * (a decoder's pitched surface). Counted as device-to-device copies. Errors
 * as rt_ring_put, and OMMA_ERR_UNSUPPORTED for a host frame or a reference
 * ring, OMMA_ERR_INVALID_ARG for a NULL plane or a pitch below the row. */
omma_status rt_ring_put_copy(rt_ring *ring, const omma_frame *device_frame, CUevent ready,
                             CUstream stream, uint64_t capture_ns, int timeout_ms);

/* Producer of a reference ring: publishes *device_frame (device memory on
 * the ring's device, the ring's format, any pitch) with `ready`, the event
 * the consumer's stream waits for before reading it (NULL: the frame is
 * ready now). Nothing is copied: the frame's memory must stay valid and
 * unchanged until the ring is destroyed (a pool of frames), as the ring
 * does not report when the consumer is done with a given frame. Policies,
 * timeout and errors as rt_ring_put; OMMA_ERR_UNSUPPORTED on a ring made
 * by rt_ring_create (and rt_ring_put's on a reference ring). */
omma_status rt_ring_put_device(rt_ring *ring, const omma_frame *device_frame, CUevent ready,
                               uint64_t capture_ns, int timeout_ms);

/* Consumer: takes the next frame without waiting: the newest published one
 * (KEEP_NEWEST, older untaken ones are dropped as skipped) or the oldest
 * (BLOCK). Returns OMMA_OK with out->has_frame = 1 and the frame, or 0 when
 * none is ready. The consumer must make its stream wait for out->ready
 * before reading the frame, and give the item back with rt_ring_release. It
 * may hold several items at once (up to the slot count).
 * Errors: OMMA_ERR_INVALID_ARG (NULL), OMMA_ERR_CLOSED (the ring is closed
 * and every frame put before the close has been taken), OMMA_ERR_BUSY
 * (another thread is in take, take_wait or release). *out is emptied on
 * every return without a frame. */
omma_status rt_ring_take(rt_ring *ring, rt_ring_item *out);

/* As rt_ring_take, but when no frame is ready waits on the host up to
 * timeout_ms (< 0: without limit) for one to be published or for close; a
 * timeout is OMMA_OK with out->has_frame = 0 (the worker's batching
 * deadline passed). For a worker that would otherwise sleep. */
omma_status rt_ring_take_wait(rt_ring *ring, rt_ring_item *out, int timeout_ms);

/* Consumer: gives a taken item back. Records the slot's done event on
 * `stream` (the stream of the consumer's last use of the frame; join other
 * streams into it first); the slot is written again only after that point
 * of `stream` has run. The item is emptied.
 * Errors: OMMA_ERR_INVALID_ARG (NULL, an item not taken from this ring or
 * already released), OMMA_ERR_BUSY, OMMA_ERR_CUDA (recording failed: the
 * slot stays taken; synchronize stream and release again). */
omma_status rt_ring_release(rt_ring *ring, rt_ring_item *item, CUstream stream);

/* Closes the ring: a put waiting for a slot returns OMMA_ERR_CLOSED, later
 * puts too; a consumer waiting in take_wait wakes; take goes on returning
 * the frames put before the close, then OMMA_ERR_CLOSED. Idempotent; any
 * thread. Accepts NULL. */
void rt_ring_close(rt_ring *ring);

/* Closes the ring, waits for the GPU work on its slots (every slot's ready
 * and done events; a frame still taken and not released is logged and the
 * whole context synchronized, since the ring cannot know which stream reads
 * it) and frees the device memory and events. No put or take may be
 * running. Accepts NULL. */
void rt_ring_destroy(rt_ring *ring);

/* A snapshot of the counters. Any thread. Errors: OMMA_ERR_INVALID_ARG. */
omma_status rt_ring_get_stats(rt_ring *ring, rt_ring_stats *out);

/* The ring's slot count, format and bytes of one frame in a slot. */
int rt_ring_slots(const rt_ring *ring);
rt_ring_format rt_ring_get_format(const rt_ring *ring);
size_t rt_ring_frame_bytes(const rt_ring *ring);

/* "keep-newest", "block"; "unknown" otherwise. */
const char *rt_ring_policy_name(rt_ring_policy policy);

#endif
