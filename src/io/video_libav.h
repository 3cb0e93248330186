/* Private to video_file.c and video_writer.c (OMMA_HAVE_LIBAV builds):
 * FFmpeg's log kept out of stderr, its last error line quoted in omma's
 * messages. */
#ifndef OMMA_IO_VIDEO_LIBAV_H
#define OMMA_IO_VIDEO_LIBAV_H

#include <stddef.h>

/* Installs, once per process, an av_log callback that prints nothing and
 * keeps the calling thread's last line at AV_LOG_ERROR or worse. Any
 * thread. */
void io_libav_init(void);

/* Forgets the calling thread's last FFmpeg error line (before a call whose
 * failure will quote it). */
void io_libav_clear_log(void);

/* "FFmpeg's text for err (its last error line)" in buf; returns buf. */
const char *io_libav_why(int err, char *buf, size_t size);

#endif
