/* Writes one valid encoded message of every bus control message type (and
 * a few variants) into a folder, as seeds for fuzz_bus_proto.
 *   make_bus_seeds DIR */
#include <stdio.h>
#include <string.h>

#include "ipc/bus_board.h"
#include "ipc/bus_proto.h"
#include "omma/face.h"

static int write_seed(const char *dir, const char *name, const bus_msg *m)
{
    static unsigned char buf[BUS_MSG_MAX_BYTES];
    size_t n = bus_msg_encode(m, buf, sizeof buf);
    if (n == 0) {
        fprintf(stderr, "make_bus_seeds: %s does not encode\n", name);
        return -1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.seed", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_bus_seeds DIR\n");
        return 2;
    }
    const char *dir = argv[1];
    static bus_msg m;
    int bad = 0;

    memset(&m, 0, sizeof m);
    m.type = BUS_MSG_HELLO;
    m.u.hello = (bus_hello){.flags = BUS_HELLO_EVERY_FRAME, .max_holds = 2, .pid = 1234};
    bad |= write_seed(dir, "hello_all", &m);
    m.u.hello.n_cameras = 3;
    m.u.hello.cameras[0] = 0;
    m.u.hello.cameras[1] = 5;
    m.u.hello.cameras[2] = 1023;
    m.u.hello.flags = BUS_HELLO_WATCH;
    bad |= write_seed(dir, "hello_three", &m);

    memset(&m, 0, sizeof m);
    m.type = BUS_MSG_WELCOME;
    m.u.welcome = (bus_welcome){.seat = 3,
                                .pid = 99,
                                .n_cameras = 2,
                                .max_faces = 4,
                                .subscribers = 2,
                                .results_bytes = 1u << 16};
    bad |= write_seed(dir, "welcome", &m);

    memset(&m, 0, sizeof m);
    m.type = BUS_MSG_CAMERA;
    bus_camera *c = &m.u.camera;
    c->index = 1;
    c->width = 1280;
    c->height = 720;
    c->format = OMMA_PIXEL_NV12;
    c->slots = 4;
    c->frame_bytes = 1280 * 720 * 3 / 2;
    c->slot_bytes = 2u << 20;
    c->alloc_bytes = 8u << 20;
    c->results_offset = 64;
    c->results_records = 8;
    c->gpu = 0;
    for (int i = 0; i < 16; i++)
        c->gpu_uuid[i] = (unsigned char)(0x10 + i);
    strcpy(c->name, "cam1");
    bad |= write_seed(dir, "camera", &m);
    /* One slot filling its allocation exactly, a full-length name. */
    c->index = 1023;
    c->slots = 1;
    c->slot_bytes = c->frame_bytes;
    c->alloc_bytes = c->frame_bytes;
    c->results_records = 1;
    c->gpu = 3;
    memset(c->name, 'n', sizeof c->name - 1);
    bad |= write_seed(dir, "camera_edge", &m);

    memset(&m, 0, sizeof m);
    m.type = BUS_MSG_FRAME;
    m.u.frame = (bus_frame){.camera = 1,
                            .slot = 2,
                            .seq = 77,
                            .capture_ns = 1000000,
                            .announce_ns = 1000500,
                            .missed = 3};
    bad |= write_seed(dir, "frame", &m);

    memset(&m, 0, sizeof m);
    m.type = BUS_MSG_FRAMES;
    m.u.frames.count = 3;
    for (int i = 0; i < 3; i++)
        m.u.frames.frames[i] = (bus_frame){.camera = (uint32_t)i,
                                           .slot = 2,
                                           .seq = 77 + (uint64_t)i,
                                           .capture_ns = 1000000,
                                           .announce_ns = 1000500,
                                           .missed = 0};
    bad |= write_seed(dir, "frames", &m);

    memset(&m, 0, sizeof m);
    m.type = BUS_MSG_BOARD;
    m.u.board = (bus_board_desc){.cameras = 4, .bytes = bus_board_bytes(4)};
    bad |= write_seed(dir, "board", &m);

    memset(&m, 0, sizeof m);
    m.type = BUS_MSG_BYE;
    strcpy(m.u.text.text, "subscriber stopped");
    bad |= write_seed(dir, "bye", &m);
    m.type = BUS_MSG_ERROR;
    m.u.text.status = OMMA_ERR_FORMAT;
    strcpy(m.u.text.text, "bus message FRAME: camera 1, slot 70 or seq 77 out of range");
    bad |= write_seed(dir, "error", &m);
    return bad ? 1 : 0;
}
