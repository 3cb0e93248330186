/* MJPEG decoded on the GPU with nvJPEG (io/jpeg_gpu.h), against
 * libavcodec's CPU decoder on the same JPEGs: the clips
 * scripts/make-decode-clips.sh makes from the real photo (640x480 MJPEG at
 * 4:2:0 and 4:2:2 in AVI, 4:4:4 in Matroska, 1080p 4:2:2) and grey JPEGs
 * written here with libjpeg from a decoded frame's luma, at two sizes (the
 * decoder reallocates when the size changes). Every GPU frame is copied
 * back and compared with the CPU decode turned into NV12 by the same
 * chroma rule as the kernel (vision/cuda_nv12.h): within +-2 per sample,
 * not bit-exact, because JPEG does not specify its IDCT exactly (nvJPEG's
 * and libjpeg/FFmpeg's integer IDCTs round differently). Through io_video
 * with decode gpu: the decoder says nvjpeg, the frames and timestamps
 * match the CPU's, the host-to-device bytes are exactly the JPEGs' sizes
 * (no decoded pixel crosses PCIe), no context other than omma's primary
 * one is current and far less device memory is used than one more
 * context costs. Damaged copies of the 4:2:2 clip (20: bytes flipped,
 * zeroed, swapped from a point on, the file cut short) decoded in child
 * processes with a time limit: no signal, no hang, and every frame whose
 * packet lies before the damage delivered equal to the CPU's within +-2.
 * Skipped (77) without a GPU, FFmpeg, the clips or nvJPEG (the message
 * says which). */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu/check.h"
#include "gpu/driver.h"
#include "gpu/gpu_testing.h"
#include "gpu/nvjpeg.h"
#include "io/jpeg_gpu.h"
#include "io/video_file.h"

#ifdef OMMA_HAVE_LIBAV
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/pixdesc.h>
#ifdef OMMA_HAVE_JPEG
#include <jpeglib.h>
#endif

#define CLIPS OMMA_TESTDATA_DIR "/decode"
#define TOLERANCE 2

static omma_device *dev;

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* An NV12 image in host memory, packed: w x h luma, then (h+1)/2 rows of
 * 2 * ((w+1)/2) interleaved chroma. */
typedef struct nv12 {
    int w, h;
    uint8_t *data;
} nv12;

static size_t nv12_bytes(int w, int h)
{
    return (size_t)w * h + (size_t)2 * ((w + 1) / 2) * ((h + 1) / 2);
}

/* The CPU reference of the kernel's rule: luma copied, each chroma sample
 * the rounded mean of the chroma under its 2x2 luma block. */
static int frame_to_nv12(const AVFrame *fr, nv12 *out)
{
    const AVPixFmtDescriptor *pd = av_pix_fmt_desc_get(fr->format);
    if (!pd)
        return 0;
    int w = fr->width, h = fr->height;
    int grey = pd->nb_components == 1;
    int cw = grey ? 0 : AV_CEIL_RSHIFT(w, pd->log2_chroma_w);
    int ch = grey ? 0 : AV_CEIL_RSHIFT(h, pd->log2_chroma_h);
    out->w = w;
    out->h = h;
    out->data = malloc(nv12_bytes(w, h));
    if (!out->data)
        return 0;
    for (int y = 0; y < h; y++)
        memcpy(out->data + (size_t)y * w, fr->data[0] + (size_t)y * fr->linesize[0], (size_t)w);
    uint8_t *uv = out->data + (size_t)w * h;
    int bw = (w + 1) / 2, bh = (h + 1) / 2;
    for (int by = 0; by < bh; by++)
        for (int bx = 0; bx < bw; bx++) {
            uint8_t *o = uv + (size_t)by * 2 * bw + 2 * bx;
            if (grey) {
                o[0] = o[1] = 128;
                continue;
            }
            int x0 = 2 * bx, y0 = 2 * by;
            int x1 = x0 + 1 < w ? x0 + 1 : w - 1, y1 = y0 + 1 < h ? y0 + 1 : h - 1;
            int cx0 = (int)((long long)x0 * cw / w), cx1 = (int)((long long)x1 * cw / w);
            int cy0 = (int)((long long)y0 * ch / h), cy1 = (int)((long long)y1 * ch / h);
            for (int p = 0; p < 2; p++) {
                const uint8_t *r0 = fr->data[1 + p] + (size_t)cy0 * fr->linesize[1 + p];
                const uint8_t *r1 = fr->data[1 + p] + (size_t)cy1 * fr->linesize[1 + p];
                o[p] = (uint8_t)((r0[cx0] + r0[cx1] + r1[cx0] + r1[cx1] + 2) >> 2);
            }
        }
    return 1;
}

/* A device NV12 frame (on stream) into host memory. */
static int download(const omma_frame *f, void *stream, nv12 *out)
{
    int w = f->width, h = f->height;
    out->w = w;
    out->h = h;
    out->data = malloc(nv12_bytes(w, h));
    if (!out->data || f->memory != OMMA_MEMORY_DEVICE || f->format != OMMA_PIXEL_NV12)
        return 0;
    omma_scope scope;
    if (omma_device_enter(dev, &scope) != OMMA_OK)
        return 0;
    int ok = 1;
    for (int p = 0; p < 2 && ok; p++) {
        CUDA_MEMCPY2D c;
        memset(&c, 0, sizeof c);
        c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        c.srcDevice = (CUdeviceptr)(uintptr_t)f->planes[p];
        c.srcPitch = (size_t)f->pitch[p];
        c.dstMemoryType = CU_MEMORYTYPE_HOST;
        c.dstHost = p ? out->data + (size_t)w * h : out->data;
        c.dstPitch = p ? (size_t)2 * ((w + 1) / 2) : (size_t)w;
        c.WidthInBytes = c.dstPitch;
        c.Height = p ? (size_t)(h + 1) / 2 : (size_t)h;
        ok = gpu_cu.cuMemcpy2DAsync(&c, (CUstream)stream) == CUDA_SUCCESS;
    }
    ok = ok && gpu_cu.cuStreamSynchronize((CUstream)stream) == CUDA_SUCCESS;
    omma_device_leave(&scope);
    return ok;
}

/* The largest difference of any sample, -1 when the sizes differ. */
static int nv12_diff(const nv12 *a, const nv12 *b)
{
    if (a->w != b->w || a->h != b->h || !a->data || !b->data)
        return -1;
    int worst = 0;
    for (size_t i = 0; i < nv12_bytes(a->w, a->h); i++) {
        int d = abs((int)a->data[i] - (int)b->data[i]);
        worst = d > worst ? d : worst;
    }
    return worst;
}

/* libavcodec's MJPEG decoder, one JPEG at a time. */
typedef struct cpu_jpeg {
    AVCodecContext *ctx;
    AVPacket *pkt;
    AVFrame *frame;
} cpu_jpeg;

static int cpu_open(cpu_jpeg *c)
{
    const AVCodec *codec = avcodec_find_decoder(AV_CODEC_ID_MJPEG);
    c->ctx = codec ? avcodec_alloc_context3(codec) : NULL;
    c->pkt = av_packet_alloc();
    c->frame = av_frame_alloc();
    if (c->ctx)
        c->ctx->thread_count = 1;
    return c->ctx && c->pkt && c->frame && avcodec_open2(c->ctx, codec, NULL) == 0;
}

static void cpu_close(cpu_jpeg *c)
{
    avcodec_free_context(&c->ctx);
    av_packet_free(&c->pkt);
    av_frame_free(&c->frame);
}

/* Decodes one JPEG into *out (NV12 by the kernel's rule). */
static int cpu_decode(cpu_jpeg *c, const uint8_t *data, size_t size, nv12 *out)
{
    if (av_new_packet(c->pkt, (int)size) < 0)
        return 0;
    memcpy(c->pkt->data, data, size);
    int ok = avcodec_send_packet(c->ctx, c->pkt) == 0 &&
             avcodec_receive_frame(c->ctx, c->frame) == 0 && frame_to_nv12(c->frame, out);
    av_packet_unref(c->pkt);
    av_frame_unref(c->frame);
    return ok;
}

/* Every JPEG of clip on the GPU (io_jpeg_gpu directly) against the CPU;
 * the largest difference, -1 on any failure. */
static int compare_jpegs(const char *clip, int *frames)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", CLIPS, clip);
    AVFormatContext *fmt = NULL;
    if (avformat_open_input(&fmt, path, NULL, NULL) < 0 ||
        avformat_find_stream_info(fmt, NULL) < 0) {
        fprintf(stderr, "%s: cannot open\n", clip);
        avformat_close_input(&fmt);
        return -1;
    }
    int stream = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    io_jpeg_gpu *d = NULL;
    cpu_jpeg c = {0};
    AVPacket *pkt = av_packet_alloc();
    int worst = -1;
    *frames = 0;
    if (stream < 0 || !pkt || !cpu_open(&c) || io_jpeg_gpu_open(dev, &d) != OMMA_OK) {
        fprintf(stderr, "%s: set-up: %s\n", clip, omma_last_error());
        goto out;
    }
    worst = 0;
    while (av_read_frame(fmt, pkt) >= 0) {
        if (pkt->stream_index != stream) {
            av_packet_unref(pkt);
            continue;
        }
        omma_frame f;
        nv12 g = {0}, r = {0};
        omma_status st = io_jpeg_gpu_decode(d, pkt->data, (size_t)pkt->size, &f);
        int ok = st == OMMA_OK && download(&f, io_jpeg_gpu_stream(d), &g) &&
                 cpu_decode(&c, pkt->data, (size_t)pkt->size, &r);
        int diff = ok ? nv12_diff(&g, &r) : -1;
        if (*frames == 0)
            fprintf(stderr, "%s: nvJPEG backend %s\n", clip, io_jpeg_gpu_backend(d));
        if (diff < 0) {
            fprintf(stderr, "%s: frame %d: %s (%s)\n", clip, *frames, omma_status_str(st),
                    st == OMMA_OK ? "copy or CPU decode failed" : omma_last_error());
            worst = -1;
        } else if (worst >= 0 && diff > worst) {
            worst = diff;
        }
        free(g.data);
        free(r.data);
        CHECK(io_jpeg_gpu_give_back(d) == OMMA_OK);
        av_packet_unref(pkt);
        (*frames)++;
    }
out:
    io_jpeg_gpu_close(d);
    cpu_close(&c);
    av_packet_free(&pkt);
    avformat_close_input(&fmt);
    return worst;
}

static void subsamplings_within_tolerance(void)
{
    static const struct {
        const char *clip;
        int frames;
    } clips[] = {{"pan_mjpeg.avi", 24},
                 {"pan_mjpeg422.avi", 24},
                 {"pan_mjpeg444.mkv", 24},
                 {"pan1080_mjpeg422.avi", 60}};
    for (size_t i = 0; i < sizeof clips / sizeof *clips; i++) {
        int frames = 0;
        int worst = compare_jpegs(clips[i].clip, &frames);
        fprintf(stderr, "%s: %d JPEGs, largest difference GPU vs CPU %d\n", clips[i].clip, frames,
                worst);
        CHECK(worst >= 0 && worst <= TOLERANCE);
        CHECK(frames == clips[i].frames);
    }
}

#ifdef OMMA_HAVE_JPEG
/* A grey JPEG (libjpeg, quality 90) of the w x h luma (rows pitch apart). */
static uint8_t *grey_jpeg(const uint8_t *luma, int pitch, int w, int h, size_t *size)
{
    struct jpeg_compress_struct cinfo;
    struct jpeg_error_mgr jerr;
    unsigned char *buf = NULL;
    unsigned long len = 0;
    cinfo.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, &buf, &len);
    cinfo.image_width = (JDIMENSION)w;
    cinfo.image_height = (JDIMENSION)h;
    cinfo.input_components = 1;
    cinfo.in_color_space = JCS_GRAYSCALE;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, 90, TRUE);
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = (JSAMPROW)(luma + (size_t)cinfo.next_scanline * pitch);
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    *size = len;
    return buf;
}

/* Grey JPEGs of a real frame's luma, then a smaller crop, then the full
 * size again: each equal to the CPU within the tolerance (the decoder
 * reallocates for the new size and goes back). */
static void grey_and_size_changes(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/pan_mjpeg.avi", CLIPS);
    io_video *v = NULL;
    REQUIRE_OK(io_video_open(path, &v));
    omma_frame f;
    double t;
    int eof = 0;
    REQUIRE_OK(io_video_read(v, &f, &t, &eof));
    REQUIRE(!eof && f.memory == OMMA_MEMORY_HOST);
    io_jpeg_gpu *d = NULL;
    cpu_jpeg c = {0};
    REQUIRE(cpu_open(&c));
    REQUIRE_OK(io_jpeg_gpu_open(dev, &d));
    static const int sizes[][2] = {{640, 480}, {321, 239}, {640, 480}, {97, 63}};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        size_t size = 0;
        uint8_t *jpeg = grey_jpeg(f.planes[0], f.pitch[0], sizes[i][0], sizes[i][1], &size);
        REQUIRE(jpeg != NULL);
        omma_frame g;
        nv12 a = {0}, b = {0};
        REQUIRE_OK(io_jpeg_gpu_decode(d, jpeg, size, &g));
        CHECK(g.width == sizes[i][0] && g.height == sizes[i][1]);
        CHECK(download(&g, io_jpeg_gpu_stream(d), &a));
        CHECK(cpu_decode(&c, jpeg, size, &b));
        int diff = nv12_diff(&a, &b);
        fprintf(stderr, "grey %dx%d: largest difference GPU vs CPU %d (%s)\n", sizes[i][0],
                sizes[i][1], diff, io_jpeg_gpu_backend(d));
        CHECK(diff >= 0 && diff <= TOLERANCE);
        CHECK(a.data && a.data[(size_t)a.w * a.h] == 128); /* grey: neutral chroma */
        REQUIRE_OK(io_jpeg_gpu_give_back(d));
        free(a.data);
        free(b.data);
        free(jpeg);
    }
    /* Not a JPEG: refused, this frame only. */
    static const uint8_t junk[] = {0xff, 0xd8, 0xff, 0xdb, 0x00, 0x43, 0x00, 0x01, 2, 3, 4, 5};
    omma_frame g;
    CHECK_FAILS(io_jpeg_gpu_decode(d, junk, sizeof junk, &g), OMMA_ERR_FORMAT, "JPEG");
    CHECK_FAILS(io_jpeg_gpu_decode(d, junk, 0, &g), OMMA_ERR_INVALID_ARG, "0 bytes");
    CHECK(!io_jpeg_gpu_failed(d));
    io_jpeg_gpu_close(d);
    cpu_close(&c);
    io_video_close(v);
}
#endif

static CUcontext current(void)
{
    CUcontext c = NULL;
    if (gpu_cu.cuCtxGetCurrent(&c) != CUDA_SUCCESS)
        return (CUcontext)(uintptr_t)1;
    return c;
}

static size_t free_memory(void)
{
    omma_scope scope;
    size_t free_bytes = 0, total = 0;
    if (omma_device_enter(dev, &scope) != OMMA_OK)
        return 0;
    gpu_cu.cuCtxSynchronize();
    gpu_cu.cuMemGetInfo(&free_bytes, &total);
    omma_device_leave(&scope);
    return free_bytes;
}

/* The sum of the clip's video packets' sizes. */
static uint64_t packet_bytes(const char *path, long *count)
{
    AVFormatContext *fmt = NULL;
    uint64_t sum = 0;
    *count = 0;
    if (avformat_open_input(&fmt, path, NULL, NULL) < 0 ||
        avformat_find_stream_info(fmt, NULL) < 0) {
        avformat_close_input(&fmt);
        return 0;
    }
    int stream = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    AVPacket *pkt = av_packet_alloc();
    while (pkt && av_read_frame(fmt, pkt) >= 0) {
        if (pkt->stream_index == stream) {
            sum += (uint64_t)pkt->size;
            (*count)++;
        }
        av_packet_unref(pkt);
    }
    av_packet_free(&pkt);
    avformat_close_input(&fmt);
    return sum;
}

/* io_video with decode gpu on the 4:2:2 clip: nvJPEG says so, the frames
 * and timestamps are the CPU's, only the JPEGs cross PCIe, no context of
 * its own. */
static void through_io_video(void)
{
    const char *path = CLIPS "/pan_mjpeg422.avi";
    long packets = 0;
    uint64_t compressed = packet_bytes(path, &packets);
    REQUIRE(compressed > 0 && packets == 24);
    size_t before = free_memory();
    omma_transfer_counters t0, t1;
    REQUIRE_OK(omma_device_get_transfers(dev, &t0));
    io_video *g = NULL, *c = NULL;
    io_video_options go = {IO_DECODE_GPU, dev, 0, NULL, 0, NULL};
    REQUIRE_OK(io_video_open_with(path, &go, &g));
    REQUIRE_OK(io_video_open(path, &c));
    fprintf(stderr, "pan_mjpeg422.avi: %s vs %s\n", io_video_decoder(g), io_video_decoder(c));
    CHECK(strstr(io_video_decoder(g), "gpu (nvjpeg") != NULL);
    CUcontext primary = (CUcontext)omma_device_context(dev);
    size_t during = 0;
    int frames = 0;
    for (;;) {
        omma_frame fg, fc;
        double tg = -1, tc = -2;
        int eg = 0, ec = 0;
        omma_status sg = io_video_read(g, &fg, &tg, &eg);
        omma_status sc = io_video_read(c, &fc, &tc, &ec);
        CUcontext now = current();
        CHECK(now == NULL || now == primary);
        REQUIRE(sg == OMMA_OK && sc == OMMA_OK && eg == ec);
        if (eg)
            break;
        CHECK(io_video_on_gpu(g) && fg.memory == OMMA_MEMORY_DEVICE &&
              fg.format == OMMA_PIXEL_NV12 && fg.width == 640 && fg.height == 480);
        CHECK(tg == tc);
        if (frames == 0)
            during = free_memory();
        frames++;
    }
    CHECK(frames == 24);
    io_video_stats vs;
    io_video_get_stats(g, &vs);
    CHECK(vs.frames == 24 && vs.dropped_packets == 0);
    io_video_close(g);
    io_video_close(c);
    REQUIRE_OK(omma_device_get_transfers(dev, &t1));
    fprintf(stderr,
            "24 JPEGs of %llu bytes in all: %llu bytes host-to-device in %llu copies counted\n",
            (unsigned long long)compressed, (unsigned long long)(t1.h2d_bytes - t0.h2d_bytes),
            (unsigned long long)(t1.h2d_copies - t0.h2d_copies));
    CHECK(t1.h2d_bytes - t0.h2d_bytes == compressed);
    size_t after = free_memory();
    double used = before > during ? (double)(before - during) / (1 << 20) : 0.0;
    double kept = before > after ? (double)(before - after) / (1 << 20) : 0.0;
    double context = (double)extra_context_cost(dev) / (1 << 20);
    fprintf(stderr,
            "a 640x480 nvJPEG decoder: %.1f MiB of device memory while open, %.1f MiB kept "
            "after close; one more context: %.1f MiB\n",
            used, kept, context);
    CHECK(context > 0.0 && used < context / 2);
    /* What stays after the first decoder closes (measured on the H100: 42
     * MiB, kept by nvJPEG's hardware backend and the memory pool for the
     * next decoder) must not grow with more decoders: three more, opened,
     * read to their end and closed, leave it where it was. */
    for (int k = 0; k < 3; k++) {
        io_video *again = NULL;
        REQUIRE_OK(io_video_open_with(path, &go, &again));
        for (;;) {
            omma_frame f;
            double t = 0;
            int end = 0;
            REQUIRE_OK(io_video_read(again, &f, &t, &end));
            if (end)
                break;
        }
        io_video_close(again);
    }
    size_t after4 = free_memory();
    double grown = after > after4 ? (double)(after - after4) / (1 << 20) : 0.0;
    fprintf(stderr, "three more decoders opened and closed: %.1f MiB more kept\n", grown);
    CHECK(grown < 2.0);
}

/* Child mode: decodes the damaged copy on the GPU to its end, comparing
 * the frames whose packets in the original end before the damage (byte
 * offset `from`) with the original's CPU decode. Exit 0 when those all
 * came, equal within the tolerance, and the end was OMMA_OK or an error
 * naming the file; 2 otherwise; 3 for a set-up failure. */
static int read_damaged(const char *path, const char *original, long from)
{
    omma_device *d = NULL;
    if (omma_device_open(0, &d) != OMMA_OK)
        return 3;
    dev = d;
    /* The frames before the damage, decoded on the CPU from the original. */
    AVFormatContext *fmt = NULL;
    if (avformat_open_input(&fmt, original, NULL, NULL) < 0 ||
        avformat_find_stream_info(fmt, NULL) < 0)
        return 3;
    int stream = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    AVPacket *pkt = av_packet_alloc();
    cpu_jpeg c = {0};
    if (stream < 0 || !pkt || !cpu_open(&c))
        return 3;
    nv12 good[64];
    int n_good = 0;
    while (n_good < 64 && av_read_frame(fmt, pkt) >= 0) {
        int before = pkt->stream_index == stream && pkt->pos >= 0 && pkt->pos + pkt->size < from;
        if (pkt->stream_index == stream && !before) {
            av_packet_unref(pkt);
            break;
        }
        if (before && !cpu_decode(&c, pkt->data, (size_t)pkt->size, &good[n_good++]))
            return 3;
        av_packet_unref(pkt);
    }
    av_packet_free(&pkt);
    avformat_close_input(&fmt);
    cpu_close(&c);

    io_video *v = NULL;
    io_video_options go = {IO_DECODE_GPU, d, 0, NULL, 0, NULL};
    omma_status st = io_video_open_with(path, &go, &v);
    long frames = 0;
    int mismatch = 0;
    while (st == OMMA_OK) {
        omma_frame f;
        double t;
        int eof = 0;
        st = io_video_read(v, &f, &t, &eof);
        if (st != OMMA_OK || eof)
            break;
        if (frames < n_good) {
            nv12 g = {0};
            int diff = download(&f, io_video_stream(v), &g) ? nv12_diff(&g, &good[frames]) : -1;
            if (diff < 0 || diff > TOLERANCE) {
                printf("%s: frame %ld before the damage differs by %d\n", path, frames, diff);
                mismatch = 1;
            }
            free(g.data);
        }
        frames++;
    }
    io_video_stats vs;
    io_video_get_stats(v, &vs);
    printf("%s: %ld frames (%d before the damage; %ld refused): %s %s\n", path, frames, n_good,
           vs.dropped_packets, omma_status_str(st), st == OMMA_OK ? "" : omma_last_error());
    int named = st == OMMA_OK || strstr(omma_last_error(), path) != NULL;
    io_video_close(v);
    for (int i = 0; i < n_good; i++)
        free(good[i].data);
    omma_device_close(d);
    return named && !mismatch && frames >= n_good ? 0 : 2;
}

/* A damaged copy of src from byte *from on (between a quarter and three
 * quarters in, never the last KiB: the AVI index, which places every
 * packet): kind 0 flips bytes, 1 zeroes a run, 2 swaps two chunks, 3 cuts
 * the file there. */
static int damage(const char *src, const char *dst, int kind, unsigned seed, long *from)
{
    FILE *f = fopen(src, "rb");
    if (!f)
        return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = n > 16384 ? malloc((size_t)n) : NULL;
    int ok = b && fread(b, 1, (size_t)n, f) == (size_t)n;
    fclose(f);
    seed = seed * 1103515245u + 12345u;
    long at = n / 4 + (long)(seed % (unsigned)(n / 2));
    long keep = n;
    *from = at;
    for (int i = 0; ok && i < 32; i++) {
        seed = seed * 1103515245u + 12345u;
        long p = at + (long)(seed % (unsigned)(n - 1024 - at)); /* not the AVI index */
        if (kind == 0)
            b[p] ^= (uint8_t)(1u << (seed >> 28 & 7));
    }
    if (ok && kind == 1)
        memset(b + at, 0, (size_t)(n - at < 4096 ? n - at : 4096));
    if (ok && kind == 2 && n - at > 8192)
        for (int k = 0; k < 2048; k++) {
            uint8_t t = b[at + k];
            b[at + k] = b[n - 4096 + k];
            b[n - 4096 + k] = t;
        }
    if (kind == 3)
        keep = at;
    FILE *o = ok ? fopen(dst, "wb") : NULL;
    ok = o && fwrite(b, 1, (size_t)keep, o) == (size_t)keep;
    if (o)
        ok = fclose(o) == 0 && ok;
    free(b);
    return ok;
}

static char self[4096];

static void damaged_copies(void)
{
    const char *src = CLIPS "/pan_mjpeg422.avi";
    char dir[] = "/tmp/omma-jpeg-damaged-XXXXXX";
    REQUIRE(mkdtemp(dir) != NULL);
    int runs = 0, bad = 0;
    for (int i = 0; i < 20; i++) {
        char dst[600], arg[32];
        long from = 0;
        snprintf(dst, sizeof dst, "%s/%d.avi", dir, i);
        if (!damage(src, dst, i % 4, 11u + 37u * (unsigned)i, &from)) {
            bad++;
            continue;
        }
        snprintf(arg, sizeof arg, "%ld", from);
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            alarm(60); /* a decode that takes longer has hung */
            execl(self, self, "--read", dst, src, arg, (char *)NULL);
            _exit(127);
        }
        int ws = 0;
        if (pid < 0 || waitpid(pid, &ws, 0) != pid || !WIFEXITED(ws) || WEXITSTATUS(ws)) {
            fprintf(stderr, "%s: the child %s %d\n", dst,
                    WIFSIGNALED(ws) ? "died of signal" : "exited",
                    WIFSIGNALED(ws) ? WTERMSIG(ws) : WEXITSTATUS(ws));
            bad++;
        }
        remove(dst);
        runs++;
    }
    rmdir(dir);
    fprintf(stderr, "%d damaged copies decoded with nvJPEG, %d failures\n", runs, bad);
    CHECK(runs == 20 && bad == 0);
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "--read") == 0)
        return read_damaged(argv[2], argv[3], atol(argv[4]));
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        return 1;
    self[len] = '\0';
    gpu_test_require_device();
    if (!io_video_available())
        SKIP_TEST("built without FFmpeg");
    if (!exists(CLIPS "/pan_mjpeg422.avi") || !exists(CLIPS "/pan1080_mjpeg422.avi"))
        SKIP_TEST("no MJPEG clips in " CLIPS " (scripts/make-decode-clips.sh makes them)");
    if (gpu_nvjpeg_load() != OMMA_OK) {
        fprintf(stderr, "SKIP: %s\n", omma_last_error());
        return 77;
    }
    if (omma_device_open(0, &dev) != OMMA_OK) {
        fprintf(stderr, "omma_device_open: %s\n", omma_last_error());
        return 1;
    }
    RUN(through_io_video);
    RUN(subsamplings_within_tolerance);
#ifdef OMMA_HAVE_JPEG
    RUN(grey_and_size_changes);
#endif
    RUN(damaged_copies);
    omma_device_close(dev);
    return testing_finish();
}
#else
int main(void)
{
    SKIP_TEST("built without FFmpeg");
}
#endif
