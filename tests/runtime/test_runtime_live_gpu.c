#define _DEFAULT_SOURCE /* mkdtemp, usleep */
/* Cameras added and removed while the GPU runtime runs
 * (rt_runtime_add_camera, rt_runtime_remove_camera on the CUDA backend;
 * the twin of test_runtime_live.c; exit 77 without a GPU):
 *   - a runtime with room for 4 cameras, two synthetic start-up cameras
 *     (one driver thread for both, frames uploaded from a pinned pool into
 *     their rings) and a metrics registry; then 10 cycles of adding a
 *     camera (an image sequence or a synthetic camera) and removing it, at
 *     once, after a result, after the sequence's end, one begun by
 *     rt_runtime_interrupt_camera: each add gets the lowest free index,
 *     its results come in order from seq 1, the sequence's photo has its
 *     face in every frame, a sequence run to its end gives all its frames
 *     before its removal returns, none comes from an index after its
 *     removal returned, the metrics list the camera while it is there
 *     only, the start-up cameras' results go on meanwhile, and a re-added
 *     index starts with face ids never seen at that index on its GPU (its
 *     tracker forgotten: two sequences in a row show the face at the same
 *     place, a tracker not forgotten would go on with its id);
 *     after each removal the device's live allocations, pinned bytes, open
 *     fds and threads are those of before the add;
 *   - a start-up camera of the shared driver removed and its index given
 *     to a new camera, whose frames start at seq 1;
 *   - with two GPUs or more: the same on two GPUs, least-loaded placement:
 *     a camera added goes to the GPU with fewer pixels per second (the one
 *     a removed start-up camera left, then the other);
 *   - errors: removing a free index or twice, adding past the room, a
 *     source that cannot be opened (the slot stays free), a synthetic
 *     camera without a photo, publishing with cameras added live;
 *   - a runtime started with no camera runs until stopped; after destroy
 *     the device memory, fds and threads are those of before the start. */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/gpu_testing.h"
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
#define MAX_FACES 2
#define MAX_IDS 256

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
    strcpy(dir_seq, "/tmp/omma-rtlg-XXXXXX");
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

static int count_dir(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

/* What the process holds now. */
typedef struct held {
    uint64_t allocations, used, pinned; /* device buffers, their bytes, pinned bytes */
    int fds, threads;
} held;

static held held_now(omma_device *dev)
{
    held h = {0, 0, 0, 0, 0};
    omma_memory_stats m;
    if (omma_device_get_memory_stats(dev, &m) == OMMA_OK) {
        h.allocations = m.live_allocations;
        h.used = m.pool_used;
        h.pinned = m.pinned_bytes;
    }
    h.fds = count_dir("/proc/self/fd") - 1; /* opendir's own */
    h.threads = count_dir("/proc/self/task");
    return h;
}

static int same_held(const char *when, held a, held b)
{
    int threads_ok = getenv("OMMA_TEST_SANITIZER") || a.threads == b.threads;
    if (a.allocations == b.allocations && a.used == b.used && a.pinned == b.pinned &&
        a.fds == b.fds && threads_ok)
        return 1;
    fprintf(stderr,
            "%s: live allocations %llu -> %llu, bytes %llu -> %llu, pinned %llu -> %llu, fds %d -> "
            "%d, threads %d -> %d\n",
            when, (unsigned long long)a.allocations, (unsigned long long)b.allocations,
            (unsigned long long)a.used, (unsigned long long)b.used, (unsigned long long)a.pinned,
            (unsigned long long)b.pinned, a.fds, b.fds, a.threads, b.threads);
    return 0;
}

/* Per index, what the callbacks saw of its present camera. */
typedef struct seen {
    pthread_mutex_t lock;
    int gone[ROOM]; /* removed, no camera added there since */
    uint64_t last_seq[ROOM];
    int results[ROOM], ended[ROOM];
    int ids[ROOM][MAX_IDS], n_ids[ROOM]; /* the present camera's face ids */
    int old_ids[ROOM][MAX_IDS], n_old[ROOM]; /* its predecessors' there */
    long total_results;
    int gpu_of[ROOM]; /* the GPU of its last result */
    int after_removal, out_of_order, not_from_one, faceless_seq, reused_ids, wrong_gpu;
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
        for (int f = 0; f < r->n_faces; f++) {
            int id = r->faces[f].id, known = 0;
            for (int k = 0; k < s->n_old[i]; k++)
                s->reused_ids += s->old_ids[i][k] == id;
            for (int k = 0; k < s->n_ids[i]; k++)
                known |= s->ids[i][k] == id;
            if (!known && s->n_ids[i] < MAX_IDS)
                s->ids[i][s->n_ids[i]++] = id;
        }
    }
    if (i >= 0 && i < ROOM)
        s->gpu_of[i] = r->gpu;
    s->wrong_gpu += r->gpu < 0 || r->gpu > 1;
    s->total_results++;
    pthread_mutex_unlock(&s->lock);
}

static void on_camera(void *ctx, const rt_camera_event *e)
{
    seen *s = ctx;
    pthread_mutex_lock(&s->lock);
    if (e->camera >= 0 && e->camera < ROOM && e->state == METRICS_CAMERA_ENDED)
        s->ended[e->camera] = 1;
    pthread_mutex_unlock(&s->lock);
}

/* Waits (up to 60 s) until camera i has `results` results, or has ended
 * when `ended`. Returns whether it did. */
static int wait_for(seen *s, int i, int results, int ended)
{
    pthread_mutex_lock(&s->lock);
    int ok = 0;
    for (int t = 0; t < 6000 && !ok; t++) {
        ok = ended ? s->ended[i] && s->results[i] >= results : s->results[i] >= results;
        if (!ok) {
            pthread_mutex_unlock(&s->lock);
            usleep(10000);
            pthread_mutex_lock(&s->lock);
        }
    }
    pthread_mutex_unlock(&s->lock);
    return ok;
}

/* The present camera of index i is new: its bookkeeping from 0, its
 * predecessor's face ids kept as ids it must not show. */
static void fresh(seen *s, int i)
{
    pthread_mutex_lock(&s->lock);
    for (int k = 0; k < s->n_ids[i] && s->n_old[i] < MAX_IDS; k++)
        s->old_ids[i][s->n_old[i]++] = s->ids[i][k];
    s->n_ids[i] = 0;
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

static int gpu_list[2] = {0, 1};

static void base_config(rt_runtime_config *cfg, seen *s, int n_gpus)
{
    rt_runtime_config_init(cfg);
    cfg->pipeline.detector_model = FACE_MODEL_SHORT;
    cfg->pipeline.mesh_model = FACE_MODEL_MESH;
    cfg->pipeline.max_faces = MAX_FACES;
    cfg->pipeline.max_batch = 4;
    cfg->max_wait_ms = 2;
    cfg->source.realtime = 0;
    cfg->photo = &photo;
    cfg->synthetic.width = 640;
    cfg->synthetic.height = 360;
    cfg->synthetic.fps = 30;
    cfg->synthetic_per_thread = 2;
    cfg->pool_frames = 16;
    cfg->pool_memory = OMMA_MEMORY_HOST; /* uploaded into rings of device memory */
    cfg->on_result = on_result;
    cfg->on_camera = on_camera;
    cfg->ctx = s;
    cfg->n_gpus = n_gpus;
    cfg->gpus = gpu_list;
    cfg->placement = RT_PLACE_LEAST_LOADED;
}

/* A runtime started and stopped once, with metrics (its monitor reads
 * NVML, which stays loaded): what the driver and libraries open for good
 * on their first use (their own descriptors) is open before a test takes
 * its "before". */
static void warm_up(int n_gpus)
{
    static seen w;
    memset(&w, 0, sizeof w);
    pthread_mutex_init(&w.lock, NULL);
    rt_camera_config one = {NULL, "warm", 0, NULL, NULL};
    rt_runtime_config cfg;
    base_config(&cfg, &w, n_gpus);
    cfg.n_cameras = 1;
    cfg.cameras = &one;
    cfg.max_cameras = ROOM;
    metrics_registry *m = NULL;
    if (metrics_create(NULL, &m) == OMMA_OK)
        cfg.metrics = m;
    rt_runtime *rt = NULL;
    if (rt_runtime_start(&cfg, &rt) == OMMA_OK) {
        wait_for(&w, 0, 2, 0);
        rt_runtime_stop(rt);
        rt_runtime_wait(rt, 60000);
        rt_runtime_destroy(rt);
    }
    metrics_destroy(m);
    pthread_mutex_destroy(&w.lock);
}

static void add_remove_under_load(int n_gpus)
{
    static seen s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.lock, NULL);
    omma_device *dev = NULL; /* held open, so its counters span the run */
    REQUIRE_OK(omma_device_open(0, &dev));
    warm_up(n_gpus);
    omma_device_metrics reading; /* NVML loaded, as the monitor loads it */
    (void)omma_device_read_metrics(dev, &reading);
    held before = held_now(dev);
    metrics_registry *m = NULL;
    REQUIRE_OK(metrics_create(NULL, &m));
    rt_camera_config start[2] = {{NULL, "start0", 0, NULL, NULL}, {NULL, "start1", 0, NULL, NULL}};
    rt_runtime_config cfg;
    base_config(&cfg, &s, n_gpus);
    cfg.n_cameras = 2;
    cfg.cameras = start;
    cfg.max_cameras = ROOM;
    cfg.metrics = m;
    rt_runtime *rt = NULL;
    REQUIRE_OK(rt_runtime_start(&cfg, &rt));
    CHECK(wait_for(&s, 0, 2, 0));
    CHECK(wait_for(&s, 1, 2, 0));

    for (int cycle = 0; cycle < CYCLES; cycle++) {
        /* Sequence and synthetic in turn; the last two both sequences (the
         * same face at the same place: a tracker not forgotten would go on
         * with its id). */
        int synthetic = cycle % 2 && cycle < 8;
        char name[32];
        snprintf(name, sizeof name, "live%d", cycle);
        rt_camera_config cam = {synthetic ? NULL : dir_seq, name, 0, NULL, NULL};
        held h0 = held_now(dev);
        int r0 = results_of(&s, 0), r1 = results_of(&s, 1);
        fresh(&s, 2);
        int index = -1;
        CHECK_OK(rt_runtime_add_camera(rt, &cam, &index));
        CHECK(index == 2); /* the lowest free */
        if (index != 2)
            break;
        CHECK(listed(m, name, 2) == 1);
        /* At once (cycles 0, 1, 4), interrupted first (3: the cluster's
         * way), else after results: a sequence to its end. */
        if (cycle != 0 && cycle != 1 && cycle != 4)
            CHECK(synthetic ? wait_for(&s, 2, 3, 0) : wait_for(&s, 2, FRAMES, 1));
        if (cycle == 3) {
            rt_runtime_interrupt_camera(rt, 2);
            rt_runtime_interrupt_camera(rt, 3); /* no camera there: nothing */
        }
        CHECK_OK(rt_runtime_remove_camera(rt, 2));
        gone(&s, 2);
        CHECK(listed(m, name, 2) == 0);
        if (!synthetic && cycle != 0 && cycle != 4) /* all its frames, before it returned */
            CHECK(results_of(&s, 2) == FRAMES);
        char when[64];
        snprintf(when, sizeof when, "cycle %d (%s) removed", cycle,
                 synthetic ? "synthetic" : "sequence");
        CHECK(same_held(when, h0, held_now(dev)));
        /* The start-up cameras went on meanwhile. */
        CHECK(wait_for(&s, 0, r0 + 1, 0));
        CHECK(wait_for(&s, 1, r1 + 1, 0));
    }

    /* A start-up camera of the shared driver out; its index to a new one. */
    CHECK_OK(rt_runtime_remove_camera(rt, 1));
    gone(&s, 1);
    CHECK(listed(m, "start1", 1) == 0);
    fresh(&s, 1);
    rt_camera_config again = {NULL, "again", 0, NULL, NULL};
    int index = -1;
    CHECK_OK(rt_runtime_add_camera(rt, &again, &index));
    CHECK(index == 1);
    CHECK(wait_for(&s, 1, 2, 0));
    if (n_gpus > 1) /* start1 was on GPU 1 (start-up placement), GPU 0 has start0 */
        CHECK(s.gpu_of[1] == 1);

    /* Errors. */
    CHECK_FAILS(rt_runtime_remove_camera(rt, 3), OMMA_ERR_INVALID_ARG, "camera 3: no such camera");
    CHECK_FAILS(rt_runtime_remove_camera(rt, -1), OMMA_ERR_INVALID_ARG, "no such camera");
    CHECK_FAILS(rt_runtime_remove_camera(rt, ROOM), OMMA_ERR_INVALID_ARG, "no such camera");
    held h0 = held_now(dev);
    rt_camera_config missing = {"/nonexistent/omma-live", "missing", 0, NULL, NULL};
    index = 7;
    CHECK(rt_runtime_add_camera(rt, &missing, &index) != OMMA_OK);
    CHECK(strstr(omma_last_error(), "/nonexistent/omma-live") != NULL);
    CHECK(index == -1);
    CHECK(listed(m, "missing", 2) == 0);
    CHECK(same_held("a failed add", h0, held_now(dev)));
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
    CHECK(wait_for(&s, 3, 1, 0));
    if (n_gpus > 1) { /* fill2 to GPU 0 (a tie: the first), fill3 to GPU 1 */
        CHECK(wait_for(&s, 2, 1, 0));
        CHECK(s.gpu_of[2] == 0 && s.gpu_of[3] == 1);
    }
    CHECK_OK(rt_runtime_remove_camera(rt, 3));
    gone(&s, 3);
    CHECK_FAILS(rt_runtime_remove_camera(rt, 3), OMMA_ERR_INVALID_ARG, "no such camera");

    rt_runtime_stop(rt);
    CHECK_OK(rt_runtime_wait(rt, 60000));
    rt_runtime_stats st;
    rt_runtime_get_stats(rt, &st);
    rt_runtime_destroy(rt);
    metrics_destroy(m);
    fprintf(stderr, "live on %d GPU(s): %llu in, %llu done, %llu dropped, %llu batches\n", n_gpus,
            (unsigned long long)st.frames_in, (unsigned long long)st.frames_done,
            (unsigned long long)st.frames_dropped, (unsigned long long)st.batches);
    CHECK(s.after_removal == 0);
    CHECK(s.out_of_order == 0);
    CHECK(s.not_from_one == 0);
    CHECK(s.faceless_seq == 0);
    CHECK(s.reused_ids == 0);
    CHECK(s.wrong_gpu == 0);
    CHECK(st.frames_done == (uint64_t)s.total_results);
    CHECK(st.frames_done + st.frames_dropped <= st.frames_in);
    CHECK(same_held("after destroy", before, held_now(dev)));
    omma_device_close(dev);
    pthread_mutex_destroy(&s.lock);
}

static void test_add_remove_under_load(void)
{
    add_remove_under_load(1);
}

static void test_two_gpus(void)
{
    int n = 0;
    REQUIRE_OK(omma_device_count(&n));
    if (n < 2) {
        fprintf(stderr, "one GPU: two GPUs' placement not tested\n");
        return;
    }
    add_remove_under_load(2);
}

static void test_empty_and_refused(void)
{
    static seen s;
    memset(&s, 0, sizeof s);
    pthread_mutex_init(&s.lock, NULL);
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    held before = held_now(dev);
    rt_runtime_config cfg;
    base_config(&cfg, &s, 1);
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
    base_config(&cfg, &s, 1);
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
    /* The frame bus's cameras are fixed at its start. */
    cfg.publish = "omma-live-test";
    CHECK_FAILS(rt_runtime_start(&cfg, &rt), OMMA_ERR_UNSUPPORTED, "cannot be published");
    CHECK(rt == NULL);
    CHECK(same_held("empty and refused", before, held_now(dev)));
    omma_device_close(dev);
    pthread_mutex_destroy(&s.lock);
}

int main(void)
{
    gpu_test_require_device();
    if (io_image_load(FACE_PHOTO, &photo) != OMMA_OK) {
        fprintf(stderr, "%s: %s (run scripts/fetch-testdata.sh)\n", FACE_PHOTO, omma_last_error());
        return 1;
    }
    if (!write_sequence()) {
        fprintf(stderr, "cannot write the test sequence\n");
        return 1;
    }
    RUN(test_add_remove_under_load);
    RUN(test_two_gpus);
    RUN(test_empty_and_refused);
    remove_dir(dir_seq);
    io_image_free(&photo);
    return testing_finish();
}
