#define _POSIX_C_SOURCE 200809L /* stat */
/* Video files through libavformat (demuxing) and libavcodec (decoding).
 * Damage is concealed and counted, like a camera's lost packets: a frame
 * the decoder repaired is handed out and counted (io_video_stats), a packet
 * the decoder refuses or the demuxer cannot read is counted and skipped.
 * A file ends early only on what cannot be recovered: a read error, no
 * memory, IO_VIDEO_MAX_FAILURES failures in a row without a frame between,
 * or a stream that gave no frame at all. Frames are checked against the
 * stream's size and omma's pixel cap. io_video_open allows only the file
 * protocol, so a path never reaches the network; io_video_open_url opens
 * network streams through video_net.c (its options, the interrupt callback
 * and its deadlines), and the rest is the same reader.
 *
 * FFmpeg's log goes to a callback installed once per process that prints
 * nothing and keeps the calling thread's last error line, which the next
 * failure message quotes (the decoder's own words: "moov atom not found",
 * "error while decoding MB ..."). */
#include "io/video_file.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/clock.h"
#include "core/cpu_parts.h"
#include "core/error.h"
#include "io/image_file.h"

static const char *const decode_names[IO_DECODE_COUNT] = {"cpu", "gpu", "auto"};

const char *io_decode_name(io_decode d)
{
    return (unsigned)d < IO_DECODE_COUNT ? decode_names[d] : "unknown";
}

int io_decode_parse(const char *name)
{
    for (int i = 0; name && i < IO_DECODE_COUNT; i++)
        if (strcmp(name, decode_names[i]) == 0)
            return i;
    return -1;
}

#ifdef OMMA_HAVE_LIBAV

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libswscale/swscale.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>

#include "io/recorder_libav.h"
#include "io/video_libav.h"
#ifdef OMMA_HAVE_NVDEC
#include "io/video_nvdec.h"
#endif
#ifdef OMMA_HAVE_NVJPEG
#include "io/jpeg_gpu.h"
#endif

struct io_video {
    char *path;
    io_video_options opt;
#ifdef OMMA_HAVE_NVDEC
    io_nvdec *nv; /* decoding on the GPU (v->dec is then NULL) */
    omma_frame nv_frame; /* the frame it handed out */
    int64_t nv_pts;
    int nv_damaged;
    int nv_out; /* nv_frame is handed out */
#endif
#ifdef OMMA_HAVE_NVJPEG
    io_jpeg_gpu *jg; /* MJPEG decoding on the GPU with nvJPEG (v->dec is then NULL) */
    omma_frame jg_frame; /* the frame it decoded */
    int64_t jg_pts;
    int jg_have; /* jg_frame is decoded, not yet received */
    int jg_out; /* jg_frame is handed out */
    int jg_ended; /* the end of the stream was sent */
    omma_status jg_status; /* what an AVERROR_EXTERNAL stands for */
    char jg_why[512];
#endif
    char decoder[512]; /* io_video_decoder's text */
    AVFormatContext *fmt;
    AVCodecContext *dec;
    AVFrame *frame;
    AVPacket *pkt;
    int stream;
    int width, height;
    double fps;
    long frame_count;
    double time_base_ms; /* one stream tick in ms */
    int64_t start_pts; /* the stream's start in ticks (0 when unknown) */
    long index; /* frames handed out so far */
    long packets; /* packets of the stream sent to the decoder */
    io_video_stats stats;
    int failures; /* decoder and demuxer failures since the last frame */
    char last_failure[512]; /* the latest of them, for the message that gives up */
    int draining; /* the demuxer is at its end: the decoder is flushed */
    /* Damage the demuxer met (a packet cut short, unreadable data): the
     * frames decoded from the packets before it are handed out first, then
     * this is the error instead of the end of the stream. */
    omma_status pending;
    char pending_why[512];
    int done; /* the decoder has given its last frame */
    atomic_int busy;
    omma_status error; /* sticky: replayed with error_text */
    char *error_text;
    struct SwsContext *sws;
    uint8_t *rgb; /* the converted frame for pixel formats other than 4:2:0 */
    size_t rgb_bytes;
    uint8_t *host; /* io_video_frame_to_host's copy */
    size_t host_bytes;
    io_net *net; /* network streams (video_net.c); NULL for files */
    enum AVCodecID codec_id; /* the stream's, as the decoder was made for */
    int pix_fmt;
};

static _Thread_local char av_last[256];

static void on_av_log(void *avcl, int level, const char *fmt, va_list ap)
{
    (void)avcl;
    if (level > AV_LOG_ERROR)
        return;
    vsnprintf(av_last, sizeof av_last, fmt, ap);
    size_t n = strlen(av_last);
    while (n && (av_last[n - 1] == '\n' || av_last[n - 1] == ' '))
        av_last[--n] = '\0';
}

static void install_log(void)
{
    av_log_set_callback(on_av_log);
}

void io_libav_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, install_log);
}

void io_libav_clear_log(void)
{
    av_last[0] = '\0';
}

const char *io_libav_why(int err, char *buf, size_t size)
{
    char e[AV_ERROR_MAX_STRING_SIZE];
    av_strerror(err, e, sizeof e);
    if (av_last[0])
        snprintf(buf, size, "%s (%s)", e, av_last);
    else
        snprintf(buf, size, "%s", e);
    return buf;
}

/* The status an FFmpeg error code stands for, for a file being read. */
static omma_status read_status(int err)
{
    if (err == AVERROR(ENOMEM))
        return OMMA_ERR_OUT_OF_MEMORY;
    if (err == AVERROR(EIO) || err == AVERROR(ENOENT) || err == AVERROR(EACCES) ||
        err == AVERROR(EISDIR) || err == AVERROR(EPERM))
        return OMMA_ERR_IO;
    if (io_libav_network_error(err)) /* video_net.c: refused, timed out, HTTP status... */
        return OMMA_ERR_IO;
    if (err == AVERROR_DECODER_NOT_FOUND || err == AVERROR_DEMUXER_NOT_FOUND ||
        err == AVERROR_PATCHWELCOME || err == AVERROR(ENOSYS))
        return OMMA_ERR_UNSUPPORTED;
    return OMMA_ERR_FORMAT;
}

int io_video_available(void)
{
    return 1;
}

/* Sets the decoder up for the GPU when the options ask and it can be, and
 * says how the video is decoded. */
static omma_status choose_decoder(io_video *v, const AVCodec *codec, const AVCodecParameters *par)
{
    io_decode mode = v->opt.decode;
    snprintf(v->decoder, sizeof v->decoder, "cpu (%s)", codec->name);
    if (mode == IO_DECODE_CPU)
        return OMMA_OK;
    char why[768], jpeg_why[384] = "";
    omma_status st = OMMA_ERR_UNSUPPORTED;
#ifdef OMMA_HAVE_NVJPEG
    /* MJPEG goes to nvJPEG: NVDEC's JPEG decoder takes only 4:2:0, and most
     * webcams' MJPEG is 4:2:2. Without nvJPEG, NVDEC may still take it. */
    if (par->codec_id == AV_CODEC_ID_MJPEG && v->opt.device) {
        st = io_jpeg_gpu_open(v->opt.device, &v->jg);
        if (st == OMMA_OK) {
            snprintf(v->decoder, sizeof v->decoder, "gpu (nvjpeg %s %s)",
                     io_jpeg_gpu_backend(v->jg), codec->name);
            avcodec_free_context(&v->dec); /* nvJPEG decodes */
            return OMMA_OK;
        }
        snprintf(jpeg_why, sizeof jpeg_why, "%s", omma_last_error());
        if (st != OMMA_ERR_UNSUPPORTED) { /* nvJPEG is there and failed */
            if (mode == IO_DECODE_GPU)
                return OMMA_FAIL(st, "%s: cannot decode its %s video on the GPU: %s", v->path,
                                 codec->name, jpeg_why);
            snprintf(v->decoder, sizeof v->decoder, "cpu (%s; not on the GPU: %s)", codec->name,
                     jpeg_why);
            return OMMA_OK;
        }
    }
#endif
#ifdef OMMA_HAVE_NVDEC
    if (v->opt.device) {
        st = io_nvdec_open(v->opt.device, par, v->fmt->streams[v->stream]->time_base, v->opt.cpu,
                           &v->nv);
        if (st == OMMA_OK) {
            snprintf(v->decoder, sizeof v->decoder, "gpu (nvdec %s)", codec->name);
            avcodec_free_context(&v->dec); /* NVDEC decodes */
            return OMMA_OK;
        }
        snprintf(why, sizeof why, "%s", omma_last_error());
    } else {
        snprintf(why, sizeof why, "no GPU");
    }
#else
    (void)par;
    snprintf(why, sizeof why,
             "omma was built without NVDEC decoding (it needs CUDA and nv-codec-headers: "
             "libffmpeg-nvenc-dev)");
#endif
    if (jpeg_why[0]) { /* both said no */
        char nvdec_why[768];
        snprintf(nvdec_why, sizeof nvdec_why, "%s", why);
        snprintf(why, sizeof why, "nvJPEG: %.300s; NVDEC: %.380s", jpeg_why, nvdec_why);
    }
    if (mode == IO_DECODE_GPU)
        return OMMA_FAIL(st, "%s: cannot decode its %s video on the GPU: %s", v->path, codec->name,
                         why);
    snprintf(v->decoder, sizeof v->decoder, "cpu (%s; not on the GPU: %.440s)", codec->name, why);
    return OMMA_OK;
}

static omma_status open_file_input(io_video *v)
{
    char why[512];
    const char *path = v->path;
    /* "file:" so a name with a colon is never taken for a protocol. */
    size_t n = strlen(path) + sizeof "file:";
    char *url = malloc(n);
    if (!url)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: %zu bytes", path, n);
    snprintf(url, n, "file:%s", path);
    AVDictionary *opts = NULL;
    av_dict_set(&opts, "protocol_whitelist", "file", 0);
    io_libav_clear_log();
    int err = avformat_open_input(&v->fmt, url, NULL, &opts);
    av_dict_free(&opts);
    free(url);
    if (err < 0 && read_status(err) == OMMA_ERR_IO)
        return OMMA_FAIL(OMMA_ERR_IO, "%s: cannot open: %s", path,
                         io_libav_why(err, why, sizeof why));
    if (err < 0)
        return OMMA_FAIL(read_status(err), "%s: not a video file omma can open: %s", path,
                         io_libav_why(err, why, sizeof why));
    io_libav_clear_log();
    err = avformat_find_stream_info(v->fmt, NULL);
    if (err < 0)
        return OMMA_FAIL(read_status(err), "%s: cannot read the stream headers: %s", path,
                         io_libav_why(err, why, sizeof why));
    /* MP4 / MOV: the sample tables give each packet (a whole access unit)
     * its timestamps and key flag, so libavformat's H.264 / HEVC parser
     * would only read every packet's headers again: a quarter of
     * av_read_frame's instructions on 1080p H.264 (valgrind: 27,000 a
     * packet), with the same packets out. */
    if (strncmp(v->fmt->iformat->name, "mov,", 4) == 0)
        v->fmt->flags |= AVFMT_FLAG_NOPARSE;
    return OMMA_OK;
}

/* The input's best video stream into v->stream, its decoder in *codec;
 * its size checked. */
static omma_status find_video_stream(io_video *v, const AVCodec **codec)
{
    char why[512];
    const char *path = v->path;
    int err = av_find_best_stream(v->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, codec, 0);
    if (err == AVERROR_STREAM_NOT_FOUND)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "%s: no video stream (format %s)", path,
                         v->fmt->iformat->name);
    if (err == AVERROR_DECODER_NOT_FOUND || (err >= 0 && !*codec)) {
        int i = err >= 0 ? err : av_find_best_stream(v->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
        const char *name = i >= 0 ? avcodec_get_name(v->fmt->streams[i]->codecpar->codec_id) : "?";
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "%s: no decoder for its %s video in this FFmpeg",
                         path, name);
    }
    if (err < 0)
        return OMMA_FAIL(read_status(err), "%s: no usable video stream: %s", path,
                         io_libav_why(err, why, sizeof why));
    v->stream = err;
    const AVCodecParameters *par = v->fmt->streams[v->stream]->codecpar;
    if (par->width <= 0 || par->height <= 0)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "%s: %s video stream of size %dx%d", path, (*codec)->name,
                         par->width, par->height);
    if (par->width > IO_IMAGE_MAX_SIDE || par->height > IO_IMAGE_MAX_SIDE ||
        (long long)par->width * par->height > IO_IMAGE_MAX_PIXELS)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "%s: video of %dx%d pixels (at most %d a side, %lld in all)", path,
                         par->width, par->height, IO_IMAGE_MAX_SIDE, IO_IMAGE_MAX_PIXELS);
    return OMMA_OK;
}

/* The chosen stream's rate, frame count and time base. */
static void take_timing(io_video *v)
{
    const AVStream *st = v->fmt->streams[v->stream];
    AVRational rate = st->avg_frame_rate.num > 0 && st->avg_frame_rate.den > 0 ? st->avg_frame_rate
                                                                               : st->r_frame_rate;
    v->fps = rate.num > 0 && rate.den > 0 ? av_q2d(rate) : 0.0;
    if (!(v->fps > 0.0 && v->fps <= 1000.0))
        v->fps = 25.0;
    v->frame_count = st->nb_frames > 0 ? (long)st->nb_frames : 0;
    v->time_base_ms =
        st->time_base.num > 0 && st->time_base.den > 0 ? 1000.0 * av_q2d(st->time_base) : 0.0;
    v->start_pts = st->start_time != AV_NOPTS_VALUE ? st->start_time : 0;
}

static omma_status open_stream(io_video *v)
{
    char why[512];
    const char *path = v->path;
    int err;
    OMMA_TRY(v->net ? io_net_open_input(v->net, path, &v->fmt) : open_file_input(v));
    const AVCodec *codec = NULL;
    OMMA_TRY(find_video_stream(v, &codec));
    AVStream *st = v->fmt->streams[v->stream];
    const AVCodecParameters *par = st->codecpar;
    v->width = par->width;
    v->height = par->height;
    v->codec_id = par->codec_id;
    v->pix_fmt = par->format;
    take_timing(v);
    io_recorder_tap_stream(v->opt.record, st);

    v->dec = avcodec_alloc_context3(codec);
    if (!v->dec)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: cannot make a %s decoder", path, codec->name);
    err = avcodec_parameters_to_context(v->dec, par);
    if (err < 0)
        return OMMA_FAIL(read_status(err), "%s: %s decoder parameters: %s", path, codec->name,
                         io_libav_why(err, why, sizeof why));
    /* Damage is detected (checksums, bitstream and buffer checks: they only
     * make a decoder notice more, and flag the frame or fail the packet) and
     * concealed. Never AV_EF_EXPLODE: it turns every concealable error into a
     * failed decode call, and FFmpeg 5.1's frame-threaded mpeg4 decoder then
     * trips its own assertion (frame->buf[0] in decode.c) and aborts the
     * process; nor AV_EF_AGGRESSIVE / AV_EF_CAREFUL (no extra safety, only
     * more refused frames). */
    v->dec->err_recognition = AV_EF_CRCCHECK | AV_EF_BITSTREAM | AV_EF_BUFFER;
    v->dec->error_concealment = FF_EC_GUESS_MVS | FF_EC_DEBLOCK;
    v->dec->pkt_timebase = st->time_base;
    v->dec->thread_count = 0; /* FFmpeg's choice */
    if (v->net) /* live: frame threads hold frames back (~120 ms measured at 15 fps, 2 cores) */
        v->dec->thread_type = FF_THREAD_SLICE;
    OMMA_TRY(choose_decoder(v, codec, par));
    io_libav_clear_log();
    err = v->dec ? avcodec_open2(v->dec, codec, NULL) : 0;
    if (err < 0)
        return OMMA_FAIL(read_status(err), "%s: cannot open the %s decoder: %s", path, codec->name,
                         io_libav_why(err, why, sizeof why));
    v->frame = av_frame_alloc();
    v->pkt = av_packet_alloc();
    if (!v->frame || !v->pkt)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: frame and packet", path);
    return OMMA_OK;
}

/* The decoder's calls, whichever decodes (FFmpeg, or NVDEC's API), with
 * FFmpeg's error codes. */
static int decoder_send(io_video *v, const AVPacket *pkt)
{
#ifdef OMMA_HAVE_NVJPEG
    if (v->jg) { /* one packet, one JPEG, one frame */
        if (!pkt) {
            v->jg_ended = 1;
            return 0;
        }
        if (v->jg_have)
            return AVERROR(EAGAIN);
        if (v->jg_ended)
            return AVERROR_EOF;
        omma_status st = io_jpeg_gpu_decode(v->jg, pkt->data,
                                            (size_t)(pkt->size > 0 ? pkt->size : 0), &v->jg_frame);
        if (st == OMMA_OK) {
            v->jg_have = 1;
            v->jg_pts = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
            return 0;
        }
        snprintf(v->jg_why, sizeof v->jg_why, "%s", omma_last_error());
        if (st == OMMA_ERR_FORMAT || st == OMMA_ERR_INVALID_ARG) /* this JPEG only */
            return AVERROR_INVALIDDATA;
        if (st == OMMA_ERR_OUT_OF_MEMORY)
            return AVERROR(ENOMEM);
        v->jg_status = st;
        return AVERROR_EXTERNAL;
    }
#endif
#ifdef OMMA_HAVE_NVDEC
    if (v->nv)
        return io_nvdec_send(v->nv, pkt);
#endif
    return avcodec_send_packet(v->dec, pkt);
}

static int decoder_receive(io_video *v)
{
#ifdef OMMA_HAVE_NVJPEG
    if (v->jg) {
        if (v->jg_have) {
            v->jg_have = 0;
            v->jg_out = 1;
            return 0;
        }
        return v->jg_ended ? AVERROR_EOF : AVERROR(EAGAIN);
    }
#endif
#ifdef OMMA_HAVE_NVDEC
    if (v->nv) {
        int err = io_nvdec_receive(v->nv, &v->nv_frame, &v->nv_pts, &v->nv_damaged);
        v->nv_out = err == 0;
        return err;
    }
#endif
    return avcodec_receive_frame(v->dec, v->frame);
}

/* Gives the frame handed out back to the decoder: a GPU frame is unmapped
 * once the consumer's reads on the stream have passed this point. */
static omma_status decoder_give_back(io_video *v)
{
    omma_status st = OMMA_OK;
#ifdef OMMA_HAVE_NVJPEG
    if (v->jg && (v->jg_out || v->jg_have)) { /* a decoded frame not received: given back too */
        v->jg_out = v->jg_have = 0;
        st = io_jpeg_gpu_give_back(v->jg);
    }
#endif
#ifdef OMMA_HAVE_NVDEC
    if (v->nv && v->nv_out) {
        v->nv_out = 0;
        st = io_nvdec_give_back(v->nv);
    }
#endif
    if (v->frame)
        av_frame_unref(v->frame);
    return st;
}

/* The decoder starts again from the next packet (a rewind, a reconnection). */
static omma_status decoder_restart(io_video *v)
{
#ifdef OMMA_HAVE_NVJPEG
    if (v->jg) {
        omma_status st = OMMA_OK;
        if (v->jg_have) { /* decoded before the restart, never received */
            v->jg_have = 0;
            st = io_jpeg_gpu_give_back(v->jg);
        }
        v->jg_ended = 0;
        return st;
    }
#endif
#ifdef OMMA_HAVE_NVDEC
    if (v->nv)
        return io_nvdec_restart(v->nv, v->fmt->streams[v->stream]->time_base);
#endif
    v->dec->pkt_timebase = v->fmt->streams[v->stream]->time_base;
    avcodec_flush_buffers(v->dec);
    return OMMA_OK;
}

/* What the decoder's last failure was about. */
static const char *decoder_why(io_video *v, int err, char *buf, size_t size)
{
    (void)v;
#ifdef OMMA_HAVE_NVJPEG
    if (v->jg) {
        snprintf(buf, size, "%.*s", (int)size - 1, v->jg_why[0] ? v->jg_why : "no reason given");
        return buf;
    }
#endif
#ifdef OMMA_HAVE_NVDEC
    if (v->nv) {
        snprintf(buf, size, "%s", io_nvdec_why(v->nv));
        return buf;
    }
#endif
    return io_libav_why(err, buf, size);
}

omma_status io_video_open(const char *path, io_video **out)
{
    return io_video_open_with(path, NULL, out);
}

omma_status io_video_open_with(const char *path, const io_video_options *opt, io_video **out)
{
    if (out)
        *out = NULL;
    if (!path || !out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_video_open: NULL %s", path ? "out" : "path");
    if (opt && ((unsigned)opt->decode >= IO_DECODE_COUNT ||
                (opt->decode == IO_DECODE_GPU && !opt->device)))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: %s", path,
                         (unsigned)opt->decode >= IO_DECODE_COUNT ? "bad decode mode"
                                                                  : "GPU decoding without a GPU");
    struct stat sb;
    if (stat(path, &sb) != 0)
        return OMMA_FAIL(OMMA_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (!S_ISREG(sb.st_mode))
        return OMMA_FAIL(OMMA_ERR_IO, "%s: not a regular file", path);
    if (sb.st_size == 0)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "%s: empty file (0 bytes)", path);
    io_libav_init();
    io_video *v = calloc(1, sizeof *v);
    if (!v)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: video reader", path);
    if (opt)
        v->opt = *opt;
    v->path = strdup(path);
    if (!v->path) {
        free(v);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: video reader", path);
    }
    omma_status st = open_stream(v);
    if (st != OMMA_OK) {
        io_video_close(v);
        return st;
    }
    *out = v;
    return OMMA_OK;
}

omma_status io_video_open_url(const char *url, const io_video_net *net, const io_video_options *opt,
                              io_video **out)
{
    if (out)
        *out = NULL;
    if (opt && ((unsigned)opt->decode >= IO_DECODE_COUNT ||
                (opt->decode == IO_DECODE_GPU && !opt->device)))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_video_open_url: %s",
                         (unsigned)opt->decode >= IO_DECODE_COUNT ? "bad decode mode"
                                                                  : "GPU decoding without a GPU");
    if (!url || !net || !out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_video_open_url: NULL %s",
                         !url   ? "url"
                         : !net ? "net"
                                : "out");
    io_libav_init();
    io_video *v = calloc(1, sizeof *v);
    if (!v)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "network video reader");
    if (opt)
        v->opt = *opt;
    size_t n = strlen(url) + 1;
    v->path = malloc(n); /* messages name it without its password */
    if (v->path)
        io_video_url_redacted(url, v->path, n);
    omma_status st = v->path ? io_net_create(url, net, &v->net)
                             : OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "network video reader");
    if (st == OMMA_OK)
        st = open_stream(v);
    if (st != OMMA_OK) {
        io_video_close(v);
        return st;
    }
    *out = v;
    return OMMA_OK;
}

omma_status io_video_disconnect(io_video *v)
{
    if (!v || !v->net)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_video_disconnect: %s",
                         v ? "not a network stream" : "NULL reader");
    (void)decoder_give_back(v); /* the consumer may still read it */
    avformat_close_input(&v->fmt);
    return OMMA_OK;
}

omma_status io_video_reconnect(io_video *v)
{
    if (!v || !v->net)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_video_reconnect: %s",
                         v ? "not a network stream" : "NULL reader");
    (void)io_video_disconnect(v);
    OMMA_TRY(io_net_open_input(v->net, v->path, &v->fmt));
    const AVCodec *codec = NULL;
    omma_status st = find_video_stream(v, &codec);
    const AVCodecParameters *par = st == OMMA_OK ? v->fmt->streams[v->stream]->codecpar : NULL;
    if (st == OMMA_OK && (par->codec_id != v->codec_id || par->width != v->width ||
                          par->height != v->height || par->format != v->pix_fmt)) {
        const char *was = av_get_pix_fmt_name(v->pix_fmt), *now = av_get_pix_fmt_name(par->format);
        st = OMMA_FAIL(OMMA_ERR_FORMAT,
                       "%s: the stream came back as %s %dx%d %s; it was %s %dx%d %s", v->path,
                       avcodec_get_name(par->codec_id), par->width, par->height, now ? now : "?",
                       avcodec_get_name(v->codec_id), v->width, v->height, was ? was : "?");
    }
    if (st != OMMA_OK) {
        avformat_close_input(&v->fmt);
        return st;
    }
    /* The same stream: the decoder (a GPU decoder is expensive to make)
     * starts again from the new connection's first key frame. */
    take_timing(v);
    st = decoder_restart(v);
    if (st != OMMA_OK) {
        avformat_close_input(&v->fmt);
        return st;
    }
    v->done = 0;
    v->draining = 0;
    v->failures = 0;
    v->pending = OMMA_OK;
    v->error = OMMA_OK;
    free(v->error_text);
    v->error_text = NULL;
    v->stats.reused_decoders++;
    io_recorder_tap_stream(v->opt.record, v->fmt->streams[v->stream]);
    return OMMA_OK;
}

void io_video_arm(io_video *v)
{
    if (v)
        io_net_arm(v->net);
}

int io_video_timed_out(const io_video *v)
{
    return v ? io_net_fired(v->net) : 0;
}

int64_t io_video_wallclock_us(const io_video *v)
{
    if (!v || !v->fmt || v->fmt->start_time_realtime == AV_NOPTS_VALUE ||
        v->fmt->start_time_realtime <= 0 || !(v->time_base_ms > 0.0))
        return INT64_MIN;
    /* start_time_realtime is the wall clock at pts 0; timestamps count from start_pts. */
    return v->fmt->start_time_realtime +
           (int64_t)llround((double)v->start_pts * v->time_base_ms * 1e3);
}

int io_video_width(const io_video *v)
{
    return v ? v->width : 0;
}
int io_video_height(const io_video *v)
{
    return v ? v->height : 0;
}
double io_video_fps(const io_video *v)
{
    return v ? v->fps : 0.0;
}
long io_video_frame_count(const io_video *v)
{
    return v ? v->frame_count : 0;
}
int io_video_on_gpu(const io_video *v)
{
#ifdef OMMA_HAVE_NVJPEG
    if (v && v->jg)
        return 1;
#endif
#ifdef OMMA_HAVE_NVDEC
    return v && v->nv;
#else
    (void)v;
    return 0;
#endif
}
void *io_video_stream(const io_video *v)
{
#ifdef OMMA_HAVE_NVJPEG
    if (v && v->jg)
        return io_jpeg_gpu_stream(v->jg);
#endif
#ifdef OMMA_HAVE_NVDEC
    if (v && v->nv)
        return io_nvdec_stream(v->nv);
#endif
    (void)v;
    return NULL;
}
const char *io_video_decoder(const io_video *v)
{
    return v ? v->decoder : "";
}
void io_video_get_stats(const io_video *v, io_video_stats *stats)
{
    if (!stats)
        return;
    memset(stats, 0, sizeof *stats);
    if (v)
        *stats = v->stats;
}

/* Records the failure just reported so later calls replay it. */
static omma_status sticky(io_video *v, omma_status st)
{
    v->error = st;
    free(v->error_text);
    v->error_text = strdup(omma_last_error());
    return st;
}

/* Points *f at the decoded frame: 4:2:0 planes as they are, anything else
 * converted to RGB in v->rgb. */
static omma_status hand_over(io_video *v, omma_frame *f)
{
    const AVFrame *fr = v->frame;
    const char *path = v->path;
#ifdef OMMA_HAVE_NVJPEG
    if (v->jg) {
        if (v->jg_frame.width != v->width || v->jg_frame.height != v->height)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "%s: frame %ld is %dx%d in a %dx%d video", path,
                             v->index, v->jg_frame.width, v->jg_frame.height, v->width, v->height);
        *f = v->jg_frame;
        omma_status st = v->opt.host_waits ? io_jpeg_gpu_wait(v->jg) : OMMA_OK;
        return st == OMMA_OK
                   ? OMMA_OK
                   : OMMA_FAIL(st, "%s: frame %ld: %s", path, v->index, omma_last_error());
    }
#endif
#ifdef OMMA_HAVE_NVDEC
    if (v->nv) {
        if (v->nv_frame.width != v->width || v->nv_frame.height != v->height)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "%s: frame %ld is %dx%d in a %dx%d video", path,
                             v->index, v->nv_frame.width, v->nv_frame.height, v->width, v->height);
        v->stats.damaged_frames += v->nv_damaged;
        *f = v->nv_frame;
        omma_status st = v->opt.host_waits ? io_nvdec_wait(v->nv) : OMMA_OK;
        return st == OMMA_OK
                   ? OMMA_OK
                   : OMMA_FAIL(st, "%s: frame %ld: %s", path, v->index, omma_last_error());
    }
#endif
    if (fr->width != v->width || fr->height != v->height)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "%s: frame %ld is %dx%d in a %dx%d video", path, v->index,
                         fr->width, fr->height, v->width, v->height);
    if ((fr->flags & AV_FRAME_FLAG_CORRUPT) || fr->decode_error_flags)
        v->stats.damaged_frames++; /* concealed by the decoder */
    int w = fr->width, h = fr->height;
    memset(f, 0, sizeof *f);
    f->width = w;
    f->height = h;
    f->memory = OMMA_MEMORY_HOST;
    int cw = (w + 1) / 2;
    if ((fr->format == AV_PIX_FMT_YUV420P || fr->format == AV_PIX_FMT_YUVJ420P) &&
        fr->linesize[0] >= w && fr->linesize[1] >= cw && fr->linesize[2] >= cw) {
        f->format = OMMA_PIXEL_I420;
        for (int i = 0; i < 3; i++) {
            f->planes[i] = fr->data[i];
            f->pitch[i] = fr->linesize[i];
        }
        return OMMA_OK;
    }
    if (fr->format == AV_PIX_FMT_NV12 && fr->linesize[0] >= w && fr->linesize[1] >= 2 * cw) {
        f->format = OMMA_PIXEL_NV12;
        for (int i = 0; i < 2; i++) {
            f->planes[i] = fr->data[i];
            f->pitch[i] = fr->linesize[i];
        }
        return OMMA_OK;
    }
    const char *fmt_name = av_get_pix_fmt_name(fr->format);
    v->sws = sws_getCachedContext(v->sws, w, h, fr->format, w, h, AV_PIX_FMT_RGB24, SWS_BILINEAR,
                                  NULL, NULL, NULL);
    if (!v->sws)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "%s: frame %ld: pixel format %s does not convert to RGB", path, v->index,
                         fmt_name ? fmt_name : "?");
    size_t bytes = (size_t)w * 3 * h;
    if (bytes > v->rgb_bytes) {
        free(v->rgb);
        v->rgb_bytes = 0;
        v->rgb = malloc(bytes);
        if (!v->rgb)
            return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: %zu bytes for an RGB frame", path, bytes);
        v->rgb_bytes = bytes;
    }
    uint8_t *dst[4] = {v->rgb, NULL, NULL, NULL};
    int dst_pitch[4] = {3 * w, 0, 0, 0};
    if (sws_scale(v->sws, (const uint8_t *const *)fr->data, fr->linesize, 0, h, dst, dst_pitch) !=
        h)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "%s: frame %ld: converting %s to RGB failed", path,
                         v->index, fmt_name ? fmt_name : "?");
    f->format = OMMA_PIXEL_RGB;
    f->planes[0] = v->rgb;
    f->pitch[0] = 3 * w;
    return OMMA_OK;
}

/* A failure that can be recovered from (a damaged packet, data the demuxer
 * skips): counted, remembered for the message, and 1 while fewer than
 * IO_VIDEO_MAX_FAILURES happened in a row; 0 when it is time to give up. */
static int recoverable(io_video *v, int err, const char *what)
{
    char why[256];
    snprintf(v->last_failure, sizeof v->last_failure, "%s: %s", what,
             decoder_why(v, err, why, sizeof why));
    return ++v->failures < IO_VIDEO_MAX_FAILURES;
}

/* Ends the input at damage it cannot get past: the frames still in the
 * decoder come out first, then this error instead of the end. */
static void give_up(io_video *v, omma_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->pending_why, sizeof v->pending_why, fmt, ap);
    va_end(ap);
    v->pending = st;
    v->draining = 1;
    decoder_send(v, NULL);
}

/* The decoder's failures that end the camera: out of memory, and the GPU
 * decoders' own (their status and message). Sets *st and returns 1. */
static int decoder_failed(io_video *v, int err, omma_status *st)
{
    char why[512];
    if (err == AVERROR(ENOMEM)) {
        *st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: frame %ld: decoding: %s", v->path, v->index,
                        io_libav_why(err, why, sizeof why));
        return 1;
    }
#ifdef OMMA_HAVE_NVJPEG
    if (err == AVERROR_EXTERNAL && v->jg) {
        *st = OMMA_FAIL(v->jg_status, "%s: frame %ld: %s", v->path, v->index, v->jg_why);
        return 1;
    }
#endif
#ifdef OMMA_HAVE_NVDEC
    if (err == AVERROR_EXTERNAL && v->nv) {
        *st = OMMA_FAIL(io_nvdec_status(v->nv), "%s: frame %ld: %s", v->path, v->index,
                        io_nvdec_why(v->nv));
        return 1;
    }
#endif
    return 0;
}

/* Reads the next packet of the stream into the decoder, or at the
 * demuxer's end flushes it: 0 (go on), or < 0 for a failure (the message
 * set; *st its status). */
static int feed(io_video *v, omma_status *st)
{
    char why[512];
    const char *path = v->path;
    core_cpu_parts *cpu = v->opt.cpu;
    uint64_t mark = core_cpu_mark(cpu);
    int err = av_read_frame(v->fmt, v->pkt);
    core_cpu_lap(cpu, CORE_CPU_DEMUX, &mark);
    if (err == AVERROR_EOF && v->fmt->pb && v->fmt->pb->error && v->fmt->pb->error != AVERROR_EOF)
        err = v->fmt->pb->error; /* the end came from a read error */
    if (err == AVERROR_EOF) {
        v->draining = 1;
        err = decoder_send(v, NULL);
        if (err == AVERROR(ENOMEM)) {
            *st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: frame %ld: flushing the decoder: %s", path,
                            v->index, io_libav_why(err, why, sizeof why));
            return -1;
        }
        if (err < 0 && err != AVERROR_EOF) { /* the last packet was bad; still draining */
            v->stats.dropped_packets++;
            recoverable(v, err, "the decoder refused the last packet");
        }
        return 0;
    }
    if (err < 0) {
        omma_status s = read_status(err);
        if (s == OMMA_ERR_IO || s == OMMA_ERR_OUT_OF_MEMORY) /* nothing more to read */
            give_up(v, s, "cannot read packet %ld: %s", v->packets,
                    io_libav_why(err, why, sizeof why));
        else if (!recoverable(v, err, "unreadable data")) /* the demuxer resyncs */
            give_up(v, OMMA_ERR_FORMAT, "%d unreadable stretches in a row, the last: %s",
                    v->failures, v->last_failure);
        return 0;
    }
    if (v->pkt->stream_index != v->stream) {
        av_packet_unref(v->pkt);
        return 0;
    }
    /* A packet the demuxer flags (cut short, a gap before it) still goes
     * to the decoder, which conceals what is missing. */
    if (v->pkt->flags & AV_PKT_FLAG_CORRUPT)
        v->stats.corrupt_packets++;
    v->packets++;
    io_recorder_tap_packet(v->opt.record, v->pkt); /* as demuxed, before decoding */
    io_libav_clear_log();
    uint64_t t0 = core_now_ns(), c0 = core_cpu_mark(cpu);
    err = decoder_send(v, v->pkt);
    v->stats.decode_ns += core_now_ns() - t0;
    if (cpu)
        v->stats.decode_cpu_ns += core_thread_cpu_ns() - c0;
    av_packet_unref(v->pkt);
    if (decoder_failed(v, err, st))
        return -1;
    if (err < 0 && err != AVERROR(EAGAIN)) { /* consumed, and refused */
        v->stats.dropped_packets++;
        if (!recoverable(v, err, "the decoder refused a packet"))
            give_up(v, OMMA_ERR_FORMAT, "%d damaged packets in a row, the last: %s", v->failures,
                    v->last_failure);
    }
    return 0;
}

/* Runs the demuxer and decoder until a frame is in v->frame (1), the stream
 * ended (0) or a failure (< 0, the message set; *st its status). */
static int decode_next(io_video *v, omma_status *st)
{
    const char *path = v->path;
    for (;;) {
        io_libav_clear_log();
        /* The thread's CPU clock is a system call (0.2 to 5 us, measured):
         * read only when the CPU is measured. */
        uint64_t t0 = core_now_ns(), c0 = core_cpu_mark(v->opt.cpu);
        int err = decoder_receive(v);
        v->stats.decode_ns += core_now_ns() - t0;
        if (v->opt.cpu)
            v->stats.decode_cpu_ns += core_thread_cpu_ns() - c0;
        if (err == 0) {
            v->failures = 0;
            return 1;
        }
        if (decoder_failed(v, err, st))
            return -1;
        if (err == AVERROR_EOF && v->pending) {
            *st = OMMA_FAIL(v->pending, "%s: frame %ld: %s", path, v->index, v->pending_why);
            return -1;
        }
        if (err == AVERROR_EOF && v->index == 0 && v->last_failure[0]) {
            *st = OMMA_FAIL(OMMA_ERR_FORMAT,
                            "%s: no frame could be decoded (%ld packet(s) "
                            "dropped; the last: %s)",
                            path, v->stats.dropped_packets, v->last_failure);
            return -1;
        }
        if (err == AVERROR_EOF)
            return 0;
        if (err != AVERROR(EAGAIN)) { /* a frame the decoder could not repair */
            v->stats.dropped_packets++;
            if (!recoverable(v, err, "the decoder refused a frame") && !v->draining)
                give_up(v, OMMA_ERR_FORMAT, "%d damaged packets in a row, the last: %s",
                        v->failures, v->last_failure);
            if (v->failures > 4 * IO_VIDEO_MAX_FAILURES) { /* a decoder that never drains */
                *st = OMMA_FAIL(OMMA_ERR_FORMAT, "%s: frame %ld: the decoder keeps failing: %s",
                                path, v->index, v->last_failure);
                return -1;
            }
            continue;
        }
        if (v->draining) { /* the flushed decoder wants no more input */
            *st = OMMA_FAIL(OMMA_ERR_INTERNAL, "%s: frame %ld: the decoder stalled at the end",
                            path, v->index);
            return -1;
        }
        if (feed(v, st) < 0)
            return -1;
    }
}

/* decode_ahead: sends packets until NVDEC has the next picture (or the
 * stream's end), while the frame handed out stays mapped. A failure is
 * kept for the next read, which reports it (the frame handed out is good). */
static void read_ahead(io_video *v)
{
#ifdef OMMA_HAVE_NVDEC
    if (!v->nv || !v->opt.decode_ahead)
        return;
    int packets = 0;
    while (!v->draining && !io_nvdec_ready(v->nv) && packets++ < 4 * IO_VIDEO_MAX_FAILURES) {
        omma_status st = OMMA_OK;
        if (feed(v, &st) < 0) {
            (void)sticky(v, st);
            return;
        }
    }
#else
    (void)v;
#endif
}

omma_status io_video_read(io_video *v, omma_frame *frame, double *timestamp_ms, int *eof)
{
    if (frame)
        memset(frame, 0, sizeof *frame);
    if (timestamp_ms)
        *timestamp_ms = 0.0;
    if (eof)
        *eof = 0;
    if (!v || !frame || !timestamp_ms || !eof)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_video_read: NULL %s",
                         !v              ? "reader"
                         : !frame        ? "frame"
                         : !timestamp_ms ? "timestamp_ms"
                                         : "eof");
    if (atomic_exchange(&v->busy, 1))
        return OMMA_FAIL(OMMA_ERR_BUSY,
                         "%s: the video reader is in use on another thread "
                         "(one reader per thread)",
                         v->path);
    omma_status st = OMMA_OK;
    if (v->error) {
        st = core_fail_text(v->error, v->error_text ? v->error_text : "video reader failed before");
        goto out;
    }
    if (!v->fmt) {
        st = OMMA_FAIL(OMMA_ERR_CLOSED, "%s: disconnected (io_video_reconnect)", v->path);
        goto out;
    }
    if (v->done) {
        *eof = 1;
        goto out;
    }
    st = decoder_give_back(v); /* unmapped once the stream passed here */
    if (st != OMMA_OK) {
        st = sticky(v, OMMA_FAIL(st, "%s: frame %ld: %s", v->path, v->index, omma_last_error()));
        goto out;
    }
    int got = decode_next(v, &st);
    if (got < 0) {
        (void)decoder_give_back(v);
        st = sticky(v, st);
        goto out;
    }
    if (got == 0) {
        v->done = 1;
        *eof = 1;
        goto out;
    }
    st = hand_over(v, frame);
    if (st != OMMA_OK) {
        memset(frame, 0, sizeof *frame);
        (void)decoder_give_back(v);
        st = sticky(v, st);
        goto out;
    }
    int64_t ts = v->frame->best_effort_timestamp;
#ifdef OMMA_HAVE_NVDEC
    if (v->nv)
        ts = v->nv_pts;
#endif
#ifdef OMMA_HAVE_NVJPEG
    if (v->jg)
        ts = v->jg_pts;
#endif
    if (ts != AV_NOPTS_VALUE && v->time_base_ms > 0.0)
        *timestamp_ms = (double)(ts - v->start_pts) * v->time_base_ms;
    else
        *timestamp_ms = 1000.0 * (double)v->index / v->fps;
    v->index++;
    v->stats.frames = v->index;
    read_ahead(v);
out:
    atomic_store(&v->busy, 0);
    return st;
}

omma_status io_video_frame_to_host(io_video *v, const omma_frame *frame, omma_frame *host)
{
    if (!v || !frame || !host)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_video_frame_to_host: NULL argument");
    if (frame->memory != OMMA_MEMORY_DEVICE) {
        *host = *frame;
        return OMMA_OK;
    }
    if (!io_video_on_gpu(v) || frame->format != OMMA_PIXEL_NV12)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: not a frame this reader decoded on the GPU",
                         v->path);
    size_t w = (size_t)frame->width, h = (size_t)frame->height;
    size_t bytes = w * h + 2 * ((w + 1) / 2) * ((h + 1) / 2);
    if (bytes > v->host_bytes) {
        free(v->host);
        v->host_bytes = 0;
        if (!(v->host = malloc(bytes)))
            return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: %zu bytes for a frame", v->path, bytes);
        v->host_bytes = bytes;
    }
#ifdef OMMA_HAVE_NVJPEG
    if (v->jg)
        OMMA_TRY(io_jpeg_gpu_download(v->jg, frame, v->host));
#endif
#ifdef OMMA_HAVE_NVDEC
    if (v->nv)
        OMMA_TRY(io_nvdec_download(v->nv, frame, v->host));
#endif
    memset(host, 0, sizeof *host);
    host->width = frame->width;
    host->height = frame->height;
    host->format = OMMA_PIXEL_NV12;
    host->memory = OMMA_MEMORY_HOST;
    host->planes[0] = v->host;
    host->pitch[0] = (int)w;
    host->planes[1] = v->host + w * h;
    host->pitch[1] = (int)(2 * ((w + 1) / 2));
    return OMMA_OK;
}

omma_status io_video_rewind(io_video *v)
{
    if (!v || !v->done)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_video_rewind: %s",
                         v ? "the video is not at its end" : "NULL reader");
    if (v->error)
        return core_fail_text(v->error,
                              v->error_text ? v->error_text : "video reader failed before");
    char why[512];
    io_libav_clear_log();
    int err = av_seek_frame(v->fmt, v->stream, v->start_pts, AVSEEK_FLAG_BACKWARD);
    if (err < 0)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "%s: cannot seek back to the start: %s", v->path,
                         io_libav_why(err, why, sizeof why));
    OMMA_TRY(decoder_restart(v));
    v->done = 0;
    v->draining = 0;
    v->failures = 0;
    v->pending = OMMA_OK;
    io_recorder_discontinuity(v->opt.record); /* the timestamps start again */
    return OMMA_OK;
}

int64_t io_video_last_pts(const io_video *v)
{
#ifdef OMMA_HAVE_NVJPEG
    if (v && v->jg) /* one packet, one frame: the packet's */
        return v->index > 0 && v->jg_pts != AV_NOPTS_VALUE ? v->jg_pts : INT64_MIN;
#endif
    if (!v || !v->frame || v->frame->best_effort_timestamp == AV_NOPTS_VALUE)
        return INT64_MIN;
    return v->frame->best_effort_timestamp;
}

void io_video_close(io_video *v)
{
    if (!v)
        return;
    (void)decoder_give_back(v); /* the consumer may still read it */
    av_frame_free(&v->frame);
    av_packet_free(&v->pkt);
    avcodec_free_context(&v->dec);
#ifdef OMMA_HAVE_NVDEC
    io_nvdec_close(v->nv);
#endif
#ifdef OMMA_HAVE_NVJPEG
    io_jpeg_gpu_close(v->jg);
#endif
    avformat_close_input(&v->fmt);
    sws_freeContext(v->sws);
    free(v->rgb);
    free(v->host);
    free(v->error_text);
    free(v->path);
    io_net_free(v->net);
    free(v);
}

#else /* no libav */

struct io_video {
    int unused;
};

int io_video_available(void)
{
    return 0;
}

omma_status io_video_open(const char *path, io_video **out)
{
    return io_video_open_with(path, NULL, out);
}

omma_status io_video_open_with(const char *path, const io_video_options *opt, io_video **out)
{
    (void)opt;
    if (out)
        *out = NULL;
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                     "%s: omma was built without FFmpeg (libavformat/libavcodec): video files "
                     "are not supported",
                     path ? path : "(null)");
}

omma_status io_video_open_url(const char *url, const io_video_net *net, const io_video_options *opt,
                              io_video **out)
{
    (void)net;
    (void)opt;
    if (out)
        *out = NULL;
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                     "%s: omma was built without FFmpeg (libavformat/libavcodec): network "
                     "streams are not supported",
                     url ? url : "(null)");
}

omma_status io_video_disconnect(io_video *v)
{
    (void)v;
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "omma was built without FFmpeg");
}

omma_status io_video_reconnect(io_video *v)
{
    (void)v;
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "omma was built without FFmpeg");
}

void io_video_arm(io_video *v)
{
    (void)v;
}

int io_video_timed_out(const io_video *v)
{
    (void)v;
    return 0;
}

int64_t io_video_wallclock_us(const io_video *v)
{
    (void)v;
    return INT64_MIN;
}

int io_video_width(const io_video *v)
{
    (void)v;
    return 0;
}

int io_video_height(const io_video *v)
{
    (void)v;
    return 0;
}

double io_video_fps(const io_video *v)
{
    (void)v;
    return 0.0;
}

long io_video_frame_count(const io_video *v)
{
    (void)v;
    return 0;
}

int io_video_on_gpu(const io_video *v)
{
    (void)v;
    return 0;
}

void *io_video_stream(const io_video *v)
{
    (void)v;
    return NULL;
}

const char *io_video_decoder(const io_video *v)
{
    (void)v;
    return "";
}

void io_video_get_stats(const io_video *v, io_video_stats *stats)
{
    (void)v;
    if (stats)
        memset(stats, 0, sizeof *stats);
}

omma_status io_video_read(io_video *v, omma_frame *frame, double *timestamp_ms, int *eof)
{
    (void)v;
    if (frame)
        memset(frame, 0, sizeof *frame);
    if (timestamp_ms)
        *timestamp_ms = 0.0;
    if (eof)
        *eof = 0;
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                     "omma was built without FFmpeg (libavformat/libavcodec): video files are "
                     "not supported");
}

omma_status io_video_rewind(io_video *v)
{
    (void)v;
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "omma was built without FFmpeg");
}

omma_status io_video_frame_to_host(io_video *v, const omma_frame *frame, omma_frame *host)
{
    (void)v;
    (void)frame;
    (void)host;
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "omma was built without FFmpeg");
}

int64_t io_video_last_pts(const io_video *v)
{
    (void)v;
    return INT64_MIN;
}

void io_video_close(io_video *v)
{
    (void)v;
}

#endif
