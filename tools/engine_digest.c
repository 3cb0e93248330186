/* engine_digest: one line per model output, an FNV-1a hash of its bytes,
 * for checking that a change to the CUDA kernels leaves every result
 * bitwise as it was (compare the lines of two builds with cmp or diff).
 *
 * For each model (MODELDIR/NAME.tflite), each precision (fp32, fp16) and
 * each batch size, an exec of that max batch runs once on the same
 * inputs: pseudo-random floats in [-1, 1) from a fixed seed per input, so
 * two builds see identical bytes. A model given as NAME:OUT,OUT is loaded
 * with only those outputs (omma_engine_options.outputs), e.g. BlazePose's
 * landmark model as the pose pipeline loads it.
 *
 * Output lines: NAME[(pruned)] PRECISION bBATCH OUTPUT HASH (16 hex
 * digits); errors on stderr, exit status 1 if any model failed.
 *
 * Build (against a built libomma.so; needs no GPU to build):
 *   cc -O2 -std=gnu11 -Iinclude -I/usr/local/cuda/include tools/engine_digest.c \
 *      -Lbuild -lomma -L/usr/local/cuda/lib64/stubs -lcuda -Wl,-rpath,$PWD/build \
 *      -o build/engine_digest
 * Run: build/engine_digest [--batches 128,7] MODELDIR NAME[:OUT,...] ...
 * e.g. build/engine_digest models pose_detection pose_landmark_full \
 *          pose_landmark_full:Identity,Identity_1,Identity_4,Identity_3 */
#include <cuda.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "omma/device.h"
#include "omma/engine.h"

#define MAX_OUTPUTS 16
#define MAX_BATCHES 8

static uint64_t fnv1a(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

/* Fills input `index` (n floats) from its own fixed seed. */
static void fill_input(float *h, size_t n, int index)
{
    uint32_t s = 12345u + 77u * (uint32_t)index;
    for (size_t k = 0; k < n; k++) {
        s = s * 1664525u + 1013904223u;
        h[k] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
}

/* One exec of engine e at batch b: inputs filled, one run, a line per
 * output. Returns 0 on success. */
static int digest_batch(omma_engine *e, const char *label, const char *prec, int b)
{
    omma_exec *x = NULL;
    omma_status st = omma_exec_create(e, b, &x);
    if (st != OMMA_OK) {
        fprintf(stderr, "%s %s b%d: exec: %s\n", label, prec, b, omma_last_error());
        return 1;
    }
    int bad = 0;
    for (int i = 0; i < omma_engine_input_count(e) && !bad; i++) {
        omma_tensor_info ti;
        float *d = NULL;
        omma_engine_input_info(e, i, &ti);
        size_t n = ti.item_elems * (size_t)b;
        float *h = malloc(n * sizeof *h);
        bad = !h || omma_exec_input(x, i, &d) != OMMA_OK;
        if (!bad) {
            fill_input(h, n, i);
            bad = cuMemcpyHtoD((CUdeviceptr)(uintptr_t)d, h, n * sizeof *h) != CUDA_SUCCESS;
        }
        free(h);
    }
    if (!bad && (omma_exec_run(x, b) != OMMA_OK || omma_exec_wait(x) != OMMA_OK)) {
        fprintf(stderr, "%s %s b%d: run: %s\n", label, prec, b, omma_last_error());
        bad = 1;
    }
    for (int i = 0; i < omma_engine_output_count(e) && !bad; i++) {
        omma_tensor_info ti;
        float *d = NULL;
        omma_engine_output_info(e, i, &ti);
        size_t n = ti.item_elems * (size_t)b;
        float *h = malloc(n * sizeof *h);
        bad = !h || omma_exec_output(x, i, &d) != OMMA_OK ||
              cuMemcpyDtoH(h, (CUdeviceptr)(uintptr_t)d, n * sizeof *h) != CUDA_SUCCESS;
        if (!bad)
            printf("%s %s b%d %s %016llx\n", label, prec, b, ti.name,
                   (unsigned long long)fnv1a(h, n * sizeof *h));
        free(h);
    }
    if (bad)
        fprintf(stderr, "%s %s b%d: failed\n", label, prec, b);
    omma_exec_destroy(x);
    return bad;
}

/* One model argument NAME[:OUT,OUT...]: both precisions, every batch. */
static int digest_model(omma_device *dev, const char *dir, const char *arg, const int *batches,
                        int nb)
{
    char name[256], path[1024], label[300];
    const char *outs[MAX_OUTPUTS];
    int nout = 0;
    if (snprintf(name, sizeof name, "%s", arg) >= (int)sizeof name) {
        fprintf(stderr, "%s: name too long\n", arg);
        return 1;
    }
    char *list = strchr(name, ':');
    if (list) {
        *list++ = '\0';
        for (char *t = strtok(list, ","); t; t = strtok(NULL, ",")) {
            if (nout == MAX_OUTPUTS) {
                fprintf(stderr, "%s: more than %d outputs\n", arg, MAX_OUTPUTS);
                return 1;
            }
            outs[nout++] = t;
        }
    }
    snprintf(path, sizeof path, "%s/%s.tflite", dir, name);
    snprintf(label, sizeof label, "%s%s", name, nout ? "(pruned)" : "");
    int bad = 0;
    for (int p = 0; p < 2; p++) {
        omma_engine_options o;
        omma_engine_options_init(&o);
        o.backend = OMMA_BACKEND_CUDA;
        o.precision = p ? OMMA_PRECISION_FP16 : OMMA_PRECISION_FP32;
        o.outputs = nout ? outs : NULL;
        o.output_count = nout;
        omma_engine *e = NULL;
        if (omma_engine_load(dev, path, &o, &e) != OMMA_OK) {
            fprintf(stderr, "%s: %s\n", path, omma_last_error());
            bad = 1;
            continue;
        }
        for (int i = 0; i < nb; i++)
            bad |= digest_batch(e, label, p ? "fp16" : "fp32", batches[i]);
        omma_engine_release(e);
    }
    return bad;
}

static int parse_batches(const char *s, int *out)
{
    int n = 0;
    while (*s) {
        char *end = NULL;
        long v = strtol(s, &end, 10);
        if (end == s || v < 1 || v > 4096 || n == MAX_BATCHES || (*end && *end != ','))
            return 0;
        out[n++] = (int)v;
        s = *end ? end + 1 : end;
    }
    return n;
}

int main(int argc, char **argv)
{
    int batches[MAX_BATCHES] = {128, 7}, nb = 2, a = 1;
    if (a + 1 < argc && strcmp(argv[a], "--batches") == 0) {
        nb = parse_batches(argv[a + 1], batches);
        if (!nb) {
            fprintf(stderr, "--batches %s: expected up to %d sizes 1..4096 like 128,7\n",
                    argv[a + 1], MAX_BATCHES);
            return 2;
        }
        a += 2;
    }
    if (argc - a < 2) {
        fprintf(stderr, "usage: engine_digest [--batches 128,7] MODELDIR NAME[:OUT,...] ...\n");
        return 2;
    }
    omma_device *dev = NULL;
    if (omma_device_open(0, &dev) != OMMA_OK) {
        fprintf(stderr, "engine_digest: %s\n", omma_last_error());
        return 1;
    }
    omma_scope scope;
    if (omma_device_enter(dev, &scope) != OMMA_OK) {
        fprintf(stderr, "engine_digest: %s\n", omma_last_error());
        omma_device_close(dev);
        return 1;
    }
    int bad = 0;
    for (int m = a + 1; m < argc; m++)
        bad |= digest_model(dev, argv[a], argv[m], batches, nb);
    omma_device_leave(&scope);
    omma_device_close(dev);
    return bad;
}
