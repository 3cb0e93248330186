/* Private: the multi-camera runtime's metrics registry and its reports.
 *
 * One registry per runtime. Setup registers the cameras (index 0..4095 and a
 * unique name), the GPUs (index 0..63 and a name) and, at creation, the
 * names of the GPU stages that are timed ("upload", "detector", "mesh",
 * "step"...). Then any thread updates counters and histograms with relaxed
 * atomics: no lock, no allocation, no system call on the update path (the
 * GPU readings, once a second, take a per-GPU mutex around a copy). A
 * reporting thread takes snapshots (they allocate and take the registry's
 * lock, never held by updates) and renders them as OpenMetrics text, a JSON
 * line or a terminal status table (metrics_format.c); metrics_http.h serves
 * the OpenMetrics text.
 *
 * Durations are histograms with fixed log-spaced buckets: 25 per decade from
 * 1 us to 10 s (bucket k holds values in (le(k-1), le(k)], le(k) = 1 us *
 * 10^(k/25) rounded to the nanosecond), one bucket below 1 us and one above
 * 10 s. A quantile read from the buckets (the geometric middle of the bucket
 * holding the nearest-rank sample) is within 5% of the true nearest-rank
 * quantile for values between 1 us and 10 s.
 *
 * Frame rates are not kept by the update path: a snapshot computes them from
 * the counters of an earlier snapshot (the registry keeps a short history,
 * one entry per quarter window), over the newest span of at least the rate
 * window (1 s by default) or the longest span it has; NAN until two
 * snapshots span some time. Process CPU time per frame is computed the same
 * way from core_process_cpu_ns() and the frames processed by all cameras.
 *
 * Threads: metrics_create/destroy by the owner; add_* and snapshots from
 * any thread (serialised by the registry's lock); updates from any thread at
 * any time between add and destroy. Updates naming an index that is out of
 * range or not registered are ignored (they cannot fail). */
#ifndef OMMA_METRICS_METRICS_H
#define OMMA_METRICS_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "omma/device.h"
#include "omma/status.h"

#define METRICS_MAX_CAMERAS 4096
#define METRICS_MAX_GPUS 64
#define METRICS_MAX_STAGES 16
#define METRICS_NAME_MAX 128 /* camera and GPU names, with the NUL */
#define METRICS_STAGE_NAME_MAX 32 /* stage names, with the NUL */

/* Histogram buckets: METRICS_BOUNDS finite upper bounds (1 us .. 10 s),
 * and one more bucket for values above 10 s. */
#define METRICS_BUCKETS_PER_DECADE 25
#define METRICS_BOUNDS (7 * METRICS_BUCKETS_PER_DECADE + 1)
#define METRICS_BUCKETS (METRICS_BOUNDS + 1)

typedef struct metrics_registry metrics_registry;

typedef enum metrics_camera_state {
    METRICS_CAMERA_RUNNING = 0, /* from registration on */
    METRICS_CAMERA_ENDED, /* its source ended (end of file) */
    METRICS_CAMERA_FAILED, /* its source failed (read error, unplugged) */
    METRICS_CAMERA_RECONNECTING, /* a network camera lost its stream and is
                                  * connecting again */
} metrics_camera_state;

#define METRICS_ERROR_MAX 256 /* a camera's last error, with the NUL */

/* "running", "ended", "failed", "reconnecting"; "unknown" for other values. */
const char *metrics_camera_state_str(metrics_camera_state state);

typedef struct metrics_config {
    const char *const *stage_names; /* n_stages names, 1..31 bytes of UTF-8, unique */
    int n_stages; /* 0..METRICS_MAX_STAGES */
    uint64_t rate_window_ns; /* frame-rate window; 0: 1 s */
} metrics_config;

/* Creates an empty registry (config NULL: no stages, 1-s window).
 * Errors: OMMA_ERR_INVALID_ARG (NULL out, bad stage names or count),
 * OMMA_ERR_OUT_OF_MEMORY. On failure *out is NULL. */
omma_status metrics_create(const metrics_config *config, metrics_registry **out);

/* Frees the registry; NULL is ignored. No other call on it may be running or
 * follow (stop the HTTP server first). */
void metrics_destroy(metrics_registry *m);

/* Registers camera `index` (0..METRICS_MAX_CAMERAS-1) with its name (the
 * `camera` label; NULL gives "camN") and the GPU it is placed on (-1: none
 * yet). Counters start at 0 and the state at METRICS_CAMERA_RUNNING.
 * Errors: OMMA_ERR_INVALID_ARG (index out of range or already registered,
 * a name that is empty, too long, not UTF-8 or another camera's),
 * OMMA_ERR_OUT_OF_MEMORY. */
omma_status metrics_add_camera(metrics_registry *m, int index, const char *name, int gpu);

/* Unregisters camera `index` (a camera removed live): it leaves the
 * snapshots, its index and name may be registered again. No update of it
 * may be running or follow (the runtime removes a camera after its last
 * frame); snapshots may (under the lock). Unregistered: nothing. */
void metrics_remove_camera(metrics_registry *m, int index);

/* Registers GPU `index` (0..METRICS_MAX_GPUS-1) with its name ("NVIDIA
 * H100 80GB HBM3"; NULL gives "gpuN"). It has no reading until the first
 * metrics_gpu_reading. Errors as metrics_add_camera. */
omma_status metrics_add_gpu(metrics_registry *m, int index, const char *name);

/* ---- Updates: any thread, lock-free, never allocate -------------------- */

/* A frame arrived from the camera's source. */
void metrics_frame_in(metrics_registry *m, int camera);
/* n frames of the camera were dropped (a live source overwrote them). */
void metrics_frames_dropped(metrics_registry *m, int camera, uint64_t n);
/* A frame's result is out: latency_ns from its capture timestamp to the
 * result (both core_now_ns()). Counts the frame as processed. */
void metrics_frame_done(metrics_registry *m, int camera, uint64_t latency_ns);
void metrics_camera_set_state(metrics_registry *m, int camera, metrics_camera_state state);
/* The camera's link (network cameras; source.h's status): its state, the
 * reconnection attempt under way (0: none), connections regained so far
 * and the last error (NULL or "": none; cut to METRICS_ERROR_MAX). Takes
 * the registry's lock: on changes only, not per frame. */
void metrics_camera_set_link(metrics_registry *m, int camera, metrics_camera_state state,
                             int attempt, uint64_t reconnects, const char *error);
/* The camera's damage so far: frames its decoder concealed, packets it
 * refused (totals, not increments); stream_clock 1 when its capture times
 * come from the stream's wall clock (RTCP), 0 from arrival. */
void metrics_camera_source(metrics_registry *m, int camera, uint64_t damaged_frames,
                           uint64_t dropped_packets, int stream_clock);
/* How the camera's video is decoded ("gpu (nvdec h264)", "cpu (h264)",
 * "cpu (hevc; not on the GPU: why)"; NULL or "": not a video; cut to
 * METRICS_ERROR_MAX). Takes the registry's lock: once, when it opens. */
void metrics_camera_set_decoder(metrics_registry *m, int camera, const char *decoder);
/* The camera was placed on another GPU (-1: none). */
void metrics_camera_set_gpu(metrics_registry *m, int camera, int gpu);

/* GPU time of one run of stage `stage` (its index in the config's names) on
 * GPU `gpu`, from CUDA events. */
void metrics_stage_time(metrics_registry *m, int gpu, int stage, uint64_t ns);

/* Stores the GPU's latest reading (from omma_device_read_metrics; an
 * unavailable reading is kept as such, with its reason). Takes the GPU's
 * mutex around a copy: call it about once a second, not per frame. */
void metrics_gpu_reading(metrics_registry *m, int gpu, const omma_device_metrics *reading);

/* ---- Result sinks -------------------------------------------------------- */

#define METRICS_MAX_SINKS 16
#define METRICS_SINK_NAME_MAX 256
#define METRICS_SINK_ERROR_MAX 256

/* A result sink's counters (src/sink/sink.h), read at each snapshot. */
typedef struct metrics_sink_snap {
    char name[METRICS_SINK_NAME_MAX]; /* its URL, without a password */
    char kind[16]; /* "kafka", "nats", "mqtt" */
    int connected;
    uint64_t published, sent, acked, failed, dropped; /* counters */
    uint64_t backlog, inflight; /* now */
    char last_error[METRICS_SINK_ERROR_MAX]; /* "" when none */
} metrics_sink_snap;

/* Fills *out (name and kind included) from ctx; called by snapshots, under
 * the registry's lock, from the thread taking them. */
typedef void (*metrics_sink_reader)(void *ctx, metrics_sink_snap *out);

/* Registers a sink whose counters each snapshot reads with read(ctx), until
 * the registry is destroyed (ctx must live as long, or be removed first).
 * Errors: OMMA_ERR_INVALID_ARG (NULL, more than METRICS_MAX_SINKS). */
omma_status metrics_add_sink(metrics_registry *m, metrics_sink_reader read, void *ctx);

/* Stops reading every sink (before they are closed). */
void metrics_remove_sinks(metrics_registry *m);

/* ---- Snapshots ---------------------------------------------------------- */

typedef struct metrics_hist {
    uint64_t count; /* the buckets' total */
    uint64_t sum_ns; /* of all values recorded */
    uint64_t buckets[METRICS_BUCKETS]; /* not cumulative; see le below */
} metrics_hist;

/* Upper bound of bucket k (0..METRICS_BOUNDS-1) in nanoseconds: 1000 for
 * k = 0 .. 10^10 for k = METRICS_BOUNDS-1. Bucket METRICS_BOUNDS holds
 * what is above 10 s. */
uint64_t metrics_bucket_le_ns(int k);

/* Nearest-rank quantile q (0..1) in nanoseconds, within 5% for values from
 * 1 us to 10 s; values under 1 us read as 1 us, over 10 s as 10 s. NAN when
 * the histogram is empty. */
double metrics_hist_quantile_ns(const metrics_hist *h, double q);

typedef struct metrics_camera_snap {
    int index;
    char name[METRICS_NAME_MAX];
    int gpu; /* -1: none */
    metrics_camera_state state;
    uint64_t frames_in, frames_processed, frames_dropped;
    uint64_t damaged_frames, dropped_packets; /* the decoder's concealed / refused */
    uint64_t reconnects; /* connections regained */
    int attempt; /* reconnection attempt under way, 0: none */
    int stream_clock; /* capture times from the stream's wall clock (1) or arrival (0) */
    char error[METRICS_ERROR_MAX]; /* the link's last error, "" when none */
    char decoder[METRICS_ERROR_MAX]; /* how it is decoded, "" when not a video */
    double fps_in, fps_processed; /* over rate_span_ns; NAN when unknown */
    uint64_t rate_span_ns; /* 0 when unknown */
    metrics_hist latency; /* capture to result */
} metrics_camera_snap;

typedef struct metrics_gpu_snap {
    int index;
    char name[METRICS_NAME_MAX];
    /* The last reading; before the first one available = 0 with the reason
     * "no reading yet". Fields not in reading.valid are unknown, not 0. */
    omma_device_metrics reading;
    metrics_hist stages[METRICS_MAX_STAGES]; /* n_stages of them */
} metrics_gpu_snap;

typedef struct metrics_snapshot {
    uint64_t now_ns; /* core_now_ns() when taken */
    uint64_t unix_ms; /* wall clock when taken */
    uint64_t uptime_ns; /* since metrics_create */
    uint64_t process_cpu_ns; /* core_process_cpu_ns() when taken */
    uint64_t frames_processed; /* all cameras */
    double cpu_ns_per_frame; /* process CPU / frames over cpu_span_ns; NAN when unknown */
    uint64_t cpu_span_ns;
    int n_stages;
    char stage_names[METRICS_MAX_STAGES][METRICS_STAGE_NAME_MAX];
    int n_cameras; /* by index */
    metrics_camera_snap *cameras;
    int n_gpus; /* by index */
    metrics_gpu_snap *gpus;
    int n_sinks; /* in the order added */
    metrics_sink_snap sinks[METRICS_MAX_SINKS];
} metrics_snapshot;

/* Copies every counter, histogram and reading, and computes the rates.
 * Counters are read one by one while updates go on: each value is exact at
 * some instant during the call, and a histogram's count is its buckets'
 * total. The snapshot is the caller's, freed with metrics_snapshot_free.
 * Errors: OMMA_ERR_INVALID_ARG, OMMA_ERR_OUT_OF_MEMORY; *out NULL then. */
omma_status metrics_snapshot_take(metrics_registry *m, metrics_snapshot **out);

/* The same with the clock readings given (now_ns on core_now_ns()'s clock,
 * the process's CPU time), for tests and replays. now_ns must not go back
 * between snapshots of one registry (INVALID_ARG if it does). */
omma_status metrics_snapshot_take_at(metrics_registry *m, uint64_t now_ns, uint64_t process_cpu_ns,
                                     metrics_snapshot **out);

void metrics_snapshot_free(metrics_snapshot *s);

/* ---- Reports (metrics_format.c) ----------------------------------------- */
/* Each renders the snapshot as NUL-terminated text in *text (the caller's, to
 * free()) of *len bytes (len may be NULL). Errors: OMMA_ERR_INVALID_ARG,
 * OMMA_ERR_OUT_OF_MEMORY; *text NULL then. */

/* OpenMetrics 1.0 text exposition (content type
 * METRICS_OPENMETRICS_CONTENT_TYPE), ending with "# EOF\n". Histograms
 * are exposed with every fifth bucket bound (5 per decade, 1 us .. 10 s). */
#define METRICS_OPENMETRICS_CONTENT_TYPE                                                           \
    "application/openmetrics-text; version=1.0.0; charset=utf-8"
omma_status metrics_format_openmetrics(const metrics_snapshot *s, char **text, size_t *len);

/* One line of JSON ending with "\n" (the periodic status when stderr is not
 * a terminal): rates, counters, latency p50/p99 in ms per camera; readings
 * (null when unknown) and stage p50/p99 per GPU; CPU time per frame. */
omma_status metrics_format_json(const metrics_snapshot *s, char **text, size_t *len);

/* A fixed-width table for a terminal, each line ending with "\n": a header
 * and one row per camera, then a header and one row per GPU, then a process
 * line. Names are cut to fit and control characters shown as '?'; unknown
 * values are "-". The caller moves the cursor to redraw it in place. */
omma_status metrics_format_table(const metrics_snapshot *s, char **text, size_t *len);

#endif
