#define _DEFAULT_SOURCE /* mkdtemp, usleep */
/* The multi-camera runtime on the GPU (runtime/runtime.h):
 *   - four cameras reading image sequences (PNG files of the astronaut
 *     photo panned over a canvas) as fast as they decode, batched across
 *     cameras on three lanes with graphs: every camera's results are
 *     bitwise those of the single-camera pipeline (one frame at a time,
 *     graphs off) on the same frames, in order, none dropped; with two GPUs
 *     or more, the cameras spread over two of them and the results are the
 *     same whichever GPU ran them;
 *   - a camera whose sequence breaks mid-run (a corrupt file, a file
 *     removed) is reported failed, naming the file, after its good frames;
 *     the other cameras go on to their end;
 *   - a source that cannot be opened fails the start, naming it;
 *   - 48 synthetic cameras at 240 fps, stopped while frames are in flight:
 *     wait returns, results per camera in order, the counts add up, and
 *     afterwards the device memory and the threads are those of before;
 *   - the live view's previews (runtime/preview.h) made on the GPU from
 *     the ring: none until wanted, then the wanted cameras' only, at the
 *     sizes asked, not blank; their buffers freed with the runtime. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/gpu_testing.h"
#include "omma/pipeline.h"
#include "core/clock.h"
#include "runtime/preview.h"
#include "runtime/runtime.h"
#include "support/face_inputs.h"
#include "testing.h"

#define FRAMES 10
#define CAMERAS 4
#define W 480
#define H 400
#define MAX_FACES 2
#define SYNTH 48

#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        omma_status st_ = (expr);                                                                  \
        if (st_ != OMMA_OK)                                                                        \
            fprintf(stderr, "%s: %s\n", #expr, omma_last_error());                                 \
        CHECK(st_ == OMMA_OK);                                                                     \
    } while (0)

static io_image photo;
static char dir_good[64], dir_bad[64];

/* Frame k: the photo at (10 + 9k, 8), the rest grey. */
static void canvas(int k, uint8_t *rgb)
{
    memset(rgb, 90, (size_t)W * H * 3);
    int ox = 10 + 9 * k, oy = 8;
    for (int y = 0; y < photo.height && y + oy < H; y++) {
        int n = photo.width < W - ox ? photo.width : W - ox;
        memcpy(rgb + ((size_t)(y + oy) * W + (size_t)ox) * 3,
               photo.rgb + (size_t)y * (size_t)photo.width * 3, (size_t)n * 3);
    }
}

static int write_sequences(void)
{
    strcpy(dir_good, "/tmp/omma-rt-good-XXXXXX");
    strcpy(dir_bad, "/tmp/omma-rt-bad-XXXXXX");
    if (!mkdtemp(dir_good) || !mkdtemp(dir_bad))
        return 0;
    uint8_t *rgb = malloc((size_t)W * H * 3);
    if (!rgb)
        return 0;
    int ok = 1;
    for (int k = 0; k < FRAMES && ok; k++) {
        canvas(k, rgb);
        char path[128];
        snprintf(path, sizeof path, "%s/f%03d.png", dir_good, k);
        ok = io_image_save_png(path, rgb, W, H, W * 3) == OMMA_OK;
        snprintf(path, sizeof path, "%s/f%03d.png", dir_bad, k);
        if (ok && k != 5)
            ok = io_image_save_png(path, rgb, W, H, W * 3) == OMMA_OK;
        if (ok && k == 5) { /* a corrupt file: a PNG cut short */
            FILE *f = fopen(path, "wb");
            ok = f && fwrite("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 1, 16, f) == 16;
            if (f)
                fclose(f);
        }
    }
    free(rgb);
    return ok;
}

static void remove_dir(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            char path[512];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    if (d)
        closedir(d);
    rmdir(dir);
}

/* The reference: each frame through the pipeline alone, graphs off. */
static omma_face ref_faces[FRAMES][MAX_FACES];
static int ref_counts[FRAMES];

static void make_reference(void)
{
    omma_face_pipeline_options o;
    omma_face_pipeline_options_init(&o);
    o.backend = OMMA_BACKEND_CUDA;
    o.detector_model = FACE_MODEL_SHORT;
    o.mesh_model = FACE_MODEL_MESH;
    o.max_faces = MAX_FACES;
    o.max_batch = 1;
    o.graphs = 0;
    omma_face_pipeline *p = NULL;
    REQUIRE_OK(omma_face_pipeline_create(&o, &p));
    uint8_t *rgb = malloc((size_t)W * H * 3);
    REQUIRE(rgb != NULL);
    for (int k = 0; k < FRAMES; k++) {
        canvas(k, rgb);
        omma_frame f = {W, H, OMMA_PIXEL_RGB, {rgb, NULL, NULL}, {W * 3, 0, 0}, OMMA_MEMORY_HOST};
        REQUIRE_OK(omma_face_pipeline_process(p, 7, &f, ref_faces[k], MAX_FACES, &ref_counts[k]));
    }
    free(rgb);
    omma_face_pipeline_destroy(p);
}

typedef struct collected {
    pthread_mutex_t lock;
    int frames[CAMERAS + 2];
    int mismatches, out_of_order, dropped, gpu_used[RT_MAX_GPUS];
    int failed[CAMERAS + 2], ended[CAMERAS + 2];
    char detail[CAMERAS + 2][512];
    uint64_t last_seq[SYNTH];
    int synth_results;
} collected;

static void on_result(void *ctx, const rt_result *r)
{
    collected *c = ctx;
    pthread_mutex_lock(&c->lock);
    int k = (int)r->seq - 1;
    if (r->camera < CAMERAS + 2) {
        if (k != c->frames[r->camera])
            c->out_of_order++;
        c->frames[r->camera]++;
        if (k >= 0 && k < FRAMES &&
            (r->n_faces != ref_counts[k] ||
             memcmp(r->faces, ref_faces[k], (size_t)r->n_faces * sizeof *r->faces) != 0))
            c->mismatches++;
    }
    c->dropped += (int)r->dropped;
    c->gpu_used[r->gpu]++;
    pthread_mutex_unlock(&c->lock);
}

static void on_camera(void *ctx, const rt_camera_event *e)
{
    collected *c = ctx;
    pthread_mutex_lock(&c->lock);
    if (e->camera < CAMERAS + 2) {
        c->failed[e->camera] = e->state == METRICS_CAMERA_FAILED;
        c->ended[e->camera] = e->state == METRICS_CAMERA_ENDED;
        snprintf(c->detail[e->camera], sizeof c->detail[0], "%s", e->detail ? e->detail : "");
    }
    pthread_mutex_unlock(&c->lock);
}

static void base_config(rt_runtime_config *cfg, collected *c)
{
    rt_runtime_config_init(cfg);
    cfg->pipeline.detector_model = FACE_MODEL_SHORT;
    cfg->pipeline.mesh_model = FACE_MODEL_MESH;
    cfg->pipeline.max_faces = MAX_FACES;
    cfg->pipeline.max_batch = 8;
    cfg->pipeline.lanes = 3;
    cfg->max_wait_ms = 2;
    cfg->source.realtime = 0;
    cfg->on_result = on_result;
    cfg->on_camera = on_camera;
    cfg->ctx = c;
}

static void run_sequences(int n_gpus)
{
    static collected c;
    memset(&c, 0, sizeof c);
    pthread_mutex_init(&c.lock, NULL);
    rt_camera_config cams[CAMERAS + 1];
    for (int i = 0; i < CAMERAS; i++)
        cams[i] = (rt_camera_config){dir_good, NULL, 0, NULL, NULL};
    cams[CAMERAS] = (rt_camera_config){dir_bad, NULL, 0, NULL, NULL};
    int gpus[2] = {0, 1};
    rt_runtime_config cfg;
    base_config(&cfg, &c);
    cfg.n_cameras = CAMERAS + 1;
    cfg.cameras = cams;
    cfg.n_gpus = n_gpus;
    cfg.gpus = gpus;
    rt_runtime *rt = NULL;
    REQUIRE_OK(rt_runtime_start(&cfg, &rt));
    CHECK_OK(rt_runtime_wait(rt, 120000));
    rt_runtime_stats s;
    rt_runtime_get_stats(rt, &s);
    rt_runtime_destroy(rt);
    for (int i = 0; i < CAMERAS; i++) {
        CHECK(c.frames[i] == FRAMES);
        CHECK(c.ended[i] && !c.failed[i]);
    }
    CHECK(c.mismatches == 0);
    CHECK(c.out_of_order == 0);
    CHECK(c.dropped == 0);
    /* The broken sequence: its five good frames, then the failure named. */
    CHECK(c.frames[CAMERAS] == 5);
    CHECK(c.failed[CAMERAS]);
    CHECK(strstr(c.detail[CAMERAS], "f005.png") != NULL);
    if (!strstr(c.detail[CAMERAS], "f005.png"))
        fprintf(stderr, "failure detail: %s\n", c.detail[CAMERAS]);
    CHECK(s.frames_done == (uint64_t)(CAMERAS * FRAMES + 5));
    CHECK(s.d2h_copies == s.batches); /* one result copy per batch */
    for (int g = 0; g < n_gpus; g++)
        CHECK(c.gpu_used[g] > 0); /* round-robin: both GPUs ran frames */
    fprintf(stderr,
            "%d GPU(s): %llu frames in %llu batches, %llu launches, h2d %llu copies, d2h %llu "
            "copies\n",
            n_gpus, (unsigned long long)s.frames_done, (unsigned long long)s.batches,
            (unsigned long long)s.launches, (unsigned long long)s.h2d_copies,
            (unsigned long long)s.d2h_copies);
    pthread_mutex_destroy(&c.lock);
}

static void test_sequences_match_single_camera(void)
{
    run_sequences(1);
}

static void test_two_gpus_same_results(void)
{
    int n = 0;
    REQUIRE_OK(omma_device_count(&n));
    if (n < 2) {
        fprintf(stderr, "one GPU: the two-GPU run is left to a machine with two\n");
        return;
    }
    run_sequences(2);
}

static void test_missing_source_fails_start(void)
{
    collected c;
    memset(&c, 0, sizeof c);
    rt_camera_config cams[2] = {{dir_good, NULL, 0, NULL, NULL},
                                {"/tmp/omma-no-such-dir/%03d.png", NULL, 0, NULL, NULL}};
    int gpu = 0;
    rt_runtime_config cfg;
    base_config(&cfg, &c);
    cfg.n_cameras = 2;
    cfg.cameras = cams;
    cfg.n_gpus = 1;
    cfg.gpus = &gpu;
    rt_runtime *rt = NULL;
    CHECK(rt_runtime_start(&cfg, &rt) != OMMA_OK);
    CHECK(strstr(omma_last_error(), "omma-no-such-dir") != NULL);
    CHECK(rt == NULL);
    cfg.n_gpus = 0;
    CHECK_FAILS(rt_runtime_start(&cfg, &rt), OMMA_ERR_INVALID_ARG, "0 GPUs");
}

static int threads_now(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static void test_stop_with_frames_in_flight(void)
{
    static collected c;
    memset(&c, 0, sizeof c);
    pthread_mutex_init(&c.lock, NULL);
    omma_device *dev = NULL; /* held open, so its counters span the run */
    REQUIRE_OK(omma_device_open(0, &dev));
    omma_memory_stats m0, m1;
    REQUIRE_OK(omma_device_get_memory_stats(dev, &m0));
    int threads0 = threads_now();
    static rt_camera_config cams[SYNTH];
    for (int i = 0; i < SYNTH; i++)
        cams[i] = (rt_camera_config){NULL, NULL, 0, NULL, NULL};
    int gpu = 0;
    rt_runtime_config cfg;
    base_config(&cfg, &c);
    cfg.n_cameras = SYNTH;
    cfg.cameras = cams;
    cfg.n_gpus = 1;
    cfg.gpus = &gpu;
    cfg.photo = &photo;
    cfg.synthetic.width = 640;
    cfg.synthetic.height = 480;
    cfg.synthetic.fps = 240;
    cfg.pool_frames = 16;
    cfg.synthetic_per_thread = 8;
    cfg.pipeline.max_batch = 16;
    rt_runtime *rt = NULL;
    REQUIRE_OK(rt_runtime_start(&cfg, &rt));
    usleep(400000);
    rt_runtime_stop(rt);
    CHECK_OK(rt_runtime_wait(rt, 30000));
    rt_runtime_stats s;
    rt_runtime_get_stats(rt, &s);
    rt_runtime_destroy(rt);
    REQUIRE_OK(omma_device_get_memory_stats(dev, &m1));
    fprintf(stderr,
            "stop: %llu frames in, %llu done, %llu dropped, %llu batches; live allocations "
            "%llu -> %llu, pinned %llu -> %llu; threads %d -> %d\n",
            (unsigned long long)s.frames_in, (unsigned long long)s.frames_done,
            (unsigned long long)s.frames_dropped, (unsigned long long)s.batches,
            (unsigned long long)m0.live_allocations, (unsigned long long)m1.live_allocations,
            (unsigned long long)m0.pinned_bytes, (unsigned long long)m1.pinned_bytes, threads0,
            threads_now());
    CHECK(s.frames_done > 0);
    CHECK(s.frames_done + s.frames_dropped <= s.frames_in);
    CHECK(m1.live_allocations == m0.live_allocations);
    CHECK(m1.pinned_bytes == m0.pinned_bytes);
    if (!getenv("OMMA_TEST_SANITIZER")) /* the tool runs threads of its own */
        CHECK(threads_now() == threads0);
    omma_device_close(dev);
    pthread_mutex_destroy(&c.lock);
}

/* A preview's mean and spread over its bytes. */
static void image_stats(const rt_preview_image *img, double *mean, double *sd)
{
    size_t n = (size_t)img->w * (size_t)img->h * 3;
    double s = 0, s2 = 0;
    for (size_t i = 0; i < n; i++)
        s += img->rgb[i], s2 += (double)img->rgb[i] * img->rgb[i];
    *mean = s / (double)n;
    *sd = sqrt(s2 / (double)n - *mean * *mean);
}

static void test_previews_from_the_ring(void)
{
    static collected c;
    memset(&c, 0, sizeof c);
    pthread_mutex_init(&c.lock, NULL);
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    omma_memory_stats m0, m1;
    REQUIRE_OK(omma_device_get_memory_stats(dev, &m0));
    enum { N = 8 };
    static rt_camera_config cams[N];
    for (int i = 0; i < N; i++)
        cams[i] = (rt_camera_config){NULL, NULL, 0, NULL, NULL};
    int gpu = 0;
    rt_preview *p = NULL;
    REQUIRE_OK(rt_preview_create(N, &p));
    rt_runtime_config cfg;
    base_config(&cfg, &c);
    cfg.n_cameras = N;
    cfg.cameras = cams;
    cfg.n_gpus = 1;
    cfg.gpus = &gpu;
    cfg.photo = &photo;
    cfg.synthetic.width = 640;
    cfg.synthetic.height = 480;
    cfg.synthetic.fps = 60;
    cfg.pool_frames = 16;
    cfg.pipeline.max_batch = 8;
    cfg.preview = p;
    rt_runtime *rt = NULL;
    REQUIRE_OK(rt_runtime_start(&cfg, &rt));
    usleep(300000);
    uint64_t unwanted = rt_preview_count(p);
    for (int t = 0; t < 100 && rt_preview_count(p) < 6; t++) {
        uint64_t now = core_now_ns();
        rt_preview_want(p, 3, 320, 50000000ull, now);
        rt_preview_want(p, 5, RT_PREVIEW_MAX_SIDE, 50000000ull, now);
        usleep(100000);
    }
    rt_runtime_stop(rt);
    CHECK_OK(rt_runtime_wait(rt, 30000));
    rt_runtime_destroy(rt);
    REQUIRE_OK(omma_device_get_memory_stats(dev, &m1));
    fprintf(stderr, "previews: %llu before any want, %llu after\n", (unsigned long long)unwanted,
            (unsigned long long)rt_preview_count(p));
    CHECK(unwanted == 0);
    CHECK(rt_preview_count(p) >= 6);
    rt_preview_image img = {0};
    for (int cam = 0; cam < N; cam++) {
        img.version = 0; /* any image of this camera (versions are per camera) */
        int got = rt_preview_get(p, cam, &img);
        CHECK(got == (cam == 3 || cam == 5));
        if (got != 1)
            continue;
        double mean, sd;
        image_stats(&img, &mean, &sd);
        fprintf(stderr, "  camera %d: %dx%d of %dx%d, seq %llu, mean %.1f, sd %.1f\n", cam, img.w,
                img.h, img.frame_w, img.frame_h, (unsigned long long)img.seq, mean, sd);
        CHECK(img.frame_w == 640 && img.frame_h == 480 && img.seq > 0);
        CHECK(cam == 3 ? img.w == 320 && img.h == 240 : img.w == 640 && img.h == 480);
        CHECK(mean > 20 && mean < 235 && sd > 10); /* the photo, not a blank */
    }
    free(img.rgb);
    rt_preview_destroy(p);
    CHECK(m1.live_allocations == m0.live_allocations);
    CHECK(m1.pinned_bytes == m0.pinned_bytes);
    omma_device_close(dev);
    pthread_mutex_destroy(&c.lock);
}

int main(void)
{
    gpu_test_require_device();
    if (io_image_load(FACE_PHOTO, &photo) != OMMA_OK) {
        fprintf(stderr, "%s: %s (run scripts/fetch-testdata.sh)\n", FACE_PHOTO, omma_last_error());
        return 1;
    }
    if (!write_sequences()) {
        fprintf(stderr, "cannot write the image sequences under /tmp\n");
        return 1;
    }
    make_reference();
    RUN(test_sequences_match_single_camera);
    RUN(test_two_gpus_same_results);
    RUN(test_missing_source_fails_start);
    RUN(test_stop_with_frames_in_flight);
    RUN(test_previews_from_the_ring);
    remove_dir(dir_good);
    remove_dir(dir_bad);
    io_image_free(&photo);
    return testing_finish();
}
