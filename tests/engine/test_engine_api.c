/* The public engine API on the CPU backend: loading, tensor info, options,
 * misuse (bad batch sizes, one exec run from two threads), reference
 * counting, and determinism across runs and batch sizes. */
#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "omma/omma.h"
#include "support/face_inputs.h"
#include "testing.h"

static void expect_io(omma_engine *e, bool input, int i, const char *name, int rank, int d1,
                      int d2, int d3)
{
    omma_tensor_info info;
    omma_status st = input ? omma_engine_input_info(e, i, &info) : omma_engine_output_info(e, i, &info);
    REQUIRE_OK(st);
    CHECK(strcmp(info.name, name) == 0);
    CHECK(info.rank == rank && info.dims[0] == 1 && info.dims[1] == d1 && info.dims[2] == d2);
    if (rank == 4)
        CHECK(info.dims[3] == d3);
    CHECK(info.item_elems == (size_t)d1 * d2 * (rank == 4 ? d3 : 1));
    CHECK((input ? omma_engine_find_input(e, name) : omma_engine_find_output(e, name)) == i);
}

static void load_and_describe(const char *path, int nodes_loaded, omma_engine **out)
{
    omma_engine *e = NULL;
    omma_engine_stats s;
    *out = NULL;
    REQUIRE_OK(omma_engine_load(NULL, path, NULL, &e));
    REQUIRE_OK(omma_engine_get_stats(e, &s));
    fprintf(stderr, "%s: %d -> %d nodes, %zu params, arena %zu bytes at batch 1 + %zu per item\n",
            path, s.nodes_loaded, s.nodes, s.params, s.arena_bytes_batch1, s.arena_bytes_per_item);
    CHECK(s.nodes_loaded == nodes_loaded);
    CHECK(s.nodes > 0 && s.nodes < s.nodes_loaded);
    CHECK(s.arena_bytes_batch1 > 0 && s.arena_bytes_batch1 % 256 == 0);
    CHECK(s.arena_bytes_per_item == s.arena_bytes_batch1); /* nothing batch-independent */
    CHECK(omma_engine_backend(e) == OMMA_BACKEND_CPU);
    CHECK(omma_engine_input_count(e) == 1 && omma_engine_output_count(e) == 2);
    *out = e;
}

static void test_models_load(void)
{
    omma_engine *e;
    load_and_describe(FACE_MODEL_SHORT, 164, &e);
    if (e) {
        expect_io(e, true, 0, "input", 4, 128, 128, 3);
        expect_io(e, false, 0, "regressors", 3, 896, 16, 0);
        expect_io(e, false, 1, "classificators", 3, 896, 1, 0);
        omma_engine_release(e);
    }
    load_and_describe(FACE_MODEL_FULL, 354, &e);
    if (e) {
        expect_io(e, true, 0, "input", 4, 192, 192, 3);
        expect_io(e, false, 0, "reshaped_regressor_face_4", 3, 2304, 16, 0);
        expect_io(e, false, 1, "reshaped_classifier_face_4", 3, 2304, 1, 0);
        omma_engine_release(e);
    }
    load_and_describe(FACE_MODEL_MESH, 210, &e);
    if (e) {
        expect_io(e, true, 0, "input_1", 4, 192, 192, 3);
        expect_io(e, false, 0, "conv2d_21", 4, 1, 1, 1404);
        expect_io(e, false, 1, "conv2d_31", 4, 1, 1, 1);
        omma_tensor_info info;
        CHECK_FAILS(omma_engine_output_info(e, 2, &info), OMMA_ERR_INVALID_ARG, "output 2 of 2");
        CHECK(omma_engine_find_output(e, "nope") == -1);
        omma_engine_release(e);
    }
}

static void test_options(void)
{
    omma_engine_options opt;
    omma_engine *e = (omma_engine *)&opt; /* must come back NULL */
    omma_engine_options_init(&opt);
    CHECK(opt.backend == OMMA_BACKEND_CPU && opt.precision == OMMA_PRECISION_FP32 && opt.rewrites);

    opt.backend = OMMA_BACKEND_CUDA;
    CHECK_FAILS(omma_engine_load(NULL, FACE_MODEL_SHORT, &opt, &e), OMMA_ERR_INVALID_ARG,
                "the CUDA backend needs a device");
    CHECK(e == NULL);
    /* Loading on a real device: tests/engine/test_cuda_engine.c. */
    omma_device *fake = (omma_device *)&opt; /* never dereferenced */

    omma_engine_options_init(&opt);
    CHECK_FAILS(omma_engine_load(fake, FACE_MODEL_SHORT, &opt, &e), OMMA_ERR_INVALID_ARG,
                "the CPU backend takes no device");
    opt.precision = OMMA_PRECISION_FP16;
    CHECK_FAILS(omma_engine_load(NULL, FACE_MODEL_SHORT, &opt, &e), OMMA_ERR_UNSUPPORTED,
                "fp32 only");
    opt.precision = (omma_precision)7;
    CHECK_FAILS(omma_engine_load(NULL, FACE_MODEL_SHORT, &opt, &e), OMMA_ERR_INVALID_ARG,
                "unknown precision 7");
    CHECK(e == NULL);
    CHECK_FAILS(omma_engine_load(NULL, NULL, NULL, &e), OMMA_ERR_INVALID_ARG, "path is NULL");

    /* Rewrites off: the graph runs as the file declares it. */
    omma_engine_options_init(&opt);
    opt.rewrites = 0;
    REQUIRE_OK(omma_engine_load(NULL, FACE_MODEL_SHORT, &opt, &e));
    omma_engine_stats s;
    REQUIRE_OK(omma_engine_get_stats(e, &s));
    CHECK(s.nodes == 164 && s.nodes_loaded == 164);
    /* DEQUANTIZE outputs are batch-independent: batch 1 costs more than an
     * item. */
    CHECK(s.arena_bytes_batch1 > s.arena_bytes_per_item);
    omma_engine_release(e);
}

static void test_bad_files(void)
{
    omma_engine *e = (omma_engine *)&e;
    omma_status st = omma_engine_load(NULL, OMMA_BINARY_DIR "/no-such-model.tflite", NULL, &e);
    CHECK(st == OMMA_ERR_IO);
    CHECK(strstr(omma_last_error(), "no-such-model.tflite") != NULL);
    CHECK(e == NULL);
    /* A PNG is no model. */
    st = omma_engine_load(NULL, FACE_PHOTO, NULL, &e);
    CHECK(st == OMMA_ERR_FORMAT);
    CHECK(e == NULL);
}

static void test_misuse(void)
{
    omma_engine *e = NULL;
    omma_exec *x = (omma_exec *)&x;
    float *p;
    REQUIRE_OK(omma_engine_load(NULL, FACE_MODEL_SHORT, NULL, &e));
    CHECK_FAILS(omma_exec_create(e, 0, &x), OMMA_ERR_INVALID_ARG, "max_batch 0");
    CHECK(x == NULL);
    CHECK_FAILS(omma_exec_create(NULL, 1, &x), OMMA_ERR_INVALID_ARG, "engine is NULL");
    omma_status st = omma_exec_create(e, 4, &x);
    CHECK(st == OMMA_OK);
    if (st == OMMA_OK) {
        CHECK(omma_exec_max_batch(x) == 4 && omma_exec_engine(x) == e);
        CHECK_FAILS(omma_exec_run(x, 0), OMMA_ERR_INVALID_ARG, "batch 0 (1 to max batch 4)");
        CHECK_FAILS(omma_exec_run(x, 5), OMMA_ERR_INVALID_ARG, "batch 5 (1 to max batch 4)");
        CHECK_FAILS(omma_exec_run(x, -1), OMMA_ERR_INVALID_ARG, "batch -1");
        CHECK_FAILS(omma_exec_run(NULL, 1), OMMA_ERR_INVALID_ARG, "exec is NULL");
        CHECK_FAILS(omma_exec_input(x, 1, &p), OMMA_ERR_INVALID_ARG, "index 1 of 1");
        CHECK(p == NULL);
        CHECK_FAILS(omma_exec_output(x, -1, &p), OMMA_ERR_INVALID_ARG, "index -1 of 2");
    }
    /* The exec keeps the engine alive after the caller's release. */
    omma_engine_release(e);
    if (st == OMMA_OK) {
        REQUIRE_OK(omma_exec_input(x, 0, &p));
        memset(p, 0, 128 * 128 * 3 * sizeof *p);
        CHECK(omma_exec_run(x, 1) == OMMA_OK);
    }
    omma_exec_destroy(x);
    omma_exec_destroy(NULL);
    omma_engine_release(NULL);
}

/* Two threads run one exec over and over until one of them has been
 * refused with OMMA_ERR_BUSY; every call must return OK or BUSY. */
typedef struct race {
    omma_exec *x;
    atomic_int busy, ok, other, stop;
} race;

static void *racer(void *arg)
{
    race *r = arg;
    for (int i = 0; i < 400 && !atomic_load(&r->stop); i++) {
        omma_status st = omma_exec_run(r->x, 1);
        if (st == OMMA_ERR_BUSY) {
            if (!strstr(omma_last_error(), "running in another thread"))
                atomic_fetch_add(&r->other, 1);
            atomic_fetch_add(&r->busy, 1);
            atomic_store(&r->stop, 1);
        } else if (st == OMMA_OK) {
            atomic_fetch_add(&r->ok, 1);
        } else {
            atomic_fetch_add(&r->other, 1);
        }
    }
    return NULL;
}

static void test_concurrent_run_is_busy(void)
{
    omma_engine *e = NULL;
    race r;
    memset(&r, 0, sizeof r);
    float *p;
    REQUIRE_OK(omma_engine_load(NULL, FACE_MODEL_SHORT, NULL, &e));
    omma_status st = omma_exec_create(e, 1, &r.x);
    omma_engine_release(e);
    REQUIRE_OK(st);
    if (omma_exec_input(r.x, 0, &p) == OMMA_OK)
        memset(p, 0, 128 * 128 * 3 * sizeof *p);
    pthread_t a, b;
    CHECK(pthread_create(&a, NULL, racer, &r) == 0);
    CHECK(pthread_create(&b, NULL, racer, &r) == 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    fprintf(stderr, "two threads on one exec: %d runs ok, %d refused busy, %d other\n",
            atomic_load(&r.ok), atomic_load(&r.busy), atomic_load(&r.other));
    CHECK(atomic_load(&r.busy) >= 1);
    CHECK(atomic_load(&r.ok) >= 1);
    CHECK(atomic_load(&r.other) == 0);
    /* After the race the exec works normally. */
    CHECK(omma_exec_run(r.x, 1) == OMMA_OK);
    omma_exec_destroy(r.x);
}

/* Two pipelines sharing one engine, each with its own exec, running at the
 * same time: each gets bitwise what it gets running alone. */
typedef struct pipeline {
    omma_engine *e;
    const float *image; /* 128 * 128 * 3 */
    const float *want;  /* 896 scores */
    int runs, mismatches, errors;
} pipeline;

static void *pipeline_main(void *arg)
{
    pipeline *p = arg;
    omma_exec *x = NULL;
    float *in, *out;
    if (omma_exec_create(p->e, 1, &x) != OMMA_OK || omma_exec_input(x, 0, &in) != OMMA_OK ||
        omma_exec_output(x, 1, &out) != OMMA_OK) {
        p->errors++;
        omma_exec_destroy(x);
        return NULL;
    }
    for (int r = 0; r < 3; r++) {
        memcpy(in, p->image, 128 * 128 * 3 * sizeof *in);
        if (omma_exec_run(x, 1) != OMMA_OK)
            p->errors++;
        else if (memcmp(out, p->want, 896 * sizeof *out) != 0)
            p->mismatches++;
        p->runs++;
    }
    omma_exec_destroy(x);
    return NULL;
}

static void test_concurrent_execs_share_an_engine(void)
{
    rgb_image img;
    omma_engine *e = NULL;
    omma_exec *x = NULL;
    static float images[2][128 * 128 * 3], want[2][896];
    float *in, *out;
    REQUIRE_OK(rgb_image_load_png(FACE_PHOTO, &img));
    face_detector_input(&img, 128, images[0]);
    rgb_image_sample(&img, 100, 20, 350, 270, 128, 128, 1.0f / 127.5f, -1.0f, images[1]);
    rgb_image_free(&img);
    REQUIRE_OK(omma_engine_load(NULL, FACE_MODEL_SHORT, NULL, &e));
    omma_status st = omma_exec_create(e, 1, &x);
    for (int k = 0; st == OMMA_OK && k < 2; k++) {
        if ((st = omma_exec_input(x, 0, &in)) == OMMA_OK) {
            memcpy(in, images[k], sizeof images[k]);
            if ((st = omma_exec_run(x, 1)) == OMMA_OK && (st = omma_exec_output(x, 1, &out)) == OMMA_OK)
                memcpy(want[k], out, sizeof want[k]);
        }
    }
    omma_exec_destroy(x);
    CHECK(st == OMMA_OK);
    pipeline p[2] = {{e, images[0], want[0], 0, 0, 0}, {e, images[1], want[1], 0, 0, 0}};
    pthread_t t[2];
    for (int k = 0; st == OMMA_OK && k < 2; k++)
        CHECK(pthread_create(&t[k], NULL, pipeline_main, &p[k]) == 0);
    for (int k = 0; st == OMMA_OK && k < 2; k++) {
        pthread_join(t[k], NULL);
        CHECK(p[k].runs == 3 && p[k].errors == 0 && p[k].mismatches == 0);
    }
    CHECK(memcmp(want[0], want[1], sizeof want[0]) != 0);
    omma_engine_release(e);
}

/* Same input, same bits: across runs, and item k of a batch of 8 equals the
 * same image run alone. Two real images alternate in the batch: the whole
 * photo and a face crop, both resized to the detector's input. */
static void test_deterministic_across_runs_and_batches(void)
{
    rgb_image img;
    omma_engine *e = NULL;
    omma_exec *one = NULL, *eight = NULL;
    REQUIRE_OK(rgb_image_load_png(FACE_PHOTO, &img));
    size_t item = 128 * 128 * 3;
    float *imgs = malloc(2 * item * sizeof *imgs);
    omma_status st = imgs ? omma_engine_load(NULL, FACE_MODEL_SHORT, NULL, &e) : OMMA_ERR_OUT_OF_MEMORY;
    if (st == OMMA_OK)
        st = omma_exec_create(e, 1, &one);
    if (st == OMMA_OK)
        st = omma_exec_create(e, 8, &eight);
    CHECK(st == OMMA_OK);
    if (st == OMMA_OK) {
        face_detector_input(&img, 128, imgs);
        rgb_image_sample(&img, 100, 20, 350, 270, 128, 128, 1.0f / 127.5f, -1.0f, imgs + item);
        size_t out_items[2] = {896 * 16, 896};
        float *alone[2][2] = {{0}};
        float *in, *out;
        for (int k = 0; k < 2; k++) {
            REQUIRE_OK(omma_exec_input(one, 0, &in));
            memcpy(in, imgs + k * item, item * sizeof *in);
            REQUIRE_OK(omma_exec_run(one, 1));
            for (int o = 0; o < 2; o++) {
                REQUIRE_OK(omma_exec_output(one, o, &out));
                alone[k][o] = malloc(out_items[o] * sizeof(float));
                if (alone[k][o])
                    memcpy(alone[k][o], out, out_items[o] * sizeof(float));
            }
        }
        /* Run image 0 again alone: same bits. */
        REQUIRE_OK(omma_exec_input(one, 0, &in));
        memcpy(in, imgs, item * sizeof *in);
        REQUIRE_OK(omma_exec_run(one, 1));
        for (int o = 0; o < 2; o++) {
            REQUIRE_OK(omma_exec_output(one, o, &out));
            CHECK(alone[0][o] && memcmp(out, alone[0][o], out_items[o] * sizeof(float)) == 0);
        }
        /* A batch of 8, images alternating. */
        REQUIRE_OK(omma_exec_input(eight, 0, &in));
        for (int b = 0; b < 8; b++)
            memcpy(in + b * item, imgs + (b % 2) * item, item * sizeof *in);
        REQUIRE_OK(omma_exec_run(eight, 8));
        int mismatches = 0;
        for (int o = 0; o < 2; o++) {
            REQUIRE_OK(omma_exec_output(eight, o, &out));
            for (int b = 0; b < 8; b++)
                mismatches += !alone[b % 2][o] ||
                              memcmp(out + b * out_items[o], alone[b % 2][o],
                                     out_items[o] * sizeof(float)) != 0;
        }
        CHECK(mismatches == 0);
        /* The two images differ, so the comparison means something. */
        CHECK(alone[0][1] && alone[1][1] &&
              memcmp(alone[0][1], alone[1][1], out_items[1] * sizeof(float)) != 0);
        /* Batch 3 on the 8-exec: the first 3 items, same bits again. */
        REQUIRE_OK(omma_exec_run(eight, 3));
        REQUIRE_OK(omma_exec_output(eight, 1, &out));
        for (int b = 0; b < 3; b++)
            CHECK(memcmp(out + b * out_items[1], alone[b % 2][1], out_items[1] * sizeof(float)) == 0);
        for (int k = 0; k < 2; k++)
            for (int o = 0; o < 2; o++)
                free(alone[k][o]);
    }
    omma_exec_destroy(one);
    omma_exec_destroy(eight);
    omma_engine_release(e);
    free(imgs);
    rgb_image_free(&img);
}

int main(void)
{
    RUN(test_models_load);
    RUN(test_options);
    RUN(test_bad_files);
    RUN(test_misuse);
    RUN(test_concurrent_run_is_busy);
    RUN(test_concurrent_execs_share_an_engine);
    RUN(test_deterministic_across_runs_and_batches);
    return testing_finish();
}
