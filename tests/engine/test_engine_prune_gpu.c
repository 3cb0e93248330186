/* omma_engine_options.outputs on the CUDA backend: BlazePose's landmark
 * models (lite, full, heavy) pruned to the four outputs the pose pipeline
 * reads, against the same model with all outputs, in fp32 and fp16, graphs
 * on, at batch 1, 7 and 128 (where the fp16 steps run as chains and pairs),
 * on crops of the person in testdata/messi5.jpg: every kept output of every
 * item bitwise the same. Also: fewer nodes, weights and exec device bytes;
 * the engine cache tells pruned and unpruned engines apart (and returns the
 * cached pruned engine for the same names in the same order).
 * Exits 77 where there is no GPU. */
#define _POSIX_C_SOURCE 200809L

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core/error.h"
#include "omma/omma.h"
#include "support/png_image.h"
#include "support/pose_outputs.h"
#include "testing.h"

#define POSE_LITE OMMA_MODELS_DIR "/pose_landmark_lite.tflite"
#define POSE_FULL OMMA_MODELS_DIR "/pose_landmark_full.tflite"
#define POSE_HEAVY OMMA_MODELS_DIR "/pose_landmark_heavy.tflite"
#define POSE_PHOTO OMMA_TESTDATA_DIR "/messi5.jpg"
#define SIZE 256
#define MAX_BATCH 128

static omma_device *dev;
static float *inputs; /* MAX_BATCH crops */

static omma_status load(const char *path, omma_precision p, const char *const *names, int count,
                        omma_engine **e)
{
    omma_engine_options o;
    omma_engine_options_init(&o);
    o.backend = OMMA_BACKEND_CUDA;
    o.precision = p;
    o.outputs = names;
    o.output_count = count;
    return omma_engine_load(dev, path, &o, e);
}

/* Runs x on the first `batch` crops; copies output i (batch items) to host. */
static omma_status run(omma_exec *x, int batch)
{
    float *d = NULL;
    omma_scope s;
    OMMA_TRY(omma_exec_input(x, 0, &d));
    OMMA_TRY(omma_device_enter(dev, &s));
    cudaError_t rc = cudaMemcpyAsync(d, inputs, (size_t)batch * SIZE * SIZE * 3 * sizeof(float),
                                     cudaMemcpyHostToDevice, (cudaStream_t)omma_exec_stream(x));
    omma_device_leave(&s);
    if (rc != cudaSuccess)
        return OMMA_ERR_CUDA;
    OMMA_TRY(omma_exec_run(x, batch));
    return omma_exec_wait(x);
}

static omma_status fetch(omma_exec *x, int i, int batch, float **host, size_t *n)
{
    omma_tensor_info t;
    float *d = NULL;
    omma_scope s;
    OMMA_TRY(omma_engine_output_info(omma_exec_engine(x), i, &t));
    OMMA_TRY(omma_exec_output(x, i, &d));
    *n = t.item_elems * (size_t)batch;
    *host = malloc(*n * sizeof(float));
    if (!*host)
        return OMMA_ERR_OUT_OF_MEMORY;
    OMMA_TRY(omma_device_enter(dev, &s));
    cudaError_t rc = cudaMemcpy(*host, d, *n * sizeof(float), cudaMemcpyDeviceToHost);
    omma_device_leave(&s);
    return rc == cudaSuccess ? OMMA_OK : OMMA_ERR_CUDA;
}

static void check_model(const char *path, omma_precision p)
{
    static const int batches[] = {1, 7, MAX_BATCH};
    const char *prec = p == OMMA_PRECISION_FP16 ? "fp16" : "fp32";
    omma_engine *all = NULL, *kept = NULL;
    omma_exec *xa = NULL, *xk = NULL;
    pose_outputs po;
    const char *const *used = po.used;
    REQUIRE_OK(load(path, p, NULL, 0, &all));
    if (!pose_outputs_find(all, &po) || load(path, p, used, 4, &kept) != OMMA_OK ||
        omma_exec_create(all, MAX_BATCH, &xa) != OMMA_OK ||
        omma_exec_create(kept, MAX_BATCH, &xk) != OMMA_OK) {
        fprintf(stderr, "%s %s: %s\n", path, prec, omma_last_error());
        CHECK(!"loading");
        goto done;
    }
    omma_engine_stats sa, sk;
    omma_exec_stats ea, ek;
    CHECK(omma_engine_get_stats(all, &sa) == OMMA_OK &&
          omma_engine_get_stats(kept, &sk) == OMMA_OK);
    CHECK(omma_exec_get_stats(xa, &ea) == OMMA_OK && omma_exec_get_stats(xk, &ek) == OMMA_OK);
    fprintf(stderr,
            "%s %s: nodes %d -> %d (%d pruned), weights %zu -> %zu, exec device bytes "
            "at batch %d %zu -> %zu\n",
            path, prec, sa.nodes, sk.nodes, sk.nodes_pruned, sa.params, sk.params, MAX_BATCH,
            ea.device_bytes, ek.device_bytes);
    CHECK(sk.nodes < sa.nodes && sk.nodes_pruned > 0 && sk.params < sa.params);
    CHECK(ek.device_bytes < ea.device_bytes);
    for (size_t b = 0; b < sizeof batches / sizeof batches[0]; b++) {
        int n = batches[b];
        if (run(xa, n) != OMMA_OK || run(xk, n) != OMMA_OK) {
            fprintf(stderr, "run at batch %d: %s\n", n, omma_last_error());
            CHECK(!"run");
            continue;
        }
        omma_exec_stats ra, rk;
        CHECK(omma_exec_get_stats(xa, &ra) == OMMA_OK && omma_exec_get_stats(xk, &rk) == OMMA_OK);
        for (int i = 0; i < 4; i++) {
            float *ha = NULL, *hk = NULL;
            size_t na = 0, nk = 0;
            int k = omma_engine_find_output(all, used[i]);
            if (k >= 0 && fetch(xa, k, n, &ha, &na) == OMMA_OK &&
                fetch(xk, i, n, &hk, &nk) == OMMA_OK) {
                bool same = na == nk && memcmp(ha, hk, na * sizeof(float)) == 0;
                size_t first = 0;
                while (same == false && first < na && first < nk && ha[first] == hk[first])
                    first++;
                if (!same)
                    fprintf(stderr, "  batch %d '%s': DIFFERENT from value %zu (%g vs %g)\n", n,
                            used[i], first, first < na ? (double)ha[first] : 0.0,
                            first < nk ? (double)hk[first] : 0.0);
                CHECK(same);
            } else {
                CHECK(!"fetching outputs");
            }
            free(ha);
            free(hk);
        }
        fprintf(stderr, "  batch %3d: launches %d -> %d, outputs checked\n", n, ra.launches,
                rk.launches);
    }
done:
    omma_exec_destroy(xa);
    omma_exec_destroy(xk);
    omma_engine_release(all);
    omma_engine_release(kept);
}

static void test_lite(void)
{
    check_model(POSE_LITE, OMMA_PRECISION_FP32);
    check_model(POSE_LITE, OMMA_PRECISION_FP16);
}

static void test_full(void)
{
    check_model(POSE_FULL, OMMA_PRECISION_FP32);
    check_model(POSE_FULL, OMMA_PRECISION_FP16);
}

static void test_heavy(void)
{
    check_model(POSE_HEAVY, OMMA_PRECISION_FP32);
    check_model(POSE_HEAVY, OMMA_PRECISION_FP16);
}

static void test_cache(void)
{
    omma_engine *all = NULL, *k1 = NULL, *k2 = NULL, *other = NULL, *all2 = NULL;
    pose_outputs po;
    const char *const *used = po.used;
    REQUIRE_OK(load(POSE_FULL, OMMA_PRECISION_FP16, NULL, 0, &all));
    if (pose_outputs_find(all, &po)) {
        const char *reordered[] = {used[1], used[0], used[2], used[3]};
        CHECK(load(POSE_FULL, OMMA_PRECISION_FP16, used, 4, &k1) == OMMA_OK);
        CHECK(load(POSE_FULL, OMMA_PRECISION_FP16, used, 4, &k2) == OMMA_OK);
        CHECK(load(POSE_FULL, OMMA_PRECISION_FP16, reordered, 4, &other) == OMMA_OK);
        CHECK(load(POSE_FULL, OMMA_PRECISION_FP16, NULL, 0, &all2) == OMMA_OK);
        CHECK(k1 && k1 == k2 && k1 != all && other && other != k1 && other != all && all2 == all);
        CHECK(omma_engine_output_count(k1) == 4 && omma_engine_output_count(all2) == 5);
        CHECK(omma_engine_find_output(other, used[1]) == 0);
    } else {
        CHECK(!"outputs");
    }
    omma_engine_release(all);
    omma_engine_release(all2);
    omma_engine_release(k1);
    omma_engine_release(k2);
    omma_engine_release(other);
}

int main(void)
{
    int n = 0;
    if (omma_device_count(&n) != OMMA_OK || n < 1)
        SKIP_TEST("no GPU");
    rgb_image photo;
    if (rgb_image_load_png(POSE_PHOTO, &photo) != OMMA_OK) {
        fprintf(stderr, "%s: %s\n", POSE_PHOTO, omma_last_error());
        return 1;
    }
    inputs = malloc((size_t)MAX_BATCH * SIZE * SIZE * 3 * sizeof(float));
    if (!inputs || omma_device_open(0, &dev) != OMMA_OK) {
        fprintf(stderr, "setup: %s\n", omma_last_error());
        return 1;
    }
    /* The footballer's square, moved and scaled a little per item. */
    for (int k = 0; k < MAX_BATCH; k++) {
        float x0 = 85.0f + 4.0f * (float)(k % 9 - 4), y0 = 10.0f + 3.0f * (float)(k % 7 - 3);
        float side = 340.0f + 5.0f * (float)(k % 5 - 2);
        rgb_image_sample(&photo, x0, y0, x0 + side, y0 + side, SIZE, SIZE, 1.0f / 255.0f, 0.0f,
                         inputs + (size_t)k * SIZE * SIZE * 3);
    }
    rgb_image_free(&photo);
    RUN(test_cache);
    RUN(test_lite);
    RUN(test_full);
    RUN(test_heavy);
    omma_device_close(dev);
    free(inputs);
    return testing_finish();
}
