/* The frame bus across processes on the GPU (src/ipc/, rt_ring_create_bus).
 *
 * This program plays every part: run plainly it is the test, and it starts
 * copies of itself (fork + exec) as the publisher ("--publisher") and as
 * subscribers that get killed ("--victim"). The publisher puts frames whose
 * every byte is a function of (camera, seq) into published rings, with a
 * consumer of its own taking and releasing them as the runtime's worker
 * would, and writes results whose face id is the frame's seq. Checked:
 *   - a subscriber in another process reads every frame it is given bitwise
 *     equal to what was put, through its own mapping, after waiting on the
 *     frame's event on its own stream (no host synchronization on the
 *     publisher), and gets the frame's results;
 *   - subscribers killed with SIGKILL at random moments (holding frames,
 *     attaching, releasing) never make the publisher miss frames for the
 *     surviving subscriber, and the publisher's fds and device memory come
 *     back to where they were;
 *   - a publisher killed with SIGKILL is reported as OMMA_ERR_CLOSED naming
 *     the bus (how fast is printed), the subscriber unmaps and closes
 *     cleanly, and attaches again to a new publisher under the same name;
 *     publishers killed at random moments (starting, handshaking,
 *     streaming; OMMA_BUS_PUBLISHER_KILLS times) leave the subscriber's
 *     fds, threads and device memory where they were;
 *   - frames given back on two streams in turn, one held per camera at most,
 *     read right and in order;
 *   - a subscriber asking for every frame of a publisher reading "files"
 *     (rings that block their producer) gets every frame, in order, while
 *     it is slower than the publisher; a live publisher refuses it;
 *   - with fault injection built in, every fault point on the way to
 *     publishing and to subscribing (VMM create/reserve/map/access/export/
 *     import, events, streams) fails once in turn: each failure is
 *     reported as an injected fault and leaves no fd, thread or memory. */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "gpu/check.h"
#include "gpu/driver.h"
#include "gpu/fault.h"
#include "gpu/gpu_testing.h"
#include "ipc/bus_publisher.h"
#include "omma/bus.h"
#include "omma/device.h"
#include "omma/log.h"
#include "runtime/frame_ring.h"

#define CAMS 2
#define W 320
#define H 240
#define FRAME_BYTES (W * H * 3)

static char self_path[4096];

static uint8_t pattern(int cam, uint64_t seq, size_t i)
{
    return (uint8_t)((seq * 131u + (uint64_t)cam * 17u + i * 7u + (i >> 9)) & 0xff);
}

static int count_fds(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the DIR's own */
}

/* ---- the publisher process ---------------------------------------------- */

static volatile sig_atomic_t stop_publisher;
static void on_term(int sig)
{
    (void)sig;
    stop_publisher = 1;
}

static int count_threads(void)
{
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return -1;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* blocking: the rings block their producer (as files do), so subscribers
 * may ask for every frame. */
static int publisher_main(const char *name, const char *status_path, int blocking)
{
    signal(SIGTERM, on_term);
    omma_device *dev = NULL;
    if (omma_device_open(0, &dev) != OMMA_OK) {
        fprintf(stderr, "publisher: %s\n", omma_last_error());
        return 2;
    }
    omma_scope scope;
    omma_device_enter(dev, &scope);
    size_t free0 = 0, total = 0;
    bus_pub_options bo = {name, NULL, CAMS, 4, 16, -1, 0};
    bus_pub *pub = NULL;
    rt_ring *rings[CAMS] = {0};
    CUstream up = NULL, cons = NULL;
    omma_status st = bus_pub_create(&bo, &pub);
    rt_ring_format fmt = {W, H, OMMA_PIXEL_RGB};
    for (int c = 0; c < CAMS && st == OMMA_OK; c++) {
        char cn[16];
        snprintf(cn, sizeof cn, "cam%d", c);
        st = rt_ring_create_bus(dev, 4 + 16 * 2, &fmt,
                                blocking ? RT_RING_BLOCK : RT_RING_KEEP_NEWEST, pub, c, cn,
                                &rings[c]);
    }
    if (st == OMMA_OK)
        st = bus_pub_start(pub);
    if (st == OMMA_OK)
        st = OMMA_CK(gpu_cu.cuStreamCreateWithPriority(&up, CU_STREAM_NON_BLOCKING, 0));
    if (st == OMMA_OK)
        st = OMMA_CK(gpu_cu.cuStreamCreateWithPriority(&cons, CU_STREAM_NON_BLOCKING, 0));
    if (st != OMMA_OK) {
        fprintf(stderr, "publisher: %s\n", omma_last_error());
        return 2;
    }
    uint8_t *host = NULL;
    gpu_cu.cuMemHostAlloc((void **)&host, FRAME_BYTES, 0);
    gpu_cu.cuMemGetInfo(&free0, &total);
    int fds0 = count_fds();
    uint64_t seq[CAMS] = {0};
    uint64_t last_status = 0;
    while (!stop_publisher) {
        for (int c = 0; c < CAMS; c++) {
            uint64_t s = ++seq[c];
            /* The previous upload from host must have run before it is
             * rewritten. */
            gpu_cu.cuStreamSynchronize(up);
            for (size_t i = 0; i < FRAME_BYTES; i++)
                host[i] = pattern(c, s, i);
            omma_frame f = {
                .width = W, .height = H, .format = OMMA_PIXEL_RGB, .memory = OMMA_MEMORY_HOST};
            f.planes[0] = host;
            f.pitch[0] = W * 3;
            omma_status put = OMMA_ERR_TIMEOUT;
            while (put == OMMA_ERR_TIMEOUT && !stop_publisher) {
                put = rt_ring_put(rings[c], &f, up, core_now_ns(), blocking ? 200 : 0);
                /* Blocked by an every-frame subscriber: its frames must go
                 * on being taken and given back meanwhile. */
                rt_ring_item it;
                while (put == OMMA_ERR_TIMEOUT && rt_ring_take(rings[c], &it) == OMMA_OK &&
                       it.has_frame)
                    rt_ring_release(rings[c], &it, cons);
                if (put == OMMA_ERR_TIMEOUT)
                    omma_clear_error();
            }
            if (put != OMMA_OK && !stop_publisher)
                fprintf(stderr, "publisher: put: %s\n", omma_last_error());
            /* The in-process consumer (the runtime's worker) takes and
             * gives frames back as it would after its kernels. */
            rt_ring_item it;
            while (rt_ring_take(rings[c], &it) == OMMA_OK && it.has_frame) {
                gpu_cu.cuStreamWaitEvent(cons, it.ready, 0);
                omma_face face = {.id = (int)it.seq, .score = (float)c};
                bus_pub_results(pub, c, it.seq, it.capture_ns, &face, 1);
                rt_ring_release(rings[c], &it, cons);
            }
        }
        uint64_t now = core_now_ns();
        if (status_path && now - last_status > 200000000ull) {
            last_status = now;
            size_t fr = 0;
            gpu_cu.cuMemGetInfo(&fr, &total);
            bus_pub_stats ps;
            bus_pub_get_stats(pub, &ps);
            char tmp[4200];
            snprintf(tmp, sizeof tmp, "%s.tmp", status_path);
            FILE *o = fopen(tmp, "w");
            if (o) {
                fprintf(o, "%d %lld %d %llu %llu %llu\n", count_fds() - fds0,
                        (long long)free0 - (long long)fr, ps.subscribers,
                        (unsigned long long)ps.sessions, (unsigned long long)ps.ended,
                        (unsigned long long)ps.announced);
                fclose(o);
                rename(tmp, status_path);
            }
        }
        struct timespec ts = {0, 10000000}; /* ~100 frames/s per camera */
        nanosleep(&ts, NULL);
    }
    for (int c = 0; c < CAMS; c++)
        rt_ring_destroy(rings[c]);
    bus_pub_destroy(pub);
    gpu_cu.cuStreamDestroy(up);
    gpu_cu.cuStreamDestroy(cons);
    gpu_cu.cuMemFreeHost(host);
    omma_device_leave(&scope);
    omma_device_close(dev);
    return 0;
}

/* ---- a subscriber that gets killed ------------------------------------ */

static int victim_main(const char *name)
{
    omma_device *dev = NULL;
    if (omma_device_open(0, &dev) != OMMA_OK)
        return 2;
    omma_bus_subscriber *sub = NULL;
    if (omma_bus_subscribe(dev, name, NULL, &sub) != OMMA_OK)
        return 3;
    omma_scope scope;
    omma_device_enter(dev, &scope);
    CUstream s;
    gpu_cu.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, 0);
    uint8_t *host = malloc(FRAME_BYTES);
    for (;;) { /* until killed: hold frames, read them, release some */
        omma_bus_frame f;
        if (omma_bus_next(sub, 1000, &f) != OMMA_OK)
            continue;
        omma_bus_wait(sub, &f, s);
        gpu_cu.cuMemcpyDtoHAsync(host, (CUdeviceptr)(uintptr_t)f.frame.planes[0], FRAME_BYTES, s);
        if (rand() % 3)
            omma_bus_release(sub, &f, s);
    }
}

/* ---- a subscriber that tries to write into a frame ---------------------- */

/* Exit 0: the write into the read-only mapping failed (as it must);
 * 1: it went through; 2, 3: no frame to try it on. */
static int writer_main(const char *name)
{
    omma_device *dev = NULL;
    if (omma_device_open(0, &dev) != OMMA_OK)
        return 2;
    omma_bus_subscriber *sub = NULL;
    if (omma_bus_subscribe(dev, name, NULL, &sub) != OMMA_OK)
        return 3;
    omma_bus_camera_info ci;
    omma_bus_camera_info_get(sub, 0, &ci);
    omma_scope scope;
    omma_device_enter(dev, &scope);
    omma_bus_frame f;
    if (omma_bus_next(sub, 2000, &f) != OMMA_OK)
        return 3;
    CUstream s;
    gpu_cu.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, 0);
    CUresult a = gpu_cu.cuMemsetD8Async((CUdeviceptr)(uintptr_t)f.frame.planes[0], 0, 4096, s);
    CUresult b = gpu_cu.cuStreamSynchronize(s);
    fprintf(stderr, "writer: read_only %d, memset %d, sync %d\n", ci.read_only, (int)a, (int)b);
    _exit(a != CUDA_SUCCESS || b != CUDA_SUCCESS ? 0 : 1); /* the context may be broken */
}

/* ---- the test ------------------------------------------------------------ */

static pid_t spawn(const char *role, const char *a, const char *b)
{
    pid_t pid = fork();
    if (pid == 0) {
        execl(self_path, self_path, role, a, b, (char *)NULL);
        _exit(127);
    }
    return pid;
}

/* Reads n frames through sub and checks each bitwise; returns failures. */
static uint64_t t_next, t_copy, t_check, t_results; /* ns spent, survivor */

static int read_and_check(omma_bus_subscriber *sub, CUstream s, uint8_t *host, int n,
                          uint64_t *missed_out, int *results_ok)
{
    int bad = 0;
    uint64_t last[CAMS] = {0};
    for (int k = 0; k < n; k++) {
        omma_bus_frame f;
        uint64_t t0 = core_now_ns();
        omma_status st = omma_bus_next(sub, 2000, &f);
        uint64_t t1 = core_now_ns();
        t_next += t1 - t0;
        if (st != OMMA_OK) {
            fprintf(stderr, "next: %s: %s\n", omma_status_str(st), omma_last_error());
            return bad + 1000;
        }
        if (f.camera < 0 || f.camera >= CAMS || f.frame.width != W || f.frame.height != H) {
            bad++;
            continue;
        }
        omma_bus_wait(sub, &f, s);
        gpu_cu.cuMemcpyDtoHAsync(host, (CUdeviceptr)(uintptr_t)f.frame.planes[0], FRAME_BYTES, s);
        omma_bus_release(sub, &f, s);
        gpu_cu.cuStreamSynchronize(s);
        uint64_t t2 = core_now_ns();
        t_copy += t2 - t1;
        size_t wrong = 0;
        for (size_t i = 0; i < FRAME_BYTES; i++)
            wrong += host[i] != pattern(f.camera, f.seq, i);
        if (wrong) {
            fprintf(stderr, "camera %d frame %llu: %zu bytes differ\n", f.camera,
                    (unsigned long long)f.seq, wrong);
            bad++;
        }
        if (last[f.camera] && f.seq <= last[f.camera])
            bad++, fprintf(stderr, "camera %d: seq %llu after %llu\n", f.camera,
                           (unsigned long long)f.seq, (unsigned long long)last[f.camera]);
        last[f.camera] = f.seq;
        *missed_out = f.missed;
        uint64_t t3 = core_now_ns();
        t_check += t3 - t2;
        omma_face faces[4];
        int nf = 0;
        for (int tries = 0; tries < 200; tries++) {
            st = omma_bus_results(sub, &f, faces, 4, &nf);
            if (st != OMMA_ERR_TIMEOUT)
                break;
            usleep(1000);
        }
        t_results += core_now_ns() - t3;
        if (st == OMMA_OK && nf == 1 && faces[0].id == (int)f.seq &&
            faces[0].score == (float)f.camera)
            (*results_ok)++;
    }
    return bad;
}

/* The surviving subscriber reads on its own thread while others die. */
typedef struct reader {
    omma_bus_subscriber *sub;
    omma_device *dev;
    CUstream stream; /* alive until the subscriber is closed (omma_bus_release) */
    uint8_t *host;
    atomic_int stop;
    int bad, results_ok, frames;
    uint64_t missed;
} reader;

static void *read_loop(void *arg)
{
    reader *r = arg;
    omma_scope scope;
    if (omma_device_enter(r->dev, &scope) != OMMA_OK)
        return NULL;
    while (!atomic_load(&r->stop)) {
        r->bad += read_and_check(r->sub, r->stream, r->host, 1, &r->missed, &r->results_ok);
        r->frames++;
    }
    omma_device_leave(&scope);
    return NULL;
}

static int read_status(const char *path, long long v[6])
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    int n = fscanf(f, "%lld %lld %lld %lld %lld %lld", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5]);
    fclose(f);
    return n == 6;
}

static void test_bus_across_processes(void)
{
    char dir[] = "/tmp/omma-bus-test-XXXXXX";
    REQUIRE(mkdtemp(dir));
    setenv("OMMA_BUS_DIR", dir, 1);
    char status[4200];
    snprintf(status, sizeof status, "%s/publisher.status", dir);
    pid_t pub = spawn("--publisher", "tbus", status);
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    omma_bus_subscriber *sub = NULL;
    omma_status st = OMMA_ERR_CLOSED;
    /* The survivor holds up to 4 frames a camera: it checks each frame on
     * the host between its release and its next call, and a release
     * reaches the publisher in that next call (omma_bus_release), so with
     * 2 it missed a frame now and then when the kills bunched frames. */
    omma_bus_options survivor;
    omma_bus_options_init(&survivor);
    survivor.max_holds = 4;
    for (int i = 0; i < 100 && st != OMMA_OK; i++) {
        usleep(50000);
        st = omma_bus_subscribe(dev, "tbus", &survivor, &sub);
    }
    REQUIRE_OK(st);
    CHECK(omma_bus_camera_count(sub) == CAMS);
    omma_bus_camera_info ci;
    REQUIRE_OK(omma_bus_camera_info_get(sub, 1, &ci));
    CHECK(strcmp(ci.name, "cam1") == 0 && ci.width == W && ci.height == H);

    omma_scope scope;
    REQUIRE_OK(omma_device_enter(dev, &scope));
    CUstream s;
    REQUIRE_OK(OMMA_CK(gpu_cu.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, 0)));
    uint8_t *host = NULL;
    REQUIRE_OK(OMMA_CK(gpu_cu.cuMemHostAlloc((void **)&host, FRAME_BYTES, 0)));

    uint64_t missed = 0;
    int results_ok = 0;
    int bad = read_and_check(sub, s, host, 400, &missed, &results_ok);
    printf("survivor's time per frame: next %.3f ms, wait+copy+release+sync %.3f ms, check %.3f "
           "ms, results %.3f ms\n",
           t_next / 400e6, t_copy / 400e6, t_check / 400e6, t_results / 400e6);
    printf("bitwise: 400 frames read in another process, %d wrong, %d with their results, "
           "missed %llu\n",
           bad, results_ok, (unsigned long long)missed);
    CHECK(bad == 0);
    CHECK(results_ok >= 380);

    /* A subscriber that writes into a frame only breaks itself. */
    printf("mapped read-only: %d\n", ci.read_only);
    CHECK(ci.read_only == 1);
    pid_t wr = spawn("--writer", "tbus", "");
    int wstatus = 0;
    waitpid(wr, &wstatus, 0);
    printf("a subscriber writing into a frame: exit %d\n",
           WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
    CHECK(WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0);
    bad = read_and_check(sub, s, host, 100, &missed, &results_ok);
    CHECK(bad == 0);

    /* Subscribers killed at random moments while this one goes on. */
    long long v0[6] = {0}, v1[6] = {0};
    int kills = getenv("OMMA_BUS_KILLS") ? atoi(getenv("OMMA_BUS_KILLS")) : 60;
    /* The longest a victim lives (ms): its CUDA start takes ~200-400 ms, so
     * 500 still kills some before, during and after attaching. */
    int life_ms = getenv("OMMA_BUS_KILL_MAX_MS") ? atoi(getenv("OMMA_BUS_KILL_MAX_MS")) : 800;
    if (life_ms < 1)
        life_ms = 800;
    int warm = kills / 5; /* the publisher's counts after these are the baseline */
    uint64_t missed_before = missed;
    reader rd = {.sub = sub, .dev = dev, .stream = s, .host = host, .missed = missed};
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, read_loop, &rd) == 0);
    srand(12345);
    for (int k = 0; k < kills; k++) {
        pid_t v = spawn("--victim", "tbus", "");
        /* 0..life_ms: before (its CUDA start takes ~0.2-0.4 s), during or
         * after attaching, holding frames, releasing them */
        usleep((useconds_t)(rand() % (life_ms * 1000)));
        kill(v, SIGKILL);
        waitpid(v, NULL, 0);
        if (k + 1 == warm) {
            usleep(300000);
            CHECK(read_status(status, v0));
        }
        if ((k + 1) % 100 == 0 || k + 1 == kills) {
            long long vk[6];
            if (read_status(status, vk))
                printf("after %d kills: publisher fds %+lld, device bytes %+lld, subscribers "
                       "%lld, sessions %lld, ended %lld; survivor read %d frames\n",
                       k + 1, vk[0] - v0[0], vk[1] - v0[1], vk[2], vk[3], vk[4], rd.frames);
        }
    }
    atomic_store(&rd.stop, 1);
    pthread_join(th, NULL);
    bad += rd.bad;
    missed = rd.missed;
    usleep(500000); /* the publisher sees the last hang-ups */
    CHECK(read_status(status, v1));
    printf("%d subscribers killed: the survivor read %d frames, %d wrong, its missed frames "
           "%llu -> %llu; publisher fds %+lld, device bytes %+lld, subscribers now %lld\n",
           kills, rd.frames, bad, (unsigned long long)missed_before, (unsigned long long)missed,
           v1[0] - v0[0], v1[1] - v0[1], v1[2]);
    CHECK(bad == 0);
    CHECK(missed == missed_before);
    CHECK(v1[0] == v0[0]); /* no fd leaked */
    CHECK(v1[1] == v0[1]); /* no device memory leaked */
    CHECK(v1[2] == 1); /* only this subscriber is left */
    CHECK(v1[4] == v1[3] - 1); /* every victim that attached ended */
    CHECK(kills < 30 || v1[3] > 1); /* and some did */

    /* The publisher dies: reported, not hung; then a new one is found. */
    omma_bus_frame f;
    kill(pub, SIGKILL);
    uint64_t t0 = core_now_ns();
    waitpid(pub, NULL, 0);
    int closed = 0;
    for (int i = 0; i < 1000 && !closed; i++) {
        st = omma_bus_next(sub, 100, &f);
        if (st == OMMA_OK)
            omma_bus_release(sub, &f, NULL);
        closed = st == OMMA_ERR_CLOSED;
    }
    printf("publisher killed: reported as %s after %.1f ms: %s\n", omma_status_str(st),
           (core_now_ns() - t0) / 1e6, omma_last_error());
    CHECK(closed);
    CHECK(strstr(omma_last_error(), "tbus") != NULL);
    omma_bus_close(sub);
    sub = NULL;

    pub = spawn("--publisher", "tbus", status);
    st = OMMA_ERR_CLOSED;
    for (int i = 0; i < 400 && st != OMMA_OK; i++) {
        usleep(50000);
        st = omma_bus_subscribe(dev, "tbus", NULL, &sub);
    }
    CHECK(st == OMMA_OK);
    if (st == OMMA_OK) {
        bad = read_and_check(sub, s, host, 50, &missed, &results_ok);
        CHECK(bad == 0);
        omma_bus_close(sub);
    }
    kill(pub, SIGTERM);
    waitpid(pub, NULL, 0);

    gpu_cu.cuMemFreeHost(host);
    gpu_cu.cuStreamDestroy(s);
    omma_device_leave(&scope);
    omma_device_close(dev);
}

/* Attaches to name (a publisher starting), retrying for up to 10 s. */
static omma_status attach(omma_device *dev, const char *name, const omma_bus_options *o,
                          omma_bus_subscriber **sub)
{
    omma_status st = OMMA_ERR_CLOSED;
    for (int i = 0; i < 200 && st != OMMA_OK; i++) {
        usleep(50000);
        st = omma_bus_subscribe(dev, name, o, sub);
    }
    return st;
}

/* Frames given back on two streams in turn, one frame held per camera at
 * most: each change of stream gives the frames given back on the other
 * one their event, and with max_holds 1 the subscriber writes each release
 * before it sleeps (the publisher could give it nothing else). Every frame
 * reads right, in order. */
static void test_release_streams(void)
{
    char dir[] = "/tmp/omma-bus-streams-XXXXXX";
    REQUIRE(mkdtemp(dir));
    setenv("OMMA_BUS_DIR", dir, 1);
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    pid_t pub = spawn("--publisher", "tstreams", "");
    omma_bus_options o;
    omma_bus_options_init(&o);
    o.max_holds = 1;
    omma_bus_subscriber *sub = NULL;
    REQUIRE_OK(attach(dev, "tstreams", &o, &sub));
    omma_scope scope;
    REQUIRE_OK(omma_device_enter(dev, &scope));
    CUstream s[2];
    for (int i = 0; i < 2; i++)
        REQUIRE_OK(OMMA_CK(gpu_cu.cuStreamCreateWithPriority(&s[i], CU_STREAM_NON_BLOCKING, 0)));
    uint8_t *host = NULL;
    REQUIRE_OK(OMMA_CK(gpu_cu.cuMemHostAlloc((void **)&host, FRAME_BYTES, 0)));
    int bad = 0, frames = 0, released = 0;
    uint64_t last[CAMS] = {0}, missed = 0;
    for (int k = 0; k < 300; k++) {
        omma_bus_frame f;
        omma_status st = omma_bus_next(sub, 2000, &f);
        if (st != OMMA_OK) {
            fprintf(stderr, "next: %s: %s\n", omma_status_str(st), omma_last_error());
            bad++;
            break;
        }
        CUstream on = s[(k / 3) % 2]; /* three frames on one, then the other */
        gpu_cu.cuMemcpyDtoHAsync(host, (CUdeviceptr)(uintptr_t)f.frame.planes[0], FRAME_BYTES, on);
        released += omma_bus_release(sub, &f, on) == OMMA_OK;
        gpu_cu.cuStreamSynchronize(on);
        size_t wrong = 0;
        for (size_t i = 0; i < FRAME_BYTES; i++)
            wrong += host[i] != pattern(f.camera, f.seq, i);
        bad += wrong != 0 || (last[f.camera] && f.seq <= last[f.camera]);
        last[f.camera] = f.seq;
        missed = f.missed;
        frames++;
    }
    printf("releases on two streams in turn, max_holds 1: %d frames, %d released, %d wrong or out "
           "of order, missed %llu\n",
           frames, released, bad, (unsigned long long)missed);
    CHECK(frames == 300 && released == 300 && bad == 0);
    omma_bus_close(sub);
    gpu_cu.cuMemFreeHost(host);
    for (int i = 0; i < 2; i++)
        gpu_cu.cuStreamDestroy(s[i]);
    omma_device_leave(&scope);
    kill(pub, SIGTERM);
    waitpid(pub, NULL, 0);
    omma_device_close(dev);
}

static void test_every_frame(void)
{
    char dir[] = "/tmp/omma-bus-every-XXXXXX";
    REQUIRE(mkdtemp(dir));
    setenv("OMMA_BUS_DIR", dir, 1);
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    omma_bus_options o;
    omma_bus_options_init(&o);
    o.every_frame = 1;

    /* A live publisher refuses: it never waits for a reader. */
    pid_t live = spawn("--publisher", "tlive", "");
    omma_bus_subscriber *sub = NULL;
    omma_bus_options plain;
    omma_bus_options_init(&plain);
    REQUIRE_OK(attach(dev, "tlive", &plain, &sub));
    omma_bus_close(sub);
    sub = NULL;
    omma_status st = omma_bus_subscribe(dev, "tlive", &o, &sub);
    printf("every frame of a live publisher: %s: %s\n", omma_status_str(st), omma_last_error());
    CHECK(st == OMMA_ERR_UNSUPPORTED && sub == NULL);
    CHECK(strstr(omma_last_error(), "live") && strstr(omma_last_error(), "tlive"));
    kill(live, SIGTERM);
    waitpid(live, NULL, 0);

    /* A publisher of files: every frame, in order, to a slow subscriber. */
    pid_t pub = spawn("--file-publisher", "tfile", "");
    REQUIRE_OK(attach(dev, "tfile", &o, &sub));
    omma_scope scope;
    REQUIRE_OK(omma_device_enter(dev, &scope));
    CUstream s;
    REQUIRE_OK(OMMA_CK(gpu_cu.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, 0)));
    uint8_t *host = malloc(FRAME_BYTES);
    REQUIRE(host);
    uint64_t last[CAMS] = {0};
    int frames = 0, gaps = 0, wrong = 0, missed = 0;
    for (int k = 0; k < 400; k++) {
        omma_bus_frame f;
        st = omma_bus_next(sub, 3000, &f);
        if (st != OMMA_OK) {
            fprintf(stderr, "every frame: next: %s\n", omma_last_error());
            break;
        }
        omma_bus_wait(sub, &f, s);
        gpu_cu.cuMemcpyDtoHAsync(host, (CUdeviceptr)(uintptr_t)f.frame.planes[0], FRAME_BYTES, s);
        omma_bus_release(sub, &f, s);
        gpu_cu.cuStreamSynchronize(s);
        for (size_t i = 0; i < FRAME_BYTES; i += 97)
            if (host[i] != pattern(f.camera, f.seq, i)) {
                wrong++;
                break;
            }
        if (last[f.camera] && f.seq != last[f.camera] + 1) {
            gaps++;
            fprintf(stderr, "every frame: camera %d seq %llu after %llu\n", f.camera,
                    (unsigned long long)f.seq, (unsigned long long)last[f.camera]);
        }
        last[f.camera] = f.seq;
        missed += f.missed != 0;
        frames++;
        if (k % 8 == 0)
            usleep(15000); /* slower than the publisher's 100 frames/s */
    }
    printf("every frame: %d frames read (cameras up to seq %llu, %llu), %d gaps, %d wrong, %d "
           "with a missed count\n",
           frames, (unsigned long long)last[0], (unsigned long long)last[1], gaps, wrong, missed);
    CHECK(frames == 400 && gaps == 0 && wrong == 0 && missed == 0);
    omma_bus_close(sub);
    kill(pub, SIGTERM);
    waitpid(pub, NULL, 0);
    free(host);
    gpu_cu.cuStreamDestroy(s);
    omma_device_leave(&scope);
    omma_device_close(dev);
}

typedef struct killer {
    pid_t pid;
    useconds_t after;
} killer;

static void *kill_later(void *arg)
{
    killer *k = arg;
    usleep(k->after);
    kill(k->pid, SIGKILL);
    return NULL;
}

/* Publishers killed at random moments: starting, while this subscriber
 * attaches, while it streams. */
static void test_publisher_kills(void)
{
    char dir[] = "/tmp/omma-bus-pkill-XXXXXX";
    REQUIRE(mkdtemp(dir));
    setenv("OMMA_BUS_DIR", dir, 1);
    int kills = getenv("OMMA_BUS_PUBLISHER_KILLS") ? atoi(getenv("OMMA_BUS_PUBLISHER_KILLS")) : 6;
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    omma_scope scope;
    REQUIRE_OK(omma_device_enter(dev, &scope));
    CUstream s;
    REQUIRE_OK(OMMA_CK(gpu_cu.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, 0)));
    int fds0 = count_fds(), threads0 = count_threads();
    int attached = 0, refused = 0, reported = 0, bad = 0;
    double worst_ms = 0.0, sum_ms = 0.0;
    srand(777);
    for (int k = 0; k < kills; k++) {
        pid_t pub = spawn("--publisher", "tpk", "");
        omma_bus_subscriber *sub = NULL;
        omma_status st;
        if (k % 3 == 0) { /* killed while starting or while we attach */
            killer kl = {pub, (useconds_t)(rand() % 700000)};
            pthread_t th;
            REQUIRE(pthread_create(&th, NULL, kill_later, &kl) == 0);
            st = OMMA_ERR_CLOSED;
            for (int i = 0; i < 40 && st != OMMA_OK; i++) {
                st = omma_bus_subscribe(dev, "tpk", NULL, &sub);
                if (st != OMMA_OK) {
                    bad += strstr(omma_last_error(), "tpk") == NULL;
                    usleep(20000);
                }
            }
            pthread_join(th, NULL);
        } else {
            st = attach(dev, "tpk", NULL, &sub);
        }
        waitpid(pub, NULL, WNOHANG);
        if (st != OMMA_OK) {
            refused++;
            kill(pub, SIGKILL);
            waitpid(pub, NULL, 0);
            continue;
        }
        attached++;
        /* Stream a little, then the publisher dies (if it is still alive). */
        int n = rand() % 40;
        omma_bus_frame f;
        for (int i = 0; i < n; i++) {
            if (omma_bus_next(sub, 500, &f) != OMMA_OK)
                break;
            omma_bus_wait(sub, &f, s);
            omma_bus_release(sub, &f, i % 2 ? s : NULL);
        }
        uint64_t t0 = core_now_ns();
        kill(pub, SIGKILL);
        int closed = 0;
        for (int i = 0; i < 100 && !closed; i++) {
            st = omma_bus_next(sub, 100, &f);
            if (st == OMMA_OK)
                omma_bus_release(sub, &f, NULL);
            closed = st == OMMA_ERR_CLOSED;
        }
        double ms = (core_now_ns() - t0) / 1e6;
        waitpid(pub, NULL, 0);
        if (closed && strstr(omma_last_error(), "tpk")) {
            reported++;
            sum_ms += ms;
            worst_ms = ms > worst_ms ? ms : worst_ms;
        } else {
            bad++;
            fprintf(stderr, "publisher kill %d: %s: %s\n", k, omma_status_str(st),
                    omma_last_error());
        }
        omma_bus_close(sub);
        if ((k + 1) % 10 == 0 || k + 1 == kills)
            printf("after %d publisher kills: subscriber fds %+d, threads %+d\n", k + 1,
                   count_fds() - fds0, count_threads() - threads0);
    }
    usleep(200000);
    int dfds = count_fds() - fds0, dthreads = count_threads() - threads0;
    printf("%d publishers killed: %d attached first (%d killed before), %d reported as closed "
           "naming the bus (kill to report: mean %.1f ms, worst %.1f ms), %d bad; subscriber "
           "fds %+d, threads %+d\n",
           kills, attached, refused, reported, reported ? sum_ms / reported : 0.0, worst_ms, bad,
           dfds, dthreads);
    CHECK(bad == 0 && reported == attached && dfds == 0 && dthreads == 0);
    CHECK(kills < 3 || attached > 0);
    gpu_cu.cuStreamDestroy(s);
    omma_device_leave(&scope);
    omma_device_close(dev);
}

/* Every fault point of publishing and subscribing fails once in turn. */
static void test_fault_walk(void)
{
    if (!gpu_fault_enabled()) {
        printf("fault walk: this build has no fault injection (OMMA_FAULT_INJECTION=ON runs it)\n");
        return;
    }
    char dir[] = "/tmp/omma-bus-fault-XXXXXX";
    REQUIRE(mkdtemp(dir));
    setenv("OMMA_BUS_DIR", dir, 1);
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    omma_scope scope;
    REQUIRE_OK(omma_device_enter(dev, &scope));
    CUstream s;
    REQUIRE_OK(OMMA_CK(gpu_cu.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, 0)));
    int fds0 = count_fds(), threads0 = count_threads();
    size_t free0 = 0, total = 0, fr = 0;

    /* The publishing side, in this process. */
    int walked = 0, bad = 0, done = 0;
    for (long n = 1; n < 400 && !done; n++) {
        bus_pub_options bo = {"tfault", NULL, CAMS, 4, 4, -1, 0};
        bus_pub *pub = NULL;
        rt_ring *rings[CAMS] = {0};
        rt_ring_format fmt = {W, H, OMMA_PIXEL_RGB};
        if (n == 1)
            gpu_cu.cuMemGetInfo(&free0, &total);
        gpu_fault_arm(n);
        omma_status st = bus_pub_create(&bo, &pub);
        for (int c = 0; c < CAMS && st == OMMA_OK; c++)
            st = rt_ring_create_bus(dev, 6, &fmt, RT_RING_KEEP_NEWEST, pub, c, "cam", &rings[c]);
        if (st == OMMA_OK)
            st = bus_pub_start(pub);
        long passed = gpu_fault_points();
        gpu_fault_arm(0);
        if (passed < n) {
            done = 1;
            bad += st != OMMA_OK;
        } else {
            walked++;
            if (st == OMMA_OK || !strstr(omma_last_error(), "injected fault")) {
                bad++;
                fprintf(stderr, "publisher fault %ld: %s: %s\n", n, omma_status_str(st),
                        omma_last_error());
            }
        }
        for (int c = 0; c < CAMS; c++)
            rt_ring_destroy(rings[c]);
        bus_pub_destroy(pub);
        if (count_fds() != fds0 || count_threads() != threads0) {
            bad++;
            fprintf(stderr, "publisher fault %ld: fds %+d, threads %+d\n", n, count_fds() - fds0,
                    count_threads() - threads0);
        }
    }
    gpu_cu.cuMemGetInfo(&fr, &total);
    printf("fault walk, publisher: %d fault points failed in turn, then it started; fds %+d, "
           "threads %+d, device bytes %+lld; %d bad\n",
           walked, count_fds() - fds0, count_threads() - threads0, (long long)fr - (long long)free0,
           bad);
    CHECK(done && walked >= 8 && bad == 0);

    /* The subscribing side, against a publisher in another process. */
    pid_t pub = spawn("--publisher", "tfaultp", "");
    omma_bus_subscriber *sub = NULL;
    REQUIRE_OK(attach(dev, "tfaultp", NULL, &sub));
    omma_bus_close(sub);
    sub = NULL;
    usleep(100000);
    fds0 = count_fds();
    threads0 = count_threads();
    int swalked = 0, sbad = 0, sabsorbed = 0;
    done = 0;
    for (long n = 1; n < 400 && !done; n++) {
        gpu_fault_arm(n);
        omma_status st = omma_bus_subscribe(dev, "tfaultp", NULL, &sub);
        omma_bus_frame f;
        int held = 0;
        if (st == OMMA_OK)
            st = omma_bus_next(sub, 2000, &f);
        if (st == OMMA_OK) {
            held = 1;
            st = omma_bus_release(sub, &f, s); /* the board write on s */
            /* refused, the frame stays held; OMMA_ERR_CUDA (its event not
             * made or recorded) gives it back all the same (bus.h) */
            held = st != OMMA_OK && f.token_ >= 0;
        }
        long passed = gpu_fault_points();
        gpu_fault_arm(0);
        /* A read-only mapping that fails is tried again read-write (for
         * drivers that refuse read-only access): the fault is absorbed and
         * the camera says it is writable. */
        int absorbed = 0;
        for (int c = 0; st == OMMA_OK && passed >= n && c < omma_bus_camera_count(sub); c++) {
            omma_bus_camera_info ci;
            absorbed |= omma_bus_camera_info_get(sub, c, &ci) == OMMA_OK && !ci.read_only;
        }
        if (passed < n) {
            done = 1;
            sbad += st != OMMA_OK;
        } else if (absorbed) {
            swalked++;
            sabsorbed++;
        } else {
            swalked++;
            if (st == OMMA_OK || !strstr(omma_last_error(), "injected fault")) {
                sbad++;
                fprintf(stderr, "subscriber fault %ld: %s: %s\n", n, omma_status_str(st),
                        omma_last_error());
            }
        }
        if (held) /* a refused release leaves the frame held: give it back */
            CHECK(omma_bus_release(sub, &f, s) == OMMA_OK);
        omma_bus_close(sub);
        sub = NULL;
        usleep(20000);
        if (count_fds() != fds0 || count_threads() != threads0) {
            sbad++;
            fprintf(stderr, "subscriber fault %ld: fds %+d, threads %+d\n", n, count_fds() - fds0,
                    count_threads() - threads0);
        }
    }
    printf("fault walk, subscriber: %d fault points failed in turn (%d absorbed by mapping "
           "read-write), then it read a frame; fds %+d, threads %+d; %d bad\n",
           swalked, sabsorbed, count_fds() - fds0, count_threads() - threads0, sbad);
    CHECK(done && swalked >= 2 && sbad == 0);
    kill(pub, SIGTERM);
    waitpid(pub, NULL, 0);
    gpu_cu.cuStreamDestroy(s);
    omma_device_leave(&scope);
    omma_device_close(dev);
}

static void test_bad_names(void)
{
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    omma_bus_subscriber *sub = NULL;
    CHECK(omma_bus_subscribe(dev, "../etc", NULL, &sub) == OMMA_ERR_INVALID_ARG);
    CHECK(omma_bus_subscribe(dev, "nobody-here", NULL, &sub) == OMMA_ERR_CLOSED);
    CHECK(strstr(omma_last_error(), "nobody-here") != NULL);
    CHECK(sub == NULL);
    omma_device_close(dev);
}

int main(int argc, char **argv)
{
    if (argc >= 3 && strcmp(argv[1], "--publisher") == 0)
        return publisher_main(argv[2], argc > 3 ? argv[3] : NULL, 0);
    if (argc >= 3 && strcmp(argv[1], "--file-publisher") == 0)
        return publisher_main(argv[2], argc > 3 ? argv[3] : NULL, 1);
    if (argc >= 3 && strcmp(argv[1], "--victim") == 0)
        return victim_main(argv[2]);
    if (argc >= 3 && strcmp(argv[1], "--writer") == 0)
        return writer_main(argv[2]);
    gpu_test_require_device();
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (n <= 0)
        return 1;
    self_path[n] = '\0';
    RUN(test_bad_names);
    RUN(test_bus_across_processes);
    RUN(test_release_streams);
    RUN(test_every_frame);
    RUN(test_publisher_kills);
    RUN(test_fault_walk);
    return testing_finish();
}
