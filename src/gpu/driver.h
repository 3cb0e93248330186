/* Private: the CUDA driver API, loaded at run time.
 *
 * omma never links libcuda: it opens libcuda.so.1 with dlopen and resolves
 * each entry point through cuGetProcAddress for the ABI of the CUDA headers
 * it was built with. A machine without the driver (CI, build hosts) loads
 * omma fine and gets OMMA_ERR_NO_DEVICE with a clear message. */
#ifndef OMMA_GPU_DRIVER_H
#define OMMA_GPU_DRIVER_H

#include <cuda.h>

#include "omma/status.h"

/* X(name): every driver function omma calls. The member is named like the
 * function, so gpu_cu.cuCtxPushCurrent(...) reads like the plain call (the
 * header's versioning macros map both to the same ABI). A function whose
 * newest ABI in cudaTypedefs.h is newer than its plain prototype (CUDA 13's
 * cuCtxSynchronize and cuCtxGetDevice) needs a line in driver.c's
 * abi_versions. */
#define GPU_DRIVER_FUNCTIONS(X)    \
    X(cuInit)                      \
    X(cuDriverGetVersion)          \
    X(cuGetErrorName)              \
    X(cuGetErrorString)            \
    X(cuDeviceGetCount)            \
    X(cuDeviceGet)                 \
    X(cuDeviceGetName)             \
    X(cuDeviceGetAttribute)        \
    X(cuDeviceTotalMem)            \
    X(cuDeviceGetPCIBusId)         \
    X(cuDevicePrimaryCtxRetain)    \
    X(cuDevicePrimaryCtxRelease)   \
    X(cuDevicePrimaryCtxSetFlags)  \
    X(cuDevicePrimaryCtxGetState)  \
    X(cuCtxCreate)                 \
    X(cuCtxDestroy)                \
    X(cuCtxGetCurrent)             \
    X(cuCtxSetCurrent)             \
    X(cuCtxPushCurrent)            \
    X(cuCtxPopCurrent)             \
    X(cuCtxGetDevice)              \
    X(cuCtxSynchronize)            \
    X(cuCtxGetStreamPriorityRange) \
    X(cuCtxGetFlags)               \
    X(cuDeviceGetUuid)             \
    X(cuMemGetInfo)                \
    X(cuMemAlloc)                  \
    X(cuMemFree)                   \
    X(cuMemHostAlloc)              \
    X(cuMemFreeHost)               \
    X(cuMemPoolCreate)             \
    X(cuMemPoolDestroy)            \
    X(cuMemPoolSetAttribute)       \
    X(cuMemPoolGetAttribute)       \
    X(cuMemPoolTrimTo)             \
    X(cuMemAllocFromPoolAsync)     \
    X(cuMemFreeAsync)              \
    X(cuMemcpyHtoDAsync)           \
    X(cuMemcpyDtoHAsync)           \
    X(cuMemcpyDtoDAsync)           \
    X(cuMemcpy2DAsync)             \
    X(cuMemsetD8Async)             \
    X(cuPointerGetAttribute)       \
    X(cuStreamCreateWithPriority)  \
    X(cuStreamDestroy)             \
    X(cuStreamGetPriority)         \
    X(cuStreamQuery)               \
    X(cuStreamSynchronize)         \
    X(cuStreamWaitEvent)           \
    X(cuEventCreate)               \
    X(cuEventDestroy)              \
    X(cuEventRecord)               \
    X(cuEventQuery)                \
    X(cuEventSynchronize)          \
    X(cuEventElapsedTime)          \
    X(cuModuleLoadData)            \
    X(cuModuleUnload)              \
    X(cuModuleGetFunction)         \
    X(cuLaunchKernel)                 \
    X(cuLaunchHostFunc)               \
    X(cuMemGetAllocationGranularity)  \
    X(cuMemCreate)                    \
    X(cuMemRelease)                   \
    X(cuMemAddressReserve)            \
    X(cuMemAddressFree)               \
    X(cuMemMap)                       \
    X(cuMemUnmap)                     \
    X(cuMemSetAccess)                 \
    X(cuMemExportToShareableHandle)   \
    X(cuMemImportFromShareableHandle)

typedef struct gpu_driver {
#define GPU_DRIVER_MEMBER(name) __typeof__(&name) name;
    GPU_DRIVER_FUNCTIONS(GPU_DRIVER_MEMBER)
#undef GPU_DRIVER_MEMBER
} gpu_driver;

/* Filled by gpu_driver_load; read-only afterwards. */
extern gpu_driver gpu_cu;

/* Loads libcuda.so.1, resolves every function and calls cuInit(0), once per
 * process (later calls return the first outcome). OMMA_ERR_NO_DEVICE when the
 * driver is missing or has no usable GPU. Thread-safe. */
omma_status gpu_driver_load(void);

#endif
