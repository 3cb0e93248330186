/* Private: the capture sources of the multi-camera runtime, one per camera:
 * a video file (FFmpeg, through io_video), a network camera (rtsp://,
 * http(s):// MJPEG or HLS, through io_video_open_url; source_network.c:
 * timeouts, reconnection with backoff, capture times from the stream), an
 * image sequence (a directory of
 * PNG/JPEG files or a numbered printf pattern, through io_image_load) or a
 * V4L2 camera (/dev/videoN, through libv4l2 where the build found it:
 * OMMA_HAVE_LIBV4L2). Every read hands out one frame in host memory. Files
 * are paced to their frame times by default, so a file plays like a camera;
 * cameras deliver as they capture.
 *
 * Threads: one thread opens, reads and closes a source (a second thread's
 * concurrent read returns OMMA_ERR_BUSY); rt_source_interrupt may be called
 * from any thread at any time before close. */
#ifndef OMMA_RUNTIME_SOURCE_H
#define OMMA_RUNTIME_SOURCE_H

#include <stdint.h>

#include "core/cpu_parts.h"
#include "io/recorder.h"
#include "io/video_file.h"
#include "omma/device.h"
#include "omma/face.h"
#include "omma/status.h"

typedef struct rt_source rt_source;

typedef enum rt_source_kind {
    RT_SOURCE_VIDEO = 0,
    RT_SOURCE_IMAGES,
    RT_SOURCE_V4L2,
    RT_SOURCE_NETWORK
} rt_source_kind;

/* A source's link (network cameras; other sources stay CONNECTED until
 * they fail). */
typedef enum rt_link_state {
    RT_LINK_CONNECTED = 0,
    RT_LINK_RECONNECTING, /* lost; attempt n under way or waiting its turn */
    RT_LINK_FAILED /* given up: error says why */
} rt_link_state;

typedef struct rt_source_status {
    rt_link_state state;
    int attempt; /* RECONNECTING: the attempt (from 1) */
    long reconnects; /* connections regained so far */
    long damaged_frames; /* frames the decoder concealed (all connections, all loops) */
    long dropped_packets; /* packets the decoder refused */
    int stream_clock; /* 1: the last frame's capture time came from the stream's
                       * wall clock (RTCP sender reports), 0: its arrival */
    char error[384]; /* RECONNECTING, FAILED: the last error ("" when none) */
} rt_source_status;

/* Called on the reading thread when the state, the attempt or the damage
 * counts change (not for every frame). */
typedef void (*rt_source_observer)(void *ctx, const rt_source_status *status);

typedef struct rt_source_options {
    int realtime; /* files: nonzero (default) delivers each frame at its time
                   * (video: its timestamp; images: index / fps) measured from
                   * the first read; 0 delivers as fast as it decodes. Live
                   * cameras deliver as they capture either way. */
    double fps; /* image sequences: frames per second, (0, 1000] (30) */
    int loop; /* files: start again at the end instead of ending (0);
               * timestamps keep increasing across loops */
    int width, height; /* V4L2: requested size, both 0 (the driver's current)
                        * or both in 1..IO_IMAGE_MAX_SIDE (0) */
    io_decode decode; /* videos: where they are decoded (IO_DECODE_CPU) */
    omma_device *device; /* videos decoded on the GPU: its device (NULL) */
    /* Network cameras. */
    int rtsp_udp; /* RTSP over UDP; 0: over the RTSP TCP connection (0) */
    int connect_timeout_ms; /* connecting, up to the stream's parameters,
                             * 1..3600000 (5000) */
    int read_timeout_ms; /* longest wait for a frame's data, 1..3600000 (5000) */
    int reconnect_max; /* attempts in a row before the camera fails, >= 0;
                        * 0: try forever (0) */
    int backoff_min_ms, backoff_max_ms; /* the wait before attempt 1, doubled
                                         * for each further one up to the max,
                                         * 1 <= min <= max <= 3600000
                                         * (500, 30000); back to min once a
                                         * connection has lasted
                                         * RT_SOURCE_GOOD_MS */
    rt_source_observer on_status; /* NULL: none */
    void *status_ctx;
    io_recorder *record; /* every frame handed out is recorded (NULL: none):
                          * videos and network cameras remuxed from their
                          * packets, the others' frames encoded; borrowed,
                          * it outlives the source */
    core_cpu_parts *cpu; /* the reading thread's CPU time in the demuxer,
                          * the decoder's calls and the pacing, by call
                          * kind (NULL: not measured); borrowed, written
                          * by the reading thread */
} rt_source_options;

#define RT_SOURCE_GOOD_MS 10000

/* The defaults above. */
void rt_source_options_init(rt_source_options *opt);

typedef struct rt_source_info {
    rt_source_kind kind;
    int live; /* 1: live camera (the runtime drops old frames), 0: file (the
               * runtime blocks) */
    int width, height; /* every frame's size */
    omma_pixel_format format; /* every frame's format: a video's as io_video_read
                               * gives it (I420, NV12, or RGB for other pixel
                               * formats), images RGB, V4L2 I420 */
    omma_memory memory; /* where frames are handed out: the device for a
                         * video decoded on the GPU (read them on
                         * rt_source_stream's stream), else the host */
    char decoder[384]; /* videos: how they are decoded (io_video_decoder) */
    double fps; /* nominal rate, 0 when unknown */
    long frames; /* frames in a file when known (a video whose container
                  * says, a directory), -1 otherwise */
    char name[256]; /* the spec as given (cut to fit) */
} rt_source_info;

/* Opens a source. spec: rtsp://, rtsps://, http://, https:// (any case) is
 * a network camera; "/dev/..." is a V4L2 camera; an existing directory,
 * or a name containing '%' that is not an existing file, is an image
 * sequence; anything else is a video file.
 *   A directory: its *.png, *.jpg, *.jpeg files (any case; not hidden ones)
 *   sorted by name (strcmp); other entries are ignored.
 *   A pattern: one %d conversion (flags: 0 and a width, as in
 *   "frames/%05d.png"; "%%" is a '%'), numbered from 0 or 1, whichever
 *   exists; the sequence ends at the first missing number.
 * Opening reads the first frame of a file (handed out by the first read) to
 * fill the info, and starts a camera streaming (I420 through libv4lconvert,
 * 4 mmap buffers). Errors, each naming the spec:
 *   OMMA_ERR_INVALID_ARG  NULL spec or out, options out of range, a pattern
 *                         without exactly one %d;
 *   OMMA_ERR_IO           missing, unreadable, an empty directory, a camera
 *                         that cannot be opened (busy, no permission);
 *   OMMA_ERR_FORMAT       not a video or image, corrupt first frame;
 *   OMMA_ERR_UNSUPPORTED  video in a build without FFmpeg, /dev/... in a build
 *                         without libv4l2, a path that is not a V4L2 capture
 *                         device (/dev/null, a regular file), a camera that
 *                         refuses I420 at the requested size;
 *   OMMA_ERR_OUT_OF_MEMORY.
 * On failure *out is NULL. */
omma_status rt_source_open(const char *spec, const rt_source_options *opt, rt_source **out);

/* A network camera: opening connects (within the connect timeout) and reads
 * its first frame; a failure there fails the open (OMMA_ERR_IO: refused,
 * unreachable, an RTSP/HTTP error; OMMA_ERR_TIMEOUT: no answer;
 * OMMA_ERR_FORMAT: not a stream; OMMA_ERR_UNSUPPORTED: a codec FFmpeg
 * cannot decode), each naming the URL. Once open, a lost stream (the peer
 * closed it, a read error, no data within the read timeout) is reconnected
 * inside rt_source_read, which blocks meanwhile (interruptible). */

/* The info filled at open (NULL for a NULL source). */
const rt_source_info *rt_source_get_info(const rt_source *s);

/* A video's reader counts (io_video_stats; zeros for other kinds and the
 * pass before a loop reopened the file). The reading thread only. */
void rt_source_get_video_stats(const rt_source *s, io_video_stats *out);

/* The CUstream (as void *) on which a GPU-decoded video's frames are
 * ready, in its order; NULL for frames in host memory. */
void *rt_source_stream(const rt_source *s);

/* Blocks until the next frame (paced when realtime) and returns it: *frame
 * in host memory (any pitch), or device memory (info.memory: read it on
 * rt_source_stream's stream), valid until the next read or close;
 * *capture_ns = core_now_ns() when the frame was captured (cameras) or
 * delivered (files); *eof = 1 (and an empty frame) at the end of a file
 * that does not loop. Errors, naming the spec and the frame index:
 *   OMMA_ERR_INVALID_ARG  a NULL argument;
 *   OMMA_ERR_IO           read error, a file removed, a camera unplugged
 *                         ("disconnected");
 *   OMMA_ERR_FORMAT       corrupt frame, a size or format change;
 *   OMMA_ERR_CLOSED       rt_source_interrupt was called (a blocked read
 *                         returns within about 100 ms);
 *   OMMA_ERR_BUSY         another thread is reading.
 * After an error or the end, later reads return the same again (after an
 * interrupt: OMMA_ERR_CLOSED). */
omma_status rt_source_read(rt_source *s, omma_frame *frame, uint64_t *capture_ns, int *eof);

/* Any thread, any time before close, idempotent: makes a blocked or later
 * read return OMMA_ERR_CLOSED promptly. Accepts NULL. */
void rt_source_interrupt(rt_source *s);

/* Frees everything (closes the file, stops streaming and unmaps); accepts
 * NULL. Not concurrently with a read. */
void rt_source_close(rt_source *s);

/* The current status (any thread; zeros but the state for a NULL source). */
void rt_source_get_status(rt_source *s, rt_source_status *out);

/* "connected", "reconnecting", "failed" ("unknown" out of range). */
const char *rt_link_state_name(rt_link_state state);

/* "video", "images", "v4l2", "network" ("unknown" out of range). */
const char *rt_source_kind_name(rt_source_kind kind);

#endif
