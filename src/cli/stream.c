#define _POSIX_C_SOURCE 200809L /* sigaction, open_memstream, gethostname */
/* omma stream: the multi-camera runtime (runtime/runtime.h) from the
 * command line: sources and options (stream_options.c), results as JSON
 * Lines, a live status on stderr, the OpenMetrics endpoint, clean shutdown
 * on SIGINT/SIGTERM (a second signal exits at once). */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/run_output.h"
#include "cli/stream_cluster.h"
#include "cli/stream_data.h"
#include "cli/stream_record.h"
#include "cli/stream_lsl.h"
#include "cli/stream_options.h"
#include "cli/stream_people.h"
#include "core/clock.h"
#include "io/video_file.h"
#include "omma/device.h"
#include "metrics/metrics_http.h"
#include "runtime/preview.h"
#include "sink/sink.h"
#include "sink/sink_json.h"
#include "ui/ui_server.h"

#define EXIT_INTERRUPTED 130

static volatile sig_atomic_t signals_seen;

static void on_signal(int sig)
{
    (void)sig;
    if (signals_seen++ > 0)
        _exit(EXIT_INTERRUPTED); /* the second: at once */
}

typedef struct stream_state {
    cli_stream_opts *o;
    pthread_mutex_t lock; /* out, failed_cameras */
    cli_output out;
    int writing;
    int failed_cameras;
    uint64_t t0;
    cli_lsl_sink *lsl; /* --lsl; NULL: none */
    cli_data_sink *data; /* --data; NULL: none */
    cli_people *people; /* --participant; NULL: none */
    ui_server *ui; /* --ui; NULL: none */
    rt_preview *preview; /* its previews */
    sink *sinks[CLI_MAX_SINKS];
    int n_sinks;
    atomic_uint_fast64_t *sink_seq; /* per camera: messages made */
    int64_t unix_minus_now_ns; /* the wall clock minus core_now_ns() */
    char node[64];
    _Atomic(cli_cluster_node *) cluster; /* --cluster: this node's cameras; else NULL */
} stream_state;

/* The frame's message (the JSON record plus node, seq and the capture
 * time on the wall clock; the lease with --cluster) to every sink; they
 * only enqueue it. camera: the index in messages; camera_name: the
 * subjects' {camera} (NULL: camN). */
static void to_sinks(stream_state *s, const rt_result *r, int camera, const char *camera_name,
                     const char *name, uint64_t seq, uint64_t lease)
{
    sink_frame fr = {.camera = camera,
                     .source = name,
                     .frame = (long)r->seq - 1,
                     .timestamp_ms = (double)(r->capture_ns - s->t0) / 1e6,
                     .has_extra = 1,
                     .gpu = r->gpu,
                     .latency_ms = (double)(r->done_ns - r->capture_ns) / 1e6,
                     .dropped = (unsigned long long)r->dropped,
                     .node = s->node,
                     .seq = seq,
                     .capture_unix_ns = (uint64_t)((int64_t)r->capture_ns + s->unix_minus_now_ns),
                     .lease = lease,
                     .faces = r->faces,
                     .n_faces = r->n_faces,
                     .has_poses = r->poses != NULL,
                     .poses = r->poses,
                     .n_poses = r->n_poses,
                     .pose_face = r->pose_face,
                     .participant = r->participant};
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        return;
    sink_json_frame(m, &fr);
    if (fclose(m) != 0) {
        free(buf);
        return;
    }
    len--; /* no newline in a message */
    sink_message msg = {camera, camera_name, fr.seq, buf, len, lease};
    for (int i = 0; i < s->n_sinks; i++)
        (void)sink_publish(s->sinks[i], &msg); /* a refusal is counted in its stats */
    free(buf);
}

static void on_result(void *ctx, const rt_result *r0)
{
    stream_state *s = ctx;
    const rt_camera_config *c = &s->o->cameras[r0->camera];
    double ts = (double)(r0->capture_ns - s->t0) / 1e6;
    char *people = NULL;
    size_t people_len = 0;
    rt_result rr = *r0; /* with the faces' participant names */
    const rt_result *r = &rr;
    const char *names[OMMA_PIPELINE_MAX_FACES];
    if (s->people && r0->n_faces <= OMMA_PIPELINE_MAX_FACES &&
        cli_people_result(s->people, r0, ts, s->lsl, s->data, s->ui, names, &people, &people_len))
        rr.participant = names;
    if (s->n_sinks > 0)
        to_sinks(s, r, r->camera, c->name, c->spec ? c->spec : "synthetic",
                 atomic_fetch_add(&s->sink_seq[r->camera], 1) + 1, 0);
    if (s->lsl)
        cli_lsl_result(s->lsl, r);
    if (s->data)
        cli_data_result(s->data, r);
    if (s->ui)
        ui_result(s->ui, r);
    if (!s->writing) {
        free(people);
        return;
    }
    cli_frame_extra extra = {r->gpu, (double)(r->done_ns - r->capture_ns) / 1e6,
                             (unsigned long long)r->dropped};
    pthread_mutex_lock(&s->lock);
    cli_output_frame_result(&s->out, r->camera, c->spec ? c->spec : "synthetic", ts, &extra, r);
    if (people)
        cli_output_line(&s->out, people, people_len);
    pthread_mutex_unlock(&s->lock);
    free(people);
}

/* --cluster: a result of one of this node's cameras, its lease valid. */
static void on_cluster_result(void *ctx, const rt_result *r, int slot, const char *id,
                              const char *source, uint64_t seq, uint64_t lease)
{
    stream_state *s = ctx;
    if (s->n_sinks > 0)
        to_sinks(s, r, slot, id, source, seq, lease);
    if (!s->writing)
        return;
    cli_frame_extra extra = {r->gpu, (double)(r->done_ns - r->capture_ns) / 1e6,
                             (unsigned long long)r->dropped};
    double ts = (double)(r->capture_ns - s->t0) / 1e6;
    pthread_mutex_lock(&s->lock);
    cli_output_frame_result(&s->out, slot, source, ts, &extra, r);
    pthread_mutex_unlock(&s->lock);
}

/* The sinks' fence: with --cluster, a message goes out only while its
 * camera's lease holds here. */
static int fence(void *ctx, const char *camera, uint64_t lease)
{
    stream_state *s = ctx;
    cli_cluster_node *c = atomic_load(&s->cluster);
    return !c || cli_cluster_fence(c, camera, lease);
}

static void on_camera(void *ctx, const rt_camera_event *e)
{
    stream_state *s = ctx;
    const rt_camera_config *c = &s->o->cameras[e->camera];
    char name[512];
    io_video_url_redacted(c->spec ? c->spec : "synthetic", name, sizeof name); /* no passwords */
    pthread_mutex_lock(&s->lock);
    if (e->state == METRICS_CAMERA_FAILED) {
        s->failed_cameras++;
        cli_error("camera %d (%s) failed: %s", e->camera, name, e->detail);
    } else if (e->state == METRICS_CAMERA_RECONNECTING) {
        fprintf(stderr, "omma: camera %d (%s) reconnecting, %s\n", e->camera, name, e->detail);
    } else if (e->state == METRICS_CAMERA_RUNNING) {
        fprintf(stderr, "omma: camera %d (%s) running again: %s\n", e->camera, name, e->detail);
    } else {
        fprintf(stderr, "omma: camera %d (%s) ended: %s\n", e->camera, name, e->detail);
    }
    pthread_mutex_unlock(&s->lock);
}

/* The status on stderr: the table redrawn in place, or a JSON line. */
static void print_status(metrics_registry *m, int table, int *lines_drawn)
{
    metrics_snapshot *snap = NULL;
    if (metrics_snapshot_take(m, &snap) != OMMA_OK)
        return;
    char *text = NULL;
    omma_status st =
        table ? metrics_format_table(snap, &text, NULL) : metrics_format_json(snap, &text, NULL);
    metrics_snapshot_free(snap);
    if (st != OMMA_OK)
        return;
    if (table && *lines_drawn > 0)
        fprintf(stderr, "\x1b[%dA\x1b[J", *lines_drawn);
    fputs(text, stderr);
    fflush(stderr);
    int lines = 0;
    for (const char *p = text; *p; p++)
        lines += *p == '\n';
    *lines_drawn = lines;
    free(text);
}

static int resolve_gpus(cli_stream_opts *o)
{
    if (o->rt.pipeline.backend == OMMA_BACKEND_CPU)
        return -1; /* the CPU runtime uses no GPU */
    int count = 0;
    omma_status st = omma_device_count(&count);
    if (st != OMMA_OK || count == 0) {
        cli_error("no NVIDIA GPU found (%s); use --backend cpu to run on the CPU",
                  st != OMMA_OK ? omma_last_error() : "the driver sees none");
        return CLI_EXIT_NO_DEVICE;
    }
    if (o->all_gpus) {
        o->rt.n_gpus = count < RT_MAX_GPUS ? count : RT_MAX_GPUS;
        for (int i = 0; i < o->rt.n_gpus; i++)
            o->gpus[i] = i;
    }
    for (int i = 0; i < o->rt.n_gpus; i++)
        if (o->gpus[i] >= count) {
            fprintf(stderr, "omma: error: --gpus: GPU %d does not exist (this machine has %d)\n",
                    o->gpus[i], count);
            return CLI_EXIT_USAGE;
        }
    return -1;
}

static int has_synthetic(const cli_stream_opts *o)
{
    for (int i = 0; i < o->rt.n_cameras; i++)
        if (!o->cameras[i].spec)
            return 1;
    return 0;
}

/* Runs until the runtime ends; returns 1 when it was interrupted. */
static int watch(rt_runtime *rt, metrics_registry *m, const cli_stream_opts *o, omma_status *st)
{
    int table = o->status == CLI_STATUS_TABLE || (o->status == CLI_STATUS_AUTO && isatty(2));
    int lines = 0, interrupted = 0;
    uint64_t t0 = core_now_ns(), next = t0 + (uint64_t)(o->status_interval_s * 1e9);
    while ((*st = rt_runtime_wait(rt, 50)) == OMMA_ERR_TIMEOUT) {
        uint64_t now = core_now_ns();
        if (signals_seen && !interrupted) {
            interrupted = 1;
            rt_runtime_stop(rt);
        }
        if (o->duration_s > 0 && (double)(now - t0) / 1e9 >= o->duration_s)
            rt_runtime_stop(rt);
        if (o->status != CLI_STATUS_OFF && now >= next) {
            print_status(m, table, &lines);
            next = now + (uint64_t)(o->status_interval_s * 1e9);
        }
    }
    if (o->status != CLI_STATUS_OFF)
        print_status(m, table, &lines);
    return interrupted || signals_seen;
}

static void summary(rt_runtime *rt, double secs, const cli_stream_opts *o)
{
    rt_runtime_stats s;
    rt_runtime_get_stats(rt, &s);
    double frames = s.frames_done > 0 ? (double)s.frames_done : 1.0;
    if (o->rt.pipeline.backend == OMMA_BACKEND_CPU) {
        int threads = omma_cpu_thread_count(o->rt.pipeline.threads);
        fprintf(stderr,
                "omma stream: %llu frames in, %llu processed (%.1f frames/s), %llu dropped, %llu "
                "faces; %llu batches (%.1f frames/batch); CPU backend, %d thread%s\n",
                (unsigned long long)s.frames_in, (unsigned long long)s.frames_done,
                secs > 0 ? (double)s.frames_done / secs : 0.0, (unsigned long long)s.frames_dropped,
                (unsigned long long)s.faces, (unsigned long long)s.batches,
                s.batches ? frames / (double)s.batches : 0.0, threads, threads == 1 ? "" : "s");
        return;
    }
    fprintf(stderr,
            "omma stream: %llu frames in, %llu processed (%.1f frames/s), %llu dropped, %llu "
            "faces; %llu batches (%.1f frames/batch, %.1f launches/batch); %.0f B/frame "
            "host->device, %.0f B/frame device->host\n",
            (unsigned long long)s.frames_in, (unsigned long long)s.frames_done,
            secs > 0 ? (double)s.frames_done / secs : 0.0, (unsigned long long)s.frames_dropped,
            (unsigned long long)s.faces, (unsigned long long)s.batches,
            s.batches ? frames / (double)s.batches : 0.0,
            s.batches ? (double)s.launches / (double)s.batches : 0.0, (double)s.h2d_bytes / frames,
            (double)s.d2h_bytes / frames);
}

static void read_sink(void *ctx, metrics_sink_snap *out)
{
    sink *k = ctx;
    sink_stats st;
    sink_get_stats(k, &st);
    snprintf(out->name, sizeof out->name, "%s", sink_name(k));
    snprintf(out->kind, sizeof out->kind, "%s", sink_kind_str(sink_get_kind(k)));
    out->connected = st.connected;
    out->published = st.published;
    out->sent = st.sent;
    out->acked = st.acked;
    out->failed = st.failed;
    out->dropped = st.dropped;
    out->backlog = st.backlog;
    out->inflight = st.inflight;
    snprintf(out->last_error, sizeof out->last_error, "%s", st.last_error);
}

/* Opens the --sink URLs (each connects); returns -1, or the exit code. */
static int open_sinks(cli_stream_opts *o, stream_state *s, metrics_registry *m)
{
    if (o->n_sinks == 0)
        return -1;
    s->sink_seq = calloc((size_t)o->rt.n_cameras + 1, sizeof *s->sink_seq);
    if (!s->sink_seq)
        return cli_fail(OMMA_ERR_OUT_OF_MEMORY, "the sinks' sequence numbers");
    if (o->node)
        snprintf(s->node, sizeof s->node, "%s", o->node);
    else if (gethostname(s->node, sizeof s->node) != 0 || !s->node[0])
        snprintf(s->node, sizeof s->node, "node");
    s->node[sizeof s->node - 1] = 0;
    for (char *c = s->node; *c; c++) /* as the sinks name it */
        if (*c == '.')
            *c = '_';
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    s->unix_minus_now_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec - (int64_t)core_now_ns();
    sink_options so = {o->site, s->node, 0, 0, 0, fence, s};
    for (int i = 0; i < o->n_sinks; i++) {
        omma_status st = sink_open(o->sinks[i], &so, &s->sinks[s->n_sinks]);
        if (st != OMMA_OK)
            return cli_fail(st, "--sink");
        s->n_sinks++;
        if (metrics_add_sink(m, read_sink, s->sinks[s->n_sinks - 1]) != OMMA_OK)
            return cli_fail(OMMA_ERR_INVALID_ARG, "--sink: %s", omma_last_error());
        fprintf(stderr, "omma stream: sink %s connected\n", sink_name(s->sinks[s->n_sinks - 1]));
    }
    return -1;
}

/* Waits up to --sink-drain for the acknowledgements, closes the sinks and
 * says what each one delivered. */
static void close_sinks(cli_stream_opts *o, stream_state *s, metrics_registry *m)
{
    metrics_remove_sinks(m);
    for (int i = 0; i < s->n_sinks; i++) {
        char name[SINK_NAME_MAX];
        snprintf(name, sizeof name, "%s", sink_name(s->sinks[i]));
        sink_stats st;
        sink_close(s->sinks[i], (int)(o->sink_drain_s * 1000.0), &st);
        char fenced[64] = "";
        if (st.fenced > 0) /* --cluster: leases that ended under the backlog */
            snprintf(fenced, sizeof fenced, " (%llu fenced)", (unsigned long long)st.fenced);
        fprintf(stderr,
                "omma stream: sink %s: %llu published, %llu acknowledged, %llu failed "
                "(resent), %llu dropped%s%s%s\n",
                name, (unsigned long long)st.published, (unsigned long long)st.acked,
                (unsigned long long)st.failed, (unsigned long long)st.dropped, fenced,
                st.last_error[0] ? "; last error: " : "", st.last_error);
    }
    s->n_sinks = 0;
    free(s->sink_seq);
    s->sink_seq = NULL;
}

/* --ui: the previews and the live view's server; returns -1, or the exit
 * code. */
static int start_ui(cli_stream_opts *o, stream_state *s, metrics_registry *m)
{
    if (!o->ui)
        return -1;
    omma_status st = rt_preview_create(o->rt.n_cameras, &s->preview);
    if (st != OMMA_OK)
        return cli_fail(st, "--ui");
    const char **names = calloc((size_t)o->rt.n_cameras, sizeof *names);
    const char **sources = calloc((size_t)o->rt.n_cameras, sizeof *sources);
    if (!names || !sources) {
        free(names);
        free(sources);
        return cli_fail(OMMA_ERR_OUT_OF_MEMORY, "--ui");
    }
    for (int i = 0; i < o->rt.n_cameras; i++) {
        names[i] = o->cameras[i].name;
        sources[i] = o->cameras[i].spec ? o->cameras[i].spec : "synthetic";
    }
    ui_options uo = {.bind_addr = o->ui_addr,
                     .port = o->ui_port,
                     .token = o->ui_token,
                     .n_cameras = o->rt.n_cameras,
                     .names = names,
                     .sources = sources,
                     .max_faces = o->rt.pipeline.max_faces,
                     .max_poses = o->rt.pose.landmark_model ? o->rt.pose.max_poses : 0,
                     .t0_ns = s->t0,
                     .metrics = m,
                     .preview = s->preview};
    st = ui_start(&uo, &s->ui);
    free(names);
    free(sources);
    if (st != OMMA_OK)
        return cli_fail(st, "--ui %s", o->ui);
    o->rt.preview = s->preview;
    const char *a = o->ui_addr;
    int v6 = strchr(a, ':') != NULL;
    const char *token = ui_token(s->ui);
    fprintf(stderr, "omma stream: live view at http://%s%s%s:%d/%s%s%s\n", v6 ? "[" : "", a,
            v6 ? "]" : "", ui_port(s->ui), token[0] ? "?token=" : "", token,
            token[0] && !o->ui_token ? " (a new token: every request needs it)" : "");
    return -1;
}

/* --cluster: joins, runs this node's share of the cameras until a signal
 * or --duration, hands them over. */
static int run_cluster(cli_stream_opts *o, stream_state *s, metrics_registry *m)
{
    metrics_http *http = NULL;
    if (o->metrics_port >= 0) {
        omma_status st = metrics_http_start(m, o->metrics_bind, o->metrics_port, &http);
        if (st != OMMA_OK)
            return cli_fail(st, "--metrics-port %d", o->metrics_port);
    }
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    s->t0 = core_now_ns();
    o->rt.metrics = m; /* the node's runtime lists its cameras as they come and go */
    cli_cluster_node *c = NULL;
    int rc = cli_cluster_start(o, on_cluster_result, s, &c);
    if (rc < 0) {
        atomic_store(&s->cluster, c);
        int lines = 0;
        uint64_t next = s->t0;
        while (!signals_seen) {
            uint64_t now = core_now_ns();
            if (o->duration_s > 0 && (double)(now - s->t0) / 1e9 >= o->duration_s)
                break;
            if (o->status != CLI_STATUS_OFF && now >= next) {
                print_status(m, 0, &lines);
                cli_cluster_status(c, stderr);
                next = now + (uint64_t)(o->status_interval_s * 1e9);
            }
            struct timespec ts = {0, 20000000};
            nanosleep(&ts, NULL);
        }
        cli_cluster_leave(c); /* hands the cameras over: their runtimes end; what
                               * the sinks still hold for them is fenced */
        rc = signals_seen ? EXIT_INTERRUPTED : CLI_EXIT_OK;
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    metrics_http_stop(http);
    return rc;
}

static int run(cli_stream_opts *o, stream_state *s, metrics_registry *m)
{
    if (o->cluster)
        return run_cluster(o, s, m);
    rt_runtime *rt = NULL;
    metrics_http *http = NULL;
    if (o->metrics_port >= 0) {
        omma_status st = metrics_http_start(m, o->metrics_bind, o->metrics_port, &http);
        if (st != OMMA_OK)
            return cli_fail(st, "--metrics-port %d", o->metrics_port);
        fprintf(stderr, "omma stream: OpenMetrics at http://%s:%d/metrics\n",
                o->metrics_bind ? o->metrics_bind : "0.0.0.0", metrics_http_port(http));
    }
    o->rt.metrics = m;
    o->rt.on_result = on_result;
    o->rt.on_camera = on_camera;
    o->rt.ctx = s;
    s->t0 = core_now_ns();
    int rc = start_ui(o, s, m);
    if (rc >= 0) {
        metrics_http_stop(http);
        return rc;
    }
    omma_status st = rt_runtime_start(&o->rt, &rt);
    if (st != OMMA_OK) {
        metrics_http_stop(http);
        return cli_fail(st, "starting the runtime");
    }
    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    int interrupted = watch(rt, m, o, &st);
    summary(rt, (double)(core_now_ns() - s->t0) / 1e9, o);
    rt_runtime_destroy(rt);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    metrics_http_stop(http);
    if (st != OMMA_OK)
        return cli_fail(st, "the runtime stopped");
    if (interrupted)
        return EXIT_INTERRUPTED;
    return s->failed_cameras ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}

int cli_stream(int argc, char **argv)
{
    static cli_stream_opts o;
    int rc = cli_stream_parse(argc, argv, &o);
    if (rc >= 0) {
        cli_stream_opts_free(&o);
        return rc;
    }
    rc = resolve_gpus(&o);
    io_image photo = {0};
    if (rc < 0 && o.cluster) { /* any camera of the cluster may be synthetic */
        if (io_image_load(o.photo, &photo) == OMMA_OK)
            o.rt.photo = &photo;
    } else if (rc < 0 && has_synthetic(&o)) {
        omma_status st = io_image_load(o.photo, &photo);
        if (st != OMMA_OK)
            rc = cli_fail(st, "the synthetic cameras' photo (run scripts/fetch-testdata.sh)");
        o.rt.photo = &photo;
    }
    metrics_registry *m = NULL;
    metrics_config mc = {rt_runtime_stage_names, RT_RUNTIME_STAGES, 0};
    if (rc < 0) {
        omma_status st = metrics_create(&mc, &m);
        if (st != OMMA_OK)
            rc = cli_fail(st, "metrics");
    }
    static stream_state s;
    s.o = &o;
    pthread_mutex_init(&s.lock, NULL);
    if (rc < 0 && o.lsl)
        rc = cli_lsl_start(&o, &s.lsl);
    if (rc < 0 && o.data_dir)
        rc = cli_data_start(&o, &s.data);
    if (rc < 0)
        rc = cli_people_start(&o, &s.people);
    cli_record *rec = NULL;
    if (rc < 0 && o.record_dir)
        rc = cli_record_start(&o, &rec);
    if (rc < 0 && o.results) {
        if (!cli_output_open(&s.out, o.out, 0))
            rc = CLI_EXIT_ERROR;
        else
            s.writing = 1;
    }
    if (rc < 0)
        rc = open_sinks(&o, &s, m);
    if (rc < 0)
        rc = run(&o, &s, m);
    close_sinks(&o, &s, m);
    cli_cluster_free(atomic_load(&s.cluster)); /* after the sinks: their fence */
    atomic_store(&s.cluster, NULL);
    if (s.writing && !cli_output_close(&s.out, 1) && rc == CLI_EXIT_OK)
        rc = CLI_EXIT_ERROR;
    cli_people_stop(s.people);
    s.people = NULL;
    cli_lsl_stop(s.lsl);
    s.lsl = NULL;
    if (cli_data_stop(s.data) && rc == CLI_EXIT_OK)
        rc = CLI_EXIT_ERROR;
    s.data = NULL;
    ui_stop(s.ui); /* after the runtime, which reports to it */
    s.ui = NULL;
    rt_preview_destroy(s.preview);
    s.preview = NULL;
    if (cli_record_stop(rec) && rc == CLI_EXIT_OK)
        rc = CLI_EXIT_ERROR;
    metrics_destroy(m);
    io_image_free(&photo);
    pthread_mutex_destroy(&s.lock);
    cli_stream_opts_free(&o);
    return rc;
}
