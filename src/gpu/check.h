/* Private: one check macro for CUDA driver, runtime, cuBLAS and cuDNN calls.
 *
 *   OMMA_TRY(OMMA_CK(gpu_cu.cuMemAlloc(&p, n)));
 *
 * evaluates the call once; on failure it records
 *   "cuMemAlloc(&p, n) failed: CUDA_ERROR_OUT_OF_MEMORY (out of memory) at src/gpu/memory.c:57"
 * in omma_last_error() and returns the mapped omma_status (OMMA_OK on
 * success). The library is picked from the call's result type with _Generic. */
#ifndef OMMA_GPU_CHECK_H
#define OMMA_GPU_CHECK_H

#include <cublas_api.h>
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "omma/status.h"

omma_status gpu_check_cu(CUresult rc, const char *call, const char *file, int line);
omma_status gpu_check_rt(cudaError_t rc, const char *call, const char *file, int line);
omma_status gpu_check_blas(cublasStatus_t rc, const char *call, const char *file, int line);

/* The status each library's error maps to (no message); for tests and
 * callers that inspect a result without failing. */
omma_status gpu_status_of_cu(CUresult rc);
omma_status gpu_status_of_rt(cudaError_t rc);
omma_status gpu_status_of_blas(cublasStatus_t rc);

#ifdef OMMA_HAVE_CUDNN
#include <cudnn.h>
omma_status gpu_check_dnn(cudnnStatus_t rc, const char *call, const char *file, int line);
omma_status gpu_status_of_dnn(cudnnStatus_t rc);
#define GPU_CHECK_DNN_CASE , cudnnStatus_t : gpu_check_dnn
#else
#define GPU_CHECK_DNN_CASE
#endif

#define OMMA_CK(call)                                   \
    _Generic((call),                                    \
        CUresult: gpu_check_cu,                         \
        cudaError_t: gpu_check_rt,                      \
        cublasStatus_t: gpu_check_blas GPU_CHECK_DNN_CASE)((call), #call, __FILE__, __LINE__)

#endif
