#define _DEFAULT_SOURCE /* nanosleep, sysconf */
/* omma bench decode: compressed cameras to faces. N cameras each play the
 * same video file (looped, at its own rate, like a camera) through the
 * runtime with the whole face pipeline, decoded on the GPU's NVDEC engines
 * (--decode gpu), on the CPU (cpu) or the GPU first then the CPU (auto).
 * After a warm-up, a window gives the frames/s, every camera's rate, the
 * latency from a frame's delivery to its results (p50/p99), the process's
 * CPU time per frame, host-to-device bytes per frame (for GPU-decoded
 * frames: the compressed packets) and the decoders' utilization (NVML). A
 * count passes when every camera kept 97% of the file's rate with p99
 * latency under 100 ms. --cpu-breakdown splits the cameras' threads' CPU
 * per frame by call (demuxing, the conversion to Annex B, NVIDIA's parser, the
 * decode submissions, the status queries and the sleeps for them, mapping,
 * unmapping, the ring's copy, pacing, the hand-off to the worker, with the
 * calls per frame: queries, wake-ups), measured with the thread's CPU
 * clock around each call (its own cost, ~20 clock reads a frame, is in
 * the camera threads' total: compare with a run without it). --streams
 * max searches the largest passing count (doubling, then halving the
 * gap). A table on stderr, one JSON line per count on stdout with --json
 * (and one more with the breakdown). */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/bench.h"
#include "cli/bench_window.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "core/cpu_parts.h"
#include "io/video_file.h"
#include "omma/device.h"
#include "runtime/runtime.h"

#define DEFAULT_INPUT "testdata/decode/pan1080_h264.mp4"
#define MAX_STREAMS 4096

typedef struct bench_opts {
    const char *input;
    int streams; /* 0: search the largest passing count */
    io_decode decode;
    int gpu_streams; /* auto's budget per GPU */
    double warmup_s, duration_s, fps;
    int gpus[RT_MAX_GPUS], n_gpus, max_batch, max_faces, detect_every;
    int json, cpu_breakdown;
    double clock_read_ns; /* --cpu-breakdown: one read of the thread's CPU clock */
} bench_opts;

/* Process CPU time by kind of thread (their names: omma-cam3, omma-gpu0,
 * ...): the cameras' (read, decode, put), the workers', the sinks', the
 * rest (FFmpeg's and the driver's threads, the monitor). */
enum { T_CAM, T_WORKER, T_SINK, T_OTHER, T_KINDS };
static const char *const thread_kinds[T_KINDS] = {"cameras", "workers", "sinks", "other"};

typedef struct figures {
    int streams;
    double fps_total, min_camera_fps, p50_ms, p99_ms, cpu_us_per_frame, h2d_per_frame;
    double decoder_pct;
    double kind_us_per_frame[T_KINDS];
    double decode_us_per_frame, decode_cpu_us_per_frame; /* in the decoders' calls */
    /* --cpu-breakdown: per frame put into a ring, by call kind. */
    double part_us[CORE_CPU_PARTS], part_calls[CORE_CPU_PARTS];
    int pass;
} figures;

/* Adds each thread's CPU time (ns) to its kind's total. */
static void thread_cpu(uint64_t *ns)
{
    memset(ns, 0, T_KINDS * sizeof *ns);
    DIR *d = opendir("/proc/self/task");
    long tick = sysconf(_SC_CLK_TCK);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (e->d_name[0] == '.')
            continue;
        char path[300], line[1024];
        snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(line, 1, sizeof line - 1, f);
        fclose(f);
        line[n] = '\0';
        char *open = strchr(line, '('), *close = strrchr(line, ')');
        if (!open || !close)
            continue;
        *close = '\0';
        unsigned long long ut = 0, st = 0;
        /* After the name: state, then fields 4..13; utime and stime are 14, 15. */
        if (sscanf(close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) !=
            2)
            continue;
        const char *name = open + 1;
        int k = strncmp(name, "omma-cam", 8) == 0    ? T_CAM
                : strncmp(name, "omma-gpu", 8) == 0  ? T_WORKER
                : strncmp(name, "omma-sink", 9) == 0 ? T_SINK
                                                     : T_OTHER;
        ns[k] += (uint64_t)((double)(ut + st) * (1e9 / (double)tick));
    }
    if (d)
        closedir(d);
}

enum {
    OPT_INPUT,
    OPT_STREAMS,
    OPT_DECODE,
    OPT_GPU_STREAMS,
    OPT_WARMUP,
    OPT_DURATION,
    OPT_GPUS,
    OPT_MAX_BATCH,
    OPT_MAX_FACES,
    OPT_DETECT_EVERY,
    OPT_CPU_BREAKDOWN,
    OPT_JSON
};

static const cli_option options[] = {
    [OPT_INPUT] = {"--input", "FILE", "the video every camera plays (" DEFAULT_INPUT ")"},
    [OPT_STREAMS] = {"--streams", "N|max", "cameras, or max: the largest count passing (max)"},
    [OPT_DECODE] = {"--decode", "gpu|cpu|auto", "where the video is decoded (gpu)"},
    [OPT_GPU_STREAMS] = {"--decode-gpu-streams", "N",
                         "auto: 1080p30 streams the GPU decodes before the CPU (160)"},
    [OPT_WARMUP] = {"--warmup", "S", "seconds before the window (3)"},
    [OPT_DURATION] = {"--duration", "S", "the measured window, seconds (6)"},
    [OPT_GPUS] = {"--gpus", "LIST", "GPU ordinals, e.g. 0,1: cameras round robin (0)"},
    [OPT_MAX_BATCH] = {"--max-batch", "N", "frames per batch (256)"},
    [OPT_MAX_FACES] = {"--max-faces", "N", "faces per camera (1)"},
    [OPT_DETECT_EVERY] = {"--detect-every", "K", "the detector every K frames at least (10)"},
    [OPT_CPU_BREAKDOWN] = {"--cpu-breakdown", NULL,
                           "the camera threads' CPU per frame by call (their thread clock)"},
    [OPT_JSON] = {"--json", NULL, "one JSON line per count on stdout"},
    {NULL, NULL, NULL},
};

static void usage(FILE *to)
{
    fprintf(to,
            "usage: omma bench decode [--input FILE] [--streams N|max] [--decode gpu|cpu|auto]\n"
            "                         [--decode-gpu-streams N] [--warmup S] [--duration S]\n"
            "                         [--gpus LIST] [--max-batch N] [--max-faces N]\n"
            "                         [--detect-every K] [--cpu-breakdown] [--json]\n"
            "  N cameras playing FILE at its rate, decoded and run through the face\n"
            "  pipeline; a count passes when every camera kept 97%% of the rate with p99\n"
            "  latency under 100 ms.\n");
    cli_print_options(to, options);
}

static int parse_args(int argc, char **argv, bench_opts *o)
{
    memset(o, 0, sizeof *o);
    o->decode = IO_DECODE_GPU;
    o->gpu_streams = 160;
    o->warmup_s = 3.0, o->duration_s = 6.0;
    o->max_batch = 256, o->max_faces = 1, o->detect_every = 10;
    o->n_gpus = 1;
    cli_args args;
    cli_args_init(&args, "bench decode", options, argc, argv);
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
            return cli_usage_error("bench decode", "unexpected argument '%s'", v);
        int bad = 0, m;
        switch (opt - options) {
        case OPT_INPUT:
            o->input = v;
            break;
        case OPT_STREAMS:
            o->streams = 0;
            bad = strcmp(v, "max") != 0 && cli_parse_int(v, 1, MAX_STREAMS, &o->streams);
            break;
        case OPT_DECODE:
            m = io_decode_parse(v);
            bad = m < 0;
            o->decode = bad ? o->decode : (io_decode)m;
            break;
        case OPT_GPU_STREAMS:
            bad = cli_parse_int(v, 0, 100000, &o->gpu_streams);
            break;
        case OPT_WARMUP:
            bad = sscanf(v, "%lf", &o->warmup_s) != 1 || !(o->warmup_s >= 0 && o->warmup_s < 1e5);
            break;
        case OPT_DURATION:
            bad = sscanf(v, "%lf", &o->duration_s) != 1 ||
                  !(o->duration_s >= 1 && o->duration_s < 1e5);
            break;
        case OPT_GPUS: {
            char buf[256];
            snprintf(buf, sizeof buf, "%s", v);
            o->n_gpus = 0;
            for (char *save = NULL, *t = strtok_r(buf, ",", &save); t && !bad;
                 t = strtok_r(NULL, ",", &save))
                bad = o->n_gpus == RT_MAX_GPUS || cli_parse_int(t, 0, 63, &o->gpus[o->n_gpus++]);
            bad = bad || o->n_gpus == 0;
            break;
        }
        case OPT_MAX_BATCH:
            bad = cli_parse_int(v, 1, OMMA_PIPELINE_MAX_BATCH, &o->max_batch);
            break;
        case OPT_MAX_FACES:
            bad = cli_parse_int(v, 1, OMMA_PIPELINE_MAX_FACES, &o->max_faces);
            break;
        case OPT_DETECT_EVERY:
            bad = cli_parse_int(v, 0, 1000000, &o->detect_every);
            break;
        case OPT_CPU_BREAKDOWN:
            o->cpu_breakdown = 1;
            break;
        case OPT_JSON:
            o->json = 1;
            break;
        }
        if (bad)
            return cli_usage_error("bench decode", "%s %s: not a valid value", opt->name, v);
    }
    return -1;
}

typedef struct window_mark {
    cli_window_mark w;
    uint64_t kind_ns[T_KINDS]; /* CPU time by kind of thread */
} window_mark;

static omma_status take_mark(rt_runtime *rt, metrics_registry *m, window_mark *w)
{
    thread_cpu(w->kind_ns);
    return cli_window_take(rt, m, &w->w);
}

static void window_figures(const bench_opts *o, const window_mark *am, const window_mark *bm,
                           figures *f)
{
    const cli_window_mark *a = &am->w, *b = &bm->w;
    uint64_t frames = b->stats.frames_done - a->stats.frames_done;
    metrics_hist lat;
    double secs = cli_window_cameras(a, b, &f->min_camera_fps, &lat);
    double fr = frames ? (double)frames : 1.0;
    f->fps_total = (double)frames / secs;
    f->p50_ms = metrics_hist_quantile_ns(&lat, 0.50) / 1e6;
    f->p99_ms = metrics_hist_quantile_ns(&lat, 0.99) / 1e6;
    f->cpu_us_per_frame = (double)(b->cpu_ns - a->cpu_ns) / fr / 1e3;
    f->h2d_per_frame = (double)(b->stats.h2d_bytes - a->stats.h2d_bytes) / fr;
    for (int k = 0; k < T_KINDS; k++)
        f->kind_us_per_frame[k] = (double)(bm->kind_ns[k] - am->kind_ns[k]) / fr / 1e3;
    uint64_t in = b->stats.frames_in - a->stats.frames_in;
    double fin = in ? (double)in : 1.0;
    f->decode_us_per_frame = (double)(b->stats.decode_ns - a->stats.decode_ns) / fin / 1e3;
    f->decode_cpu_us_per_frame =
        (double)(b->stats.decode_cpu_ns - a->stats.decode_cpu_ns) / fin / 1e3;
    for (int k = 0; k < CORE_CPU_PARTS; k++) {
        f->part_us[k] = (double)(b->stats.cpu.ns[k] - a->stats.cpu.ns[k]) / fin / 1e3;
        f->part_calls[k] = (double)(b->stats.cpu.calls[k] - a->stats.cpu.calls[k]) / fin;
    }
    f->pass = f->min_camera_fps >= 0.97 * o->fps && f->p99_ms < 100.0;
}

/* The window, reading the decoders' utilization (mean over the GPUs)
 * once a second. */
static double measure(const bench_opts *o)
{
    omma_device *dev[RT_MAX_GPUS] = {NULL};
    double sum = 0;
    int n = 0;
    for (int k = 0; k < o->n_gpus; k++)
        (void)omma_device_open(o->gpus[k], &dev[k]);
    for (double t = 0; t < o->duration_s; t += 1.0) {
        cli_sleep_s(fmin(1.0, o->duration_s - t));
        for (int k = 0; k < o->n_gpus; k++) {
            omma_device_metrics m = {0};
            if (dev[k] && omma_device_read_metrics(dev[k], &m) == OMMA_OK &&
                (m.valid & OMMA_METRIC_DECODER)) {
                sum += m.decoder_util_pct;
                n++;
            }
        }
    }
    for (int k = 0; k < o->n_gpus; k++)
        omma_device_close(dev[k]);
    return n ? sum / n : NAN;
}

static int run_count(const bench_opts *o, int streams, const char *data, figures *f)
{
    memset(f, 0, sizeof *f);
    f->streams = streams;
    char det[4096], mesh[4096];
    snprintf(det, sizeof det, "%s/models/face_detection_short_range.tflite", data);
    snprintf(mesh, sizeof mesh, "%s/models/face_landmark.tflite", data);
    rt_camera_config *cams = calloc((size_t)streams, sizeof *cams);
    metrics_registry *m = NULL;
    metrics_config mc = {rt_runtime_stage_names, RT_RUNTIME_STAGES, 0};
    if (!cams || metrics_create(&mc, &m) != OMMA_OK) {
        free(cams);
        return cli_fail(OMMA_ERR_OUT_OF_MEMORY, "bench decode");
    }
    for (int i = 0; i < streams; i++)
        cams[i] = (rt_camera_config){o->input, NULL, 0, NULL, NULL};
    rt_runtime_config c;
    rt_runtime_config_init(&c);
    c.n_cameras = streams;
    c.cameras = cams;
    c.n_gpus = o->n_gpus;
    c.gpus = o->gpus;
    c.pipeline.detector_model = det;
    c.pipeline.mesh_model = mesh;
    c.pipeline.max_batch = o->max_batch;
    c.pipeline.max_faces = o->max_faces;
    c.pipeline.detect_every = o->detect_every;
    c.source.loop = 1;
    c.source.realtime = 1;
    c.source.decode = o->decode;
    c.decode_gpu_streams = o->gpu_streams;
    c.measure_cpu = o->cpu_breakdown;
    c.metrics = m;
    rt_runtime *rt = NULL;
    omma_status st = rt_runtime_start(&c, &rt);
    int rc = CLI_EXIT_OK;
    if (st != OMMA_OK) {
        rc = cli_fail(st, "bench decode: %d streams", streams);
    } else {
        window_mark a = {0}, b = {0};
        cli_sleep_s(o->warmup_s);
        st = take_mark(rt, m, &a);
        double decoder = measure(o);
        if (st == OMMA_OK)
            st = take_mark(rt, m, &b);
        rt_runtime_stop(rt);
        omma_status ended = rt_runtime_wait(rt, -1);
        if (st == OMMA_OK && ended == OMMA_OK) {
            window_figures(o, &a, &b, f);
            f->decoder_pct = decoder;
        } else {
            rc = cli_fail(st != OMMA_OK ? st : ended, "bench decode: %d streams", streams);
        }
        cli_window_free(&a.w);
        cli_window_free(&b.w);
    }
    rt_runtime_destroy(rt);
    metrics_destroy(m);
    free(cams);
    return rc;
}

/* The camera thread's CPU per frame outside the measured calls (the
 * reader's and the source's own code, the scopes, the metrics, the clock
 * reads themselves). */
static double rest_us(const figures *f)
{
    double parts = 0;
    for (int k = 0; k < CORE_CPU_THREAD; k++)
        parts += f->part_us[k];
    return f->part_us[CORE_CPU_THREAD] - parts;
}

static void report_breakdown(const figures *f)
{
    fprintf(stderr, "        camera thread CPU us/frame by call (calls/frame):");
    for (int k = 0; k < CORE_CPU_PARTS; k++) {
        if (k == CORE_CPU_THREAD)
            fprintf(stderr, "\n       ");
        fprintf(stderr, " %s %.2f (%.2f)", core_cpu_part_name((core_cpu_part)k), f->part_us[k],
                f->part_calls[k]);
    }
    fprintf(stderr, "; rest %.2f\n", rest_us(f));
}

static void report(const bench_opts *o, const figures *f)
{
    fprintf(stderr, "%7d %9.1f %8.2f %7.2f %7.2f %8.1f %9.0f %6.0f %s\n", f->streams, f->fps_total,
            f->min_camera_fps, f->p50_ms, f->p99_ms, f->cpu_us_per_frame, f->h2d_per_frame,
            f->decoder_pct, f->pass ? "pass" : "FAIL");
    fprintf(stderr, "        CPU us/frame by thread:");
    for (int k = 0; k < T_KINDS; k++)
        fprintf(stderr, " %s %.1f", thread_kinds[k], f->kind_us_per_frame[k]);
    fprintf(stderr, "; in the decoder's calls %.1f us/frame elapsed", f->decode_us_per_frame);
    if (o->cpu_breakdown) /* the thread's CPU clock is read only then */
        fprintf(stderr, ", %.1f CPU", f->decode_cpu_us_per_frame);
    fprintf(stderr, "\n");
    if (o->cpu_breakdown)
        report_breakdown(f);
    if (!o->json)
        return;
    char dec[32] = "null";
    if (!isnan(f->decoder_pct))
        snprintf(dec, sizeof dec, "%.1f", f->decoder_pct);
    printf("{\"bench\":\"decode\",\"input\":\"%s\",\"decode\":\"%s\",\"streams\":%d,"
           "\"fps\":%.3f,\"frames_per_s\":%.1f,\"min_camera_fps\":%.3f,\"p50_ms\":%.3f,"
           "\"p99_ms\":%.3f,\"cpu_us_per_frame\":%.2f,\"h2d_bytes_per_frame\":%.1f,"
           "\"decoder_util_pct\":%s,\"cpu_us_per_frame_cameras\":%.2f,"
           "\"cpu_us_per_frame_workers\":%.2f,\"cpu_us_per_frame_other\":%.2f,\"pass\":%s}\n",
           o->input, io_decode_name(o->decode), f->streams, o->fps, f->fps_total, f->min_camera_fps,
           f->p50_ms, f->p99_ms, f->cpu_us_per_frame, f->h2d_per_frame, dec,
           f->kind_us_per_frame[T_CAM], f->kind_us_per_frame[T_WORKER],
           f->kind_us_per_frame[T_OTHER], f->pass ? "true" : "false");
    if (o->cpu_breakdown) { /* a second line: the same count's breakdown */
        printf("{\"bench\":\"decode-cpu\",\"input\":\"%s\",\"decode\":\"%s\",\"streams\":%d",
               o->input, io_decode_name(o->decode), f->streams);
        for (int k = 0; k < CORE_CPU_PARTS; k++)
            printf(",\"%s\":{\"us\":%.2f,\"calls\":%.3f}", core_cpu_part_name((core_cpu_part)k),
                   f->part_us[k], f->part_calls[k]);
        printf(",\"rest_us\":%.2f,\"clock_read_ns\":%.0f}\n", rest_us(f), o->clock_read_ns);
    }
    fflush(stdout);
}

int cli_bench_decode(int argc, char **argv)
{
    bench_opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc >= 0)
        return rc;
    const char *data = cli_data_dir();
    char input[4096];
    if (!o.input) {
        snprintf(input, sizeof input, "%s/%s", data, DEFAULT_INPUT);
        o.input = input;
    }
    int count = 0;
    if (omma_device_count(&count) != OMMA_OK || count == 0)
        return cli_fail(OMMA_ERR_NO_DEVICE, "bench decode needs a GPU");
    io_video *v = NULL;
    omma_status st = io_video_open(o.input, &v);
    if (st != OMMA_OK)
        return cli_fail(st, "bench decode: the input (scripts/make-decode-clips.sh makes the "
                            "default)");
    o.fps = io_video_fps(v);
    fprintf(stderr,
            "bench decode: %s (%dx%d at %g fps), decode %s, %d GPU(s) from %d, batch %d, max "
            "faces %d, detector every %d\n",
            o.input, io_video_width(v), io_video_height(v), o.fps, io_decode_name(o.decode),
            o.n_gpus, o.gpus[0], o.max_batch, o.max_faces, o.detect_every);
    io_video_close(v);
    if (o.cpu_breakdown) {
        /* What one measurement costs: each measured call adds about one read. */
        enum { READS = 20000 };
        uint64_t t0 = core_now_ns();
        for (int i = 0; i < READS; i++)
            (void)core_thread_cpu_ns();
        o.clock_read_ns = (double)(core_now_ns() - t0) / READS;
        fprintf(stderr,
                "--cpu-breakdown: one read of the thread's CPU clock takes %.0f ns; each "
                "measured call adds about one\n",
                o.clock_read_ns);
    }
    fprintf(stderr, "%7s %9s %8s %7s %7s %8s %9s %6s\n", "streams", "frames/s", "min fps", "p50 ms",
            "p99 ms", "CPU us/f", "h2d B/f", "NVDEC%");
    /* A fixed count, or the search: double while passing, then halve the
     * gap between the largest pass and the smallest failure. */
    int lo = 0, hi = 0, n = o.streams ? o.streams : 32;
    for (;;) {
        figures f;
        int r = run_count(&o, n, data, &f);
        if (r != CLI_EXIT_OK)
            return r;
        report(&o, &f);
        if (o.streams)
            return CLI_EXIT_OK;
        if (f.pass)
            lo = n;
        else
            hi = n;
        if (hi == 0 && n * 2 <= MAX_STREAMS) {
            n *= 2;
            continue;
        }
        int gap = (hi ? hi : MAX_STREAMS + 1) - lo;
        if (gap <= 1 || gap <= lo / 16)
            break;
        n = lo + gap / 2;
    }
    fprintf(stderr, "largest stream count passing: %d\n", lo);
    if (o.json)
        printf("{\"bench\":\"decode\",\"input\":\"%s\",\"decode\":\"%s\",\"max_streams\":%d}\n",
               o.input, io_decode_name(o.decode), lo);
    return CLI_EXIT_OK;
}
