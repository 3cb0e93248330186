/* The stem convolutions: the first layer of each model, a square 5x5 or 3x3
 * window at stride 2 over the 3 channels of the input image, at most 32
 * output channels (BlazeFace short range 5x5 3 -> 24 on 128x128, full range
 * 3x3 3 -> 32 and FaceMesh 3x3 3 -> 16 on 192x192). With 3 input channels
 * there is too little depth for a plain GEMM and the layer is one of the
 * largest of each model, so it has kernels of its own. Both compute a tile
 * of output pixels of one item for all output channels from an input patch
 * staged in shared memory (zero outside the image, which is the padding).
 *
 * stem_tc (fp16; Cout even): an implicit GEMM on the tensor cores. M = the
 *   16 x 16 output pixels of a tile, N = Cout padded to 8 (zero filter
 *   rows), K = the window (75 or 27 values) laid out per window row: the
 *   3*kw values of window row ky sit contiguously in the patch row, so row ky
 *   takes K positions [ky*KR, ky*KR + 3*kw) with KR = 3*kw + 1 (even), one
 *   slot of zero filter value after each row, and K is padded to a multiple
 *   of 16 (80 for 5x5, 32 for 3x3). Every pair of A values (k, k+1) of a
 *   fragment is then one aligned 32-bit shared-memory load straight from the
 *   patch (im2col on the fly), with no table; the filler slots read a
 *   neighbouring input value that is masked to zero in the register, so a
 *   non-finite input there cannot leak in. 8 warps, each two output rows (two
 *   m16 fragments), mma.sync m16n8k16 with fp32 accumulators; the filter
 *   fragments are read once per block from the [kh][kw][3][Cout8] weights
 *   into registers. Blocks are persistent (2 per SM) and walk the tiles
 *   grid-stride; the next tile's patch is loaded into registers (one warp
 *   per patch row, a 32-bit word per lane) while the current one is
 *   multiplied. The epilogue (bias, residual, activation) runs on the
 *   accumulators and writes half2 into a shared output tile, which is then
 *   copied to memory with 16-byte stores (4-byte when Cout % 8 != 0).
 * stem (fp32, and fp16 shapes stem_tc does not take): register-blocked FFMA,
 *   filter and input tile in shared memory as float, see stem_body. */
#include "engine/cuda_ops_device.h"

#define COG CUDA_CONV_COUT_GROUP
#define STEM_SMEM_MAX (48 * 1024)

/* ---- fp16, tensor cores --------------------------------------------------- */

#define STC_TH 16 /* output tile rows: 8 warps x 2 m16 fragments */
#define STC_TW 16 /* output tile columns: the 16 rows of an m16 fragment */
#define STC_THREADS 256
#define STC_BLOCKS_PER_SM 2

/* Geometry of the window k (3 or 5); constants after inlining. */
#define STC_KR(k) (3 * (k) + 1)                       /* K positions per window row */
#define STC_KS(k) (((k) * STC_KR(k) + 15) / 16)       /* k16 steps: 5 or 2 */
#define STC_PH(k) (2 * (STC_TH - 1) + (k))            /* patch rows */
#define STC_RS(k) (3 * (2 * (STC_TW - 1) + (k) + 1))  /* patch row, halves (even) */
#define STC_NW(k) (STC_RS(k) / 2 + 1)                 /* 32-bit words covering a row */
#define STC_RSLOT(k) ((STC_PH(k) + 7) / 8)            /* patch rows per warp */
#define STC_WSLOT(k) ((STC_NW(k) + 31) / 32)          /* words per lane per row */
#define STC_CS(nt) (8 * (nt) + ((nt) % 2 == 0 ? 8 : 0)) /* output tile row, halves */
#define STC_PATCH_BYTES(k) ((STC_PH(k) * STC_RS(k) * 2 + 15) / 16 * 16)

/* Filter value at GEMM position (k, n) as half bits: w is [K][K][3][coutp];
 * zero for the filler slot of a window row, K padding and n >= cout. */
static __device__ __forceinline__ unsigned stc_wval(const unsigned short *__restrict__ w,
                                                    const int K, int k, int n, int cout,
                                                    int coutp)
{
    const int KR = STC_KR(K);
    if (k >= K * KR || n >= cout)
        return 0;
    int ky = k / KR, j = k - ky * KR;
    if (j >= 3 * K)
        return 0;
    return __ldg(w + (size_t)(ky * 3 * K + j) * coutp + n);
}

/* The A operand's k pair (k, k+1), k = 16 ks + 8 h + 2 t: its 32-bit word
 * offset from the pixel's patch position, and the mask that zeroes the
 * filler slot (the high half when k + 1 is one) or the K padding (both). */
static __device__ __forceinline__ void stc_koff(const int K, int ks, int h, int t, int &off,
                                                unsigned &mask)
{
    const int KR = STC_KR(K);
    int k = 16 * ks + 8 * h + 2 * t;
    if (k >= K * KR) {
        off = 0;
        mask = 0;
        return;
    }
    int ky = k / KR, j = k - ky * KR;
    off = (ky * STC_RS(K) + j) / 2;
    mask = j == 3 * K - 1 ? 0xffffu : 0xffffffffu;
}

/* Element offset of patch row r's first element from x (the tile's rows
 * start at input row iy0, column ix0), and whether the row is in the image.
 * Rows outside contribute zeros, and parity 0. */
static __device__ __forceinline__ bool stc_row(const cuda_conv_args &a, int xb, int iy0, int ix0,
                                               int r, int &e0)
{
    int iy = iy0 + r;
    bool ok = (unsigned)iy < (unsigned)a.ih;
    e0 = ok ? xb + (iy * a.iw + ix0) * 3 : 0;
    return ok;
}

static __device__ __forceinline__ unsigned stc_half(float v)
{
    return __half_as_ushort(__float2half_rn(v));
}

/* Loads the patch of a tile into registers: warp w takes patch rows w, w+8,
 * ..., lane l the 32-bit words l, l+32 of a row. Word i of row r holds
 * patch positions q = 2i - (e0 & 1) and q + 1 (aligned in memory, so one
 * load when both lie in the image row; zero where they do not). XF32: the
 * input is float32 (an fp16 graph's float input read directly, see
 * cuda_conv_args.x_f32), each pair one 8-byte load into pref, converted to
 * halves by stc_stage so that the loads stay in flight meanwhile. */
static __device__ __forceinline__ void stc_fetch(const cuda_conv_args &a, const int K,
                                                 const bool XF32, unsigned *pre, float2 *pref,
                                                 int xb, int iy0, int ix0)
{
    const unsigned short *x = static_cast<const unsigned short *>(a.x);
    const float *xf = static_cast<const float *>(a.x);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, w3 = a.iw * 3;
#pragma unroll
    for (int s = 0; s < STC_RSLOT(K); s++) {
        int r = warp + 8 * s, e0 = 0;
        bool ok = r < STC_PH(K) && stc_row(a, xb, iy0, ix0, r, e0);
#pragma unroll
        for (int v = 0; v < STC_WSLOT(K); v++) {
            int i = lane + 32 * v, q = 2 * i - (e0 & 1), c = q + 3 * ix0;
            bool lo = ok && i < STC_NW(K) && (unsigned)c < (unsigned)w3;
            bool hi = ok && i < STC_NW(K) && (unsigned)(c + 1) < (unsigned)w3;
            if (XF32) { /* raw floats: converted in stc_stage, after the loads land */
                float2 f = make_float2(0.0f, 0.0f);
                if (lo && hi) {
                    f = __ldg(reinterpret_cast<const float2 *>(xf + e0 + q));
                } else {
                    if (lo)
                        f.x = __ldg(xf + e0 + q);
                    if (hi)
                        f.y = __ldg(xf + e0 + q + 1);
                }
                pref[s * STC_WSLOT(K) + v] = f;
                continue;
            }
            unsigned val = 0;
            if (lo && hi) {
                val = __ldg(reinterpret_cast<const unsigned *>(x + e0 + q));
            } else {
                if (lo)
                    val = __ldg(x + e0 + q);
                if (hi)
                    val |= (unsigned)__ldg(x + e0 + q + 1) << 16;
            }
            pre[s * STC_WSLOT(K) + v] = val;
        }
    }
}

/* Stores what stc_fetch loaded into the patch [PH][RS] (every position
 * written, zeros included). */
static __device__ __forceinline__ void stc_stage(const cuda_conv_args &a, const int K,
                                                 const bool XF32, const unsigned *pre,
                                                 const float2 *pref, unsigned short *sp, int xb,
                                                 int iy0, int ix0)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, RS = STC_RS(K);
#pragma unroll
    for (int s = 0; s < STC_RSLOT(K); s++) {
        int r = warp + 8 * s, e0;
        if (r >= STC_PH(K))
            break;
        stc_row(a, xb, iy0, ix0, r, e0);
#pragma unroll
        for (int v = 0; v < STC_WSLOT(K); v++) {
            int i = lane + 32 * v, q = 2 * i - (e0 & 1);
            const int w = s * STC_WSLOT(K) + v;
            unsigned val = XF32 ? stc_half(pref[w].x) | stc_half(pref[w].y) << 16 : pre[w];
            if (i < STC_NW(K)) {
                if (q >= 0 && q < RS)
                    sp[r * RS + q] = (unsigned short)(val & 0xffffu);
                if (q + 1 < RS)
                    sp[r * RS + q + 1] = (unsigned short)(val >> 16);
            }
        }
    }
}

/* Accumulators (+ bias, + residual, activation) into the output tile
 * so[pixel][CS] as half2. Fragment (mt, j): output row 2*warp + mt of the
 * tile, columns g and g + 8, channels 8j + 2t, +1. */
static __device__ __forceinline__ void stc_epilogue(const cuda_conv_args &a, const int NT,
                                                    const int ACT, const float (*acc)[4],
                                                    const float *bias, const float *alpha,
                                                    __half *so, int b, int ty0, int tx0)
{
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const __half *res = static_cast<const __half *>(a.residual);
#pragma unroll
    for (int mt = 0; mt < 2; mt++) {
        const int ly = 2 * warp + mt, oy = ty0 + ly;
#pragma unroll
        for (int hh = 0; hh < 2; hh++) {
            const int lx = g + 8 * hh, ox = tx0 + lx;
            const bool inside = oy < a.oh && ox < a.ow;
            const size_t o = ((size_t)(b * a.oh + oy) * a.ow + ox) * a.cout;
#pragma unroll
            for (int j = 0; j < NT; j++) {
                int n = 8 * j + 2 * t;
                if (n >= a.cout) /* cout even: n + 1 < cout otherwise */
                    continue;
                float v0 = acc[mt * NT + j][2 * hh] + bias[2 * j];
                float v1 = acc[mt * NT + j][2 * hh + 1] + bias[2 * j + 1];
                if (res && inside) {
                    float2 r = __half22float2(*reinterpret_cast<const __half2 *>(res + o + n));
                    v0 += r.x;
                    v1 += r.y;
                }
                v0 = activate_slope(v0, ACT, alpha[2 * j]);
                v1 = activate_slope(v1, ACT, alpha[2 * j + 1]);
                *reinterpret_cast<__half2 *>(so + (ly * STC_TW + lx) * STC_CS(NT) + n) =
                    __floats2half2_rn(v0, v1);
            }
        }
    }
}

/* The output tile to y: chunks of V halves (8: 16-byte stores, or 2), the
 * chunks of a pixel and the pixels of a tile row contiguous in memory. */
static __device__ __forceinline__ void stc_store(const cuda_conv_args &a, const int NT, const int V,
                                                 const __half *so, int b, int ty0, int tx0)
{
    const int cpp = a.cout / V, n = STC_TH * STC_TW * cpp;
    /* idx / cpp as a multiply-high (exact for idx < 2^24 / cpp^2). */
    const unsigned magic = cpp > 1 ? 0xffffffffu / (unsigned)cpp + 1u : 0u;
    __half *y = static_cast<__half *>(a.y);
    for (int idx = threadIdx.x; idx < n; idx += STC_THREADS) {
        int p = cpp > 1 ? (int)__umulhi((unsigned)idx, magic) : idx, c = (idx - p * cpp) * V;
        int oy = ty0 + p / STC_TW, ox = tx0 + p % STC_TW;
        if (oy >= a.oh || ox >= a.ow)
            continue;
        size_t o = ((size_t)(b * a.oh + oy) * a.ow + ox) * a.cout + c;
        const __half *src = so + p * STC_CS(NT) + c;
        if (V == 8)
            *reinterpret_cast<uint4 *>(y + o) = *reinterpret_cast<const uint4 *>(src);
        else
            *reinterpret_cast<unsigned *>(y + o) = *reinterpret_cast<const unsigned *>(src);
    }
}

static __device__ __forceinline__ void stem_tc_body(const cuda_conv_args &a, int vec8, const int K,
                                                    const int NT, const bool XF32)
{
    extern __shared__ uint4 stc_smem[];
    unsigned short *sp = reinterpret_cast<unsigned short *>(stc_smem);
    __half *so = reinterpret_cast<__half *>(reinterpret_cast<char *>(stc_smem) +
                                            STC_PATCH_BYTES(K));
    const int KS = STC_KS(K);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;

    /* Filter fragments (B, "col": n = 8j + g, k pairs 2t and 2t + 8), held
     * for the whole block; per-channel bias and alpha of this thread's
     * accumulator columns 8j + 2t, +1. */
    const unsigned short *w = static_cast<const unsigned short *>(a.w);
    unsigned bf[4][5][2];
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int ks = 0; ks < KS; ks++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                int n = 8 * j + g, k = 16 * ks + 8 * h + 2 * t;
                bf[j][ks][h] = stc_wval(w, K, k, n, a.cout, 8 * NT) |
                               stc_wval(w, K, k + 1, n, a.cout, 8 * NT) << 16;
            }
    float bias[8], alpha[8];
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            int n = 8 * j + 2 * t + e;
            bool in = n < a.cout;
            bias[2 * j + e] = a.bias && in ? __ldg(a.bias + n) : 0.0f;
            alpha[2 * j + e] = a.act == GR_ACT_PRELU && in ? __ldg(a.alpha + n) : 0.0f;
        }
    pdl_begin(); /* the filter above is a constant */
    /* A operand: word offsets of the k pairs from a pixel's patch position,
     * and the pixel (output row 2*warp + mt, column g) itself. */
    int aoff[5][2];
    unsigned amask[5][2];
#pragma unroll
    for (int ks = 0; ks < KS; ks++)
#pragma unroll
        for (int h = 0; h < 2; h++)
            stc_koff(K, ks, h, t, aoff[ks][h], amask[ks][h]);
    const unsigned *spw = reinterpret_cast<const unsigned *>(sp);
    const int pix = (2 * (2 * warp) * STC_RS(K) + 6 * g) / 2; /* words; + RS for mt = 1 */

    /* Tile walk: tile = blockIdx.x + i * gridDim.x as (item, tile row,
     * tile column), advanced without divisions. */
    const int tiles_x = (a.ow + STC_TW - 1) / STC_TW, tiles_y = (a.oh + STC_TH - 1) / STC_TH;
    int tx = blockIdx.x % tiles_x, ty = blockIdx.x / tiles_x % tiles_y;
    int b = blockIdx.x / tiles_x / tiles_y;
    const int gx = gridDim.x % tiles_x, gy = gridDim.x / tiles_x % tiles_y;
    const int gb = gridDim.x / tiles_x / tiles_y;
    const int item = a.ih * a.iw * 3;

    unsigned pre[STC_RSLOT(5) * STC_WSLOT(5)];
    float2 pref[STC_RSLOT(5) * STC_WSLOT(5)]; /* XF32 only */
    stc_fetch(a, K, XF32, pre, pref, b * item, ty * STC_TH * 2 - a.pt, tx * STC_TW * 2 - a.pl);
    while (b < a.batch) {
        const int ty0 = ty * STC_TH, tx0 = tx * STC_TW;
        stc_stage(a, K, XF32, pre, pref, sp, b * item, ty0 * 2 - a.pt, tx0 * 2 - a.pl);
        int nx = tx + gx, ny = ty + gy, nb = b + gb;
        if (nx >= tiles_x) {
            nx -= tiles_x;
            ny++;
        }
        if (ny >= tiles_y) {
            ny -= tiles_y;
            nb++;
        }
        __syncthreads();
        if (nb < a.batch)
            stc_fetch(a, K, XF32, pre, pref, nb * item, ny * STC_TH * 2 - a.pt, nx * STC_TW * 2 - a.pl);

        float acc[8][4];
#pragma unroll
        for (int i = 0; i < 2 * NT; i++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[i][e] = 0.0f;
#pragma unroll
        for (int ks = 0; ks < KS; ks++)
#pragma unroll
            for (int mt = 0; mt < 2; mt++) {
                const unsigned *p = spw + pix + mt * STC_RS(K);
                unsigned af[4];
                af[0] = p[aoff[ks][0]] & amask[ks][0];
                af[1] = p[aoff[ks][0] + 24] & amask[ks][0]; /* column g + 8: 48 halves on */
                af[2] = p[aoff[ks][1]] & amask[ks][1];
                af[3] = p[aoff[ks][1] + 24] & amask[ks][1];
#pragma unroll
                for (int j = 0; j < NT; j++)
                    mma_16816(acc[mt * NT + j], af, bf[j][ks]);
            }

        switch (a.act) {
        case GR_ACT_RELU:
            stc_epilogue(a, NT, GR_ACT_RELU, acc, bias, alpha, so, b, ty0, tx0);
            break;
        case GR_ACT_RELU6:
            stc_epilogue(a, NT, GR_ACT_RELU6, acc, bias, alpha, so, b, ty0, tx0);
            break;
        case GR_ACT_PRELU:
            stc_epilogue(a, NT, GR_ACT_PRELU, acc, bias, alpha, so, b, ty0, tx0);
            break;
        default:
            stc_epilogue(a, NT, GR_ACT_NONE, acc, bias, alpha, so, b, ty0, tx0);
            break;
        }
        __syncthreads();
        if (vec8)
            stc_store(a, NT, 8, so, b, ty0, tx0);
        else
            stc_store(a, NT, 2, so, b, ty0, tx0);
        tx = nx, ty = ny, b = nb;
    }
}

#define STEM_TC_KERNEL(name, k, nt, xf32)                                                      \
    __global__ void __launch_bounds__(STC_THREADS, STC_BLOCKS_PER_SM)                          \
    name(cuda_conv_args a, int vec8)                                                           \
    {                                                                                          \
        stem_tc_body(a, vec8, k, nt, xf32);                                                    \
    }
STEM_TC_KERNEL(stem_tc_k5n8, 5, 1, false)
STEM_TC_KERNEL(stem_tc_k5n16, 5, 2, false)
STEM_TC_KERNEL(stem_tc_k5n24, 5, 3, false)
STEM_TC_KERNEL(stem_tc_k5n32, 5, 4, false)
STEM_TC_KERNEL(stem_tc_k3n8, 3, 1, false)
STEM_TC_KERNEL(stem_tc_k3n16, 3, 2, false)
STEM_TC_KERNEL(stem_tc_k3n24, 3, 3, false)
STEM_TC_KERNEL(stem_tc_k3n32, 3, 4, false)
STEM_TC_KERNEL(stem_tc_f32_k5n8, 5, 1, true)
STEM_TC_KERNEL(stem_tc_f32_k5n16, 5, 2, true)
STEM_TC_KERNEL(stem_tc_f32_k5n24, 5, 3, true)
STEM_TC_KERNEL(stem_tc_f32_k5n32, 5, 4, true)
STEM_TC_KERNEL(stem_tc_f32_k3n8, 3, 1, true)
STEM_TC_KERNEL(stem_tc_f32_k3n16, 3, 2, true)
STEM_TC_KERNEL(stem_tc_f32_k3n24, 3, 3, true)
STEM_TC_KERNEL(stem_tc_f32_k3n32, 3, 4, true)

static size_t stem_tc_smem(int k, int nt)
{
    return (size_t)STC_PATCH_BYTES(k) + (size_t)STC_TH * STC_TW * STC_CS(nt) * 2;
}

/* ---- fp32 (and the fp16 rest), CUDA cores ----------------------------------
 * A block computes a STEM_TH x STEM_TW tile of output pixels of one item for
 * all output channels: the filter (as float, [K][K][CIN][coutp]) and the
 * input tile it needs (as float, zero outside the image, which is the
 * padding) are staged in shared memory once. Warp w handles channel group
 * w % groups (so its filter reads are broadcasts) and 8 output rows; a lane
 * computes STEM_PX consecutive output pixels x 8 channels, keeping the input
 * row segment of one filter row in registers, so each shared-memory filter
 * read feeds STEM_PX x 8 FMAs. K, S and CIN are constants (the kernels below
 * inline the body with literals), so every loop unrolls. */
#define STEM_TH 16
#define STEM_TW 16
#define STEM_PX 4
#define STEM_XR_MAX 33 /* ((STEM_PX - 1) * S + K) * CIN for 5x5/2, 3 channels */

/* 8 consecutive floats from shared memory (16-byte aligned). */
static __device__ __forceinline__ void ld8_shared(const float *p, float *v)
{
    float4 a = reinterpret_cast<const float4 *>(p)[0], b = reinterpret_cast<const float4 *>(p)[1];
    v[0] = a.x, v[1] = a.y, v[2] = a.z, v[3] = a.w, v[4] = b.x, v[5] = b.y, v[6] = b.z, v[7] = b.w;
}

/* 8 consecutive values of a row in memory (16-byte aligned), as floats. */
static __device__ __forceinline__ void ld8_global(const float *p, float *v)
{
    ld16(p, v);
    ld16(p + 4, v + 4);
}
static __device__ __forceinline__ void ld8_global(const __half *p, float *v) { ld16(p, v); }
static __device__ __forceinline__ void st8_global(float *p, const float *v)
{
    st16(p, v);
    st16(p + 4, v + 4);
}
static __device__ __forceinline__ void st8_global(__half *p, const float *v) { st16(p, v); }

template <typename T>
static __device__ __forceinline__ void stem_body(const cuda_conv_args &a, int vec_out, const int K,
                                                 const int S, const int CIN)
{
    extern __shared__ float4 smem4[];
    float *sw = reinterpret_cast<float *>(smem4);
    const int coutp = (a.cout + COG - 1) / COG * COG, groups = coutp / COG;
    const int nw = K * K * CIN * coutp;
    float *sx = sw + nw;
    const int IR = (STEM_TH - 1) * S + K, IC = (STEM_TW - 1) * S + K, ICC = IC * CIN;
    const int tiles_x = (a.ow + STEM_TW - 1) / STEM_TW, tiles_y = (a.oh + STEM_TH - 1) / STEM_TH;
    int bt = blockIdx.x;
    const int tx0 = (bt % tiles_x) * STEM_TW;
    bt /= tiles_x;
    const int ty0 = (bt % tiles_y) * STEM_TH, b = bt / tiles_y;

    const T *w = static_cast<const T *>(a.w);
    for (int i = threadIdx.x; i < nw; i += blockDim.x)
        sw[i] = ld(w + i);
    const T *x = static_cast<const T *>(a.x) + (size_t)b * a.ih * a.iw * CIN;
    const int iy0 = ty0 * S - a.pt, ix0 = tx0 * S - a.pl;
    for (int i = threadIdx.x; i < IR * ICC; i += blockDim.x) {
        int r = i / ICC, cc = i % ICC;
        int iy = iy0 + r, ix = ix0 + cc / CIN, ci = cc % CIN;
        float v = 0.0f;
        if (iy >= 0 && iy < a.ih && ix >= 0 && ix < a.iw)
            v = ld(x + ((size_t)iy * a.iw + ix) * CIN + ci);
        sx[i] = v;
    }
    __syncthreads();

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = warp % groups;
    const int ly = (warp / groups) * 8 + lane / 4, lx = (lane % 4) * STEM_PX;
    float acc[STEM_PX][COG];
#pragma unroll
    for (int p = 0; p < STEM_PX; p++)
#pragma unroll
        for (int j = 0; j < COG; j++)
            acc[p][j] = 0.0f;
    const float *xs = sx + ly * S * ICC + lx * S * CIN;
    const float *ws = sw + g * COG;
    const int NX = ((STEM_PX - 1) * S + K) * CIN;
#pragma unroll
    for (int ky = 0; ky < K; ky++) {
        float xr[STEM_XR_MAX];
#pragma unroll
        for (int j = 0; j < NX; j++)
            xr[j] = xs[ky * ICC + j];
#pragma unroll
        for (int kx = 0; kx < K; kx++)
#pragma unroll
            for (int ci = 0; ci < CIN; ci++) {
                float wv[COG];
                ld8_shared(ws + ((ky * K + kx) * CIN + ci) * coutp, wv);
#pragma unroll
                for (int p = 0; p < STEM_PX; p++) {
                    float xv = xr[(p * S + kx) * CIN + ci];
#pragma unroll
                    for (int j = 0; j < COG; j++)
                        acc[p][j] = fmaf(xv, wv[j], acc[p][j]);
                }
            }
    }

    const int oy = ty0 + ly, c0 = g * COG;
    if (oy >= a.oh)
        return;
    float bv[COG];
#pragma unroll
    for (int j = 0; j < COG; j++)
        bv[j] = (a.bias && c0 + j < a.cout) ? __ldg(a.bias + c0 + j) : 0.0f;
    T *y = static_cast<T *>(a.y);
    const T *res = static_cast<const T *>(a.residual);
#pragma unroll
    for (int p = 0; p < STEM_PX; p++) {
        int ox = tx0 + lx + p;
        if (ox >= a.ow)
            break;
        size_t o = ((size_t)(b * a.oh + oy) * a.ow + ox) * a.cout + c0;
        float v[COG];
#pragma unroll
        for (int j = 0; j < COG; j++)
            v[j] = acc[p][j] + bv[j];
        if (vec_out) {
            if (res) {
                float r[COG];
                ld8_global(res + o, r);
#pragma unroll
                for (int j = 0; j < COG; j++)
                    v[j] += r[j];
            }
#pragma unroll
            for (int j = 0; j < COG; j++)
                v[j] = activate(v[j], a.act, a.alpha, c0 + j);
            st8_global(y + o, v);
        } else {
#pragma unroll
            for (int j = 0; j < COG; j++) {
                if (c0 + j >= a.cout)
                    break;
                float u = v[j];
                if (res)
                    u += ld(res + o + j);
                st(y + o + j, activate(u, a.act, a.alpha, c0 + j));
            }
        }
    }
}

template <typename T>
__global__ void __launch_bounds__(256) conv_stem_k5s2c3(cuda_conv_args a, int vec_out)
{
    pdl_begin();
    stem_body<T>(a, vec_out, 5, 2, 3);
}

template <typename T>
__global__ void __launch_bounds__(256) conv_stem_k3s2c3(cuda_conv_args a, int vec_out)
{
    pdl_begin();
    stem_body<T>(a, vec_out, 3, 2, 3);
}

/* Shared memory of the stem kernel (bytes) for window k, stride s. */
static size_t stem_smem(int k, int s, int cin, int coutp)
{
    int ir = (STEM_TH - 1) * s + k, ic = (STEM_TW - 1) * s + k;
    return ((size_t)k * k * cin * coutp + (size_t)ir * ic * cin) * sizeof(float);
}

/* ---- launchers ------------------------------------------------------------ */

extern "C" bool cuda_conv_is_stem(const cuda_conv_args *a)
{
    int coutp = (a->cout + COG - 1) / COG * COG;
    if (!(a->cin == 3 && a->kh == a->kw && (a->kh == 5 || a->kh == 3) && a->sh == 2 &&
          a->sw == 2 && a->dh == 1 && a->dw == 1 && a->cout >= 1 && coutp <= 4 * COG))
        return false;
    long long tiles = (long long)a->batch * ((a->oh + STEM_TH - 1) / STEM_TH) *
                      ((a->ow + STEM_TW - 1) / STEM_TW);
    return tiles < (1LL << 31) && stem_smem(a->kh, 2, 3, coutp) <= STEM_SMEM_MAX;
}

/* The tensor-core kernel for window k, nt groups of 8 output channels,
 * float32 input or not. */
static void (*stem_tc_kernel(int k, int nt, bool xf32))(cuda_conv_args, int)
{
    static void (*const k5[2][4])(cuda_conv_args, int) = {
        {stem_tc_k5n8, stem_tc_k5n16, stem_tc_k5n24, stem_tc_k5n32},
        {stem_tc_f32_k5n8, stem_tc_f32_k5n16, stem_tc_f32_k5n24, stem_tc_f32_k5n32}};
    static void (*const k3[2][4])(cuda_conv_args, int) = {
        {stem_tc_k3n8, stem_tc_k3n16, stem_tc_k3n24, stem_tc_k3n32},
        {stem_tc_f32_k3n8, stem_tc_f32_k3n16, stem_tc_f32_k3n24, stem_tc_f32_k3n32}};
    return k == 5 ? k5[xf32][nt - 1] : k3[xf32][nt - 1];
}

/* The tensor-core form: fp16, pairs of output channels (half2 epilogue),
 * 32-bit input words and output/residual pairs, so 4-byte aligned buffers
 * (8-byte for float input). */
static bool stem_tc_ok(const cuda_conv_args *a)
{
    size_t align = (size_t)a->x | (size_t)a->y | (size_t)a->residual;
    return a->prec == CUDA_PREC_F16 && a->cout % 2 == 0 && (align & (a->x_f32 ? 7 : 3)) == 0;
}

extern "C" bool cuda_conv_stem_reads_f32(const cuda_conv_args *a)
{
    return cuda_conv_is_stem(a) && stem_tc_ok(a);
}

extern "C" cudaError_t cuda_launch_conv_stem(const cuda_conv_args *a, cudaStream_t s)
{
    int coutp = (a->cout + COG - 1) / COG * COG;
    if (stem_tc_ok(a)) {
        long long tiles = (long long)a->batch * ((a->oh + STC_TH - 1) / STC_TH) *
                          ((a->ow + STC_TW - 1) / STC_TW);
        int sms = 0;
        cudaError_t e = cuda_ops_sm_count(&sms);
        if (e != cudaSuccess)
            return e;
        long long grid = (long long)sms * STC_BLOCKS_PER_SM;
        if (grid > tiles)
            grid = tiles;
        int vec8 = a->cout % 8 == 0 && ((size_t)a->y & 15) == 0;
        int nt = coutp / COG;
        if (grid > 0)
            return cuda_ops_start(stem_tc_kernel(a->kh, nt, a->x_f32), (unsigned)grid, STC_THREADS,
                                  stem_tc_smem(a->kh, nt), s, *a, vec8);
        return cudaSuccess;
    }
    if (a->x_f32)
        return cudaErrorInvalidValue; /* only stem_tc reads float input */
    size_t ssm = stem_smem(a->kh, 2, 3, coutp);
    unsigned blocks = (unsigned)((long long)a->batch * ((a->oh + STEM_TH - 1) / STEM_TH) *
                                 ((a->ow + STEM_TW - 1) / STEM_TW));
    size_t es = a->prec == CUDA_PREC_F16 ? 2 : 4;
    size_t addr = (size_t)a->y | (size_t)a->residual;
    int vec_out = a->cout % COG == 0 && (addr & 15) == 0 && (a->cout * es) % 16 == 0;
    int threads = 32 * (coutp / COG) * (STEM_TH / 8);
    if (a->prec == CUDA_PREC_F16) {
        if (a->kh == 5)
            return cuda_ops_start(conv_stem_k5s2c3<__half>, blocks, threads, ssm, s, *a, vec_out);
        else
            return cuda_ops_start(conv_stem_k3s2c3<__half>, blocks, threads, ssm, s, *a, vec_out);
    } else {
        if (a->kh == 5)
            return cuda_ops_start(conv_stem_k5s2c3<float>, blocks, threads, ssm, s, *a, vec_out);
        else
            return cuda_ops_start(conv_stem_k3s2c3<float>, blocks, threads, ssm, s, *a, vec_out);
    }
}
