/* Small CUDA kernels for the gpu tests, launched through the runtime API
 * (test_kernels.cu) so that tests mix runtime and driver calls. */
#ifndef OMMA_TEST_KERNELS_H
#define OMMA_TEST_KERNELS_H

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* p[i] = base + i for i < n. */
cudaError_t test_fill(int *p, int n, int base, cudaStream_t stream);

/* *out = sum of in[0..n) by one block, through shared memory and
 * __syncthreads (racecheck and synccheck have something to look at). */
cudaError_t test_block_sum(const int *in, int n, int *out, cudaStream_t stream);

/* Spins until *flag (host memory mapped for the device: cudaHostAlloc with
 * cudaHostAllocMapped) is nonzero: holds a stream until the host says so,
 * with no timing involved. */
cudaError_t test_wait_flag(const volatile int *flag, cudaStream_t stream);

/* Writes 1 TiB past p: an illegal address that poisons the context. */
cudaError_t test_write_out_of_bounds(int *p, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
