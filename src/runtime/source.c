#define _POSIX_C_SOURCE 200809L /* strdup, pthread_condattr_setclock */
/* The capture source's public calls: the spec picks the kind, and every
 * read goes through one path that replays a failure or the end, honours
 * the interrupt flag and paces file frames to their times. */
#include "runtime/source.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"
#include "io/image_file.h"
#include "io/video_file.h"
#include "runtime/source_private.h"

void rt_source_options_init(rt_source_options *opt)
{
    if (!opt)
        return;
    memset(opt, 0, sizeof *opt);
    opt->realtime = 1;
    opt->fps = 30.0;
    opt->connect_timeout_ms = 5000;
    opt->read_timeout_ms = 5000;
    opt->backoff_min_ms = 500;
    opt->backoff_max_ms = 30000;
}

void rt_source_get_video_stats(const rt_source *s, io_video_stats *out)
{
    memset(out, 0, sizeof *out);
    if (s && s->ops && s->ops->video_stats)
        s->ops->video_stats(s, out);
}

void *rt_source_stream(const rt_source *s)
{
    return s && s->ops && s->ops->stream ? s->ops->stream(s) : NULL;
}

const char *rt_source_kind_name(rt_source_kind kind)
{
    switch (kind) {
    case RT_SOURCE_VIDEO:
        return "video";
    case RT_SOURCE_IMAGES:
        return "images";
    case RT_SOURCE_V4L2:
        return "v4l2";
    case RT_SOURCE_NETWORK:
        return "network";
    }
    return "unknown";
}

const char *rt_link_state_name(rt_link_state state)
{
    switch (state) {
    case RT_LINK_CONNECTED:
        return "connected";
    case RT_LINK_RECONNECTING:
        return "reconnecting";
    case RT_LINK_FAILED:
        return "failed";
    }
    return "unknown";
}

static omma_status check_options(const char *spec, const rt_source_options *o)
{
    if (!(o->fps > 0.0 && o->fps <= 1000.0))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: fps %g is not in (0, 1000]", spec, o->fps);
    int w_ok = o->width >= 1 && o->width <= IO_IMAGE_MAX_SIDE;
    int h_ok = o->height >= 1 && o->height <= IO_IMAGE_MAX_SIDE;
    if (!(o->width == 0 && o->height == 0) && !(w_ok && h_ok))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "%s: requested size %dx%d: both 0 (the camera's current) or both in "
                         "1..%d",
                         spec, o->width, o->height, IO_IMAGE_MAX_SIDE);
    if ((unsigned)o->decode >= IO_DECODE_COUNT)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: decode mode %d is not cpu, gpu or auto", spec,
                         (int)o->decode);
    if (o->decode == IO_DECODE_GPU && !o->device)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: decoding on the GPU needs a device", spec);
    if (o->connect_timeout_ms < 1 || o->connect_timeout_ms > 3600000 || o->read_timeout_ms < 1 ||
        o->read_timeout_ms > 3600000)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "%s: connect timeout %d ms, read timeout %d ms: each in 1..3600000", spec,
                         o->connect_timeout_ms, o->read_timeout_ms);
    if (o->reconnect_max < 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: reconnect attempts %d < 0", spec,
                         o->reconnect_max);
    if (o->backoff_min_ms < 1 || o->backoff_max_ms < o->backoff_min_ms ||
        o->backoff_max_ms > 3600000)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "%s: reconnect backoff %d..%d ms: need 1 <= min <= max <= 3600000", spec,
                         o->backoff_min_ms, o->backoff_max_ms);
    return OMMA_OK;
}

static rt_source_kind kind_of(const char *spec)
{
    if (io_video_is_url(spec))
        return RT_SOURCE_NETWORK;
    if (strncmp(spec, "/dev/", 5) == 0)
        return RT_SOURCE_V4L2;
    struct stat sb;
    int exists = stat(spec, &sb) == 0;
    if (exists && S_ISDIR(sb.st_mode))
        return RT_SOURCE_IMAGES;
    if (strchr(spec, '%') && !(exists && S_ISREG(sb.st_mode)))
        return RT_SOURCE_IMAGES;
    return RT_SOURCE_VIDEO;
}

int src_interrupted(rt_source *s)
{
    return atomic_load(&s->interrupted);
}

static void notify(rt_source *s, const rt_source_status *copy)
{
    if (s->opt.on_status)
        s->opt.on_status(s->opt.status_ctx, copy);
}

void src_set_link(rt_source *s, rt_link_state state, int attempt, const char *error)
{
    rt_source_status copy;
    pthread_mutex_lock(&s->status_lock);
    if (state == RT_LINK_CONNECTED && s->status.state == RT_LINK_RECONNECTING)
        s->status.reconnects++;
    s->status.state = state;
    s->status.attempt = attempt;
    if (error)
        snprintf(s->status.error, sizeof s->status.error, "%s", error);
    copy = s->status;
    pthread_mutex_unlock(&s->status_lock);
    notify(s, &copy);
}

void src_set_damage(rt_source *s, long damaged_frames, long dropped_packets)
{
    rt_source_status copy;
    pthread_mutex_lock(&s->status_lock);
    int changed =
        s->status.damaged_frames != damaged_frames || s->status.dropped_packets != dropped_packets;
    s->status.damaged_frames = damaged_frames;
    s->status.dropped_packets = dropped_packets;
    copy = s->status;
    pthread_mutex_unlock(&s->status_lock);
    if (changed)
        notify(s, &copy);
}

void src_set_clock(rt_source *s, int stream_clock)
{
    rt_source_status copy;
    pthread_mutex_lock(&s->status_lock);
    int changed = s->status.stream_clock != stream_clock;
    s->status.stream_clock = stream_clock;
    copy = s->status;
    pthread_mutex_unlock(&s->status_lock);
    if (changed)
        notify(s, &copy);
}

void rt_source_get_status(rt_source *s, rt_source_status *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!s)
        return;
    pthread_mutex_lock(&s->status_lock);
    *out = s->status;
    pthread_mutex_unlock(&s->status_lock);
}

static omma_status init_wait(rt_source *s)
{
    pthread_condattr_t attr;
    if (pthread_condattr_init(&attr) != 0)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: pthread_condattr_init", s->spec);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(&s->wake, &attr);
    pthread_condattr_destroy(&attr);
    if (rc != 0)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: pthread_cond_init", s->spec);
    if (pthread_mutex_init(&s->lock, NULL) != 0) {
        pthread_cond_destroy(&s->wake);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: pthread_mutex_init", s->spec);
    }
    if (pthread_mutex_init(&s->status_lock, NULL) != 0) {
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->wake);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: pthread_mutex_init", s->spec);
    }
    return OMMA_OK;
}

omma_status rt_source_open(const char *spec, const rt_source_options *opt, rt_source **out)
{
    if (out)
        *out = NULL;
    if (!spec || !out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_source_open: NULL %s", spec ? "out" : "spec");
    if (!*spec)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_source_open: empty spec");
    rt_source_options defaults;
    rt_source_options_init(&defaults);
    if (!opt)
        opt = &defaults;
    OMMA_TRY(check_options(spec, opt));

    rt_source *s = calloc(1, sizeof *s);
    if (!s)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: source", spec);
    s->spec = strdup(spec);
    if (!s->spec) {
        free(s);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: source", spec);
    }
    s->opt = *opt;
    atomic_init(&s->interrupted, 0);
    atomic_init(&s->busy, 0);
    omma_status st = init_wait(s);
    if (st != OMMA_OK) {
        free(s->spec);
        free(s);
        return st;
    }
    s->info.kind = kind_of(spec);
    s->info.live = s->info.kind == RT_SOURCE_V4L2 || s->info.kind == RT_SOURCE_NETWORK;
    s->info.frames = -1;
    s->pts = s->first_pts = INT64_MIN;
    snprintf(s->info.name, sizeof s->info.name, "%s", spec);
    switch (s->info.kind) {
    case RT_SOURCE_VIDEO:
        st = src_video_open(s);
        break;
    case RT_SOURCE_IMAGES:
        st = src_images_open(s);
        break;
    case RT_SOURCE_V4L2:
        st = src_v4l2_open(s);
        break;
    case RT_SOURCE_NETWORK:
        st = src_network_open(s);
        break;
    }
    if (st != OMMA_OK) {
        rt_source_close(s);
        return st;
    }
    *out = s;
    return OMMA_OK;
}

const rt_source_info *rt_source_get_info(const rt_source *s)
{
    return s ? &s->info : NULL;
}

static omma_status closed(rt_source *s)
{
    return OMMA_FAIL(OMMA_ERR_CLOSED, "%s: frame %ld: the source was interrupted", s->spec,
                     s->index);
}

/* Waits until the frame of time ts_ms is due (times count from the first
 * read) or the interrupt. */
static omma_status pace(rt_source *s, double ts_ms)
{
    uint64_t now = core_now_ns();
    if (!s->started) {
        s->started = 1;
        s->start_ns = now;
        s->start_ts_ms = ts_ms;
    }
    double after_ms = ts_ms - s->start_ts_ms;
    if (!(after_ms > 0.0))
        return OMMA_OK;
    uint64_t due = s->start_ns + (uint64_t)llround(after_ms * 1e6);
    struct timespec until = {.tv_sec = (time_t)(due / 1000000000u),
                             .tv_nsec = (long)(due % 1000000000u)};
    uint64_t mark = core_cpu_mark(s->opt.cpu), wakes = 0;
    pthread_mutex_lock(&s->lock);
    while (!src_interrupted(s) && core_now_ns() < due) {
        pthread_cond_timedwait(&s->wake, &s->lock, &until);
        wakes++;
    }
    pthread_mutex_unlock(&s->lock);
    if (s->opt.cpu)
        core_cpu_add(s->opt.cpu, CORE_CPU_PACE, core_thread_cpu_ns() - mark, wakes);
    return src_interrupted(s) ? closed(s) : OMMA_OK;
}

/* Records the failure just reported so later reads replay it. */
static omma_status sticky(rt_source *s, omma_status st)
{
    s->error = st;
    free(s->error_text);
    s->error_text = strdup(omma_last_error());
    src_set_link(s, RT_LINK_FAILED, 0, s->error_text ? s->error_text : omma_last_error());
    return st;
}

static omma_status next_frame(rt_source *s, omma_frame *frame, uint64_t *capture_ns, int *eof)
{
    if (src_interrupted(s))
        return closed(s);
    if (s->error)
        return core_fail_text(s->error, s->error_text ? s->error_text : "the source failed before");
    if (s->ended) {
        *eof = 1;
        return OMMA_OK;
    }
    double ts_ms = 0.0;
    if (s->have_first) {
        *frame = s->first;
        ts_ms = s->first_ts_ms;
        *capture_ns = s->first_capture_ns;
        s->pts = s->first_pts;
        s->have_first = 0;
    } else {
        omma_status st = s->ops->read(s, frame, &ts_ms, capture_ns, eof);
        if (st != OMMA_OK) {
            memset(frame, 0, sizeof *frame);
            *eof = 0;
            return src_interrupted(s) ? closed(s) : sticky(s, st);
        }
        if (*eof) {
            memset(frame, 0, sizeof *frame);
            s->ended = 1;
            return OMMA_OK;
        }
        if (src_interrupted(s)) {
            memset(frame, 0, sizeof *frame);
            return closed(s);
        }
    }
    if (!s->info.live) {
        if (s->opt.realtime) {
            omma_status st = pace(s, ts_ms);
            if (st != OMMA_OK) {
                memset(frame, 0, sizeof *frame);
                return st;
            }
        }
        *capture_ns = core_now_ns();
    }
    /* Its number is the VideoSync stream's: frames read, from 0. */
    io_recorder_frame(s->opt.record, s->index, *capture_ns, s->pts, frame);
    s->index++;
    return OMMA_OK;
}

omma_status rt_source_read(rt_source *s, omma_frame *frame, uint64_t *capture_ns, int *eof)
{
    if (frame)
        memset(frame, 0, sizeof *frame);
    if (capture_ns)
        *capture_ns = 0;
    if (eof)
        *eof = 0;
    if (!s || !frame || !capture_ns || !eof)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_source_read: NULL %s",
                         !s            ? "source"
                         : !frame      ? "frame"
                         : !capture_ns ? "capture_ns"
                                       : "eof");
    if (atomic_exchange(&s->busy, 1))
        return OMMA_FAIL(OMMA_ERR_BUSY, "%s: the source is being read on another thread", s->spec);
    omma_status st = next_frame(s, frame, capture_ns, eof);
    atomic_store(&s->busy, 0);
    return st;
}

void rt_source_interrupt(rt_source *s)
{
    if (!s)
        return;
    atomic_store(&s->interrupted, 1);
    pthread_mutex_lock(&s->lock);
    pthread_cond_broadcast(&s->wake);
    pthread_mutex_unlock(&s->lock);
}

void rt_source_close(rt_source *s)
{
    if (!s)
        return;
    if (s->ops)
        s->ops->close(s);
    pthread_cond_destroy(&s->wake);
    pthread_mutex_destroy(&s->lock);
    pthread_mutex_destroy(&s->status_lock);
    free(s->error_text);
    free(s->spec);
    free(s);
}
