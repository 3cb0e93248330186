#define _POSIX_C_SOURCE 200809L /* strdup, gmtime_r, clock_gettime */
/* Recording cameras (recorder.h): the option parsers and name templates,
 * then the writer thread: a queue of packets (remux), frames (encode),
 * sidecar rows and stream changes, written in order into Matroska
 * segments.
 *
 * Why Matroska: it carries every codec a camera sends (H.264/HEVC in their
 * own framing, so remuxed packets stay bit-identical; MJPEG too), and
 * FFmpeg's muxer writes the Segment with an unknown size and each Cluster
 * whole once it ends, so a file cut by a kill reads up to its last
 * complete cluster. Clusters end every second (cluster_time_limit) and the
 * output is flushed after each packet, so a kill loses about the last
 * second of the open segment; closed segments are complete (cues,
 * duration). MPEG-TS would survive a kill as well but rewrites H.264 into
 * Annex B (no bit-identical packets) and has no MJPEG. */
#include "io/recorder.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/error.h"

typedef struct unit {
    const char *name;
    double scale; /* ns or bytes */
    int size; /* 1: a size, 0: a duration */
} unit;

static const unit units[] = {
    {"ms", 1e6, 0},
    {"s", 1e9, 0},
    {"m", 60e9, 0},
    {"min", 60e9, 0},
    {"h", 3600e9, 0},
    {"B", 1.0, 1},
    {"kB", 1e3, 1},
    {"KB", 1e3, 1},
    {"MB", 1e6, 1},
    {"GB", 1e9, 1},
    {"TB", 1e12, 1},
    {"KiB", 1024.0, 1},
    {"MiB", 1048576.0, 1},
    {"GiB", 1073741824.0, 1},
    {"TiB", 1099511627776.0, 1},
};

omma_status io_record_parse_segment(const char *text, int64_t *ns, int64_t *bytes)
{
    if (ns)
        *ns = 0;
    if (bytes)
        *bytes = 0;
    if (!text || !ns || !bytes)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_record_parse_segment: NULL argument");
    /* Digits with at most one '.', then the unit: no sign, exponent, hex,
     * inf or nan. */
    size_t n = 0, dots = 0, digits = 0;
    while (isdigit((unsigned char)text[n]) || (text[n] == '.' && !dots)) {
        dots += text[n] == '.';
        digits += text[n] != '.';
        n++;
    }
    if (!digits || n > 32)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "segment limit '%s': expected a number and a unit: a duration (90s, 10m, "
                         "1.5h) or a size (500MB, 2GB, 64MiB)",
                         text);
    char num[40];
    memcpy(num, text, n);
    num[n] = '\0';
    double v = strtod(num, NULL);
    const char *u = text + n;
    const unit *found = NULL;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcmp(u, units[i].name) == 0)
            found = &units[i];
    if (!found)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "segment limit '%s': %s '%s' (durations: ms s m min h; sizes: B kB MB "
                         "GB TB KiB MiB GiB TiB)",
                         text, *u ? "unknown unit" : "no unit after", *u ? u : num);
    double x = v * found->scale;
    double lo = found->size ? 1e6 : 1e9, hi = found->size ? 1e15 : 30.0 * 86400e9;
    if (!(x >= lo && x <= hi))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "segment limit '%s': %s (at least %s, at most %s)",
                         text,
                         v == 0.0 ? "zero"
                         : x < lo ? "too small"
                                  : "too large",
                         found->size ? "1 MB" : "1 s", found->size ? "1 PB" : "30 days");
    *(found->size ? bytes : ns) = (int64_t)llround(x);
    return OMMA_OK;
}

enum { F_CAMERA, F_PARTICIPANT, F_START, F_SEGMENT, F_COUNT };
static const char *const field_names[F_COUNT] = {"camera", "participant", "start", "segment"};

/* The field "{name}" at p (p[0] == '{'): its id and length, or -1. */
static int field_at(const char *p, size_t *len)
{
    for (int i = 0; i < F_COUNT; i++) {
        size_t k = strlen(field_names[i]);
        if (strncmp(p + 1, field_names[i], k) == 0 && p[1 + k] == '}') {
            *len = k + 2;
            return i;
        }
    }
    return -1;
}

omma_status io_record_check_name(const char *name, int segmented)
{
    if (!name || !*name)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "record name template: empty");
    size_t n = strlen(name);
    if (n > 255)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "record name template '%.40s...': longer than 255",
                         name);
    int seen[F_COUNT] = {0};
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (c == '/')
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                             "record name template '%s': a file name, without '/' (the "
                             "directory is --record's)",
                             name);
        if ((c == '{' && name[i + 1] == '{') || (c == '}' && name[i + 1] == '}')) {
            i++;
            continue;
        }
        if (c == '}')
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                             "record name template '%s': '}' at %zu without its '{' (\"}}\" for "
                             "a brace)",
                             name, i + 1);
        if (c != '{')
            continue;
        size_t len = 0;
        int f = field_at(name + i, &len);
        if (f < 0) {
            const char *end = strchr(name + i, '}');
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                             "record name template '%s': unknown field %.*s at %zu (fields: "
                             "{camera} {participant} {start} {segment}; \"{{\" for a brace)",
                             name, end ? (int)(end - (name + i) + 1) : (int)(n - i), name + i,
                             i + 1);
        }
        seen[f] = 1;
        i += len - 1;
    }
    if (n <= 4 || strcmp(name + n - 4, ".mkv") != 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "record name template '%s': must end in .mkv (recordings are Matroska: "
                         "docs/RECORDING.md)",
                         name);
    if (segmented && !seen[F_START] && !seen[F_SEGMENT])
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "record name template '%s': segments need {start} or {segment} in the "
                         "name, or they would overwrite each other",
                         name);
    return OMMA_OK;
}

/* A name's value in a file name: letters, digits, '_', '-', '.'; the rest
 * becomes '_'. */
static size_t put_clean(char *out, size_t at, size_t size, const char *v)
{
    if (!v || !*v)
        v = "camera";
    for (; *v; v++) {
        char c = *v;
        if (at + 1 < size)
            out[at] = isalnum((unsigned char)c) || c == '_' || c == '-' || c == '.' ? c : '_';
        at++;
    }
    return at;
}

omma_status io_record_format_name(const char *name, const char *camera, const char *participant,
                                  int64_t start_unix_ns, int segment, char *out, size_t size)
{
    OMMA_TRY(io_record_check_name(name, 0));
    if (!out || size == 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_record_format_name: no output");
    size_t at = 0;
    for (const char *p = name; *p; p++) {
        size_t len = 0;
        int f = *p == '{' && p[1] != '{' ? field_at(p, &len) : -1;
        if (f < 0) {
            if (at + 1 < size)
                out[at] = *p;
            at++;
            if ((*p == '{' || *p == '}') && p[1] == *p)
                p++;
            continue;
        }
        char buf[64];
        if (f == F_CAMERA || f == F_PARTICIPANT) {
            at = put_clean(out, at, size,
                           f == F_CAMERA ? camera
                           : participant ? participant
                                         : camera);
        } else {
            if (f == F_START) {
                time_t t = (time_t)(start_unix_ns / 1000000000);
                struct tm tm;
                gmtime_r(&t, &tm);
                size_t k = strftime(buf, sizeof buf, "%Y%m%dT%H%M%S", &tm);
                snprintf(buf + k, sizeof buf - k, ".%03dZ", (int)(start_unix_ns / 1000000 % 1000));
            } else {
                snprintf(buf, sizeof buf, "%04d", segment);
            }
            at = put_clean(out, at, size, buf);
        }
        p += len - 1;
    }
    if (at >= size)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "record name '%s': longer than %zu when filled in",
                         name, size - 1);
    out[at] = '\0';
    return OMMA_OK;
}

#ifdef OMMA_HAVE_LIBAV

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
#include <pthread.h>

#include "core/clock.h"
#include "io/recorder_libav.h"
#include "io/video_libav.h"

typedef enum item_kind { ITEM_STREAM, ITEM_PACKET, ITEM_ROW, ITEM_BREAK } item_kind;

typedef struct item {
    item_kind kind;
    AVPacket *pkt; /* PACKET */
    AVCodecParameters *par; /* STREAM */
    AVRational tb; /* STREAM */
    AVFrame *image; /* ROW of an encoded source; NULL: remuxed */
    long frame; /* ROW */
    uint64_t capture_ns;
    int64_t unix_ns;
    int64_t pts; /* ROW of a remuxed stream: the frame's pts (AV_NOPTS_VALUE: none) */
    size_t bytes; /* the packet's or the frame's data */
    struct item *next;
} item;

/* A segment: its video (open until it rotates) and its sidecar (open a
 * little longer for remuxed streams, whose last frames leave the decoder
 * after the next segment began). */
typedef struct segment {
    AVFormatContext *fmt; /* NULL: closed */
    int csv; /* -1: closed */
    int number;
    long rows;
    int64_t first_ts; /* remux: its first packet's pts (input ticks); encode: ms */
    int64_t bytes;
    char path[4096];
} segment;

/* Packets written lately, to find which segment a frame went to. */
#define RING 1024
typedef struct written {
    int64_t pts; /* the packet's input pts (AV_NOPTS_VALUE: none) */
    double out_s; /* its time in the file */
    int segment;
    int matched;
} written;

struct io_recorder {
    char *dir, *name, *camera, *participant;
    int64_t segment_ns, segment_bytes;
    double fps;
    int queue;

    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    int stop;
    item *head, *tail;
    int heavy, all; /* queued packets and frames; all items */
    size_t bytes; /* their data */
    io_recorder_stats stats; /* under lock */
    int64_t closed_bytes; /* under lock */

    /* The feeding thread's. */
    int remux; /* a stream was tapped */
    int skip_to_key;

    /* The writer thread's. */
    int have_stream;
    AVCodecParameters *par;
    AVRational in_tb;
    segment cur, prev;
    int seg_no;
    int need_key;
    int have_base;
    int64_t base, last_pts;
    int64_t last_dts; /* the last packet's dts in the file (INT64_MIN: none yet) */
    written ring[RING];
    int ring_next;
    AVCodecContext *enc;
    struct SwsContext *sws;
    AVFrame *conv;
    AVPacket *out;
    int have_t0;
    uint64_t t0_ns;
    int64_t last_ms;
    int failed;
};

static void set_failed(io_recorder *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void set_failed(io_recorder *r, const char *fmt, ...)
{
    if (r->failed)
        return;
    r->failed = 1;
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&r->lock);
    vsnprintf(r->stats.error, sizeof r->stats.error, fmt, ap);
    pthread_mutex_unlock(&r->lock);
    va_end(ap);
}

static void count(io_recorder *r, long *field, long n)
{
    pthread_mutex_lock(&r->lock);
    *field += n;
    pthread_mutex_unlock(&r->lock);
}

static int64_t unix_now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* ---- segments ---------------------------------------------------------- */

static void close_video(io_recorder *r, segment *s)
{
    if (!s->fmt)
        return;
    char why[256];
    int err = av_write_trailer(s->fmt);
    if (err < 0)
        set_failed(r, "%s: finishing the file: %s", s->path, io_libav_why(err, why, sizeof why));
    s->bytes = s->fmt->pb ? avio_tell(s->fmt->pb) : 0;
    if (s->fmt->pb && s->fmt->pb->error < 0)
        set_failed(r, "%s: writing: %s", s->path, io_libav_why(s->fmt->pb->error, why, sizeof why));
    avio_closep(&s->fmt->pb);
    avformat_free_context(s->fmt);
    s->fmt = NULL;
    pthread_mutex_lock(&r->lock);
    r->closed_bytes += s->bytes;
    r->stats.bytes = r->closed_bytes;
    pthread_mutex_unlock(&r->lock);
}

static void close_csv(segment *s)
{
    if (s->csv >= 0)
        close(s->csv);
    s->csv = -1;
}

static void close_segment(io_recorder *r, segment *s)
{
    close_video(r, s);
    close_csv(s);
}

/* The sidecar's name: the video's with .csv for .mkv. */
static void csv_path(const segment *s, char *out, size_t size)
{
    size_t n = strlen(s->path);
    snprintf(out, size, "%.*s.csv", (int)(n - 4), s->path);
}

/* A segment that got no frame (the source was reopened at once) is
 * removed, and its number used again. */
static void discard_segment(io_recorder *r, segment *s)
{
    char csv[4200];
    csv_path(s, csv, sizeof csv);
    close_segment(r, s);
    unlink(s->path);
    unlink(csv);
    r->seg_no--;
    pthread_mutex_lock(&r->lock);
    r->stats.segments--;
    r->closed_bytes -= s->bytes;
    r->stats.bytes = r->closed_bytes;
    pthread_mutex_unlock(&r->lock);
}

static int write_all(int fd, const char *buf, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, buf, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        buf += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Opens segment s (the next number) for the stream (remux) or the encoder. */
static int open_segment(io_recorder *r, segment *s, int64_t unix_ns)
{
    char why[256], name[512];
    memset(s, 0, sizeof *s);
    s->csv = -1;
    s->number = ++r->seg_no;
    if (io_record_format_name(r->name, r->camera, r->participant, unix_ns, s->number, name,
                              sizeof name) != OMMA_OK) {
        set_failed(r, "%s", omma_last_error());
        return -1;
    }
    /* Never over an existing file: name_2.mkv, name_3.mkv... */
    size_t n = strlen(name);
    snprintf(s->path, sizeof s->path, "%s/%s", r->dir, name);
    for (int k = 2; access(s->path, F_OK) == 0 && k < 1000; k++)
        snprintf(s->path, sizeof s->path, "%s/%.*s_%d.mkv", r->dir, (int)(n - 4), name, k);
    char csv[4200];
    csv_path(s, csv, sizeof csv);
    io_libav_clear_log();
    int err = avformat_alloc_output_context2(&s->fmt, NULL, "matroska", s->path);
    AVStream *st = err >= 0 ? avformat_new_stream(s->fmt, NULL) : NULL;
    if (!st) {
        set_failed(r, "%s: cannot make a Matroska file: %s", s->path,
                   err < 0 ? io_libav_why(err, why, sizeof why) : "no memory");
        goto fail;
    }
    if (r->enc) {
        err = avcodec_parameters_from_context(st->codecpar, r->enc);
        st->time_base = r->enc->time_base;
    } else {
        err = avcodec_parameters_copy(st->codecpar, r->par);
        st->codecpar->codec_tag = 0; /* the source container's tag means nothing here */
        st->time_base = r->in_tb;
    }
    if (err < 0) {
        set_failed(r, "%s: stream parameters: %s", s->path, io_libav_why(err, why, sizeof why));
        goto fail;
    }
    err = avio_open(&s->fmt->pb, s->path, AVIO_FLAG_WRITE);
    if (err < 0) {
        set_failed(r, "%s: cannot create: %s", s->path, io_libav_why(err, why, sizeof why));
        goto fail;
    }
    s->fmt->flags |= AVFMT_FLAG_FLUSH_PACKETS;
    AVDictionary *o = NULL;
    av_dict_set(&o, "cluster_time_limit", "1000", 0);
    err = avformat_write_header(s->fmt, &o);
    av_dict_free(&o);
    if (err < 0) {
        set_failed(r, "%s: cannot write the header: %s", s->path,
                   io_libav_why(err, why, sizeof why));
        goto fail;
    }
    s->csv = open(csv, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    static const char head[] = "frame,pts,capture_time,unix_time\n";
    if (s->csv < 0 || write_all(s->csv, head, sizeof head - 1) != 0) {
        set_failed(r, "%s: cannot write: %s", csv, strerror(errno));
        goto fail;
    }
    pthread_mutex_lock(&r->lock);
    r->stats.segments++;
    pthread_mutex_unlock(&r->lock);
    return 0;
fail:
    if (s->fmt) {
        avio_closep(&s->fmt->pb);
        avformat_free_context(s->fmt);
        s->fmt = NULL;
    }
    close_csv(s);
    return -1;
}

static void write_row(io_recorder *r, segment *s, const item *it, double pts_s)
{
    char row[160];
    int n = snprintf(row, sizeof row, "%ld,%.3f,%.6f,%.6f\n", it->frame, pts_s,
                     (double)it->capture_ns * 1e-9, (double)it->unix_ns * 1e-9);
    if (write_all(s->csv, row, (size_t)n) != 0) {
        set_failed(r, "%s: sidecar row: %s", s->path, strerror(errno));
        return;
    }
    s->rows++;
    count(r, &r->stats.frames, 1);
}

/* A limit reached: time to rotate (at the next key frame for remux). */
static int segment_full(const io_recorder *r, const segment *s, int64_t elapsed_ns)
{
    if (r->segment_ns > 0 && elapsed_ns >= r->segment_ns)
        return 1;
    return r->segment_bytes > 0 && s->fmt && s->fmt->pb &&
           avio_tell(s->fmt->pb) >= r->segment_bytes;
}

static void update_bytes(io_recorder *r)
{
    int64_t b = r->cur.fmt && r->cur.fmt->pb ? avio_tell(r->cur.fmt->pb) : 0;
    pthread_mutex_lock(&r->lock);
    r->stats.bytes = r->closed_bytes + b;
    pthread_mutex_unlock(&r->lock);
}

/* ---- remux ------------------------------------------------------------- */

/* The run of packets ends: the segments close (a fresh one that got no
 * frame is removed), the next starts at a key frame. */
static void end_run(io_recorder *r)
{
    if (r->cur.fmt && r->cur.rows == 0 && r->prev.csv < 0)
        discard_segment(r, &r->cur);
    close_segment(r, &r->prev);
    close_segment(r, &r->cur);
    r->need_key = 1;
    r->have_base = 0;
    r->last_dts = INT64_MIN;
    memset(r->ring, 0, sizeof r->ring);
    r->ring_next = 0;
}

static void on_stream(io_recorder *r, item *it)
{
    end_run(r);
    avcodec_parameters_free(&r->par);
    r->par = it->par;
    it->par = NULL;
    r->in_tb = it->tb;
    r->have_stream = 1;
}

static void on_packet(io_recorder *r, const AVPacket *pkt)
{
    if (!r->have_stream)
        return;
    int key = (pkt->flags & AV_PKT_FLAG_KEY) != 0;
    if (r->need_key && !key)
        return; /* undecodable without what came before; its frame counts as dropped */
    r->need_key = 0;
    int64_t pts = pkt->pts != AV_NOPTS_VALUE ? pkt->pts : pkt->dts;
    if (pts == AV_NOPTS_VALUE) /* MJPEG over HTTP: one frame per packet */
        pts = r->have_base ? r->last_pts + (pkt->duration > 0 ? pkt->duration : 1) : 0;
    int64_t dts = pkt->dts != AV_NOPTS_VALUE ? pkt->dts : pts;
    if (!r->have_base) {
        r->base = dts < pts ? dts : pts;
        r->have_base = 1;
    }
    r->last_pts = pts;
    if (r->cur.fmt && key &&
        segment_full(r, &r->cur,
                     av_rescale_q(pts - r->cur.first_ts, r->in_tb, (AVRational){1, 1000000000}))) {
        close_csv(&r->prev);
        close_video(r, &r->cur);
        r->prev = r->cur;
        r->cur.fmt = NULL;
        r->cur.csv = -1;
    }
    if (!r->cur.fmt) {
        if (open_segment(r, &r->cur, unix_now_ns()) != 0)
            return;
        r->cur.first_ts = pts;
    }
    AVStream *ost = r->cur.fmt->streams[0];
    if (av_packet_ref(r->out, pkt) < 0) {
        set_failed(r, "%s: no memory for a packet", r->cur.path);
        return;
    }
    r->out->stream_index = 0;
    r->out->pts = av_rescale_q(pts - r->base, r->in_tb, ost->time_base);
    if (pkt->dts != AV_NOPTS_VALUE) {
        r->out->dts = av_rescale_q(dts - r->base, r->in_tb, ost->time_base);
    } else {
        /* RTP gives presentation times only. Matroska stores those; the
         * muxer still wants increasing decode times at or before them:
         * one tick after the last packet's (reordered B-frames included),
         * never after the packet's own time. */
        r->out->dts = r->last_dts == INT64_MIN ? r->out->pts : r->last_dts + 1;
        if (r->out->dts > r->out->pts)
            r->out->dts = r->out->pts;
    }
    r->last_dts = r->out->dts;
    r->out->duration = av_rescale_q(pkt->duration, r->in_tb, ost->time_base);
    r->out->pos = -1;
    written *w = &r->ring[r->ring_next];
    r->ring_next = (r->ring_next + 1) % RING;
    *w = (written){pkt->pts, (double)r->out->pts * av_q2d(ost->time_base), r->cur.number, 0};
    char why[256];
    io_libav_clear_log();
    int err = av_write_frame(r->cur.fmt, r->out);
    av_packet_unref(r->out);
    if (err < 0) {
        set_failed(r, "%s: writing a packet: %s", r->cur.path, io_libav_why(err, why, sizeof why));
        return;
    }
    count(r, &r->stats.packets, 1);
    update_bytes(r);
}

/* A remuxed frame's row, into the segment holding its packet. */
static void on_remux_row(io_recorder *r, const item *it)
{
    written *w = NULL;
    for (int k = 1; k <= RING && !w; k++) {
        written *c = &r->ring[(r->ring_next - k + RING) % RING];
        if (c->segment && !c->matched && c->pts == it->pts)
            w = c;
    }
    segment *s = !w                                                 ? NULL
                 : w->segment == r->cur.number && r->cur.csv >= 0   ? &r->cur
                 : w->segment == r->prev.number && r->prev.csv >= 0 ? &r->prev
                                                                    : NULL;
    if (!s) {
        count(r, &r->stats.dropped, 1);
        return;
    }
    w->matched = 1;
    write_row(r, s, it, w->out_s);
    /* The decoder's delay is a few frames: the last segment's sidecar is
     * done once this one has some. */
    if (s == &r->cur && r->cur.rows >= 16)
        close_csv(&r->prev);
}

/* ---- encode ------------------------------------------------------------ */

static int drain(io_recorder *r, int flush)
{
    char why[256];
    if (flush)
        avcodec_send_frame(r->enc, NULL);
    for (;;) {
        int err = avcodec_receive_packet(r->enc, r->out);
        if (err == AVERROR(EAGAIN) || err == AVERROR_EOF)
            return 0;
        if (err < 0) {
            set_failed(r, "%s: encoding: %s", r->cur.path, io_libav_why(err, why, sizeof why));
            return -1;
        }
        AVStream *ost = r->cur.fmt->streams[0];
        av_packet_rescale_ts(r->out, r->enc->time_base, ost->time_base);
        r->out->stream_index = 0;
        err = av_write_frame(r->cur.fmt, r->out);
        av_packet_unref(r->out);
        if (err < 0) {
            set_failed(r, "%s: writing a packet: %s", r->cur.path,
                       io_libav_why(err, why, sizeof why));
            return -1;
        }
        count(r, &r->stats.packets, 1);
    }
}

static void close_encoder(io_recorder *r)
{
    if (r->enc && r->cur.fmt)
        drain(r, 1);
    avcodec_free_context(&r->enc);
}

static int open_encoder(io_recorder *r, const AVFrame *image)
{
    char why[256];
    const AVCodec *codec = avcodec_find_encoder_by_name("libx264");
    if (!codec) {
        set_failed(r, "camera %s: this FFmpeg has no libx264 encoder to record raw frames",
                   r->camera);
        return -1;
    }
    r->enc = avcodec_alloc_context3(codec);
    if (!r->enc) {
        set_failed(r, "camera %s: no memory for an encoder", r->camera);
        return -1;
    }
    AVCodecContext *e = r->enc;
    e->width = image->width;
    e->height = image->height;
    e->pix_fmt = image->format == AV_PIX_FMT_NV12 ? AV_PIX_FMT_NV12 : AV_PIX_FMT_YUV420P;
    e->time_base = (AVRational){1, 1000};
    /* No nominal rate in the file: the timestamps (capture times) are the
     * truth, and a camera's real rate may differ from its nominal one. */
    double fps = r->fps > 0 ? r->fps : 30.0;
    e->gop_size = (int)lround(2.0 * fps); /* a key frame every 2 s: what a kill costs at most */
    e->max_b_frames = 0;
    e->thread_count = 1;
    e->flags |= AV_CODEC_FLAG_GLOBAL_HEADER; /* Matroska keeps SPS/PPS in CodecPrivate */
    AVDictionary *o = NULL;
    av_dict_set(&o, "preset", "veryfast", 0);
    av_dict_set(&o, "tune", "zerolatency", 0); /* no look-ahead: frames leave as they come */
    av_dict_set(&o, "crf", "23", 0);
    io_libav_clear_log();
    int err = avcodec_open2(e, codec, &o);
    av_dict_free(&o);
    if (err < 0) {
        set_failed(r, "camera %s: cannot open libx264 for %dx%d: %s", r->camera, e->width,
                   e->height, io_libav_why(err, why, sizeof why));
        avcodec_free_context(&r->enc);
        return -1;
    }
    return 0;
}

/* The frame in the encoder's format (RGB converted to 4:2:0). */
static AVFrame *to_encoder(io_recorder *r, AVFrame *image)
{
    if (image->format == r->enc->pix_fmt)
        return image;
    if (!r->conv) {
        r->conv = av_frame_alloc();
        if (!r->conv)
            return NULL;
        r->conv->width = image->width;
        r->conv->height = image->height;
        r->conv->format = r->enc->pix_fmt;
        if (av_frame_get_buffer(r->conv, 0) < 0)
            return NULL;
    }
    r->sws = sws_getCachedContext(r->sws, image->width, image->height, image->format, image->width,
                                  image->height, r->enc->pix_fmt, SWS_BILINEAR, NULL, NULL, NULL);
    if (!r->sws || av_frame_make_writable(r->conv) < 0)
        return NULL;
    sws_scale(r->sws, (const uint8_t *const *)image->data, image->linesize, 0, image->height,
              r->conv->data, r->conv->linesize);
    return r->conv;
}

static void on_encode_row(io_recorder *r, item *it)
{
    AVFrame *image = it->image;
    if (!r->have_t0) {
        r->t0_ns = it->capture_ns;
        r->have_t0 = 1;
        r->last_ms = -1;
    }
    int64_t ms = (int64_t)((it->capture_ns - r->t0_ns) / 1000000);
    if (ms <= r->last_ms)
        ms = r->last_ms + 1; /* strictly increasing */
    r->last_ms = ms;
    if (r->cur.fmt && (r->enc->width != image->width || r->enc->height != image->height ||
                       segment_full(r, &r->cur, (ms - r->cur.first_ts) * 1000000))) {
        close_encoder(r); /* every frame it holds into this segment */
        close_segment(r, &r->cur);
    }
    if (!r->cur.fmt) {
        if (open_encoder(r, image) != 0 || open_segment(r, &r->cur, it->unix_ns) != 0) {
            count(r, &r->stats.dropped, 1);
            return;
        }
        r->cur.first_ts = ms;
    }
    AVFrame *f = to_encoder(r, image);
    if (!f) {
        set_failed(r, "%s: converting a frame for the encoder", r->cur.path);
        return;
    }
    f->pts = ms;
    char why[256];
    io_libav_clear_log();
    int err = avcodec_send_frame(r->enc, f);
    if (err < 0) {
        set_failed(r, "%s: encoding: %s", r->cur.path, io_libav_why(err, why, sizeof why));
        return;
    }
    AVStream *ost = r->cur.fmt->streams[0];
    write_row(r, &r->cur, it,
              (double)av_rescale_q(ms, r->enc->time_base, ost->time_base) * av_q2d(ost->time_base));
    drain(r, 0);
    update_bytes(r);
}

/* ---- the queue and the thread ------------------------------------------ */

static void free_item(item *it)
{
    av_packet_free(&it->pkt);
    avcodec_parameters_free(&it->par);
    av_frame_free(&it->image);
    free(it);
}

static void handle(io_recorder *r, item *it)
{
    if (r->failed) {
        if (it->kind == ITEM_ROW)
            count(r, &r->stats.dropped, 1);
        return;
    }
    switch (it->kind) {
    case ITEM_STREAM:
        on_stream(r, it);
        break;
    case ITEM_PACKET:
        on_packet(r, it->pkt);
        break;
    case ITEM_ROW:
        if (it->image)
            on_encode_row(r, it);
        else
            on_remux_row(r, it);
        break;
    case ITEM_BREAK:
        end_run(r);
        break;
    }
}

static void *writer_main(void *arg)
{
    io_recorder *r = arg;
    for (;;) {
        pthread_mutex_lock(&r->lock);
        while (!r->head && !r->stop)
            pthread_cond_wait(&r->wake, &r->lock);
        item *it = r->head;
        if (it) {
            r->head = it->next;
            if (!r->head)
                r->tail = NULL;
            r->all--;
            r->heavy -= it->pkt || it->image;
            r->bytes -= it->bytes;
        }
        pthread_mutex_unlock(&r->lock);
        if (!it)
            break;
        handle(r, it);
        free_item(it);
    }
    close_encoder(r);
    close_segment(r, &r->prev);
    close_segment(r, &r->cur);
    return NULL;
}

/* Raw frames waiting for the encoder take this much memory at most (a
 * 1080p camera: about 40 frames), whatever the queue's length. */
#define QUEUE_BYTES ((size_t)128 << 20)

/* Queues it, or frees it and returns -1 when the queue is full (heavy:
 * a packet or a frame, bounded by the queue size and QUEUE_BYTES, one
 * always fits; anything else by a larger bound; STREAM and BREAK never
 * refused). */
static int push(io_recorder *r, item *it)
{
    int heavy = it->pkt || it->image;
    int must = it->kind == ITEM_STREAM || it->kind == ITEM_BREAK;
    int size = it->pkt     ? it->pkt->size
               : it->image ? av_image_get_buffer_size(it->image->format, it->image->width,
                                                      it->image->height, 1)
                           : 0;
    it->bytes = size > 0 ? (size_t)size : 0;
    pthread_mutex_lock(&r->lock);
    int full =
        heavy && (r->heavy >= r->queue || (r->heavy > 0 && r->bytes + it->bytes > QUEUE_BYTES));
    if (!must && (full || r->all >= 4 * r->queue + 64)) {
        pthread_mutex_unlock(&r->lock);
        free_item(it);
        return -1;
    }
    it->next = NULL;
    if (r->tail)
        r->tail->next = it;
    else
        r->head = it;
    r->tail = it;
    r->all++;
    r->heavy += heavy;
    r->bytes += it->bytes;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
    return 0;
}

void io_recorder_tap_stream(io_recorder *r, const AVStream *st)
{
    if (!r || !st)
        return;
    item *it = calloc(1, sizeof *it);
    if (it && (it->par = avcodec_parameters_alloc()) &&
        avcodec_parameters_copy(it->par, st->codecpar) >= 0) {
        it->kind = ITEM_STREAM;
        it->tb = st->time_base;
        r->remux = 1;
        r->skip_to_key = 0;
        push(r, it);
        return;
    }
    if (it)
        free_item(it);
    pthread_mutex_lock(&r->lock);
    snprintf(r->stats.error, sizeof r->stats.error, "camera %s: no memory to record", r->camera);
    pthread_mutex_unlock(&r->lock);
}

void io_recorder_tap_packet(io_recorder *r, const AVPacket *pkt)
{
    if (!r || !pkt)
        return;
    int key = (pkt->flags & AV_PKT_FLAG_KEY) != 0;
    if (r->skip_to_key && !key)
        return;
    item *it = calloc(1, sizeof *it);
    if (it)
        it->pkt = av_packet_clone(pkt);
    if (!it || !it->pkt) {
        free(it);
        r->skip_to_key = 1;
        return;
    }
    it->kind = ITEM_PACKET;
    r->skip_to_key = push(r, it) != 0;
}

void io_recorder_discontinuity(io_recorder *r)
{
    if (!r)
        return;
    item *it = calloc(1, sizeof *it);
    if (!it)
        return;
    it->kind = ITEM_BREAK;
    push(r, it);
}

static const struct {
    omma_pixel_format f;
    enum AVPixelFormat av;
} formats[] = {
    {OMMA_PIXEL_I420, AV_PIX_FMT_YUV420P}, {OMMA_PIXEL_NV12, AV_PIX_FMT_NV12},
    {OMMA_PIXEL_RGB, AV_PIX_FMT_RGB24},    {OMMA_PIXEL_BGR, AV_PIX_FMT_BGR24},
    {OMMA_PIXEL_RGBA, AV_PIX_FMT_RGBA},    {OMMA_PIXEL_BGRA, AV_PIX_FMT_BGRA},
};

/* A copy of a host frame in an AVFrame (NULL: no memory or not a host frame). */
static AVFrame *copy_image(const omma_frame *f)
{
    if (f->memory != OMMA_MEMORY_HOST || f->width <= 0 || f->height <= 0)
        return NULL;
    enum AVPixelFormat av = AV_PIX_FMT_NONE;
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (formats[i].f == f->format)
            av = formats[i].av;
    if (av == AV_PIX_FMT_NONE)
        return NULL;
    AVFrame *a = av_frame_alloc();
    if (!a)
        return NULL;
    a->width = f->width;
    a->height = f->height;
    a->format = av;
    if (av_frame_get_buffer(a, 0) < 0) {
        av_frame_free(&a);
        return NULL;
    }
    const uint8_t *src[4] = {f->planes[0], f->planes[1], f->planes[2], NULL};
    int pitch[4] = {f->pitch[0], f->pitch[1], f->pitch[2], 0};
    av_image_copy(a->data, a->linesize, src, pitch, av, f->width, f->height);
    return a;
}

void io_recorder_frame(io_recorder *r, long frame, uint64_t capture_ns, int64_t pts,
                       const omma_frame *image)
{
    if (!r)
        return;
    item *it = calloc(1, sizeof *it);
    if (it && !r->remux && (!image || !(it->image = copy_image(image)))) {
        free(it);
        it = NULL;
    }
    if (!it) {
        count(r, &r->stats.dropped, 1);
        return;
    }
    it->kind = ITEM_ROW;
    it->frame = frame;
    it->capture_ns = capture_ns;
    uint64_t now = core_now_ns();
    it->unix_ns = unix_now_ns() - (now > capture_ns ? (int64_t)(now - capture_ns) : 0);
    it->pts = pts == INT64_MIN ? AV_NOPTS_VALUE : pts;
    if (push(r, it) != 0)
        count(r, &r->stats.dropped, 1);
}

omma_status io_recorder_create(const io_record_options *opt, io_recorder **out)
{
    if (out)
        *out = NULL;
    if (!opt || !out || !opt->dir || !opt->camera)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_recorder_create: NULL %s",
                         !opt || !out ? "argument"
                         : !opt->dir  ? "directory"
                                      : "camera name");
    const char *name = opt->name ? opt->name : IO_RECORD_DEFAULT_NAME;
    if (opt->segment_ns < 0 || opt->segment_bytes < 0 || opt->queue < 0 || !(opt->fps >= 0))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "record %s: negative limits", opt->camera);
    OMMA_TRY(io_record_check_name(name, opt->segment_ns > 0 || opt->segment_bytes > 0));
    struct stat sb;
    if (stat(opt->dir, &sb) != 0)
        return OMMA_FAIL(OMMA_ERR_IO, "record directory %s: %s", opt->dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return OMMA_FAIL(OMMA_ERR_IO, "record directory %s: not a directory", opt->dir);
    /* A file made and removed: access() says yes to root on a directory
     * nobody can write (a read-only mount, /proc). */
    char probe[4200];
    snprintf(probe, sizeof probe, "%s/.omma-record-XXXXXX", opt->dir);
    int fd = mkstemp(probe);
    if (fd < 0)
        return OMMA_FAIL(OMMA_ERR_IO, "record directory %s: not writable: %s", opt->dir,
                         strerror(errno));
    close(fd);
    unlink(probe);
    io_libav_init();
    io_recorder *r = calloc(1, sizeof *r);
    if (!r)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "record %s", opt->camera);
    r->dir = strdup(opt->dir);
    r->name = strdup(name);
    r->camera = strdup(opt->camera);
    r->participant = opt->participant ? strdup(opt->participant) : NULL;
    r->out = av_packet_alloc();
    r->segment_ns = opt->segment_ns;
    r->segment_bytes = opt->segment_bytes;
    r->fps = opt->fps;
    r->queue = opt->queue > 0 ? opt->queue : 256;
    r->cur.csv = r->prev.csv = -1;
    r->need_key = 1;
    int locks = 0;
    if (r->dir && r->name && r->camera && (r->participant || !opt->participant) && r->out &&
        pthread_mutex_init(&r->lock, NULL) == 0 && ++locks &&
        pthread_cond_init(&r->wake, NULL) == 0 && ++locks &&
        pthread_create(&r->thread, NULL, writer_main, r) == 0) {
        *out = r;
        return OMMA_OK;
    }
    if (locks > 1)
        pthread_cond_destroy(&r->wake);
    if (locks > 0)
        pthread_mutex_destroy(&r->lock);
    av_packet_free(&r->out);
    free(r->dir);
    free(r->name);
    free(r->camera);
    free(r->participant);
    free(r);
    return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "record %s: recorder and its thread", opt->camera);
}

void io_recorder_get_stats(io_recorder *r, io_recorder_stats *out)
{
    if (!out)
        return;
    memset(out, 0, sizeof *out);
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    *out = r->stats;
    out->encoded = !r->remux;
    pthread_mutex_unlock(&r->lock);
}

omma_status io_recorder_close(io_recorder *r, io_recorder_stats *stats)
{
    if (stats)
        memset(stats, 0, sizeof *stats);
    if (!r)
        return OMMA_OK;
    pthread_mutex_lock(&r->lock);
    r->stop = 1;
    pthread_cond_signal(&r->wake);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    io_recorder_get_stats(r, stats);
    omma_status st = r->stats.error[0] ? core_fail_text(OMMA_ERR_IO, r->stats.error) : OMMA_OK;
    avcodec_parameters_free(&r->par);
    av_frame_free(&r->conv);
    sws_freeContext(r->sws);
    av_packet_free(&r->out);
    pthread_cond_destroy(&r->wake);
    pthread_mutex_destroy(&r->lock);
    free(r->dir);
    free(r->name);
    free(r->camera);
    free(r->participant);
    free(r);
    return st;
}

#else /* no libav */

omma_status io_recorder_create(const io_record_options *opt, io_recorder **out)
{
    (void)opt;
    if (out)
        *out = NULL;
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                     "--record: omma was built without FFmpeg (libavformat/libavcodec)");
}

void io_recorder_frame(io_recorder *r, long frame, uint64_t capture_ns, int64_t pts,
                       const omma_frame *image)
{
    (void)r;
    (void)frame;
    (void)capture_ns;
    (void)pts;
    (void)image;
}

void io_recorder_discontinuity(io_recorder *r)
{
    (void)r;
}

void io_recorder_get_stats(io_recorder *r, io_recorder_stats *out)
{
    (void)r;
    if (out)
        memset(out, 0, sizeof *out);
}

omma_status io_recorder_close(io_recorder *r, io_recorder_stats *stats)
{
    (void)r;
    if (stats)
        memset(stats, 0, sizeof *stats);
    return OMMA_OK;
}

#endif
