/* omma run's pictures for people: --annotate DIR writes each frame of each
 * camera, converted to RGB with its faces drawn (io/annotate.h), as
 * DIR/cam<camera>_<frame, 6 digits>.png; --annotate-video FILE writes the
 * annotated frames of one camera as a video at that camera's frame rate.
 * The first failure to write is reported and that output stops (the run
 * goes on; it then ends with exit code 1). Main thread only. */
#ifndef OMMA_CLI_RUN_ANNOTATE_H
#define OMMA_CLI_RUN_ANNOTATE_H

#include <stddef.h>
#include <stdint.h>

#include "omma/face.h"
#include "io/video_writer.h"

typedef struct cli_annotator {
    const char *dir; /* NULL: no PNGs */
    const char *video_path; /* NULL: no video */
    int video_camera; /* the camera the video shows */
    double video_fps;
    io_video_writer *video;
    int video_w, video_h; /* the size the video was opened with */
    int failed; /* a write failed */
    long pngs, video_frames;
    uint8_t *rgb;
    size_t rgb_bytes;
} cli_annotator;

/* Creates dir (and its parents) when given. Returns 1, or 0 after printing
 * the error. */
int cli_annotator_open(cli_annotator *a, const char *dir, const char *video_path, int video_camera,
                       double video_fps);

/* Whether frames of this camera are drawn at all. */
int cli_annotator_wants(const cli_annotator *a, int camera);

/* Draws one frame with its faces and writes it where asked. Returns 1, or
 * 0 after printing the error. */
int cli_annotator_frame(cli_annotator *a, int camera, long frame_index, const omma_frame *frame,
                        const omma_face *faces, int n);

/* Finishes the video (renamed into place when keep and nothing failed,
 * else removed) and frees everything. Returns 1 when all was written. */
int cli_annotator_close(cli_annotator *a, int keep);

#endif
