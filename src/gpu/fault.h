/* Private: fault injection (build option OMMA_FAULT_INJECTION).
 *
 * Every device allocation, pinned host allocation, stream and event creation
 * in the gpu layer passes a fault point first:
 *
 *   OMMA_TRY(GPU_FAULT_POINT(OMMA_ERR_OUT_OF_MEMORY, "cuMemAllocFromPoolAsync"));
 *
 * In a normal build the macro is OMMA_OK and costs nothing. With fault
 * injection, a test arms the Nth point from now to fail (gpu_fault_arm(n)),
 * runs an operation, and checks that it reports the failure and cleaned up;
 * walking n = 1, 2, ... until the operation succeeds covers every failure
 * path. The counter is process-wide: arm it from one thread at a time. */
#ifndef OMMA_GPU_FAULT_H
#define OMMA_GPU_FAULT_H

#include "omma/status.h"

/* The Nth fault point passed from now fails (n >= 1); 0 disarms. */
void gpu_fault_arm(long n);

/* Fault points passed since the last gpu_fault_arm. */
long gpu_fault_points(void);

/* 1 when this build has fault injection compiled in. */
int gpu_fault_enabled(void);

omma_status gpu_fault_point(omma_status st, const char *what, const char *file, int line);

#ifdef OMMA_FAULT_INJECTION
#define GPU_FAULT_POINT(st, what) gpu_fault_point((st), (what), __FILE__, __LINE__)
#else
#define GPU_FAULT_POINT(st, what) OMMA_OK
#endif

#endif
