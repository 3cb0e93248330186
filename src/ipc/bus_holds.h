/* Private: which subscribers hold which frames of one published camera, as
 * pure logic (no CUDA, no locks, no I/O), so a test can drive it against a
 * model. The publisher keeps one per camera under its lock.
 *
 * Each subscriber has a seat. A frame written into a ring slot is offered
 * to every seat once it is in the slot; a seat takes it (held) unless it
 * already holds max_holds frames of this camera, in which case it missed
 * the frame (counted). A seat gives a frame back on its release board
 * (bus_board.h), which the subscriber writes only once its GPU work on
 * the frame has run (at once, for a frame it did not read), so a release the publisher reads there
 * frees the hold at once: the publisher never waits for another process's GPU work, on the host or
 * on a stream, and no interprocess event is needed. A slot is written again only when no seat holds
 * it (bus_holds_busy). A seat that leaves or dies drops its holds at once: subscribers map frames
 * read-only, so a dead one's unfinished reads can harm no one.
 *
 * A seat that asked for every frame (only on cameras whose ring blocks its
 * producer: files) holds each frame from the moment the ring starts
 * writing it (bus_holds_write), so no frame reaches the slots without it;
 * while such a seat holds max_holds frames there is no room
 * (bus_holds_room): the producer waits, and the subscriber paces it. */
#ifndef OMMA_IPC_BUS_HOLDS_H
#define OMMA_IPC_BUS_HOLDS_H

#include <stdint.h>
#include <string.h>

#include "ipc/bus_proto.h"

typedef struct bus_hold_slot {
    uint64_t seq; /* the frame in the slot (0: none yet) */
    uint64_t held; /* seats holding it (bit per seat) */
    uint64_t offered; /* seats it was offered to since its write */
} bus_hold_slot;

typedef struct bus_hold_seat {
    int active;
    int watch; /* BUS_HELLO_WATCH: offered frames, never held */
    int every; /* BUS_HELLO_EVERY_FRAME: holds each frame from its write */
    int max_holds;
    int holds; /* frames held now */
    uint64_t offered, given, missed;
} bus_hold_seat;

typedef struct bus_holds {
    int slots;
    bus_hold_slot slot[BUS_MAX_SLOTS];
    bus_hold_seat seat[BUS_MAX_SEATS];
} bus_holds;

typedef enum bus_offer_result {
    BUS_OFFER_GIVEN = 0, /* the seat holds the frame now */
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

/* 1 when a seat holds slot (it may not be written). */
static inline int bus_holds_busy(const bus_holds *h, int slot)
{
    return h->slot[slot].held != 0;
}

/* 1 when a new frame may be written: no every-frame seat holds its
 * max_holds frames. */
static inline int bus_holds_room(const bus_holds *h)
{
    for (int i = 0; i < BUS_MAX_SEATS; i++)
        if (h->seat[i].active && h->seat[i].every && h->seat[i].holds >= h->seat[i].max_holds)
            return 0;
    return 1;
}

/* The ring starts writing frame seq into slot (not busy, with room): every
 * every-frame seat holds it from now. */
static inline void bus_holds_write(bus_holds *h, int slot, uint64_t seq)
{
    h->slot[slot].seq = seq;
    h->slot[slot].offered = 0;
    for (int i = 0; i < BUS_MAX_SEATS; i++) {
        bus_hold_seat *st = &h->seat[i];
        if (st->active && st->every) {
            h->slot[slot].held |= 1ull << i;
            st->holds++;
        }
    }
}

/* Frame seq of slot is ready: offer it to seat. */
static inline bus_offer_result bus_holds_offer(bus_holds *h, int slot, uint64_t seq, int seat)
{
    if (seat < 0 || seat >= BUS_MAX_SEATS || !h->seat[seat].active)
        return BUS_OFFER_NO_SEAT;
    if (slot < 0 || slot >= h->slots || h->slot[slot].seq != seq)
        return BUS_OFFER_STALE;
    bus_hold_seat *st = &h->seat[seat];
    bus_hold_slot *s = &h->slot[slot];
    uint64_t bit = 1ull << seat;
    if (st->every && (s->held & bit) && !(s->offered & bit)) {
        s->offered |= bit; /* held since its write: now it is ready */
        st->offered++;
        st->given++;
        return BUS_OFFER_GIVEN;
    }
    if (s->held & bit) /* offered twice: not counted, it was offered once */
        return BUS_OFFER_MISSED;
    s->offered |= bit;
    st->offered++;
    if (st->watch)
        return BUS_OFFER_WATCH;
    if (st->holds >= st->max_holds) {
        st->missed++;
        return BUS_OFFER_MISSED;
    }
    st->holds++;
    st->given++;
    s->held |= bit;
    return BUS_OFFER_GIVEN;
}

/* Seat gives back frame seq of slot (its GPU work on it has run). Returns
 * 0, or -1 when the seat does not hold that frame (a protocol violation:
 * nothing changes). */
static inline int bus_holds_release(bus_holds *h, int seat, int slot, uint64_t seq)
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
    return 0;
}

/* max_holds: 1..BUS_MAX_HOLDS (checked by the HELLO's decode); every:
 * the seat holds every frame written from now (not with watch). */
static inline void bus_holds_seat_open(bus_holds *h, int seat, int max_holds, int watch, int every)
{
    h->seat[seat] = (bus_hold_seat){
        .active = 1, .watch = watch, .every = every && !watch, .max_holds = max_holds};
}

/* The seat left or died: every hold of it is dropped now. */
static inline void bus_holds_seat_close(bus_holds *h, int seat)
{
    uint64_t bit = 1ull << seat;
    for (int i = 0; i < h->slots; i++) {
        h->slot[i].held &= ~bit;
        h->slot[i].offered &= ~bit;
    }
    h->seat[seat] = (bus_hold_seat){0};
}

#endif
