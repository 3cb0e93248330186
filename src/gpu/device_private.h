/* Private: what the gpu layer knows about an omma_device. */
#ifndef OMMA_GPU_DEVICE_PRIVATE_H
#define OMMA_GPU_DEVICE_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "gpu/driver.h"
#include "omma/device.h"

struct gpu_streams; /* stream_pool.c */
struct gpu_memory;  /* memory.c */

struct omma_device {
    int ordinal;
    CUdevice cu;
    CUcontext ctx;
    int adopted;  /* ctx belongs to the application */
    int refs;     /* guarded by the device table's lock */
    atomic_int lost; /* a sticky error was seen: the context is unusable */
    char lost_detail[512];

    /* Lazily built parts, each created once under `lock`. */
    pthread_mutex_t lock;
    struct gpu_streams *streams;
    struct gpu_memory *memory;
    CUmodule busy_module; /* busy.c */
    CUfunction busy_fn;

    /* Counted by memory.c's copy wrappers. */
    _Atomic uint64_t h2d_bytes, h2d_copies;
    _Atomic uint64_t d2h_bytes, d2h_copies;
    _Atomic uint64_t d2d_bytes, d2d_copies;
    _Atomic uint64_t pinned_bytes;
    _Atomic uint64_t live_allocations;

    struct omma_device *next; /* adopted devices: the table's list */
};

/* Leaves the scope but keeps an earlier failure: returns st (with its
 * detail) when st is not OK, else the leave's status. */
omma_status gpu_leave_keep(omma_scope *scope, omma_status st);

/* Teardown of the lazily built parts; the context is current. */
void gpu_streams_destroy(omma_device *dev);
void gpu_memory_destroy(omma_device *dev);
void gpu_busy_destroy(omma_device *dev);

/* Records a sticky error seen on dev (first one wins) so that health checks
 * keep reporting it. */
void gpu_device_mark_lost(omma_device *dev, const char *detail);

#endif
