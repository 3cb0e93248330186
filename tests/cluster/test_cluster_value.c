#define _POSIX_C_SOURCE 200809L
/* The cluster's untrusted input: the bucket values (cameras, heartbeats,
 * owners) and the cluster URL. Good values parse to what was written and
 * back; bad ones fail with a message saying what and where; a server that
 * is not there is an error naming the URL, without its password. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cluster/cluster.h"
#include "cluster/cluster_private.h"
#include "testing.h"

#define PARSE(fn, text, out) fn((text), strlen(text), "cam.x", (out))

static void test_camera_values(void)
{
    cluster_camera c;
    REQUIRE_OK(PARSE(cluster_camera_parse, "source=rtsp://cam/1\n", &c));
    CHECK(!strcmp(c.source, "rtsp://cam/1") && c.max_frames == 0);
    REQUIRE_OK(PARSE(cluster_camera_parse, "# a comment\n\nsource=synthetic\nmax_frames=30", &c));
    CHECK(!strcmp(c.source, "synthetic") && c.max_frames == 30);
    /* What the writer writes, the reader reads. */
    char buf[CLUSTER_VALUE_MAX];
    cluster_camera w = {"testdata/faces cut.mp4", 12}, r;
    int n = cluster_camera_format(&w, buf, sizeof buf);
    REQUIRE(n > 0);
    REQUIRE_OK(cluster_camera_parse(buf, (size_t)n, "cam.x", &r));
    CHECK(!strcmp(r.source, w.source) && r.max_frames == 12);
    CHECK(cluster_camera_format(&w, buf, 10) == -1);

    CHECK_FAILS(PARSE(cluster_camera_parse, "", &c), OMMA_ERR_INVALID_ARG, "cam.x: no source=");
    CHECK_FAILS(PARSE(cluster_camera_parse, "max_frames=3\n", &c), OMMA_ERR_INVALID_ARG,
                "no source= line");
    CHECK_FAILS(PARSE(cluster_camera_parse, "source=a\nsource=b", &c), OMMA_ERR_INVALID_ARG,
                "line 2: source given twice");
    CHECK_FAILS(PARSE(cluster_camera_parse, "source=", &c), OMMA_ERR_INVALID_ARG,
                "line 1: an empty source");
    CHECK_FAILS(PARSE(cluster_camera_parse, "source=a\nfps=30", &c), OMMA_ERR_INVALID_ARG,
                "line 2: an unknown key 'fps'");
    CHECK_FAILS(PARSE(cluster_camera_parse, "source=a\nmax_frames=-1", &c), OMMA_ERR_INVALID_ARG,
                "max_frames=-1: want an integer");
    CHECK_FAILS(PARSE(cluster_camera_parse, "source=a\nmax_frames=1x", &c), OMMA_ERR_INVALID_ARG,
                "want an integer");
    CHECK_FAILS(PARSE(cluster_camera_parse, "source=a\nmax_frames=99999999999999999999", &c),
                OMMA_ERR_INVALID_ARG, "want an integer");
    CHECK_FAILS(PARSE(cluster_camera_parse, "source a", &c), OMMA_ERR_INVALID_ARG,
                "line 1: want KEY=VALUE");
    CHECK_FAILS(PARSE(cluster_camera_parse, "=a", &c), OMMA_ERR_INVALID_ARG, "want KEY=VALUE");
    CHECK_FAILS(PARSE(cluster_camera_parse, "source=a\tb", &c), OMMA_ERR_INVALID_ARG,
                "a control character (0x09)");
    CHECK_FAILS(cluster_camera_parse("source=a\0b", 10, "cam.x", &c), OMMA_ERR_INVALID_ARG,
                "control character (0x00)");
    CHECK(c.source[0] == 0); /* nothing half-parsed left behind */
    static char big[CLUSTER_VALUE_MAX + 2];
    memset(big, 'a', sizeof big);
    memcpy(big, "source=", 7);
    CHECK_FAILS(cluster_camera_parse(big, sizeof big, "cam.x", &c), OMMA_ERR_INVALID_ARG,
                "bytes (at most 4096)");
    CHECK_FAILS(cluster_camera_parse(big, CLUSTER_SPEC_MAX + 8, "cam.x", &c), OMMA_ERR_INVALID_ARG,
                "the value of source is");
    char longkey[64];
    snprintf(longkey, sizeof longkey, "%040d=1", 0);
    CHECK_FAILS(PARSE(cluster_camera_parse, longkey, &c), OMMA_ERR_INVALID_ARG, "an unknown key");
}

static void test_node_and_owner_values(void)
{
    cluster_node_info n;
    REQUIRE_OK(PARSE(cluster_node_parse, "weight=4\ncameras=3\ndraining=1\n", &n));
    CHECK(n.weight == 4 && n.cameras == 3 && n.draining == 1);
    REQUIRE_OK(PARSE(cluster_node_parse, "", &n)); /* every field optional: zeros */
    CHECK(n.weight == 0 && n.cameras == 0 && n.draining == 0);
    char buf[128];
    cluster_node_info w = {7, 2, 0}, r;
    int len = cluster_node_format(&w, buf, sizeof buf);
    REQUIRE(len > 0);
    REQUIRE_OK(cluster_node_parse(buf, (size_t)len, "node.x", &r));
    CHECK(r.weight == 7 && r.cameras == 2 && r.draining == 0);
    CHECK_FAILS(PARSE(cluster_node_parse, "draining=2", &n), OMMA_ERR_INVALID_ARG,
                "draining=2: want an integer 0..1");
    CHECK_FAILS(PARSE(cluster_node_parse, "weight=1\nweight=2", &n), OMMA_ERR_INVALID_ARG,
                "weight given twice");
    CHECK_FAILS(PARSE(cluster_node_parse, "load=1", &n), OMMA_ERR_INVALID_ARG,
                "an unknown key 'load'");

    char node[CLUSTER_NAME_MAX];
    REQUIRE_OK(PARSE(cluster_owner_parse, "node=edge-3\n", node));
    CHECK(!strcmp(node, "edge-3"));
    len = cluster_owner_format("n_1", buf, sizeof buf);
    REQUIRE(len > 0);
    REQUIRE_OK(cluster_owner_parse(buf, (size_t)len, "own.x", node));
    CHECK(!strcmp(node, "n_1"));
    CHECK_FAILS(PARSE(cluster_owner_parse, "node=a.b", node), OMMA_ERR_INVALID_ARG,
                "node 'a.b' is not a name");
    CHECK_FAILS(PARSE(cluster_owner_parse, "node=", node), OMMA_ERR_INVALID_ARG, "is not a name");
    CHECK_FAILS(PARSE(cluster_owner_parse, "", node), OMMA_ERR_INVALID_ARG, "no node= line");
    CHECK_FAILS(PARSE(cluster_owner_parse, "node=a\nnode=b", node), OMMA_ERR_INVALID_ARG,
                "node given twice");
    CHECK(node[0] == 0);
}

static void test_names(void)
{
    CHECK(cluster_name_valid("cam-01_a"));
    CHECK(!cluster_name_valid(""));
    CHECK(!cluster_name_valid("a.b"));
    CHECK(!cluster_name_valid("a b"));
    CHECK(!cluster_name_valid("a*"));
    CHECK(!cluster_name_valid("a>"));
    char longname[80];
    memset(longname, 'a', sizeof longname);
    longname[CLUSTER_NAME_MAX] = 0;
    CHECK(!cluster_name_valid(longname));
    longname[CLUSTER_NAME_MAX - 1] = 0;
    CHECK(cluster_name_valid(longname));
}

static void test_urls(void)
{
    cluster_url u;
    REQUIRE_OK(
        cluster_url_parse("nats://127.0.0.1:4223,h2,[::1]:4224/fleet?lease_ms=2000&replicas=3"
                          "&storage=memory",
                          &u));
    CHECK(u.n_servers == 3 && !strcmp(u.servers[0], "nats://127.0.0.1:4223") &&
          !strcmp(u.servers[1], "nats://h2:4222") && !strcmp(u.servers[2], "nats://[::1]:4224"));
    CHECK(!strcmp(u.bucket, "fleet") && !strcmp(u.leases, "fleet-leases"));
    CHECK(u.lease_ms == 2000 && u.replicas == 3 && u.memory == 1);
    cluster_url_free(&u);
    REQUIRE_OK(cluster_url_parse("nats://omma:secret@h", &u));
    CHECK(!strcmp(u.bucket, "omma") && u.lease_ms == 3000 && u.replicas == 1 &&
          !strcmp(u.user, "omma") && !strcmp(u.password, "secret") &&
          !strcmp(u.shown, "nats://omma:***@h"));
    cluster_url_free(&u);

    CHECK_FAILS(cluster_url_parse("kafka://h/x", &u), OMMA_ERR_INVALID_ARG,
                "cluster kafka://h/x: want nats://");
    CHECK_FAILS(cluster_url_parse(NULL, &u), OMMA_ERR_INVALID_ARG, "want nats://");
    CHECK_FAILS(cluster_url_parse("nats://", &u), OMMA_ERR_INVALID_ARG, "no host");
    CHECK_FAILS(cluster_url_parse("nats:///b", &u), OMMA_ERR_INVALID_ARG, "no host");
    CHECK_FAILS(cluster_url_parse("nats://a,,b", &u), OMMA_ERR_INVALID_ARG, "an empty host");
    CHECK_FAILS(cluster_url_parse("nats://a,", &u), OMMA_ERR_INVALID_ARG, "an empty host");
    CHECK_FAILS(cluster_url_parse("nats://h:0", &u), OMMA_ERR_INVALID_ARG, "bad host:port 'h:0'");
    CHECK_FAILS(cluster_url_parse("nats://h:70000", &u), OMMA_ERR_INVALID_ARG, "bad host:port");
    CHECK_FAILS(cluster_url_parse("nats://h:", &u), OMMA_ERR_INVALID_ARG, "bad host:port");
    CHECK_FAILS(cluster_url_parse("nats://h$x", &u), OMMA_ERR_INVALID_ARG, "a bad character");
    CHECK_FAILS(cluster_url_parse("nats://[::1", &u), OMMA_ERR_INVALID_ARG, "unclosed '['");
    CHECK_FAILS(cluster_url_parse("nats://h/a.b", &u), OMMA_ERR_INVALID_ARG,
                "the bucket 'a.b' is not a name");
    CHECK_FAILS(cluster_url_parse("nats://h/b?lease_ms=10", &u), OMMA_ERR_INVALID_ARG,
                "lease_ms=10: want an integer 300..600000");
    CHECK_FAILS(cluster_url_parse("nats://h/b?replicas=x", &u), OMMA_ERR_INVALID_ARG, "replicas=x");
    CHECK_FAILS(cluster_url_parse("nats://h/b?storage=tape", &u), OMMA_ERR_INVALID_ARG,
                "storage=tape: want file or memory");
    CHECK_FAILS(cluster_url_parse("nats://h/b?ttl=3", &u), OMMA_ERR_INVALID_ARG,
                "an unknown option 'ttl'");
    CHECK_FAILS(cluster_url_parse("nats://h/b?lease_ms", &u), OMMA_ERR_INVALID_ARG,
                "want KEY=VALUE");
    CHECK_FAILS(cluster_url_parse("nats://u:pw@h/b?x=1", &u), OMMA_ERR_INVALID_ARG,
                "cluster nats://u:***@h/b?x=1");
    CHECK(!strstr(omma_last_error(), "pw"));
    CHECK_FAILS(cluster_url_parse("nats://:pw@h", &u), OMMA_ERR_INVALID_ARG, "an empty user");
    char longurl[2100];
    memset(longurl, 'a', sizeof longurl);
    memcpy(longurl, "nats://", 7);
    longurl[sizeof longurl - 1] = 0;
    CHECK_FAILS(cluster_url_parse(longurl, &u), OMMA_ERR_INVALID_ARG, "longer than 2000");
}

/* A port nothing listens on. */
static int closed_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        return 1;
    close(fd);
    return ntohs(a.sin_port);
}

static omma_status claim_nothing(void *ctx, const char *id, const cluster_camera *cam,
                                 uint64_t lease)
{
    (void)ctx, (void)id, (void)cam, (void)lease;
    return OMMA_OK;
}

static void release_nothing(void *ctx, const char *id, int lost)
{
    (void)ctx, (void)id, (void)lost;
}

static void test_unreachable_and_bad_config(void)
{
#if !OMMA_HAVE_NATS
    cluster *c = NULL;
    cluster_config cfg = {"nats://127.0.0.1:1", "n1", 0,   500, claim_nothing,
                          release_nothing,      NULL, NULL};
    CHECK_FAILS(cluster_open(&cfg, &c), OMMA_ERR_UNSUPPORTED, "built without libnats");
    return;
#else
    char url[128];
    snprintf(url, sizeof url, "nats://u:secret@127.0.0.1:%d/b", closed_port());
    cluster *c = (cluster *)1;
    cluster_config cfg = {url, "n1", 0, 500, claim_nothing, release_nothing, NULL, NULL};
    CHECK_FAILS(cluster_open(&cfg, &c), OMMA_ERR_IO, "cannot connect");
    CHECK(strstr(omma_last_error(), "u:***@127.0.0.1") && !strstr(omma_last_error(), "secret"));
    CHECK(c == NULL);
    CHECK_FAILS(cluster_list(url, 500, 0, stdout), OMMA_ERR_IO, "cannot connect");
    cluster_camera cam = {"synthetic", 0};
    CHECK_FAILS(cluster_add(url, 500, "bad id", &cam), OMMA_ERR_INVALID_ARG,
                "the camera id 'bad id' is not a name");
    CHECK_FAILS(cluster_drain(url, 500, "a.b", 1), OMMA_ERR_INVALID_ARG,
                "the node 'a.b' is not a name");
    cluster_config bad = cfg;
    bad.node = "a.b";
    CHECK_FAILS(cluster_open(&bad, &c), OMMA_ERR_INVALID_ARG, "the node name 'a.b' is not a name");
    bad.node = NULL;
    CHECK_FAILS(cluster_open(&bad, &c), OMMA_ERR_INVALID_ARG, "is not a name");
    bad = cfg;
    bad.url = "nats://h:0";
    CHECK_FAILS(cluster_open(&bad, &c), OMMA_ERR_INVALID_ARG, "bad host:port");
    CHECK(c == NULL);
#endif
}

int main(void)
{
    RUN(test_camera_values);
    RUN(test_node_and_owner_values);
    RUN(test_names);
    RUN(test_urls);
    RUN(test_unreachable_and_bad_config);
    return testing_finish();
}
