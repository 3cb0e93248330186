/* Private: when a subscriber gives its frames given back on a stream their
 * event (seals the group: bus_subscriber.c), as pure logic (no CUDA, no
 * I/O), so that a test can run it against the publisher's holds
 * (bus_holds.h) over simulated time.
 *
 * A frame given back on a stream reaches the publisher (the release
 * board, bus_board.h) once an event recorded after its reads completed.
 * One event serves every frame given back on that stream before it was
 * recorded, so the later it is recorded the fewer events per frame (each
 * costs the subscriber's thread and the driver's event thread a few
 * microseconds, and the GPU a switch to the subscriber's context); but a
 * frame not yet back keeps its slot busy and counts against its camera's
 * max_holds. So the group is sealed, when the subscriber is about to wait
 * for the publisher (the frames of its last message are all handed out)
 * or on a release on another stream (a group is one stream's), if
 *   - one of its cameras may not wait (bus_seal_camera_waits is 0): it has
 *     no room for its next frame without them (held + owed >= max_holds:
 *     the publisher would count that frame missed), its ring has no slot to
 *     spare (bus_seal_ring_tight: the producer would drop frames for
 *     everyone), or the subscriber asked for every frame (the producer
 *     waits for them);
 *   - or its oldest frame was given back delay_ns ago or more: at 30
 *     frames a second a camera's next frame comes 33 ms after the last,
 *     so a release a few milliseconds late costs no one a frame. */
#ifndef OMMA_IPC_BUS_SEAL_H
#define OMMA_IPC_BUS_SEAL_H

#include <stdint.h>

/* The default delay (omma_bus_options.release_delay_us). */
#define BUS_SEAL_DELAY_US 2000

/* 1 when a camera's ring of slots slots leaves no slot to spare once
 * subscribers subscribers (this one included) hold max_holds frames each:
 * its releases are not delayed. */
static inline int bus_seal_ring_tight(int slots, int subscribers, int max_holds)
{
    return slots <= subscribers * max_holds + 1;
}

/* 1 when a camera's frames given back may wait for a later event: held
 * frames held now, owed given back and not yet on the board. */
static inline int bus_seal_camera_waits(int every, int tight, int held, int owed, int max_holds)
{
    return !every && !tight && held + owed < max_holds;
}

/* 1 when a group whose oldest frame was given back at since is due by its
 * age at now (delay_ns 0: always). */
static inline int bus_seal_old(uint64_t now, uint64_t since, uint64_t delay_ns)
{
    return now - since >= delay_ns;
}

#endif
