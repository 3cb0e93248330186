/* The frame bus's sockets (src/ipc/bus_socket.*) for real, in a temporary
 * OMMA_BUS_DIR: the private directory and names, listen / connect / accept,
 * message boundaries, fds passed with SCM_RIGHTS (and dropped by the
 * kernel at the open-file limit), live and stale names, a full backlog,
 * timeouts, hang-ups, a peer that never reads, SO_PEERCRED against forked
 * children. Every case ends with the fds it started with. */
#define _GNU_SOURCE /* memfd_create */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"
#include "ipc/bus_socket.h"
#include "testing.h"

static char tmp[256]; /* mkdtemp: this run's folder */
static char busdir[300]; /* OMMA_BUS_DIR = tmp/bus */

static int count_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own fd */
}

#define FDS_BEGIN() int fds_at_start_ = count_fds()
#define FDS_END() CHECK(count_fds() == fds_at_start_)

/* Accepts one connection, waiting up to 5 s for it (a bound, not a timing). */
static omma_status accept_wait(int lfd, int *fd, pid_t *pid, uid_t *uid, gid_t *gid)
{
    struct pollfd p = {lfd, POLLIN, 0};
    if (poll(&p, 1, 5000) != 1)
        return OMMA_ERR_TIMEOUT;
    return bus_accept(lfd, fd, pid, uid, gid);
}

/* A connected pair through a listener at NAME; the listener is closed. */
static int pair(const char *name, int *a, int *b)
{
    char path[256];
    int lfd = -1;
    pid_t pid;
    uid_t uid;
    gid_t gid;
    *a = *b = -1;
    if (bus_socket_path(NULL, name, path, sizeof path) != OMMA_OK ||
        bus_listen(path, &lfd) != OMMA_OK || bus_connect(path, 1000, a) != OMMA_OK ||
        accept_wait(lfd, b, &pid, &uid, &gid) != OMMA_OK || *b < 0) {
        fprintf(stderr, "pair %s: %s\n", name, omma_last_error());
        if (lfd >= 0)
            close(lfd);
        return -1;
    }
    close(lfd);
    unlink(path);
    return 0;
}

static void bus_dir_is_private(void)
{
    FDS_BEGIN();
    char out[256], want[320];
    REQUIRE_OK(bus_dir(NULL, out, sizeof out));
    CHECK(strcmp(out, busdir) == 0);
    struct stat st;
    REQUIRE(stat(busdir, &st) == 0);
    CHECK(S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700 && st.st_uid == getuid());
    REQUIRE_OK(bus_dir(NULL, out, sizeof out)); /* it exists: fine */

    /* Others may enter: refused, naming the mode. */
    REQUIRE(chmod(busdir, 0755) == 0);
    CHECK_FAILS(bus_dir(NULL, out, sizeof out), OMMA_ERR_INVALID_ARG, "has mode 755");
    REQUIRE(chmod(busdir, 0710) == 0);
    CHECK_FAILS(bus_dir(NULL, out, sizeof out), OMMA_ERR_INVALID_ARG, "has mode 710");
    REQUIRE(chmod(busdir, 0700) == 0);
    /* Another user's: refused (as root we can make one; else skip). */
    if (geteuid() == 0) {
        REQUIRE(chown(busdir, 65534, 65534) == 0);
        CHECK_FAILS(bus_dir(NULL, out, sizeof out), OMMA_ERR_INVALID_ARG,
                    "belongs to uid 65534, not to this user (0)");
        REQUIRE(chown(busdir, getuid(), getgid()) == 0);
    } else {
        fprintf(stderr, "  (not root: the other-owner case is not run)\n");
    }
    REQUIRE_OK(bus_dir(NULL, out, sizeof out));

    /* An explicit directory wins over OMMA_BUS_DIR; a file is refused. */
    snprintf(want, sizeof want, "%s/explicit", tmp);
    REQUIRE_OK(bus_dir(want, out, sizeof out));
    CHECK(strcmp(out, want) == 0 && stat(want, &st) == 0 && (st.st_mode & 0777) == 0700);
    CHECK(rmdir(want) == 0);
    snprintf(want, sizeof want, "%s/afile", tmp);
    int f = open(want, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
    REQUIRE(f >= 0);
    close(f);
    CHECK_FAILS(bus_dir(want, out, sizeof out), OMMA_ERR_IO, "is not a directory");
    CHECK(unlink(want) == 0);
    /* A symbolic link to a private directory is refused too (lstat). */
    snprintf(want, sizeof want, "%s/alink", tmp);
    REQUIRE(symlink(busdir, want) == 0);
    CHECK_FAILS(bus_dir(want, out, sizeof out), OMMA_ERR_IO, "is not a directory");
    CHECK(unlink(want) == 0);
    snprintf(want, sizeof want, "%s/missing/bus", tmp);
    CHECK_FAILS(bus_dir(want, out, sizeof out), OMMA_ERR_IO, "mkdir: No such file");
    CHECK_FAILS(bus_dir(NULL, out, 8), OMMA_ERR_INVALID_ARG, "too long");
    CHECK_FAILS(bus_dir(NULL, NULL, 8), OMMA_ERR_INVALID_ARG, "NULL");

    /* Without OMMA_BUS_DIR: $XDG_RUNTIME_DIR/omma-bus. */
    char *saved_xdg = getenv("XDG_RUNTIME_DIR") ? strdup(getenv("XDG_RUNTIME_DIR")) : NULL;
    unsetenv("OMMA_BUS_DIR");
    setenv("XDG_RUNTIME_DIR", tmp, 1);
    REQUIRE_OK(bus_dir(NULL, out, sizeof out));
    snprintf(want, sizeof want, "%s/omma-bus", tmp);
    CHECK(strcmp(out, want) == 0 && stat(want, &st) == 0 && (st.st_mode & 0777) == 0700);
    CHECK(rmdir(want) == 0);
    /* Neither: /tmp/omma-bus-UID (removed again if this made it). */
    unsetenv("XDG_RUNTIME_DIR");
    snprintf(want, sizeof want, "/tmp/omma-bus-%u", (unsigned)getuid());
    int existed = stat(want, &st) == 0;
    omma_status s = bus_dir(NULL, out, sizeof out);
    CHECK(strcmp(out, want) == 0);
    CHECK(s == OMMA_OK || existed); /* an existing one may be someone's, wrongly made */
    if (!existed)
        rmdir(want);
    if (saved_xdg)
        setenv("XDG_RUNTIME_DIR", saved_xdg, 1);
    free(saved_xdg);
    setenv("OMMA_BUS_DIR", busdir, 1);
    FDS_END();
}

static void names_and_paths(void)
{
    const char *good[] = {"a", "cam0", "Front-Door_2.main", "0",
                          "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        CHECK(strlen(good[i]) <= 63);
        CHECK(bus_name_check("bus name", good[i]) == OMMA_OK);
    }
    CHECK_FAILS(bus_name_check("bus name", ""), OMMA_ERR_INVALID_ARG, "bus name: empty name");
    CHECK_FAILS(bus_name_check("camera", NULL), OMMA_ERR_INVALID_ARG, "camera: empty name");
    char longname[80];
    memset(longname, 'x', 64);
    longname[64] = '\0';
    CHECK_FAILS(bus_name_check("bus name", longname), OMMA_ERR_INVALID_ARG,
                "longer than 63 characters");
    CHECK_FAILS(bus_name_check("bus name", ".hidden"), OMMA_ERR_INVALID_ARG, "starts with '.'");
    CHECK_FAILS(bus_name_check("bus name", ".."), OMMA_ERR_INVALID_ARG, "starts with '.'");
    CHECK_FAILS(bus_name_check("bus name", "a/b"), OMMA_ERR_INVALID_ARG,
                "'a/b': character 2 is not one of");
    CHECK_FAILS(bus_name_check("bus name", "ab c"), OMMA_ERR_INVALID_ARG, "character 3");
    CHECK_FAILS(bus_name_check("bus name", "caf\xc3\xa9"), OMMA_ERR_INVALID_ARG, "character 4");
    CHECK_FAILS(bus_name_check("bus name", "x\n"), OMMA_ERR_INVALID_ARG, "character 2");

    char path[256], want[400];
    REQUIRE_OK(bus_socket_path(NULL, "cams", path, sizeof path));
    snprintf(want, sizeof want, "%s/cams.sock", busdir);
    CHECK(strcmp(path, want) == 0);
    CHECK_FAILS(bus_socket_path(NULL, "../x", path, sizeof path), OMMA_ERR_INVALID_ARG,
                "starts with '.'");
    CHECK_FAILS(bus_socket_path(NULL, "cams", path, 10), OMMA_ERR_INVALID_ARG, "too long");
    /* A directory too deep for sun_path (108 bytes). */
    char deep[400];
    snprintf(deep, sizeof deep, "%s/%0100d", tmp, 0);
    CHECK_FAILS(bus_socket_path(deep, "cams", path, sizeof path), OMMA_ERR_INVALID_ARG,
                "is too long");
    rmdir(deep);
    int fd = 99;
    CHECK_FAILS(bus_listen(NULL, &fd), OMMA_ERR_INVALID_ARG, "too long");
    CHECK(fd == -1);
    memset(deep, 'p', 200);
    deep[200] = '\0';
    CHECK_FAILS(bus_connect(deep, 10, &fd), OMMA_ERR_INVALID_ARG, "too long");
    CHECK(fd == -1);
}

static void connect_accept_and_boundaries(void)
{
    FDS_BEGIN();
    char path[256];
    REQUIRE_OK(bus_socket_path(NULL, "bounds", path, sizeof path));
    int lfd, a, b = 7;
    pid_t pid = 0;
    uid_t uid = 99;
    gid_t gid = 99;
    REQUIRE_OK(bus_listen(path, &lfd));
    REQUIRE_OK(bus_accept(lfd, &b, &pid, &uid, &gid)); /* none pending */
    CHECK(b == -1);
    REQUIRE_OK(bus_connect(path, 1000, &a));
    REQUIRE_OK(accept_wait(lfd, &b, &pid, &uid, &gid));
    REQUIRE(b >= 0);
    CHECK(pid == getpid() && uid == getuid() && gid == getgid());
    CHECK(fcntl(a, F_GETFD) & FD_CLOEXEC);
    CHECK(fcntl(b, F_GETFD) & FD_CLOEXEC);

    /* Three messages of different sizes arrive as three, whole. */
    static uint8_t out[3][5000], in[6000];
    size_t sizes[3] = {1, 100, 5000};
    for (int i = 0; i < 3; i++) {
        for (size_t k = 0; k < sizes[i]; k++)
            out[i][k] = (uint8_t)(k * 7 + (size_t)i);
        REQUIRE_OK(bus_send(a, out[i], sizes[i], -1));
    }
    for (int i = 0; i < 3; i++) {
        size_t n = 0;
        int rfd = 5;
        REQUIRE_OK(bus_recv(b, in, sizeof in, &n, &rfd, 1000));
        CHECK(n == sizes[i] && memcmp(in, out[i], n) == 0 && rfd == -1);
    }
    /* And the other way, with bus_send_wait. */
    REQUIRE_OK(bus_send_wait(b, "pong", 4, -1, 1000));
    size_t n = 0;
    REQUIRE_OK(bus_recv(a, in, sizeof in, &n, NULL, -1));
    CHECK(n == 4 && memcmp(in, "pong", 4) == 0);
    close(a);
    close(b);
    close(lfd);
    CHECK(unlink(path) == 0);
    FDS_END();
}

static void fd_passing(void)
{
    FDS_BEGIN();
    int a, b;
    REQUIRE(pair("fds", &a, &b) == 0);
    int mem = memfd_create("bus-test", MFD_CLOEXEC);
    REQUIRE(mem >= 0);
    REQUIRE(ftruncate(mem, 4096) == 0);
    REQUIRE_OK(bus_send(a, "fd!", 3, mem));
    char in[64];
    size_t n = 0;
    int rfd = -1;
    REQUIRE_OK(bus_recv(b, in, sizeof in, &n, &rfd, 1000));
    CHECK(n == 3 && memcmp(in, "fd!", 3) == 0);
    REQUIRE(rfd >= 0 && rfd != mem);
    CHECK(fcntl(rfd, F_GETFD) & FD_CLOEXEC);
    /* The same file: written through one, read through the other. */
    CHECK(pwrite(rfd, "through the socket", 18, 100) == 18);
    char back[32] = {0};
    CHECK(pread(mem, back, 18, 100) == 18 && memcmp(back, "through the socket", 18) == 0);
    struct stat s1, s2;
    CHECK(fstat(rfd, &s1) == 0 && fstat(mem, &s2) == 0 && s1.st_ino == s2.st_ino &&
          s1.st_dev == s2.st_dev);
    close(rfd);

    /* A receiver that wants no fd: refused, the fd closed. */
    REQUIRE_OK(bus_send(a, "x", 1, mem));
    CHECK_FAILS(bus_recv(b, in, sizeof in, &n, NULL, 1000), OMMA_ERR_FORMAT,
                "carries 1 file descriptors, expected 0");
    CHECK(n == 0);

    /* Two or five fds in one message (a hostile peer): refused, all closed. */
    for (int k = 2; k <= 5; k += 3) {
        int fds[5];
        for (int i = 0; i < k; i++)
            fds[i] = mem;
        union {
            struct cmsghdr h;
            char buf[CMSG_SPACE(5 * sizeof(int))];
        } ctl;
        memset(&ctl, 0, sizeof ctl);
        struct iovec iov = {"yy", 2};
        struct msghdr mh = {0};
        mh.msg_iov = &iov;
        mh.msg_iovlen = 1;
        mh.msg_control = ctl.buf;
        mh.msg_controllen = CMSG_SPACE((size_t)k * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN((size_t)k * sizeof(int));
        memcpy(CMSG_DATA(c), fds, (size_t)k * sizeof(int));
        REQUIRE(sendmsg(a, &mh, MSG_NOSIGNAL) == 2);
        rfd = 12345;
        CHECK_FAILS(bus_recv(b, in, sizeof in, &n, &rfd, 1000), OMMA_ERR_FORMAT,
                    k == 2 ? "carries 2 file descriptors, expected 1"
                           : "carries more than 4 file descriptors");
        CHECK(rfd == -1 && n == 0);
    }
    /* A message longer than the buffer: refused, its fd closed. */
    static uint8_t big[300];
    REQUIRE_OK(bus_send(a, big, sizeof big, mem));
    CHECK_FAILS(bus_recv(b, in, sizeof in, &n, &rfd, 1000), OMMA_ERR_FORMAT,
                "bus message longer than 64 bytes");
    CHECK(rfd == -1 && n == 0);
    /* The next message is whole: the long one was dropped entirely. */
    REQUIRE_OK(bus_send(a, "next", 4, -1));
    REQUIRE_OK(bus_recv(b, in, sizeof in, &n, &rfd, 1000));
    CHECK(n == 4 && memcmp(in, "next", 4) == 0);
    close(mem);
    close(a);
    close(b);
    FDS_END();
}

static void live_and_stale_names(void)
{
    FDS_BEGIN();
    char path[256];
    REQUIRE_OK(bus_socket_path(NULL, "live", path, sizeof path));
    int fd = 3;
    CHECK_FAILS(bus_connect(path, 100, &fd), OMMA_ERR_CLOSED, "no publisher");
    CHECK(fd == -1);
    int l1, l2 = 5;
    REQUIRE_OK(bus_listen(path, &l1));
    CHECK_FAILS(bus_listen(path, &l2), OMMA_ERR_BUSY, "already published by a live process");
    CHECK(l2 == -1);
    /* The probe's connection is pending on l1: drain it. */
    int probe;
    pid_t pid;
    uid_t uid;
    gid_t gid;
    REQUIRE_OK(accept_wait(l1, &probe, &pid, &uid, &gid));
    CHECK(probe >= 0 && pid == getpid());
    if (probe >= 0)
        close(probe);

    /* The publisher died without unlinking: the file stays, refuses, and
     * the next publisher replaces it. */
    close(l1);
    struct stat st;
    CHECK(stat(path, &st) == 0 && S_ISSOCK(st.st_mode));
    CHECK_FAILS(bus_connect(path, 100, &fd), OMMA_ERR_CLOSED, "Connection refused");
    REQUIRE_OK(bus_listen(path, &l2));
    int a, b;
    REQUIRE_OK(bus_connect(path, 1000, &a));
    REQUIRE_OK(accept_wait(l2, &b, &pid, &uid, &gid));
    CHECK(b >= 0);
    close(a);
    close(b);

    /* A live publisher whose backlog is full is still live: connect times
     * out, listen says busy and leaves its socket alone. */
    int pending[200], np = 0;
    omma_status s = OMMA_OK;
    while (np < 200 && (s = bus_connect(path, 0, &pending[np])) == OMMA_OK)
        np++;
    CHECK(s == OMMA_ERR_TIMEOUT && np > 0 && np < 200);
    CHECK(strstr(omma_last_error(), "accepted no connection within 0 ms") != NULL);
    CHECK_FAILS(bus_connect(path, 20, &fd), OMMA_ERR_TIMEOUT, "within 20 ms");
    CHECK(fd == -1);
    CHECK_FAILS(bus_listen(path, &l1), OMMA_ERR_BUSY, "already published");
    /* Still the same socket: accepting one makes room for a new one. */
    REQUIRE_OK(accept_wait(l2, &b, &pid, &uid, &gid));
    CHECK(b >= 0);
    close(b);
    REQUIRE_OK(bus_connect(path, 1000, &a));
    close(a);
    for (int i = 0; i < np; i++)
        close(pending[i]);
    close(l2);
    CHECK(unlink(path) == 0);
    FDS_END();
}

/* A forked reader drains the backlog while bus_connect waits for room. */
static void connect_waits_for_room(void)
{
    FDS_BEGIN();
    char path[256];
    REQUIRE_OK(bus_socket_path(NULL, "room", path, sizeof path));
    int l;
    REQUIRE_OK(bus_listen(path, &l));
    int pending[200], np = 0;
    while (np < 200 && bus_connect(path, 0, &pending[np]) == OMMA_OK)
        np++;
    REQUIRE(np > 0 && np < 200);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        usleep(20000); /* after the parent starts waiting (either order works) */
        int c;
        pid_t p;
        uid_t u;
        gid_t g;
        _exit(accept_wait(l, &c, &p, &u, &g) == OMMA_OK && c >= 0 ? 0 : 1);
    }
    int a = -1;
    CHECK(bus_connect(path, 10000, &a) == OMMA_OK);
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (a >= 0)
        close(a);
    for (int i = 0; i < np; i++)
        close(pending[i]);
    close(l);
    unlink(path);
    FDS_END();
}

static void timeouts_and_hangups(void)
{
    FDS_BEGIN();
    int a, b;
    REQUIRE(pair("hangup", &a, &b) == 0);
    char in[64];
    size_t n = 99;
    int rfd = 4;
    REQUIRE_OK(bus_recv(b, in, sizeof in, &n, &rfd, 0)); /* nothing: returns at once */
    CHECK(n == 0 && rfd == -1);
    n = 99;
    REQUIRE_OK(bus_recv(b, in, sizeof in, &n, &rfd, 30)); /* nothing within 30 ms */
    CHECK(n == 0);
    /* The one-call receive: the socket's timeout, then a message. */
    REQUIRE_OK(bus_set_recv_timeout(b, 30));
    n = 99;
    REQUIRE_OK(bus_recv_blocking(b, in, sizeof in, &n, &rfd)); /* nothing within 30 ms */
    CHECK(n == 0 && rfd == -1);
    REQUIRE_OK(bus_send(a, "frames", 6, -1));
    REQUIRE_OK(bus_recv_blocking(b, in, sizeof in, &n, &rfd));
    CHECK(n == 6 && memcmp(in, "frames", 6) == 0);
    /* It waits: a message sent 50 ms later by a child arrives (a socket
     * left non-blocking would return nothing at once). */
    REQUIRE_OK(bus_set_recv_timeout(b, 10000));
    pid_t later = fork();
    if (later == 0) {
        usleep(50000);
        _exit(bus_send(a, "later", 5, -1) == OMMA_OK ? 0 : 1);
    }
    n = 0;
    REQUIRE_OK(bus_recv_blocking(b, in, sizeof in, &n, &rfd));
    CHECK(n == 5 && memcmp(in, "later", 5) == 0);
    waitpid(later, NULL, 0);
    /* bus_recv still does not wait when told not to. */
    REQUIRE_OK(bus_recv(b, in, sizeof in, &n, &rfd, 0));
    CHECK(n == 0);
    REQUIRE_OK(bus_set_recv_timeout(b, 0)); /* without limit again */
    CHECK_FAILS(bus_set_recv_timeout(-1, 10), OMMA_ERR_IO, "Bad file descriptor");
    /* What was sent before the hang-up still arrives, then CLOSED. */
    REQUIRE_OK(bus_send(a, "last words", 10, -1));
    close(a);
    REQUIRE_OK(bus_recv(b, in, sizeof in, &n, &rfd, -1));
    CHECK(n == 10 && memcmp(in, "last words", 10) == 0);
    CHECK_FAILS(bus_recv(b, in, sizeof in, &n, &rfd, -1), OMMA_ERR_CLOSED, "hung up");
    CHECK_FAILS(bus_recv(b, in, sizeof in, &n, &rfd, 0), OMMA_ERR_CLOSED, "hung up");
    CHECK(n == 0);
    CHECK_FAILS(bus_recv_blocking(b, in, sizeof in, &n, &rfd), OMMA_ERR_CLOSED, "hung up");
    /* Sending to a peer that left. */
    CHECK_FAILS(bus_send(b, "x", 1, -1), OMMA_ERR_CLOSED, "hung up");
    CHECK_FAILS(bus_send_wait(b, "x", 1, -1, 100), OMMA_ERR_CLOSED, "hung up");
    close(b);
    FDS_END();
}

/* A peer that never reads: bus_send says BUSY without blocking;
 * bus_send_wait times out; once someone reads, it goes through. */
static void peer_that_never_reads(void)
{
    FDS_BEGIN();
    int a, b;
    REQUIRE(pair("slow", &a, &b) == 0);
    static uint8_t msg[256];
    int sent = 0;
    omma_status s = OMMA_OK;
    while (sent < 1000000 && (s = bus_send(a, msg, sizeof msg, -1)) == OMMA_OK)
        sent++;
    CHECK(s == OMMA_ERR_BUSY && sent > 0);
    CHECK(bus_send(a, msg, sizeof msg, -1) == OMMA_ERR_BUSY); /* again: still no block */
    CHECK_FAILS(bus_send_wait(a, msg, sizeof msg, -1, 20), OMMA_ERR_TIMEOUT,
                "the peer read nothing for 20 ms");
    /* A forked reader drains the queue: bus_send_wait goes through. */
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        close(a);
        uint8_t in[300];
        size_t n;
        int got = 0;
        for (;;) {
            if (bus_recv(b, in, sizeof in, &n, NULL, 5000) != OMMA_OK || n == 0)
                _exit(2);
            if (n == 4 && memcmp(in, "done", 4) == 0)
                _exit(got == sent ? 0 : 3);
            got++;
        }
    }
    close(b);
    CHECK(bus_send_wait(a, "done", 4, -1, -1) == OMMA_OK);
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(a);
    FDS_END();
}

/* In a forked child whose open-file table is full, a message carrying an fd
 * arrives without it: the kernel drops the fd and sets MSG_CTRUNC, and
 * bus_recv reports it naming the limit. */
static void fd_dropped_at_the_open_file_limit(void)
{
    FDS_BEGIN();
    int a, b;
    REQUIRE(pair("nofile", &a, &b) == 0);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        close(a);
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
            _exit(10);
        rl.rlim_cur = 64;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0)
            _exit(11);
        int filled = 0;
        while (open("/dev/null", O_RDONLY | O_CLOEXEC) >= 0)
            filled++;
        if (errno != EMFILE)
            _exit(12);
        if (bus_send(b, "ready", 5, -1) != OMMA_OK)
            _exit(13);
        char in[64];
        size_t n = 0;
        int rfd = 77;
        omma_status st = bus_recv(b, in, sizeof in, &n, &rfd, 5000);
        if (st != OMMA_ERR_IO)
            _exit(14);
        if (!strstr(omma_last_error(), "open-file limit (ulimit -n, 64)"))
            _exit(15);
        if (rfd != -1 || n != 0)
            _exit(16);
        /* The next message, without an fd, comes through. */
        if (bus_recv(b, in, sizeof in, &n, &rfd, 5000) != OMMA_OK || n != 4 || rfd != -1)
            _exit(17);
        (void)filled;
        _exit(0);
    }
    close(b);
    char in[64];
    size_t n = 0;
    REQUIRE_OK(bus_recv(a, in, sizeof in, &n, NULL, 10000));
    CHECK(n == 5 && memcmp(in, "ready", 5) == 0);
    int mem = memfd_create("dropped", MFD_CLOEXEC);
    REQUIRE(mem >= 0);
    REQUIRE_OK(bus_send(a, "with an fd", 10, mem));
    REQUIRE_OK(bus_send(a, "next", 4, -1));
    close(mem);
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status));
    if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
        fprintf(stderr, "  child failed at step %d\n", WEXITSTATUS(status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(a);
    FDS_END();
}

static void peer_allowed(void)
{
    uid_t me = getuid();
    uid_t other = me == 65534 ? 65533 : 65534;
    CHECK(bus_peer_allowed(me, 12345, -1) == 1);
    CHECK(bus_peer_allowed(me, 12345, 99) == 1);
    CHECK(bus_peer_allowed(other, 12345, -1) == 0);
    CHECK(bus_peer_allowed(other, 12345, 12345) == 1);
    CHECK(bus_peer_allowed(other, 12345, 12346) == 0);
    CHECK(bus_peer_allowed(other, 0, -1) == 0);
}

/* SO_PEERCRED: the pid accept reports is the forked child's. */
static void peer_credentials_of_a_child(void)
{
    FDS_BEGIN();
    char path[256];
    REQUIRE_OK(bus_socket_path(NULL, "cred", path, sizeof path));
    int l;
    REQUIRE_OK(bus_listen(path, &l));
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        close(l);
        int c;
        if (bus_connect(path, 5000, &c) != OMMA_OK)
            _exit(2);
        pid_t me = getpid();
        if (bus_send_wait(c, &me, sizeof me, -1, 5000) != OMMA_OK)
            _exit(3);
        char in[8];
        size_t n;
        /* Wait for the parent's word (or its hang-up). */
        bus_recv(c, in, sizeof in, &n, NULL, 10000);
        close(c);
        _exit(0);
    }
    int c = -1;
    pid_t pid = 0;
    uid_t uid = 99;
    gid_t gid = 99;
    CHECK(accept_wait(l, &c, &pid, &uid, &gid) == OMMA_OK && c >= 0);
    CHECK(pid == child && uid == getuid() && gid == getgid());
    CHECK(bus_peer_allowed(uid, gid, -1) == 1);
    if (c >= 0) {
        pid_t said = 0;
        size_t n = 0;
        CHECK(bus_recv(c, &said, sizeof said, &n, NULL, 5000) == OMMA_OK);
        CHECK(n == sizeof said && said == child);
        CHECK(bus_send(c, "bye", 3, -1) == OMMA_OK);
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* The child is gone: its end hangs up. */
    if (c >= 0) {
        char in[8];
        size_t n;
        CHECK(bus_recv(c, in, sizeof in, &n, NULL, 5000) == OMMA_ERR_CLOSED);
        close(c);
    }
    close(l);
    unlink(path);
    FDS_END();
}

int main(void)
{
    signal(SIGPIPE, SIG_DFL); /* a SIGPIPE would kill the test: MSG_NOSIGNAL must hold */
    snprintf(tmp, sizeof tmp, "/tmp/omma-test-bus-XXXXXX");
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(busdir, sizeof busdir, "%s/bus", tmp);
    setenv("OMMA_BUS_DIR", busdir, 1);
    RUN(bus_dir_is_private);
    RUN(names_and_paths);
    RUN(connect_accept_and_boundaries);
    RUN(fd_passing);
    RUN(live_and_stale_names);
    RUN(connect_waits_for_room);
    RUN(timeouts_and_hangups);
    RUN(peer_that_never_reads);
    RUN(fd_dropped_at_the_open_file_limit);
    RUN(peer_allowed);
    RUN(peer_credentials_of_a_child);
    /* Leave nothing behind. */
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    if (system(cmd) != 0)
        fprintf(stderr, "could not remove %s\n", tmp);
    return testing_finish();
}
