#define _GNU_SOURCE /* memfd_create, F_ADD_SEALS */
#include "ipc/bus_results.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "ipc/bus_proto.h"

/* Records start on a cache line and take whole lines: the seqlock word is
 * aligned (an atomic split across lines is not atomic) and two records
 * never share a line (sizeof(omma_face) is not a multiple of 8). The
 * header fits in the first line. */
#define RECORD_ALIGN 64
_Static_assert(sizeof(bus_results_header) <= RECORD_ALIGN, "the header fits in a line");

typedef struct record_head {
    _Atomic uint64_t lock; /* odd while being written */
    uint64_t seq;
    uint64_t capture_ns;
    int32_t count;
    int32_t reserved;
} record_head;

/* Records per camera at most: the CAMERA message's results_records. */
#define MAX_RECORDS (4 * BUS_MAX_SLOTS)
/* What a subscriber insists on: the memory cannot shrink under its mapping
 * (SIGBUS) and cannot be written through the fd it was sent. */
#define REQUIRED_SEALS (F_SEAL_SHRINK | F_SEAL_FUTURE_WRITE)

/* Within the limits, so that sizes cannot overflow. */
static int valid_shape(uint32_t cameras, uint32_t records, uint32_t max_faces)
{
    return cameras <= BUS_MAX_CAMERAS && records <= MAX_RECORDS && max_faces <= BUS_MAX_FACES;
}

static size_t record_bytes(int max_faces)
{
    size_t n = sizeof(record_head) + (size_t)max_faces * sizeof(omma_face);
    return (n + RECORD_ALIGN - 1) / RECORD_ALIGN * RECORD_ALIGN;
}

size_t bus_results_bytes(int cameras, int records, int max_faces)
{
    size_t page = 4096;
    size_t n = RECORD_ALIGN + (size_t)cameras * (size_t)records * record_bytes(max_faces);
    return (n + page - 1) / page * page;
}

static record_head *record_at(const bus_results *r, int camera, uint64_t seq)
{
    size_t i = (size_t)camera * r->h.records + (size_t)(seq % r->h.records);
    return (record_head *)(r->base + RECORD_ALIGN + i * r->h.record_bytes);
}

uint64_t bus_results_camera_offset(const bus_results *r, int camera)
{
    return RECORD_ALIGN + (uint64_t)camera * r->h.records * r->h.record_bytes;
}

omma_status bus_results_create(int cameras, int records, int max_faces, bus_results *r)
{
    memset(r, 0, sizeof *r);
    r->fd = -1;
    if (!valid_shape((uint32_t)cameras, (uint32_t)records, (uint32_t)max_faces) || cameras < 1 ||
        records < 1 || max_faces < 1)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "bus results: %d cameras, %d records, %d faces (1..%d, 1..%d, 1..%d)",
                         cameras, records, max_faces, BUS_MAX_CAMERAS, MAX_RECORDS, BUS_MAX_FACES);
    size_t bytes = bus_results_bytes(cameras, records, max_faces);
    int fd = memfd_create("omma-bus-results", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0)
        return OMMA_FAIL(OMMA_ERR_IO, "bus results: memfd_create: %s", strerror(errno));
    if (ftruncate(fd, (off_t)bytes) != 0) {
        int e = errno;
        close(fd);
        return OMMA_FAIL(OMMA_ERR_IO, "bus results: sizing the memfd: %s", strerror(e));
    }
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
        int e = errno;
        close(fd);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "bus results: mmap %zu bytes: %s", bytes,
                         strerror(e));
    }
    /* Sealed after our writable mapping exists: F_SEAL_FUTURE_WRITE keeps
     * it writable but refuses write() and writable mappings to everyone
     * the fd is sent to, so no subscriber can change what others read. */
    if (fcntl(fd, F_ADD_SEALS, REQUIRED_SEALS | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        int e = errno;
        munmap(p, bytes);
        close(fd);
        return OMMA_FAIL(OMMA_ERR_IO, "bus results: sealing the memfd: %s", strerror(e));
    }
    r->fd = fd;
    r->base = p;
    r->bytes = bytes;
    r->writable = 1;
    r->h = (bus_results_header){BUS_RESULTS_MAGIC,   (uint32_t)cameras,       (uint32_t)records,
                                (uint32_t)max_faces, record_bytes(max_faces), bytes};
    memcpy(r->base, &r->h, sizeof r->h);
    return OMMA_OK;
}

omma_status bus_results_map(int fd, size_t bytes, bus_results *r)
{
    memset(r, 0, sizeof *r);
    r->fd = -1;
    struct stat st;
    if (fstat(fd, &st) != 0)
        return OMMA_FAIL(OMMA_ERR_IO, "bus results: fstat: %s", strerror(errno));
    int seals = fcntl(fd, F_GET_SEALS);
    if (seals < 0 || (seals & REQUIRED_SEALS) != REQUIRED_SEALS)
        return OMMA_FAIL(OMMA_ERR_FORMAT,
                         "bus results: the memory is not sealed against shrinking and writing "
                         "(seals 0x%x)",
                         seals < 0 ? 0 : (unsigned)seals);
    if ((uint64_t)st.st_size != bytes || bytes < sizeof(bus_results_header))
        return OMMA_FAIL(OMMA_ERR_FORMAT, "bus results: %lld bytes, announced %zu",
                         (long long)st.st_size, bytes);
    void *p = mmap(NULL, bytes, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED)
        return OMMA_FAIL(OMMA_ERR_IO, "bus results: mmap: %s", strerror(errno));
    bus_results_header h;
    memcpy(&h, p, sizeof h);
    if (h.magic != BUS_RESULTS_MAGIC || h.total_bytes != bytes ||
        !valid_shape(h.cameras, h.records, h.max_faces) || h.max_faces < 1 || h.records < 1 ||
        h.cameras < 1 || h.record_bytes != record_bytes((int)h.max_faces) ||
        bus_results_bytes((int)h.cameras, (int)h.records, (int)h.max_faces) != bytes) {
        munmap(p, bytes);
        return OMMA_FAIL(OMMA_ERR_FORMAT, "bus results: header does not match its memory");
    }
    r->base = p;
    r->bytes = bytes;
    r->h = h;
    return OMMA_OK;
}

void bus_results_close(bus_results *r)
{
    if (!r)
        return;
    if (r->base)
        munmap(r->base, r->bytes);
    if (r->fd >= 0)
        close(r->fd);
    memset(r, 0, sizeof *r);
    r->fd = -1;
}

void bus_results_write(bus_results *r, int camera, uint64_t seq, uint64_t capture_ns,
                       const omma_face *faces, int n)
{
    if (!r->writable || camera < 0 || (uint32_t)camera >= r->h.cameras)
        return;
    record_head *rec = record_at(r, camera, seq);
    if (n > (int)r->h.max_faces)
        n = (int)r->h.max_faces;
    if (n < 0)
        n = 0;
    uint64_t l = atomic_load_explicit(&rec->lock, memory_order_relaxed);
    atomic_store_explicit(&rec->lock, l + 1, memory_order_relaxed);
    atomic_thread_fence(memory_order_release);
    rec->seq = seq;
    rec->capture_ns = capture_ns;
    rec->count = n;
    if (n)
        memcpy(rec + 1, faces, (size_t)n * sizeof(omma_face));
    atomic_store_explicit(&rec->lock, l + 2, memory_order_release);
}

omma_status bus_results_read(const bus_results *r, int camera, uint64_t seq, omma_face *faces,
                             int max, int *n)
{
    *n = 0;
    if (!r->base || camera < 0 || (uint32_t)camera >= r->h.cameras)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "bus results: camera %d out of range", camera);
    if (seq == 0 || max < 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "bus results: frame %llu, room for %d faces",
                         (unsigned long long)seq, max);
    record_head *rec = record_at(r, camera, seq);
    for (int tries = 0; tries < 64; tries++) {
        uint64_t l0 = atomic_load_explicit(&rec->lock, memory_order_acquire);
        if (l0 & 1)
            continue;
        uint64_t s = rec->seq;
        int32_t count = rec->count;
        if (count < 0 || count > (int32_t)r->h.max_faces)
            count = 0; /* torn: the lock check below retries */
        int k = count < max ? count : max;
        if (s == seq && k > 0)
            memcpy(faces, rec + 1, (size_t)k * sizeof(omma_face));
        atomic_thread_fence(memory_order_acquire);
        if (atomic_load_explicit(&rec->lock, memory_order_relaxed) != l0)
            continue;
        if (s == seq) {
            *n = k;
            return OMMA_OK;
        }
        if (s > seq)
            return OMMA_FAIL(OMMA_ERR_CLOSED,
                             "bus results: frame %llu of camera %d was replaced by frame %llu",
                             (unsigned long long)seq, camera, (unsigned long long)s);
        return OMMA_ERR_TIMEOUT; /* not written yet; no detail: callers poll */
    }
    return OMMA_ERR_TIMEOUT;
}
