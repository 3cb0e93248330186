#define _DEFAULT_SOURCE
/* The runtime with videos decoded on the GPU (rt_source_options.decode):
 * the clips of scripts/make-decode-clips.sh (H.264 and HEVC, 24 frames
 * each, two cameras) run once decoded on the CPU and once on the GPU
 * (NVDEC, frames copied once device to device into the rings), as fast as
 * they decode: the same frames reach the pipeline, so every frame's faces
 * match (counts equal, landmarks within 0.05 px: the pipeline reads NV12
 * instead of I420, the same samples); no frame is dropped; and what crossed
 * PCIe for the GPU-decoded frames is their compressed size (the difference
 * between the two runs' host-to-device bytes is the decoded frames' bytes
 * less at most the files' sizes). decode AUTO fills the GPU's decoding
 * budget, then decodes on the CPU. Skipped (77) without a GPU, FFmpeg
 * or the clips. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "gpu/gpu_testing.h"
#include "runtime/runtime.h"
#include "support/face_inputs.h"
#include "testing.h"

#define CLIPS OMMA_TESTDATA_DIR "/decode"
#define FRAMES 24
#define CAMS 2
#define MAX_FACES 2

static const char *const clip[CAMS] = {CLIPS "/pan_h264.mp4", CLIPS "/pan_hevc.mp4"};

typedef struct run {
    pthread_mutex_t lock;
    int frames[CAMS], dropped, failed;
    int counts[CAMS][FRAMES];
    omma_face faces[CAMS][FRAMES][MAX_FACES];
    rt_runtime_stats stats;
} run;

static void on_result(void *ctx, const rt_result *r)
{
    run *c = ctx;
    pthread_mutex_lock(&c->lock);
    int k = (int)r->seq - 1;
    if (r->camera < CAMS && k >= 0 && k < FRAMES) {
        c->frames[r->camera]++;
        c->counts[r->camera][k] = r->n_faces;
        memcpy(c->faces[r->camera][k], r->faces,
               (size_t)(r->n_faces < MAX_FACES ? r->n_faces : MAX_FACES) * sizeof *r->faces);
    }
    c->dropped += (int)r->dropped;
    pthread_mutex_unlock(&c->lock);
}

static void on_camera(void *ctx, const rt_camera_event *e)
{
    run *c = ctx;
    if (e->state == METRICS_CAMERA_FAILED) {
        fprintf(stderr, "camera %d failed: %s\n", e->camera, e->detail ? e->detail : "");
        c->failed++;
    }
}

static int run_clips_of(const char *const *specs, long max_frames, io_decode decode,
                        int gpu_streams, run *c)
{
    memset(c, 0, sizeof *c);
    pthread_mutex_init(&c->lock, NULL);
    rt_camera_config cams[CAMS];
    for (int i = 0; i < CAMS; i++)
        cams[i] = (rt_camera_config){specs[i], NULL, max_frames, NULL, NULL};
    int gpus[1] = {0};
    rt_runtime_config cfg;
    rt_runtime_config_init(&cfg);
    cfg.pipeline.detector_model = FACE_MODEL_SHORT;
    cfg.pipeline.mesh_model = FACE_MODEL_MESH;
    cfg.pipeline.max_faces = MAX_FACES;
    cfg.pipeline.max_batch = 4;
    cfg.source.realtime = 0;
    cfg.source.decode = decode;
    cfg.decode_gpu_streams = gpu_streams;
    cfg.n_cameras = CAMS;
    cfg.cameras = cams;
    cfg.n_gpus = 1;
    cfg.gpus = gpus;
    cfg.on_result = on_result;
    cfg.on_camera = on_camera;
    cfg.ctx = c;
    rt_runtime *rt = NULL;
    if (rt_runtime_start(&cfg, &rt) != OMMA_OK) {
        fprintf(stderr, "start: %s\n", omma_last_error());
        return 0;
    }
    omma_status st = rt_runtime_wait(rt, 120000);
    rt_runtime_get_stats(rt, &c->stats);
    rt_runtime_destroy(rt);
    pthread_mutex_destroy(&c->lock);
    return st == OMMA_OK;
}

static int run_clips(io_decode decode, int gpu_streams, run *c)
{
    return run_clips_of(clip, 0, decode, gpu_streams, c);
}

static long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

static void gpu_decoded_faces_match_cpu_decoded(void)
{
    static run cpu, gpu;
    REQUIRE(run_clips(IO_DECODE_CPU, 0, &cpu));
    REQUIRE(run_clips(IO_DECODE_GPU, 0, &gpu));
    double worst = 0.0;
    int count_mismatch = 0, faces = 0;
    for (int i = 0; i < CAMS; i++) {
        CHECK(cpu.frames[i] == FRAMES && gpu.frames[i] == FRAMES);
        for (int k = 0; k < FRAMES; k++) {
            if (cpu.counts[i][k] != gpu.counts[i][k]) {
                count_mismatch++;
                continue;
            }
            for (int f = 0; f < cpu.counts[i][k] && f < MAX_FACES; f++, faces++)
                for (int p = 0; p < OMMA_FACE_LANDMARKS; p++) {
                    double dx =
                        cpu.faces[i][k][f].landmarks[p][0] - gpu.faces[i][k][f].landmarks[p][0];
                    double dy =
                        cpu.faces[i][k][f].landmarks[p][1] - gpu.faces[i][k][f].landmarks[p][1];
                    double d = sqrt(dx * dx + dy * dy);
                    if (d > worst)
                        worst = d;
                }
        }
    }
    fprintf(stderr, "%d faces compared, count mismatches %d, largest landmark difference %.4f px\n",
            faces, count_mismatch, worst);
    CHECK(count_mismatch == 0);
    CHECK(faces >= CAMS * FRAMES);
    CHECK(worst <= 0.05);
    CHECK(cpu.dropped == 0 && gpu.dropped == 0 && cpu.failed == 0 && gpu.failed == 0);

    /* PCIe: the CPU run uploaded every decoded frame; the GPU run only the
     * compressed packets. Everything else (results, set-up) is the same. */
    uint64_t frame_bytes = 640 * 480 * 3 / 2, decoded = (uint64_t)CAMS * FRAMES * frame_bytes;
    uint64_t files = (uint64_t)(file_size(clip[0]) + file_size(clip[1]));
    uint64_t saved = cpu.stats.h2d_bytes - gpu.stats.h2d_bytes;
    fprintf(stderr,
            "host-to-device bytes: CPU decode %llu, GPU decode %llu (decoded frames %llu, files "
            "%llu): %.0f compressed bytes per GPU-decoded frame\n",
            (unsigned long long)cpu.stats.h2d_bytes, (unsigned long long)gpu.stats.h2d_bytes,
            (unsigned long long)decoded, (unsigned long long)files,
            (double)(decoded - saved) / (CAMS * FRAMES));
    CHECK(cpu.stats.h2d_bytes > gpu.stats.h2d_bytes);
    /* At most the files' bytes, plus the sequence headers NVDEC's parser is
     * given again before each key frame (MP4's H.264 turned into Annex B). */
    CHECK(saved <= decoded && saved + files + files / 50 >= decoded);
}

/* Auto within a budget of one 1080p30 stream per GPU: of two 1080p30
 * cameras, one is decoded on the GPU and the other on the CPU (its frames
 * uploaded); with no limit both on the GPU. */
static void auto_fills_the_gpu_then_the_cpu(void)
{
    static run limited, unlimited;
    const char *big[CAMS] = {CLIPS "/pan1080_h264.mp4", CLIPS "/pan1080_h264.mp4"};
    REQUIRE(run_clips_of(big, 30, IO_DECODE_AUTO, 1, &limited));
    REQUIRE(run_clips_of(big, 30, IO_DECODE_AUTO, 0, &unlimited));
    uint64_t frames_bytes = 30ull * 1920 * 1080 * 3 / 2;
    fprintf(stderr,
            "auto, 2 x 1080p30: h2d %llu bytes with a budget of one stream, %llu without "
            "(30 frames: %llu bytes)\n",
            (unsigned long long)limited.stats.h2d_bytes,
            (unsigned long long)unlimited.stats.h2d_bytes, (unsigned long long)frames_bytes);
    CHECK(limited.stats.h2d_bytes >= frames_bytes && limited.stats.h2d_bytes < 2 * frames_bytes);
    CHECK(unlimited.stats.h2d_bytes < frames_bytes / 4);
    CHECK(limited.failed == 0 && unlimited.failed == 0);
}

int main(void)
{
    gpu_test_require_device();
    struct stat sb;
    if (stat(clip[0], &sb) != 0 || stat(clip[1], &sb) != 0)
        SKIP_TEST("no " CLIPS " (scripts/make-decode-clips.sh makes it)");
    RUN(gpu_decoded_faces_match_cpu_decoded);
    RUN(auto_fills_the_gpu_then_the_cpu);
    return testing_finish();
}
