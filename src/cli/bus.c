#define _POSIX_C_SOURCE 200809L /* sigaction */
/* omma bus ls | watch NAME: the frame buses published on this machine, and
 * one bus's cameras with their rates and latencies as frames go by. Both
 * attach as watchers: frames are announced to them but never held and no
 * GPU memory is mapped, so they need no GPU and slow nobody down. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/bench.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "omma/bus.h"

static const cli_option ls_options[] = {
    {"--dir", "DIR",
     "the bus directory (default: $OMMA_BUS_DIR, else\n"
     "$XDG_RUNTIME_DIR/omma-bus, else /tmp/omma-bus-UID)"},
    {"--json", NULL, "one JSON line per bus"},
    {NULL, NULL, NULL},
};

static const cli_option watch_options[] = {
    {"--dir", "DIR", "the bus directory (as for omma bus ls)"},
    {"--duration", "S", "stop after S seconds (default: until Ctrl-C or the publisher stops)"},
    {"--every", "S", "seconds between reports (1)"},
    {"--json", NULL, "one JSON line per camera per report"},
    {NULL, NULL, NULL},
};

static void usage(FILE *to)
{
    fprintf(to, "usage: omma bus ls [--dir DIR] [--json]\n"
                "       omma bus watch NAME [--dir DIR] [--duration S] [--every S] [--json]\n"
                "  The frame bus: camera frames and faces an 'omma stream --publish NAME'\n"
                "  process shares in GPU memory with other processes (omma stream bus:NAME,\n"
                "  the C API in omma/bus.h).\n"
                "  ls: every bus with its publisher, cameras and subscribers.\n"
                "  watch: per camera, frames per second announced, the latency from capture\n"
                "  to announcement and to arrival here (p50/p99, ms), frame numbers skipped.\n");
    fprintf(to, "ls options:\n");
    cli_print_options(to, ls_options);
    fprintf(to, "watch options:\n");
    cli_print_options(to, watch_options);
}

static int bus_ls(int argc, char **argv)
{
    const char *dir = NULL;
    int json = 0;
    cli_args args;
    cli_args_init(&args, "bus ls", ls_options, argc, argv);
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
            return cli_usage_error("bus", "unexpected argument '%s'", v);
        if (opt == &ls_options[0])
            dir = v;
        else
            json = 1;
    }
    omma_bus_listing list[64];
    int n = 0;
    omma_status st = omma_bus_list(dir, list, 64, &n);
    if (st != OMMA_OK)
        return cli_fail(st, "listing the buses");
    if (!json && n == 0)
        printf("no bus is published\n");
    for (int i = 0; i < n && i < 64; i++) {
        omma_bus_options o;
        omma_bus_options_init(&o);
        o.dir = dir;
        o.watch = 1;
        omma_bus_subscriber *w = NULL;
        if (omma_bus_subscribe(NULL, list[i].name, &o, &w) != OMMA_OK)
            continue; /* gone since it was listed */
        if (json)
            printf("{\"bus\":\"%s\",\"publisher_pid\":%d,\"subscribers\":%d,\"cameras\":[",
                   list[i].name, list[i].publisher_pid, list[i].subscribers);
        else
            printf("%s  publisher pid %d, %d camera%s, %d subscriber%s\n", list[i].name,
                   list[i].publisher_pid, list[i].cameras, list[i].cameras == 1 ? "" : "s",
                   list[i].subscribers, list[i].subscribers == 1 ? "" : "s");
        for (int c = 0; c < omma_bus_camera_count(w); c++) {
            omma_bus_camera_info ci;
            if (omma_bus_camera_info_get(w, c, &ci) != OMMA_OK)
                continue;
            static const char *const fmts[] = {"RGB", "BGR", "RGBA", "BGRA", "NV12", "I420"};
            const char *f = ci.format < OMMA_PIXEL_FORMAT_COUNT ? fmts[ci.format] : "?";
            if (json)
                printf("%s{\"index\":%d,\"name\":\"%s\",\"width\":%d,\"height\":%d,\"format\":"
                       "\"%s\",\"slots\":%d,\"gpu\":%d,\"gpu_uuid\":\"%s\"}",
                       c ? "," : "", ci.index, ci.name, ci.width, ci.height, f, ci.slots, ci.gpu,
                       ci.gpu_uuid);
            else
                printf("  camera %d  %-24s %dx%d %s, %d slots, GPU %d (%s)\n", ci.index, ci.name,
                       ci.width, ci.height, f, ci.slots, ci.gpu, ci.gpu_uuid);
        }
        if (json)
            printf("]}\n");
        omma_bus_close(w);
    }
    return CLI_EXIT_OK;
}

static volatile sig_atomic_t interrupted;
static void on_signal(int sig)
{
    (void)sig;
    interrupted = 1;
}

#define LAT_MAX 4096

typedef struct cam_stats {
    uint64_t frames, skipped, last_seq;
    double announce_ms[LAT_MAX], arrive_ms[LAT_MAX];
    int n_lat;
} cam_stats;

static int bus_watch(int argc, char **argv)
{
    const char *dir = NULL, *name = NULL;
    double duration = 0, every = 1.0;
    int json = 0;
    cli_args args;
    cli_args_init(&args, "bus watch", watch_options, argc, argv);
    const cli_option *opt;
    const char *v;
    for (cli_arg_kind k; (k = cli_next(&args, &opt, &v)) != CLI_ARG_END;) {
        if (k == CLI_ARG_HELP) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        if (k == CLI_ARG_ERROR)
            return CLI_EXIT_USAGE;
        if (k == CLI_ARG_POSITIONAL) {
            if (name)
                return cli_usage_error("bus", "unexpected argument '%s'", v);
            name = v;
        } else if (opt == &watch_options[0]) {
            dir = v;
        } else if (opt == &watch_options[1]) {
            if (!cli_arg_double(opt->name, v, 0.001, 1e7, &duration))
                return cli_see_help("bus");
        } else if (opt == &watch_options[2]) {
            if (!cli_arg_double(opt->name, v, 0.1, 3600, &every))
                return cli_see_help("bus");
        } else {
            json = 1;
        }
    }
    if (!name)
        return cli_usage_error("bus", "omma bus watch needs the bus NAME");
    omma_bus_options o;
    omma_bus_options_init(&o);
    o.dir = dir;
    o.watch = 1;
    omma_bus_subscriber *w = NULL;
    omma_status st = omma_bus_subscribe(NULL, name, &o, &w);
    if (st != OMMA_OK)
        return cli_fail(st, "watching bus %s", name);
    int n = omma_bus_camera_count(w);
    cam_stats *cs = calloc((size_t)(n ? n : 1), sizeof *cs);
    int *local = calloc(1024, sizeof *local);
    omma_bus_camera_info *info = calloc((size_t)(n ? n : 1), sizeof *info);
    if (!cs || !local || !info) {
        free(cs), free(local), free(info);
        omma_bus_close(w);
        return cli_fail(OMMA_ERR_OUT_OF_MEMORY, "watching bus %s", name);
    }
    for (int i = 0; i < n; i++) {
        omma_bus_camera_info_get(w, i, &info[i]);
        local[info[i].index] = i;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    uint64_t t0 = core_now_ns(), last = t0;
    int rc = CLI_EXIT_OK;
    while (!interrupted) {
        uint64_t now = core_now_ns();
        if (duration > 0 && (double)(now - t0) / 1e9 >= duration)
            break;
        omma_bus_frame f;
        st = omma_bus_next(w, 100, &f);
        now = core_now_ns();
        if (st == OMMA_OK && f.camera >= 0 && f.camera < 1024) {
            cam_stats *c = &cs[local[f.camera]];
            c->frames++;
            if (c->last_seq && f.seq > c->last_seq + 1)
                c->skipped += f.seq - c->last_seq - 1;
            c->last_seq = f.seq;
            if (c->n_lat < LAT_MAX) {
                c->announce_ms[c->n_lat] = (double)(f.announce_ns - f.capture_ns) / 1e6;
                c->arrive_ms[c->n_lat++] = (double)(now - f.capture_ns) / 1e6;
            }
        } else if (st != OMMA_OK && st != OMMA_ERR_TIMEOUT) {
            rc = cli_fail(st, "watching bus %s", name);
            break;
        }
        if ((double)(now - last) / 1e9 >= every) {
            double s = (double)(now - last) / 1e9;
            if (!json)
                printf("%-4s %-24s %8s %14s %14s %8s\n", "cam", "name", "fps", "announce p50/99",
                       "arrive p50/99", "skipped");
            for (int i = 0; i < n; i++) {
                cam_stats *c = &cs[i];
                double a50 = cli_percentile(c->announce_ms, (size_t)c->n_lat, 0.5),
                       a99 = cli_percentile(c->announce_ms, (size_t)c->n_lat, 0.99);
                double r50 = cli_percentile(c->arrive_ms, (size_t)c->n_lat, 0.5),
                       r99 = cli_percentile(c->arrive_ms, (size_t)c->n_lat, 0.99);
                if (json)
                    printf("{\"bus\":\"%s\",\"camera\":%d,\"name\":\"%s\",\"fps\":%.2f,"
                           "\"announce_ms_p50\":%.3f,\"announce_ms_p99\":%.3f,"
                           "\"arrive_ms_p50\":%.3f,\"arrive_ms_p99\":%.3f,\"skipped\":%llu}\n",
                           name, info[i].index, info[i].name, (double)c->frames / s, a50, a99, r50,
                           r99, (unsigned long long)c->skipped);
                else
                    printf("%-4d %-24s %8.2f %6.2f/%-7.2f %6.2f/%-7.2f %8llu\n", info[i].index,
                           info[i].name, (double)c->frames / s, a50, a99, r50, r99,
                           (unsigned long long)c->skipped);
                c->frames = 0;
                c->n_lat = 0;
            }
            fflush(stdout);
            last = now;
        }
    }
    free(cs), free(local), free(info);
    omma_bus_close(w);
    return rc;
}

int cli_bus(int argc, char **argv)
{
    static const char *const subs[] = {"ls", "watch"};
    if (argc < 2)
        return cli_usage_error("bus", "omma bus needs ls or watch");
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(argv[1], "ls") == 0)
        return bus_ls(argc - 1, argv + 1);
    if (strcmp(argv[1], "watch") == 0)
        return bus_watch(argc - 1, argv + 1);
    return cli_unknown("bus", "bus command", argv[1], subs, 2);
}
