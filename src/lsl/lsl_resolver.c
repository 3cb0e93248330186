#define _DEFAULT_SOURCE /* strtok_r */
/* LSL stream discovery: UDP query waves and their replies (lsl_resolver.h). */
#include "lsl/lsl_resolver.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"
#include "lsl/lsl_outlet.h"
#include "lsl/lsl_query.h"

#define MAX_TARGETS 512
#define MAX_FOUND 1024

static const char *const broadcast_targets[] = {"255.255.255.255", "224.0.0.1", "224.0.0.183",
                                                "239.255.172.215"};

void lsl_query_byprop(char *out, size_t cap, const char *key, const char *value)
{
    snprintf(out, cap, "session_id='default' and %s='%s'", key, value);
}

static int add_target(struct sockaddr_in *t, int n, const char *ip, int port)
{
    if (n >= MAX_TARGETS)
        return n;
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1)
        return n;
    t[n] = sa;
    return n + 1;
}

static int add_host(struct sockaddr_in *t, int n, const char *ip)
{
    n = add_target(t, n, ip, LSL_DISCOVERY_PORT);
    for (int p = LSL_BASE_PORT; p < LSL_BASE_PORT + LSL_PORT_RANGE; p++)
        n = add_target(t, n, ip, p);
    return n;
}

void lsl_resolve_free(lsl_info *infos, int n)
{
    for (int i = 0; infos && i < n; i++)
        lsl_info_clear(&infos[i]);
    free(infos);
}

omma_status lsl_resolve(const lsl_resolve_options *opts, lsl_info **infos, int *n)
{
    *infos = NULL;
    *n = 0;
    const char *query = opts && opts->query ? opts->query : "";
    double wait_s = opts ? opts->wait_s : 0;
    if (!(wait_s > 0) || wait_s > 3600)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "lsl resolve: wait of %g s (0, 3600]", wait_s);
    lsl_info probe = {0};
    int dummy;
    OMMA_TRY(lsl_query_match(query, strlen(query), &probe, &dummy)); /* its syntax */
    struct sockaddr_in *targets = malloc(sizeof *targets * MAX_TARGETS);
    lsl_info *found = calloc(MAX_FOUND, sizeof *found);
    char *buf = malloc(65536);
    if (!targets || !found || !buf) {
        free(targets);
        free(found);
        free(buf);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "lsl resolve: out of memory");
    }
    int nt = add_host(targets, 0, "127.0.0.1");
    for (size_t i = 0; i < sizeof broadcast_targets / sizeof broadcast_targets[0]; i++)
        nt = add_target(targets, nt, broadcast_targets[i], LSL_DISCOVERY_PORT);
    if (opts->peers) {
        char list[1024];
        snprintf(list, sizeof list, "%s", opts->peers);
        char *save = NULL;
        for (char *tok = strtok_r(list, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save))
            nt = add_host(targets, nt, tok);
    }
    omma_status st = OMMA_OK;
    int nf = 0;
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        st = OMMA_FAIL(OMMA_ERR_IO, "lsl resolve: socket: %s", strerror(errno));
        goto done;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof one);
    unsigned char ttl = 1;
    setsockopt(fd, IPPROTO_IP, IP_MULTICAST_TTL, &ttl, sizeof ttl);
    struct sockaddr_in self = {.sin_family = AF_INET};
    socklen_t sl = sizeof self;
    if (bind(fd, (struct sockaddr *)&self, sizeof self) != 0 ||
        getsockname(fd, (struct sockaddr *)&self, &sl) != 0) {
        st = OMMA_FAIL(OMMA_ERR_IO, "lsl resolve: bind: %s", strerror(errno));
        goto done;
    }
    char qid[32];
    snprintf(qid, sizeof qid, "%llu",
             (unsigned long long)(core_now_ns() ^ ((uint64_t)getpid() << 32)));
    char msg[LSL_QUERY_MAX_BYTES + 128];
    int ml = snprintf(msg, sizeof msg, "LSL:shortinfo\r\n%s\r\n%d %s\r\n", query,
                      ntohs(self.sin_port), qid);
    if (ml < 0 || (size_t)ml >= sizeof msg) {
        st = OMMA_FAIL(OMMA_ERR_INVALID_ARG, "lsl resolve: query too long");
        goto done;
    }
    uint64_t start = core_now_ns(), end = start + (uint64_t)(wait_s * 1e9), next_wave = start;
    int sent_any = 0;
    size_t qidlen = strlen(qid);
    for (;;) {
        uint64_t now = core_now_ns();
        if (now >= end || (opts->minimum > 0 && nf >= opts->minimum))
            break;
        if (now >= next_wave) {
            for (int i = 0; i < nt; i++)
                if (sendto(fd, msg, (size_t)ml, MSG_NOSIGNAL, (struct sockaddr *)&targets[i],
                           sizeof targets[i]) == ml)
                    sent_any = 1;
            next_wave = now + 500000000ull;
        }
        uint64_t until = next_wave < end ? next_wave : end;
        struct pollfd p = {fd, POLLIN, 0};
        int ms = (int)((until - now) / 1000000) + 1;
        if (poll(&p, 1, ms) <= 0)
            continue;
        for (;;) {
            struct sockaddr_in from;
            socklen_t fl = sizeof from;
            ssize_t r = recvfrom(fd, buf, 65535, MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
            if (r <= 0)
                break;
            const char *nl = memchr(buf, '\n', (size_t)r);
            if (!nl)
                continue;
            size_t il = (size_t)(nl - buf);
            while (il && (buf[il - 1] == '\r' || buf[il - 1] == ' '))
                il--;
            if (il != qidlen || memcmp(buf, qid, il) != 0)
                continue;
            lsl_info info;
            if (lsl_info_parse(nl + 1, (size_t)r - (size_t)(nl + 1 - buf), &info) != OMMA_OK)
                continue;
            int dup = 0;
            for (int i = 0; i < nf && !dup; i++)
                dup = strcmp(found[i].uid, info.uid) == 0;
            if (dup || nf >= MAX_FOUND) {
                lsl_info_clear(&info);
                continue;
            }
            if (!info.v4address[0])
                inet_ntop(AF_INET, &from.sin_addr, info.v4address, sizeof info.v4address);
            found[nf++] = info;
        }
    }
    if (!sent_any)
        st = OMMA_FAIL(OMMA_ERR_IO, "lsl resolve: no query could be sent: %s", strerror(errno));
done:
    if (fd >= 0)
        close(fd);
    free(targets);
    free(buf);
    if (st != OMMA_OK || nf == 0) {
        lsl_resolve_free(found, nf);
        return st;
    }
    *infos = found;
    *n = nf;
    return OMMA_OK;
}
