/* omma — the frame bus: camera frames and face results shared between
 * processes on one machine, in GPU memory, without copies.
 *
 * A publisher (`omma stream SOURCES... --publish NAME`) shares every
 * camera's frame ring under NAME. A subscriber attaches to NAME and gets,
 * per frame, a device pointer in its own address space (mapped read-only
 * where the driver allows it), the frame's sequence number and capture
 * time, and later the frame's faces. A frame is announced only once it is
 * in its slot, so a reading stream has nothing to wait for. The subscriber
 * gives each frame back with omma_bus_release on the stream that read it:
 * once those reads have run, the subscriber's next calls write the
 * release into shared memory the publisher reads, and the publisher may
 * then overwrite the slot. Giving a frame back sends no message and wakes
 * no thread; nothing waits on the host on either side, and no process
 * ever waits for another's GPU work.
 *
 * A subscriber holds at most max_holds frames per camera; frames published
 * while it holds that many are missed (counted in omma_bus_frame.missed):
 * a slow subscriber never slows the publisher or the others. If the
 * publisher dies or stops, calls return OMMA_ERR_CLOSED naming the bus;
 * close the subscriber and subscribe again when it is back.
 *
 * Threads: a subscriber belongs to one thread at a time (concurrent calls
 * get OMMA_ERR_BUSY). Frames stay on the GPU of the publisher's camera:
 * subscribe with that device (omma_bus_camera_info.gpu_uuid says which);
 * cameras on another GPU are refused with a message naming both. */
#ifndef OMMA_BUS_H
#define OMMA_BUS_H

#include <stddef.h>
#include <stdint.h>

#include "omma/device.h"
#include "omma/face.h"
#include "omma/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct omma_bus_subscriber omma_bus_subscriber;

typedef struct omma_bus_options {
    const char *dir; /* bus directory; NULL: $OMMA_BUS_DIR, else
                      * $XDG_RUNTIME_DIR/omma-bus, else /tmp/omma-bus-UID */
    const int *cameras; /* cameras wanted (indices); NULL: all */
    int n_cameras;
    int max_holds; /* frames of one camera held at once, 1..8 (2) */
    int timeout_ms; /* for attaching (2000) */
    int watch; /* 1: frames are announced but never held or mapped (for
                * monitoring: no memory is imported) */
    int every_frame; /* 1: every frame written after attaching is given
                      * (none missed): the publisher waits while this
                      * subscriber holds max_holds frames of a camera. Only
                      * for cameras whose publisher reads files; a live
                      * camera refuses it (OMMA_ERR_UNSUPPORTED naming it) */
} omma_bus_options;

void omma_bus_options_init(omma_bus_options *opt);

typedef struct omma_bus_camera_info {
    int index; /* on the bus */
    char name[64];
    int width, height;
    omma_pixel_format format;
    int slots;
    int gpu; /* ordinal in the publisher */
    char gpu_uuid[48]; /* "GPU-..." */
    int read_only; /* 1: mapped here without write access (a write by
                    * this process faults instead of corrupting frames) */
} omma_bus_camera_info;

typedef struct omma_bus_frame {
    int camera; /* index on the bus */
    omma_frame frame; /* OMMA_MEMORY_DEVICE, in this process's address space */
    uint64_t seq; /* the camera's frame number (gaps: frames the publisher
                   * dropped or this subscriber missed) */
    uint64_t capture_ns; /* CLOCK_MONOTONIC, as omma's clocks */
    uint64_t announce_ns; /* when the publisher announced it */
    uint64_t missed; /* frames of this camera this subscriber missed so far */
    int token_; /* private */
} omma_bus_frame;

/* Attaches to the bus NAME on dev (whose primary context maps the frames).
 * Errors: OMMA_ERR_INVALID_ARG (a bad name, camera or option: the message
 * says which), OMMA_ERR_CLOSED (no publisher NAME), OMMA_ERR_TIMEOUT,
 * OMMA_ERR_BUSY (the publisher refused: full, or another user),
 * OMMA_ERR_UNSUPPORTED (a camera on another GPU), OMMA_ERR_FORMAT (a
 * malformed handshake), OMMA_ERR_CUDA (mapping failed). On failure *out is
 * NULL and nothing is left behind. */
omma_status omma_bus_subscribe(omma_device *dev, const char *name, const omma_bus_options *opt,
                               omma_bus_subscriber **out);

/* Cameras attached, and facts of the i-th (0..count-1). */
int omma_bus_camera_count(const omma_bus_subscriber *sub);
omma_status omma_bus_camera_info_get(const omma_bus_subscriber *sub, int i,
                                     omma_bus_camera_info *out);

/* Subscribers attached to the publisher when this one attached (itself
 * included), and the publisher's pid. */
int omma_bus_subscribers_at_attach(const omma_bus_subscriber *sub);
int omma_bus_publisher_pid(const omma_bus_subscriber *sub);

/* 1 once the publisher said it stops (a clean end, OMMA_ERR_CLOSED from
 * then on); 0 while it runs or when it died without a word. */
int omma_bus_publisher_stopped(const omma_bus_subscriber *sub);

/* The next frame announced, waiting up to timeout_ms (< 0: without limit).
 * OMMA_OK with out->frame set, or OMMA_ERR_TIMEOUT when none came.
 * OMMA_ERR_CLOSED: the publisher stopped or died (the message names the
 * bus); OMMA_ERR_FORMAT: it sent something malformed (the session ends). */
omma_status omma_bus_next(omma_bus_subscriber *sub, int timeout_ms, omma_bus_frame *out);

/* Orders stream (a CUstream) after the frame's arrival: checks that f is a
 * frame this subscriber holds. The frame is complete when announced, so
 * nothing is enqueued on one GPU (kept for frames that will need it). */
omma_status omma_bus_wait(omma_bus_subscriber *sub, const omma_bus_frame *f, void *stream);

/* Gives the frame back once the reads enqueued on stream have run; NULL
 * stream: the frame was not read and goes back now. The frame may not be
 * read after this call. Nothing waits here.
 *
 * Frames given back on one stream share one event: it is recorded on
 * stream when the last frame of the publisher's message has been handed
 * out (by this call, or by the omma_bus_next call that has to wait for the
 * publisher, or by a release on another stream), so it also covers the
 * reads enqueued after this call until then. Keep stream alive until that
 * call (omma_bus_close does not use it). This call and the following
 * omma_bus_next calls write the releases for the publisher once the event
 * completed: call omma_bus_next again soon, as a reading loop does. While a
 * camera's frames held and given back leave room for its next frame
 * (fewer than max_holds), omma_bus_next sleeps on the socket meanwhile and
 * looks at the event every 2 ms at most; otherwise it looks until the event
 * completed before it sleeps.
 *
 * Errors: OMMA_ERR_INVALID_ARG (not a frame this subscriber holds: the
 * message says so); OMMA_ERR_CUDA when the event could not be made or
 * recorded: the call then waited for the device on the host and the
 * frames went back all the same. */
omma_status omma_bus_release(omma_bus_subscriber *sub, omma_bus_frame *f, void *stream);

/* The faces the publisher found in frame f: OMMA_OK with *n (up to max),
 * OMMA_ERR_TIMEOUT when they are not known yet, OMMA_ERR_CLOSED when they
 * were replaced by much newer frames'. */
omma_status omma_bus_results(const omma_bus_subscriber *sub, const omma_bus_frame *f,
                             omma_face *faces, int max, int *n);

/* Detaches: waits for the reads of the frames it gave back, unmaps,
 * closes. Accepts NULL. */
void omma_bus_close(omma_bus_subscriber *sub);

/* One published bus, as listed by omma_bus_list. */
typedef struct omma_bus_listing {
    char name[64];
    int publisher_pid;
    int cameras;
    int subscribers; /* attached now (not counting the lister) */
} omma_bus_listing;

/* Lists the live buses in dir (NULL: the default) into out (up to max);
 * *n is how many there are. Stale sockets of dead publishers are skipped. */
omma_status omma_bus_list(const char *dir, omma_bus_listing *out, int max, int *n);

#ifdef __cplusplus
}
#endif
#endif
