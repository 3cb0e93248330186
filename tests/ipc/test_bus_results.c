/* Face results in a sealed memfd (src/ipc/bus_results.*): the publisher
 * writes records while a forked subscriber, which got the fd over a real
 * bus socket and mapped it read-only, reads them and checks that none is
 * torn; it cannot write, shrink or remap the memory writable. Frames not
 * written yet or already replaced; memfds that bus_results_map refuses. */
#define _GNU_SOURCE /* memfd_create, F_ADD_SEALS */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"
#include "ipc/bus_proto.h"
#include "ipc/bus_results.h"
#include "ipc/bus_socket.h"
#include "testing.h"

static char tmp[256];

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
    return n - 1;
}

#define FDS_BEGIN() int fds_at_start_ = count_fds()
#define FDS_END() CHECK(count_fds() == fds_at_start_)

/* What frame seq of camera c holds: count faces, every float a function
 * of (seq, c, face, index), so a record mixing two frames shows. */
static int faces_of(uint64_t seq, int max_faces)
{
    return (int)(seq % (uint64_t)(max_faces + 1));
}

static float value(uint64_t seq, int camera, int face, size_t k)
{
    return (float)((seq * 131 + (uint64_t)camera * 17 + (uint64_t)face * 7 + k) % 100003);
}

static void fill(omma_face *faces, int n, uint64_t seq, int camera)
{
    for (int f = 0; f < n; f++) {
        float *p = (float *)&faces[f];
        size_t floats = sizeof(omma_face) / sizeof(float);
        for (size_t k = 0; k < floats; k++)
            p[k] = value(seq, camera, f, k);
        faces[f].id = (int)(seq * 10 + (uint64_t)f);
    }
}

/* 0 when faces are frame seq's, else the number of wrong values. */
static int wrong(const omma_face *faces, int n, uint64_t seq, int camera)
{
    int bad = 0;
    for (int f = 0; f < n; f++) {
        const float *p = (const float *)&faces[f];
        size_t floats = sizeof(omma_face) / sizeof(float);
        bad += faces[f].id != (int)(seq * 10 + (uint64_t)f);
        for (size_t k = 1; k < floats; k++) /* 0 is the id */
            bad += p[k] != value(seq, camera, f, k);
    }
    return bad;
}

static void write_frame(bus_results *r, int camera, uint64_t seq, omma_face *scratch, int max)
{
    int n = faces_of(seq, max);
    fill(scratch, n, seq, camera);
    bus_results_write(r, camera, seq, seq * 1000 + 7, scratch, n);
}

static int connected_pair(int *a, int *b)
{
    char path[256];
    int l;
    pid_t pid;
    uid_t uid;
    gid_t gid;
    *a = *b = -1;
    if (bus_socket_path(NULL, "results", path, sizeof path) != OMMA_OK ||
        bus_listen(path, &l) != OMMA_OK)
        return -1;
    int ok = bus_connect(path, 1000, a) == OMMA_OK &&
             bus_accept(l, b, &pid, &uid, &gid) == OMMA_OK && *b >= 0;
    close(l);
    unlink(path);
    return ok ? 0 : -1;
}

enum { MAX_FACES = 4, RECORDS = 8, CAMERAS = 3, FRAMES = 20000 };

/* The subscriber: gets the fd, maps it, checks it is read-only, then reads
 * camera 1's frames 1..FRAMES as they come. Exit 0 on success. */
static int subscriber(int sock)
{
    uint8_t msg[64];
    size_t n = 0;
    int fd = -1;
    if (bus_recv(sock, msg, sizeof msg, &n, &fd, 10000) != OMMA_OK || n != sizeof(uint64_t) ||
        fd < 0)
        return 2;
    uint64_t bytes;
    memcpy(&bytes, msg, sizeof bytes);
    bus_results r;
    if (bus_results_map(fd, (size_t)bytes, &r) != OMMA_OK) {
        fprintf(stderr, "child: %s\n", omma_last_error());
        return 3;
    }
    /* No way to write what the others read. */
    if (mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) != MAP_FAILED ||
        errno != EPERM)
        return 4;
    if (pwrite(fd, "x", 1, 0) != -1 || errno != EPERM)
        return 5;
    if (ftruncate(fd, 0) != -1 || errno != EPERM)
        return 6;
    if (mprotect(r.base, r.bytes, PROT_READ | PROT_WRITE) != -1)
        return 7;
    close(fd);
    if (r.writable || r.fd != -1)
        return 8;
    /* Frames 1..3 of camera 0 were written before the fd was sent. */
    static omma_face faces[MAX_FACES];
    int got;
    for (uint64_t s = 1; s <= 3; s++)
        if (bus_results_read(&r, 0, s, faces, MAX_FACES, &got) != OMMA_OK ||
            got != faces_of(s, MAX_FACES) || wrong(faces, got, s, 0))
            return 9;
    long ok = 0, replaced = 0, torn = 0;
    for (uint64_t s = 1; s <= FRAMES; s++) {
        for (;;) {
            omma_status st = bus_results_read(&r, 1, s, faces, MAX_FACES, &got);
            if (st == OMMA_OK) {
                ok++;
                torn += got != faces_of(s, MAX_FACES) || wrong(faces, got, s, 1) != 0;
                break;
            }
            if (st == OMMA_ERR_CLOSED) {
                replaced++;
                break;
            }
            if (st != OMMA_ERR_TIMEOUT)
                return 10;
            sched_yield();
        }
    }
    fprintf(stderr, "  subscriber: %ld frames read whole, %ld already replaced, %ld torn\n", ok,
            replaced, torn);
    bus_results_close(&r);
    if (torn)
        return 11;
    if (ok < RECORDS) /* at least the last ones, which stay */
        return 12;
    return 0;
}

static void writer_and_forked_reader(void)
{
    FDS_BEGIN();
    bus_results w;
    REQUIRE_OK(bus_results_create(CAMERAS, RECORDS, MAX_FACES, &w));
    CHECK(w.bytes == bus_results_bytes(CAMERAS, RECORDS, MAX_FACES) && w.bytes % 4096 == 0);
    CHECK(w.writable && w.fd >= 0 && (fcntl(w.fd, F_GETFD) & FD_CLOEXEC));
    int seals = fcntl(w.fd, F_GET_SEALS);
    CHECK(seals == (F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL | F_SEAL_FUTURE_WRITE));
    static omma_face scratch[MAX_FACES + 2];
    for (uint64_t s = 1; s <= 3; s++)
        write_frame(&w, 0, s, scratch, MAX_FACES);
    int a, b;
    REQUIRE(connected_pair(&a, &b) == 0);
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        close(a);
        bus_results_close(&w);
        _exit(subscriber(b));
    }
    close(b);
    uint64_t bytes = w.bytes;
    CHECK(bus_send(a, &bytes, sizeof bytes, w.fd) == OMMA_OK);
    for (uint64_t s = 1; s <= FRAMES; s++) {
        write_frame(&w, 1, s, scratch, MAX_FACES);
        if (s % 3 == 0)
            write_frame(&w, 2, s, scratch, MAX_FACES); /* its neighbour changes too */
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status));
    if (WIFEXITED(status) && WEXITSTATUS(status))
        fprintf(stderr, "  subscriber failed at step %d\n", WEXITSTATUS(status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    close(a);
    /* The writer's own view of the last frames. */
    int got;
    static omma_face faces[MAX_FACES];
    REQUIRE_OK(bus_results_read(&w, 1, FRAMES, faces, MAX_FACES, &got));
    CHECK(got == faces_of(FRAMES, MAX_FACES) && !wrong(faces, got, FRAMES, 1));
    bus_results_close(&w);
    CHECK(w.fd == -1 && w.base == NULL);
    bus_results_close(&w); /* twice: fine */
    bus_results_close(NULL);
    FDS_END();
}

static void not_yet_replaced_and_limits(void)
{
    FDS_BEGIN();
    bus_results r;
    REQUIRE_OK(bus_results_create(2, RECORDS, 2, &r));
    static omma_face in[4], out[4];
    int n = 99;
    CHECK(bus_results_read(&r, 0, 5, out, 4, &n) == OMMA_ERR_TIMEOUT && n == 0);
    fill(in, 4, 5, 0);
    bus_results_write(&r, 0, 5, 5000, in, 4); /* 4 faces: 2 are kept */
    REQUIRE_OK(bus_results_read(&r, 0, 5, out, 4, &n));
    CHECK(n == 2 && !wrong(out, 2, 5, 0));
    REQUIRE_OK(bus_results_read(&r, 0, 5, out, 1, &n)); /* room for 1 */
    CHECK(n == 1 && !wrong(out, 1, 5, 0));
    REQUIRE_OK(bus_results_read(&r, 0, 5, out, 0, &n));
    CHECK(n == 0);
    CHECK(bus_results_read(&r, 1, 5, out, 4, &n) == OMMA_ERR_TIMEOUT); /* the other camera */
    CHECK(bus_results_read(&r, 0, 5 + RECORDS, out, 4, &n) == OMMA_ERR_TIMEOUT); /* same record */
    CHECK(bus_results_read(&r, 0, 4, out, 4, &n) == OMMA_ERR_TIMEOUT);
    fill(in, 1, 5 + RECORDS, 0);
    bus_results_write(&r, 0, 5 + RECORDS, 0, in, 1);
    CHECK_FAILS(bus_results_read(&r, 0, 5, out, 4, &n), OMMA_ERR_CLOSED,
                "frame 5 of camera 0 was replaced by frame 13");
    REQUIRE_OK(bus_results_read(&r, 0, 5 + RECORDS, out, 4, &n));
    CHECK(n == 1 && !wrong(out, 1, 5 + RECORDS, 0));
    CHECK(bus_results_read(&r, 0, 5 + 2 * RECORDS, out, 4, &n) == OMMA_ERR_TIMEOUT);
    /* No faces; a negative count is none. */
    bus_results_write(&r, 1, 3, 0, NULL, 0);
    REQUIRE_OK(bus_results_read(&r, 1, 3, out, 4, &n));
    CHECK(n == 0);
    bus_results_write(&r, 1, 4, 0, in, -3);
    REQUIRE_OK(bus_results_read(&r, 1, 4, out, 4, &n));
    CHECK(n == 0);
    /* Out of range: ignored (write) or refused (read). */
    bus_results_write(&r, 2, 1, 0, in, 1);
    bus_results_write(&r, -1, 1, 0, in, 1);
    CHECK_FAILS(bus_results_read(&r, 2, 1, out, 4, &n), OMMA_ERR_INVALID_ARG,
                "camera 2 out of range");
    CHECK_FAILS(bus_results_read(&r, -1, 1, out, 4, &n), OMMA_ERR_INVALID_ARG, "camera -1");
    CHECK_FAILS(bus_results_read(&r, 0, 0, out, 4, &n), OMMA_ERR_INVALID_ARG, "frame 0");
    CHECK_FAILS(bus_results_read(&r, 0, 5 + RECORDS, out, -1, &n), OMMA_ERR_INVALID_ARG,
                "room for -1 faces");
    CHECK(bus_results_camera_offset(&r, 0) == 64);
    CHECK(bus_results_camera_offset(&r, 1) == 64 + RECORDS * r.h.record_bytes);
    CHECK(r.h.record_bytes >= 32 + 2 * sizeof(omma_face) && r.h.record_bytes % 64 == 0);
    bus_results_close(&r);
    /* Every record on a cache line, whatever the face count
     * (sizeof(omma_face) is not a multiple of 8): UBSan checks the atomics'
     * alignment as the records are written and read. */
    for (int faces = 1; faces <= 5; faces++) {
        REQUIRE_OK(bus_results_create(2, 3, faces, &r));
        CHECK(r.h.record_bytes % 64 == 0 && bus_results_camera_offset(&r, 1) % 64 == 0);
        for (uint64_t s = 1; s <= 6; s++) {
            fill(in, 1, s, 1);
            bus_results_write(&r, 1, s, 0, in, 1);
            CHECK(bus_results_read(&r, 1, s, out, 4, &n) == OMMA_OK && n == 1 &&
                  !wrong(out, 1, s, 1));
        }
        bus_results_close(&r);
    }

    bus_results bad;
    CHECK_FAILS(bus_results_create(0, 8, 1, &bad), OMMA_ERR_INVALID_ARG, "0 cameras");
    CHECK(bad.fd == -1 && bad.base == NULL);
    CHECK_FAILS(bus_results_create(BUS_MAX_CAMERAS + 1, 8, 1, &bad), OMMA_ERR_INVALID_ARG,
                "1025 cameras");
    CHECK_FAILS(bus_results_create(1, 0, 1, &bad), OMMA_ERR_INVALID_ARG, "0 records");
    CHECK_FAILS(bus_results_create(1, 4 * BUS_MAX_SLOTS + 1, 1, &bad), OMMA_ERR_INVALID_ARG,
                "257 records");
    CHECK_FAILS(bus_results_create(1, 8, 0, &bad), OMMA_ERR_INVALID_ARG, "0 faces");
    CHECK_FAILS(bus_results_create(1, 8, BUS_MAX_FACES + 1, &bad), OMMA_ERR_INVALID_ARG,
                "65 faces (1..1024, 1..256, 1..64)");
    CHECK(bad.fd == -1 && bad.base == NULL);
    FDS_END();
}

/* A memfd of `bytes` holding header h, with the given seals. */
static int forged(size_t bytes, const bus_results_header *h, int seals)
{
    int fd = memfd_create("forged", MFD_CLOEXEC | (seals ? MFD_ALLOW_SEALING : 0));
    if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0 || pwrite(fd, h, sizeof *h, 0) != sizeof *h ||
        (seals && fcntl(fd, F_ADD_SEALS, seals) != 0)) {
        perror("forged memfd");
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

static void map_refuses_bad_memory(void)
{
    FDS_BEGIN();
    bus_results good;
    REQUIRE_OK(bus_results_create(2, 4, 3, &good));
    size_t bytes = good.bytes;
    bus_results_header h = good.h;
    const int seals = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_FUTURE_WRITE;
    bus_results r;

    /* The real one maps, twice (two subscribers), and reads what was written. */
    static omma_face in[3], out[3];
    fill(in, 3, 9, 1);
    bus_results_write(&good, 1, 9, 0, in, 3);
    bus_results r2;
    REQUIRE_OK(bus_results_map(good.fd, bytes, &r));
    REQUIRE_OK(bus_results_map(good.fd, bytes, &r2));
    int n;
    CHECK(bus_results_read(&r, 1, 9, out, 3, &n) == OMMA_OK && n == 3 && !wrong(out, 3, 9, 1));
    CHECK(bus_results_read(&r2, 1, 9, out, 3, &n) == OMMA_OK && n == 3);
    CHECK(!r.writable && r.fd == -1);
    bus_results_write(&r, 1, 10, 0, in, 1); /* a read-only mapping ignores writes */
    CHECK(bus_results_read(&r, 1, 10, out, 3, &n) == OMMA_ERR_TIMEOUT);
    bus_results_close(&r);
    bus_results_close(&r2);

    /* The header as forged copies, properly sealed, still maps. */
    int fd = forged(bytes, &h, seals);
    REQUIRE(fd >= 0);
    CHECK(bus_results_map(fd, bytes, &r) == OMMA_OK);
    bus_results_close(&r);
    close(fd);

    /* Not sealed at all; sealed against shrinking only; a plain file. */
    fd = forged(bytes, &h, 0);
    REQUIRE(fd >= 0);
    CHECK_FAILS(bus_results_map(fd, bytes, &r), OMMA_ERR_FORMAT,
                "not sealed against shrinking and writing");
    CHECK(r.base == NULL);
    close(fd);
    fd = forged(bytes, &h, F_SEAL_SHRINK | F_SEAL_GROW);
    REQUIRE(fd >= 0);
    CHECK_FAILS(bus_results_map(fd, bytes, &r), OMMA_ERR_FORMAT, "(seals 0x6)");
    close(fd);
    fd = forged(bytes, &h, F_SEAL_FUTURE_WRITE);
    REQUIRE(fd >= 0);
    CHECK_FAILS(bus_results_map(fd, bytes, &r), OMMA_ERR_FORMAT, "not sealed");
    close(fd);
    char path[320];
    snprintf(path, sizeof path, "%s/plain", tmp);
    fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
    REQUIRE(fd >= 0);
    CHECK(ftruncate(fd, (off_t)bytes) == 0 && pwrite(fd, &h, sizeof h, 0) == sizeof h);
    CHECK_FAILS(bus_results_map(fd, bytes, &r), OMMA_ERR_FORMAT, "not sealed");
    close(fd);
    unlink(path);
    CHECK_FAILS(bus_results_map(-1, bytes, &r), OMMA_ERR_IO, "fstat");

    /* The wrong size announced; a memfd of another size. */
    CHECK_FAILS(bus_results_map(good.fd, bytes - 4096, &r), OMMA_ERR_FORMAT, "bytes, announced");
    CHECK_FAILS(bus_results_map(good.fd, bytes + 1, &r), OMMA_ERR_FORMAT, "announced");
    CHECK_FAILS(bus_results_map(good.fd, 0, &r), OMMA_ERR_FORMAT, "announced 0");
    fd = forged(bytes + 4096, &h, seals);
    REQUIRE(fd >= 0);
    CHECK_FAILS(bus_results_map(fd, bytes + 4096, &r), OMMA_ERR_FORMAT,
                "header does not match its memory");
    close(fd);
    fd = forged(16, &h, seals); /* shorter than a header */
    REQUIRE(fd >= 0);
    CHECK_FAILS(bus_results_map(fd, 16, &r), OMMA_ERR_FORMAT, "announced 16");
    close(fd);

    /* Bad headers. */
    bus_results_header bad[9];
    for (int i = 0; i < 9; i++)
        bad[i] = h;
    bad[0].magic = 0;
    bad[1].total_bytes = bytes + 4096;
    bad[2].max_faces = 0;
    bad[3].max_faces = BUS_MAX_FACES + 1;
    bad[4].records = 0;
    bad[5].cameras = 0;
    bad[6].record_bytes += 8;
    bad[7].cameras = 1u << 31; /* sizes that overflow must not wrap to a match */
    bad[8].records = 5; /* the same page count, another layout */
    for (int i = 0; i < 9; i++) {
        fd = forged(bytes, &bad[i], seals);
        REQUIRE(fd >= 0);
        CHECK_FAILS(bus_results_map(fd, bytes, &r), OMMA_ERR_FORMAT,
                    "header does not match its memory");
        CHECK(r.base == NULL && r.fd == -1);
        close(fd);
    }
    bus_results_close(&good);
    FDS_END();
}

int main(void)
{
    snprintf(tmp, sizeof tmp, "/tmp/omma-test-results-XXXXXX");
    if (!mkdtemp(tmp)) {
        perror("mkdtemp");
        return 1;
    }
    char busdir[320];
    snprintf(busdir, sizeof busdir, "%s/bus", tmp);
    setenv("OMMA_BUS_DIR", busdir, 1);
    RUN(writer_and_forked_reader);
    RUN(not_yet_replaced_and_limits);
    RUN(map_refuses_bad_memory);
    rmdir(busdir);
    rmdir(tmp);
    return testing_finish();
}
