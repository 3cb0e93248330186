#define _POSIX_C_SOURCE 200809L
/* Sinks given bad input: malformed URLs, unknown schemes and options, bad
 * ports, subjects and topics too long or with characters the system
 * refuses, servers that are not there. Each error names the sink (its
 * URL, without the password) and what is wrong. The NATS and MQTT cases
 * that need their library skip themselves in a build without it. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "sink/sink.h"
#include "sink/sink_private.h"
#include "testing.h"

static void check_open_fails(const char *url, omma_status want, const char *text)
{
    sink *k = (sink *)1;
    omma_status st = sink_open(url, NULL, &k);
    if (st != want || !strstr(omma_last_error(), text) || k != NULL) {
        fprintf(stderr, "sink_open(%s): %s \"%s\" (want %s with \"%s\")\n", url,
                omma_status_str(st), omma_last_error(), omma_status_str(want), text);
        testing_case_failed = 1;
        if (st == OMMA_OK)
            sink_close(k, 0, NULL);
    }
}

static void test_malformed_urls(void)
{
    check_open_fails("nats:/localhost", OMMA_ERR_INVALID_ARG, "sink nats:/localhost: not a URL");
    check_open_fails("amqp://localhost/x", OMMA_ERR_UNSUPPORTED, "unknown scheme 'amqp'");
    check_open_fails("nats:///subject", OMMA_ERR_INVALID_ARG, "no host");
    check_open_fails("nats://h:0/x", OMMA_ERR_INVALID_ARG, "bad port '0'");
    check_open_fails("nats://h:99999/x", OMMA_ERR_INVALID_ARG, "bad port '99999'");
    check_open_fails("nats://h:12ab/x", OMMA_ERR_INVALID_ARG, "bad port");
    check_open_fails("kafka://a:9092,,b:9092/t", OMMA_ERR_INVALID_ARG, "an empty host");
    check_open_fails("kafka://a:9092,/t", OMMA_ERR_INVALID_ARG, "an empty host");
    check_open_fails("mqtt://ho st/x", OMMA_ERR_INVALID_ARG, "bad character ' '");
    check_open_fails("nats://h/x?qos", OMMA_ERR_INVALID_ARG, "bad option 'qos'");
    check_open_fails("nats://h/x?a=1&a=2", OMMA_ERR_INVALID_ARG, "option 'a' given twice");
    check_open_fails("nats://h/x?backlog=0", OMMA_ERR_INVALID_ARG, "backlog=0");
    check_open_fails("nats://h/x?window=many", OMMA_ERR_INVALID_ARG, "window=many");
    check_open_fails("nats://h/%zz", OMMA_ERR_INVALID_ARG, "%-escape");
    check_open_fails("kafka://localhost:9092", OMMA_ERR_INVALID_ARG, "no topic");
    check_open_fails("kafka://localhost:9092/", OMMA_ERR_INVALID_ARG, "no topic");
    /* The password is not repeated in messages. */
    check_open_fails("nats://me:secret@h:0/x", OMMA_ERR_INVALID_ARG, "sink nats://me:***@h:0/x");
    sink *k = NULL;
    sink_open("nats://me:secret@h:0/x", NULL, &k);
    CHECK(!strstr(omma_last_error(), "secret"));
}

static void test_subjects(void)
{
    char url[1200], path[600];
    memset(path, 'a', 300);
    path[300] = 0;
    snprintf(url, sizeof url, "nats://h/%s", path);
    check_open_fails(url, OMMA_ERR_INVALID_ARG, "the subject is 300 bytes (at most 255)");
    snprintf(url, sizeof url, "mqtt://h/%s", path);
    check_open_fails(url, OMMA_ERR_INVALID_ARG, "the topic is 300 bytes (at most 255)");
    snprintf(url, sizeof url, "kafka://h/%s", path);
    check_open_fails(url, OMMA_ERR_INVALID_ARG, "the topic is 300 bytes (at most 255)");
    /* Short enough, but not once {site} and the rest are filled in. */
    memset(path, 'b', 240);
    path[240] = 0;
    snprintf(url, sizeof url, "nats://h/%s", path);
    check_open_fails(url, OMMA_ERR_INVALID_ARG, "longer than 255 bytes");
    check_open_fails("nats://h/omma.*", OMMA_ERR_INVALID_ARG, "a character nats refuses ('*')");
    check_open_fails("nats://h/omma..x.{camera}", OMMA_ERR_INVALID_ARG, "an empty token");
    check_open_fails("mqtt://h/omma/#", OMMA_ERR_INVALID_ARG, "a character mqtt refuses ('#')");
    check_open_fails("kafka://h/faces!", OMMA_ERR_INVALID_ARG, "a character kafka refuses ('!')");
    sink_options o = {"a.b", NULL, 0, 0, 0, NULL, NULL};
    sink *k = NULL;
    CHECK_FAILS(sink_open("nats://h/x", &o, &k), OMMA_ERR_INVALID_ARG,
                "the site 'a.b' may hold letters, digits");
    CHECK(k == NULL);
}

static void test_expand(void)
{
    char out[64];
    CHECK(sink_expand("omma.{site}.{camera}.faces", "lab", "n1", "cam3", out, sizeof out) == 19);
    CHECK(!strcmp(out, "omma.lab.cam3.faces"));
    CHECK(sink_expand("{node}/{camera}", "s", "n1", "c", out, sizeof out) == 4);
    CHECK(!strcmp(out, "n1/c"));
    CHECK(sink_expand("{camera}{camera}", "s", "n", "0123456789", out, 20) == -1);
    CHECK(sink_expand("{camera}", "s", "n", "0123456789", out, 11) == 10);
}

/* A loopback port nothing listens on (bound, then closed). */
static int closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &n) != 0) {
        if (fd >= 0)
            close(fd);
        return 1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

static void test_unreachable(void)
{
    char url[128];
    int port = closed_port();
    sink_options o = {NULL, NULL, 0, 0, 1000, NULL, NULL};
    sink *k = NULL;
#if OMMA_HAVE_NATS
    snprintf(url, sizeof url, "nats://127.0.0.1:%d/omma", port);
    CHECK_FAILS(sink_open(url, &o, &k), OMMA_ERR_IO, "cannot connect");
    CHECK(strstr(omma_last_error(), url) != NULL);
    CHECK(k == NULL);
#else
    snprintf(url, sizeof url, "nats://127.0.0.1:%d/omma", port);
    CHECK_FAILS(sink_open(url, &o, &k), OMMA_ERR_UNSUPPORTED, "built without libnats");
#endif
#if OMMA_HAVE_MOSQUITTO
    snprintf(url, sizeof url, "mqtt://127.0.0.1:%d/omma", port);
    CHECK_FAILS(sink_open(url, &o, &k), OMMA_ERR_IO, "cannot connect");
    CHECK(strstr(omma_last_error(), url) != NULL);
    CHECK(k == NULL);
    CHECK_FAILS(sink_open("mqtt://127.0.0.1:1883/x?qos=2", &o, &k), OMMA_ERR_INVALID_ARG,
                "qos=2: want an integer 0..1");
#else
    snprintf(url, sizeof url, "mqtt://127.0.0.1:%d/omma", port);
    CHECK_FAILS(sink_open(url, &o, &k), OMMA_ERR_UNSUPPORTED, "built without libmosquitto");
#endif
#if OMMA_HAVE_RDKAFKA
    /* librdkafka properties pass through; a wrong one is named. */
    CHECK_FAILS(sink_open("kafka://127.0.0.1:1/t?linger.ms=-5", &o, &k), OMMA_ERR_INVALID_ARG,
                "option linger.ms=-5");
    CHECK_FAILS(sink_open("kafka://127.0.0.1:1/t?no.such.property=1", &o, &k), OMMA_ERR_INVALID_ARG,
                "no.such.property");
#else
    CHECK_FAILS(sink_open("kafka://127.0.0.1:1/t", &o, &k), OMMA_ERR_UNSUPPORTED,
                "built without librdkafka");
#endif
    CHECK(k == NULL);
}

int main(void)
{
    RUN(test_malformed_urls);
    RUN(test_subjects);
    RUN(test_expand);
    RUN(test_unreachable);
    return testing_finish();
}
