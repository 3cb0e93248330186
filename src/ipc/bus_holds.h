/* Private: which subscribers hold which frames of one published camera, as
 * pure logic (no CUDA, no locks, no I/O), so a test can drive it against a
 * model. The publisher keeps one per camera under the camera's lock.
 *
 * Each subscriber has a seat. A frame written into a ring slot is offered
 * to every seat once it is ready; a seat takes it (HELD) unless it already
 * holds max_holds frames of this camera or has no free done event, in
 * which case the seat missed it (counted). Releasing a frame the seat read
 * records one of the seat's done events after its last read (RELEASING:
 * the slot stays busy until that event completes); releasing a frame it
 * did not read frees the hold at once. A slot is written again only when no
 * seat holds it and no done event of it is pending (bus_holds_busy). A seat
 * that leaves (or dies) drops everything at once: subscribers map frames
 * read-only, so a dead one's unfinished reads cannot harm anyone, and its
 * done events are never waited for. */
#ifndef OMMA_IPC_BUS_HOLDS_H
#define OMMA_IPC_BUS_HOLDS_H

#include <stdint.h>
#include <string.h>

#include "ipc/bus_proto.h"

typedef struct bus_hold_slot {
    uint64_t seq; /* the frame in the slot (0: none yet) */
    uint64_t held; /* seats holding it (bit per seat) */
    uint64_t releasing; /* seats whose done event for it may not have run */
    uint8_t done[BUS_MAX_SEATS]; /* the done event a seat holds it with */
} bus_hold_slot;

typedef struct bus_hold_seat {
    int active;
    int watch; /* BUS_HELLO_WATCH: offered frames, never held */
    int max_holds;
    int holds; /* frames HELD now */
    uint32_t done_busy; /* done events in use (HELD or RELEASING) */
    uint64_t offered, given, missed;
} bus_hold_seat;

typedef struct bus_holds {
    int slots;
    bus_hold_slot slot[BUS_MAX_SLOTS];
    bus_hold_seat seat[BUS_MAX_SEATS];
} bus_holds;

/* 1 when done event `done` of `seat` has completed. */
typedef int (*bus_done_fn)(void *ctx, int seat, int done);

typedef enum bus_offer_result {
    BUS_OFFER_GIVEN = 0, /* the seat holds the frame now (*done set) */
    BUS_OFFER_WATCH, /* a watching seat: told, not held */
    BUS_OFFER_MISSED, /* the seat holds too much: it missed the frame */
    BUS_OFFER_STALE, /* the slot was rewritten before the frame was ready */
    BUS_OFFER_NO_SEAT, /* no subscriber in that seat */
} bus_offer_result;

static inline void bus_holds_init(bus_holds *h, int slots)
{
    memset(h, 0, sizeof *h);
    h->slots = slots;
}

static inline int bus_holds_done_events(int max_holds)
{
    return 2 * max_holds;
}

/* Frees the done events of `slot` that completed; returns 1 when the slot
 * is still busy (held, or a done event pending). */
static inline int bus_holds_busy(bus_holds *h, int slot, bus_done_fn done, void *ctx)
{
    bus_hold_slot *s = &h->slot[slot];
    for (int seat = 0; s->releasing && seat < BUS_MAX_SEATS; seat++) {
        uint64_t bit = 1ull << seat;
        if ((s->releasing & bit) && done(ctx, seat, s->done[seat])) {
            s->releasing &= ~bit;
            h->seat[seat].done_busy &= ~(1u << s->done[seat]);
        }
    }
    return (s->held | s->releasing) != 0;
}

/* Frees every completed done event of every slot. A seat's done event
 * stays in use from its release until a bus_holds_busy or this sees it
 * complete: call it before offering a frame, or a seat that releases
 * promptly runs out of done events (2 x max_holds) and misses frames of a
 * ring with more slots than that while its slots wait to be rewritten. */
static inline void bus_holds_reap(bus_holds *h, bus_done_fn done, void *ctx)
{
    for (int i = 0; i < h->slots; i++)
        if (h->slot[i].releasing)
            bus_holds_busy(h, i, done, ctx);
}

/* The ring starts writing frame seq into slot (not busy). */
static inline void bus_holds_write(bus_holds *h, int slot, uint64_t seq)
{
    h->slot[slot].seq = seq;
}

/* Frame seq of slot is ready: offer it to seat. */
static inline bus_offer_result bus_holds_offer(bus_holds *h, int slot, uint64_t seq, int seat,
                                               int *done)
{
    *done = -1;
    if (seat < 0 || seat >= BUS_MAX_SEATS || !h->seat[seat].active)
        return BUS_OFFER_NO_SEAT;
    if (slot < 0 || slot >= h->slots || h->slot[slot].seq != seq)
        return BUS_OFFER_STALE;
    bus_hold_seat *st = &h->seat[seat];
    bus_hold_slot *s = &h->slot[slot];
    uint64_t bit = 1ull << seat;
    /* Offered twice: the seat holds it, or its done event for it is
     * pending (s->done[seat] in use). Not counted: it was offered once. */
    if ((s->held | s->releasing) & bit)
        return BUS_OFFER_MISSED;
    st->offered++;
    if (st->watch)
        return BUS_OFFER_WATCH;
    int free_done = -1;
    for (int d = 0; d < bus_holds_done_events(st->max_holds); d++)
        if (!(st->done_busy & (1u << d))) {
            free_done = d;
            break;
        }
    if (st->holds >= st->max_holds || free_done < 0) {
        st->missed++;
        return BUS_OFFER_MISSED;
    }
    st->holds++;
    st->given++;
    st->done_busy |= 1u << free_done;
    s->held |= bit;
    s->done[seat] = (uint8_t)free_done;
    *done = free_done;
    return BUS_OFFER_GIVEN;
}

/* Seat gives back frame seq of slot: used = its done event is recorded.
 * Returns 0, or -1 when the seat does not hold that frame (a protocol
 * violation: nothing changes). */
static inline int bus_holds_release(bus_holds *h, int seat, int slot, uint64_t seq, int used)
{
    if (slot < 0 || slot >= h->slots || seat < 0 || seat >= BUS_MAX_SEATS)
        return -1;
    bus_hold_slot *s = &h->slot[slot];
    bus_hold_seat *st = &h->seat[seat];
    uint64_t bit = 1ull << seat;
    if (!st->active || !(s->held & bit) || s->seq != seq)
        return -1;
    s->held &= ~bit;
    st->holds--;
    if (used)
        s->releasing |= bit;
    else
        st->done_busy &= ~(1u << s->done[seat]);
    return 0;
}

static inline void bus_holds_seat_open(bus_holds *h, int seat, int max_holds, int watch)
{
    h->seat[seat] = (bus_hold_seat){.active = 1, .watch = watch, .max_holds = max_holds};
}

/* The seat left or died: every hold and pending done event of it is
 * dropped now. */
static inline void bus_holds_seat_close(bus_holds *h, int seat)
{
    uint64_t bit = 1ull << seat;
    for (int i = 0; i < h->slots; i++)
        h->slot[i].held &= ~bit, h->slot[i].releasing &= ~bit;
    h->seat[seat] = (bus_hold_seat){0};
}

#endif
