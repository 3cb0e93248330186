/* libFuzzer target for the video reader (src/io/video_file.c: FFmpeg's
 * demuxers and decoders from Debian, on the CPU, behind omma's error
 * handling and damage concealment).
 *
 * The input goes to the reader as a file: it is written to a memfd and
 * opened by its /proc/self/fd path, so the fuzzer runs exactly the code
 * omma runs (open by path through FFmpeg's file protocol, every demuxer's
 * probe) and the reader needs no in-memory entry point of its own.
 *
 * Every frame must have the stream's size and planes, and the reading must
 * end with the end of the stream or an error (FORMAT / IO / UNSUPPORTED /
 * OUT_OF_MEMORY) whose message names the file; anything else traps. An
 * abort() inside FFmpeg (an assertion) is a crash, a hang is caught by
 * libFuzzer's -timeout, and ASan/UBSan check omma's side (FFmpeg itself is
 * not instrumented). Built and run by fuzz/run.sh video (make fuzz; a
 * short run inside make test). */
#define _GNU_SOURCE /* memfd_create */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "io/video_file.h"

#define MAX_FRAMES 300 /* a long stream of tiny frames is not a hang */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int ok_error(omma_status st, const char *path)
{
    size_t n = strlen(path);
    const char *m = omma_last_error();
    return (st == OMMA_ERR_FORMAT || st == OMMA_ERR_IO || st == OMMA_ERR_UNSUPPORTED ||
            st == OMMA_ERR_OUT_OF_MEMORY) &&
           strncmp(m, path, n) == 0 && m[n] == ':';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int fd = memfd_create("fuzz_video", MFD_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t off = 0;
    while (off < size) {
        ssize_t w = write(fd, data + off, size - off);
        if (w <= 0) {
            close(fd);
            return 0;
        }
        off += (size_t)w;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);

    io_video *v = NULL;
    omma_status st = io_video_open(path, &v);
    if (st != OMMA_OK) {
        if (v || !ok_error(st, path))
            __builtin_trap();
        close(fd);
        return 0;
    }
    int w = io_video_width(v), h = io_video_height(v);
    if (w <= 0 || h <= 0 || !(io_video_fps(v) > 0.0))
        __builtin_trap();
    for (long n = 0; n < MAX_FRAMES; n++) {
        omma_frame f;
        double ts;
        int eof = 0;
        st = io_video_read(v, &f, &ts, &eof);
        if (st != OMMA_OK) {
            if (eof || f.planes[0] || !ok_error(st, path))
                __builtin_trap();
            /* The error stays. */
            if (io_video_read(v, &f, &ts, &eof) != st)
                __builtin_trap();
            break;
        }
        if (eof) {
            if (f.planes[0] || f.width)
                __builtin_trap();
            break;
        }
        if (f.width != w || f.height != h || !f.planes[0] || f.pitch[0] < w)
            __builtin_trap();
        /* Touch the last byte of the first plane: the rows must be there. */
        volatile uint8_t last = f.planes[0][(size_t)(h - 1) * (size_t)f.pitch[0] + (size_t)w - 1];
        (void)last;
    }
    io_video_stats s;
    io_video_get_stats(v, &s);
    if (s.damaged_frames > s.frames)
        __builtin_trap();
    io_video_close(v);
    close(fd);
    return 0;
}
