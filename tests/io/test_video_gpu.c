/* GPU decoding (io_video with IO_DECODE_GPU / AUTO: NVDEC through NVIDIA's
 * video decoder API on omma's primary context), against the CPU decoder on the
 * same files: the clips scripts/make-decode-clips.sh makes from the real
 * photo (testdata/decode: H.264, HEVC, VP9 and MJPEG at 640x480, 10-bit
 * HEVC, 1080p H.264). Every frame decoded on the GPU (with and without
 * decode_ahead, the runtime's way for files) is copied back and
 * compared with the CPU's: H.264, HEVC and VP9 must be bit-exact (both
 * decoders implement the standard's exact reconstruction); MJPEG (decoded
 * by nvJPEG where it loads, else NVDEC: test_jpeg_gpu.c tests nvJPEG
 * closely) has an IDCT not specified bit-exactly, so its difference is
 * bounded. No context
 * other than omma's primary one may appear: the reading thread's current
 * context stays omma's (or none), and decoding leaves far less device
 * memory in use than one more context costs. 10-bit HEVC is refused with
 * decode gpu and decoded on the CPU with auto, which says why. Looping
 * (io_video_rewind) keeps the decoder and gives the same frames again.
 * Damaged copies of the clips (bytes flipped, zeroed, swapped, the file
 * cut short) decoded on the GPU, each in a child process with a time
 * limit: no signal, no hang, the end either OMMA_OK or an error naming the
 * file. Skipped (77) without a GPU, FFmpeg or the clips. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu/check.h"
#include "gpu/driver.h"
#include "gpu/gpu_testing.h"
#include "io/video_file.h"

#define CLIPS OMMA_TESTDATA_DIR "/decode"

static omma_device *dev;

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

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

/* The Y plane then the chroma of a frame as I420 (host), from a GPU frame
 * (NV12, device) or a CPU one (I420 or NV12, host). */
static int to_i420(const omma_frame *f, void *stream, uint8_t *out)
{
    int w = f->width, h = f->height, cw = (w + 1) / 2, ch = (h + 1) / 2;
    uint8_t *y = out, *u = out + (size_t)w * h, *v = u + (size_t)cw * ch;
    if (f->memory == OMMA_MEMORY_DEVICE) {
        uint8_t *nv = malloc((size_t)w * h + (size_t)2 * cw * ch);
        if (!nv)
            return 0;
        omma_scope scope;
        if (omma_device_enter(dev, &scope) != OMMA_OK) {
            free(nv);
            return 0;
        }
        CUDA_MEMCPY2D c;
        int ok = 1;
        for (int p = 0; p < 2 && ok; p++) {
            memset(&c, 0, sizeof c);
            c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
            c.srcDevice = (CUdeviceptr)(uintptr_t)f->planes[p];
            c.srcPitch = (size_t)f->pitch[p];
            c.dstMemoryType = CU_MEMORYTYPE_HOST;
            c.dstHost = p ? nv + (size_t)w * h : nv;
            c.dstPitch = p ? (size_t)2 * cw : (size_t)w;
            c.WidthInBytes = c.dstPitch;
            c.Height = p ? (size_t)ch : (size_t)h;
            ok = gpu_cu.cuMemcpy2DAsync(&c, (CUstream)stream) == CUDA_SUCCESS;
        }
        ok = ok && gpu_cu.cuStreamSynchronize((CUstream)stream) == CUDA_SUCCESS;
        omma_device_leave(&scope);
        memcpy(y, nv, (size_t)w * h);
        for (int i = 0; i < cw * ch; i++) {
            u[i] = nv[(size_t)w * h + 2 * (size_t)i];
            v[i] = nv[(size_t)w * h + 2 * (size_t)i + 1];
        }
        free(nv);
        return ok;
    }
    for (int r = 0; r < h; r++)
        memcpy(y + (size_t)r * w, f->planes[0] + (size_t)r * f->pitch[0], (size_t)w);
    for (int r = 0; r < ch; r++)
        for (int c = 0; c < cw; c++) {
            if (f->format == OMMA_PIXEL_I420) {
                u[r * cw + c] = f->planes[1][(size_t)r * f->pitch[1] + c];
                v[r * cw + c] = f->planes[2][(size_t)r * f->pitch[2] + c];
            } else if (f->format == OMMA_PIXEL_NV12) {
                u[r * cw + c] = f->planes[1][(size_t)r * f->pitch[1] + 2 * c];
                v[r * cw + c] = f->planes[1][(size_t)r * f->pitch[1] + 2 * c + 1];
            } else {
                return 0;
            }
        }
    return 1;
}

/* Decodes name on the GPU and on the CPU; the largest difference of any
 * sample, or -1 when the frames do not line up. */
static int compare_clip(const char *name, int ahead, int *frames_out)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", CLIPS, name);
    io_video *g = NULL, *c = NULL;
    core_cpu_parts cpu;
    core_cpu_parts_init(&cpu);
    io_video_options go = {IO_DECODE_GPU, dev, 0, NULL, ahead, &cpu};
    if (io_video_open_with(path, &go, &g) != OMMA_OK) {
        fprintf(stderr, "%s: GPU open: %s\n", name, omma_last_error());
        return -1;
    }
    if (io_video_open(path, &c) != OMMA_OK) {
        fprintf(stderr, "%s: CPU open: %s\n", name, omma_last_error());
        io_video_close(g);
        return -1;
    }
    int w = io_video_width(c), h = io_video_height(c);
    size_t bytes = (size_t)w * h + 2 * (size_t)((w + 1) / 2) * ((h + 1) / 2);
    uint8_t *a = malloc(bytes), *b = malloc(bytes);
    int worst = 0, frames = 0;
    CUcontext primary = (CUcontext)omma_device_context(dev);
    for (;;) {
        omma_frame fg, fc;
        double tg, tc;
        int eg = 0, ec = 0;
        omma_status sg = io_video_read(g, &fg, &tg, &eg);
        omma_status sc = io_video_read(c, &fc, &tc, &ec);
        CUcontext now = current();
        if (now != NULL && now != primary) {
            fprintf(stderr, "%s: frame %d: a foreign context is current on the thread\n", name,
                    frames);
            worst = -1;
            break;
        }
        if (sg != OMMA_OK || sc != OMMA_OK || eg != ec) {
            fprintf(stderr, "%s: frame %d: gpu %s eof %d, cpu %s eof %d: %s\n", name, frames,
                    omma_status_str(sg), eg, omma_status_str(sc), ec, omma_last_error());
            worst = -1;
            break;
        }
        if (eg)
            break;
        if (frames == 0)
            fprintf(stderr, "%s: %s vs %s\n", name, io_video_decoder(g), io_video_decoder(c));
        if (fg.memory != OMMA_MEMORY_DEVICE || fg.format != OMMA_PIXEL_NV12 ||
            !io_video_on_gpu(g) || tg != tc || !a || !b || !to_i420(&fg, io_video_stream(g), a) ||
            !to_i420(&fc, NULL, b)) {
            fprintf(stderr, "%s: frame %d: memory %d format %d ts %g vs %g\n", name, frames,
                    (int)fg.memory, (int)fg.format, tg, tc);
            worst = -1;
            break;
        }
        for (size_t i = 0; i < bytes; i++) {
            int d = abs((int)a[i] - (int)b[i]);
            if (d > worst)
                worst = d;
        }
        frames++;
    }
    free(a);
    free(b);
    io_video_close(g);
    io_video_close(c);
    *frames_out = frames;
    /* The calls were measured: a map and at least one status query a
     * frame (NVDEC only: nvJPEG decodes MJPEG where it loads). */
    core_cpu_split split = {{0}, {0}};
    core_cpu_parts_add_to(&cpu, &split);
    fprintf(stderr,
            "%s (decode ahead %d): per frame %.2f packets, %.2f pictures submitted, %.2f status "
            "queries, %.2f sleeps for NVDEC, %.2f maps, %.2f unmaps\n",
            name, ahead, (double)split.calls[CORE_CPU_DEMUX] / (frames ? frames : 1),
            (double)split.calls[CORE_CPU_SUBMIT] / (frames ? frames : 1),
            (double)split.calls[CORE_CPU_STATUS] / (frames ? frames : 1),
            (double)split.calls[CORE_CPU_DECODE_WAIT] / (frames ? frames : 1),
            (double)split.calls[CORE_CPU_MAP] / (frames ? frames : 1),
            (double)split.calls[CORE_CPU_UNMAP] / (frames ? frames : 1));
    if (worst >= 0 && strstr(name, "mjpeg") == NULL &&
        (split.calls[CORE_CPU_MAP] != (uint64_t)frames ||
         split.calls[CORE_CPU_STATUS] < (uint64_t)frames ||
         split.calls[CORE_CPU_SUBMIT] < (uint64_t)frames ||
         split.calls[CORE_CPU_DEMUX] < (uint64_t)frames || split.ns[CORE_CPU_PARSE] == 0)) {
        fprintf(stderr, "%s: the calls' counts do not match %d frames\n", name, frames);
        worst = -1;
    }
    return worst;
}

static void bit_exact_codecs(void)
{
    static const char *const exact[] = {"pan_h264.mp4", "pan_hevc.mp4", "pan_vp9.webm",
                                        "pan1080_h264.mp4"};
    for (size_t i = 0; i < sizeof exact / sizeof *exact; i++)
        for (int ahead = 0; ahead < 2; ahead++) {
            int frames = 0;
            int worst = compare_clip(exact[i], ahead, &frames);
            fprintf(stderr, "%s (decode ahead %d): %d frames, largest difference GPU vs CPU %d\n",
                    exact[i], ahead, frames, worst);
            CHECK(worst == 0);
            CHECK(frames >= 24);
        }
}

static void mjpeg_close(void)
{
    int frames = 0;
    int worst = compare_clip("pan_mjpeg.avi", 0, &frames);
    fprintf(stderr, "pan_mjpeg.avi: %d frames, largest difference GPU vs CPU %d\n", frames, worst);
    CHECK(worst >= 0 && worst <= 8); /* IDCTs differ in rounding only */
    CHECK(frames == 24);
}

static void ten_bit_refused_or_cpu(void)
{
    io_video *v = NULL;
    io_video_options go = {IO_DECODE_GPU, dev, 0, NULL, 0, NULL};
    CHECK_FAILS(io_video_open_with(CLIPS "/pan_hevc10.mkv", &go, &v), OMMA_ERR_UNSUPPORTED,
                "not 8-bit 4:2:0");
    CHECK(v == NULL);
    io_video_options ao = {IO_DECODE_AUTO, dev, 0, NULL, 0, NULL};
    REQUIRE_OK(io_video_open_with(CLIPS "/pan_hevc10.mkv", &ao, &v));
    fprintf(stderr, "pan_hevc10.mkv with auto: %s\n", io_video_decoder(v));
    CHECK(strstr(io_video_decoder(v), "cpu (hevc; not on the GPU") != NULL);
    omma_frame f;
    double t;
    int eof = 0;
    CHECK(io_video_read(v, &f, &t, &eof) == OMMA_OK && !eof);
    CHECK(f.memory == OMMA_MEMORY_HOST && !io_video_on_gpu(v));
    io_video_close(v);
}

/* Looping keeps the decoder: the second pass gives the same frames (with
 * and without the next picture decoded ahead). */
static void rewind_keeps_decoding(int ahead)
{
    io_video *v = NULL;
    io_video_options go = {IO_DECODE_GPU, dev, 0, NULL, ahead, NULL};
    REQUIRE_OK(io_video_open_with(CLIPS "/pan_h264.mp4", &go, &v));
    int w = io_video_width(v), h = io_video_height(v);
    size_t bytes = (size_t)w * h * 3 / 2;
    uint8_t *first = malloc(bytes), *again = malloc(bytes);
    int n[2] = {0, 0};
    for (int pass = 0; pass < 2 && first && again; pass++) {
        for (;;) {
            omma_frame f;
            double t;
            int eof = 0;
            REQUIRE_OK(io_video_read(v, &f, &t, &eof));
            if (eof)
                break;
            if (n[pass] == 0) {
                CHECK(to_i420(&f, io_video_stream(v), pass ? again : first));
                CHECK(t == 0.0 || pass == 0);
            }
            n[pass]++;
        }
        if (pass == 0)
            REQUIRE_OK(io_video_rewind(v));
    }
    CHECK(n[0] == 24 && n[1] == 24);
    CHECK(first && again && memcmp(first, again, bytes) == 0);
    free(first);
    free(again);
    io_video_close(v);
}

static void rewind_keeps_decoding_now(void)
{
    rewind_keeps_decoding(0);
}

static void rewind_keeps_decoding_ahead(void)
{
    rewind_keeps_decoding(1);
}

/* One more context would cost hundreds of MiB; decoding costs its
 * surfaces only. */
static void no_context_of_its_own(void)
{
    size_t before = free_memory();
    io_video *v = NULL;
    io_video_options go = {IO_DECODE_GPU, dev, 0, NULL, 0, NULL};
    REQUIRE_OK(io_video_open_with(CLIPS "/pan_h264.mp4", &go, &v));
    omma_frame f;
    double t;
    int eof = 0;
    REQUIRE_OK(io_video_read(v, &f, &t, &eof));
    size_t during = free_memory();
    io_video_close(v);
    size_t after = free_memory();
    double used = before > during ? (double)(before - during) / (1 << 20) : 0.0;
    double kept = before > after ? (double)(before - after) / (1 << 20) : 0.0;
    double context = (double)extra_context_cost(dev) / (1 << 20);
    fprintf(stderr,
            "a 640x480 GPU decoder: %.1f MiB of device memory while open, %.1f MiB kept "
            "after close; one more context: %.1f MiB\n",
            used, kept, context);
    CHECK(context > 0.0 && used < context / 2);
    CHECK(kept < 8.0);
}

/* Child mode: decodes path on the GPU to its end; exit 0 when it ended
 * with OMMA_OK or an error naming the file, 2 otherwise. */
static int read_damaged(const char *path, int ahead)
{
    omma_device *d = NULL;
    if (omma_device_open(0, &d) != OMMA_OK)
        return 3;
    io_video *v = NULL;
    io_video_options go = {IO_DECODE_GPU, d, 0, NULL, ahead, NULL};
    omma_status st = io_video_open_with(path, &go, &v);
    long frames = 0;
    while (st == OMMA_OK) {
        omma_frame f;
        double t;
        int eof = 0;
        st = io_video_read(v, &f, &t, &eof);
        if (st != OMMA_OK || eof)
            break;
        frames++;
    }
    io_video_stats vs;
    io_video_get_stats(v, &vs);
    printf("%s: %ld frames (%ld concealed, %ld packets refused): %s %s\n", path, frames,
           vs.damaged_frames, vs.dropped_packets, omma_status_str(st),
           st == OMMA_OK ? "" : omma_last_error());
    int named = st == OMMA_OK || strstr(omma_last_error(), path) != NULL;
    io_video_close(v);
    omma_device_close(d);
    return named ? 0 : 2;
}

/* A damaged copy of src: kind 0 flips bytes in the middle third, 1 zeroes
 * a run, 2 swaps two chunks, 3 cuts the file at 60%, 4 flips bytes all
 * over its second half. */
static int damage(const char *src, const char *dst, int kind, unsigned seed)
{
    FILE *f = fopen(src, "rb");
    if (!f)
        return 0;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n);
    int ok = b && fread(b, 1, (size_t)n, f) == (size_t)n;
    fclose(f);
    long keep = n;
    for (int i = 0; ok && i < 64; i++) {
        seed = seed * 1103515245u + 12345u;
        long at = n / 3 + (long)(seed % (unsigned)(n / 3));
        if (kind == 0 && i < 24)
            b[at] ^= (uint8_t)(1u << (seed >> 28 & 7));
        if (kind == 1 && i == 0)
            memset(b + at, 0, (size_t)(n - at < 4096 ? n - at : 4096));
        if (kind == 2 && i == 0 && n > 8192) {
            long other = n / 2 + (long)(seed % (unsigned)(n / 2 - 4096));
            for (int k = 0; k < 2048 && at + k < n && other + k < n; k++) {
                uint8_t t = b[at + k];
                b[at + k] = b[other + k];
                b[other + k] = t;
            }
        }
        if (kind == 4)
            b[n / 2 + (long)(seed % (unsigned)(n / 2))] ^= 0x55;
    }
    if (kind == 3)
        keep = n * 6 / 10;
    FILE *o = ok ? fopen(dst, "wb") : NULL;
    ok = o && fwrite(b, 1, (size_t)keep, o) == (size_t)keep;
    if (o)
        ok = fclose(o) == 0 && ok;
    free(b);
    return ok;
}

static char self[4096];

static void damaged_copies_on_gpu(void)
{
    static const char *const clips[] = {"pan_h264.mp4", "pan_hevc.mp4", "pan_vp9.webm",
                                        "pan_mjpeg.avi", "pan1080_h264.mp4"};
    char dir[] = "/tmp/omma-gpu-damaged-XXXXXX";
    REQUIRE(mkdtemp(dir) != NULL);
    int runs = 0, bad = 0;
    for (size_t c = 0; c < sizeof clips / sizeof *clips; c++)
        for (int kind = 0; kind < 5; kind++) {
            char src[512], dst[600];
            snprintf(src, sizeof src, "%s/%s", CLIPS, clips[c]);
            snprintf(dst, sizeof dst, "%s/%d_%s", dir, kind, clips[c]);
            if (!damage(src, dst, kind, 7u + (unsigned)kind * 31u + (unsigned)c)) {
                bad++;
                continue;
            }
            fflush(NULL);
            pid_t pid = fork();
            if (pid == 0) {
                alarm(60); /* a decode that takes longer has hung */
                /* Every other copy with the next picture decoded ahead, as
                 * the runtime's file cameras read. */
                execl(self, self, kind & 1 ? "--read-ahead" : "--read", dst, (char *)NULL);
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
    fprintf(stderr, "%d damaged copies decoded on the GPU, %d failures\n", runs, bad);
    CHECK(runs == 25 && bad == 0);
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--read") == 0)
        return read_damaged(argv[2], 0);
    if (argc == 3 && strcmp(argv[1], "--read-ahead") == 0)
        return read_damaged(argv[2], 1);
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        return 1;
    self[len] = '\0';
    gpu_test_require_device();
    if (!io_video_available())
        SKIP_TEST("built without FFmpeg");
    if (!exists(CLIPS "/pan_h264.mp4"))
        SKIP_TEST("no " CLIPS " (scripts/make-decode-clips.sh makes it)");
    if (omma_device_open(0, &dev) != OMMA_OK) {
        fprintf(stderr, "omma_device_open: %s\n", omma_last_error());
        return 1;
    }
    RUN(no_context_of_its_own);
    RUN(bit_exact_codecs);
    RUN(mjpeg_close);
    RUN(ten_bit_refused_or_cpu);
    RUN(rewind_keeps_decoding_now);
    RUN(rewind_keeps_decoding_ahead);
    RUN(damaged_copies_on_gpu);
    omma_device_close(dev);
    return testing_finish();
}
