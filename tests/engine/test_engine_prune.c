/* omma_engine_options.outputs on the CPU backend, with BlazePose's landmark
 * models (lite and full) on a real input: the person in
 * testdata/messi5.jpg (Debian's opencv-doc) cropped to 256x256, values in
 * [0, 1] as the pose pipeline feeds them.
 * - pruned to the four outputs the pose pipeline reads (landmarks, pose
 *   flag, world landmarks, heatmap): those outputs bitwise the unpruned
 *   engine's, the segmentation mask absent, fewer nodes and weights, a
 *   smaller arena;
 * - the outputs in the order given (a subset in another order: fewer nodes
 *   still), all outputs named: nothing pruned;
 * - every bad argument: OMMA_ERR_INVALID_ARG naming the bad output and
 *   listing the model's outputs, no engine. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "omma/engine.h"
#include "support/png_image.h"
#include "support/pose_outputs.h"
#include "testing.h"

#define POSE_LITE OMMA_MODELS_DIR "/pose_landmark_lite.tflite"
#define POSE_FULL OMMA_MODELS_DIR "/pose_landmark_full.tflite"
#define POSE_PHOTO OMMA_TESTDATA_DIR "/messi5.jpg"
#define SIZE 256

static rgb_image photo;
static float input[SIZE * SIZE * 3];

/* The four used outputs and the mask, all there (an unpruned model). */
static bool find_outputs(const omma_engine *e, pose_outputs *p)
{
    return pose_outputs_find(e, p) && p->mask;
}

static omma_status load(const char *path, const char *const *names, int count, omma_engine **e)
{
    omma_engine_options o;
    omma_engine_options_init(&o);
    o.outputs = names;
    o.output_count = count;
    return omma_engine_load(NULL, path, &o, e);
}

/* Runs e at batch 1 on the input; 0 on success. */
static int run(omma_engine *e, omma_exec **x)
{
    float *in = NULL;
    if (omma_exec_create(e, 1, x) != OMMA_OK || omma_exec_input(*x, 0, &in) != OMMA_OK)
        return -1;
    memcpy(in, input, sizeof input);
    return omma_exec_run(*x, 1) == OMMA_OK ? 0 : -1;
}

/* Output i of pruned (named name) bitwise equal to the same output of all. */
static void check_same_output(omma_exec *all, omma_exec *pruned, int i, const char *name)
{
    omma_engine *ea = omma_exec_engine(all), *ep = omma_exec_engine(pruned);
    int k = omma_engine_find_output(ea, name);
    omma_tensor_info ti, tk;
    float *pi = NULL, *pk = NULL;
    REQUIRE(k >= 0 && omma_engine_output_info(ep, i, &ti) == OMMA_OK &&
            omma_engine_output_info(ea, k, &tk) == OMMA_OK);
    CHECK(strcmp(ti.name, name) == 0 && ti.item_elems == tk.item_elems);
    REQUIRE(omma_exec_output(pruned, i, &pi) == OMMA_OK &&
            omma_exec_output(all, k, &pk) == OMMA_OK);
    bool same = memcmp(pi, pk, ti.item_elems * sizeof(float)) == 0;
    fprintf(stderr, "  output %d '%s' (%zu values, first %g): %s\n", i, name, ti.item_elems,
            (double)pi[0], same ? "bitwise the same" : "DIFFERENT");
    CHECK(same);
}

static void check_model(const char *path)
{
    omma_engine *all = NULL, *kept = NULL;
    omma_exec *xa = NULL, *xk = NULL;
    pose_outputs p;
    fprintf(stderr, "%s\n", path);
    REQUIRE_OK(load(path, NULL, 0, &all));
    if (!find_outputs(all, &p)) {
        CHECK(!"the landmark model's five outputs");
        goto done;
    }
    if (load(path, p.used, 4, &kept) != OMMA_OK) {
        fprintf(stderr, "pruned load: %s\n", omma_last_error());
        CHECK(!"pruned load");
        goto done;
    }
    CHECK(omma_engine_output_count(all) == 5 && omma_engine_output_count(kept) == 4);
    for (int i = 0; i < omma_engine_output_count(kept); i++) {
        omma_tensor_info t;
        CHECK(omma_engine_output_info(kept, i, &t) == OMMA_OK && strcmp(t.name, p.used[i]) == 0);
    }
    CHECK(omma_engine_find_output(kept, p.mask) < 0 && omma_engine_find_output(all, p.mask) >= 0);
    CHECK(omma_engine_input_count(kept) == 1);

    omma_engine_stats sa, sk;
    CHECK(omma_engine_get_stats(all, &sa) == OMMA_OK &&
          omma_engine_get_stats(kept, &sk) == OMMA_OK);
    fprintf(stderr,
            "  all outputs: %d nodes, %zu weights, arena %zu + %zu per item\n"
            "  4 outputs:   %d nodes (%d pruned), %zu weights, arena %zu + %zu per item\n",
            sa.nodes, sa.params, sa.arena_bytes_batch1, sa.arena_bytes_per_item, sk.nodes,
            sk.nodes_pruned, sk.params, sk.arena_bytes_batch1, sk.arena_bytes_per_item);
    CHECK(sa.nodes_pruned == 0 && sk.nodes_pruned > 0 && sk.nodes + sk.nodes_pruned == sa.nodes);
    CHECK(sk.nodes_loaded == sa.nodes_loaded);
    CHECK(sk.params < sa.params);
    CHECK(sk.arena_bytes_batch1 < sa.arena_bytes_batch1);
    CHECK(sk.arena_bytes_per_item < sa.arena_bytes_per_item);

    if (run(all, &xa) != 0 || run(kept, &xk) != 0) {
        fprintf(stderr, "run: %s\n", omma_last_error());
        CHECK(!"run");
        goto done;
    }
    for (int i = 0; i < 4; i++)
        check_same_output(xa, xk, i, p.used[i]);
done:
    omma_exec_destroy(xa);
    omma_exec_destroy(xk);
    omma_engine_release(all);
    omma_engine_release(kept);
}

static void test_full_pruned_bitwise(void)
{
    check_model(POSE_FULL);
}

static void test_lite_pruned_bitwise(void)
{
    check_model(POSE_LITE);
}

/* Outputs come in the order given (the four above are not in the model's
 * order either: Identity_4 before Identity_3); naming all of them prunes
 * nothing. */
static void test_order_and_all(void)
{
    omma_engine *all = NULL, *e = NULL;
    pose_outputs p;
    REQUIRE_OK(load(POSE_LITE, NULL, 0, &all));
    if (!find_outputs(all, &p)) {
        CHECK(!"the landmark model's five outputs");
        omma_engine_release(all);
        return;
    }
    omma_engine_stats sa, s;
    CHECK(omma_engine_get_stats(all, &sa) == OMMA_OK);
    const char *two[] = {p.used[3], p.used[1]}; /* heatmap, then the flag */
    if (load(POSE_LITE, two, 2, &e) == OMMA_OK) {
        CHECK(omma_engine_output_count(e) == 2);
        CHECK(omma_engine_find_output(e, two[0]) == 0 && omma_engine_find_output(e, two[1]) == 1);
        /* Without the landmarks and world landmarks, their heads go too. */
        CHECK(omma_engine_get_stats(e, &s) == OMMA_OK && s.nodes_pruned > 16 &&
              s.nodes + s.nodes_pruned == sa.nodes);
        fprintf(stderr, "  heatmap and flag only: %d nodes (%d pruned)\n", s.nodes, s.nodes_pruned);
    } else {
        fprintf(stderr, "two outputs: %s\n", omma_last_error());
        CHECK(!"two outputs");
    }
    omma_engine_release(e);
    e = NULL;

    const char *five[5];
    for (int i = 0; i < 5; i++) {
        omma_tensor_info t;
        CHECK(omma_engine_output_info(all, 4 - i, &t) == OMMA_OK);
        five[i] = t.name;
    }
    if (load(POSE_LITE, five, 5, &e) == OMMA_OK) {
        CHECK(omma_engine_get_stats(e, &s) == OMMA_OK);
        CHECK(s.nodes_pruned == 0 && s.nodes == sa.nodes && s.params == sa.params &&
              s.arena_bytes_batch1 == sa.arena_bytes_batch1);
        for (int i = 0; i < 5; i++)
            CHECK(omma_engine_find_output(e, five[i]) == i);
    } else {
        fprintf(stderr, "five outputs: %s\n", omma_last_error());
        CHECK(!"five outputs");
    }
    omma_engine_release(e);
    omma_engine_release(all);
}

static void test_bad_outputs(void)
{
    omma_engine *all = NULL;
    pose_outputs p;
    REQUIRE_OK(load(POSE_LITE, NULL, 0, &all));
    bool found = find_outputs(all, &p);
    REQUIRE(found);
    omma_engine *e = (omma_engine *)&e; /* must come back NULL */
    const char *nope[] = {p.used[0], "no_such_output"};
    CHECK_FAILS(load(POSE_LITE, nope, 2, &e), OMMA_ERR_INVALID_ARG,
                "'no_such_output' is not an output of the model");
    CHECK(e == NULL);
    /* The message lists the model's outputs. */
    for (int i = 0; i < 4; i++)
        CHECK(strstr(omma_last_error(), p.used[i]) != NULL);
    CHECK(strstr(omma_last_error(), p.mask) != NULL);
    const char *twice[] = {p.used[0], p.used[1], p.used[0]};
    char want[160];
    snprintf(want, sizeof want, "'%s' named twice", p.used[0]);
    CHECK_FAILS(load(POSE_LITE, twice, 3, &e), OMMA_ERR_INVALID_ARG, want);
    CHECK(strstr(omma_last_error(), p.mask) != NULL);
    const char *with_null[] = {p.used[0], NULL};
    CHECK_FAILS(load(POSE_LITE, with_null, 2, &e), OMMA_ERR_INVALID_ARG, "name 1 is NULL");
    CHECK_FAILS(load(POSE_LITE, p.used, 0, &e), OMMA_ERR_INVALID_ARG, "an empty list");
    CHECK_FAILS(load(POSE_LITE, NULL, 2, &e), OMMA_ERR_INVALID_ARG, "2 named but the list is NULL");
    CHECK_FAILS(load(POSE_LITE, p.used, -1, &e), OMMA_ERR_INVALID_ARG, "-1 named");
    const char *six[] = {p.used[0], p.used[1], p.used[2], p.used[3], p.mask, p.used[0]};
    CHECK_FAILS(load(POSE_LITE, six, 6, &e), OMMA_ERR_INVALID_ARG, "6 named, the model has 5");
    CHECK(e == NULL);
    /* The CUDA backend checks the list before anything else (no device
     * needed to be told). */
    omma_engine_options o;
    omma_engine_options_init(&o);
    o.backend = OMMA_BACKEND_CUDA;
    o.outputs = p.used;
    o.output_count = 0;
    CHECK_FAILS(omma_engine_load(NULL, POSE_LITE, &o, &e), OMMA_ERR_INVALID_ARG, "an empty list");
    omma_engine_release(all);
}

int main(void)
{
    if (rgb_image_load_png(POSE_PHOTO, &photo) != OMMA_OK) {
        fprintf(stderr, "%s: %s\n", POSE_PHOTO, omma_last_error());
        return 1;
    }
    /* The footballer's square (x 85..425, y 10..350), as the pipeline's ROI
     * would crop him. */
    rgb_image_sample(&photo, 85.0f, 10.0f, 425.0f, 350.0f, SIZE, SIZE, 1.0f / 255.0f, 0.0f, input);
    RUN(test_full_pruned_bitwise);
    RUN(test_lite_pruned_bitwise);
    RUN(test_order_and_all);
    RUN(test_bad_outputs);
    rgb_image_free(&photo);
    return testing_finish();
}
