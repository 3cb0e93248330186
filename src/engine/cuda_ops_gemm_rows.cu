/* Pointwise convolutions with few channels in fp16 (cuda_conv_rows_ok:
 * K a multiple of 16 up to 256, N a multiple of 8 up to 96 and, with K
 * over 128, at most K / 2 - 8; no residual),
 * optionally adding the bilinear upsampling of a coarser tensor after the
 * activation (an FPN level): the 1x1 convolutions of BlazeFace full
 * range's FPN. These GEMMs are skinny (K and N of tens, M of millions of
 * pixels), so the bound is keeping enough bytes in flight; gemm_tc16's
 * short-lived 64x64 blocks (load, sync, multiply, sync, store) kept too
 * few, at 1.6 TB/s.
 *
 * gemm_rows: persistent blocks of 8 warps; each warp streams its own
 * 16-row tiles of x (16 * K contiguous halves) through a ring of
 * `stages` shared-memory buffers with cp.async, S - 1 tiles ahead, with no
 * block-wide barrier after the filter is staged. Per tile: ldmatrix A and
 * B (the filter [np][K], staged once per block), m16n8k16 with fp32
 * accumulators for all N columns, + bias and activation into a float tile
 * in shared memory; then each lane takes 8-channel pieces of the 16 rows
 * (one contiguous run of 16 * N halves in y), adds the upsampled addend
 * there (four 16-byte loads of the source pixels) and stores 16 bytes. The
 * arithmetic is gemm_tc16's (k16 steps in order, the addend after the
 * activation, one rounding to half), so the results are the same. */
#include "engine/cuda_ops_device.h"
#include "engine/cuda_ops_mma.h"

#define GW_THREADS 256
#define GW_WARPS (GW_THREADS / 32)
#define GW_MAX_K 256
#define GW_MAX_N 96

/* The GEMM's sizes and the shared-memory strides: A and B rows kp = K + 8
 * halves (an odd number of 16-byte units: the rows an ldmatrix reads fall
 * in different banks), the float output tile's rows fs = N + 4. alias: the
 * float tile lives in the ring slot the tile was just multiplied from
 * (K over 128, where separate tiles would not leave room for 8 warps). */
struct gw_shape {
    int M, K, N, np; /* np: N rounded up to 16 (zero filter rows past N) */
    int kp, fs, stages, tiles;
    bool alias;
};

/* Shared memory of a block, in bytes: the filter [np][kp], bias and alpha
 * [np] floats, then per warp its tile ring [stages][16][kp] and its float
 * output tile [16][fs]. */
struct gw_layout {
    size_t bias, alpha, ring, out, total;
};

static __host__ __device__ inline gw_layout gw_smem(const gw_shape &s)
{
    gw_layout l;
    l.bias = ((size_t)s.np * s.kp * 2 + 15) / 16 * 16;
    l.alpha = l.bias + (size_t)s.np * 4;
    l.ring = l.alpha + (size_t)s.np * 4;
    l.out = l.ring + (size_t)GW_WARPS * s.stages * 16 * s.kp * 2;
    l.total = l.out + (s.alias ? 0 : (size_t)GW_WARPS * 16 * s.fs * 4);
    return l;
}

/* Starts copying the 16 rows of tile `tile` into ring buffer `slot` (rows
 * past M zeroed). */
static __device__ __forceinline__ void gw_fetch(const __half *x, const gw_shape &s, unsigned ring,
                                                int tile, int slot)
{
    const int lane = threadIdx.x % 32, cpr = s.K / 8;
    const float inv_cpr = 1.0f / (float)cpr;
    const unsigned base = ring + (unsigned)(slot * 16 * s.kp) * 2;
    for (int i = lane; i < 16 * cpr; i += 32) {
        const int r = div_small(i, inv_cpr), c = (i - r * cpr) * 8, m = tile * 16 + r;
        const unsigned sa = base + (unsigned)(r * s.kp + c) * 2;
        if (m < s.M)
            cp_async_halves(sa, x + (size_t)m * s.K + c, 8);
        else
            st_zero_halves(sa, 8);
    }
}

static __device__ __forceinline__ void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::);
}

/* Waits until at most n of this thread's copy groups are pending. */
template <int N> static __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/* The source of lane `from` (all lanes take part). */
static __device__ __forceinline__ up_source gw_shfl(const up_source &s, int from)
{
    up_source t;
    t.o00 = __shfl_sync(0xffffffffu, s.o00, from);
    t.o01 = __shfl_sync(0xffffffffu, s.o01, from);
    t.o10 = __shfl_sync(0xffffffffu, s.o10, from);
    t.o11 = __shfl_sync(0xffffffffu, s.o11, from);
    t.ly = __shfl_sync(0xffffffffu, s.ly, from);
    t.lx = __shfl_sync(0xffffffffu, s.lx, from);
    return t;
}

/* The four source pixels' channels c..c+7 of an upsampled addend. */
static __device__ __forceinline__ void gw_fetch_up(const up_addend &u, const up_source &s, int c, uint4 *q)
{
    q[0] = __ldg(reinterpret_cast<const uint4 *>(u.x + s.o00 + c));
    q[1] = __ldg(reinterpret_cast<const uint4 *>(u.x + s.o01 + c));
    q[2] = __ldg(reinterpret_cast<const uint4 *>(u.x + s.o10 + c));
    q[3] = __ldg(reinterpret_cast<const uint4 *>(u.x + s.o11 + c));
}

/* v[0..7] += the addend from its source pixels q (gemm_tc16_up's
 * tc_up_value per channel). */
static __device__ __forceinline__ void gw_add_up(const uint4 *q, float ly, float lx, float *v)
{
    const __half2 *h00 = reinterpret_cast<const __half2 *>(&q[0]);
    const __half2 *h01 = reinterpret_cast<const __half2 *>(&q[1]);
    const __half2 *h10 = reinterpret_cast<const __half2 *>(&q[2]);
    const __half2 *h11 = reinterpret_cast<const __half2 *>(&q[3]);
    const float w00 = (1.0f - ly) * (1.0f - lx), w10 = ly * (1.0f - lx);
    const float w01 = (1.0f - ly) * lx, w11 = ly * lx;
#pragma unroll
    for (int e = 0; e < 4; e++) {
        const float2 v00 = __half22float2(h00[e]), v01 = __half22float2(h01[e]);
        const float2 v10 = __half22float2(h10[e]), v11 = __half22float2(h11[e]);
        v[2 * e] += v00.x * w00 + v10.x * w10 + v01.x * w01 + v11.x * w11;
        v[2 * e + 1] += v00.y * w00 + v10.y * w10 + v01.y * w01 + v11.y * w11;
    }
}

template <int NT, bool UP>
__global__ void __launch_bounds__(GW_THREADS, UP || NT >= 8 ? 2 : 3) gemm_rows(const __half *__restrict__ x,
                                                        const __half *__restrict__ w,
                                                        const float *__restrict__ bias,
                                                        const float *__restrict__ alpha,
                                                        __half *__restrict__ y, int act,
                                                        gw_shape s, up_addend u)
{
    extern __shared__ __align__(16) unsigned char gw_buf[];
    const gw_layout l = gw_smem(s);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, q = lane % 4;

    /* The filter (zero rows past N), bias and alpha: one copy group. */
    const int cpr = s.K / 8;
    const float inv_cpr = 1.0f / (float)cpr;
    const unsigned sw = smem_addr(gw_buf);
    for (int i = threadIdx.x; i < s.np * cpr; i += GW_THREADS) {
        const int n = div_small(i, inv_cpr), c = (i - n * cpr) * 8;
        const unsigned sa = sw + (unsigned)(n * s.kp + c) * 2;
        if (n < s.N)
            cp_async_halves(sa, w + (size_t)n * s.K + c, 8);
        else
            st_zero_halves(sa, 8);
    }
    float *sbias = reinterpret_cast<float *>(gw_buf + l.bias);
    float *salpha = reinterpret_cast<float *>(gw_buf + l.alpha);
    for (int n = threadIdx.x; n < s.np; n += GW_THREADS) {
        sbias[n] = bias && n < s.N ? __ldg(bias + n) : 0.0f;
        salpha[n] = act == GR_ACT_PRELU && n < s.N ? __ldg(alpha + n) : 0.0f;
    }
    cp_async_commit();
    pdl_begin();

    /* This warp's tiles: first, first + stride, ...; the ring starts
     * S - 1 of them (S = 2 or 3), one copy group each, empty or not. */
    const int first = blockIdx.x * GW_WARPS + warp, stride = gridDim.x * GW_WARPS;
    const unsigned ring = smem_addr(gw_buf + l.ring) + (unsigned)(warp * s.stages * 16 * s.kp) * 2;
    float *const own_out = reinterpret_cast<float *>(gw_buf + l.out) + warp * 16 * s.fs;
    for (int k = 0; k < s.stages - 1; k++) {
        if (first + k * stride < s.tiles)
            gw_fetch(x, s, ring, first + k * stride, k);
        cp_async_commit();
    }
    /* The filter's group is the oldest: done for every thread once the
     * block passes this barrier. */
    if (s.stages == 3)
        cp_async_wait<2>();
    else
        cp_async_wait<1>();
    __syncthreads();

    /* ldmatrix rows: A, row lane % 16, k half lane / 16; B as dwpw_mma's
     * pointwise filter (matrix lane / 8: n8 tile lane / 16, k half). */
    const unsigned a_row = (unsigned)((lane & 15) * s.kp + 8 * (lane >> 4)) * 2;
    const unsigned pb =
        sw + (unsigned)(((lane & 7) + 8 * (lane >> 4)) * s.kp + 8 * ((lane >> 3) & 1)) * 2;
    const int pieces = s.N / 8;
    const float inv_pieces = 1.0f / (float)pieces;
    int slot = 0;
    for (int tile = first; tile < s.tiles; tile += stride) {
        /* The tile S - 1 ahead into the slot the previous tile used. */
        __syncwarp();
        const int ahead = tile + (s.stages - 1) * stride;
        if (ahead < s.tiles)
            gw_fetch(x, s, ring, ahead, slot == 0 ? s.stages - 1 : slot - 1);
        cp_async_commit();
        if (s.stages == 3)
            cp_async_wait<2>();
        else
            cp_async_wait<1>();
        __syncwarp();

        float acc[NT][4];
#pragma unroll
        for (int j = 0; j < NT; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[j][e] = 0.0f;
        const unsigned a0 = ring + (unsigned)(slot * 16 * s.kp) * 2 + a_row;
        for (int k = 0; k < s.K; k += 16) {
            unsigned A[4];
            ldsm_x4(A, a0 + (unsigned)k * 2);
#pragma unroll
            for (int jp = 0; jp < NT / 2; jp++) {
                unsigned bf[4];
                ldsm_x4(bf, pb + (unsigned)(16 * jp * s.kp + k) * 2);
                mma_16816(acc[2 * jp], A, bf);
                mma_16816(acc[2 * jp + 1], A, bf + 2);
            }
        }
        /* + bias, activation, into the float tile (rows g and g + 8); the
         * slot's A tile is dead once its products are in registers. */
        float *const out =
            s.alias ? reinterpret_cast<float *>(gw_buf + l.ring +
                                                (size_t)((warp * s.stages + slot) * 16 * s.kp) * 2)
                    : own_out;
        __syncwarp();
#pragma unroll
        for (int j = 0; j < NT; j++) {
            const int n = 8 * j + 2 * q;
            if (n >= s.N)
                break;
            const float b0 = sbias[n], b1 = sbias[n + 1], al0 = salpha[n], al1 = salpha[n + 1];
#pragma unroll
            for (int h = 0; h < 2; h++)
                *reinterpret_cast<float2 *>(out + (g + 8 * h) * s.fs + n) =
                    make_float2(activate_slope(acc[j][2 * h] + b0, act, al0),
                                activate_slope(acc[j][2 * h + 1] + b1, act, al1));
        }
        __syncwarp();
        /* 8-channel pieces of the 16 rows (NT / 2 at most per lane): +
         * addend, 16-byte stores. Lane r < 16 finds row r's addend source,
         * the lanes of its pieces fetch it; G pieces' addends are loaded
         * before any is used, so their latencies overlap. */
        up_source src = {};
        if (UP)
            src = up_source_at(u, s.N, min(tile * 16 + (lane & 15), s.M - 1));
        constexpr int PL = NT / 2, G = PL <= 3 ? PL : 2;
#pragma unroll
        for (int k0 = 0; k0 < PL; k0 += G) {
            uint4 q[G][4];
            int at_m[G], at_c[G], at_r[G];
            float at_ly[G], at_lx[G];
#pragma unroll
            for (int k = 0; k < G; k++) {
                const int i = (k0 + k) * 32 + lane, r = min(div_small(i, inv_pieces), 15);
                at_r[k] = r;
                at_c[k] = (i - r * pieces) * 8;
                at_m[k] = k0 + k < PL && i < 16 * pieces ? tile * 16 + r : s.M;
                if (UP) {
                    const up_source at = gw_shfl(src, r);
                    at_ly[k] = at.ly, at_lx[k] = at.lx;
                    if (at_m[k] < s.M)
                        gw_fetch_up(u, at, at_c[k], q[k]);
                }
            }
#pragma unroll
            for (int k = 0; k < G; k++) {
                if (at_m[k] >= s.M)
                    continue;
                const float *o = out + at_r[k] * s.fs + at_c[k];
                const float4 lo = *reinterpret_cast<const float4 *>(o);
                const float4 hi = *reinterpret_cast<const float4 *>(o + 4);
                float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
                if (UP)
                    gw_add_up(q[k], at_ly[k], at_lx[k], v);
                st16(y + (size_t)at_m[k] * s.N + at_c[k], v);
            }
        }
        slot = slot == s.stages - 1 ? 0 : slot + 1;
    }
    cp_async_wait<0>();
}

/* The rows form: fp16, 1x1 GEMM rows (the caller's cuda_conv_is_pointwise
 * form with a 1x1 window), K % 16 == 0 up to GW_MAX_K, N % 8 == 0 up to
 * GW_MAX_N, no residual, 16-byte aligned buffers (the addend's too). */
extern "C" bool cuda_conv_rows_ok(const cuda_conv_args *a)
{
    const int K = a->kh * a->kw * a->cin, N = a->cout;
    const size_t align = (size_t)a->x | (size_t)a->w | (size_t)a->y | (size_t)a->up;
    const long long M = (long long)a->batch * a->oh * a->ow;
    /* Over 128, the float tile has to fit in an A tile's slot. */
    const bool room = K <= 128 || 2 * (N + 4) <= K + 8;
    return a->prec == CUDA_PREC_F16 && a->kh == 1 && a->kw == 1 && !a->residual && K % 16 == 0 &&
           K <= GW_MAX_K && N % 8 == 0 && N <= GW_MAX_N && room && (align & 15) == 0 &&
           M * (K > N ? K : N) < (1LL << 31);
}

/* One wave of persistent blocks: as many as the SMs hold at once (the
 * occupancy calculator: registers and shared memory), so that none waits
 * for a second wave while SMs idle (108 registers held gemm_rows<8> to 2
 * blocks a SM where the shared memory allowed 3: 1.5 waves). */
template <int NT>
static cudaError_t gw_launch(const cuda_conv_args *a, const gw_shape &s, const up_addend &u,
                             int sms, size_t smem, cudaStream_t st)
{
    const __half *x = static_cast<const __half *>(a->x), *w = static_cast<const __half *>(a->w);
    __half *y = static_cast<__half *>(a->y);
    void (*kernel)(const __half *, const __half *, const float *, const float *, __half *, int,
                   gw_shape, up_addend) = a->up ? gemm_rows<NT, true> : gemm_rows<NT, false>;
    int per_sm = 0;
    cudaError_t e = cudaSuccess;
    if (smem > 48 * 1024)
        e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, GW_THREADS, smem);
    if (e != cudaSuccess)
        return e;
    long long grid = (long long)sms * (per_sm > 0 ? per_sm : 1);
    const long long need = (s.tiles + GW_WARPS - 1) / GW_WARPS;
    grid = grid < need ? grid : need;
    return cuda_ops_start(kernel, (unsigned)grid, GW_THREADS, smem, st, x, w, a->bias, a->alpha, y,
                          a->act, s, u);
}

extern "C" cudaError_t cuda_launch_conv_rows(const cuda_conv_args *a, cudaStream_t st)
{
    if (!cuda_conv_rows_ok(a))
        return cudaErrorInvalidValue;
    gw_shape s;
    s.M = a->batch * a->oh * a->ow, s.K = a->cin, s.N = a->cout;
    s.np = (s.N + 15) / 16 * 16;
    s.kp = s.K + 8, s.fs = s.N + 4;
    s.stages = s.K <= 64 ? 3 : 2;
    s.alias = s.K > 128;
    s.tiles = (s.M + 15) / 16;
    if (s.M <= 0)
        return cudaSuccess;
    const up_addend u = up_addend_of(a);

    int sms = 0;
    cudaError_t e = cuda_ops_sm_count(&sms);
    if (e != cudaSuccess)
        return e;
    const size_t smem = gw_smem(s).total;
    if (s.np <= 16)
        return gw_launch<2>(a, s, u, sms, smem, st);
    if (s.np <= 32)
        return gw_launch<4>(a, s, u, sms, smem, st);
    if (s.np <= 48)
        return gw_launch<6>(a, s, u, sms, smem, st);
    if (s.np <= 64)
        return gw_launch<8>(a, s, u, sms, smem, st);
    return gw_launch<12>(a, s, u, sms, smem, st);
}
