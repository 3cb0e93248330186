/* The CPU backend on several threads (omma_engine_options.threads):
 *   - the pool (engine/cpu_pool.h) splits a range into contiguous parts in
 *     order, as many as the threads and the grain allow, runs thousands of
 *     jobs back to back without losing or repeating one, and refuses bad
 *     thread counts;
 *   - the three face models on the astronaut photo (crops at several
 *     places, batches of 1 and 3) give bitwise the same outputs on 1, 2, 3
 *     and 7 threads and with the default (all cores) as on one thread;
 *   - bad thread counts are refused naming the option. */
#include <stdatomic.h>
#include <string.h>

#include "engine/cpu_pool.h"
#include "omma/engine.h"
#include "support/face_inputs.h"
#include "testing.h"

#define RANGE 1000
#define JOBS 3000

typedef struct parts_seen {
    int parts;
    long begin[CPU_POOL_MAX_THREADS], end[CPU_POOL_MAX_THREADS];
    int hits[RANGE];
} parts_seen;

static void record(void *arg, int part, long begin, long end)
{
    parts_seen *s = arg;
    s->begin[part] = begin;
    s->end[part] = end;
    for (long i = begin; i < end; i++)
        s->hits[i]++;
    /* Parts run at once: each writes only its own slots. */
}

static void check_split(cpu_pool *p, long count, long grain, int want_parts)
{
    static parts_seen s;
    memset(&s, 0, sizeof s);
    for (int k = 0; k < CPU_POOL_MAX_THREADS; k++)
        s.begin[k] = s.end[k] = -1;
    cpu_pool_run(p, count, grain, record, &s);
    int parts = 0;
    while (parts < CPU_POOL_MAX_THREADS && s.begin[parts] >= 0)
        parts++;
    CHECK(parts == want_parts);
    CHECK(s.begin[0] == 0 && s.end[parts - 1] == count);
    for (int k = 1; k < parts; k++)
        CHECK(s.begin[k] == s.end[k - 1] && s.end[k] > s.begin[k]);
    for (long i = 0; i < count; i++)
        CHECK(s.hits[i] == 1);
}

static atomic_long job_sum;

static void add_range(void *arg, int part, long begin, long end)
{
    (void)arg;
    (void)part;
    long sum = 0;
    for (long i = begin; i < end; i++)
        sum += i;
    atomic_fetch_add(&job_sum, sum);
}

static void test_pool(void)
{
    cpu_pool *p = (cpu_pool *)1;
    CHECK_FAILS(cpu_pool_create(0, &p), OMMA_ERR_INVALID_ARG, "0 threads not in 1..256");
    CHECK(p == NULL);
    CHECK_FAILS(cpu_pool_create(CPU_POOL_MAX_THREADS + 1, &p), OMMA_ERR_INVALID_ARG, "257 threads");
    CHECK(cpu_pool_resolve(0) >= 1 && cpu_pool_resolve(0) <= CPU_POOL_MAX_THREADS);
    CHECK(cpu_pool_resolve(5) == 5);
    CHECK(cpu_pool_threads(NULL) == 1);
    check_split(NULL, RANGE, 1, 1); /* no pool: the caller alone */

    REQUIRE_OK(cpu_pool_create(3, &p));
    CHECK(cpu_pool_threads(p) == 3);
    check_split(p, RANGE, 1, 3);
    check_split(p, 10, 4, 2); /* 10 / 4: two parts of at least 4 */
    check_split(p, 10, 100, 1); /* too little for a second thread */
    check_split(p, 2, 1, 2); /* fewer indices than threads */
    check_split(p, RANGE, 1, 3); /* after jobs with fewer parts */
    /* Many jobs back to back, of 1 to 3 parts: none lost, none twice. */
    long want = 0;
    atomic_store(&job_sum, 0);
    for (int j = 0; j < JOBS; j++) {
        long count = 1 + j % 7;
        cpu_pool_run(p, count, 1 + j % 3, add_range, NULL);
        want += count * (count - 1) / 2;
    }
    CHECK(atomic_load(&job_sum) == want);
    cpu_pool_destroy(p);
    cpu_pool_destroy(NULL);

    REQUIRE_OK(cpu_pool_create(1, &p)); /* no worker: runs on the caller */
    check_split(p, RANGE, 1, 1);
    cpu_pool_destroy(p);
}

/* Fills item k of the model's input from the photo: the detectors get the
 * whole photo shifted by 16k pixels, FaceMesh the face crop shifted so. */
static void fill_input(const rgb_image *img, const char *path, const omma_tensor_info *in, int k,
                       float *x)
{
    int h = in->dims[1], w = in->dims[2];
    float d = 16.0f * (float)k;
    if (strcmp(path, FACE_MODEL_MESH) == 0)
        face_mesh_input(img, FACE_CROP_CX + d, FACE_CROP_CY - d, FACE_CROP_SIDE, x);
    else
        rgb_image_sample(img, d, -d, (float)img->width + d, (float)img->height - d, w, h,
                         1.0f / 127.5f, -1.0f, x);
}

/* Runs the model on `threads` threads at batch 1 (item 0) and batch 3;
 * out gets both runs' outputs back to back. Returns the floats written. */
static size_t run_model(const char *path, const rgb_image *img, int threads, float *out)
{
    omma_engine_options o;
    omma_engine_options_init(&o);
    o.threads = threads;
    omma_engine *e = NULL;
    omma_exec *x = NULL;
    size_t n = 0;
    if (omma_engine_load(NULL, path, &o, &e) != OMMA_OK || omma_exec_create(e, 3, &x) != OMMA_OK) {
        fprintf(stderr, "%s: %s\n", path, omma_last_error());
        omma_engine_release(e);
        return 0;
    }
    omma_tensor_info in;
    float *buf;
    omma_engine_input_info(e, 0, &in);
    omma_exec_input(x, 0, &buf);
    for (int batch = 1; batch <= 3; batch += 2) {
        for (int k = 0; k < batch; k++)
            fill_input(img, path, &in, k, buf + (size_t)k * in.item_elems);
        if (omma_exec_run(x, batch) != OMMA_OK) {
            fprintf(stderr, "%s: %s\n", path, omma_last_error());
            n = 0;
            break;
        }
        for (int i = 0; i < omma_engine_output_count(e); i++) {
            omma_tensor_info info;
            float *y;
            omma_engine_output_info(e, i, &info);
            omma_exec_output(x, i, &y);
            memcpy(out + n, y, (size_t)batch * info.item_elems * sizeof *y);
            n += (size_t)batch * info.item_elems;
        }
    }
    omma_exec_destroy(x);
    omma_engine_release(e);
    return n;
}

static void check_model(const char *path)
{
    rgb_image img;
    REQUIRE_OK(rgb_image_load_png(FACE_PHOTO, &img));
    /* Largest: FaceMesh's 1404 + 1 values, the full-range detector's 2304
     * x 17, per item, 4 items. */
    size_t cap = (size_t)4 * 2304 * 17;
    float *one = malloc(cap * sizeof *one), *many = malloc(cap * sizeof *many);
    REQUIRE(one && many);
    size_t n1 = run_model(path, &img, 1, one);
    CHECK(n1 > 0);
    /* Not all zeros: the model ran. */
    int nonzero = 0;
    for (size_t i = 0; i < n1; i++)
        nonzero += one[i] != 0.0f;
    CHECK(nonzero > (int)(n1 / 2));
    static const int counts[] = {2, 3, 7, 0};
    for (size_t t = 0; t < sizeof counts / sizeof counts[0]; t++) {
        size_t n = run_model(path, &img, counts[t], many);
        CHECK(n == n1);
        if (n == n1 && memcmp(one, many, n1 * sizeof *one) != 0) {
            size_t i = 0;
            while (one[i] == many[i])
                i++;
            fprintf(stderr, "%s: %d threads differ from 1 at value %zu: %.9g vs %.9g\n", path,
                    counts[t], i, (double)many[i], (double)one[i]);
            CHECK(0);
        }
    }
    free(one);
    free(many);
    rgb_image_free(&img);
}

static void test_short_range_bitwise(void)
{
    check_model(FACE_MODEL_SHORT);
}
static void test_full_range_bitwise(void)
{
    check_model(FACE_MODEL_FULL);
}
static void test_mesh_bitwise(void)
{
    check_model(FACE_MODEL_MESH);
}

static void test_bad_thread_counts(void)
{
    omma_engine_options o;
    omma_engine_options_init(&o);
    CHECK(o.threads == 0);
    omma_engine *e = (omma_engine *)1;
    o.threads = -1;
    CHECK_FAILS(omma_engine_load(NULL, FACE_MODEL_SHORT, &o, &e), OMMA_ERR_INVALID_ARG,
                "threads -1 not in 0..256");
    CHECK(e == NULL);
    o.threads = 257;
    CHECK_FAILS(omma_engine_load(NULL, FACE_MODEL_SHORT, &o, &e), OMMA_ERR_INVALID_ARG,
                "threads 257");
    CHECK(omma_cpu_thread_count(0) >= 1);
    CHECK(omma_cpu_thread_count(1) == 1);
    CHECK(omma_cpu_thread_count(12) == 12);
    CHECK(omma_cpu_thread_count(-1) == 0 && omma_cpu_thread_count(257) == 0);
}

int main(void)
{
    RUN(test_pool);
    RUN(test_short_range_bitwise);
    RUN(test_full_range_bitwise);
    RUN(test_mesh_bitwise);
    RUN(test_bad_thread_counts);
    return testing_finish();
}
