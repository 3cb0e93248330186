/* Thin pointwise convolutions in fp16 (cuda_conv_thin_ok: K a multiple of 8
 * up to 128, N from 8 to THIN_MAX_N, thousands of 16-row tiles):
 * BlazePose's expansions 24 -> 144 at 64x64 and 32 -> 192 at 32x32, its
 * heatmap 48 -> 39, and 64 -> 384, 88 -> 528 at 16x16 (batch 128). Their
 * bytes are nearly all output; gemm_tc16's short-lived 64x64x32 blocks
 * (three quarters of the K tile zeros, a 64-column tile of 16 useful ones
 * for N = 144, a load, two barriers and a multiply per 32 of K) kept few
 * bytes in flight (1 TB/s), and gemm_simt (odd N) was bound by its FFMAs.
 *
 * gemm_thin: blocks of 8 warps walk 16-row tiles of x, each warp its own,
 * with no block-wide barrier after the filter is staged (a block's
 * THIN_NCH columns, blockIdx.y; [columns][THIN_LD] halves in shared
 * memory, K zero-padded to 16 * KS, the columns to a multiple of 8). A
 * warp loads its tile's A
 * fragments straight from global memory (the next tile's while it works
 * on this one), then for each 64 columns multiplies (m16n8k16, fp32
 * accumulators, k16 steps in order) and stores from the accumulator
 * fragments (+ bias, residual, activation, one rounding to half): the
 * arithmetic of gemm_tc16, so the results are its own (odd N, which
 * gemm_tc16 does not take: element stores, the tensor cores' sums in place
 * of gemm_simt's FFMAs). */
#include "engine/cuda_ops_device.h"

#define THIN_THREADS 256
#define THIN_WARPS (THIN_THREADS / 32)
#define THIN_MAX_K 128
#define THIN_MAX_N 1024
#define THIN_NCH 128 /* columns of a block (blockIdx.y) */
/* Halves per staged filter row, 16 * KS + 8 (40 at least): the 8 rows of a
 * fragment load fall in different banks. At most 136: 34 KB for 128
 * columns. */
#define THIN_LD(ks) ((ks) <= 2 ? 40 : 16 * (ks) + 8)
#define THIN_NT 8 /* n8 tiles per pass: 64 columns */
/* Blocks a SM holds: __launch_bounds__'s minimum, which the registers set
 * (the staged filter, 34 KB at most, leaves room for them). */
#define THIN_PER_SM(ks) ((ks) <= 2 ? 3 : 2)
/* Fewer 16-row tiles x column blocks at choice_batch items: too
 * little work for the warps of a GPU (gemm_tc16's 64x64 blocks). Counted
 * at that batch whatever the batch, so that the choice follows the item's
 * shape only: with odd N the alternative is gemm_simt, whose FFMA sums
 * differ from the tensor cores' (with even N gemm_tc16's are the same). */
#define THIN_MIN_TASKS 4096

/* The A fragments of rows r0 = m0 + g and r0 + 8 for KS k16 steps. */
template <int KS>
static __device__ __forceinline__ void thin_load_a(unsigned (*a)[4], const __half *__restrict__ x,
                                                   int M, int K, int m0)
{
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int r0 = m0 + g, r1 = r0 + 8;
    const unsigned *p0 = reinterpret_cast<const unsigned *>(x + (size_t)r0 * K);
    const unsigned *p1 = reinterpret_cast<const unsigned *>(x + (size_t)r1 * K);
#pragma unroll
    for (int ks = 0; ks < KS; ks++) {
        const int k = 16 * ks + 2 * t; /* even, and K even: k < K means k + 1 < K */
        a[ks][0] = r0 < M && k < K ? __ldg(p0 + k / 2) : 0u;
        a[ks][1] = r1 < M && k < K ? __ldg(p1 + k / 2) : 0u;
        a[ks][2] = r0 < M && k + 8 < K ? __ldg(p0 + k / 2 + 4) : 0u;
        a[ks][3] = r1 < M && k + 8 < K ? __ldg(p1 + k / 2 + 4) : 0u;
    }
}

template <int KS>
__global__ void __launch_bounds__(THIN_THREADS, THIN_PER_SM(KS))
gemm_thin(const __half *__restrict__ x, const __half *__restrict__ w,
          const float *__restrict__ bias, const __half *__restrict__ res,
          const float *__restrict__ alpha, __half *__restrict__ y, int M, int K, int N, int act)
{
    extern __shared__ uint4 thin_smem[];
    /* This block's columns n0 .. n0 + nn - 1. */
    const int n0 = blockIdx.y * THIN_NCH, nn = min(N - n0, THIN_NCH);
    const int LD = THIN_LD(KS), np = (nn + 7) / 8 * 8;
    __half *bs = reinterpret_cast<__half *>(thin_smem); /* [np][LD] */
    for (int i = threadIdx.x; i < np * LD; i += blockDim.x) {
        int n = i / LD, k = i % LD;
        bs[i] = n < nn && k < K ? w[(size_t)(n0 + n) * K + k] : __float2half(0.0f);
    }
    pdl_begin(); /* the filter above is a constant */
    __syncthreads();
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
    const int tiles = (M + 15) / 16, stride = gridDim.x * THIN_WARPS;
    int tile = blockIdx.x * THIN_WARPS + warp;
    unsigned a[KS][4];
    if (tile < tiles)
        thin_load_a<KS>(a, x, M, K, tile * 16);
    for (; tile < tiles; tile += stride) {
        const int m0 = tile * 16;
        unsigned an[KS][4];
        if (tile + stride < tiles)
            thin_load_a<KS>(an, x, M, K, (tile + stride) * 16);
        for (int nc = 0; nc < nn; nc += 8 * THIN_NT) {
            float acc[THIN_NT][4];
#pragma unroll
            for (int j = 0; j < THIN_NT; j++) {
#pragma unroll
                for (int e = 0; e < 4; e++)
                    acc[j][e] = 0.0f;
                if (nc + 8 * j >= nn) /* n8 tiles past the columns: zero filter rows */
                    continue;
                const __half *p = bs + (nc + 8 * j + g) * LD + 2 * t;
#pragma unroll
                for (int ks = 0; ks < KS; ks++) {
                    unsigned b[2];
                    b[0] = *reinterpret_cast<const unsigned *>(p + 16 * ks);
                    b[1] = *reinterpret_cast<const unsigned *>(p + 16 * ks + 8);
                    mma_16816(acc[j], a[ks], b);
                }
            }
            /* Accumulator j: rows m0 + g (+ 8), columns n0 + nc + 8j + 2t, + 1. */
#pragma unroll
            for (int j = 0; j < THIN_NT; j++) {
                const int n = n0 + nc + 8 * j + 2 * t;
                if (n >= N)
                    continue;
                const bool two = n + 1 < N;
                float b0 = bias ? __ldg(bias + n) : 0.0f;
                float b1 = bias && two ? __ldg(bias + n + 1) : 0.0f;
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int m = m0 + g + 8 * h;
                    if (m >= M)
                        continue;
                    size_t o = (size_t)m * N + n;
                    float v0 = acc[j][2 * h] + b0, v1 = acc[j][2 * h + 1] + b1;
                    if (N % 2 == 0) {
                        store_pair_f16(y, res, o, v0, v1, act, alpha, n);
                    } else { /* rows of odd length: elements */
                        if (res)
                            v0 += __half2float(res[o]);
                        y[o] = __float2half_rn(activate(v0, act, alpha, n));
                        if (two) {
                            if (res)
                                v1 += __half2float(res[o + 1]);
                            y[o + 1] = __float2half_rn(activate(v1, act, alpha, n + 1));
                        }
                    }
                }
            }
        }
#pragma unroll
        for (int ks = 0; ks < KS; ks++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                a[ks][e] = an[ks][e];
    }
}

extern "C" bool cuda_conv_thin_ok(const cuda_conv_args *a)
{
    const int K = a->kh * a->kw * a->cin, N = a->cout;
    const long long M = (long long)a->batch * a->oh * a->ow;
    const long long M_choice = (long long)a->choice_batch * a->oh * a->ow;
    const size_t align = (size_t)a->x | (size_t)a->w;
    const size_t out = (size_t)a->y | (size_t)a->residual;
    const long long tasks = (M_choice + 15) / 16 * ((N + THIN_NCH - 1) / THIN_NCH);
    return a->prec == CUDA_PREC_F16 && !a->up && K % 8 == 0 && K >= 8 && K <= THIN_MAX_K &&
           N >= 8 && N <= THIN_MAX_N && tasks >= THIN_MIN_TASKS && M < (1LL << 31) &&
           (align & 15) == 0 && (out & (N % 2 == 0 ? 3 : 1)) == 0;
}

/* One wave of blocks (THIN_NCH columns each); each warp walks its tiles. */
template <int KS>
static cudaError_t thin_start(int M, int K, int N, const __half *x, const __half *w,
                              const float *bias, const __half *r, const float *alpha, __half *y,
                              int act, cudaStream_t s)
{
    int sms = 0;
    cudaError_t e = cuda_ops_sm_count(&sms);
    if (e != cudaSuccess)
        return e;
    const int cols = N < THIN_NCH ? N : THIN_NCH, chunks = (N + THIN_NCH - 1) / THIN_NCH;
    size_t smem = (size_t)(cols + 7) / 8 * 8 * THIN_LD(KS) * sizeof(__half);
    long long tiles = (M + 15) / 16, need = (tiles + THIN_WARPS - 1) / THIN_WARPS;
    long long cap = ((long long)sms * THIN_PER_SM(KS) + chunks - 1) / chunks;
    dim3 grid((unsigned)(need < cap ? need : cap), (unsigned)chunks);
    return cuda_ops_start(gemm_thin<KS>, grid, THIN_THREADS, smem, s, x, w, bias, r, alpha, y, M, K,
                          N, act);
}

extern "C" cudaError_t cuda_launch_conv_thin(const cuda_conv_args *a, cudaStream_t s)
{
    if (!cuda_conv_thin_ok(a))
        return cudaErrorInvalidValue;
    const int M = a->batch * a->oh * a->ow, K = a->kh * a->kw * a->cin, N = a->cout;
    if (M <= 0)
        return cudaSuccess;
    const __half *x = (const __half *)a->x, *w = (const __half *)a->w;
    const __half *r = (const __half *)a->residual;
    __half *y = (__half *)a->y;
    switch ((K + 15) / 16) {
    case 1:
        return thin_start<1>(M, K, N, x, w, a->bias, r, a->alpha, y, a->act, s);
    case 2:
        return thin_start<2>(M, K, N, x, w, a->bias, r, a->alpha, y, a->act, s);
    case 3:
        return thin_start<3>(M, K, N, x, w, a->bias, r, a->alpha, y, a->act, s);
    case 4:
        return thin_start<4>(M, K, N, x, w, a->bias, r, a->alpha, y, a->act, s);
    case 5:
        return thin_start<5>(M, K, N, x, w, a->bias, r, a->alpha, y, a->act, s);
    case 6:
        return thin_start<6>(M, K, N, x, w, a->bias, r, a->alpha, y, a->act, s);
    case 7:
        return thin_start<7>(M, K, N, x, w, a->bias, r, a->alpha, y, a->act, s);
    default:
        return thin_start<8>(M, K, N, x, w, a->bias, r, a->alpha, y, a->act, s);
    }
}
