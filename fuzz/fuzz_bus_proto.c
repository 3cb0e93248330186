/* libFuzzer target for the frame bus's control messages
 * (src/ipc/bus_proto.c: bus_msg_decode, what a publisher runs on every
 * message a subscriber sends, and a subscriber on the publisher's).
 *
 * Any input must either decode to a message that re-encodes to exactly the
 * input bytes and decodes again to the same message, or fail with
 * OMMA_ERR_FORMAT, a message starting "bus message" and a zeroed result;
 * anything else traps, and ASan/UBSan catch reads out of bounds and
 * undefined behaviour. Built and run by fuzz/run.sh bus (make fuzz; a short
 * run inside make test). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ipc/bus_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const bus_msg zero;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bus_msg m, again;
    static uint8_t buf[BUS_MSG_MAX_BYTES];
    omma_status st = bus_msg_decode(data, size, &m);
    if (st != OMMA_OK) {
        if (st != OMMA_ERR_FORMAT || strncmp(omma_last_error(), "bus message", 11) != 0 ||
            memcmp(&m, &zero, sizeof m) != 0)
            __builtin_trap();
        return 0;
    }
    if (m.type <= 0 || m.type >= BUS_MSG_TYPE_END || size > BUS_MSG_MAX_BYTES)
        __builtin_trap();
    size_t n = bus_msg_encode(&m, buf, sizeof buf);
    if (n != size || memcmp(buf, data, size) != 0)
        __builtin_trap();
    /* A buffer one byte short is refused. */
    if (bus_msg_encode(&m, buf, size - 1) != 0)
        __builtin_trap();
    if (bus_msg_decode(buf, n, &again) != OMMA_OK || memcmp(&again, &m, sizeof m) != 0)
        __builtin_trap();
    /* Reserved fields of what decoded are 0. */
    if ((m.type == BUS_MSG_CAMERA && m.u.camera.reserved != 0) ||
        (m.type == BUS_MSG_FRAME && m.u.frame.reserved != 0) ||
        (m.type == BUS_MSG_FRAMES && m.u.frames.reserved != 0) ||
        (m.type == BUS_MSG_WELCOME && m.u.welcome.reserved != 0) ||
        (m.type == BUS_MSG_BOARD && m.u.board.reserved != 0))
        __builtin_trap();
    /* Strings the peer sent are terminated within their fields. */
    if (m.type == BUS_MSG_CAMERA && !memchr(m.u.camera.name, 0, sizeof m.u.camera.name))
        __builtin_trap();
    if ((m.type == BUS_MSG_BYE || m.type == BUS_MSG_ERROR) &&
        !memchr(m.u.text.text, 0, sizeof m.u.text.text))
        __builtin_trap();
    return 0;
}
