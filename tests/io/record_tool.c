/* A camera's recording without the runtime, for test_recorder.sh: reads a
 * video with io_video and records it with io_recorder, remuxed (the
 * reader's packets) or encoded (its decoded frames), frame numbers from 0
 * and capture times from core_now_ns as the runtime's sources give them.
 * usage: record_tool remux|encode DIR VIDEO SEGMENT|none [PACE_MS [LOOPS]]
 * PACE_MS: a sleep after each frame (a camera's rate, for the kill test);
 * "frame K" is printed (flushed) once frame K was handed over. LOOPS:
 * the video read again that many more times (a rewind: a discontinuity).
 * Prints "frames N dropped D segments S packets P" at the end. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "io/recorder.h"
#include "io/video_file.h"
#include "omma/status.h"

int main(int argc, char **argv)
{
    if (argc < 5 || (strcmp(argv[1], "remux") && strcmp(argv[1], "encode"))) {
        fprintf(stderr,
                "usage: record_tool remux|encode DIR VIDEO SEGMENT|none [PACE_MS [LOOPS]]\n");
        return 2;
    }
    if (!io_video_available()) {
        printf("SKIP: built without FFmpeg\n");
        return 77;
    }
    int remux = strcmp(argv[1], "remux") == 0;
    io_record_options ro = {.dir = argv[2], .camera = "cam0", .fps = 15.0};
    if (strcmp(argv[4], "none") != 0 &&
        io_record_parse_segment(argv[4], &ro.segment_ns, &ro.segment_bytes) != OMMA_OK) {
        fprintf(stderr, "record_tool: %s\n", omma_last_error());
        return 2;
    }
    long pace_ms = argc > 5 ? atol(argv[5]) : 0;
    int loops = argc > 6 ? atoi(argv[6]) : 0;
    io_recorder *rec = NULL;
    if (io_recorder_create(&ro, &rec) != OMMA_OK) {
        fprintf(stderr, "record_tool: %s\n", omma_last_error());
        return 1;
    }
    io_video_options vo = {.decode = IO_DECODE_CPU, .record = remux ? rec : NULL};
    io_video *v = NULL;
    int rc = 0;
    if (io_video_open_with(argv[3], &vo, &v) != OMMA_OK) {
        fprintf(stderr, "record_tool: %s\n", omma_last_error());
        rc = 1;
    }
    long k = 0;
    for (int pass = 0; v && pass <= loops && rc == 0; pass++) {
        if (pass > 0 && io_video_rewind(v) != OMMA_OK) {
            fprintf(stderr, "record_tool: %s\n", omma_last_error());
            rc = 1;
            break;
        }
        for (;;) {
            omma_frame f;
            double ts = 0.0;
            int eof = 0;
            if (io_video_read(v, &f, &ts, &eof) != OMMA_OK) {
                fprintf(stderr, "record_tool: %s\n", omma_last_error());
                rc = 1;
                break;
            }
            if (eof)
                break;
            io_recorder_frame(rec, k, core_now_ns(), io_video_last_pts(v), remux ? NULL : &f);
            printf("frame %ld\n", k);
            fflush(stdout);
            k++;
            if (pace_ms > 0) {
                struct timespec t = {pace_ms / 1000, (pace_ms % 1000) * 1000000L};
                nanosleep(&t, NULL);
            }
        }
    }
    io_video_close(v);
    io_recorder_stats s;
    if (io_recorder_close(rec, &s) != OMMA_OK) {
        fprintf(stderr, "record_tool: %s\n", omma_last_error());
        rc = 1;
    }
    printf("frames %ld dropped %ld segments %d packets %ld\n", s.frames, s.dropped, s.segments,
           s.packets);
    return rc;
}
