/* Private to frame_ring.c (and its CPU test): the slot bookkeeping of a
 * frame ring as pure logic, no CUDA, no locks. The caller holds the ring's
 * mutex around every call; whether a released slot's done event has
 * completed is asked through a callback, so a test can drive every policy
 * decision with fake events.
 *
 * A slot's life:
 *   FREE -> WRITING (producer picked it; upload being enqueued)
 *        -> PUBLISHED (frame ready to take; seq and capture time set)
 *        -> TAKEN (handed to the consumer)
 *        -> RELEASING (consumer gave it back; its done event recorded)
 *        -> FREE (done event completed) ...
 * with the drops: PUBLISHED -> WRITING (KEEP_NEWEST put overwrites the
 * oldest untaken frame), PUBLISHED -> FREE (KEEP_NEWEST take skips older
 * untaken frames), WRITING -> FREE (the upload failed to enqueue), and
 * RELEASING -> WRITING (BLOCK put that waits for the done event on the GPU
 * when nothing else is free). */
#ifndef OMMA_RUNTIME_FRAME_RING_SLOTS_H
#define OMMA_RUNTIME_FRAME_RING_SLOTS_H

#include <stdint.h>

#include "runtime/frame_ring.h"

typedef enum rt_slot_state {
    RT_SLOT_FREE = 0,
    RT_SLOT_WRITING,
    RT_SLOT_PUBLISHED,
    RT_SLOT_TAKEN,
    RT_SLOT_RELEASING,
    RT_SLOT_STATE_COUNT
} rt_slot_state;

typedef struct rt_slot {
    rt_slot_state state;
    uint64_t seq; /* the frame in the slot (WRITING, PUBLISHED, TAKEN) */
    uint64_t capture_ns; /* PUBLISHED, TAKEN */
    uint64_t released_at; /* RELEASING: order of release (oldest first) */
} rt_slot;

/* 1 when `slot` may not be written now for a reason outside the ring (a
 * frame-bus subscriber holds it); NULL: never. */
typedef int (*rt_slots_busy_fn)(void *ctx, int slot);

typedef struct rt_slots {
    int n;
    rt_slots_busy_fn busy; /* consulted before a slot is written */
    void *busy_ctx;
    rt_ring_policy policy;
    int closed;
    uint64_t last_seq; /* seq of the last frame put (0: none yet) */
    uint64_t release_clock; /* counts releases, to order RELEASING slots */
    rt_slot slot[RT_RING_MAX_SLOTS];
    uint64_t put, taken, released, overwritten, skipped, rejected, failed;
} rt_slots;

/* 1 when the done event of `slot` (RELEASING) has completed. */
typedef int (*rt_slots_done_fn)(void *ctx, int slot);

typedef enum rt_put_kind {
    RT_PUT_WRITE = 0, /* write `slot` now */
    RT_PUT_WRITE_AFTER_DONE, /* BLOCK: write `slot` after the upload stream
                              * waits on the GPU for its done event */
    RT_PUT_DROP, /* KEEP_NEWEST: every slot is held by the
                  * consumer; the frame (seq) is dropped */
    RT_PUT_WAIT, /* BLOCK: nothing to write; wait for a release */
    RT_PUT_CLOSED, /* the ring is closed */
} rt_put_kind;

typedef struct rt_put_plan {
    rt_put_kind kind;
    int slot; /* WRITE, WRITE_AFTER_DONE: the slot, now WRITING; else -1 */
    uint64_t seq; /* WRITE, WRITE_AFTER_DONE, DROP: the frame's number */
    int overwrote; /* WRITE over a published frame (KEEP_NEWEST) */
    uint64_t lost; /* the overwritten frame's seq (when overwrote) */
} rt_put_plan;

typedef enum rt_take_kind {
    RT_TAKE_FRAME = 0, /* `slot` is now TAKEN */
    RT_TAKE_NONE, /* nothing published now */
    RT_TAKE_CLOSED, /* closed, and every frame put was taken or dropped */
} rt_take_kind;

static inline void rt_slots_init(rt_slots *s, int n, rt_ring_policy policy)
{
    *s = (rt_slots){0};
    s->n = n;
    s->policy = policy;
}

static inline int rt_slots_count(const rt_slots *s, rt_slot_state state)
{
    int c = 0;
    for (int i = 0; i < s->n; i++)
        c += s->slot[i].state == state;
    return c;
}

static inline uint64_t rt_slots_dropped(const rt_slots *s)
{
    return s->overwritten + s->skipped + s->rejected + s->failed;
}

/* RELEASING slots whose done event completed become FREE. */
static inline void rt_slots_reclaim(rt_slots *s, rt_slots_done_fn done, void *ctx)
{
    for (int i = 0; i < s->n; i++)
        if (s->slot[i].state == RT_SLOT_RELEASING && done(ctx, i))
            s->slot[i].state = RT_SLOT_FREE;
}

/* Index of the slot in `state` with the smallest (oldest = 1) or largest
 * (oldest = 0) key (seq, or release order for RELEASING); -1 if none.
 * writable: only slots that s->busy does not hold. */
static inline int rt_slots_find_in(const rt_slots *s, rt_slot_state state, int oldest, int writable)
{
    int best = -1;
    uint64_t best_key = 0;
    for (int i = 0; i < s->n; i++) {
        if (s->slot[i].state != state)
            continue;
        if (writable && s->busy && s->busy(s->busy_ctx, i))
            continue;
        uint64_t key = state == RT_SLOT_RELEASING ? s->slot[i].released_at : s->slot[i].seq;
        if (best < 0 || (oldest ? key < best_key : key > best_key))
            best = i, best_key = key;
    }
    return best;
}

static inline int rt_slots_find(const rt_slots *s, rt_slot_state state, int oldest)
{
    return rt_slots_find_in(s, state, oldest, 0);
}

static inline rt_put_plan rt_slots_start_write(rt_slots *s, rt_put_kind kind, int slot)
{
    rt_put_plan p = {kind, slot, ++s->last_seq, 0, 0};
    s->put++;
    if (s->slot[slot].state == RT_SLOT_PUBLISHED) {
        p.overwrote = 1;
        p.lost = s->slot[slot].seq;
        s->overwritten++;
    }
    s->slot[slot].state = RT_SLOT_WRITING;
    s->slot[slot].seq = p.seq;
    s->slot[slot].capture_ns = 0;
    return p;
}

/* KEEP_NEWEST: the new frame is dropped (numbered, counted as put and
 * rejected). */
static inline rt_put_plan rt_slots_reject(rt_slots *s)
{
    rt_put_plan p = {RT_PUT_DROP, -1, ++s->last_seq, 0, 0};
    s->put++;
    s->rejected++;
    return p;
}

/* The producer's decision for one frame (see rt_put_kind). WRITE and
 * WRITE_AFTER_DONE and DROP number the frame and count it as put. */
static inline rt_put_plan rt_slots_begin_put(rt_slots *s, rt_slots_done_fn done, void *ctx)
{
    rt_put_plan p = {RT_PUT_CLOSED, -1, 0, 0, 0};
    if (s->closed)
        return p;
    int i = rt_slots_find_in(s, RT_SLOT_FREE, 1, 1);
    if (i < 0) {
        rt_slots_reclaim(s, done, ctx);
        i = rt_slots_find_in(s, RT_SLOT_FREE, 1, 1);
    }
    if (i >= 0)
        return rt_slots_start_write(s, RT_PUT_WRITE, i);
    if (s->policy == RT_RING_KEEP_NEWEST) {
        i = rt_slots_find_in(s, RT_SLOT_PUBLISHED, 1, 1);
        if (i >= 0)
            return rt_slots_start_write(s, RT_PUT_WRITE, i);
        return rt_slots_reject(s);
    }
    i = rt_slots_find_in(s, RT_SLOT_RELEASING, 1, 1);
    if (i >= 0)
        return rt_slots_start_write(s, RT_PUT_WRITE_AFTER_DONE, i);
    p.kind = RT_PUT_WAIT;
    return p;
}

/* The upload of a WRITING slot was enqueued (ok) or failed (the frame is
 * counted as failed and the slot freed). */
static inline void rt_slots_end_put(rt_slots *s, int slot, uint64_t capture_ns, int ok)
{
    rt_slot *sl = &s->slot[slot];
    if (ok) {
        sl->state = RT_SLOT_PUBLISHED;
        sl->capture_ns = capture_ns;
    } else {
        sl->state = RT_SLOT_FREE;
        s->failed++;
    }
}

/* The consumer's next frame: the newest published one (KEEP_NEWEST: the
 * older published ones are freed and counted as skipped) or the oldest
 * (BLOCK). CLOSED only once closed with nothing published or being written. */
static inline rt_take_kind rt_slots_take(rt_slots *s, int *slot)
{
    *slot = -1;
    int keep_newest = s->policy == RT_RING_KEEP_NEWEST;
    int i = rt_slots_find(s, RT_SLOT_PUBLISHED, !keep_newest);
    if (i < 0)
        return s->closed && rt_slots_count(s, RT_SLOT_WRITING) == 0 ? RT_TAKE_CLOSED : RT_TAKE_NONE;
    if (keep_newest) {
        for (int j = 0; j < s->n; j++) {
            if (j != i && s->slot[j].state == RT_SLOT_PUBLISHED) {
                s->slot[j].state = RT_SLOT_FREE;
                s->skipped++;
            }
        }
    }
    s->slot[i].state = RT_SLOT_TAKEN;
    s->taken++;
    *slot = i;
    return RT_TAKE_FRAME;
}

/* Is (slot, seq) a frame the consumer holds? */
static inline int rt_slots_is_taken(const rt_slots *s, int slot, uint64_t seq)
{
    return slot >= 0 && slot < s->n && s->slot[slot].state == RT_SLOT_TAKEN &&
           s->slot[slot].seq == seq;
}

/* The consumer gave (slot, seq) back and its done event is recorded.
 * Returns 0, or -1 when it is not a taken frame (nothing changes). */
static inline int rt_slots_release(rt_slots *s, int slot, uint64_t seq)
{
    if (!rt_slots_is_taken(s, slot, seq))
        return -1;
    s->slot[slot].state = RT_SLOT_RELEASING;
    s->slot[slot].released_at = ++s->release_clock;
    s->released++;
    return 0;
}

static inline void rt_slots_close(rt_slots *s)
{
    s->closed = 1;
}

#endif
