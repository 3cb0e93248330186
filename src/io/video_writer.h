/* Private: writing video files with libavformat/libavcodec (OMMA_HAVE_LIBAV):
 * RGB frames in, an encoded file out (H.264 with libx264 where this FFmpeg
 * has it, else MPEG-4 part 2; container from the file name's extension:
 * .mp4, .mkv, .avi, ...). The file is written beside the target under a
 * temporary name and renamed over it by io_video_writer_finish, so a
 * failed or abandoned run never leaves a half-written video. One writer per
 * thread. */
#ifndef OMMA_IO_VIDEO_WRITER_H
#define OMMA_IO_VIDEO_WRITER_H

#include <stdint.h>

#include "omma/status.h"

typedef struct io_video_writer io_video_writer;

/* Starts a width x height video at fps frames per second (both sides
 * rounded up to even sizes for 4:2:0 by repeating the edge). Errors naming
 * the path: OMMA_ERR_INVALID_ARG (NULL, sizes not in 1..16384, fps not in
 * (0, 1000]), OMMA_ERR_UNSUPPORTED (unknown extension / container, no
 * encoder, a build without libav), OMMA_ERR_IO (cannot create the file). */
omma_status io_video_writer_open(const char *path, int width, int height, double fps,
                                 io_video_writer **out);

/* Encodes one RGB frame (width x height as opened, rows `pitch` bytes
 * apart). Errors: OMMA_ERR_INVALID_ARG, OMMA_ERR_IO (encoder or write). */
omma_status io_video_writer_write(io_video_writer *w, const uint8_t *rgb, int pitch);

/* Flushes the encoder, writes the trailer, renames the file into place and
 * frees w (also on failure; the temporary file is then removed). */
omma_status io_video_writer_finish(io_video_writer *w);

/* Abandons the video: removes the temporary file, frees w; accepts NULL. */
void io_video_writer_abort(io_video_writer *w);

#endif
