#define _GNU_SOURCE /* SO_PEERCRED, struct ucred, MSG_CMSG_CLOEXEC, accept4 */
#include "ipc/bus_socket.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"

omma_status bus_dir(const char *dir, char *out, size_t cap)
{
    if (!out || cap == 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "bus_dir: NULL argument");
    const char *env = getenv("OMMA_BUS_DIR");
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    int n;
    if (dir && *dir)
        n = snprintf(out, cap, "%s", dir);
    else if (env && *env)
        n = snprintf(out, cap, "%s", env);
    else if (xdg && *xdg)
        n = snprintf(out, cap, "%s/omma-bus", xdg);
    else
        n = snprintf(out, cap, "/tmp/omma-bus-%u", (unsigned)getuid());
    if (n < 0 || (size_t)n >= cap)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "bus directory path too long");
    if (mkdir(out, 0700) != 0 && errno != EEXIST)
        return OMMA_FAIL(OMMA_ERR_IO, "bus directory %s: mkdir: %s", out, strerror(errno));
    struct stat st;
    if (lstat(out, &st) != 0)
        return OMMA_FAIL(OMMA_ERR_IO, "bus directory %s: %s", out, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return OMMA_FAIL(OMMA_ERR_IO, "bus directory %s is not a directory", out);
    if (st.st_uid != getuid())
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "bus directory %s belongs to uid %u, not to this user (%u)", out,
                         (unsigned)st.st_uid, (unsigned)getuid());
    if (st.st_mode & 077)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "bus directory %s has mode %03o: others may enter it (chmod 700 it)", out,
                         (unsigned)(st.st_mode & 0777));
    return OMMA_OK;
}

omma_status bus_name_check(const char *what, const char *name)
{
    if (!name || !*name)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s: empty name", what);
    size_t n = strlen(name);
    if (n >= 64)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s '%.20s...': longer than 63 characters", what,
                         name);
    if (name[0] == '.')
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%s '%s' starts with '.'", what, name);
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                             "%s '%s': character %zu is not one of A-Z a-z 0-9 . _ -", what, name,
                             i + 1);
    }
    return OMMA_OK;
}

omma_status bus_socket_path(const char *dir, const char *name, char *out, size_t cap)
{
    char d[256];
    OMMA_TRY(bus_name_check("bus name", name));
    OMMA_TRY(bus_dir(dir, d, sizeof d));
    int n = snprintf(out, cap, "%s/%s.sock", d, name);
    if (n < 0 || (size_t)n >= cap || (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "bus socket path %s/%s.sock is too long", d, name);
    return OMMA_OK;
}

static int make_addr(const char *path, struct sockaddr_un *a)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    if (strlen(path) >= sizeof a->sun_path)
        return -1;
    memcpy(a->sun_path, path, strlen(path) + 1);
    return 0;
}

static int new_socket(void)
{
    return socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
}

omma_status bus_listen(const char *path, int *fd)
{
    *fd = -1;
    struct sockaddr_un a;
    if (!path || make_addr(path, &a) != 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "bus socket path too long");
    int s = new_socket();
    if (s < 0)
        return OMMA_FAIL(OMMA_ERR_IO, "bus %s: socket: %s", path, strerror(errno));
    int bound = bind(s, (struct sockaddr *)&a, sizeof a) == 0;
    if (!bound && errno == EADDRINUSE) {
        /* A live publisher answers a connect; a dead one's file refuses. */
        int probe = -1;
        omma_status st = bus_connect(path, 200, &probe);
        if (st != OMMA_ERR_CLOSED) {
            /* Only a refusal proves the file stale: a publisher whose
             * backlog is full (a timeout) is alive. */
            if (probe >= 0)
                close(probe);
            close(s);
            if (st == OMMA_OK || st == OMMA_ERR_TIMEOUT)
                return OMMA_FAIL(OMMA_ERR_BUSY, "bus %s is already published by a live process",
                                 path);
            return st;
        }
        omma_clear_error();
        unlink(path);
        bound = bind(s, (struct sockaddr *)&a, sizeof a) == 0;
    }
    if (!bound) {
        int e = errno;
        close(s);
        return OMMA_FAIL(OMMA_ERR_IO, "bus %s: bind: %s", path, strerror(e));
    }
    if (listen(s, 64) != 0) {
        int e = errno;
        close(s);
        return OMMA_FAIL(OMMA_ERR_IO, "bus %s: listen: %s", path, strerror(e));
    }
    *fd = s;
    return OMMA_OK;
}

/* Waits up to timeout_ms (< 0: without limit) for events on fd; returns
 * poll's revents, 0 on timeout, -1 on error. */
static int wait_fd(int fd, short events, int timeout_ms)
{
    uint64_t end = timeout_ms >= 0 ? core_now_ns() + (uint64_t)timeout_ms * 1000000u : 0;
    for (;;) {
        int left = -1;
        if (timeout_ms >= 0) {
            uint64_t now = core_now_ns();
            left = now >= end ? 0 : (int)((end - now + 999999u) / 1000000u);
        }
        struct pollfd p = {fd, events, 0};
        int r = poll(&p, 1, left);
        if (r > 0)
            return p.revents;
        if (r == 0)
            return 0;
        if (errno != EINTR)
            return -1;
    }
}

omma_status bus_connect(const char *path, int timeout_ms, int *fd)
{
    *fd = -1;
    struct sockaddr_un a;
    if (!path || make_addr(path, &a) != 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "bus socket path too long");
    int s = new_socket();
    if (s < 0)
        return OMMA_FAIL(OMMA_ERR_IO, "bus %s: socket: %s", path, strerror(errno));
    /* A Unix socket's non-blocking connect either completes or fails with
     * EAGAIN when the listener's backlog is full; then the socket is still
     * unconnected (poll says POLLHUP at once), so try again until the
     * deadline, backing off from 1 to 16 ms. */
    uint64_t end = timeout_ms >= 0 ? core_now_ns() + (uint64_t)timeout_ms * 1000000u : 0;
    int backoff_ms = 1;
    while (connect(s, (struct sockaddr *)&a, sizeof a) != 0) {
        int e = errno;
        if (e == EINTR)
            continue;
        if (e == EAGAIN || e == EINPROGRESS) {
            uint64_t now = core_now_ns();
            if (timeout_ms >= 0 && now >= end) {
                close(s);
                return OMMA_FAIL(OMMA_ERR_TIMEOUT,
                                 "bus %s: the publisher accepted no connection within %d ms", path,
                                 timeout_ms);
            }
            int nap = backoff_ms;
            if (timeout_ms >= 0 && (uint64_t)nap * 1000000u > end - now)
                nap = (int)((end - now + 999999u) / 1000000u);
            poll(NULL, 0, nap);
            if (backoff_ms < 16)
                backoff_ms *= 2;
            continue;
        }
        close(s);
        if (e == ENOENT || e == ECONNREFUSED)
            return OMMA_FAIL(OMMA_ERR_CLOSED, "bus %s: no publisher (%s)", path, strerror(e));
        return OMMA_FAIL(OMMA_ERR_IO, "bus %s: connect: %s", path, strerror(e));
    }
    *fd = s;
    return OMMA_OK;
}

omma_status bus_accept(int listen_fd, int *fd, pid_t *pid, uid_t *uid, gid_t *gid)
{
    *fd = -1;
    int s = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (s < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED)
            return OMMA_OK;
        return OMMA_FAIL(OMMA_ERR_IO, "bus accept: %s", strerror(errno));
    }
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
        int e = errno;
        close(s);
        return OMMA_FAIL(OMMA_ERR_IO, "bus accept: SO_PEERCRED: %s", strerror(e));
    }
    *fd = s;
    *pid = cred.pid;
    *uid = cred.uid;
    *gid = cred.gid;
    return OMMA_OK;
}

int bus_peer_allowed(uid_t uid, gid_t gid, long allow_gid)
{
    if (uid == getuid())
        return 1;
    if (allow_gid < 0)
        return 0;
    /* The peer's primary group: SO_PEERCRED does not show supplementary
     * groups. */
    return gid == (gid_t)allow_gid;
}

static omma_status send_once(int fd, const void *msg, size_t n, int send_fd)
{
    struct iovec iov = {(void *)msg, n};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    struct msghdr mh = {0};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    if (send_fd >= 0) {
        memset(&ctl, 0, sizeof ctl);
        mh.msg_control = ctl.buf;
        mh.msg_controllen = sizeof ctl.buf;
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(c), &send_fd, sizeof(int));
    }
    for (;;) {
        ssize_t r = sendmsg(fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (r == (ssize_t)n)
            return OMMA_OK;
        if (r >= 0)
            return OMMA_FAIL(OMMA_ERR_IO, "bus send: %zd of %zu bytes", r, n);
        if (errno == EINTR)
            continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ENOBUFS)
            return OMMA_ERR_BUSY; /* no detail: the caller counts it */
        if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)
            return OMMA_FAIL(OMMA_ERR_CLOSED, "bus peer hung up");
        return OMMA_FAIL(OMMA_ERR_IO, "bus send: %s", strerror(errno));
    }
}

omma_status bus_send(int fd, const void *msg, size_t n, int send_fd)
{
    return send_once(fd, msg, n, send_fd);
}

omma_status bus_send_wait(int fd, const void *msg, size_t n, int send_fd, int timeout_ms)
{
    uint64_t end = core_now_ns() + (uint64_t)(timeout_ms < 0 ? 0 : timeout_ms) * 1000000u;
    for (;;) {
        omma_status st = send_once(fd, msg, n, send_fd);
        if (st != OMMA_ERR_BUSY)
            return st;
        uint64_t now = core_now_ns();
        if (timeout_ms >= 0 && now >= end)
            return OMMA_FAIL(OMMA_ERR_TIMEOUT, "bus send: the peer read nothing for %d ms",
                             timeout_ms);
        int left = timeout_ms < 0 ? -1 : (int)((end - now + 999999u) / 1000000u);
        int r = wait_fd(fd, POLLOUT, left);
        if (r < 0)
            return OMMA_FAIL(OMMA_ERR_IO, "bus send: poll: %s", strerror(errno));
        if (r & (POLLERR | POLLHUP))
            return OMMA_FAIL(OMMA_ERR_CLOSED, "bus peer hung up");
    }
}

/* Room for this many fds in one message: more are an error (one is
 * expected), and the kernel drops those beyond (MSG_CTRUNC). */
#define MAX_RECV_FDS 4

/* One recvmsg (flags: MSG_DONTWAIT, or 0 to wait up to the socket's
 * receive timeout): *n 0 when nothing came (a signal ends a wait). */
static omma_status recv_one(int fd, void *buf, size_t cap, size_t *n, int *recv_fd, int flags)
{
    struct iovec iov = {buf, cap};
    union {
        struct cmsghdr h;
        char buf[CMSG_SPACE(MAX_RECV_FDS * sizeof(int))];
    } ctl;
    struct msghdr mh = {0};
    mh.msg_iov = &iov;
    mh.msg_iovlen = 1;
    mh.msg_control = ctl.buf;
    mh.msg_controllen = sizeof ctl.buf;
    ssize_t r;
    do
        r = recvmsg(fd, &mh, flags | MSG_CMSG_CLOEXEC);
    while (r < 0 && errno == EINTR && (flags & MSG_DONTWAIT));
    if (r < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
            return OMMA_OK;
        if (errno == ECONNRESET)
            return OMMA_FAIL(OMMA_ERR_CLOSED, "bus peer hung up");
        return OMMA_FAIL(OMMA_ERR_IO, "bus receive: %s", strerror(errno));
    }
    /* Close whatever fds came, unless exactly one was expected. */
    int fds[MAX_RECV_FDS], nfds = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k && nfds < MAX_RECV_FDS; i++)
            memcpy(&fds[nfds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
    }
    omma_status st = OMMA_OK;
    if (r == 0)
        st = OMMA_FAIL(OMMA_ERR_CLOSED, "bus peer hung up");
    else if (mh.msg_flags & MSG_TRUNC)
        st = OMMA_FAIL(OMMA_ERR_FORMAT, "bus message longer than %zu bytes", cap);
    else if ((mh.msg_flags & MSG_CTRUNC) && nfds == MAX_RECV_FDS)
        st = OMMA_FAIL(OMMA_ERR_FORMAT, "bus message carries more than %d file descriptors",
                       MAX_RECV_FDS);
    else if (mh.msg_flags & MSG_CTRUNC) {
        struct rlimit rl;
        unsigned long long lim = getrlimit(RLIMIT_NOFILE, &rl) == 0 ? rl.rlim_cur : 0;
        st = OMMA_FAIL(OMMA_ERR_IO,
                       "bus receive: the kernel dropped a file descriptor sent with the message: "
                       "the open-file limit (ulimit -n, %llu) is reached",
                       lim);
    } else if (nfds > 1 || (nfds == 1 && !recv_fd))
        st = OMMA_FAIL(OMMA_ERR_FORMAT, "bus message carries %d file descriptors, expected %d",
                       nfds, recv_fd ? 1 : 0);
    if (st != OMMA_OK) {
        for (int i = 0; i < nfds; i++)
            close(fds[i]);
        return st;
    }
    if (nfds == 1)
        *recv_fd = fds[0];
    *n = (size_t)r;
    return OMMA_OK;
}

omma_status bus_recv(int fd, void *buf, size_t cap, size_t *n, int *recv_fd, int timeout_ms)
{
    *n = 0;
    if (recv_fd)
        *recv_fd = -1;
    /* A message already there is taken without a poll first. */
    omma_status st = recv_one(fd, buf, cap, n, recv_fd, MSG_DONTWAIT);
    if (st != OMMA_OK || *n || timeout_ms == 0)
        return st;
    int r = wait_fd(fd, POLLIN, timeout_ms);
    if (r < 0)
        return OMMA_FAIL(OMMA_ERR_IO, "bus receive: poll: %s", strerror(errno));
    if (r == 0)
        return OMMA_OK;
    return recv_one(fd, buf, cap, n, recv_fd, MSG_DONTWAIT);
}

omma_status bus_set_recv_timeout(int fd, int timeout_ms)
{
    /* The socket's receives wait from now (sends and the other receives
     * pass MSG_DONTWAIT themselves). */
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || ((fl & O_NONBLOCK) && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0))
        return OMMA_FAIL(OMMA_ERR_IO, "bus socket: fcntl: %s", strerror(errno));
    struct timeval tv = {0, 0};
    if (timeout_ms > 0)
        tv = (struct timeval){timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0)
        return OMMA_FAIL(OMMA_ERR_IO, "bus socket: SO_RCVTIMEO: %s", strerror(errno));
    return OMMA_OK;
}

omma_status bus_recv_blocking(int fd, void *buf, size_t cap, size_t *n, int *recv_fd)
{
    *n = 0;
    if (recv_fd)
        *recv_fd = -1;
    return recv_one(fd, buf, cap, n, recv_fd, 0);
}
