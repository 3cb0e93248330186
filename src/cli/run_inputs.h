/* omma run's inputs: each file is one camera, a still image (PNG, JPEG:
 * one frame) or a video (its frames in order). The kind is told by the
 * file's first bytes, never by its name. Errors are printed on stderr
 * naming the file; the caller only counts them. */
#ifndef OMMA_CLI_RUN_INPUTS_H
#define OMMA_CLI_RUN_INPUTS_H

#include "omma/face.h"
#include "io/image_file.h"
#include "io/video_file.h"

typedef enum cli_input_state {
    CLI_INPUT_LIVE, /* frames may follow */
    CLI_INPUT_ENDED, /* every frame read (or --max-frames reached) */
    CLI_INPUT_FAILED, /* did not open, or a frame failed: the camera stops */
} cli_input_state;

typedef struct cli_input {
    const char *path;
    cli_input_state state;
    int is_video;
    io_image image; /* a still image, decoded at open, freed once read */
    io_video *video;
    long frames_read;
    long max_frames; /* 0: all */
    io_video_stats video_stats; /* a video's damage, kept when it closes */
} cli_input;

/* Opens path as an image or a video (with these options: where it is
 * decoded). Returns 1, or 0 after printing
 * "omma: error: PATH: problem" (the input is then CLI_INPUT_FAILED). */
int cli_input_open(cli_input *in, const char *path, long max_frames, const io_video_options *video);

/* Frame (the last one read from in) in host memory: as it is, or copied
 * from the GPU for a GPU-decoded video. Returns 1, or 0 after printing the
 * error. */
int cli_input_host_frame(cli_input *in, const omma_frame *frame, omma_frame *host);

/* Frames this input will give: 1 for an image, the container's count for
 * a video (capped by max_frames), 0 when unknown. */
long cli_input_frame_count(const cli_input *in);

/* Frames per second: the video's, 1 for an image. */
double cli_input_fps(const cli_input *in);

/* The next frame (valid until the next call on in, or cli_input_close),
 * its index and timestamp. Returns 1 with a frame, 0 at the end or on an
 * error (then printed, state CLI_INPUT_FAILED). */
int cli_input_next(cli_input *in, omma_frame *frame, long *index, double *timestamp_ms);

/* Frees what the input holds; the state stays. Accepts a failed input. */
void cli_input_close(cli_input *in);

#endif
