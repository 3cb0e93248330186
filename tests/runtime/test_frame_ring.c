/* The frame ring's policies without a GPU: the slot bookkeeping of
 * runtime/frame_ring_slots.h driven with fake "done event completed" flags
 * (ordering, sequence numbers, drops, blocking, close), a randomized run of
 * both policies against a model of the GPU's reads and writes, and the
 * public functions' argument checks that need no device. */
#include <stdint.h>

#include "runtime/frame_ring.h"
#include "runtime/frame_ring_slots.h"
#include "testing.h"

/* Fake done events: done[i] says whether slot i's done event completed. */
typedef struct fake_events {
    int done[RT_RING_MAX_SLOTS];
    int queries;
} fake_events;

static int fake_done(void *ctx, int slot)
{
    fake_events *ev = ctx;
    ev->queries++;
    return ev->done[slot];
}

/* A put that writes; returns the slot (the upload "succeeds"). */
static int put_ok(rt_slots *s, fake_events *ev, uint64_t capture_ns, rt_put_plan *plan_out)
{
    rt_put_plan p = rt_slots_begin_put(s, fake_done, ev);
    if (plan_out)
        *plan_out = p;
    if (p.kind != RT_PUT_WRITE && p.kind != RT_PUT_WRITE_AFTER_DONE)
        return -1;
    ev->done[p.slot] = 0; /* its next release records the event again */
    rt_slots_end_put(s, p.slot, capture_ns, 1);
    return p.slot;
}

static uint64_t take_seq(rt_slots *s, int *slot_out)
{
    int slot = -1;
    if (rt_slots_take(s, &slot) != RT_TAKE_FRAME)
        return 0;
    if (slot_out)
        *slot_out = slot;
    return s->slot[slot].seq;
}

static void accounting_holds(const rt_slots *s)
{
    uint64_t in_ring = (uint64_t)rt_slots_count(s, RT_SLOT_PUBLISHED) +
                       (uint64_t)rt_slots_count(s, RT_SLOT_WRITING);
    CHECK(s->put == s->last_seq);
    CHECK(s->put == s->taken + rt_slots_dropped(s) + in_ring);
}

static void keep_newest_takes_the_newest_and_counts_skips(void)
{
    rt_slots s;
    fake_events ev = {0};
    rt_slots_init(&s, 4, RT_RING_KEEP_NEWEST);
    int slot;
    CHECK(rt_slots_take(&s, &slot) == RT_TAKE_NONE && slot == -1);
    for (int k = 0; k < 3; k++) {
        rt_put_plan p;
        CHECK(put_ok(&s, &ev, 1000 + (uint64_t)k, &p) == k); /* free slots, lowest first */
        CHECK(p.kind == RT_PUT_WRITE && p.seq == (uint64_t)k + 1 && !p.overwrote);
    }
    CHECK(rt_slots_count(&s, RT_SLOT_PUBLISHED) == 3);
    CHECK(take_seq(&s, &slot) == 3);
    CHECK(slot == 2 && s.slot[2].capture_ns == 1002);
    CHECK(s.skipped == 2 && s.taken == 1);
    CHECK(rt_slots_count(&s, RT_SLOT_FREE) == 3 && rt_slots_count(&s, RT_SLOT_TAKEN) == 1);
    CHECK(rt_slots_take(&s, &slot) == RT_TAKE_NONE);
    accounting_holds(&s);
    CHECK(rt_slots_release(&s, 2, 3) == 0);
    CHECK(s.released == 1);
    CHECK(rt_slots_release(&s, 2, 3) == -1); /* twice */
    CHECK(rt_slots_release(&s, 1, 2) == -1); /* never taken */
    CHECK(rt_slots_release(&s, 9, 3) == -1); /* out of range */
    CHECK(rt_slots_release(&s, -1, 3) == -1);
    accounting_holds(&s);
}

static void keep_newest_overwrites_the_oldest_untaken(void)
{
    rt_slots s;
    fake_events ev = {0};
    rt_slots_init(&s, 4, RT_RING_KEEP_NEWEST);
    for (int k = 0; k < 4; k++)
        CHECK(put_ok(&s, &ev, 0, NULL) == k);
    rt_put_plan p;
    CHECK(put_ok(&s, &ev, 0, &p) == 0); /* seq 1 lived in slot 0 */
    CHECK(p.overwrote && p.lost == 1 && p.seq == 5);
    CHECK(put_ok(&s, &ev, 0, &p) == 1);
    CHECK(p.overwrote && p.lost == 2 && p.seq == 6);
    CHECK(s.overwritten == 2 && rt_slots_dropped(&s) == 2);
    accounting_holds(&s);
    /* Newest is seq 6; 3, 4, 5 are skipped. */
    CHECK(take_seq(&s, NULL) == 6);
    CHECK(s.skipped == 3 && rt_slots_dropped(&s) == 5 && s.taken == 1);
    accounting_holds(&s);
}

static void keep_newest_drops_when_the_consumer_holds_every_slot(void)
{
    rt_slots s;
    fake_events ev = {0};
    rt_slots_init(&s, 3, RT_RING_KEEP_NEWEST);
    int held[3];
    for (int k = 0; k < 3; k++) {
        CHECK(put_ok(&s, &ev, 0, NULL) >= 0);
        CHECK(take_seq(&s, &held[k]) == (uint64_t)k + 1);
    }
    rt_put_plan p = rt_slots_begin_put(&s, fake_done, &ev);
    CHECK(p.kind == RT_PUT_DROP && p.slot == -1 && p.seq == 4);
    CHECK(s.rejected == 1);
    /* Released, but the GPU has not finished with it: still not writable,
     * and the ring asked (non-blocking) rather than waited. */
    CHECK(rt_slots_release(&s, held[1], 2) == 0);
    ev.queries = 0;
    p = rt_slots_begin_put(&s, fake_done, &ev);
    CHECK(p.kind == RT_PUT_DROP && p.seq == 5 && ev.queries == 1);
    CHECK(s.slot[held[1]].state == RT_SLOT_RELEASING);
    ev.done[held[1]] = 1;
    p = rt_slots_begin_put(&s, fake_done, &ev);
    CHECK(p.kind == RT_PUT_WRITE && p.slot == held[1] && p.seq == 6);
    rt_slots_end_put(&s, p.slot, 0, 1);
    CHECK(s.rejected == 2);
    CHECK(take_seq(&s, NULL) == 6);
    accounting_holds(&s);
}

static void block_keeps_order_and_never_drops(void)
{
    rt_slots s;
    fake_events ev = {0};
    rt_slots_init(&s, 3, RT_RING_BLOCK);
    for (int k = 0; k < 3; k++)
        CHECK(put_ok(&s, &ev, 0, NULL) == k);
    rt_put_plan p = rt_slots_begin_put(&s, fake_done, &ev);
    CHECK(p.kind == RT_PUT_WAIT && p.slot == -1 && s.put == 3); /* not counted */
    int a = -1, b = -1;
    CHECK(take_seq(&s, &a) == 1); /* oldest first */
    CHECK(rt_slots_begin_put(&s, fake_done, &ev).kind == RT_PUT_WAIT); /* taken != free */
    CHECK(take_seq(&s, &b) == 2);
    /* Released with work in flight: the producer writes after a GPU-side
     * wait rather than waiting on the host. */
    CHECK(rt_slots_release(&s, a, 1) == 0);
    CHECK(rt_slots_release(&s, b, 2) == 0);
    ev.done[b] = 1; /* b's done completed, a's not: b is preferred */
    CHECK(put_ok(&s, &ev, 0, &p) == b && p.kind == RT_PUT_WRITE && p.seq == 4);
    CHECK(put_ok(&s, &ev, 0, &p) == a && p.kind == RT_PUT_WRITE_AFTER_DONE && p.seq == 5);
    CHECK(rt_slots_begin_put(&s, fake_done, &ev).kind == RT_PUT_WAIT);
    for (uint64_t want = 3; want <= 5; want++)
        CHECK(take_seq(&s, NULL) == want);
    CHECK(rt_slots_dropped(&s) == 0 && s.taken == 5);
    accounting_holds(&s);
}

static void block_reuses_the_oldest_release_first(void)
{
    rt_slots s;
    fake_events ev = {0};
    rt_slots_init(&s, 3, RT_RING_BLOCK);
    int slot[3];
    for (int k = 0; k < 3; k++) {
        put_ok(&s, &ev, 0, NULL);
        take_seq(&s, &slot[k]);
    }
    CHECK(rt_slots_release(&s, slot[2], 3) == 0);
    CHECK(rt_slots_release(&s, slot[0], 1) == 0);
    rt_put_plan p;
    CHECK(put_ok(&s, &ev, 0, &p) == slot[2] && p.kind == RT_PUT_WRITE_AFTER_DONE);
    CHECK(put_ok(&s, &ev, 0, &p) == slot[0] && p.kind == RT_PUT_WRITE_AFTER_DONE);
    CHECK(rt_slots_begin_put(&s, fake_done, &ev).kind == RT_PUT_WAIT);
}

static void close_hands_out_what_was_put_then_closed(void)
{
    for (int pol = 0; pol < RT_RING_POLICY_COUNT; pol++) {
        rt_slots s;
        fake_events ev = {0};
        rt_slots_init(&s, 4, (rt_ring_policy)pol);
        put_ok(&s, &ev, 0, NULL);
        put_ok(&s, &ev, 0, NULL);
        rt_put_plan writing = rt_slots_begin_put(&s, fake_done, &ev); /* in flight */
        CHECK(writing.kind == RT_PUT_WRITE && writing.seq == 3);
        rt_slots_close(&s);
        CHECK(rt_slots_begin_put(&s, fake_done, &ev).kind == RT_PUT_CLOSED);
        CHECK(s.put == 3);
        int slot;
        if (pol == RT_RING_BLOCK) {
            CHECK(take_seq(&s, NULL) == 1);
            CHECK(take_seq(&s, NULL) == 2);
        } else {
            CHECK(take_seq(&s, NULL) == 2); /* 1 skipped */
        }
        /* The frame being written when the ring closed still comes. */
        CHECK(rt_slots_take(&s, &slot) == RT_TAKE_NONE);
        rt_slots_end_put(&s, writing.slot, 0, 1);
        CHECK(take_seq(&s, NULL) == 3);
        CHECK(rt_slots_take(&s, &slot) == RT_TAKE_CLOSED && slot == -1);
        CHECK(rt_slots_take(&s, &slot) == RT_TAKE_CLOSED);
        accounting_holds(&s);
    }
}

static void failed_upload_frees_the_slot_and_counts(void)
{
    rt_slots s;
    fake_events ev = {0};
    rt_slots_init(&s, 2, RT_RING_BLOCK);
    rt_put_plan p = rt_slots_begin_put(&s, fake_done, &ev);
    CHECK(p.kind == RT_PUT_WRITE);
    rt_slots_end_put(&s, p.slot, 0, 0);
    CHECK(s.slot[p.slot].state == RT_SLOT_FREE && s.failed == 1);
    int slot;
    CHECK(rt_slots_take(&s, &slot) == RT_TAKE_NONE);
    CHECK(put_ok(&s, &ev, 0, &p) >= 0 && p.seq == 2);
    CHECK(take_seq(&s, NULL) == 2); /* the gap says one frame was lost */
    accounting_holds(&s);
}

/* Random interleavings against a model of the device: contents[i] is the
 * seq the GPU last wrote into slot i, busy[i] whether the consumer's GPU
 * work on it after release is unfinished (its done event not completed).
 * Writing a slot the consumer holds, or one its GPU work still reads
 * without a GPU-side wait, or reading a slot whose contents are not the
 * frame handed over, is a failure. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static unsigned rnd(unsigned n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned)(rng_state % n);
}

static void random_interleavings_keep_the_invariants(void)
{
    for (int pol = 0; pol < RT_RING_POLICY_COUNT; pol++) {
        for (int n = 1; n <= 5; n++) {
            rt_slots s;
            fake_events ev = {0}; /* ev.done[i] == !busy[i] */
            rt_slots_init(&s, n, (rt_ring_policy)pol);
            uint64_t contents[RT_RING_MAX_SLOTS] = {0};
            int busy[RT_RING_MAX_SLOTS] = {0};
            int held[RT_RING_MAX_SLOTS], nheld = 0;
            uint64_t last_taken = 0, waits = 0;
            int bad_write = 0, bad_read = 0, bad_order = 0, gaps = 0;
            for (int i = 0; i < n; i++)
                ev.done[i] = 1;
            for (int step = 0; step < 20000; step++) {
                unsigned op = rnd(4);
                if (op == 0) {
                    rt_put_plan p = rt_slots_begin_put(&s, fake_done, &ev);
                    if (p.kind == RT_PUT_WRITE || p.kind == RT_PUT_WRITE_AFTER_DONE) {
                        for (int h = 0; h < nheld; h++)
                            bad_write += held[h] == p.slot;
                        if (p.kind == RT_PUT_WRITE)
                            bad_write += busy[p.slot];
                        else {
                            bad_write += pol != RT_RING_BLOCK;
                            waits++;
                        }
                        /* The GPU-side wait orders the copy after the
                         * consumer's work: from here the slot is quiet. */
                        busy[p.slot] = 0;
                        ev.done[p.slot] = 1;
                        contents[p.slot] = p.seq;
                        rt_slots_end_put(&s, p.slot, p.seq * 10, rnd(50) != 0);
                    }
                    if (pol == RT_RING_BLOCK)
                        CHECK(p.kind != RT_PUT_DROP);
                    else
                        CHECK(p.kind != RT_PUT_WAIT);
                } else if (op == 1 && nheld < n) {
                    int slot;
                    rt_take_kind k = rt_slots_take(&s, &slot);
                    if (k == RT_TAKE_FRAME) {
                        uint64_t seq = s.slot[slot].seq;
                        bad_read += contents[slot] != seq || s.slot[slot].capture_ns != seq * 10;
                        bad_order += seq <= last_taken;
                        gaps += (int)(seq - last_taken - 1);
                        last_taken = seq;
                        held[nheld++] = slot;
                    }
                } else if (op == 2 && nheld > 0) {
                    int h = (int)rnd((unsigned)nheld);
                    int slot = held[h];
                    CHECK(rt_slots_release(&s, slot, s.slot[slot].seq) == 0);
                    busy[slot] = 1; /* the consumer's work is in flight */
                    ev.done[slot] = 0;
                    held[h] = held[--nheld];
                } else if (op == 3) {
                    int slot = (int)rnd((unsigned)n); /* the GPU finishes a slot's work */
                    busy[slot] = 0;
                    ev.done[slot] = 1;
                }
                accounting_holds(&s);
            }
            CHECK(bad_write == 0 && bad_read == 0 && bad_order == 0);
            if (pol == RT_RING_BLOCK) {
                CHECK(s.overwritten == 0 && s.skipped == 0 && s.rejected == 0);
                /* Only failed uploads leave gaps (some may come after the
                 * last frame taken). */
                CHECK(gaps <= (int)s.failed);
                CHECK((uint64_t)gaps + (s.last_seq - last_taken) >= s.failed);
                CHECK(waits > 0);
            } else {
                CHECK(s.skipped + s.overwritten > 0 && waits == 0);
                CHECK(n > 2 || s.rejected > 0);
            }
            CHECK(s.failed > 0 && s.taken > 1000);
        }
    }
}

static void api_checks_arguments_without_a_device(void)
{
    int dummy;
    omma_device *dev = (omma_device *)&dummy; /* never used: the checks fail first */
    rt_ring *ring = (rt_ring *)&dummy;
    rt_ring_format fmt = {64, 48, OMMA_PIXEL_NV12};
    CHECK_FAILS(rt_ring_create(dev, 4, &fmt, RT_RING_BLOCK, NULL), OMMA_ERR_INVALID_ARG,
                "out is NULL");
    CHECK_FAILS(rt_ring_create(NULL, 4, &fmt, RT_RING_BLOCK, &ring), OMMA_ERR_INVALID_ARG,
                "device is NULL");
    CHECK(ring == NULL);
    CHECK_FAILS(rt_ring_create(dev, 4, NULL, RT_RING_BLOCK, &ring), OMMA_ERR_INVALID_ARG,
                "format is NULL");
    CHECK_FAILS(rt_ring_create(dev, 0, &fmt, RT_RING_BLOCK, &ring), OMMA_ERR_INVALID_ARG,
                "0 slots is not in 1..64");
    CHECK_FAILS(rt_ring_create(dev, 65, &fmt, RT_RING_BLOCK, &ring), OMMA_ERR_INVALID_ARG,
                "65 slots");
    rt_ring_format bad = {0, 48, OMMA_PIXEL_NV12};
    CHECK_FAILS(rt_ring_create(dev, 4, &bad, RT_RING_BLOCK, &ring), OMMA_ERR_INVALID_ARG,
                "frame size 0x48");
    bad = (rt_ring_format){64, 40000, OMMA_PIXEL_RGB};
    CHECK_FAILS(rt_ring_create(dev, 4, &bad, RT_RING_BLOCK, &ring), OMMA_ERR_INVALID_ARG,
                "64x40000");
    bad = (rt_ring_format){64, 48, OMMA_PIXEL_FORMAT_COUNT};
    CHECK_FAILS(rt_ring_create(dev, 4, &bad, RT_RING_BLOCK, &ring), OMMA_ERR_INVALID_ARG,
                "unknown pixel format");
    CHECK_FAILS(rt_ring_create(dev, 4, &fmt, RT_RING_POLICY_COUNT, &ring), OMMA_ERR_INVALID_ARG,
                "unknown policy");
    CHECK(ring == NULL);

    omma_frame f = {0};
    CHECK_FAILS(rt_ring_put(NULL, &f, NULL, 0, 0), OMMA_ERR_INVALID_ARG, "ring is NULL");
    rt_ring_item item = {.has_frame = 1, .slot_ = 3};
    CHECK_FAILS(rt_ring_take(NULL, &item), OMMA_ERR_INVALID_ARG, "ring is NULL");
    CHECK(item.has_frame == 0 && item.slot_ == -1); /* emptied */
    CHECK_FAILS(rt_ring_take_wait(NULL, &item, 10), OMMA_ERR_INVALID_ARG, "ring is NULL");
    CHECK_FAILS(rt_ring_take(NULL, NULL), OMMA_ERR_INVALID_ARG, "item is NULL");
    CHECK_FAILS(rt_ring_release(NULL, &item, NULL), OMMA_ERR_INVALID_ARG, "ring is NULL");
    rt_ring_stats st;
    CHECK_FAILS(rt_ring_get_stats(NULL, &st), OMMA_ERR_INVALID_ARG, "ring is NULL");
    rt_ring_close(NULL);
    rt_ring_destroy(NULL);
    CHECK(rt_ring_slots(NULL) == 0 && rt_ring_frame_bytes(NULL) == 0);
    CHECK(strcmp(rt_ring_policy_name(RT_RING_KEEP_NEWEST), "keep-newest") == 0);
    CHECK(strcmp(rt_ring_policy_name(RT_RING_BLOCK), "block") == 0);
    CHECK(strcmp(rt_ring_policy_name(RT_RING_POLICY_COUNT), "unknown") == 0);
}

int main(void)
{
    RUN(keep_newest_takes_the_newest_and_counts_skips);
    RUN(keep_newest_overwrites_the_oldest_untaken);
    RUN(keep_newest_drops_when_the_consumer_holds_every_slot);
    RUN(block_keeps_order_and_never_drops);
    RUN(block_reuses_the_oldest_release_first);
    RUN(close_hands_out_what_was_put_then_closed);
    RUN(failed_upload_frees_the_slot_and_counts);
    RUN(random_interleavings_keep_the_invariants);
    RUN(api_checks_arguments_without_a_device);
    return testing_finish();
}
