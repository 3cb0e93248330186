/* Pointwise convolutions with a long K in fp16 (cuda_conv_deep_ok: K a
 * multiple of 8 from DEEP_MIN_K, even N over 32; BlazePose's 864 -> 144
 * and 144 -> 864 at 8x8, 528 -> 88 at 16x16, 288 -> 288 at 4x4 and 2x2,
 * heavy's 160 -> 960 and 960 -> 160 at 16x16, 272 -> 1632 and 1632 -> 272
 * at 8x8). Four tilings, chosen by the grid of 64x64 tiles at
 * choice_batch (deep_small), by N (deep_wide) and by N and the rows at
 * choice_batch (deep_narrow): all compute every output
 * as gemm_tc16 does (one fp32 accumulator from zero, the k16 steps 0, 16,
 * ... over K rounded up to 32, zeros past K, in order, the same mma on the
 * same fragment registers, then + bias (0 without one), + residual, the
 * activation, one rounding to half), so the choice changes no bit. Blocks
 * are numbered along N first: the tiles of one row of tiles run together
 * and read its rows of x once from memory (heavy 11.72 -> 11.34 ms at
 * batch 128, H100).
 *
 * gemm_deep (the rest, below):
 * gemm_tc16's 64x64 block tile, 2x2 warps of 32x32 and m16n8k16
 * fragments, with the 64x32 tiles of A and B in a ring of DEEP_STAGES
 * shared-memory buffers filled by cp.async, DEEP_STAGES - 1 steps ahead,
 * gemm_tc16's epilogue.
 *
 * gemm_deep_ldsm<BM, BN, WM, WN, ST>: fragments by ldmatrix (the registers
 * gemm_tc16 loads word by word); the filter's tiles of the first ST - 1
 * steps requested before pdl_begin (constants), so they load while the
 * kernel before finishes; the epilogue through shared memory: each warp
 * leaves its sums plus bias (fp32) in the block's tile, then the block
 * adds the residual, activates and stores 8 outputs (16 bytes) a thread
 * where N % 8 == 0 and y and the residual are 16-byte aligned, else pairs.
 * Three tilings:
 * - <32, 32, 2, 2, 8> for grids of fewer than DEEP_SMALL_GRID 64x64 tiles
 *   (every layer at batch 1, the 288-channel tail at 4x4 and 2x2 at batch
 *   128): 2x2 warps of 16x16, 4x the blocks, and an 8-stage ring (K = 288
 *   nearly all in flight at once). On the H200 it took BlazePose full from
 *   0.554 to 0.420 ms at batch 1.
 * - <128, 64, 4, 2, 4> where N is a multiple of 64 or over 512
 *   (deep_wide): 4x2 warps of 32x32. On the expansions it is 1.3-1.7x
 *   gemm_deep (ncu, H100, batch 128: 160 -> 960 at 16x16 160 -> 92 us,
 *   272 -> 1632 at 8x8 87 -> 67 us, 192 -> 192 at 16x16 49 -> 29 us);
 *   on the projections to 88, 144 or 272 columns it is 1.3-1.9x slower
 *   (528 -> 88 at 16x16 66 -> 100 us, 1632 -> 272 78 -> 100 us).
 * - <128, 96 | 128 | 160, 4, 2, 4>, one tile across N, for the
 *   projections to 65-160 columns over enough rows (deep_narrow): x's
 *   rows read once and the filter once per 128 rows, where gemm_deep's
 *   64x64 tiles read them from L2 3x and 2x over (heavy's 960 -> 160 at
 *   16x16: 537 -> 238 MB through L2, 115 -> 63 us; full's 528 -> 88 59 ->
 *   41 us).
 * The rest (N up to 64 or from 161, or few rows: heavy's 1632 -> 272 and
 * full's 864 -> 144 at 8x8) stays with gemm_deep. */
#include "engine/cuda_ops_device.h"
#include "engine/cuda_ops_mma.h"

#define DEEP_BK 32
#define DEEP_LD (DEEP_BK + 8) /* halves per shared row: 80 bytes, ldmatrix conflict-free */
#define DEEP_MIN_K 128        /* 4 steps and more */

#define DEEP_BM 64
#define DEEP_BN 64
#define DEEP_STAGES 4       /* gemm_deep: 4 x 10 KB of tiles */
#define DEEP_SMALL_GRID 192 /* fewer 64x64 tiles at choice_batch: gemm_deep_ldsm */
#define DEEP_NARROW_GRID 192 /* 128-row tiles at choice_batch from which deep_narrow pays */

static __device__ __forceinline__ void deep_commit()
{
    asm volatile("cp.async.commit_group;\n" ::);
}

/* Waits until at most N of this thread's copy groups are pending. */
template <int N> static __device__ __forceinline__ void deep_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/* Starts copying 16 bytes from g to shared address sa, or (bytes 0)
 * writing 16 zero bytes there without reading g. */
static __device__ __forceinline__ void deep_cp16(unsigned sa, const __half *g, int bytes)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(sa), "l"(g), "r"(bytes));
}

/* One thread's share of a R x 32 tile of a row-major [rows][K] matrix:
 * chunk column c (8 halves) of rows r, r + T / 4, ... below R. The rows
 * past the matrix are read as its last row (they feed only outputs that
 * are never stored); columns past K are zeros (K % 8 == 0: a chunk is
 * wholly in or out). */
template <int R, int T> struct deep_loader {
    static constexpr int P = (R * 4 + T - 1) / T; /* passes of T / 4 rows */
    const __half *g; /* row r's chunk at k = 0 (clamped rows: per chunk below) */
    size_t off[P];
    unsigned s; /* shared byte offset of row r's chunk */
    int c8;
    bool last; /* the thread's row of the last pass is below R */

    __device__ __forceinline__ void init(const __half *base, int rows, int K, int r0)
    {
        const int r = threadIdx.x / 4;
        c8 = 8 * (threadIdx.x % 4);
        g = base + c8;
#pragma unroll
        for (int i = 0; i < P; i++)
            off[i] = (size_t)min(r0 + r + i * (T / 4), rows - 1) * K;
        s = (unsigned)(r * DEEP_LD + c8) * 2;
        last = r + (P - 1) * (T / 4) < R;
    }

    /* Tile of step k0 into the buffer at shared address sb. */
    __device__ __forceinline__ void load(unsigned sb, int K, int k0) const
    {
        const bool in = k0 + c8 < K;
        const int bytes = in ? 16 : 0, k = in ? k0 : 0;
#pragma unroll
        for (int i = 0; i < P; i++)
            if (i + 1 < P || R * 4 % T == 0 || last)
                deep_cp16(sb + s + (unsigned)(i * (T / 4) * DEEP_LD * 2), g + off[i] + k, bytes);
    }
};

template <int BM, int BN, int WM, int WN, int ST>
__global__ void __launch_bounds__(WM *WN * 32)
    gemm_deep_ldsm(const __half *__restrict__ x, const __half *__restrict__ w,
                    const float *__restrict__ bias, const __half *__restrict__ res,
                    const float *__restrict__ alpha, __half *__restrict__ y, int M, int K, int N,
                    int act, int vec8)
{
    constexpr int T = WM * WN * 32, MI = BM / WM / 16, NJ = BN / WN / 8;
    constexpr unsigned A_BYTES = BM * DEEP_LD * 2, B_BYTES = BN * DEEP_LD * 2;
    constexpr unsigned STAGE = A_BYTES + B_BYTES;
    constexpr int CLD = BN + 8; /* floats per epilogue tile row: float2 writes conflict-free */
    static_assert(NJ % 2 == 0 && BM * 4 % T == 0, "gemm_deep tile");
    static_assert((size_t)BM * CLD * 4 <= (size_t)ST * STAGE, "gemm_deep epilogue tile");
    extern __shared__ __align__(16) unsigned char deep_smem[];
    const unsigned sbase = smem_addr(deep_smem);

    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int wm = (warp / WN) * (BM / WM), wn = (warp % WN) * (BN / WN);
    const int nt = (N + BN - 1) / BN; /* the N tiles of a row of tiles: adjacent blocks */
    const int m0 = (int)(blockIdx.x / nt) * BM, n0 = (int)(blockIdx.x % nt) * BN;
    const int steps = (K + DEEP_BK - 1) / DEEP_BK;

    deep_loader<BM, T> la;
    deep_loader<BN, T> lb;
    la.init(x, M, K, m0);
    lb.init(w, N, K, n0);

    /* ldmatrix rows: A's lane l reads row l % 16 at k + 8 (l / 16) (matrices
     * a0..a3 of the m16n8k16 A operand); B's reads n row 8 (l / 16) + l % 8
     * at k + 8 ((l / 8) % 2) (b0, b1 of two n8 tiles). The registers are
     * those gemm_tc16 loads word by word. */
    const unsigned a_lane = (unsigned)((wm + lane % 16) * DEEP_LD + 8 * (lane / 16)) * 2;
    const unsigned b_lane =
        A_BYTES + (unsigned)((wn + 8 * (lane / 16) + lane % 8) * DEEP_LD + 8 * ((lane / 8) % 2)) * 2;

    float acc[MI][NJ][4];
#pragma unroll
    for (int i = 0; i < MI; i++)
#pragma unroll
        for (int j = 0; j < NJ; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[i][j][e] = 0.0f;

    /* Steps 0 .. ST - 2 in flight, one commit group per step (empty past
     * the last), so that wait<ST - 2> means "step kt landed". The filter's
     * tiles go first, into group 0, before waiting for the kernel before. */
#pragma unroll
    for (int st = 0; st < ST - 1; st++)
        if (st < steps)
            lb.load(sbase + st * STAGE + A_BYTES, K, st * DEEP_BK);
    pdl_begin();
#pragma unroll
    for (int st = 0; st < ST - 1; st++) {
        if (st < steps)
            la.load(sbase + st * STAGE, K, st * DEEP_BK);
        deep_commit();
    }
    for (int kt = 0; kt < steps; kt++) {
        deep_wait<ST - 2>();
        /* Step kt visible to all; every warp is done with step kt - 1,
         * whose buffer the copies below refill. */
        __syncthreads();
        const int nx = kt + ST - 1;
        if (nx < steps) {
            const unsigned sb = sbase + (nx % ST) * STAGE;
            la.load(sb, K, nx * DEEP_BK);
            lb.load(sb + A_BYTES, K, nx * DEEP_BK);
        }
        deep_commit();
        const unsigned sb = sbase + (kt % ST) * STAGE;
#pragma unroll
        for (int kb = 0; kb < DEEP_BK; kb += 16) {
            unsigned a[MI][4], b[NJ][2];
#pragma unroll
            for (int i = 0; i < MI; i++)
                ldsm_x4(a[i], sb + a_lane + (unsigned)(16 * i * DEEP_LD + kb) * 2);
#pragma unroll
            for (int j = 0; j < NJ; j += 2) {
                unsigned r[4];
                ldsm_x4(r, sb + b_lane + (unsigned)(8 * j * DEEP_LD + kb) * 2);
                b[j][0] = r[0];
                b[j][1] = r[1];
                b[j + 1][0] = r[2];
                b[j + 1][1] = r[3];
            }
#pragma unroll
            for (int i = 0; i < MI; i++)
#pragma unroll
                for (int j = 0; j < NJ; j++)
                    mma_16816(acc[i][j], a[i], b[j]);
        }
    }
    deep_wait<0>();
    __syncthreads(); /* every warp done with the ring: it becomes the epilogue's tile */

    /* Accumulator (i, j): tile rows wm+16i+g (+8), columns wn+8j+2t, +1;
     * sums + bias into the fp32 tile. */
    float *ct = reinterpret_cast<float *>(deep_smem);
    {
        const int g = lane / 4, t = lane % 4;
#pragma unroll
        for (int j = 0; j < NJ; j++) {
            const int c = wn + 8 * j + 2 * t, n = min(n0 + c, N - 2);
            const float b0 = bias ? __ldg(bias + n) : 0.0f, b1 = bias ? __ldg(bias + n + 1) : 0.0f;
#pragma unroll
            for (int i = 0; i < MI; i++)
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    const int r = wm + 16 * i + g + 8 * h;
                    *reinterpret_cast<float2 *>(ct + r * CLD + c) =
                        make_float2(acc[i][j][2 * h] + b0, acc[i][j][2 * h + 1] + b1);
                }
        }
    }
    __syncthreads();

    if (vec8) { /* N % 8 == 0, y and res 16-byte aligned */
        for (int q = threadIdx.x; q < BM * (BN / 8); q += T) {
            const int r = q / (BN / 8), c = 8 * (q % (BN / 8));
            const int m = m0 + r, n = n0 + c;
            if (m >= M || n >= N)
                continue;
            const size_t o = (size_t)m * N + n;
            const float4 s0 = *reinterpret_cast<const float4 *>(ct + r * CLD + c);
            const float4 s1 = *reinterpret_cast<const float4 *>(ct + r * CLD + c + 4);
            float v[8] = {s0.x, s0.y, s0.z, s0.w, s1.x, s1.y, s1.z, s1.w};
            if (res) {
                const uint4 rq = *reinterpret_cast<const uint4 *>(res + o);
                const __half2 *rh = reinterpret_cast<const __half2 *>(&rq);
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const float2 rf = __half22float2(rh[e]);
                    v[2 * e] += rf.x;
                    v[2 * e + 1] += rf.y;
                }
            }
            uint4 out;
            unsigned *ow = reinterpret_cast<unsigned *>(&out);
#pragma unroll
            for (int e = 0; e < 4; e++)
                ow[e] = pack_half2(activate(v[2 * e], act, alpha, n + 2 * e),
                                   activate(v[2 * e + 1], act, alpha, n + 2 * e + 1));
            *reinterpret_cast<uint4 *>(y + o) = out;
        }
    } else {
        for (int q = threadIdx.x; q < BM * (BN / 2); q += T) {
            const int r = q / (BN / 2), c = 2 * (q % (BN / 2));
            const int m = m0 + r, n = n0 + c;
            if (m >= M || n >= N) /* N even, so n + 1 < N too */
                continue;
            const float2 s = *reinterpret_cast<const float2 *>(ct + r * CLD + c);
            store_pair_f16(y, res, (size_t)m * N + n, s.x, s.y, act, alpha, n);
        }
    }
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
    const int nt = (N + DEEP_BN - 1) / DEEP_BN;
    const int m0 = (int)(blockIdx.x / nt) * DEEP_BM, n0 = (int)(blockIdx.x % nt) * DEEP_BN;
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

/* True where a grid of 64x64 tiles over M rows (at choice_batch items) and
 * N columns would leave SMs idle: gemm_deep_ldsm's 32x32 tiles. */
static bool deep_small(int M, int N)
{
    return (long long)((M + 63) / 64) * ((N + 63) / 64) < DEEP_SMALL_GRID;
}

/* One block a BM x BN tile, the N tiles of a row of tiles in consecutive
 * blocks (they read the same rows of x while these are in L2). */
static unsigned deep_grid(int M, int N, int BM, int BN)
{
    return (unsigned)(((long long)M + BM - 1) / BM * ((N + BN - 1) / BN));
}

/* Where gemm_deep_wide's 128x64 tiles beat gemm_deep's 64x64 ones (H100,
 * BlazePose at batch 128): N a multiple of the tile's 64 columns or over
 * 512 (the expansions 160 -> 960, 272 -> 1632, 192 -> 1152, and 192 ->
 * 192, 384 -> 64); gemm_deep keeps the columns that leave a tile partly
 * empty (88, 112, 144, 160, 272, 288), whose long-K projections its
 * twice as many blocks fill better. */
static bool deep_wide(int N)
{
    return N % 64 == 0 || N >= 512;
}

/* The columns of gemm_deep_ldsm's one tile across N (96, 128 or 160)
 * where it beats gemm_deep at choice_batch's M rows, else 0: N from 65 to
 * 160 (below, the 96-column tile is mostly empty) and at least
 * DEEP_NARROW_GRID of its 128-row tiles (fewer leave SMs idle: full's 864
 * -> 144 at 8x8, 64 tiles, 31 -> 37 us). */
static int deep_narrow(int M, int N)
{
    if (N <= 64 || N > 160 || (M + 127) / 128 < DEEP_NARROW_GRID)
        return 0;
    return N <= 96 ? 96 : N <= 128 ? 128 : 160;
}

template <int BM, int BN, int WM, int WN, int ST>
static cudaError_t deep_ldsm_start(const cuda_conv_args *a, cudaStream_t s, int M, int K, int N)
{
    const size_t smem = (size_t)ST * (BM + BN) * DEEP_LD * 2;
    const int vec8 = N % 8 == 0 && (((size_t)a->y | (size_t)a->residual) & 15) == 0;
    const unsigned grid = deep_grid(M, N, BM, BN);
    return cuda_ops_start(gemm_deep_ldsm<BM, BN, WM, WN, ST>, grid, WM * WN * 32, smem, s,
                          (const __half *)a->x, (const __half *)a->w, a->bias,
                          (const __half *)a->residual, a->alpha, (__half *)a->y, M, K, N, a->act,
                          vec8);
}

extern "C" cudaError_t cuda_launch_conv_deep(const cuda_conv_args *a, cudaStream_t s)
{
    if (!cuda_conv_deep_ok(a) || a->choice_batch < a->batch)
        return cudaErrorInvalidValue;
    const int M = a->batch * a->oh * a->ow, K = a->kh * a->kw * a->cin, N = a->cout;
    const int M_choice = a->choice_batch * a->oh * a->ow; /* the rows every choice is made at */
    if (M == 0)
        return cudaSuccess;
    if (deep_small(M_choice, N))
        return deep_ldsm_start<32, 32, 2, 2, 8>(a, s, M, K, N);
    if (deep_wide(N))
        return deep_ldsm_start<128, 64, 4, 2, 4>(a, s, M, K, N);
    switch (deep_narrow(M_choice, N)) {
    case 96:
        return deep_ldsm_start<128, 96, 4, 2, 4>(a, s, M, K, N);
    case 128:
        return deep_ldsm_start<128, 128, 4, 2, 4>(a, s, M, K, N);
    case 160:
        return deep_ldsm_start<128, 160, 4, 2, 4>(a, s, M, K, N);
    default:
        break;
    }
    const unsigned grid = deep_grid(M, N, DEEP_BM, DEEP_BN);
    return cuda_ops_start(gemm_deep, grid, 128, 0, s, (const __half *)a->x, (const __half *)a->w,
                          a->bias, (const __half *)a->residual, a->alpha, (__half *)a->y, M, K, N,
                          a->act);
}
