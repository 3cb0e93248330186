/* Private: per-device pools of streams and events, so that hot paths never
 * create or destroy them.
 *
 * A stream or event is taken with acquire and given back with release; the
 * pool keeps it for the next acquire (of the same priority or kind). Streams
 * are non-blocking (no implicit sync with the legacy default stream). A
 * released stream may still have work queued: the next user's work simply
 * runs after it. Thread-safe: any thread may acquire and release. */
#ifndef OMMA_GPU_STREAM_POOL_H
#define OMMA_GPU_STREAM_POOL_H

#include <stdint.h>

#include "gpu/driver.h"
#include "omma/device.h"

typedef enum gpu_priority {
    GPU_PRIORITY_NORMAL = 0, /* the device's default priority */
    GPU_PRIORITY_HIGH,       /* the device's greatest priority (latency-critical work) */
    GPU_PRIORITY_LOW,        /* the device's least priority (background copies) */
    GPU_PRIORITY_COUNT
} gpu_priority;

typedef enum gpu_event_kind {
    GPU_EVENT_SYNC = 0, /* CU_EVENT_DISABLE_TIMING: cheapest, for ordering */
    GPU_EVENT_TIMING,   /* with timestamps, for cuEventElapsedTime */
    GPU_EVENT_KIND_COUNT
} gpu_event_kind;

/* Errors: OMMA_ERR_INVALID_ARG, OMMA_ERR_CUDA, OMMA_ERR_OUT_OF_MEMORY;
 * *out is NULL on failure. */
omma_status gpu_stream_acquire(omma_device *dev, gpu_priority priority, CUstream *out);
omma_status gpu_event_acquire(omma_device *dev, gpu_event_kind kind, CUevent *out);

/* Give back what acquire returned (NULL is ignored). Releasing something the
 * pool did not hand out, or twice, is logged and ignored. */
void gpu_stream_release(omma_device *dev, CUstream stream);
void gpu_event_release(omma_device *dev, CUevent event);

typedef struct gpu_pool_stats {
    uint64_t streams_created, streams_acquired, streams_in_use;
    uint64_t events_created, events_acquired, events_in_use;
} gpu_pool_stats;

void gpu_pool_stats_get(omma_device *dev, gpu_pool_stats *out);

/* The priority value a class maps to on this device (for tests). */
omma_status gpu_priority_value(omma_device *dev, gpu_priority priority, int *out);

#endif
