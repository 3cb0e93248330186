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
 * Build (no GPU needed; at run time libcuda.so.1 is the driver's):
 *   cc -O2 -std=gnu11 -I/usr/local/cuda/include tools/cuda_cost.c \
 *      -L/usr/local/cuda/lib64/stubs -lcuda -o build/cuda_cost
 * Run: build/cuda_cost [--seconds 0.5] [--period-us 520]
 *                      [--sched blocking,spin] [--cases a,b,...] [--json]
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
} opts;

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

/* Runs case k in this (fresh) process with scheduling flag sched. */
static int run_case(int k, unsigned sched, const char *sched_name, const opts *o)
{
    const char *name = case_names[k][0];
    int ipc_to[2] = {-1, -1}, ipc_from[2] = {-1, -1};
    pid_t owner = -1;
    if (strcmp(name, "ipc_wait") == 0) { /* before this process's cuInit */
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
    static tasks t0, t1;
    uint64_t start = 0, cpu0 = 0;
    uint64_t next = now_ns(CLOCK_MONOTONIC);
    CK(cuEventRecord(ev, s));
    CK(cuStreamSynchronize(s));
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
        if (strcmp(name, "record_query") == 0 || strcmp(name, "ipc_record_query") == 0) {
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
            if (write(ipc_to[1], &c, 1) < 0 && errno != EAGAIN)
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
    uint64_t wall = now_ns(CLOCK_MONOTONIC) - start;
    uint64_t cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID) - cpu0;
    read_tasks(&t1);
    double per = 1e3 * (double)ticks;
    int me = (int)getpid();
    double others = 0;
    char threads[2048] = "";
    size_t used = 0;
    for (int i = 0; i < t1.n; i++) {
        unsigned long long before = 0;
        for (int j = 0; j < t0.n; j++)
            if (t0.tid[j] == t1.tid[i])
                before = t0.ns[j];
        double us = (double)(t1.ns[i] - before) / per;
        if (t1.tid[i] == me)
            continue;
        others += us;
        if (us >= 0.005 && used < sizeof threads - 64)
            used += (size_t)snprintf(threads + used, sizeof threads - used, "%s\"%s\": %.2f",
                                     used ? ", " : "", t1.name[i], us);
    }
    if (o->json)
        printf("{\"case\": \"%s\", \"sched\": \"%s\", \"ticks\": %ld, \"period_us\": %.1f, "
               "\"call_us\": %.3f, \"wait_us\": %.3f, \"polls\": %.2f, \"process_us\": %.3f, "
               "\"other_threads_us\": %.3f, \"threads_us\": {%s}}\n",
               name, sched_name, ticks, (double)wall / 1e3 / (double)ticks, (double)in_call / per,
               (double)in_wait / per, (double)polls / (double)ticks, (double)cpu / per, others,
               threads);
    else
        printf("%-18s %-8s %7.2f %7.2f %6.1f %8.2f %8.2f  %s\n", name, sched_name,
               (double)in_call / per, (double)in_wait / per, (double)polls / (double)ticks,
               (double)cpu / per, others, threads);
    fflush(stdout);
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
    opts o = {0.5, 520, 0};
    const char *scheds = "blocking,spin", *cases = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            o.seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--period-us") == 0 && i + 1 < argc)
            o.period_us = atol(argv[++i]);
        else if (strcmp(argv[i], "--sched") == 0 && i + 1 < argc)
            scheds = argv[++i];
        else if (strcmp(argv[i], "--cases") == 0 && i + 1 < argc)
            cases = argv[++i];
        else if (strcmp(argv[i], "--json") == 0)
            o.json = 1;
        else {
            fprintf(stderr,
                    "usage: %s [--seconds S] [--period-us US] [--sched blocking,spin,yield,"
                    "auto] [--cases NAME,...] [--json]\ncases:\n",
                    argv[0]);
            for (int k = 0; k < N_CASES; k++)
                fprintf(stderr, "  %-18s %s\n", case_names[k][0], case_names[k][1]);
            return 2;
        }
    }
    if (o.seconds <= 0 || o.period_us < 10) {
        fprintf(stderr, "cuda_cost: --seconds must be > 0 and --period-us >= 10\n");
        return 2;
    }
    static const struct {
        const char *name;
        unsigned flag;
    } sched_flags[] = {{"blocking", CU_CTX_SCHED_BLOCKING_SYNC},
                       {"spin", CU_CTX_SCHED_SPIN},
                       {"yield", CU_CTX_SCHED_YIELD},
                       {"auto", CU_CTX_SCHED_AUTO}};
    if (!o.json)
        printf("# us per operation, one every %ld us; call: in the calling thread's first call(s); "
               "wait: its polling until done;\n# polls per op; process: all threads; other: the "
               "driver's threads, then by name\n%-18s %-8s %7s %7s %6s %8s %8s  threads\n",
               o.period_us, "case", "sched", "call", "wait", "polls", "process", "other");
    fflush(stdout);
    int failed = 0;
    for (unsigned si = 0; si < sizeof sched_flags / sizeof sched_flags[0]; si++) {
        if (!listed(scheds, sched_flags[si].name))
            continue;
        for (int k = 0; k < N_CASES; k++) {
            if (cases && !listed(cases, case_names[k][0]))
                continue;
            pid_t pid = fork();
            if (pid == 0)
                _exit(run_case(k, sched_flags[si].flag, sched_flags[si].name, &o));
            int status = 0;
            if (pid < 0 || waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) ||
                WEXITSTATUS(status) != 0) {
                fprintf(stderr, "cuda_cost: case %s (%s) failed\n", case_names[k][0],
                        sched_flags[si].name);
                failed = 1;
            }
        }
    }
    return failed;
}
