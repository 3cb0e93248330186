/* Turning CUDA, cuBLAS and cuDNN results into omma_status plus a message.
 * omma calls no cuBLAS or cuDNN function and links neither library: the
 * check macro accepts their status types (header only) for callers that use
 * them in the same context, and names cuBLAS codes from the table below. */
#include "gpu/check.h"

#include <stdio.h>
#include <string.h>

#include "core/error.h"
#include "gpu/driver.h"

/* "gpu_cu.cuMemAlloc(&p, n)" reads better as "cuMemAlloc(&p, n)". */
static const char *call_text(const char *call)
{
    static const char prefix[] = "gpu_cu.";
    return strncmp(call, prefix, sizeof prefix - 1) == 0 ? call + sizeof prefix - 1 : call;
}

static omma_status report(omma_status st, const char *call, const char *name, const char *text,
                          const char *file, int line)
{
    return core_fail(st, file, line, "%s failed: %s (%s)", call_text(call), name, text);
}

omma_status gpu_status_of_cu(CUresult rc)
{
    switch (rc) {
    case CUDA_SUCCESS:
        return OMMA_OK;
    case CUDA_ERROR_OUT_OF_MEMORY:
        return OMMA_ERR_OUT_OF_MEMORY;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
        return OMMA_ERR_NO_DEVICE;
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_FAILED:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
        return OMMA_ERR_DEVICE_LOST;
    case CUDA_ERROR_TIMEOUT:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
        return OMMA_ERR_TIMEOUT;
    case CUDA_ERROR_NOT_SUPPORTED:
        return OMMA_ERR_UNSUPPORTED;
    default:
        return OMMA_ERR_CUDA;
    }
}

omma_status gpu_check_cu(CUresult rc, const char *call, const char *file, int line)
{
    if (rc == CUDA_SUCCESS)
        return OMMA_OK;
    const char *name = NULL, *text = NULL;
    if (gpu_cu.cuGetErrorName)
        gpu_cu.cuGetErrorName(rc, &name);
    if (gpu_cu.cuGetErrorString)
        gpu_cu.cuGetErrorString(rc, &text);
    char number[32];
    snprintf(number, sizeof number, "CUresult %d", (int)rc);
    return report(gpu_status_of_cu(rc), call, name ? name : number, text ? text : "no description",
                  file, line);
}

omma_status gpu_status_of_rt(cudaError_t rc)
{
    switch (rc) {
    case cudaSuccess:
        return OMMA_OK;
    case cudaErrorMemoryAllocation:
        return OMMA_ERR_OUT_OF_MEMORY;
    case cudaErrorNoDevice:
    case cudaErrorInvalidDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorStubLibrary:
    case cudaErrorDevicesUnavailable:
    case cudaErrorSystemDriverMismatch:
    case cudaErrorCompatNotSupportedOnDevice:
        return OMMA_ERR_NO_DEVICE;
    case cudaErrorIllegalAddress:
    case cudaErrorLaunchFailure:
    case cudaErrorHardwareStackError:
    case cudaErrorIllegalInstruction:
    case cudaErrorMisalignedAddress:
    case cudaErrorInvalidAddressSpace:
    case cudaErrorInvalidPc:
    case cudaErrorAssert:
    case cudaErrorECCUncorrectable:
        return OMMA_ERR_DEVICE_LOST;
    case cudaErrorTimeout:
    case cudaErrorLaunchTimeout:
        return OMMA_ERR_TIMEOUT;
    case cudaErrorNotSupported:
        return OMMA_ERR_UNSUPPORTED;
    default:
        return OMMA_ERR_CUDA;
    }
}

omma_status gpu_check_rt(cudaError_t rc, const char *call, const char *file, int line)
{
    if (rc == cudaSuccess)
        return OMMA_OK;
    return report(gpu_status_of_rt(rc), call, cudaGetErrorName(rc), cudaGetErrorString(rc), file,
                  line);
}

omma_status gpu_status_of_blas(cublasStatus_t rc)
{
    switch (rc) {
    case CUBLAS_STATUS_SUCCESS:
        return OMMA_OK;
    case CUBLAS_STATUS_ALLOC_FAILED:
        return OMMA_ERR_OUT_OF_MEMORY;
    case CUBLAS_STATUS_INVALID_VALUE:
        return OMMA_ERR_INVALID_ARG;
    case CUBLAS_STATUS_NOT_SUPPORTED:
    case CUBLAS_STATUS_ARCH_MISMATCH:
        return OMMA_ERR_UNSUPPORTED;
    default:
        return OMMA_ERR_CUDA;
    }
}

/* cublasGetStatusName/String without linking cuBLAS (the strings are
 * cuBLAS's own, from its documentation of cublasStatus_t). */
static void blas_names(cublasStatus_t rc, const char **name, const char **text)
{
    switch (rc) {
#define BLAS_CASE(code, what) \
    case code:                \
        *name = #code;        \
        *text = what;         \
        return;
        BLAS_CASE(CUBLAS_STATUS_SUCCESS, "the operation completed successfully")
        BLAS_CASE(CUBLAS_STATUS_NOT_INITIALIZED, "the cuBLAS library was not initialized")
        BLAS_CASE(CUBLAS_STATUS_ALLOC_FAILED, "resource allocation failed inside cuBLAS")
        BLAS_CASE(CUBLAS_STATUS_INVALID_VALUE, "an unsupported value or parameter was passed")
        BLAS_CASE(CUBLAS_STATUS_ARCH_MISMATCH, "the device does not support the feature")
        BLAS_CASE(CUBLAS_STATUS_MAPPING_ERROR, "access to GPU memory space failed")
        BLAS_CASE(CUBLAS_STATUS_EXECUTION_FAILED, "the GPU program failed to execute")
        BLAS_CASE(CUBLAS_STATUS_INTERNAL_ERROR, "an internal cuBLAS operation failed")
        BLAS_CASE(CUBLAS_STATUS_NOT_SUPPORTED, "the functionality requested is not supported")
        BLAS_CASE(CUBLAS_STATUS_LICENSE_ERROR, "the functionality requested requires a license")
#undef BLAS_CASE
    }
    *name = "CUBLAS_STATUS_UNKNOWN";
    *text = "unknown cuBLAS status";
}

omma_status gpu_check_blas(cublasStatus_t rc, const char *call, const char *file, int line)
{
    if (rc == CUBLAS_STATUS_SUCCESS)
        return OMMA_OK;
    const char *name, *text;
    blas_names(rc, &name, &text);
    char unknown[48];
    if (strcmp(name, "CUBLAS_STATUS_UNKNOWN") == 0) {
        snprintf(unknown, sizeof unknown, "cublasStatus_t %d", (int)rc);
        name = unknown;
    }
    return report(gpu_status_of_blas(rc), call, name, text, file, line);
}

#ifdef OMMA_HAVE_CUDNN
omma_status gpu_status_of_dnn(cudnnStatus_t rc)
{
    /* cuDNN 9 groups its codes by thousands: 2xxx bad parameter, 3xxx not
     * supported, 4xxx internal errors (4003 is a failed host allocation). */
    if (rc == CUDNN_STATUS_SUCCESS)
        return OMMA_OK;
    if (rc == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED)
        return OMMA_ERR_OUT_OF_MEMORY;
    switch ((int)rc / 1000) {
    case 2:
        return OMMA_ERR_INVALID_ARG;
    case 3:
        return OMMA_ERR_UNSUPPORTED;
    default:
        return OMMA_ERR_CUDA;
    }
}

omma_status gpu_check_dnn(cudnnStatus_t rc, const char *call, const char *file, int line)
{
    if (rc == CUDNN_STATUS_SUCCESS)
        return OMMA_OK;
    char name[32];
    snprintf(name, sizeof name, "cudnnStatus_t %d", (int)rc);
    static const char *const kinds[] = {"", "", "bad parameter", "not supported",
                                        "internal error", "execution failed"};
    int kind = (int)rc / 1000;
    return report(gpu_status_of_dnn(rc), call, name,
                  kind >= 2 && kind <= 5 ? kinds[kind] : "cuDNN error", file, line);
}
#endif
