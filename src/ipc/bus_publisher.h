/* Private: the publishing side of a frame bus (one per published runtime).
 *
 * The publisher owns, per camera, the ring's slot memory (one shareable
 * allocation, bus_memory.h); the runtime's frame ring uses it in place of
 * its own (rt_ring_create_bus) and tells the publisher when it starts
 * writing a slot and when a frame is enqueued. A frame is announced to
 * subscribers by the publisher's announcing thread once the event recorded
 * after its write has completed (the thread sleeps in the wait: omma's
 * contexts block on synchronization), so it is announced only once it is
 * really in the slot: a subscriber has nothing to wait for on the GPU, and
 * never waits on work of a process that may die. Each subscriber gets one
 * FRAMES message with the oldest frame not announced and every frame after
 * it already in its slot when the message is made (a burst of cameras goes
 * out in a few messages, none waiting for a later frame's write); the
 * messages are sent outside the lock the producers take. Subscribers give frames back once
 * their reads have run (bus_holds.h), so no interprocess event is needed either way.
 *
 * One thread serves the socket: it accepts subscribers (uid checked with
 * SO_PEERCRED), sends each its seat, the results memfd and per camera the
 * memory fd and event handles, reads their releases, and notices hang-ups.
 * Frames go out from the announcing thread without waiting: a subscriber
 * whose queue is full misses the frames (counted), never slowing the
 * publisher or the others. A malformed message ends that subscriber's
 * session with a logged reason.
 *
 * Threads: create/add_camera/start/destroy from the owner's thread;
 * slot_busy/slot_write/frame_ready from the camera's producer (with the
 * camera's device current); results from any thread; stats any thread. */
#ifndef OMMA_IPC_BUS_PUBLISHER_H
#define OMMA_IPC_BUS_PUBLISHER_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/driver.h"
#include "omma/device.h"
#include "omma/face.h"
#include "omma/status.h"

typedef struct bus_pub bus_pub;

typedef struct bus_pub_options {
    const char *name; /* the bus name (bus_name_check) */
    const char *dir; /* NULL: the default bus directory */
    int cameras; /* 1..BUS_MAX_CAMERAS */
    int max_faces; /* faces per frame kept in the results (1..64) */
    int max_subscribers; /* 1..BUS_MAX_SEATS */
    long allow_gid; /* also admit this group's members (-1: the user only) */
    int announce_spin_us; /* the announcer polls a frame's write this long
                           * before it sleeps in its event (0: 50; < 0: it
                           * sleeps at once) */
} bus_pub_options;

/* A camera's slot memory, owned by the publisher. */
typedef struct bus_pub_slots {
    CUdeviceptr base; /* slot i at base + i * slot_bytes */
} bus_pub_slots;

typedef struct bus_pub_stats {
    int subscribers; /* attached now, holding frames (not watchers) */
    int watchers; /* attached now, watching only (omma bus ls|watch) */
    uint64_t announced; /* frames announced (all cameras) */
    uint64_t given; /* frame holds given to subscribers */
    uint64_t missed; /* frames subscribers missed (holding too much, or
                      * not reading) */
    uint64_t every_waits; /* frames whose write waited for an every-frame
                           * subscriber's release */
    uint64_t sessions; /* subscribers that attached so far */
    uint64_t ended; /* sessions ended: hang-ups, errors, byes */
    uint64_t refused; /* connections refused (uid, full, bad hello) */
} bus_pub_stats;

omma_status bus_pub_create(const bus_pub_options *opt, bus_pub **out);

/* Camera `index` (0..cameras-1): allocates its slots on dev (the device's
 * context current) and gives their memory. blocking: the camera's ring
 * makes its producer wait for a free slot (a file), so subscribers may ask
 * for every frame of it. */
omma_status bus_pub_add_camera(bus_pub *p, int index, const char *name, omma_device *dev, int slots,
                               int width, int height, omma_pixel_format format, size_t frame_bytes,
                               size_t slot_bytes, int blocking, bus_pub_slots *out);

/* Starts serving subscribers (every camera added). */
omma_status bus_pub_start(bus_pub *p);

/* Producer: the publisher's lock, held from the busy checks of a put to
 * the claim of the slot it chose (bus_pub_slot_write), so that no
 * subscriber is given the slot's old frame in between. Taken after the
 * ring's own lock; never held while waiting. */
void bus_pub_lock(bus_pub *p);
void bus_pub_unlock(bus_pub *p);

/* Producer, bus_pub_lock held: 1 when slot may not be written (a
 * subscriber holds it, or an every-frame subscriber holds as many frames
 * of the camera as it may: the producer waits for its releases). */
int bus_pub_slot_busy(bus_pub *p, int camera, int slot);

/* Producer, bus_pub_lock held: frame seq starts being written into slot
 * (an announcement of its old frame still pending is then stale). */
void bus_pub_slot_write(bus_pub *p, int camera, int slot, uint64_t seq);

/* Producer: the write of frame seq into slot failed; it will never be
 * announced (every-frame subscribers' holds on it are dropped). */
void bus_pub_slot_unwritten(bus_pub *p, int camera, int slot, uint64_t seq);

/* Producer: frame seq's copy into slot is enqueued on stream; the frame
 * is announced once the stream gets here (an event of the slot's, which
 * the announcing thread waits for). Never blocks on the GPU. */
omma_status bus_pub_frame_ready(bus_pub *p, int camera, int slot, uint64_t seq, uint64_t capture_ns,
                                CUstream stream);

/* The faces found in frame seq of camera. */
void bus_pub_results(bus_pub *p, int camera, uint64_t seq, uint64_t capture_ns,
                     const omma_face *faces, int n);

void bus_pub_get_stats(bus_pub *p, bus_pub_stats *out);

/* Stops the thread, says BYE to subscribers, frees the memory (subscribers
 * keep their mappings until they unmap) and the socket. The rings using
 * the slots must be destroyed first. Accepts NULL. */
void bus_pub_destroy(bus_pub *p);

#endif
