#define _DEFAULT_SOURCE /* mkdtemp, usleep */
/* Cameras added and removed while the CPU runtime runs
 * (rt_runtime_add_camera, rt_runtime_remove_camera; no GPU needed):
 *   - a runtime with room for 4 cameras, two synthetic start-up cameras
 *     (one driver thread for both) and a metrics registry; then many
 *     cycles of adding a camera (an image sequence or a synthetic camera,
 *     in turn) and removing it, most at once, one after a result, one
 *     after the sequence's end: each add gets the lowest free index, each
 *     added camera's results come in order from seq 1, a sequence run to
 *     its end gives all its frames before its removal returns, none comes
 *     from an index after its removal returned, every frame in is
 *     processed or dropped, the metrics list the camera while it is there
 *     only, and camera 0's frames go on meanwhile;
 *   - a start-up camera of the shared driver removed and its index given
 *     to a new camera, whose frames start at seq 1;
 *   - one removal begun by rt_runtime_interrupt_camera (as a cluster
 *     node's release does), finished by rt_runtime_remove_camera;
 *   - errors: removing a free index or twice, adding past the room, to a
 *     runtime without room, a source that cannot be opened (the slot stays
 *     free), a synthetic camera without a photo;
 *   - a runtime started with no camera runs until stopped; after destroy
 *     no thread is left (ASan checks the memory). */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/image_file.h"
#include "metrics/metrics.h"
#include "runtime/runtime.h"
#include "support/face_inputs.h"
#include "testing.h"

#define FRAMES 3
#define W 320
#define H 240
#define ROOM 4
#define CYCLES 10

#define CHECK_OK(expr)                                                                             \
    do {                                                                                           \
        omma_status st_ = (expr);                                                                  \
        if (st_ != OMMA_OK)                                                                        \
            fprintf(stderr, "%s: %s\n", #expr, omma_last_error());                                 \
        CHECK(st_ == OMMA_OK);                                                                     \
    } while (0)

static io_image photo;
static char dir_seq[64];

/* Frame k: the photo scaled into the frame's middle, moved k pixels. */
static int write_sequence(void)
{
    strcpy(dir_seq, "/tmp/omma-rtl-XXXXXX");
    if (!mkdtemp(dir_seq))
        return 0;
    uint8_t *rgb = malloc((size_t)W * H * 3);
    if (!rgb)
        return 0;
    int ok = 1;
    for (int k = 0; k < FRAMES && ok; k++) {
        memset(rgb, 90, (size_t)W * H * 3);
        int side = H - 40, ox = (W - side) / 2 + k, oy = 20;
        for (int y = 0; y < side; y++)
            for (int x = 0; x < side; x++) {
                int sx = x * photo.width / side, sy = y * photo.height / side;
                memcpy(rgb + ((size_t)(y + oy) * W + (size_t)(x + ox)) * 3,
                       photo.rgb + ((size_t)sy * (size_t)photo.width + (size_t)sx) * 3, 3);
            }
        char path[128];
        snprintf(path, sizeof path, "%s/%03d.png", dir_seq, k);
        ok = io_image_save_png(path, rgb, W, H, W * 3) == OMMA_OK;
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

/* Per index, what the callbacks saw of its present camera. */
typedef struct seen {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int gone[ROOM]; /* removed, no camera added there since */
    uint64_t last_seq[ROOM];
    int results[ROOM], ended[ROOM];
    long total_results;
    uint64_t dropped;
    int after_removal, out_of_order, not_from_one, faceless_seq;
} seen;

static void on_result(void *ctx, const rt_result *r)
{
    seen *s = ctx;
    pthread_mutex_lock(&s->lock);
    int i = r->camera;
    if (i < 0 || i >= ROOM || s->gone[i]) {
        s->after_removal++;
    } else {
        if (s->results[i] == 0 && r->seq != 1 + r->dropped)
            s->not_from_one++;
        s->out_of_order += r->seq <= s->last_seq[i];
        s->last_seq[i] = r->seq;
        s->results[i]++;
        if (!r->truth) /* a sequence: the photo's face in every frame */
            s->faceless_seq += r->n_faces != 1;
    }
    s->total_results++;
    s->dropped += r->dropped;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
}

static void on_camera(void *ctx, const rt_camera_event *e)
{
    seen *s = ctx;
    pthread_mutex_lock(&s->lock);
    if (e->camera >= 0 && e->camera < ROOM && e->state == METRICS_CAMERA_ENDED)
        s->ended[e->camera] = 1;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
}

/* Waits (up to 60 s: sanitizers are slow) until camera i has `results`
 * results, or has ended when `ended`. Returns whether it did. */
static int wait_for(seen *s, int i, int results, int ended)
{
    pthread_mutex_lock(&s->lock);
    int ok = 0;
    for (int t = 0; t < 600 && !ok; t++) {
        ok = ended ? s->ended[i] && s->results[i] >= results : s->results[i] >= results;
        if (!ok) {
            pthread_mutex_unlock(&s->lock);
            usleep(100000);
            pthread_mutex_lock(&s->lock);
        }
    }
    pthread_mutex_unlock(&s->lock);
    return ok;
}

/* The present camera of index i is new: its bookkeeping from 0. */
static void fresh(seen *s, int i)
{
    pthread_mutex_lock(&s->lock);
    s->gone[i] = 0;
    s->last_seq[i] = 0;
    s->results[i] = 0;
    s->ended[i] = 0;
    pthread_mutex_unlock(&s->lock);
}

static void gone(seen *s, int i)
{
    pthread_mutex_lock(&s->lock);
    s->gone[i] = 1;
    pthread_mutex_unlock(&s->lock);
}

static int results_of(seen *s, int i)
{
    pthread_mutex_lock(&s->lock);
    int n = s->results[i];
    pthread_mutex_unlock(&s->lock);
    return n;
}

/* Whether the registry lists a camera named name (at index). */
static int listed(metrics_registry *m, const char *name, int index)
{
    metrics_snapshot *snap = NULL;
    if (metrics_snapshot_take(m, &snap) != OMMA_OK)
        return -1;
    int found = 0;
    for (int i = 0; i < snap->n_cameras; i++)
        found |= !strcmp(snap->cameras[i].name, name) && snap->cameras[i].index == index;
    metrics_snapshot_free(snap);
    return found;
}

static void base_config(rt_runtime_config *cfg, seen *s)
{
    rt_runtime_config_init(cfg);
    cfg->pipeline.backend = OMMA_BACKEND_CPU;
    cfg->pipeline.detector_model = FACE_MODEL_SHORT;
    cfg->pipeline.mesh_model = FACE_MODEL_MESH;
    cfg->pipeline.max_faces = 2;
    cfg->pipeline.max_batch = 4;
    cfg->pipeline.threads = 1;
    cfg->source.realtime = 0;
    cfg->photo = &photo;
    cfg->synthetic.width = 320;
    cfg->synthetic.height = 180;
    cfg->synthetic.fps = 1; /* the CPU pipeline under sanitizers: a few frames a second */
    cfg->synthetic_per_thread = 2;
    cfg->on_result = on_result;
    cfg->on_camera = on_camera;
    cfg->ctx = s;
    cfg->n_gpus = 0;
    cfg->gpus = NULL;
}

static void test_add_remove_under_load(void)
{
    static seen s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.lock, NULL);
    pthread_cond_init(&s.changed, NULL);
    int threads0 = threads_now();
    metrics_registry *m = NULL;
    REQUIRE_OK(metrics_create(NULL, &m));
    rt_camera_config start[2] = {{NULL, "start0", 0, NULL, NULL}, {NULL, "start1", 0, NULL, NULL}};
    rt_runtime_config cfg;
    base_config(&cfg, &s);
    cfg.n_cameras = 2;
    cfg.cameras = start;
    cfg.max_cameras = ROOM;
    cfg.metrics = m;
    rt_runtime *rt = NULL;
    REQUIRE_OK(rt_runtime_start(&cfg, &rt));
    CHECK(wait_for(&s, 0, 1, 0));

    int before0 = results_of(&s, 0);
    for (int cycle = 0; cycle < CYCLES; cycle++) {
        int synthetic = cycle % 2;
        char name[32];
        snprintf(name, sizeof name, "live%d", cycle);
        rt_camera_config cam = {synthetic ? NULL : dir_seq, name, 0, NULL, NULL};
        fresh(&s, 2);
        int index = -1;
        CHECK_OK(rt_runtime_add_camera(rt, &cam, &index));
        CHECK(index == 2); /* the lowest free */
        if (index != 2)
            break;
        CHECK(listed(m, name, 2) == 1);
        /* At once, but: after a result (a synthetic camera), after its end
         * (a sequence); few frames: the pipeline is slow under sanitizers. */
        int how = cycle == 5 ? 2 : cycle == 6 ? 3 : 0;
        if (how == 2)
            CHECK(wait_for(&s, 2, 1, 0));
        else if (how == 3 && !synthetic)
            CHECK(wait_for(&s, 2, FRAMES, 1));
        else if (how == 3)
            CHECK(wait_for(&s, 2, 1, 0));
        if (cycle == 3) { /* the cluster's way: interrupted first, removed later */
            rt_runtime_interrupt_camera(rt, 2);
            rt_runtime_interrupt_camera(rt, 3); /* no camera there: nothing */
        }
        CHECK_OK(rt_runtime_remove_camera(rt, 2));
        gone(&s, 2);
        CHECK(listed(m, name, 2) == 0);
        if (how == 3 && !synthetic) /* all its frames, before the removal returned */
            CHECK(results_of(&s, 2) == FRAMES);
    }
    /* Camera 0 went on meanwhile (the worker takes the oldest ready frame
     * first: camera 0's, older than an added camera's next one). */
    CHECK(results_of(&s, 0) >= before0 + 2);

    /* A start-up camera of the shared driver out; its index to a new one. */
    CHECK_OK(rt_runtime_remove_camera(rt, 1));
    gone(&s, 1);
    CHECK(listed(m, "start1", 1) == 0);
    fresh(&s, 1);
    rt_camera_config again = {NULL, "again", 0, NULL, NULL};
    int index = -1;
    CHECK_OK(rt_runtime_add_camera(rt, &again, &index));
    CHECK(index == 1);
    CHECK(wait_for(&s, 1, 1, 0));

    /* Errors. */
    CHECK_FAILS(rt_runtime_remove_camera(rt, 3), OMMA_ERR_INVALID_ARG, "camera 3: no such camera");
    CHECK_FAILS(rt_runtime_remove_camera(rt, -1), OMMA_ERR_INVALID_ARG, "no such camera");
    CHECK_FAILS(rt_runtime_remove_camera(rt, ROOM), OMMA_ERR_INVALID_ARG, "no such camera");
    rt_camera_config missing = {"/nonexistent/omma-live", "missing", 0, NULL, NULL};
    index = 7;
    CHECK(rt_runtime_add_camera(rt, &missing, &index) != OMMA_OK);
    CHECK(strstr(omma_last_error(), "/nonexistent/omma-live") != NULL);
    CHECK(index == -1);
    CHECK(listed(m, "missing", 2) == 0);
    int a = -1, b = -1;
    rt_camera_config fill = {NULL, "fill2", 0, NULL, NULL}, fill3 = {NULL, "fill3", 0, NULL, NULL},
                     over = {NULL, "over", 0, NULL, NULL};
    fresh(&s, 2);
    CHECK_OK(rt_runtime_add_camera(rt, &fill, &a)); /* the failed add's slot is free */
    CHECK(a == 2);
    fresh(&s, 3);
    CHECK_OK(rt_runtime_add_camera(rt, &fill3, &b));
    CHECK(b == 3);
    CHECK_FAILS(rt_runtime_add_camera(rt, &over, &index), OMMA_ERR_INVALID_ARG, "no room");
    CHECK(index == -1);
    CHECK_OK(rt_runtime_remove_camera(rt, 3));
    gone(&s, 3);
    CHECK_FAILS(rt_runtime_remove_camera(rt, 3), OMMA_ERR_INVALID_ARG, "no such camera");

    rt_runtime_stop(rt);
    CHECK_OK(rt_runtime_wait(rt, 60000));
    rt_runtime_stats st;
    rt_runtime_get_stats(rt, &st);
    rt_runtime_destroy(rt);
    metrics_destroy(m);
    fprintf(stderr, "live: %llu in, %llu done, %llu dropped; threads %d -> %d\n",
            (unsigned long long)st.frames_in, (unsigned long long)st.frames_done,
            (unsigned long long)st.frames_dropped, threads0, threads_now());
    CHECK(s.after_removal == 0);
    CHECK(s.out_of_order == 0);
    CHECK(s.not_from_one == 0);
    CHECK(s.faceless_seq == 0);
    CHECK(st.frames_done == (uint64_t)s.total_results);
    /* Dropped: those the results said (live cameras' frames replaced)
     * and those of cameras being removed, never taken. */
    CHECK(st.frames_dropped >= s.dropped);
    CHECK(st.frames_in == st.frames_done + st.frames_dropped);
    if (!getenv("OMMA_TEST_SANITIZER"))
        CHECK(threads_now() == threads0);
    pthread_cond_destroy(&s.changed);
    pthread_mutex_destroy(&s.lock);
}

static void test_empty_and_refused(void)
{
    static seen s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.lock, NULL);
    pthread_cond_init(&s.changed, NULL);
    rt_runtime_config cfg;
    base_config(&cfg, &s);
    cfg.n_cameras = 0;
    cfg.cameras = NULL;
    cfg.max_cameras = 2;
    rt_runtime *rt = NULL;
    REQUIRE_OK(rt_runtime_start(&cfg, &rt));
    /* Nothing to end it: it runs until stopped. */
    CHECK_FAILS(rt_runtime_wait(rt, 300), OMMA_ERR_TIMEOUT, "still running");
    rt_runtime_stop(rt);
    CHECK_OK(rt_runtime_wait(rt, 30000));
    rt_camera_config cam = {NULL, "late", 0, NULL, NULL};
    int index = 0;
    CHECK_FAILS(rt_runtime_add_camera(rt, &cam, &index), OMMA_ERR_CLOSED, "stopping");
    CHECK(index == -1);
    rt_runtime_destroy(rt);

    /* No room asked for: none added; no photo: no synthetic camera. */
    rt_camera_config one = {dir_seq, NULL, 0, NULL, NULL};
    base_config(&cfg, &s);
    cfg.n_cameras = 1;
    cfg.cameras = &one;
    cfg.photo = NULL;
    REQUIRE_OK(rt_runtime_start(&cfg, &rt));
    CHECK_FAILS(rt_runtime_add_camera(rt, &cam, &index), OMMA_ERR_INVALID_ARG, "max cameras");
    rt_runtime_destroy(rt);
    cfg.max_cameras = 2;
    REQUIRE_OK(rt_runtime_start(&cfg, &rt));
    CHECK_FAILS(rt_runtime_add_camera(rt, &cam, &index), OMMA_ERR_INVALID_ARG, "no photo");
    rt_runtime_destroy(rt);
    cfg.max_cameras = OMMA_PIPELINE_MAX_CAMERAS + 1;
    CHECK_FAILS(rt_runtime_start(&cfg, &rt), OMMA_ERR_INVALID_ARG, "max cameras");
    cfg.max_cameras = 0;
    cfg.n_cameras = 0;
    CHECK_FAILS(rt_runtime_start(&cfg, &rt), OMMA_ERR_INVALID_ARG, "0 cameras not in 1..");
    pthread_cond_destroy(&s.changed);
    pthread_mutex_destroy(&s.lock);
}

int main(void)
{
    if (io_image_load(FACE_PHOTO, &photo) != OMMA_OK) {
        fprintf(stderr, "%s: %s (run scripts/fetch-testdata.sh)\n", FACE_PHOTO, omma_last_error());
        return 1;
    }
    if (!write_sequence()) {
        fprintf(stderr, "cannot write the test sequence\n");
        return 1;
    }
    RUN(test_add_remove_under_load);
    RUN(test_empty_and_refused);
    remove_dir(dir_seq);
    io_image_free(&photo);
    return testing_finish();
}
