#define _POSIX_C_SOURCE 200809L /* posix_spawnp, nanosleep, mkdtemp */
/* omma bench sink: each result sink on loopback. It starts its servers
 * (nats-server with JetStream and mosquitto from PATH or /usr/sbin on free
 * ports; for Kafka librdkafka's mock cluster, in this process), then per
 * sink:
 *   throughput: N messages published as fast as the backlog takes them,
 *     until all are acknowledged: messages/s, and the process's CPU time per
 *     message (the sink's thread, the library's threads, the publisher; for
 *     Kafka the mock brokers too, since they run in this process);
 *   latency: messages at a steady rate, each stamped with the wall clock
 *     when published (sink_publish: where omma stream hands a frame's
 *     result over), received by a subscriber in this process (a core NATS
 *     subscription, a libmosquitto QoS 1 subscription, a Kafka consumer):
 *     p50/p99 from publish to subscriber. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/args.h"
#include "cli/bench.h"
#include "cli/commands.h"
#include "core/clock.h"
#include "sink/sink.h"

#if OMMA_HAVE_NATS
#include <nats/nats.h>
#endif
#if OMMA_HAVE_MOSQUITTO
#include <mosquitto.h>
#endif
#if OMMA_HAVE_RDKAFKA
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#endif

extern char **environ;

enum { ROW_NATS, ROW_NATS_DEDUP, ROW_NATS_CORE, ROW_MQTT, ROW_KAFKA, ROWS };
static const char *const row_names[ROWS] = {"nats", "nats-dedup", "nats-core", "mqtt", "kafka"};
/* The NATS rows' sink options. */
static const char *const nats_params[ROWS] = {
    [ROW_NATS] = "", [ROW_NATS_DEDUP] = "?dedup=1", [ROW_NATS_CORE] = "?jetstream=0"};

enum { OPT_KINDS, OPT_MESSAGES, OPT_SIZE, OPT_CAMERAS, OPT_RATE, OPT_SECONDS, OPT_JSON };

static const cli_option options[] = {
    [OPT_KINDS] = {"--kinds", "LIST",
                   "sinks to measure: nats,nats-dedup,nats-core,mqtt,kafka\n"
                   "(default all built in); nats-dedup: JetStream with\n"
                   "Nats-Msg-Id headers (dedup=1); nats-core: core NATS\n"
                   "publishes, no acks (jetstream=0)"},
    [OPT_MESSAGES] = {"--messages", "N", "throughput: messages (default 200000)"},
    [OPT_SIZE] = {"--size", "B",
                  "bytes per message, 64..65536 (default 400: a frame without\n"
                  "faces is ~200, one face with landmarks ~10000)"},
    [OPT_CAMERAS] = {"--cameras", "C", "cameras the messages cycle over (default 100)"},
    [OPT_RATE] = {"--rate", "R", "latency: messages per second (default 3000)"},
    [OPT_SECONDS] = {"--seconds", "S", "latency: seconds (default 3)"},
    [OPT_JSON] = {"--json", NULL, "the table on stderr, one JSON line per sink on stdout"},
    {NULL, NULL, NULL},
};

static void usage(FILE *to)
{
    fprintf(to, "usage: omma bench sink [--kinds nats,mqtt,kafka] [--messages N] [--size B]\n"
                "                       [--cameras C] [--rate R] [--seconds S] [--json]\n"
                "  each result sink on loopback (servers started here: nats-server,\n"
                "  mosquitto; Kafka: librdkafka's mock cluster in this process): messages/s\n"
                "  and CPU us per message until all are acknowledged; p50/p99 from\n"
                "  publish to a subscriber at a steady rate.\n");
    cli_print_options(to, options);
}

typedef struct bench_opts {
    int rows[ROWS]; /* ROW_*: which to measure */
    int messages, size, cameras, rate;
    double seconds;
    int json;
} bench_opts;

#if OMMA_HAVE_NATS || OMMA_HAVE_MOSQUITTO || OMMA_HAVE_RDKAFKA
/* Helpers of the brokers' benches (none without a broker library). */
static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

static uint64_t unix_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockname(fd, (struct sockaddr *)&a, &n) == 0)
        port = ntohs(a.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

/* Waits until something accepts on 127.0.0.1:port (5 s). */
static int wait_port(int port)
{
    for (int i = 0; i < 250; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {0};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a.sin_port = htons((uint16_t)port);
        int ok = fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
        if (fd >= 0)
            close(fd);
        if (ok)
            return 1;
        sleep_us(20000);
    }
    return 0;
}

/* Starts argv[0] (from PATH, else /usr/sbin) with its output to /dev/null. */
static pid_t spawn(char *const argv[])
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", 1 /* O_WRONLY */, 0);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", 1, 0);
    pid_t pid = -1;
    if (posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ) != 0) {
        char path[256];
        snprintf(path, sizeof path, "/usr/sbin/%s", argv[0]);
        if (posix_spawn(&pid, path, &fa, NULL, argv, environ) != 0)
            pid = -1;
    }
    posix_spawn_file_actions_destroy(&fa);
    return pid;
}

static void stop(pid_t pid)
{
    if (pid > 0) {
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
    }
}

/* ---- Subscribers: each puts the latency of every message it gets -------- */
#endif

typedef struct latencies {
    pthread_mutex_t lock;
    double *ms;
    size_t n, cap;
} latencies;

#if OMMA_HAVE_NATS || OMMA_HAVE_MOSQUITTO || OMMA_HAVE_RDKAFKA
static void record(latencies *l, const void *data, size_t len)
{
    uint64_t now = unix_ns();
    char buf[128];
    size_t n = len < sizeof buf - 1 ? len : sizeof buf - 1;
    memcpy(buf, data, n);
    buf[n] = 0;
    const char *p = strstr(buf, "\"capture_unix_ns\":");
    if (!p)
        return;
    uint64_t t = strtoull(p + 18, NULL, 10);
    pthread_mutex_lock(&l->lock);
    if (l->n < l->cap)
        l->ms[l->n++] = (double)(int64_t)(now - t) / 1e6;
    pthread_mutex_unlock(&l->lock);
}
#endif

typedef struct subscriber {
    sink_kind kind;
    latencies *lat;
#if OMMA_HAVE_NATS
    natsConnection *nc;
    natsSubscription *sub;
#endif
#if OMMA_HAVE_MOSQUITTO
    struct mosquitto *mosq;
    atomic_int subscribed;
#endif
#if OMMA_HAVE_RDKAFKA
    rd_kafka_t *consumer;
    pthread_t thread;
    atomic_int stop;
#endif
} subscriber;

#if OMMA_HAVE_NATS
static void on_nats(natsConnection *nc, natsSubscription *sub, natsMsg *msg, void *closure)
{
    (void)nc;
    (void)sub;
    subscriber *s = closure;
    record(s->lat, natsMsg_GetData(msg), (size_t)natsMsg_GetDataLength(msg));
    natsMsg_Destroy(msg);
}
#endif

#if OMMA_HAVE_MOSQUITTO
static void on_mqtt(struct mosquitto *m, void *obj, const struct mosquitto_message *msg)
{
    (void)m;
    subscriber *s = obj;
    record(s->lat, msg->payload, (size_t)msg->payloadlen);
}

static void on_mqtt_subscribe(struct mosquitto *m, void *obj, int mid, int n, const int *qos)
{
    (void)m;
    (void)mid;
    (void)n;
    (void)qos;
    subscriber *s = obj;
    atomic_store(&s->subscribed, 1);
}
#endif

#if OMMA_HAVE_RDKAFKA
static void *kafka_consume(void *arg)
{
    subscriber *s = arg;
    while (!atomic_load(&s->stop)) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(s->consumer, 50);
        if (!m)
            continue;
        if (!m->err)
            record(s->lat, m->payload, m->len);
        rd_kafka_message_destroy(m);
    }
    return NULL;
}
#endif

/* ---- One sink ----------------------------------------------------------- */

typedef struct result {
    double msgs_per_s, cpu_us_per_msg, p50_ms, p99_ms;
    uint64_t acked, dropped, received, sent_latency;
} result;

#if OMMA_HAVE_NATS || OMMA_HAVE_MOSQUITTO || OMMA_HAVE_RDKAFKA
static void fill_message(char *buf, int size, int camera, uint64_t seq, uint64_t t)
{
    int n = snprintf(buf, (size_t)size + 1,
                     "{\"camera\":%d,\"seq\":%llu,\"capture_unix_ns\":%llu,\"faces\":[", camera,
                     (unsigned long long)seq, (unsigned long long)t);
    for (int i = n; i < size - 2; i++)
        buf[i] = ' ';
    if (size >= n + 2)
        memcpy(buf + size - 2, "]}", 2);
    buf[size] = 0;
}

static int throughput(const char *url, const bench_opts *o, result *r)
{
    sink *k = NULL;
    omma_status st = sink_open(url, NULL, &k);
    if (st != OMMA_OK) {
        fprintf(stderr, "omma: error: %s\n", omma_last_error());
        return 0;
    }
    char *buf = malloc((size_t)o->size + 1);
    uint64_t *seq = calloc((size_t)o->cameras, sizeof *seq);
    if (!buf || !seq) {
        free(buf);
        free(seq);
        sink_close(k, 0, NULL);
        return 0;
    }
    fill_message(buf, o->size, 0, 0, 0); /* stamps do not matter here */
    uint64_t t0 = core_now_ns(), c0 = core_process_cpu_ns();
    for (int i = 0; i < o->messages; i++) {
        int cam = i % o->cameras;
        sink_message m = {cam, NULL, ++seq[cam], buf, (size_t)o->size, 0};
        if ((i & 255) == 0) { /* keep the backlog from dropping: wait for room */
            sink_stats s;
            sink_get_stats(k, &s);
            /* Down to half of it, in naps of 5 ms (4000 messages take
             * 20 ms at 200k msgs/s: the sink never runs dry): the
             * publisher's waiting is not the sink's cost (at 100 us naps
             * it was over 1 us a message, at 1 ms naps ~0.2 us). */
            if (s.backlog > 8000)
                for (; s.backlog > 4000; sink_get_stats(k, &s))
                    sleep_us(5000);
        }
        sink_publish(k, &m);
    }
    omma_status fl = sink_flush(k, 120000);
    uint64_t t1 = core_now_ns(), c1 = core_process_cpu_ns();
    sink_stats s;
    sink_close(k, 0, &s);
    free(buf);
    free(seq);
    r->msgs_per_s = (double)o->messages / ((double)(t1 - t0) / 1e9);
    r->cpu_us_per_msg = (double)(c1 - c0) / 1e3 / (double)o->messages;
    r->acked = s.acked;
    r->dropped = s.dropped;
    return fl == OMMA_OK;
}

static int latency(const char *url, subscriber *sub, const bench_opts *o, result *r)
{
    sink *k = NULL;
    if (sink_open(url, NULL, &k) != OMMA_OK) {
        fprintf(stderr, "omma: error: %s\n", omma_last_error());
        return 0;
    }
    char *buf = malloc((size_t)o->size + 1);
    uint64_t *seq = calloc((size_t)o->cameras, sizeof *seq);
    int total = (int)(o->rate * o->seconds);
    if (!buf || !seq) {
        free(buf);
        free(seq);
        sink_close(k, 0, NULL);
        return 0;
    }
    /* A first message until the subscriber gets one (Kafka's consumer
     * finds its partitions' ends late), then the measured ones. */
    for (int i = 0; i < 100; i++) {
        fill_message(buf, o->size, 0, 0, unix_ns());
        sink_message warm = {0, NULL, 0, buf, (size_t)o->size, 0};
        sink_publish(k, &warm);
        sleep_us(100000);
        pthread_mutex_lock(&sub->lat->lock);
        size_t got = sub->lat->n;
        sub->lat->n = 0;
        pthread_mutex_unlock(&sub->lat->lock);
        if (got)
            break;
    }
    sink_flush(k, 10000);
    sleep_us(200000);
    pthread_mutex_lock(&sub->lat->lock);
    sub->lat->n = 0;
    pthread_mutex_unlock(&sub->lat->lock);
    uint64_t start = core_now_ns(), period = (uint64_t)(1e9 / o->rate);
    for (int i = 0; i < total; i++) {
        uint64_t due = start + (uint64_t)i * period, now = core_now_ns();
        if (due > now)
            sleep_us((long)((due - now) / 1000));
        int cam = i % o->cameras;
        fill_message(buf, o->size, cam, ++seq[cam], unix_ns());
        sink_message m = {cam, NULL, seq[cam], buf, (size_t)o->size, 0};
        sink_publish(k, &m);
    }
    sink_flush(k, 30000);
    for (int i = 0; i < 100; i++) { /* the subscriber's last ones */
        pthread_mutex_lock(&sub->lat->lock);
        size_t n = sub->lat->n;
        pthread_mutex_unlock(&sub->lat->lock);
        if (n >= (size_t)total)
            break;
        sleep_us(20000);
    }
    sink_close(k, 1000, NULL);
    free(buf);
    free(seq);
    pthread_mutex_lock(&sub->lat->lock);
    r->received = sub->lat->n;
    r->sent_latency = (uint64_t)total;
    r->p50_ms = cli_percentile(sub->lat->ms, sub->lat->n, 0.5);
    r->p99_ms = cli_percentile(sub->lat->ms, sub->lat->n, 0.99);
    pthread_mutex_unlock(&sub->lat->lock);
    return r->received > 0;
}
#endif

static void report(const bench_opts *o, const char *kind, const result *r)
{
    fprintf(stderr, "%-9s %10.0f %12.2f %10.3f %10.3f %9llu/%llu %8llu\n", kind, r->msgs_per_s,
            r->cpu_us_per_msg, r->p50_ms, r->p99_ms, (unsigned long long)r->received,
            (unsigned long long)r->sent_latency, (unsigned long long)r->dropped);
    if (o->json)
        printf("{\"bench\":\"sink\",\"kind\":\"%s\",\"messages\":%d,\"size\":%d,\"cameras\":%d,"
               "\"msgs_per_s\":%.0f,\"cpu_us_per_msg\":%.3f,\"dropped\":%llu,\"latency_rate\":%d,"
               "\"latency_p50_ms\":%.3f,\"latency_p99_ms\":%.3f,\"received\":%llu}\n",
               kind, o->messages, o->size, o->cameras, r->msgs_per_s, r->cpu_us_per_msg,
               (unsigned long long)r->dropped, o->rate, r->p50_ms, r->p99_ms,
               (unsigned long long)r->received);
}

/* ---- The three kinds ---------------------------------------------------- */

static int bench_nats(const bench_opts *o, latencies *lat, result *r, const char *params)
{
#if OMMA_HAVE_NATS
    int port = free_port();
    char dir[] = "/tmp/omma-bench-nats-XXXXXX", portstr[16];
    if (port < 0 || !mkdtemp(dir))
        return 0;
    snprintf(portstr, sizeof portstr, "%d", port);
    char *argv[] = {"nats-server", "-a", "127.0.0.1", "-p", portstr, "-js", "-sd", dir, NULL};
    pid_t pid = spawn(argv);
    int ok = pid > 0 && wait_port(port);
    if (!ok)
        fprintf(stderr, "omma: error: cannot start nats-server (Debian's nats-server)\n");
    char url[128];
    snprintf(url, sizeof url, "nats://127.0.0.1:%d", port);
    subscriber sub = {.kind = SINK_NATS, .lat = lat};
    jsCtx *js = NULL;
    if (ok) {
        ok = natsConnection_ConnectTo(&sub.nc, url) == NATS_OK &&
             natsConnection_JetStream(&js, sub.nc, NULL) == NATS_OK;
        jsStreamConfig cfg;
        jsStreamConfig_Init(&cfg);
        const char *subjects[] = {"bench.>"};
        cfg.Name = "BENCH";
        cfg.Subjects = subjects;
        cfg.SubjectsLen = 1;
        cfg.Storage = js_MemoryStorage;
        cfg.MaxMsgs = 100000;
        jsStreamInfo *si = NULL;
        ok = ok && js_AddStream(&si, js, &cfg, NULL, NULL) == NATS_OK;
        jsStreamInfo_Destroy(si);
        if (!ok)
            fprintf(stderr, "omma: error: nats-server at %s: no JetStream stream\n", url);
    }
    char sink_url[160];
    snprintf(sink_url, sizeof sink_url, "%s/bench%s", url, params);
    ok = ok && throughput(sink_url, o, r);
    ok = ok && natsConnection_Subscribe(&sub.sub, sub.nc, "bench.>", on_nats, &sub) == NATS_OK;
    ok = ok && latency(sink_url, &sub, o, r);
    natsSubscription_Destroy(sub.sub);
    jsCtx_Destroy(js);
    natsConnection_Destroy(sub.nc);
    stop(pid);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    (void)!system(cmd);
    return ok;
#else
    (void)o, (void)lat, (void)r, (void)params;
    fprintf(stderr, "omma: error: built without libnats\n");
    return 0;
#endif
}

static int bench_mqtt(const bench_opts *o, latencies *lat, result *r)
{
#if OMMA_HAVE_MOSQUITTO
    int port = free_port();
    char conf[] = "/tmp/omma-bench-mqtt-XXXXXX";
    int fd = mkstemp(conf);
    if (port < 0 || fd < 0)
        return 0;
    char text[128];
    int n = snprintf(text, sizeof text, "listener %d 127.0.0.1\nallow_anonymous true\n", port);
    ssize_t w = write(fd, text, (size_t)n);
    close(fd);
    char *argv[] = {"mosquitto", "-c", conf, NULL};
    pid_t pid = w == n ? spawn(argv) : -1;
    int ok = pid > 0 && wait_port(port);
    if (!ok)
        fprintf(stderr, "omma: error: cannot start mosquitto (Debian's mosquitto)\n");
    char url[128];
    snprintf(url, sizeof url, "mqtt://127.0.0.1:%d/bench?qos=1", port);
    ok = ok && throughput(url, o, r);
    subscriber sub = {.kind = SINK_MQTT, .lat = lat};
    sub.mosq = ok ? mosquitto_new(NULL, true, &sub) : NULL;
    if (sub.mosq) {
        mosquitto_message_callback_set(sub.mosq, on_mqtt);
        mosquitto_subscribe_callback_set(sub.mosq, on_mqtt_subscribe);
        ok = mosquitto_connect(sub.mosq, "127.0.0.1", port, 30) == MOSQ_ERR_SUCCESS &&
             mosquitto_loop_start(sub.mosq) == MOSQ_ERR_SUCCESS &&
             mosquitto_subscribe(sub.mosq, NULL, "bench/#", 1) == MOSQ_ERR_SUCCESS;
        for (int i = 0; ok && i < 250 && !atomic_load(&sub.subscribed); i++)
            sleep_us(20000);
        ok = ok && latency(url, &sub, o, r);
        mosquitto_disconnect(sub.mosq);
        mosquitto_loop_stop(sub.mosq, true);
        mosquitto_destroy(sub.mosq);
    }
    stop(pid);
    unlink(conf);
    return ok;
#else
    (void)o, (void)lat, (void)r;
    fprintf(stderr, "omma: error: built without libmosquitto\n");
    return 0;
#endif
}

static int bench_kafka(const bench_opts *o, latencies *lat, result *r)
{
#if OMMA_HAVE_RDKAFKA
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "0", err, sizeof err);
    rd_kafka_t *host = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    rd_kafka_mock_cluster_t *mc = host ? rd_kafka_mock_cluster_new(host, 3) : NULL;
    int ok = mc && rd_kafka_mock_topic_create(mc, "bench", 3, 3) == RD_KAFKA_RESP_ERR_NO_ERROR;
    char url[600];
    if (ok)
        snprintf(url, sizeof url, "kafka://%s/bench?log_level=0",
                 rd_kafka_mock_cluster_bootstraps(mc));
    ok = ok && throughput(url, o, r);
    subscriber sub = {.kind = SINK_KAFKA, .lat = lat};
    if (ok) {
        conf = rd_kafka_conf_new();
        rd_kafka_conf_set(conf, "bootstrap.servers", rd_kafka_mock_cluster_bootstraps(mc), err,
                          sizeof err);
        rd_kafka_conf_set(conf, "group.id", "omma-bench", err, sizeof err);
        rd_kafka_conf_set(conf, "fetch.wait.max.ms", "5", err, sizeof err);
        rd_kafka_conf_set(conf, "log_level", "0", err, sizeof err);
        sub.consumer = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
        ok = sub.consumer != NULL;
    }
    if (ok) {
        rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(3);
        for (int p = 0; p < 3; p++)
            rd_kafka_topic_partition_list_add(parts, "bench", p)->offset = RD_KAFKA_OFFSET_END;
        rd_kafka_assign(sub.consumer, parts);
        rd_kafka_topic_partition_list_destroy(parts);
        ok = pthread_create(&sub.thread, NULL, kafka_consume, &sub) == 0;
        if (ok) {
            ok = latency(url, &sub, o, r);
            atomic_store(&sub.stop, 1);
            pthread_join(sub.thread, NULL);
        }
        rd_kafka_consumer_close(sub.consumer);
        rd_kafka_destroy(sub.consumer);
    }
    if (mc)
        rd_kafka_mock_cluster_destroy(mc);
    if (host)
        rd_kafka_destroy(host);
    return ok;
#else
    (void)o, (void)lat, (void)r;
    fprintf(stderr, "omma: error: built without librdkafka\n");
    return 0;
#endif
}

int cli_bench_sink(int argc, char **argv)
{
    bench_opts o = {{0}, 200000, 400, 100, 3000, 3.0, 0};
    int any_kind = 0;
    cli_args args;
    cli_args_init(&args, "bench sink", options, argc, argv);
    const cli_option *opt;
    const char *v;
    for (cli_arg_kind k; (k = cli_next(&args, &opt, &v)) != CLI_ARG_END;) {
        if (k == CLI_ARG_HELP) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        if (k == CLI_ARG_ERROR)
            return CLI_EXIT_USAGE;
        if (k == CLI_ARG_POSITIONAL)
            return cli_usage_error("bench sink", "unexpected argument");
        int id = (int)(opt - options), bad = 0;
        if (id == OPT_JSON) {
            o.json = 1;
        } else if (id == OPT_KINDS) {
            char buf[64];
            snprintf(buf, sizeof buf, "%s", v);
            for (char *t = strtok(buf, ","); t && !bad; t = strtok(NULL, ",")) {
                int found = 0;
                for (int i = 0; i < ROWS; i++)
                    if (!strcmp(t, row_names[i]))
                        o.rows[i] = found = 1;
                bad = !found;
            }
            any_kind = 1;
        } else if (id == OPT_MESSAGES) {
            bad = cli_parse_int(v, 1, 100000000, &o.messages);
        } else if (id == OPT_SIZE) {
            bad = cli_parse_int(v, 64, 65536, &o.size);
        } else if (id == OPT_CAMERAS) {
            bad = cli_parse_int(v, 1, 100000, &o.cameras);
        } else if (id == OPT_RATE) {
            bad = cli_parse_int(v, 1, 1000000, &o.rate);
        } else if (id == OPT_SECONDS) {
            int s = 0;
            bad = cli_parse_int(v, 1, 3600, &s);
            o.seconds = s;
        }
        if (bad) {
            fprintf(stderr, "omma: error: %s %s: bad value\n", opt->name, v);
            return cli_see_help("bench sink");
        }
    }
    if (!any_kind) { /* those built in */
#if OMMA_HAVE_NATS
        o.rows[ROW_NATS] = o.rows[ROW_NATS_DEDUP] = o.rows[ROW_NATS_CORE] = 1;
#endif
#if OMMA_HAVE_MOSQUITTO
        o.rows[ROW_MQTT] = 1;
#endif
#if OMMA_HAVE_RDKAFKA
        o.rows[ROW_KAFKA] = 1;
#endif
    }
    fprintf(stderr,
            "omma bench sink: %d messages of %d bytes over %d cameras; latency at %d msg/s for "
            "%.0f s\n%-9s %10s %12s %10s %10s %13s %8s\n",
            o.messages, o.size, o.cameras, o.rate, o.seconds, "sink", "msgs/s", "CPU us/msg",
            "p50 ms", "p99 ms", "received", "dropped");
    int rc = CLI_EXIT_OK;
    for (int row = 0; row < ROWS; row++) {
        if (!o.rows[row])
            continue;
        latencies lat = {.cap = (size_t)(o.rate * o.seconds) + 16};
        pthread_mutex_init(&lat.lock, NULL);
        lat.ms = calloc(lat.cap, sizeof *lat.ms);
        result r = {0};
        int ok = lat.ms && (nats_params[row]  ? bench_nats(&o, &lat, &r, nats_params[row])
                            : row == ROW_MQTT ? bench_mqtt(&o, &lat, &r)
                                              : bench_kafka(&o, &lat, &r));
        if (ok)
            report(&o, row_names[row], &r);
        else
            rc = CLI_EXIT_ERROR;
        free(lat.ms);
        pthread_mutex_destroy(&lat.lock);
    }
    return rc;
}
