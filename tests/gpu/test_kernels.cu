/* Kernels for the gpu tests (see test_kernels.h). */
#include "test_kernels.h"

static __global__ void fill_kernel(int *p, int n, int base)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        p[i] = base + i;
}

enum { SUM_THREADS = 256 };

static __global__ void block_sum_kernel(const int *in, int n, int *out)
{
    __shared__ int partial[SUM_THREADS];
    int acc = 0;
    for (int i = threadIdx.x; i < n; i += SUM_THREADS)
        acc += in[i];
    partial[threadIdx.x] = acc;
    __syncthreads();
    for (int stride = SUM_THREADS / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride)
            partial[threadIdx.x] += partial[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0)
        *out = partial[0];
}

static __global__ void out_of_bounds_kernel(int *p)
{
    volatile int *far = p + (1ull << 40) / sizeof(int);
    *far = 42;
}

extern "C" cudaError_t test_fill(int *p, int n, int base, cudaStream_t stream)
{
    fill_kernel<<<(n + 255) / 256, 256, 0, stream>>>(p, n, base);
    return cudaGetLastError();
}

extern "C" cudaError_t test_block_sum(const int *in, int n, int *out, cudaStream_t stream)
{
    block_sum_kernel<<<1, SUM_THREADS, 0, stream>>>(in, n, out);
    return cudaGetLastError();
}

extern "C" cudaError_t test_write_out_of_bounds(int *p, cudaStream_t stream)
{
    out_of_bounds_kernel<<<1, 1, 0, stream>>>(p);
    return cudaGetLastError();
}

static __global__ void wait_flag_kernel(const volatile int *flag)
{
    while (*flag == 0)
        __nanosleep(1000);
}

extern "C" cudaError_t test_wait_flag(const volatile int *flag, cudaStream_t stream)
{
    wait_flag_kernel<<<1, 1, 0, stream>>>(flag);
    return cudaGetLastError();
}
