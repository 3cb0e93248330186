/* The release board (src/ipc/bus_board.*): a forked subscriber that maps
 * the publisher's board writable gives frames back in it and the
 * publisher's read-only mapping sees each release; the subscriber cannot
 * resize the memory under the publisher; memfds that bus_board_map
 * refuses (unsealed, wrong size, cameras out of range). */
#define _GNU_SOURCE /* memfd_create, F_ADD_SEALS */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/error.h"
#include "ipc/bus_board.h"
#include "ipc/bus_proto.h"
#include "testing.h"

static void forked_subscriber_releases(void)
{
    bus_board pub;
    REQUIRE_OK(bus_board_create(3, &pub));
    CHECK(pub.bytes == bus_board_bytes(3) && pub.bytes % 4096 == 0);
    CHECK(pub.bytes >= 3 * BUS_MAX_SLOTS * sizeof(uint64_t));
    for (int c = 0; c < 3; c++)
        for (int k = 0; k < BUS_MAX_SLOTS; k++)
            CHECK(bus_board_released(&pub, c, k) == 0);
    int go[2], done[2];
    REQUIRE(pipe(go) == 0 && pipe(done) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        bus_board sub;
        int ok = bus_board_map(pub.fd, 3, pub.bytes, &sub) == OMMA_OK;
        /* It may not resize the memory the publisher maps. */
        ok &= ftruncate(pub.fd, 0) != 0 && errno == EPERM;
        ok &= ftruncate(pub.fd, (off_t)pub.bytes * 2) != 0 && errno == EPERM;
        char b;
        for (uint64_t seq = 1; ok && seq <= 1000; seq++) {
            /* Camera seq % 3, slot seq % 64 gives frame seq back. */
            atomic_store((_Atomic uint64_t *)(uintptr_t)bus_board_word(&sub, (int)(seq % 3),
                                                                       (int)(seq % BUS_MAX_SLOTS)),
                         seq);
            if (write(done[1], "r", 1) != 1 || read(go[0], &b, 1) != 1)
                ok = 0;
        }
        bus_board_close(&sub);
        _exit(ok ? 0 : 1);
    }
    REQUIRE(pid > 0);
    int seen = 0;
    char b;
    for (uint64_t seq = 1; seq <= 1000 && read(done[0], &b, 1) == 1; seq++) {
        seen += bus_board_released(&pub, (int)(seq % 3), (int)(seq % BUS_MAX_SLOTS)) == seq;
        if (write(go[1], "g", 1) != 1)
            break;
    }
    CHECK(seen == 1000);
    int status = 0;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* The publisher's mapping is read-only. */
    CHECK(mprotect((void *)(uintptr_t)pub.words, pub.bytes, PROT_READ) == 0);
    for (int i = 0; i < 2; i++)
        close(go[i]), close(done[i]);
    bus_board_close(&pub);
    CHECK(pub.fd == -1 && pub.words == NULL);
}

static void map_refuses_bad_memory(void)
{
    bus_board good, b;
    REQUIRE_OK(bus_board_create(2, &good));
    CHECK_FAILS(bus_board_map(good.fd, 9, good.bytes, &b), OMMA_ERR_FORMAT,
                "announced 4096 for 9 cameras");
    CHECK_FAILS(bus_board_map(good.fd, 2, good.bytes + 4096, &b), OMMA_ERR_FORMAT, "announced");
    CHECK_FAILS(bus_board_map(good.fd, 0, good.bytes, &b), OMMA_ERR_FORMAT, "0 cameras");
    CHECK(b.words == NULL);
    /* A memfd without the seals: it could shrink under the mapping. */
    int fd = memfd_create("unsealed", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    REQUIRE(fd >= 0 && ftruncate(fd, 4096) == 0);
    CHECK_FAILS(bus_board_map(fd, 2, 4096, &b), OMMA_ERR_FORMAT, "not sealed against resizing");
    REQUIRE(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK) == 0);
    CHECK_FAILS(bus_board_map(fd, 2, 4096, &b), OMMA_ERR_FORMAT, "seals 0x2");
    close(fd);
    CHECK_FAILS(bus_board_map(-1, 2, 4096, &b), OMMA_ERR_IO, "fstat");
    CHECK_FAILS(bus_board_create(0, &b), OMMA_ERR_INVALID_ARG, "0 cameras");
    CHECK_FAILS(bus_board_create(BUS_MAX_CAMERAS + 1, &b), OMMA_ERR_INVALID_ARG, "1025 cameras");
    bus_board_close(&good);
    bus_board_close(NULL);
}

int main(void)
{
    RUN(forked_subscriber_releases);
    RUN(map_refuses_bad_memory);
    return testing_finish();
}
