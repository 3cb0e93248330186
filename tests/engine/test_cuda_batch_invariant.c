/* Batch invariance of the CUDA engine: within one exec, an item's outputs
 * are bitwise the same whatever the batch it runs in and its row there,
 * CUDA graphs on or off (cuda_ops.h, "Batch invariance": kernels are chosen
 * as at the exec's max_batch items). The runtime's batches depend on
 * timing, so a kernel chosen by the batch size whose sums run in another
 * order than the one it replaces would make a camera's results depend on
 * which batch it landed in.
 *
 * For each model in models/ (the face and pose models; absent ones are
 * skipped with a message), fp16 and fp32, for two pairs of execs (graphs
 * off and on) of one max_batch each: the largest batch run (131), and 4 (a
 * few cameras, whose kernels are those fast at a few items). In the
 * graphs-off exec the batch-1 outputs of a probe input X (node by node) are
 * the reference; then at batch sizes 1, 2, 3, 5, 8, 13, 32, 64, 128 and 131
 * (1 to 4 in the small execs), with graphs off and on, every row holds a
 * different pseudo-random input except rows 0, batch / 2 and batch - 1,
 * which hold X, and every output of those rows must equal the reference
 * (memcmp). The first difference found per model, precision, max_batch and
 * graph mode is printed (output, batch, row, index, values and their bits).
 * OMMA_TEST_QUICK=1 (and under compute-sanitizer): batches 1, 3 and 70
 * (max_batch 70) and 1 to 4 of three models.
 *
 * Exits 77 where there is no GPU. */
#define _POSIX_C_SOURCE 200809L

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda_runtime_api.h>

#include "omma/omma.h"
#include "testing.h"

#define MAX_BATCH 131
#define MAX_IO 8

static const int all_batches[] = {1, 2, 3, 5, 8, 13, 32, 64, 128, MAX_BATCH};
/* OMMA_TEST_QUICK=1 or under compute-sanitizer (OMMA_TEST_SANITIZER): a
 * few batches of three models (the face detector and mesh, pose lite). */
static const int quick_batches[] = {1, 3, 70};
static const int *batches = all_batches;
static int n_batches = (int)(sizeof all_batches / sizeof all_batches[0]);
/* The execs for a few cameras: max_batch SMALL_BATCH, every batch up to it. */
#define SMALL_BATCH 4
static const int small_batches[SMALL_BATCH] = {1, 2, 3, 4};
static bool quick;

static const char *const models[] = {
    "face_detection_short_range",
    "face_detection_full_range",
    "face_landmark",
    "face_landmark_with_attention",
    "pose_detection",
    "pose_landmark_lite",
    "pose_landmark_full",
    "pose_landmark_heavy",
};

static omma_device *dev;

static const char *prec_name(omma_precision p)
{
    return p == OMMA_PRECISION_FP16 ? "fp16" : "fp32";
}

/* A small deterministic generator (xorshift32), values in [-1, 1). */
static float next_value(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return (float)(*s >> 8) / (float)(1u << 23) - 1.0f;
}

/* The probe X: a smooth pattern with a little noise, in [-1, 1]. */
static void make_probe(float *x, size_t n, uint32_t seed)
{
    uint32_t s = seed | 1u;
    for (size_t i = 0; i < n; i++)
        x[i] = 0.5f * sinf((float)i * 0.0131f) + 0.35f * cosf((float)i * 0.00071f + 1.0f) +
               0.15f * next_value(&s);
}

static void make_random(float *x, size_t n, uint32_t seed)
{
    uint32_t s = seed | 1u;
    for (size_t i = 0; i < n; i++)
        x[i] = next_value(&s);
}

/* Host <-> exec copies on the exec's stream (the device's scope held).
 * `at` and n in floats. */
static omma_status copy(omma_exec *x, bool to_device, int i, size_t at, float *host, size_t n)
{
    float *d;
    omma_status st = to_device ? omma_exec_input(x, i, &d) : omma_exec_output(x, i, &d);
    if (st != OMMA_OK)
        return st;
    omma_scope sc;
    if ((st = omma_device_enter(dev, &sc)) != OMMA_OK)
        return st;
    cudaError_t rc = to_device
                         ? cudaMemcpyAsync(d + at, host, n * sizeof(float), cudaMemcpyHostToDevice,
                                           (cudaStream_t)omma_exec_stream(x))
                         : cudaMemcpyAsync(host, d + at, n * sizeof(float), cudaMemcpyDeviceToHost,
                                           (cudaStream_t)omma_exec_stream(x));
    omma_device_leave(&sc);
    return rc == cudaSuccess ? OMMA_OK : OMMA_ERR_CUDA;
}

/* One model's buffers: per input the probe and MAX_BATCH random items; per
 * output the reference and the probe rows of a run. */
typedef struct model_io {
    int n_in, n_out;
    size_t ni[MAX_IO], no[MAX_IO];
    float *probe[MAX_IO], *rnd[MAX_IO];
    float *ref[MAX_IO], *got[MAX_IO][3];
} model_io;

static void io_free(model_io *m)
{
    for (int i = 0; i < MAX_IO; i++) {
        free(m->probe[i]);
        free(m->rnd[i]);
        free(m->ref[i]);
        for (int r = 0; r < 3; r++)
            free(m->got[i][r]);
    }
    memset(m, 0, sizeof *m);
}

static bool io_make(omma_engine *e, model_io *m)
{
    memset(m, 0, sizeof *m);
    m->n_in = omma_engine_input_count(e);
    m->n_out = omma_engine_output_count(e);
    if (m->n_in < 1 || m->n_in > MAX_IO || m->n_out < 1 || m->n_out > MAX_IO)
        return false;
    for (int i = 0; i < m->n_in; i++) {
        omma_tensor_info t;
        if (omma_engine_input_info(e, i, &t) != OMMA_OK)
            return false;
        m->ni[i] = t.item_elems;
        m->probe[i] = malloc(t.item_elems * sizeof(float));
        m->rnd[i] = malloc(MAX_BATCH * t.item_elems * sizeof(float));
        if (!m->probe[i] || !m->rnd[i])
            return false;
        make_probe(m->probe[i], t.item_elems, 0x9e3779b9u + (uint32_t)i);
        make_random(m->rnd[i], MAX_BATCH * t.item_elems, 0x85ebca6bu + 7u * (uint32_t)i);
    }
    for (int o = 0; o < m->n_out; o++) {
        omma_tensor_info t;
        if (omma_engine_output_info(e, o, &t) != OMMA_OK)
            return false;
        m->no[o] = t.item_elems;
        m->ref[o] = malloc(t.item_elems * sizeof(float));
        for (int r = 0; r < 3; r++)
            m->got[o][r] = malloc(t.item_elems * sizeof(float));
        if (!m->ref[o] || !m->got[o][0] || !m->got[o][1] || !m->got[o][2])
            return false;
    }
    return true;
}

/* The rows holding the probe at a batch: 0, batch / 2, batch - 1 (some may
 * coincide). */
static void probe_rows(int batch, int rows[3])
{
    rows[0] = 0, rows[1] = batch / 2, rows[2] = batch - 1;
}

static bool is_probe_row(int batch, int r)
{
    int rows[3];
    probe_rows(batch, rows);
    return r == rows[0] || r == rows[1] || r == rows[2];
}

/* Runs x at `batch`: random items, the probe at the probe rows; copies the
 * probe rows' outputs into m->got[o][0..2]. */
static omma_status run_batch(omma_exec *x, model_io *m, int batch)
{
    omma_status st = OMMA_OK;
    for (int i = 0; st == OMMA_OK && i < m->n_in; i++) {
        st = copy(x, true, i, 0, m->rnd[i], (size_t)batch * m->ni[i]);
        for (int r = 0; st == OMMA_OK && r < batch; r++)
            if (is_probe_row(batch, r))
                st = copy(x, true, i, (size_t)r * m->ni[i], m->probe[i], m->ni[i]);
    }
    if (st == OMMA_OK)
        st = omma_exec_run(x, batch);
    int rows[3];
    probe_rows(batch, rows);
    for (int o = 0; st == OMMA_OK && o < m->n_out; o++)
        for (int k = 0; st == OMMA_OK && k < 3; k++)
            st = copy(x, false, o, (size_t)rows[k] * m->no[o], m->got[o][k], m->no[o]);
    if (st == OMMA_OK)
        st = omma_exec_wait(x);
    return st;
}

static uint32_t bits(float v)
{
    uint32_t u;
    memcpy(&u, &v, sizeof u);
    return u;
}

/* Compares the probe rows of a run with the reference; prints the first
 * difference if *printed is still false. Returns the differing outputs. */
static int compare(const char *model, omma_precision p, bool graphs, const model_io *m, int batch,
                   bool *printed)
{
    int rows[3], bad = 0;
    probe_rows(batch, rows);
    for (int o = 0; o < m->n_out; o++)
        for (int k = 0; k < 3; k++) {
            if (memcmp(m->got[o][k], m->ref[o], m->no[o] * sizeof(float)) == 0)
                continue;
            bad++;
            if (*printed)
                continue;
            *printed = true;
            size_t i = 0, n_diff = 0;
            while (bits(m->got[o][k][i]) == bits(m->ref[o][i]))
                i++;
            for (size_t j = 0; j < m->no[o]; j++)
                n_diff += bits(m->got[o][k][j]) != bits(m->ref[o][j]);
            fprintf(stderr,
                    "%s %s graphs %s: output %d, batch %d, row %d: index %zu is %.9g (0x%08x), "
                    "batch 1 gave %.9g (0x%08x); %zu of %zu values differ\n",
                    model, prec_name(p), graphs ? "on" : "off", o, batch, rows[k], i,
                    (double)m->got[o][k][i], bits(m->got[o][k][i]), (double)m->ref[o][i],
                    bits(m->ref[o][i]), n_diff, m->no[o]);
        }
    return bad;
}

/* Runs the batches bs[0 .. nb-1] in two execs of max_batch bs[nb - 1]
 * (graphs off, on), their probe rows against the probe at batch 1 in the
 * first. */
static void check_model(const char *name, const char *path, omma_precision p, const int *bs, int nb)
{
    const int max_batch = bs[nb - 1];
    omma_engine_options opt;
    omma_engine_options_init(&opt);
    opt.backend = OMMA_BACKEND_CUDA;
    opt.precision = p;
    omma_engine *e = NULL;
    REQUIRE_OK(omma_engine_load(dev, path, &opt, &e));
    model_io m;
    omma_exec *x[2] = {NULL, NULL}; /* graphs off, on */
    omma_status st = io_make(e, &m) ? OMMA_OK : OMMA_ERR_OUT_OF_MEMORY;
    for (int g = 0; st == OMMA_OK && g < 2; g++) {
        omma_exec_options o;
        omma_exec_options_init(&o);
        o.graphs = g;
        st = omma_exec_create_with(e, max_batch, &o, &x[g]);
    }
    /* The reference: the probe alone, node by node. */
    if (st == OMMA_OK)
        st = run_batch(x[0], &m, 1);
    for (int o = 0; st == OMMA_OK && o < m.n_out; o++)
        memcpy(m.ref[o], m.got[o][0], m.no[o] * sizeof(float));
    int bad[2] = {0, 0}, runs = 0;
    for (int g = 0; st == OMMA_OK && g < 2; g++) {
        bool printed = false;
        for (int b = 0; st == OMMA_OK && b < nb; b++) {
            st = run_batch(x[g], &m, bs[b]);
            if (st == OMMA_OK) {
                bad[g] += compare(name, p, g == 1, &m, bs[b], &printed);
                runs++;
            }
        }
    }
    CHECK(st == OMMA_OK);
    if (st != OMMA_OK)
        fprintf(stderr, "%s %s max_batch %d: %s: %s\n", name, prec_name(p), max_batch,
                omma_status_str(st), omma_last_error());
    CHECK(bad[0] == 0);
    CHECK(bad[1] == 0);
    fprintf(stderr,
            "%s %s: an exec of max_batch %d, %d runs at batch 1..%d, probe rows vs batch 1: "
            "%d differing outputs (graphs off), %d (graphs on), of %d outputs\n",
            name, prec_name(p), max_batch, runs, max_batch, bad[0], bad[1], m.n_out);
    omma_exec_destroy(x[0]);
    omma_exec_destroy(x[1]);
    io_free(&m);
    omma_engine_release(e);
}

static int models_checked;

static bool in_quick_set(const char *model)
{
    return strcmp(model, "face_detection_short_range") == 0 ||
           strcmp(model, "face_landmark") == 0 || strcmp(model, "pose_landmark_lite") == 0;
}

static void test_models_batch_invariant(void)
{
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s.tflite", OMMA_MODELS_DIR, models[i]);
        if (quick && !in_quick_set(models[i]))
            continue;
        if (access(path, R_OK) != 0) {
            fprintf(stderr, "%s: absent, skipped\n", path);
            continue;
        }
        for (int k = 0; k < 2; k++) {
            const omma_precision p = k == 0 ? OMMA_PRECISION_FP16 : OMMA_PRECISION_FP32;
            check_model(models[i], path, p, batches, n_batches);
            check_model(models[i], path, p, small_batches, SMALL_BATCH);
        }
        models_checked++;
    }
}

int main(void)
{
    int n = 0;
    if (omma_device_count(&n) != OMMA_OK || n < 1)
        SKIP_TEST("no GPU");
    const char *q = getenv("OMMA_TEST_QUICK");
    quick = (q && *q && strcmp(q, "0") != 0) || getenv("OMMA_TEST_SANITIZER") != NULL;
    if (quick) {
        batches = quick_batches;
        n_batches = (int)(sizeof quick_batches / sizeof quick_batches[0]);
    }
    if (omma_device_open(0, &dev) != OMMA_OK) {
        fprintf(stderr, "omma_device_open: %s\n", omma_last_error());
        return 1;
    }
    RUN(test_models_batch_invariant);
    omma_device_close(dev);
    if (models_checked == 0)
        SKIP_TEST("no model in " OMMA_MODELS_DIR " (scripts/fetch-models.sh)");
    return testing_finish();
}
