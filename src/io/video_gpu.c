/* GPU decoding for io_video: FFmpeg's nvdec hwaccel on omma's primary
 * context (video_gpu.h says how). */
#ifdef OMMA_HAVE_LIBAV

#include "io/video_gpu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libavutil/hwcontext.h>
#include <libavutil/hwcontext_cuda.h>
#include <libavutil/pixdesc.h>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/memory.h"
#include "gpu/stream_pool.h"
#include "io/video_libav.h"

struct io_video_gpu {
    omma_device *dev;
    CUstream stream;
    int required;
    int refused;
    char why[512];
    /* Frames given back whose reads on the stream may not have run: a ring,
     * oldest at head (allocated at attach, empty when not pending). */
    AVFrame *pending[IO_GPU_PENDING];
    CUevent passed[IO_GPU_PENDING];
    int head, count;
};

int io_gpu_can_decode(const AVCodec *codec, const AVCodecParameters *par, char *why, size_t size)
{
    int hw = 0;
    for (int i = 0;; i++) {
        const AVCodecHWConfig *c = avcodec_get_hw_config(codec, i);
        if (!c)
            break;
        if (c->device_type == AV_HWDEVICE_TYPE_CUDA && c->pix_fmt == AV_PIX_FMT_CUDA &&
            (c->methods & AV_CODEC_HW_CONFIG_METHOD_HW_DEVICE_CTX))
            hw = 1;
    }
    if (!hw) {
        snprintf(why, size, "this FFmpeg has no NVDEC decoding for %s", codec->name);
        return 0;
    }
    /* NVDEC gives 8-bit 4:2:0 as NV12, which omma's pipeline reads; deeper
     * or wider formats would come as P016 / YUV444 surfaces. */
    const AVPixFmtDescriptor *d = av_pix_fmt_desc_get((enum AVPixelFormat)par->format);
    if (d && (d->comp[0].depth != 8 || d->log2_chroma_w != 1 || d->log2_chroma_h != 1)) {
        snprintf(why, size,
                 "its pixel format %s is not 8-bit 4:2:0 (NVDEC would give %s surfaces, which "
                 "omma's pipeline does not read)",
                 d->name, d->comp[0].depth > 8 ? "P016" : "YUV444/4:2:2");
        return 0;
    }
    return 1;
}

/* FFmpeg's pixel format choice: the CUDA surfaces when offered; when they
 * are not (the hwaccel failed to start: NVDEC's caps, no driver), the
 * software format, or none when GPU decoding is required. */
static enum AVPixelFormat pick_format(AVCodecContext *dec, const enum AVPixelFormat *fmts)
{
    io_video_gpu *g = dec->opaque;
    for (const enum AVPixelFormat *p = fmts; *p != AV_PIX_FMT_NONE; p++)
        if (*p == AV_PIX_FMT_CUDA)
            return AV_PIX_FMT_CUDA;
    if (!g->refused) {
        char last[300];
        io_libav_why(AVERROR(ENOSYS), last, sizeof last);
        const char *sw = av_get_pix_fmt_name(dec->sw_pix_fmt);
        snprintf(g->why, sizeof g->why, "NVDEC refused the %s stream (%dx%d %s): %s",
                 dec->codec ? dec->codec->name : "?", dec->coded_width, dec->coded_height,
                 sw ? sw : "?", last);
        g->refused = 1;
    }
    if (g->required)
        return AV_PIX_FMT_NONE;
    for (const enum AVPixelFormat *p = fmts; *p != AV_PIX_FMT_NONE; p++) {
        const AVPixFmtDescriptor *d = av_pix_fmt_desc_get(*p);
        if (d && !(d->flags & AV_PIX_FMT_FLAG_HWACCEL))
            return *p;
    }
    return AV_PIX_FMT_NONE;
}

static void free_gpu(io_video_gpu *g)
{
    omma_scope scope;
    int entered = omma_device_enter(g->dev, &scope) == OMMA_OK;
    if (g->stream)
        (void)gpu_cu.cuStreamSynchronize(g->stream);
    for (int i = 0; i < IO_GPU_PENDING; i++)
        av_frame_free(&g->pending[i]); /* unmaps a pending frame */
    for (int i = 0; i < IO_GPU_PENDING; i++)
        if (g->passed[i])
            gpu_event_release(g->dev, g->passed[i]);
    if (g->stream)
        gpu_stream_release(g->dev, g->stream);
    if (entered)
        (void)omma_device_leave(&scope);
    free(g);
}

omma_status io_gpu_attach(AVCodecContext *dec, omma_device *dev, int required, io_video_gpu **out)
{
    *out = NULL;
    if (!dev)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "GPU decoding: no device");
    io_video_gpu *g = calloc(1, sizeof *g);
    if (!g)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "GPU decoding: state");
    g->dev = dev;
    g->required = required;
    omma_status st = gpu_stream_acquire(dev, GPU_PRIORITY_NORMAL, &g->stream);
    for (int i = 0; i < IO_GPU_PENDING && st == OMMA_OK; i++) {
        st = gpu_event_acquire(dev, GPU_EVENT_SYNC, &g->passed[i]);
        if (st == OMMA_OK && !(g->pending[i] = av_frame_alloc()))
            st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "GPU decoding: frame references");
    }
    AVBufferRef *hw = NULL;
    if (st == OMMA_OK && !(hw = av_hwdevice_ctx_alloc(AV_HWDEVICE_TYPE_CUDA)))
        st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "GPU decoding: FFmpeg's CUDA device context");
    if (st == OMMA_OK) {
        /* Over omma's context and stream: FFmpeg creates no context. */
        AVCUDADeviceContext *cu = ((AVHWDeviceContext *)hw->data)->hwctx;
        cu->cuda_ctx = (CUcontext)omma_device_context(dev);
        cu->stream = g->stream;
        io_libav_clear_log();
        int err = av_hwdevice_ctx_init(hw);
        char why[512];
        if (err < 0)
            st = OMMA_FAIL(err == AVERROR(ENOMEM) ? OMMA_ERR_OUT_OF_MEMORY : OMMA_ERR_UNSUPPORTED,
                           "GPU decoding: FFmpeg's CUDA device context: %s",
                           io_libav_why(err, why, sizeof why));
    }
    if (st != OMMA_OK) {
        av_buffer_unref(&hw);
        free_gpu(g);
        return st;
    }
    dec->hw_device_ctx = hw;
    dec->opaque = g;
    dec->get_format = pick_format;
    dec->extra_hw_frames = IO_GPU_PENDING;
    dec->thread_count = 1; /* the engine decodes; threads would only add surfaces */
    *out = g;
    return OMMA_OK;
}

int io_gpu_refused(const io_video_gpu *g, char *why, size_t size)
{
    if (!g || !g->refused)
        return 0;
    snprintf(why, size, "%s", g->why);
    return 1;
}

void io_gpu_count_packet(io_video_gpu *g, size_t bytes)
{
    if (g && !g->refused)
        gpu_count_h2d(g->dev, bytes);
}

omma_status io_gpu_hand_over(io_video_gpu *g, const AVFrame *fr, omma_frame *f)
{
    (void)g;
    const AVHWFramesContext *fc =
        fr->hw_frames_ctx ? (const AVHWFramesContext *)fr->hw_frames_ctx->data : NULL;
    if (!fc || fc->sw_format != AV_PIX_FMT_NV12) {
        const char *name = fc ? av_get_pix_fmt_name(fc->sw_format) : NULL;
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "NVDEC gave %s surfaces, not NV12",
                         name ? name : "unknown");
    }
    memset(f, 0, sizeof *f);
    f->width = fr->width;
    f->height = fr->height;
    f->format = OMMA_PIXEL_NV12;
    f->memory = OMMA_MEMORY_DEVICE;
    for (int i = 0; i < 2; i++) {
        f->planes[i] = fr->data[i];
        f->pitch[i] = fr->linesize[i];
    }
    return OMMA_OK;
}

omma_status io_gpu_give_back(io_video_gpu *g, AVFrame *fr)
{
    omma_scope scope;
    omma_status st = omma_device_enter(g->dev, &scope);
    if (st != OMMA_OK) {
        av_frame_unref(fr);
        return st;
    }
    /* Unmap what the stream has passed; make room by waiting for the
     * oldest only when the queue is full (the GPU is far behind). */
    while (g->count > 0) {
        int i = g->head;
        CUresult r = gpu_cu.cuEventQuery(g->passed[i]);
        if (r == CUDA_ERROR_NOT_READY && g->count < IO_GPU_PENDING)
            break;
        if (r == CUDA_ERROR_NOT_READY)
            r = gpu_cu.cuEventSynchronize(g->passed[i]);
        if (r != CUDA_SUCCESS && st == OMMA_OK)
            st = OMMA_CK(r);
        av_frame_unref(g->pending[i]);
        g->head = (g->head + 1) % IO_GPU_PENDING;
        g->count--;
    }
    int slot = (g->head + g->count) % IO_GPU_PENDING;
    if (st == OMMA_OK)
        st = OMMA_CK(gpu_cu.cuEventRecord(g->passed[slot], g->stream));
    if (st == OMMA_OK) {
        av_frame_move_ref(g->pending[slot], fr);
        g->count++;
    } else {
        /* Nothing to order the unmapping after: wait for the stream. */
        (void)gpu_cu.cuStreamSynchronize(g->stream);
        av_frame_unref(fr);
    }
    omma_status left = omma_device_leave(&scope);
    return st != OMMA_OK ? st : left;
}

omma_status io_gpu_wait(io_video_gpu *g)
{
    omma_scope scope;
    OMMA_TRY(omma_device_enter(g->dev, &scope));
    omma_status st = OMMA_CK(gpu_cu.cuStreamSynchronize(g->stream));
    omma_status left = omma_device_leave(&scope);
    return st != OMMA_OK ? st : left;
}

omma_status io_gpu_download(io_video_gpu *g, const omma_frame *f, uint8_t *dst)
{
    omma_scope scope;
    OMMA_TRY(omma_device_enter(g->dev, &scope));
    omma_status st = OMMA_OK;
    size_t w = (size_t)f->width, h = (size_t)f->height, ch = (h + 1) / 2;
    for (int p = 0; p < 2 && st == OMMA_OK; p++) {
        CUDA_MEMCPY2D c;
        memset(&c, 0, sizeof c);
        c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        c.srcDevice = (CUdeviceptr)(uintptr_t)f->planes[p];
        c.srcPitch = (size_t)f->pitch[p];
        c.dstMemoryType = CU_MEMORYTYPE_HOST;
        c.dstHost = p ? dst + w * h : dst;
        c.dstPitch = p ? 2 * ((w + 1) / 2) : w;
        c.WidthInBytes = c.dstPitch;
        c.Height = p ? ch : h;
        st = OMMA_CK(gpu_cu.cuMemcpy2DAsync(&c, g->stream));
    }
    if (st == OMMA_OK)
        st = OMMA_CK(gpu_cu.cuStreamSynchronize(g->stream));
    omma_status left = omma_device_leave(&scope);
    return st != OMMA_OK ? st : left;
}

void *io_gpu_stream(const io_video_gpu *g)
{
    return g ? (void *)g->stream : NULL;
}

void io_gpu_detach(io_video_gpu *g)
{
    if (g)
        free_gpu(g);
}

#endif
