/* omma bench engine: latency and throughput of one model on one backend,
 * per batch size: warm-up, repeated timed runs, median and p99, images/s.
 * Inputs are fixed pseudo-random values in [-1, 1] (the timing of these
 * dense networks does not depend on the values).
 *
 * GPU: each timed run is one omma_exec_run between two CUDA events recorded
 * on the exec's stream (GPU time of the run, launch included, host
 * enqueueing of the first event excluded), then a wait; the first run at a
 * batch size (graph capture) is part of the warm-up. Also reported: the
 * launches per run (the CUDA graph's nodes with graphs on) and the exec's
 * device bytes (arena + I/O). */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/bench.h"
#include "cli/commands.h"
#include "cli/json.h"
#include "core/clock.h"
#include "omma/device.h"
#include "omma/engine.h"

#if OMMA_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define MAX_BATCHES 16

typedef struct result {
    int batch;
    int iters;
    double median_ms, p99_ms, min_ms;
    double images_per_s;
    int launches;
    size_t device_bytes, arena_bytes;
} result;

enum {
    OPT_BACKEND,
    OPT_MODEL,
    OPT_BATCH,
    OPT_ITERS,
    OPT_WARMUP,
    OPT_PRECISION,
    OPT_GRAPHS,
    OPT_DEVICE,
    OPT_OUTPUTS,
    OPT_JSON
};

static const cli_option options[] = {
    [OPT_BACKEND] = {"--backend", "cpu|gpu", "where the model runs (required)"},
    [OPT_MODEL] = {"--model", "FILE", "a .tflite model (required)"},
    [OPT_BATCH] = {"--batch", "LIST", "batch sizes, 1..4096 each (default 1,8)"},
    [OPT_ITERS] = {"--iters", "N", "timed runs per batch size (default 20)"},
    [OPT_WARMUP] = {"--warmup", "N", "untimed runs first (default 3)"},
    [OPT_PRECISION] = {"--precision", "fp32|fp16", "GPU engine's precision (default fp32)"},
    [OPT_GRAPHS] = {"--graphs", "on|off", "GPU: runs as CUDA graphs (default on)"},
    [OPT_DEVICE] = {"--device", "N", "the GPU (default 0)"},
    [OPT_OUTPUTS] = {"--outputs", "NAME,NAME",
                     "compute only these model outputs, pruning the rest (default all)"},
    [OPT_JSON] = {"--json", NULL, "the table on stderr, one JSON line on stdout"},
    {NULL, NULL, NULL},
};

static void usage(FILE *to)
{
    fprintf(to,
            "usage: omma bench engine --backend cpu|gpu --model FILE [--batch 1,8] [--iters N]\n"
            "                         [--warmup N] [--precision fp32|fp16] [--graphs on|off]\n"
            "                         [--device N] [--outputs NAME,NAME] [--json]\n"
            "  times omma_exec_run per batch size: median and p99 latency, images/s;\n"
            "  gpu: CUDA-event time per run, launches per run, exec device bytes.\n");
    cli_print_options(to, options);
}

static int parse_batches(const char *s, int *out, int *n)
{
    char buf[256];
    if (strlen(s) >= sizeof buf)
        return -1;
    strcpy(buf, s);
    *n = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (*n == MAX_BATCHES || cli_parse_int(tok, 1, 4096, &out[*n]) != 0)
            return -1;
        (*n)++;
    }
    return *n ? 0 : -1;
}

static void fill(float *p, size_t n, unsigned seed)
{
    unsigned s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = (float)(s >> 8) / (float)(1u << 23) - 1.0f;
    }
}

#if OMMA_HAVE_CUDA
static omma_status cuda_fail(cudaError_t rc, const char *what)
{
    if (rc == cudaSuccess)
        return OMMA_OK;
    fprintf(stderr, "omma: %s: %s\n", what, cudaGetErrorString(rc));
    return OMMA_ERR_CUDA;
}

/* GPU: fills the inputs through a host buffer, times with events. */
static omma_status gpu_fill(omma_device *dev, omma_exec *x, int i, size_t n, unsigned seed)
{
    float *d, *h = malloc(n * sizeof *h);
    omma_scope sc;
    omma_status st = h ? omma_exec_input(x, i, &d) : OMMA_ERR_OUT_OF_MEMORY;
    if (st == OMMA_OK && (st = omma_device_enter(dev, &sc)) == OMMA_OK) {
        fill(h, n, seed);
        st = cuda_fail(cudaMemcpyAsync(d, h, n * sizeof *h, cudaMemcpyHostToDevice,
                                       (cudaStream_t)omma_exec_stream(x)),
                       "cudaMemcpyAsync");
        omma_device_leave(&sc);
        if (st == OMMA_OK)
            st = omma_exec_wait(x);
    }
    free(h);
    return st;
}

static omma_status gpu_timed_run(omma_device *dev, omma_exec *x, int batch, void *ev[2], double *ms)
{
    omma_scope sc;
    cudaStream_t s = (cudaStream_t)omma_exec_stream(x);
    omma_status st = omma_device_enter(dev, &sc);
    if (st != OMMA_OK)
        return st;
    st = cuda_fail(cudaEventRecord((cudaEvent_t)ev[0], s), "cudaEventRecord");
    if (st == OMMA_OK)
        st = omma_exec_run(x, batch);
    if (st == OMMA_OK)
        st = cuda_fail(cudaEventRecord((cudaEvent_t)ev[1], s), "cudaEventRecord");
    if (st == OMMA_OK)
        st = omma_exec_wait(x);
    float f = 0;
    if (st == OMMA_OK)
        st = cuda_fail(cudaEventElapsedTime(&f, (cudaEvent_t)ev[0], (cudaEvent_t)ev[1]),
                       "cudaEventElapsedTime");
    *ms = f;
    omma_device_leave(&sc);
    return st;
}

/* The two timing events of a batch size (ev[1] may stay NULL on failure). */
static omma_status gpu_events_create(omma_device *dev, void *ev[2])
{
    omma_scope sc;
    omma_status st = omma_device_enter(dev, &sc);
    if (st != OMMA_OK)
        return st;
    st = cuda_fail(cudaEventCreate((cudaEvent_t *)&ev[0]), "cudaEventCreate");
    if (st == OMMA_OK)
        st = cuda_fail(cudaEventCreate((cudaEvent_t *)&ev[1]), "cudaEventCreate");
    omma_device_leave(&sc);
    return st;
}

static void gpu_events_destroy(omma_device *dev, void *ev[2])
{
    omma_scope sc;
    if (ev[0] && omma_device_enter(dev, &sc) == OMMA_OK) {
        cudaEventDestroy((cudaEvent_t)ev[0]);
        if (ev[1])
            cudaEventDestroy((cudaEvent_t)ev[1]);
        omma_device_leave(&sc);
    }
}
#else
/* Built without CUDA: omma_device_open fails, so dev is always NULL and the
 * GPU path is never taken. */
static omma_status gpu_fill(omma_device *dev, omma_exec *x, int i, size_t n, unsigned seed)
{
    (void)dev, (void)x, (void)i, (void)n, (void)seed;
    return OMMA_ERR_NO_DEVICE;
}

static omma_status gpu_timed_run(omma_device *dev, omma_exec *x, int batch, void *ev[2], double *ms)
{
    (void)dev, (void)x, (void)batch, (void)ev, (void)ms;
    return OMMA_ERR_NO_DEVICE;
}

static omma_status gpu_events_create(omma_device *dev, void *ev[2])
{
    (void)dev, (void)ev;
    return OMMA_ERR_NO_DEVICE;
}

static void gpu_events_destroy(omma_device *dev, void *ev[2])
{
    (void)dev, (void)ev;
}
#endif

static omma_status bench_batch(omma_device *dev, omma_engine *e, const omma_exec_options *xo,
                               int batch, int warmup, int iters, result *r)
{
    omma_exec *x = NULL;
    void *ev[2] = {NULL, NULL};
    double *ms = malloc((size_t)iters * sizeof *ms);
    omma_status st = ms ? omma_exec_create_with(e, batch, xo, &x) : OMMA_ERR_OUT_OF_MEMORY;
    for (int i = 0; st == OMMA_OK && i < omma_engine_input_count(e); i++) {
        omma_tensor_info info;
        float *p;
        if ((st = omma_engine_input_info(e, i, &info)) != OMMA_OK)
            break;
        if (dev)
            st = gpu_fill(dev, x, i, (size_t)batch * info.item_elems, (unsigned)i + 1);
        else if ((st = omma_exec_input(x, i, &p)) == OMMA_OK)
            fill(p, (size_t)batch * info.item_elems, (unsigned)i + 1);
    }
    if (st == OMMA_OK && dev)
        st = gpu_events_create(dev, ev);
    for (int i = 0; st == OMMA_OK && i < warmup; i++)
        st = omma_exec_run(x, batch);
    if (st == OMMA_OK)
        st = omma_exec_wait(x);
    for (int i = 0; st == OMMA_OK && i < iters; i++) {
        if (dev) {
            st = gpu_timed_run(dev, x, batch, ev, &ms[i]);
        } else {
            uint64_t t0 = core_now_ns();
            st = omma_exec_run(x, batch);
            ms[i] = (double)(core_now_ns() - t0) / 1e6;
        }
    }
    omma_exec_stats xs = {0};
    if (st == OMMA_OK)
        st = omma_exec_get_stats(x, &xs);
    if (st == OMMA_OK) {
        r->launches = xs.launches;
        r->device_bytes = xs.device_bytes;
        r->arena_bytes = xs.arena_bytes;
        qsort(ms, (size_t)iters, sizeof *ms, cli_cmp_double);
        r->batch = batch;
        r->iters = iters;
        r->min_ms = ms[0];
        r->median_ms = iters % 2 ? ms[iters / 2] : (ms[iters / 2 - 1] + ms[iters / 2]) / 2;
        int k = (99 * iters + 99) / 100 - 1; /* nearest rank: ceil(0.99 n) - 1 */
        r->p99_ms = ms[k < 0 ? 0 : k];
        r->images_per_s = batch / (r->median_ms / 1e3);
    }
    if (dev)
        gpu_events_destroy(dev, ev);
    omma_exec_destroy(x);
    free(ms);
    return st;
}

int cli_bench_engine(int argc, char **argv)
{
    const char *backend = NULL, *model = NULL, *precision = "fp32", *graphs = "on";
    int batches[MAX_BATCHES] = {1, 8}, n_batches = 2, iters = 20, warmup = 3, ordinal = 0;
    bool json = false;
    char names_buf[1024];
    const char *names[8];
    int n_names = 0;
    cli_args args;
    cli_args_init(&args, "bench engine", options, argc, argv);
    const cli_option *o;
    const char *v;
    for (cli_arg_kind k; (k = cli_next(&args, &o, &v)) != CLI_ARG_END;) {
        if (k == CLI_ARG_HELP) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        if (k == CLI_ARG_ERROR)
            return CLI_EXIT_USAGE;
        if (k == CLI_ARG_POSITIONAL)
            return cli_usage_error("bench engine", "unexpected argument '%s'", v);
        long n = 0;
        int bad = 0;
        switch (o - options) {
        case OPT_JSON:
            json = true;
            break;
        case OPT_BACKEND:
            backend = v;
            break;
        case OPT_MODEL:
            model = v;
            break;
        case OPT_BATCH:
            if (parse_batches(v, batches, &n_batches) != 0)
                return cli_usage_error("bench engine",
                                       "--batch %s: expected sizes 1..4096 like 1,8", v);
            break;
        case OPT_ITERS:
            bad = !cli_arg_long(o->name, v, 1, 1000000, &n);
            iters = (int)n;
            break;
        case OPT_PRECISION:
            precision = v;
            break;
        case OPT_GRAPHS:
            graphs = v;
            break;
        case OPT_DEVICE:
            bad = !cli_arg_long(o->name, v, 0, 1024, &n);
            ordinal = (int)n;
            break;
        case OPT_WARMUP:
            bad = !cli_arg_long(o->name, v, 0, 1000000, &n);
            warmup = (int)n;
            break;
        case OPT_OUTPUTS:
            bad = !cli_arg_names(o->name, v, names_buf, sizeof names_buf, names,
                                 (int)(sizeof names / sizeof names[0]), &n_names);
            break;
        }
        if (bad)
            return cli_see_help("bench engine");
    }
    if (!backend || !model)
        return cli_usage_error("bench engine", "--backend and --model are required");
    omma_engine_options opt;
    omma_engine_options_init(&opt);
    bool gpu = strcmp(backend, "gpu") == 0 || strcmp(backend, "cuda") == 0;
    if (!gpu && strcmp(backend, "cpu") != 0)
        return cli_usage_error("bench engine", "--backend %s: expected cpu or gpu", backend);
    if (strcmp(precision, "fp32") != 0 && strcmp(precision, "fp16") != 0)
        return cli_usage_error("bench engine", "--precision %s: expected fp32 or fp16", precision);
    if (strcmp(graphs, "on") != 0 && strcmp(graphs, "off") != 0)
        return cli_usage_error("bench engine", "--graphs %s: expected on or off", graphs);
    opt.precision = strcmp(precision, "fp16") == 0 ? OMMA_PRECISION_FP16 : OMMA_PRECISION_FP32;
    if (n_names > 0) {
        opt.outputs = names;
        opt.output_count = n_names;
    }
    omma_exec_options xo;
    omma_exec_options_init(&xo);
    xo.graphs = strcmp(graphs, "on") == 0;
    omma_device *dev = NULL;
    omma_status st;
    if (gpu) {
        opt.backend = OMMA_BACKEND_CUDA;
        if ((st = omma_device_open(ordinal, &dev)) != OMMA_OK)
            return cli_fail(st, "cannot open GPU %d", ordinal);
    }
    omma_engine *e = NULL;
    st = omma_engine_load(dev, model, &opt, &e);
    if (st != OMMA_OK) {
        omma_device_close(dev);
        return cli_fail(st, "cannot load %s", model);
    }

    result res[MAX_BATCHES];
    FILE *table = json ? stderr : stdout;
    fprintf(table, "model %s, backend %s", model, backend);
    if (gpu)
        fprintf(table, " (GPU %d, %s, graphs %s, CUDA-event time per run)", ordinal, precision,
                graphs);
    fprintf(table, ", %d warm-up + %d timed runs per batch\n", warmup, iters);
    omma_engine_stats es;
    if (n_names > 0 && omma_engine_get_stats(e, &es) == OMMA_OK) {
        fprintf(table, "outputs");
        for (int i = 0; i < n_names; i++)
            fprintf(table, "%s %s", i ? "," : "", names[i]);
        fprintf(table, " only: %d nodes (%d pruned), %zu weights\n", es.nodes, es.nodes_pruned,
                es.params);
    }
    fprintf(table, "%6s %12s %12s %12s %12s", "batch", "median ms", "p99 ms", "min ms", "images/s");
    if (gpu)
        fprintf(table, " %9s %14s", "launches", "device bytes");
    fprintf(table, "\n");
    for (int b = 0; b < n_batches; b++) {
        st = bench_batch(dev, e, &xo, batches[b], warmup, iters, &res[b]);
        if (st != OMMA_OK) {
            omma_engine_release(e);
            omma_device_close(dev);
            return cli_fail(st, "batch %d", batches[b]);
        }
        fprintf(table, "%6d %12.3f %12.3f %12.3f %12.1f", res[b].batch, res[b].median_ms,
                res[b].p99_ms, res[b].min_ms, res[b].images_per_s);
        if (gpu)
            fprintf(table, " %9d %14zu", res[b].launches, res[b].device_bytes);
        fprintf(table, "\n");
        fflush(table);
    }
    if (json) {
        printf("{\"bench\":\"engine\",\"backend\":");
        cli_json_string(backend);
        printf(",\"model\":");
        cli_json_string(model);
        if (gpu) {
            printf(",\"precision\":");
            cli_json_string(precision);
            printf(",\"graphs\":%s,\"device\":%d", xo.graphs ? "true" : "false", ordinal);
        }
        if (n_names > 0) {
            printf(",\"outputs\":[");
            for (int i = 0; i < n_names; i++) {
                printf("%s", i ? "," : "");
                cli_json_string(names[i]);
            }
            printf("]");
        }
        printf(",\"warmup\":%d,\"iters\":%d,\"results\":[", warmup, iters);
        for (int b = 0; b < n_batches; b++) {
            printf("%s{\"batch\":%d,\"median_ms\":%.4f,\"p99_ms\":%.4f,\"min_ms\":%.4f,"
                   "\"images_per_s\":%.2f",
                   b ? "," : "", res[b].batch, res[b].median_ms, res[b].p99_ms, res[b].min_ms,
                   res[b].images_per_s);
            if (gpu)
                printf(",\"launches\":%d,\"device_bytes\":%zu,\"arena_bytes\":%zu", res[b].launches,
                       res[b].device_bytes, res[b].arena_bytes);
            printf("}");
        }
        printf("]}\n");
    }
    omma_engine_release(e);
    omma_device_close(dev);
    return CLI_EXIT_OK;
}
