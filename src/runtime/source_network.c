#define _POSIX_C_SOURCE 200809L /* clock_gettime(CLOCK_REALTIME) */
/* Network cameras as a source (rtsp://, http(s):// MJPEG, HLS), through
 * io_video_open_url. Opening connects and reads the first frame, which
 * fixes the size and format. A read arms the read timeout, so a stalled
 * peer ends the read within it; the interrupt flag ends any blocking
 * call at once (it is the reader's abort flag).
 *
 * A lost stream (the peer closed it, a read error, no data within the read
 * timeout) is reconnected inside the read: attempt n waits backoff_min *
 * 2^(n-1), at most backoff_max (interruptible), then opens the URL again;
 * the wait goes back to backoff_min once a connection has lasted
 * RT_SOURCE_GOOD_MS, so a camera that keeps dropping at once keeps backing
 * off. The status (source.h) says reconnecting (attempt n, the last
 * error) meanwhile and connected once a frame arrives. What a new
 * connection cannot fix ends the camera: a different size or pixel format,
 * a codec FFmpeg cannot decode, no memory, reconnect_max attempts in a row.
 *
 * Capture times: when the stream maps its timestamps to the sender's wall
 * clock (RTSP: RTCP sender reports; io_video_wallclock_us), a frame's
 * capture time is its wall-clock time moved onto core_now_ns()'s clock
 * (now minus its age by the host's wall clock); otherwise, or when the two
 * clocks disagree by more than NET_MAX_CLOCK_SKEW_NS (an unsynchronised
 * camera), its arrival time. Capture times never go back (a frame that
 * would map before the previous one gets 1 us after it). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/error.h"
#include "io/video_file.h"
#include "runtime/source_private.h"

#define NET_MAX_CLOCK_SKEW_NS 10000000000ull /* 10 s */

typedef struct net_src {
    char *url; /* as given; s->spec shows it without its password */
    io_video *v; /* its reader: kept while disconnected, with its decoder */
    int linked; /* v is connected */
    io_video_net net;
    io_video_options decode; /* where it is decoded */
    uint64_t connected_ns; /* the current connection's first frame */
    uint64_t last_capture_ns;
    int backoff_ms; /* the next attempt's wait */
    int attempt; /* attempts since the stream was lost (0: connected) */
    long damaged, dropped; /* damage counts of earlier connections */
    char lost[384]; /* why the stream was last lost, or the last attempt failed */
} net_src;

static const char *format_name(omma_pixel_format f)
{
    switch (f) {
    case OMMA_PIXEL_RGB:
        return "RGB";
    case OMMA_PIXEL_NV12:
        return "NV12";
    case OMMA_PIXEL_I420:
        return "I420";
    default:
        return "?";
    }
}

static uint64_t wall_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* The frame of stream time ts_ms, just read: its capture time. */
static uint64_t capture_time(rt_source *s, net_src *ns, double ts_ms)
{
    uint64_t arrival = core_now_ns(), capture = arrival;
    int from_stream = 0;
    int64_t wall0 = io_video_wallclock_us(ns->v);
    if (wall0 != INT64_MIN) {
        double age_ns = ((double)wall_now_us() - ((double)wall0 + ts_ms * 1e3)) * 1e3;
        if (age_ns >= 0.0 && age_ns < (double)NET_MAX_CLOCK_SKEW_NS && age_ns < (double)arrival) {
            capture = arrival - (uint64_t)age_ns;
            from_stream = 1;
        }
    }
    /* Never back: the first RTCP report moves frames from their arrival to
     * their (earlier) capture, and jitter can reorder; such a frame gets
     * the previous one's time plus 1 us. */
    if (capture <= ns->last_capture_ns)
        capture = ns->last_capture_ns + 1000u;
    ns->last_capture_ns = capture;
    src_set_clock(s, from_stream);
    return capture;
}

static void count_damage(rt_source *s, net_src *ns)
{
    io_video_stats st;
    io_video_get_stats(ns->v, &st);
    src_set_damage(s, ns->damaged + st.damaged_frames, ns->dropped + st.dropped_packets);
}

/* The connection is closed; the reader and its decoder stay for the
 * next connection. */
static void disconnect(net_src *ns)
{
    (void)io_video_disconnect(ns->v);
    ns->linked = 0;
}

/* The reader is given up (the stream came back different): its counts are
 * kept. */
static void drop_reader(net_src *ns)
{
    io_video_stats st;
    io_video_get_stats(ns->v, &st);
    ns->damaged += st.damaged_frames;
    ns->dropped += st.dropped_packets;
    io_video_close(ns->v);
    ns->v = NULL;
    ns->linked = 0;
}

/* Reads the next frame of the current connection: OMMA_OK with a frame,
 * or why the stream was lost in ns->lost (*lost = 1), or an error that
 * ends the camera. */
static omma_status read_connected(rt_source *s, net_src *ns, omma_frame *frame, double *ts_ms,
                                  int *lost)
{
    int eof = 0;
    io_video_arm(ns->v);
    omma_status st = io_video_read(ns->v, frame, ts_ms, &eof);
    if (st == OMMA_OK && !eof) {
        if (frame->width != s->info.width || frame->height != s->info.height ||
            frame->format != s->info.format || frame->memory != s->info.memory)
            return OMMA_FAIL(OMMA_ERR_FORMAT,
                             "%s: frame %ld is %s %dx%d decoded on the %s; the stream started as "
                             "%s %dx%d decoded on the %s",
                             s->spec, s->index, format_name(frame->format), frame->width,
                             frame->height, frame->memory == OMMA_MEMORY_DEVICE ? "GPU" : "CPU",
                             format_name(s->info.format), s->info.width, s->info.height,
                             s->info.memory == OMMA_MEMORY_DEVICE ? "GPU" : "CPU");
        s->pts = io_video_last_pts(ns->v);
        return OMMA_OK;
    }
    if (src_interrupted(s))
        return OMMA_ERR_CLOSED;
    if (st == OMMA_ERR_OUT_OF_MEMORY)
        return st;
    *lost = 1;
    if (st == OMMA_OK)
        snprintf(ns->lost, sizeof ns->lost, "the stream ended (the server closed it)");
    else if (io_video_timed_out(ns->v) == 1)
        snprintf(ns->lost, sizeof ns->lost, "no data for %.1f s (read timeout)",
                 s->opt.read_timeout_ms / 1000.0);
    else
        snprintf(ns->lost, sizeof ns->lost, "%s", omma_last_error());
    return OMMA_OK;
}

/* Waits ms or until the interrupt. */
static void backoff_wait(rt_source *s, int ms)
{
    uint64_t due = core_now_ns() + (uint64_t)ms * 1000000u;
    struct timespec until = {.tv_sec = (time_t)(due / 1000000000u),
                             .tv_nsec = (long)(due % 1000000000u)};
    pthread_mutex_lock(&s->lock);
    while (!src_interrupted(s) && core_now_ns() < due)
        pthread_cond_timedwait(&s->wake, &s->lock, &until);
    pthread_mutex_unlock(&s->lock);
}

/* One reconnection attempt after its wait: OMMA_OK with ns->v connected
 * (or not, ns->lost saying why), or an error that ends the camera. The
 * reader's decoder is kept when the stream comes back the same; a stream
 * that comes back different gets a new reader (and must keep the size). */
static omma_status reconnect(rt_source *s, net_src *ns)
{
    ns->attempt++;
    if (s->opt.reconnect_max > 0 && ns->attempt > s->opt.reconnect_max)
        return OMMA_FAIL(OMMA_ERR_IO, "%s: gave up after %d reconnection attempt%s; the last: %s",
                         s->spec, s->opt.reconnect_max, s->opt.reconnect_max == 1 ? "" : "s",
                         ns->lost);
    src_set_link(s, RT_LINK_RECONNECTING, ns->attempt, ns->lost);
    backoff_wait(s, ns->backoff_ms);
    ns->backoff_ms =
        ns->backoff_ms > s->opt.backoff_max_ms / 2 ? s->opt.backoff_max_ms : 2 * ns->backoff_ms;
    if (src_interrupted(s))
        return OMMA_ERR_CLOSED;
    omma_status st = ns->v ? io_video_reconnect(ns->v) : OMMA_ERR_CLOSED;
    if (st == OMMA_OK) {
        ns->linked = 1;
        return OMMA_OK;
    }
    if (st == OMMA_ERR_FORMAT && ns->v) /* came back different */
        drop_reader(ns);
    if (!ns->v)
        st = io_video_open_url(ns->url, &ns->net, &ns->decode, &ns->v);
    if (st == OMMA_OK) {
        ns->linked = 1;
        if (io_video_width(ns->v) != s->info.width || io_video_height(ns->v) != s->info.height) {
            st = OMMA_FAIL(OMMA_ERR_FORMAT, "%s: reconnected to a %dx%d stream; it was %dx%d",
                           s->spec, io_video_width(ns->v), io_video_height(ns->v), s->info.width,
                           s->info.height);
            drop_reader(ns);
        }
        return st;
    }
    if (src_interrupted(s))
        return OMMA_ERR_CLOSED;
    if (st == OMMA_ERR_UNSUPPORTED || st == OMMA_ERR_OUT_OF_MEMORY || st == OMMA_ERR_INVALID_ARG)
        return st;
    snprintf(ns->lost, sizeof ns->lost, "%s", omma_last_error());
    return OMMA_OK;
}

static omma_status network_read(rt_source *s, omma_frame *frame, double *ts_ms,
                                uint64_t *capture_ns, int *eof)
{
    (void)eof; /* a camera does not end; it is lost and found again */
    net_src *ns = s->impl;
    for (;;) {
        if (!ns->linked) {
            omma_status st = reconnect(s, ns);
            if (st == OMMA_ERR_CLOSED)
                return core_fail_text(OMMA_ERR_CLOSED, "interrupted");
            if (st != OMMA_OK)
                return st;
            if (!ns->linked)
                continue;
        }
        int lost = 0;
        omma_status st = read_connected(s, ns, frame, ts_ms, &lost);
        if (st == OMMA_ERR_CLOSED)
            return core_fail_text(OMMA_ERR_CLOSED, "interrupted");
        if (st != OMMA_OK)
            return st;
        if (!lost) {
            uint64_t now = core_now_ns();
            if (ns->attempt > 0) { /* found again */
                ns->attempt = 0;
                ns->connected_ns = now;
                src_set_link(s, RT_LINK_CONNECTED, 0, "");
            }
            if (now - ns->connected_ns >= (uint64_t)RT_SOURCE_GOOD_MS * 1000000u)
                ns->backoff_ms = s->opt.backoff_min_ms;
            *capture_ns = capture_time(s, ns, *ts_ms);
            count_damage(s, ns);
            return OMMA_OK;
        }
        disconnect(ns);
        memset(frame, 0, sizeof *frame);
    }
}

static void network_close(rt_source *s)
{
    net_src *ns = s->impl;
    if (!ns)
        return;
    io_video_close(ns->v);
    free(ns->url);
    free(ns);
    s->impl = NULL;
}

static void *network_stream(const rt_source *s)
{
    const net_src *ns = s->impl;
    return ns ? io_video_stream(ns->v) : NULL;
}

static void network_video_stats(const rt_source *s, io_video_stats *out)
{
    const net_src *ns = s->impl;
    io_video_get_stats(ns ? ns->v : NULL, out);
}

static const src_ops network_ops = {network_read, network_close, network_stream,
                                    network_video_stats};

omma_status src_network_open(rt_source *s)
{
    s->ops = &network_ops;
    net_src *ns = calloc(1, sizeof *ns);
    if (!ns)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: network source", s->spec);
    s->impl = ns;
    /* Messages name the camera without its password. */
    size_t n = strlen(s->spec) + 1;
    char *shown = malloc(n);
    if (!shown)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: network source", s->spec);
    io_video_url_redacted(s->spec, shown, n);
    ns->url = s->spec;
    s->spec = shown;
    snprintf(s->info.name, sizeof s->info.name, "%s", shown);
    ns->net.rtsp_udp = s->opt.rtsp_udp;
    ns->net.connect_timeout_ms = s->opt.connect_timeout_ms;
    ns->net.read_timeout_ms = s->opt.read_timeout_ms;
    ns->net.abort = &s->interrupted;
    ns->backoff_ms = s->opt.backoff_min_ms;
    ns->decode = (io_video_options){s->opt.decode, s->opt.device, 0, s->opt.record, 0, s->opt.cpu};
    OMMA_TRY(io_video_open_url(ns->url, &ns->net, &ns->decode, &ns->v));
    ns->linked = 1;
    s->info.width = io_video_width(ns->v);
    s->info.height = io_video_height(ns->v);
    s->info.fps = io_video_fps(ns->v);
    s->info.frames = -1;

    /* The first frame fixes the format (the decoder's: I420, NV12 or RGB). */
    int eof = 0;
    double ts = 0.0;
    io_video_arm(ns->v);
    omma_status st = io_video_read(ns->v, &s->first, &ts, &eof);
    if (st != OMMA_OK && io_video_timed_out(ns->v) == 1)
        return OMMA_FAIL(OMMA_ERR_TIMEOUT, "%s: no frame within %.1f s (read timeout)", s->spec,
                         s->opt.read_timeout_ms / 1000.0);
    if (st != OMMA_OK)
        return st;
    if (eof)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "%s: the stream ended before its first frame", s->spec);
    s->info.format = s->first.format;
    s->info.memory = s->first.memory;
    snprintf(s->info.decoder, sizeof s->info.decoder, "%s", io_video_decoder(ns->v));
    s->first_ts_ms = ts;
    s->first_pts = io_video_last_pts(ns->v);
    s->have_first = 1;
    ns->connected_ns = core_now_ns();
    s->first_capture_ns = capture_time(s, ns, ts);
    count_damage(s, ns);
    return OMMA_OK;
}
