/* Thin pointwise convolutions in fp16 (cuda_conv_thin_ok: K a multiple of 8
 * up to 128, N from 8 to THIN_MAX_N, thousands of 16-row tiles; or K up to
 * 192 with even N up to 32, gemm_tc16_narrow's shapes):
 * BlazePose's expansions 24 -> 144 at 64x64 and 32 -> 192 at 32x32, its
 * heatmap 48 -> 39, and 64 -> 384, 88 -> 528 at 16x16 (batch 128), the
 * detector's 80 -> 480 and 112 -> 672 at 14x14; the projections 144 -> 24
 * and 192 -> 32 with the block's input added. Their bytes are nearly all
 * output; gemm_tc16's short-lived 64x64x32 blocks (three quarters of the K
 * tile zeros, a 64-column tile of 16 useful ones for N = 144, a load, two
 * barriers and a multiply per 32 of K) kept few bytes in flight (1 TB/s),
 * and gemm_simt (odd N) was bound by its FFMAs.
 *
 * gemm_thin: blocks of 8 warps, each warp on its own tasks with no
 * block-wide barrier after the filter is staged. A block stages the filter
 * of all N columns in shared memory ([columns][THIN_LD] halves, K
 * zero-padded to 16 * KS), or where that is over THIN_FILTER_BYTES, of an
 * equal share of them rounded to 8 (blockIdx.y), so that no column block
 * is short and idles its SM slots. A task is a 16-row tile of x times the
 * block's columns, or where the tiles are few for the warps, times 64 of
 * them (a pass). A warp copies its tasks' A tiles into a ring of shared
 * memory buffers (cp.async, as many tasks ahead as there are buffers:
 * up to 4, as many as leave room for the blocks the registers allow),
 * takes a tile's A fragments with ldmatrix, and per 64 columns multiplies
 * (m16n8k16, fp32 accumulators, k16 steps in order: the arithmetic of
 * gemm_tc16, so the results are its own; odd N, which gemm_tc16 does not
 * take: the tensor cores' sums in place of gemm_simt's FFMAs; K over 128:
 * gemm_tc16's steps exactly, K zero-padded to a multiple of 32 as its
 * tiles are), adds the bias, the residual,
 * activates and rounds to half once. Where N % 8 == 0 the halves go
 * through shared memory to 16-byte stores of whole row segments (128
 * bytes per row for 64 columns); else they are stored from the
 * accumulator fragments (pairs, or elements for odd N). */
#include "engine/cuda_ops_device.h"
#include "engine/cuda_ops_mma.h"

#define THIN_THREADS 256
#define THIN_WARPS (THIN_THREADS / 32)
#define THIN_MAX_K 128
/* K up to this with even N up to THIN_NARROW_N: gemm_tc16_narrow's shapes
 * (its 128x32 tiles' short-lived blocks: 2.3 TB/s). */
#define THIN_NARROW_K 192
#define THIN_NARROW_N 32
#define THIN_MAX_N 1024
/* Halves per staged row of the filter and of an A tile, 16 * KS + 8: an
 * odd number of 16-byte units, so the 8 rows of an ldmatrix fall in
 * different banks. */
#define THIN_LD(ks) (16 * (ks) + 8)
#define THIN_PW 64             /* columns per pass: 8 n8 tiles */
#define THIN_OLD (THIN_PW + 8) /* halves per row of a warp's output stage */
/* The staged filter of a block at most (else the columns are split). */
#define THIN_FILTER_BYTES (40 * 1024)
/* Blocks a SM holds: __launch_bounds__'s minimum, which sets the
 * registers; the launcher asks the occupancy calculator for the grid. */
#define THIN_PER_SM(ks) ((ks) <= 2 ? 4 : (ks) <= 4 ? 3 : 2)
/* The k16 steps of a GEMM of depth K: as gemm_tc16's 32-deep tiles over
 * 128. */
#define THIN_STEPS(K) ((K) <= THIN_MAX_K ? ((K) + 15) / 16 : ((K) + 31) / 32 * 2)
#define THIN_MAX_STAGES 4
/* Fewer 16-row tiles x 128-column blocks at choice_batch items: too
 * little work for the warps of a GPU (gemm_tc16's 64x64 blocks). Counted
 * at that batch whatever the batch, so that the choice follows the item's
 * shape only: with odd N the alternative is gemm_simt, whose FFMA sums
 * differ from the tensor cores' (with even N gemm_tc16's are the same). */
#define THIN_CHOICE_NCH 128
#define THIN_MIN_TASKS 4096

/* Starts the copy of the A tile of rows m0 .. m0 + 15 (K halves each,
 * contiguous in x) into the warp's stage sa ([16][LD]; rows past M zero;
 * the columns from K on are zeroed once by the caller). */
template <int KS>
static __device__ __forceinline__ void thin_fetch_a(__half *sa, const __half *__restrict__ x,
                                                    int M, int K, int m0)
{
    const int lane = threadIdx.x % 32, cpr = K / 8;
    const __half *src = x + (size_t)m0 * K;
    for (int i = lane; i < 16 * cpr; i += 32) {
        const int r = i / cpr, c = i - r * cpr;
        const unsigned at = smem_addr(sa + r * THIN_LD(KS) + 8 * c);
        if (m0 + r < M)
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(at), "l"(src + 8 * i));
        else
            st_zero_halves(at, 8);
    }
}

/* How a pass's halves reach y: from the accumulator fragments (pairs, or
 * elements for odd N); through the warp's output stage as rows of 8-half
 * vectors (N % 8 == 0), 16-byte stores of each row's segment; or through
 * the stage as the whole tile (N <= 64 in one column block: the tile's 16
 * rows are 32 N contiguous bytes of y), 16-byte stores of all of it. */
enum { THIN_FRAG, THIN_ROWS, THIN_TILE };
#define THIN_ACT_ANY (-1) /* thin_epilogue's activation: its argument act */

/* The epilogue of one pass: accumulator j holds rows m0 + g (+ 8), local
 * columns nc + 8j + 2t, + 1 of the block's (global n0 + those). Bias
 * (staged, zeros without one), residual, activation ACT (or act), one
 * rounding to half, stored as MODE says (so: the warp's output stage). */
template <int ACT, int MODE>
static __device__ __forceinline__ void
thin_epilogue(float (*acc)[4], const float *sb, const __half *__restrict__ res,
              const float *__restrict__ alpha, __half *__restrict__ y, __half *so, int M, int N,
              int n0, int nn, int nc, int m0, int act)
{
    const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4, fn = ACT < 0 ? act : ACT;
#pragma unroll
    for (int j = 0; j < THIN_PW / 8; j++) {
        const int nl = nc + 8 * j + 2 * t, n = n0 + nl;
        if (MODE == THIN_ROWS) {
            if (nc + 8 * j >= nn) /* nn % 8 == 0: all lanes alike */
                break;
            const float2 b = *reinterpret_cast<const float2 *>(sb + nl);
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int r = g + 8 * h, m = m0 + r;
                float v0 = acc[j][2 * h] + b.x, v1 = acc[j][2 * h + 1] + b.y;
                if (res && m < M) {
                    float2 q = __half22float2(
                        *reinterpret_cast<const __half2 *>(res + (size_t)m * N + n));
                    v0 += q.x;
                    v1 += q.y;
                }
                v0 = activate(v0, fn, alpha, n);
                v1 = activate(v1, fn, alpha, n + 1);
                *reinterpret_cast<__half2 *>(so + r * THIN_OLD + 8 * j + 2 * t) =
                    __floats2half2_rn(v0, v1);
            }
        } else {
            if (nl >= nn)
                continue;
            const bool two = nl + 1 < nn;
            const float b0 = sb[nl], b1 = sb[nl + 1]; /* staged zeros past nn */
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int m = m0 + g + 8 * h;
                if (MODE == THIN_FRAG && m >= M)
                    continue;
                const size_t o = (size_t)m * N + n;
                float v0 = acc[j][2 * h] + b0, v1 = acc[j][2 * h + 1] + b1;
                if (MODE == THIN_TILE) { /* n0 = nc = 0, nn = N */
                    if (res && m < M) {
                        v0 += __half2float(res[o]);
                        if (two)
                            v1 += __half2float(res[o + 1]);
                    }
                    so[(g + 8 * h) * N + nl] = __float2half_rn(activate(v0, fn, alpha, n));
                    if (two)
                        so[(g + 8 * h) * N + nl + 1] =
                            __float2half_rn(activate(v1, fn, alpha, n + 1));
                } else if (N % 2 == 0) {
                    store_pair_f16(y, res, o, v0, v1, fn, alpha, n);
                } else { /* rows of odd length: elements */
                    if (res)
                        v0 += __half2float(res[o]);
                    y[o] = __float2half_rn(activate(v0, fn, alpha, n));
                    if (two) {
                        if (res)
                            v1 += __half2float(res[o + 1]);
                        y[o + 1] = __float2half_rn(activate(v1, fn, alpha, n + 1));
                    }
                }
            }
        }
    }
    if (MODE == THIN_ROWS) {
        __syncwarp();
        /* vr 16-byte vectors per row: lanes 8 apart write a row's 128 bytes. */
        const int vr = min(THIN_PW, nn - nc) / 8;
        for (int i = lane; i < 16 * vr; i += 32) {
            const int r = vr == 8 ? i / 8 : i / vr, c = i - r * vr, m = m0 + r;
            if (m < M)
                *reinterpret_cast<uint4 *>(y + (size_t)m * N + n0 + nc + 8 * c) =
                    *reinterpret_cast<const uint4 *>(so + r * THIN_OLD + 8 * c);
        }
        __syncwarp();
    } else if (MODE == THIN_TILE) {
        __syncwarp();
        /* The tile's rows below M: 16-byte vectors, then the odd halves. */
        const int halves = min(16, M - m0) * N, nv = halves / 8;
        __half *yt = y + (size_t)m0 * N;
        for (int i = lane; i < nv; i += 32)
            reinterpret_cast<uint4 *>(yt)[i] = reinterpret_cast<const uint4 *>(so)[i];
        for (int i = 8 * nv + lane; i < halves; i += 32)
            yt[i] = so[i];
        __syncwarp();
    }
}

/* Shared memory of a block: the filter [rows][LD] halves, its bias [rows]
 * floats (rows: the block's columns rounded up to 16), each warp's ring
 * of A tiles [stages][16][LD] halves and (MODE != THIN_FRAG) output stage
 * [16][THIN_OLD] halves. */
static inline size_t thin_smem_bytes(int ks, int cw, int mode, int stages)
{
    const size_t rows = (size_t)(cw + 15) / 16 * 16, ld = (size_t)THIN_LD(ks);
    return rows * ld * 2 + rows * 4 + (size_t)THIN_WARPS * stages * 16 * ld * 2 +
           (mode != THIN_FRAG ? THIN_WARPS * 16 * THIN_OLD * 2 : 0);
}

static __device__ __forceinline__ void thin_commit()
{
    asm volatile("cp.async.commit_group;\n" ::);
}

/* Waits for all but the newest n - 1 groups of copies (n: 1 to 4). */
static __device__ __forceinline__ void thin_wait(int n)
{
    switch (n) {
    case 1:
        asm volatile("cp.async.wait_group 0;\n" ::);
        break;
    case 2:
        asm volatile("cp.async.wait_group 1;\n" ::);
        break;
    case 3:
        asm volatile("cp.async.wait_group 2;\n" ::);
        break;
    default:
        asm volatile("cp.async.wait_group 3;\n" ::);
        break;
    }
}

/* cw: the columns of a block (a multiple of 8 where less than N); tp: the
 * passes of 64 columns per task; stages: the A tiles of a warp's ring. */
template <int KS, int MODE>
__global__ void __launch_bounds__(THIN_THREADS, THIN_PER_SM(KS))
gemm_thin(const __half *__restrict__ x, const __half *__restrict__ w,
          const float *__restrict__ bias, const __half *__restrict__ res,
          const float *__restrict__ alpha, __half *__restrict__ y, int M, int K, int N, int act,
          int cw, int tp, int stages)
{
    extern __shared__ uint4 thin_smem[];
    constexpr int LD = THIN_LD(KS);
    /* This block's columns n0 .. n0 + nn - 1. */
    const int n0 = blockIdx.y * cw, nn = min(N - n0, cw);
    const int rows = (cw + 15) / 16 * 16, rn = (nn + 15) / 16 * 16;
    __half *bs = reinterpret_cast<__half *>(thin_smem); /* [rows][LD] */
    float *sb = reinterpret_cast<float *>(bs + rows * LD);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    __half *sa = reinterpret_cast<__half *>(sb + rows) + warp * stages * 16 * LD;
    __half *so = reinterpret_cast<__half *>(sb + rows) + THIN_WARPS * stages * 16 * LD +
                 warp * 16 * THIN_OLD;
    for (int i = threadIdx.x; i < rn * (LD / 8); i += blockDim.x) {
        const int n = i / (LD / 8), k = i % (LD / 8) * 8;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (n < nn && k < K)
            v = __ldg(reinterpret_cast<const uint4 *>(w + (size_t)(n0 + n) * K + k));
        *reinterpret_cast<uint4 *>(bs + n * LD + k) = v;
    }
    for (int i = threadIdx.x; i < rn; i += blockDim.x)
        sb[i] = bias && i < nn ? __ldg(bias + n0 + i) : 0.0f;
    /* The A tiles' columns K .. 16 * KS - 1: zeros, never copied over. */
    for (int i = lane; i < stages * 16 * (2 * KS - K / 8); i += 32) {
        const int r = i / (2 * KS - K / 8), c = K / 8 + i % (2 * KS - K / 8);
        st_zero_halves(smem_addr(sa + r * LD + 8 * c), 8);
    }
    pdl_begin(); /* the filter above is a constant */
    __syncthreads();

    const int tiles = (M + 15) / 16, P = (nn + THIN_PW - 1) / THIN_PW, nt = (P + tp - 1) / tp;
    const unsigned tasks = (unsigned)tiles * (unsigned)nt, stride = gridDim.x * THIN_WARPS;
    /* ldmatrix rows: A, lane l: row l % 16, columns 8 (l / 16) on (the
     * fragments a0..a3); the filter, lane l: column n (l % 8) + 8 (l / 16),
     * k 8 ((l / 8) % 2) on (b0, b1 of an n8 tile, then the next one's). */
    const unsigned aa = smem_addr(sa + (lane % 16) * LD + 8 * (lane / 16)), slot_bytes = 32 * LD;
    const unsigned ba = smem_addr(bs + (lane % 8 + 8 * (lane / 16)) * LD + 8 * (lane / 8 % 2));
    unsigned task = blockIdx.x * THIN_WARPS + warp;
    /* One group of copies per ring slot, empty past the last task. */
    for (int i = 0; i < stages; i++) {
        const unsigned t = task + (unsigned)i * stride;
        if (t < tasks)
            thin_fetch_a<KS>(sa + i * 16 * LD, x, M, K, (int)(t / nt) * 16);
        thin_commit();
    }
    for (int slot = 0; task < tasks; task += stride) {
        const int tile = (int)(task / nt), q = (int)(task - (unsigned)tile * nt), m0 = tile * 16;
        thin_wait(stages);
        __syncwarp();
        unsigned a[KS][4];
#pragma unroll
        for (int ks = 0; ks < KS; ks++)
            ldsm_x4(a[ks], aa + slot * slot_bytes + 32 * ks);
        __syncwarp();
        const unsigned next = task + (unsigned)stages * stride;
        if (next < tasks)
            thin_fetch_a<KS>(sa + slot * 16 * LD, x, M, K, (int)(next / nt) * 16);
        thin_commit();
        slot = slot + 1 == stages ? 0 : slot + 1;
        const int p1 = min(P, (q + 1) * tp);
        for (int p = q * tp; p < p1; p++) {
            const int nc = THIN_PW * p;
            float acc[THIN_PW / 8][4];
#pragma unroll
            for (int j = 0; j < THIN_PW / 8; j++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    acc[j][e] = 0.0f;
            /* n8 tiles from nn on: none (zero filter rows past nn up to
             * a multiple of 16 for the second of a pair). */
#pragma unroll
            for (int ks = 0; ks < KS; ks++) {
#pragma unroll
                for (int jp = 0; jp < THIN_PW / 16; jp++) {
                    if (nc + 16 * jp >= nn)
                        break;
                    unsigned b[4];
                    ldsm_x4(b, ba + (unsigned)((nc + 16 * jp) * LD + 16 * ks) * 2);
                    mma_16816(acc[2 * jp], a[ks], b);
                    if (nc + 16 * jp + 8 < nn)
                        mma_16816(acc[2 * jp + 1], a[ks], b + 2);
                }
            }
            /* The activation a constant where it is common (BlazePose's
             * expansions and projections), fewer kernels' worth of code
             * elsewhere. */
            if (MODE != THIN_FRAG && act == GR_ACT_RELU6)
                thin_epilogue<GR_ACT_RELU6, MODE>(acc, sb, res, alpha, y, so, M, N, n0, nn, nc, m0,
                                                  act);
            else if (MODE != THIN_FRAG && act == GR_ACT_NONE)
                thin_epilogue<GR_ACT_NONE, MODE>(acc, sb, res, alpha, y, so, M, N, n0, nn, nc, m0,
                                                 act);
            else
                thin_epilogue<THIN_ACT_ANY, MODE>(acc, sb, res, alpha, y, so, M, N, n0, nn, nc, m0,
                                                  act);
        }
    }
}

extern "C" bool cuda_conv_thin_ok(const cuda_conv_args *a)
{
    const int K = a->kh * a->kw * a->cin, N = a->cout;
    const long long M = (long long)a->batch * a->oh * a->ow;
    const long long M_choice = (long long)a->choice_batch * a->oh * a->ow;
    const size_t align = (size_t)a->x | (size_t)a->w;
    const size_t out = (size_t)a->y | (size_t)a->residual;
    const long long tasks = (M_choice + 15) / 16 * ((N + THIN_CHOICE_NCH - 1) / THIN_CHOICE_NCH);
    const bool depth = K <= THIN_MAX_K ||
                       (K <= THIN_NARROW_K && N <= THIN_NARROW_N && N % 2 == 0);
    return a->prec == CUDA_PREC_F16 && !a->up && K % 8 == 0 && K >= 8 && depth && N >= 8 &&
           N <= THIN_MAX_N && tasks >= THIN_MIN_TASKS && M < (1LL << 31) &&
           (align & 15) == 0 && (out & (N % 2 == 0 ? 3 : 1)) == 0;
}

/* The columns of a block: all N where their filter fits
 * THIN_FILTER_BYTES, else equal shares rounded up to 8. */
static void thin_columns(int ks, int N, int *cw, int *chunks)
{
    const size_t fb = (size_t)(N + 15) / 16 * 16 * THIN_LD(ks) * 2;
    *cw = N, *chunks = 1;
    if (fb > THIN_FILTER_BYTES) {
        const int c = (int)((fb + THIN_FILTER_BYTES - 1) / THIN_FILTER_BYTES);
        *cw = ((N + c - 1) / c + 7) / 8 * 8;
        *chunks = (N + *cw - 1) / *cw;
    }
}

/* The grid: one wave of blocks per column block; tasks of whole tiles
 * where each warp gets 4 or more, else of single passes. */
template <int KS, int MODE>
static cudaError_t thin_start(const cuda_conv_args *a, int M, int K, int N, int cw, int chunks,
                              cudaStream_t s)
{
    int dev = 0, sms = 0, per_sm = 0, sm_smem = 0, block_smem = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&sm_smem, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(&block_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
    if (e != cudaSuccess)
        return e;
    /* Ring slots: as many as fit beside the filter and output stages in
     * the shared memory of THIN_PER_SM blocks (one at least; H100: 228 KB
     * a SM, 1 KB of it reserved per block). */
    const size_t fixed = thin_smem_bytes(KS, cw, MODE, 0),
                 slot = (size_t)THIN_WARPS * 16 * THIN_LD(KS) * 2,
                 room = (size_t)sm_smem / THIN_PER_SM(KS) - 1024;
    int stages = room > fixed ? (int)((room - fixed) / slot) : 1;
    stages = stages < 1 ? 1 : stages > THIN_MAX_STAGES ? THIN_MAX_STAGES : stages;
    while (stages > 1 && thin_smem_bytes(KS, cw, MODE, stages) > (size_t)block_smem)
        stages--;
    const size_t smem = thin_smem_bytes(KS, cw, MODE, stages);
    void (*kernel)(const __half *, const __half *, const float *, const __half *, const float *,
                   __half *, int, int, int, int, int, int, int) = gemm_thin<KS, MODE>;
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                             cudaSharedmemCarveoutMaxShared);
    if (e == cudaSuccess && smem > 48 * 1024)
        e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, THIN_THREADS, smem);
    if (e != cudaSuccess)
        return e;
    const long long tiles = (M + 15) / 16, passes = (cw + THIN_PW - 1) / THIN_PW;
    long long cap = (long long)sms * (per_sm > 0 ? per_sm : 1) / chunks;
    if (cap < 1)
        cap = 1;
    const int tp = tiles >= 4 * cap * THIN_WARPS ? (int)passes : 1;
    const long long tasks = tiles * ((passes + tp - 1) / tp);
    const long long need = (tasks + THIN_WARPS - 1) / THIN_WARPS;
    dim3 grid((unsigned)(need < cap ? need : cap), (unsigned)chunks);
    return cuda_ops_start(kernel, grid, THIN_THREADS, smem, s, (const __half *)a->x,
                          (const __half *)a->w, a->bias, (const __half *)a->residual, a->alpha,
                          (__half *)a->y, M, K, N, a->act, cw, tp, stages);
}

template <int KS>
static cudaError_t thin_pick(const cuda_conv_args *a, int M, int K, int N, cudaStream_t s)
{
    int cw, chunks;
    thin_columns(KS, N, &cw, &chunks);
    const bool y16 = ((size_t)a->y & 15) == 0;
    if (N % 8 == 0 && y16)
        return thin_start<KS, THIN_ROWS>(a, M, K, N, cw, chunks, s);
    if (chunks == 1 && N <= THIN_PW && y16)
        return thin_start<KS, THIN_TILE>(a, M, K, N, cw, chunks, s);
    return thin_start<KS, THIN_FRAG>(a, M, K, N, cw, chunks, s);
}

extern "C" cudaError_t cuda_launch_conv_thin(const cuda_conv_args *a, cudaStream_t s)
{
    if (!cuda_conv_thin_ok(a))
        return cudaErrorInvalidValue;
    const int M = a->batch * a->oh * a->ow, K = a->kh * a->kw * a->cin, N = a->cout;
    if (M <= 0)
        return cudaSuccess;
    switch (THIN_STEPS(K)) {
    case 1:
        return thin_pick<1>(a, M, K, N, s);
    case 2:
        return thin_pick<2>(a, M, K, N, s);
    case 3:
        return thin_pick<3>(a, M, K, N, s);
    case 4:
        return thin_pick<4>(a, M, K, N, s);
    case 5:
        return thin_pick<5>(a, M, K, N, s);
    case 6:
        return thin_pick<6>(a, M, K, N, s);
    case 7:
        return thin_pick<7>(a, M, K, N, s);
    case 8:
        return thin_pick<8>(a, M, K, N, s);
    case 10:
        return thin_pick<10>(a, M, K, N, s);
    default:
        return thin_pick<12>(a, M, K, N, s);
    }
}
