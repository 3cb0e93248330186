/* cuda_cost: what one CUDA driver call costs on the host, in the calling
 * thread and in the driver's own threads (cuda-EvtHandlr, ...), at a
 * steady cadence (by default every 520 us: 1920 calls a second, what one
 * frame bus subscriber sees at 64 cameras x 30 fps).
 *
 * Each case runs in its own forked process (CUDA is never initialized in
 * the parent), so each starts with fresh driver threads and its context's
 * scheduling flag (--sched): the CPU of every thread of the process is read
 * from /proc/self/task/TID/schedstat before and after, by thread name.
 *
 * With --procs P, each case runs in P processes at once instead (forked
 * together, ticking at the same moments: the frame bus's subscribers,
 * which all get a frame at once), beside an optional publisher process
 * (--publisher): "ipc" records an interprocess event every tick (ipc_wait
 * then waits on that event in the P processes), "copy" also copies a
 * frame (--copy-bytes, 1080p NV12) on the GPU before it and waits for it
 * as the bus's announcer does (polls up to 50 us, then a blocking-sync
 * event; "copyblock" sleeps in that event at once, "copyspin" only
 * polls). It prints the mean of the P processes (and the largest process
 * figure) and the publisher's own figures: whether a process's
 * cuda-EvtHandlr wakes for its own calls or for the other processes' GPU
 * work. --every N does the case's calls only every Nth tick (the figures
 * stay per tick: e.g. one release event per N frames); --stagger spreads
 * the P processes' ticks over the period instead.
 *
 * Build (no GPU needed; at run time libcuda.so.1 is the driver's):
 *   cc -O2 -std=gnu11 -I/usr/local/cuda/include tools/cuda_cost.c \
 *      -L/usr/local/cuda/lib64/stubs -lcuda -o build/cuda_cost
 * Run: build/cuda_cost [--seconds 0.5] [--period-us 520] [--every N]
 *                      [--sched blocking,spin] [--cases a,b,...] [--json]
 *                      [--procs P [--publisher none|ipc|copy|copyblock|copyspin]
 *                       [--copy-bytes B] [--stagger]]
 * Cases: idle, record_query, record_query_next, record, query_done,
 * ipc_record_query, ipc_wait, write_value, write_value_host, kernel,
 * kernel_host (see the table in case_names). */
#define _GNU_SOURCE
#include <cuda.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *const case_names[][2] = {
    {"idle", "nothing per tick: the driver threads' background"},
    {"record_query", "cuEventRecord (DISABLE_TIMING) + cuEventQuery until done"},
    {"record_query_next", "cuEventRecord; its cuEventQuery at the next tick"},
    {"record", "cuEventRecord only (never queried)"},
    {"query_done", "cuEventQuery of an event that completed long ago"},
    {"ipc_record_query", "cuEventRecord of an INTERPROCESS event + cuEventQuery until done"},
    {"ipc_wait", "cuStreamWaitEvent on an event of another process (cuIpcOpenEventHandle), which "
                 "it records every tick"},
    {"write_value", "cuStreamWriteValue64 to device memory"},
    {"write_value_host", "cuStreamWriteValue64 to mapped pinned host memory, polled until seen"},
    {"kernel", "cuLaunchKernel of a one-thread kernel writing device memory"},
    {"kernel_host", "the same kernel writing mapped pinned host memory, polled until seen"},
};
#define N_CASES (int)(sizeof case_names / sizeof case_names[0])

/* One thread writes a 64-bit value (the JIT compiles it for the GPU). */
static const char ptx[] = ".version 7.0\n"
                          ".target sm_50\n"
                          ".address_size 64\n"
                          ".visible .entry touch(.param .u64 p, .param .u64 v)\n"
                          "{\n"
                          "  .reg .b64 %rd<4>;\n"
                          "  ld.param.u64 %rd1, [p];\n"
                          "  ld.param.u64 %rd2, [v];\n"
                          "  cvta.to.global.u64 %rd3, %rd1;\n"
                          "  st.volatile.global.u64 [%rd3], %rd2;\n"
                          "  ret;\n"
                          "}\n";

#define MAX_TASKS 128
typedef struct tasks {
    int n;
    int tid[MAX_TASKS];
    char name[MAX_TASKS][20];
    unsigned long long ns[MAX_TASKS];
} tasks;

static void read_tasks(tasks *t)
{
    t->n = 0;
    DIR *d = opendir("/proc/self/task");
    for (struct dirent *e; d && (e = readdir(d)) != NULL && t->n < MAX_TASKS;) {
        if (e->d_name[0] == '.')
            continue;
        char path[300];
        snprintf(path, sizeof path, "/proc/self/task/%s/schedstat", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        int ok = fscanf(f, "%llu", &t->ns[t->n]) == 1;
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
        if (ok)
            t->tid[t->n++] = atoi(e->d_name);
    }
    if (d)
        closedir(d);
}

static uint64_t now_ns(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const char *err_name(CUresult r)
{
    const char *s = NULL;
    cuGetErrorName(r, &s);
    return s ? s : "?";
}

#define CK(call)                                                                                   \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "cuda_cost: %s: %s (%d, line %d)\n", #call, err_name(r_), (int)r_,     \
                    __LINE__);                                                                     \
            return 2;                                                                              \
        }                                                                                          \
    } while (0)

typedef struct opts {
    double seconds;
    long period_us;
    int json;
    long every; /* the case's calls on every Nth tick */
    int procs; /* 0: one process per case; else P processes at once */
    int publisher; /* PUB_* (with procs) */
    size_t copy_bytes;
    int stagger;
} opts;

enum { PUB_NONE = 0, PUB_IPC, PUB_COPY, PUB_COPY_BLOCK, PUB_COPY_SPIN, PUB_KINDS };
static const char *const pub_names[PUB_KINDS] = {"none", "ipc", "copy", "copyblock", "copyspin"};

/* What one process measured, per tick (us). */
#define MAX_NAMES 24
typedef struct result {
    int ok;
    long ticks;
    double period_us, call_us, wait_us, polls, process_us, other_us;
    int n; /* threads other than the calling one, by name */
    char name[MAX_NAMES][20];
    double us[MAX_NAMES];
} result;

/* With --procs: the processes' shared page (MAP_SHARED before the forks).
 * The parent sets start_ns once every process is ready, then lets them go
 * (closes the go pipe); each writes its result in its place. */
#define MAX_PROCS 64
typedef struct shared {
    volatile uint64_t start_ns;
    CUipcEventHandle handle; /* the publisher's event (ipc_wait) */
    result res[MAX_PROCS + 1]; /* [procs]: the publisher's */
} shared;

/* How a process of --procs takes part (NULL: alone). */
typedef struct party {
    shared *sh;
    int index; /* 0..procs-1, or procs: the publisher */
    int ready_fd; /* writes a byte when set up */
    int go_fd; /* reads until EOF: the start */
    int stop_fd; /* the publisher: ticks until EOF (non-blocking) */
    long offset_ns; /* its ticks' phase in the period */
} party;

/* Sums the threads' times between t0 and t1 (us per tick over per = 1e3 *
 * ticks) by name, leaving out the thread me. */
static void thread_figures(const tasks *t0, const tasks *t1, int me, double per, result *r)
{
    r->n = 0;
    r->other_us = 0;
    for (int i = 0; i < t1->n; i++) {
        unsigned long long before = 0;
        for (int j = 0; j < t0->n; j++)
            if (t0->tid[j] == t1->tid[i])
                before = t0->ns[j];
        double us = (double)(t1->ns[i] - before) / per;
        if (t1->tid[i] == me)
            continue;
        r->other_us += us;
        int k = 0;
        while (k < r->n && strcmp(r->name[k], t1->name[i]) != 0)
            k++;
        if (k == r->n && r->n < MAX_NAMES) {
            snprintf(r->name[k], sizeof r->name[k], "%s", t1->name[i]);
            r->us[k] = 0;
            r->n++;
        }
        if (k < r->n)
            r->us[k] += us;
    }
}

/* Waits for the start (--procs): tells the parent it is ready, then
 * reads until the parent closes the go pipe. Returns the start time. */
static uint64_t party_start(const party *pt)
{
    char c = 1;
    if (write(pt->ready_fd, &c, 1) != 1)
        return 0;
    close(pt->ready_fd);
    while (read(pt->go_fd, &c, 1) > 0) {
    }
    close(pt->go_fd);
    return pt->sh->start_ns + (uint64_t)pt->offset_ns;
}

/* The other process of ipc_wait: creates an interprocess event, sends its
 * handle, then records it every tick until the pipe closes. */
static int ipc_owner(int wfd, int rfd, long period_us)
{
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    CUevent ev;
    CUipcEventHandle h;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuEventCreate(&ev, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    CK(cuIpcGetEventHandle(&h, ev));
    if (write(wfd, &h, sizeof h) != (ssize_t)sizeof h)
        return 2;
    for (;;) {
        CK(cuEventRecord(ev, s));
        char c;
        struct timespec ts = {0, period_us * 1000};
        nanosleep(&ts, NULL);
        if (read(rfd, &c, 1) == 0)
            break; /* the measuring process ended */
    }
    cuStreamSynchronize(s);
    cuEventDestroy(ev);
    cuStreamDestroy(s);
    cuDevicePrimaryCtxRelease(dev);
    return 0;
}

/* Runs case k in this (fresh) process with scheduling flag sched; its
 * figures in *r. pt: one of --procs's processes (ipc_wait then waits on
 * the publisher's event), else alone. */
/* The window's figures: from its start (wall and process CPU clocks, the
 * threads' times in t0) to now, over `ticks` ticks. */
static void window_figures(long ticks, uint64_t start, uint64_t cpu0, uint64_t in_call,
                           uint64_t in_wait, uint64_t polls, const tasks *t0, result *out)
{
    static tasks t1;
    uint64_t wall = now_ns(CLOCK_MONOTONIC) - start;
    uint64_t cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    read_tasks(&t1);
    double per = 1e3 * (double)ticks;
    out->ticks = ticks;
    out->period_us = (double)wall / 1e3 / (double)ticks;
    out->call_us = (double)in_call / per;
    out->wait_us = (double)in_wait / per;
    out->polls = (double)polls / (double)ticks;
    out->process_us = (double)cpu / per;
    thread_figures(t0, &t1, (int)getpid(), per, out);
    out->ok = 1;
}

static int run_case(int k, unsigned sched, const opts *o, const party *pt, result *out)
{
    const char *name = case_names[k][0];
    int ipc_to[2] = {-1, -1}, ipc_from[2] = {-1, -1};
    pid_t owner = -1;
    memset(out, 0, sizeof *out);
    if (strcmp(name, "ipc_wait") == 0 && !pt) { /* before this process's cuInit */
        if (pipe(ipc_to) != 0 || pipe(ipc_from) != 0)
            return 2;
        owner = fork();
        if (owner == 0) {
            close(ipc_to[1]);
            close(ipc_from[0]);
            fcntl(ipc_to[0], F_SETFL, O_NONBLOCK);
            _exit(ipc_owner(ipc_from[1], ipc_to[0], o->period_us));
        }
        close(ipc_to[0]);
        close(ipc_from[1]);
        fcntl(ipc_to[1], F_SETFL, O_NONBLOCK); /* a tick never waits for the other process */
    }
    CUdevice dev;
    CUcontext ctx;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxSetFlags(dev, sched));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CUstream s;
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CUevent ev;
    unsigned ev_flags = CU_EVENT_DISABLE_TIMING;
    if (strcmp(name, "ipc_record_query") == 0)
        ev_flags |= CU_EVENT_INTERPROCESS;
    CK(cuEventCreate(&ev, ev_flags));
    CUevent remote = NULL;
    if (pt && strcmp(name, "ipc_wait") == 0)
        CK(cuIpcOpenEventHandle(&remote, pt->sh->handle));
    if (owner > 0) {
        CUipcEventHandle h;
        if (read(ipc_from[0], &h, sizeof h) != (ssize_t)sizeof h) {
            fprintf(stderr, "cuda_cost: ipc_wait: no handle from the other process\n");
            return 2;
        }
        CK(cuIpcOpenEventHandle(&remote, h));
    }
    CUdeviceptr dmem;
    CK(cuMemAlloc(&dmem, 64));
    CK(cuMemsetD8(dmem, 0, 64));
    volatile uint64_t *hmem = NULL;
    CUdeviceptr hmem_dev = 0;
    CK(cuMemHostAlloc((void **)&hmem, 64, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    CK(cuMemHostGetDevicePointer(&hmem_dev, (void *)hmem, 0));
    hmem[0] = 0;
    CUmodule mod;
    CUfunction touch;
    CK(cuModuleLoadData(&mod, ptx));
    CK(cuModuleGetFunction(&touch, mod, "touch"));

    /* Ticks: warm-up, then the measured ones. */
    long warm = 200, ticks = (long)(o->seconds * 1e6 / (double)o->period_us);
    if (ticks < 10)
        ticks = 10;
    uint64_t in_call = 0, in_wait = 0, polls = 0;
    int pending = 0; /* record_query_next: a record not looked at yet */
    static tasks t0;
    uint64_t start = 0, cpu0 = 0;
    CK(cuEventRecord(ev, s));
    CK(cuStreamSynchronize(s));
    uint64_t next = pt ? party_start(pt) : now_ns(CLOCK_MONOTONIC);
    if (!next)
        return 2;
    long every = o->every > 0 ? o->every : 1;
    for (long i = 0; i < warm + ticks; i++) {
        if (i == warm) {
            read_tasks(&t0);
            start = now_ns(CLOCK_MONOTONIC);
            cpu0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
            in_call = in_wait = polls = 0;
        }
        next += (uint64_t)o->period_us * 1000u;
        struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        uint64_t c0 = now_ns(CLOCK_THREAD_CPUTIME_ID), c1 = c0;
        uint64_t v = (uint64_t)i + 1;
        CUresult r = CUDA_SUCCESS;
        if (i % every != 0) {
            /* the sleep and wake only */
        } else if (strcmp(name, "record_query") == 0 || strcmp(name, "ipc_record_query") == 0) {
            r = cuEventRecord(ev, s);
            c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
            while (r == CUDA_SUCCESS && (r = cuEventQuery(ev)) == CUDA_ERROR_NOT_READY)
                polls++;
            polls++;
        } else if (strcmp(name, "record_query_next") == 0) {
            if (pending) {
                while ((r = cuEventQuery(ev)) == CUDA_ERROR_NOT_READY)
                    polls++;
                polls++;
            }
            if (r == CUDA_SUCCESS)
                r = cuEventRecord(ev, s);
            pending = 1;
            c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        } else if (strcmp(name, "record") == 0) {
            r = cuEventRecord(ev, s);
        } else if (strcmp(name, "query_done") == 0) {
            r = cuEventQuery(ev);
        } else if (strcmp(name, "ipc_wait") == 0) {
            r = cuStreamWaitEvent(s, remote, 0);
            char c = 1;
            if (owner > 0 && write(ipc_to[1], &c, 1) < 0 && errno != EAGAIN)
                r = CUDA_ERROR_UNKNOWN;
        } else if (strcmp(name, "write_value") == 0) {
            r = cuStreamWriteValue64(s, dmem, v, 0);
        } else if (strcmp(name, "write_value_host") == 0) {
            r = cuStreamWriteValue64(s, hmem_dev, v, 0);
            c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
            while (r == CUDA_SUCCESS && hmem[0] != v)
                polls++;
        } else if (strcmp(name, "kernel") == 0 || strcmp(name, "kernel_host") == 0) {
            int host = strcmp(name, "kernel_host") == 0;
            CUdeviceptr p = host ? hmem_dev : dmem;
            void *args[] = {&p, &v};
            r = cuLaunchKernel(touch, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
            c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
            while (host && r == CUDA_SUCCESS && hmem[0] != v)
                polls++;
        }
        uint64_t c2 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        if (c1 == c0)
            c1 = c2;
        in_call += c1 - c0;
        in_wait += c2 - c1;
        if (r != CUDA_SUCCESS) {
            fprintf(stderr, "cuda_cost: case %s: %s\n", name, err_name(r));
            return 2;
        }
    }
    window_figures(ticks, start, cpu0, in_call, in_wait, polls, &t0, out);
    if (owner > 0) {
        close(ipc_to[1]);
        waitpid(owner, NULL, 0);
    }
    cuStreamSynchronize(s);
    cuModuleUnload(mod);
    cuMemFreeHost((void *)hmem);
    cuMemFree(dmem);
    cuEventDestroy(ev);
    cuStreamDestroy(s);
    cuDevicePrimaryCtxRelease(dev);
    return 0;
}

/* The publisher of --procs: records its interprocess event every tick,
 * after a frame copy that it waits for (copy: polls up to 50 us, then
 * sleeps in a blocking-sync event, as the frame bus's announcer does;
 * copyblock: sleeps at once; copyspin: only polls), from the start until
 * the stop pipe closes; measured over the same ticks as the other
 * processes. */
static int run_publisher(unsigned sched, const opts *o, const party *pt, result *out)
{
    memset(out, 0, sizeof *out);
    CUdevice dev;
    CUcontext ctx;
    CUstream s;
    CUevent ipc, done;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxSetFlags(dev, sched));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CK(cuEventCreate(&ipc, CU_EVENT_INTERPROCESS | CU_EVENT_DISABLE_TIMING));
    CK(cuEventCreate(&done, CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING));
    CK(cuIpcGetEventHandle(&pt->sh->handle, ipc));
    CUdeviceptr src = 0, dst = 0;
    int copy = o->publisher >= PUB_COPY;
    uint64_t spin_ns = o->publisher == PUB_COPY_BLOCK  ? 0
                       : o->publisher == PUB_COPY_SPIN ? UINT64_MAX / 2
                                                       : 50000;
    if (copy) {
        CK(cuMemAlloc(&src, o->copy_bytes));
        CK(cuMemAlloc(&dst, o->copy_bytes));
        CK(cuMemsetD8(src, 128, o->copy_bytes));
    }
    CK(cuEventRecord(ipc, s));
    CK(cuStreamSynchronize(s));
    uint64_t next = party_start(pt);
    if (!next)
        return 2;
    long warm = 200, ticks = (long)(o->seconds * 1e6 / (double)o->period_us);
    if (ticks < 10)
        ticks = 10;
    uint64_t in_call = 0, in_wait = 0, polls = 0, start = 0, cpu0 = 0;
    static tasks t0;
    for (long i = 0;; i++) {
        if (i == warm) {
            read_tasks(&t0);
            start = now_ns(CLOCK_MONOTONIC);
            cpu0 = now_ns(CLOCK_PROCESS_CPUTIME_ID);
            in_call = in_wait = polls = 0;
        } else if (i == warm + ticks) {
            window_figures(ticks, start, cpu0, in_call, in_wait, polls, &t0, out);
        }
        if (i >= warm + ticks) { /* until the others are done */
            char c;
            if (read(pt->stop_fd, &c, 1) == 0)
                break;
        }
        next += (uint64_t)o->period_us * 1000u;
        struct timespec ts = {(time_t)(next / 1000000000u), (long)(next % 1000000000u)};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
        uint64_t c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        if (copy) {
            CK(cuMemcpyDtoDAsync(dst, src, o->copy_bytes, s));
            CK(cuEventRecord(done, s));
        }
        CK(cuEventRecord(ipc, s));
        uint64_t c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        if (copy) {
            uint64_t until = now_ns(CLOCK_MONOTONIC) + spin_ns;
            CUresult r = CUDA_ERROR_NOT_READY;
            while (spin_ns && (r = cuEventQuery(done)) == CUDA_ERROR_NOT_READY &&
                   now_ns(CLOCK_MONOTONIC) < until)
                polls++;
            if (r == CUDA_ERROR_NOT_READY)
                CK(cuEventSynchronize(done));
            else
                CK(r);
        }
        uint64_t c2 = now_ns(CLOCK_THREAD_CPUTIME_ID);
        in_call += c1 - c0;
        in_wait += c2 - c1;
    }
    cuStreamSynchronize(s);
    if (copy) {
        cuMemFree(src);
        cuMemFree(dst);
    }
    cuEventDestroy(done);
    cuEventDestroy(ipc);
    cuStreamDestroy(s);
    cuDevicePrimaryCtxRelease(dev);
    return 0;
}

/* Prints one process's (or a mean's) figures: text or JSON fields. */
static void print_threads(const result *r, int json)
{
    int first = 1;
    for (int i = 0; i < r->n; i++) {
        if (r->us[i] < 0.005)
            continue;
        printf(json ? "%s\"%s\": %.2f" : "%s%s %.2f", first ? "" : ", ", r->name[i], r->us[i]);
        first = 0;
    }
}

static void print_result(const char *name, const char *sched_name, const result *r, int json)
{
    if (json) {
        printf("{\"case\": \"%s\", \"sched\": \"%s\", \"ticks\": %ld, \"period_us\": %.1f, "
               "\"call_us\": %.3f, \"wait_us\": %.3f, \"polls\": %.2f, \"process_us\": %.3f, "
               "\"other_threads_us\": %.3f, \"threads_us\": {",
               name, sched_name, r->ticks, r->period_us, r->call_us, r->wait_us, r->polls,
               r->process_us, r->other_us);
        print_threads(r, 1);
        printf("}}\n");
    } else {
        printf("%-18s %-8s %7.2f %7.2f %6.1f %8.2f %8.2f  ", name, sched_name, r->call_us,
               r->wait_us, r->polls, r->process_us, r->other_us);
        print_threads(r, 0);
        printf("\n");
    }
    fflush(stdout);
}

/* Reads n bytes from fd, waiting up to timeout_ms for each: how many came. */
static int read_ready(int fd, int n, int timeout_ms)
{
    int got = 0;
    while (got < n) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, timeout_ms) <= 0)
            break;
        char c;
        if (read(fd, &c, 1) != 1)
            break;
        got++;
    }
    return got;
}

/* --procs: case k in o->procs processes at once (and the publisher). */
static int run_procs(int k, unsigned sched, const char *sched_name, const opts *o, shared *sh)
{
    const char *name = case_names[k][0];
    int publisher = o->publisher;
    if (strcmp(name, "ipc_wait") == 0 && publisher == PUB_NONE)
        publisher = PUB_IPC; /* its event to wait on */
    opts po = *o;
    po.publisher = publisher;
    memset(sh, 0, sizeof *sh);
    int ready[2], go[2], stop[2] = {-1, -1};
    if (pipe(ready) != 0 || pipe(go) != 0)
        return 2;
    pid_t pids[MAX_PROCS + 1];
    int n = 0, failed = 0;
    fflush(stdout);
    if (publisher != PUB_NONE) {
        if (pipe(stop) != 0)
            return 2;
        pid_t pid = fork();
        if (pid == 0) {
            close(ready[0]);
            close(go[1]);
            close(stop[1]);
            fcntl(stop[0], F_SETFL, O_NONBLOCK);
            party pt = {sh, o->procs, ready[1], go[0], stop[0], 0};
            _exit(run_publisher(sched, &po, &pt, &sh->res[o->procs]));
        }
        close(stop[0]);
        if (pid < 0 || read_ready(ready[0], 1, 60000) != 1) {
            fprintf(stderr, "cuda_cost: --procs: the publisher did not start\n");
            failed = 1;
        }
        if (pid > 0)
            pids[n++] = pid;
    }
    for (int i = 0; i < o->procs && !failed; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            close(ready[0]);
            close(go[1]);
            if (stop[1] >= 0)
                close(stop[1]);
            long offset = o->stagger ? (long)((double)o->period_us * 1000.0 * i / o->procs) : 0;
            party pt = {sh, i, ready[1], go[0], -1, offset};
            _exit(run_case(k, sched, &po, &pt, &sh->res[i]));
        }
        if (pid > 0)
            pids[n++] = pid;
        else
            failed = 1;
    }
    close(ready[1]);
    close(go[0]);
    if (!failed && read_ready(ready[0], o->procs, 60000) != o->procs) {
        fprintf(stderr, "cuda_cost: --procs: not every process started\n");
        failed = 1;
    }
    sh->start_ns = now_ns(CLOCK_MONOTONIC) + 20000000u; /* all tick from here */
    close(go[1]); /* go */
    close(ready[0]);
    int workers_failed = 0;
    for (int i = publisher != PUB_NONE ? 1 : 0; i < n; i++) {
        int status = 0;
        if (waitpid(pids[i], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            workers_failed++;
    }
    if (stop[1] >= 0)
        close(stop[1]); /* the publisher stops */
    if (publisher != PUB_NONE && n > 0) {
        int status = 0;
        if (waitpid(pids[0], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
            failed = 1;
    }
    /* The mean of the processes that measured, and the largest process CPU. */
    result mean;
    memset(&mean, 0, sizeof mean);
    int ok = 0;
    double most = 0;
    for (int i = 0; i < o->procs; i++) {
        const result *r = &sh->res[i];
        if (!r->ok)
            continue;
        ok++;
        mean.ticks = r->ticks;
        mean.period_us += r->period_us;
        mean.call_us += r->call_us;
        mean.wait_us += r->wait_us;
        mean.polls += r->polls;
        mean.process_us += r->process_us;
        mean.other_us += r->other_us;
        most = r->process_us > most ? r->process_us : most;
        for (int t = 0; t < r->n; t++) {
            int j = 0;
            while (j < mean.n && strcmp(mean.name[j], r->name[t]) != 0)
                j++;
            if (j == mean.n && mean.n < MAX_NAMES)
                snprintf(mean.name[mean.n++], sizeof mean.name[0], "%s", r->name[t]);
            if (j < mean.n)
                mean.us[j] += r->us[t];
        }
    }
    if (ok) {
        mean.period_us /= ok;
        mean.call_us /= ok;
        mean.wait_us /= ok;
        mean.polls /= ok;
        mean.process_us /= ok;
        mean.other_us /= ok;
        for (int j = 0; j < mean.n; j++)
            mean.us[j] /= ok;
    }
    const result *pr = publisher != PUB_NONE ? &sh->res[o->procs] : NULL;
    if (o->json) {
        printf("{\"case\": \"%s\", \"sched\": \"%s\", \"procs\": %d, \"measured\": %d, "
               "\"publisher\": \"%s\", \"every\": %ld, \"stagger\": %d, \"period_us\": %.1f, "
               "\"call_us\": %.3f, \"wait_us\": %.3f, \"polls\": %.2f, \"process_us\": %.3f, "
               "\"process_us_max\": %.3f, \"other_threads_us\": %.3f, \"threads_us\": {",
               name, sched_name, o->procs, ok, pub_names[publisher], o->every, o->stagger,
               mean.period_us, mean.call_us, mean.wait_us, mean.polls, mean.process_us, most,
               mean.other_us);
        print_threads(&mean, 1);
        printf("}");
        if (pr && pr->ok) {
            printf(", \"publisher_us\": {\"call\": %.3f, \"wait\": %.3f, \"process\": %.3f, "
                   "\"other_threads\": %.3f, \"threads\": {",
                   pr->call_us, pr->wait_us, pr->process_us, pr->other_us);
            print_threads(pr, 1);
            printf("}}");
        }
        printf("}\n");
    } else {
        printf("%-18s %-8s %7.2f %7.2f %6.1f %8.2f %8.2f  (%d of %d processes, largest %.2f; "
               "publisher %s) ",
               name, sched_name, mean.call_us, mean.wait_us, mean.polls, mean.process_us,
               mean.other_us, ok, o->procs, most, pub_names[publisher]);
        print_threads(&mean, 0);
        printf("\n");
        if (pr && pr->ok) {
            printf("  publisher (%s)     %-8s %7.2f %7.2f %6.1f %8.2f %8.2f  ",
                   pub_names[publisher], sched_name, pr->call_us, pr->wait_us, pr->polls,
                   pr->process_us, pr->other_us);
            print_threads(pr, 0);
            printf("\n");
        }
    }
    fflush(stdout);
    if (workers_failed || ok < o->procs)
        fprintf(stderr, "cuda_cost: case %s (%s): %d of %d processes failed\n", name, sched_name,
                o->procs - ok, o->procs);
    return failed || workers_failed || ok < o->procs;
}

static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

int main(int argc, char **argv)
{
    opts o = {0.5, 520, 0, 1, 0, PUB_NONE, 3110400, 0};
    const char *scheds = "blocking,spin", *cases = NULL;
    int usage = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            o.seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--period-us") == 0 && i + 1 < argc)
            o.period_us = atol(argv[++i]);
        else if (strcmp(argv[i], "--every") == 0 && i + 1 < argc)
            o.every = atol(argv[++i]);
        else if (strcmp(argv[i], "--sched") == 0 && i + 1 < argc)
            scheds = argv[++i];
        else if (strcmp(argv[i], "--cases") == 0 && i + 1 < argc)
            cases = argv[++i];
        else if (strcmp(argv[i], "--procs") == 0 && i + 1 < argc)
            o.procs = atoi(argv[++i]);
        else if (strcmp(argv[i], "--copy-bytes") == 0 && i + 1 < argc)
            o.copy_bytes = (size_t)atol(argv[++i]);
        else if (strcmp(argv[i], "--stagger") == 0)
            o.stagger = 1;
        else if (strcmp(argv[i], "--publisher") == 0 && i + 1 < argc) {
            const char *v = argv[++i];
            o.publisher = -1;
            for (int k = 0; k < PUB_KINDS; k++)
                if (strcmp(v, pub_names[k]) == 0)
                    o.publisher = k;
            usage |= o.publisher < 0;
        } else if (strcmp(argv[i], "--json") == 0)
            o.json = 1;
        else
            usage = 1;
    }
    if (usage) {
        fprintf(stderr,
                "usage: %s [--seconds S] [--period-us US] [--every N] [--sched blocking,spin,"
                "yield,auto] [--cases NAME,...] [--json]\n"
                "          [--procs P [--publisher none|ipc|copy|copyblock|copyspin] "
                "[--copy-bytes B] [--stagger]]\n"
                "cases:\n",
                argv[0]);
        for (int k = 0; k < N_CASES; k++)
            fprintf(stderr, "  %-18s %s\n", case_names[k][0], case_names[k][1]);
        return 2;
    }
    if (o.seconds <= 0 || o.period_us < 10 || o.every < 1 || o.procs < 0 || o.procs > MAX_PROCS ||
        o.copy_bytes < 1) {
        fprintf(stderr, "cuda_cost: --seconds must be > 0, --period-us >= 10, --every >= 1, "
                        "--procs 0..64, --copy-bytes >= 1\n");
        return 2;
    }
    static const struct {
        const char *name;
        unsigned flag;
    } sched_flags[] = {{"blocking", CU_CTX_SCHED_BLOCKING_SYNC},
                       {"spin", CU_CTX_SCHED_SPIN},
                       {"yield", CU_CTX_SCHED_YIELD},
                       {"auto", CU_CTX_SCHED_AUTO}};
    /* The processes' figures come back through a shared page. */
    shared *sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED) {
        fprintf(stderr, "cuda_cost: mmap: %s\n", strerror(errno));
        return 2;
    }
    if (!o.json)
        printf("# us per tick, one every %ld us%s; call: in the calling thread's first call(s); "
               "wait: its polling until done;\n# polls per tick; process: all threads; other: the "
               "driver's threads, then by name%s\n%-18s %-8s %7s %7s %6s %8s %8s  threads\n",
               o.period_us, o.every > 1 ? " (the case's calls every Nth: --every)" : "",
               o.procs ? " (--procs: the mean of the processes)" : "", "case", "sched", "call",
               "wait", "polls", "process", "other");
    fflush(stdout);
    int failed = 0;
    for (unsigned si = 0; si < sizeof sched_flags / sizeof sched_flags[0]; si++) {
        if (!listed(scheds, sched_flags[si].name))
            continue;
        for (int k = 0; k < N_CASES; k++) {
            if (cases && !listed(cases, case_names[k][0]))
                continue;
            if (o.procs) {
                failed |= run_procs(k, sched_flags[si].flag, sched_flags[si].name, &o, sh);
                continue;
            }
            memset(&sh->res[0], 0, sizeof sh->res[0]);
            fflush(stdout);
            pid_t pid = fork();
            if (pid == 0)
                _exit(run_case(k, sched_flags[si].flag, &o, NULL, &sh->res[0]));
            int status = 0;
            if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
                WEXITSTATUS(status) != 0 || !sh->res[0].ok) {
                fprintf(stderr, "cuda_cost: case %s (%s) failed\n", case_names[k][0],
                        sched_flags[si].name);
                failed = 1;
            } else {
                print_result(case_names[k][0], sched_flags[si].name, &sh->res[0], o.json);
            }
        }
    }
    munmap(sh, sizeof *sh);
    return failed;
}
