/* The CUDA backend of the engine through the public API, against the CPU
 * backend on the astronaut photo, and its execution contract:
 * - each whole model (BlazeFace short and full range, FaceMesh) on inputs
 *   made from testdata/astronaut.png, GPU vs CPU: same best anchor, box
 *   corners within 0.5% of the input size; FaceMesh landmarks within 0.5 px
 *   (fp32) / 1.5 px (fp16) at 192x192; fp16 also at batch CHAIN_BATCH in
 *   an exec of that max_batch, where the blocks on small images run as
 *   chains (cuda_op_step_pays; test_cuda_batch_invariant checks the batches
 *   of one exec agree);
 * - the per-device engine cache (same file and precision: same engine);
 * - CUDA graph replay bitwise equal to node-by-node launches at batch 1, 3,
 *   8 and CHAIN_BATCH;
 * - one shared engine, 16 threads with an exec each, 1000 runs each on
 *   different inputs (OMMA_TEST_RUNS=N to change), every output bitwise
 *   equal to the serial result;
 * - device memory after 1 and after 64 execs: the difference is the execs'
 *   arena + I/O only (printed per exec), and all of it comes back;
 * - two threads on one exec: one gets OMMA_ERR_BUSY, the exec still works;
 * - bad batch sizes; a device marked lost reports OMMA_ERR_DEVICE_LOST.
 *
 * OMMA_TEST_QUICK=1 (for compute-sanitizer): 4 threads x 4 runs, 8 execs.
 * Exits 77 where there is no GPU. */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime_api.h>

#include "gpu/device_private.h"
#include "omma/omma.h"
#include "support/blazeface_decode.h"
#include "support/face_inputs.h"
#include "testing.h"

static omma_device *dev;
static rgb_image photo;
static bool quick;

static const char *prec_name(omma_precision p)
{
    return p == OMMA_PRECISION_FP16 ? "fp16" : "fp32";
}

static omma_status load(const char *path, omma_backend b, omma_precision p, omma_engine **out)
{
    omma_engine_options opt;
    omma_engine_options_init(&opt);
    opt.backend = b;
    opt.precision = p;
    return omma_engine_load(b == OMMA_BACKEND_CUDA ? dev : NULL, path, &opt, out);
}

static int output_with_last_dim(omma_engine *e, int last)
{
    for (int o = 0; o < omma_engine_output_count(e); o++) {
        omma_tensor_info info;
        if (omma_engine_output_info(e, o, &info) == OMMA_OK && info.dims[info.rank - 1] == last)
            return o;
    }
    return -1;
}

static size_t in_elems(omma_engine *e, int i)
{
    omma_tensor_info info;
    return omma_engine_input_info(e, i, &info) == OMMA_OK ? info.item_elems : 0;
}

static size_t out_elems(omma_engine *e, int i)
{
    omma_tensor_info info;
    return omma_engine_output_info(e, i, &info) == OMMA_OK ? info.item_elems : 0;
}

/* Host <-> exec copies, ordered on the exec's stream, in the device's scope. */
static omma_status to_exec(omma_exec *x, int i, const float *host, size_t n)
{
    float *d;
    omma_scope s;
    omma_status st = omma_exec_input(x, i, &d);
    if (st != OMMA_OK || (st = omma_device_enter(dev, &s)) != OMMA_OK)
        return st;
    cudaError_t rc = cudaMemcpyAsync(d, host, n * sizeof(float), cudaMemcpyHostToDevice,
                                     (cudaStream_t)omma_exec_stream(x));
    omma_device_leave(&s);
    return rc == cudaSuccess ? OMMA_OK : OMMA_ERR_CUDA;
}

static omma_status from_exec(omma_exec *x, int i, float *host, size_t n)
{
    float *d;
    omma_scope s;
    omma_status st = omma_exec_output(x, i, &d);
    if (st != OMMA_OK || (st = omma_device_enter(dev, &s)) != OMMA_OK)
        return st;
    cudaError_t rc = cudaMemcpyAsync(host, d, n * sizeof(float), cudaMemcpyDeviceToHost,
                                     (cudaStream_t)omma_exec_stream(x));
    omma_device_leave(&s);
    if (rc != cudaSuccess)
        return OMMA_ERR_CUDA;
    return omma_exec_wait(x);
}

/* Input item k of a model: the photo (detectors: resized whole; FaceMesh:
 * the face crop), varied per k so that items differ. */
static void make_input(const char *model, int k, float *out)
{
    if (strcmp(model, FACE_MODEL_MESH) == 0 || strcmp(model, FACE_MODEL_MESH_478) == 0) {
        face_mesh_input(&photo, FACE_CROP_CX + 3.0f * (float)(k % 7), FACE_CROP_CY - 2.0f * (float)(k % 5),
                        FACE_CROP_SIDE + (float)(k % 11), out);
        return;
    }
    int size = strcmp(model, FACE_MODEL_FULL) == 0 ? 192 : 128;
    face_detector_input(&photo, size, out);
    size_t n = (size_t)size * size * 3;
    for (size_t i = 0; k && i < n; i++)
        out[i] = out[i] * (1.0f - 0.03f * (float)(k % 9)) + 0.01f * (float)(k % 13) * sinf((float)i * 0.37f);
}

/* A max_batch at which chains run on GPUs of up to 192 SMs. */
#define CHAIN_BATCH 96

/* Runs model on one item on the CPU or the GPU; fills the outputs. On the
 * GPU the item is run as the last of `batch` copies. */
typedef struct run_out {
    float *o[2];      /* the two outputs of interest */
    size_t n[2];
} run_out;

static omma_status run_one(omma_engine *e, const float *in, int oa, int ob, int batch, run_out *r)
{
    omma_exec *x = NULL;
    omma_status st = omma_exec_create(e, batch, &x);
    size_t ni = in_elems(e, 0);
    float *all = NULL;
    int idx[2] = {oa, ob};
    for (int j = 0; j < 2; j++) {
        r->n[j] = out_elems(e, idx[j]);
        r->o[j] = malloc(r->n[j] * sizeof(float));
        if (!r->o[j] && st == OMMA_OK)
            st = OMMA_ERR_OUT_OF_MEMORY;
    }
    bool gpu = omma_engine_backend(e) == OMMA_BACKEND_CUDA;
    if (st == OMMA_OK) {
        if (gpu) {
            size_t most = ni > out_elems(e, oa) ? ni : out_elems(e, oa);
            most = most > out_elems(e, ob) ? most : out_elems(e, ob);
            all = malloc((size_t)batch * most * sizeof *all);
            for (int k = 0; all && k < batch; k++)
                memcpy(all + (size_t)k * ni, in, ni * sizeof *all);
            st = all ? to_exec(x, 0, all, (size_t)batch * ni) : OMMA_ERR_OUT_OF_MEMORY;
        } else {
            float *p;
            if ((st = omma_exec_input(x, 0, &p)) == OMMA_OK)
                memcpy(p, in, in_elems(e, 0) * sizeof(float));
        }
    }
    if (st == OMMA_OK)
        st = omma_exec_run(x, batch);
    for (int j = 0; st == OMMA_OK && j < 2; j++) {
        if (gpu) {
            st = from_exec(x, idx[j], all, (size_t)batch * r->n[j]);
            if (st == OMMA_OK)
                memcpy(r->o[j], all + (size_t)(batch - 1) * r->n[j], r->n[j] * sizeof *all);
        } else {
            float *p;
            if ((st = omma_exec_output(x, idx[j], &p)) == OMMA_OK)
                memcpy(r->o[j], p, r->n[j] * sizeof(float));
        }
    }
    free(all);
    omma_exec_destroy(x);
    return st;
}

static void run_out_free(run_out *r)
{
    free(r->o[0]);
    free(r->o[1]);
}

static void compare_detector(const char *model, bf_kind kind, omma_precision prec, int batch)
{
    omma_engine *ec = NULL, *eg = NULL;
    run_out c = {0}, g = {0};
    int size = bf_input_size(kind), n = bf_anchor_count(kind);
    float *in = malloc((size_t)size * size * 3 * sizeof *in);
    float *anchors = malloc((size_t)n * 2 * sizeof *anchors);
    REQUIRE(in && anchors);
    make_input(model, 0, in);
    bf_anchors(kind, anchors);
    omma_status st = load(model, OMMA_BACKEND_CPU, OMMA_PRECISION_FP32, &ec);
    if (st == OMMA_OK)
        st = load(model, OMMA_BACKEND_CUDA, prec, &eg);
    int oreg = ec ? output_with_last_dim(ec, 16) : -1, ocls = ec ? output_with_last_dim(ec, 1) : -1;
    if (st == OMMA_OK && (oreg < 0 || ocls < 0))
        st = OMMA_ERR_INTERNAL;
    if (st == OMMA_OK)
        st = run_one(ec, in, oreg, ocls, 1, &c);
    if (st == OMMA_OK)
        st = run_one(eg, in, oreg, ocls, batch, &g);
    CHECK(st == OMMA_OK);
    if (st != OMMA_OK)
        fprintf(stderr, "%s %s: %s: %s\n", model, prec_name(prec), omma_status_str(st),
                omma_last_error());
    if (st == OMMA_OK) {
        int bc = 0, bg = 0;
        for (int a = 0; a < n; a++) {
            bc = c.o[1][a] > c.o[1][bc] ? a : bc;
            bg = g.o[1][a] > g.o[1][bg] ? a : bg;
        }
        bf_detection dc, dg;
        bf_decode(kind, c.o[0] + 16 * bc, anchors + 2 * bc, c.o[1][bc], bc, &dc);
        bf_decode(kind, g.o[0] + 16 * bg, anchors + 2 * bg, g.o[1][bg], bg, &dg);
        float dmax = fmaxf(fmaxf(fabsf(dc.box.xmin - dg.box.xmin), fabsf(dc.box.xmax - dg.box.xmax)),
                           fmaxf(fabsf(dc.box.ymin - dg.box.ymin), fabsf(dc.box.ymax - dg.box.ymax)));
        fprintf(stderr,
                "%s %s, gpu batch %d: best anchor cpu %d (score %.4f) gpu %d (score %.4f); box "
                "corners differ by at most %.4f%% of the input (%.3f px at %d)\n",
                model, prec_name(prec), batch, bc, dc.score, bg, dg.score, dmax * 100, dmax * size,
                size);
        CHECK(bc == bg);
        CHECK(dg.score > 0.5f);
        CHECK(dmax <= 0.005f);
    }
    run_out_free(&c);
    run_out_free(&g);
    omma_engine_release(ec);
    omma_engine_release(eg);
    free(in);
    free(anchors);
}

/* The largest difference between two outputs of n values. */
static float worst_diff(const float *a, const float *b, size_t n)
{
    float worst = 0;
    for (size_t i = 0; i < n; i++) {
        float d = fabsf(a[i] - b[i]);
        if (!(d <= worst))
            worst = d;
    }
    return worst;
}

/* FaceMesh (468) or the attention mesh (478: its lips and iris outputs,
 * computed through MUL, STRIDED_SLICE and MediaPipe's custom ops, are
 * compared too) on the astronaut's crop, GPU against the CPU. */
static void compare_mesh_model(const char *model, omma_precision prec, float tol_px, int batch)
{
    omma_engine *ec = NULL, *eg = NULL;
    run_out c = {0}, g = {0}, c2 = {0}, g2 = {0};
    float *in = malloc(192 * 192 * 3 * sizeof *in);
    REQUIRE(in);
    make_input(model, 0, in);
    omma_status st = load(model, OMMA_BACKEND_CPU, OMMA_PRECISION_FP32, &ec);
    if (st == OMMA_OK)
        st = load(model, OMMA_BACKEND_CUDA, prec, &eg);
    int olm = ec ? output_with_last_dim(ec, 1404) : -1, oflag = ec ? output_with_last_dim(ec, 1) : -1;
    if (st == OMMA_OK && (olm < 0 || oflag < 0))
        st = OMMA_ERR_INTERNAL;
    if (st == OMMA_OK)
        st = run_one(ec, in, olm, oflag, 1, &c);
    if (st == OMMA_OK)
        st = run_one(eg, in, olm, oflag, batch, &g);
    CHECK(st == OMMA_OK);
    if (st != OMMA_OK)
        fprintf(stderr, "mesh %s: %s: %s\n", prec_name(prec), omma_status_str(st),
                omma_last_error());
    if (st == OMMA_OK) {
        float worst = 0;
        int at = 0;
        for (int i = 0; i < 468; i++) {
            float d = fmaxf(fabsf(c.o[0][3 * i] - g.o[0][3 * i]),
                            fabsf(c.o[0][3 * i + 1] - g.o[0][3 * i + 1]));
            if (!(d <= worst)) {
                worst = d;
                at = i;
            }
        }
        fprintf(stderr,
                "face mesh %s, gpu batch %d: landmarks within %.4f px of the CPU (worst "
                "#%d); presence logit cpu %.4f gpu %.4f\n",
                prec_name(prec), batch, worst, at, c.o[1][0], g.o[1][0]);
        CHECK(worst <= tol_px);
        CHECK(fabsf(c.o[1][0] - g.o[1][0]) <= 0.05f * fmaxf(1.0f, fabsf(c.o[1][0])));
        int olips = output_with_last_dim(ec, 160), oiris = output_with_last_dim(ec, 10);
        if (olips >= 0 && oiris >= 0) {
            st = run_one(ec, in, olips, oiris, 1, &c2);
            if (st == OMMA_OK)
                st = run_one(eg, in, olips, oiris, batch, &g2);
            CHECK(st == OMMA_OK);
            if (st == OMMA_OK) {
                float wl = worst_diff(c2.o[0], g2.o[0], 160), wi = worst_diff(c2.o[1], g2.o[1], 10);
                fprintf(stderr, "  attention mesh: lips within %.4f px, iris within %.4f px\n", wl,
                        wi);
                CHECK(wl <= tol_px && wi <= tol_px);
            }
        }
    }
    run_out_free(&c);
    run_out_free(&g);
    run_out_free(&c2);
    run_out_free(&g2);
    omma_engine_release(ec);
    omma_engine_release(eg);
    free(in);
}

static void compare_mesh(omma_precision prec, float tol_px, int batch)
{
    compare_mesh_model(FACE_MODEL_MESH, prec, tol_px, batch);
}

static void test_detectors_vs_cpu(void)
{
    compare_detector(FACE_MODEL_SHORT, BF_SHORT_RANGE, OMMA_PRECISION_FP32, 1);
    compare_detector(FACE_MODEL_SHORT, BF_SHORT_RANGE, OMMA_PRECISION_FP16, 1);
    compare_detector(FACE_MODEL_SHORT, BF_SHORT_RANGE, OMMA_PRECISION_FP16, CHAIN_BATCH);
    compare_detector(FACE_MODEL_FULL, BF_FULL_RANGE, OMMA_PRECISION_FP32, 1);
    compare_detector(FACE_MODEL_FULL, BF_FULL_RANGE, OMMA_PRECISION_FP16, 1);
    compare_detector(FACE_MODEL_FULL, BF_FULL_RANGE, OMMA_PRECISION_FP16, CHAIN_BATCH);
}

static void test_face_mesh_vs_cpu(void)
{
    compare_mesh(OMMA_PRECISION_FP32, 0.5f, 1);
    compare_mesh(OMMA_PRECISION_FP16, 1.5f, 1);
    compare_mesh(OMMA_PRECISION_FP16, 1.5f, CHAIN_BATCH);
    compare_mesh_model(FACE_MODEL_MESH_478, OMMA_PRECISION_FP32, 0.5f, 1);
    compare_mesh_model(FACE_MODEL_MESH_478, OMMA_PRECISION_FP16, 1.5f, 1);
    compare_mesh_model(FACE_MODEL_MESH_478, OMMA_PRECISION_FP16, 1.5f, CHAIN_BATCH);
}

static void test_engine_cache(void)
{
    omma_engine *a = NULL, *b = NULL, *c = NULL;
    REQUIRE_OK(load(FACE_MODEL_SHORT, OMMA_BACKEND_CUDA, OMMA_PRECISION_FP16, &a));
    CHECK(omma_device_check_health(dev) == OMMA_OK);
    omma_memory_stats m0, m1;
    omma_device_info i0, i1;
    CHECK(omma_device_get_memory_stats(dev, &m0) == OMMA_OK);
    CHECK(omma_device_get_info(dev, &i0) == OMMA_OK);
    omma_status st = load(FACE_MODEL_SHORT, OMMA_BACKEND_CUDA, OMMA_PRECISION_FP16, &b);
    CHECK(st == OMMA_OK);
    CHECK(b == a); /* the same engine, retained */
    CHECK(omma_device_get_memory_stats(dev, &m1) == OMMA_OK);
    CHECK(omma_device_get_info(dev, &i1) == OMMA_OK);
    CHECK(m1.pool_used == m0.pool_used);
    /* A second copy of the weights would take at least one 2 MiB page. */
    CHECK((long long)i0.memory_free - (long long)i1.memory_free < (1 << 20));
    fprintf(stderr, "second load of the same model: same engine %s, device free memory "
            "change %lld bytes\n", a == b ? "yes" : "no",
            (long long)i1.memory_free - (long long)i0.memory_free);
    CHECK(load(FACE_MODEL_SHORT, OMMA_BACKEND_CUDA, OMMA_PRECISION_FP32, &c) == OMMA_OK);
    CHECK(c && c != a); /* another precision is another engine */
    CHECK(omma_engine_backend(a) == OMMA_BACKEND_CUDA);
    omma_engine_release(c);
    omma_engine_release(b);
    omma_engine_release(a);
    /* Released: the next load makes a fresh one. */
    CHECK(load(FACE_MODEL_SHORT, OMMA_BACKEND_CUDA, OMMA_PRECISION_FP16, &a) == OMMA_OK);
    omma_engine_release(a);

    omma_engine_options opt;
    omma_engine_options_init(&opt);
    opt.backend = OMMA_BACKEND_CUDA;
    omma_engine *e = (omma_engine *)&opt;
    CHECK_FAILS(omma_engine_load(NULL, FACE_MODEL_SHORT, &opt, &e), OMMA_ERR_INVALID_ARG,
                "needs a device");
    CHECK(e == NULL);
    e = (omma_engine *)&opt;
    CHECK_FAILS(omma_engine_load(dev, OMMA_MODELS_DIR "/nope.tflite", &opt, &e), OMMA_ERR_IO,
                "nope.tflite");
    CHECK(e == NULL);
}

/* Graph replay vs node-by-node, bitwise, at batch 1, 3, 8 and CHAIN_BATCH,
 * for one model and precision. */
static void replay_vs_eager(const char *model, omma_precision prec)
{
    omma_engine *e = NULL;
    omma_exec *xg = NULL, *xe = NULL;
    REQUIRE_OK(load(model, OMMA_BACKEND_CUDA, prec, &e));
    omma_exec_options o;
    omma_exec_options_init(&o);
    omma_status st = omma_exec_create_with(e, CHAIN_BATCH, &o, &xg);
    o.graphs = 0;
    if (st == OMMA_OK)
        st = omma_exec_create_with(e, CHAIN_BATCH, &o, &xe);
    size_t ni = in_elems(e, 0);
    float *in = malloc(CHAIN_BATCH * ni * sizeof *in);
    int n_out = omma_engine_output_count(e);
    size_t max_out = 0;
    for (int i = 0; i < n_out; i++)
        max_out = out_elems(e, i) > max_out ? out_elems(e, i) : max_out;
    float *a = malloc(CHAIN_BATCH * max_out * sizeof *a);
    float *b = malloc(CHAIN_BATCH * max_out * sizeof *b);
    if (st == OMMA_OK && (!in || !a || !b))
        st = OMMA_ERR_OUT_OF_MEMORY;
    for (int k = 0; st == OMMA_OK && k < CHAIN_BATCH; k++)
        make_input(model, k + 1, in + (size_t)k * ni);
    if (st == OMMA_OK && (st = to_exec(xg, 0, in, CHAIN_BATCH * ni)) == OMMA_OK)
        st = to_exec(xe, 0, in, CHAIN_BATCH * ni);
    const int batches[4] = {1, 3, 8, CHAIN_BATCH};
    int mismatches = 0, launches_g = 0, launches_e = 0;
    for (int bi = 0; st == OMMA_OK && bi < 4; bi++) {
        int batch = batches[bi];
        for (int rep = 0; st == OMMA_OK && rep < 2; rep++) { /* capture, then replay */
            if ((st = omma_exec_run(xg, batch)) == OMMA_OK)
                st = omma_exec_run(xe, batch);
            for (int i = 0; st == OMMA_OK && i < n_out; i++) {
                size_t n = (size_t)batch * out_elems(e, i);
                if ((st = from_exec(xg, i, a, n)) == OMMA_OK &&
                    (st = from_exec(xe, i, b, n)) == OMMA_OK)
                    mismatches += memcmp(a, b, n * sizeof *a) != 0;
            }
        }
        omma_exec_stats sg, se;
        if (st == OMMA_OK && omma_exec_get_stats(xg, &sg) == OMMA_OK &&
            omma_exec_get_stats(xe, &se) == OMMA_OK) {
            launches_g = sg.launches;
            launches_e = se.launches;
            CHECK(sg.graphs == bi + 1);
            CHECK(se.graphs == 0);
        }
    }
    CHECK(st == OMMA_OK);
    if (st != OMMA_OK)
        fprintf(stderr, "%s %s: %s\n", model, prec_name(prec), omma_last_error());
    CHECK(mismatches == 0);
    CHECK(launches_g > 0 && launches_g >= launches_e);
    fprintf(stderr,
            "%s %s: graph replay vs eager at batch 1,3,8,%d: %d mismatching outputs; "
            "%d graph nodes, %d eager launches per run\n",
            model, prec_name(prec), CHAIN_BATCH, mismatches, launches_g, launches_e);
    free(in);
    free(a);
    free(b);
    omma_exec_destroy(xg);
    omma_exec_destroy(xe);
    omma_engine_release(e);
}

static void test_graph_replay_is_bitwise_eager(void)
{
    const char *models[3] = {FACE_MODEL_SHORT, FACE_MODEL_FULL, FACE_MODEL_MESH};
    for (int m = 0; m < 3; m++) {
        replay_vs_eager(models[m], OMMA_PRECISION_FP16);
        if (!quick)
            replay_vs_eager(models[m], OMMA_PRECISION_FP32);
    }
}

/* ---- concurrency ---------------------------------------------------------- */

#define N_INPUTS 24

typedef struct shared_run {
    omma_engine *e;
    const float *inputs;  /* N_INPUTS items */
    const float *ref[2];  /* serial outputs 0 and 1, N_INPUTS items each */
    size_t ni, no[2];
    int runs;
    atomic_int mismatches, failures, done;
} shared_run;

typedef struct worker {
    shared_run *s;
    int id;
    pthread_t th;
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    shared_run *s = w->s;
    omma_exec *x = NULL;
    float *o[2] = {malloc(s->no[0] * sizeof(float)), malloc(s->no[1] * sizeof(float))};
    omma_status st = o[0] && o[1] ? omma_exec_create(s->e, 1, &x) : OMMA_ERR_OUT_OF_MEMORY;
    for (int r = 0; st == OMMA_OK && r < s->runs; r++) {
        int k = (w->id * 7 + r * 5) % N_INPUTS;
        if ((st = to_exec(x, 0, s->inputs + (size_t)k * s->ni, s->ni)) == OMMA_OK &&
            (st = omma_exec_run(x, 1)) == OMMA_OK)
            for (int j = 0; st == OMMA_OK && j < 2; j++)
                if ((st = from_exec(x, j, o[j], s->no[j])) == OMMA_OK &&
                    memcmp(o[j], s->ref[j] + (size_t)k * s->no[j], s->no[j] * sizeof(float)))
                    atomic_fetch_add(&s->mismatches, 1);
        if (st == OMMA_OK)
            atomic_fetch_add(&s->done, 1);
    }
    if (st != OMMA_OK) {
        fprintf(stderr, "worker %d: %s: %s\n", w->id, omma_status_str(st), omma_last_error());
        atomic_fetch_add(&s->failures, 1);
    }
    omma_exec_destroy(x);
    free(o[0]);
    free(o[1]);
    return NULL;
}

static void test_threads_share_an_engine(void)
{
    shared_run s = {0};
    int threads = quick ? 4 : 16;
    const char *runs = getenv("OMMA_TEST_RUNS");
    s.runs = runs && atoi(runs) > 0 ? atoi(runs) : quick ? 4 : 1000;
    REQUIRE_OK(load(FACE_MODEL_SHORT, OMMA_BACKEND_CUDA, OMMA_PRECISION_FP16, &s.e));
    s.ni = in_elems(s.e, 0);
    s.no[0] = out_elems(s.e, 0);
    s.no[1] = out_elems(s.e, 1);
    float *in = malloc(N_INPUTS * s.ni * sizeof *in);
    float *r0 = malloc(N_INPUTS * s.no[0] * sizeof *r0), *r1 = malloc(N_INPUTS * s.no[1] * sizeof *r1);
    omma_exec *x = NULL;
    omma_status st = in && r0 && r1 ? omma_exec_create(s.e, 1, &x) : OMMA_ERR_OUT_OF_MEMORY;
    for (int k = 0; st == OMMA_OK && k < N_INPUTS; k++) {
        make_input(FACE_MODEL_SHORT, k, in + (size_t)k * s.ni);
        if ((st = to_exec(x, 0, in + (size_t)k * s.ni, s.ni)) == OMMA_OK &&
            (st = omma_exec_run(x, 1)) == OMMA_OK &&
            (st = from_exec(x, 0, r0 + (size_t)k * s.no[0], s.no[0])) == OMMA_OK)
            st = from_exec(x, 1, r1 + (size_t)k * s.no[1], s.no[1]);
    }
    omma_exec_destroy(x);
    CHECK(st == OMMA_OK);
    if (st == OMMA_OK) {
        s.inputs = in;
        s.ref[0] = r0;
        s.ref[1] = r1;
        worker w[16];
        int started = 0;
        for (int t = 0; t < threads; t++) {
            w[t].s = &s;
            w[t].id = t;
            if (pthread_create(&w[t].th, NULL, worker_main, &w[t]) != 0)
                break;
            started++;
        }
        for (int t = 0; t < started; t++)
            pthread_join(w[t].th, NULL);
        CHECK(started == threads);
        fprintf(stderr, "%d threads x %d runs on one engine: %d done, %d mismatching outputs, "
                "%d failures\n", threads, s.runs, atomic_load(&s.done),
                atomic_load(&s.mismatches), atomic_load(&s.failures));
        CHECK(atomic_load(&s.done) == threads * s.runs);
        CHECK(atomic_load(&s.mismatches) == 0);
        CHECK(atomic_load(&s.failures) == 0);
    }
    free(in);
    free(r0);
    free(r1);
    omma_engine_release(s.e);
}

/* ---- memory --------------------------------------------------------------- */

static void test_exec_memory(void)
{
    int n = quick ? 8 : 64;
    omma_engine *e = NULL;
    omma_exec *x[64] = {0};
    omma_memory_stats m0, m1, mn, mend;
    REQUIRE_OK(load(FACE_MODEL_SHORT, OMMA_BACKEND_CUDA, OMMA_PRECISION_FP16, &e));
    /* Frees are stream-ordered: let earlier tests' frees land first. */
    CHECK(omma_device_check_health(dev) == OMMA_OK);
    REQUIRE_OK(omma_device_get_memory_stats(dev, &m0));
    omma_status st = omma_exec_create(e, 8, &x[0]);
    CHECK(st == OMMA_OK);
    CHECK(omma_device_get_memory_stats(dev, &m1) == OMMA_OK);
    for (int i = 1; st == OMMA_OK && i < n; i++)
        st = omma_exec_create(e, 8, &x[i]);
    CHECK(st == OMMA_OK);
    CHECK(omma_device_get_memory_stats(dev, &mn) == OMMA_OK);
    omma_exec_stats es = {0};
    CHECK(x[0] && omma_exec_get_stats(x[0], &es) == OMMA_OK);
    long long d1 = (long long)(m1.pool_used - m0.pool_used);
    long long dn = (long long)(mn.pool_used - m1.pool_used);
    fprintf(stderr, "device memory (pool in use) of execs of max batch 8, fp16: 1 exec %lld "
            "bytes, %d more %lld bytes = %lld per exec; exec stats: arena %zu + I/O %zu = %zu "
            "device bytes\n", d1, n - 1, dn, dn / (n - 1), es.arena_bytes, es.io_bytes,
            es.device_bytes);
    CHECK(es.device_bytes >= es.arena_bytes + es.io_bytes);
    CHECK(es.device_bytes < es.arena_bytes + es.io_bytes + 4096);
    /* The pool may round an allocation up to its granularity; nothing else
     * (no weights, no per-exec copies of anything) may come with an exec. */
    long long per = (long long)es.device_bytes, slack = 2 << 20;
    CHECK(d1 >= per && d1 - per < slack);
    CHECK(dn >= per * (n - 1) && dn - per * (n - 1) < slack * (n - 1));
    for (int i = 0; i < n; i++)
        omma_exec_destroy(x[i]);
    omma_engine_release(e);
    CHECK(omma_device_check_health(dev) == OMMA_OK);
    CHECK(omma_device_get_memory_stats(dev, &mend) == OMMA_OK);
    fprintf(stderr, "after destroying them: pool in use %lld bytes above the start\n",
            (long long)(mend.pool_used - m0.pool_used));
    CHECK(mend.pool_used == m0.pool_used);
}

/* ---- misuse --------------------------------------------------------------- */

static atomic_int gate; /* 1 while the stream is held by block_stream */

static void CUDART_CB block_stream(void *arg)
{
    (void)arg;
    while (atomic_load(&gate))
        ;
}

static omma_exec *busy_exec;
static atomic_int waiting;

static void *wait_main(void *arg)
{
    omma_status *st = arg;
    atomic_store(&waiting, 1);
    *st = omma_exec_wait(busy_exec);
    return NULL;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void test_busy_and_bad_batches(void)
{
    omma_engine *e = NULL;
    REQUIRE_OK(load(FACE_MODEL_SHORT, OMMA_BACKEND_CUDA, OMMA_PRECISION_FP16, &e));
    omma_exec *x = NULL;
    omma_status st = omma_exec_create(e, 4, &x);
    CHECK(st == OMMA_OK);
    if (st != OMMA_OK) {
        omma_engine_release(e);
        return;
    }
    CHECK_FAILS(omma_exec_run(x, 0), OMMA_ERR_INVALID_ARG, "batch 0");
    CHECK_FAILS(omma_exec_run(x, 5), OMMA_ERR_INVALID_ARG, "batch 5");
    size_t ni = in_elems(e, 0);
    float *in = malloc(ni * sizeof *in), *ref = malloc(896 * sizeof *ref), *o = malloc(896 * sizeof *o);
    make_input(FACE_MODEL_SHORT, 0, in);
    int ocls = output_with_last_dim(e, 1);
    st = to_exec(x, 0, in, ni);
    if (st == OMMA_OK && (st = omma_exec_run(x, 1)) == OMMA_OK)
        st = from_exec(x, ocls, ref, 896);
    CHECK(st == OMMA_OK);

    /* Thread A waits on the exec while its stream is held by a host function;
     * the main thread's run must then see OMMA_ERR_BUSY. */
    omma_scope sc;
    atomic_store(&gate, 1);
    CHECK(omma_device_enter(dev, &sc) == OMMA_OK);
    CHECK(cudaLaunchHostFunc((cudaStream_t)omma_exec_stream(x), block_stream, NULL) == cudaSuccess);
    omma_device_leave(&sc);
    busy_exec = x;
    omma_status wst = OMMA_ERR_INTERNAL;
    pthread_t th;
    int busy = 0, others = 0;
    atomic_store(&waiting, 0);
    CHECK(pthread_create(&th, NULL, wait_main, &wst) == 0);
    while (!atomic_load(&waiting))
        sleep_ms(1);
    for (int i = 0; i < 200 && !busy; i++) {
        sleep_ms(10); /* the waiter is inside omma_exec_wait by now, all but surely */
        omma_status r = omma_exec_run(x, 1);
        busy += r == OMMA_ERR_BUSY;
        others += r != OMMA_OK && r != OMMA_ERR_BUSY;
    }
    atomic_store(&gate, 0);
    pthread_join(th, NULL);
    fprintf(stderr, "second thread on a busy exec: %d BUSY, wait in the first thread: %s\n",
            busy, omma_status_str(wst));
    CHECK(busy == 1);
    CHECK(others == 0);
    CHECK(wst == OMMA_OK);
    /* Still works, same bits. */
    st = to_exec(x, 0, in, ni);
    if (st == OMMA_OK && (st = omma_exec_run(x, 1)) == OMMA_OK)
        st = from_exec(x, ocls, o, 896);
    CHECK(st == OMMA_OK);
    CHECK(memcmp(o, ref, 896 * sizeof *o) == 0);
    free(in);
    free(ref);
    free(o);
    omma_exec_destroy(x);
    omma_engine_release(e);
}

/* Last: marks the device lost the way a sticky error does (the gpu layer's
 * own record), then every run and wait must say so. */
static void test_device_lost(void)
{
    omma_engine *e = NULL;
    omma_exec *x = NULL;
    REQUIRE_OK(load(FACE_MODEL_SHORT, OMMA_BACKEND_CUDA, OMMA_PRECISION_FP32, &e));
    omma_status st = omma_exec_create(e, 2, &x);
    CHECK(st == OMMA_OK);
    if (st == OMMA_OK) {
        CHECK(omma_exec_run(x, 2) == OMMA_OK);
        CHECK(omma_exec_wait(x) == OMMA_OK);
        gpu_device_mark_lost(dev, "simulated sticky error (test)");
        CHECK_FAILS(omma_exec_run(x, 1), OMMA_ERR_DEVICE_LOST, "simulated sticky error");
        CHECK_FAILS(omma_exec_wait(x), OMMA_ERR_DEVICE_LOST, "lost");
        omma_exec *y = (omma_exec *)&st;
        CHECK_FAILS(omma_exec_create(e, 1, &y), OMMA_ERR_DEVICE_LOST, "lost");
        CHECK(y == NULL);
    }
    omma_exec_destroy(x);
    omma_engine_release(e);
}

int main(void)
{
    int n = 0;
    if (omma_device_count(&n) != OMMA_OK || n < 1)
        SKIP_TEST("no GPU");
    const char *q = getenv("OMMA_TEST_QUICK");
    /* Quick under compute-sanitizer too (scripts/gpu-check.sh sets it). */
    quick = (q && *q && strcmp(q, "0") != 0) || getenv("OMMA_TEST_SANITIZER") != NULL;
    if (omma_device_open(0, &dev) != OMMA_OK) {
        fprintf(stderr, "omma_device_open: %s\n", omma_last_error());
        return 1;
    }
    if (rgb_image_load_png(FACE_PHOTO, &photo) != OMMA_OK) {
        fprintf(stderr, "%s: %s\n", FACE_PHOTO, omma_last_error());
        return 1;
    }
    RUN(test_engine_cache);
    RUN(test_detectors_vs_cpu);
    RUN(test_face_mesh_vs_cpu);
    RUN(test_graph_replay_is_bitwise_eager);
    RUN(test_threads_share_an_engine);
    RUN(test_exec_memory);
    RUN(test_busy_and_bad_batches);
    RUN(test_device_lost);
    rgb_image_free(&photo);
    omma_device_close(dev);
    return testing_finish();
}
