/* Private to video_file.c and video_writer.c (OMMA_HAVE_LIBAV builds):
 * FFmpeg's log kept out of stderr, its last error line quoted in omma's
 * messages. */
#ifndef OMMA_IO_VIDEO_LIBAV_H
#define OMMA_IO_VIDEO_LIBAV_H

#include <stddef.h>
#include <stdint.h>

#include <libavformat/avformat.h>

#include "io/video_file.h"

/* Installs, once per process, an av_log callback that prints nothing and
 * keeps the calling thread's last line at AV_LOG_ERROR or worse. Any
 * thread. */
void io_libav_init(void);

/* Forgets the calling thread's last FFmpeg error line (before a call whose
 * failure will quote it). */
void io_libav_clear_log(void);

/* "FFmpeg's text for err (its last error line)" in buf; returns buf. */
const char *io_libav_why(int err, char *buf, size_t size);

/* Network streams (video_net.c): a URL's open options and the interrupt
 * callback that ends a blocking call at its deadline or on abort. */
typedef struct io_net io_net;

/* Checks the URL and the options (OMMA_ERR_INVALID_ARG naming the URL)
 * and keeps a copy of the URL. Messages name it redacted
 * (io_video_url_redacted), as the caller must. */
omma_status io_net_create(const char *url, const io_video_net *opt, io_net **out);

/* Opens the URL into *fmt (allocated here, with the interrupt callback)
 * and reads its stream parameters, within the connect timeout. Errors
 * name it as `shown` (io_video_open_url's). */
omma_status io_net_open_input(io_net *n, const char *shown, AVFormatContext **fmt);

/* The read deadline: now + the read timeout. NULL is ignored. */
void io_net_arm(io_net *n);

/* 1: the deadline ended a call, 2: the abort flag did, 0: neither (NULL: 0). */
int io_net_fired(const io_net *n);

void io_net_free(io_net *n);

/* 1 for FFmpeg errors of the network (refused, reset, unreachable, timed
 * out, an HTTP/RTSP error status, a call the interrupt callback ended). */
int io_libav_network_error(int err);

#endif
