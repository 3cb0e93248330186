/* libFuzzer target for MP4's H.264 / HEVC to Annex B (src/io/annexb.c),
 * which reads the container's avcC / hvcC record and every packet of a
 * stream decoded on NVDEC.
 *
 * Input: a byte whose low bit picks HEVC, the record's size (2 bytes, big
 * endian), the record, then packets, each after its size (2 bytes). A
 * record must give an error or a header of whole start-coded units; each
 * packet must give an error or exactly its nonzero units, each after
 * 00 00 00 01, in order; anything else traps, and ASan/UBSan catch reads
 * out of bounds and undefined behaviour. Built and run by fuzz/run.sh
 * annexb (make fuzz; a short run inside make test). */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "io/annexb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Checks that out is in's units (length_size-byte lengths) after start codes. */
static void check_packet(const uint8_t *in, size_t n, int length_size, const uint8_t *out,
                         size_t out_n)
{
    size_t o = 0;
    for (size_t at = 0; at < n;) {
        size_t len = 0;
        for (int i = 0; i < length_size; i++)
            len = len << 8 | in[at + (size_t)i];
        at += (size_t)length_size;
        if (len) {
            if (out_n - o < 4 + len || memcmp(out + o, "\0\0\0\1", 4) != 0 ||
                memcmp(out + o + 4, in + at, len) != 0)
                __builtin_trap();
            o += 4 + len;
        }
        at += len;
    }
    if (o != out_n)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3)
        return 0;
    int hevc = data[0] & 1;
    size_t record = (size_t)data[1] << 8 | data[2];
    data += 3;
    size -= 3;
    if (record > size)
        record = size;
    io_annexb a;
    if (io_annexb_init(&a, hevc, data, record) != OMMA_OK) {
        if (a.header || a.buf)
            __builtin_trap();
        return 0;
    }
    if (a.length_size != 1 && a.length_size != 2 && a.length_size != 4)
        __builtin_trap();
    /* The header: start-coded units, within the record's size. */
    for (size_t at = 0; at < a.header_size;) {
        if (a.header_size - at < 4 || memcmp(a.header + at, "\0\0\0\1", 4) != 0)
            __builtin_trap();
        at += 4;
        size_t next = at;
        while (next < a.header_size &&
               !(a.header_size - next >= 4 && memcmp(a.header + next, "\0\0\0\1", 4) == 0))
            next++;
        at = next;
    }
    if (a.header_size > 4 * record)
        __builtin_trap();
    data += record;
    size -= record;
    while (size >= 2) {
        size_t n = (size_t)data[0] << 8 | data[1];
        data += 2;
        size -= 2;
        if (n > size)
            n = size;
        const uint8_t *out = NULL;
        size_t out_n = 0;
        if (io_annexb_convert(&a, data, n, &out, &out_n) == OMMA_OK)
            check_packet(data, n, a.length_size, out, out_n);
        else if (out || out_n)
            __builtin_trap();
        data += n;
        size -= n;
    }
    io_annexb_free(&a);
    return 0;
}
