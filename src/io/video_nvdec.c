/* GPU decoding for io_video through NVIDIA's video decoder API
 * (video_nvdec.h says how). */
#if defined(OMMA_HAVE_LIBAV) && defined(OMMA_HAVE_NVDEC)

#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include "io/video_nvdec.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libavutil/pixdesc.h>

#include "core/clock.h"
#include "core/cpu_parts.h"
#include "core/error.h"
#include "gpu/check.h"
#include "gpu/memory.h"
#include "gpu/nvcuvid.h"
#include "gpu/stream_pool.h"
#include "io/annexb.h"

/* Pictures the parser may queue for display before they are received: one
 * packet gives at most a few (fields, the end of a stream's reordering). */
#define QUEUE 32
/* Decode surfaces beyond the stream's minimum: room for the pictures queued
 * for display while the next ones decode. */
#define EXTRA_SURFACES 3
/* Picture indices the parser may use (its surfaces are at most this many). */
#define MAX_SURFACES 64
/* How long a picture may stay in NVDEC before the decoder is given up. */
#define DECODE_TIMEOUT_NS (5 * 1000000000ull)

static const AVRational cuvid_clock = {1, 10000000}; /* the parser's timestamps: 10 MHz */

struct io_nvdec {
    omma_device *dev;
    core_cpu_parts *cpu; /* the calls' CPU time (NULL: not measured) */
    uint64_t submit_ns; /* CPU time in cuvidDecodePicture (measured), for parse's share */
    CUstream stream;
    cudaVideoCodec codec;
    const char *codec_name;
    AVRational time_base;
    int to_annexb; /* H.264 / HEVC from MP4 / Matroska: annexb converts them */
    io_annexb annexb;
    uint8_t *header; /* the stream's sequence header (Annex B), sent after each new parser */
    int header_size;
    CUvideoparser parser;
    CUvideodecoder decoder;
    CUVIDEOFORMAT format; /* the decoder's */
    int surfaces;
    unsigned out_w, out_h; /* the output surfaces' size (the display area) */
    CUVIDPARSERDISPINFO queue[QUEUE]; /* decoded (or decoding) pictures in display order */
    uint64_t submitted[MAX_SURFACES]; /* when each surface's picture went to NVDEC */
    /* How long to sleep before the first query of a picture's status, from
     * its submission: adjusted so that about half the first queries find it
     * decoded (one or two queries a frame, each a system call). */
    uint64_t first_wait_ns;
    int qhead, qcount;
    int stamped; /* packets came with timestamps */
    int ended; /* the end of the stream went to the parser */
    int fatal; /* the decoder cannot go on: why says why */
    omma_status fatal_status;
    int bad_pictures; /* pictures cuvidDecodePicture refused since the last receive */
    char why[512];
    CUdeviceptr out; /* the frame handed out (mapped), 0 when none */
    /* Frames given back whose reads on the stream may not have run: a ring,
     * oldest at head. */
    CUdeviceptr pending[IO_NVDEC_PENDING];
    CUevent passed[IO_NVDEC_PENDING];
    int head, count;
};

static const char *cu_name(CUresult r)
{
    const char *s = NULL;
    if (gpu_cu.cuGetErrorName)
        gpu_cu.cuGetErrorName(r, &s);
    return s ? s : "unknown CUDA error";
}

/* Stops the decoder for good with a reason. */
static void fail(io_nvdec *d, omma_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void fail(io_nvdec *d, omma_status st, const char *fmt, ...)
{
    if (d->fatal)
        return;
    d->fatal_status = st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->why, sizeof d->why, fmt, ap);
    va_end(ap);
    d->fatal = 1;
}

static int codec_of(enum AVCodecID id, cudaVideoCodec *c)
{
    switch (id) {
    case AV_CODEC_ID_H264:
        *c = cudaVideoCodec_H264;
        return 1;
    case AV_CODEC_ID_HEVC:
        *c = cudaVideoCodec_HEVC;
        return 1;
    case AV_CODEC_ID_VP9:
        *c = cudaVideoCodec_VP9;
        return 1;
    case AV_CODEC_ID_MJPEG:
        *c = cudaVideoCodec_JPEG;
        return 1;
    default:
        return 0;
    }
}

/* A new parser's sequence header that the decoder was made for. */
static int same_format(const io_nvdec *d, const CUVIDEOFORMAT *f, int w, int h)
{
    const CUVIDEOFORMAT *a = &d->format;
    return f->codec == a->codec && f->coded_width == a->coded_width &&
           f->coded_height == a->coded_height && f->chroma_format == a->chroma_format &&
           f->bit_depth_luma_minus8 == a->bit_depth_luma_minus8 &&
           f->bit_depth_chroma_minus8 == a->bit_depth_chroma_minus8 && (unsigned)w == d->out_w &&
           (unsigned)h == d->out_h && f->min_num_decode_surfaces + EXTRA_SURFACES <= d->surfaces;
}

/* The parser found a sequence header: makes the decoder (once), or keeps
 * it when the format is the one it was made for. Returns the number of
 * decode surfaces, 0 to stop the parser. */
static int CUDAAPI on_sequence(void *user, CUVIDEOFORMAT *fmt)
{
    io_nvdec *d = user;
    int w = fmt->display_area.right - fmt->display_area.left;
    int h = fmt->display_area.bottom - fmt->display_area.top;
    if (d->decoder) {
        if (same_format(d, fmt, w, h))
            return d->surfaces;
        fail(d, OMMA_ERR_FORMAT,
             "the %s stream changed mid-stream from %ux%u to %ux%u (coded), which this decoder "
             "does not follow",
             d->codec_name, d->format.coded_width, d->format.coded_height, fmt->coded_width,
             fmt->coded_height);
        return 0;
    }
    if (fmt->chroma_format != cudaVideoChromaFormat_420 || fmt->bit_depth_luma_minus8 ||
        fmt->bit_depth_chroma_minus8) {
        fail(d, OMMA_ERR_UNSUPPORTED, "the %s stream is %d-bit %s, not 8-bit 4:2:0", d->codec_name,
             8 + fmt->bit_depth_luma_minus8,
             fmt->chroma_format == cudaVideoChromaFormat_Monochrome ? "monochrome"
             : fmt->chroma_format == cudaVideoChromaFormat_422      ? "4:2:2"
             : fmt->chroma_format == cudaVideoChromaFormat_444      ? "4:4:4"
                                                                    : "4:2:0");
        return 0;
    }
    if (w <= 0 || h <= 0 || w > 8192 || h > 8192) {
        fail(d, OMMA_ERR_FORMAT, "the %s stream's display area is %dx%d", d->codec_name, w, h);
        return 0;
    }
    int surfaces = fmt->min_num_decode_surfaces + EXTRA_SURFACES;
    if (surfaces > MAX_SURFACES) {
        fail(d, OMMA_ERR_UNSUPPORTED, "the %s stream needs %d decode surfaces (at most %d)",
             d->codec_name, surfaces, MAX_SURFACES);
        return 0;
    }
    CUVIDDECODECREATEINFO ci;
    memset(&ci, 0, sizeof ci);
    ci.ulWidth = fmt->coded_width;
    ci.ulHeight = fmt->coded_height;
    ci.ulMaxWidth = fmt->coded_width;
    ci.ulMaxHeight = fmt->coded_height;
    ci.ulNumDecodeSurfaces = (tcu_ulong)surfaces;
    ci.CodecType = fmt->codec;
    ci.ChromaFormat = fmt->chroma_format;
    ci.ulCreationFlags = cudaVideoCreate_PreferCUVID;
    ci.display_area.left = (short)fmt->display_area.left;
    ci.display_area.top = (short)fmt->display_area.top;
    ci.display_area.right = (short)fmt->display_area.right;
    ci.display_area.bottom = (short)fmt->display_area.bottom;
    ci.OutputFormat = cudaVideoSurfaceFormat_NV12;
    ci.DeinterlaceMode = fmt->progressive_sequence ? cudaVideoDeinterlaceMode_Weave
                                                   : cudaVideoDeinterlaceMode_Adaptive;
    ci.ulTargetWidth = (tcu_ulong)w;
    ci.ulTargetHeight = (tcu_ulong)h;
    ci.ulNumOutputSurfaces = IO_NVDEC_PENDING + 1;
    CUresult r = gpu_cuvid.cuvidCreateDecoder(&d->decoder, &ci);
    if (r != CUDA_SUCCESS) {
        d->decoder = NULL;
        fail(d, OMMA_ERR_UNSUPPORTED, "NVDEC refused to make a %s decoder for %ux%u (coded): %s",
             d->codec_name, fmt->coded_width, fmt->coded_height, cu_name(r));
        return 0;
    }
    d->format = *fmt;
    d->surfaces = surfaces;
    d->out_w = (unsigned)w;
    d->out_h = (unsigned)h;
    return surfaces;
}

/* The parser has a picture's parameters: NVDEC decodes it (asynchronously). */
static int CUDAAPI on_decode(void *user, CUVIDPICPARAMS *pic)
{
    io_nvdec *d = user;
    if (!d->decoder) {
        fail(d, OMMA_ERR_FORMAT, "the %s stream has a picture before its sequence header",
             d->codec_name);
        return 0;
    }
    if (pic->CurrPicIdx < 0 || pic->CurrPicIdx >= MAX_SURFACES) {
        fail(d, OMMA_ERR_INTERNAL, "the parser gave picture index %d", pic->CurrPicIdx);
        return 0;
    }
    d->submitted[pic->CurrPicIdx] = core_now_ns();
    uint64_t mark = core_cpu_mark(d->cpu);
    CUresult r = gpu_cuvid.cuvidDecodePicture(d->decoder, pic);
    if (d->cpu) {
        uint64_t now = core_thread_cpu_ns(), ns = now > mark ? now - mark : 0;
        d->submit_ns += ns;
        core_cpu_add(d->cpu, CORE_CPU_SUBMIT, ns, 1);
    }
    if (r != CUDA_SUCCESS) {
        d->bad_pictures++;
        snprintf(d->why, sizeof d->why, "NVDEC refused a picture: %s", cu_name(r));
    }
    return 1;
}

/* A picture is next in display order (NULL: the end of the stream). */
static int CUDAAPI on_display(void *user, CUVIDPARSERDISPINFO *di)
{
    io_nvdec *d = user;
    if (!di)
        return 1;
    if (d->qcount == QUEUE) { /* cannot happen with one packet at a time; never overrun */
        fail(d, OMMA_ERR_INTERNAL, "more than %d pictures became ready at once", QUEUE);
        return 0;
    }
    d->queue[(d->qhead + d->qcount++) % QUEUE] = *di;
    return 1;
}

static omma_status make_parser(io_nvdec *d)
{
    CUVIDPARSERPARAMS pp;
    memset(&pp, 0, sizeof pp);
    pp.CodecType = d->codec;
    pp.ulMaxNumDecodeSurfaces = d->surfaces > 0 ? (unsigned)d->surfaces : 1;
    pp.ulClockRate = 0; /* 10 MHz */
    pp.ulErrorThreshold = 100; /* damaged pictures are decoded and concealed, like the CPU's */
    pp.ulMaxDisplayDelay = 0; /* a camera's frame out as soon as it is decoded */
    pp.pUserData = d;
    pp.pfnSequenceCallback = on_sequence;
    pp.pfnDecodePicture = on_decode;
    pp.pfnDisplayPicture = on_display;
    CUresult r = gpu_cuvid.cuvidCreateVideoParser(&d->parser, &pp);
    if (r != CUDA_SUCCESS) {
        d->parser = NULL;
        return OMMA_FAIL(OMMA_ERR_CUDA, "NVDEC: cannot make a %s parser: %s", d->codec_name,
                         cu_name(r));
    }
    return OMMA_OK;
}

/* One buffer to the parser; its callbacks run before this returns. */
static int parse(io_nvdec *d, const uint8_t *data, int size, int64_t pts, unsigned flags)
{
    CUVIDSOURCEDATAPACKET p;
    memset(&p, 0, sizeof p);
    p.flags = flags;
    p.payload = data;
    p.payload_size = (tcu_ulong)size;
    if (pts != AV_NOPTS_VALUE) {
        d->stamped = 1;
        p.flags |= CUVID_PKT_TIMESTAMP;
        p.timestamp = av_rescale_q(pts, d->time_base, cuvid_clock);
    }
    if (size > 0)
        gpu_count_h2d(d->dev, (size_t)size);
    uint64_t mark = core_cpu_mark(d->cpu), submitted = d->submit_ns;
    CUresult r = gpu_cuvid.cuvidParseVideoData(d->parser, &p);
    if (d->cpu) { /* less the submissions its callbacks made (counted apart) */
        uint64_t now = core_thread_cpu_ns(), in = d->submit_ns - submitted;
        core_cpu_add(d->cpu, CORE_CPU_PARSE, now > mark + in ? now - mark - in : 0, 1);
    }
    if (d->fatal)
        return AVERROR_EXTERNAL;
    if (r != CUDA_SUCCESS) {
        snprintf(d->why, sizeof d->why, "NVIDIA's %s parser refused the data: %s", d->codec_name,
                 cu_name(r));
        return AVERROR_INVALIDDATA;
    }
    return 0;
}

/* Sends the stream's sequence header to a new parser. */
static int send_header(io_nvdec *d)
{
    return d->header_size > 0 ? parse(d, d->header, d->header_size, AV_NOPTS_VALUE, 0) : 0;
}

static omma_status check_caps(io_nvdec *d, const AVCodecParameters *par)
{
    CUVIDDECODECAPS caps;
    memset(&caps, 0, sizeof caps);
    caps.eCodecType = d->codec;
    caps.eChromaFormat = cudaVideoChromaFormat_420;
    caps.nBitDepthMinus8 = 0;
    CUresult r = gpu_cuvid.cuvidGetDecoderCaps(&caps);
    if (r != CUDA_SUCCESS)
        return OMMA_FAIL(OMMA_ERR_CUDA, "NVDEC: cannot ask the decoder's capabilities: %s",
                         cu_name(r));
    if (!caps.bIsSupported)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "this GPU's NVDEC does not decode 8-bit 4:2:0 %s",
                         d->codec_name);
    unsigned w = (unsigned)par->width, h = (unsigned)par->height;
    unsigned long mbs = (unsigned long)((w + 15) / 16) * ((h + 15) / 16);
    if (w > caps.nMaxWidth || h > caps.nMaxHeight || w < caps.nMinWidth || h < caps.nMinHeight ||
        (caps.nMaxMBCount && mbs > caps.nMaxMBCount))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "this GPU's NVDEC decodes %s from %ux%u to %ux%u (%u macroblocks), not "
                         "%ux%u",
                         d->codec_name, caps.nMinWidth, caps.nMinHeight, caps.nMaxWidth,
                         caps.nMaxHeight, caps.nMaxMBCount, w, h);
    return OMMA_OK;
}

/* H.264 and HEVC as MP4 and Matroska store them (avcC / hvcC extradata,
 * length-prefixed units) are converted to Annex B packet by packet
 * (annexb.h; FFmpeg's mp4toannexb filters did it before, with an
 * allocation and several packet moves a frame); the sequence header kept
 * for new parsers is the record's parameter sets in Annex B. Extradata
 * already in Annex B is that header as it is. */
static omma_status set_up_bitstream(io_nvdec *d, const AVCodecParameters *par)
{
    const uint8_t *header = par->extradata;
    size_t size = par->extradata_size > 0 ? (size_t)par->extradata_size : 0;
    if (size > 0 && par->extradata[0] == 1 &&
        (par->codec_id == AV_CODEC_ID_H264 || par->codec_id == AV_CODEC_ID_HEVC)) {
        omma_status st =
            io_annexb_init(&d->annexb, par->codec_id == AV_CODEC_ID_HEVC, par->extradata, size);
        if (st != OMMA_OK)
            return OMMA_FAIL(st, "NVDEC: the %s stream's parameters: %s", d->codec_name,
                             omma_last_error());
        d->to_annexb = 1;
        header = d->annexb.header;
        size = d->annexb.header_size;
    } else if (size > 0 && par->extradata[0] == 1) {
        size = 0; /* a record NVIDIA's parser does not read */
    }
    if (size > 0 && size <= INT32_MAX) {
        if (!(d->header = malloc(size)))
            return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "NVDEC: the sequence header");
        memcpy(d->header, header, size);
        d->header_size = (int)size;
    }
    return OMMA_OK;
}

static void release(io_nvdec *d)
{
    if (d->stream)
        (void)gpu_cu.cuStreamSynchronize(d->stream);
    if (d->decoder) {
        if (d->out)
            (void)gpu_cuvid.cuvidUnmapVideoFrame(d->decoder, d->out);
        for (int i = 0; i < d->count; i++)
            (void)gpu_cuvid.cuvidUnmapVideoFrame(d->decoder,
                                                 d->pending[(d->head + i) % IO_NVDEC_PENDING]);
    }
    d->out = 0;
    d->count = 0;
    if (d->parser)
        (void)gpu_cuvid.cuvidDestroyVideoParser(d->parser);
    if (d->decoder)
        (void)gpu_cuvid.cuvidDestroyDecoder(d->decoder);
    for (int i = 0; i < IO_NVDEC_PENDING; i++)
        if (d->passed[i])
            gpu_event_release(d->dev, d->passed[i]);
    if (d->stream)
        gpu_stream_release(d->dev, d->stream);
}

void io_nvdec_close(io_nvdec *d)
{
    if (!d)
        return;
    omma_scope scope;
    if (omma_device_enter(d->dev, &scope) == OMMA_OK) {
        release(d);
        (void)omma_device_leave(&scope);
    }
    io_annexb_free(&d->annexb);
    free(d->header);
    free(d);
}

omma_status io_nvdec_open(omma_device *dev, const AVCodecParameters *par, AVRational time_base,
                          core_cpu_parts *cpu, io_nvdec **out)
{
    *out = NULL;
    if (!dev)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "NVDEC: no device");
    cudaVideoCodec codec;
    const char *name = avcodec_get_name(par->codec_id);
    if (!codec_of(par->codec_id, &codec))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "omma does not decode %s on NVDEC", name);
    const AVPixFmtDescriptor *pd = av_pix_fmt_desc_get((enum AVPixelFormat)par->format);
    if (pd && (pd->comp[0].depth != 8 || pd->log2_chroma_w != 1 || pd->log2_chroma_h != 1))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "its pixel format %s is not 8-bit 4:2:0 (NVDEC would give %s surfaces, "
                         "which omma's pipeline does not read)",
                         pd->name, pd->comp[0].depth > 8 ? "P016" : "YUV444/4:2:2");
    OMMA_TRY(gpu_nvcuvid_load());
    io_nvdec *d = calloc(1, sizeof *d);
    if (!d)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "NVDEC: decoder state");
    d->dev = dev;
    d->cpu = cpu;
    d->codec = codec;
    d->codec_name = name;
    d->first_wait_ns = 1000000; /* 1 ms: a 1080p picture on an idle engine, about */
    d->time_base = time_base.num > 0 && time_base.den > 0 ? time_base : (AVRational){1, 90000};
    omma_scope scope;
    omma_status st = omma_device_enter(dev, &scope);
    if (st != OMMA_OK) {
        free(d);
        return st;
    }
    st = check_caps(d, par);
    if (st == OMMA_OK)
        st = gpu_stream_acquire(dev, GPU_PRIORITY_NORMAL, &d->stream);
    for (int i = 0; i < IO_NVDEC_PENDING && st == OMMA_OK; i++)
        st = gpu_event_acquire(dev, GPU_EVENT_SYNC, &d->passed[i]);
    if (st == OMMA_OK)
        st = set_up_bitstream(d, par);
    if (st == OMMA_OK)
        st = make_parser(d);
    if (st == OMMA_OK && send_header(d) == AVERROR_EXTERNAL)
        st = OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "NVDEC: %s", d->why);
    omma_status left = omma_device_leave(&scope);
    if (st == OMMA_OK)
        st = left;
    if (st != OMMA_OK) {
        io_nvdec_close(d);
        return st;
    }
    *out = d;
    return OMMA_OK;
}

/* Sends one packet (already in Annex B when it needs to be) to the parser. */
static int send_one(io_nvdec *d, const AVPacket *pkt)
{
    int64_t pts = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
    return parse(d, pkt->data, pkt->size, pts, 0);
}

int io_nvdec_send(io_nvdec *d, const AVPacket *pkt)
{
    if (d->fatal)
        return AVERROR_EXTERNAL;
    if (d->qcount)
        return AVERROR(EAGAIN);
    if (d->ended)
        return AVERROR_EOF;
    omma_scope scope;
    if (omma_device_enter(d->dev, &scope) != OMMA_OK) {
        fail(d, OMMA_ERR_CUDA, "%s", omma_last_error());
        return AVERROR_EXTERNAL;
    }
    int err = 0;
    if (pkt && d->to_annexb) {
        uint64_t mark = core_cpu_mark(d->cpu);
        const uint8_t *data = NULL;
        size_t size = 0;
        omma_status st = io_annexb_convert(&d->annexb, pkt->data,
                                           pkt->size > 0 ? (size_t)pkt->size : 0, &data, &size);
        core_cpu_lap(d->cpu, CORE_CPU_ANNEXB, &mark);
        if (st == OMMA_OK && size > INT32_MAX)
            st = OMMA_FAIL(OMMA_ERR_FORMAT, "a packet of %zu bytes", size);
        if (st == OMMA_OK) {
            int64_t pts = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
            err = size > 0 ? parse(d, data, (int)size, pts, 0) : 0;
        } else {
            snprintf(d->why, sizeof d->why, "the %s packet is damaged: %s", d->codec_name,
                     omma_last_error());
            err = st == OMMA_ERR_OUT_OF_MEMORY ? AVERROR(ENOMEM) : AVERROR_INVALIDDATA;
        }
    } else if (pkt) {
        err = send_one(d, pkt);
    }
    if (!pkt) { /* the end: the pictures the parser holds come out */
        int e = parse(d, NULL, 0, AV_NOPTS_VALUE, CUVID_PKT_ENDOFSTREAM);
        d->ended = 1;
        if (e < 0 && err >= 0)
            err = e;
    }
    (void)omma_device_leave(&scope);
    if (err == AVERROR(EAGAIN))
        err = 0;
    return d->fatal ? AVERROR_EXTERNAL : err;
}

static void sleep_ns(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000u), (long)(ns % 1000000000u)};
    nanosleep(&ts, NULL);
}

/* Waits, sleeping, until NVDEC is done with the picture: first until the
 * time its pictures usually take (first_wait_ns from submission), then
 * queries with growing sleeps. Returns its status, or Invalid when the
 * driver does not report one (the map call then waits). */
static cuvidDecodeStatus wait_decoded(io_nvdec *d, int index)
{
    uint64_t submitted = index >= 0 && index < MAX_SURFACES ? d->submitted[index] : 0;
    uint64_t now = core_now_ns();
    if (!submitted || submitted > now)
        submitted = now;
    uint64_t mark = core_cpu_mark(d->cpu);
    if (now - submitted < d->first_wait_ns) {
        sleep_ns(d->first_wait_ns - (now - submitted));
        core_cpu_lap(d->cpu, CORE_CPU_DECODE_WAIT, &mark);
    }
    uint64_t nap = 50000;
    for (int query = 0;; query++) {
        CUVIDGETDECODESTATUS s;
        memset(&s, 0, sizeof s);
        CUresult r = gpu_cuvid.cuvidGetDecodeStatus(d->decoder, index, &s);
        core_cpu_lap(d->cpu, CORE_CPU_STATUS, &mark);
        if (r != CUDA_SUCCESS)
            return cuvidDecodeStatus_Invalid;
        if (query == 0) { /* half the first queries should find the picture decoded */
            if (s.decodeStatus != cuvidDecodeStatus_InProgress)
                d->first_wait_ns -= d->first_wait_ns / 16;
            else if (d->first_wait_ns < 20000000)
                d->first_wait_ns += d->first_wait_ns / 16 + 20000;
        }
        if (s.decodeStatus != cuvidDecodeStatus_InProgress)
            return s.decodeStatus;
        now = core_now_ns();
        if (now - submitted > DECODE_TIMEOUT_NS) {
            fail(d, OMMA_ERR_CUDA, "NVDEC has not finished a %s picture in %llu s", d->codec_name,
                 (unsigned long long)(DECODE_TIMEOUT_NS / 1000000000ull));
            return cuvidDecodeStatus_Error;
        }
        mark = core_cpu_mark(d->cpu);
        sleep_ns(nap);
        core_cpu_lap(d->cpu, CORE_CPU_DECODE_WAIT, &mark);
        if (nap < 1000000)
            nap *= 2;
    }
}

int io_nvdec_receive(io_nvdec *d, omma_frame *f, int64_t *pts, int *damaged)
{
    memset(f, 0, sizeof *f);
    *pts = AV_NOPTS_VALUE;
    *damaged = 0;
    if (d->fatal)
        return AVERROR_EXTERNAL;
    if (d->out) {
        fail(d, OMMA_ERR_INTERNAL, "a frame was received before the last one was given back");
        return AVERROR_EXTERNAL;
    }
    if (!d->qcount) {
        if (d->bad_pictures) { /* pictures NVDEC refused give no frame */
            d->bad_pictures = 0;
            return AVERROR_INVALIDDATA;
        }
        return d->ended ? AVERROR_EOF : AVERROR(EAGAIN);
    }
    CUVIDPARSERDISPINFO di = d->queue[d->qhead];
    d->qhead = (d->qhead + 1) % QUEUE;
    d->qcount--;
    omma_scope scope;
    if (omma_device_enter(d->dev, &scope) != OMMA_OK) {
        fail(d, OMMA_ERR_CUDA, "%s", omma_last_error());
        return AVERROR_EXTERNAL;
    }
    int err = 0;
    cuvidDecodeStatus status = wait_decoded(d, di.picture_index);
    if (d->fatal) {
        err = AVERROR_EXTERNAL;
    } else if (status == cuvidDecodeStatus_Error) {
        snprintf(d->why, sizeof d->why, "NVDEC could not decode a %s picture", d->codec_name);
        err = AVERROR_INVALIDDATA;
    } else {
        CUVIDPROCPARAMS pp;
        memset(&pp, 0, sizeof pp);
        pp.progressive_frame = di.progressive_frame;
        pp.top_field_first = di.top_field_first;
        pp.second_field = di.repeat_first_field + 1;
        pp.unpaired_field = di.repeat_first_field < 0;
        pp.output_stream = d->stream;
        unsigned long long ptr = 0;
        unsigned int pitch = 0;
        uint64_t mark = core_cpu_mark(d->cpu);
        CUresult r = gpu_cuvid.cuvidMapVideoFrame(d->decoder, di.picture_index, &ptr, &pitch, &pp);
        core_cpu_lap(d->cpu, CORE_CPU_MAP, &mark);
        if (r != CUDA_SUCCESS) {
            fail(d, OMMA_ERR_CUDA, "NVDEC: cannot map a decoded %s picture: %s", d->codec_name,
                 cu_name(r));
            err = AVERROR_EXTERNAL;
        } else {
            d->out = (CUdeviceptr)ptr;
            f->width = (int)d->out_w;
            f->height = (int)d->out_h;
            f->format = OMMA_PIXEL_NV12;
            f->memory = OMMA_MEMORY_DEVICE;
            f->planes[0] = (void *)(uintptr_t)ptr;
            /* The chroma follows the luma's rows, their count rounded up to even. */
            f->planes[1] =
                (void *)(uintptr_t)(ptr + (unsigned long long)pitch * ((d->out_h + 1) & ~1u));
            f->pitch[0] = f->pitch[1] = (int)pitch;
            *damaged = status == cuvidDecodeStatus_Error_Concealed;
            if (d->stamped)
                *pts = av_rescale_q(di.timestamp, cuvid_clock, d->time_base);
        }
    }
    (void)omma_device_leave(&scope);
    return err;
}

omma_status io_nvdec_give_back(io_nvdec *d)
{
    if (!d->out)
        return OMMA_OK;
    uint64_t mark = core_cpu_mark(d->cpu);
    int unmapped = 0;
    omma_scope scope;
    OMMA_TRY(omma_device_enter(d->dev, &scope));
    omma_status st = OMMA_OK;
    /* Unmap what the stream has passed; wait for the oldest only when the
     * queue is full (the GPU is far behind). */
    while (d->count > 0) {
        int i = d->head;
        CUresult r = gpu_cu.cuEventQuery(d->passed[i]);
        if (r == CUDA_ERROR_NOT_READY && d->count < IO_NVDEC_PENDING)
            break;
        if (r == CUDA_ERROR_NOT_READY)
            r = gpu_cu.cuEventSynchronize(d->passed[i]);
        if (r != CUDA_SUCCESS && st == OMMA_OK)
            st = OMMA_CK(r);
        CUresult u = gpu_cuvid.cuvidUnmapVideoFrame(d->decoder, d->pending[i]);
        if (u != CUDA_SUCCESS && st == OMMA_OK)
            st = OMMA_FAIL(OMMA_ERR_CUDA, "NVDEC: cannot unmap a frame: %s", cu_name(u));
        d->head = (d->head + 1) % IO_NVDEC_PENDING;
        d->count--;
        unmapped++;
    }
    int slot = (d->head + d->count) % IO_NVDEC_PENDING;
    if (st == OMMA_OK)
        st = OMMA_CK(gpu_cu.cuEventRecord(d->passed[slot], d->stream));
    if (st == OMMA_OK) {
        d->pending[slot] = d->out;
        d->count++;
    } else { /* nothing to order the unmapping after: wait for the stream */
        (void)gpu_cu.cuStreamSynchronize(d->stream);
        (void)gpu_cuvid.cuvidUnmapVideoFrame(d->decoder, d->out);
    }
    d->out = 0;
    omma_status left = omma_device_leave(&scope);
    if (d->cpu)
        core_cpu_add(d->cpu, CORE_CPU_UNMAP, core_thread_cpu_ns() - mark, (uint64_t)unmapped);
    return st != OMMA_OK ? st : left;
}

int io_nvdec_ready(const io_nvdec *d)
{
    return d->qcount > 0;
}

omma_status io_nvdec_restart(io_nvdec *d, AVRational time_base)
{
    if (time_base.num > 0 && time_base.den > 0)
        d->time_base = time_base;
    omma_scope scope;
    OMMA_TRY(omma_device_enter(d->dev, &scope));
    if (d->parser)
        (void)gpu_cuvid.cuvidDestroyVideoParser(d->parser);
    d->parser = NULL;
    d->qhead = d->qcount = 0;
    d->ended = 0;
    d->bad_pictures = 0;
    omma_status st = d->fatal ? OMMA_FAIL(d->fatal_status, "NVDEC: %s", d->why) : make_parser(d);
    if (st == OMMA_OK && send_header(d) == AVERROR_EXTERNAL)
        st = OMMA_FAIL(d->fatal_status, "NVDEC: %s", d->why);
    omma_status left = omma_device_leave(&scope);
    return st != OMMA_OK ? st : left;
}

omma_status io_nvdec_status(const io_nvdec *d)
{
    return d->fatal ? d->fatal_status : OMMA_ERR_FORMAT;
}

const char *io_nvdec_why(const io_nvdec *d)
{
    return d->why[0] ? d->why : "no reason given";
}

void *io_nvdec_stream(const io_nvdec *d)
{
    return d ? (void *)d->stream : NULL;
}

omma_status io_nvdec_wait(io_nvdec *d)
{
    return gpu_stream_wait(d->dev, d->stream);
}

omma_status io_nvdec_download(io_nvdec *d, const omma_frame *f, uint8_t *dst)
{
    return gpu_download_nv12(d->dev, f, dst, d->stream);
}

#endif
