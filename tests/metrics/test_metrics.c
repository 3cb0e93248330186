#define _POSIX_C_SOURCE                                                                            \
    200809L /* popen, mkstemp                                                                      \
             *                                                                                     \
             * Why one file of ~1k lines: the parsers of the three reports live beside             \
             * the checks that use them; each section tests one report.                            \
             */
/* The metrics registry and its reports: exact counters under contention,
 * quantiles within the stated 5%, rates from injected clocks, GPU readings
 * with "unavailable" kept apart from 0, and the three reports checked by
 * parsing them (OpenMetrics line by line, JSON by a scanner and, where
 * python3 exists, by json.loads). */
#include <ctype.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <unistd.h>

#include "metrics/metrics.h"
#include "testing.h"

static const char *const stages[] = {"upload", "detector", "mesh", "step"};

static metrics_registry *make_registry(void)
{
    metrics_config cfg = {.stage_names = stages, .n_stages = 4};
    metrics_registry *m = NULL;
    if (metrics_create(&cfg, &m) != OMMA_OK)
        fprintf(stderr, "metrics_create: %s\n", omma_last_error());
    return m;
}

/* A reproducible generator (xorshift64*) for the test distributions. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static double rng_uniform(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (double)((rng_state * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

/* ---- Counters from 8 threads -------------------------------------------- */

#define THREADS 8
#define ITERS 20000
#define CAMS 4

typedef struct worker {
    metrics_registry *m;
    int id;
    uint64_t latency_sum[CAMS];
} worker;

static void *worker_main(void *arg)
{
    worker *w = arg;
    for (int i = 0; i < ITERS; i++) {
        int cam = (w->id + i) % CAMS;
        uint64_t lat = 1000 + (uint64_t)((w->id * 7919 + i * 104729) % 50000000);
        metrics_frame_in(w->m, cam);
        metrics_frame_done(w->m, cam, lat);
        w->latency_sum[cam] += lat;
        if (i % 10 == 0)
            metrics_frames_dropped(w->m, cam, 2);
        metrics_stage_time(w->m, w->id % 2, i % 4, lat / 2);
        metrics_frame_in(w->m, 999); /* unregistered: ignored */
        metrics_stage_time(w->m, 0, 9, 5); /* no such stage: ignored */
    }
    return NULL;
}

typedef struct reader {
    metrics_registry *m;
    _Atomic int stop;
    int snapshots, went_back, failed;
} reader;

static void *reader_main(void *arg)
{
    reader *r = arg;
    uint64_t last_in[CAMS] = {0};
    while (!atomic_load(&r->stop)) {
        metrics_snapshot *s = NULL;
        if (metrics_snapshot_take(r->m, &s) != OMMA_OK) {
            r->failed = 1;
            return NULL;
        }
        for (int i = 0; i < s->n_cameras && i < CAMS; i++) {
            if (s->cameras[i].frames_in < last_in[i])
                r->went_back = 1;
            last_in[i] = s->cameras[i].frames_in;
        }
        metrics_snapshot_free(s);
        r->snapshots++;
    }
    return NULL;
}

static void test_counters_from_threads(void)
{
    metrics_registry *m = make_registry();
    REQUIRE(m);
    for (int c = 0; c < CAMS; c++)
        REQUIRE_OK(metrics_add_camera(m, c, NULL, c % 2));
    REQUIRE_OK(metrics_add_gpu(m, 0, "gpu zero"));
    REQUIRE_OK(metrics_add_gpu(m, 1, "gpu one"));

    worker w[THREADS];
    pthread_t th[THREADS], rt;
    reader r = {.m = m};
    REQUIRE(pthread_create(&rt, NULL, reader_main, &r) == 0);
    for (int i = 0; i < THREADS; i++) {
        w[i] = (worker){.m = m, .id = i};
        REQUIRE(pthread_create(&th[i], NULL, worker_main, &w[i]) == 0);
    }
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    atomic_store(&r.stop, 1);
    pthread_join(rt, NULL);
    CHECK(!r.failed);
    CHECK(!r.went_back);
    CHECK(r.snapshots > 0);

    metrics_snapshot *s = NULL;
    REQUIRE_OK(metrics_snapshot_take(m, &s));
    CHECK(s->n_cameras == CAMS);
    CHECK(s->n_gpus == 2);
    uint64_t per_cam = (uint64_t)THREADS * ITERS / CAMS;
    uint64_t drops_per_cam = (uint64_t)THREADS * (ITERS / 10) * 2 / CAMS;
    for (int c = 0; c < CAMS && c < s->n_cameras; c++) {
        const metrics_camera_snap *cs = &s->cameras[c];
        uint64_t sum = 0;
        for (int i = 0; i < THREADS; i++)
            sum += w[i].latency_sum[c];
        CHECK(cs->index == c);
        CHECK(cs->frames_in == per_cam);
        CHECK(cs->frames_processed == per_cam);
        CHECK(cs->frames_dropped == drops_per_cam);
        CHECK(cs->latency.count == per_cam);
        CHECK(cs->latency.sum_ns == sum);
        CHECK(strcmp(cs->name, c == 0 ? "cam0" : c == 1 ? "cam1" : c == 2 ? "cam2" : "cam3") == 0);
    }
    CHECK(s->frames_processed == (uint64_t)THREADS * ITERS);
    uint64_t stage_total = 0;
    for (int g = 0; g < 2; g++)
        for (int k = 0; k < 4; k++) {
            CHECK(s->gpus[g].stages[k].count == (uint64_t)(THREADS / 2) * ITERS / 4);
            stage_total += s->gpus[g].stages[k].count;
        }
    CHECK(stage_total == (uint64_t)THREADS * ITERS);
    metrics_snapshot_free(s);
    metrics_destroy(m);
}

/* ---- Quantiles ---------------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Feeds n values to one camera's histogram and compares quantiles with the
 * exact nearest-rank ones: within 5%. */
static void check_distribution(const char *what, uint64_t *v, int n)
{
    metrics_registry *m = NULL;
    REQUIRE_OK(metrics_create(NULL, &m));
    REQUIRE_OK(metrics_add_camera(m, 7, what, -1));
    for (int i = 0; i < n; i++)
        metrics_frame_done(m, 7, v[i]);
    metrics_snapshot *s = NULL;
    REQUIRE_OK(metrics_snapshot_take(m, &s));
    qsort(v, (size_t)n, sizeof *v, cmp_u64);
    static const double qs[] = {0.0, 0.01, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0};
    CHECK(s->cameras[0].latency.count == (uint64_t)n);
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        long rank = (long)ceil(qs[i] * n);
        if (rank < 1)
            rank = 1;
        double exact = (double)v[rank - 1];
        double est = metrics_hist_quantile_ns(&s->cameras[0].latency, qs[i]);
        double rel = fabs(est - exact) / exact;
        if (!(rel <= 0.05)) {
            fprintf(stderr, "%s: q%.3f estimate %.0f ns, exact %.0f ns (%.1f%%)\n", what, qs[i],
                    est, exact, rel * 100);
            CHECK(rel <= 0.05);
        }
    }
    metrics_snapshot_free(s);
    metrics_destroy(m);
}

static void test_quantiles(void)
{
    enum { N = 100000 };
    uint64_t *v = malloc(N * sizeof *v);
    REQUIRE(v);
    for (int i = 0; i < N; i++) /* uniform 1..50 ms */
        v[i] = 1000000 + (uint64_t)(rng_uniform() * 49e6);
    check_distribution("uniform", v, N);
    for (int i = 0; i < N; i++) /* log-uniform over the whole range, 1 us..10 s */
        v[i] = (uint64_t)(1000.0 * pow(10.0, 7.0 * rng_uniform())) + 1;
    check_distribution("log-uniform", v, N);
    for (int i = 0; i < N; i++) /* exponential, mean 5 ms, from 10 us */
        v[i] = 10000 + (uint64_t)(-5e6 * log(1.0 - rng_uniform()));
    check_distribution("exponential", v, N);
    for (int i = 0; i < N; i++) /* 98% at 2 ms, 2% at 100 ms: p99 is 100 ms */
        v[i] = i % 50 == 0 ? 100000000 : 2000000;
    check_distribution("bimodal", v, N);
    for (int i = 0; i < 3; i++) /* a few values: every quantile is one of them */
        v[i] = (uint64_t)(i + 1) * 3333333;
    check_distribution("three", v, 3);
    free(v);

    /* Bounds: 1 us .. 10 s, log-spaced within 9.7%, a value at a bound in
     * that bound's bucket, outside the range clamped, empty NAN. */
    CHECK(metrics_bucket_le_ns(0) == 1000);
    CHECK(metrics_bucket_le_ns(METRICS_BOUNDS - 1) == 10000000000ull);
    CHECK(metrics_bucket_le_ns(25) == 10000);
    for (int k = 1; k < METRICS_BOUNDS; k++) {
        double r = (double)metrics_bucket_le_ns(k) / (double)metrics_bucket_le_ns(k - 1);
        CHECK(r > 1.09 && r < 1.0970);
    }
    metrics_registry *m = NULL;
    REQUIRE_OK(metrics_create(NULL, &m));
    REQUIRE_OK(metrics_add_camera(m, 0, "edges", -1));
    metrics_frame_done(m, 0, metrics_bucket_le_ns(50));
    metrics_frame_done(m, 0, metrics_bucket_le_ns(50) + 1);
    metrics_frame_done(m, 0, 0);
    metrics_frame_done(m, 0, 20000000000ull);
    metrics_snapshot *s = NULL;
    REQUIRE_OK(metrics_snapshot_take(m, &s));
    const metrics_hist *h = &s->cameras[0].latency;
    CHECK(h->buckets[50] == 1 && h->buckets[51] == 1 && h->buckets[0] == 1);
    CHECK(h->buckets[METRICS_BUCKETS - 1] == 1);
    CHECK(h->sum_ns == 2 * metrics_bucket_le_ns(50) + 1 + 20000000000ull);
    CHECK(metrics_hist_quantile_ns(h, 0.0) == 1000.0);
    CHECK(metrics_hist_quantile_ns(h, 1.0) == 1e10);
    CHECK(isnan(metrics_hist_quantile_ns(h, 1.5)));
    metrics_hist empty = {0};
    CHECK(isnan(metrics_hist_quantile_ns(&empty, 0.5)));
    metrics_snapshot_free(s);
    metrics_destroy(m);
}

/* ---- Rates -------------------------------------------------------------- */

static void add_frames(metrics_registry *m, int cam, int in, int done)
{
    for (int i = 0; i < in; i++)
        metrics_frame_in(m, cam);
    for (int i = 0; i < done; i++)
        metrics_frame_done(m, cam, 5000000);
}

static void test_rates(void)
{
    const uint64_t S = 1000000000ull;
    metrics_registry *m = make_registry();
    REQUIRE(m);
    REQUIRE_OK(metrics_add_camera(m, 0, "a", 0));
    metrics_snapshot *s = NULL;

    /* The first snapshot has nothing to measure from. */
    add_frames(m, 0, 5, 5);
    REQUIRE_OK(metrics_snapshot_take_at(m, 100 * S, 1000, &s));
    CHECK(isnan(s->cameras[0].fps_in) && s->cameras[0].rate_span_ns == 0);
    CHECK(isnan(s->cpu_ns_per_frame));
    metrics_snapshot_free(s);

    /* One second later: 30 in, 25 out; 1 ms of CPU for 25 frames. */
    add_frames(m, 0, 30, 25);
    REQUIRE_OK(metrics_snapshot_take_at(m, 101 * S, 1000 + 1000000, &s));
    CHECK_NEAR(s->cameras[0].fps_in, 30.0, 1e-9);
    CHECK_NEAR(s->cameras[0].fps_processed, 25.0, 1e-9);
    CHECK(s->cameras[0].rate_span_ns == S);
    CHECK_NEAR(s->cpu_ns_per_frame, 40000.0, 1e-6);
    metrics_snapshot_free(s);

    /* A camera added now has no rate until a later snapshot. */
    REQUIRE_OK(metrics_add_camera(m, 1, "b", 0));
    add_frames(m, 1, 10, 10);
    /* Half a second: the newest entry a full window old is the one at 100 s. */
    add_frames(m, 0, 15, 15);
    REQUIRE_OK(metrics_snapshot_take_at(m, 101 * S + S / 2, 2000000, &s));
    CHECK_NEAR(s->cameras[0].fps_in, 30.0, 1e-9); /* 45 frames over 1.5 s */
    CHECK(s->cameras[0].rate_span_ns == S + S / 2);
    CHECK(isnan(s->cameras[1].fps_in));
    metrics_snapshot_free(s);

    /* 2 s: a window back is the entry at 101 s; camera b counts from 101.5 s. */
    add_frames(m, 0, 30, 30);
    add_frames(m, 1, 6, 3);
    REQUIRE_OK(metrics_snapshot_take_at(m, 102 * S, 3000000, &s));
    CHECK_NEAR(s->cameras[0].fps_in, 45.0, 1e-9);
    CHECK_NEAR(s->cameras[1].fps_in, 12.0, 1e-9);
    CHECK_NEAR(s->cameras[1].fps_processed, 6.0, 1e-9);
    CHECK(s->cameras[1].rate_span_ns == S / 2);
    metrics_snapshot_free(s);

    /* Time cannot go back; a snapshot at the same instant has rates too. */
    CHECK_FAILS(metrics_snapshot_take_at(m, 101 * S, 0, &s), OMMA_ERR_INVALID_ARG, "went back");
    CHECK(s == NULL);
    REQUIRE_OK(metrics_snapshot_take_at(m, 102 * S, 3000000, &s));
    CHECK_NEAR(s->cameras[0].fps_in, 45.0, 1e-9);
    metrics_snapshot_free(s);

    /* Long after: the rate spans back to the newest entry (2 s). */
    add_frames(m, 0, 20, 20);
    REQUIRE_OK(metrics_snapshot_take_at(m, 112 * S, 3000000, &s));
    CHECK_NEAR(s->cameras[0].fps_in, 2.0, 1e-9);
    CHECK(s->cameras[0].rate_span_ns == 10 * S);
    metrics_snapshot_free(s);
    metrics_destroy(m);
}

/* ---- GPU readings ------------------------------------------------------- */

static char *format(omma_status (*fn)(const metrics_snapshot *, char **, size_t *),
                    const metrics_snapshot *s)
{
    char *text = NULL;
    size_t len = 0;
    if (fn(s, &text, &len) != OMMA_OK) {
        fprintf(stderr, "format: %s\n", omma_last_error());
        return NULL;
    }
    if (strlen(text) != len) {
        fprintf(stderr, "format: length %zu, strlen %zu\n", len, strlen(text));
        free(text);
        return NULL;
    }
    return text;
}

static void test_gpu_readings(void)
{
    metrics_registry *m = make_registry();
    REQUIRE(m);
    REQUIRE_OK(metrics_add_gpu(m, 0, "NVIDIA H100 80GB HBM3"));
    REQUIRE_OK(metrics_add_gpu(m, 3, NULL));
    REQUIRE_OK(metrics_add_gpu(m, 5, "never read"));

    omma_device_metrics idle = {.available = 1,
                                .valid = OMMA_METRIC_UTILIZATION | OMMA_METRIC_MEMORY |
                                         OMMA_METRIC_TEMPERATURE,
                                .gpu_util_pct = 0,
                                .mem_used = 0,
                                .mem_total = 85520809984ull,
                                .temperature_c = 31};
    metrics_gpu_reading(m, 0, &idle); /* zeros that are readings; power not read */
    omma_device_metrics none = {.available = 0, .valid = OMMA_METRIC_POWER, .power_mw = 1};
    snprintf(none.reason, sizeof none.reason, "libnvidia-ml.so.1 not found");
    metrics_gpu_reading(m, 3, &none);
    metrics_gpu_reading(m, 9, &idle); /* not registered: ignored */

    metrics_snapshot *s = NULL;
    REQUIRE_OK(metrics_snapshot_take(m, &s));
    REQUIRE(s->n_gpus == 3);
    CHECK(s->gpus[0].index == 0 && s->gpus[1].index == 3 && s->gpus[2].index == 5);
    CHECK(strcmp(s->gpus[1].name, "gpu3") == 0);
    CHECK(s->gpus[0].reading.available == 1);
    CHECK(s->gpus[0].reading.gpu_util_pct == 0 && s->gpus[0].reading.mem_total == 85520809984ull);
    CHECK(!(s->gpus[0].reading.valid & OMMA_METRIC_POWER));
    CHECK(s->gpus[1].reading.available == 0 && s->gpus[1].reading.valid == 0);
    CHECK(strcmp(s->gpus[1].reading.reason, "libnvidia-ml.so.1 not found") == 0);
    CHECK(s->gpus[2].reading.available == 0);
    CHECK(strcmp(s->gpus[2].reading.reason, "no reading yet") == 0);

    char *om = format(metrics_format_openmetrics, s);
    REQUIRE(om);
    CHECK(strstr(om, "omma_gpu_utilization_ratio{gpu=\"0\"} 0.0\n"));
    CHECK(strstr(om, "omma_gpu_memory_used_bytes{gpu=\"0\"} 0\n"));
    CHECK(strstr(om, "omma_gpu_memory_total_bytes{gpu=\"0\"} 85520809984\n"));
    CHECK(strstr(om, "omma_gpu_temperature_celsius{gpu=\"0\"} 31\n"));
    CHECK(!strstr(om, "omma_gpu_power_watts{"));
    CHECK(!strstr(om, "{gpu=\"3\"} 0.0"));
    CHECK(strstr(om, "omma_gpu_readings_available{gpu=\"0\"} 1\n"));
    CHECK(strstr(om, "omma_gpu_readings_available{gpu=\"3\"} 0\n"));
    CHECK(strstr(om, "omma_gpu_readings_available{gpu=\"5\"} 0\n"));
    CHECK(strstr(om, "omma_gpu_info{gpu=\"0\",name=\"NVIDIA H100 80GB HBM3\"} 1\n"));
    free(om);

    char *js = format(metrics_format_json, s);
    REQUIRE(js);
    CHECK(strstr(js, "\"index\":0,\"name\":\"NVIDIA H100 80GB HBM3\",\"available\":true,"
                     "\"util_pct\":0,\"mem_used_bytes\":0,\"mem_total_bytes\":85520809984,"
                     "\"power_w\":null,\"temperature_c\":31"));
    CHECK(strstr(js, "\"available\":false,\"reason\":\"libnvidia-ml.so.1 not found\","
                     "\"util_pct\":null,\"mem_used_bytes\":null,\"mem_total_bytes\":null,"
                     "\"power_w\":null,\"temperature_c\":null"));
    free(js);

    char *tb = format(metrics_format_table, s);
    REQUIRE(tb);
    CHECK(strstr(tb, "\n   0 NVIDIA H100 80GB HBM    0%        0.0/79.6       -     31 "));
    CHECK(strstr(tb, "\n   3 gpu3                     -               -       -      - "));
    free(tb);
    metrics_snapshot_free(s);

    /* A later good reading replaces the unavailable one. */
    omma_device_metrics busy = idle;
    busy.valid |= OMMA_METRIC_POWER;
    busy.gpu_util_pct = 87;
    busy.power_mw = 312500;
    metrics_gpu_reading(m, 3, &busy);
    REQUIRE_OK(metrics_snapshot_take(m, &s));
    CHECK(s->gpus[1].reading.available == 1 && s->gpus[1].reading.gpu_util_pct == 87);
    om = format(metrics_format_openmetrics, s);
    CHECK(om && strstr(om, "omma_gpu_power_watts{gpu=\"3\"} 312.5\n"));
    CHECK(om && strstr(om, "omma_gpu_utilization_ratio{gpu=\"3\"} 0.87\n"));
    free(om);
    metrics_snapshot_free(s);
    metrics_destroy(m);
}

/* ---- Registration ------------------------------------------------------- */

static void test_registration_errors(void)
{
    metrics_registry *m = NULL;
    const char *dup[] = {"a", "a"};
    metrics_config cfg = {.stage_names = dup, .n_stages = 2};
    CHECK_FAILS(metrics_create(&cfg, &m), OMMA_ERR_INVALID_ARG, "twice");
    CHECK(m == NULL);
    cfg.n_stages = METRICS_MAX_STAGES + 1;
    CHECK_FAILS(metrics_create(&cfg, &m), OMMA_ERR_INVALID_ARG, "stages");
    const char *empty[] = {""};
    cfg = (metrics_config){.stage_names = empty, .n_stages = 1};
    CHECK_FAILS(metrics_create(&cfg, &m), OMMA_ERR_INVALID_ARG, "empty");
    CHECK_FAILS(metrics_create(NULL, NULL), OMMA_ERR_INVALID_ARG, "NULL out");

    REQUIRE_OK(metrics_create(NULL, &m));
    CHECK_FAILS(metrics_add_camera(m, -1, "x", 0), OMMA_ERR_INVALID_ARG, "out of range");
    CHECK_FAILS(metrics_add_camera(m, METRICS_MAX_CAMERAS, "x", 0), OMMA_ERR_INVALID_ARG,
                "4096 out of range");
    REQUIRE_OK(metrics_add_camera(m, METRICS_MAX_CAMERAS - 1, "last", 0));
    REQUIRE_OK(metrics_add_camera(m, 0, "first", -5));
    CHECK_FAILS(metrics_add_camera(m, 0, "other", 0), OMMA_ERR_INVALID_ARG,
                "camera 0 is already registered");
    CHECK_FAILS(metrics_add_camera(m, 1, "last", 0), OMMA_ERR_INVALID_ARG,
                "camera name \"last\" is camera 4095's");
    CHECK_FAILS(metrics_add_camera(m, 1, "", 0), OMMA_ERR_INVALID_ARG, "empty");
    CHECK_FAILS(metrics_add_camera(m, 1, "bad \xC3\x28", 0), OMMA_ERR_INVALID_ARG, "UTF-8");
    CHECK_FAILS(metrics_add_camera(m, 1, "\xED\xA0\x80", 0), OMMA_ERR_INVALID_ARG, "UTF-8");
    char longname[METRICS_NAME_MAX + 1];
    memset(longname, 'n', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    CHECK_FAILS(metrics_add_camera(m, 1, longname, 0), OMMA_ERR_INVALID_ARG, "128 bytes");
    REQUIRE_OK(metrics_add_camera(m, 1, "caméra ☃", 0));
    CHECK_FAILS(metrics_add_gpu(m, METRICS_MAX_GPUS, NULL), OMMA_ERR_INVALID_ARG, "out of range");
    REQUIRE_OK(metrics_add_gpu(m, 0, NULL));
    CHECK_FAILS(metrics_add_gpu(m, 0, NULL), OMMA_ERR_INVALID_ARG, "already registered");

    /* Placement and state changes show in the snapshot. */
    metrics_camera_set_gpu(m, 1, 2);
    metrics_camera_set_state(m, 1, METRICS_CAMERA_FAILED);
    metrics_camera_set_state(m, 5, METRICS_CAMERA_FAILED); /* not registered: ignored */
    metrics_snapshot *s = NULL;
    REQUIRE_OK(metrics_snapshot_take(m, &s));
    REQUIRE(s->n_cameras == 3);
    CHECK(s->cameras[0].index == 0 && s->cameras[0].gpu == -1);
    CHECK(s->cameras[1].gpu == 2 && s->cameras[1].state == METRICS_CAMERA_FAILED);
    CHECK(s->cameras[2].index == METRICS_MAX_CAMERAS - 1 &&
          s->cameras[2].state == METRICS_CAMERA_RUNNING);
    CHECK(strcmp(metrics_camera_state_str(METRICS_CAMERA_ENDED), "ended") == 0);
    CHECK(strcmp(metrics_camera_state_str((metrics_camera_state)42), "unknown") == 0);
    metrics_snapshot_free(s);
    CHECK_FAILS(metrics_snapshot_take(NULL, &s), OMMA_ERR_INVALID_ARG, "NULL registry");
    char *text = (char *)1;
    CHECK_FAILS(metrics_format_json(NULL, &text, NULL), OMMA_ERR_INVALID_ARG, "NULL snapshot");
    CHECK(text == NULL);
    metrics_destroy(m);
    metrics_destroy(NULL);
}

/* ---- OpenMetrics, parsed ------------------------------------------------ */

/* A checker for the text format (OpenMetrics 1.0, the parts omma writes):
 * metadata before samples, families not interleaved, sample names of the
 * family's type, labels well escaped, histograms cumulative to +Inf ==
 * _count, "# EOF\n" last. Decoded camera label values are kept. */
typedef struct om_parse {
    char err[256];
    int line;
    char families[64][96];
    int n_families;
    char fam[96], type[24];
    /* The histogram series being read. */
    char series[512];
    double last_le;
    uint64_t last_cum, inf_count;
    int in_series, saw_inf, saw_count, saw_sum, n_buckets;
    char cameras[16][METRICS_NAME_MAX];
    int n_cameras;
    int samples;
} om_parse;

#define OM_FAIL(p, ...)                                                                            \
    do {                                                                                           \
        int at_ = snprintf((p)->err, sizeof(p)->err, "line %d: ", (p)->line);                      \
        snprintf((p)->err + at_, sizeof(p)->err - (size_t)at_, __VA_ARGS__);                       \
        return 0;                                                                                  \
    } while (0)

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static int om_series_done(om_parse *p)
{
    if (p->in_series && !(p->saw_inf && p->saw_count && p->saw_sum))
        OM_FAIL(p, "histogram series {%.100s} incomplete (inf %d count %d sum %d)", p->series,
                p->saw_inf, p->saw_count, p->saw_sum);
    p->in_series = 0;
    return 1;
}

static int om_sample(om_parse *p, const char *line)
{
    const char *s = line;
    char name[128];
    size_t n = 0;
    if (!(isalpha((unsigned char)*s) || *s == '_' || *s == ':'))
        OM_FAIL(p, "bad metric name");
    while (isalnum((unsigned char)*s) || *s == '_' || *s == ':') {
        if (n + 1 < sizeof name)
            name[n++] = *s;
        s++;
    }
    name[n] = '\0';
    /* Labels: the series key is every label but le, as written. */
    char key[512] = "", le[64] = "";
    if (*s == '{') {
        s++;
        while (*s != '}') {
            char lname[64], value[256];
            size_t ln = 0, vn = 0;
            if (!(isalpha((unsigned char)*s) || *s == '_'))
                OM_FAIL(p, "bad label name at \"%.20s\"", s);
            while (isalnum((unsigned char)*s) || *s == '_')
                if (ln + 1 < sizeof lname)
                    lname[ln++] = *s++;
            lname[ln] = '\0';
            if (s[0] != '=' || s[1] != '"')
                OM_FAIL(p, "label %s: no =\"", lname);
            s += 2;
            while (*s != '"') {
                char c = *s++;
                if (c == '\0' || c == '\n')
                    OM_FAIL(p, "label %s: unterminated value", lname);
                if (c == '\\') {
                    c = *s++;
                    if (c == 'n')
                        c = '\n';
                    else if (c != '\\' && c != '"')
                        OM_FAIL(p, "label %s: bad escape \\%c", lname, c);
                }
                if (vn + 1 < sizeof value)
                    value[vn++] = c;
            }
            value[vn] = '\0';
            s++;
            if (strcmp(lname, "le") == 0) {
                snprintf(le, sizeof le, "%.60s", value);
            } else {
                size_t k = strlen(key);
                snprintf(key + k, sizeof key - k, "%s=%s;", lname, value);
            }
            if (strcmp(lname, "camera") == 0 && strcmp(name, "omma_camera_info") == 0 &&
                p->n_cameras < 16)
                snprintf(p->cameras[p->n_cameras++], METRICS_NAME_MAX, "%.120s", value);
            if (*s == ',')
                s++;
            else if (*s != '}')
                OM_FAIL(p, "labels: expected , or }");
        }
        s++;
    }
    if (*s != ' ')
        OM_FAIL(p, "no space before the value");
    s++;
    char *end;
    double value = strtod(s, &end);
    if (end == s || *end != '\0')
        OM_FAIL(p, "bad value \"%s\"", s);
    p->samples++;

    /* The sample must belong to the current family. */
    if (!p->fam[0])
        OM_FAIL(p, "sample %s before any TYPE", name);
    char want[128];
    const char *suffix = name + strlen(p->fam);
    if (strncmp(name, p->fam, strlen(p->fam)) != 0)
        OM_FAIL(p, "sample %s outside family %s", name, p->fam);
    if (strcmp(p->type, "counter") == 0) {
        if (strcmp(suffix, "_total") != 0)
            OM_FAIL(p, "counter sample %s lacks _total", name);
        if (value < 0)
            OM_FAIL(p, "counter %s = %g", name, value);
    } else if (strcmp(p->type, "gauge") == 0 || strcmp(p->type, "stateset") == 0) {
        if (*suffix)
            OM_FAIL(p, "gauge sample %s has a suffix", name);
    } else if (strcmp(p->type, "info") == 0) {
        if (strcmp(suffix, "_info") != 0 || value != 1)
            OM_FAIL(p, "info sample %s", name);
    } else if (strcmp(p->type, "histogram") == 0) {
        if (strcmp(key, p->series) != 0 || !p->in_series) {
            if (!om_series_done(p))
                return 0;
            snprintf(p->series, sizeof p->series, "%s", key);
            p->in_series = 1;
            p->saw_inf = p->saw_count = p->saw_sum = p->n_buckets = 0;
            p->last_le = -1;
            p->last_cum = 0;
        }
        if (strcmp(suffix, "_bucket") == 0) {
            if (p->saw_inf || p->saw_count || p->saw_sum)
                OM_FAIL(p, "bucket after +Inf/_count/_sum");
            double lev = strcmp(le, "+Inf") == 0 ? INFINITY : strtod(le, &end);
            if (!le[0] || (lev != INFINITY && *end))
                OM_FAIL(p, "bad le \"%s\"", le);
            if (!(lev > p->last_le))
                OM_FAIL(p, "le %s not increasing", le);
            if ((uint64_t)value < p->last_cum)
                OM_FAIL(p, "bucket le=%s count %g below the previous %" PRIu64, le, value,
                        p->last_cum);
            p->last_le = lev;
            p->last_cum = (uint64_t)value;
            p->n_buckets++;
            if (lev == INFINITY) {
                p->saw_inf = 1;
                p->inf_count = (uint64_t)value;
            }
        } else if (strcmp(suffix, "_count") == 0) {
            if (!p->saw_inf)
                OM_FAIL(p, "_count before le=\"+Inf\"");
            if ((uint64_t)value != p->inf_count)
                OM_FAIL(p, "_count %g != +Inf bucket %" PRIu64, value, p->inf_count);
            p->saw_count = 1;
        } else if (strcmp(suffix, "_sum") == 0) {
            if (value < 0)
                OM_FAIL(p, "negative _sum");
            p->saw_sum = 1;
        } else {
            OM_FAIL(p, "histogram sample %s", name);
        }
    } else {
        snprintf(want, sizeof want, "%s", p->type);
        OM_FAIL(p, "unexpected type %s", want);
    }
    return 1;
}

static int om_check(om_parse *p, const char *text)
{
    memset(p, 0, sizeof *p);
    if (!ends_with(text, "\n# EOF\n"))
        OM_FAIL(p, "does not end with # EOF\\n");
    if (strchr(text, '\r'))
        OM_FAIL(p, "carriage return");
    const char *s = text;
    while (*s) {
        const char *nl = strchr(s, '\n');
        char line[2048];
        size_t n = (size_t)(nl - s);
        if (n >= sizeof line)
            OM_FAIL(p, "line too long");
        memcpy(line, s, n);
        line[n] = '\0';
        s = nl + 1;
        p->line++;
        if (line[0] != '#') {
            if (!om_sample(p, line))
                return 0;
            continue;
        }
        char kw[16], name[96], rest[512] = "";
        if (strcmp(line, "# EOF") == 0) {
            if (*s)
                OM_FAIL(p, "text after # EOF");
            return om_series_done(p);
        }
        if (sscanf(line, "# %15s %95s %511[^\n]", kw, name, rest) < 2)
            OM_FAIL(p, "bad comment line \"%.100s\"", line);
        if (strcmp(kw, "TYPE") == 0) {
            if (!om_series_done(p))
                return 0;
            for (int i = 0; i < p->n_families; i++)
                if (strcmp(p->families[i], name) == 0)
                    OM_FAIL(p, "family %s twice (interleaved)", name);
            if (p->n_families == 64)
                OM_FAIL(p, "too many families");
            snprintf(p->families[p->n_families++], sizeof p->families[0], "%s", name);
            snprintf(p->fam, sizeof p->fam, "%s", name);
            snprintf(p->type, sizeof p->type, "%s", rest);
            static const char *types[] = {"counter", "gauge", "histogram", "info", "stateset"};
            int ok = 0;
            for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
                ok |= strcmp(rest, types[i]) == 0;
            if (!ok)
                OM_FAIL(p, "type \"%s\"", rest);
        } else if (strcmp(kw, "UNIT") == 0 || strcmp(kw, "HELP") == 0) {
            if (strcmp(name, p->fam) != 0)
                OM_FAIL(p, "%s for %s inside family %s", kw, name, p->fam);
            char suffix[128];
            snprintf(suffix, sizeof suffix, "_%s", rest);
            if (kw[0] == 'U' && !ends_with(name, suffix))
                OM_FAIL(p, "family %.60s lacks its unit suffix %.60s", name, suffix);
        } else {
            OM_FAIL(p, "comment line \"%.100s\"", line);
        }
    }
    OM_FAIL(p, "no # EOF");
}

static void test_openmetrics(void)
{
    metrics_registry *m = make_registry();
    REQUIRE(m);
    const char *weird = "we\"ird\\cam\nname";
    REQUIRE_OK(metrics_add_camera(m, 0, "front door", 0));
    REQUIRE_OK(metrics_add_camera(m, 2, weird, 1));
    REQUIRE_OK(metrics_add_camera(m, 3, "idle", -1));
    REQUIRE_OK(metrics_add_gpu(m, 0, "H100 \"a\""));
    REQUIRE_OK(metrics_add_gpu(m, 1, NULL));
    metrics_frame_in(m, 2);
    metrics_frames_dropped(m, 2, 4);
    metrics_frame_done(m, 2, 15000000000ull); /* above 10 s: only in +Inf */
    metrics_camera_set_state(m, 2, METRICS_CAMERA_ENDED);
    metrics_snapshot *s = NULL; /* the base of the CPU per frame: 100 frames after */
    REQUIRE_OK(metrics_snapshot_take_at(m, 1000000000ull, 0, &s));
    metrics_snapshot_free(s);
    for (int i = 0; i < 100; i++) {
        metrics_frame_in(m, 0);
        metrics_frame_done(m, 0, 2000000 + (uint64_t)i * 100000); /* 2..12 ms */
        metrics_stage_time(m, 0, i % 4, 50000 + (uint64_t)i * 1000);
    }
    omma_device_metrics r = {.available = 1, .valid = OMMA_METRIC_POWER, .power_mw = 70000};
    metrics_gpu_reading(m, 0, &r);

    REQUIRE_OK(metrics_snapshot_take_at(m, 2000000000ull, 2000000, &s));
    char *om = format(metrics_format_openmetrics, s);
    REQUIRE(om);
    om_parse p;
    if (!om_check(&p, om)) {
        fprintf(stderr, "OpenMetrics check: %s\n%s", p.err, om);
        CHECK(!"OpenMetrics text is valid");
    }
    CHECK(p.n_families >= 14);
    CHECK(p.samples > 100);
    /* Escaped on the wire, the original when decoded. */
    CHECK(strstr(om,
                 "omma_camera_info{camera=\"we\\\"ird\\\\cam\\nname\",index=\"2\",gpu=\"1\"} 1\n"));
    CHECK(strstr(om, "omma_gpu_info{gpu=\"0\",name=\"H100 \\\"a\\\"\"} 1\n"));
    CHECK(p.n_cameras == 3 && strcmp(p.cameras[1], weird) == 0);
    CHECK(strstr(om, "omma_camera_info{camera=\"idle\",index=\"3\",gpu=\"none\"} 1\n"));
    /* Values. */
    CHECK(strstr(om, "omma_camera_frames_in_total{camera=\"front door\"} 100\n"));
    CHECK(strstr(om, "omma_camera_frames_dropped_total{camera=\"we\\\"ird\\\\cam\\nname\"} 4\n"));
    CHECK(strstr(om, "omma_camera_state{camera=\"we\\\"ird\\\\cam\\nname\","
                     "omma_camera_state=\"ended\"} 1\n"));
    CHECK(strstr(om, "omma_camera_state{camera=\"idle\",omma_camera_state=\"running\"} 1\n"));
    CHECK(strstr(om, "omma_camera_latency_seconds_bucket{camera=\"front door\",le=\"1e-06\"} 0\n"));
    CHECK(strstr(om, "omma_camera_latency_seconds_bucket{camera=\"front door\",le=\"0.001\"} 0\n"));
    CHECK(strstr(om, "omma_camera_latency_seconds_bucket{camera=\"front door\",le=\"1.0\"} 100\n"));
    CHECK(
        strstr(om, "omma_camera_latency_seconds_bucket{camera=\"front door\",le=\"10.0\"} 100\n"));
    CHECK(
        strstr(om, "omma_camera_latency_seconds_bucket{camera=\"front door\",le=\"0.0001\"} 0\n"));
    CHECK(strstr(om, "omma_camera_latency_seconds_sum{camera=\"front door\"} 0.695\n"));
    CHECK(strstr(om, "omma_camera_latency_seconds_bucket{camera=\"we\\\"ird\\\\cam\\nname\","
                     "le=\"10.0\"} 0\n"));
    CHECK(strstr(om, "omma_camera_latency_seconds_bucket{camera=\"we\\\"ird\\\\cam\\nname\","
                     "le=\"+Inf\"} 1\n"));
    CHECK(strstr(om, "omma_camera_latency_seconds_sum{camera=\"we\\\"ird\\\\cam\\nname\"} 15.0\n"));
    CHECK(strstr(om, "omma_gpu_stage_seconds_count{gpu=\"0\",stage=\"detector\"} 25\n"));
    CHECK(strstr(om, "omma_gpu_stage_seconds_count{gpu=\"1\",stage=\"step\"} 0\n"));
    CHECK(strstr(om, "omma_gpu_power_watts{gpu=\"0\"} 70.0\n"));
    CHECK(strstr(om, "omma_process_cpu_seconds_total 0.002\n"));
    CHECK(strstr(om, "omma_process_cpu_per_frame_seconds 2e-05\n")); /* 2 ms / 100 frames */
    CHECK(strstr(om, "# TYPE omma_camera_latency_seconds histogram\n"
                     "# UNIT omma_camera_latency_seconds seconds\n# HELP "));

    /* The checker itself catches what it is there for. */
    CHECK(!om_check(&p, "# TYPE a counter\na_total 1\n"));
    CHECK(!om_check(&p, "a_total 1\n# EOF\n"));
    CHECK(!om_check(&p, "# TYPE a counter\na 1\n# EOF\n"));
    CHECK(!om_check(&p, "# TYPE h histogram\nh_bucket{le=\"1.0\"} 2\nh_bucket{le=\"+Inf\"} 1\n"
                        "h_count 1\nh_sum 0\n# EOF\n"));
    CHECK(!om_check(&p, "# TYPE h histogram\nh_bucket{le=\"+Inf\"} 2\nh_count 3\nh_sum 0\n"
                        "# EOF\n"));
    CHECK(!om_check(&p, "# TYPE h histogram\nh_bucket{le=\"1.0\"} 2\nh_count 2\nh_sum 0\n"
                        "# EOF\n"));
    CHECK(!om_check(&p, "# TYPE g gauge\ng{a=\"x\ny\"} 1\n# EOF\n"));
    CHECK(!om_check(&p, "# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\n# TYPE a gauge\n# EOF\n"));
    CHECK(om_check(&p, "# TYPE h_seconds histogram\n# UNIT h_seconds seconds\n"
                       "h_seconds_bucket{le=\"1.0\"} 1\nh_seconds_bucket{le=\"+Inf\"} 2\n"
                       "h_seconds_count 2\nh_seconds_sum 3.5\n# EOF\n"));

    free(om);
    metrics_snapshot_free(s);

    /* An empty registry is a valid exposition too. */
    metrics_registry *e = NULL;
    REQUIRE_OK(metrics_create(NULL, &e));
    REQUIRE_OK(metrics_snapshot_take(e, &s));
    om = format(metrics_format_openmetrics, s);
    CHECK(om && om_check(&p, om));
    free(om);
    metrics_snapshot_free(s);
    metrics_destroy(e);
    metrics_destroy(m);
}

/* ---- JSON line ---------------------------------------------------------- */

/* Structure only: one line, balanced brackets outside strings, strings
 * closed, no raw control characters. */
static int json_scan(const char *s, char *err, size_t errsize)
{
    int depth = 0, in_str = 0;
    size_t n = strlen(s);
    if (n == 0 || s[n - 1] != '\n' || memchr(s, '\n', n - 1)) {
        snprintf(err, errsize, "not exactly one line");
        return 0;
    }
    if (s[0] != '{') {
        snprintf(err, errsize, "does not start with {");
        return 0;
    }
    for (size_t i = 0; i + 1 < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c < 0x20) {
            snprintf(err, errsize, "control character at %zu", i);
            return 0;
        }
        if (in_str) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_str = 0;
        } else if (c == '"') {
            in_str = 1;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            if (--depth < 0) {
                snprintf(err, errsize, "unbalanced at %zu", i);
                return 0;
            }
        }
    }
    if (depth != 0 || in_str) {
        snprintf(err, errsize, "unbalanced at the end (depth %d, string %d)", depth, in_str);
        return 0;
    }
    return 1;
}

static void test_json_line(void)
{
    metrics_registry *m = make_registry();
    REQUIRE(m);
    REQUIRE_OK(metrics_add_camera(m, 0, "tab\there \"q\" \\ ☃", 0));
    REQUIRE_OK(metrics_add_camera(m, 1, "quiet", -1));
    REQUIRE_OK(metrics_add_gpu(m, 0, "g0"));
    omma_device_metrics bad = {.available = 0};
    snprintf(bad.reason, sizeof bad.reason, "nvml: \"bad\" \xff\x01 byte");
    metrics_gpu_reading(m, 0, &bad);
    add_frames(m, 0, 10, 10);
    metrics_stage_time(m, 0, 1, 3000000);

    metrics_snapshot *s = NULL;
    REQUIRE_OK(metrics_snapshot_take_at(m, 5000000000ull, 0, &s));
    metrics_snapshot_free(s);
    add_frames(m, 0, 30, 30);
    REQUIRE_OK(metrics_snapshot_take_at(m, 6000000000ull, 600000, &s));
    char *js = format(metrics_format_json, s);
    REQUIRE(js);
    char err[128];
    if (!json_scan(js, err, sizeof err)) {
        fprintf(stderr, "JSON scan: %s\n%s", err, js);
        CHECK(!"JSON line is well formed");
    }
    CHECK(strstr(js, "\"name\":\"tab\\u0009here \\\"q\\\" \\\\ ☃\""));
    CHECK(strstr(js, "\"fps_in\":30,\"fps_processed\":30,\"latency_ms\":{\"count\":40,"
                     "\"p50\":5.01"));
    CHECK(strstr(js, "\"cpu_us_per_frame\":20,"));
    CHECK(strstr(js, "\"index\":1,\"name\":\"quiet\",\"gpu\":null,\"state\":\"running\","
                     "\"frames_in\":0,\"frames_processed\":0,\"frames_dropped\":0,"
                     "\"fps_in\":0,\"fps_processed\":0,\"latency_ms\":{\"count\":0,"
                     "\"p50\":null,\"p99\":null}"));
    CHECK(strstr(js, "\"reason\":\"nvml: \\\"bad\\\" \\ufffd\\u0001 byte\""));
    CHECK(strstr(js, "\"stages_ms\":{\"upload\":{\"count\":0,\"p50\":null,\"p99\":null},"
                     "\"detector\":{\"count\":1,\"p50\":2.88"));

    /* python3's json.loads agrees, where python3 exists. */
    if (system("command -v python3 >/dev/null 2>&1") == 0) {
        char path[] = "/tmp/omma_metrics_json_XXXXXX";
        int fd = mkstemp(path);
        REQUIRE(fd >= 0);
        FILE *f = fdopen(fd, "w");
        REQUIRE(f);
        fputs(js, f);
        fclose(f);
        char cmd[256];
        snprintf(cmd, sizeof cmd,
                 "python3 -c 'import json,sys; d=json.loads(open(sys.argv[1]).read()); "
                 "assert len(d[\"cameras\"]) == 2 and d[\"gpus\"][0][\"available\"] is False' %s",
                 path);
        CHECK(system(cmd) == 0);
        unlink(path);
    } else {
        fprintf(stderr, "note: no python3, json.loads check skipped\n");
    }
    free(js);
    metrics_snapshot_free(s);
    metrics_destroy(m);
}

/* A network camera's link and damage in every report. */
static void test_camera_link(void)
{
    metrics_registry *m = make_registry();
    REQUIRE(m);
    REQUIRE_OK(metrics_add_camera(m, 0, "cam", -1));
    metrics_camera_set_link(m, 0, METRICS_CAMERA_RECONNECTING, 3, 2, "refused \"here\"");
    metrics_camera_source(m, 0, 5, 2, 1);
    metrics_camera_set_decoder(m, 0, "gpu (nvdec h264)");
    metrics_camera_set_link(m, 7, METRICS_CAMERA_RECONNECTING, 1, 1, "x"); /* not registered */
    metrics_snapshot *s = NULL;
    REQUIRE_OK(metrics_snapshot_take_at(m, 1000000000ull, 0, &s));
    CHECK(s->cameras[0].state == METRICS_CAMERA_RECONNECTING && s->cameras[0].attempt == 3 &&
          s->cameras[0].reconnects == 2 && s->cameras[0].damaged_frames == 5 &&
          s->cameras[0].dropped_packets == 2 && s->cameras[0].stream_clock == 1);
    char *js = format(metrics_format_json, s);
    char *om = format(metrics_format_openmetrics, s);
    char *tab = format(metrics_format_table, s);
    REQUIRE(js && om && tab);
    char err[128];
    CHECK(json_scan(js, err, sizeof err));
    CHECK(strstr(js, "\"state\":\"reconnecting\""));
    CHECK(strstr(js, "\"damaged_frames\":5,\"refused_packets\":2,\"reconnects\":2,"
                     "\"attempt\":3,\"capture_clock\":\"stream\",\"error\":\"refused "
                     "\\\"here\\\"\",\"decoder\":\"gpu (nvdec h264)\"}"));
    CHECK(strstr(om, "omma_camera_state{camera=\"cam\",omma_camera_state=\"reconnecting\"} 1\n"));
    CHECK(strstr(om, "omma_camera_state{camera=\"cam\",omma_camera_state=\"running\"} 0\n"));
    CHECK(strstr(om, "omma_camera_reconnects_total{camera=\"cam\"} 2\n"));
    CHECK(strstr(om, "omma_camera_damaged_frames_total{camera=\"cam\"} 5\n"));
    CHECK(strstr(om, "omma_camera_refused_packets_total{camera=\"cam\"} 2\n"));
    CHECK(strstr(om, "omma_camera_reconnect_attempt{camera=\"cam\"} 3\n"));
    CHECK(strstr(tab, " reconn "));
    CHECK(strstr(tab, "reconnecting, attempt 3: refused \"here\""));
    free(js);
    free(om);
    free(tab);
    metrics_snapshot_free(s);

    metrics_camera_set_link(m, 0, METRICS_CAMERA_RUNNING, 0, 3, NULL);
    metrics_camera_set_decoder(m, 0, NULL);
    REQUIRE_OK(metrics_snapshot_take_at(m, 2000000000ull, 0, &s));
    js = format(metrics_format_json, s);
    REQUIRE(js);
    CHECK(strstr(js, "\"state\":\"running\""));
    CHECK(strstr(js, "\"reconnects\":3,\"attempt\":0,\"capture_clock\":\"stream\",\"error\":null,"
                     "\"decoder\":null}"));
    free(js);
    metrics_snapshot_free(s);
    metrics_destroy(m);
}

/* ---- Status table ------------------------------------------------------- */

static void test_table(void)
{
    metrics_registry *m = make_registry();
    REQUIRE(m);
    REQUIRE_OK(metrics_add_camera(m, 0, "lobby", 0));
    REQUIRE_OK(metrics_add_camera(m, 12, "a very long camera name that is cut", 1));
    REQUIRE_OK(metrics_add_camera(m, 100, "line\nbreak", 1));
    REQUIRE_OK(metrics_add_gpu(m, 0, "NVIDIA H100"));
    REQUIRE_OK(metrics_add_gpu(m, 1, NULL));
    add_frames(m, 0, 3, 3);
    metrics_stage_time(m, 0, 3, 2500000);
    omma_device_metrics r = {.available = 1,
                             .valid = OMMA_METRIC_UTILIZATION | OMMA_METRIC_MEMORY |
                                      OMMA_METRIC_POWER | OMMA_METRIC_TEMPERATURE,
                             .gpu_util_pct = 87,
                             .mem_used = 12ull << 30,
                             .mem_total = 80ull << 30,
                             .power_mw = 312400,
                             .temperature_c = 61};
    metrics_gpu_reading(m, 0, &r);
    metrics_snapshot *s = NULL;
    REQUIRE_OK(metrics_snapshot_take(m, &s));
    char *tb = format(metrics_format_table, s);
    REQUIRE(tb);

    /* 1 header + 3 cameras, 1 header + 2 GPUs, the process line; the camera
     * rows as wide as their header, the GPU rows as theirs. */
    const char *lines[16];
    size_t widths[16];
    int n = 0;
    for (const char *p = tb; *p && n < 16;) {
        const char *nl = strchr(p, '\n');
        REQUIRE(nl);
        lines[n] = p;
        widths[n++] = (size_t)(nl - p);
        p = nl + 1;
    }
    CHECK(n == 8);
    for (int i = 1; i <= 3; i++)
        CHECK(widths[i] == widths[0]);
    CHECK(widths[5] == widths[4] && widths[6] == widths[4]);
    CHECK(strncmp(lines[0], " cam name", 9) == 0);
    CHECK(strstr(lines[4], " upload p50/p99    detector p50/p99  mesh p50/p99      step p50/p99"));
    CHECK(strncmp(lines[2], "  12 a very long camera n   1 running", 37) == 0);
    CHECK(strncmp(lines[3], " 100 line?break", 15) == 0);
    CHECK(strncmp(lines[5], "   0 NVIDIA H100            87%       12.0/80.0   312.4     61 ",
                  63) == 0);
    char cell[32], step[96]; /* the step's 2.5 ms read back from its bucket */
    snprintf(cell, sizeof cell, "%.2f/%.2f",
             metrics_hist_quantile_ns(&s->gpus[0].stages[3], 0.5) / 1e6,
             metrics_hist_quantile_ns(&s->gpus[0].stages[3], 0.99) / 1e6);
    snprintf(step, sizeof step, " %-17s %-17s %-17s %-17s\n", "-", "-", "-", cell);
    CHECK(strstr(lines[5], step) == lines[5] + 62);
    CHECK(strcmp(cell, "2.40/2.40") == 0);
    CHECK(strstr(lines[6], "   1 gpu1                     -               -       -      - -"));
    CHECK(strncmp(lines[7], "process: cpu - us/frame, 3 frames, up ", 38) == 0);
    free(tb);
    metrics_snapshot_free(s);
    metrics_destroy(m);
}

/* A sink's counters as a reader gives them (src/sink/ fills them in omma
 * stream). */
static void read_test_sink(void *ctx, metrics_sink_snap *out)
{
    int *calls = ctx;
    (*calls)++;
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "nats://u:***@h:4222/omma \"x\"");
    snprintf(out->kind, sizeof out->kind, "nats");
    out->connected = 0;
    out->published = 100;
    out->sent = 97;
    out->acked = 90;
    out->failed = 3;
    out->dropped = 2;
    out->backlog = 1;
    out->inflight = 4;
    snprintf(out->last_error, sizeof out->last_error, "disconnected; reconnecting");
}

/* Sinks in the three reports: their counters, labels escaped, the row. */
static void test_sinks(void)
{
    metrics_registry *m = make_registry();
    REQUIRE(m);
    int calls = 0;
    REQUIRE_OK(metrics_add_camera(m, 0, "lobby", -1));
    REQUIRE_OK(metrics_add_sink(m, read_test_sink, &calls));
    for (int i = 1; i < METRICS_MAX_SINKS; i++)
        REQUIRE_OK(metrics_add_sink(m, read_test_sink, &calls));
    CHECK_FAILS(metrics_add_sink(m, read_test_sink, &calls), OMMA_ERR_INVALID_ARG,
                "more than 16 sinks");
    CHECK_FAILS(metrics_add_sink(m, NULL, NULL), OMMA_ERR_INVALID_ARG, "NULL");
    metrics_remove_sinks(m);
    REQUIRE_OK(metrics_add_sink(m, read_test_sink, &calls));
    metrics_snapshot *s = NULL;
    REQUIRE_OK(metrics_snapshot_take(m, &s));
    CHECK(calls == 1);
    CHECK(s->n_sinks == 1);
    char *om = format(metrics_format_openmetrics, s);
    char *js = format(metrics_format_json, s);
    char *tb = format(metrics_format_table, s);
    REQUIRE(om && js && tb);
    CHECK(strstr(om, "# TYPE omma_sink_acked counter\n"));
    CHECK(strstr(om, "omma_sink_acked_total{sink=\"nats://u:***@h:4222/omma \\\"x\\\"\","
                     "kind=\"nats\"} 90\n"));
    CHECK(strstr(om, "omma_sink_dropped_total{sink=\"nats://u:***@h:4222/omma \\\"x\\\"\","
                     "kind=\"nats\"} 2\n"));
    CHECK(strstr(om, "# TYPE omma_sink_backlog gauge\n"));
    CHECK(strstr(om, "omma_sink_inflight{sink=\"nats://u:***@h:4222/omma \\\"x\\\"\","
                     "kind=\"nats\"} 4\n"));
    CHECK(strstr(om, "kind=\"nats\"} 0\n# EOF\n")); /* omma_sink_connected, last */
    CHECK(strstr(js, ",\"sinks\":[{\"name\":\"nats://u:***@h:4222/omma \\\"x\\\"\","
                     "\"kind\":\"nats\",\"connected\":false,\"published\":100,\"sent\":97,"
                     "\"acked\":90,\"failed\":3,\"dropped\":2,\"backlog\":1,\"inflight\":4,"
                     "\"last_error\":\"disconnected; reconnecting\"}]}\n"));
    CHECK(strstr(tb, "\nsink  url "));
    CHECK(strstr(tb, "\nnats  nats://u:***@h:4222/omma \"x\"    no        100         90        3 "
                     "       2        1        4\n"));
    free(om);
    free(js);
    free(tb);
    metrics_snapshot_free(s);
    metrics_destroy(m);
}

int main(void)
{
    RUN(test_counters_from_threads);
    RUN(test_quantiles);
    RUN(test_rates);
    RUN(test_gpu_readings);
    RUN(test_registration_errors);
    RUN(test_openmetrics);
    RUN(test_json_line);
    RUN(test_camera_link);
    RUN(test_table);
    RUN(test_sinks);
    return testing_finish();
}
