#define _POSIX_C_SOURCE 200809L /* mkstemp, fchmod, strdup */
/* Video files written with libavformat/libavcodec: RGB in, 4:2:0 YUV
 * through libswscale (BT.601, limited range, as omma's YUV frames), into
 * "<path>.tmp.XXXXXX" beside the target, renamed over it once the trailer is
 * written. */
#include "io/video_writer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"

#ifdef OMMA_HAVE_LIBAV

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
#include <stdatomic.h>

#include "io/video_libav.h"

#define MAX_SIDE 16384

struct io_video_writer {
    char *path, *tmp;
    int width, height; /* as opened */
    int ewidth, eheight; /* encoded: rounded up to even */
    AVFormatContext *oc;
    AVCodecContext *enc;
    AVStream *st;
    AVFrame *frame;
    AVPacket *pkt;
    struct SwsContext *sws;
    uint8_t *padded; /* ewidth x eheight RGB when a side is odd */
    int64_t next_pts;
    atomic_int busy;
    omma_status error; /* sticky: a failed write fails the rest */
};

/* Frees everything but the file; the caller removed or renamed it. */
static void destroy(io_video_writer *w)
{
    if (!w)
        return;
    if (w->oc) {
        if (w->oc->pb)
            avio_closep(&w->oc->pb);
        avformat_free_context(w->oc);
    }
    avcodec_free_context(&w->enc);
    av_frame_free(&w->frame);
    av_packet_free(&w->pkt);
    sws_freeContext(w->sws);
    free(w->padded);
    free(w->tmp);
    free(w->path);
    free(w);
}

/* The encoder: libx264 when this FFmpeg has it and the container takes
 * H.264, else MPEG-4 part 2. */
static const AVCodec *pick_encoder(const AVOutputFormat *of)
{
    const AVCodec *c = avcodec_find_encoder_by_name("libx264");
    if (c && avformat_query_codec(of, c->id, FF_COMPLIANCE_NORMAL) == 1)
        return c;
    c = avcodec_find_encoder(AV_CODEC_ID_MPEG4);
    if (c && avformat_query_codec(of, c->id, FF_COMPLIANCE_NORMAL) != 0)
        return c;
    return NULL;
}

static omma_status open_encoder(io_video_writer *w, double fps)
{
    char why[512];
    const char *path = w->path;
    io_libav_clear_log();
    int err = avformat_alloc_output_context2(&w->oc, NULL, NULL, path);
    if (err < 0 || !w->oc)
        return OMMA_FAIL(err == AVERROR(ENOMEM) ? OMMA_ERR_OUT_OF_MEMORY : OMMA_ERR_UNSUPPORTED,
                         "%s: no video container for this file name's extension "
                         "(.mp4, .mkv, .avi, ...): %s",
                         path, io_libav_why(err, why, sizeof why));
    const AVCodec *codec = pick_encoder(w->oc->oformat);
    if (!codec)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "%s: this FFmpeg has no H.264 (libx264) or MPEG-4 encoder for a %s file",
                         path, w->oc->oformat->name);
    w->enc = avcodec_alloc_context3(codec);
    w->frame = av_frame_alloc();
    w->pkt = av_packet_alloc();
    if (!w->enc || !w->frame || !w->pkt)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: the %s encoder", path, codec->name);
    AVRational rate = av_d2q(fps, 100000);
    w->enc->width = w->ewidth;
    w->enc->height = w->eheight;
    w->enc->pix_fmt = AV_PIX_FMT_YUV420P;
    w->enc->framerate = rate;
    w->enc->time_base = av_inv_q(rate);
    w->enc->sample_aspect_ratio = (AVRational){1, 1};
    w->enc->color_range = AVCOL_RANGE_MPEG;
    w->enc->colorspace = AVCOL_SPC_SMPTE170M;
    w->enc->color_primaries = AVCOL_PRI_SMPTE170M;
    w->enc->color_trc = AVCOL_TRC_SMPTE170M;
    w->enc->thread_count = 0;
    /* No B-frames: frames leave the encoder as they come (lower latency)
     * and containers without presentation times (AVI) keep them right. */
    w->enc->max_b_frames = 0;
    if (codec->id == AV_CODEC_ID_H264) {
        av_opt_set(w->enc->priv_data, "preset", "veryfast", 0);
        av_opt_set(w->enc->priv_data, "crf", "20", 0);
    } else {
        /* Constant quantiser 3 (good quality) rather than the 200 kb/s default. */
        w->enc->flags |= AV_CODEC_FLAG_QSCALE;
        w->enc->global_quality = FF_QP2LAMBDA * 3;
        w->enc->gop_size = 12;
    }
    if (w->oc->oformat->flags & AVFMT_GLOBALHEADER)
        w->enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    io_libav_clear_log();
    err = avcodec_open2(w->enc, codec, NULL);
    if (err < 0)
        return OMMA_FAIL(err == AVERROR(ENOMEM) ? OMMA_ERR_OUT_OF_MEMORY : OMMA_ERR_UNSUPPORTED,
                         "%s: cannot open the %s encoder for %dx%d at %g fps: %s", path,
                         codec->name, w->ewidth, w->eheight, fps,
                         io_libav_why(err, why, sizeof why));
    w->st = avformat_new_stream(w->oc, NULL);
    if (!w->st)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: the video stream", path);
    w->st->time_base = w->enc->time_base;
    w->st->avg_frame_rate = rate;
    err = avcodec_parameters_from_context(w->st->codecpar, w->enc);
    if (err < 0)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: stream parameters: %s", path,
                         io_libav_why(err, why, sizeof why));

    w->frame->format = AV_PIX_FMT_YUV420P;
    w->frame->width = w->ewidth;
    w->frame->height = w->eheight;
    err = av_frame_get_buffer(w->frame, 0);
    if (err < 0)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: a %dx%d frame", path, w->ewidth, w->eheight);
    w->sws = sws_getContext(w->ewidth, w->eheight, AV_PIX_FMT_RGB24, w->ewidth, w->eheight,
                            AV_PIX_FMT_YUV420P, SWS_BILINEAR | SWS_ACCURATE_RND, NULL, NULL, NULL);
    if (!w->sws)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: the RGB to YUV converter", path);
    if (w->ewidth != w->width || w->eheight != w->height) {
        w->padded = malloc((size_t)w->ewidth * 3 * w->eheight);
        if (!w->padded)
            return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: a %dx%d RGB frame", path, w->ewidth,
                             w->eheight);
    }

    /* The temporary file: created here (exclusively), written by avio. */
    size_t n = strlen(path) + sizeof ".tmp.XXXXXX";
    w->tmp = malloc(n);
    if (!w->tmp)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: %zu bytes", path, n);
    snprintf(w->tmp, n, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(w->tmp);
    if (fd < 0) {
        int e = errno;
        free(w->tmp);
        w->tmp = NULL;
        return OMMA_FAIL(OMMA_ERR_IO, "%s: cannot create a file beside it: %s", path, strerror(e));
    }
    (void)fchmod(fd, 0644); /* mkstemp makes it 0600; a video is for watching */
    close(fd);
    size_t un = strlen(w->tmp) + sizeof "file:";
    char *url = malloc(un);
    if (!url)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: %zu bytes", path, un);
    snprintf(url, un, "file:%s", w->tmp);
    io_libav_clear_log();
    err = avio_open(&w->oc->pb, url, AVIO_FLAG_WRITE);
    free(url);
    if (err < 0)
        return OMMA_FAIL(OMMA_ERR_IO, "%s: cannot open %s for writing: %s", path, w->tmp,
                         io_libav_why(err, why, sizeof why));
    io_libav_clear_log();
    err = avformat_write_header(w->oc, NULL);
    if (err < 0)
        return OMMA_FAIL(err == AVERROR(EIO) || err == AVERROR(ENOSPC) ? OMMA_ERR_IO
                                                                       : OMMA_ERR_UNSUPPORTED,
                         "%s: cannot start a %s file with %s video: %s", path, w->oc->oformat->name,
                         codec->name, io_libav_why(err, why, sizeof why));
    return OMMA_OK;
}

omma_status io_video_writer_open(const char *path, int width, int height, double fps,
                                 io_video_writer **out)
{
    if (out)
        *out = NULL;
    if (!path || !out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_video_writer_open: NULL %s",
                         path ? "out" : "path");
    if (width < 1 || width > MAX_SIDE || height < 1 || height > MAX_SIDE)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: video size %dx%d (each side 1..%d)", path,
                         width, height, MAX_SIDE);
    if (!(fps > 0.0 && fps <= 1000.0))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: frame rate %g (must be in (0, 1000])", path,
                         fps);
    io_libav_init();
    io_video_writer *w = calloc(1, sizeof *w);
    if (!w)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: video writer", path);
    w->path = strdup(path);
    if (!w->path) {
        free(w);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: video writer", path);
    }
    w->width = width;
    w->height = height;
    w->ewidth = width + (width & 1);
    w->eheight = height + (height & 1);
    omma_status st = open_encoder(w, fps);
    if (st != OMMA_OK) {
        io_video_writer_abort(w);
        return st;
    }
    *out = w;
    return OMMA_OK;
}

/* Sends frame (NULL: the end) to the encoder and writes what comes out. */
static omma_status encode(io_video_writer *w, AVFrame *frame)
{
    char why[512];
    io_libav_clear_log();
    int err = avcodec_send_frame(w->enc, frame);
    if (err < 0)
        return OMMA_FAIL(err == AVERROR(ENOMEM) ? OMMA_ERR_OUT_OF_MEMORY : OMMA_ERR_IO,
                         "%s: frame %lld: the %s encoder failed: %s", w->path,
                         (long long)w->next_pts, w->enc->codec->name,
                         io_libav_why(err, why, sizeof why));
    for (;;) {
        err = avcodec_receive_packet(w->enc, w->pkt);
        if (err == AVERROR(EAGAIN) || err == AVERROR_EOF)
            return OMMA_OK;
        if (err < 0)
            return OMMA_FAIL(err == AVERROR(ENOMEM) ? OMMA_ERR_OUT_OF_MEMORY : OMMA_ERR_IO,
                             "%s: frame %lld: the %s encoder failed: %s", w->path,
                             (long long)w->next_pts, w->enc->codec->name,
                             io_libav_why(err, why, sizeof why));
        av_packet_rescale_ts(w->pkt, w->enc->time_base, w->st->time_base);
        w->pkt->stream_index = w->st->index;
        err = av_interleaved_write_frame(w->oc, w->pkt); /* takes the packet's data */
        if (err < 0)
            return OMMA_FAIL(err == AVERROR(ENOMEM) ? OMMA_ERR_OUT_OF_MEMORY : OMMA_ERR_IO,
                             "%s: writing %s failed: %s", w->path, w->tmp,
                             io_libav_why(err, why, sizeof why));
    }
}

static omma_status write_frame(io_video_writer *w, const uint8_t *rgb, int pitch)
{
    if (w->padded) { /* odd sizes: repeat the last column and row */
        size_t row = (size_t)w->ewidth * 3;
        for (int y = 0; y < w->eheight; y++) {
            const uint8_t *src = rgb + (size_t)(y < w->height ? y : w->height - 1) * pitch;
            uint8_t *dst = w->padded + row * y;
            memcpy(dst, src, (size_t)w->width * 3);
            if (w->ewidth != w->width)
                memcpy(dst + (size_t)w->width * 3, src + (size_t)(w->width - 1) * 3, 3);
        }
        rgb = w->padded;
        pitch = (int)row;
    }
    int err = av_frame_make_writable(w->frame); /* the encoder may still hold it */
    if (err < 0)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: a %dx%d frame", w->path, w->ewidth,
                         w->eheight);
    const uint8_t *src[4] = {rgb, NULL, NULL, NULL};
    int src_pitch[4] = {pitch, 0, 0, 0};
    sws_scale(w->sws, src, src_pitch, 0, w->eheight, w->frame->data, w->frame->linesize);
    w->frame->pts = w->next_pts;
    omma_status st = encode(w, w->frame);
    w->next_pts++;
    return st;
}

omma_status io_video_writer_write(io_video_writer *w, const uint8_t *rgb, int pitch)
{
    if (!w || !rgb)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_video_writer_write: NULL %s",
                         w ? "pixels" : "writer");
    if (pitch < 3 * w->width)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: pitch %d below the %d bytes of a %d-pixel row",
                         w->path, pitch, 3 * w->width, w->width);
    if (atomic_exchange(&w->busy, 1))
        return OMMA_FAIL(OMMA_ERR_BUSY,
                         "%s: the video writer is in use on another thread "
                         "(one writer per thread)",
                         w->path);
    omma_status st;
    if (w->error)
        st = OMMA_FAIL(w->error, "%s: an earlier frame failed; the video cannot go on", w->path);
    else
        st = w->error = write_frame(w, rgb, pitch);
    atomic_store(&w->busy, 0);
    return st;
}

omma_status io_video_writer_finish(io_video_writer *w)
{
    if (!w)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_video_writer_finish: NULL writer");
    if (atomic_exchange(&w->busy, 1))
        return OMMA_FAIL(OMMA_ERR_BUSY,
                         "%s: the video writer is in use on another thread "
                         "(one writer per thread)",
                         w->path);
    char why[512];
    omma_status st = w->error;
    if (st != OMMA_OK)
        st = OMMA_FAIL(st, "%s: an earlier frame failed; the video was not written", w->path);
    if (st == OMMA_OK)
        st = encode(w, NULL);
    if (st == OMMA_OK) {
        io_libav_clear_log();
        int err = av_write_trailer(w->oc);
        if (err < 0)
            st = OMMA_FAIL(OMMA_ERR_IO, "%s: writing the end of %s failed: %s", w->path, w->tmp,
                           io_libav_why(err, why, sizeof why));
    }
    if (st == OMMA_OK) {
        int err = avio_closep(&w->oc->pb);
        if (err < 0)
            st = OMMA_FAIL(OMMA_ERR_IO, "%s: closing %s failed: %s", w->path, w->tmp,
                           io_libav_why(err, why, sizeof why));
    }
    if (st == OMMA_OK && rename(w->tmp, w->path) != 0)
        st = OMMA_FAIL(OMMA_ERR_IO, "%s: cannot rename %s over it: %s", w->path, w->tmp,
                       strerror(errno));
    if (st != OMMA_OK) {
        io_video_writer_abort(w);
        return st;
    }
    destroy(w);
    return OMMA_OK;
}

void io_video_writer_abort(io_video_writer *w)
{
    if (!w)
        return;
    if (w->oc && w->oc->pb)
        avio_closep(&w->oc->pb);
    if (w->tmp)
        unlink(w->tmp);
    destroy(w);
}

#else /* no libav */

struct io_video_writer {
    int unused;
};

omma_status io_video_writer_open(const char *path, int width, int height, double fps,
                                 io_video_writer **out)
{
    (void)width;
    (void)height;
    (void)fps;
    if (out)
        *out = NULL;
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                     "%s: omma was built without FFmpeg (libavformat/libavcodec): video files "
                     "are not supported",
                     path ? path : "(null)");
}

omma_status io_video_writer_write(io_video_writer *w, const uint8_t *rgb, int pitch)
{
    (void)w;
    (void)rgb;
    (void)pitch;
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                     "omma was built without FFmpeg (libavformat/libavcodec): video files are "
                     "not supported");
}

omma_status io_video_writer_finish(io_video_writer *w)
{
    (void)w;
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                     "omma was built without FFmpeg (libavformat/libavcodec): video files are "
                     "not supported");
}

void io_video_writer_abort(io_video_writer *w)
{
    (void)w;
}

#endif
