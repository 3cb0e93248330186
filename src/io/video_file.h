/* Private: reading video files with FFmpeg's libavformat/libavcodec (from
 * Debian; built in when the build found them: OMMA_HAVE_LIBAV), frame by
 * frame into omma_frames. YUV 4:2:0 8-bit video (yuv420p / yuvj420p /
 * nv12) is handed over as it is decoded (I420 or NV12 over the decoder's
 * planes: no conversion; full-range yuvj420p too, read as omma's limited
 * range); any other pixel format is converted to RGB with libswscale.
 * io_video_open reads local files only (FFmpeg's file protocol);
 * io_video_open_url reads network streams (RTSP, HTTP(S): MJPEG, HLS...)
 * with timeouts. One reader per thread (a second thread's call returns
 * OMMA_ERR_BUSY); readers are independent. */
#ifndef OMMA_IO_VIDEO_FILE_H
#define OMMA_IO_VIDEO_FILE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "core/cpu_parts.h"
#include "io/recorder.h"
#include "omma/device.h"
#include "omma/face.h"
#include "omma/status.h"

typedef struct io_video io_video;

/* Where frames are decoded. */
typedef enum io_decode {
    IO_DECODE_CPU = 0, /* libavcodec in software: frames in host memory */
    IO_DECODE_GPU, /* the GPU's NVDEC engines: frames in device memory; a
                    * stream the GPU cannot decode is an error */
    IO_DECODE_AUTO, /* the GPU when it can decode the stream, else the CPU */
    IO_DECODE_COUNT
} io_decode;

typedef struct io_video_options {
    io_decode decode; /* IO_DECODE_CPU */
    omma_device *device; /* GPU and AUTO: the GPU whose decoders are used,
                          * through its context (never one of FFmpeg's);
                          * AUTO without one decodes on the CPU */
    int host_waits; /* GPU frames: read returns once the frame is decoded
                     * (waits on the host), for consumers that cannot make
                     * a stream wait (omma run); 0: ready in the stream's
                     * order only */
    io_recorder *record; /* the demuxed packets are also recorded (remuxed):
                          * each open and reconnection taps the stream, a
                          * rewind breaks the recording (NULL: none) */
    int decode_ahead; /* GPU (NVDEC) frames: before read returns a frame,
                       * the packets of the next one go to NVDEC, so that
                       * it decodes while the consumer paces and copies
                       * this one, and the next read finds it decoded
                       * (one wake-up a frame instead of a sleep for the
                       * decode); for files: on a live stream it would
                       * wait for the next frame's packets. 0: off */
    core_cpu_parts *cpu; /* the reading thread's CPU time in the demuxer
                          * and the decoder's calls, added here by call
                          * kind (core/cpu_parts.h; the reading thread
                          * writes it). NULL: not measured */
} io_video_options;

/* "cpu", "gpu", "auto"; and back (-1 for an unknown name). */
const char *io_decode_name(io_decode d);
int io_decode_parse(const char *name);

/* Failures in a row (without a frame between) after which a file is given
 * up as unrecoverable. */
#define IO_VIDEO_MAX_FAILURES 64

/* What the reader met so far. Damage is concealed, not an error: a frame
 * the decoder repaired (its corrupt or decode-error flags) is handed out
 * and counted; a packet the decoder refused gives no frame and is counted. */
typedef struct io_video_stats {
    long frames; /* frames handed out */
    long damaged_frames; /* of those, concealed by the decoder */
    long dropped_packets; /* packets (or frames) the decoder refused */
    long corrupt_packets; /* packets the demuxer flagged (cut short, a gap), decoded anyway */
    /* Time in the decoder's calls (sending packets, receiving frames; on
     * the GPU they wait for NVDEC): elapsed, and the reading thread's CPU
     * time (when close to elapsed, the thread spins while it waits); the
     * CPU time only when measured (io_video_options.cpu), else 0. */
    uint64_t decode_ns, decode_cpu_ns;
    long reused_decoders; /* network streams: reconnections that kept the decoder */
} io_video_stats;

/* Nonzero when this build can read and write video files. */
int io_video_available(void);

/* Opens the file's best video stream. Errors, each naming the file:
 *   OMMA_ERR_INVALID_ARG  NULL path or out;
 *   OMMA_ERR_IO           missing, unreadable, a directory;
 *   OMMA_ERR_FORMAT       not a media file omma can parse, no video stream,
 *                         a zero-size or damaged stream header;
 *   OMMA_ERR_UNSUPPORTED  no decoder for the codec in this FFmpeg, or a
 *                         build without libav (the message says so);
 *   OMMA_ERR_OUT_OF_MEMORY.
 * On failure *out is NULL. */
omma_status io_video_open(const char *path, io_video **out);

/* As io_video_open, with options (NULL: the defaults). With decode GPU,
 * also OMMA_ERR_UNSUPPORTED when the stream cannot be decoded on the GPU
 * (this FFmpeg has no NVDEC decoding for the codec, a pixel format other
 * than 8-bit 4:2:0: the message says which) and OMMA_ERR_NO_DEVICE in a
 * build without CUDA; with AUTO such a stream is decoded on the CPU and
 * io_video_decoder says why. */
omma_status io_video_open_with(const char *path, const io_video_options *opt, io_video **out);

/* 1 when frames come in device memory (decoded on the GPU): read a frame
 * on io_video_stream's stream (in its order: the frame is ready there),
 * before the next read; 0 for host frames. Known for sure once a frame was
 * read (NVDEC may refuse the stream at its first picture: decode AUTO then
 * goes on on the CPU). */
int io_video_on_gpu(const io_video *v);

/* The CUstream (as void *) GPU-decoded frames are produced on; NULL when
 * decoding on the CPU. */
void *io_video_stream(const io_video *v);

/* A copy in host memory of frame (the last one read from v, in device
 * memory; packed planes), valid until the next call on v; a host frame is
 * given as it is. For pictures drawn on the CPU. Errors: OMMA_ERR_CUDA,
 * OMMA_ERR_OUT_OF_MEMORY, OMMA_ERR_INVALID_ARG. */
omma_status io_video_frame_to_host(io_video *v, const omma_frame *frame, omma_frame *host);

/* How the video is decoded, for logs and status: "gpu (nvdec h264)",
 * "cpu (h264)" or "cpu (hevc; not on the GPU: why)". */
const char *io_video_decoder(const io_video *v);
/* Network streams (io_video_open_url). */
typedef struct io_video_net {
    int rtsp_udp; /* RTSP over UDP (RTP/RTCP datagrams); 0: interleaved in the TCP connection */
    int connect_timeout_ms; /* the whole open: connecting, the headers, the stream's
                             * parameters; > 0 */
    int read_timeout_ms; /* the longest wait for data once open, > 0 */
    const atomic_int *abort; /* nonzero ends any blocking call at once (NULL: none) */
} io_video_net;

/* Nonzero when spec names a network stream: rtsp://, rtsps://, http://,
 * https:// (any case). */
int io_video_is_url(const char *spec);

/* The URL with its user:password (RFC 3986 userinfo) replaced by three
 * asterisks, for messages, metrics and logs ("rtsp://u:p@host/x" shows as
 * "rtsp://" "***@host/x"). Cut to fit size; other strings are copied. */
void io_video_url_redacted(const char *url, char *out, size_t size);

/* Opens a network stream's best video stream. Only the network protocols
 * are allowed (a playlist cannot reach local files). Every blocking call
 * ends when its deadline passes (the connect timeout for the open, then
 * the read deadline io_video_arm sets) or *net->abort is set. Errors, each
 * naming the URL: as io_video_open_with (opt: where it is decoded; NULL:
 * the defaults), plus OMMA_ERR_INVALID_ARG (not a URL,
 * timeouts out of range), OMMA_ERR_IO (refused, unreachable, a name that
 * does not resolve, an HTTP or RTSP error status), OMMA_ERR_TIMEOUT (no
 * answer within the connect timeout), OMMA_ERR_CLOSED (aborted). */
omma_status io_video_open_url(const char *url, const io_video_net *net, const io_video_options *opt,
                              io_video **out);

/* Network readers whose stream was lost: disconnect closes the
 * connection (a frame handed out stays readable until the stream passes
 * this point) and keeps the decoder; reconnect connects again (as open:
 * the connect timeout, the abort flag) and, when the stream is the same
 * (codec, size and pixel format), keeps the decoder, which is expensive to
 * make on the GPU (io_video_stats.reused_decoders counts it): the next
 * read gives the new connection's frames, a sticky error of the lost one
 * forgotten. Errors: as io_video_open_url, each leaving the reader
 * disconnected for another attempt; OMMA_ERR_FORMAT when the stream came
 * back different (open a new reader); OMMA_ERR_INVALID_ARG on a file. */
omma_status io_video_disconnect(io_video *v);
omma_status io_video_reconnect(io_video *v);

/* Network readers: the next io_video_read must have data within
 * net->read_timeout_ms from now, or it ends with an error and
 * io_video_timed_out says so. Call before each read. No-op on files. */
void io_video_arm(io_video *v);

/* 1 when the last failure came from the deadline, 2 from the abort flag,
 * 0 otherwise. */
int io_video_timed_out(const io_video *v);

/* The wall clock (microseconds since 1970) at timestamp 0 of
 * io_video_read's timestamps, when the stream tells it (RTSP: the RTCP
 * sender reports' NTP time); INT64_MIN when unknown (yet). */
int64_t io_video_wallclock_us(const io_video *v);

/* The stream's size, its frame rate (frames per second, > 0; 25 when the
 * file does not say) and its frame count when the container tells (else 0). */
int io_video_width(const io_video *v);
int io_video_height(const io_video *v);
double io_video_fps(const io_video *v);
long io_video_frame_count(const io_video *v);

/* Fills *stats with the counts so far (zeros for NULL v). */
void io_video_get_stats(const io_video *v, io_video_stats *stats);

/* Decodes the next frame: *frame points into the reader's buffers, valid
 * until the next call on v (host memory, or device memory when decoded on
 * the GPU: see io_video_on_gpu). *timestamp_ms is its
 * presentation time from the stream's start. At the end of the stream
 * returns OMMA_OK with *eof = 1 and an empty *frame. Damaged data is
 * concealed and counted (io_video_get_stats), as a camera survives lost
 * packets; a file cut short ends after the frames its data gives. Errors
 * (naming the file and the frame index), each after the frames decoded
 * before it: OMMA_ERR_FORMAT for a frame whose size changes mid-stream,
 * IO_VIDEO_MAX_FAILURES damaged packets or unreadable stretches in a row,
 * or a stream that gave no frame at all; OMMA_ERR_IO for a read error;
 * OMMA_ERR_OUT_OF_MEMORY. After an error the reader only reports it again.
 * Never calls abort: the decoder runs without the options that make
 * FFmpeg's own assertions fire on damage (video_file.c says which). */
omma_status io_video_read(io_video *v, omma_frame *frame, double *timestamp_ms, int *eof);

/* Goes back to the stream's start after its end (io_video_read gave
 * *eof = 1), keeping the decoder (a GPU decoder is expensive to create):
 * the next read gives the first frame again, with its timestamp from the
 * start as the first time. Errors: OMMA_ERR_UNSUPPORTED (the container
 * cannot seek: reopen instead), OMMA_ERR_INVALID_ARG (NULL, or not at the
 * end), or the reader's sticky error. */
omma_status io_video_rewind(io_video *v);

/* The presentation time, in its stream's ticks, of the frame the last
 * io_video_read gave (the pts io_recorder_frame matches with its packet);
 * INT64_MIN when it has none or none was read. */
int64_t io_video_last_pts(const io_video *v);

/* Closes the file and frees everything; accepts NULL. */
void io_video_close(io_video *v);

#endif
