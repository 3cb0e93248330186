/* omma bench: dispatches to the benchmark families. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/bench.h"
#include "cli/commands.h"

int cli_parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

int cli_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double cli_percentile(double *v, size_t n, double p)
{
    if (n == 0)
        return 0.0;
    qsort(v, n, sizeof *v, cli_cmp_double);
    return v[(size_t)(p * (double)(n - 1) + 0.5)];
}

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} families[] = {
    {"context", cli_bench_context, "cost of context scopes, of an extra context, of a sync"},
    {"engine", cli_bench_engine, "one model on the CPU or the GPU: latency, images/s per batch"},
    {"pipeline", cli_bench_pipeline, "the GPU face pipeline on N synthetic cameras"},
    {"runtime", cli_bench_runtime, "the runtime: how many cameras keep their frame rate"},
    {"bus", cli_bench_bus, "the frame bus: frames to K subscriber processes, vs pipes"},
    {"decode", cli_bench_decode, "compressed cameras to faces: how many the decoders keep"},
    {"lsl", cli_bench_lsl, "LSL outlets on loopback: samples/s, CPU per sample, latency"},
    {"sink", cli_bench_sink, "result sinks (NATS, MQTT, Kafka) on loopback: msgs/s, latency"},
};
enum { N_FAMILIES = sizeof families / sizeof families[0] };

static void usage(FILE *to)
{
    fprintf(to, "usage: omma bench FAMILY [OPTIONS]\n\nfamilies:\n");
    for (int i = 0; i < N_FAMILIES; i++)
        fprintf(to, "  %-9s %s\n", families[i].name, families[i].help);
    fprintf(to, "\n'omma bench FAMILY --help' tells more. All but engine --backend cpu, lsl\n"
                "and sink need a GPU (exit 3 without one).\n");
}

int cli_bench(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (argc < 2)
        return cli_usage_error("bench", "no benchmark given (context, engine, pipeline, "
                                        "runtime, bus, decode, lsl or sink)");
    const char *names[N_FAMILIES];
    for (int i = 0; i < N_FAMILIES; i++) {
        if (strcmp(argv[1], families[i].name) == 0)
            return families[i].run(argc - 1, argv + 1);
        names[i] = families[i].name;
    }
    return cli_unknown("bench", "benchmark", argv[1], names, N_FAMILIES);
}
