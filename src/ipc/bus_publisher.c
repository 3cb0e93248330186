#define _GNU_SOURCE /* pipe2, pthread_setname_np */
/* The publishing side of a frame bus (see bus_publisher.h). One mutex
 * guards the hold bookkeeping and the seats; the socket thread does the
 * slow parts (handshakes, event creation) outside it. */
#include "ipc/bus_publisher.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "gpu/check.h"
#include "gpu/fault.h"
#include "ipc/bus_board.h"
#include "ipc/bus_holds.h"
#include "ipc/bus_memory.h"
#include "ipc/bus_proto.h"
#include "ipc/bus_results.h"
#include "ipc/bus_socket.h"
#include "omma/log.h"

#define BUS_QUEUE 4096 /* frames enqueued and not yet announced, all cameras */
#define HELLO_MS 2000 /* a connection must say HELLO within this */
#define CONTROL_MS 1000 /* handshake messages must be taken within this */
#define SPIN_US                                                                                    \
    50 /* the announcer polls a frame's write this long, then sleeps                               \
        * (bus_pub_options.announce_spin_us) */

/* A frame whose write is enqueued, to announce once its event completes. */
typedef struct pending {
    int camera, slot;
    uint64_t seq, capture_ns;
    CUevent written; /* the slot's, recorded after the write */
} pending;

typedef struct pub_camera {
    int added;
    char name[BUS_NAME_MAX];
    omma_device *dev;
    int gpu;
    uint8_t uuid[16];
    int slots, width, height, format;
    int blocking; /* the ring blocks its producer: every frame may be asked */
    int waiting; /* the producer found no room (counted once per frame) */
    size_t frame_bytes, slot_bytes;
    bus_memory mem;
    CUevent written[BUS_MAX_SLOTS]; /* recorded after each write into the slot */
    bus_holds holds; /* under the publisher's lock */
} pub_camera;

enum { SEAT_FREE = 0, SEAT_HELLO, SEAT_ACTIVE };

typedef struct seat {
    int state;
    int fd;
    pid_t pid;
    uint64_t hello_deadline;
    int max_holds, watch, every;
    uint8_t *wants; /* per camera */
    bus_board board; /* where it gives frames back (not for watchers) */
} seat;

struct bus_pub {
    bus_pub_options opt;
    char name[BUS_NAME_MAX];
    char path[256];
    int listen_fd;
    int wake[2];
    pthread_t thread, announcer;
    int started;
    atomic_int stop;
    /* Frames to announce, oldest at qhead (producers -> the announcer). */
    pthread_mutex_t qlock;
    pthread_cond_t qmore;
    pending queue[BUS_QUEUE];
    int qhead, qcount;
    atomic_ulong dropped; /* announcements dropped (the queue overflowed) */
    bus_results results;
    pthread_mutex_t lock;
    /* Held by the announcer while it sends FRAMES (taken while it holds
     * lock, so the seats it found active keep their sockets until it is
     * done) and by end_seat while it closes a socket: the producer, which
     * takes lock, never waits for those sends. */
    pthread_mutex_t send_lock;
    pub_camera *cams;
    seat seats[BUS_MAX_SEATS];
    bus_pub_stats stats; /* under lock */
};

omma_status bus_pub_create(const bus_pub_options *opt, bus_pub **out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "bus_pub_create: out is NULL");
    *out = NULL;
    if (!opt)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "bus_pub_create: options are NULL");
    OMMA_TRY(bus_name_check("bus name", opt->name));
    if (opt->cameras < 1 || opt->cameras > BUS_MAX_CAMERAS || opt->max_faces < 1 ||
        opt->max_faces > 64 || opt->max_subscribers < 1 || opt->max_subscribers > BUS_MAX_SEATS ||
        opt->announce_spin_us > 1000000)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "bus %s: %d cameras (1..%d), %d faces (1..64), %d subscribers (1..%d) or "
                         "%d us of polling (up to 1000000)",
                         opt->name, opt->cameras, BUS_MAX_CAMERAS, opt->max_faces,
                         opt->max_subscribers, BUS_MAX_SEATS, opt->announce_spin_us);
    bus_pub *p = calloc(1, sizeof *p);
    if (!p)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "bus %s: publisher state", opt->name);
    p->cams = calloc((size_t)opt->cameras, sizeof *p->cams);
    if (!p->cams) {
        free(p);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "bus %s: camera state", opt->name);
    }
    p->opt = *opt;
    snprintf(p->name, sizeof p->name, "%s", opt->name);
    p->opt.name = p->name;
    p->opt.dir = NULL;
    p->listen_fd = -1;
    p->wake[0] = p->wake[1] = -1;
    p->results.fd = -1;
    for (int i = 0; i < BUS_MAX_SEATS; i++)
        p->seats[i].fd = p->seats[i].board.fd = -1;
    pthread_mutex_init(&p->lock, NULL);
    pthread_mutex_init(&p->send_lock, NULL);
    pthread_mutex_init(&p->qlock, NULL);
    pthread_cond_init(&p->qmore, NULL);
    omma_status st = bus_socket_path(opt->dir, opt->name, p->path, sizeof p->path);
    if (st == OMMA_OK)
        st = bus_results_create(opt->cameras, 2 * BUS_MAX_SLOTS, opt->max_faces, &p->results);
    if (st == OMMA_OK && pipe2(p->wake, O_CLOEXEC | O_NONBLOCK) != 0)
        st = OMMA_FAIL(OMMA_ERR_IO, "bus %s: pipe: %s", opt->name, strerror(errno));
    if (st == OMMA_OK)
        st = bus_listen(p->path, &p->listen_fd);
    if (st != OMMA_OK) {
        bus_pub_destroy(p);
        return st;
    }
    *out = p;
    return OMMA_OK;
}

omma_status bus_pub_add_camera(bus_pub *p, int index, const char *name, omma_device *dev, int slots,
                               int width, int height, omma_pixel_format format, size_t frame_bytes,
                               size_t slot_bytes, int blocking, bus_pub_slots *out)
{
    if (!p || !dev || !out || index < 0 || index >= p->opt.cameras || p->cams[index].added ||
        slots < 1 || slots > BUS_MAX_SLOTS || frame_bytes == 0 || slot_bytes < frame_bytes)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "bus_pub_add_camera: bad argument (camera %d)",
                         index);
    pub_camera *c = &p->cams[index];
    memset(out, 0, sizeof *out);
    snprintf(c->name, sizeof c->name, "%s", name && *name ? name : "camera");
    c->dev = dev;
    c->gpu = omma_device_ordinal(dev);
    CUdevice cu;
    OMMA_TRY(OMMA_CK(gpu_cu.cuDeviceGet(&cu, c->gpu)));
    CUuuid uuid;
    OMMA_TRY(OMMA_CK(gpu_cu.cuDeviceGetUuid(&uuid, cu)));
    memcpy(c->uuid, uuid.bytes, 16);
    c->slots = slots;
    c->blocking = blocking != 0;
    c->width = width;
    c->height = height;
    c->format = (int)format;
    c->frame_bytes = frame_bytes;
    c->slot_bytes = slot_bytes;
    omma_status st = bus_memory_create(dev, slot_bytes * (size_t)slots, &c->mem);
    for (int i = 0; i < slots && st == OMMA_OK; i++) {
        st = GPU_FAULT_POINT(OMMA_ERR_CUDA, "cuEventCreate");
        if (st == OMMA_OK)
            st = OMMA_CK(gpu_cu.cuEventCreate(&c->written[i],
                                              CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC));
    }
    if (st != OMMA_OK) {
        for (int i = 0; i < slots; i++)
            if (c->written[i])
                gpu_cu.cuEventDestroy(c->written[i]);
        if (c->mem.base)
            bus_memory_destroy(&c->mem);
        memset(c, 0, sizeof *c);
        return st;
    }
    bus_holds_init(&c->holds, slots);
    c->added = 1;
    out->base = c->mem.base;
    return OMMA_OK;
}

/* ---- producer side ------------------------------------------------------ */

void bus_pub_lock(bus_pub *p)
{
    pthread_mutex_lock(&p->lock);
}

void bus_pub_unlock(bus_pub *p)
{
    pthread_mutex_unlock(&p->lock);
}

/* Under the lock: the holds of seat si on camera that its board says it
 * gave back are free now. Only when the seat holds its most frames of the
 * camera (full) or holds slot (slot >= 0): a look at a word or a few. */
static void reap(bus_pub *p, int camera, int si, int slot)
{
    const bus_board *b = &p->seats[si].board;
    bus_holds *h = &p->cams[camera].holds;
    if (!b->words)
        return;
    uint64_t bit = 1ull << si;
    for (int k = slot >= 0 ? slot : 0; k < (slot >= 0 ? slot + 1 : h->slots); k++)
        if ((h->slot[k].held & bit) && bus_board_released(b, camera, k) == h->slot[k].seq)
            bus_holds_release(h, si, k, h->slot[k].seq);
}

int bus_pub_slot_busy(bus_pub *p, int camera, int slot)
{
    pub_camera *c = &p->cams[camera];
    for (int si = 0; si < BUS_MAX_SEATS; si++) {
        const bus_hold_seat *st = &c->holds.seat[si];
        if (st->active && st->every && st->holds >= st->max_holds)
            reap(p, camera, si, -1);
    }
    for (uint64_t held = c->holds.slot[slot].held; held; held &= held - 1)
        reap(p, camera, __builtin_ctzll(held), slot);
    if (!bus_holds_room(&c->holds)) {
        p->stats.every_waits += !c->waiting;
        c->waiting = 1;
        return 1;
    }
    return bus_holds_busy(&c->holds, slot);
}

void bus_pub_slot_write(bus_pub *p, int camera, int slot, uint64_t seq)
{
    p->cams[camera].waiting = 0;
    bus_holds_write(&p->cams[camera].holds, slot, seq);
}

/* Under the lock: every-frame seats let go of frame seq of slot, which
 * will never be announced; they missed it. */
static void drop_every_holds(bus_pub *p, int camera, int slot, uint64_t seq)
{
    pub_camera *c = &p->cams[camera];
    for (int si = 0; si < p->opt.max_subscribers; si++)
        if (c->holds.seat[si].every && bus_holds_release(&c->holds, si, slot, seq) == 0) {
            c->holds.seat[si].missed++;
            p->stats.missed++;
        }
}

void bus_pub_slot_unwritten(bus_pub *p, int camera, int slot, uint64_t seq)
{
    pthread_mutex_lock(&p->lock);
    drop_every_holds(p, camera, slot, seq);
    pthread_mutex_unlock(&p->lock);
}

/* A seat's FRAMES message being filled, and the holds it gives. */
typedef struct batch {
    bus_msg m;
    int given[BUS_MAX_BATCH]; /* 1: a hold was given for the frame */
    unsigned char buf[BUS_MSG_MAX_BYTES]; /* m encoded */
    size_t bytes;
    int fd; /* the seat's socket when encoded */
    omma_status sent;
} batch;

/* Under the lock: adds frame pd to every seat that wants its camera (a
 * seat holding too much misses it). A round offers at most BUS_MAX_BATCH
 * frames, so a seat's frames fit one message. */
static void offer(bus_pub *p, batch *batches, const pending *pd, uint64_t now)
{
    pub_camera *c = &p->cams[pd->camera];
    for (int si = 0; si < p->opt.max_subscribers; si++) {
        seat *s = &p->seats[si];
        if (s->state != SEAT_ACTIVE || !s->wants[pd->camera])
            continue;
        const bus_hold_seat *st = &c->holds.seat[si];
        if (st->holds >= st->max_holds)
            reap(p, pd->camera, si, -1);
        bus_offer_result r = bus_holds_offer(&c->holds, pd->slot, pd->seq, si);
        if (r != BUS_OFFER_GIVEN && r != BUS_OFFER_WATCH) {
            p->stats.missed += r == BUS_OFFER_MISSED;
            continue;
        }
        batch *b = &batches[si];
        bus_frames *fs = &b->m.u.frames;
        b->m.type = BUS_MSG_FRAMES;
        b->given[fs->count] = r == BUS_OFFER_GIVEN;
        p->stats.given += r == BUS_OFFER_GIVEN; /* taken back if the send fails */
        fs->frames[fs->count++] = (bus_frame){(uint32_t)pd->camera,
                                              (uint32_t)pd->slot,
                                              pd->seq,
                                              pd->capture_ns,
                                              now,
                                              c->holds.seat[si].missed,
                                              0};
    }
}

/* Tells every seat about frames take[0..n) (all in their slots, n <=
 * BUS_MAX_BATCH): one FRAMES message per seat. The holds are given under
 * the lock; the messages are sent after it, under send_lock only, so the
 * producer's puts never wait for 16 sends. A frame not delivered (queue
 * full: the subscriber is not reading; or it hung up: the socket thread
 * will notice) is a miss and its hold is given back. */
static void announce_frames(bus_pub *p, const pending *take, int n, batch *batches)
{
    uint64_t now = core_now_ns();
    int seats = p->opt.max_subscribers, failed = 0;
    pthread_mutex_lock(&p->lock);
    for (int i = 0; i < n; i++) {
        const pending *pd = &take[i];
        if (p->cams[pd->camera].holds.slot[pd->slot].seq != pd->seq)
            continue; /* the slot was rewritten meanwhile */
        p->stats.announced++;
        offer(p, batches, pd, now);
    }
    for (int si = 0; si < seats; si++) {
        batch *b = &batches[si];
        b->bytes = b->m.u.frames.count ? bus_msg_encode(&b->m, b->buf, sizeof b->buf) : 0;
        b->fd = p->seats[si].fd;
    }
    pthread_mutex_lock(&p->send_lock);
    pthread_mutex_unlock(&p->lock);
    for (int si = 0; si < seats; si++) {
        batch *b = &batches[si];
        if (!b->m.u.frames.count)
            continue;
        b->sent = b->bytes ? bus_send(b->fd, b->buf, b->bytes, -1) : OMMA_ERR_INTERNAL;
        failed |= b->sent != OMMA_OK;
    }
    pthread_mutex_unlock(&p->send_lock);
    if (failed) {
        omma_clear_error();
        pthread_mutex_lock(&p->lock);
    }
    for (int si = 0; si < seats; si++) {
        batch *b = &batches[si];
        const bus_frames *fs = &b->m.u.frames;
        for (uint32_t i = 0; i < fs->count; i++) {
            const bus_frame *f = &fs->frames[i];
            if (b->sent == OMMA_OK)
                continue;
            pub_camera *c = &p->cams[f->camera];
            p->stats.given -= b->given[i];
            if (b->given[i])
                bus_holds_release(&c->holds, si, (int)f->slot, f->seq);
            c->holds.seat[si].missed++;
            p->stats.missed++;
        }
        b->m.u.frames.count = 0;
        b->sent = OMMA_OK;
    }
    if (failed)
        pthread_mutex_unlock(&p->lock);
}

/* Waits until a frame is in its slot: a write takes microseconds, so the
 * thread polls for up to spin_ns (SPIN_US) before it sleeps (omma's
 * contexts block on synchronization), which would add the driver's
 * wake-up to the frame's latency. (Polling up to 300 us, for a 64-camera
 * burst, gave no better p99 on the H200: 2.17 ms aligned, and 1.7 ms
 * spread.) */
static void wait_written(CUevent written, uint64_t spin_ns)
{
    uint64_t until = core_now_ns() + spin_ns;
    while (spin_ns) {
        if (gpu_cu.cuEventQuery(written) != CUDA_ERROR_NOT_READY)
            return;
        if (core_now_ns() >= until)
            break;
    }
    (void)gpu_cu.cuEventSynchronize(written);
}

/* Takes up to most - n frames from the queue into take[n..]; returns the
 * new count. wait: sleeps until there is one (or the publisher stops). */
static int take_queued(bus_pub *p, pending *take, int n, int most, int wait)
{
    pthread_mutex_lock(&p->qlock);
    while (wait && !p->qcount && !atomic_load(&p->stop))
        pthread_cond_wait(&p->qmore, &p->qlock);
    for (; n < most && p->qcount; n++) {
        take[n] = p->queue[p->qhead];
        p->qhead = (p->qhead + 1) % BUS_QUEUE;
        p->qcount--;
    }
    pthread_mutex_unlock(&p->qlock);
    return n;
}

/* Enters dev's context for the announcer (leaving the one it is in). */
static omma_device *announcer_enter(omma_device *dev, omma_device *entered, omma_scope *scope)
{
    if (dev == entered)
        return entered;
    if (entered)
        omma_device_leave(scope);
    return omma_device_enter(dev, scope) == OMMA_OK ? dev : NULL;
}

/* The announcing thread: waits until the oldest frame enqueued is in its
 * slot, then tells each subscriber in one message about it and every
 * frame after it that is in its slot by then (in stream order: the
 * frames enqueued meanwhile too), so a burst of cameras goes out in a few
 * messages and no frame waits for a later one's write. */
static void *announce(void *arg)
{
    bus_pub *p = arg;
    static const int most = BUS_MAX_BATCH;
    int spin_us = p->opt.announce_spin_us ? p->opt.announce_spin_us : SPIN_US;
    uint64_t spin_ns = spin_us > 0 ? (uint64_t)spin_us * 1000u : 0;
    pending *take = malloc(sizeof *take * (size_t)most);
    batch *batches = calloc((size_t)p->opt.max_subscribers, sizeof *batches);
    int n = 0;
    while (take && batches) {
        if (!n)
            n = take_queued(p, take, 0, most, 1);
        if (!n && atomic_load(&p->stop))
            break;
        if (!n)
            continue;
        omma_device *entered = NULL;
        omma_scope scope;
        entered = announcer_enter(p->cams[take[0].camera].dev, entered, &scope);
        if (entered)
            wait_written(take[0].written, spin_ns);
        int k = 1; /* take[0..k) are in their slots */
        for (int more = 1; more;) {
            for (; k < n; k++) {
                entered = announcer_enter(p->cams[take[k].camera].dev, entered, &scope);
                if (entered && gpu_cu.cuEventQuery(take[k].written) == CUDA_ERROR_NOT_READY)
                    break;
            }
            more = k == n && n < most && (n = take_queued(p, take, n, most, 0)) > k;
        }
        if (entered)
            omma_device_leave(&scope);
        announce_frames(p, take, k, batches);
        memmove(take, take + k, sizeof *take * (size_t)(n - k));
        n -= k;
    }
    if (!take || !batches)
        omma_log(OMMA_LOG_ERROR, "bus %s: no memory for the announcing thread", p->name);
    free(take);
    free(batches);
    return NULL;
}

omma_status bus_pub_frame_ready(bus_pub *p, int camera, int slot, uint64_t seq, uint64_t capture_ns,
                                CUstream stream)
{
    CUevent written = p->cams[camera].written[slot];
    OMMA_TRY(OMMA_CK(gpu_cu.cuEventRecord(written, stream)));
    pending lost = {.camera = -1};
    pthread_mutex_lock(&p->qlock);
    if (p->qcount == BUS_QUEUE) { /* the announcer is far behind: the oldest goes */
        lost = p->queue[p->qhead];
        p->qhead = (p->qhead + 1) % BUS_QUEUE;
        p->qcount--;
        atomic_fetch_add(&p->dropped, 1);
    }
    p->queue[(p->qhead + p->qcount++) % BUS_QUEUE] =
        (pending){camera, slot, seq, capture_ns, written};
    pthread_cond_signal(&p->qmore);
    pthread_mutex_unlock(&p->qlock);
    if (lost.camera >= 0)
        bus_pub_slot_unwritten(p, lost.camera, lost.slot, lost.seq);
    return OMMA_OK;
}

void bus_pub_results(bus_pub *p, int camera, uint64_t seq, uint64_t capture_ns,
                     const omma_face *faces, int n)
{
    if (p && camera >= 0 && camera < p->opt.cameras)
        bus_results_write(&p->results, camera, seq, capture_ns, faces, n);
}

void bus_pub_get_stats(bus_pub *p, bus_pub_stats *out)
{
    pthread_mutex_lock(&p->lock);
    *out = p->stats;
    out->subscribers = out->watchers = 0;
    for (int i = 0; i < BUS_MAX_SEATS; i++) {
        const seat *s = &p->seats[i];
        out->subscribers += s->state == SEAT_ACTIVE && !s->watch;
        out->watchers += s->state == SEAT_ACTIVE && s->watch;
    }
    pthread_mutex_unlock(&p->lock);
}

/* ---- the socket thread -------------------------------------------------- */

/* Ends seat si's session (reason logged; sent as BYE/ERROR when st). */
static void end_seat(bus_pub *p, int si, omma_status st, const char *reason)
{
    seat *s = &p->seats[si];
    if (s->state == SEAT_FREE)
        return;
    if (reason) {
        bus_msg m = {.type = st == OMMA_OK ? BUS_MSG_BYE : BUS_MSG_ERROR};
        m.u.text.status = (int32_t)st;
        snprintf(m.u.text.text, sizeof m.u.text.text, "%s", reason);
        unsigned char buf[sizeof(bus_header) + sizeof(bus_text)];
        size_t n = bus_msg_encode(&m, buf, sizeof buf);
        bus_send(s->fd, buf, n, -1);
        omma_clear_error();
        omma_log(st == OMMA_OK ? OMMA_LOG_INFO : OMMA_LOG_WARN, "bus %s: subscriber pid %d: %s",
                 p->name, (int)s->pid, reason);
    }
    pthread_mutex_lock(&p->lock);
    if (s->state == SEAT_ACTIVE) {
        for (int c = 0; c < p->opt.cameras; c++)
            bus_holds_seat_close(&p->cams[c].holds, si);
        p->stats.ended++;
    }
    seat old = *s;
    *s = (seat){.fd = -1, .board.fd = -1};
    pthread_mutex_unlock(&p->lock);
    pthread_mutex_lock(&p->send_lock); /* the announcer is not sending to it */
    close(old.fd);
    pthread_mutex_unlock(&p->send_lock);
    free(old.wants);
    bus_board_close(&old.board);
}

static omma_status send_msg(int fd, const bus_msg *m, int send_fd)
{
    unsigned char buf[BUS_MSG_MAX_BYTES];
    size_t n = bus_msg_encode(m, buf, sizeof buf);
    if (n == 0)
        return OMMA_FAIL(OMMA_ERR_INTERNAL, "bus: encoding %s failed", bus_msg_type_name(m->type));
    return bus_send_wait(fd, buf, n, send_fd, CONTROL_MS);
}

/* HELLO from seat si: check it, send WELCOME and one CAMERA (with the
 * ring's memory fd) per camera wanted, then activate the seat. */
static void welcome(bus_pub *p, int si, const bus_hello *h)
{
    seat *s = &p->seats[si];
    char why[200] = "";
    s->wants = calloc((size_t)p->opt.cameras, 1);
    if (!s->wants) {
        end_seat(p, si, OMMA_ERR_OUT_OF_MEMORY, "out of memory");
        return;
    }
    int wanted = 0;
    if (h->n_cameras == 0) {
        memset(s->wants, 1, (size_t)p->opt.cameras);
        wanted = p->opt.cameras;
    }
    for (uint32_t i = 0; i < h->n_cameras && !why[0]; i++) {
        if (h->cameras[i] >= p->opt.cameras)
            snprintf(why, sizeof why, "camera %u does not exist (the bus has %d)",
                     (unsigned)h->cameras[i], p->opt.cameras);
        else
            wanted += !s->wants[h->cameras[i]], s->wants[h->cameras[i]] = 1;
    }
    if (why[0]) {
        pthread_mutex_lock(&p->lock);
        p->stats.refused++;
        pthread_mutex_unlock(&p->lock);
        end_seat(p, si, OMMA_ERR_INVALID_ARG, why);
        return;
    }
    s->watch = (h->flags & BUS_HELLO_WATCH) != 0;
    s->every = (h->flags & BUS_HELLO_EVERY_FRAME) != 0 && !s->watch;
    for (int c = 0; c < p->opt.cameras && s->every && !why[0]; c++)
        if (s->wants[c] && !p->cams[c].blocking)
            snprintf(why, sizeof why,
                     "camera %d (%s) is live: every frame can be asked only of cameras whose "
                     "publisher waits for its readers (files)",
                     c, p->cams[c].name);
    if (why[0]) {
        pthread_mutex_lock(&p->lock);
        p->stats.refused++;
        pthread_mutex_unlock(&p->lock);
        end_seat(p, si, OMMA_ERR_UNSUPPORTED, why);
        return;
    }
    s->max_holds = (int)h->max_holds;
    omma_status st = OMMA_OK;
    int subscribers = 1;
    pthread_mutex_lock(&p->lock);
    for (int i = 0; i < BUS_MAX_SEATS; i++)
        subscribers += i != si && p->seats[i].state == SEAT_ACTIVE;
    pthread_mutex_unlock(&p->lock);
    bus_msg m = {.type = BUS_MSG_WELCOME};
    m.u.welcome = (bus_welcome){(uint32_t)si,          (uint32_t)getpid(),
                                (uint32_t)wanted,      (uint32_t)p->opt.max_faces,
                                (uint32_t)subscribers, 0,
                                p->results.bytes};
    if (st == OMMA_OK)
        st = send_msg(s->fd, &m, p->results.fd);
    if (st == OMMA_OK && !s->watch) {
        bus_board board;
        st = bus_board_create(p->opt.cameras, &board);
        if (st == OMMA_OK) {
            pthread_mutex_lock(&p->lock);
            s->board = board;
            pthread_mutex_unlock(&p->lock);
            bus_msg bm = {.type = BUS_MSG_BOARD};
            bm.u.board = (bus_board_desc){(uint32_t)p->opt.cameras, 0, board.bytes};
            st = send_msg(s->fd, &bm, board.fd);
            pthread_mutex_lock(&p->lock);
            close(s->board.fd); /* the subscriber has its own copy; ours is mapped */
            s->board.fd = -1;
            pthread_mutex_unlock(&p->lock);
        }
    }
    for (int c = 0; c < p->opt.cameras && st == OMMA_OK; c++) {
        if (!s->wants[c])
            continue;
        pub_camera *pc = &p->cams[c];
        bus_msg cm = {.type = BUS_MSG_CAMERA};
        bus_camera *bc = &cm.u.camera;
        bc->index = (uint32_t)c;
        bc->width = (uint32_t)pc->width;
        bc->height = (uint32_t)pc->height;
        bc->format = (uint32_t)pc->format;
        bc->slots = (uint32_t)pc->slots;
        bc->slot_bytes = pc->slot_bytes;
        bc->frame_bytes = pc->frame_bytes;
        bc->alloc_bytes = pc->mem.bytes;
        bc->results_offset = bus_results_camera_offset(&p->results, c);
        bc->results_records = p->results.h.records;
        bc->gpu = pc->gpu;
        memcpy(bc->gpu_uuid, pc->uuid, 16);
        snprintf(bc->name, sizeof bc->name, "%s", pc->name);
        int fd = -1;
        if (!s->watch) {
            omma_scope scope;
            st = omma_device_enter(pc->dev, &scope);
            if (st == OMMA_OK) {
                st = bus_memory_export(&pc->mem, &fd);
                omma_device_leave(&scope);
            }
        }
        if (st == OMMA_OK)
            st = send_msg(s->fd, &cm, fd);
        if (fd >= 0)
            close(fd); /* the subscriber has its own copy now */
    }
    if (st != OMMA_OK) {
        snprintf(why, sizeof why, "handshake failed: %s", omma_last_error());
        end_seat(p, si, st, why);
        return;
    }
    pthread_mutex_lock(&p->lock);
    for (int c = 0; c < p->opt.cameras; c++)
        if (s->wants[c])
            bus_holds_seat_open(&p->cams[c].holds, si, s->max_holds, s->watch, s->every);
    s->state = SEAT_ACTIVE;
    p->stats.sessions++;
    pthread_mutex_unlock(&p->lock);
    omma_log(OMMA_LOG_INFO, "bus %s: subscriber pid %d attached (seat %d, %d cameras%s)", p->name,
             (int)s->pid, si, wanted,
             s->watch   ? ", watching"
             : s->every ? ", every frame"
                        : "");
}

/* Reads what seat si sent; ends the session on hang-up or a bad message. */
static void serve_seat(bus_pub *p, int si)
{
    seat *s = &p->seats[si];
    for (int k = 0; k < 256 && s->state != SEAT_FREE; k++) {
        unsigned char buf[BUS_MSG_MAX_BYTES];
        size_t n = 0;
        omma_status st = bus_recv(s->fd, buf, sizeof buf, &n, NULL, 0);
        if (st == OMMA_ERR_CLOSED) {
            omma_clear_error();
            end_seat(p, si, OMMA_OK, NULL);
            omma_log(OMMA_LOG_INFO, "bus %s: subscriber pid %d hung up", p->name, (int)s->pid);
            return;
        }
        if (st != OMMA_OK) {
            end_seat(p, si, st, omma_last_error());
            return;
        }
        if (n == 0)
            return;
        bus_msg m;
        st = bus_msg_decode(buf, n, &m);
        if (st != OMMA_OK) {
            char why[300];
            snprintf(why, sizeof why, "malformed message: %s", omma_last_error());
            end_seat(p, si, st, why);
            return;
        }
        if (s->state == SEAT_HELLO && m.type == BUS_MSG_HELLO) {
            welcome(p, si, &m.u.hello);
        } else if (m.type == BUS_MSG_BYE) {
            end_seat(p, si, OMMA_OK, NULL);
            return;
        } else {
            char why[200];
            snprintf(why, sizeof why, "unexpected %s message", bus_msg_type_name(m.type));
            end_seat(p, si, OMMA_ERR_FORMAT, why);
            return;
        }
    }
}

static void accept_all(bus_pub *p)
{
    for (;;) {
        int fd;
        pid_t pid;
        uid_t uid;
        gid_t gid;
        if (bus_accept(p->listen_fd, &fd, &pid, &uid, &gid) != OMMA_OK || fd < 0)
            return;
        int si = -1;
        if (!bus_peer_allowed(uid, gid, p->opt.allow_gid)) {
            omma_log(OMMA_LOG_WARN, "bus %s: refused pid %d of uid %u: another user", p->name,
                     (int)pid, (unsigned)uid);
        } else {
            for (int i = 0; i < p->opt.max_subscribers && si < 0; i++)
                if (p->seats[i].state == SEAT_FREE)
                    si = i;
            if (si < 0)
                omma_log(OMMA_LOG_WARN, "bus %s: refused pid %d: %d subscribers already", p->name,
                         (int)pid, p->opt.max_subscribers);
        }
        if (si < 0) {
            bus_msg m = {.type = BUS_MSG_ERROR};
            m.u.text.status = OMMA_ERR_BUSY;
            snprintf(m.u.text.text, sizeof m.u.text.text, "bus %s refused the connection (%s)",
                     p->name, bus_peer_allowed(uid, gid, p->opt.allow_gid) ? "full" : "uid");
            unsigned char buf[sizeof(bus_header) + sizeof(bus_text)];
            size_t n = bus_msg_encode(&m, buf, sizeof buf);
            bus_send(fd, buf, n, -1);
            omma_clear_error();
            close(fd);
            pthread_mutex_lock(&p->lock);
            p->stats.refused++;
            pthread_mutex_unlock(&p->lock);
            continue;
        }
        pthread_mutex_lock(&p->lock);
        p->seats[si] = (seat){.state = SEAT_HELLO,
                              .fd = fd,
                              .board.fd = -1,
                              .pid = pid,
                              .hello_deadline = core_now_ns() + HELLO_MS * 1000000ull};
        pthread_mutex_unlock(&p->lock);
    }
}

static void *serve(void *arg)
{
    bus_pub *p = arg;
    while (!atomic_load(&p->stop)) {
        struct pollfd fds[2 + BUS_MAX_SEATS];
        int who[2 + BUS_MAX_SEATS];
        int n = 0;
        fds[n] = (struct pollfd){p->listen_fd, POLLIN, 0}, who[n++] = -1;
        fds[n] = (struct pollfd){p->wake[0], POLLIN, 0}, who[n++] = -2;
        uint64_t now = core_now_ns();
        for (int i = 0; i < BUS_MAX_SEATS; i++) {
            if (p->seats[i].state == SEAT_FREE)
                continue;
            if (p->seats[i].state == SEAT_HELLO && now > p->seats[i].hello_deadline) {
                end_seat(p, i, OMMA_ERR_TIMEOUT, "no HELLO in time");
                continue;
            }
            fds[n] = (struct pollfd){p->seats[i].fd, POLLIN, 0}, who[n++] = i;
        }
        int r = poll(fds, (nfds_t)n, 100);
        if (r <= 0)
            continue;
        for (int k = 0; k < n; k++) {
            if (!fds[k].revents)
                continue;
            if (who[k] == -1)
                accept_all(p);
            else if (who[k] == -2) {
                char b[64];
                while (read(p->wake[0], b, sizeof b) > 0) {
                }
            } else
                serve_seat(p, who[k]);
        }
    }
    return NULL;
}

omma_status bus_pub_start(bus_pub *p)
{
    for (int c = 0; c < p->opt.cameras; c++)
        if (!p->cams[c].added)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "bus %s: camera %d was not added", p->name, c);
    if (pthread_create(&p->thread, NULL, serve, p) != 0)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "bus %s: pthread_create", p->name);
    if (pthread_create(&p->announcer, NULL, announce, p) != 0) {
        atomic_store(&p->stop, 1);
        pthread_join(p->thread, NULL);
        atomic_store(&p->stop, 0);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "bus %s: pthread_create", p->name);
    }
    /* Named for the thread listings (omma bench bus prints CPU by name). */
    (void)pthread_setname_np(p->thread, "bus-serve");
    (void)pthread_setname_np(p->announcer, "bus-announce");
    p->started = 1;
    omma_log(OMMA_LOG_INFO, "bus %s: publishing %d cameras at %s", p->name, p->opt.cameras,
             p->path);
    return OMMA_OK;
}

void bus_pub_destroy(bus_pub *p)
{
    if (!p)
        return;
    if (p->started) {
        atomic_store(&p->stop, 1);
        if (write(p->wake[1], "x", 1) < 0) {
            /* the poll timeout wakes the thread anyway */
        }
        pthread_join(p->thread, NULL);
        pthread_mutex_lock(&p->qlock);
        pthread_cond_broadcast(&p->qmore);
        pthread_mutex_unlock(&p->qlock);
        pthread_join(p->announcer, NULL);
    }
    for (int i = 0; i < BUS_MAX_SEATS; i++)
        end_seat(p, i, OMMA_OK, p->seats[i].state == SEAT_ACTIVE ? "the publisher stops" : NULL);
    if (p->listen_fd >= 0) {
        close(p->listen_fd);
        unlink(p->path);
    }
    for (int i = 0; i < 2; i++)
        if (p->wake[i] >= 0)
            close(p->wake[i]);
    for (int c = 0; p->cams && c < p->opt.cameras; c++) {
        pub_camera *pc = &p->cams[c];
        if (!pc->added)
            continue;
        omma_scope scope;
        if (omma_device_enter(pc->dev, &scope) == OMMA_OK) {
            for (int i = 0; i < pc->slots; i++)
                gpu_cu.cuEventDestroy(pc->written[i]);
            bus_memory_destroy(&pc->mem);
            omma_device_leave(&scope);
        }
    }
    bus_results_close(&p->results);
    pthread_mutex_destroy(&p->lock);
    pthread_mutex_destroy(&p->send_lock);
    pthread_mutex_destroy(&p->qlock);
    pthread_cond_destroy(&p->qmore);
    free(p->cams);
    free(p);
}
