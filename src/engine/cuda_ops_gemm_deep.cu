/* Pointwise convolutions with a long K in fp16 (cuda_conv_deep_ok: K a
 * multiple of 8 from DEEP_MIN_K, even N over 32; BlazePose's 864 -> 144
 * and 144 -> 864 at 8x8, 288 -> 288 at 4x4 and 2x2). gemm_tc16 walks K in
 * 32-wide steps with one step's tiles prefetched into registers; with a
 * few blocks a SM and many steps, each step waits out most of a global
 * load's latency.
 *
 * gemm_deep: gemm_tc16's 64x64 block tile, 2x2 warps of 32x32 and
 * m16n8k16 fragments, with the 64x32 tiles of A and B in a ring of
 * DEEP_STAGES shared-memory buffers filled by cp.async, DEEP_STAGES - 1
 * steps ahead. The products and their order (k16 steps in order, zeros
 * past K) and the epilogue are gemm_tc16's, so the results are its own. */
#include "engine/cuda_ops_device.h"
#include "engine/cuda_ops_mma.h"

#define DEEP_BM 64
#define DEEP_BN 64
#define DEEP_BK 32
#define DEEP_LD (DEEP_BK + 8) /* halves per shared row: 80 bytes, fragment loads conflict-free */
#define DEEP_STAGES 4         /* 4 x 10 KB of tiles */
#define DEEP_MIN_K 128        /* 4 steps and more */

static __device__ __forceinline__ void deep_commit()
{
    asm volatile("cp.async.commit_group;\n" ::);
}

/* Waits until at most N of this thread's copy groups are pending. */
template <int N> static __device__ __forceinline__ void deep_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/* Starts copying rows [r0, r0 + 64) x columns [k0, k0 + 32) of a row-major
 * [rows][K] half matrix into s[64][DEEP_LD]; zeros outside (K % 8 == 0: a
 * 16-byte chunk is wholly inside or outside). */
static __device__ __forceinline__ void deep_stage(__half *s, const __half *__restrict__ g,
                                                  int rows, int K, int r0, int k0)
{
    const int chunks = DEEP_BK / 8; /* 4 per row */
#pragma unroll
    for (int i = 0; i < DEEP_BM * chunks / 128; i++) {
        int idx = threadIdx.x + 128 * i;
        int r = idx / chunks, c = idx % chunks;
        int row = r0 + r, k = k0 + 8 * c;
        unsigned sa = smem_addr(s + r * DEEP_LD + 8 * c);
        if (row < rows && k < K)
            cp_async_halves(sa, g + (size_t)row * K + k, 8);
        else
            st_zero_halves(sa, 8);
    }
}

__global__ void __launch_bounds__(128)
gemm_deep(const __half *__restrict__ x, const __half *__restrict__ w,
          const float *__restrict__ bias, const __half *__restrict__ res,
          const float *__restrict__ alpha, __half *__restrict__ y, int M, int K, int N, int act)
{
    __shared__ __align__(16) __half as[DEEP_STAGES][DEEP_BM * DEEP_LD];
    __shared__ __align__(16) __half bs[DEEP_STAGES][DEEP_BN * DEEP_LD];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int g = lane / 4, t = lane % 4;
    const int wm = (warp / 2) * 32, wn = (warp % 2) * 32;
    const int m0 = blockIdx.x * DEEP_BM, n0 = blockIdx.y * DEEP_BN;
    const int steps = (K + DEEP_BK - 1) / DEEP_BK;
    float acc[2][4][4];
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[i][j][e] = 0.0f;

    pdl_begin();
    /* Steps 0 .. STAGES - 2 in flight; one commit group per step (empty
     * past the last), so that wait<STAGES - 2> means "step kt landed". */
#pragma unroll
    for (int st = 0; st < DEEP_STAGES - 1; st++) {
        if (st < steps) {
            deep_stage(as[st], x, M, K, m0, st * DEEP_BK);
            deep_stage(bs[st], w, N, K, n0, st * DEEP_BK);
        }
        deep_commit();
    }
    for (int kt = 0; kt < steps; kt++) {
        deep_wait<DEEP_STAGES - 2>();
        /* Step kt visible to all; every warp is done with step kt - 1,
         * whose buffer the copies below refill. */
        __syncthreads();
        const int nx = kt + DEEP_STAGES - 1;
        if (nx < steps) {
            deep_stage(as[nx % DEEP_STAGES], x, M, K, m0, nx * DEEP_BK);
            deep_stage(bs[nx % DEEP_STAGES], w, N, K, n0, nx * DEEP_BK);
        }
        deep_commit();
        const __half *sa = as[kt % DEEP_STAGES], *sb = bs[kt % DEEP_STAGES];
#pragma unroll
        for (int kb = 0; kb < DEEP_BK; kb += 16)
            warp_tile_mma(acc, sa, sb, DEEP_LD, wm, wn, g, t, kb);
    }
    deep_wait<0>();

    /* Accumulator (i, j): rows m0+wm+16i+g (+8), columns n0+wn+8j+2t, +1. */
#pragma unroll
    for (int j = 0; j < 4; j++) {
        int n = n0 + wn + 8 * j + 2 * t;
        if (n >= N) /* N even, so n + 1 < N too */
            continue;
        float b0 = bias ? __ldg(bias + n) : 0.0f, b1 = bias ? __ldg(bias + n + 1) : 0.0f;
#pragma unroll
        for (int i = 0; i < 2; i++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                int m = m0 + wm + 16 * i + g + 8 * h;
                if (m >= M)
                    continue;
                size_t o = (size_t)m * N + n;
                store_pair_f16(y, res, o, acc[i][j][2 * h] + b0, acc[i][j][2 * h + 1] + b1, act,
                               alpha, n);
            }
    }
}

extern "C" bool cuda_conv_deep_ok(const cuda_conv_args *a)
{
    const int K = a->kh * a->kw * a->cin, N = a->cout;
    const size_t in = (size_t)a->x | (size_t)a->w, out = (size_t)a->y | (size_t)a->residual;
    /* N up to 32 keeps gemm_tc16_narrow's 128x32 tiles. */
    return a->prec == CUDA_PREC_F16 && !a->up && K % 8 == 0 && K >= DEEP_MIN_K && N % 2 == 0 &&
           N > 32 && (in & 15) == 0 && (out & 3) == 0;
}

extern "C" cudaError_t cuda_launch_conv_deep(const cuda_conv_args *a, cudaStream_t s)
{
    if (!cuda_conv_deep_ok(a))
        return cudaErrorInvalidValue;
    const int M = a->batch * a->oh * a->ow, K = a->kh * a->kw * a->cin, N = a->cout;
    if (M == 0)
        return cudaSuccess;
    dim3 grid((M + DEEP_BM - 1) / DEEP_BM, (N + DEEP_BN - 1) / DEEP_BN);
    return cuda_ops_start(gemm_deep, grid, 128, 0, s, (const __half *)a->x, (const __half *)a->w,
                          a->bias, (const __half *)a->residual, a->alpha, (__half *)a->y, M, K, N,
                          a->act);
}
