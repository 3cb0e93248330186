/* Inputs of omma run. A file starting with the PNG or JPEG signature (or
 * one that cannot be read at all, or is empty) goes to the image decoder,
 * whose message then says what is wrong; any other file is tried as a
 * video. So a damaged PNG is reported as a damaged PNG, and a text file as
 * neither an image nor a video. */
#define _POSIX_C_SOURCE 200809L
#include "cli/run_inputs.h"

#include <stdio.h>
#include <string.h>

#include "cli/run_progress.h"
#include "omma/status.h"

static const unsigned char png_magic[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
static const unsigned char jpeg_magic[3] = {0xff, 0xd8, 0xff};

/* 1 when the file's first bytes are neither PNG nor JPEG (a video
 * candidate); 0 for images and for files that cannot be read or are
 * empty: the image loader explains those. */
static int maybe_video(const char *path)
{
    unsigned char head[8];
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    if (n == 0)
        return 0;
    if (n >= sizeof png_magic && memcmp(head, png_magic, sizeof png_magic) == 0)
        return 0;
    if (n >= sizeof jpeg_magic && memcmp(head, jpeg_magic, sizeof jpeg_magic) == 0)
        return 0;
    return 1;
}

/* The library's detail without its leading "PATH: " (the caller names
 * the file itself). */
static const char *detail_after(const char *path)
{
    const char *d = omma_last_error();
    size_t n = strlen(path);
    return strncmp(d, path, n) == 0 && d[n] == ':' && d[n + 1] == ' ' ? d + n + 2 : d;
}

static int fail(cli_input *in)
{
    in->state = CLI_INPUT_FAILED;
    cli_input_close(in);
    return 0;
}

int cli_input_open(cli_input *in, const char *path, long max_frames, const io_video_options *video)
{
    memset(in, 0, sizeof *in);
    in->path = path;
    in->max_frames = max_frames;
    in->state = CLI_INPUT_LIVE;
    if (!maybe_video(path)) {
        if (io_image_load(path, &in->image) != OMMA_OK) {
            cli_run_error("%s", omma_last_error());
            return fail(in);
        }
        return 1;
    }
    if (!io_video_available()) {
        cli_run_error("%s: not a PNG or JPEG image, and this build of omma reads no video "
                      "(built without FFmpeg's libavformat/libavcodec)",
                      path);
        return fail(in);
    }
    omma_status st = io_video_open_with(path, video, &in->video);
    if (st != OMMA_OK) {
        if (st == OMMA_ERR_FORMAT)
            cli_run_error("%s: not a PNG or JPEG image, nor a video omma can read: %s", path,
                          detail_after(path));
        else
            cli_run_error("%s", omma_last_error());
        return fail(in);
    }
    if (video && video->decode != IO_DECODE_CPU) /* where it went, once per input */
        fprintf(stderr, "omma run: %s: decoding: %s\n", path, io_video_decoder(in->video));
    in->is_video = 1;
    return 1;
}

long cli_input_frame_count(const cli_input *in)
{
    if (in->state == CLI_INPUT_FAILED)
        return 0;
    long n = in->is_video ? io_video_frame_count(in->video) : 1;
    if (n > 0 && in->max_frames > 0 && n > in->max_frames)
        n = in->max_frames;
    return n;
}

double cli_input_fps(const cli_input *in)
{
    return in->is_video && in->video ? io_video_fps(in->video) : 1.0;
}

int cli_input_next(cli_input *in, omma_frame *frame, long *index, double *timestamp_ms)
{
    memset(frame, 0, sizeof *frame);
    if (in->state != CLI_INPUT_LIVE)
        return 0;
    if (in->max_frames > 0 && in->frames_read >= in->max_frames) {
        in->state = CLI_INPUT_ENDED;
        cli_input_close(in);
        return 0;
    }
    if (!in->is_video) {
        if (in->frames_read > 0) {
            in->state = CLI_INPUT_ENDED;
            cli_input_close(in);
            return 0;
        }
        *frame = io_image_frame(&in->image);
        *timestamp_ms = 0;
    } else {
        int eof = 0;
        if (io_video_read(in->video, frame, timestamp_ms, &eof) != OMMA_OK) {
            cli_run_error("%s: %s; the camera stops", in->path, detail_after(in->path));
            return fail(in);
        }
        if (eof) {
            in->state = CLI_INPUT_ENDED;
            cli_input_close(in);
            return 0;
        }
    }
    *index = in->frames_read++;
    return 1;
}

int cli_input_host_frame(cli_input *in, const omma_frame *frame, omma_frame *host)
{
    if (frame->memory != OMMA_MEMORY_DEVICE || !in->video) {
        *host = *frame;
        return 1;
    }
    if (io_video_frame_to_host(in->video, frame, host) != OMMA_OK) {
        cli_run_error("%s: %s", in->path, omma_last_error());
        return 0;
    }
    return 1;
}

void cli_input_close(cli_input *in)
{
    io_image_free(&in->image);
    if (in->video)
        io_video_get_stats(in->video, &in->video_stats);
    io_video_close(in->video);
    in->video = NULL;
}
