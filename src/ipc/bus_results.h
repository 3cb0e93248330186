/* Private: the face results of a bus's frames, in shared host memory.
 *
 * One memfd holds, per camera, a ring of records (one per frame: seq,
 * capture time, faces). The publisher writes it; subscribers map it
 * read-only. A record is a seqlock: the writer makes `lock` odd, writes,
 * makes it even; a reader copies and retries if `lock` changed or was odd,
 * so it never sees half a record and never blocks the writer. The memfd is
 * sealed against shrinking, so a mapping can never fault (SIGBUS), and
 * against future writes (F_SEAL_FUTURE_WRITE, after the publisher's own
 * writable mapping), so no subscriber can write what the others read. */
#ifndef OMMA_IPC_BUS_RESULTS_H
#define OMMA_IPC_BUS_RESULTS_H

#include <stddef.h>
#include <stdint.h>

#include "omma/face.h"
#include "omma/status.h"

#define BUS_RESULTS_MAGIC 0x53524d4fu /* "OMRS" */

typedef struct bus_results_header {
    uint32_t magic;
    uint32_t cameras;
    uint32_t records; /* per camera */
    uint32_t max_faces;
    uint64_t record_bytes;
    uint64_t total_bytes;
} bus_results_header;

typedef struct bus_results {
    int fd; /* the memfd (publisher), -1 once closed */
    uint8_t *base;
    size_t bytes;
    int writable;
    bus_results_header h;
} bus_results;

/* Bytes of the memory for cameras x records records of max_faces faces. */
size_t bus_results_bytes(int cameras, int records, int max_faces);

/* Publisher: creates the sealed memfd and maps it writable (1..
 * BUS_MAX_CAMERAS cameras, 1..4 x BUS_MAX_SLOTS records, 1..BUS_MAX_FACES
 * faces; else OMMA_ERR_INVALID_ARG). */
omma_status bus_results_create(int cameras, int records, int max_faces, bus_results *r);

/* Subscriber: maps fd (bytes long, as announced) read-only after checking
 * its seals (shrink and future write), size and header. The fd is not kept (close it after).
 * Errors: OMMA_ERR_FORMAT naming what does not match, OMMA_ERR_IO. */
omma_status bus_results_map(int fd, size_t bytes, bus_results *r);

void bus_results_close(bus_results *r);

/* Offset of camera's records, for the CAMERA message. */
uint64_t bus_results_camera_offset(const bus_results *r, int camera);

/* Publisher: the faces of frame seq of camera (n faces, at most
 * max_faces are kept). One writer per camera. */
void bus_results_write(bus_results *r, int camera, uint64_t seq, uint64_t capture_ns,
                       const omma_face *faces, int n);

/* Subscriber: the faces of frame seq (>= 1) of camera into faces (max
 * entries): OMMA_OK with *n; OMMA_ERR_TIMEOUT when they are not there yet
 * (or being written), OMMA_ERR_CLOSED when a newer frame's replaced them,
 * OMMA_ERR_INVALID_ARG for a camera out of range, seq 0 or max < 0. */
omma_status bus_results_read(const bus_results *r, int camera, uint64_t seq, omma_face *faces,
                             int max, int *n);

#endif
