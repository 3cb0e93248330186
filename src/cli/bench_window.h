/* The benchmarks of the runtime (omma bench runtime, omma bench decode):
 * a measurement window between two snapshots of a running runtime (its
 * stats, its metrics, the process's CPU time), and what every camera did
 * in it. */
#ifndef OMMA_CLI_BENCH_WINDOW_H
#define OMMA_CLI_BENCH_WINDOW_H

#include "metrics/metrics.h"
#include "runtime/runtime.h"

typedef struct cli_window_mark {
    metrics_snapshot *snap;
    rt_runtime_stats stats;
    uint64_t cpu_ns, t_ns; /* the process's CPU time, core_now_ns() */
} cli_window_mark;

/* Takes a mark now. Errors: metrics_snapshot_take's. */
omma_status cli_window_take(rt_runtime *rt, metrics_registry *m, cli_window_mark *w);

/* Frees a mark's snapshot (accepts an empty mark). */
void cli_window_free(cli_window_mark *w);

/* Between marks a and b: the seconds, the slowest camera's processed
 * frames per second, and every camera's latency histogram merged into
 * *latency. */
double cli_window_cameras(const cli_window_mark *a, const cli_window_mark *b,
                          double *min_camera_fps, metrics_hist *latency);

/* Sleeps s seconds (restarted when a signal interrupts it). */
void cli_sleep_s(double s);

#endif
