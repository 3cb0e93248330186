#define _DEFAULT_SOURCE /* mkdtemp, usleep */
/* The multi-camera runtime on the CPU (runtime/runtime.h, pipeline.backend
 * OMMA_BACKEND_CPU; no GPU needed):
 *   - two cameras reading an image sequence (PNG files of the astronaut
 *     photo panned over a canvas) and one reading testdata/astronaut_pan.mp4
 *     (skipped without libav), as fast as they decode, the models on two
 *     threads: every frame comes out once, in order (seq 1, 2, ...), none
 *     dropped, with gpu -1, one face each, and bitwise the faces of the
 *     single-camera CPU pipeline on one thread over the same frames;
 *   - a camera whose sequence breaks mid-run is reported failed, naming the
 *     file, after its good frames; the others go on to their end;
 *   - a source that cannot be opened fails the start, naming it; a bad
 *     thread count and a bad synthetic frame size are refused;
 *   - three live synthetic cameras at 100 fps (faster than the CPU): frames
 *     are dropped, counted (every frame in is processed or dropped), each
 *     camera's seq increases, the faces found lie on the known face box;
 *     the live view's previews: none until one is wanted, then only the
 *     wanted camera's, at the size asked (runtime/preview.h);
 *     stopped mid-run, wait returns and no thread is left. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "io/video_file.h"
#include "omma/pipeline.h"
#include "runtime/preview.h"
#include "runtime/runtime.h"
#include "support/face_inputs.h"
#include "testing.h"

#define FRAMES 8
#define W 480
#define H 400
#define MAX_FACES 2
#define VIDEO OMMA_TESTDATA_DIR "/astronaut_pan.mp4"
#define VIDEO_FRAMES 24
#define SEQ_CAMS 2
#define MAX_CAMS 4
#define SYNTH 3

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
    strcpy(dir_good, "/tmp/omma-rtc-good-XXXXXX");
    strcpy(dir_bad, "/tmp/omma-rtc-bad-XXXXXX");
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

static omma_face_pipeline *single_camera_pipeline(void)
{
    omma_face_pipeline_options o;
    omma_face_pipeline_options_init(&o);
    o.backend = OMMA_BACKEND_CPU;
    o.detector_model = FACE_MODEL_SHORT;
    o.mesh_model = FACE_MODEL_MESH;
    o.max_faces = MAX_FACES;
    o.max_batch = 1;
    o.threads = 1;
    omma_face_pipeline *p = NULL;
    if (omma_face_pipeline_create(&o, &p) != OMMA_OK)
        fprintf(stderr, "reference pipeline: %s\n", omma_last_error());
    return p;
}

/* The references: each source's frames through the pipeline alone, one
 * thread. */
static omma_face seq_faces[FRAMES][MAX_FACES], video_faces[VIDEO_FRAMES][MAX_FACES];
static int seq_counts[FRAMES], video_counts[VIDEO_FRAMES], video_frames;

static int make_references(void)
{
    omma_face_pipeline *p = single_camera_pipeline();
    uint8_t *rgb = malloc((size_t)W * H * 3);
    int ok = p && rgb;
    for (int k = 0; k < FRAMES && ok; k++) {
        canvas(k, rgb);
        omma_frame f = {W, H, OMMA_PIXEL_RGB, {rgb, NULL, NULL}, {W * 3, 0, 0}, OMMA_MEMORY_HOST};
        ok = omma_face_pipeline_process(p, 0, &f, seq_faces[k], MAX_FACES, &seq_counts[k]) ==
             OMMA_OK;
    }
    free(rgb);
    io_video *v = NULL;
    if (ok && io_video_available())
        ok = io_video_open(VIDEO, &v) == OMMA_OK;
    while (ok && v) {
        omma_frame f;
        double ts;
        int eof = 0;
        ok = io_video_read(v, &f, &ts, &eof) == OMMA_OK && video_frames <= VIDEO_FRAMES;
        if (!ok || eof)
            break;
        ok = video_frames < VIDEO_FRAMES &&
             omma_face_pipeline_process(p, 1, &f, video_faces[video_frames], MAX_FACES,
                                        &video_counts[video_frames]) == OMMA_OK;
        video_frames++;
    }
    if (!ok)
        fprintf(stderr, "references: %s\n", omma_last_error());
    io_video_close(v);
    omma_face_pipeline_destroy(p);
    return ok;
}

typedef struct collected {
    pthread_mutex_t lock;
    int frames[MAX_CAMS + SYNTH];
    int mismatches, out_of_order, dropped, not_cpu, faceless;
    int failed[MAX_CAMS], ended[MAX_CAMS];
    char detail[MAX_CAMS][512];
    /* Synthetic cameras. */
    uint64_t last_seq[SYNTH];
    int synth_results, synth_dropped, on_truth, with_truth;
} collected;

static float overlap(const omma_box *a, const omma_box *b)
{
    float w = fminf(a->xmax, b->xmax) - fmaxf(a->xmin, b->xmin);
    float h = fminf(a->ymax, b->ymax) - fmaxf(a->ymin, b->ymin);
    if (w <= 0 || h <= 0)
        return 0.0f;
    float inter = w * h;
    float area =
        (a->xmax - a->xmin) * (a->ymax - a->ymin) + (b->xmax - b->xmin) * (b->ymax - b->ymin);
    return inter / (area - inter);
}

/* Cameras: 0..SEQ_CAMS-1 the good sequence, SEQ_CAMS the video (when
 * run), then the broken sequence. */
static int video_cam = -1, bad_cam = -1, synthetic_run;

static void on_result(void *ctx, const rt_result *r)
{
    collected *c = ctx;
    pthread_mutex_lock(&c->lock);
    c->not_cpu += r->gpu != -1;
    if (synthetic_run) {
        if (r->camera < SYNTH) {
            c->out_of_order += r->seq <= c->last_seq[r->camera];
            c->last_seq[r->camera] = r->seq;
            c->synth_dropped += (int)r->dropped;
            c->synth_results++;
            if (r->truth) {
                c->with_truth++;
                c->on_truth += r->n_faces == 1 && overlap(&r->faces[0].box, r->truth) > 0.5f;
            }
        }
        pthread_mutex_unlock(&c->lock);
        return;
    }
    int k = (int)r->seq - 1;
    if (r->camera < MAX_CAMS) {
        if (k != c->frames[r->camera])
            c->out_of_order++;
        c->frames[r->camera]++;
        const omma_face *ref = NULL;
        int ref_n = -1;
        if (r->camera == video_cam && k >= 0 && k < video_frames)
            ref = video_faces[k], ref_n = video_counts[k];
        else if (r->camera != video_cam && k >= 0 && k < FRAMES)
            ref = seq_faces[k], ref_n = seq_counts[k];
        if (!ref || r->n_faces != ref_n ||
            memcmp(r->faces, ref, (size_t)r->n_faces * sizeof *r->faces) != 0)
            c->mismatches++;
        c->faceless += r->n_faces != 1;
    }
    c->dropped += (int)r->dropped;
    pthread_mutex_unlock(&c->lock);
}

static void on_camera(void *ctx, const rt_camera_event *e)
{
    collected *c = ctx;
    pthread_mutex_lock(&c->lock);
    if (e->camera < MAX_CAMS) {
        c->failed[e->camera] = e->state == METRICS_CAMERA_FAILED;
        c->ended[e->camera] = e->state == METRICS_CAMERA_ENDED;
        snprintf(c->detail[e->camera], sizeof c->detail[0], "%s", e->detail ? e->detail : "");
    }
    pthread_mutex_unlock(&c->lock);
}

static void base_config(rt_runtime_config *cfg, collected *c)
{
    rt_runtime_config_init(cfg);
    cfg->pipeline.backend = OMMA_BACKEND_CPU;
    cfg->pipeline.detector_model = FACE_MODEL_SHORT;
    cfg->pipeline.mesh_model = FACE_MODEL_MESH;
    cfg->pipeline.max_faces = MAX_FACES;
    cfg->pipeline.max_batch = 4;
    cfg->pipeline.threads = 2;
    cfg->source.realtime = 0;
    cfg->on_result = on_result;
    cfg->on_camera = on_camera;
    cfg->ctx = c;
    /* The GPU fields are not looked at: no GPU list at all. */
    cfg->n_gpus = 0;
    cfg->gpus = NULL;
}

static void test_files_match_single_camera(void)
{
    static collected c;
    memset(&c, 0, sizeof c);
    pthread_mutex_init(&c.lock, NULL);
    rt_camera_config cams[MAX_CAMS];
    int n = 0;
    for (int i = 0; i < SEQ_CAMS; i++)
        cams[n++] = (rt_camera_config){dir_good, NULL, 0, NULL, NULL};
    video_cam = -1;
    if (video_frames > 0) {
        video_cam = n;
        cams[n++] = (rt_camera_config){VIDEO, NULL, 0, NULL, NULL};
    } else {
        fprintf(stderr, "no libav: the video camera is not run\n");
    }
    bad_cam = n;
    cams[n++] = (rt_camera_config){dir_bad, NULL, 0, NULL, NULL};
    rt_runtime_config cfg;
    base_config(&cfg, &c);
    cfg.n_cameras = n;
    cfg.cameras = cams;
    rt_runtime *rt = NULL;
    REQUIRE_OK(rt_runtime_start(&cfg, &rt));
    CHECK_OK(rt_runtime_wait(rt, 300000));
    rt_runtime_stats s;
    rt_runtime_get_stats(rt, &s);
    rt_runtime_destroy(rt);
    for (int i = 0; i < SEQ_CAMS; i++) {
        CHECK(c.frames[i] == FRAMES);
        CHECK(c.ended[i] && !c.failed[i]);
    }
    if (video_cam >= 0) {
        CHECK(video_frames == VIDEO_FRAMES);
        CHECK(c.frames[video_cam] == video_frames);
        CHECK(c.ended[video_cam] && !c.failed[video_cam]);
    }
    CHECK(c.mismatches == 0);
    CHECK(c.out_of_order == 0);
    CHECK(c.dropped == 0);
    CHECK(c.not_cpu == 0);
    CHECK(c.faceless == 0);
    /* The broken sequence: its five good frames, then the failure named. */
    CHECK(c.frames[bad_cam] == 5);
    CHECK(c.failed[bad_cam]);
    CHECK(strstr(c.detail[bad_cam], "f005.png") != NULL);
    if (!strstr(c.detail[bad_cam], "f005.png"))
        fprintf(stderr, "failure detail: %s\n", c.detail[bad_cam]);
    uint64_t want = (uint64_t)(SEQ_CAMS * FRAMES + video_frames + 5);
    CHECK(s.frames_done == want);
    CHECK(s.frames_in == want);
    CHECK(s.frames_dropped == 0);
    CHECK(s.batches >= 1 && s.batches <= want);
    CHECK(s.launches == 0 && s.h2d_bytes == 0 && s.d2h_bytes == 0);
    fprintf(stderr, "files: %llu frames in %llu batches\n", (unsigned long long)s.frames_done,
            (unsigned long long)s.batches);
    pthread_mutex_destroy(&c.lock);
}

static void test_bad_starts(void)
{
    collected c;
    memset(&c, 0, sizeof c);
    rt_camera_config cams[2] = {{dir_good, NULL, 0, NULL, NULL},
                                {"/tmp/omma-no-such-dir/%03d.png", NULL, 0, NULL, NULL}};
    rt_runtime_config cfg;
    base_config(&cfg, &c);
    cfg.n_cameras = 2;
    cfg.cameras = cams;
    rt_runtime *rt = (rt_runtime *)&rt;
    CHECK(rt_runtime_start(&cfg, &rt) != OMMA_OK);
    CHECK(strstr(omma_last_error(), "omma-no-such-dir") != NULL);
    CHECK(rt == NULL);
    cfg.n_cameras = 1;
    cfg.pipeline.threads = -1;
    CHECK_FAILS(rt_runtime_start(&cfg, &rt), OMMA_ERR_INVALID_ARG, "threads -1");
    CHECK(rt == NULL);
    /* A synthetic camera's frame size is checked before anything is made. */
    base_config(&cfg, &c);
    rt_camera_config synth = {NULL, NULL, 0, NULL, NULL};
    cfg.n_cameras = 1;
    cfg.cameras = &synth;
    cfg.photo = &photo;
    cfg.synthetic.width = 100000;
    CHECK_FAILS(rt_runtime_start(&cfg, &rt), OMMA_ERR_INVALID_ARG, "100000x1080");
    CHECK(rt == NULL);
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

static void test_live_cameras_drop_and_stop(void)
{
    static collected c;
    memset(&c, 0, sizeof c);
    pthread_mutex_init(&c.lock, NULL);
    int threads0 = threads_now();
    rt_camera_config cams[SYNTH];
    for (int i = 0; i < SYNTH; i++)
        cams[i] = (rt_camera_config){NULL, NULL, 0, NULL, NULL};
    rt_runtime_config cfg;
    base_config(&cfg, &c);
    cfg.n_cameras = SYNTH;
    cfg.cameras = cams;
    cfg.photo = &photo;
    cfg.synthetic.width = 640;
    cfg.synthetic.height = 360;
    cfg.synthetic.fps = 100; /* faster than the CPU pipeline */
    /* A slow path: the face moves little between the frames the worker
     * takes, however slow it is (sanitizers), so the tracker keeps it. */
    cfg.synthetic.period_s = 600;
    cfg.synthetic_per_thread = 2;
    /* The live view's previews: none until one is wanted, then only the
     * wanted camera's, at the size asked. */
    rt_preview *preview = NULL;
    REQUIRE_OK(rt_preview_create(SYNTH, &preview));
    cfg.preview = preview;
    synthetic_run = 1;
    rt_runtime *rt = NULL;
    REQUIRE_OK(rt_runtime_start(&cfg, &rt));
    /* Until each camera has had a few results and a preview was made (or
     * a minute). */
    uint64_t unwanted = 1;
    int wanted = 0;
    for (int t = 0; t < 600; t++) {
        pthread_mutex_lock(&c.lock);
        int results = c.synth_results;
        pthread_mutex_unlock(&c.lock);
        if (!wanted && results >= 2 * SYNTH) {
            unwanted = rt_preview_count(preview);
            wanted = 1;
        }
        if (wanted) /* renewed, as a viewer's requests do */
            rt_preview_want(preview, 1, 160, 50000000ull, core_now_ns());
        if (wanted && results >= 4 * SYNTH && rt_preview_count(preview) >= 2)
            break;
        usleep(100000);
    }
    rt_runtime_stop(rt);
    CHECK_OK(rt_runtime_wait(rt, 30000));
    rt_runtime_stats s;
    rt_runtime_get_stats(rt, &s);
    rt_runtime_destroy(rt);
    synthetic_run = 0;
    CHECK(unwanted == 0);
    CHECK(rt_preview_count(preview) >= 2);
    rt_preview_image img = {0};
    CHECK(rt_preview_get(preview, 0, &img) == 0 && rt_preview_get(preview, 2, &img) == 0);
    CHECK(rt_preview_get(preview, 1, &img) == 1);
    CHECK(img.w == 160 && img.h == 90 && img.frame_w == 640 && img.frame_h == 360 && img.seq > 0);
    double mean = 0;
    for (size_t i = 0; img.rgb && i < (size_t)img.w * img.h * 3; i++)
        mean += img.rgb[i];
    mean /= (double)img.w * img.h * 3;
    CHECK(mean > 20 && mean < 235); /* the photo on grey, not a blank */
    free(img.rgb);
    rt_preview_destroy(preview);
    fprintf(stderr,
            "live: %llu frames in, %llu done, %llu dropped, %llu batches; threads %d -> %d\n",
            (unsigned long long)s.frames_in, (unsigned long long)s.frames_done,
            (unsigned long long)s.frames_dropped, (unsigned long long)s.batches, threads0,
            threads_now());
    CHECK(c.synth_results >= 4 * SYNTH);
    CHECK(s.frames_done == (uint64_t)c.synth_results);
    CHECK(s.frames_dropped > 0);
    CHECK(s.frames_dropped == (uint64_t)c.synth_dropped);
    CHECK(s.frames_in == s.frames_done + s.frames_dropped);
    CHECK(c.out_of_order == 0);
    CHECK(c.not_cpu == 0);
    CHECK(c.with_truth == c.synth_results);
    /* The face is found where it was put, in (nearly) every frame. */
    CHECK(c.on_truth >= c.synth_results - 1);
    if (!getenv("OMMA_TEST_SANITIZER"))
        CHECK(threads_now() == threads0);
    pthread_mutex_destroy(&c.lock);
}

int main(void)
{
    if (io_image_load(FACE_PHOTO, &photo) != OMMA_OK) {
        fprintf(stderr, "%s: %s (run scripts/fetch-testdata.sh)\n", FACE_PHOTO, omma_last_error());
        return 1;
    }
    if (!write_sequences() || !make_references()) {
        fprintf(stderr, "cannot prepare the test inputs\n");
        return 1;
    }
    RUN(test_files_match_single_camera);
    RUN(test_bad_starts);
    RUN(test_live_cameras_drop_and_stop);
    remove_dir(dir_good);
    remove_dir(dir_bad);
    io_image_free(&photo);
    return testing_finish();
}
