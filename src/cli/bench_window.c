#define _POSIX_C_SOURCE 200809L /* nanosleep */
/* Measurement windows of the runtime's benchmarks (bench_window.h). */
#include "cli/bench_window.h"

#include <math.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"

omma_status cli_window_take(rt_runtime *rt, metrics_registry *m, cli_window_mark *w)
{
    w->t_ns = core_now_ns();
    w->cpu_ns = core_process_cpu_ns();
    rt_runtime_get_stats(rt, &w->stats);
    return metrics_snapshot_take(m, &w->snap);
}

void cli_window_free(cli_window_mark *w)
{
    metrics_snapshot_free(w->snap);
    w->snap = NULL;
}

double cli_window_cameras(const cli_window_mark *a, const cli_window_mark *b,
                          double *min_camera_fps, metrics_hist *latency)
{
    double secs = (double)(b->t_ns - a->t_ns) / 1e9;
    memset(latency, 0, sizeof *latency);
    *min_camera_fps = INFINITY;
    for (int i = 0; i < b->snap->n_cameras; i++) {
        const metrics_camera_snap *cb = &b->snap->cameras[i], *ca = &a->snap->cameras[i];
        *min_camera_fps =
            fmin(*min_camera_fps, (double)(cb->frames_processed - ca->frames_processed) / secs);
        for (int k = 0; k < METRICS_BUCKETS; k++) {
            uint64_t d = cb->latency.buckets[k] - ca->latency.buckets[k];
            latency->buckets[k] += d;
            latency->count += d;
        }
    }
    return secs;
}

void cli_sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    while (nanosleep(&ts, &ts) != 0) {
    }
}
