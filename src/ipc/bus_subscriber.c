#define _DEFAULT_SOURCE /* scandir, alphasort */
/* The subscribing side of the frame bus (omma/bus.h). */
#include "omma/bus.h"

#include <dirent.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "gpu/check.h"
#include "gpu/fault.h"
#include "gpu/device_private.h"
#include "ipc/bus_board.h"
#include "ipc/bus_memory.h"
#include "ipc/bus_proto.h"
#include "ipc/bus_results.h"
#include "ipc/bus_socket.h"
#include "omma/log.h"
#include "vision/frame.h"

typedef struct sub_camera {
    bus_camera desc;
    omma_bus_camera_info info;
    bus_memory mem;
    int planes;
    size_t plane_offset[3];
    int row_bytes[3];
    int held; /* frames of the camera in HOLD_HELD */
    int owed; /* in HOLD_PENDING or HOLD_RELEASING: given back, not yet on the board */
} sub_camera;

/* A frame given back on a stream is first PENDING: it joins the group of
 * frames given back on that stream since the last event, and the group
 * gets one event (RELEASING) when the subscriber has handed out every
 * frame of the publisher's last message, before it asks the socket for
 * more (seal_group). */
enum { HOLD_FREE = 0, HOLD_HELD, HOLD_PENDING, HOLD_RELEASING };

/* receive_frames polls frames given back this long before it waits for a
 * millisecond at a time: an event recorded on an idle stream completes in
 * microseconds. */
#define SPIN_NS 20000

/* While every frame given back and not yet on the board leaves its camera
 * room for the next frame (held + owed < max_holds), the subscriber sleeps
 * on the socket up to this long before it looks at their event again. */
#define DEFER_MS 2

/* A frame held, or given back on a stream whose reads have not all run. */
typedef struct hold {
    int state; /* HOLD_* */
    int cam; /* local index */
    uint32_t slot;
    uint64_t seq;
    int seal; /* RELEASING: the hold whose event covers it (its group's last) */
    CUevent after; /* recorded on the reading stream after a group's reads,
                    * when this hold is the group's last */
} hold;

struct omma_bus_subscriber {
    omma_device *dev;
    char name[BUS_NAME_MAX];
    int fd;
    int watch;
    int max_holds;
    int seat, publisher_pid, subscribers;
    bus_results results;
    int n;
    sub_camera *cams;
    int local_of[BUS_MAX_CAMERAS]; /* bus index -> local index, -1 */
    hold *holds;
    int n_holds;
    int closed;
    int recv_timeout_ms; /* the socket's receive timeout as last set (INT_MIN: never) */
    int stopped; /* the publisher said BYE (it stopped; it did not die) */
    bus_frames batch; /* the last FRAMES message; next_taken of them handed out */
    uint32_t next_taken;
    /* The release board (bus_board.h): a frame given back on a stream is
     * written there by this subscriber's next call that finds its event
     * complete (no thread, no message). */
    bus_board board;
    /* The holds given back, in that order (n_holds places): first the
     * `releasing` ones (their groups' events complete in that order on one
     * stream, so the first not complete ends a look), then the `pending`
     * ones, given back on pstream since its last event. */
    int *rqueue;
    int rhead, releasing, pending;
    CUstream pstream;
    int every; /* every-frame: the publisher's producer waits for releases */
    atomic_int busy;
};

void omma_bus_options_init(omma_bus_options *opt)
{
    if (!opt)
        return;
    memset(opt, 0, sizeof *opt);
    opt->max_holds = 2;
    opt->timeout_ms = 2000;
}

static omma_status closed_error(omma_bus_subscriber *s, const char *why)
{
    s->closed = 1;
    return OMMA_FAIL(OMMA_ERR_CLOSED, "bus %s: %s", s->name, why);
}

/* Receives one message of the handshake (and its fd when fd != NULL). */
/* How recv_msg waits: polling first (the handshake, short waits), or in
 * the one call of the socket's receive timeout (frames, the hot path). */
enum { WAIT_POLL, WAIT_IN_RECV };

static omma_status recv_msg_how(omma_bus_subscriber *s, int timeout_ms, int how, bus_msg *m,
                                int *fd)
{
    unsigned char buf[BUS_MSG_MAX_BYTES];
    size_t n = 0;
    int rfd = -1;
    omma_status st = OMMA_OK;
    if (how == WAIT_POLL || fd || timeout_ms == 0) {
        st = bus_recv(s->fd, buf, sizeof buf, &n, &rfd, timeout_ms);
    } else { /* frames: one system call per message, waiting or not */
        if (s->recv_timeout_ms != timeout_ms) {
            st = bus_set_recv_timeout(s->fd, timeout_ms);
            s->recv_timeout_ms = st == OMMA_OK ? timeout_ms : INT_MIN;
        }
        if (st == OMMA_OK)
            st = bus_recv_blocking(s->fd, buf, sizeof buf, &n, &rfd);
    }
    if (st == OMMA_ERR_CLOSED)
        return closed_error(s, "the publisher hung up");
    OMMA_TRY(st);
    if (n == 0) /* frames: no error text (the caller's loop sees many) */
        return fd ? OMMA_FAIL(OMMA_ERR_TIMEOUT, "bus %s: no answer within %d ms", s->name,
                              timeout_ms)
                  : OMMA_ERR_TIMEOUT;
    st = bus_msg_decode(buf, n, m);
    if (st == OMMA_OK && m->type == BUS_MSG_ERROR)
        st = OMMA_FAIL(m->u.text.status ? (omma_status)m->u.text.status : OMMA_ERR_CLOSED,
                       "bus %s: the publisher says: %s", s->name, m->u.text.text);
    else if (st == OMMA_OK && m->type == BUS_MSG_BYE) {
        s->stopped = 1;
        st = closed_error(s, m->u.text.text[0] ? m->u.text.text : "the publisher said bye");
    }
    if (st != OMMA_OK || !fd) {
        if (rfd >= 0)
            close(rfd);
        if (st == OMMA_OK && rfd >= 0)
            st = OMMA_FAIL(OMMA_ERR_FORMAT, "bus %s: unexpected file descriptor with %s", s->name,
                           bus_msg_type_name(m->type));
        return st;
    }
    *fd = rfd;
    return OMMA_OK;
}

static omma_status recv_msg(omma_bus_subscriber *s, int timeout_ms, bus_msg *m, int *fd)
{
    return recv_msg_how(s, timeout_ms, WAIT_IN_RECV, m, fd);
}

static void uuid_text(const uint8_t u[16], char out[48])
{
    snprintf(out, 48, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13],
             u[14], u[15]);
}

/* Maps camera c's memory and opens its events (the device's context is
 * current). */
static omma_status attach_camera(omma_bus_subscriber *s, sub_camera *c, int fd)
{
    CUdevice cu;
    OMMA_TRY(OMMA_CK(gpu_cu.cuDeviceGet(&cu, omma_device_ordinal(s->dev))));
    CUuuid uuid;
    OMMA_TRY(OMMA_CK(gpu_cu.cuDeviceGetUuid(&uuid, cu)));
    if (memcmp(uuid.bytes, c->desc.gpu_uuid, 16) != 0) {
        char mine[48];
        uuid_text((const uint8_t *)uuid.bytes, mine);
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "bus %s: camera %s is on the publisher's GPU %d (%s), not on this "
                         "subscriber's device %d (%s): subscribe with that GPU",
                         s->name, c->info.name, c->info.gpu, c->info.gpu_uuid,
                         omma_device_ordinal(s->dev), mine);
    }
    OMMA_TRY(bus_memory_import(s->dev, fd, c->desc.alloc_bytes, &c->mem));
    c->info.read_only = c->mem.read_only;
    return OMMA_OK;
}

static void detach_cameras(omma_bus_subscriber *s)
{
    if (!s->cams)
        return;
    omma_scope scope;
    int entered = s->dev && omma_device_enter(s->dev, &scope) == OMMA_OK;
    /* The reads of the frames given back have run before the memory goes
     * (an event outlives the stream it was recorded on). A group without
     * its event yet: the stream may be gone by now (omma_bus_release), so
     * the whole context. */
    if (entered && s->pending)
        gpu_cu.cuCtxSynchronize();
    for (int i = 0; i < s->n_holds && entered; i++) {
        hold *h = &s->holds[i];
        if (h->state == HOLD_RELEASING && s->holds[h->seal].after)
            gpu_cu.cuEventSynchronize(s->holds[h->seal].after);
    }
    for (int i = 0; i < s->n_holds && entered; i++)
        if (s->holds[i].after)
            gpu_cu.cuEventDestroy(s->holds[i].after);
    for (int i = 0; i < s->n && entered; i++)
        bus_memory_destroy(&s->cams[i].mem);
    if (entered)
        omma_device_leave(&scope);
    free(s->cams);
    s->cams = NULL;
}

static void free_subscriber(omma_bus_subscriber *s)
{
    detach_cameras(s);
    bus_board_close(&s->board);
    bus_results_close(&s->results);
    if (s->fd >= 0)
        close(s->fd);
    free(s->holds);
    free(s->rqueue);
    free(s);
}

/* Gives hold h's frame back on the board (its reads have run). */
static void board_release(omma_bus_subscriber *s, hold *h)
{
    atomic_store_explicit((_Atomic uint64_t *)(uintptr_t)bus_board_word(
                              &s->board, s->cams[h->cam].info.index, (int)h->slot),
                          h->seq, memory_order_release);
    if (h->state == HOLD_HELD)
        s->cams[h->cam].held--;
    else
        s->cams[h->cam].owed--;
    h->state = HOLD_FREE;
}

/* Writes on the board the frames given back whose reads have run, oldest
 * first, up to the first whose reads have not (the device's context is
 * current). One look at each group's event. */
static void finish_releases(omma_bus_subscriber *s)
{
    int done = -1; /* the group whose event completed */
    while (s->releasing) {
        hold *h = &s->holds[s->rqueue[s->rhead]];
        if (h->seal != done) {
            if (gpu_cu.cuEventQuery(s->holds[h->seal].after) == CUDA_ERROR_NOT_READY)
                return;
            done = h->seal;
        }
        s->rhead = (s->rhead + 1) % s->n_holds;
        s->releasing--;
        board_release(s, h);
    }
}

/* Gives the pending group its event: one record on its stream after the
 * reads of all its frames (the device's context is current). When the
 * record fails, waits for the context on the host (the stream's handle
 * may be what failed) and gives the frames back at once (their reads have
 * run), and says why. */
static omma_status seal_group(omma_bus_subscriber *s)
{
    if (!s->pending)
        return OMMA_OK;
    int last = s->rqueue[(s->rhead + s->releasing + s->pending - 1) % s->n_holds];
    hold *owner = &s->holds[last];
    omma_status st = OMMA_OK;
    if (!owner->after)
        st = GPU_FAULT_POINT(OMMA_ERR_CUDA, "cuEventCreate");
    if (st == OMMA_OK && !owner->after)
        st = OMMA_CK(gpu_cu.cuEventCreate(&owner->after, CU_EVENT_DISABLE_TIMING));
    if (st == OMMA_OK)
        st = OMMA_CK(gpu_cu.cuEventRecord(owner->after, s->pstream));
    if (st == OMMA_OK) {
        for (int i = 0; i < s->pending; i++) {
            hold *h = &s->holds[s->rqueue[(s->rhead + s->releasing + i) % s->n_holds]];
            h->state = HOLD_RELEASING;
            h->seal = last;
        }
        s->releasing += s->pending;
        s->pending = 0;
        return OMMA_OK;
    }
    /* No event: the reads are waited for here. The pending frames are the
     * queue's tail; the RELEASING ones before them stay queued. */
    CUresult r = gpu_cu.cuCtxSynchronize();
    for (int i = 0; i < s->pending && r == CUDA_SUCCESS; i++)
        board_release(s, &s->holds[s->rqueue[(s->rhead + s->releasing + i) % s->n_holds]]);
    if (r == CUDA_SUCCESS)
        s->pending = 0;
    return st;
}

/* 1 when a frame given back must reach the board before the subscriber
 * sleeps: its camera has no room for the next frame without it (held +
 * owed >= max_holds: the publisher would count the next frame missed), or
 * the publisher's producer waits for it (every-frame). */
static int releases_urgent(const omma_bus_subscriber *s)
{
    if (s->every)
        return s->releasing + s->pending > 0;
    for (int i = 0; i < s->releasing + s->pending; i++) {
        const sub_camera *c = &s->cams[s->holds[s->rqueue[(s->rhead + i) % s->n_holds]].cam];
        if (c->held + c->owed >= s->max_holds)
            return 1;
    }
    return 0;
}

static omma_status handshake(omma_bus_subscriber *s, const omma_bus_options *o)
{
    bus_msg m = {.type = BUS_MSG_HELLO};
    m.u.hello.flags = o->watch ? BUS_HELLO_WATCH : o->every_frame ? BUS_HELLO_EVERY_FRAME : 0;
    m.u.hello.max_holds = (uint32_t)o->max_holds;
    m.u.hello.pid = (uint32_t)getpid();
    m.u.hello.n_cameras = o->cameras ? (uint32_t)o->n_cameras : 0;
    for (int i = 0; o->cameras && i < o->n_cameras; i++)
        m.u.hello.cameras[i] = (uint16_t)o->cameras[i];
    unsigned char buf[BUS_MSG_MAX_BYTES];
    size_t n = bus_msg_encode(&m, buf, sizeof buf);
    OMMA_TRY(bus_send_wait(s->fd, buf, n, -1, o->timeout_ms));

    int fd = -1;
    OMMA_TRY(recv_msg(s, o->timeout_ms, &m, &fd));
    if (m.type != BUS_MSG_WELCOME || fd < 0) {
        if (fd >= 0)
            close(fd);
        return OMMA_FAIL(OMMA_ERR_FORMAT,
                         "bus %s: expected WELCOME with the results memory, got %s", s->name,
                         bus_msg_type_name(m.type));
    }
    omma_status st = bus_results_map(fd, m.u.welcome.results_bytes, &s->results);
    close(fd);
    OMMA_TRY(st);
    s->seat = (int)m.u.welcome.seat;
    s->publisher_pid = (int)m.u.welcome.pid;
    s->subscribers = (int)m.u.welcome.subscribers;
    s->n = (int)m.u.welcome.n_cameras;
    s->cams = calloc(s->n ? (size_t)s->n : 1, sizeof *s->cams);
    s->n_holds = (s->n ? s->n : 1) * s->max_holds;
    s->holds = calloc((size_t)s->n_holds, sizeof *s->holds);
    s->rqueue = calloc((size_t)s->n_holds, sizeof *s->rqueue);
    if (!s->cams || !s->holds || !s->rqueue)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "bus %s: camera state", s->name);
    omma_scope scope;
    int entered = 0;
    if (!s->watch) {
        OMMA_TRY(omma_device_enter(s->dev, &scope));
        entered = 1;
        fd = -1;
        st = recv_msg(s, o->timeout_ms, &m, &fd);
        if (st == OMMA_OK && (m.type != BUS_MSG_BOARD || fd < 0))
            st = OMMA_FAIL(OMMA_ERR_FORMAT, "bus %s: expected BOARD with the release board, got %s",
                           s->name, bus_msg_type_name(m.type));
        if (st == OMMA_OK)
            st = bus_board_map(fd, (int)m.u.board.cameras, m.u.board.bytes, &s->board);
        if (fd >= 0)
            close(fd);
    }
    for (int i = 0; i < s->n && st == OMMA_OK; i++) {
        sub_camera *c = &s->cams[i];
        fd = -1;
        st = recv_msg(s, o->timeout_ms, &m, &fd);
        if (st != OMMA_OK)
            break;
        if (m.type != BUS_MSG_CAMERA || (fd < 0) != (s->watch != 0) ||
            s->local_of[m.u.camera.index] >= 0 ||
            m.u.camera.results_records != s->results.h.records ||
            m.u.camera.index >= s->results.h.cameras ||
            (!s->watch && m.u.camera.index >= (uint32_t)s->board.cameras) ||
            m.u.camera.results_offset !=
                bus_results_camera_offset(&s->results, (int)m.u.camera.index)) {
            st = OMMA_FAIL(OMMA_ERR_FORMAT, "bus %s: bad %s message in the handshake", s->name,
                           bus_msg_type_name(m.type));
        } else {
            c->desc = m.u.camera;
            s->local_of[c->desc.index] = i;
            omma_bus_camera_info *ci = &c->info;
            ci->index = (int)c->desc.index;
            snprintf(ci->name, sizeof ci->name, "%s", c->desc.name);
            ci->width = (int)c->desc.width;
            ci->height = (int)c->desc.height;
            ci->format = (omma_pixel_format)c->desc.format;
            ci->slots = (int)c->desc.slots;
            ci->gpu = c->desc.gpu;
            uuid_text(c->desc.gpu_uuid, ci->gpu_uuid);
            omma_frame shape = {.width = ci->width, .height = ci->height, .format = ci->format};
            size_t off = 0;
            for (int p = 0; p < 3; p++) {
                int rb = vis_frame_row_bytes(&shape, p);
                if (rb == 0)
                    break;
                c->planes = p + 1;
                c->row_bytes[p] = rb;
                c->plane_offset[p] = off;
                off += (size_t)rb * (size_t)vis_frame_plane_rows(&shape, p);
            }
            if (off != c->desc.frame_bytes)
                st = OMMA_FAIL(OMMA_ERR_FORMAT,
                               "bus %s: camera %s: %llu frame bytes announced, %zu expected for "
                               "%dx%d",
                               s->name, ci->name, (unsigned long long)c->desc.frame_bytes, off,
                               ci->width, ci->height);
            else if (!s->watch)
                st = attach_camera(s, c, fd);
        }
        if (fd >= 0)
            close(fd); /* mapped (or refused): the fd is not needed */
    }
    if (entered) {
        if (st == OMMA_OK)
            st = omma_device_leave(&scope);
        else
            omma_device_leave(&scope);
    }
    return st;
}

omma_status omma_bus_subscribe(omma_device *dev, const char *name, const omma_bus_options *opt,
                               omma_bus_subscriber **out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_bus_subscribe: out is NULL");
    *out = NULL;
    omma_bus_options o;
    omma_bus_options_init(&o);
    if (opt)
        o = *opt;
    if (!dev && !o.watch)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_bus_subscribe: device is NULL");
    if (o.max_holds < 1 || o.max_holds > BUS_MAX_HOLDS)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_bus_subscribe: max_holds %d is not in 1..%d",
                         o.max_holds, BUS_MAX_HOLDS);
    if (o.watch && o.every_frame)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "omma_bus_subscribe: watch and every_frame exclude each other (a "
                         "watcher holds no frame)");
    if (o.n_cameras < 0 || o.n_cameras > BUS_MAX_CAMERAS || (o.n_cameras && !o.cameras))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_bus_subscribe: %d cameras", o.n_cameras);
    for (int i = 0; o.cameras && i < o.n_cameras; i++)
        if (o.cameras[i] < 0 || o.cameras[i] >= BUS_MAX_CAMERAS)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_bus_subscribe: camera %d out of range",
                             o.cameras[i]);
    if (o.timeout_ms <= 0)
        o.timeout_ms = 2000;
    char path[256];
    OMMA_TRY(bus_socket_path(o.dir, name, path, sizeof path));
    omma_bus_subscriber *s = calloc(1, sizeof *s);
    if (!s)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "omma_bus_subscribe: state");
    s->fd = -1;
    s->results.fd = -1;
    s->board.fd = -1;
    s->recv_timeout_ms = INT_MIN;
    s->dev = o.watch ? NULL : dev;
    s->watch = o.watch;
    s->every = o.every_frame;
    s->max_holds = o.watch ? 1 : o.max_holds;
    snprintf(s->name, sizeof s->name, "%s", name);
    for (int i = 0; i < BUS_MAX_CAMERAS; i++)
        s->local_of[i] = -1;
    omma_status st = bus_connect(path, o.timeout_ms, &s->fd);
    if (st == OMMA_ERR_CLOSED)
        st = OMMA_FAIL(OMMA_ERR_CLOSED, "bus %s: no publisher (nothing at %s)", name, path);
    if (st == OMMA_OK)
        st = handshake(s, &o);
    if (st != OMMA_OK) {
        free_subscriber(s);
        return st;
    }
    *out = s;
    return OMMA_OK;
}

int omma_bus_camera_count(const omma_bus_subscriber *sub)
{
    return sub ? sub->n : 0;
}

omma_status omma_bus_camera_info_get(const omma_bus_subscriber *sub, int i,
                                     omma_bus_camera_info *out)
{
    if (!sub || !out || i < 0 || i >= sub->n)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_bus_camera_info_get: camera %d of %d", i,
                         sub ? sub->n : 0);
    *out = sub->cams[i].info;
    return OMMA_OK;
}

int omma_bus_subscribers_at_attach(const omma_bus_subscriber *sub)
{
    return sub ? sub->subscribers : 0;
}

int omma_bus_publisher_pid(const omma_bus_subscriber *sub)
{
    return sub ? sub->publisher_pid : 0;
}

int omma_bus_publisher_stopped(const omma_bus_subscriber *sub)
{
    return sub ? sub->stopped : 0;
}

static omma_status enter_call(omma_bus_subscriber *sub, const char *fn)
{
    if (!sub)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: subscriber is NULL", fn);
    if (atomic_exchange(&sub->busy, 1))
        return OMMA_FAIL(OMMA_ERR_BUSY, "%s: the subscriber of bus %s is in use by another thread",
                         fn, sub->name);
    return OMMA_OK;
}

static omma_status leave_call(omma_bus_subscriber *sub, omma_status st)
{
    atomic_store(&sub->busy, 0);
    return st;
}

/* The next message of frames, waiting up to timeout_ms, in one recvmsg
 * when nothing given back is still off the board. Otherwise the pending
 * group gets its event first (the last frame of the publisher's message is
 * handed out), and then:
 * - while every such frame leaves its camera room for the next one
 *   (releases_urgent is 0), it sleeps in the socket up to DEFER_MS at a
 *   time and looks at the events when it wakes: the publisher can give
 *   this subscriber every frame meanwhile, and a burst of frames costs one
 *   event;
 * - else it looks at them meanwhile (a few microseconds at once, then
 *   every millisecond), so that they reach the board soon: the publisher
 *   would count this subscriber's next frame missed, or an every-frame
 *   publisher waits for them. */
static omma_status receive_frames(omma_bus_subscriber *s, int timeout_ms, bus_msg *m)
{
    if (!s->releasing && !s->pending)
        return recv_msg(s, timeout_ms, m, NULL);
    omma_scope scope;
    OMMA_TRY(omma_device_enter(s->dev, &scope));
    omma_status st = seal_group(s);
    finish_releases(s);
    omma_device_leave(&scope);
    if (st != OMMA_OK)
        return st;
    uint64_t t0 = core_now_ns(), now = t0;
    uint64_t end = timeout_ms < 0 ? UINT64_MAX : t0 + (uint64_t)timeout_ms * 1000000u;
    while (s->releasing && !releases_urgent(s)) {
        int wait = timeout_ms >= 0 && timeout_ms < DEFER_MS ? timeout_ms : DEFER_MS;
        uint64_t left = end - now; /* later rounds: what is left of the caller's time */
        if (now > t0 && left < (uint64_t)DEFER_MS * 1000000u)
            wait = (int)((left + 999999) / 1000000);
        st = recv_msg(s, wait, m, NULL);
        if (st != OMMA_ERR_TIMEOUT)
            return st; /* a message (its frames come first), or an error */
        now = core_now_ns();
        OMMA_TRY(omma_device_enter(s->dev, &scope));
        finish_releases(s);
        omma_device_leave(&scope);
        if (now >= end)
            return OMMA_ERR_TIMEOUT;
    }
    if (!s->releasing) {
        /* Nothing waits for its reads now. Within a millisecond of the
         * call, the caller's timeout as it was (the socket keeps it set). */
        int left = timeout_ms < 0 || now - t0 < 1000000u ? timeout_ms
                                                         : (int)((end - now + 999999) / 1000000);
        return recv_msg(s, left, m, NULL);
    }
    st = recv_msg_how(s, 0, WAIT_POLL, m, NULL); /* one waiting already */
    if (st != OMMA_ERR_TIMEOUT || timeout_ms == 0)
        return st;
    OMMA_TRY(omma_device_enter(s->dev, &scope));
    uint64_t spin0 = core_now_ns();
    for (now = spin0; now < end; now = core_now_ns()) {
        finish_releases(s);
        if (!s->releasing)
            break;
        if (now - spin0 < SPIN_NS)
            continue;
        st = recv_msg_how(s, 1, WAIT_POLL, m, NULL);
        if (st != OMMA_ERR_TIMEOUT)
            break;
    }
    omma_device_leave(&scope);
    if (st != OMMA_ERR_TIMEOUT || now >= end)
        return st;
    /* Nothing waits for its reads now. Within a millisecond of the call,
     * the caller's timeout as it was (the socket keeps it set). */
    int left =
        timeout_ms < 0 || now - t0 < 1000000u ? timeout_ms : (int)((end - now + 999999) / 1000000);
    return recv_msg(s, left, m, NULL);
}

static omma_status next_frame(omma_bus_subscriber *s, int timeout_ms, omma_bus_frame *out)
{
    if (s->closed)
        return OMMA_FAIL(OMMA_ERR_CLOSED, "bus %s: closed (the publisher left)", s->name);
    bus_frame one;
    const bus_frame *f = NULL;
    if (s->next_taken < s->batch.count) { /* the rest of the last FRAMES */
        f = &s->batch.frames[s->next_taken++];
    } else {
        bus_msg m;
        omma_status st = receive_frames(s, timeout_ms, &m);
        if (st == OMMA_ERR_TIMEOUT) {
            omma_clear_error();
            return OMMA_ERR_TIMEOUT;
        }
        OMMA_TRY(st);
        if (m.type == BUS_MSG_FRAME) {
            one = m.u.frame;
            f = &one;
        } else if (m.type == BUS_MSG_FRAMES) {
            s->batch = m.u.frames;
            s->next_taken = 1;
            f = &s->batch.frames[0];
        } else {
            return OMMA_FAIL(OMMA_ERR_FORMAT, "bus %s: unexpected %s message", s->name,
                             bus_msg_type_name(m.type));
        }
    }
    int li = s->local_of[f->camera];
    if (li < 0 || f->slot >= s->cams[li].desc.slots)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "bus %s: frame of camera %u slot %u out of range",
                         s->name, (unsigned)f->camera, (unsigned)f->slot);
    sub_camera *c = &s->cams[li];
    int token = -1;
    if (!s->watch) {
        for (int i = 0; i < s->n_holds && token < 0; i++)
            if (s->holds[i].state == HOLD_FREE)
                token = i;
        if (token < 0)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "bus %s: the publisher gave more frames than held",
                             s->name);
        hold *h = &s->holds[token];
        h->cam = li;
        h->slot = f->slot;
        h->seq = f->seq;
        h->state = HOLD_HELD;
        c->held++;
    }
    memset(out, 0, sizeof *out);
    out->camera = (int)f->camera;
    out->seq = f->seq;
    out->capture_ns = f->capture_ns;
    out->announce_ns = f->announce_ns;
    out->missed = f->missed;
    out->token_ = token;
    out->frame.width = c->info.width;
    out->frame.height = c->info.height;
    out->frame.format = c->info.format;
    out->frame.memory = OMMA_MEMORY_DEVICE;
    if (!s->watch) {
        CUdeviceptr slot = c->mem.base + (CUdeviceptr)f->slot * c->desc.slot_bytes;
        for (int p = 0; p < c->planes; p++) {
            out->frame.planes[p] = (const uint8_t *)(uintptr_t)(slot + c->plane_offset[p]);
            out->frame.pitch[p] = c->row_bytes[p];
        }
    }
    return OMMA_OK;
}

omma_status omma_bus_next(omma_bus_subscriber *sub, int timeout_ms, omma_bus_frame *out)
{
    OMMA_TRY(enter_call(sub, "omma_bus_next"));
    if (!out)
        return leave_call(sub, OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_bus_next: out is NULL"));
    return leave_call(sub, next_frame(sub, timeout_ms, out));
}

static hold *held(omma_bus_subscriber *s, const omma_bus_frame *f)
{
    if (s->watch || !f || f->token_ < 0 || f->token_ >= s->n_holds)
        return NULL;
    hold *h = &s->holds[f->token_];
    if (h->state != HOLD_HELD || h->seq != f->seq || s->cams[h->cam].info.index != f->camera)
        return NULL;
    return h;
}

omma_status omma_bus_wait(omma_bus_subscriber *sub, const omma_bus_frame *f, void *stream)
{
    (void)stream; /* a frame is announced once it is in its slot: the
                   * stream has nothing to wait for (on this GPU) */
    OMMA_TRY(enter_call(sub, "omma_bus_wait"));
    if (!held(sub, f))
        return leave_call(sub, OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                                         "omma_bus_wait: not a frame this subscriber holds"));
    return leave_call(sub, OMMA_OK);
}

omma_status omma_bus_release(omma_bus_subscriber *sub, omma_bus_frame *f, void *stream)
{
    OMMA_TRY(enter_call(sub, "omma_bus_release"));
    hold *h = held(sub, f);
    if (!h)
        return leave_call(sub, OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                                         "omma_bus_release: not a frame this subscriber holds"));
    omma_status st = OMMA_OK;
    if (sub->closed) {
        h->state = HOLD_FREE; /* nobody to tell */
        sub->cams[h->cam].held--;
    } else if (!stream) {
        board_release(sub, h); /* not read: given back now */
    } else { /* on the board once the reads enqueued on stream have run */
        int another = sub->pending && sub->pstream != (CUstream)stream;
        int last = sub->next_taken >= sub->batch.count; /* of the publisher's message */
        omma_scope scope;
        int cuda = another || last; /* else no CUDA call at all */
        if (cuda)
            st = omma_device_enter(sub->dev, &scope);
        int entered = cuda && st == OMMA_OK;
        if (entered)
            finish_releases(sub);
        if (entered && another)
            st = seal_group(sub); /* a group is one stream's (on failure, given back if it could) */
        if (!cuda || (entered && (!another || !sub->pending))) {
            h->state = HOLD_PENDING;
            sub->cams[h->cam].held--;
            sub->cams[h->cam].owed++;
            sub->rqueue[(sub->rhead + sub->releasing + sub->pending++) % sub->n_holds] =
                (int)(h - sub->holds);
            sub->pstream = (CUstream)stream;
            if (last) { /* the next call goes to the socket: one event for the group */
                omma_status sealed = seal_group(sub);
                st = st == OMMA_OK ? sealed : st;
            }
        }
        if (entered)
            st = gpu_leave_keep(&scope, st);
    }
    if (h->state != HOLD_HELD) /* else still held: release again */
        f->token_ = -1;
    return leave_call(sub, st);
}

omma_status omma_bus_results(const omma_bus_subscriber *sub, const omma_bus_frame *f,
                             omma_face *faces, int max, int *n)
{
    if (!sub || !f || !n || (max > 0 && !faces))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_bus_results: NULL argument");
    return bus_results_read(&sub->results, f->camera, f->seq, faces, max, n);
}

void omma_bus_close(omma_bus_subscriber *sub)
{
    if (!sub)
        return;
    if (!sub->closed && sub->fd >= 0) {
        bus_msg m = {.type = BUS_MSG_BYE};
        snprintf(m.u.text.text, sizeof m.u.text.text, "subscriber closes");
        unsigned char buf[sizeof(bus_header) + sizeof(bus_text)];
        size_t n = bus_msg_encode(&m, buf, sizeof buf);
        bus_send(sub->fd, buf, n, -1);
        omma_clear_error();
    }
    free_subscriber(sub);
}

static int is_socket_name(const struct dirent *d)
{
    size_t n = strlen(d->d_name);
    return n > 5 && strcmp(d->d_name + n - 5, ".sock") == 0;
}

omma_status omma_bus_list(const char *dir, omma_bus_listing *out, int max, int *n)
{
    if (!n || (max > 0 && !out))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_bus_list: NULL argument");
    *n = 0;
    char d[256];
    OMMA_TRY(bus_dir(dir, d, sizeof d));
    struct dirent **names = NULL;
    int k = scandir(d, &names, is_socket_name, alphasort);
    if (k < 0)
        return OMMA_FAIL(OMMA_ERR_IO, "bus directory %s: scandir failed", d);
    for (int i = 0; i < k; i++) {
        char name[BUS_NAME_MAX];
        size_t len = strlen(names[i]->d_name) - 5;
        if (len < sizeof name) {
            memcpy(name, names[i]->d_name, len);
            name[len] = '\0';
            omma_bus_options o;
            omma_bus_options_init(&o);
            o.dir = d;
            o.watch = 1;
            o.timeout_ms = 500;
            omma_bus_subscriber *s = NULL;
            if (bus_name_check("bus name", name) == OMMA_OK &&
                omma_bus_subscribe(NULL, name, &o, &s) == OMMA_OK) {
                if (*n < max) {
                    omma_bus_listing *l = &out[*n];
                    snprintf(l->name, sizeof l->name, "%s", name);
                    l->publisher_pid = s->publisher_pid;
                    l->cameras = s->n;
                    l->subscribers = s->subscribers - 1;
                }
                (*n)++;
                omma_bus_close(s);
            }
            omma_clear_error();
        }
        free(names[i]);
    }
    free(names);
    return OMMA_OK;
}
