/* Network streams for the video reader (OMMA_HAVE_LIBAV builds): the URL's
 * protocol options and an interrupt callback. FFmpeg's protocols block in
 * poll loops that call AVIOInterruptCB about every 100 ms; the callback
 * ends the call once the deadline has passed (the connect timeout while
 * opening, then the read timeout that io_video_arm sets before each read)
 * or the owner's abort flag is up, so a stalled or silent peer is reported
 * within its timeout and a stop is prompt. The protocols' own socket
 * timeouts are set too (they cover waits the callback does not see). */
#define _POSIX_C_SOURCE 200809L /* strncasecmp */
#include "io/video_file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/clock.h"
#include "core/error.h"

int io_video_is_url(const char *spec)
{
    static const char *const schemes[] = {"rtsp://", "rtsps://", "http://", "https://"};
    if (!spec)
        return 0;
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
        if (strncasecmp(spec, schemes[i], strlen(schemes[i])) == 0)
            return 1;
    return 0;
}

void io_video_url_redacted(const char *url, char *out, size_t size)
{
    if (!out || !size)
        return;
    const char *host = url ? strstr(url, "://") : NULL;
    if (!host) {
        snprintf(out, size, "%s", url ? url : "");
        return;
    }
    host += 3;
    size_t auth = strcspn(host, "/?#"); /* the authority: [userinfo@]host[:port] */
    const char *at = NULL;
    for (size_t i = 0; i < auth; i++)
        if (host[i] == '@')
            at = host + i; /* the last '@' ends the userinfo */
    if (!at)
        snprintf(out, size, "%s", url);
    else
        snprintf(out, size, "%.*s***%s", (int)(host - url), url, at);
}

#ifdef OMMA_HAVE_LIBAV

#include "io/video_libav.h"

/* Network protocols only: a playlist or a redirect never reaches a file. */
#define NET_PROTOCOLS "http,https,tcp,tls,udp,rtp,srtp,rtsp,rtsps,crypto,httpproxy"
#define NET_MAX_TIMEOUT_MS 3600000

struct io_net {
    char *url; /* as given, with its password (messages use the redacted one) */
    io_video_net opt;
    int rtsp; /* rtsp:// or rtsps:// */
    _Atomic uint64_t deadline_ns;
    atomic_int fired;
};

int io_libav_network_error(int err)
{
    switch (err) {
    case AVERROR(ECONNREFUSED):
    case AVERROR(ECONNRESET):
    case AVERROR(ECONNABORTED):
    case AVERROR(ETIMEDOUT):
    case AVERROR(EHOSTUNREACH):
    case AVERROR(ENETUNREACH):
    case AVERROR(ENETDOWN):
    case AVERROR(EPIPE):
    case AVERROR(EADDRNOTAVAIL):
    case AVERROR_EXIT:
    case AVERROR_HTTP_BAD_REQUEST:
    case AVERROR_HTTP_UNAUTHORIZED:
    case AVERROR_HTTP_FORBIDDEN:
    case AVERROR_HTTP_NOT_FOUND:
    case AVERROR_HTTP_OTHER_4XX:
    case AVERROR_HTTP_SERVER_ERROR:
        return 1;
    }
    return 0;
}

static int on_interrupt(void *opaque)
{
    io_net *n = opaque;
    if (n->opt.abort && atomic_load(n->opt.abort)) {
        atomic_store(&n->fired, 2);
        return 1;
    }
    uint64_t deadline = atomic_load(&n->deadline_ns);
    if (deadline && core_now_ns() > deadline) {
        atomic_store(&n->fired, 1);
        return 1;
    }
    return 0;
}

omma_status io_net_create(const char *url, const io_video_net *opt, io_net **out)
{
    *out = NULL;
    char shown[512];
    io_video_url_redacted(url, shown, sizeof shown);
    if (!io_video_is_url(url))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "%s: not a network stream (rtsp://, rtsps://, http://, https://)", shown);
    if (opt->connect_timeout_ms <= 0 || opt->connect_timeout_ms > NET_MAX_TIMEOUT_MS ||
        opt->read_timeout_ms <= 0 || opt->read_timeout_ms > NET_MAX_TIMEOUT_MS)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "%s: connect timeout %d ms, read timeout %d ms: each must be in "
                         "1..%d ms",
                         shown, opt->connect_timeout_ms, opt->read_timeout_ms, NET_MAX_TIMEOUT_MS);
    const char *host = strstr(url, "://") + 3;
    size_t auth = strcspn(host, "/?#");
    for (size_t i = auth; i > 0; i--)
        if (host[i - 1] == '@') { /* after the userinfo */
            auth -= i;
            host += i;
            break;
        }
    if (auth == 0 || *host == ':')
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: no host in the URL", shown);
    io_net *n = calloc(1, sizeof *n);
    if (!n)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: network reader", shown);
    n->url = strdup(url);
    if (!n->url) {
        free(n);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "network reader");
    }
    n->opt = *opt;
    n->rtsp = strncasecmp(url, "rtsp", 4) == 0;
    atomic_init(&n->deadline_ns, 0);
    atomic_init(&n->fired, 0);
    *out = n;
    return OMMA_OK;
}

void io_net_arm(io_net *n)
{
    if (!n)
        return;
    atomic_store(&n->fired, 0);
    atomic_store(&n->deadline_ns, core_now_ns() + (uint64_t)n->opt.read_timeout_ms * 1000000u);
}

int io_net_fired(const io_net *n)
{
    return n ? atomic_load(&n->fired) : 0;
}

void io_net_free(io_net *n)
{
    if (n)
        free(n->url);
    free(n);
}

/* The status and message for a failed open or header read. */
static omma_status open_failed(io_net *n, const char *shown, const char *what, int err)
{
    char why[512];
    int fired = atomic_load(&n->fired);
    if (fired == 2)
        return OMMA_FAIL(OMMA_ERR_CLOSED, "%s: interrupted while %s", shown, what);
    if (fired == 1)
        return OMMA_FAIL(OMMA_ERR_TIMEOUT, "%s: no answer within %.1f s while %s (connect timeout)",
                         shown, n->opt.connect_timeout_ms / 1000.0, what);
    io_libav_why(err, why, sizeof why);
    if (err == AVERROR(ENOMEM))
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: %s: %s", shown, what, why);
    if (io_libav_network_error(err) || err == AVERROR(EIO))
        return OMMA_FAIL(OMMA_ERR_IO, "%s: %s: %s", shown, what, why);
    if (err == AVERROR_PROTOCOL_NOT_FOUND || err == AVERROR_DEMUXER_NOT_FOUND ||
        err == AVERROR_PATCHWELCOME || err == AVERROR(ENOSYS))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "%s: %s: %s", shown, what, why);
    return OMMA_FAIL(OMMA_ERR_FORMAT, "%s: %s: not a stream omma can read: %s", shown, what, why);
}

omma_status io_net_open_input(io_net *n, const char *shown, AVFormatContext **fmt)
{
    AVFormatContext *f = avformat_alloc_context();
    if (!f)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: format context", shown);
    f->interrupt_callback.callback = on_interrupt;
    f->interrupt_callback.opaque = n;
    char us[32];
    snprintf(us, sizeof us, "%lld", (long long)n->opt.read_timeout_ms * 1000);
    AVDictionary *opts = NULL;
    av_dict_set(&opts, "protocol_whitelist", NET_PROTOCOLS, 0);
    av_dict_set(&opts, "rw_timeout", us, 0); /* every protocol's reads and writes */
    if (n->rtsp) {
        av_dict_set(&opts, "rtsp_transport", n->opt.rtsp_udp ? "udp" : "tcp", 0);
        av_dict_set(&opts, "timeout", us, 0); /* RTSP: socket I/O, in microseconds */
    } else {
        av_dict_set(&opts, "timeout", us, 0); /* HTTP: socket I/O, in microseconds */
    }
    atomic_store(&n->fired, 0);
    atomic_store(&n->deadline_ns, core_now_ns() + (uint64_t)n->opt.connect_timeout_ms * 1000000u);
    io_libav_clear_log();
    int err = avformat_open_input(&f, n->url, NULL, &opts); /* frees f on failure */
    av_dict_free(&opts);
    if (err < 0)
        return open_failed(n, shown, "connecting", err);
    *fmt = f;
    io_libav_clear_log();
    err = avformat_find_stream_info(f, NULL);
    if (err < 0)
        return open_failed(n, shown, "reading the stream parameters", err);
    /* A video stream in a codec FFmpeg does not know (an RTP payload it has
     * no depacketizer for) is not "no video". */
    int known = 0, unknown = 0;
    for (unsigned i = 0; i < f->nb_streams; i++)
        if (f->streams[i]->codecpar->codec_type == AVMEDIA_TYPE_VIDEO) {
            if (f->streams[i]->codecpar->codec_id == AV_CODEC_ID_NONE)
                unknown++;
            else
                known++;
        }
    if (!known && unknown)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "%s: its video is in a codec (or RTP payload) FFmpeg cannot decode",
                         shown);
    /* No deadline until the owner arms one before a read. */
    atomic_store(&n->deadline_ns, 0);
    return OMMA_OK;
}

#endif
