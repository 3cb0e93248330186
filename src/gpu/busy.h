/* Private: a kernel that keeps the GPU busy for a given time, for
 * benchmarks of synchronization and for tests that need work in flight. */
#ifndef OMMA_GPU_BUSY_H
#define OMMA_GPU_BUSY_H

#include <stdint.h>

#include "gpu/driver.h"
#include "omma/device.h"

/* Queues one single-thread kernel on `stream` that spins on the GPU's global
 * timer for `ns` nanoseconds. The first call on a device JIT-compiles it
 * (a few ms). Errors: OMMA_ERR_INVALID_ARG, OMMA_ERR_CUDA. */
omma_status gpu_busy_launch(omma_device *dev, CUstream stream, uint64_t ns);

#endif
