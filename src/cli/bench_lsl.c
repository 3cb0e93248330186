#define _GNU_SOURCE /* clock_nanosleep */
/* omma bench lsl: omma's LSL outlets (src/lsl/) on loopback. This process
 * serves N streams of M float32 channels; a child process (fork) reads
 * every stream with omma's inlet, one thread per stream, and measures the
 * latency from each sample's timestamp (its "capture", taken just before
 * the push) to its arrival. Two modes, each with fresh streams:
 *   paced: every stream at RATE Hz for the duration, as a camera would:
 *          the CPU this process spends (pushes and the server thread) as a
 *          share of one core and per sample; latency p50/p99
 *   max:   pushes as fast as the readers take them (never more than half
 *          an outlet's ring ahead): samples/s and CPU per sample
 * A table on stderr, one JSON line per mode with --json. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
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
#include "lsl/lsl_clock.h"
#include "lsl/lsl_inlet.h"
#include "lsl/lsl_layout.h"
#include "lsl/lsl_outlet.h"
#include "lsl/lsl_resolver.h"

#define MAX_STREAMS 64
#define LAT_MAX 1000000

enum { OPT_STREAMS, OPT_CHANNELS, OPT_RATE, OPT_DURATION, OPT_JSON, OPT_COUNT };

static const cli_option options[] = {
    [OPT_STREAMS] = {"--streams", "N", "streams (participants or cameras), 1..64 (6)"},
    [OPT_CHANNELS] = {"--channels", "M",
                      "float32 channels per stream, 1..65536 (1417: a landmarks stream)"},
    [OPT_RATE] = {"--rate", "HZ", "paced mode: samples per second per stream (30)"},
    [OPT_DURATION] = {"--duration", "S", "each mode's measured window, seconds (10)"},
    [OPT_JSON] = {"--json", NULL, "one JSON line per mode on stdout"},
    [OPT_COUNT] = {NULL, NULL, NULL},
};

static void usage(FILE *to)
{
    fprintf(to, "usage: omma bench lsl [OPTIONS]\n"
                "  omma's Lab Streaming Layer outlets on loopback, read by a child process\n"
                "  with omma's inlet. paced: N streams at RATE Hz (CPU share of one core, CPU\n"
                "  per sample, latency from timestamp to inlet p50/p99); max: as fast as the\n"
                "  readers take (samples/s, CPU per sample). Needs no GPU.\n");
    cli_print_options(to, options);
}

typedef struct bench_cfg {
    int streams, channels, json;
    double rate, duration;
} bench_cfg;

/* --- the reading child --- */

typedef struct reader {
    lsl_info info;
    int channels;
    unsigned long long received, gaps;
    double *lat;
    size_t n_lat, cap_lat;
    int failed;
} reader;

static void *read_stream(void *arg)
{
    reader *r = arg;
    lsl_inlet *in = NULL;
    if (lsl_inlet_open(&r->info, 10, &in) != OMMA_OK) {
        fprintf(stderr, "omma bench lsl: reader: %s\n", omma_last_error());
        r->failed = 1;
        return NULL;
    }
    float *v = malloc(sizeof *v * (size_t)r->channels);
    double last = -1;
    while (v) {
        double ts;
        omma_status st = lsl_inlet_pull(in, v, &ts, 60);
        double now = lsl_clock_now();
        if (st != OMMA_OK)
            break; /* the outlet closed: the mode is over */
        if (last >= 0 && v[0] != (float)(last + 1))
            r->gaps++;
        last = v[0];
        r->received++;
        if (r->n_lat < r->cap_lat)
            r->lat[r->n_lat++] = (now - ts) * 1e3;
    }
    free(v);
    lsl_inlet_close(in);
    return NULL;
}

/* Reads streams PREFIX_0.. until they close; one result line to fd. */
static int child_main(const char *prefix, const bench_cfg *c, int fd)
{
    reader *r = calloc((size_t)c->streams, sizeof *r);
    double *lat = malloc(sizeof *lat * LAT_MAX);
    pthread_t th[MAX_STREAMS];
    if (!r || !lat)
        return 1;
    char q[300];
    snprintf(q, sizeof q, "session_id='default' and starts-with(name,'%s_')", prefix);
    lsl_resolve_options ro = {.query = q, .wait_s = 20, .minimum = c->streams};
    lsl_info *found = NULL;
    int n = 0;
    if (lsl_resolve(&ro, &found, &n) != OMMA_OK || n != c->streams) {
        fprintf(stderr, "omma bench lsl: found %d of %d streams\n", n, c->streams);
        return 1;
    }
    size_t per = LAT_MAX / (size_t)c->streams;
    for (int i = 0; i < n; i++) {
        lsl_info_copy(&r[i].info, &found[i]);
        r[i].channels = c->channels;
        r[i].lat = lat + per * (size_t)i;
        r[i].cap_lat = per;
        pthread_create(&th[i], NULL, read_stream, &r[i]);
    }
    lsl_resolve_free(found, n);
    unsigned long long received = 0, gaps = 0;
    size_t n_lat = 0;
    int failed = 0;
    for (int i = 0; i < c->streams; i++) {
        pthread_join(th[i], NULL);
        received += r[i].received;
        gaps += r[i].gaps;
        failed |= r[i].failed;
        memmove(lat + n_lat, r[i].lat, r[i].n_lat * sizeof *lat);
        n_lat += r[i].n_lat;
        lsl_info_clear(&r[i].info);
    }
    double p50 = cli_percentile(lat, n_lat, 0.5), p99 = cli_percentile(lat, n_lat, 0.99);
    double max = n_lat ? lat[n_lat - 1] : 0;
    char line[256];
    int len = snprintf(line, sizeof line, "%llu %llu %.6f %.6f %.6f %d\n", received, gaps, p50, p99,
                       max, failed);
    ssize_t w = write(fd, line, (size_t)len);
    free(lat);
    free(r);
    return w == len ? 0 : 1;
}

/* --- the serving side --- */

typedef struct mode_result {
    const char *mode;
    unsigned long long pushed, received, gaps, lost_in_outlet;
    double seconds, cpu_s, p50, p99, max;
} mode_result;

static int wait_readers(lsl_outlet **o, int n, double seconds)
{
    uint64_t end = core_now_ns() + (uint64_t)(seconds * 1e9);
    while (core_now_ns() < end) {
        int ok = 1;
        for (int i = 0; i < n; i++) {
            lsl_outlet_stats st;
            lsl_outlet_get_stats(o[i], &st);
            ok &= st.consumers == 1;
        }
        if (ok)
            return 1;
        usleep(2000);
    }
    return 0;
}

static void sleep_until(uint64_t ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000ull), (long)(ns % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

static int run_mode(const bench_cfg *c, int paced, mode_result *res)
{
    memset(res, 0, sizeof *res);
    res->mode = paced ? "paced" : "max";
    char prefix[64];
    snprintf(prefix, sizeof prefix, "omma_bench_%s_%d", res->mode, (int)getpid());
    int fds[2];
    if (pipe(fds) != 0)
        return cli_fail(OMMA_ERR_IO, "pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        _exit(child_main(prefix, c, fds[1]));
    }
    close(fds[1]);
    if (pid < 0) {
        close(fds[0]);
        return cli_fail(OMMA_ERR_IO, "fork: %s", strerror(errno));
    }
    lsl_server *s = NULL;
    lsl_outlet *o[MAX_STREAMS] = {0};
    int rc = CLI_EXIT_ERROR;
    float *v = malloc(sizeof *v * (size_t)c->channels);
    omma_status st = v ? lsl_server_create(NULL, &s) : OMMA_ERR_OUT_OF_MEMORY;
    for (int i = 0; i < c->streams && st == OMMA_OK; i++) {
        lsl_info spec = {0};
        snprintf(spec.name, sizeof spec.name, "%s_%d", prefix, i);
        snprintf(spec.type, sizeof spec.type, "Landmark");
        snprintf(spec.source_id, sizeof spec.source_id, "omma-bench:%d", i);
        spec.channel_count = c->channels;
        spec.format = LSL_FORMAT_FLOAT32;
        spec.nominal_srate = paced ? c->rate : 0;
        st = lsl_outlet_create(s, &spec, 0, &o[i]);
    }
    if (st != OMMA_OK) {
        cli_fail(st, "bench lsl");
        goto done;
    }
    if (!wait_readers(o, c->streams, 30)) {
        cli_error("bench lsl: the reader process did not connect");
        goto done;
    }
    for (int k = 0; k < c->channels; k++)
        v[k] = (float)k;
    uint64_t t0 = core_now_ns(), cpu0 = core_process_cpu_ns();
    uint64_t end = t0 + (uint64_t)(c->duration * 1e9);
    uint64_t period = paced ? (uint64_t)(1e9 / c->rate) : 0;
    uint64_t seq = 0;
    for (uint64_t tick = t0; core_now_ns() < end; tick += period, seq++) {
        if (paced)
            sleep_until(tick);
        v[0] = (float)seq;
        for (int i = 0; i < c->streams; i++) {
            if (!paced) {
                for (;;) { /* half the ring ahead at most */
                    lsl_outlet_stats os;
                    lsl_outlet_get_stats(o[i], &os);
                    if (os.pushed - os.sent < 512 || os.consumers == 0)
                        break;
                    usleep(100);
                }
            }
            lsl_outlet_push(o[i], v, lsl_clock_now());
        }
    }
    res->seconds = (double)(core_now_ns() - t0) / 1e9;
    res->cpu_s = (double)(core_process_cpu_ns() - cpu0) / 1e9;
    res->pushed = seq * (uint64_t)c->streams;
    /* Let the last samples leave before the streams close. */
    uint64_t drain_end = core_now_ns() + 5000000000ull;
    for (int i = 0; i < c->streams; i++) {
        lsl_outlet_stats os;
        do {
            lsl_outlet_get_stats(o[i], &os);
            if (os.sent < os.pushed)
                usleep(1000);
        } while (os.sent < os.pushed && core_now_ns() < drain_end);
        res->lost_in_outlet += os.lost;
    }
    usleep(300000);
    rc = CLI_EXIT_OK;
done:
    for (int i = 0; i < c->streams; i++)
        lsl_outlet_destroy(o[i]);
    lsl_server_destroy(s);
    free(v);
    char line[256] = "";
    ssize_t got = read(fds[0], line, sizeof line - 1);
    close(fds[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    int failed = 1;
    if (got > 0) {
        line[got] = '\0';
        if (sscanf(line, "%llu %llu %lf %lf %lf %d", &res->received, &res->gaps, &res->p50,
                   &res->p99, &res->max, &failed) != 6)
            failed = 1;
    }
    if (rc == CLI_EXIT_OK && (failed || !WIFEXITED(status) || WEXITSTATUS(status) != 0)) {
        cli_error("bench lsl: the reader process failed");
        rc = CLI_EXIT_ERROR;
    }
    return rc;
}

static void report(const bench_cfg *c, const mode_result *r)
{
    double per = r->pushed ? r->cpu_s * 1e6 / (double)r->pushed : 0;
    fprintf(stderr,
            "%-6s %3d x %5d ch: %10.0f samples/s, CPU %6.2f us/sample, %6.2f%% of a core; "
            "latency p50 %.3f ms p99 %.3f ms max %.3f ms; received %llu of %llu (%llu gaps, "
            "%llu lost in outlets)\n",
            r->mode, c->streams, c->channels, (double)r->pushed / r->seconds, per,
            100.0 * r->cpu_s / r->seconds, r->p50, r->p99, r->max, r->received, r->pushed, r->gaps,
            r->lost_in_outlet);
    if (c->json)
        printf("{\"bench\":\"lsl\",\"mode\":\"%s\",\"streams\":%d,\"channels\":%d,\"rate\":%g,"
               "\"seconds\":%.3f,\"samples\":%llu,\"received\":%llu,\"gaps\":%llu,"
               "\"samples_per_s\":%.1f,\"cpu_us_per_sample\":%.3f,\"cpu_core_pct\":%.3f,"
               "\"latency_ms_p50\":%.4f,\"latency_ms_p99\":%.4f,\"latency_ms_max\":%.4f}\n",
               r->mode, c->streams, c->channels, strcmp(r->mode, "paced") ? 0 : c->rate, r->seconds,
               r->pushed, r->received, r->gaps, (double)r->pushed / r->seconds, per,
               100.0 * r->cpu_s / r->seconds, r->p50, r->p99, r->max);
}

int cli_bench_lsl(int argc, char **argv)
{
    bench_cfg c = {6, LSL_LANDMARKS_CHANNELS, 0, 30.0, 10.0};
    cli_args args;
    cli_args_init(&args, "bench lsl", options, argc, argv);
    const cli_option *opt;
    const char *v;
    long n;
    for (cli_arg_kind k; (k = cli_next(&args, &opt, &v)) != CLI_ARG_END;) {
        if (k == CLI_ARG_HELP) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        if (k == CLI_ARG_ERROR)
            return CLI_EXIT_USAGE;
        if (k == CLI_ARG_POSITIONAL)
            return cli_usage_error("bench lsl", "unexpected argument '%s'", v);
        int id = (int)(opt - options), ok = 1;
        if (id == OPT_STREAMS && (ok = cli_arg_long(opt->name, v, 1, MAX_STREAMS, &n)))
            c.streams = (int)n;
        else if (id == OPT_CHANNELS && (ok = cli_arg_long(opt->name, v, 1, 65536, &n)))
            c.channels = (int)n;
        else if (id == OPT_RATE)
            ok = cli_arg_double(opt->name, v, 0.1, 100000, &c.rate);
        else if (id == OPT_DURATION)
            ok = cli_arg_double(opt->name, v, 0.1, 3600, &c.duration);
        else if (id == OPT_JSON)
            c.json = 1;
        if (!ok)
            return cli_see_help("bench lsl");
    }
    signal(SIGPIPE, SIG_IGN);
    mode_result r;
    int rc = run_mode(&c, 1, &r);
    if (rc != CLI_EXIT_OK)
        return rc;
    report(&c, &r);
    rc = run_mode(&c, 0, &r);
    if (rc != CLI_EXIT_OK)
        return rc;
    report(&c, &r);
    return CLI_EXIT_OK;
}
