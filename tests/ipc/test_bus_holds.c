/* The frame bus's per-camera hold bookkeeping (src/ipc/bus_holds.h) without
 * a GPU: small cases, then random runs against an independent model of the
 * seats, slots and done events. Fake done events: done[seat][d] says
 * whether the GPU work before seat's done event d completed. */
#include <stdint.h>
#include <string.h>

#include "ipc/bus_holds.h"
#include "testing.h"

typedef struct fake_events {
    int done[BUS_MAX_SEATS][BUS_MAX_HOLDS * 2];
    int queries;
} fake_events;

static int fake_done(void *ctx, int seat, int done)
{
    fake_events *ev = ctx;
    ev->queries++;
    if (seat < 0 || seat >= BUS_MAX_SEATS || done < 0 || done >= BUS_MAX_HOLDS * 2)
        return -1000; /* never asked about events that do not exist */
    return ev->done[seat][done];
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static unsigned rnd(unsigned n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned)(rng_state % n);
}

static void give_hold_release(void)
{
    static bus_holds h;
    fake_events ev = {0};
    bus_holds_init(&h, 4);
    bus_holds_seat_open(&h, 2, 2, 0);
    int d = 99;
    CHECK(bus_holds_offer(&h, 0, 1, 2, &d) == BUS_OFFER_STALE && d == -1); /* not written */
    bus_holds_write(&h, 0, 1);
    CHECK(bus_holds_offer(&h, 0, 1, 5, &d) == BUS_OFFER_NO_SEAT && d == -1);
    CHECK(bus_holds_offer(&h, 0, 1, -1, &d) == BUS_OFFER_NO_SEAT);
    CHECK(bus_holds_offer(&h, 0, 1, BUS_MAX_SEATS, &d) == BUS_OFFER_NO_SEAT);
    CHECK(bus_holds_offer(&h, 4, 1, 2, &d) == BUS_OFFER_STALE); /* no such slot */
    CHECK(bus_holds_offer(&h, 0, 2, 2, &d) == BUS_OFFER_STALE);
    CHECK(bus_holds_offer(&h, 0, 1, 2, &d) == BUS_OFFER_GIVEN && d >= 0 && d < 4);
    CHECK(h.seat[2].holds == 1 && h.seat[2].given == 1 && h.seat[2].offered == 1);
    CHECK(bus_holds_busy(&h, 0, fake_done, &ev) == 1);
    /* Offered twice: refused, not counted. */
    int d2;
    CHECK(bus_holds_offer(&h, 0, 1, 2, &d2) == BUS_OFFER_MISSED && d2 == -1);
    CHECK(h.seat[2].offered == 1 && h.seat[2].missed == 0);

    CHECK(bus_holds_release(&h, 2, 0, 2, 1) == -1); /* wrong seq */
    CHECK(bus_holds_release(&h, 3, 0, 1, 1) == -1); /* other seat */
    CHECK(bus_holds_release(&h, 2, 1, 1, 1) == -1); /* other slot */
    CHECK(bus_holds_release(&h, 2, 4, 1, 1) == -1); /* out of range */
    CHECK(bus_holds_release(&h, 2, -1, 1, 1) == -1);
    CHECK(bus_holds_release(&h, -1, 0, 1, 1) == -1);
    CHECK(bus_holds_release(&h, BUS_MAX_SEATS, 0, 1, 1) == -1);
    CHECK(bus_holds_release(&h, 2, 0, 1, 1) == 0);
    CHECK(bus_holds_release(&h, 2, 0, 1, 1) == -1); /* twice */
    CHECK(h.seat[2].holds == 0);
    /* The done event is pending: the slot stays busy until it completes. */
    ev.done[2][d] = 0;
    CHECK(bus_holds_busy(&h, 0, fake_done, &ev) == 1);
    CHECK(bus_holds_offer(&h, 0, 1, 2, &d2) == BUS_OFFER_MISSED); /* again: refused */
    CHECK(h.seat[2].done_busy == (1u << d));
    ev.done[2][d] = 1;
    CHECK(bus_holds_busy(&h, 0, fake_done, &ev) == 0);
    CHECK(h.seat[2].done_busy == 0);

    /* Declined (not read): free at once, no done event waited for. */
    bus_holds_write(&h, 1, 2);
    CHECK(bus_holds_offer(&h, 1, 2, 2, &d) == BUS_OFFER_GIVEN);
    ev.done[2][d] = 0;
    CHECK(bus_holds_release(&h, 2, 1, 2, 0) == 0);
    CHECK(bus_holds_busy(&h, 1, fake_done, &ev) == 0 && h.seat[2].done_busy == 0);
}

static void max_holds_and_done_events_bound_a_seat(void)
{
    static bus_holds h;
    fake_events ev = {0};
    bus_holds_init(&h, 8);
    bus_holds_seat_open(&h, 0, 2, 0);
    bus_holds_seat_open(&h, 1, 1, 1); /* watcher */
    int d, got[2];
    for (int s = 0; s < 3; s++) {
        bus_holds_write(&h, s, (uint64_t)s + 1);
        bus_offer_result want = s < 2 ? BUS_OFFER_GIVEN : BUS_OFFER_MISSED;
        CHECK(bus_holds_offer(&h, s, (uint64_t)s + 1, 0, &d) == want);
        if (s < 2)
            got[s] = d;
        CHECK(bus_holds_offer(&h, s, (uint64_t)s + 1, 1, &d) == BUS_OFFER_WATCH && d == -1);
    }
    CHECK(got[0] != got[1]);
    CHECK(h.seat[0].offered == 3 && h.seat[0].given == 2 && h.seat[0].missed == 1);
    CHECK(h.seat[1].offered == 3 && h.seat[1].given == 0 && h.seat[1].missed == 0);
    CHECK(bus_holds_busy(&h, 2, fake_done, &ev) == 0); /* a watcher holds nothing */
    /* Release both with pending done events: 2 of 4 events pending, 2 free. */
    CHECK(bus_holds_release(&h, 0, 0, 1, 1) == 0 && bus_holds_release(&h, 0, 1, 2, 1) == 0);
    for (int s = 3; s < 5; s++) {
        bus_holds_write(&h, s, (uint64_t)s + 1);
        CHECK(bus_holds_offer(&h, s, (uint64_t)s + 1, 0, &d) == BUS_OFFER_GIVEN);
        CHECK(d != got[0] && d != got[1]);
        CHECK(bus_holds_release(&h, 0, s, (uint64_t)s + 1, 1) == 0);
    }
    /* Every done event is pending: no hold is possible although none is held. */
    bus_holds_write(&h, 5, 6);
    CHECK(h.seat[0].holds == 0 && h.seat[0].done_busy == 0xF);
    CHECK(bus_holds_offer(&h, 5, 6, 0, &d) == BUS_OFFER_MISSED);
    /* The GPU finished them; the next offer after a reap gets one. */
    for (int k = 0; k < 4; k++)
        ev.done[0][k] = 1;
    bus_holds_write(&h, 6, 7);
    bus_holds_reap(&h, fake_done, &ev);
    CHECK(h.seat[0].done_busy == 0);
    CHECK(bus_holds_offer(&h, 6, 7, 0, &d) == BUS_OFFER_GIVEN);
    CHECK(h.seat[0].offered == 7 && h.seat[0].given == 5 && h.seat[0].missed == 2);
}

/* A subscriber that releases every frame at once, its GPU work finishing
 * before the next frame, on a ring with more slots than done events:
 * with a reap before each offer it misses nothing. */
static void prompt_releases_with_reap_miss_nothing(void)
{
    static bus_holds h;
    fake_events ev = {0};
    bus_holds_init(&h, 16);
    bus_holds_seat_open(&h, 7, 1, 0);
    for (uint64_t seq = 1; seq <= 200; seq++) {
        int slot = (int)((seq - 1) % 16);
        CHECK(bus_holds_busy(&h, slot, fake_done, &ev) == 0);
        bus_holds_write(&h, slot, seq);
        bus_holds_reap(&h, fake_done, &ev);
        int d;
        CHECK(bus_holds_offer(&h, slot, seq, 7, &d) == BUS_OFFER_GIVEN);
        ev.done[7][d] = 0; /* recorded on release */
        CHECK(bus_holds_release(&h, 7, slot, seq, 1) == 0);
        ev.done[7][d] = 1; /* and completed before the next frame */
    }
    CHECK(h.seat[7].missed == 0 && h.seat[7].given == 200);
}

static void seat_close_drops_everything(void)
{
    static bus_holds h;
    fake_events ev = {0};
    bus_holds_init(&h, 4);
    bus_holds_seat_open(&h, 63, 4, 0);
    bus_holds_seat_open(&h, 0, 4, 0);
    int d;
    for (int s = 0; s < 4; s++) {
        bus_holds_write(&h, s, (uint64_t)s + 10);
        CHECK(bus_holds_offer(&h, s, (uint64_t)s + 10, 63, &d) == BUS_OFFER_GIVEN);
        CHECK(bus_holds_offer(&h, s, (uint64_t)s + 10, 0, &d) == BUS_OFFER_GIVEN);
    }
    CHECK(bus_holds_release(&h, 63, 0, 10, 1) == 0); /* pending, never completes */
    CHECK(bus_holds_release(&h, 0, 0, 10, 0) == 0);
    bus_holds_seat_close(&h, 63);
    CHECK(h.seat[63].active == 0 && h.seat[63].holds == 0 && h.seat[63].done_busy == 0);
    CHECK(bus_holds_busy(&h, 0, fake_done, &ev) == 0);
    for (int s = 1; s < 4; s++)
        CHECK(bus_holds_busy(&h, s, fake_done, &ev) == 1); /* seat 0 still holds them */
    CHECK(bus_holds_release(&h, 63, 1, 11, 1) == -1); /* gone */
    CHECK(bus_holds_offer(&h, 1, 11, 63, &d) == BUS_OFFER_NO_SEAT);
    bus_holds_seat_close(&h, 0);
    for (int s = 0; s < 4; s++)
        CHECK(bus_holds_busy(&h, s, fake_done, &ev) == 0);
    /* A new subscriber in the old seat starts clean. */
    bus_holds_seat_open(&h, 63, 1, 0);
    CHECK(bus_holds_offer(&h, 1, 11, 63, &d) == BUS_OFFER_GIVEN && d == 0);
    CHECK(h.seat[63].offered == 1 && h.seat[63].given == 1);
}

/* The model: what each seat holds and which of its done events it uses,
 * kept independently of bus_holds' bit sets. */
enum { MS_NONE = 0, MS_HELD, MS_PENDING };
typedef struct model {
    int slots;
    uint64_t seq[BUS_MAX_SLOTS];
    int state[BUS_MAX_SLOTS][BUS_MAX_SEATS]; /* MS_* */
    int done_of[BUS_MAX_SLOTS][BUS_MAX_SEATS];
    int active[BUS_MAX_SEATS], watch[BUS_MAX_SEATS], max_holds[BUS_MAX_SEATS];
    uint64_t offered[BUS_MAX_SEATS], given[BUS_MAX_SEATS], missed[BUS_MAX_SEATS],
        watched[BUS_MAX_SEATS];
} model;

static int model_holds(const model *m, int seat)
{
    int n = 0;
    for (int s = 0; s < m->slots; s++)
        n += m->state[s][seat] == MS_HELD;
    return n;
}

/* Done event d of seat is in use: by a HELD frame, or PENDING. */
static int model_done_used(const model *m, int seat, int d)
{
    for (int s = 0; s < m->slots; s++)
        if (m->state[s][seat] != MS_NONE && m->done_of[s][seat] == d)
            return 1;
    return 0;
}

static int model_free_done(const model *m, int seat)
{
    for (int d = 0; d < 2 * m->max_holds[seat]; d++)
        if (!model_done_used(m, seat, d))
            return 1;
    return 0;
}

static int model_busy(const model *m, int slot)
{
    for (int seat = 0; seat < BUS_MAX_SEATS; seat++)
        if (m->state[slot][seat] != MS_NONE)
            return 1;
    return 0;
}

/* Reaping a slot: PENDING done events that completed end. */
static void model_reap(model *m, const fake_events *ev, int slot)
{
    for (int seat = 0; seat < BUS_MAX_SEATS; seat++)
        if (m->state[slot][seat] == MS_PENDING && ev->done[seat][m->done_of[slot][seat]])
            m->state[slot][seat] = MS_NONE;
}

/* Every invariant of bus_holds against the model. */
static int check_against_model(const bus_holds *h, const model *m)
{
    int bad = 0;
    for (int seat = 0; seat < BUS_MAX_SEATS; seat++) {
        const bus_hold_seat *st = &h->seat[seat];
        bad += st->active != m->active[seat];
        if (!m->active[seat]) {
            bad += st->holds != 0 || st->done_busy != 0 || st->offered || st->given || st->missed;
            continue;
        }
        bad += st->holds != model_holds(m, seat);
        bad += st->holds > st->max_holds || st->max_holds != m->max_holds[seat];
        bad += st->offered != m->offered[seat] || st->given != m->given[seat] ||
               st->missed != m->missed[seat];
        bad += st->offered != st->given + st->missed + m->watched[seat];
        /* The done events in use: one frame each, within the seat's range. */
        uint32_t used = 0;
        for (int s = 0; s < m->slots; s++) {
            if (m->state[s][seat] == MS_NONE)
                continue;
            int d = m->done_of[s][seat];
            bad += d < 0 || d >= 2 * m->max_holds[seat] || (used & (1u << d)) != 0;
            used |= 1u << d;
        }
        bad += st->done_busy != used;
    }
    for (int s = 0; s < m->slots; s++) {
        bad += h->slot[s].seq != m->seq[s];
        uint64_t held = 0, rel = 0;
        for (int seat = 0; seat < BUS_MAX_SEATS; seat++) {
            if (m->state[s][seat] == MS_NONE)
                continue;
            held |= (uint64_t)(m->state[s][seat] == MS_HELD) << seat;
            rel |= (uint64_t)(m->state[s][seat] == MS_PENDING) << seat;
            bad += h->slot[s].done[seat] != m->done_of[s][seat];
        }
        bad += h->slot[s].held != held || h->slot[s].releasing != rel;
    }
    return bad;
}

static void random_runs_match_the_model(void)
{
    static bus_holds h, before;
    static model m;
    static fake_events ev;
    int total_bad = 0, stale = 0, missed = 0, given = 0, writes = 0, refused_writes = 0;
    for (int run = 0; run < 40; run++) {
        int slots = 1 + (int)rnd(BUS_MAX_SLOTS);
        if (run < 20)
            slots = 1 + (int)rnd(6);
        int seats = 1 + (int)rnd(run % 2 ? BUS_MAX_SEATS : 4);
        bus_holds_init(&h, slots);
        memset(&m, 0, sizeof m);
        m.slots = slots;
        for (int seat = 0; seat < BUS_MAX_SEATS; seat++)
            for (int d = 0; d < BUS_MAX_HOLDS * 2; d++)
                ev.done[seat][d] = 1;
        uint64_t next_seq = 0;
        /* Frames written and not offered yet: (slot, seq). */
        int ready_slot[256];
        uint64_t ready_seq[256];
        int nready = 0;
        for (int step = 0; step < 6000; step++) {
            unsigned op = rnd(16);
            int seat = (int)rnd((unsigned)seats);
            int slot = (int)rnd((unsigned)slots);
            if (op < 3) { /* the ring writes a slot (only when not busy) */
                if (rnd(2)) {
                    bus_holds_reap(&h, fake_done, &ev);
                    for (int s = 0; s < slots; s++)
                        model_reap(&m, &ev, s);
                }
                int busy = bus_holds_busy(&h, slot, fake_done, &ev);
                model_reap(&m, &ev, slot);
                total_bad += busy != model_busy(&m, slot);
                if (busy) {
                    refused_writes++;
                } else if (nready < 256) {
                    bus_holds_write(&h, slot, ++next_seq);
                    m.seq[slot] = next_seq;
                    ready_slot[nready] = slot;
                    ready_seq[nready++] = next_seq;
                    writes++;
                }
            } else if (op < 7 && nready > 0) { /* a frame is ready: offer it to every seat */
                int k = (int)rnd((unsigned)nready);
                int s = ready_slot[k];
                uint64_t q = ready_seq[k];
                ready_slot[k] = ready_slot[nready - 1];
                ready_seq[k] = ready_seq[--nready];
                if (rnd(2)) {
                    bus_holds_reap(&h, fake_done, &ev);
                    for (int t = 0; t < slots; t++)
                        model_reap(&m, &ev, t);
                }
                for (int st = 0; st < seats; st++) {
                    int d;
                    bus_offer_result r = bus_holds_offer(&h, s, q, st, &d);
                    bus_offer_result want;
                    if (!m.active[st])
                        want = BUS_OFFER_NO_SEAT;
                    else if (m.seq[s] != q)
                        want = BUS_OFFER_STALE;
                    else if (m.watch[st])
                        want = BUS_OFFER_WATCH;
                    else if (model_holds(&m, st) >= m.max_holds[st] || !model_free_done(&m, st))
                        want = BUS_OFFER_MISSED;
                    else
                        want = BUS_OFFER_GIVEN;
                    total_bad += r != want;
                    if (r != want)
                        fprintf(stderr, "offer: got %d, model says %d\n", r, want);
                    if (want == BUS_OFFER_STALE)
                        stale++;
                    if (m.active[st] && want != BUS_OFFER_STALE)
                        m.offered[st]++;
                    if (want == BUS_OFFER_WATCH)
                        m.watched[st]++;
                    if (want == BUS_OFFER_MISSED)
                        m.missed[st]++, missed++;
                    if (want == BUS_OFFER_GIVEN && r == want) {
                        m.given[st]++;
                        given++;
                        /* d must be a done event of the seat not in use. */
                        total_bad +=
                            d < 0 || d >= 2 * m.max_holds[st] || model_done_used(&m, st, d);
                        m.state[s][st] = MS_HELD;
                        m.done_of[s][st] = d;
                    } else {
                        total_bad += d != -1;
                    }
                }
                /* Offering it again to a seat that has it (held, or its
                 * done event pending), or to no seat, or when it is stale,
                 * changes nothing. */
                if (rnd(2) == 0 &&
                    (!m.active[seat] || m.seq[s] != q || m.state[s][seat] != MS_NONE)) {
                    memcpy(&before, &h, sizeof h);
                    int d;
                    bus_offer_result r = bus_holds_offer(&h, s, q, seat, &d);
                    total_bad += r == BUS_OFFER_GIVEN || r == BUS_OFFER_WATCH || d != -1;
                    total_bad += memcmp(&before, &h, sizeof h) != 0;
                }
            } else if (op < 10) { /* a seat releases a frame it holds */
                int s0 = (int)rnd((unsigned)slots);
                for (int i = 0; i < slots; i++) {
                    int s = (s0 + i) % slots;
                    if (m.state[s][seat] != MS_HELD)
                        continue;
                    int used = rnd(4) != 0;
                    total_bad += bus_holds_release(&h, seat, s, m.seq[s], used) != 0;
                    if (used) {
                        m.state[s][seat] = MS_PENDING;
                        ev.done[seat][m.done_of[s][seat]] = 0; /* recorded */
                    } else {
                        m.state[s][seat] = MS_NONE;
                    }
                    break;
                }
            } else if (op < 11) { /* a release of something not held */
                uint64_t q = rnd(3) ? m.seq[slot] : m.seq[slot] + 1 + rnd(5);
                int bad_seat = rnd(8) == 0 ? (int)rnd(3) - 1 + (rnd(2) ? BUS_MAX_SEATS : 0) : seat;
                int bad_slot = rnd(8) == 0 ? slots + (int)rnd(3) : slot;
                int holds_it = bad_seat >= 0 && bad_seat < BUS_MAX_SEATS && bad_slot < slots &&
                               m.state[bad_slot][bad_seat] == MS_HELD && q == m.seq[bad_slot];
                if (!holds_it) {
                    memcpy(&before, &h, sizeof h);
                    total_bad += bus_holds_release(&h, bad_seat, bad_slot, q, (int)rnd(2)) != -1;
                    total_bad += memcmp(&before, &h, sizeof h) != 0;
                }
            } else if (op < 14) { /* the GPU finishes some seat's done event */
                ev.done[seat][rnd(BUS_MAX_HOLDS * 2)] = 1;
            } else if (op < 15) { /* a seat leaves or dies; another takes a seat */
                if (m.active[seat] && rnd(2)) {
                    bus_holds_seat_close(&h, seat);
                    for (int s = 0; s < slots; s++)
                        m.state[s][seat] = MS_NONE;
                    m.active[seat] = 0;
                    m.offered[seat] = m.given[seat] = m.missed[seat] = m.watched[seat] = 0;
                } else if (!m.active[seat]) {
                    int mh = 1 + (int)rnd(BUS_MAX_HOLDS);
                    int watch = rnd(6) == 0;
                    bus_holds_seat_open(&h, seat, mh, watch);
                    m.active[seat] = 1;
                    m.watch[seat] = watch;
                    m.max_holds[seat] = mh;
                    for (int d = 0; d < BUS_MAX_HOLDS * 2; d++)
                        ev.done[seat][d] = 1; /* the new subscriber's events */
                }
            } else { /* busy on a slot reaps it */
                int busy = bus_holds_busy(&h, slot, fake_done, &ev);
                model_reap(&m, &ev, slot);
                total_bad += busy != model_busy(&m, slot);
            }
            int bad = check_against_model(&h, &m);
            if (bad && !total_bad)
                fprintf(stderr, "run %d step %d op %u: %d mismatches\n", run, step, op, bad);
            total_bad += bad;
            if (total_bad)
                break;
        }
        if (total_bad)
            break;
        /* Every seat closes: everything is free. */
        for (int seat = 0; seat < BUS_MAX_SEATS; seat++)
            bus_holds_seat_close(&h, seat);
        for (int s = 0; s < slots; s++)
            CHECK(bus_holds_busy(&h, s, fake_done, &ev) == 0);
    }
    CHECK(total_bad == 0);
    /* Every outcome happened many times. */
    CHECK(stale > 100 && missed > 100 && given > 1000 && writes > 1000 && refused_writes > 100);
}

int main(void)
{
    RUN(give_hold_release);
    RUN(max_holds_and_done_events_bound_a_seat);
    RUN(prompt_releases_with_reap_miss_nothing);
    RUN(seat_close_drops_everything);
    RUN(random_runs_match_the_model);
    return testing_finish();
}
