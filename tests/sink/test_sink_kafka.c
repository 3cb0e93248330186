#define _POSIX_C_SOURCE 200809L
/* The Kafka sink against librdkafka's mock cluster (rdkafka_mock.h: three
 * brokers speaking the Kafka protocol on loopback sockets): every message
 * of three cameras arrives at a consumer, in order per camera and keyed by
 * it; a broker taken down mid-run loses nothing acknowledged; an
 * unreachable cluster fills the bounded backlog and the drops are counted.
 * Exits 77 in a build without librdkafka. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sink/sink.h"
#include "testing.h"

#if OMMA_HAVE_RDKAFKA
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#define CAMERAS 3
#define PARTITIONS 3

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

/* A producer handle that only hosts the mock cluster. */
typedef struct mock {
    rd_kafka_t *rk;
    rd_kafka_mock_cluster_t *mc;
    char bootstraps[512];
} mock;

static int mock_start(mock *m, const char *topic)
{
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "log_level", "0", err, sizeof err);
    m->rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
    if (!m->rk)
        return 0;
    m->mc = rd_kafka_mock_cluster_new(m->rk, 3);
    if (!m->mc)
        return 0;
    snprintf(m->bootstraps, sizeof m->bootstraps, "%s", rd_kafka_mock_cluster_bootstraps(m->mc));
    return rd_kafka_mock_topic_create(m->mc, topic, PARTITIONS, 3) == RD_KAFKA_RESP_ERR_NO_ERROR;
}

static void mock_stop(mock *m)
{
    if (m->mc)
        rd_kafka_mock_cluster_destroy(m->mc);
    if (m->rk)
        rd_kafka_destroy(m->rk);
}

static void publish(sink *k, int camera, uint64_t seq)
{
    char name[16], body[128];
    snprintf(name, sizeof name, "cam%d", camera);
    int n = snprintf(body, sizeof body, "{\"camera\":%d,\"seq\":%llu}", camera,
                     (unsigned long long)seq);
    sink_message msg = {camera, name, seq, body, (size_t)n, 0};
    omma_status st = sink_publish(k, &msg);
    if (st != OMMA_OK)
        fprintf(stderr, "sink_publish: %s\n", omma_last_error());
}

/* Reads every partition from the start until `want` messages came or 20 s
 * passed; checks keys match the cameras and each camera's seqs run 1..n in
 * order. Returns the count read; got[c] the last seq of camera c. */
static int consume(const mock *m, const char *topic, int want, uint64_t got[CAMERAS], int *disorder)
{
    char err[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", m->bootstraps, err, sizeof err);
    rd_kafka_conf_set(conf, "group.id", "omma-test", err, sizeof err);
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err);
    if (getenv("DEBUG_KAFKA"))
        rd_kafka_conf_set(conf, "debug", getenv("DEBUG_KAFKA"), err, sizeof err);
    rd_kafka_t *c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!c) {
        fprintf(stderr, "consumer: %s\n", err);
        return -1;
    }
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(PARTITIONS);
    for (int p = 0; p < PARTITIONS; p++)
        rd_kafka_topic_partition_list_add(parts, topic, p)->offset = RD_KAFKA_OFFSET_BEGINNING;
    rd_kafka_assign(c, parts);
    rd_kafka_topic_partition_list_destroy(parts);
    int n = 0, partition_of[CAMERAS];
    for (int i = 0; i < CAMERAS; i++) {
        got[i] = 0;
        partition_of[i] = -1;
    }
    *disorder = 0;
    for (int idle = 0; n < want && idle < 200;) { /* 20 s without a message: give up */
        rd_kafka_message_t *msg = rd_kafka_consumer_poll(c, 100);
        if (!msg) {
            idle++;
            continue;
        }
        if (!msg->err) {
            int cam = -1;
            unsigned long long seq = 0;
            char body[128];
            snprintf(body, sizeof body, "%.*s", (int)msg->len, (const char *)msg->payload);
            char key[16];
            snprintf(key, sizeof key, "%.*s", (int)msg->key_len, (const char *)msg->key);
            if (sscanf(body, "{\"camera\":%d,\"seq\":%llu}", &cam, &seq) == 2 && cam >= 0 &&
                cam < CAMERAS) {
                char want_key[16];
                snprintf(want_key, sizeof want_key, "cam%d", cam);
                if (strcmp(key, want_key) || seq != got[cam] + 1 ||
                    (partition_of[cam] >= 0 && partition_of[cam] != msg->partition)) {
                    if (*disorder < 5)
                        fprintf(stderr, "camera %d: seq %llu after %llu, key %s, partition %d\n",
                                cam, seq, (unsigned long long)got[cam], key, msg->partition);
                    (*disorder)++;
                }
                partition_of[cam] = msg->partition;
                got[cam] = seq > got[cam] ? seq : got[cam];
                n++;
            }
        } else if (getenv("DEBUG_KAFKA"))
            fprintf(stderr, "consumer: %s\n", rd_kafka_message_errstr(msg));
        rd_kafka_message_destroy(msg);
    }
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
    return n;
}

static void test_in_order_per_camera(void)
{
    mock m = {0};
    REQUIRE(mock_start(&m, "faces"));
    char url[700];
    snprintf(url, sizeof url, "kafka://%s/faces?log_level=0", m.bootstraps);
    sink *k = NULL;
    sink_options o = {"lab", "n1", 0, 0, 0, NULL, NULL};
    omma_status st = sink_open(url, &o, &k);
    if (st != OMMA_OK)
        fprintf(stderr, "%s\n", omma_last_error());
    CHECK(st == OMMA_OK);
    if (k) {
        CHECK(sink_get_kind(k) == SINK_KAFKA);
        for (uint64_t seq = 1; seq <= 200; seq++)
            for (int c = 0; c < CAMERAS; c++)
                publish(k, c, seq);
        CHECK(sink_flush(k, 20000) == OMMA_OK);
        sink_stats s;
        sink_close(k, 1000, &s);
        CHECK(s.published == 600);
        CHECK(s.acked == 600);
        CHECK(s.dropped == 0);
        CHECK(s.failed == 0);
        uint64_t got[CAMERAS];
        int disorder = 0;
        CHECK(consume(&m, "faces", 600, got, &disorder) == 600);
        CHECK(disorder == 0);
        for (int c = 0; c < CAMERAS; c++)
            CHECK(got[c] == 200);
    }
    mock_stop(&m);
}

static void test_broker_down(void)
{
    mock m = {0};
    REQUIRE(mock_start(&m, "faces"));
    char url[700];
    snprintf(url, sizeof url, "kafka://%s/faces?log_level=0", m.bootstraps);
    sink *k = NULL;
    REQUIRE_OK(sink_open(url, NULL, &k));
    uint64_t seq = 1;
    for (; seq <= 100; seq++)
        for (int c = 0; c < CAMERAS; c++)
            publish(k, c, seq);
    sink_stats before;
    for (int i = 0; i < 100; i++) { /* the first 300 acknowledged, then a broker goes */
        sink_get_stats(k, &before);
        if (before.acked == 300)
            break;
        sleep_ms(50);
    }
    CHECK(before.acked == 300);
    rd_kafka_mock_broker_set_down(m.mc, 1); /* mid-run */
    for (; seq <= 200; seq++) {
        for (int c = 0; c < CAMERAS; c++)
            publish(k, c, seq);
        if (seq % 20 == 0)
            sleep_ms(50);
    }
    sleep_ms(500);
    sink_stats mid;
    sink_get_stats(k, &mid);
    rd_kafka_mock_broker_set_up(m.mc, 1);
    for (; seq <= 300; seq++)
        for (int c = 0; c < CAMERAS; c++)
            publish(k, c, seq);
    CHECK(sink_flush(k, 30000) == OMMA_OK);
    sink_stats s;
    sink_close(k, 1000, &s);
    fprintf(stderr, "broker down: %llu acked before it came back, %llu in the end of %llu\n",
            (unsigned long long)mid.acked, (unsigned long long)s.acked,
            (unsigned long long)s.published);
    CHECK(s.published == 900);
    CHECK(s.dropped == 0);
    CHECK(s.acked >= 900);
    uint64_t got[CAMERAS];
    int disorder = 0;
    int n = consume(&m, "faces", 900, got, &disorder);
    CHECK(n >= 900); /* everything acknowledged is there */
    CHECK(disorder == 0);
    for (int c = 0; c < CAMERAS; c++)
        CHECK(got[c] == 300);
    mock_stop(&m);
}

static void test_unreachable_backlog(void)
{
    /* A port where no broker listens: nothing is ever acknowledged. */
    sink *k = NULL;
    REQUIRE_OK(sink_open("kafka://127.0.0.1:1/faces?backlog=100&window=10&log_level=0", NULL, &k));
    for (uint64_t seq = 1; seq <= 500; seq++)
        publish(k, 0, seq);
    sleep_ms(300);
    sink_stats s;
    sink_get_stats(k, &s);
    fprintf(stderr,
            "unreachable: %llu published, %llu in the backlog, %llu in flight, %llu dropped, "
            "%llu failed\n",
            (unsigned long long)s.published, (unsigned long long)s.backlog,
            (unsigned long long)s.inflight, (unsigned long long)s.dropped,
            (unsigned long long)s.failed);
    CHECK(s.published == 500);
    CHECK(s.acked == 0);
    CHECK(s.backlog >= 90 && s.backlog <= 100); /* the sender may take some after */
    CHECK(s.inflight <= 10);
    CHECK(s.dropped >= 390);
    CHECK(s.backlog + s.inflight + s.dropped == 500);
    sink_stats end;
    sink_close(k, 0, &end);
    CHECK(end.dropped == 500); /* nothing delivered: every message counted lost */
    CHECK(end.acked == 0);
}

int main(void)
{
    RUN(test_in_order_per_camera);
    RUN(test_broker_down);
    RUN(test_unreachable_backlog);
    return testing_finish();
}

#else

int main(void)
{
    fprintf(stderr, "SKIP: built without librdkafka\n");
    return 77;
}

#endif
