/* Private: a subscriber's release board, in shared host memory.
 *
 * One memfd per seat holds a 64-bit word per (camera, slot): the sequence
 * number of the last frame of that slot the subscriber gave back. The
 * subscriber writes it there once its reads of the frame have run (it
 * records an event after them and looks at it in its next calls; at once
 * for a frame it did not read); the publisher reads the words when it
 * wants a slot or a hold back. So giving a frame back costs no message, no
 * thread and no wake-up on either side, and the publisher never waits for
 * another process's GPU work.
 *
 * The publisher creates the memfd (sealed against shrinking and growing:
 * no subscriber can make the publisher's mapping fault) and maps it
 * read-only; the subscriber maps it writable. A word is trusted only as "this seat gave back frame
 * seq of this slot": a subscriber that writes nonsense can only give back its own holds early,
 * which harms none but its own reads (frames are mapped read-only in subscribers). */
#ifndef OMMA_IPC_BUS_BOARD_H
#define OMMA_IPC_BUS_BOARD_H

#include <stddef.h>
#include <stdint.h>

#include "omma/status.h"

typedef struct bus_board {
    int fd; /* the memfd (publisher), -1 once closed */
    volatile uint64_t *words; /* [cameras][BUS_MAX_SLOTS] */
    size_t bytes;
    int cameras;
} bus_board;

/* Bytes of the board of cameras cameras (whole pages). */
size_t bus_board_bytes(int cameras);

/* Publisher: creates the sealed memfd (1..BUS_MAX_CAMERAS cameras) and
 * maps it read-only. */
omma_status bus_board_create(int cameras, bus_board *b);

/* Subscriber: maps fd writable after checking its seals and size (bytes,
 * as announced for cameras cameras). The fd is not kept (close it after).
 * Errors: OMMA_ERR_FORMAT naming what does not match, OMMA_ERR_IO. */
omma_status bus_board_map(int fd, int cameras, size_t bytes, bus_board *b);

void bus_board_close(bus_board *b);

/* The word of (camera, slot); camera and slot in range. */
volatile uint64_t *bus_board_word(const bus_board *b, int camera, int slot);

/* The last frame of (camera, slot) given back (0: none). */
uint64_t bus_board_released(const bus_board *b, int camera, int slot);

#endif
