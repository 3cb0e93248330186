/* Private to video_file.c and recorder.c (OMMA_HAVE_LIBAV builds): the
 * demuxer's taps into a recorder, on the reading thread. */
#ifndef OMMA_IO_RECORDER_LIBAV_H
#define OMMA_IO_RECORDER_LIBAV_H

#include <libavformat/avformat.h>

#include "io/recorder.h"

/* A stream (re)opened: its parameters and time base. The recording goes
 * on in a new segment from its first key frame. */
void io_recorder_tap_stream(io_recorder *r, const AVStream *st);

/* A packet of that stream as demuxed, before decoding (referenced, not
 * copied). Queued; dropped (counted) when the queue is full, and then the
 * packets up to the next key frame too. */
void io_recorder_tap_packet(io_recorder *r, const AVPacket *pkt);

#endif
