/* The CUDA check macro: mapping of each library's errors to omma_status and
 * the message it records. Needs no GPU: it formats results, it makes no
 * CUDA call except the runtime's own name lookups. */
#include "core/error.h"
#include "gpu/check.h"
#include "testing.h"

static CUresult fake_cu(CUresult rc) { return rc; }
static cudaError_t fake_rt(cudaError_t rc) { return rc; }
static cublasStatus_t fake_blas(cublasStatus_t rc) { return rc; }

static void success_is_ok(void)
{
    OMMA_FAIL(OMMA_ERR_IO, "earlier");
    CHECK(OMMA_CK(fake_cu(CUDA_SUCCESS)) == OMMA_OK);
    CHECK(OMMA_CK(fake_rt(cudaSuccess)) == OMMA_OK);
    CHECK(OMMA_CK(fake_blas(CUBLAS_STATUS_SUCCESS)) == OMMA_OK);
    /* success leaves the previous detail alone */
    CHECK(strncmp(omma_last_error(), "earlier", 7) == 0);
}

static void driver_mapping(void)
{
    CHECK(gpu_status_of_cu(CUDA_ERROR_OUT_OF_MEMORY) == OMMA_ERR_OUT_OF_MEMORY);
    CHECK(gpu_status_of_cu(CUDA_ERROR_NO_DEVICE) == OMMA_ERR_NO_DEVICE);
    CHECK(gpu_status_of_cu(CUDA_ERROR_INVALID_DEVICE) == OMMA_ERR_NO_DEVICE);
    CHECK(gpu_status_of_cu(CUDA_ERROR_ILLEGAL_ADDRESS) == OMMA_ERR_DEVICE_LOST);
    CHECK(gpu_status_of_cu(CUDA_ERROR_LAUNCH_FAILED) == OMMA_ERR_DEVICE_LOST);
    CHECK(gpu_status_of_cu(CUDA_ERROR_INVALID_VALUE) == OMMA_ERR_CUDA);
    CHECK(gpu_status_of_cu(CUDA_ERROR_NOT_SUPPORTED) == OMMA_ERR_UNSUPPORTED);
}

static void runtime_mapping_and_message(void)
{
    CHECK(gpu_status_of_rt(cudaErrorMemoryAllocation) == OMMA_ERR_OUT_OF_MEMORY);
    CHECK(gpu_status_of_rt(cudaErrorNoDevice) == OMMA_ERR_NO_DEVICE);
    CHECK(gpu_status_of_rt(cudaErrorInsufficientDriver) == OMMA_ERR_NO_DEVICE);
    CHECK(gpu_status_of_rt(cudaErrorIllegalAddress) == OMMA_ERR_DEVICE_LOST);
    CHECK(gpu_status_of_rt(cudaErrorInvalidValue) == OMMA_ERR_CUDA);

    int line = __LINE__ + 1;
    omma_status st = OMMA_CK(fake_rt(cudaErrorMemoryAllocation));
    CHECK(st == OMMA_ERR_OUT_OF_MEMORY);
    char want[256];
    snprintf(want, sizeof want,
             "fake_rt(cudaErrorMemoryAllocation) failed: cudaErrorMemoryAllocation (out of memory)"
             " at tests/core/test_check.c:%d",
             line);
    CHECK(strcmp(omma_last_error(), want) == 0);
}

static void driver_message_without_driver_names_number(void)
{
    /* The driver is not loaded in this test, so names come from the number. */
    omma_status st = OMMA_CK(fake_cu(CUDA_ERROR_OUT_OF_MEMORY));
    CHECK(st == OMMA_ERR_OUT_OF_MEMORY);
    CHECK(strstr(omma_last_error(), "fake_cu(CUDA_ERROR_OUT_OF_MEMORY) failed: ") ==
          omma_last_error());
    CHECK(strstr(omma_last_error(), "CUresult 2") != NULL);
}

static void blas_mapping_and_message(void)
{
    CHECK(gpu_status_of_blas(CUBLAS_STATUS_ALLOC_FAILED) == OMMA_ERR_OUT_OF_MEMORY);
    CHECK(gpu_status_of_blas(CUBLAS_STATUS_INVALID_VALUE) == OMMA_ERR_INVALID_ARG);
    CHECK(gpu_status_of_blas(CUBLAS_STATUS_EXECUTION_FAILED) == OMMA_ERR_CUDA);
    CHECK(OMMA_CK(fake_blas(CUBLAS_STATUS_NOT_SUPPORTED)) == OMMA_ERR_UNSUPPORTED);
    CHECK(strstr(omma_last_error(), "CUBLAS_STATUS_NOT_SUPPORTED") != NULL);
}

#ifdef OMMA_HAVE_CUDNN
static cudnnStatus_t fake_dnn(cudnnStatus_t rc) { return rc; }

static void dnn_mapping_and_message(void)
{
    CHECK(gpu_status_of_dnn(CUDNN_STATUS_SUCCESS) == OMMA_OK);
    CHECK(gpu_status_of_dnn(CUDNN_STATUS_BAD_PARAM) == OMMA_ERR_INVALID_ARG);
    CHECK(gpu_status_of_dnn(CUDNN_STATUS_NOT_SUPPORTED) == OMMA_ERR_UNSUPPORTED);
    CHECK(gpu_status_of_dnn(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED) ==
          OMMA_ERR_OUT_OF_MEMORY);
    CHECK(OMMA_CK(fake_dnn(CUDNN_STATUS_BAD_PARAM)) == OMMA_ERR_INVALID_ARG);
    CHECK(strstr(omma_last_error(), "fake_dnn(CUDNN_STATUS_BAD_PARAM) failed: ") != NULL);
}
#endif

int main(void)
{
    RUN(success_is_ok);
    RUN(driver_mapping);
    RUN(runtime_mapping_and_message);
    RUN(driver_message_without_driver_names_number);
    RUN(blas_mapping_and_message);
#ifdef OMMA_HAVE_CUDNN
    RUN(dnn_mapping_and_message);
#endif
    return testing_finish();
}
