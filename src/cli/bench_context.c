/* omma bench context: what the one-context design costs and saves.
 *
 *   enter/leave    ns per omma_device_enter + omma_device_leave pair: with no
 *                  context current (push + pop), nested in an open scope (no
 *                  push), over an application's own context, and the bare
 *                  driver push + pop for reference
 *   extra context  device memory one more cuCtxCreate context takes, which
 *                  is what every "context per component" design pays
 *   sync           process CPU time and wake-up delay per stream
 *                  synchronization, per scheduling policy; the policy is
 *                  fixed when the primary context starts, so each policy is
 *                  measured in a child process (this binary re-executed with
 *                  --child-sync POLICY)
 *
 * Each figure is the median and p99 over repeated samples after a warm-up. */
#define _GNU_SOURCE
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/bench.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "core/error.h"
#include "gpu/busy.h"
#include "gpu/check.h"
#include "gpu/device_private.h"
#include "gpu/driver.h"
#include "gpu/stream_pool.h"
#include "omma/device.h"

extern char **environ;

typedef struct stat2 {
    double median, p99;
} stat2;

static stat2 summarize(double *v, size_t n)
{
    stat2 s = {0, 0};
    if (n == 0)
        return s;
    qsort(v, n, sizeof *v, cli_cmp_double);
    s.median = v[n / 2];
    size_t i99 = (n * 99) / 100;
    s.p99 = v[i99 < n ? i99 : n - 1];
    return s;
}

/* ---- sync cost, one policy per child process ---------------------------- */

enum { SYNC_IDLE_SAMPLES = 2000, SYNC_WAIT_SAMPLES = 200, SYNC_WARMUP = 20 };

typedef struct sync_result {
    int ok;
    stat2 idle_cpu_ns, idle_wall_ns; /* synchronizing an idle stream */
    stat2 w100_cpu_us, w100_over_us; /* waiting for a 100 us kernel */
    stat2 w1000_cpu_us, w1000_over_us; /* waiting for a 1 ms kernel */
} sync_result;

static const omma_schedule policies[] = {OMMA_SCHEDULE_SPIN, OMMA_SCHEDULE_YIELD,
                                         OMMA_SCHEDULE_BLOCKING, OMMA_SCHEDULE_AUTO};
enum { POLICY_COUNT = sizeof policies / sizeof policies[0] };

/* Waits for `wait_ns` kernels; fills CPU us and overshoot us (wall time from
 * launch to return, minus the kernel's time). */
static omma_status measure_wait(omma_device *dev, CUstream s, uint64_t wait_ns, stat2 *cpu_us,
                                stat2 *over_us)
{
    double cpu[SYNC_WAIT_SAMPLES], over[SYNC_WAIT_SAMPLES];
    for (int i = -SYNC_WARMUP; i < SYNC_WAIT_SAMPLES; i++) {
        uint64_t t0 = core_now_ns();
        OMMA_TRY(gpu_busy_launch(dev, s, wait_ns));
        uint64_t c0 = core_process_cpu_ns();
        OMMA_TRY(OMMA_CK(gpu_cu.cuStreamSynchronize(s)));
        uint64_t c1 = core_process_cpu_ns(), t1 = core_now_ns();
        if (i >= 0) {
            cpu[i] = (double)(c1 - c0) / 1e3;
            over[i] = ((double)(t1 - t0) - (double)wait_ns) / 1e3;
        }
    }
    *cpu_us = summarize(cpu, SYNC_WAIT_SAMPLES);
    *over_us = summarize(over, SYNC_WAIT_SAMPLES);
    return OMMA_OK;
}

static omma_status measure_sync(omma_device *dev, sync_result *r)
{
    CUstream s;
    OMMA_TRY(gpu_stream_acquire(dev, GPU_PRIORITY_NORMAL, &s));
    omma_scope scope;
    omma_status st = omma_device_enter(dev, &scope);
    if (st != OMMA_OK) {
        gpu_stream_release(dev, s);
        return st;
    }
    static double cpu[SYNC_IDLE_SAMPLES], wall[SYNC_IDLE_SAMPLES];
    for (int i = -SYNC_WARMUP; i < SYNC_IDLE_SAMPLES && st == OMMA_OK; i++) {
        uint64_t c0 = core_process_cpu_ns(), t0 = core_now_ns();
        st = OMMA_CK(gpu_cu.cuStreamSynchronize(s));
        uint64_t t1 = core_now_ns(), c1 = core_process_cpu_ns();
        if (i >= 0) {
            cpu[i] = (double)(c1 - c0);
            wall[i] = (double)(t1 - t0);
        }
    }
    if (st == OMMA_OK) {
        r->idle_cpu_ns = summarize(cpu, SYNC_IDLE_SAMPLES);
        r->idle_wall_ns = summarize(wall, SYNC_IDLE_SAMPLES);
        st = measure_wait(dev, s, 100000, &r->w100_cpu_us, &r->w100_over_us);
    }
    if (st == OMMA_OK)
        st = measure_wait(dev, s, 1000000, &r->w1000_cpu_us, &r->w1000_over_us);
    st = gpu_leave_keep(&scope, st);
    gpu_stream_release(dev, s);
    return st;
}

static const char sync_tag[] = "omma-sync-result";

static int child_sync(int ordinal, const char *policy_name)
{
    omma_schedule policy;
    omma_status st = omma_schedule_parse(policy_name, &policy);
    if (st != OMMA_OK)
        return cli_fail(st, "--child-sync");
    st = omma_device_set_schedule(ordinal, policy);
    if (st != OMMA_OK)
        return cli_fail(st, "setting scheduling policy %s", policy_name);
    omma_device *dev = NULL;
    st = omma_device_open(ordinal, &dev);
    sync_result r = {0};
    if (st == OMMA_OK)
        st = measure_sync(dev, &r);
    omma_device_close(dev);
    if (st != OMMA_OK)
        return cli_fail(st, "measuring synchronization with policy %s", policy_name);
    printf("%s %.1f %.1f %.1f %.1f %.2f %.2f %.2f %.2f %.2f %.2f %.2f %.2f\n", sync_tag,
           r.idle_cpu_ns.median, r.idle_cpu_ns.p99, r.idle_wall_ns.median, r.idle_wall_ns.p99,
           r.w100_cpu_us.median, r.w100_cpu_us.p99, r.w100_over_us.median, r.w100_over_us.p99,
           r.w1000_cpu_us.median, r.w1000_cpu_us.p99, r.w1000_over_us.median, r.w1000_over_us.p99);
    return CLI_EXIT_OK;
}

/* Runs this binary with --child-sync and parses its result line. */
static int run_child(int ordinal, omma_schedule policy, sync_result *r)
{
    memset(r, 0, sizeof *r);
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    char ord[16];
    snprintf(ord, sizeof ord, "%d", ordinal);
    char *args[] = {
        "omma",     "bench", "context", "--child-sync", (char *)omma_schedule_name(policy),
        "--device", ord,     NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&fa, fds[0]);
    pid_t pid;
    int rc = posix_spawn(&pid, "/proc/self/exe", &fa, NULL, args, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(fds[1]);
    if (rc != 0) {
        close(fds[0]);
        return -1;
    }
    FILE *in = fdopen(fds[0], "r");
    char line[512];
    while (in && fgets(line, sizeof line, in)) {
        if (strncmp(line, sync_tag, sizeof sync_tag - 1) != 0)
            continue;
        int got =
            sscanf(line + sizeof sync_tag - 1, "%lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf %lf",
                   &r->idle_cpu_ns.median, &r->idle_cpu_ns.p99, &r->idle_wall_ns.median,
                   &r->idle_wall_ns.p99, &r->w100_cpu_us.median, &r->w100_cpu_us.p99,
                   &r->w100_over_us.median, &r->w100_over_us.p99, &r->w1000_cpu_us.median,
                   &r->w1000_cpu_us.p99, &r->w1000_over_us.median, &r->w1000_over_us.p99);
        r->ok = got == 12;
    }
    if (in)
        fclose(in);
    else
        close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        r->ok = 0;
    return r->ok ? 0 : -1;
}

/* ---- enter/leave cost ---------------------------------------------------- */

enum { PAIR_BATCHES = 300, PAIRS_PER_BATCH = 1000, PAIR_WARMUP = 20 };

typedef enum pair_kind { PAIR_PUSH, PAIR_NESTED, PAIR_OVER_APP, PAIR_RAW, PAIR_KINDS } pair_kind;

static const char *const pair_names[PAIR_KINDS] = {"push", "nested", "over_app_context",
                                                   "raw_push_pop"};

static omma_status one_batch(omma_device *dev, pair_kind kind)
{
    CUcontext ctx = (CUcontext)omma_device_context(dev);
    for (int j = 0; j < PAIRS_PER_BATCH; j++) {
        if (kind == PAIR_RAW) {
            CUcontext popped;
            OMMA_TRY(OMMA_CK(gpu_cu.cuCtxPushCurrent(ctx)));
            OMMA_TRY(OMMA_CK(gpu_cu.cuCtxPopCurrent(&popped)));
        } else {
            omma_scope scope;
            OMMA_TRY(omma_device_enter(dev, &scope));
            OMMA_TRY(omma_device_leave(&scope));
        }
    }
    return OMMA_OK;
}

static omma_status time_pairs(omma_device *dev, pair_kind kind, stat2 *out)
{
    static double ns[PAIR_BATCHES];
    for (int b = -PAIR_WARMUP; b < PAIR_BATCHES; b++) {
        uint64_t t0 = core_now_ns();
        OMMA_TRY(one_batch(dev, kind));
        uint64_t t1 = core_now_ns();
        if (b >= 0)
            ns[b] = (double)(t1 - t0) / PAIRS_PER_BATCH;
    }
    *out = summarize(ns, PAIR_BATCHES);
    return OMMA_OK;
}

/* Times each kind of pair. PAIR_OVER_APP runs with a context of our own
 * current (the "application's"), made by the caller. */
static omma_status measure_pairs(omma_device *dev, CUcontext app_ctx, stat2 out[PAIR_KINDS])
{
    OMMA_TRY(time_pairs(dev, PAIR_PUSH, &out[PAIR_PUSH]));
    OMMA_TRY(time_pairs(dev, PAIR_RAW, &out[PAIR_RAW]));
    omma_scope outer;
    OMMA_TRY(omma_device_enter(dev, &outer));
    omma_status st = time_pairs(dev, PAIR_NESTED, &out[PAIR_NESTED]);
    OMMA_TRY(gpu_leave_keep(&outer, st));
    OMMA_TRY(OMMA_CK(gpu_cu.cuCtxPushCurrent(app_ctx)));
    st = time_pairs(dev, PAIR_OVER_APP, &out[PAIR_OVER_APP]);
    CUcontext popped;
    gpu_cu.cuCtxPopCurrent(&popped);
    return st;
}

/* ---- device memory of an extra context ------------------------------------ */

enum { CONTEXT_SAMPLES = 5 };

/* Free device memory with only the primary context, then with one more
 * context made with cuCtxCreate (used once, so it is fully set up). */
static omma_status measure_extra_context(omma_device *dev, stat2 *bytes, CUcontext *keep)
{
    double cost[CONTEXT_SAMPLES];
    CUdevice cu;
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    omma_status st = OMMA_CK(gpu_cu.cuCtxGetDevice(&cu));
    for (int i = 0; i < CONTEXT_SAMPLES && st == OMMA_OK; i++) {
        size_t free0 = 0, free1 = 0, total = 0;
        CUcontext extra = NULL;
        CUdeviceptr p = 0;
        st = OMMA_CK(gpu_cu.cuCtxSynchronize());
        if (st == OMMA_OK)
            st = OMMA_CK(gpu_cu.cuMemGetInfo(&free0, &total));
        CUctxCreateParams params;
        memset(&params, 0, sizeof params);
        if (st == OMMA_OK)
            st = OMMA_CK(gpu_cu.cuCtxCreate(&extra, &params, 0, cu)); /* pushes it */
        if (st != OMMA_OK)
            break;
        st = OMMA_CK(gpu_cu.cuMemAlloc(&p, 1 << 20));
        if (st == OMMA_OK)
            st = OMMA_CK(gpu_cu.cuMemFree(p));
        if (st == OMMA_OK)
            st = OMMA_CK(gpu_cu.cuMemGetInfo(&free1, &total));
        cost[i] = (double)free0 - (double)free1;
        if (st == OMMA_OK && i == CONTEXT_SAMPLES - 1 && keep) {
            CUcontext popped;
            gpu_cu.cuCtxPopCurrent(&popped); /* kept for the over-app timing */
            *keep = extra;
        } else {
            gpu_cu.cuCtxDestroy(extra); /* pops it too */
        }
    }
    if (st == OMMA_OK)
        *bytes = summarize(cost, CONTEXT_SAMPLES);
    return gpu_leave_keep(&scope, st);
}

/* ---- report --------------------------------------------------------------- */

enum { OPT_JSON, OPT_DEVICE, OPT_CHILD_SYNC };

static const cli_option options[] = {
    [OPT_JSON] = {"--json", NULL, "one JSON line on stdout instead of the table"},
    [OPT_DEVICE] = {"--device", "N", "the GPU to measure (default 0)"},
    [OPT_CHILD_SYNC] = {"--child-sync", "POLICY", NULL}, /* internal: one policy's child */
    {NULL, NULL, NULL},
};

static void usage(FILE *to)
{
    fprintf(to, "usage: omma bench context [--json] [--device N]\n"
                "  enter/leave cost (ns per pair), device memory of one extra context, and\n"
                "  CPU time per synchronization per scheduling policy (median and p99).\n");
    cli_print_options(to, options);
}

int cli_bench_context(int argc, char **argv)
{
    int json = 0, ordinal = 0;
    const char *child = NULL;
    cli_args args;
    cli_args_init(&args, "bench context", options, argc, argv);
    const cli_option *opt;
    const char *v;
    long device_arg;
    for (cli_arg_kind k; (k = cli_next(&args, &opt, &v)) != CLI_ARG_END;) {
        if (k == CLI_ARG_HELP) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        if (k == CLI_ARG_ERROR)
            return CLI_EXIT_USAGE;
        if (k == CLI_ARG_POSITIONAL)
            return cli_usage_error("bench context", "unexpected argument '%s'", v);
        switch (opt - options) {
        case OPT_JSON:
            json = 1;
            break;
        case OPT_DEVICE:
            if (!cli_arg_long(opt->name, v, 0, 1024, &device_arg))
                return cli_see_help("bench context");
            ordinal = (int)device_arg;
            break;
        case OPT_CHILD_SYNC:
            child = v;
            break;
        }
    }
    if (child)
        return child_sync(ordinal, child);

    int n = 0;
    omma_status st = omma_device_count(&n);
    if (st != OMMA_OK)
        return cli_fail(st, "bench context needs a GPU");

    /* Children first, so they do not share the GPU with this process's work. */
    sync_result sync[POLICY_COUNT];
    for (int i = 0; i < POLICY_COUNT; i++)
        if (run_child(ordinal, policies[i], &sync[i]) != 0)
            fprintf(stderr, "omma: warn: sync measurement with policy %s failed\n",
                    omma_schedule_name(policies[i]));

    omma_device *dev = NULL;
    st = omma_device_open(ordinal, &dev);
    if (st != OMMA_OK)
        return cli_fail(st, "opening GPU %d", ordinal);
    omma_device_info info;
    stat2 ctx_bytes = {0, 0}, pairs[PAIR_KINDS];
    CUcontext app_ctx = NULL;
    st = omma_device_get_info(dev, &info);
    if (st == OMMA_OK)
        st = measure_extra_context(dev, &ctx_bytes, &app_ctx);
    if (st == OMMA_OK)
        st = measure_pairs(dev, app_ctx, pairs);
    if (app_ctx)
        gpu_cu.cuCtxDestroy(app_ctx);
    omma_schedule def = OMMA_SCHEDULE_DEFAULT;
    if (st == OMMA_OK)
        st = omma_device_get_schedule(dev, &def);
    omma_device_close(dev);
    if (st != OMMA_OK)
        return cli_fail(st, "bench context");

    double mb = 1024.0 * 1024.0;
    if (json) {
        printf("{\"bench\":\"context\",\"device\":\"%s\",\"enter_leave_ns\":{", info.name);
        for (int k = 0; k < PAIR_KINDS; k++)
            printf("%s\"%s\":{\"median\":%.1f,\"p99\":%.1f}", k ? "," : "", pair_names[k],
                   pairs[k].median, pairs[k].p99);
        printf("},\"extra_context_mib\":{\"median\":%.1f,\"p99\":%.1f},\"sync\":{",
               ctx_bytes.median / mb, ctx_bytes.p99 / mb);
        int first = 1;
        for (int i = 0; i < POLICY_COUNT; i++) {
            const sync_result *r = &sync[i];
            if (!r->ok)
                continue;
            printf("%s\"%s\":{\"idle_cpu_ns\":{\"median\":%.0f,\"p99\":%.0f},"
                   "\"idle_wall_ns\":{\"median\":%.0f,\"p99\":%.0f},"
                   "\"wait100us_cpu_us\":{\"median\":%.2f,\"p99\":%.2f},"
                   "\"wait100us_overshoot_us\":{\"median\":%.2f,\"p99\":%.2f},"
                   "\"wait1ms_cpu_us\":{\"median\":%.2f,\"p99\":%.2f},"
                   "\"wait1ms_overshoot_us\":{\"median\":%.2f,\"p99\":%.2f}}",
                   first ? "" : ",", omma_schedule_name(policies[i]), r->idle_cpu_ns.median,
                   r->idle_cpu_ns.p99, r->idle_wall_ns.median, r->idle_wall_ns.p99,
                   r->w100_cpu_us.median, r->w100_cpu_us.p99, r->w100_over_us.median,
                   r->w100_over_us.p99, r->w1000_cpu_us.median, r->w1000_cpu_us.p99,
                   r->w1000_over_us.median, r->w1000_over_us.p99);
            first = 0;
        }
        printf("},\"default_schedule\":\"%s\"}\n", omma_schedule_name(def));
        return CLI_EXIT_OK;
    }
    printf("omma bench context on GPU %d (%s)\n\n", ordinal, info.name);
    printf("enter/leave pair                  median ns    p99 ns\n");
    for (int k = 0; k < PAIR_KINDS; k++)
        printf("  %-30s %9.1f %9.1f\n", pair_names[k], pairs[k].median, pairs[k].p99);
    printf("\nextra context (cuCtxCreate)     %.1f MiB of device memory (p99 %.1f)\n\n",
           ctx_bytes.median / mb, ctx_bytes.p99 / mb);
    printf("sync policy  idle sync cpu ns   wait 100us: cpu us  late us   wait 1ms: cpu us  "
           "late us   (median / p99)\n");
    for (int i = 0; i < POLICY_COUNT; i++) {
        const sync_result *r = &sync[i];
        if (!r->ok) {
            printf("  %-9s  failed\n", omma_schedule_name(policies[i]));
            continue;
        }
        printf("  %-9s  %6.0f / %-7.0f   %6.1f / %-6.1f %5.1f / %-5.1f  %7.1f / %-7.1f %5.1f / "
               "%-5.1f\n",
               omma_schedule_name(policies[i]), r->idle_cpu_ns.median, r->idle_cpu_ns.p99,
               r->w100_cpu_us.median, r->w100_cpu_us.p99, r->w100_over_us.median,
               r->w100_over_us.p99, r->w1000_cpu_us.median, r->w1000_cpu_us.p99,
               r->w1000_over_us.median, r->w1000_over_us.p99);
    }
    printf("\nomma's default scheduling policy: %s\n", omma_schedule_name(def));
    return CLI_EXIT_OK;
}
