/* Video files as a source, through io_video. io_video cannot seek, so a
 * loop reopens the file; each pass's timestamps are shifted to follow the
 * last pass's last frame by one frame time. Every frame must keep the first
 * frame's size and pixel format. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "runtime/source_private.h"
#include "io/video_file.h"

typedef struct video_src {
    io_video *v;
    double offset_ms; /* added to this pass's timestamps */
    double last_ms; /* the last frame's shifted time */
    long damaged, dropped; /* damage counts of the passes before this one */
} video_src;

static const char *format_name(omma_pixel_format f)
{
    switch (f) {
    case OMMA_PIXEL_RGB:
        return "RGB";
    case OMMA_PIXEL_BGR:
        return "BGR";
    case OMMA_PIXEL_RGBA:
        return "RGBA";
    case OMMA_PIXEL_BGRA:
        return "BGRA";
    case OMMA_PIXEL_NV12:
        return "NV12";
    case OMMA_PIXEL_I420:
        return "I420";
    case OMMA_PIXEL_FORMAT_COUNT:
        break;
    }
    return "?";
}

static omma_status open_video(rt_source *s, video_src *vs)
{
    /* A file's next frame is in hand: NVDEC decodes it while this one is
     * paced and copied (one wake-up a frame). */
    io_video_options o = {s->opt.decode, s->opt.device, 0, s->opt.record, 1, s->opt.cpu};
    return io_video_open_with(s->spec, &o, &vs->v);
}

/* Reads the next frame of this pass: 1 a frame, 0 the end, < 0 failed. */
static int read_pass(rt_source *s, video_src *vs, omma_frame *frame, double *ts_ms, omma_status *st)
{
    int eof = 0;
    double ts = 0.0;
    *st = io_video_read(vs->v, frame, &ts, &eof);
    if (*st != OMMA_OK)
        return -1;
    if (eof)
        return 0;
    if (frame->width != s->info.width || frame->height != s->info.height ||
        frame->format != s->info.format || frame->memory != s->info.memory) {
        *st = OMMA_FAIL(OMMA_ERR_FORMAT, "%s: frame %ld is %s %dx%d; the video started as %s %dx%d",
                        s->spec, s->index, format_name(frame->format), frame->width, frame->height,
                        format_name(s->info.format), s->info.width, s->info.height);
        return -1;
    }
    *ts_ms = vs->offset_ms + ts;
    vs->last_ms = *ts_ms;
    s->pts = io_video_last_pts(vs->v);
    io_video_stats stats;
    io_video_get_stats(vs->v, &stats);
    src_set_damage(s, vs->damaged + stats.damaged_frames, vs->dropped + stats.dropped_packets);
    return 1;
}

static omma_status video_read(rt_source *s, omma_frame *frame, double *ts_ms, uint64_t *capture_ns,
                              int *eof)
{
    (void)capture_ns;
    video_src *vs = s->impl;
    omma_status st;
    int got = read_pass(s, vs, frame, ts_ms, &st);
    if (got < 0)
        return st;
    if (got > 0)
        return OMMA_OK;
    if (!s->opt.loop) {
        *eof = 1;
        return OMMA_OK;
    }
    /* Back to the start with the same decoder; reopened when the container
     * cannot seek (its damage counts kept). */
    if (io_video_rewind(vs->v) != OMMA_OK) {
        io_video_stats stats;
        io_video_get_stats(vs->v, &stats);
        vs->damaged += stats.damaged_frames;
        vs->dropped += stats.dropped_packets;
        io_video_close(vs->v);
        vs->v = NULL;
        OMMA_TRY(open_video(s, vs));
    }
    vs->offset_ms = vs->last_ms + 1000.0 / s->info.fps;
    got = read_pass(s, vs, frame, ts_ms, &st);
    if (got < 0)
        return st;
    if (got == 0)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "%s: frame %ld: no frames when read again to loop",
                         s->spec, s->index);
    return OMMA_OK;
}

static void video_close(rt_source *s)
{
    video_src *vs = s->impl;
    if (!vs)
        return;
    io_video_close(vs->v);
    free(vs);
    s->impl = NULL;
}

static void *video_stream(const rt_source *s)
{
    const video_src *vs = s->impl;
    return vs ? io_video_stream(vs->v) : NULL;
}

static void video_stats(const rt_source *s, io_video_stats *out)
{
    const video_src *vs = s->impl;
    io_video_get_stats(vs ? vs->v : NULL, out);
}

static const src_ops video_ops = {video_read, video_close, video_stream, video_stats};

omma_status src_video_open(rt_source *s)
{
    s->ops = &video_ops;
    video_src *vs = calloc(1, sizeof *vs);
    if (!vs)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: video source", s->spec);
    s->impl = vs;
    OMMA_TRY(open_video(s, vs));
    s->info.width = io_video_width(vs->v);
    s->info.height = io_video_height(vs->v);
    s->info.fps = io_video_fps(vs->v);
    long n = io_video_frame_count(vs->v);
    s->info.frames = n > 0 ? n : -1;

    /* The first frame fixes the format (the decoder's: I420, NV12 or RGB). */
    int eof = 0;
    double ts = 0.0;
    OMMA_TRY(io_video_read(vs->v, &s->first, &ts, &eof));
    if (eof)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "%s: the video stream has no frames", s->spec);
    s->info.format = s->first.format;
    s->info.memory = s->first.memory;
    snprintf(s->info.decoder, sizeof s->info.decoder, "%s", io_video_decoder(vs->v));
    s->first_ts_ms = ts;
    s->first_pts = io_video_last_pts(vs->v);
    s->have_first = 1;
    vs->last_ms = ts;
    return OMMA_OK;
}
