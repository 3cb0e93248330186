/* omma's LSL inlet: TCP data protocol 1.10 and the time probes
 * (lsl_inlet.h). */
#include "lsl/lsl_inlet.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "lsl/lsl_clock.h"
#include "lsl/lsl_feed.h"

#define RX_BYTES 65536

struct lsl_inlet {
    lsl_info info;
    int fd;
    int swap, suppress;
    double last_ts;
    size_t value_bytes;
    uint8_t rx[RX_BYTES];
    size_t rx_off, rx_len;
};

static int remaining_ms(uint64_t deadline)
{
    uint64_t now = core_now_ns();
    return now >= deadline ? 0 : (int)((deadline - now) / 1000000) + 1;
}

static omma_status connect_to(const lsl_info *s, uint64_t deadline, int *out)
{
    *out = -1;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->v4data_port)};
    const char *addr = s->v4address[0] ? s->v4address : "127.0.0.1";
    if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "lsl inlet %s: address '%s' is not IPv4", s->name,
                         addr);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return OMMA_FAIL(OMMA_ERR_IO, "lsl inlet: socket: %s", strerror(errno));
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 && errno != EINPROGRESS) {
        int e = errno;
        close(fd);
        return OMMA_FAIL(OMMA_ERR_IO, "lsl inlet %s: connect %s:%d: %s", s->name, addr,
                         s->v4data_port, strerror(e));
    }
    struct pollfd p = {fd, POLLOUT, 0};
    int r = poll(&p, 1, remaining_ms(deadline));
    int err = 0;
    socklen_t el = sizeof err;
    if (r <= 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) != 0 || err) {
        close(fd);
        if (r <= 0)
            return OMMA_FAIL(OMMA_ERR_TIMEOUT, "lsl inlet %s: connect %s:%d timed out", s->name,
                             addr, s->v4data_port);
        return OMMA_FAIL(OMMA_ERR_IO, "lsl inlet %s: connect %s:%d: %s", s->name, addr,
                         s->v4data_port, strerror(err));
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    *out = fd;
    return OMMA_OK;
}

static omma_status send_all(int fd, const char *p, size_t n, uint64_t deadline)
{
    while (n) {
        ssize_t w = send(fd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w > 0) {
            p += w;
            n -= (size_t)w;
            continue;
        }
        if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return OMMA_FAIL(OMMA_ERR_IO, "lsl inlet: send: %s", strerror(errno));
        struct pollfd pf = {fd, POLLOUT, 0};
        if (poll(&pf, 1, remaining_ms(deadline)) <= 0)
            return OMMA_FAIL(OMMA_ERR_TIMEOUT, "lsl inlet: send timed out");
    }
    return OMMA_OK;
}

/* Reads into the receive buffer; OMMA_ERR_CLOSED at the end. */
static omma_status fill(lsl_inlet *in, uint64_t deadline)
{
    if (in->rx_off > 0) {
        memmove(in->rx, in->rx + in->rx_off, in->rx_len - in->rx_off);
        in->rx_len -= in->rx_off;
        in->rx_off = 0;
    }
    for (;;) {
        ssize_t r = recv(in->fd, in->rx + in->rx_len, RX_BYTES - in->rx_len, MSG_DONTWAIT);
        if (r > 0) {
            in->rx_len += (size_t)r;
            return OMMA_OK;
        }
        if (r == 0)
            return OMMA_FAIL(OMMA_ERR_CLOSED, "lsl inlet %s: the outlet closed the connection",
                             in->info.name);
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return OMMA_FAIL(OMMA_ERR_IO, "lsl inlet %s: recv: %s", in->info.name, strerror(errno));
        struct pollfd pf = {in->fd, POLLIN, 0};
        int ms = remaining_ms(deadline);
        if (ms == 0 || poll(&pf, 1, ms) <= 0)
            return OMMA_FAIL(OMMA_ERR_TIMEOUT, "lsl inlet %s: no data", in->info.name);
    }
}

static omma_status read_exact(lsl_inlet *in, void *dst, size_t n, uint64_t deadline)
{
    uint8_t *d = dst;
    while (n) {
        if (in->rx_off == in->rx_len) {
            in->rx_off = in->rx_len = 0;
            OMMA_TRY(fill(in, deadline));
        }
        size_t k = in->rx_len - in->rx_off < n ? in->rx_len - in->rx_off : n;
        memcpy(d, in->rx + in->rx_off, k);
        in->rx_off += k;
        d += k;
        n -= k;
    }
    return OMMA_OK;
}

static omma_status read_one(lsl_inlet *in, void *values, double *ts, uint64_t deadline)
{
    uint8_t tag;
    OMMA_TRY(read_exact(in, &tag, 1, deadline));
    if (tag == LSL_TAG_TRANSMITTED) {
        uint8_t t[8];
        OMMA_TRY(read_exact(in, t, 8, deadline));
        if (in->swap)
            lsl_swap_values(t, 1, 8);
        memcpy(ts, t, 8);
    } else if (tag == LSL_TAG_DEDUCED) {
        *ts = in->last_ts + (in->info.nominal_srate > 0 ? 1.0 / in->info.nominal_srate : 0);
    } else {
        return OMMA_FAIL(OMMA_ERR_FORMAT, "lsl inlet %s: bad sample tag %u", in->info.name, tag);
    }
    OMMA_TRY(read_exact(in, values, in->value_bytes, deadline));
    size_t w = lsl_format_size(in->info.format);
    if (in->swap)
        lsl_swap_values(values, in->info.channel_count, w);
    if (in->suppress && in->info.format == LSL_FORMAT_FLOAT32) {
        uint32_t *v = values;
        for (int i = 0; i < in->info.channel_count; i++)
            if (v[i] && (v[i] & 0x7fffffffu) <= 0x007fffffu)
                v[i] &= 0x80000000u;
    }
    in->last_ts = *ts;
    return OMMA_OK;
}

/* Reads the whole answer to LSL:fullinfo (the outlet closes after it). */
static omma_status fetch_fullinfo(const lsl_info *s, uint64_t deadline, lsl_info *full)
{
    int fd;
    OMMA_TRY(connect_to(s, deadline, &fd));
    omma_status st = send_all(fd, "LSL:fullinfo\r\n", 14, deadline);
    lsl_buf b = {0};
    while (st == OMMA_OK) {
        char tmp[8192];
        ssize_t r = recv(fd, tmp, sizeof tmp, MSG_DONTWAIT);
        if (r > 0) {
            lsl_buf_append(&b, tmp, (size_t)r);
            if (b.failed || b.len > (1u << 20))
                st = OMMA_FAIL(OMMA_ERR_FORMAT, "lsl inlet %s: fullinfo too large", s->name);
            continue;
        }
        if (r == 0)
            break;
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            st = OMMA_FAIL(OMMA_ERR_IO, "lsl inlet %s: recv: %s", s->name, strerror(errno));
            break;
        }
        struct pollfd pf = {fd, POLLIN, 0};
        int ms = remaining_ms(deadline);
        if (ms == 0 || poll(&pf, 1, ms) <= 0)
            st = OMMA_FAIL(OMMA_ERR_TIMEOUT, "lsl inlet %s: fullinfo timed out", s->name);
    }
    close(fd);
    if (st == OMMA_OK)
        st = lsl_info_parse(b.data ? b.data : "", b.len, full);
    lsl_buf_free(&b);
    return st;
}

omma_status lsl_inlet_open(const lsl_info *stream, double timeout_s, lsl_inlet **out)
{
    *out = NULL;
    if (!stream || !(timeout_s > 0))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "lsl inlet: a stream and a timeout needed");
    uint64_t deadline = core_now_ns() + (uint64_t)(timeout_s * 1e9);
    lsl_inlet *in = calloc(1, sizeof *in);
    if (!in)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "lsl inlet: out of memory");
    in->fd = -1;
    omma_status st = fetch_fullinfo(stream, deadline, &in->info);
    if (st != OMMA_OK) {
        free(in);
        return st;
    }
    snprintf(in->info.v4address, sizeof in->info.v4address, "%s",
             stream->v4address[0] ? stream->v4address : "127.0.0.1");
    size_t w = lsl_format_size(in->info.format);
    if (w == 0 || in->info.channel_count < 1) {
        st = OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "lsl inlet %s: %s streams are not read", in->info.name,
                       lsl_format_name(in->info.format));
        goto fail;
    }
    in->value_bytes = w * (size_t)in->info.channel_count;
    if ((st = connect_to(&in->info, deadline, &in->fd)) != OMMA_OK)
        goto fail;
    long buflen = in->info.nominal_srate > 0 ? (long)(in->info.nominal_srate * 360) : 36000;
    if (buflen < 1)
        buflen = 1;
    char req[1024];
    int rn = snprintf(req, sizeof req,
                      "LSL:streamfeed/110 %s\r\nNative-Byte-Order: 1234\r\n"
                      "Endian-Performance: 0\r\nHas-IEEE754-Floats: 1\r\n"
                      "Supports-Subnormals: 1\r\nValue-Size: %zu\r\n"
                      "Data-Protocol-Version: 110\r\nMax-Buffer-Length: %ld\r\n"
                      "Max-Chunk-Length: 0\r\nHostname: %s\r\nSource-Id: %s\r\n"
                      "Session-Id: %s\r\n\r\n",
                      in->info.uid, w, buflen, in->info.hostname, in->info.source_id,
                      in->info.session_id);
    if (rn < 0 || (size_t)rn >= sizeof req) {
        st = OMMA_FAIL(OMMA_ERR_INVALID_ARG, "lsl inlet %s: request too long", in->info.name);
        goto fail;
    }
    if ((st = send_all(in->fd, req, (size_t)rn, deadline)) != OMMA_OK)
        goto fail;
    /* The response header, through its blank line. */
    size_t hend = 0;
    for (;;) {
        for (size_t i = 0; i + 3 < in->rx_len && !hend; i++)
            if (!memcmp(in->rx + i, "\r\n\r\n", 4))
                hend = i + 4;
        if (hend)
            break;
        if (in->rx_len >= LSL_FEED_MAX_REQUEST) {
            st =
                OMMA_FAIL(OMMA_ERR_FORMAT, "lsl inlet %s: response header too long", in->info.name);
            goto fail;
        }
        st = fill(in, deadline);
        if (st == OMMA_ERR_CLOSED && in->rx_len > 0) {
            /* An error status without a header block. */
            lsl_feed_response rs;
            if (lsl_feed_response_parse((const char *)in->rx, in->rx_len, &rs) == OMMA_OK)
                st = OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "lsl inlet %s: the outlet answered %d",
                               in->info.name, rs.status);
            goto fail;
        }
        if (st != OMMA_OK)
            goto fail;
    }
    lsl_feed_response rs;
    if ((st = lsl_feed_response_parse((const char *)in->rx, hend, &rs)) != OMMA_OK)
        goto fail;
    in->rx_off = hend;
    if (rs.status != 200) {
        st = OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "lsl inlet %s: the outlet answered %d", in->info.name,
                       rs.status);
        goto fail;
    }
    if (rs.data_protocol_version != 110 || (rs.uid[0] && strcmp(rs.uid, in->info.uid) != 0)) {
        st =
            OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "lsl inlet %s: data protocol %d, uid %s (want 110, %s)",
                      in->info.name, rs.data_protocol_version, rs.uid, in->info.uid);
        goto fail;
    }
    in->swap = rs.byte_order != 1234;
    in->suppress = rs.suppress_subnormals;
    /* The two test patterns. */
    uint8_t *want = malloc(in->value_bytes), *got = malloc(in->value_bytes);
    if (!want || !got) {
        free(want);
        free(got);
        st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "lsl inlet: out of memory");
        goto fail;
    }
    for (int k = 0; k < 2 && st == OMMA_OK; k++) {
        double ts = 0;
        lsl_test_pattern(in->info.format, in->info.channel_count, k == 0 ? 4 : 2, want);
        st = read_one(in, got, &ts, deadline);
        if (st == OMMA_OK && (ts != LSL_TEST_PATTERN_TIME || memcmp(want, got, in->value_bytes)))
            st = OMMA_FAIL(OMMA_ERR_FORMAT,
                           "lsl inlet %s: test-pattern sample %d does not match (formats differ)",
                           in->info.name, k + 1);
    }
    free(want);
    free(got);
    if (st != OMMA_OK)
        goto fail;
    in->last_ts = 0;
    *out = in;
    return OMMA_OK;
fail:
    lsl_inlet_close(in);
    return st;
}

void lsl_inlet_close(lsl_inlet *in)
{
    if (!in)
        return;
    if (in->fd >= 0)
        close(in->fd);
    lsl_info_clear(&in->info);
    free(in);
}

const lsl_info *lsl_inlet_info(const lsl_inlet *in)
{
    return &in->info;
}

omma_status lsl_inlet_pull(lsl_inlet *in, void *values, double *timestamp, double timeout_s)
{
    if (!in || !values || !timestamp)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "lsl inlet pull: NULL argument");
    uint64_t deadline = core_now_ns() + (uint64_t)(timeout_s > 0 ? timeout_s * 1e9 : 0);
    return read_one(in, values, timestamp, deadline);
}

omma_status lsl_inlet_time_correction(lsl_inlet *in, int probes, double timeout_s,
                                      double *correction, double *rtt)
{
    *correction = 0;
    *rtt = 0;
    if (probes < 1 || probes > 1000 || !(timeout_s > 0))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "lsl time correction: %d probes, %g s", probes,
                         timeout_s);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)in->info.v4service_port)};
    if (inet_pton(AF_INET, in->info.v4address, &sa.sin_addr) != 1)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "lsl time correction: bad address");
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return OMMA_FAIL(OMMA_ERR_IO, "lsl time correction: socket: %s", strerror(errno));
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        int e = errno;
        close(fd);
        return OMMA_FAIL(OMMA_ERR_IO, "lsl time correction: connect: %s", strerror(e));
    }
    uint64_t deadline = core_now_ns() + (uint64_t)(timeout_s * 1e9);
    double best_rtt = 1e30, best_offset = 0;
    int got = 0;
    int wave = (int)(core_now_ns() % 1000000);
    for (int k = 0; k < probes; k++) {
        char msg[128];
        int n =
            snprintf(msg, sizeof msg, "LSL:timedata\r\n%d %.17g\r\n", wave + k, lsl_clock_now());
        send(fd, msg, (size_t)n, MSG_NOSIGNAL);
        /* Each probe's answer, or the next probe after 100 ms. */
        uint64_t probe_end = core_now_ns() + 100000000ull;
        if (probe_end > deadline)
            probe_end = deadline;
        for (;;) {
            struct pollfd p = {fd, POLLIN, 0};
            int ms = remaining_ms(probe_end);
            if (ms == 0 || poll(&p, 1, ms) <= 0)
                break;
            char reply[256];
            ssize_t r = recv(fd, reply, sizeof reply - 1, MSG_DONTWAIT);
            double t3 = lsl_clock_now();
            if (r <= 0)
                continue;
            reply[r] = '\0';
            int id;
            double t0, t1, t2;
            if (sscanf(reply, " %d %lf %lf %lf", &id, &t0, &t1, &t2) != 4 || id < wave ||
                id > wave + k)
                continue;
            double rt = (t3 - t0) - (t2 - t1);
            double offset = ((t1 - t0) + (t2 - t3)) / 2;
            if (rt < best_rtt) {
                best_rtt = rt;
                best_offset = offset;
            }
            got++;
            if (id == wave + k)
                break;
        }
        if (core_now_ns() >= deadline)
            break;
    }
    close(fd);
    if (!got)
        return OMMA_FAIL(OMMA_ERR_TIMEOUT, "lsl time correction %s: no probe answered",
                         in->info.name);
    *correction = -best_offset;
    *rtt = best_rtt;
    return OMMA_OK;
}
