#define _GNU_SOURCE /* F_SETPIPE_SZ, pipe2 */
/* omma bench bus: the frame bus between processes (omma/bus.h). This
 * process publishes N cameras of NV12 frames (each frame copied on the GPU
 * into its published ring slot, as a decoder's or a producer's frame
 * would be) at a rate, or as fast as it can: the cameras' frames spread
 * over the frame period, as free-running cameras' are, or all at once
 * (--phase aligned: cameras with a common trigger, the burst case); K subscriber processes (this
 * program again, fork + exec) take every frame they are given, make a
 * stream wait for it and give it back after it. Measured per subscriber:
 * frames/s delivered, frames missed, the latency from capture to the frame
 * being ready in the subscriber (the bus announces a frame only once it is
 * in its slot, so its arrival is that moment), CPU time per frame; on the
 * publisher: CPU time per frame and the bytes copied between host and
 * device (none for the frames).
 * Then, in the same run, the seeds' way as the baseline: each frame copied
 * device to host, written through a pipe to each subscriber, which copies
 * it host to device. A table on stderr, one JSON line per mode with --json. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/bench.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "core/error.h"
#include "gpu/check.h"
#include "gpu/memory.h"
#include "ipc/bus_publisher.h"
#include "omma/bus.h"
#include "omma/device.h"
#include "runtime/frame_ring.h"

#define MAX_SUBS 64
#define LAT_MAX 200000

enum {
    OPT_CAMERAS,
    OPT_SUBSCRIBERS,
    OPT_FPS,
    OPT_RESOLUTION,
    OPT_DURATION,
    OPT_PHASE,
    OPT_BASELINE,
    OPT_ANNOUNCE_SPIN,
    OPT_JSON,
    OPT_CHILD, /* internal: a subscriber process */
    OPT_COUNT
};

static const cli_option options[] = {
    [OPT_CAMERAS] = {"--cameras", "N", "published cameras, 1..1024 (64)"},
    [OPT_SUBSCRIBERS] = {"--subscribers", "K", "subscriber processes, 1..64 (16)"},
    [OPT_FPS] = {"--fps", "F|max", "each camera's rate, or max: as fast as it goes (30)"},
    [OPT_RESOLUTION] = {"--resolution", "WxH", "NV12 frames, even, 64..8192 (1920x1080)"},
    [OPT_DURATION] = {"--duration", "S", "the measured window, seconds (10)"},
    [OPT_PHASE] = {"--phase", "spread|aligned",
                   "cameras capture at their own moments in the frame\n"
                   "period, or all at once (spread)"},
    [OPT_BASELINE] = {"--baseline", "on|off",
                      "also the seeds' way: frames through host memory and\n"
                      "pipes, as fast as it goes (on)"},
    [OPT_ANNOUNCE_SPIN] = {"--announce-spin", "US",
                           "the publisher's announcer polls a frame's write this\n"
                           "long before it sleeps: 0..1000000 (50)"},
    [OPT_JSON] = {"--json", NULL, "one JSON line per mode on stdout"},
    [OPT_CHILD] = {"--child", "SPEC", NULL},
    [OPT_COUNT] = {NULL, NULL, NULL},
};

static void usage(FILE *to)
{
    fprintf(to, "usage: omma bench bus [OPTIONS]\n"
                "  N cameras published on the frame bus, K subscriber processes taking every\n"
                "  frame: frames/s delivered to each, frames missed, capture-to-ready latency\n"
                "  p50/p99, CPU per frame on each side, host<->device bytes per frame; then\n"
                "  the baseline of frames through host memory and pipes. Needs a GPU.\n");
    cli_print_options(to, options);
}

typedef struct bench_opts {
    int cameras, subscribers, width, height, baseline, json, aligned, announce_spin_us;
    double fps, duration_s;
} bench_opts;

/* What one subscriber measured (written by the child, one line). */
typedef struct sub_figures {
    double frames, missed, p50_ms, p99_ms, cpu_us_per_frame, seconds;
    /* Of the CPU per frame: the reading thread's, in omma_bus_next and in
     * omma_bus_release (the rest: the process's other threads). */
    double thread_us, next_us, release_us;
} sub_figures;

/* ---- the subscriber processes ------------------------------------------- */

/* The run time (ns) of each of this process's threads, from
 * /proc/self/task/TID/schedstat, with its name: what the CPU per frame
 * outside the reading thread is spent on (the CUDA driver's threads). */
#define MAX_TASKS 64
typedef struct task_times {
    int n;
    int tid[MAX_TASKS];
    char name[MAX_TASKS][20];
    uint64_t ns[MAX_TASKS];
} task_times;

static void read_task_times(task_times *t)
{
    t->n = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d)) != NULL && t->n < MAX_TASKS;) {
        if (e->d_name[0] == '.')
            continue;
        char path[300];
        unsigned long long ns = 0;
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        int ok = fscanf(f, "%llu", &ns) == 1;
        fclose(f);
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
        f = fopen(path, "r");
        t->name[t->n][0] = '\0';
        if (f) {
            if (!fgets(t->name[t->n], sizeof t->name[t->n], f))
                t->name[t->n][0] = '\0';
            t->name[t->n][strcspn(t->name[t->n], "\n")] = '\0';
            fclose(f);
        }
        if (ok) {
            t->tid[t->n] = atoi(e->d_name);
            t->ns[t->n++] = ns;
        }
    }
    if (d)
        closedir(d);
}

/* Prints each thread's CPU between t0 and t1 per frame (frames > 0), by
 * name: who's threads. */
static void print_task_times(const char *who, const task_times *t0, const task_times *t1,
                             double frames)
{
    for (int i = 0; i < t1->n; i++) {
        uint64_t before = 0;
        for (int j = 0; j < t0->n; j++)
            before = t0->tid[j] == t1->tid[i] ? t0->ns[j] : before;
        fprintf(stderr, "         %s thread %-16s %8.2f us/frame\n", who, t1->name[i],
                (double)(t1->ns[i] - before) / 1e3 / frames);
    }
}

/* --child bus:NAME:SECONDS:VERBOSE:OUTFILE or pipe:FD:BYTES:OUTFILE */
static int child_bus(const char *name, double seconds, int verbose, const char *out_path)
{
    omma_device *dev = NULL;
    if (omma_device_open(0, &dev) != OMMA_OK)
        return 3;
    omma_bus_subscriber *sub = NULL;
    omma_status st = OMMA_ERR_CLOSED;
    for (int i = 0; i < 200 && st != OMMA_OK; i++) {
        st = omma_bus_subscribe(dev, name, NULL, &sub);
        if (st != OMMA_OK)
            usleep(20000);
    }
    if (st != OMMA_OK) {
        fprintf(stderr, "bench bus subscriber: %s\n", omma_last_error());
        return 1;
    }
    omma_scope scope;
    omma_device_enter(dev, &scope);
    CUstream s;
    gpu_cu.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, 0);
    double *lat = malloc(LAT_MAX * sizeof *lat);
    size_t n = 0;
    uint64_t frames = 0, t0 = 0, cpu0 = 0, end = 0, thread0 = 0, in_next = 0, in_release = 0;
    static task_times tasks0, tasks1;
    /* The window starts at the first frame: the publisher starts its
     * cameras once every subscriber is attached. Missed frames are the
     * publisher's count. */
    for (;;) {
        omma_bus_frame f;
        uint64_t c0 = core_thread_cpu_ns();
        st = omma_bus_next(sub, 200, &f);
        uint64_t now = core_now_ns(), c1 = core_thread_cpu_ns();
        if (st == OMMA_ERR_TIMEOUT)
            continue;
        if (st != OMMA_OK)
            break;
        omma_bus_wait(sub, &f, s);
        omma_bus_release(sub, &f, s);
        uint64_t c2 = core_thread_cpu_ns();
        if (!t0) {
            t0 = now;
            cpu0 = core_process_cpu_ns();
            thread0 = c2;
            read_task_times(&tasks0);
            end = t0 + (uint64_t)(seconds * 1e9);
        } else {
            in_next += c1 - c0;
            in_release += c2 - c1;
        }
        if (now > end)
            break;
        frames++;
        if (n < LAT_MAX)
            lat[n++] = (double)(now - f.capture_ns) / 1e6;
    }
    uint64_t t1 = core_now_ns(), cpu1 = core_process_cpu_ns(), thread1 = core_thread_cpu_ns();
    read_task_times(&tasks1);
    if (verbose && frames)
        print_task_times("subscriber", &tasks0, &tasks1, (double)frames);
    FILE *o = fopen(out_path, "w");
    if (o) {
        double per = frames ? 1e3 * (double)frames : 1;
        fprintf(o, "%.0f %.0f %.4f %.4f %.3f %.3f %.3f %.3f %.3f\n", (double)frames, 0.0,
                cli_percentile(lat, n, 0.5), cli_percentile(lat, n, 0.99),
                (double)(cpu1 - cpu0) / per, (double)(t1 - t0) / 1e9,
                (double)(thread1 - thread0) / per, (double)in_next / per, (double)in_release / per);
        fclose(o);
    }
    free(lat);
    gpu_cu.cuStreamSynchronize(s);
    gpu_cu.cuStreamDestroy(s);
    omma_device_leave(&scope);
    omma_bus_close(sub);
    omma_device_close(dev);
    return 0;
}

typedef struct pipe_header {
    uint32_t camera, stop;
    uint64_t capture_ns;
} pipe_header;

static int read_all(int fd, void *buf, size_t n)
{
    uint8_t *p = buf;
    while (n) {
        ssize_t r = read(fd, p, n);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            return -1;
        }
        p += r, n -= (size_t)r;
    }
    return 0;
}

static int write_all(int fd, const void *buf, size_t n)
{
    const uint8_t *p = buf;
    while (n) {
        ssize_t r = write(fd, p, n);
        if (r <= 0) {
            if (r < 0 && errno == EINTR)
                continue;
            return -1;
        }
        p += r, n -= (size_t)r;
    }
    return 0;
}

static int child_pipe(int fd, const char *out_path, size_t frame_bytes)
{
    omma_device *dev = NULL;
    if (omma_device_open(0, &dev) != OMMA_OK)
        return 3;
    omma_scope scope;
    omma_device_enter(dev, &scope);
    CUstream s;
    gpu_cu.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, 0);
    void *host = NULL;
    CUdeviceptr d = 0;
    gpu_cu.cuMemHostAlloc(&host, frame_bytes, 0);
    gpu_cu.cuMemAlloc(&d, frame_bytes);
    double *lat = malloc(LAT_MAX * sizeof *lat);
    size_t n = 0;
    uint64_t frames = 0, t0 = 0, cpu0 = 0;
    for (;;) {
        pipe_header h;
        if (read_all(fd, &h, sizeof h) != 0 || h.stop)
            break;
        if (read_all(fd, host, frame_bytes) != 0)
            break;
        gpu_cu.cuMemcpyHtoDAsync(d, host, frame_bytes, s);
        gpu_cu.cuStreamSynchronize(s);
        uint64_t now = core_now_ns();
        if (!t0)
            t0 = now, cpu0 = core_process_cpu_ns();
        frames++;
        if (n < LAT_MAX)
            lat[n++] = (double)(now - h.capture_ns) / 1e6;
    }
    uint64_t t1 = core_now_ns(), cpu1 = core_process_cpu_ns();
    FILE *o = fopen(out_path, "w");
    if (o) {
        fprintf(o, "%.0f 0 %.4f %.4f %.3f %.3f 0 0 0\n", (double)frames,
                cli_percentile(lat, n, 0.5), cli_percentile(lat, n, 0.99),
                frames ? (double)(cpu1 - cpu0) / 1e3 / (double)frames : 0.0,
                (double)(t1 - t0) / 1e9);
        fclose(o);
    }
    free(lat);
    gpu_cu.cuMemFree(d);
    gpu_cu.cuMemFreeHost(host);
    gpu_cu.cuStreamDestroy(s);
    omma_device_leave(&scope);
    omma_device_close(dev);
    return 0;
}

static int run_child(const char *spec)
{
    char kind[16], a[256], out[1024];
    double seconds = 0;
    size_t bytes = 0;
    int verbose = 0;
    if (sscanf(spec, "bus:%255[^:]:%lf:%d:%1023s", a, &seconds, &verbose, out) == 4)
        return child_bus(a, seconds, verbose, out);
    if (sscanf(spec, "pipe:%15[^:]:%zu:%1023s", kind, &bytes, out) == 3)
        return child_pipe(atoi(kind), out, bytes);
    fprintf(stderr, "omma bench bus: bad --child %s\n", spec);
    return CLI_EXIT_USAGE;
}

/* ---- the publisher -------------------------------------------------------- */

static pid_t spawn_child(const char *self, const char *spec, int keep_fd)
{
    pid_t pid = fork();
    if (pid == 0) {
        if (keep_fd >= 0)
            fcntl(keep_fd, F_SETFD, 0);
        execl(self, self, "bench", "bus", "--child", spec, (char *)NULL);
        _exit(127);
    }
    return pid;
}

static int read_figures(const char *path, sub_figures *f)
{
    FILE *in = fopen(path, "r");
    if (!in)
        return 0;
    int n = fscanf(in, "%lf %lf %lf %lf %lf %lf %lf %lf %lf", &f->frames, &f->missed, &f->p50_ms,
                   &f->p99_ms, &f->cpu_us_per_frame, &f->seconds, &f->thread_us, &f->next_us,
                   &f->release_us);
    fclose(in);
    return n == 9;
}

typedef struct mode_result {
    const char *mode;
    double published_fps, delivered_fps_min, delivered_fps_mean, missed_per_sub;
    double p50_ms, p99_ms, sub_cpu_us, pub_cpu_us, h2d_per_frame, d2h_per_frame;
    double sub_thread_us, sub_next_us, sub_release_us; /* means, as in sub_figures */
    int ok_subs;
} mode_result;

static void summarize(mode_result *r, const sub_figures *f, int k)
{
    r->delivered_fps_min = 1e30;
    double sum = 0, p50 = 0, p99 = 0, cpu = 0;
    r->ok_subs = 0;
    for (int i = 0; i < k; i++) {
        if (f[i].seconds <= 0)
            continue;
        double fps = f[i].frames / f[i].seconds;
        r->delivered_fps_min = fps < r->delivered_fps_min ? fps : r->delivered_fps_min;
        sum += fps;
        p50 = f[i].p50_ms > p50 ? f[i].p50_ms : p50;
        p99 = f[i].p99_ms > p99 ? f[i].p99_ms : p99;
        cpu += f[i].cpu_us_per_frame;
        r->sub_thread_us += f[i].thread_us;
        r->sub_next_us += f[i].next_us;
        r->sub_release_us += f[i].release_us;
        r->ok_subs++;
    }
    if (!r->ok_subs)
        r->delivered_fps_min = 0;
    r->delivered_fps_mean = r->ok_subs ? sum / r->ok_subs : 0;
    r->p50_ms = p50; /* the worst subscriber's */
    r->p99_ms = p99;
    r->sub_cpu_us = r->ok_subs ? cpu / r->ok_subs : 0;
    double k_ok = r->ok_subs ? r->ok_subs : 1;
    r->sub_thread_us /= k_ok, r->sub_next_us /= k_ok, r->sub_release_us /= k_ok;
}

static omma_status bench_bus_mode(const bench_opts *o, omma_device *dev, const char *self,
                                  mode_result *r)
{
    char name[64], dir[] = "/tmp/omma-bench-bus-XXXXXX";
    if (!mkdtemp(dir))
        return OMMA_ERR_IO;
    snprintf(name, sizeof name, "bench-%d", (int)getpid());
    setenv("OMMA_BUS_DIR", dir, 1);
    bus_pub_options bo = {name,
                          NULL,
                          o->cameras,
                          4,
                          o->subscribers,
                          -1,
                          o->announce_spin_us ? o->announce_spin_us : -1};
    bus_pub *pub = NULL;
    OMMA_TRY(bus_pub_create(&bo, &pub));
    rt_ring_format fmt = {o->width, o->height, OMMA_PIXEL_NV12};
    rt_ring **rings = calloc((size_t)o->cameras, sizeof *rings);
    int slots = 4 + 2 * o->subscribers;
    slots = slots > RT_RING_MAX_SLOTS ? RT_RING_MAX_SLOTS : slots;
    omma_status st = rings ? OMMA_OK : OMMA_ERR_OUT_OF_MEMORY;
    for (int c = 0; c < o->cameras && st == OMMA_OK; c++) {
        char cn[32];
        snprintf(cn, sizeof cn, "cam%d", c);
        st = rt_ring_create_bus(dev, slots, &fmt, RT_RING_KEEP_NEWEST, pub, c, cn, &rings[c]);
    }
    size_t frame_bytes = rings && rings[0] ? rt_ring_frame_bytes(rings[0]) : 0;
    CUdeviceptr src = 0;
    CUstream stream = NULL;
    if (st == OMMA_OK)
        st = OMMA_CK(gpu_cu.cuMemAlloc(&src, frame_bytes));
    if (st == OMMA_OK)
        st = OMMA_CK(gpu_cu.cuMemsetD8Async(src, 128, frame_bytes, NULL));
    if (st == OMMA_OK)
        st = OMMA_CK(gpu_cu.cuStreamCreateWithPriority(&stream, CU_STREAM_NON_BLOCKING, 0));
    if (st == OMMA_OK)
        st = bus_pub_start(pub);
    pid_t kids[MAX_SUBS] = {0};
    char outs[MAX_SUBS][256];
    for (int i = 0; i < o->subscribers && st == OMMA_OK; i++) {
        char spec[512];
        snprintf(outs[i], sizeof outs[i], "%s/sub%d.txt", dir, i);
        snprintf(spec, sizeof spec, "bus:%s:%.3f:%d:%s", name, o->duration_s, i == 0, outs[i]);
        kids[i] = spawn_child(self, spec, -1);
    }
    /* Every subscriber attached before the cameras start. */
    bus_pub_stats ps = {0};
    for (int t = 0; st == OMMA_OK && t < 3000; t++) {
        bus_pub_get_stats(pub, &ps);
        if (ps.subscribers >= o->subscribers)
            break;
        usleep(10000);
    }
    if (st == OMMA_OK && ps.subscribers < o->subscribers)
        st = OMMA_FAIL(OMMA_ERR_TIMEOUT, "bench bus: %d of %d subscribers attached", ps.subscribers,
                       o->subscribers);
    omma_transfer_counters x0, x1;
    omma_device_get_transfers(dev, &x0);
    static task_times tasks0, tasks1; /* the publisher's threads */
    read_task_times(&tasks0);
    uint64_t t0 = core_now_ns(), cpu0 = core_process_cpu_ns(), put = 0;
    uint64_t end = t0 + (uint64_t)((o->duration_s + 0.5) * 1e9);
    omma_frame f = {.width = o->width,
                    .height = o->height,
                    .format = OMMA_PIXEL_NV12,
                    .memory = OMMA_MEMORY_DEVICE};
    f.planes[0] = (const uint8_t *)(uintptr_t)src;
    f.planes[1] = (const uint8_t *)(uintptr_t)(src + (CUdeviceptr)o->width * o->height);
    f.pitch[0] = f.pitch[1] = o->width;
    /* Step k puts one camera's frame (spread: camera k % N at its moment
     * of the period) or every camera's (aligned, or as fast as it goes). */
    int spread = o->fps > 0 && !o->aligned;
    for (long k = 0; st == OMMA_OK; k++) {
        uint64_t now = core_now_ns();
        if (now > end)
            break;
        if (o->fps > 0) {
            double period = spread ? (double)k / o->cameras : (double)k;
            uint64_t due = t0 + (uint64_t)(period * 1e9 / o->fps);
            if (due > now) {
                struct timespec ts = {(time_t)((due - now) / 1000000000u),
                                      (long)((due - now) % 1000000000u)};
                nanosleep(&ts, NULL);
            }
        }
        for (int c = spread ? (int)(k % o->cameras) : 0;
             c < (spread ? (int)(k % o->cameras) + 1 : o->cameras) && st == OMMA_OK; c++) {
            st = rt_ring_put_copy(rings[c], &f, NULL, stream, core_now_ns(), 0);
            put++;
        }
    }
    uint64_t t1 = core_now_ns(), cpu1 = core_process_cpu_ns();
    read_task_times(&tasks1);
    omma_device_get_transfers(dev, &x1);
    bus_pub_get_stats(pub, &ps);
    if (put) /* the producer (this thread), the announcer, the driver's threads */
        print_task_times("publisher", &tasks0, &tasks1, (double)put);
    sub_figures figs[MAX_SUBS] = {{0}};
    for (int i = 0; i < o->subscribers; i++) {
        if (kids[i] > 0) {
            waitpid(kids[i], NULL, 0);
            read_figures(outs[i], &figs[i]);
        }
        unlink(outs[i]);
    }
    r->mode = "bus";
    r->published_fps = (double)ps.announced / ((double)(t1 - t0) / 1e9);
    summarize(r, figs, o->subscribers);
    r->missed_per_sub = (double)ps.missed / (o->subscribers ? o->subscribers : 1);
    r->pub_cpu_us = put ? (double)(cpu1 - cpu0) / 1e3 / (double)put : 0;
    r->h2d_per_frame = put ? (double)(x1.h2d_bytes - x0.h2d_bytes) / (double)put : 0;
    r->d2h_per_frame = put ? (double)(x1.d2h_bytes - x0.d2h_bytes) / (double)put : 0;
    if (stream)
        gpu_cu.cuStreamSynchronize(stream);
    for (int c = 0; rings && c < o->cameras; c++)
        rt_ring_destroy(rings[c]);
    bus_pub_destroy(pub);
    if (stream)
        gpu_cu.cuStreamDestroy(stream);
    if (src)
        gpu_cu.cuMemFree(src);
    free(rings);
    rmdir(dir);
    return st;
}

/* The seeds' way: device -> host, a pipe per subscriber, host -> device. */
static omma_status bench_pipe_mode(const bench_opts *o, omma_device *dev, const char *self,
                                   mode_result *r)
{
    char dir[] = "/tmp/omma-bench-pipe-XXXXXX";
    if (!mkdtemp(dir))
        return OMMA_ERR_IO;
    size_t frame_bytes = (size_t)o->width * o->height * 3 / 2;
    CUdeviceptr src = 0;
    void *host = NULL;
    CUstream s = NULL;
    OMMA_TRY(OMMA_CK(gpu_cu.cuMemAlloc(&src, frame_bytes)));
    omma_status st = OMMA_CK(gpu_cu.cuMemHostAlloc(&host, frame_bytes, 0));
    if (st == OMMA_OK)
        st = OMMA_CK(gpu_cu.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, 0));
    int fds[MAX_SUBS];
    pid_t kids[MAX_SUBS] = {0};
    char outs[MAX_SUBS][256];
    for (int i = 0; i < o->subscribers; i++)
        fds[i] = -1;
    for (int i = 0; i < o->subscribers && st == OMMA_OK; i++) {
        int p[2];
        if (pipe2(p, O_CLOEXEC) != 0) {
            st = OMMA_FAIL(OMMA_ERR_IO, "pipe: %s", strerror(errno));
            break;
        }
        fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
        snprintf(outs[i], sizeof outs[i], "%s/sub%d.txt", dir, i);
        char spec[512];
        snprintf(spec, sizeof spec, "pipe:%d:%zu:%s", p[0], frame_bytes, outs[i]);
        kids[i] = spawn_child(self, spec, p[0]);
        close(p[0]);
        fds[i] = p[1];
    }
    signal(SIGPIPE, SIG_IGN);
    omma_transfer_counters x0, x1;
    omma_device_get_transfers(dev, &x0);
    sleep(1); /* the children start their CUDA contexts */
    uint64_t t0 = core_now_ns(), cpu0 = core_process_cpu_ns(), put = 0;
    uint64_t end = t0 + (uint64_t)(o->duration_s * 1e9);
    for (int c = 0; st == OMMA_OK && core_now_ns() < end; c = (c + 1) % o->cameras) {
        pipe_header h = {(uint32_t)c, 0, core_now_ns()};
        st = gpu_copy_d2h_async(dev, host, src, frame_bytes, s);
        if (st == OMMA_OK)
            st = OMMA_CK(gpu_cu.cuStreamSynchronize(s));
        for (int i = 0; i < o->subscribers && st == OMMA_OK; i++)
            if (write_all(fds[i], &h, sizeof h) || write_all(fds[i], host, frame_bytes))
                st = OMMA_FAIL(OMMA_ERR_IO, "bench bus: subscriber %d's pipe closed", i);
        put++;
    }
    uint64_t t1 = core_now_ns(), cpu1 = core_process_cpu_ns();
    omma_device_get_transfers(dev, &x1);
    sub_figures figs[MAX_SUBS] = {{0}};
    for (int i = 0; i < o->subscribers; i++) {
        if (fds[i] >= 0) {
            pipe_header stop = {0, 1, 0};
            write_all(fds[i], &stop, sizeof stop);
            close(fds[i]);
        }
        if (kids[i] > 0) {
            waitpid(kids[i], NULL, 0);
            read_figures(outs[i], &figs[i]);
        }
        unlink(outs[i]);
    }
    r->mode = "baseline";
    r->published_fps = (double)put / ((double)(t1 - t0) / 1e9);
    summarize(r, figs, o->subscribers);
    r->missed_per_sub = 0;
    r->pub_cpu_us = put ? (double)(cpu1 - cpu0) / 1e3 / (double)put : 0;
    r->h2d_per_frame = put ? (double)(x1.h2d_bytes - x0.h2d_bytes) / (double)put : 0;
    r->d2h_per_frame = put ? (double)(x1.d2h_bytes - x0.d2h_bytes) / (double)put : 0;
    gpu_cu.cuStreamDestroy(s);
    gpu_cu.cuMemFreeHost(host);
    gpu_cu.cuMemFree(src);
    rmdir(dir);
    return st;
}

static void report(const bench_opts *o, const mode_result *r)
{
    fprintf(stderr,
            "%-8s published %9.1f frames/s; per subscriber %9.1f frames/s (min %.1f), missed "
            "%.1f; capture->ready p50 %.3f ms p99 %.3f ms; CPU/frame: subscriber %.2f us, "
            "publisher %.2f us; host->device %.0f B/frame, device->host %.0f B/frame\n",
            r->mode, r->published_fps, r->delivered_fps_mean, r->delivered_fps_min,
            r->missed_per_sub, r->p50_ms, r->p99_ms, r->sub_cpu_us, r->pub_cpu_us, r->h2d_per_frame,
            r->d2h_per_frame);
    if (r->sub_thread_us > 0)
        fprintf(stderr,
                "         subscriber CPU/frame: reading thread %.2f us (in omma_bus_next %.2f, "
                "in omma_bus_release %.2f), other threads %.2f us\n",
                r->sub_thread_us, r->sub_next_us, r->sub_release_us,
                r->sub_cpu_us - r->sub_thread_us);
    if (o->json)
        printf("{\"bench\":\"bus\",\"mode\":\"%s\",\"cameras\":%d,\"subscribers\":%d,"
               "\"width\":%d,\"height\":%d,\"phase\":\"%s\",\"fps\":%s%.3f,\"announce_spin_us\":%d,"
               "\"published_fps\":%.2f,"
               "\"delivered_fps_mean\":%.2f,\"delivered_fps_min\":%.2f,\"missed_per_subscriber\":"
               "%.1f,\"latency_ms_p50\":%.4f,\"latency_ms_p99\":%.4f,\"subscriber_cpu_us_per_"
               "frame\":%.3f,\"publisher_cpu_us_per_frame\":%.3f,\"h2d_bytes_per_frame\":%.1f,"
               "\"d2h_bytes_per_frame\":%.1f,\"subscriber_thread_us\":%.3f,\"subscriber_next_us\":"
               "%.3f,\"subscriber_release_us\":%.3f,\"subscribers_measured\":%d}\n",
               r->mode, o->cameras, o->subscribers, o->width, o->height,
               o->aligned ? "aligned" : "spread", "", o->fps, o->announce_spin_us, r->published_fps,
               r->delivered_fps_mean, r->delivered_fps_min, r->missed_per_sub, r->p50_ms, r->p99_ms,
               r->sub_cpu_us, r->pub_cpu_us, r->h2d_per_frame, r->d2h_per_frame, r->sub_thread_us,
               r->sub_next_us, r->sub_release_us, r->ok_subs);
}

int cli_bench_bus(int argc, char **argv)
{
    bench_opts o = {64, 16, 1920, 1080, 1, 0, 0, 50, 30.0, 10.0};
    const char *child = NULL;
    cli_args args;
    cli_args_init(&args, "bench bus", options, argc, argv);
    const cli_option *opt;
    const char *v;
    long n;
    double d;
    for (cli_arg_kind k; (k = cli_next(&args, &opt, &v)) != CLI_ARG_END;) {
        if (k == CLI_ARG_HELP) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        if (k == CLI_ARG_ERROR)
            return CLI_EXIT_USAGE;
        if (k == CLI_ARG_POSITIONAL)
            return cli_usage_error("bench bus", "unexpected argument '%s'", v);
        int id = (int)(opt - options);
        int ok = 1;
        if (id == OPT_CAMERAS)
            ok = cli_arg_long(opt->name, v, 1, 1024, &n) && (o.cameras = (int)n, 1);
        else if (id == OPT_SUBSCRIBERS)
            ok = cli_arg_long(opt->name, v, 1, MAX_SUBS, &n) && (o.subscribers = (int)n, 1);
        else if (id == OPT_FPS)
            ok = strcmp(v, "max") == 0
                     ? (o.fps = 0, 1)
                     : cli_arg_double(opt->name, v, 0.1, 100000, &d) && (o.fps = d, 1);
        else if (id == OPT_RESOLUTION) {
            char tail;
            ok = sscanf(v, "%dx%d%c", &o.width, &o.height, &tail) == 2 && o.width >= 64 &&
                 o.height >= 64 && o.width <= 8192 && o.height <= 8192 && !(o.width % 2) &&
                 !(o.height % 2);
            if (!ok)
                fprintf(stderr, "omma: error: --resolution %s: expected WxH, even, 64..8192\n", v);
        } else if (id == OPT_DURATION)
            ok = cli_arg_double(opt->name, v, 0.5, 3600, &o.duration_s);
        else if (id == OPT_PHASE) {
            static const char *const phases[] = {"spread", "aligned"};
            int c = 0;
            ok = cli_arg_choice(opt->name, v, phases, 2, &c) && (o.aligned = c == 1, 1);
        } else if (id == OPT_BASELINE) {
            static const char *const onoff[] = {"on", "off"};
            int c = 0;
            ok = cli_arg_choice(opt->name, v, onoff, 2, &c) && (o.baseline = c == 0, 1);
        } else if (id == OPT_ANNOUNCE_SPIN) {
            ok = cli_arg_long(opt->name, v, 0, 1000000, &n) && (o.announce_spin_us = (int)n, 1);
        } else if (id == OPT_JSON)
            o.json = 1;
        else if (id == OPT_CHILD)
            child = v;
        if (!ok)
            return cli_see_help("bench bus");
    }
    if (child)
        return run_child(child);
    char self[4096];
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0)
        return cli_fail(OMMA_ERR_IO, "bench bus: cannot find its own executable");
    self[len] = '\0';
    omma_device *dev = NULL;
    omma_status st = omma_device_open(0, &dev);
    if (st != OMMA_OK)
        return cli_fail(st, "bench bus needs a GPU");
    omma_scope scope;
    omma_device_enter(dev, &scope);
    mode_result bus = {0}, base = {0};
    st = bench_bus_mode(&o, dev, self, &bus);
    if (st == OMMA_OK)
        report(&o, &bus);
    if (st == OMMA_OK && o.baseline) {
        st = bench_pipe_mode(&o, dev, self, &base);
        if (st == OMMA_OK) {
            report(&o, &base);
            fprintf(stderr, "bus / baseline: %.1fx the frames/s delivered per subscriber\n",
                    base.delivered_fps_mean > 0 ? bus.delivered_fps_mean / base.delivered_fps_mean
                                                : 0.0);
        }
    }
    omma_device_leave(&scope);
    omma_device_close(dev);
    if (st != OMMA_OK)
        return cli_fail(st, "bench bus");
    return CLI_EXIT_OK;
}
