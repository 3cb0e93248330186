#define _GNU_SOURCE /* usleep, kill */
/* LSL over loopback between two processes: this program re-runs itself as
 * the outlet process (argv[1] = "outlet"), and reads it with omma's own
 * resolver and inlet: names, types, channel labels, source_id, nominal
 * rate, exact sample values and timestamps, time correction within 1 ms,
 * 4 streams x 30 Hz x 10 minutes (72000 samples, pushed as fast as the
 * consumers take them) with none lost; in one process, a consumer that
 * connects and never reads does not hold up the outlet or other
 * consumers, and its disconnect is noticed. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/clock.h"
#include "lsl/lsl_clock.h"
#include "lsl/lsl_inlet.h"
#include "lsl/lsl_outlet.h"
#include "lsl/lsl_resolver.h"
#include "testing.h"

#define META_CHANNELS 5
#define META_SAMPLES 300
#define BULK_STREAMS 4
#define BULK_SAMPLES (30 * 60 * 10)
#define BULK_CHANNELS 64

static char self_path[4096];

static double sample_time(int i)
{
    return 5000.0 + i / 30.0;
}
static float sample_value(int stream, int i, int k)
{
    return (float)(stream * 1000000 + i) + k * 0.25f;
}

/* --- the outlet process --- */

static int make_outlet(lsl_server *s, const char *name, int stream, int channels, lsl_outlet **o)
{
    lsl_info spec = {0};
    snprintf(spec.name, sizeof spec.name, "%s_%d", name, stream);
    snprintf(spec.type, sizeof spec.type, "Landmark");
    snprintf(spec.source_id, sizeof spec.source_id, "omma-test:%s:%d", name, stream);
    spec.channel_count = channels;
    spec.format = LSL_FORMAT_FLOAT32;
    spec.nominal_srate = 30;
    lsl_buf desc = {0};
    lsl_buf_puts(&desc, "<channels>");
    for (int k = 0; k < channels; k++) {
        char label[32];
        snprintf(label, sizeof label, "ch%d_%s", k, k % 2 ? "y" : "x");
        lsl_desc_channel(&desc, label, "normalized", "Position");
    }
    lsl_buf_puts(&desc, "</channels>");
    spec.desc = desc.data;
    omma_status st = lsl_outlet_create(s, &spec, 1024, o);
    lsl_buf_free(&desc);
    if (st != OMMA_OK)
        fprintf(stderr, "outlet: %s\n", omma_last_error());
    return st == OMMA_OK;
}

static int wait_consumers(lsl_outlet *const *o, int n, int want, double seconds)
{
    uint64_t end = core_now_ns() + (uint64_t)(seconds * 1e9);
    while (core_now_ns() < end) {
        int ok = 1;
        for (int i = 0; i < n; i++) {
            lsl_outlet_stats st;
            lsl_outlet_get_stats(o[i], &st);
            ok &= want ? st.consumers >= want : st.consumers == 0;
        }
        if (ok)
            return 1;
        usleep(2000);
    }
    return 0;
}

/* Serves n streams of `channels`, pushes `samples` each once every stream
 * has a consumer, never more than half the ring ahead of the slowest, then
 * waits for the consumers to leave. Exit 0 when none lost a sample. */
static int outlet_main(const char *name, int n, int channels, int samples)
{
    lsl_server *s = NULL;
    if (lsl_server_create(NULL, &s) != OMMA_OK) {
        fprintf(stderr, "outlet: %s\n", omma_last_error());
        return 2;
    }
    lsl_outlet *o[BULK_STREAMS] = {0};
    int rc = 2;
    for (int i = 0; i < n; i++)
        if (!make_outlet(s, name, i, channels, &o[i]))
            goto done;
    if (!wait_consumers(o, n, 1, 30)) {
        fprintf(stderr, "outlet: no consumer came\n");
        goto done;
    }
    float *v = malloc(sizeof *v * (size_t)channels);
    for (int i = 0; i < samples; i++) {
        for (int k = 0; k < n; k++) {
            for (;;) { /* flow control: stay within half the ring */
                lsl_outlet_stats st;
                lsl_outlet_get_stats(o[k], &st);
                if (st.pushed - st.sent < 512 || st.consumers == 0)
                    break;
                usleep(200);
            }
            for (int c = 0; c < channels; c++)
                v[c] = sample_value(k, i, c);
            lsl_outlet_push(o[k], v, sample_time(i));
        }
    }
    free(v);
    wait_consumers(o, n, 0, 60);
    rc = 0;
    for (int i = 0; i < n; i++) {
        lsl_outlet_stats st;
        lsl_outlet_get_stats(o[i], &st);
        fprintf(stderr, "outlet %s_%d: pushed %llu sent %llu lost %llu\n", name, i,
                (unsigned long long)st.pushed, (unsigned long long)st.sent,
                (unsigned long long)st.lost);
        if (st.lost != 0 || st.pushed != (uint64_t)samples || st.sent != (uint64_t)samples)
            rc = 1;
    }
done:
    for (int i = 0; i < n; i++)
        lsl_outlet_destroy(o[i]);
    lsl_server_destroy(s);
    return rc;
}

/* --- the reading side --- */

static pid_t spawn_outlet(const char *name, int n, int channels, int samples)
{
    pid_t pid = fork();
    if (pid == 0) {
        char a[4][32];
        snprintf(a[0], sizeof a[0], "%d", n);
        snprintf(a[1], sizeof a[1], "%d", channels);
        snprintf(a[2], sizeof a[2], "%d", samples);
        execl(self_path, self_path, "outlet", name, a[0], a[1], a[2], (char *)NULL);
        _exit(127);
    }
    return pid;
}

static int reap(pid_t pid, double seconds)
{
    uint64_t end = core_now_ns() + (uint64_t)(seconds * 1e9);
    int status;
    while (core_now_ns() < end) {
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
        usleep(10000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

static int resolve_one(const char *name, lsl_info *out)
{
    char q[300];
    lsl_query_byprop(q, sizeof q, "name", name);
    lsl_resolve_options ro = {.query = q, .wait_s = 10, .minimum = 1};
    lsl_info *found = NULL;
    int n = 0;
    if (lsl_resolve(&ro, &found, &n) != OMMA_OK || n != 1) {
        fprintf(stderr, "resolve %s: %d found (%s)\n", name, n, omma_last_error());
        lsl_resolve_free(found, n);
        return 0;
    }
    lsl_info_copy(out, &found[0]);
    lsl_resolve_free(found, n);
    return 1;
}

static void test_metadata_samples_time(void)
{
    char name[64];
    snprintf(name, sizeof name, "omma_test_meta_%d", (int)getpid());
    pid_t pid = spawn_outlet(name, 1, META_CHANNELS, META_SAMPLES);
    REQUIRE(pid > 0);
    char sname[80];
    snprintf(sname, sizeof sname, "%s_0", name);
    lsl_info info = {0};
    lsl_inlet *in = NULL;
    if (!resolve_one(sname, &info)) {
        CHECK(0);
        goto out;
    }
    CHECK(strcmp(info.name, sname) == 0);
    CHECK(strcmp(info.type, "Landmark") == 0);
    char sid[100];
    snprintf(sid, sizeof sid, "omma-test:%s:0", name);
    CHECK(strcmp(info.source_id, sid) == 0);
    CHECK(info.nominal_srate == 30 && info.channel_count == META_CHANNELS);
    CHECK(info.format == LSL_FORMAT_FLOAT32);
    CHECK(strcmp(info.session_id, "default") == 0 && info.version == 110);
    CHECK(strcmp(info.v4address, "127.0.0.1") == 0);
    CHECK(info.uid[0] != '\0' && info.desc == NULL); /* shortinfo: no desc */
    if (lsl_inlet_open(&info, 10, &in) != OMMA_OK) {
        fprintf(stderr, "inlet: %s\n", omma_last_error());
        CHECK(0);
        goto out;
    }
    char *labels = NULL;
    int nl = 0;
    CHECK(lsl_info_channel_labels(lsl_inlet_info(in), &labels, &nl) == OMMA_OK);
    CHECK(nl == META_CHANNELS);
    if (nl == META_CHANNELS) {
        const char *l = labels;
        CHECK(strcmp(l, "ch0_x") == 0);
        l += strlen(l) + 1;
        CHECK(strcmp(l, "ch1_y") == 0);
    }
    free(labels);
    CHECK(strcmp(lsl_inlet_info(in)->uid, info.uid) == 0);
    int exact = 1;
    for (int i = 0; i < META_SAMPLES; i++) {
        float v[META_CHANNELS];
        double ts;
        omma_status st = lsl_inlet_pull(in, v, &ts, 10);
        if (st != OMMA_OK) {
            fprintf(stderr, "pull %d: %s\n", i, omma_last_error());
            exact = 0;
            break;
        }
        if (ts != sample_time(i))
            exact = 0;
        for (int k = 0; k < META_CHANNELS; k++)
            if (v[k] != sample_value(0, i, k))
                exact = 0;
    }
    CHECK(exact);
    /* Same machine, same clock: the correction is 0 within 1 ms (the best
     * of 16 probes, so a loaded machine's scheduling does not decide). */
    double corr = 1, rtt = 1;
    omma_status st = lsl_inlet_time_correction(in, 16, 5, &corr, &rtt);
    if (st != OMMA_OK)
        fprintf(stderr, "time correction: %s\n", omma_last_error());
    CHECK(st == OMMA_OK);
    CHECK_NEAR(corr, 0, 1e-3);
    CHECK(rtt >= 0 && rtt < 2e-3);
out:
    lsl_inlet_close(in);
    lsl_info_clear(&info);
    CHECK(reap(pid, 30) == 0);
}

typedef struct bulk_reader {
    lsl_info info;
    int stream;
    int received, bad;
} bulk_reader;

static void *bulk_read(void *arg)
{
    bulk_reader *r = arg;
    lsl_inlet *in = NULL;
    if (lsl_inlet_open(&r->info, 10, &in) != OMMA_OK) {
        fprintf(stderr, "bulk inlet: %s\n", omma_last_error());
        r->bad = 1;
        return NULL;
    }
    float v[BULK_CHANNELS];
    for (int i = 0; i < BULK_SAMPLES; i++) {
        double ts;
        if (lsl_inlet_pull(in, v, &ts, 20) != OMMA_OK) {
            fprintf(stderr, "bulk pull %d: %s\n", i, omma_last_error());
            r->bad = 1;
            break;
        }
        if (ts != sample_time(i) || v[0] != sample_value(r->stream, i, 0) ||
            v[BULK_CHANNELS - 1] != sample_value(r->stream, i, BULK_CHANNELS - 1))
            r->bad = 1;
        r->received++;
    }
    lsl_inlet_close(in);
    return NULL;
}

static void test_ten_minutes_four_streams(void)
{
    char name[64];
    snprintf(name, sizeof name, "omma_test_bulk_%d", (int)getpid());
    pid_t pid = spawn_outlet(name, BULK_STREAMS, BULK_CHANNELS, BULK_SAMPLES);
    REQUIRE(pid > 0);
    bulk_reader r[BULK_STREAMS] = {0};
    pthread_t th[BULK_STREAMS];
    int started = 0;
    for (int i = 0; i < BULK_STREAMS; i++) {
        char sname[80];
        snprintf(sname, sizeof sname, "%s_%d", name, i);
        r[i].stream = i;
        if (!resolve_one(sname, &r[i].info))
            break;
        pthread_create(&th[i], NULL, bulk_read, &r[i]);
        started++;
    }
    CHECK(started == BULK_STREAMS);
    for (int i = 0; i < started; i++) {
        pthread_join(th[i], NULL);
        CHECK(r[i].received == BULK_SAMPLES && !r[i].bad);
        lsl_info_clear(&r[i].info);
    }
    CHECK(reap(pid, 60) == 0); /* the outlet saw 0 lost, all sent */
}

/* --- a consumer that stalls (in this process) --- */

typedef struct good_reader {
    lsl_info info;
    atomic_int received;
    int bad;
    int total;
} good_reader;

static void *good_read(void *arg)
{
    good_reader *g = arg;
    lsl_inlet *in = NULL;
    if (lsl_inlet_open(&g->info, 10, &in) != OMMA_OK) {
        g->bad = 1;
        return NULL;
    }
    float *v = malloc(sizeof *v * 1411);
    for (int i = 0; i < g->total; i++) {
        double ts;
        if (lsl_inlet_pull(in, v, &ts, 10) != OMMA_OK || ts != sample_time(i) ||
            v[7] != sample_value(0, i, 7)) {
            g->bad = 1;
            break;
        }
        atomic_fetch_add(&g->received, 1);
    }
    free(v);
    lsl_inlet_close(in);
    return NULL;
}

static void test_stalled_consumer(void)
{
    lsl_server *s = NULL;
    REQUIRE_OK(lsl_server_create(NULL, &s));
    lsl_info spec = {0};
    snprintf(spec.name, sizeof spec.name, "omma_test_stall_%d", (int)getpid());
    snprintf(spec.type, sizeof spec.type, "Landmark");
    spec.channel_count = 1411;
    spec.format = LSL_FORMAT_FLOAT32;
    spec.nominal_srate = 30;
    lsl_outlet *o = NULL;
    REQUIRE_OK(lsl_outlet_create(s, &spec, 256, &o));
    const lsl_info *oi = lsl_outlet_info(o);
    /* The stalled consumer: a raw socket that asks for the feed, then
     * never reads. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)oi->v4data_port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    CHECK(connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0);
    char req[256];
    int rn = snprintf(req, sizeof req,
                      "LSL:streamfeed/110 %s\r\nValue-Size: 4\r\nMax-Buffer-Length: 100000\r\n\r\n",
                      oi->uid);
    CHECK(send(fd, req, (size_t)rn, 0) == rn);
    lsl_outlet *arr[1] = {o};
    CHECK(wait_consumers(arr, 1, 1, 10));
    /* A good consumer beside it. */
    good_reader g = {.total = 3000};
    lsl_info_copy(&g.info, oi);
    snprintf(g.info.v4address, sizeof g.info.v4address, "127.0.0.1");
    pthread_t th;
    pthread_create(&th, NULL, good_read, &g);
    CHECK(wait_consumers(arr, 1, 2, 10));
    float *v = calloc(1411, sizeof *v);
    int delivered = 1;
    for (int i = 0; i < g.total && delivered; i++) {
        for (int k = 0; k < 1411; k++)
            v[k] = sample_value(0, i, k);
        CHECK(lsl_outlet_push(o, v, sample_time(i)) == OMMA_OK);
        if (i % 100 == 99) {
            /* Each batch reaches the good consumer while the other stalls
             * (a generous bound: it only fails when the outlet is stuck). */
            uint64_t end = core_now_ns() + 10000000000ull;
            while (atomic_load(&g.received) <= i && core_now_ns() < end && !g.bad)
                usleep(500);
            delivered = atomic_load(&g.received) > i;
        }
    }
    CHECK(delivered);
    pthread_join(th, NULL);
    CHECK(!g.bad && atomic_load(&g.received) == g.total);
    lsl_outlet_stats st;
    lsl_outlet_get_stats(o, &st);
    CHECK(st.pushed == (uint64_t)g.total);
    CHECK(st.lost > 0); /* the stalled one fell behind, counted */
    /* It disconnects: the outlet notices. */
    close(fd);
    CHECK(wait_consumers(arr, 1, 0, 10));
    free(v);
    lsl_info_clear(&g.info);
    lsl_outlet_destroy(o);
    lsl_server_destroy(s);
}

/* --- bad or odd peers (in this process) --- */

static int connect_data(const lsl_info *oi)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)oi->v4data_port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    struct timeval tv = {5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Sends req, reads until the outlet closes (or 5 s): the whole answer. */
static size_t ask(const lsl_info *oi, const char *req, char *out, size_t cap)
{
    int fd = connect_data(oi);
    if (fd < 0)
        return 0;
    size_t n = 0;
    if (send(fd, req, strlen(req), 0) == (ssize_t)strlen(req))
        for (;;) {
            ssize_t r = recv(fd, out + n, cap - 1 - n, 0);
            if (r <= 0)
                break;
            n += (size_t)r;
        }
    out[n] = '\0';
    close(fd);
    return n;
}

static void test_bad_peers(void)
{
    lsl_server *s = NULL;
    REQUIRE_OK(lsl_server_create(NULL, &s));
    lsl_outlet *o = NULL;
    char name[64];
    snprintf(name, sizeof name, "omma_test_bad_%d", (int)getpid());
    REQUIRE(make_outlet(s, name, 0, 3, &o));
    const lsl_info *oi = lsl_outlet_info(o);
    static char out[65536];
    char req[256];
    snprintf(req, sizeof req, "LSL:streamfeed/110 not-the-uid\r\nValue-Size: 4\r\n\r\n");
    ask(oi, req, out, sizeof out);
    CHECK(strncmp(out, "LSL/110 404", 11) == 0);
    snprintf(req, sizeof req, "LSL:streamfeed/210 %s\r\n\r\n", oi->uid);
    ask(oi, req, out, sizeof out);
    CHECK(strncmp(out, "LSL/110 505", 11) == 0);
    snprintf(req, sizeof req, "LSL:streamfeed/110 %s\r\nValue-Size: 8\r\n\r\n", oi->uid);
    ask(oi, req, out, sizeof out);
    CHECK(strncmp(out, "LSL/110 505", 11) == 0); /* would need 1.00's conversions */
    CHECK(ask(oi, "LSL:streamfeed\r\n360 0\r\n", out, sizeof out) == 0); /* 1.00: closed */
    CHECK(ask(oi, "GET / HTTP/1.0\r\n\r\n", out, sizeof out) == 0);
    ask(oi, "LSL:fullinfo\r\n", out, sizeof out);
    CHECK(strstr(out, "<label>ch0_x</label>") && strstr(out, oi->uid));
    snprintf(req, sizeof req, "LSL:shortinfo\r\nname='%s_0'\r\n", name);
    ask(oi, req, out, sizeof out);
    CHECK(strstr(out, "<desc />") && strstr(out, oi->uid));
    CHECK(ask(oi, "LSL:shortinfo\r\nname='someone else'\r\n", out, sizeof out) == 0);
    CHECK(ask(oi, "LSL:shortinfo\r\nname=='\r\n", out, sizeof out) == 0);
    /* A feed request of only headers, never ended: dropped at the bound. */
    int fd = connect_data(oi);
    char big[20000];
    memset(big, 'x', sizeof big);
    memcpy(big, "LSL:streamfeed/110 u\r\nX: ", 26);
    send(fd, big, sizeof big, MSG_NOSIGNAL);
    CHECK(recv(fd, out, sizeof out, 0) <= 0);
    close(fd);
    /* More connections than an outlet takes: the extra ones are closed. */
    int fds[80], closed = 0;
    for (int i = 0; i < 80; i++)
        fds[i] = connect_data(oi);
    for (int i = 0; i < 80; i++) {
        struct timeval tv = {0, 300000};
        setsockopt(fds[i], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        if (recv(fds[i], out, 16, 0) == 0)
            closed++;
    }
    CHECK(closed >= 80 - 64);
    for (int i = 0; i < 80; i++)
        close(fds[i]);
    /* Garbage on the UDP ports, then a real client still served. */
    int u = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)oi->v4service_port)};
    inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
    const char *junk[] = {"",
                          "LSL:shortinfo",
                          "LSL:shortinfo\r\n((((\r\n1 2\r\n",
                          "LSL:shortinfo\r\n\r\n99999999 x\r\n",
                          "LSL:timedata\r\nx y\r\n",
                          "\xff\xfe\x00garbage"};
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++)
        sendto(u, junk[i], strlen(junk[i]) + (i == 5 ? 3 : 0), 0, (struct sockaddr *)&sa,
               sizeof sa);
    close(u);
    lsl_info info = {0};
    char sname[80];
    snprintf(sname, sizeof sname, "%s_0", name);
    lsl_inlet *in = NULL;
    if (resolve_one(sname, &info) && lsl_inlet_open(&info, 5, &in) == OMMA_OK) {
        float v[3] = {1, 2, 3}, got[3];
        double ts;
        lsl_outlet_push(o, v, 42.5);
        CHECK(lsl_inlet_pull(in, got, &ts, 5) == OMMA_OK && ts == 42.5 && got[2] == 3);
        double corr, rtt;
        CHECK(lsl_inlet_time_correction(in, 4, 5, &corr, &rtt) == OMMA_OK);
    } else {
        CHECK(0);
    }
    lsl_inlet_close(in);
    lsl_info_clear(&info);
    lsl_outlet_destroy(o);
    lsl_server_destroy(s);
}

int main(int argc, char **argv)
{
    signal(SIGPIPE, SIG_IGN);
    ssize_t n = readlink("/proc/self/exe", self_path, sizeof self_path - 1);
    if (n <= 0)
        return 2;
    self_path[n] = '\0';
    if (argc == 6 && strcmp(argv[1], "outlet") == 0)
        return outlet_main(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
    RUN(test_metadata_samples_time);
    RUN(test_stalled_consumer);
    RUN(test_bad_peers);
    RUN(test_ten_minutes_four_streams);
    return testing_finish();
}
