/* When a subscriber's frames given back get their event (src/ipc/bus_seal.h),
 * without a GPU: the rules, then simulated runs. Cameras at a rate, each at
 * its own moment of the frame period or all at once (put one after
 * another, announced in rounds: a burst comes in several messages), are
 * written into a ring that takes the oldest slot no subscriber holds (the publisher's
 * holds, bus_holds.h) and announced to subscribers that take every frame,
 * give it back at once, and give their groups an event as
 * bus_subscriber.c does: when the frames of a message are all handed out
 * and when they wake (every DEFER_MS while frames are owed), if bus_seal.h
 * says so; the frames of a group reach the board once its event completed
 * (looked at in those calls, or polled while a camera has no room).
 * Checked: no subscriber misses a frame and the ring always has a slot; a
 * release reaches the board within the delay, two wakes and the event;
 * and the events are few: about one per delay for cameras at their own
 * moments, one or two per burst, but one per message when the delay is 0,
 * when a camera has no room for a late release (max_holds 1), or when the
 * ring has no slot to spare. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ipc/bus_holds.h"
#include "ipc/bus_seal.h"
#include "testing.h"

#define STEP_US 10
#define DEFER_US 2000 /* bus_subscriber.c's DEFER_MS */
#define ANNOUNCE_US 60 /* from the write to the announcer's next round */
#define ROUND_US                                                                                   \
    80 /* the announcer's rounds (16 sends): a message carries the                                 \
        * frames written since the last */
#define PUT_US 15 /* the producer's puts of a burst, one after another */
#define EVENT_US 30 /* a group's event completes this long after it is recorded */
#define MAX_CAMS 64
#define MAX_SUBS 8
#define MAX_OWED (MAX_CAMS * BUS_MAX_HOLDS)
#define NEVER INT64_MAX

static void rules(void)
{
    /* A ring leaves a slot to spare beyond every subscriber's holds. */
    CHECK(bus_seal_ring_tight(4 + 16 * 2, 16, 2) == 0); /* the runtime's sizing */
    CHECK(bus_seal_ring_tight(33, 16, 2) == 1);
    CHECK(bus_seal_ring_tight(34, 16, 2) == 0);
    CHECK(bus_seal_ring_tight(64, 16, 8) == 1); /* capped at 64 slots */
    /* A camera's releases wait only while it has room without them. */
    CHECK(bus_seal_camera_waits(0, 0, 0, 1, 2) == 1);
    CHECK(bus_seal_camera_waits(0, 0, 1, 1, 2) == 0);
    CHECK(bus_seal_camera_waits(0, 0, 0, 1, 1) == 0);
    CHECK(bus_seal_camera_waits(1, 0, 0, 1, 8) == 0); /* every frame: the producer waits */
    CHECK(bus_seal_camera_waits(0, 1, 0, 1, 8) == 0); /* no slot to spare */
    /* Age. */
    CHECK(bus_seal_old(1000, 1000, 0) == 1);
    CHECK(bus_seal_old(2999999, 1000000, 2000000) == 0);
    CHECK(bus_seal_old(3000000, 1000000, 2000000) == 1);
}

typedef struct sim_opts {
    int cameras, subscribers, max_holds, slots, aligned;
    double fps;
    int delay_us;
    double seconds;
} sim_opts;

/* A frame given back, not yet on the board (oldest first). */
typedef struct owed_frame {
    int cam, slot;
    uint64_t seq;
    int64_t given_back;
    int64_t done_at; /* its group's event completes (NEVER: pending) */
} owed_frame;

typedef struct sim_sub {
    int held[MAX_CAMS], owed[MAX_CAMS];
    owed_frame q[MAX_OWED];
    int n, pending; /* owed frames; the last `pending` of them have no event */
    int64_t pending_since, wake_at;
    int polling;
    long seals, messages, frames;
    int64_t worst_us; /* given back to on the board */
} sim_sub;

typedef struct sim {
    sim_opts o;
    bus_holds cams[MAX_CAMS];
    uint64_t seq[MAX_CAMS];
    int64_t next_capture[MAX_CAMS], announce_at[MAX_CAMS];
    int announce_slot[MAX_CAMS];
    sim_sub subs[MAX_SUBS];
    long drops, written, bad_releases;
} sim;

static int tight(const sim *s)
{
    return bus_seal_ring_tight(s->o.slots, s->o.subscribers, s->o.max_holds);
}

/* The group is due (bus_subscriber.c's seal_due). */
static int seal_due(const sim *s, const sim_sub *u, int64_t now)
{
    if (!u->pending)
        return 0;
    if (bus_seal_old((uint64_t)now, (uint64_t)u->pending_since, (uint64_t)s->o.delay_us))
        return 1;
    for (int i = u->n - u->pending; i < u->n; i++) {
        int c = u->q[i].cam;
        if (!bus_seal_camera_waits(0, tight(s), u->held[c], u->owed[c], s->o.max_holds))
            return 1;
    }
    return 0;
}

static void seal(sim_sub *u, int64_t now)
{
    for (int i = u->n - u->pending; i < u->n; i++)
        u->q[i].done_at = now + EVENT_US;
    u->pending = 0;
    u->seals++;
}

/* Writes on the board (the publisher's holds) what completed, oldest first. */
static void finish(sim *s, int si, int64_t now)
{
    sim_sub *u = &s->subs[si];
    int k = 0;
    while (k < u->n && u->q[k].done_at <= now) {
        owed_frame *f = &u->q[k++];
        s->bad_releases += bus_holds_release(&s->cams[f->cam], si, f->slot, f->seq) != 0;
        u->owed[f->cam]--;
        u->worst_us = now - f->given_back > u->worst_us ? now - f->given_back : u->worst_us;
    }
    memmove(u->q, u->q + k, sizeof u->q[0] * (size_t)(u->n - k));
    u->n -= k;
}

/* A camera with a frame owed has no room for its next one without it. */
static int urgent(const sim *s, const sim_sub *u)
{
    for (int i = 0; i < u->n; i++)
        if (u->held[u->q[i].cam] + u->owed[u->q[i].cam] >= s->o.max_holds)
            return 1;
    return 0;
}

/* omma_bus_next going to the socket: look, then poll or sleep. */
static void look(sim *s, int si, int64_t now)
{
    sim_sub *u = &s->subs[si];
    finish(s, si, now);
    if (seal_due(s, u, now))
        seal(u, now);
    int releasing = u->n - u->pending;
    u->polling = releasing && urgent(s, u);
    u->wake_at = u->polling ? NEVER : u->n ? now + DEFER_US : NEVER;
}

static void run(sim *s)
{
    const sim_opts *o = &s->o;
    int64_t period = (int64_t)(1e6 / o->fps);
    for (int c = 0; c < o->cameras; c++) {
        bus_holds_init(&s->cams[c], o->slots);
        for (int si = 0; si < o->subscribers; si++)
            bus_holds_seat_open(&s->cams[c], si, o->max_holds, 0, 0);
        s->next_capture[c] = o->aligned ? PUT_US * c : period * c / o->cameras;
        s->announce_at[c] = NEVER;
    }
    for (int si = 0; si < o->subscribers; si++)
        s->subs[si].wake_at = NEVER;
    int64_t end = (int64_t)(o->seconds * 1e6);
    for (int64_t t = 0; t < end; t += STEP_US) {
        /* Writes: the oldest slot nobody holds (the ring keeps the newest). */
        for (int c = 0; c < o->cameras; c++) {
            if (s->next_capture[c] > t)
                continue;
            s->next_capture[c] += period;
            int best = -1;
            for (int k = 0; k < o->slots; k++)
                if (!bus_holds_busy(&s->cams[c], k) &&
                    (best < 0 || s->cams[c].slot[k].seq < s->cams[c].slot[best].seq))
                    best = k;
            if (best < 0) {
                s->drops++;
                continue;
            }
            bus_holds_write(&s->cams[c], best, ++s->seq[c]);
            s->written++;
            s->announce_slot[c] = best;
            s->announce_at[c] = (t + ANNOUNCE_US + ROUND_US - 1) / ROUND_US * ROUND_US;
        }
        /* Frames announced together make one message per subscriber, which
         * takes each, gives it back at once, and at the message's end seals
         * its group if due and looks. */
        int any = 0;
        for (int c = 0; c < o->cameras; c++)
            any |= s->announce_at[c] <= t;
        for (int si = 0; any && si < o->subscribers; si++) {
            sim_sub *u = &s->subs[si];
            int got = 0;
            for (int c = 0; c < o->cameras; c++) {
                if (s->announce_at[c] > t)
                    continue;
                int slot = s->announce_slot[c];
                if (bus_holds_offer(&s->cams[c], slot, s->cams[c].slot[slot].seq, si) !=
                    BUS_OFFER_GIVEN)
                    continue;
                got++;
                u->frames++;
                if (!u->pending)
                    u->pending_since = t;
                u->q[u->n++] = (owed_frame){c, slot, s->cams[c].slot[slot].seq, t, NEVER};
                u->pending++;
                u->owed[c]++; /* held, then given back at once */
            }
            if (got) {
                u->messages++;
                look(s, si, t);
            }
        }
        for (int c = 0; c < o->cameras; c++)
            if (s->announce_at[c] <= t)
                s->announce_at[c] = NEVER;
        /* Subscribers polling an urgent event, or waking to look. */
        for (int si = 0; si < o->subscribers; si++) {
            sim_sub *u = &s->subs[si];
            if (u->polling) {
                finish(s, si, t);
                if (u->n == u->pending)
                    look(s, si, t);
            } else if (u->wake_at <= t) {
                look(s, si, t);
            }
        }
    }
}

typedef struct sim_result {
    long missed, drops, bad, frames, messages, seals;
    double worst_ms;
} sim_result;

static sim_result simulate(const sim_opts *o)
{
    static sim s;
    memset(&s, 0, sizeof s);
    s.o = *o;
    run(&s);
    sim_result r = {0, s.drops, s.bad_releases, 0, 0, 0, 0.0};
    for (int si = 0; si < o->subscribers; si++) {
        for (int c = 0; c < o->cameras; c++)
            r.missed += (long)s.cams[c].seat[si].missed;
        r.frames += s.subs[si].frames;
        r.messages += s.subs[si].messages;
        r.seals += s.subs[si].seals;
        double w = (double)s.subs[si].worst_us / 1e3;
        r.worst_ms = w > r.worst_ms ? w : r.worst_ms;
    }
    printf("%2d cameras %s at %.0f fps, %d subscribers, max_holds %d, %d slots, delay %d us: "
           "%ld frames in %ld messages, %ld events (%.3f a frame), missed %ld, ring drops %ld, "
           "given back to board <= %.2f ms\n",
           o->cameras, o->aligned ? "aligned" : "spread ", o->fps, o->subscribers, o->max_holds,
           o->slots, o->delay_us, r.frames, r.messages, r.seals,
           r.frames ? (double)r.seals / (double)r.frames : 0.0, r.missed, r.drops, r.worst_ms);
    return r;
}

/* The longest a release may wait: the delay, a wake to notice it, a wake
 * to look at the event, and the event. */
static double bound_ms(int delay_us)
{
    return (delay_us + 2 * DEFER_US + EVENT_US + 2 * STEP_US) / 1e3;
}

static void cameras_at_their_own_moments(void)
{
    sim_opts o = {64, 4, 2, 4 + 4 * 2, 0, 30.0, BUS_SEAL_DELAY_US, 2.0};
    sim_result r = simulate(&o);
    long expected = (long)(64 * 30 * 2.0) * 4;
    CHECK(r.frames >= expected - 64 * 4 && r.frames <= expected + 64 * 4);
    CHECK(r.missed == 0 && r.drops == 0 && r.bad == 0);
    CHECK(r.messages == r.frames); /* one frame a message */
    /* A frame every 520 us, an event every 2 ms or so: 4-5 frames each. */
    CHECK(r.seals * 3 < r.frames);
    CHECK(r.worst_ms <= bound_ms(o.delay_us));

    /* The delay 0: one event per message, as before. */
    o.delay_us = 0;
    r = simulate(&o);
    CHECK(r.missed == 0 && r.drops == 0 && r.bad == 0);
    CHECK(r.seals == r.messages);
}

static void cameras_all_at_once(void)
{
    sim_opts o = {64, 4, 2, 4 + 4 * 2, 1, 30.0, BUS_SEAL_DELAY_US, 2.0};
    sim_result r = simulate(&o);
    CHECK(r.missed == 0 && r.drops == 0 && r.bad == 0);
    long bursts = 30 * 2 * 4;
    CHECK(r.messages >= 8 * bursts); /* a burst comes in several messages */
    CHECK(r.seals <= bursts + 4); /* and gets one event */
    CHECK(r.worst_ms <= bound_ms(o.delay_us));
    /* The delay 0: one event per message. */
    o.delay_us = 0;
    r = simulate(&o);
    CHECK(r.missed == 0 && r.drops == 0 && r.bad == 0);
    CHECK(r.seals == r.messages);
}

static void no_room_or_no_spare_slot(void)
{
    /* max_holds 1: a camera's next frame needs its last one back. */
    sim_opts o = {64, 4, 1, 4 + 4 * 1, 0, 30.0, BUS_SEAL_DELAY_US, 1.0};
    sim_result r = simulate(&o);
    CHECK(r.missed == 0 && r.drops == 0 && r.bad == 0);
    CHECK(r.seals == r.messages);
    CHECK(r.worst_ms <= (EVENT_US + 2 * STEP_US) / 1e3);
    /* A ring with no slot beyond the subscribers' holds. */
    o = (sim_opts){64, 4, 2, 4 * 2 + 1, 0, 30.0, BUS_SEAL_DELAY_US, 1.0};
    r = simulate(&o);
    CHECK(r.missed == 0 && r.drops == 0 && r.bad == 0);
    CHECK(r.seals == r.messages);
}

static void fast_cameras(void)
{
    /* 4 cameras at 240 fps (a frame every 4.2 ms each, one every 1 ms in
     * all) and one at 1000 fps: later releases, and events when the room
     * runs out, still miss nothing. */
    sim_opts o = {4, 4, 2, 4 + 4 * 2, 0, 240.0, BUS_SEAL_DELAY_US, 1.0};
    sim_result r = simulate(&o);
    CHECK(r.missed == 0 && r.drops == 0 && r.bad == 0);
    CHECK(r.seals < r.messages);
    o = (sim_opts){1, 4, 2, 4 + 4 * 2, 0, 1000.0, BUS_SEAL_DELAY_US, 1.0};
    r = simulate(&o);
    CHECK(r.missed == 0 && r.drops == 0 && r.bad == 0);
    CHECK(r.worst_ms <= bound_ms(o.delay_us));
}

int main(void)
{
    RUN(rules);
    RUN(cameras_at_their_own_moments);
    RUN(cameras_all_at_once);
    RUN(no_room_or_no_spare_slot);
    RUN(fast_cameras);
    return testing_finish();
}
