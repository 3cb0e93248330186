/* omma stream's command line (stream_options.c). */
#ifndef OMMA_CLI_STREAM_OPTIONS_H
#define OMMA_CLI_STREAM_OPTIONS_H

#include <stdint.h>
#include <stdio.h>

#include "cli/stream_config.h"
#include "runtime/participants.h"
#include "runtime/runtime.h"

typedef enum cli_status_mode {
    CLI_STATUS_AUTO = 0, /* table on a terminal, JSON lines otherwise */
    CLI_STATUS_TABLE,
    CLI_STATUS_JSON,
    CLI_STATUS_OFF,
} cli_status_mode;

#define CLI_CAMERA_NAME_MAX 80
#define CLI_MAX_SINKS 8

typedef struct cli_stream_opts {
    rt_runtime_config rt; /* cameras, gpus and models point into the fields below */
    rt_camera_config *cameras;
    int gpus[RT_MAX_GPUS];
    int all_gpus; /* --gpus all: filled in once the GPUs are counted */
    char detector[4096], mesh[4096], photo[4096], geometry[4096];
    char pose[8]; /* --pose lite|full|heavy; "": off */
    char pose_detector[4096], pose_landmark[4096];
    const char *out; /* --out FILE; NULL: stdout */
    int results; /* write the results (--results on) */
    double duration_s; /* stop after this long (0: until the sources end) */
    cli_status_mode status;
    double status_interval_s;
    int metrics_port; /* -1: none */
    const char *metrics_bind;
    const char *ui; /* --ui [ADDR:]PORT; NULL: no live view */
    char ui_addr[64]; /* parsed from ui */
    int ui_port;
    const char *ui_token; /* --ui-token; NULL: generated off loopback */
    int lsl; /* --lsl: LSL outlets (stream_lsl.h) */
    const char *lsl_names; /* --lsl-name; NULL: cam0, cam1... */
    const char *lsl_bind; /* --lsl-bind; NULL: 127.0.0.1 */
    const char *data_dir; /* --data DIR: per-frame CSV files (stream_data.h) */
    const char *record_dir; /* --record DIR: the cameras' video (stream_record.h) */
    const char *record_name; /* --record-name TEMPLATE; NULL: the default */
    int64_t record_segment_ns, record_segment_bytes; /* --record-segment (0: none) */
    char (*names)[CLI_CAMERA_NAME_MAX]; /* each camera's name: --lsl-name's,
                                         * else cam0, cam1... */
    const char *sinks[CLI_MAX_SINKS]; /* --sink URLs */
    int n_sinks;
    const char *site, *node; /* --site, --node; NULL: the sinks' defaults */
    double sink_drain_s;
    const char *participant_specs[RT_PARTICIPANTS_MAX]; /* --participant */
    const cli_config_item *participant_from[RT_PARTICIPANTS_MAX]; /* its config
                                                                   * line, or NULL */
    int n_participants;
    rt_participant_spec participants[RT_PARTICIPANTS_MAX]; /* parsed, cameras known */
    int enroll; /* --enroll */
    int enroll_frames;
    double enroll_distance;
    double sync_window_s; /* --sync-window */
    int comodulation; /* --comodulation */
    cli_config config; /* --config FILE's settings (their values live here) */
    const char *cluster; /* --cluster URL: cameras from the cluster (stream_cluster.h) */
    long cluster_weight; /* --cluster-weight */
    long max_frames; /* --max-frames (the cluster's cameras that set none) */
    char **owned; /* camera specs made here (bus:NAME/I) */
    int n_owned;
} cli_stream_opts;

void cli_stream_usage(FILE *to);

/* Parses argv (after "stream") into *o. Returns -1 when it is fine, else the
 * exit code to return (usage printed, or 0 for --help). */
int cli_stream_parse(int argc, char **argv, cli_stream_opts *o);

void cli_stream_opts_free(cli_stream_opts *o);

#endif
