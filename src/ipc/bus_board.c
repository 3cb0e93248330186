#define _GNU_SOURCE /* memfd_create, F_ADD_SEALS */
#include "ipc/bus_board.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "ipc/bus_proto.h"

/* What a subscriber insists on: the memory keeps its size under both
 * mappings. */
#define REQUIRED_SEALS (F_SEAL_SHRINK | F_SEAL_GROW)

size_t bus_board_bytes(int cameras)
{
    size_t page = 4096;
    size_t n = (size_t)cameras * BUS_MAX_SLOTS * sizeof(uint64_t);
    return (n + page - 1) / page * page;
}

omma_status bus_board_create(int cameras, bus_board *b)
{
    memset(b, 0, sizeof *b);
    b->fd = -1;
    if (cameras < 1 || cameras > BUS_MAX_CAMERAS)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "bus release board: %d cameras (1..%d)", cameras,
                         BUS_MAX_CAMERAS);
    size_t bytes = bus_board_bytes(cameras);
    int fd = memfd_create("omma-bus-board", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return OMMA_FAIL(OMMA_ERR_IO, "bus release board: memfd_create: %s", strerror(errno));
    const char *step = "ftruncate";
    void *p = MAP_FAILED;
    if (ftruncate(fd, (off_t)bytes) == 0 && (step = "seal", 1) &&
        fcntl(fd, F_ADD_SEALS, REQUIRED_SEALS | F_SEAL_SEAL) == 0 && (step = "mmap", 1))
        p = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        close(fd);
        return OMMA_FAIL(OMMA_ERR_IO, "bus release board: %s: %s", step, strerror(e));
    }
    b->fd = fd;
    b->words = p;
    b->bytes = bytes;
    b->cameras = cameras;
    return OMMA_OK;
}

omma_status bus_board_map(int fd, int cameras, size_t bytes, bus_board *b)
{
    memset(b, 0, sizeof *b);
    b->fd = -1;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return OMMA_FAIL(OMMA_ERR_IO, "bus release board: fstat: %s", strerror(errno));
    int seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0 || (seals & REQUIRED_SEALS) != REQUIRED_SEALS)
        return OMMA_FAIL(OMMA_ERR_FORMAT,
                         "bus release board: the memory is not sealed against resizing (seals "
                         "0x%x)",
                         seals < 0 ? 0 : (unsigned)seals);
    if (cameras < 1 || cameras > BUS_MAX_CAMERAS || bytes != bus_board_bytes(cameras) ||
        (uint64_t)st.st_size != bytes)
        return OMMA_FAIL(OMMA_ERR_FORMAT,
                         "bus release board: %lld bytes, announced %zu for %d cameras",
                         (long long)st.st_size, bytes, cameras);
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return OMMA_FAIL(OMMA_ERR_IO, "bus release board: mmap: %s", strerror(errno));
    b->words = p;
    b->bytes = bytes;
    b->cameras = cameras;
    return OMMA_OK;
}

void bus_board_close(bus_board *b)
{
    if (!b)
        return;
    if (b->words)
        munmap((void *)(uintptr_t)b->words, b->bytes);
    if (b->fd >= 0)
        close(b->fd);
    memset(b, 0, sizeof *b);
    b->fd = -1;
}

volatile uint64_t *bus_board_word(const bus_board *b, int camera, int slot)
{
    return b->words + (size_t)camera * BUS_MAX_SLOTS + (size_t)slot;
}

uint64_t bus_board_released(const bus_board *b, int camera, int slot)
{
    /* Written by another process's GPU or CPU: an aligned 64-bit load. */
    return atomic_load_explicit((_Atomic uint64_t *)(uintptr_t)bus_board_word(b, camera, slot),
                                memory_order_acquire);
}
