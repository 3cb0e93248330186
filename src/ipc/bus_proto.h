/* Private: the frame bus's control messages, as bytes on a Unix socket.
 *
 * The publisher and each subscriber talk over one SOCK_SEQPACKET socket
 * (every send is one whole message). Every message starts with a 16-byte
 * header: magic "OMBS", version, type, total length. Integers are in the
 * host's byte order: both ends are on one machine, and a peer built
 * otherwise fails the magic check.
 *
 *   subscriber -> publisher      publisher -> subscriber
 *   HELLO (cameras wanted)       WELCOME (seat, cameras; the results memfd)
 *                                BOARD (the seat's release board memfd, see
 *                                       bus_board.h; not to watchers)
 *                                CAMERA x n (format, slots; the ring's
 *                                           memory fd)
 *                                FRAME (camera, slot, seq, capture time, ...)
 *                                FRAMES (1..BUS_MAX_BATCH FRAME bodies: the
 *                                        frames that became ready together)
 *   BYE (reason)                 BYE / ERROR (status, reason)
 *
 * Frames are given back on the release board, not in messages: after
 * HELLO a subscriber sends nothing but BYE.
 *
 * bus_msg_decode checks everything a hostile peer could get wrong (magic,
 * version, type, length against the type's size, counts against limits,
 * strings terminated, enums in range) and says what is wrong; a message that
 * fails it ends that peer's session. Pure: no I/O, no allocation. */
#ifndef OMMA_IPC_BUS_PROTO_H
#define OMMA_IPC_BUS_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "omma/status.h"

#define BUS_MAGIC 0x53424d4fu /* "OMBS" */
#define BUS_VERSION 2 /* 2: releases on the board, not in messages */
#define BUS_MAX_CAMERAS 1024 /* cameras one bus publishes at most */
#define BUS_MAX_SLOTS 64 /* slots per camera ring (RT_RING_MAX_SLOTS) */
#define BUS_MAX_HOLDS 8 /* frames of one camera a subscriber may hold */
#define BUS_MAX_SEATS 64 /* subscribers attached at once */
#define BUS_NAME_MAX 64 /* bus and camera names, with the NUL */
#define BUS_MAX_FACES 64 /* faces per frame in the results memory */
#define BUS_TEXT_MAX 256 /* BYE / ERROR reasons, with the NUL */
#define BUS_MAX_BATCH 64 /* frames in one FRAMES message */

typedef enum bus_msg_type {
    BUS_MSG_HELLO = 1,
    BUS_MSG_WELCOME,
    BUS_MSG_CAMERA,
    BUS_MSG_FRAME,
    BUS_MSG_BOARD,
    BUS_MSG_BYE,
    BUS_MSG_ERROR,
    BUS_MSG_FRAMES,
    BUS_MSG_TYPE_END
} bus_msg_type;

typedef struct bus_header {
    uint32_t magic;
    uint16_t version;
    uint16_t type;
    uint32_t length; /* whole message, header included */
    uint32_t reserved; /* 0 */
} bus_header;

/* HELLO flags. */
#define BUS_HELLO_EVERY_FRAME 1u /* ask for every frame (blocking publishers) */
/* Only watches: frames are announced but never held (bus watch); no
 * memory is sent. */
#define BUS_HELLO_WATCH 2u

typedef struct bus_hello {
    uint32_t flags;
    uint32_t max_holds; /* 1..BUS_MAX_HOLDS frames held per camera */
    uint32_t pid;
    uint32_t n_cameras; /* 0 = every camera, else the indices below */
    uint16_t cameras[BUS_MAX_CAMERAS];
} bus_hello;

typedef struct bus_welcome {
    uint32_t seat; /* 0..BUS_MAX_SEATS-1 */
    uint32_t pid; /* the publisher's */
    uint32_t n_cameras; /* CAMERA messages that follow */
    uint32_t max_faces; /* faces per record in the results memory */
    uint32_t subscribers; /* seats taken, this one included */
    uint32_t reserved; /* 0 */
    uint64_t results_bytes; /* size of the results memfd (sent with this) */
} bus_welcome;

typedef struct bus_camera {
    uint32_t index; /* the camera's index on the bus */
    uint32_t width, height, format; /* format: an omma_pixel_format */
    uint32_t slots; /* 1..BUS_MAX_SLOTS */
    uint32_t reserved; /* 0 */
    uint64_t slot_bytes; /* distance between slots in the allocation */
    uint64_t frame_bytes; /* bytes of one frame (planes back to back) */
    uint64_t alloc_bytes; /* size of the shareable allocation (the fd) */
    uint64_t results_offset; /* this camera's records in the results memfd */
    uint32_t results_records;
    int32_t gpu; /* device ordinal in the publisher */
    uint8_t gpu_uuid[16];
    char name[BUS_NAME_MAX];
} bus_camera;

typedef struct bus_frame {
    uint32_t camera;
    uint32_t slot;
    uint64_t seq; /* the camera's frame number (gaps: frames dropped) */
    uint64_t capture_ns; /* CLOCK_MONOTONIC */
    uint64_t announce_ns; /* when the publisher sent it (CLOCK_MONOTONIC) */
    uint64_t missed; /* frames of this camera this seat missed so far */
    uint64_t reserved; /* 0 */
} bus_frame;

typedef struct bus_board_desc {
    uint32_t cameras; /* the bus's cameras (the board has a row per camera) */
    uint32_t reserved; /* 0 */
    uint64_t bytes; /* size of the board memfd (sent with this) */
} bus_board_desc;

/* FRAMES: sent with only its count frames. */
typedef struct bus_frames {
    uint32_t count; /* 1..BUS_MAX_BATCH */
    uint32_t reserved; /* 0 */
    bus_frame frames[BUS_MAX_BATCH];
} bus_frames;

typedef struct bus_text {
    int32_t status; /* an omma_status (ERROR), 0 for BYE */
    char text[BUS_TEXT_MAX];
} bus_text;

/* A decoded message: the header's type and the body for that type. */
typedef struct bus_msg {
    bus_msg_type type;
    union {
        bus_hello hello;
        bus_welcome welcome;
        bus_camera camera;
        bus_frame frame;
        bus_board_desc board;
        bus_text text; /* BYE, ERROR */
        bus_frames frames;
    } u;
} bus_msg;

/* Largest encoded message, for receive buffers: a full FRAMES (larger than
 * a HELLO naming every camera). */
#define BUS_MSG_MAX_BYTES (sizeof(bus_header) + sizeof(bus_frames))

/* Encodes *m into buf (cap bytes); returns the length, or 0 when cap is too
 * small or *m would not decode (a count out of range). HELLO is sent with
 * only its n_cameras indices, FRAMES with only its count entries. */
size_t bus_msg_encode(const bus_msg *m, void *buf, size_t cap);

/* Decodes n bytes into *m. Errors: OMMA_ERR_FORMAT naming what is wrong
 * (short header, magic, version, type, a length that does not match the
 * type, a count, index or enum out of range, a string without its NUL, a
 * reserved field not 0); *m is left zeroed. A message that decodes
 * re-encodes to the same bytes. */
omma_status bus_msg_decode(const void *buf, size_t n, bus_msg *m);

/* "HELLO", "FRAME", ...; "unknown" for others. */
const char *bus_msg_type_name(int type);

#endif
