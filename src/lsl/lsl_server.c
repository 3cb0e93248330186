#define _GNU_SOURCE /* accept4, eventfd */
/* The LSL server thread: discovery and time service over UDP, and the
 * outlets' TCP data ports, in one poll loop (lsl_outlet.h). */
#include "lsl/lsl_server_private.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/error.h"
#include "lsl/lsl_clock.h"
#include "lsl/lsl_query.h"
#include "omma/log.h"

/* LSL's IPv4 multicast groups (liblsl's link and site scopes). */
static const char *const multicast_groups[] = {"224.0.0.1", "224.0.0.183", "239.255.172.215"};

void lsl_server_wake(lsl_server *s)
{
    if (atomic_exchange(&s->wake_pending, 1) == 0) {
        uint64_t one = 1;
        ssize_t w = write(s->wake_fd, &one, sizeof one);
        (void)w; /* a full counter still wakes the poll */
    }
}

int lsl_server_service_port(const lsl_server *s)
{
    return s->service_port;
}

static int udp_socket(struct in_addr addr, int port, int reuse)
{
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    int one = 1;
    if (reuse)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {
        .sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr = addr};
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* "LSL:shortinfo\r\nQUERY\r\nPORT ID\r\n": reply "ID\r\n" + shortinfo of
 * every outlet matching QUERY to the sender's address, port PORT. */
static void answer_shortinfo(lsl_server *s, int fd, const char *msg, size_t len, size_t pos,
                             const struct sockaddr_in *from)
{
    const char *q = msg + pos;
    const char *qe = memchr(q, '\n', len - pos);
    if (!qe)
        return;
    size_t qlen = (size_t)(qe - q);
    while (qlen && (q[qlen - 1] == '\r' || q[qlen - 1] == ' '))
        qlen--;
    while (qlen && *q == ' ') {
        q++;
        qlen--;
    }
    const char *r = qe + 1;
    size_t rlen = len - (size_t)(r - msg);
    char line[128];
    if (rlen >= sizeof line)
        rlen = sizeof line - 1;
    memcpy(line, r, rlen);
    line[rlen] = '\0';
    int port;
    char id[64];
    if (sscanf(line, "%d %63s", &port, id) != 2 || port <= 0 || port > 65535)
        return;
    struct sockaddr_in to = *from;
    to.sin_port = htons((uint16_t)port);
    char reply[65536];
    size_t idlen = strlen(id);
    for (lsl_outlet *o = s->outlets; o; o = o->next) {
        if (o->dead)
            continue;
        int match = 0;
        if (lsl_query_match(q, qlen, &o->info, &match) != OMMA_OK) {
            omma_log(OMMA_LOG_DEBUG, "lsl: ignored a query: %s", omma_last_error());
            return;
        }
        if (!match || idlen + 2 + o->shortinfo_len > sizeof reply)
            continue;
        memcpy(reply, id, idlen);
        memcpy(reply + idlen, "\r\n", 2);
        memcpy(reply + idlen + 2, o->shortinfo, o->shortinfo_len);
        sendto(fd, reply, idlen + 2 + o->shortinfo_len, MSG_DONTWAIT | MSG_NOSIGNAL,
               (struct sockaddr *)&to, sizeof to);
    }
}

/* "LSL:timedata\r\nWAVE T0\r\n": reply " WAVE T0 T1 T2" (T1 when it came,
 * T2 when answered), as liblsl's time service. */
static void answer_timedata(int fd, const char *msg, size_t len, size_t pos, double t1,
                            const struct sockaddr_in *from)
{
    char line[128];
    size_t n = len - pos < sizeof line - 1 ? len - pos : sizeof line - 1;
    memcpy(line, msg + pos, n);
    line[n] = '\0';
    int wave;
    double t0;
    if (sscanf(line, "%d %lf", &wave, &t0) != 2)
        return;
    char reply[160];
    int rn = snprintf(reply, sizeof reply, " %d %.17g %.17g %.17g", wave, t0, t1, lsl_clock_now());
    sendto(fd, reply, (size_t)rn, MSG_DONTWAIT | MSG_NOSIGNAL, (const struct sockaddr *)from,
           sizeof *from);
}

static void serve_udp(lsl_server *s, int fd, int time_service)
{
    char msg[8192];
    for (int i = 0; i < 64; i++) {
        struct sockaddr_in from;
        socklen_t fl = sizeof from;
        ssize_t n = recvfrom(fd, msg, sizeof msg - 1, MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
        double t1 = lsl_clock_now();
        if (n <= 0)
            return;
        if (fl != sizeof from || from.sin_family != AF_INET)
            continue;
        msg[n] = '\0';
        const char *nl = memchr(msg, '\n', (size_t)n);
        if (!nl)
            continue;
        size_t ml = (size_t)(nl - msg), pos = ml + 1;
        while (ml && (msg[ml - 1] == '\r' || msg[ml - 1] == ' '))
            ml--;
        if (ml == 13 && memcmp(msg, "LSL:shortinfo", 13) == 0)
            answer_shortinfo(s, fd, msg, (size_t)n, pos, &from);
        else if (time_service && ml == 12 && memcmp(msg, "LSL:timedata", 12) == 0)
            answer_timedata(fd, msg, (size_t)n, pos, t1, &from);
    }
}

static void reap_dead(lsl_server *s)
{
    int any = 0;
    for (lsl_outlet **p = &s->outlets; *p;) {
        lsl_outlet *o = *p;
        if (o->dead && !o->reaped) {
            lsl_outlet_close_sockets(o);
            o->reaped = 1;
            *p = o->next;
            any = 1;
        } else {
            p = &o->next;
        }
    }
    if (any)
        pthread_cond_broadcast(&s->reaped);
}

#define MAX_POLL 1024

enum { POLL_OTHER, POLL_LISTEN, POLL_CONSUMER };

static void *server_main(void *arg)
{
    lsl_server *s = arg;
    struct pollfd *pfd = malloc(sizeof *pfd * MAX_POLL);
    void **what = malloc(sizeof *what * MAX_POLL);
    char *kind = malloc(MAX_POLL);
    if (!pfd || !what || !kind) {
        omma_log(OMMA_LOG_ERROR, "lsl: out of memory in the server thread");
        free(pfd);
        free(what);
        free(kind);
        return NULL;
    }
    pthread_mutex_lock(&s->lock);
    while (!s->stop) {
        reap_dead(s);
        int n = 0;
        pfd[n] = (struct pollfd){s->wake_fd, POLLIN, 0};
        kind[n++] = POLL_OTHER;
        for (int i = 0; i < s->n_discovery; i++) {
            pfd[n] = (struct pollfd){s->discovery_fds[i], POLLIN, 0};
            kind[n++] = POLL_OTHER;
        }
        pfd[n] = (struct pollfd){s->service_fd, POLLIN, 0};
        kind[n++] = POLL_OTHER;
        int timeout_ms = 1000;
        for (lsl_outlet *o = s->outlets; o && n < MAX_POLL; o = o->next) {
            pfd[n] = (struct pollfd){o->listen_fd, POLLIN, 0};
            kind[n] = POLL_LISTEN;
            what[n++] = o;
            for (lsl_consumer *c = o->consumers; c && n < MAX_POLL; c = c->next) {
                short ev = POLLIN;
                if (lsl_consumer_wants_write(c))
                    ev |= POLLOUT;
                pfd[n] = (struct pollfd){c->fd, ev, 0};
                kind[n] = POLL_CONSUMER;
                what[n++] = c;
                if (c->state == CONSUMER_REQUEST)
                    timeout_ms = 200;
            }
        }
        pthread_mutex_unlock(&s->lock);
        int r = poll(pfd, (nfds_t)n, timeout_ms);
        pthread_mutex_lock(&s->lock);
        if (r < 0 && errno != EINTR) {
            omma_log(OMMA_LOG_ERROR, "lsl: poll: %s", strerror(errno));
            break;
        }
        if (pfd[0].revents & POLLIN) {
            uint64_t v;
            ssize_t rd = read(s->wake_fd, &v, sizeof v);
            (void)rd;
            atomic_store(&s->wake_pending, 0);
        }
        for (int i = 0; i < s->n_discovery; i++)
            if (pfd[1 + i].revents & POLLIN)
                serve_udp(s, s->discovery_fds[i], 0);
        if (pfd[1 + s->n_discovery].revents & POLLIN)
            serve_udp(s, s->service_fd, 1);
        /* New connections on the outlets polled this round; consumers that
         * have something to read (only they are read: no syscall for the
         * others). */
        for (int i = 2 + s->n_discovery; i < n; i++) {
            if (kind[i] == POLL_LISTEN) {
                lsl_outlet *o = what[i];
                if ((pfd[i].revents & POLLIN) && !o->dead)
                    lsl_outlet_accept(o);
            } else if (kind[i] == POLL_CONSUMER) {
                lsl_consumer *c = what[i];
                if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
                    c->readable = 1;
            }
        }
        /* Every consumer: read requests, fill from the ring, send. */
        uint64_t now = core_now_ns();
        for (lsl_outlet *o = s->outlets; o; o = o->next)
            if (!o->dead)
                lsl_outlet_serve(o, now);
    }
    s->stop = 1; /* outlets destroyed from now on close their own sockets */
    reap_dead(s);
    pthread_mutex_unlock(&s->lock);
    free(pfd);
    free(what);
    free(kind);
    return NULL;
}

omma_status lsl_server_create(const lsl_server_options *opts, lsl_server **out)
{
    *out = NULL;
    lsl_server_options def = {0};
    if (!opts)
        opts = &def;
    const char *bind_text = opts->bind ? opts->bind : "127.0.0.1";
    int dport = opts->discovery_port ? opts->discovery_port : LSL_DISCOVERY_PORT;
    lsl_server *s = calloc(1, sizeof *s);
    if (!s)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "lsl server: out of memory");
    s->wake_fd = s->service_fd = -1;
    if (inet_pton(AF_INET, bind_text, &s->bind_addr) != 1) {
        free(s);
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "lsl server: '%s' is not an IPv4 address",
                         bind_text);
    }
    if (gethostname(s->hostname, sizeof s->hostname - 1) != 0)
        snprintf(s->hostname, sizeof s->hostname, "localhost");
    omma_status st = OMMA_OK;
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->reaped, NULL);
    s->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (s->wake_fd < 0) {
        st = OMMA_FAIL(OMMA_ERR_IO, "lsl server: eventfd: %s", strerror(errno));
        goto fail;
    }
    /* The discovery port, shared with other LSL programs on this machine. */
    int fd = udp_socket(s->bind_addr, dport, 1);
    if (fd < 0) {
        omma_log(OMMA_LOG_WARN,
                 "lsl: cannot listen for discovery on %s:%d (%s); resolvers find omma on its "
                 "service port only",
                 bind_text, dport, strerror(errno));
    } else {
        s->discovery_fds[s->n_discovery++] = fd;
        if (s->bind_addr.s_addr == htonl(INADDR_ANY)) {
            for (size_t g = 0; g < sizeof multicast_groups / sizeof multicast_groups[0]; g++) {
                struct ip_mreq m = {.imr_interface.s_addr = htonl(INADDR_ANY)};
                inet_pton(AF_INET, multicast_groups[g], &m.imr_multiaddr);
                if (setsockopt(fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &m, sizeof m) != 0)
                    omma_log(OMMA_LOG_DEBUG, "lsl: cannot join %s: %s", multicast_groups[g],
                             strerror(errno));
            }
        }
    }
    /* The service port: the first free one of LSL's range, as liblsl's. */
    for (int p = LSL_BASE_PORT; p < LSL_BASE_PORT + LSL_PORT_RANGE && s->service_fd < 0; p++) {
        s->service_fd = udp_socket(s->bind_addr, p, 0);
        s->service_port = p;
    }
    if (s->service_fd < 0) {
        s->service_fd = udp_socket(s->bind_addr, 0, 0);
        struct sockaddr_in sa;
        socklen_t sl = sizeof sa;
        if (s->service_fd < 0 || getsockname(s->service_fd, (struct sockaddr *)&sa, &sl) != 0) {
            st = OMMA_FAIL(OMMA_ERR_IO, "lsl server: cannot bind a UDP service port on %s: %s",
                           bind_text, strerror(errno));
            goto fail;
        }
        s->service_port = ntohs(sa.sin_port);
    }
    if (pthread_create(&s->thread, NULL, server_main, s) != 0) {
        st = OMMA_FAIL(OMMA_ERR_INTERNAL, "lsl server: cannot start its thread");
        goto fail;
    }
    *out = s;
    return OMMA_OK;
fail:
    for (int i = 0; i < s->n_discovery; i++)
        close(s->discovery_fds[i]);
    if (s->service_fd >= 0)
        close(s->service_fd);
    if (s->wake_fd >= 0)
        close(s->wake_fd);
    pthread_cond_destroy(&s->reaped);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return st;
}

void lsl_server_destroy(lsl_server *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_mutex_unlock(&s->lock);
    atomic_store(&s->wake_pending, 0);
    lsl_server_wake(s);
    pthread_join(s->thread, NULL);
    if (s->outlets)
        omma_log(OMMA_LOG_ERROR, "lsl: server destroyed before its outlets");
    for (int i = 0; i < s->n_discovery; i++)
        close(s->discovery_fds[i]);
    close(s->service_fd);
    close(s->wake_fd);
    pthread_cond_destroy(&s->reaped);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
