/* The frame bus's per-camera hold bookkeeping (src/ipc/bus_holds.h) without
 * a GPU: small cases, then random runs against an independent model of
 * which seat holds which frame. A release frees its hold at once (the
 * subscriber sends it only after its GPU work on the frame ran). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ipc/bus_holds.h"
#include "testing.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static unsigned rnd(unsigned n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned)(rng_state % n);
}

/* The call changes nothing in *h. */
#define UNCHANGED(h, call)                                                                         \
    do {                                                                                           \
        static bus_holds before_;                                                                  \
        memcpy(&before_, (h), sizeof before_);                                                     \
        call;                                                                                      \
        CHECK(memcmp(&before_, (h), sizeof before_) == 0);                                         \
    } while (0)

static void give_hold_release(void)
{
    static bus_holds h;
    bus_holds_init(&h, 4);
    CHECK(h.slots == 4);
    for (int s = 0; s < 4; s++)
        CHECK(bus_holds_busy(&h, s) == 0);
    bus_holds_seat_open(&h, 2, 2, 0, 0);
    CHECK(h.seat[2].active == 1 && h.seat[2].max_holds == 2 && h.seat[2].watch == 0);
    bus_offer_result r;
    UNCHANGED(&h, r = bus_holds_offer(&h, 0, 1, 2)); /* not written yet */
    CHECK(r == BUS_OFFER_STALE);
    bus_holds_write(&h, 0, 1);
    CHECK(bus_holds_busy(&h, 0) == 0); /* written, not held */
    UNCHANGED(&h, r = bus_holds_offer(&h, 0, 1, 5));
    CHECK(r == BUS_OFFER_NO_SEAT);
    UNCHANGED(&h, r = bus_holds_offer(&h, 0, 1, -1));
    CHECK(r == BUS_OFFER_NO_SEAT);
    UNCHANGED(&h, r = bus_holds_offer(&h, 0, 1, BUS_MAX_SEATS));
    CHECK(r == BUS_OFFER_NO_SEAT);
    UNCHANGED(&h, r = bus_holds_offer(&h, 4, 1, 2)); /* no such slot */
    CHECK(r == BUS_OFFER_STALE);
    UNCHANGED(&h, r = bus_holds_offer(&h, -1, 1, 2));
    CHECK(r == BUS_OFFER_STALE);
    UNCHANGED(&h, r = bus_holds_offer(&h, 0, 2, 2)); /* another frame */
    CHECK(r == BUS_OFFER_STALE);
    CHECK(h.seat[2].offered == 0);
    CHECK(bus_holds_offer(&h, 0, 1, 2) == BUS_OFFER_GIVEN);
    CHECK(h.seat[2].holds == 1 && h.seat[2].given == 1 && h.seat[2].offered == 1);
    CHECK(h.slot[0].held == 1ull << 2);
    CHECK(bus_holds_busy(&h, 0) == 1 && bus_holds_busy(&h, 1) == 0);
    /* Offered twice: refused, not counted. */
    UNCHANGED(&h, r = bus_holds_offer(&h, 0, 1, 2));
    CHECK(r == BUS_OFFER_MISSED);
    CHECK(h.seat[2].offered == 1 && h.seat[2].missed == 0);

    int ret;
    UNCHANGED(&h, ret = bus_holds_release(&h, 2, 0, 2)); /* wrong seq */
    CHECK(ret == -1);
    UNCHANGED(&h, ret = bus_holds_release(&h, 3, 0, 1)); /* other seat (not open) */
    CHECK(ret == -1);
    UNCHANGED(&h, ret = bus_holds_release(&h, 2, 1, 1)); /* other slot */
    CHECK(ret == -1);
    UNCHANGED(&h, ret = bus_holds_release(&h, 2, 4, 1)); /* out of range */
    CHECK(ret == -1);
    UNCHANGED(&h, ret = bus_holds_release(&h, 2, -1, 1));
    CHECK(ret == -1);
    UNCHANGED(&h, ret = bus_holds_release(&h, -1, 0, 1));
    CHECK(ret == -1);
    UNCHANGED(&h, ret = bus_holds_release(&h, BUS_MAX_SEATS, 0, 1));
    CHECK(ret == -1);
    CHECK(bus_holds_release(&h, 2, 0, 1) == 0);
    /* Free at once: nothing waits for GPU work. */
    CHECK(h.seat[2].holds == 0 && bus_holds_busy(&h, 0) == 0 && h.slot[0].held == 0);
    UNCHANGED(&h, ret = bus_holds_release(&h, 2, 0, 1)); /* twice */
    CHECK(ret == -1);
    CHECK(h.seat[2].offered == 1 && h.seat[2].given == 1 && h.seat[2].missed == 0);

    /* The slot is written again at once, and the new frame given. */
    bus_holds_write(&h, 0, 5);
    CHECK(bus_holds_offer(&h, 0, 1, 2) == BUS_OFFER_STALE);
    CHECK(bus_holds_offer(&h, 0, 5, 2) == BUS_OFFER_GIVEN);
    UNCHANGED(&h, ret = bus_holds_release(&h, 2, 0, 1)); /* the old frame */
    CHECK(ret == -1);
    CHECK(bus_holds_release(&h, 2, 0, 5) == 0 && bus_holds_busy(&h, 0) == 0);
}

static void max_holds_bound_a_seat(void)
{
    static bus_holds h;
    bus_holds_init(&h, 8);
    bus_holds_seat_open(&h, 0, 2, 0, 0);
    bus_holds_seat_open(&h, 1, 1, 1, 0); /* watcher */
    for (int s = 0; s < 3; s++) {
        bus_holds_write(&h, s, (uint64_t)s + 1);
        bus_offer_result want = s < 2 ? BUS_OFFER_GIVEN : BUS_OFFER_MISSED;
        CHECK(bus_holds_offer(&h, s, (uint64_t)s + 1, 0) == want);
        CHECK(bus_holds_offer(&h, s, (uint64_t)s + 1, 1) == BUS_OFFER_WATCH);
    }
    CHECK(h.seat[0].offered == 3 && h.seat[0].given == 2 && h.seat[0].missed == 1);
    CHECK(h.seat[0].holds == 2);
    CHECK(h.seat[1].offered == 3 && h.seat[1].given == 0 && h.seat[1].missed == 0);
    CHECK(h.seat[1].holds == 0);
    CHECK(bus_holds_busy(&h, 0) == 1 && bus_holds_busy(&h, 1) == 1);
    CHECK(bus_holds_busy(&h, 2) == 0); /* missed by one, watched by the other */
    /* A missed frame is not held: its release is refused. */
    CHECK(bus_holds_release(&h, 0, 2, 3) == -1);
    /* A watcher holds nothing, so it releases nothing. */
    CHECK(bus_holds_release(&h, 1, 0, 1) == -1);
    /* One released: the next frame is given. */
    CHECK(bus_holds_release(&h, 0, 0, 1) == 0);
    bus_holds_write(&h, 3, 4);
    CHECK(bus_holds_offer(&h, 3, 4, 0) == BUS_OFFER_GIVEN);
    bus_holds_write(&h, 4, 5);
    CHECK(bus_holds_offer(&h, 4, 5, 0) == BUS_OFFER_MISSED);
    CHECK(h.seat[0].offered == 5 && h.seat[0].given == 3 && h.seat[0].missed == 2);
    /* max_holds at its limit. */
    bus_holds_seat_open(&h, 5, BUS_MAX_HOLDS, 0, 0);
    int given = 0;
    for (int s = 0; s < 8; s++) {
        bus_holds_write(&h, s, 100 + (uint64_t)s);
        given += bus_holds_offer(&h, s, 100 + (uint64_t)s, 5) == BUS_OFFER_GIVEN;
    }
    CHECK(given == BUS_MAX_HOLDS && h.seat[5].holds == BUS_MAX_HOLDS);
}

/* A subscriber that releases every frame before the next one misses
 * nothing, even with one hold on a one-slot ring. */
static void prompt_releases_miss_nothing(void)
{
    static bus_holds h;
    for (int slots = 1; slots <= 16; slots += 15) {
        bus_holds_init(&h, slots);
        bus_holds_seat_open(&h, 7, 1, 0, 0);
        bus_holds_seat_open(&h, 63, 1, 0, 0);
        for (uint64_t seq = 1; seq <= 200; seq++) {
            int slot = (int)((seq - 1) % (uint64_t)slots);
            CHECK(bus_holds_busy(&h, slot) == 0);
            bus_holds_write(&h, slot, seq);
            CHECK(bus_holds_offer(&h, slot, seq, 7) == BUS_OFFER_GIVEN);
            CHECK(bus_holds_offer(&h, slot, seq, 63) == BUS_OFFER_GIVEN);
            CHECK(bus_holds_busy(&h, slot) == 1);
            CHECK(bus_holds_release(&h, 7, slot, seq) == 0);
            CHECK(bus_holds_busy(&h, slot) == 1); /* seat 63 still holds it */
            CHECK(bus_holds_release(&h, 63, slot, seq) == 0);
        }
        CHECK(h.seat[7].missed == 0 && h.seat[7].given == 200 && h.seat[7].offered == 200);
        CHECK(h.seat[63].missed == 0 && h.seat[63].given == 200);
    }
}

static void seat_close_drops_everything(void)
{
    static bus_holds h;
    bus_holds_init(&h, 4);
    bus_holds_seat_open(&h, 63, 4, 0, 0);
    bus_holds_seat_open(&h, 0, 4, 0, 0);
    for (int s = 0; s < 4; s++) {
        bus_holds_write(&h, s, (uint64_t)s + 10);
        CHECK(bus_holds_offer(&h, s, (uint64_t)s + 10, 63) == BUS_OFFER_GIVEN);
        CHECK(bus_holds_offer(&h, s, (uint64_t)s + 10, 0) == BUS_OFFER_GIVEN);
    }
    CHECK(bus_holds_release(&h, 0, 0, 10) == 0);
    bus_holds_seat_close(&h, 63);
    CHECK(h.seat[63].active == 0 && h.seat[63].holds == 0 && h.seat[63].offered == 0);
    CHECK(bus_holds_busy(&h, 0) == 0);
    for (int s = 1; s < 4; s++)
        CHECK(bus_holds_busy(&h, s) == 1 && h.slot[s].held == 1); /* seat 0 still holds them */
    CHECK(bus_holds_release(&h, 63, 1, 11) == -1); /* gone */
    CHECK(bus_holds_offer(&h, 1, 11, 63) == BUS_OFFER_NO_SEAT);
    bus_holds_seat_close(&h, 0);
    for (int s = 0; s < 4; s++)
        CHECK(bus_holds_busy(&h, s) == 0 && h.slot[s].held == 0);
    /* The frames stay in their slots; a new subscriber in the old seat
     * starts clean. */
    CHECK(h.slot[1].seq == 11);
    bus_holds_seat_open(&h, 63, 1, 0, 0);
    CHECK(h.seat[63].offered == 0 && h.seat[63].holds == 0);
    CHECK(bus_holds_offer(&h, 1, 11, 63) == BUS_OFFER_GIVEN);
    CHECK(h.seat[63].offered == 1 && h.seat[63].given == 1);
    /* Closing a seat that holds nothing changes no slot. */
    bus_holds_seat_close(&h, 5);
    CHECK(h.slot[1].held == 1ull << 63);
}

/* The model: which seat holds which slot, kept independently of
 * bus_holds' bit sets and counts. */
typedef struct model {
    int slots;
    uint64_t seq[BUS_MAX_SLOTS];
    unsigned char held[BUS_MAX_SLOTS][BUS_MAX_SEATS];
    unsigned char offered_since_write[BUS_MAX_SLOTS][BUS_MAX_SEATS];
    int active[BUS_MAX_SEATS], watch[BUS_MAX_SEATS], every[BUS_MAX_SEATS], max_holds[BUS_MAX_SEATS];
    uint64_t offered[BUS_MAX_SEATS], given[BUS_MAX_SEATS], missed[BUS_MAX_SEATS],
        watched[BUS_MAX_SEATS];
} model;

static int model_holds(const model *m, int seat)
{
    int n = 0;
    for (int s = 0; s < m->slots; s++)
        n += m->held[s][seat];
    return n;
}

static int model_busy(const model *m, int slot)
{
    for (int seat = 0; seat < BUS_MAX_SEATS; seat++)
        if (m->held[slot][seat])
            return 1;
    return 0;
}

/* No every-frame seat holds all it may: a frame may be written. */
static int model_room(const model *m)
{
    for (int seat = 0; seat < BUS_MAX_SEATS; seat++)
        if (m->active[seat] && m->every[seat] && model_holds(m, seat) >= m->max_holds[seat])
            return 0;
    return 1;
}

/* Every invariant of bus_holds against the model. */
static int check_against_model(const bus_holds *h, const model *m)
{
    int bad = 0;
    bad += h->slots != m->slots;
    for (int seat = 0; seat < BUS_MAX_SEATS; seat++) {
        const bus_hold_seat *st = &h->seat[seat];
        bad += st->active != m->active[seat];
        if (!m->active[seat]) {
            bad += st->holds != 0 || st->offered || st->given || st->missed;
            continue;
        }
        bad += st->watch != m->watch[seat] || st->every != m->every[seat];
        bad += st->holds != model_holds(m, seat);
        bad += st->holds < 0 || st->holds > st->max_holds || st->max_holds != m->max_holds[seat];
        bad += st->watch && st->holds != 0; /* a watcher never holds */
        bad += st->offered != m->offered[seat] || st->given != m->given[seat] ||
               st->missed != m->missed[seat];
        bad += st->offered != st->given + st->missed + m->watched[seat];
        bad += st->every && st->watch;
        bad += st->watch && (st->given || st->missed);
    }
    for (int s = 0; s < m->slots; s++) {
        bad += h->slot[s].seq != m->seq[s];
        uint64_t held = 0;
        for (int seat = 0; seat < BUS_MAX_SEATS; seat++)
            held |= (uint64_t)m->held[s][seat] << seat;
        bad += h->slot[s].held != held;
        bad += bus_holds_busy(h, s) != model_busy(m, s);
        bad += bus_holds_busy(h, s) != (held != 0);
    }
    bad += bus_holds_room(h) != model_room(m);
    /* Slots past the ring are never touched. */
    for (int s = m->slots; s < BUS_MAX_SLOTS; s++)
        bad += h->slot[s].seq != 0 || h->slot[s].held != 0;
    return bad;
}

static int count_bad(int cond, const char *what, int run, int step)
{
    if (cond)
        fprintf(stderr, "run %d step %d: %s\n", run, step, what);
    return cond != 0;
}

static void random_runs_match_the_model(void)
{
    static bus_holds h, before;
    static model m;
    int total_bad = 0, stale = 0, missed = 0, given = 0, watched = 0, twice = 0, writes = 0,
        refused_writes = 0, releases = 0, bad_releases = 0, closes = 0, closes_holding = 0,
        reserved = 0, every_given = 0, every_waits = 0;
    for (int run = 0; run < 40 && !total_bad; run++) {
        int slots = 1 + (int)rnd(BUS_MAX_SLOTS);
        if (run < 20)
            slots = 1 + (int)rnd(6);
        int seats = 1 + (int)rnd(run % 2 ? BUS_MAX_SEATS : 4);
        if (run == 1)
            seats = BUS_MAX_SEATS; /* bit 63 is used */
        bus_holds_init(&h, slots);
        memset(&m, 0, sizeof m);
        m.slots = slots;
        uint64_t next_seq = 0;
        /* Frames written and not offered yet: (slot, seq). */
        int ready_slot[256];
        uint64_t ready_seq[256];
        int nready = 0;
        for (int step = 0; step < 6000 && !total_bad; step++) {
            unsigned op = rnd(16);
            int seat = (int)rnd((unsigned)seats);
            int slot = (int)rnd((unsigned)slots);
            if (op < 3) { /* the ring writes a slot (only when not busy, with room) */
                int busy = bus_holds_busy(&h, slot);
                total_bad += count_bad(busy != model_busy(&m, slot), "busy", run, step);
                int room = bus_holds_room(&h);
                total_bad += count_bad(room != model_room(&m), "room", run, step);
                if (busy || !room) {
                    refused_writes++;
                    every_waits += !room;
                } else if (nready < 256) {
                    bus_holds_write(&h, slot, ++next_seq);
                    m.seq[slot] = next_seq;
                    for (int st = 0; st < BUS_MAX_SEATS; st++) {
                        m.offered_since_write[slot][st] = 0;
                        if (m.active[st] && m.every[st])
                            m.held[slot][st] = 1, reserved++;
                    }
                    ready_slot[nready] = slot;
                    ready_seq[nready++] = next_seq;
                    writes++;
                }
            } else if (op < 7 && nready > 0) { /* a frame is in its slot: offer it to every seat */
                int k = (int)rnd((unsigned)nready);
                int s = ready_slot[k];
                uint64_t q = ready_seq[k];
                ready_slot[k] = ready_slot[nready - 1];
                ready_seq[k] = ready_seq[--nready];
                for (int st = 0; st < seats; st++) {
                    memcpy(&before, &h, sizeof h);
                    bus_offer_result r = bus_holds_offer(&h, s, q, st);
                    bus_offer_result want;
                    if (!m.active[st])
                        want = BUS_OFFER_NO_SEAT;
                    else if (m.seq[s] != q)
                        want = BUS_OFFER_STALE;
                    else if (m.watch[st])
                        want = BUS_OFFER_WATCH;
                    else if (m.every[st] && m.held[s][st] && !m.offered_since_write[s][st])
                        want = BUS_OFFER_GIVEN, every_given++; /* held since its write */
                    else if (model_holds(&m, st) >= m.max_holds[st])
                        want = BUS_OFFER_MISSED;
                    else
                        want = BUS_OFFER_GIVEN;
                    if (r != want)
                        fprintf(stderr, "offer: got %d, model says %d\n", r, want);
                    total_bad += r != want;
                    if (want == BUS_OFFER_NO_SEAT || want == BUS_OFFER_STALE)
                        total_bad += count_bad(memcmp(&before, &h, sizeof h) != 0,
                                               "a refused offer changed something", run, step);
                    if (want == BUS_OFFER_STALE)
                        stale++;
                    if (want != BUS_OFFER_NO_SEAT && want != BUS_OFFER_STALE)
                        m.offered[st]++, m.offered_since_write[s][st] = 1;
                    if (want == BUS_OFFER_WATCH)
                        m.watched[st]++, watched++;
                    if (want == BUS_OFFER_MISSED)
                        m.missed[st]++, missed++;
                    if (want == BUS_OFFER_GIVEN) {
                        m.given[st]++;
                        given++;
                        m.held[s][st] = 1;
                    }
                }
                /* Offering it again to a seat that holds it: MISSED, not
                 * counted, nothing changes. */
                if (m.seq[s] == q && m.held[s][seat]) {
                    memcpy(&before, &h, sizeof h);
                    total_bad += count_bad(bus_holds_offer(&h, s, q, seat) != BUS_OFFER_MISSED,
                                           "a second offer was not MISSED", run, step);
                    total_bad += count_bad(memcmp(&before, &h, sizeof h) != 0,
                                           "a second offer changed something", run, step);
                    twice++;
                }
            } else if (op < 10) { /* a seat releases a frame it holds */
                int s0 = (int)rnd((unsigned)slots);
                for (int i = 0; i < slots; i++) {
                    int s = (s0 + i) % slots;
                    if (!m.held[s][seat])
                        continue;
                    total_bad += count_bad(bus_holds_release(&h, seat, s, m.seq[s]) != 0,
                                           "a release of a held frame failed", run, step);
                    m.held[s][seat] = 0;
                    releases++;
                    break;
                }
            } else if (op < 12) { /* a release of something not held */
                uint64_t q = rnd(3) ? m.seq[slot] : m.seq[slot] + 1 + rnd(5);
                if (rnd(8) == 0 && q > 0)
                    q--; /* an older frame of the slot */
                int bad_seat = rnd(8) == 0 ? (int)rnd(3) - 1 + (rnd(2) ? BUS_MAX_SEATS : 0) : seat;
                int bad_slot = rnd(8) == 0 ? slots + (int)rnd(3) : rnd(16) == 0 ? -1 : slot;
                int holds_it = bad_seat >= 0 && bad_seat < BUS_MAX_SEATS && bad_slot >= 0 &&
                               bad_slot < slots && m.held[bad_slot][bad_seat] &&
                               q == m.seq[bad_slot];
                if (!holds_it) {
                    memcpy(&before, &h, sizeof h);
                    total_bad += count_bad(bus_holds_release(&h, bad_seat, bad_slot, q) != -1,
                                           "a release of a frame not held passed", run, step);
                    total_bad += count_bad(memcmp(&before, &h, sizeof h) != 0,
                                           "a refused release changed something", run, step);
                    bad_releases++;
                }
            } else if (op < 13) { /* a stale or repeated offer out of order */
                uint64_t q = m.seq[slot] > 1 && rnd(2) ? m.seq[slot] - 1 - rnd(2) : m.seq[slot] + 1;
                memcpy(&before, &h, sizeof h);
                bus_offer_result r = bus_holds_offer(&h, slot, q, seat);
                bus_offer_result want = !m.active[seat] ? BUS_OFFER_NO_SEAT : BUS_OFFER_STALE;
                total_bad += count_bad(r != want, "an offer of an old frame", run, step);
                total_bad += count_bad(memcmp(&before, &h, sizeof h) != 0,
                                       "an offer of an old frame changed something", run, step);
                stale += r == BUS_OFFER_STALE;
            } else if (op < 15) { /* a seat leaves or dies; another takes a seat */
                if (m.active[seat] && rnd(2)) {
                    closes_holding += model_holds(&m, seat) > 0;
                    closes++;
                    bus_holds_seat_close(&h, seat);
                    for (int s = 0; s < slots; s++)
                        m.held[s][seat] = 0;
                    m.active[seat] = m.every[seat] = 0;
                    m.offered[seat] = m.given[seat] = m.missed[seat] = m.watched[seat] = 0;
                    for (int s = 0; s < slots; s++)
                        m.offered_since_write[s][seat] = 0;
                } else if (!m.active[seat]) {
                    int mh = 1 + (int)rnd(BUS_MAX_HOLDS);
                    int watch = rnd(6) == 0;
                    int every = !watch && rnd(5) == 0;
                    bus_holds_seat_open(&h, seat, mh, watch, every);
                    m.active[seat] = 1;
                    m.watch[seat] = watch;
                    m.every[seat] = every;
                    m.max_holds[seat] = mh;
                }
            } else { /* busy on a slot is pure */
                memcpy(&before, &h, sizeof h);
                int busy = bus_holds_busy(&h, slot);
                total_bad += count_bad(busy != model_busy(&m, slot), "busy", run, step);
                total_bad += count_bad(memcmp(&before, &h, sizeof h) != 0, "busy changed something",
                                       run, step);
            }
            int bad = check_against_model(&h, &m);
            if (bad)
                fprintf(stderr, "run %d step %d op %u: %d mismatches with the model\n", run, step,
                        op, bad);
            total_bad += bad;
        }
        /* Every seat closes: everything is free. */
        for (int seat = 0; seat < BUS_MAX_SEATS; seat++)
            bus_holds_seat_close(&h, seat);
        for (int s = 0; s < slots; s++)
            CHECK(bus_holds_busy(&h, s) == 0);
        for (int seat = 0; seat < BUS_MAX_SEATS; seat++)
            CHECK(h.seat[seat].active == 0 && h.seat[seat].holds == 0);
    }
    CHECK(total_bad == 0);
    fprintf(stderr,
            "  %d given, %d missed, %d watched, %d stale, %d offered twice, %d writes (%d "
            "refused: busy), %d releases, %d bad releases, %d closes (%d holding)\n",
            given, missed, watched, stale, twice, writes, refused_writes, releases, bad_releases,
            closes, closes_holding);
    fprintf(stderr,
            "  every-frame seats: %d frames held from their write, %d given, %d writes "
            "waited for room\n",
            reserved, every_given, every_waits);
    /* Every outcome happened many times. */
    CHECK(stale > 100 && missed > 100 && given > 1000 && watched > 100 && twice > 100);
    CHECK(writes > 1000 && refused_writes > 100 && releases > 1000 && bad_releases > 1000);
    CHECK(closes_holding > 20);
    CHECK(reserved > 100 && every_given > 100 && every_waits > 100);
}

/* A seat asking for every frame holds each one from its write, so no
 * frame escapes it; while it holds max_holds there is no room for a new
 * frame (the producer waits); a frame that is never announced (its write
 * failed) is let go with a release. */
static void every_frame_seat_holds_from_the_write(void)
{
    static bus_holds h;
    bus_holds_init(&h, 8);
    bus_holds_seat_open(&h, 0, 2, 0, 1); /* every frame, 2 held at most */
    bus_holds_seat_open(&h, 1, 1, 0, 0); /* an ordinary seat */
    CHECK(bus_holds_room(&h) == 1);
    bus_holds_write(&h, 0, 1);
    CHECK(bus_holds_busy(&h, 0) == 1 && h.seat[0].holds == 1); /* held before it is ready */
    CHECK(bus_holds_offer(&h, 0, 1, 0) == BUS_OFFER_GIVEN);
    CHECK(bus_holds_offer(&h, 0, 1, 1) == BUS_OFFER_GIVEN);
    CHECK(bus_holds_offer(&h, 0, 1, 0) == BUS_OFFER_MISSED); /* offered twice: not counted */
    CHECK(h.seat[0].offered == 1 && h.seat[0].given == 1 && h.seat[0].missed == 0);
    CHECK(bus_holds_room(&h) == 1);
    bus_holds_write(&h, 1, 2);
    CHECK(bus_holds_room(&h) == 0); /* seat 0 holds 2: the producer must wait */
    CHECK(bus_holds_offer(&h, 1, 2, 1) == BUS_OFFER_MISSED); /* seat 1 holds its one */
    CHECK(bus_holds_release(&h, 0, 0, 1) == 0);
    CHECK(bus_holds_room(&h) == 1 && bus_holds_busy(&h, 0) == 1); /* seat 1 still holds 0 */
    /* A write that failed: the frame is never offered; its hold goes. */
    bus_holds_write(&h, 2, 3);
    CHECK(bus_holds_release(&h, 0, 2, 3) == 0 && bus_holds_busy(&h, 2) == 0);
    /* A watcher never holds, even asking for every frame. */
    bus_holds_seat_open(&h, 2, 1, 1, 1);
    CHECK(h.seat[2].every == 0);
    /* Closing the every-frame seat frees its holds and the room. */
    bus_holds_seat_close(&h, 0);
    CHECK(bus_holds_room(&h) == 1 && bus_holds_busy(&h, 1) == 0);
}

int main(void)
{
    RUN(give_hold_release);
    RUN(max_holds_bound_a_seat);
    RUN(prompt_releases_miss_nothing);
    RUN(seat_close_drops_everything);
    RUN(every_frame_seat_holds_from_the_write);
    RUN(random_runs_match_the_model);
    return testing_finish();
}
