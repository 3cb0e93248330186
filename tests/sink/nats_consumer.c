#define _POSIX_C_SOURCE 200809L
/* The NATS tests' helper, on libnats:
 *   nats_consumer ports N              N free loopback TCP ports, one a line
 *   nats_consumer create URL STREAM SUBJECTS REPLICAS
 *                                      a file-stored stream (2-min duplicate
 *                                      window), retried for 20 s while the
 *                                      cluster forms
 *   nats_consumer check URL STREAM CAMERAS
 *                                      reads every message of STREAM (a
 *                                      JetStream consumer of it: js_GetMsg
 *                                      from sequence 1) and prints, per
 *                                      camera, "camera C: N messages, M
 *                                      distinct, last seq L, out-of-order O,
 *                                      missing X" (X: seqs 1..L not there);
 *                                      exit 0 when every camera is complete
 *                                      and in order, 1 otherwise.
 * Exits 77 in a build without libnats. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#if OMMA_HAVE_NATS
#include <nats/nats.h>

#define MAX_CAMERAS 64
#define MAX_SEQ 200000

static int ports(int n)
{
    int fds[64];
    if (n < 1 || n > 64)
        return 2;
    for (int i = 0; i < n; i++) {
        fds[i] = socket(AF_INET, SOCK_STREAM, 0);
        struct sockaddr_in a = {0};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        if (fds[i] < 0 || bind(fds[i], (struct sockaddr *)&a, sizeof a) != 0 ||
            getsockname(fds[i], (struct sockaddr *)&a, &len) != 0)
            return 1;
        printf("%d\n", ntohs(a.sin_port));
    }
    for (int i = 0; i < n; i++)
        close(fds[i]);
    return 0;
}

static int connect_js(const char *url, natsConnection **nc, jsCtx **js)
{
    natsOptions *o = NULL;
    natsOptions_Create(&o);
    natsOptions_SetURL(o, url);
    natsOptions_SetTimeout(o, 2000);
    /* A server started just before may not listen yet: up to 10 s. */
    natsStatus s = NATS_NO_SERVER;
    for (int tries = 0; tries < 50 && s == NATS_NO_SERVER; tries++) {
        s = natsConnection_Connect(nc, o);
        if (s == NATS_NO_SERVER) {
            struct timespec ts = {0, 200000000};
            nanosleep(&ts, NULL);
        }
    }
    natsOptions_Destroy(o);
    if (s == NATS_OK)
        s = natsConnection_JetStream(js, *nc, NULL);
    if (s != NATS_OK) {
        fprintf(stderr, "nats_consumer: %s: %s\n", url, natsStatus_GetText(s));
        return 0;
    }
    return 1;
}

static int create(const char *url, const char *stream, const char *subjects, int replicas)
{
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    if (!connect_js(url, &nc, &js))
        return 1;
    jsStreamConfig cfg;
    jsStreamConfig_Init(&cfg);
    cfg.Name = stream;
    const char *subj[1] = {subjects};
    cfg.Subjects = subj;
    cfg.SubjectsLen = 1;
    cfg.Storage = js_FileStorage;
    cfg.Replicas = replicas;
    cfg.Duplicates = (int64_t)120 * 1000000000;
    natsStatus s = NATS_ERR;
    jsErrCode err = 0;
    for (int tries = 0; tries < 100; tries++) {
        jsStreamInfo *si = NULL;
        s = js_AddStream(&si, js, &cfg, NULL, &err);
        jsStreamInfo_Destroy(si);
        if (s == NATS_OK)
            break;
        struct timespec ts = {0, 200000000};
        nanosleep(&ts, NULL);
    }
    if (s != NATS_OK)
        fprintf(stderr, "nats_consumer: creating stream %s: %s (%d) %s\n", stream,
                natsStatus_GetText(s), (int)err, nats_GetLastError(NULL));
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    return s == NATS_OK ? 0 : 1;
}

static long field(const char *data, int len, const char *name)
{
    char key[32];
    snprintf(key, sizeof key, "\"%s\":", name);
    char buf[256];
    int n = len < (int)sizeof buf - 1 ? len : (int)sizeof buf - 1;
    memcpy(buf, data, (size_t)n); /* the fields come before the faces */
    buf[n] = 0;
    const char *p = strstr(buf, key);
    return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

static int check(const char *url, const char *stream, int cameras)
{
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    if (cameras < 1 || cameras > MAX_CAMERAS || !connect_js(url, &nc, &js))
        return 2;
    jsStreamInfo *si = NULL;
    jsErrCode err = 0;
    natsStatus s = NATS_ERR;
    for (int tries = 0; tries < 50 && s != NATS_OK; tries++) {
        s = js_GetStreamInfo(&si, js, stream, NULL, &err);
        if (s != NATS_OK) {
            struct timespec ts = {0, 200000000};
            nanosleep(&ts, NULL);
        }
    }
    if (s != NATS_OK) {
        fprintf(stderr, "nats_consumer: stream %s: %s\n", stream, natsStatus_GetText(s));
        return 2;
    }
    uint64_t first = si->State.FirstSeq, last = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    static unsigned char seen[MAX_CAMERAS][MAX_SEQ + 1];
    long count[MAX_CAMERAS] = {0}, prev[MAX_CAMERAS] = {0}, disorder[MAX_CAMERAS] = {0},
         distinct[MAX_CAMERAS] = {0}, top[MAX_CAMERAS] = {0};
    int bad = 0;
    for (uint64_t q = first; q >= 1 && q <= last; q++) {
        natsMsg *m = NULL;
        s = js_GetMsg(&m, js, stream, q, NULL, &err);
        if (s != NATS_OK) {
            fprintf(stderr, "nats_consumer: message %llu: %s\n", (unsigned long long)q,
                    natsStatus_GetText(s));
            bad = 1;
            continue;
        }
        long cam = field(natsMsg_GetData(m), natsMsg_GetDataLength(m), "camera");
        long seq = field(natsMsg_GetData(m), natsMsg_GetDataLength(m), "seq");
        natsMsg_Destroy(m);
        if (cam < 0 || cam >= cameras || seq < 1 || seq > MAX_SEQ) {
            fprintf(stderr, "nats_consumer: message %llu: camera %ld, seq %ld\n",
                    (unsigned long long)q, cam, seq);
            bad = 1;
            continue;
        }
        count[cam]++;
        if (!seen[cam][seq]++)
            distinct[cam]++;
        if (seq <= prev[cam])
            disorder[cam]++;
        prev[cam] = seq;
        if (seq > top[cam])
            top[cam] = seq;
    }
    for (int c = 0; c < cameras; c++) {
        long missing = top[c] - distinct[c];
        printf("camera %d: %ld messages, %ld distinct, last seq %ld, out-of-order %ld, missing "
               "%ld\n",
               c, count[c], distinct[c], top[c], disorder[c], missing);
        if (missing || disorder[c] || count[c] == 0)
            bad = 1;
    }
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "ports"))
        return ports(atoi(argv[2]));
    if (argc == 6 && !strcmp(argv[1], "create"))
        return create(argv[2], argv[3], argv[4], atoi(argv[5]));
    if (argc == 5 && !strcmp(argv[1], "check"))
        return check(argv[2], argv[3], atoi(argv[4]));
    fprintf(stderr, "usage: nats_consumer ports N | create URL STREAM SUBJECTS REPLICAS | "
                    "check URL STREAM CAMERAS\n");
    return 2;
}

#else

int main(void)
{
    fprintf(stderr, "SKIP: built without libnats\n");
    return 77;
}

#endif
