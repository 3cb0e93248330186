/* Private: recording a camera's video as it arrives (omma stream --record,
 * docs/RECORDING.md), into Matroska files of one segment each, with a
 * sidecar CSV per segment that maps the frame numbers (the VideoSync
 * stream's) to their times in the file and their capture times.
 *
 * Compressed streams (video files, network cameras, whatever io_video
 * demuxes) are remuxed: io_video hands its demuxed packets to the recorder
 * before decoding (recorder_libav.h), so the file holds the camera's own
 * bitstream, the same whether frames are decoded on the CPU or the GPU.
 * Other sources (V4L2 raw frames, image sequences) hand their host frames
 * to io_recorder_frame, which copies them for the recorder's thread to
 * encode with libx264. Segments rotate on a duration or a size, on a key
 * frame (remux) or a forced one (encode): every frame is in exactly one
 * segment.
 *
 * Threads: one thread (the camera's capture thread) feeds a recorder
 * (taps, io_recorder_frame, io_recorder_discontinuity); the recorder's own
 * thread writes; a bounded queue between them drops (and counts) what does
 * not fit, so a slow disk never blocks the capture. io_recorder_get_stats
 * from any thread. */
#ifndef OMMA_IO_RECORDER_H
#define OMMA_IO_RECORDER_H

#include <stddef.h>
#include <stdint.h>

#include "omma/face.h"
#include "omma/status.h"

typedef struct io_recorder io_recorder;

#define IO_RECORD_DEFAULT_NAME "{camera}_{start}.mkv"

typedef struct io_record_options {
    const char *dir; /* an existing writable directory */
    const char *name; /* file name template (io_record_check_name); NULL:
                       * IO_RECORD_DEFAULT_NAME */
    const char *camera; /* {camera} */
    const char *participant; /* {participant}; NULL: the camera's name */
    int64_t segment_ns; /* a new segment after this long (0: no limit) */
    int64_t segment_bytes; /* a new segment past this size (0: no limit) */
    double fps; /* encoded sources: the nominal rate (0: 30), for the key
                 * frame interval */
    int queue; /* packets or frames waiting for the writer (0: 256) */
} io_record_options;

/* Parses a --record-segment value: a duration ("90s", "10m", "1.5h",
 * "500ms") into *ns, or a size ("500MB", "2GB", "64MiB", "1000000B",
 * "700kB") into *bytes (the other set to 0). Decimal (kB MB GB TB) and
 * binary (KiB MiB GiB TiB) units; the number must be positive and finite,
 * at least 1 s or 1 MB, at most 30 days or 1 PB.
 * OMMA_ERR_INVALID_ARG with what is wrong. */
omma_status io_record_parse_segment(const char *text, int64_t *ns, int64_t *bytes);

/* Checks a name template: a file name (no '/'), ending in ".mkv", whose
 * only {...} fields are {camera}, {participant}, {start} (the segment's
 * start, UTC: 20261125T151300.123Z) and {segment} (its number from 1,
 * 4 digits); "{{" and "}}" are braces. When segments rotate
 * (segmented != 0) it must hold {start} or {segment}, so that names
 * differ. OMMA_ERR_INVALID_ARG naming the fault. */
omma_status io_record_check_name(const char *name, int segmented);

/* The template filled in (checked first) into out. */
omma_status io_record_format_name(const char *name, const char *camera, const char *participant,
                                  int64_t start_unix_ns, int segment, char *out, size_t size);

/* Makes a recorder and starts its thread; nothing is written before the
 * first packet or frame. Errors: OMMA_ERR_INVALID_ARG (bad template or
 * limits), OMMA_ERR_IO (the directory is missing, not a directory or not
 * writable, naming it), OMMA_ERR_UNSUPPORTED (a build without FFmpeg or
 * without libx264), OMMA_ERR_OUT_OF_MEMORY. */
omma_status io_recorder_create(const io_record_options *opt, io_recorder **out);

/* The frame handed out as number `frame` (from 0, as the VideoSync stream
 * counts), captured at capture_ns (core_now_ns). Remuxed streams: pts is
 * the frame's presentation time in its stream's ticks (INT64_MIN when it
 * has none), image is ignored; its sidecar row goes to the segment holding
 * its packet. Encoded sources: image (host memory, I420, NV12 or RGB) is
 * copied and queued for encoding. Never blocks on the writer. */
void io_recorder_frame(io_recorder *r, long frame, uint64_t capture_ns, int64_t pts,
                       const omma_frame *image);

/* The stream starts again (a file looped, a camera reconnected): the
 * segment in progress ends, the next starts at the next key frame. */
void io_recorder_discontinuity(io_recorder *r);

typedef struct io_recorder_stats {
    long frames; /* frames in the files (sidecar rows written) */
    long dropped; /* frames not recorded: the queue was full, or a packet
                   * skipped until the next key frame */
    long packets; /* packets written */
    int segments; /* segments opened */
    int64_t bytes; /* bytes of video in closed segments and the open one */
    int encoded; /* 1: frames encoded with libx264; 0: remuxed */
    char error[512]; /* the write failure that stopped the recording, or "" */
} io_recorder_stats;

void io_recorder_get_stats(io_recorder *r, io_recorder_stats *out);

/* Writes what is queued, closes the segment, stops the thread and frees
 * the recorder; the final counts in *stats (NULL: not wanted). Returns
 * the failure that stopped the recording (OMMA_ERR_IO: disk full, the
 * directory removed...), else OMMA_OK. Accepts NULL. */
omma_status io_recorder_close(io_recorder *r, io_recorder_stats *stats);

#endif
