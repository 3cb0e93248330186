#define _DEFAULT_SOURCE /* nanosleep, sysconf */
/* omma bench runtime: the multi-camera runtime (runtime/runtime.h) under
 * N synthetic cameras at a frame rate, frames from a pool in device memory
 * (read in place) or pinned host memory (one upload per frame), for each N
 * of a list. After a warm-up, a measurement window gives per camera the
 * frames processed and the latency from capture to result; a camera count
 * passes when every camera kept its rate (at least 99% of fps frames per
 * second in the window, nothing dropped) with p99 latency under one frame
 * period. Also: frames/s, process CPU time per frame, bytes per frame each
 * way, launches and frames per batch, GPU step time, and (pinned pools) the
 * host-to-device bandwidth measured here and the camera count it allows.
 * --pose lite|full|heavy adds body pose to each step (poses per frame in
 * the figures); --backend cpu runs the CPU runtime instead (frames in host
 * memory, no GPU figures).
 * A table on stderr, one JSON line per count on stdout with --json. */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/bench.h"
#include "cli/bench_viewers.h"
#include "cli/bench_window.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "core/error.h"
#include "gpu/check.h"
#include "gpu/memory.h"
#include "gpu/stream_pool.h"
#include "omma/device.h"
#include "runtime/preview.h"
#include "runtime/runtime.h"
#include "ui/ui_server.h"

#define PHOTO "testdata/astronaut.png"
#define MAX_COUNTS 32

typedef struct bench_opts {
    int counts[MAX_COUNTS], n_counts;
    double fps, warmup_s, duration_s, report_s;
    int width, height;
    omma_memory pool;
    int gpus[RT_MAX_GPUS], n_gpus;
    int max_batch, max_wait_ms, lanes, graphs, max_faces, detect_every, per_thread;
    int viewers[4], n_viewers; /* --ui-viewers: each count runs with each */
    int json;
    omma_backend backend; /* --backend: the GPU runtime (default) or the CPU one */
    char pose[8]; /* --pose: lite, full, heavy ("": no pose) */
} bench_opts;

typedef struct figures {
    int cameras;
    double fps_total, min_camera_fps, p50_ms, p99_ms, cpu_us_per_frame;
    double h2d_per_frame, d2h_per_frame, h2d_copies_per_frame, d2h_copies_per_batch;
    double frames_per_batch, launches_per_batch, worker_us_per_batch, step_ms, face_rate, mean_iou;
    double poses_per_frame;
    uint64_t dropped;
    int viewers; /* live-view viewers attached (0: no live view) */
    uint64_t previews, images, image_errors; /* made by the runtime, fetched by viewers */
    int pass;
} figures;

enum {
    OPT_CAMERAS,
    OPT_FPS,
    OPT_RESOLUTION,
    OPT_POOL,
    OPT_WARMUP,
    OPT_DURATION,
    OPT_GPUS,
    OPT_MAX_BATCH,
    OPT_MAX_WAIT_MS,
    OPT_LANES,
    OPT_GRAPHS,
    OPT_MAX_FACES,
    OPT_DETECT_EVERY,
    OPT_PER_THREAD,
    OPT_REPORT_EVERY,
    OPT_UI_VIEWERS,
    OPT_BACKEND,
    OPT_POSE,
    OPT_JSON
};

static const cli_option options[] = {
    [OPT_CAMERAS] = {"--cameras", "N[,N...]", "camera counts to try (64)"},
    [OPT_FPS] = {"--fps", "F", "each camera's rate, 0..1000 (30)"},
    [OPT_RESOLUTION] = {"--resolution", "WxH", "NV12 frames, even, 64..8192 (1920x1080)"},
    [OPT_POOL] = {"--pool", "device|pinned", "frames in device (default) or pinned host memory"},
    [OPT_WARMUP] = {"--warmup", "S", "seconds before the window (3)"},
    [OPT_DURATION] = {"--duration", "S", "the measured window, seconds (10)"},
    [OPT_GPUS] = {"--gpus", "LIST", "GPU ordinals, e.g. 0,1 (0)"},
    [OPT_MAX_BATCH] = {"--max-batch", "N", "frames per batch (256)"},
    [OPT_MAX_WAIT_MS] = {"--max-wait-ms", "MS", "a batch's longest wait (8)"},
    [OPT_LANES] = {"--lanes", "N", "batches in flight per GPU (3)"},
    [OPT_GRAPHS] = {"--graphs", "on|off", "batches as CUDA graphs (on)"},
    [OPT_MAX_FACES] = {"--max-faces", "N", "faces tracked per camera (1)"},
    [OPT_DETECT_EVERY] = {"--detect-every", "K", "detector every K frames (10)"},
    [OPT_PER_THREAD] = {"--cameras-per-thread", "K", "one thread drives K cameras (1)"},
    [OPT_REPORT_EVERY] = {"--report-every", "S",
                          "every S s of the window (a soak): frames, drops, device\n"
                          "memory (omma's pool and NVML's), host RSS, threads"},
    [OPT_UI_VIEWERS] = {"--ui-viewers", "N[,N...]",
                        "run each count with the live view (omma stream --ui)\n"
                        "and N simulated browsers on loopback (0: no live view;\n"
                        "1..16): each follows 24 cameras' results and stats,\n"
                        "fetches their thumbnails every second and one large\n"
                        "preview 5 times a second (default 0; e.g. 0,10)"},
    [OPT_BACKEND] = {"--backend", "gpu|cpu", "the GPU runtime (default) or the CPU one"},
    [OPT_POSE] = {"--pose", "lite|full|heavy", "also body pose in each step (off)"},
    [OPT_JSON] = {"--json", NULL, "one JSON line per count on stdout"},
    {NULL, NULL, NULL},
};

static void usage(FILE *to)
{
    fprintf(to, "usage: omma bench runtime [--cameras N[,N...]] [--fps F] [--resolution WxH]\n"
                "                          [--pool device|pinned] [--warmup S] [--duration S]\n"
                "                          [--gpus LIST] [--max-batch N] [--max-wait-ms MS]\n"
                "                          [--lanes N] [--graphs on|off] [--max-faces N]\n"
                "                          [--detect-every K] [--cameras-per-thread K]\n"
                "                          [--report-every S] [--ui-viewers N[,N...]]\n"
                "                          [--backend gpu|cpu] [--pose lite|full|heavy] [--json]\n"
                "  The runtime with N synthetic cameras at F fps; a count passes when every\n"
                "  camera kept F fps with nothing dropped and p99 latency under 1/F s.\n");
    cli_print_options(to, options);
}

static int parse_list(const char *s, int lo, int hi, int *out, int max, int *n)
{
    *n = 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        if (*n == max || cli_parse_int(t, lo, hi, &out[*n]) != 0)
            return -1;
        ++*n;
    }
    return *n > 0 ? 0 : -1;
}

static int parse_args(int argc, char **argv, bench_opts *o)
{
    memset(o, 0, sizeof *o);
    o->counts[0] = 64, o->n_counts = 1;
    o->fps = 30.0, o->warmup_s = 3.0, o->duration_s = 10.0;
    o->width = 1920, o->height = 1080;
    o->pool = OMMA_MEMORY_DEVICE;
    o->n_gpus = 1;
    o->max_batch = 256, o->max_wait_ms = 8, o->lanes = 3, o->graphs = 1;
    o->max_faces = 1, o->detect_every = 10, o->per_thread = 1;
    o->n_viewers = 1;
    o->backend = OMMA_BACKEND_CUDA;
    cli_args args;
    cli_args_init(&args, "bench runtime", options, argc, argv);
    const cli_option *opt;
    const char *v;
    for (cli_arg_kind k; (k = cli_next(&args, &opt, &v)) != CLI_ARG_END;) {
        if (k == CLI_ARG_HELP) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        if (k == CLI_ARG_ERROR)
            return CLI_EXIT_USAGE;
        if (k == CLI_ARG_POSITIONAL)
            return cli_usage_error("bench runtime", "unexpected argument '%s'", v);
        int bad = 0;
        switch (opt - options) {
        case OPT_JSON:
            o->json = 1;
            break;
        case OPT_BACKEND:
            bad = strcmp(v, "gpu") && strcmp(v, "cpu");
            o->backend = strcmp(v, "cpu") == 0 ? OMMA_BACKEND_CPU : OMMA_BACKEND_CUDA;
            break;
        case OPT_POSE:
            bad = strcmp(v, "lite") && strcmp(v, "full") && strcmp(v, "heavy");
            snprintf(o->pose, sizeof o->pose, "%s", v);
            break;
        case OPT_CAMERAS:
            bad = parse_list(v, 1, OMMA_PIPELINE_MAX_CAMERAS, o->counts, MAX_COUNTS, &o->n_counts);
            break;
        case OPT_GPUS:
            bad = parse_list(v, 0, 63, o->gpus, RT_MAX_GPUS, &o->n_gpus);
            break;
        case OPT_UI_VIEWERS:
            bad = parse_list(v, 0, 16, o->viewers, 4, &o->n_viewers);
            break;
        case OPT_FPS:
            bad = sscanf(v, "%lf", &o->fps) != 1 || !(o->fps > 0 && o->fps <= 1000);
            break;
        case OPT_WARMUP:
            bad = sscanf(v, "%lf", &o->warmup_s) != 1 || !(o->warmup_s >= 0);
            break;
        case OPT_REPORT_EVERY:
            bad = sscanf(v, "%lf", &o->report_s) != 1 || !(o->report_s > 0);
            break;
        case OPT_DURATION:
            bad = sscanf(v, "%lf", &o->duration_s) != 1 || !(o->duration_s > 0);
            break;
        case OPT_RESOLUTION:
            bad = sscanf(v, "%dx%d", &o->width, &o->height) != 2 || o->width < 64 ||
                  o->height < 64 || o->width > 8192 || o->height > 8192 || o->width % 2 ||
                  o->height % 2;
            break;
        case OPT_POOL:
            bad = strcmp(v, "device") && strcmp(v, "pinned");
            o->pool = strcmp(v, "pinned") == 0 ? OMMA_MEMORY_HOST : OMMA_MEMORY_DEVICE;
            break;
        case OPT_MAX_BATCH:
            bad = cli_parse_int(v, 1, OMMA_PIPELINE_MAX_BATCH, &o->max_batch);
            break;
        case OPT_MAX_WAIT_MS:
            bad = cli_parse_int(v, 0, 10000, &o->max_wait_ms);
            break;
        case OPT_LANES:
            bad = cli_parse_int(v, 1, OMMA_PIPELINE_MAX_LANES, &o->lanes);
            break;
        case OPT_GRAPHS:
            bad = strcmp(v, "on") && strcmp(v, "off");
            o->graphs = strcmp(v, "on") == 0;
            break;
        case OPT_MAX_FACES:
            bad = cli_parse_int(v, 1, OMMA_PIPELINE_MAX_FACES, &o->max_faces);
            break;
        case OPT_DETECT_EVERY:
            bad = cli_parse_int(v, 0, 1000000, &o->detect_every);
            break;
        case OPT_PER_THREAD:
            bad = cli_parse_int(v, 1, 4096, &o->per_thread);
            break;
        }
        if (bad)
            return cli_usage_error("bench runtime", "%s %s: not a valid value", opt->name, v);
    }
    return -1;
}

/* Pinned host-to-device bandwidth: 32 copies of 32 MiB on one stream. */
static double h2d_bandwidth(int ordinal)
{
    enum { BYTES = 32 << 20, COPIES = 32 };
    omma_device *dev = NULL;
    double gbps = NAN;
    if (omma_device_open(ordinal, &dev) != OMMA_OK)
        return NAN;
    omma_scope scope;
    void *host = NULL;
    CUdeviceptr d = 0;
    CUstream s = NULL;
    CUevent e0 = NULL, e1 = NULL;
    if (omma_device_enter(dev, &scope) == OMMA_OK) {
        if (gpu_host_alloc(dev, BYTES, &host) == OMMA_OK &&
            gpu_mem_alloc(dev, BYTES, &d) == OMMA_OK &&
            gpu_stream_acquire(dev, GPU_PRIORITY_NORMAL, &s) == OMMA_OK &&
            gpu_event_acquire(dev, GPU_EVENT_TIMING, &e0) == OMMA_OK &&
            gpu_event_acquire(dev, GPU_EVENT_TIMING, &e1) == OMMA_OK) {
            memset(host, 1, BYTES);
            int ok = gpu_copy_h2d_async(dev, d, host, BYTES, s) == OMMA_OK; /* warm */
            ok = ok && gpu_cu.cuEventRecord(e0, s) == CUDA_SUCCESS;
            for (int i = 0; i < COPIES && ok; i++)
                ok = gpu_copy_h2d_async(dev, d, host, BYTES, s) == OMMA_OK;
            ok = ok && gpu_cu.cuEventRecord(e1, s) == CUDA_SUCCESS &&
                 gpu_cu.cuEventSynchronize(e1) == CUDA_SUCCESS;
            float ms = 0;
            if (ok && gpu_cu.cuEventElapsedTime(&ms, e0, e1) == CUDA_SUCCESS && ms > 0)
                gbps = (double)BYTES * COPIES / (ms * 1e6);
        }
        gpu_event_release(dev, e0);
        gpu_event_release(dev, e1);
        gpu_stream_release(dev, s);
        (void)gpu_mem_free(dev, d);
        if (host)
            gpu_host_free(dev, host, BYTES);
        (void)omma_device_leave(&scope);
    }
    omma_device_close(dev);
    return gbps;
}

typedef struct accuracy {
    pthread_mutex_t lock;
    uint64_t frames, with_face;
    double iou_sum;
    ui_server *ui; /* --ui-viewers: the live view, fed as omma stream does */
} accuracy;

static void on_result(void *ctx, const rt_result *r)
{
    accuracy *a = ctx;
    if (a->ui)
        ui_result(a->ui, r);
    float iou = 0.0f;
    if (r->n_faces > 0 && r->truth) {
        const omma_box *b = &r->faces[0].box, *t = r->truth;
        float ix = fminf(b->xmax, t->xmax) - fmaxf(b->xmin, t->xmin);
        float iy = fminf(b->ymax, t->ymax) - fmaxf(b->ymin, t->ymin);
        float inter = ix > 0 && iy > 0 ? ix * iy : 0.0f;
        float uni = (b->xmax - b->xmin) * (b->ymax - b->ymin) +
                    (t->xmax - t->xmin) * (t->ymax - t->ymin) - inter;
        iou = uni > 0 ? inter / uni : 0.0f;
    }
    pthread_mutex_lock(&a->lock);
    a->frames++;
    a->with_face += r->n_faces > 0;
    a->iou_sum += iou;
    pthread_mutex_unlock(&a->lock);
}

/* The window's figures from the snapshots at its start and end. */
static void window_figures(const bench_opts *o, const cli_window_mark *a, const cli_window_mark *b,
                           figures *f)
{
    uint64_t frames = b->stats.frames_done - a->stats.frames_done;
    uint64_t batches = b->stats.batches - a->stats.batches;
    metrics_hist lat;
    double secs = cli_window_cameras(a, b, &f->min_camera_fps, &lat);
    f->fps_total = (double)frames / secs;
    f->p50_ms = metrics_hist_quantile_ns(&lat, 0.50) / 1e6;
    f->p99_ms = metrics_hist_quantile_ns(&lat, 0.99) / 1e6;
    double fr = frames ? (double)frames : 1.0;
    f->cpu_us_per_frame = (double)(b->cpu_ns - a->cpu_ns) / fr / 1e3;
    f->h2d_per_frame = (double)(b->stats.h2d_bytes - a->stats.h2d_bytes) / fr;
    f->d2h_per_frame = (double)(b->stats.d2h_bytes - a->stats.d2h_bytes) / fr;
    f->h2d_copies_per_frame = (double)(b->stats.h2d_copies - a->stats.h2d_copies) / fr;
    f->d2h_copies_per_batch =
        batches ? (double)(b->stats.d2h_copies - a->stats.d2h_copies) / (double)batches : 0.0;
    f->frames_per_batch = batches ? (double)frames / (double)batches : 0.0;
    f->launches_per_batch =
        batches ? (double)(b->stats.launches - a->stats.launches) / (double)batches : 0.0;
    f->worker_us_per_batch =
        batches ? (double)(b->stats.worker_cpu_ns - a->stats.worker_cpu_ns) / (double)batches / 1e3
                : 0.0;
    f->dropped = b->stats.frames_dropped - a->stats.frames_dropped;
    f->poses_per_frame = (double)(b->stats.poses - a->stats.poses) / fr;
    f->step_ms = b->snap->n_gpus > 0 && b->snap->n_stages > 0
                     ? metrics_hist_quantile_ns(&b->snap->gpus[0].stages[0], 0.5) / 1e6
                     : NAN;
    f->pass = f->min_camera_fps >= 0.99 * o->fps && f->dropped == 0 && f->p99_ms < 1000.0 / o->fps;
}

static long threads_now(void)
{
    DIR *d = opendir("/proc/self/task");
    long n = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

static double rss_mb(void)
{
    long pages = 0, resident = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!f)
        return NAN;
    int ok = fscanf(f, "%ld %ld", &pages, &resident) == 2;
    fclose(f);
    return ok ? (double)resident * (double)sysconf(_SC_PAGESIZE) / 1e6 : NAN;
}

/* One soak line: time into the window, counts, memory, threads. */
static void report_line(rt_runtime *rt, int ordinal, double t_s)
{
    rt_runtime_stats s;
    rt_runtime_get_stats(rt, &s);
    omma_device *dev = NULL;
    omma_memory_stats ms = {0};
    omma_device_metrics nv = {0};
    if (omma_device_open(ordinal, &dev) == OMMA_OK) {
        (void)omma_device_get_memory_stats(dev, &ms);
        (void)omma_device_read_metrics(dev, &nv);
        omma_device_close(dev);
    }
    fprintf(stderr,
            "soak t=%6.0f s: frames in %llu, done %llu, dropped %llu; device pool used %.1f MB "
            "(%llu buffers), pinned %.1f MB, NVML process %.1f MB; host RSS %.1f MB; threads "
            "%ld\n",
            t_s, (unsigned long long)s.frames_in, (unsigned long long)s.frames_done,
            (unsigned long long)s.frames_dropped, (double)ms.pool_used / 1e6,
            (unsigned long long)ms.live_allocations, (double)ms.pinned_bytes / 1e6,
            nv.valid & OMMA_METRIC_PROCESS_MEMORY ? (double)nv.process_mem_used / 1e6 : NAN,
            rss_mb(), threads_now());
}

/* The window: sleeps, with a soak line every report_s when asked. */
static void measure(const bench_opts *o, rt_runtime *rt)
{
    if (!(o->report_s > 0)) {
        cli_sleep_s(o->duration_s);
        return;
    }
    double t = 0;
    report_line(rt, o->gpus[0], 0);
    while (t < o->duration_s) {
        double step = fmin(o->report_s, o->duration_s - t);
        cli_sleep_s(step);
        t += step;
        report_line(rt, o->gpus[0], t);
    }
}

/* --ui-viewers: the previews, the live view and its viewers; -1 or the
 * exit code. */
static int start_ui(int viewers, int cameras, int max_faces, metrics_registry *m,
                    rt_preview **preview, ui_server **ui)
{
    if (viewers == 0)
        return -1;
    omma_status st = rt_preview_create(cameras, preview);
    if (st == OMMA_OK) {
        ui_options uo = {.n_cameras = cameras,
                         .max_faces = max_faces,
                         .t0_ns = core_now_ns(),
                         .metrics = m,
                         .preview = *preview};
        st = ui_start(&uo, ui);
    }
    if (st != OMMA_OK)
        return cli_fail(st, "bench runtime --ui-viewers");
    return -1;
}

static int run_count(const bench_opts *o, int cameras, int viewers, const io_image *photo,
                     const char *data, figures *f)
{
    memset(f, 0, sizeof *f);
    f->cameras = cameras;
    f->viewers = viewers;
    char det[4096], mesh[4096], pose_det[4096], pose_lm[4096];
    snprintf(det, sizeof det, "%s/models/face_detection_short_range.tflite", data);
    snprintf(mesh, sizeof mesh, "%s/models/face_landmark.tflite", data);
    snprintf(pose_det, sizeof pose_det, "%s/models/pose_detection.tflite", data);
    snprintf(pose_lm, sizeof pose_lm, "%s/models/pose_landmark_%s.tflite", data, o->pose);
    rt_camera_config *cams = calloc((size_t)cameras, sizeof *cams);
    metrics_registry *m = NULL;
    metrics_config mc = {rt_runtime_stage_names, RT_RUNTIME_STAGES, 0};
    if (!cams || metrics_create(&mc, &m) != OMMA_OK) {
        free(cams);
        return cli_fail(OMMA_ERR_OUT_OF_MEMORY, "bench runtime");
    }
    accuracy acc = {.frames = 0};
    pthread_mutex_init(&acc.lock, NULL);
    rt_runtime_config c;
    rt_runtime_config_init(&c);
    c.n_cameras = cameras;
    c.cameras = cams;
    c.n_gpus = o->n_gpus;
    c.gpus = o->gpus;
    c.pipeline.detector_model = det;
    c.pipeline.mesh_model = mesh;
    c.pipeline.max_batch = o->max_batch;
    c.pipeline.lanes = o->lanes;
    c.pipeline.graphs = o->graphs;
    c.pipeline.max_faces = o->max_faces;
    c.pipeline.detect_every = o->detect_every;
    c.pipeline.backend = o->backend;
    if (o->pose[0]) {
        c.pose.detector_model = pose_det;
        c.pose.landmark_model = pose_lm;
    }
    c.max_wait_ms = o->max_wait_ms;
    c.photo = photo;
    c.synthetic.width = o->width;
    c.synthetic.height = o->height;
    c.synthetic.fps = o->fps;
    c.pool_memory = o->pool;
    c.synthetic_per_thread = o->per_thread;
    c.on_result = on_result;
    c.ctx = &acc;
    c.metrics = m;
    rt_preview *preview = NULL;
    bench_viewers *bv = NULL;
    int rc = start_ui(viewers, cameras, o->max_faces, m, &preview, &acc.ui);
    if (rc >= 0) {
        rt_preview_destroy(preview);
        metrics_destroy(m);
        pthread_mutex_destroy(&acc.lock);
        free(cams);
        return rc;
    }
    rc = CLI_EXIT_OK;
    c.preview = preview;
    rt_runtime *rt = NULL;
    omma_status st = rt_runtime_start(&c, &rt);
    if (st == OMMA_OK && viewers > 0 &&
        !(bv = bench_viewers_start(viewers, ui_port(acc.ui), cameras)))
        st = OMMA_FAIL(OMMA_ERR_INTERNAL, "bench runtime: the simulated viewers did not start");
    if (st != OMMA_OK) {
        rc = cli_fail(st, "bench runtime: %d cameras", cameras);
    } else {
        cli_window_mark a = {0}, b = {0};
        cli_sleep_s(o->warmup_s);
        st = cli_window_take(rt, m, &a);
        uint64_t previews0 = rt_preview_count(preview);
        measure(o, rt);
        if (st == OMMA_OK)
            st = cli_window_take(rt, m, &b);
        f->previews = rt_preview_count(preview) - previews0;
        bench_viewers_stats vs;
        bench_viewers_stop(bv, &vs);
        bv = NULL;
        f->images = vs.images, f->image_errors = vs.image_errors;
        rt_runtime_stop(rt);
        omma_status ended = rt_runtime_wait(rt, -1);
        if (st == OMMA_OK && ended == OMMA_OK) {
            window_figures(o, &a, &b, f);
            f->face_rate = acc.frames ? (double)acc.with_face / (double)acc.frames : 0.0;
            f->mean_iou = acc.frames ? acc.iou_sum / (double)acc.frames : 0.0;
        } else {
            rc = cli_fail(st != OMMA_OK ? st : ended, "bench runtime: %d cameras", cameras);
        }
        cli_window_free(&a);
        cli_window_free(&b);
    }
    bench_viewers_stop(bv, NULL);
    rt_runtime_destroy(rt);
    ui_stop(acc.ui);
    rt_preview_destroy(preview);
    metrics_destroy(m);
    pthread_mutex_destroy(&acc.lock);
    free(cams);
    return rc;
}

static void print_row(const figures *f)
{
    fprintf(stderr,
            "%7d %9.0f %8.2f %7.2f %7.2f %6llu %8.2f %9.0f %7.0f %5.2f %6.1f %6.1f %7.0f %6.2f "
            "%5.3f %5.3f %5.3f %s %d %llu/%llu\n",
            f->cameras, f->fps_total, f->min_camera_fps, f->p50_ms, f->p99_ms,
            (unsigned long long)f->dropped, f->cpu_us_per_frame, f->h2d_per_frame, f->d2h_per_frame,
            f->h2d_copies_per_frame, f->frames_per_batch, f->launches_per_batch,
            f->worker_us_per_batch, f->step_ms, f->face_rate, f->mean_iou, f->poses_per_frame,
            f->pass ? "pass" : "FAIL", f->viewers, (unsigned long long)f->previews,
            (unsigned long long)f->images);
}

static void print_json(const bench_opts *o, const figures *f, double gbps)
{
    char gbps_text[32] = "null"; /* JSON has no NaN: not measured */
    if (!isnan(gbps))
        snprintf(gbps_text, sizeof gbps_text, "%.2f", gbps);
    printf("{\"bench\":\"runtime\",\"cameras\":%d,\"fps\":%g,\"width\":%d,\"height\":%d,"
           "\"pool\":\"%s\",\"gpus\":%d,\"max_batch\":%d,\"max_wait_ms\":%d,\"lanes\":%d,"
           "\"graphs\":%s,\"cameras_per_thread\":%d,\"frames_per_s\":%.1f,\"min_camera_fps\":%.3f,"
           "\"p50_ms\":%.3f,"
           "\"p99_ms\":%.3f,\"dropped\":%llu,\"cpu_us_per_frame\":%.3f,\"h2d_bytes_per_frame\":"
           "%.1f,\"d2h_bytes_per_frame\":%.1f,\"h2d_copies_per_frame\":%.3f,"
           "\"d2h_copies_per_batch\":%.3f,\"frames_per_batch\":%.2f,\"launches_per_batch\":%.2f,"
           "\"worker_cpu_us_per_batch\":%.1f,"
           "\"step_ms\":%.3f,\"face_rate\":%.4f,\"mean_iou\":%.4f,\"h2d_gbps\":%s,"
           "\"backend\":\"%s\",\"pose\":%s%s%s,\"poses_per_frame\":%.4f,"
           "\"ui_viewers\":%d,\"previews\":%llu,\"preview_images\":%llu,"
           "\"preview_errors\":%llu,\"pass\":%s}\n",
           f->cameras, o->fps, o->width, o->height,
           o->pool == OMMA_MEMORY_HOST ? "pinned" : "device", o->n_gpus, o->max_batch,
           o->max_wait_ms, o->lanes, o->graphs ? "true" : "false", o->per_thread, f->fps_total,
           f->min_camera_fps, f->p50_ms, f->p99_ms, (unsigned long long)f->dropped,
           f->cpu_us_per_frame, f->h2d_per_frame, f->d2h_per_frame, f->h2d_copies_per_frame,
           f->d2h_copies_per_batch, f->frames_per_batch, f->launches_per_batch,
           f->worker_us_per_batch, isnan(f->step_ms) ? 0.0 : f->step_ms, f->face_rate, f->mean_iou,
           gbps_text, o->backend == OMMA_BACKEND_CPU ? "cpu" : "gpu", o->pose[0] ? "\"" : "",
           o->pose[0] ? o->pose : "null", o->pose[0] ? "\"" : "", f->poses_per_frame, f->viewers,
           (unsigned long long)f->previews, (unsigned long long)f->images,
           (unsigned long long)f->image_errors, f->pass ? "true" : "false");
    fflush(stdout);
}

int cli_bench_runtime(int argc, char **argv)
{
    bench_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;
    const char *data = cli_data_dir();
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", data, PHOTO);
    io_image photo = {0};
    omma_status st = io_image_load(path, &photo);
    if (st != OMMA_OK)
        return cli_fail(st, "bench runtime: the photo (run scripts/fetch-testdata.sh)");
    int count = 0;
    if (o.backend == OMMA_BACKEND_CUDA && (omma_device_count(&count) != OMMA_OK || count == 0)) {
        io_image_free(&photo);
        return cli_fail(OMMA_ERR_NO_DEVICE, "bench runtime needs a GPU");
    }
    double frame_bytes = (double)o.width * o.height * 1.5;
    double gbps = o.pool == OMMA_MEMORY_HOST && o.backend == OMMA_BACKEND_CUDA
                      ? h2d_bandwidth(o.gpus[0])
                      : NAN;
    fprintf(stderr,
            "bench runtime: %dx%d NV12 at %g fps, pool in %s memory, %d GPU(s), batch %d, wait "
            "%d ms, %d lanes, graphs %s, max faces %d, detector every %d, %d camera(s) per "
            "thread, %s backend, pose %s\n",
            o.width, o.height, o.fps, o.pool == OMMA_MEMORY_HOST ? "pinned host" : "device",
            o.n_gpus, o.max_batch, o.max_wait_ms, o.lanes, o.graphs ? "on" : "off", o.max_faces,
            o.detect_every, o.per_thread, o.backend == OMMA_BACKEND_CPU ? "CPU" : "GPU",
            o.pose[0] ? o.pose : "off");
    if (!isnan(gbps))
        fprintf(stderr,
                "pinned host-to-device bandwidth %.1f GB/s: %.0f cameras of %.2f MB at %g fps "
                "(90%%: %.0f)\n",
                gbps, gbps * 1e9 / (frame_bytes * o.fps), frame_bytes / 1e6, o.fps,
                0.9 * gbps * 1e9 / (frame_bytes * o.fps));
    fprintf(stderr, "%7s %9s %8s %7s %7s %6s %8s %9s %7s %5s %6s %6s %7s %6s %5s %5s %5s pass %s\n",
            "cameras", "frames/s", "min fps", "p50 ms", "p99 ms", "drops", "CPU us/f", "h2d B/f",
            "d2h B/f", "h2d/f", "f/bat", "l/bat", "wrk us/b", "stepms", "faces", "IoU", "poses",
            "viewers previews/images");
    int best = 0;
    for (int i = 0; i < o.n_counts && rc < 0; i++)
        for (int k = 0; k < o.n_viewers && rc < 0; k++) {
            figures f;
            int r = run_count(&o, o.counts[i], o.viewers[k], &photo, data, &f);
            if (r != CLI_EXIT_OK) {
                rc = r;
                break;
            }
            print_row(&f);
            if (o.json)
                print_json(&o, &f, gbps);
            if (f.pass && f.cameras > best)
                best = f.cameras;
        }
    if (rc < 0) {
        fprintf(stderr, "largest camera count passing: %d\n", best);
        rc = CLI_EXIT_OK;
    }
    io_image_free(&photo);
    return rc;
}
