/* The frame bus's control messages: encode and checked decode. */
#include "ipc/bus_proto.h"

#include <string.h>

#include "core/error.h"
#include "ipc/bus_board.h"
#include "omma/face.h"

static const char *const type_names[] = {
    [BUS_MSG_HELLO] = "HELLO", [BUS_MSG_WELCOME] = "WELCOME", [BUS_MSG_CAMERA] = "CAMERA",
    [BUS_MSG_FRAME] = "FRAME", [BUS_MSG_BOARD] = "BOARD",     [BUS_MSG_BYE] = "BYE",
    [BUS_MSG_ERROR] = "ERROR", [BUS_MSG_FRAMES] = "FRAMES",
};

const char *bus_msg_type_name(int type)
{
    if (type <= 0 || type >= BUS_MSG_TYPE_END)
        return "unknown";
    return type_names[type];
}

/* Bytes of the body of type t as sent: HELLO without its unused indices. */
static size_t body_bytes(const bus_msg *m)
{
    switch (m->type) {
    case BUS_MSG_HELLO:
        return offsetof(bus_hello, cameras) + m->u.hello.n_cameras * sizeof(uint16_t);
    case BUS_MSG_WELCOME:
        return sizeof(bus_welcome);
    case BUS_MSG_CAMERA:
        return sizeof(bus_camera);
    case BUS_MSG_FRAME:
        return sizeof(bus_frame);
    case BUS_MSG_FRAMES:
        return offsetof(bus_frames, frames) + m->u.frames.count * sizeof(bus_frame);
    case BUS_MSG_BOARD:
        return sizeof(bus_board_desc);
    case BUS_MSG_BYE:
    case BUS_MSG_ERROR:
        return sizeof(bus_text);
    default:
        return 0;
    }
}

static int terminated(const char *s, size_t cap)
{
    return memchr(s, '\0', cap) != NULL;
}

static omma_status check_frame(const char *t, const bus_frame *f)
{
    if (f->camera >= BUS_MAX_CAMERAS || f->slot >= BUS_MAX_SLOTS || f->seq == 0)
        return OMMA_FAIL(OMMA_ERR_FORMAT,
                         "bus message %s: camera %u, slot %u or seq %llu out of range", t,
                         (unsigned)f->camera, (unsigned)f->slot, (unsigned long long)f->seq);
    if (f->reserved != 0)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message %s: reserved field is 0x%llx, not 0", t,
                         (unsigned long long)f->reserved);
    return OMMA_OK;
}

/* The count and reserved word that FRAMES starts with. */
static omma_status check_batch(const char *t, uint32_t count, uint32_t reserved)
{
    if (count < 1 || count > BUS_MAX_BATCH)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message %s: %u entries (1..%d)", t, (unsigned)count,
                         BUS_MAX_BATCH);
    if (reserved != 0)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message %s: reserved field is 0x%x, not 0", t,
                         (unsigned)reserved);
    return OMMA_OK;
}

/* The checks shared by encode (what we send) and decode (what we trust). */
static omma_status check_body(const bus_msg *m)
{
    const char *t = bus_msg_type_name(m->type);
    switch (m->type) {
    case BUS_MSG_HELLO: {
        const bus_hello *h = &m->u.hello;
        if (h->flags & ~(uint32_t)(BUS_HELLO_EVERY_FRAME | BUS_HELLO_WATCH))
            return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message %s: unknown flags 0x%x", t,
                             (unsigned)h->flags);
        if (h->max_holds < 1 || h->max_holds > BUS_MAX_HOLDS)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message %s: max_holds %u not in 1..%d", t,
                             (unsigned)h->max_holds, BUS_MAX_HOLDS);
        if (h->n_cameras > BUS_MAX_CAMERAS)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message %s: %u cameras (at most %d)", t,
                             (unsigned)h->n_cameras, BUS_MAX_CAMERAS);
        for (uint32_t i = 0; i < h->n_cameras; i++)
            if (h->cameras[i] >= BUS_MAX_CAMERAS)
                return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message %s: camera index %u out of range", t,
                                 (unsigned)h->cameras[i]);
        return OMMA_OK;
    }
    case BUS_MSG_WELCOME: {
        const bus_welcome *w = &m->u.welcome;
        if (w->seat >= BUS_MAX_SEATS || w->n_cameras > BUS_MAX_CAMERAS || w->max_faces < 1 ||
            w->max_faces > BUS_MAX_FACES || w->subscribers < 1 || w->subscribers > BUS_MAX_SEATS)
            return OMMA_FAIL(OMMA_ERR_FORMAT,
                             "bus message %s: seat %u, %u cameras, %u faces or %u subscribers "
                             "out of range",
                             t, (unsigned)w->seat, (unsigned)w->n_cameras, (unsigned)w->max_faces,
                             (unsigned)w->subscribers);
        if (w->reserved != 0)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message %s: reserved field is 0x%x, not 0", t,
                             (unsigned)w->reserved);
        return OMMA_OK;
    }
    case BUS_MSG_CAMERA: {
        const bus_camera *c = &m->u.camera;
        if (c->index >= BUS_MAX_CAMERAS)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message %s: camera index %u out of range", t,
                             (unsigned)c->index);
        if (c->width < 1 || c->width > 32768 || c->height < 1 || c->height > 32768 ||
            c->format >= OMMA_PIXEL_FORMAT_COUNT)
            return OMMA_FAIL(
                OMMA_ERR_FORMAT, "bus message %s: camera %u has a bad size %ux%u or format %u", t,
                (unsigned)c->index, (unsigned)c->width, (unsigned)c->height, (unsigned)c->format);
        if (c->slots < 1 || c->slots > BUS_MAX_SLOTS)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message %s: camera %u: %u slots", t,
                             (unsigned)c->index, (unsigned)c->slots);
        if (c->reserved != 0)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message %s: reserved field is 0x%x, not 0", t,
                             (unsigned)c->reserved);
        if (c->frame_bytes == 0 || c->slot_bytes < c->frame_bytes ||
            c->slot_bytes > c->alloc_bytes / c->slots)
            return OMMA_FAIL(OMMA_ERR_FORMAT,
                             "bus message %s: camera %u: frame %llu, slot %llu and allocation "
                             "%llu bytes do not fit",
                             t, (unsigned)c->index, (unsigned long long)c->frame_bytes,
                             (unsigned long long)c->slot_bytes, (unsigned long long)c->alloc_bytes);
        if (c->results_records < 1 || c->results_records > 4 * BUS_MAX_SLOTS)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message %s: camera %u: %u result records", t,
                             (unsigned)c->index, (unsigned)c->results_records);
        if (c->gpu < 0)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message %s: camera %u: gpu %d", t,
                             (unsigned)c->index, (int)c->gpu);
        if (!terminated(c->name, sizeof c->name))
            return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message %s: camera %u: name not terminated", t,
                             (unsigned)c->index);
        return OMMA_OK;
    }
    case BUS_MSG_FRAME:
        return check_frame(t, &m->u.frame);
    case BUS_MSG_FRAMES: {
        const bus_frames *fs = &m->u.frames;
        OMMA_TRY(check_batch(t, fs->count, fs->reserved));
        for (uint32_t i = 0; i < fs->count; i++)
            OMMA_TRY(check_frame(t, &fs->frames[i]));
        return OMMA_OK;
    }
    case BUS_MSG_BOARD: {
        const bus_board_desc *b = &m->u.board;
        if (b->cameras < 1 || b->cameras > BUS_MAX_CAMERAS ||
            b->bytes != bus_board_bytes((int)b->cameras))
            return OMMA_FAIL(OMMA_ERR_FORMAT,
                             "bus message %s: %u cameras or %llu bytes out of range", t,
                             (unsigned)b->cameras, (unsigned long long)b->bytes);
        if (b->reserved != 0)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message %s: reserved field is 0x%x, not 0", t,
                             (unsigned)b->reserved);
        return OMMA_OK;
    }
    case BUS_MSG_BYE:
    case BUS_MSG_ERROR:
        if (!terminated(m->u.text.text, sizeof m->u.text.text))
            return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message %s: text not terminated", t);
        if (m->u.text.status < 0 || m->u.text.status >= OMMA_STATUS_COUNT)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message %s: status %d out of range", t,
                             (int)m->u.text.status);
        return OMMA_OK;
    default:
        return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message: unknown type %d", (int)m->type);
    }
}

size_t bus_msg_encode(const bus_msg *m, void *buf, size_t cap)
{
    if (!m || !buf || check_body(m) != OMMA_OK)
        return 0;
    size_t body = body_bytes(m);
    size_t n = sizeof(bus_header) + body;
    if (n > cap)
        return 0;
    bus_header h = {BUS_MAGIC, BUS_VERSION, (uint16_t)m->type, (uint32_t)n, 0};
    memcpy(buf, &h, sizeof h);
    memcpy((uint8_t *)buf + sizeof h, &m->u, body);
    return n;
}

omma_status bus_msg_decode(const void *buf, size_t n, bus_msg *m)
{
    if (!buf || !m)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "bus_msg_decode: NULL argument");
    memset(m, 0, sizeof *m);
    bus_header h;
    if (n < sizeof h)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message: %zu bytes, shorter than its header", n);
    memcpy(&h, buf, sizeof h);
    if (h.magic != BUS_MAGIC)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message: bad magic 0x%08x", (unsigned)h.magic);
    if (h.version != BUS_VERSION)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message: version %u (this omma speaks %d)",
                         (unsigned)h.version, BUS_VERSION);
    if (h.type == 0 || h.type >= BUS_MSG_TYPE_END)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message: unknown type %u", (unsigned)h.type);
    if (h.length != n)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message %s: length field %u, received %zu bytes",
                         bus_msg_type_name(h.type), (unsigned)h.length, n);
    if (h.reserved != 0)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message %s: reserved header field is 0x%x, not 0",
                         bus_msg_type_name(h.type), (unsigned)h.reserved);
    bus_msg_type type = (bus_msg_type)h.type;
    size_t body = n - sizeof h;
    if (type == BUS_MSG_HELLO) {
        size_t fixed = offsetof(bus_hello, cameras);
        if (body < fixed || (body - fixed) % sizeof(uint16_t) != 0 ||
            (body - fixed) / sizeof(uint16_t) > BUS_MAX_CAMERAS)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message HELLO: %zu body bytes", body);
        uint32_t count;
        memcpy(&count, (const uint8_t *)buf + sizeof h + offsetof(bus_hello, n_cameras),
               sizeof count);
        if (count != (body - fixed) / sizeof(uint16_t))
            return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message HELLO: %u cameras in %zu bytes",
                             (unsigned)count, body - fixed);
    } else if (type == BUS_MSG_FRAMES) {
        /* Its count, then the entries. */
        size_t fixed = offsetof(bus_frames, frames), entry = sizeof(bus_frame);
        const char *t = bus_msg_type_name(type);
        if (body < fixed || (body - fixed) % entry != 0 || (body - fixed) / entry > BUS_MAX_BATCH)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message %s: %zu body bytes", t, body);
        uint32_t count;
        memcpy(&count, (const uint8_t *)buf + sizeof h, sizeof count);
        if (count != (body - fixed) / entry)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message %s: %u entries in %zu bytes", t,
                             (unsigned)count, body - fixed);
    } else {
        bus_msg probe = {.type = type};
        if (body != body_bytes(&probe))
            return OMMA_FAIL(OMMA_ERR_FORMAT, "bus message %s: %zu body bytes, expected %zu",
                             bus_msg_type_name(type), body, body_bytes(&probe));
    }
    /* *m stays zeroed until the message passed every check. */
    m->type = type;
    memcpy(&m->u, (const uint8_t *)buf + sizeof h, body);
    omma_status st = check_body(m);
    if (st != OMMA_OK)
        memset(m, 0, sizeof *m);
    return st;
}
