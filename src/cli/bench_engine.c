/* omma bench engine: latency and throughput of one model on one backend,
 * per batch size: warm-up, repeated timed runs, median and p99, images/s.
 * Inputs are fixed pseudo-random values in [-1, 1] (the timing of these
 * dense networks does not depend on the values). */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "omma/engine.h"

#define MAX_BATCHES 16

typedef struct result {
    int batch;
    int iters;
    double median_ms, p99_ms, min_ms;
    double images_per_s;
} result;

static int usage(void)
{
    fprintf(stderr,
            "usage: omma bench engine --backend cpu|gpu --model FILE [--batch 1,8] [--iters N]\n"
            "                         [--warmup N] [--json]\n"
            "  times omma_exec_run per batch size: median and p99 latency, images/s;\n"
            "  --json prints the table to stderr and one JSON line to stdout\n");
    return CLI_EXIT_USAGE;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static int parse_batches(const char *s, int *out, int *n)
{
    char buf[256];
    if (strlen(s) >= sizeof buf)
        return -1;
    strcpy(buf, s);
    *n = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (*n == MAX_BATCHES || parse_int(tok, 1, 4096, &out[*n]) != 0)
            return -1;
        (*n)++;
    }
    return *n ? 0 : -1;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void fill(float *p, size_t n, unsigned seed)
{
    unsigned s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = (float)(s >> 8) / (float)(1u << 23) - 1.0f;
    }
}

static omma_status bench_batch(omma_engine *e, int batch, int warmup, int iters, result *r)
{
    omma_exec *x = NULL;
    double *ms = malloc((size_t)iters * sizeof *ms);
    omma_status st = ms ? omma_exec_create(e, batch, &x) : OMMA_ERR_OUT_OF_MEMORY;
    for (int i = 0; st == OMMA_OK && i < omma_engine_input_count(e); i++) {
        omma_tensor_info info;
        float *p;
        if ((st = omma_engine_input_info(e, i, &info)) == OMMA_OK &&
            (st = omma_exec_input(x, i, &p)) == OMMA_OK)
            fill(p, (size_t)batch * info.item_elems, (unsigned)i + 1);
    }
    for (int i = 0; st == OMMA_OK && i < warmup; i++)
        st = omma_exec_run(x, batch);
    for (int i = 0; st == OMMA_OK && i < iters; i++) {
        uint64_t t0 = core_now_ns();
        st = omma_exec_run(x, batch);
        ms[i] = (double)(core_now_ns() - t0) / 1e6;
    }
    if (st == OMMA_OK) {
        qsort(ms, (size_t)iters, sizeof *ms, cmp_double);
        r->batch = batch;
        r->iters = iters;
        r->min_ms = ms[0];
        r->median_ms = iters % 2 ? ms[iters / 2] : (ms[iters / 2 - 1] + ms[iters / 2]) / 2;
        int k = (99 * iters + 99) / 100 - 1; /* nearest rank: ceil(0.99 n) - 1 */
        r->p99_ms = ms[k < 0 ? 0 : k];
        r->images_per_s = batch / (r->median_ms / 1e3);
    }
    omma_exec_destroy(x);
    free(ms);
    return st;
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

int cli_bench_engine(int argc, char **argv)
{
    const char *backend = NULL, *model = NULL;
    int batches[MAX_BATCHES] = {1, 8}, n_batches = 2, iters = 20, warmup = 3;
    bool json = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool has_value = i + 1 < argc;
        if (strcmp(a, "--json") == 0) {
            json = true;
        } else if (strcmp(a, "--backend") == 0 && has_value) {
            backend = argv[++i];
        } else if (strcmp(a, "--model") == 0 && has_value) {
            model = argv[++i];
        } else if (strcmp(a, "--batch") == 0 && has_value) {
            if (parse_batches(argv[++i], batches, &n_batches) != 0) {
                cli_fail(OMMA_OK, "--batch wants sizes 1..4096 like 1,8 (got '%s')", argv[i]);
                return CLI_EXIT_USAGE;
            }
        } else if (strcmp(a, "--iters") == 0 && has_value) {
            if (parse_int(argv[++i], 1, 1000000, &iters) != 0)
                return usage();
        } else if (strcmp(a, "--warmup") == 0 && has_value) {
            if (parse_int(argv[++i], 0, 1000000, &warmup) != 0)
                return usage();
        } else {
            return usage();
        }
    }
    if (!backend || !model)
        return usage();
    omma_engine_options opt;
    omma_engine_options_init(&opt);
    if (strcmp(backend, "gpu") == 0 || strcmp(backend, "cuda") == 0) {
        cli_fail(OMMA_OK, "--backend %s is not supported yet: the CUDA engine comes with the "
                          "next issue; use --backend cpu", backend);
        return CLI_EXIT_ERROR;
    }
    if (strcmp(backend, "cpu") != 0) {
        cli_fail(OMMA_OK, "unknown backend '%s' (cpu or gpu)", backend);
        return CLI_EXIT_USAGE;
    }
    omma_engine *e = NULL;
    omma_status st = omma_engine_load(NULL, model, &opt, &e);
    if (st != OMMA_OK)
        return cli_fail(st, "cannot load %s", model);

    result res[MAX_BATCHES];
    FILE *table = json ? stderr : stdout;
    fprintf(table, "model %s, backend %s, %d warm-up + %d timed runs per batch\n", model, backend,
            warmup, iters);
    fprintf(table, "%6s %12s %12s %12s %12s\n", "batch", "median ms", "p99 ms", "min ms",
            "images/s");
    for (int b = 0; b < n_batches; b++) {
        st = bench_batch(e, batches[b], warmup, iters, &res[b]);
        if (st != OMMA_OK) {
            omma_engine_release(e);
            return cli_fail(st, "batch %d", batches[b]);
        }
        fprintf(table, "%6d %12.3f %12.3f %12.3f %12.1f\n", res[b].batch, res[b].median_ms,
                res[b].p99_ms, res[b].min_ms, res[b].images_per_s);
        fflush(table);
    }
    if (json) {
        printf("{\"bench\":\"engine\",\"backend\":");
        json_string(backend);
        printf(",\"model\":");
        json_string(model);
        printf(",\"warmup\":%d,\"iters\":%d,\"results\":[", warmup, iters);
        for (int b = 0; b < n_batches; b++)
            printf("%s{\"batch\":%d,\"median_ms\":%.4f,\"p99_ms\":%.4f,\"min_ms\":%.4f,"
                   "\"images_per_s\":%.2f}",
                   b ? "," : "", res[b].batch, res[b].median_ms, res[b].p99_ms, res[b].min_ms,
                   res[b].images_per_s);
        printf("]}\n");
    }
    omma_engine_release(e);
    return CLI_EXIT_OK;
}
