/* A chain of BlazeBlocks (GR_DWPW nodes) on small images in one kernel.
 *
 * Past the large layers, these networks are runs of blocks on 16x16 and
 * smaller images: tens of microseconds per block kernel at batch 128 for a
 * few microseconds of work, because each block kernel stages its whole
 * pointwise filter for a few dozen pixels, runs its phases (filter, depthwise,
 * products, epilogue) one after another with one or two blocks per SM, and
 * hands its output to the next kernel through memory. Here a thread block
 * takes `ipc` whole images through every block of the chain: the images'
 * activations stay in shared memory from block to block, each block's
 * pointwise filter is staged once per thread block (while the depthwise step
 * runs), and only the tensors read outside the chain go to global memory.
 *
 * Per block: the depthwise convolution (3x3, stride 1 or 2, fp32
 * arithmetic, one thread = one pixel x 8 channels with the filter in
 * registers) into a half tile [pixels][kp + 8]; the pointwise product on
 * the tensor cores (mma.sync m16n8k16, fp32 accumulators, 32x32 warp
 * tiles); the epilogue (bias, residual read from shared memory or, for
 * tensors from before the chain, global memory, max-pooled 2x2 when the
 * block has stride 2, activation) writes the output into its slot. The
 * host plans the slots from the tensors' lifetimes within the chain
 * (ch_make). Tensors in shared memory keep ps halves per pixel, c or c + 8
 * so that ps / 8 is odd: the rows of an mma fragment fall in different
 * banks. */
#include <string.h>

#include "engine/cuda_ops_device.h"
#include "engine/cuda_ops_mma.h"

#define CH_THREADS 512
#define CH_MAX_CHANNELS GR_DWPW_MAX_CHANNELS

static __host__ __device__ inline int ch_round(int v, int m)
{
    return (v + m - 1) / m * m;
}

/* Halves per pixel of a tensor of c channels in shared memory. */
static __host__ __device__ inline int ch_ps(int c)
{
    return (c / 8) % 2 == 0 ? c + 8 : c;
}

/* One block as the kernel reads it. Offsets (x_at, res_at, y_at) are bytes
 * into shared memory; res_at -1: the residual is read from gres (global
 * memory) instead. gx: the chain's input, for block 0. */
struct ch_layer {
    const __half *dw_w;      /* [3][3][c] */
    const float *dw_bias;    /* [c] or NULL */
    const __half *pw_w;      /* [cout][c] */
    const float *bias, *alpha;
    const __half *gx, *gres; /* item 0 of block 0's x / the residual in global memory */
    __half *y;               /* item 0 of the output in global memory, or NULL */
    int ih, iw, c, oh, ow, cout, s, pt, pl;
    int x_at, res_at, y_at;
    int x_ps, res_ps, y_ps; /* halves per pixel where read / written */
    int rc, pool, act;
};

struct ch_params {
    int n, ipc, batch;
    int x_at;       /* the chain's input, staged */
    int d_at, f_at; /* the depthwise tile [32k rows][kp + 8], the filter [16k rows][kp + 8] */
    int tab_at;     /* two pixel tables (ch_taps) of tab_rows entries, by turns */
    int tab_rows;
    int bias_at;    /* ch_filter's bias and slopes, ch_dw_filter's bias and filter */
    int zero_at;    /* 16 bytes of zeros */
    ch_layer l[CUDA_CHAIN_MAX];
};

static __device__ __forceinline__ void ch_cp16(__half *s, const __half *g)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(smem_addr(s)), "l"(g));
}

static __device__ __forceinline__ void ch_zero16(__half *s)
{
    *reinterpret_cast<uint4 *>(s) = make_uint4(0, 0, 0, 0);
}

/* Starts copying block L's depthwise filter into dw ([9][kp], zeros past
 * c) and writes its depthwise bias dwb[kp] (zeros past c). */
static __device__ void ch_dw_filter(const ch_layer &L, __half *dw, float *dwb)
{
    const int kq = ch_round(L.c, 16) / 8;
    for (int i = threadIdx.x; i < 9 * kq; i += CH_THREADS) {
        int t = i / kq, k = (i - t * kq) * 8;
        if (k < L.c)
            ch_cp16(dw + t * kq * 8 + k, L.dw_w + t * L.c + k);
        else
            ch_zero16(dw + t * kq * 8 + k);
    }
    for (int i = threadIdx.x; i < kq * 8; i += CH_THREADS)
        dwb[i] = L.dw_bias && i < L.c ? __ldg(L.dw_bias + i) : 0.0f;
}

/* Starts copying block L's pointwise filter into f ([ch_round(cout, 16)]
 * rows of kp + 8 halves, zeros past cout and c) and writes the epilogue's
 * constants per output channel: the bias (0 without) and the slope of
 * negative values (PRELU's alpha, 0 for RELU and RELU6, 1 without). */
static __device__ void ch_filter(const ch_layer &L, __half *f, float *bias, float *slope)
{
    for (int i = threadIdx.x; i < L.cout; i += CH_THREADS) {
        bias[i] = L.bias ? __ldg(L.bias + i) : 0.0f;
        slope[i] = L.act == GR_ACT_PRELU                           ? __ldg(L.alpha + i)
                   : L.act == GR_ACT_RELU || L.act == GR_ACT_RELU6 ? 0.0f
                                                                   : 1.0f;
    }
    const int kp = ch_round(L.c, 16), ld = kp + 8, per = kp / 8;
    const int rows = ch_round(L.cout, 16);
    for (int i = threadIdx.x; i < rows * per; i += CH_THREADS) {
        int r = i / per, k = (i - r * per) * 8;
        if (r < L.cout && k < L.c)
            ch_cp16(f + r * ld + k, L.pw_w + (size_t)r * L.c + k);
        else
            ch_zero16(f + r * ld + k);
    }
}

/* The pixel table of block L, for the rows of the mma tiles (M rounded up
 * to 16): x, the byte offset of the input pixel under the window's
 * top-left tap (from the input slot; out of the image where the window
 * is); y, which of the 9 taps fall in the image (none past M); z, the
 * halves from the residual's start to this pixel's (the top-left of its
 * 2x2 block when pooled). */
static __device__ void ch_taps(const ch_layer &L, int M, int4 *tab)
{
    const int hw = L.oh * L.ow, ih = L.ih, iw = L.iw, s = L.s, ow = L.ow;
    for (int m = threadIdx.x; m < ch_round(M, 16); m += CH_THREADS) {
        int4 e = make_int4(0, 0, 0, 0);
        if (m < M) {
            const int img = m / hw, r = m - img * hw, oy = r / ow, ox = r - oy * ow;
            const int iy0 = oy * s - L.pt, ix0 = ox * s - L.pl;
            e.x = ((img * ih + iy0) * iw + ix0) * L.x_ps * 2;
#pragma unroll
            for (int t = 0; t < 9; t++) {
                const int iy = iy0 + t / 3, ix = ix0 + t % 3;
                if ((unsigned)iy < (unsigned)ih && (unsigned)ix < (unsigned)iw)
                    e.y |= 1 << t;
            }
            e.z = (L.pool ? ((img * 2 * L.oh + 2 * oy) * 2 * ow + 2 * ox) : m) * L.res_ps;
        }
        tab[m] = e;
    }
}

/* Step 1: the depthwise convolution of the M output pixels into d
 * ([ch_round(M, 32)][kp + 8], channels c .. kp-1 zero; rows past M are
 * not read back). On the tensor cores: a warp takes 16 pixels x 16
 * channels at a time; per tap, ldmatrix gathers the 16 pixels' input
 * (the tap's row address per lane from the pixel table, a zero row where
 * the tap leaves the image) and two m16n8k8 mmas multiply it by diagonal
 * matrices of the tap's weights. Units go to warps in runs of one channel
 * group, so a warp builds its diagonal operands once per run. */
static __device__ void ch_depthwise(const ch_layer &L, unsigned x, int M, const int4 *tab,
                                    unsigned zero, const __half *dws, const float *dwb, __half *d)
{
    const int kp = ch_round(L.c, 16), ld = kp + 8, tiles = ch_round(M, 16) / 16, groups = kp / 16;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, q = lane % 4;
    constexpr int W = CH_THREADS / 32;
    const int units = tiles * groups, u0 = warp * units / W, u1 = (warp + 1) * units / W;
    const int iw_b = L.iw * L.x_ps * 2, px_b = L.x_ps * 2, c = L.c;
    /* lane's half of the 16 channels (ldmatrix matrices 2 and 3: channels 8-15) */
    const int half = lane / 16;
    int cg = -1;
    unsigned b[9][2];
    float bias[2][2];
    bool half_ok = true;
    for (int u = u0, ucg = u0 / tiles, pt = u0 % tiles; u < u1;
         u++, pt = pt + 1 == tiles ? 0 : pt + 1, ucg += pt == 0) {
        if (ucg != cg) {
            cg = ucg;
            /* Lane (g, q) holds column g of the diagonal matrix where g / 2
             * == q: tap t's weight of channel cg * 16 + h * 8 + g, in the
             * low half for even g; zero elsewhere. */
            const unsigned on = (g >> 1) == q ? 0xffffffffu : 0u;
            const int shift = 16 * (g & 1);
            const unsigned short *wp = reinterpret_cast<const unsigned short *>(dws) + cg * 16 + g;
#pragma unroll
            for (int t = 0; t < 9; t++) {
                b[t][0] = ((unsigned)wp[0] << shift) & on;
                b[t][1] = ((unsigned)wp[8] << shift) & on;
                wp += kp;
            }
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const float2 v = *reinterpret_cast<const float2 *>(dwb + cg * 16 + h * 8 + 2 * q);
                bias[h][0] = v.x;
                bias[h][1] = v.y;
            }
            half_ok = cg * 16 + half * 8 < c;
        }
        const int4 e = tab[pt * 16 + lane % 16];
        const unsigned base = x + e.x + cg * 32 + half * 16;
        const unsigned mask = half_ok ? (unsigned)e.y : 0u;
        float acc[2][4];
#pragma unroll
        for (int h = 0; h < 2; h++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                acc[h][i] = 0.0f;
#pragma unroll
        for (int t = 0; t < 9; t++) {
            const unsigned addr = (mask >> t) & 1 ? base + (t / 3) * iw_b + (t % 3) * px_b : zero;
            unsigned r[4];
            ldsm_x4(r, addr);
            mma_1688(acc[0], r[0], r[1], b[t][0]);
            mma_1688(acc[1], r[2], r[3], b[t][1]);
        }
#pragma unroll
        for (int h = 0; h < 2; h++) {
            __half *o = d + (pt * 16 + g) * ld + cg * 16 + h * 8 + 2 * q;
            *reinterpret_cast<__half2 *>(o) =
                __floats2half2_rn(acc[h][0] + bias[h][0], acc[h][1] + bias[h][1]);
            *reinterpret_cast<__half2 *>(o + 8 * ld) =
                __floats2half2_rn(acc[h][2] + bias[h][0], acc[h][3] + bias[h][1]);
        }
    }
}

static __device__ __forceinline__ __half2 ch_lds32(unsigned a)
{
    unsigned v;
    asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(a));
    return *reinterpret_cast<__half2 *>(&v);
}

static __device__ __forceinline__ __half2 ch_ld32(const __half *p)
{
    return *reinterpret_cast<const __half2 *>(p);
}

/* The residual's channels col, col + 1 of one output pixel: in shared
 * memory at byte address a (global: at r), pooled as the max of the 2x2
 * block (pixels ps halves apart, rows down halves). */
template <bool POOL, bool SHARED>
static __device__ __forceinline__ float2 ch_residual(unsigned a, const __half *r, int ps, int down)
{
    __half2 v;
    if (SHARED) {
        v = ch_lds32(a);
        if (POOL)
            v = __hmax2(__hmax2(v, ch_lds32(a + 2 * ps)),
                        __hmax2(ch_lds32(a + 2 * down), ch_lds32(a + 2 * (down + ps))));
    } else {
        v = ch_ld32(r);
        if (POOL)
            v = __hmax2(__hmax2(v, ch_ld32(r + ps)),
                        __hmax2(ch_ld32(r + down), ch_ld32(r + down + ps)));
    }
    return __half22float2(v);
}

/* Step 2: the pointwise product of d and the filter f on the tensor cores
 * and the epilogue into y (y_ps halves per pixel). A warp takes 16 x 32
 * tiles, a run of them, so that the warps share the tiles evenly. The
 * residual is read from shared memory at res_s (bytes) when SHARED, else
 * from global memory at res_g; POOL: max-pooled. */
template <bool POOL, bool SHARED>
static __device__ void ch_pointwise(const ch_layer &L, int M, const __half *d, const __half *f,
                                    const float *bias, const float *slope, unsigned res_s,
                                    const __half *res_g, const int4 *tab, __half *y)
{
    const int kp = ch_round(L.c, 16), ld = kp + 8, cout = L.cout;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, t = lane % 4;
    constexpr int W = CH_THREADS / 32;
    const int tn = (cout + 31) / 32, units = ch_round(M, 16) / 16 * tn;
    const int u0 = warp * units / W, u1 = (warp + 1) * units / W;
    const unsigned a_base = smem_addr(d) + ((lane % 16) * ld + (lane / 16) * 8) * 2;
    const unsigned b_base =
        smem_addr(f) + (((lane / 16) * 8 + lane % 8) * ld + ((lane / 8) % 2) * 8) * 2;
    const unsigned y_s = smem_addr(y) + 4 * t;
    /* The activation as v < 0 ? v * slope : v, then min(v, top). */
    const int rc = L.rc, y_ps = L.y_ps;
    const float top = L.act == GR_ACT_RELU6 ? 6.0f : INFINITY;
    const int res_ps = L.res_ps, down = 2 * L.ow * L.res_ps;
    for (int u = u0, mi = u0 / tn, ni = u0 % tn; u < u1;
         u++, ni = ni + 1 == tn ? 0 : ni + 1, mi += ni == 0) {
        const int m0 = mi * 16, n0 = ni * 32;
        const int nj = min(4, (cout - n0) / 8);
        float acc[4][4];
#pragma unroll
        for (int j = 0; j < 4; j++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[j][e] = 0.0f;
        const unsigned a_addr = a_base + m0 * ld * 2, b_addr = b_base + n0 * ld * 2;
        for (int kb = 0; kb < kp; kb += 16) {
            unsigned a[4], b[2][4];
            ldsm_x4(a, a_addr + kb * 2);
            ldsm_x4(b[0], b_addr + kb * 2);
            if (nj > 2)
                ldsm_x4(b[1], b_addr + (16 * ld + kb) * 2);
#pragma unroll
            for (int j = 0; j < 4; j++)
                if (j < nj)
                    mma_16816(acc[j], a, &b[j / 2][(j % 2) * 2]);
        }
        /* Rows m0 + g and m0 + g + 8: their outputs and residuals, from
         * the first column of the tile on. */
        const int r0 = m0 + g;
        const bool ok[2] = {r0 < M, r0 + 8 < M};
        const int z[2] = {tab[r0].z + n0 + 2 * t, tab[r0 + 8].z + n0 + 2 * t};
        const unsigned yr[2] = {y_s + (r0 * y_ps + n0) * 2, y_s + ((r0 + 8) * y_ps + n0) * 2};
#pragma unroll
        for (int j = 0; j < 4; j++) {
            if (j >= nj)
                break;
            const int col = n0 + 8 * j + 2 * t;
            const float2 bb = *reinterpret_cast<const float2 *>(bias + col);
            const float2 sl = *reinterpret_cast<const float2 *>(slope + col);
            const bool with_res = col < rc;
#pragma unroll
            for (int h = 0; h < 2; h++) {
                float v0 = acc[j][2 * h] + bb.x, v1 = acc[j][2 * h + 1] + bb.y;
                if (with_res) {
                    const int e = z[h] + 8 * j;
                    float2 r = ch_residual<POOL, SHARED>(res_s + 2 * e, res_g + e, res_ps, down);
                    v0 += r.x;
                    v1 += r.y;
                }
                v0 = fminf(v0 < 0.0f ? v0 * sl.x : v0, top);
                v1 = fminf(v1 < 0.0f ? v1 * sl.y : v1, top);
                __half2 o = __floats2half2_rn(v0, v1);
                if (ok[h]) /* rows past M: computed from table entries of zeros, not kept */
                    asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(yr[h] + 16 * j),
                                 "r"(*reinterpret_cast<unsigned *>(&o)));
            }
        }
    }
}

/* Copies the M pixels of block L's output from shared memory (ys) to its
 * global tensor at item b0, 16 bytes per thread. */
static __device__ void ch_store(const ch_layer &L, int M, int b0, const __half *ys)
{
    const int per = L.cout / 8;
    __half *y = L.y + (size_t)b0 * L.oh * L.ow * L.cout;
    for (int i = threadIdx.x; i < M * per; i += CH_THREADS) {
        int p = i / per, k = (i - p * per) * 8;
        *reinterpret_cast<uint4 *>(y + (size_t)p * L.cout + k) =
            *reinterpret_cast<const uint4 *>(ys + p * L.y_ps + k);
    }
}

/* Starts copying the thread block's images of the chain's input (block
 * 0's x) into its slot. */
static __device__ void ch_stage_input(const ch_layer &L, int nimg, int b0, __half *xs)
{
    const int per = L.c / 8, pixels = nimg * L.ih * L.iw;
    const __half *x = L.gx + (size_t)b0 * L.ih * L.iw * L.c;
    for (int i = threadIdx.x; i < pixels * per; i += CH_THREADS) {
        int p = i / per, k = (i - p * per) * 8;
        ch_cp16(xs + p * L.x_ps + k, x + (size_t)p * L.c + k);
    }
}

__global__ void __launch_bounds__(CH_THREADS, 1) dwpw_chain(const __grid_constant__ ch_params p)
{
    extern __shared__ __align__(16) unsigned char ch_smem[];
    const int b0 = blockIdx.x * p.ipc, nimg = min(p.ipc, p.batch - b0);
    __half *d = reinterpret_cast<__half *>(ch_smem + p.d_at);
    __half *f = reinterpret_cast<__half *>(ch_smem + p.f_at);
    int4 *tabs = reinterpret_cast<int4 *>(ch_smem + p.tab_at); /* two tables, by turns */
    const unsigned zero = smem_addr(ch_smem + p.zero_at);
    if (threadIdx.x == 0)
        ch_zero16(reinterpret_cast<__half *>(ch_smem + p.zero_at));
    float *bias = reinterpret_cast<float *>(ch_smem + p.bias_at);
    float *slope = bias + CH_MAX_CHANNELS, *dwb = slope + CH_MAX_CHANNELS;
    __half *dws = reinterpret_cast<__half *>(dwb + CH_MAX_CHANNELS);
    ch_dw_filter(p.l[0], dws, dwb);
    ch_filter(p.l[0], f, bias, slope);
    ch_taps(p.l[0], nimg * p.l[0].oh * p.l[0].ow, tabs);
    pdl_begin(); /* the filter is a constant */
    ch_stage_input(p.l[0], nimg, b0, reinterpret_cast<__half *>(ch_smem + p.x_at));
    asm volatile("cp.async.wait_all;\n" ::);
    __syncthreads();
    for (int k = 0; k < p.n; k++) {
        const ch_layer &L = p.l[k];
        const int M = nimg * L.oh * L.ow;
        const int4 *tab = tabs + (k & 1) * p.tab_rows;
        const size_t rhw = (size_t)L.oh * L.ow * (L.pool ? 4 : 1);
        ch_depthwise(L, smem_addr(ch_smem + L.x_at), M, tab, zero, dws, dwb, d);
        asm volatile("cp.async.wait_all;\n" ::);
        __syncthreads();
        /* The next block's depthwise filter replaces this one's while the
         * products run. */
        if (k + 1 < p.n)
            ch_dw_filter(p.l[k + 1], dws, dwb);
        __half *y = reinterpret_cast<__half *>(ch_smem + L.y_at);
        const unsigned res_s = smem_addr(ch_smem + (L.res_at >= 0 ? L.res_at : 0));
        const __half *res_g = L.gres ? L.gres + b0 * rhw * L.rc : nullptr;
        if (L.res_at >= 0 && L.pool)
            ch_pointwise<true, true>(L, M, d, f, bias, slope, res_s, res_g, tab, y);
        else if (L.res_at >= 0)
            ch_pointwise<false, true>(L, M, d, f, bias, slope, res_s, res_g, tab, y);
        else if (L.pool)
            ch_pointwise<true, false>(L, M, d, f, bias, slope, res_s, res_g, tab, y);
        else
            ch_pointwise<false, false>(L, M, d, f, bias, slope, res_s, res_g, tab, y);
        if (k + 1 < p.n)
            ch_taps(p.l[k + 1], nimg * p.l[k + 1].oh * p.l[k + 1].ow,
                    tabs + ((k + 1) & 1) * p.tab_rows);
        asm volatile("cp.async.wait_all;\n" ::);
        __syncthreads();
        if (k + 1 < p.n)
            ch_filter(p.l[k + 1], f, bias, slope);
        if (L.y)
            ch_store(L, M, b0, y);
    }
}

/* ---- host: the plan ------------------------------------------------------- */

static bool ch_block_ok(const cuda_dwpw_args *b)
{
    return b->prec == CUDA_PREC_F16 && b->kh == 3 && b->kw == 3 && b->dh == 1 && b->dw == 1 &&
           b->sh == b->sw && (b->sh == 1 || b->sh == 2) && b->c % 8 == 0 && b->cout % 8 == 0 &&
           b->c > 0 && b->c <= CH_MAX_CHANNELS && b->cout > 0 && b->cout <= CH_MAX_CHANNELS &&
           b->oh * b->ow <= CUDA_CHAIN_MAX_PIXELS && b->pt >= 0 && b->pt <= 2 && b->pl >= 0 &&
           b->pl <= 2 && b->rc % 2 == 0 && b->rc >= 0 && b->rc <= b->cout;
}

/* A tensor made in the chain (tensor j: block j - 1's output), alive in
 * shared memory from block first to block last. */
struct ch_tensor {
    int h, w, c, first, last;
    size_t bytes, at;
};

/* Plans a chain for ipc images per thread block: false when a block does
 * not fit the kernel or the tensors and tiles exceed the shared memory. */
static bool ch_make(const cuda_chain_args *a, int ipc, ch_params *p, size_t *smem)
{
    if (a->n < 1 || a->n > CUDA_CHAIN_MAX)
        return false;
    memset(p, 0, sizeof *p);
    ch_tensor t[CUDA_CHAIN_MAX + 1];
    size_t d_bytes = 0, f_bytes = 0, tab_rows = 0;
    int kp_max = 0;
    const cuda_dwpw_args *b0 = &a->block[0];
    t[0] = {b0->ih, b0->iw, b0->c, -1, 0, 0, 0};
    for (int k = 0; k < a->n; k++) {
        const cuda_dwpw_args *b = &a->block[k];
        if (!ch_block_ok(b) || b->batch != a->block[0].batch)
            return false;
        t[k + 1] = {b->oh, b->ow, b->cout, k, k, 0, 0};
        int xf = a->x_from[k], rf = a->res_from[k];
        if (xf < 0 || xf > k || (k > 0 && xf == 0) || rf < 0 || rf > k)
            return false;
        if (t[xf].h != b->ih || t[xf].w != b->iw || t[xf].c != b->c)
            return false;
        t[xf].last = k;
        if (rf > 0) {
            int f = b->pool_residual ? 2 : 1;
            if (t[rf].h != f * b->oh || t[rf].w != f * b->ow || t[rf].c != b->rc)
                return false;
            t[rf].last = k;
        }
        int kp = ch_round(b->c, 16);
        kp_max = kp > kp_max ? kp : kp_max;
        size_t d = (size_t)ch_round(ipc * b->oh * b->ow, 32) * (kp + 8) * 2;
        size_t f = (size_t)ch_round(b->cout, 16) * (kp + 8) * 2;
        size_t tb = (size_t)ch_round(ipc * b->oh * b->ow, 16);
        d_bytes = d > d_bytes ? d : d_bytes;
        f_bytes = f > f_bytes ? f : f_bytes;
        tab_rows = tb > tab_rows ? tb : tab_rows;
    }
    /* First fit, in order of birth: a tensor goes at the lowest offset where
     * it overlaps no placed tensor alive at the same time. */
    size_t top = 0;
    for (int j = 0; j <= a->n; j++) {
        t[j].bytes = (size_t)ch_round(ipc * t[j].h * t[j].w * ch_ps(t[j].c) * 2, 16);
        size_t best = (size_t)-1;
        for (int c = -1; c < j; c++) {
            size_t off = 0;
            if (c >= 0) {
                if (t[c].last < t[j].first)
                    continue;
                off = t[c].at + t[c].bytes;
            }
            bool fits = off < best;
            for (int o = 0; o < j && fits; o++)
                if (t[o].last >= t[j].first && off < t[o].at + t[o].bytes &&
                    t[o].at < off + t[j].bytes)
                    fits = false;
            if (fits)
                best = off;
        }
        t[j].at = best;
        top = best + t[j].bytes > top ? best + t[j].bytes : top;
    }
    p->n = a->n;
    p->ipc = ipc;
    p->batch = a->block[0].batch;
    p->x_at = (int)t[0].at;
    p->d_at = (int)top;
    p->f_at = (int)(top + d_bytes);
    p->tab_at = (int)(top + d_bytes + f_bytes);
    p->tab_rows = (int)tab_rows;
    p->bias_at = (int)(top + d_bytes + f_bytes + 2 * tab_rows * sizeof(int4));
    /* bias, slopes, depthwise bias (floats), depthwise filter [9][kp] */
    p->zero_at = p->bias_at + 3 * CH_MAX_CHANNELS * (int)sizeof(float) + 9 * kp_max * 2;
    *smem = p->zero_at + 16;
    if (*smem > CUDA_CHAIN_SMEM_MAX)
        return false;
    for (int k = 0; k < a->n; k++) {
        const cuda_dwpw_args *b = &a->block[k];
        ch_layer *l = &p->l[k];
        int xf = a->x_from[k], rf = a->res_from[k];
        l->dw_w = static_cast<const __half *>(b->dw_w);
        l->dw_bias = b->dw_bias;
        l->pw_w = static_cast<const __half *>(b->pw_w);
        l->bias = b->bias;
        l->alpha = b->alpha;
        l->gx = static_cast<const __half *>(b->x);
        l->gres = static_cast<const __half *>(b->residual);
        l->y = static_cast<__half *>(b->y);
        l->ih = b->ih, l->iw = b->iw, l->c = b->c;
        l->oh = b->oh, l->ow = b->ow, l->cout = b->cout;
        l->s = b->sh, l->pt = b->pt, l->pl = b->pl;
        l->x_at = (int)t[xf].at;
        l->x_ps = ch_ps(b->c);
        l->res_at = rf > 0 ? (int)t[rf].at : -1;
        l->res_ps = rf > 0 ? ch_ps(b->rc) : b->rc;
        l->y_at = (int)t[k + 1].at;
        l->y_ps = ch_ps(b->cout);
        l->rc = rf > 0 || b->residual ? b->rc : 0;
        l->pool = b->pool_residual;
        l->act = b->act;
    }
    return true;
}

extern "C" bool cuda_dwpw_chain_fits(const cuda_chain_args *a)
{
    ch_params p;
    size_t smem;
    return ch_make(a, 1, &p, &smem);
}

/* Every pointer the kernel reads or writes 16 bytes at a time is aligned
 * to 16 bytes; the last block's output is written. */
static bool ch_pointers_ok(const cuda_chain_args *a)
{
    if (!a->block[a->n - 1].y)
        return false;
    for (int k = 0; k < a->n; k++) {
        const cuda_dwpw_args *b = &a->block[k];
        size_t addr = (size_t)b->dw_w | (size_t)b->pw_w | (size_t)b->dw_bias | (size_t)b->y;
        if (!b->dw_w || !b->pw_w || (b->act == GR_ACT_PRELU && !b->alpha))
            return false;
        if (a->x_from[k] == 0) {
            if (!b->x)
                return false;
            addr |= (size_t)b->x;
        }
        if (a->res_from[k] == 0)
            addr |= (size_t)b->residual;
        if (addr & 15)
            return false;
    }
    return true;
}

extern "C" bool cuda_dwpw_chain_pays(int choice_batch)
{
    int sms = 0;
    return cuda_ops_sm_count(&sms) == cudaSuccess && 2LL * choice_batch >= sms;
}

extern "C" cudaError_t cuda_launch_dwpw_chain(const cuda_chain_args *a, cudaStream_t s)
{
    if (a->n < 1 || a->n > CUDA_CHAIN_MAX || !ch_pointers_ok(a))
        return cudaErrorInvalidValue;
    const int batch = a->block[0].batch;
    if (batch <= 0)
        return cudaSuccess;
    int sms = 0;
    cudaError_t e = cuda_ops_sm_count(&sms);
    if (e != cudaSuccess)
        return e;
    /* Several images per thread block while that still leaves one for every
     * SM: the filters are staged once for all of them and the products have
     * more rows. An image's sums are the same whatever its neighbours: each
     * output pixel is one row of the mma tiles, the rows never mix. */
    ch_params p;
    size_t smem = 0;
    for (int ipc = 4; ipc >= 1; ipc /= 2) {
        if (ipc > 1 && (batch + ipc - 1) / ipc < sms)
            continue;
        if (ch_make(a, ipc, &p, &smem))
            return cuda_ops_start(dwpw_chain, cuda_ops_blocks(batch, ipc), CH_THREADS, smem, s, p);
    }
    return cudaErrorInvalidValue;
}
