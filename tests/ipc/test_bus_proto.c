/* The frame bus's control messages (src/ipc/bus_proto.*): every type
 * round-trips; every check of the decoder is hit by a crafted message that
 * fails with OMMA_ERR_FORMAT and a message naming the problem; encode
 * refuses bad messages and small buffers; random mutations of valid
 * messages either decode to something that re-encodes to the same bytes or
 * fail cleanly. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/error.h"
#include "ipc/bus_board.h"
#include "ipc/bus_proto.h"
#include "omma/face.h"
#include "testing.h"

static uint64_t rng_state = 0x243F6A8885A308D3ull;
static unsigned rnd(unsigned n)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (unsigned)(rng_state % n);
}

/* Valid messages, zeroed first so that memcmp compares what matters. */
static bus_msg hello(uint32_t n_cameras)
{
    bus_msg m;
    memset(&m, 0, sizeof m);
    m.type = BUS_MSG_HELLO;
    m.u.hello.flags = BUS_HELLO_EVERY_FRAME;
    m.u.hello.max_holds = 3;
    m.u.hello.pid = 4242;
    m.u.hello.n_cameras = n_cameras;
    for (uint32_t i = 0; i < n_cameras; i++)
        m.u.hello.cameras[i] = (uint16_t)((i * 7 + 1) % BUS_MAX_CAMERAS);
    return m;
}

static bus_msg welcome(void)
{
    bus_msg m;
    memset(&m, 0, sizeof m);
    m.type = BUS_MSG_WELCOME;
    m.u.welcome = (bus_welcome){.seat = 63,
                                .pid = 77,
                                .n_cameras = 5,
                                .max_faces = 64,
                                .subscribers = 3,
                                .results_bytes = 1u << 20};
    return m;
}

static bus_msg camera(void)
{
    bus_msg m;
    memset(&m, 0, sizeof m);
    m.type = BUS_MSG_CAMERA;
    bus_camera *c = &m.u.camera;
    c->index = 1023;
    c->width = 1920;
    c->height = 1080;
    c->format = OMMA_PIXEL_NV12;
    c->slots = BUS_MAX_SLOTS;
    c->frame_bytes = 1920 * 1080 * 3 / 2;
    c->slot_bytes = 3u << 20;
    c->alloc_bytes = c->slot_bytes * c->slots;
    c->results_offset = 4096;
    c->results_records = 4 * BUS_MAX_SLOTS;
    c->gpu = 1;
    for (int i = 0; i < 16; i++)
        c->gpu_uuid[i] = (uint8_t)(i * 13);
    strcpy(c->name, "cam-01.front_door");
    return m;
}

static bus_msg frame(void)
{
    bus_msg m;
    memset(&m, 0, sizeof m);
    m.type = BUS_MSG_FRAME;
    m.u.frame = (bus_frame){.camera = 3,
                            .slot = 63,
                            .seq = 1ull << 40,
                            .capture_ns = 123456789,
                            .announce_ns = 123456999,
                            .missed = 12};
    return m;
}

/* A FRAMES message of n frames (camera i, slot i % 64, seq i + 1). */
static bus_msg frames(int n)
{
    bus_msg m;
    memset(&m, 0, sizeof m);
    m.type = BUS_MSG_FRAMES;
    m.u.frames.count = (uint32_t)n;
    for (int i = 0; i < n; i++)
        m.u.frames.frames[i] = (bus_frame){.camera = (uint32_t)i,
                                           .slot = (uint32_t)(i % BUS_MAX_SLOTS),
                                           .seq = (uint64_t)i + 1,
                                           .capture_ns = 1000u * (uint64_t)i,
                                           .announce_ns = 1000u * (uint64_t)i + 7,
                                           .missed = (uint64_t)i / 3};
    return m;
}

static bus_msg board(int cameras)
{
    bus_msg m;
    memset(&m, 0, sizeof m);
    m.type = BUS_MSG_BOARD;
    m.u.board = (bus_board_desc){.cameras = (uint32_t)cameras, .bytes = bus_board_bytes(cameras)};
    return m;
}

static bus_msg text(bus_msg_type type, int status, const char *s)
{
    bus_msg m;
    memset(&m, 0, sizeof m);
    m.type = type;
    m.u.text.status = status;
    strcpy(m.u.text.text, s);
    return m;
}

/* Every valid sample, for the loops below. */
static int samples(bus_msg *out)
{
    int n = 0;
    out[n++] = hello(0);
    out[n++] = hello(1);
    out[n++] = hello(3);
    out[n++] = hello(BUS_MAX_CAMERAS);
    out[n++] = welcome();
    out[n++] = camera();
    out[n++] = frame();
    out[n++] = frames(1);
    out[n++] = frames(5);
    out[n++] = frames(BUS_MAX_BATCH);
    out[n++] = board(1);
    out[n++] = board(BUS_MAX_CAMERAS);
    out[n++] = text(BUS_MSG_BYE, 0, "subscriber stopped");
    out[n++] = text(BUS_MSG_ERROR, OMMA_ERR_FORMAT, "bus message FRAME: bad");
    out[n++] = text(BUS_MSG_ERROR, OMMA_STATUS_COUNT - 1, "");
    return n;
}

/* Room for a CAMERA of the older layout that carried CUDA event handles
 * (5264 body bytes), which must be refused. */
#define OLD_CAMERA_BODY 5264
static uint8_t buf[sizeof(bus_header) + OLD_CAMERA_BODY + 64];

/* The wire layout: both ends are one build, but a size that changes by
 * accident would still break a bus across builds. */
static void layout(void)
{
    CHECK(sizeof(bus_header) == 16);
    CHECK(sizeof(bus_welcome) == 32);
    CHECK(sizeof(bus_camera) == 144);
    CHECK(sizeof(bus_frame) == 48);
    CHECK(offsetof(bus_frame, reserved) == 40);
    CHECK(sizeof(bus_board_desc) == 16);
    CHECK(sizeof(bus_text) == 260);
    CHECK(offsetof(bus_hello, cameras) == 16);
    CHECK(sizeof(bus_frames) == 8 + BUS_MAX_BATCH * sizeof(bus_frame));
    /* Receive buffers of BUS_MSG_MAX_BYTES hold every message: a HELLO
     * naming every camera is the largest. */
    CHECK(BUS_MSG_MAX_BYTES >= sizeof(bus_header) + sizeof(bus_hello));
    CHECK(BUS_MSG_MAX_BYTES >= sizeof(bus_header) + sizeof(bus_camera));
    CHECK(BUS_MSG_MAX_BYTES >= sizeof(bus_header) + sizeof(bus_text));
    CHECK(BUS_MSG_MAX_BYTES >= sizeof(bus_header) + sizeof(bus_welcome));
    CHECK(BUS_MSG_MAX_BYTES >= sizeof(bus_header) + sizeof(bus_frame));
    CHECK(BUS_MSG_MAX_BYTES >= sizeof(bus_header) + sizeof(bus_board_desc));
}

static void every_type_round_trips(void)
{
    bus_msg all[24];
    int n = samples(all);
    int seen[BUS_MSG_TYPE_END] = {0};
    for (int i = 0; i < n; i++) {
        size_t len = bus_msg_encode(&all[i], buf, sizeof buf);
        REQUIRE(len >= sizeof(bus_header));
        bus_header h;
        memcpy(&h, buf, sizeof h);
        CHECK(h.magic == BUS_MAGIC && h.version == BUS_VERSION && h.type == all[i].type &&
              h.length == len && h.reserved == 0);
        if (all[i].type == BUS_MSG_HELLO)
            CHECK(len == sizeof h + offsetof(bus_hello, cameras) +
                             all[i].u.hello.n_cameras * sizeof(uint16_t));
        CHECK(len <= BUS_MSG_MAX_BYTES);
        bus_msg d;
        memset(&d, 0xAB, sizeof d);
        REQUIRE_OK(bus_msg_decode(buf, len, &d));
        CHECK(memcmp(&d, &all[i], sizeof d) == 0);
        seen[all[i].type] = 1;
    }
    for (int t = BUS_MSG_HELLO; t < BUS_MSG_TYPE_END; t++)
        CHECK(seen[t]);
    /* A full FRAMES is the largest, then a HELLO naming every camera. */
    bus_msg full = frames(BUS_MAX_BATCH);
    CHECK(bus_msg_encode(&full, buf, sizeof buf) == BUS_MSG_MAX_BYTES);
    CHECK(bus_msg_encode(&all[3], buf, sizeof buf) < BUS_MSG_MAX_BYTES);
    CHECK(strcmp(bus_msg_type_name(BUS_MSG_FRAMES), "FRAMES") == 0);
    CHECK(strcmp(bus_msg_type_name(BUS_MSG_HELLO), "HELLO") == 0);
    CHECK(strcmp(bus_msg_type_name(BUS_MSG_ERROR), "ERROR") == 0);
    CHECK(strcmp(bus_msg_type_name(0), "unknown") == 0);
    CHECK(strcmp(bus_msg_type_name(BUS_MSG_TYPE_END), "unknown") == 0);
    CHECK(strcmp(bus_msg_type_name(-1), "unknown") == 0);
}

/* A message of type with this body (any bytes) and a right header. */
static size_t raw(int type, const void *body, size_t body_len)
{
    bus_header h = {BUS_MAGIC, BUS_VERSION, (uint16_t)type, (uint32_t)(sizeof h + body_len), 0};
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, body, body_len);
    return sizeof h + body_len;
}

/* Decoding fails with OMMA_ERR_FORMAT naming `want`, and leaves *m zeroed. */
#define DECODE_FAILS(len, want)                                                                    \
    do {                                                                                           \
        bus_msg d_;                                                                                \
        memset(&d_, 0x5A, sizeof d_);                                                              \
        CHECK_FAILS(bus_msg_decode(buf, (len), &d_), OMMA_ERR_FORMAT, (want));                     \
        bus_msg zero_;                                                                             \
        memset(&zero_, 0, sizeof zero_);                                                           \
        CHECK(memcmp(&d_, &zero_, sizeof d_) == 0);                                                \
    } while (0)

static void header_checks(void)
{
    bus_msg m = frame(), d;
    size_t len = bus_msg_encode(&m, buf, sizeof buf);
    REQUIRE(len > 0);
    CHECK_FAILS(bus_msg_decode(NULL, len, &d), OMMA_ERR_INVALID_ARG, "NULL");
    CHECK_FAILS(bus_msg_decode(buf, len, NULL), OMMA_ERR_INVALID_ARG, "NULL");
    for (size_t n = 0; n < sizeof(bus_header); n++)
        DECODE_FAILS(n, "shorter than its header");
    DECODE_FAILS(sizeof(bus_header) - 1, "15 bytes");

    bus_header h;
    memcpy(&h, buf, sizeof h);
    bus_header bad = h;
    bad.magic = 0x4F4D4253; /* the other byte order */
    memcpy(buf, &bad, sizeof bad);
    DECODE_FAILS(len, "bad magic 0x4f4d4253");
    bad = h;
    bad.version = 1; /* releases in messages: an older omma */
    memcpy(buf, &bad, sizeof bad);
    DECODE_FAILS(len, "version 1 (this omma speaks 2)");
    bad.version = 0;
    memcpy(buf, &bad, sizeof bad);
    DECODE_FAILS(len, "version 0");
    bad = h;
    bad.type = 0;
    memcpy(buf, &bad, sizeof bad);
    DECODE_FAILS(len, "unknown type 0");
    bad.type = BUS_MSG_TYPE_END;
    memcpy(buf, &bad, sizeof bad);
    DECODE_FAILS(len, "unknown type 9");
    bad.type = 0xFFFF;
    memcpy(buf, &bad, sizeof bad);
    DECODE_FAILS(len, "unknown type 65535");
    bad = h;
    bad.length = (uint32_t)len + 1;
    memcpy(buf, &bad, sizeof bad);
    DECODE_FAILS(len, "FRAME: length field 65, received 64 bytes");
    bad.length = (uint32_t)len;
    memcpy(buf, &bad, sizeof bad);
    DECODE_FAILS(len - 1, "length field 64, received 63 bytes");
    bad = h;
    bad.reserved = 1;
    memcpy(buf, &bad, sizeof bad);
    DECODE_FAILS(len, "FRAME: reserved header field is 0x1");

    /* A body of the wrong size with a consistent length field. */
    bus_frame f = m.u.frame;
    DECODE_FAILS(raw(BUS_MSG_FRAME, &f, sizeof f - 4), "FRAME: 44 body bytes, expected 48");
    static uint8_t big[512];
    DECODE_FAILS(raw(BUS_MSG_BOARD, big, sizeof(bus_board_desc) + 8),
                 "BOARD: 24 body bytes, expected 16");
    DECODE_FAILS(raw(BUS_MSG_WELCOME, big, 0), "WELCOME: 0 body bytes, expected 32");
    DECODE_FAILS(raw(BUS_MSG_CAMERA, big, sizeof(bus_camera) + 8),
                 "CAMERA: 152 body bytes, expected 144");
    DECODE_FAILS(raw(BUS_MSG_CAMERA, big, sizeof(bus_camera) - 1), "CAMERA: 143 body bytes");
    /* A CAMERA of the older layout, with its event handles. */
    static uint8_t old[OLD_CAMERA_BODY];
    bus_camera oc = camera().u.camera;
    memcpy(old, &oc, sizeof oc);
    DECODE_FAILS(raw(BUS_MSG_CAMERA, old, sizeof old), "CAMERA: 5264 body bytes, expected 144");
    DECODE_FAILS(raw(BUS_MSG_BYE, big, 10), "BYE: 10 body bytes, expected 260");
    DECODE_FAILS(raw(BUS_MSG_ERROR, big, 261), "ERROR: 261 body bytes");
}

static void hello_checks(void)
{
    bus_msg m = hello(3);
    bus_hello h = m.u.hello;
    size_t fixed = offsetof(bus_hello, cameras);
    DECODE_FAILS(raw(BUS_MSG_HELLO, &h, fixed - 1), "HELLO: 15 body bytes");
    DECODE_FAILS(raw(BUS_MSG_HELLO, &h, 0), "HELLO: 0 body bytes");
    DECODE_FAILS(raw(BUS_MSG_HELLO, &h, fixed + 5), "HELLO: 21 body bytes"); /* odd */
    /* More indices than any bus has, with a count that matches them. */
    static bus_hello huge;
    memcpy(&huge, &h, fixed);
    huge.n_cameras = BUS_MAX_CAMERAS + 1;
    static uint8_t body[sizeof(bus_hello) + 2];
    memcpy(body, &huge, sizeof huge);
    DECODE_FAILS(raw(BUS_MSG_HELLO, body, fixed + (BUS_MAX_CAMERAS + 1) * 2), "HELLO: 2066 body");
    /* The count against the indices sent. */
    h.n_cameras = 4;
    DECODE_FAILS(raw(BUS_MSG_HELLO, &h, fixed + 3 * 2), "HELLO: 4 cameras in 6 bytes");
    h.n_cameras = 2;
    DECODE_FAILS(raw(BUS_MSG_HELLO, &h, fixed + 3 * 2), "HELLO: 2 cameras in 6 bytes");
    h.n_cameras = 0;
    DECODE_FAILS(raw(BUS_MSG_HELLO, &h, fixed + 2), "HELLO: 0 cameras in 2 bytes");
    h.n_cameras = BUS_MAX_CAMERAS;
    DECODE_FAILS(raw(BUS_MSG_HELLO, &h, fixed), "HELLO: 1024 cameras in 0 bytes");
    h = m.u.hello;
    /* Fields out of range. */
    h.flags = 4;
    DECODE_FAILS(raw(BUS_MSG_HELLO, &h, fixed + 6), "HELLO: unknown flags 0x4");
    h.flags = BUS_HELLO_EVERY_FRAME | BUS_HELLO_WATCH;
    bus_msg d;
    CHECK(bus_msg_decode(buf, raw(BUS_MSG_HELLO, &h, fixed + 6), &d) == OMMA_OK);
    h.flags = 0;
    h.max_holds = 0;
    DECODE_FAILS(raw(BUS_MSG_HELLO, &h, fixed + 6), "HELLO: max_holds 0 not in 1..8");
    h.max_holds = BUS_MAX_HOLDS + 1;
    DECODE_FAILS(raw(BUS_MSG_HELLO, &h, fixed + 6), "max_holds 9 not in 1..8");
    h.max_holds = BUS_MAX_HOLDS;
    h.cameras[2] = BUS_MAX_CAMERAS;
    DECODE_FAILS(raw(BUS_MSG_HELLO, &h, fixed + 6), "HELLO: camera index 1024 out of range");
    h.cameras[2] = BUS_MAX_CAMERAS - 1;
    CHECK(bus_msg_decode(buf, raw(BUS_MSG_HELLO, &h, fixed + 6), &d) == OMMA_OK);
    CHECK(d.u.hello.cameras[2] == BUS_MAX_CAMERAS - 1 && d.u.hello.cameras[3] == 0);
}

static void welcome_checks(void)
{
    bus_welcome w = welcome().u.welcome;
    w.seat = BUS_MAX_SEATS;
    DECODE_FAILS(raw(BUS_MSG_WELCOME, &w, sizeof w),
                 "WELCOME: seat 64, 5 cameras, 64 faces or 3 subscribers");
    w = welcome().u.welcome;
    w.n_cameras = BUS_MAX_CAMERAS + 1;
    DECODE_FAILS(raw(BUS_MSG_WELCOME, &w, sizeof w), "1025 cameras");
    w = welcome().u.welcome;
    w.max_faces = 0;
    DECODE_FAILS(raw(BUS_MSG_WELCOME, &w, sizeof w), "0 faces or 3 subscribers out of range");
    w.max_faces = BUS_MAX_FACES + 1;
    DECODE_FAILS(raw(BUS_MSG_WELCOME, &w, sizeof w), "65 faces or 3 subscribers out of range");
    w = welcome().u.welcome;
    w.subscribers = 0;
    DECODE_FAILS(raw(BUS_MSG_WELCOME, &w, sizeof w), "0 subscribers out of range");
    w = welcome().u.welcome;
    w.reserved = 9;
    DECODE_FAILS(raw(BUS_MSG_WELCOME, &w, sizeof w), "WELCOME: reserved field is 0x9");
}

static void camera_checks(void)
{
    static bus_camera c;
#define CAMERA_FAILS(field_change, want)                                                           \
    do {                                                                                           \
        c = camera().u.camera;                                                                     \
        field_change;                                                                              \
        DECODE_FAILS(raw(BUS_MSG_CAMERA, &c, sizeof c), want);                                     \
    } while (0)
    CAMERA_FAILS(c.index = BUS_MAX_CAMERAS, "CAMERA: camera index 1024 out of range");
    CAMERA_FAILS(c.width = 0, "camera 1023 has a bad size 0x1080 or format 4");
    CAMERA_FAILS(c.width = 32769, "bad size 32769x1080");
    CAMERA_FAILS(c.height = 0, "bad size 1920x0");
    CAMERA_FAILS(c.height = 40000, "bad size 1920x40000");
    CAMERA_FAILS(c.format = OMMA_PIXEL_FORMAT_COUNT, "or format 6");
    CAMERA_FAILS(c.slots = 0, "CAMERA: camera 1023: 0 slots");
    CAMERA_FAILS(c.slots = BUS_MAX_SLOTS + 1, "camera 1023: 65 slots");
    CAMERA_FAILS(c.reserved = 16, "CAMERA: reserved field is 0x10, not 0");
    CAMERA_FAILS(c.reserved = 0xFFFFFFFFu, "reserved field is 0xffffffff, not 0");
    CAMERA_FAILS(c.frame_bytes = 0, "frame 0, slot 3145728 and allocation 201326592 bytes");
    CAMERA_FAILS(c.slot_bytes = c.frame_bytes - 1, "slot 3110399 and allocation");
    CAMERA_FAILS(c.alloc_bytes = c.slot_bytes * c.slots - 1, "do not fit");
    CAMERA_FAILS((c.slot_bytes = UINT64_MAX / 2, c.alloc_bytes = UINT64_MAX), "do not fit");
    CAMERA_FAILS(c.results_records = 0, "camera 1023: 0 result records");
    CAMERA_FAILS(c.results_records = 4 * BUS_MAX_SLOTS + 1, "257 result records");
    CAMERA_FAILS(c.gpu = -1, "camera 1023: gpu -1");
    CAMERA_FAILS(memset(c.name, 'x', sizeof c.name), "camera 1023: name not terminated");
#undef CAMERA_FAILS
    /* The edges that are fine: one slot exactly filling the allocation, a
     * 63-character name. */
    c = camera().u.camera;
    c.slots = 1;
    c.slot_bytes = c.frame_bytes;
    c.alloc_bytes = c.frame_bytes;
    c.width = c.height = 32768;
    memset(c.name, 'n', sizeof c.name - 1);
    c.name[sizeof c.name - 1] = '\0';
    bus_msg d;
    REQUIRE_OK(bus_msg_decode(buf, raw(BUS_MSG_CAMERA, &c, sizeof c), &d));
    CHECK(memcmp(&d.u.camera, &c, sizeof c) == 0);
}

static void frame_release_text_checks(void)
{
    bus_frame f = frame().u.frame;
    f.camera = BUS_MAX_CAMERAS;
    DECODE_FAILS(raw(BUS_MSG_FRAME, &f, sizeof f),
                 "FRAME: camera 1024, slot 63 or seq 1099511627776 out of range");
    f = frame().u.frame;
    f.slot = BUS_MAX_SLOTS;
    DECODE_FAILS(raw(BUS_MSG_FRAME, &f, sizeof f), "slot 64");
    f = frame().u.frame;
    f.seq = 0;
    DECODE_FAILS(raw(BUS_MSG_FRAME, &f, sizeof f), "seq 0 out of range");
    f = frame().u.frame;
    f.reserved = 7;
    DECODE_FAILS(raw(BUS_MSG_FRAME, &f, sizeof f), "FRAME: reserved field is 0x7, not 0");
    f.reserved = 1ull << 40; /* its upper half is checked too */
    DECODE_FAILS(raw(BUS_MSG_FRAME, &f, sizeof f), "FRAME: reserved field is 0x10000000000, not 0");
    f = frame().u.frame;
    f.camera = BUS_MAX_CAMERAS - 1;
    f.slot = 0;
    f.seq = UINT64_MAX;
    f.missed = UINT64_MAX;
    bus_msg fd;
    REQUIRE_OK(bus_msg_decode(buf, raw(BUS_MSG_FRAME, &f, sizeof f), &fd));
    CHECK(fd.type == BUS_MSG_FRAME && memcmp(&fd.u.frame, &f, sizeof f) == 0);

    /* FRAMES: the count against the length and the limits, each frame
     * checked like a FRAME. */
    static bus_frames fs;
    fs = frames(3).u.frames;
    DECODE_FAILS(raw(BUS_MSG_FRAMES, &fs, 8 + 3 * sizeof(bus_frame) - 1), "FRAMES: 151 body bytes");
    DECODE_FAILS(raw(BUS_MSG_FRAMES, &fs, 4), "FRAMES: 4 body bytes");
    DECODE_FAILS(raw(BUS_MSG_FRAMES, &fs, 8 + 2 * sizeof(bus_frame)),
                 "FRAMES: 3 entries in 96 bytes");
    fs.count = 0;
    DECODE_FAILS(raw(BUS_MSG_FRAMES, &fs, 8), "FRAMES: 0 entries (1..64)");
    fs = frames(3).u.frames;
    fs.reserved = 2;
    DECODE_FAILS(raw(BUS_MSG_FRAMES, &fs, 8 + 3 * sizeof(bus_frame)),
                 "FRAMES: reserved field is 0x2, not 0");
    fs = frames(3).u.frames;
    fs.frames[2].seq = 0;
    DECODE_FAILS(raw(BUS_MSG_FRAMES, &fs, 8 + 3 * sizeof(bus_frame)),
                 "FRAMES: camera 2, slot 2 or seq 0 out of range");
    fs = frames(3).u.frames;
    fs.frames[1].reserved = 9;
    DECODE_FAILS(raw(BUS_MSG_FRAMES, &fs, 8 + 3 * sizeof(bus_frame)),
                 "FRAMES: reserved field is 0x9, not 0");
    static uint8_t big[sizeof(bus_frames) + sizeof(bus_frame)];
    fs = frames(BUS_MAX_BATCH).u.frames;
    memcpy(big, &fs, sizeof fs);
    uint32_t over = BUS_MAX_BATCH + 1;
    memcpy(big, &over, sizeof over);
    DECODE_FAILS(raw(BUS_MSG_FRAMES, big, sizeof big), "FRAMES: 3128 body bytes");
    bus_msg m = frames(BUS_MAX_BATCH);
    m.u.frames.count = BUS_MAX_BATCH + 1; /* would read past frames[] */
    CHECK(bus_msg_encode(&m, buf, sizeof buf) == 0);

    /* BOARD: a size that matches its cameras, within the limits. */
    bus_board_desc bd = board(3).u.board;
    bd.bytes += 4096;
    DECODE_FAILS(raw(BUS_MSG_BOARD, &bd, sizeof bd), "BOARD: 3 cameras or 8192 bytes out of range");
    bd = board(3).u.board;
    bd.cameras = 0;
    DECODE_FAILS(raw(BUS_MSG_BOARD, &bd, sizeof bd), "BOARD: 0 cameras");
    bd.cameras = BUS_MAX_CAMERAS + 1;
    bd.bytes = bus_board_bytes(BUS_MAX_CAMERAS) + 4096;
    DECODE_FAILS(raw(BUS_MSG_BOARD, &bd, sizeof bd), "BOARD: 1025 cameras");
    bd = board(3).u.board;
    bd.reserved = 0x80000000u;
    DECODE_FAILS(raw(BUS_MSG_BOARD, &bd, sizeof bd), "BOARD: reserved field is 0x80000000");
    /* Version 1's release messages (type 9, RELEASES) are no type now. */
    DECODE_FAILS(raw((bus_msg_type)9, big, 8), "unknown type 9");

    static bus_text t;
    memset(&t, 'A', sizeof t);
    t.status = 0;
    DECODE_FAILS(raw(BUS_MSG_BYE, &t, sizeof t), "BYE: text not terminated");
    DECODE_FAILS(raw(BUS_MSG_ERROR, &t, sizeof t), "ERROR: text not terminated");
    t.text[BUS_TEXT_MAX - 1] = '\0';
    bus_msg d;
    CHECK(bus_msg_decode(buf, raw(BUS_MSG_ERROR, &t, sizeof t), &d) == OMMA_OK);
    CHECK(strlen(d.u.text.text) == BUS_TEXT_MAX - 1);
    t.status = -1;
    DECODE_FAILS(raw(BUS_MSG_ERROR, &t, sizeof t), "ERROR: status -1 out of range");
    t.status = OMMA_STATUS_COUNT;
    DECODE_FAILS(raw(BUS_MSG_BYE, &t, sizeof t), "BYE: status 13 out of range");
}

static void encode_refuses_bad_messages_and_small_buffers(void)
{
    bus_msg all[24];
    int n = samples(all);
    for (int i = 0; i < n; i++) {
        size_t len = bus_msg_encode(&all[i], buf, sizeof buf);
        REQUIRE(len > 0);
        memset(buf, 0xEE, sizeof buf);
        CHECK(bus_msg_encode(&all[i], buf, len - 1) == 0);
        CHECK(bus_msg_encode(&all[i], buf, 0) == 0);
        CHECK(buf[0] == 0xEE); /* nothing written */
        CHECK(bus_msg_encode(&all[i], buf, len) == len);
    }
    CHECK(bus_msg_encode(NULL, buf, sizeof buf) == 0);
    CHECK(bus_msg_encode(&all[0], NULL, sizeof buf) == 0);

    bus_msg m = hello(2);
    m.u.hello.n_cameras = BUS_MAX_CAMERAS + 1; /* would read past cameras[] */
    CHECK(bus_msg_encode(&m, buf, sizeof buf) == 0);
    m = hello(2);
    m.u.hello.max_holds = 0;
    CHECK(bus_msg_encode(&m, buf, sizeof buf) == 0);
    m = welcome();
    m.u.welcome.seat = BUS_MAX_SEATS;
    CHECK(bus_msg_encode(&m, buf, sizeof buf) == 0);
    m = camera();
    m.u.camera.name[BUS_NAME_MAX - 1] = 'x';
    memset(m.u.camera.name, 'x', BUS_NAME_MAX);
    CHECK(bus_msg_encode(&m, buf, sizeof buf) == 0);
    m = frame();
    m.u.frame.seq = 0;
    CHECK(bus_msg_encode(&m, buf, sizeof buf) == 0);
    m = frame();
    m.u.frame.reserved = 1;
    CHECK(bus_msg_encode(&m, buf, sizeof buf) == 0);
    m.u.frame.reserved = 1ull << 63;
    CHECK(bus_msg_encode(&m, buf, sizeof buf) == 0);
    m = camera();
    m.u.camera.reserved = 1;
    CHECK(bus_msg_encode(&m, buf, sizeof buf) == 0);
    m = camera();
    m.u.camera.slots = 0;
    CHECK(bus_msg_encode(&m, buf, sizeof buf) == 0);
    m = welcome();
    m.u.welcome.reserved = 1;
    CHECK(bus_msg_encode(&m, buf, sizeof buf) == 0);
    m = board(2);
    m.u.board.reserved = 1;
    CHECK(bus_msg_encode(&m, buf, sizeof buf) == 0);
    m = board(2);
    m.u.board.bytes = 1;
    CHECK(bus_msg_encode(&m, buf, sizeof buf) == 0);
    m = text(BUS_MSG_BYE, -4, "x");
    CHECK(bus_msg_encode(&m, buf, sizeof buf) == 0);
    m = frame();
    m.type = (bus_msg_type)0;
    CHECK(bus_msg_encode(&m, buf, sizeof buf) == 0);
    m.type = BUS_MSG_TYPE_END;
    CHECK(bus_msg_encode(&m, buf, sizeof buf) == 0);
}

/* One mutated input: decode either fails cleanly or gives a message that
 * re-encodes to exactly the input. Returns 1 when it decoded. */
static int check_mutant(const uint8_t *in, size_t n)
{
    static uint8_t again[sizeof buf];
    bus_msg d;
    omma_status st = bus_msg_decode(in, n, &d);
    if (st == OMMA_OK) {
        size_t len = bus_msg_encode(&d, again, sizeof again);
        CHECK(len == n && memcmp(again, in, n) == 0);
        return 1;
    }
    CHECK(st == OMMA_ERR_FORMAT);
    CHECK(strstr(omma_last_error(), "bus message") != NULL);
    CHECK(d.type == 0);
    return 0;
}

static void random_mutations_decode_or_fail_cleanly(void)
{
    bus_msg all[24];
    int n = samples(all);
    static uint8_t orig[sizeof buf], mut[sizeof buf];
    int decoded = 0, refused = 0;
    for (int i = 0; i < n; i++) {
        size_t len = bus_msg_encode(&all[i], orig, sizeof orig);
        REQUIRE(len > 0);
        for (int round = 0; round < 3000; round++) {
            memcpy(mut, orig, len);
            size_t mlen = len;
            int edits = 1 + (int)rnd(4);
            for (int e = 0; e < edits; e++) {
                unsigned kind = rnd(10);
                if (kind < 6) { /* one byte, often in the header or the first fields */
                    size_t at =
                        rnd(4) ? rnd((unsigned)(mlen < 64 ? mlen : 64)) : rnd((unsigned)mlen);
                    mut[at] = rnd(3) ? (uint8_t)rnd(256) : (uint8_t)(mut[at] ^ (1u << rnd(8)));
                } else if (kind < 8) { /* truncate, keeping the length field honest sometimes */
                    mlen = rnd((unsigned)mlen + 1);
                    if (mlen >= sizeof(bus_header) && rnd(2)) {
                        uint32_t l = (uint32_t)mlen;
                        memcpy(mut + offsetof(bus_header, length), &l, sizeof l);
                    }
                } else if (mlen + 8 <= sizeof mut) { /* extend */
                    for (int k = 0; k < 8; k++)
                        mut[mlen++] = (uint8_t)rnd(256);
                    if (mlen >= sizeof(bus_header) && rnd(2)) {
                        uint32_t l = (uint32_t)mlen;
                        memcpy(mut + offsetof(bus_header, length), &l, sizeof l);
                    }
                }
                if (mlen == 0)
                    break;
            }
            if (check_mutant(mut, mlen))
                decoded++;
            else
                refused++;
        }
    }
    /* Both outcomes are exercised (flips in payload bytes decode). */
    CHECK(decoded > 1000 && refused > 1000);
}

int main(void)
{
    RUN(layout);
    RUN(every_type_round_trips);
    RUN(header_checks);
    RUN(hello_checks);
    RUN(welcome_checks);
    RUN(camera_checks);
    RUN(frame_release_text_checks);
    RUN(encode_refuses_bad_messages_and_small_buffers);
    RUN(random_mutations_decode_or_fail_cleanly);
    return testing_finish();
}
