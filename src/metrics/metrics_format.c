/* Reports of a metrics snapshot: OpenMetrics 1.0 text, a JSON line and a
 * fixed-width terminal table. All three are written into a growing buffer
 * that remembers an allocation failure and reports it once at the end, so
 * the writers read as straight-line code. */
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "metrics/metrics.h"

/* OpenMetrics exposes every fifth bound: 5 per decade, 1 us .. 10 s. */
#define OM_BUCKET_STRIDE 5

typedef struct text {
    char *p;
    size_t len, cap;
    int failed;
} text;

static int grow(text *t, size_t more)
{
    if (t->failed)
        return 0;
    if (t->len + more + 1 <= t->cap)
        return 1;
    size_t cap = t->cap ? t->cap : 4096;
    while (cap < t->len + more + 1)
        cap *= 2;
    char *p = realloc(t->p, cap);
    if (!p) {
        t->failed = 1;
        return 0;
    }
    t->p = p;
    t->cap = cap;
    return 1;
}

static void put(text *t, const char *s, size_t n)
{
    if (!grow(t, n))
        return;
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
}

static void puts_(text *t, const char *s)
{
    put(t, s, strlen(s));
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
putf(text *t, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        t->failed = 1;
        return;
    }
    if ((size_t)n < sizeof small) {
        put(t, small, (size_t)n);
        return;
    }
    if (!grow(t, (size_t)n))
        return;
    va_start(ap, fmt);
    vsnprintf(t->p + t->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

static omma_status finish(text *t, const char *what, char **out, size_t *len)
{
    if (!t->failed && !t->p)
        put(t, "", 0);
    if (t->failed) {
        free(t->p);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: out of memory after %zu bytes", what, t->len);
    }
    *out = t->p;
    if (len)
        *len = t->len;
    return OMMA_OK;
}

static omma_status check_args(const metrics_snapshot *s, char **out, const char *what)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: NULL text", what);
    *out = NULL;
    if (!s)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: NULL snapshot", what);
    return OMMA_OK;
}

/* ---- OpenMetrics -------------------------------------------------------- */

/* The spec's canonical rendering (Go's %g, shortest round-trip digits, with
 * ".0" when neither a point nor an exponent shows): 1e-06, 0.001, 1.0, 10.0. */
static void om_number(double v, char *buf, size_t size)
{
    if (isinf(v)) {
        snprintf(buf, size, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (isnan(v)) {
        snprintf(buf, size, "NaN");
        return;
    }
    int digits = 1;
    for (; digits < 17; digits++) {
        snprintf(buf, size, "%.*e", digits - 1, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    const char *e = strchr(buf, 'e');
    int exp10 = e ? atoi(e + 1) : 0;
    if (exp10 < -4 || exp10 >= 6) {
        snprintf(buf, size, "%.*e", digits - 1, v);
        return;
    }
    int decimals = digits - 1 - exp10;
    snprintf(buf, size, "%.*f", decimals > 0 ? decimals : 0, v);
    if (!strchr(buf, '.') && strlen(buf) + 2 < size)
        strcat(buf, ".0");
}

/* Nanoseconds as exact seconds ("0.000001585", "12.5"). */
static void put_seconds(text *t, uint64_t ns)
{
    char frac[16];
    snprintf(frac, sizeof frac, "%09" PRIu64, ns % 1000000000u);
    size_t n = strlen(frac);
    while (n > 1 && frac[n - 1] == '0')
        n--;
    frac[n] = '\0';
    putf(t, "%" PRIu64 ".%s", ns / 1000000000u, frac);
}

static void put_label_value(text *t, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            puts_(t, "\\\\");
        else if (*s == '"')
            puts_(t, "\\\"");
        else if (*s == '\n')
            puts_(t, "\\n");
        else
            put(t, s, 1);
    }
}

static void om_family(text *t, const char *name, const char *type, const char *unit,
                      const char *help)
{
    putf(t, "# TYPE %s %s\n", name, type);
    if (unit)
        putf(t, "# UNIT %s %s\n", name, unit);
    putf(t, "# HELP %s %s\n", name, help);
}

/* name{camera="..."} -- the labels of a camera's series, without the brace. */
static void camera_labels(text *t, const metrics_camera_snap *c)
{
    puts_(t, "camera=\"");
    put_label_value(t, c->name);
    puts_(t, "\"");
}

static void om_hist(text *t, const char *family, const text *labels, const metrics_hist *h)
{
    uint64_t cum = 0;
    char le[32];
    for (int k = 0; k < METRICS_BOUNDS; k++) {
        cum += h->buckets[k];
        if (k % OM_BUCKET_STRIDE != 0)
            continue;
        om_number((double)metrics_bucket_le_ns(k) / 1e9, le, sizeof le);
        putf(t, "%s_bucket{%s,le=\"%s\"} %" PRIu64 "\n", family, labels->p, le, cum);
    }
    putf(t, "%s_bucket{%s,le=\"+Inf\"} %" PRIu64 "\n", family, labels->p, h->count);
    putf(t, "%s_count{%s} %" PRIu64 "\n", family, labels->p, h->count);
    putf(t, "%s_sum{%s} ", family, labels->p);
    put_seconds(t, h->sum_ns);
    puts_(t, "\n");
}

typedef enum {
    CAM_IN,
    CAM_PROCESSED,
    CAM_DROPPED,
    CAM_DAMAGED,
    CAM_REFUSED,
    CAM_RECONNECTS
} cam_counter;

static void om_camera_counter(text *t, const metrics_snapshot *s, text *lab, const char *name,
                              const char *help, cam_counter which)
{
    om_family(t, name, "counter", NULL, help);
    for (int i = 0; i < s->n_cameras; i++) {
        const metrics_camera_snap *c = &s->cameras[i];
        uint64_t v = which == CAM_IN          ? c->frames_in
                     : which == CAM_PROCESSED ? c->frames_processed
                     : which == CAM_DROPPED   ? c->frames_dropped
                     : which == CAM_DAMAGED   ? c->damaged_frames
                     : which == CAM_REFUSED   ? c->dropped_packets
                                              : c->reconnects;
        lab->len = 0;
        camera_labels(lab, c);
        putf(t, "%s_total{%s} %" PRIu64 "\n", name, lab->failed ? "" : lab->p, v);
    }
}

typedef enum { GPU_UTIL, GPU_MEM_USED, GPU_MEM_TOTAL, GPU_POWER, GPU_TEMP } gpu_gauge;

static void om_gpu_gauge(text *t, const metrics_snapshot *s, const char *name, const char *unit,
                         const char *help, gpu_gauge which)
{
    static const unsigned need[] = {OMMA_METRIC_UTILIZATION, OMMA_METRIC_MEMORY, OMMA_METRIC_MEMORY,
                                    OMMA_METRIC_POWER, OMMA_METRIC_TEMPERATURE};
    om_family(t, name, "gauge", unit, help);
    for (int i = 0; i < s->n_gpus; i++) {
        const omma_device_metrics *r = &s->gpus[i].reading;
        if (!r->available || !(r->valid & need[which]))
            continue; /* unknown: no sample rather than a 0 */
        char v[32];
        switch (which) {
        case GPU_UTIL:
            om_number(r->gpu_util_pct / 100.0, v, sizeof v);
            break;
        case GPU_MEM_USED:
            snprintf(v, sizeof v, "%" PRIu64, r->mem_used);
            break;
        case GPU_MEM_TOTAL:
            snprintf(v, sizeof v, "%" PRIu64, r->mem_total);
            break;
        case GPU_POWER:
            om_number(r->power_mw / 1000.0, v, sizeof v);
            break;
        case GPU_TEMP:
            snprintf(v, sizeof v, "%u", r->temperature_c);
            break;
        }
        putf(t, "%s{gpu=\"%d\"} %s\n", name, s->gpus[i].index, v);
    }
}

omma_status metrics_format_openmetrics(const metrics_snapshot *s, char **out, size_t *len)
{
    OMMA_TRY(check_args(s, out, "metrics_format_openmetrics"));
    text t = {0}, lab = {0};
    put(&lab, "", 0);

    om_family(&t, "omma_camera", "info", NULL, "A camera: its index and the GPU it is placed on.");
    for (int i = 0; i < s->n_cameras; i++) {
        const metrics_camera_snap *c = &s->cameras[i];
        puts_(&t, "omma_camera_info{");
        camera_labels(&t, c);
        if (c->gpu >= 0)
            putf(&t, ",index=\"%d\",gpu=\"%d\"} 1\n", c->index, c->gpu);
        else
            putf(&t, ",index=\"%d\",gpu=\"none\"} 1\n", c->index);
    }
    om_family(&t, "omma_camera_state", "stateset", NULL,
              "Whether the camera's source is running, ended, failed or reconnecting.");
    for (int i = 0; i < s->n_cameras; i++) {
        for (int st = METRICS_CAMERA_RUNNING; st <= METRICS_CAMERA_RECONNECTING; st++) {
            puts_(&t, "omma_camera_state{");
            camera_labels(&t, &s->cameras[i]);
            putf(&t, ",omma_camera_state=\"%s\"} %d\n",
                 metrics_camera_state_str((metrics_camera_state)st),
                 (int)s->cameras[i].state == st);
        }
    }
    om_camera_counter(&t, s, &lab, "omma_camera_frames_in", "Frames the camera's source delivered.",
                      CAM_IN);
    om_camera_counter(&t, s, &lab, "omma_camera_frames_processed",
                      "Frames of the camera whose results are out.", CAM_PROCESSED);
    om_camera_counter(&t, s, &lab, "omma_camera_frames_dropped",
                      "Frames of the camera dropped before processing.", CAM_DROPPED);
    om_camera_counter(&t, s, &lab, "omma_camera_damaged_frames",
                      "Frames of the camera its decoder concealed damage in.", CAM_DAMAGED);
    om_camera_counter(&t, s, &lab, "omma_camera_refused_packets",
                      "Packets of the camera its decoder refused (no frame).", CAM_REFUSED);
    om_camera_counter(&t, s, &lab, "omma_camera_reconnects",
                      "Times the camera's stream was regained after it was lost.", CAM_RECONNECTS);
    om_family(&t, "omma_camera_reconnect_attempt", "gauge", NULL,
              "The reconnection attempt under way (0: connected).");
    for (int i = 0; i < s->n_cameras; i++) {
        lab.len = 0;
        camera_labels(&lab, &s->cameras[i]);
        putf(&t, "omma_camera_reconnect_attempt{%s} %d\n", lab.failed ? "" : lab.p,
             s->cameras[i].attempt);
    }
    om_family(&t, "omma_camera_latency_seconds", "histogram", "seconds",
              "Time from a frame's capture to its result.");
    for (int i = 0; i < s->n_cameras; i++) {
        lab.len = 0;
        camera_labels(&lab, &s->cameras[i]);
        if (!lab.failed)
            om_hist(&t, "omma_camera_latency_seconds", &lab, &s->cameras[i].latency);
    }

    om_family(&t, "omma_gpu", "info", NULL, "A GPU: its name.");
    for (int i = 0; i < s->n_gpus; i++) {
        putf(&t, "omma_gpu_info{gpu=\"%d\",name=\"", s->gpus[i].index);
        put_label_value(&t, s->gpus[i].name);
        puts_(&t, "\"} 1\n");
    }
    om_family(&t, "omma_gpu_readings_available", "gauge", NULL,
              "1 when the GPU's last NVML reading succeeded, 0 when NVML is unavailable.");
    for (int i = 0; i < s->n_gpus; i++)
        putf(&t, "omma_gpu_readings_available{gpu=\"%d\"} %d\n", s->gpus[i].index,
             s->gpus[i].reading.available ? 1 : 0);
    om_gpu_gauge(&t, s, "omma_gpu_utilization_ratio", "ratio",
                 "Fraction of the last sample period in which a kernel ran.", GPU_UTIL);
    om_gpu_gauge(&t, s, "omma_gpu_memory_used_bytes", "bytes",
                 "Device memory in use by all processes.", GPU_MEM_USED);
    om_gpu_gauge(&t, s, "omma_gpu_memory_total_bytes", "bytes", "Device memory in all.",
                 GPU_MEM_TOTAL);
    om_gpu_gauge(&t, s, "omma_gpu_power_watts", "watts", "Power draw.", GPU_POWER);
    om_gpu_gauge(&t, s, "omma_gpu_temperature_celsius", "celsius", "GPU temperature.", GPU_TEMP);
    om_family(&t, "omma_gpu_stage_seconds", "histogram", "seconds",
              "GPU time of one run of a pipeline stage, from CUDA events.");
    for (int i = 0; i < s->n_gpus; i++) {
        for (int k = 0; k < s->n_stages; k++) {
            lab.len = 0;
            putf(&lab, "gpu=\"%d\",stage=\"", s->gpus[i].index);
            put_label_value(&lab, s->stage_names[k]);
            puts_(&lab, "\"");
            if (!lab.failed)
                om_hist(&t, "omma_gpu_stage_seconds", &lab, &s->gpus[i].stages[k]);
        }
    }

    om_family(&t, "omma_process_cpu_seconds", "counter", "seconds",
              "CPU time of the whole process (user and system).");
    puts_(&t, "omma_process_cpu_seconds_total ");
    put_seconds(&t, s->process_cpu_ns);
    puts_(&t, "\n");
    om_family(&t, "omma_process_cpu_per_frame_seconds", "gauge", "seconds",
              "Process CPU time per processed frame over the last rate window.");
    if (!isnan(s->cpu_ns_per_frame)) {
        char v[32];
        om_number(s->cpu_ns_per_frame / 1e9, v, sizeof v);
        putf(&t, "omma_process_cpu_per_frame_seconds %s\n", v);
    }
    if (s->n_sinks > 0) {
        static const struct {
            const char *name, *type, *help;
            size_t off;
        } sink_series[] = {
            {"omma_sink_published", "counter", "Result messages given to the sink.",
             offsetof(metrics_sink_snap, published)},
            {"omma_sink_sent", "counter", "Messages handed to the library (resends included).",
             offsetof(metrics_sink_snap, sent)},
            {"omma_sink_acked", "counter", "Messages the server acknowledged.",
             offsetof(metrics_sink_snap, acked)},
            {"omma_sink_failed", "counter", "Deliveries refused or timed out (then resent).",
             offsetof(metrics_sink_snap, failed)},
            {"omma_sink_dropped", "counter", "Messages lost: backlog full (oldest first).",
             offsetof(metrics_sink_snap, dropped)},
            {"omma_sink_backlog", "gauge", "Messages waiting in the backlog.",
             offsetof(metrics_sink_snap, backlog)},
            {"omma_sink_inflight", "gauge", "Messages sent and not yet acknowledged.",
             offsetof(metrics_sink_snap, inflight)},
        };
        for (size_t k = 0; k < sizeof sink_series / sizeof sink_series[0]; k++) {
            int counter = !strcmp(sink_series[k].type, "counter");
            om_family(&t, sink_series[k].name, sink_series[k].type, NULL, sink_series[k].help);
            for (int i = 0; i < s->n_sinks; i++) {
                uint64_t v;
                memcpy(&v, (const char *)&s->sinks[i] + sink_series[k].off, sizeof v);
                putf(&t, "%s%s{sink=\"", sink_series[k].name, counter ? "_total" : "");
                put_label_value(&t, s->sinks[i].name);
                putf(&t, "\",kind=\"%s\"} %" PRIu64 "\n", s->sinks[i].kind, v);
            }
        }
        om_family(&t, "omma_sink_connected", "gauge", NULL,
                  "1 while the sink is connected to its server.");
        for (int i = 0; i < s->n_sinks; i++) {
            puts_(&t, "omma_sink_connected{sink=\"");
            put_label_value(&t, s->sinks[i].name);
            putf(&t, "\",kind=\"%s\"} %d\n", s->sinks[i].kind, s->sinks[i].connected ? 1 : 0);
        }
    }
    puts_(&t, "# EOF\n");

    if (lab.failed)
        t.failed = 1;
    free(lab.p);
    return finish(&t, "metrics_format_openmetrics", out, len);
}

/* ---- JSON --------------------------------------------------------------- */

/* A JSON string: escapes quotes, backslashes and control characters, and
 * replaces bytes that are not UTF-8 (a driver's reason string) with U+FFFD. */
static void put_json_string(text *t, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    puts_(t, "\"");
    while (*s) {
        unsigned c = *s;
        if (c == '"' || c == '\\') {
            putf(t, "\\%c", c);
            s++;
        } else if (c < 0x20 || c == 0x7f) {
            putf(t, "\\u%04x", c);
            s++;
        } else if (c < 0x80) {
            put(t, (const char *)s, 1);
            s++;
        } else {
            int n = (c & 0xE0) == 0xC0 ? 1 : (c & 0xF0) == 0xE0 ? 2 : (c & 0xF8) == 0xF0 ? 3 : -1;
            int ok = n > 0;
            for (int i = 1; ok && i <= n; i++)
                ok = (s[i] & 0xC0) == 0x80;
            if (ok) {
                put(t, (const char *)s, (size_t)n + 1);
                s += n + 1;
            } else {
                puts_(t, "\\ufffd");
                s++;
            }
        }
    }
    puts_(t, "\"");
}

static void put_json_number(text *t, double v)
{
    if (isfinite(v))
        putf(t, "%.6g", v);
    else
        puts_(t, "null");
}

static void put_json_quantiles(text *t, const metrics_hist *h)
{
    putf(t, "{\"count\":%" PRIu64 ",\"p50\":", h->count);
    put_json_number(t, metrics_hist_quantile_ns(h, 0.5) / 1e6);
    puts_(t, ",\"p99\":");
    put_json_number(t, metrics_hist_quantile_ns(h, 0.99) / 1e6);
    puts_(t, "}");
}

omma_status metrics_format_json(const metrics_snapshot *s, char **out, size_t *len)
{
    OMMA_TRY(check_args(s, out, "metrics_format_json"));
    text t = {0};
    putf(&t, "{\"time_unix_ms\":%" PRIu64 ",\"uptime_s\":", s->unix_ms);
    put_json_number(&t, s->uptime_ns / 1e9);
    putf(&t, ",\"frames_processed\":%" PRIu64 ",\"cpu_us_per_frame\":", s->frames_processed);
    put_json_number(&t, s->cpu_ns_per_frame / 1e3);
    puts_(&t, ",\"cameras\":[");
    for (int i = 0; i < s->n_cameras; i++) {
        const metrics_camera_snap *c = &s->cameras[i];
        putf(&t, "%s{\"index\":%d,\"name\":", i ? "," : "", c->index);
        put_json_string(&t, c->name);
        if (c->gpu >= 0)
            putf(&t, ",\"gpu\":%d", c->gpu);
        else
            puts_(&t, ",\"gpu\":null");
        putf(&t,
             ",\"state\":\"%s\",\"frames_in\":%" PRIu64 ",\"frames_processed\":%" PRIu64
             ",\"frames_dropped\":%" PRIu64 ",\"fps_in\":",
             metrics_camera_state_str(c->state), c->frames_in, c->frames_processed,
             c->frames_dropped);
        put_json_number(&t, c->fps_in);
        puts_(&t, ",\"fps_processed\":");
        put_json_number(&t, c->fps_processed);
        puts_(&t, ",\"latency_ms\":");
        put_json_quantiles(&t, &c->latency);
        putf(&t,
             ",\"damaged_frames\":%" PRIu64 ",\"refused_packets\":%" PRIu64
             ",\"reconnects\":%" PRIu64 ",\"attempt\":%d,\"capture_clock\":\"%s\",\"error\":",
             c->damaged_frames, c->dropped_packets, c->reconnects, c->attempt,
             c->stream_clock ? "stream" : "arrival");
        if (c->error[0])
            put_json_string(&t, c->error);
        else
            puts_(&t, "null");
        puts_(&t, ",\"decoder\":");
        if (c->decoder[0])
            put_json_string(&t, c->decoder);
        else
            puts_(&t, "null");
        puts_(&t, "}");
    }
    puts_(&t, "],\"gpus\":[");
    for (int i = 0; i < s->n_gpus; i++) {
        const metrics_gpu_snap *g = &s->gpus[i];
        const omma_device_metrics *r = &g->reading;
        unsigned valid = r->available ? r->valid : 0;
        putf(&t, "%s{\"index\":%d,\"name\":", i ? "," : "", g->index);
        put_json_string(&t, g->name);
        putf(&t, ",\"available\":%s", r->available ? "true" : "false");
        if (!r->available) {
            puts_(&t, ",\"reason\":");
            put_json_string(&t, r->reason);
        }
        if (valid & OMMA_METRIC_UTILIZATION)
            putf(&t, ",\"util_pct\":%u", r->gpu_util_pct);
        else
            puts_(&t, ",\"util_pct\":null");
        if (valid & OMMA_METRIC_MEMORY)
            putf(&t, ",\"mem_used_bytes\":%" PRIu64 ",\"mem_total_bytes\":%" PRIu64, r->mem_used,
                 r->mem_total);
        else
            puts_(&t, ",\"mem_used_bytes\":null,\"mem_total_bytes\":null");
        puts_(&t, ",\"power_w\":");
        if (valid & OMMA_METRIC_POWER)
            put_json_number(&t, r->power_mw / 1000.0);
        else
            puts_(&t, "null");
        if (valid & OMMA_METRIC_TEMPERATURE)
            putf(&t, ",\"temperature_c\":%u", r->temperature_c);
        else
            puts_(&t, ",\"temperature_c\":null");
        puts_(&t, ",\"stages_ms\":{");
        for (int k = 0; k < s->n_stages; k++) {
            if (k)
                puts_(&t, ",");
            put_json_string(&t, s->stage_names[k]);
            puts_(&t, ":");
            put_json_quantiles(&t, &g->stages[k]);
        }
        puts_(&t, "}}");
    }
    puts_(&t, "]");
    if (s->n_sinks > 0) {
        puts_(&t, ",\"sinks\":[");
        for (int i = 0; i < s->n_sinks; i++) {
            const metrics_sink_snap *k = &s->sinks[i];
            puts_(&t, i ? ",{\"name\":" : "{\"name\":");
            put_json_string(&t, k->name);
            putf(&t,
                 ",\"kind\":\"%s\",\"connected\":%s,\"published\":%" PRIu64 ",\"sent\":%" PRIu64
                 ",\"acked\":%" PRIu64 ",\"failed\":%" PRIu64 ",\"dropped\":%" PRIu64
                 ",\"backlog\":%" PRIu64 ",\"inflight\":%" PRIu64 ",\"last_error\":",
                 k->kind, k->connected ? "true" : "false", k->published, k->sent, k->acked,
                 k->failed, k->dropped, k->backlog, k->inflight);
            put_json_string(&t, k->last_error);
            puts_(&t, "}");
        }
        puts_(&t, "]");
    }
    puts_(&t, "}\n");
    return finish(&t, "metrics_format_json", out, len);
}

/* ---- Terminal table ----------------------------------------------------- */

/* A name cut to `width` characters (counting UTF-8 code points), control
 * characters as '?', padded with spaces to the width. */
static void put_cell_name(text *t, const char *name, int width)
{
    int shown = 0;
    const unsigned char *s = (const unsigned char *)name;
    while (*s && shown < width) {
        size_t n = 1;
        if (*s >= 0x80)
            while ((s[n] & 0xC0) == 0x80 && n < 4)
                n++;
        if (*s < 0x20 || *s == 0x7f)
            puts_(t, "?");
        else
            put(t, (const char *)s, n);
        s += n;
        shown++;
    }
    for (; shown < width; shown++)
        puts_(t, " ");
}

static void put_cell_double(text *t, int width, int decimals, double v)
{
    if (isfinite(v))
        putf(t, " %*.*f", width, decimals, v);
    else
        putf(t, " %*s", width, "-");
}

#define NAME_W 20
#define STAGE_W 17

omma_status metrics_format_table(const metrics_snapshot *s, char **out, size_t *len)
{
    OMMA_TRY(check_args(s, out, "metrics_format_table"));
    text t = {0};

    putf(&t, "%4s %-*s %3s %-7s %8s %8s %10s %8s %9s %9s\n", "cam", NAME_W, "name", "gpu", "state",
         "fps in", "fps out", "frames", "drops", "p50 ms", "p99 ms");
    for (int i = 0; i < s->n_cameras; i++) {
        const metrics_camera_snap *c = &s->cameras[i];
        putf(&t, "%4d ", c->index);
        put_cell_name(&t, c->name, NAME_W);
        if (c->gpu >= 0)
            putf(&t, " %3d", c->gpu);
        else
            putf(&t, " %3s", "-");
        putf(&t, " %-7s",
             c->state == METRICS_CAMERA_RECONNECTING ? "reconn"
                                                     : metrics_camera_state_str(c->state));
        put_cell_double(&t, 8, 1, c->fps_in);
        put_cell_double(&t, 8, 1, c->fps_processed);
        putf(&t, " %10" PRIu64 " %8" PRIu64, c->frames_processed, c->frames_dropped);
        put_cell_double(&t, 9, 2, metrics_hist_quantile_ns(&c->latency, 0.5) / 1e6);
        put_cell_double(&t, 9, 2, metrics_hist_quantile_ns(&c->latency, 0.99) / 1e6);
        puts_(&t, "\n");
        if (c->state == METRICS_CAMERA_RECONNECTING || c->damaged_frames) {
            char line[METRICS_ERROR_MAX + 128];
            if (c->state == METRICS_CAMERA_RECONNECTING)
                snprintf(line, sizeof line, "reconnecting, attempt %d: %s", c->attempt, c->error);
            else
                snprintf(line, sizeof line, "%" PRIu64 " damaged frame%s concealed",
                         c->damaged_frames, c->damaged_frames == 1 ? "" : "s");
            putf(&t, "%4s ", "");
            put_cell_name(&t, line, 70);
            puts_(&t, "\n");
        }
    }

    putf(&t, "%4s %-*s %5s %15s %7s %6s", "gpu", NAME_W, "name", "util", "mem GiB", "power W",
         "temp C");
    for (int k = 0; k < s->n_stages; k++) {
        char head[64];
        snprintf(head, sizeof head, "%s p50/p99", s->stage_names[k]);
        puts_(&t, " ");
        put_cell_name(&t, head, STAGE_W);
    }
    puts_(&t, "\n");
    for (int i = 0; i < s->n_gpus; i++) {
        const metrics_gpu_snap *g = &s->gpus[i];
        const omma_device_metrics *r = &g->reading;
        unsigned valid = r->available ? r->valid : 0;
        putf(&t, "%4d ", g->index);
        put_cell_name(&t, g->name, NAME_W);
        if (valid & OMMA_METRIC_UTILIZATION)
            putf(&t, " %4u%%", r->gpu_util_pct);
        else
            putf(&t, " %5s", "-");
        if (valid & OMMA_METRIC_MEMORY) {
            char mem[32];
            snprintf(mem, sizeof mem, "%.1f/%.1f", r->mem_used / 1073741824.0,
                     r->mem_total / 1073741824.0);
            putf(&t, " %15s", mem);
        } else {
            putf(&t, " %15s", "-");
        }
        put_cell_double(&t, 7, 1, valid & OMMA_METRIC_POWER ? r->power_mw / 1000.0 : NAN);
        if (valid & OMMA_METRIC_TEMPERATURE)
            putf(&t, " %6u", r->temperature_c);
        else
            putf(&t, " %6s", "-");
        for (int k = 0; k < s->n_stages; k++) {
            double p50 = metrics_hist_quantile_ns(&g->stages[k], 0.5) / 1e6;
            double p99 = metrics_hist_quantile_ns(&g->stages[k], 0.99) / 1e6;
            char cell[64];
            if (isfinite(p50))
                snprintf(cell, sizeof cell, "%.2f/%.2f", p50, p99);
            else
                snprintf(cell, sizeof cell, "-");
            putf(&t, " %-*s", STAGE_W, cell);
        }
        puts_(&t, "\n");
    }

    if (s->n_sinks > 0)
        putf(&t, "%-5s %-*s %4s %10s %10s %8s %8s %8s %8s\n", "sink", NAME_W + 9, "url", "up",
             "published", "acked", "failed", "dropped", "backlog", "inflight");
    for (int i = 0; i < s->n_sinks; i++) {
        const metrics_sink_snap *k = &s->sinks[i];
        putf(&t, "%-5s ", k->kind);
        put_cell_name(&t, k->name, NAME_W + 9);
        putf(&t,
             " %4s %10" PRIu64 " %10" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64 " %8" PRIu64
             "\n",
             k->connected ? "yes" : "no", k->published, k->acked, k->failed, k->dropped, k->backlog,
             k->inflight);
    }

    puts_(&t, "process: cpu ");
    if (isfinite(s->cpu_ns_per_frame))
        putf(&t, "%.1f us/frame", s->cpu_ns_per_frame / 1e3);
    else
        puts_(&t, "- us/frame");
    putf(&t, ", %" PRIu64 " frames, up %.0f s\n", s->frames_processed, s->uptime_ns / 1e9);
    return finish(&t, "metrics_format_table", out, len);
}
