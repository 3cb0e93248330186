#define _POSIX_C_SOURCE 200809L
/* The cluster test's observer, on libnats:
 *   cluster_check watch URL BUCKET SECONDS
 *       watches BUCKET-leases' owner keys and prints each change as
 *       "T_MS CAMERA OWNER REVISION" (T_MS: the wall clock in ms; OWNER
 *       "-" when the camera was handed over or its key went), line by line,
 *       for SECONDS or until SIGTERM. An owner key that expires (its node
 *       died) changes nothing here: the next line is the new owner's.
 *   cluster_check dump URL STREAM
 *       every message of the results stream as "CAMERA NODE LEASE SEQ
 *       CAPTURE_MS" (CAMERA from the subject PREFIX.SITE.CAMERA.faces).
 *   cluster_check put URL BUCKET KEY VALUE
 *       writes VALUE (as given, '\n' as "\n") under KEY of BUCKET: bad
 *       camera values for the nodes to refuse.
 * Exits 77 in a build without libnats. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if OMMA_HAVE_NATS
#include <nats/nats.h>

static volatile sig_atomic_t stopped;

static void on_term(int sig)
{
    (void)sig;
    stopped = 1;
}

static long long wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int connect_js(const char *url, natsConnection **nc, jsCtx **js)
{
    natsOptions *o = NULL;
    natsOptions_Create(&o);
    natsOptions_SetURL(o, url);
    natsOptions_SetTimeout(o, 2000);
    natsOptions_SetMaxReconnect(o, -1);
    natsOptions_SetReconnectWait(o, 200);
    natsStatus s = natsConnection_Connect(nc, o);
    natsOptions_Destroy(o);
    if (s == NATS_OK)
        s = natsConnection_JetStream(js, *nc, NULL);
    if (s != NATS_OK) {
        fprintf(stderr, "cluster_check: %s: %s\n", url, natsStatus_GetText(s));
        return 0;
    }
    return 1;
}

static int watch(const char *url, const char *bucket, int seconds)
{
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    if (!connect_js(url, &nc, &js))
        return 2;
    char name[128];
    snprintf(name, sizeof name, "%s-leases", bucket);
    kvStore *kv = NULL;
    kvWatcher *w = NULL;
    natsStatus s = NATS_ERR;
    for (int tries = 0; tries < 100 && s != NATS_OK; tries++) { /* until a node made it */
        s = js_KeyValue(&kv, js, name);
        if (s != NATS_OK) {
            struct timespec ts = {0, 100000000};
            nanosleep(&ts, NULL);
        }
    }
    if (s == NATS_OK)
        s = kvStore_Watch(&w, kv, "own.*", NULL);
    if (s != NATS_OK) {
        fprintf(stderr, "cluster_check: watching %s: %s\n", name, natsStatus_GetText(s));
        return 2;
    }
    signal(SIGTERM, on_term);
    long long end = wall_ms() + (long long)seconds * 1000;
    while (!stopped && wall_ms() < end) {
        kvEntry *e = NULL;
        if (kvWatcher_Next(&e, w, 100) != NATS_OK || !e)
            continue;
        char owner[128] = "-";
        int len = kvEntry_ValueLen(e);
        const char *v = kvEntry_Value(e);
        if (kvEntry_Operation(e) == kvOp_Put && len > 5 && !strncmp(v, "node=", 5)) {
            int n = len - 5;
            if (n > 0 && v[len - 1] == '\n')
                n--;
            snprintf(owner, sizeof owner, "%.*s", n < 100 ? n : 100, v + 5);
        }
        printf("%lld %s %s %llu\n", wall_ms(), kvEntry_Key(e) + 4, owner,
               (unsigned long long)kvEntry_Revision(e));
        fflush(stdout);
        kvEntry_Destroy(e);
    }
    kvWatcher_Destroy(w);
    kvStore_Destroy(kv);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    return 0;
}

/* The integer after "name": in data, or -1. */
static long long field(const char *data, int len, const char *name)
{
    char key[32];
    snprintf(key, sizeof key, "\"%s\":", name);
    char buf[512];
    int n = len < (int)sizeof buf - 1 ? len : (int)sizeof buf - 1;
    memcpy(buf, data, (size_t)n); /* the fields come before the faces */
    buf[n] = 0;
    const char *p = strstr(buf, key);
    return p ? strtoll(p + strlen(key), NULL, 10) : -1;
}

static void node_of(const char *data, int len, char *out, size_t cap)
{
    char buf[512];
    int n = len < (int)sizeof buf - 1 ? len : (int)sizeof buf - 1;
    memcpy(buf, data, (size_t)n);
    buf[n] = 0;
    const char *p = strstr(buf, "\"node\":\"");
    snprintf(out, cap, "?");
    if (p) {
        p += 8;
        const char *q = strchr(p, '"');
        if (q)
            snprintf(out, cap, "%.*s", (int)(q - p), p);
    }
}

static int dump(const char *url, const char *stream)
{
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    if (!connect_js(url, &nc, &js))
        return 2;
    jsStreamInfo *si = NULL;
    jsErrCode err = 0;
    natsStatus s = js_GetStreamInfo(&si, js, stream, NULL, &err);
    if (s != NATS_OK) {
        fprintf(stderr, "cluster_check: stream %s: %s\n", stream, natsStatus_GetText(s));
        return 2;
    }
    uint64_t first = si->State.FirstSeq, last = si->State.LastSeq;
    jsStreamInfo_Destroy(si);
    int bad = 0;
    for (uint64_t q = first; q >= 1 && q <= last; q++) {
        natsMsg *m = NULL;
        s = js_GetMsg(&m, js, stream, q, NULL, &err);
        if (s != NATS_OK) {
            bad = 1;
            continue;
        }
        const char *subject = natsMsg_GetSubject(m), *data = natsMsg_GetData(m);
        int len = natsMsg_GetDataLength(m);
        /* PREFIX.SITE.CAMERA.faces */
        const char *a = strchr(subject, '.'), *b = a ? strchr(a + 1, '.') : NULL;
        const char *c = b ? strchr(b + 1, '.') : NULL;
        char node[128];
        node_of(data, len, node, sizeof node);
        if (c)
            printf("%.*s %s %lld %lld %lld\n", (int)(c - b - 1), b + 1, node,
                   field(data, len, "lease"), field(data, len, "seq"),
                   field(data, len, "capture_unix_ns") / 1000000);
        natsMsg_Destroy(m);
    }
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    return bad;
}

static int put(const char *url, const char *bucket, const char *key, const char *value)
{
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    if (!connect_js(url, &nc, &js))
        return 2;
    kvStore *kv = NULL;
    char buf[8192];
    size_t n = 0;
    for (const char *p = value; *p && n < sizeof buf - 1; p++) {
        if (p[0] == '\\' && p[1] == 'n') {
            buf[n++] = '\n';
            p++;
        } else {
            buf[n++] = *p;
        }
    }
    natsStatus s = js_KeyValue(&kv, js, bucket);
    if (s == NATS_OK)
        s = kvStore_Put(NULL, kv, key, buf, (int)n);
    if (s != NATS_OK)
        fprintf(stderr, "cluster_check: put %s: %s\n", key, natsStatus_GetText(s));
    kvStore_Destroy(kv);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    return s == NATS_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc == 5 && !strcmp(argv[1], "watch"))
        return watch(argv[2], argv[3], atoi(argv[4]));
    if (argc == 4 && !strcmp(argv[1], "dump"))
        return dump(argv[2], argv[3]);
    if (argc == 6 && !strcmp(argv[1], "put"))
        return put(argv[2], argv[3], argv[4], argv[5]);
    fprintf(stderr, "usage: cluster_check watch URL BUCKET SECONDS | dump URL STREAM | put URL "
                    "BUCKET KEY VALUE\n");
    return 2;
}

#else

int main(void)
{
    puts("SKIP: built without libnats");
    return 77;
}

#endif
