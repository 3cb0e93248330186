/* Two BlazeBlocks (GR_DWPW nodes, 3x3 at stride 1) on large images in one
 * kernel: z = B(A(x)), the intermediate y = A(x) never leaves shared
 * memory.
 *
 * On the large images at the start of the networks (FaceMesh's 96x96x16,
 * BlazeFace's 64x64x24 and 96x96x32, full range's 48x48 and 24x24 pairs
 * that narrow and widen again), each block kernel stages its input from
 * memory and writes its output back, half of which the next block reads
 * again at once, and the residual once more. Here a thread block takes a
 * tile of R x C output pixels of one image: it stages x on the tile's
 * window with a margin of two pixels, computes y on the tile with a margin
 * of one (zeros outside the image: B's padding) into shared memory, then z
 * on the tile. Memory sees x once and z once; the price is y's margin,
 * computed by both neighbouring tiles.
 *
 * Both phases run as dwpw_mma's (cuda_ops_dwpw_mma.cu): a warp takes 16
 * pixels; per 16 input channels the depthwise convolution is 9 ldmatrix of
 * the pixels' shifted inputs and products with diagonal matrices of the
 * weights (m16n8k8), whose accumulators, rounded to half, are the A
 * operand of the pointwise m16n8k16. A's epilogue writes y to shared
 * memory; B's goes through a small per-warp tile in shared memory, so that
 * z is stored in 16-byte pieces of whole pixels.
 *
 * Residual forms (cuda_pair_args.form): CUDA_PAIR_OWN, each block adds its
 * own input (A: x, from the staged window; B: y, from shared memory); or
 * CUDA_PAIR_SPAN, A adds none and B adds x (the pair's input, from the
 * window), the narrow-then-wide pairs of full range. */
#include <climits>

#include "engine/cuda_ops_device.h"
#include "engine/cuda_ops_mma.h"

#define PR_THREADS 256
#define PR_WARPS (PR_THREADS / 32)
#define PR_STAGE 32 /* output channels per pass of B's per-warp store tile */
#define PR_STAGE_PS (PR_STAGE + 8)

/* How the pair's kernel cuts the output (pr_plan): tiles of rows x cols
 * pixels of one item, tiles_y x tiles_x per item. Shared memory holds x on
 * (rows + 4) x (cols + 4) pixels, y on (rows + 2) x (cols + 2), with cpx /
 * cpy channels (C rounded up to 16, zeros past C) and psx / psy = cp + 8
 * halves per pixel (an odd number of 16-byte units: the rows of an
 * ldmatrix fall in different banks). */
struct pr_shape {
    int rows, cols, tiles_y, tiles_x;
    int xc, yc;         /* window widths: cols + 4, cols + 2 */
    int xr, yr;         /* window heights: rows + 4, rows + 2 */
    int cpx, psx, cpy, psy;
    int npa, npb;       /* A's and B's output channels rounded up to 16 */
    int vx, vfa, vfb;   /* halves per staging copy of x and of the two pointwise filters */
    int vz;             /* halves per store of z: 8, 4 or 2 */
};

/* Shared memory, bytes from its start (the x window at 0). */
struct pr_layout {
    size_t ys, pwa, pwb, dwa, dwb, zero, dba, pba, sla, dbb, pbb, slb, stage, total;
};

static __host__ __device__ inline size_t pr_align16(size_t n)
{
    return (n + 15) / 16 * 16;
}

static __host__ __device__ inline pr_layout pr_smem(const pr_shape &s)
{
    pr_layout l;
    l.ys = pr_align16((size_t)s.xr * s.xc * s.psx * 2);
    l.pwa = l.ys + pr_align16((size_t)s.yr * s.yc * s.psy * 2);
    l.pwb = l.pwa + (size_t)s.npa * s.psx * 2;
    l.dwa = pr_align16(l.pwb + (size_t)s.npb * s.psy * 2);
    l.dwb = l.dwa + (size_t)9 * (s.cpx / 16) * 64;
    l.zero = l.dwb + (size_t)9 * (s.cpy / 16) * 64;
    l.dba = l.zero + 16;
    l.pba = l.dba + (size_t)s.cpx * 4;
    l.sla = l.pba + (size_t)s.npa * 4;
    l.dbb = l.sla + (size_t)s.npa * 4;
    l.pbb = l.dbb + (size_t)s.cpy * 4;
    l.slb = l.pbb + (size_t)s.npb * 4;
    l.stage = pr_align16(l.slb + (size_t)s.npb * 4);
    l.total = l.stage + (size_t)PR_WARPS * 16 * PR_STAGE_PS * 2;
    return l;
}

/* A block's pointwise filter into [np][ps] halves at sa (zeros past cout
 * and c), v halves per copy. */
static __device__ void pr_pw_filter(const cuda_dwpw_args &a, unsigned sa, int np, int cp, int ps,
                                    int v)
{
    const int cpc = cp / v;
    const float inv = 1.0f / (float)cpc;
    const __half *pw = static_cast<const __half *>(a.pw_w);
    for (int i = threadIdx.x; i < np * cpc; i += PR_THREADS) {
        const int n = div_small(i, inv), ch = (i - n * cpc) * v;
        const unsigned at = sa + (unsigned)(n * ps + ch) * 2;
        if (n < a.cout && ch < a.c)
            cp_async_halves(at, pw + (size_t)n * a.c + ch, v);
        else
            st_zero_halves(at, v);
    }
}

/* A block's depthwise filter as the B operands of m16n8k8 products with a
 * diagonal matrix: for tap t, 16-channel step k and lane (g, q), the two
 * words [t][k][g][2] hold channel k * 16 + h * 8 + g (h = 0, 1) in the low
 * half when g is even, the high half when odd, which is that lane's b
 * register when g / 2 == q; the other lanes read 8 zero bytes. Then the
 * epilogue constants: depthwise bias [cp], pointwise bias and slopes of
 * negative values [np] (0 for RELU and RELU6, 1 for none, PRELU's alpha),
 * zeros past the channel counts. */
static __device__ void pr_constants(const cuda_dwpw_args &a, int cp, int np, unsigned *dw,
                                    float *dbias, float *pbias, float *slope)
{
    const unsigned short *w = static_cast<const unsigned short *>(a.dw_w);
    const int ks = cp / 16, words = 9 * ks * 16;
    for (int i = threadIdx.x; i < words; i += PR_THREADS) {
        const int h = i & 1, g = (i >> 1) & 7, tk = i >> 4, tap = tk / ks;
        const int c = (tk - tap * ks) * 16 + h * 8 + g;
        const unsigned v = c < a.c ? w[tap * a.c + c] : 0u;
        dw[i] = (g & 1) ? v << 16 : v;
    }
    for (int c = threadIdx.x; c < cp; c += PR_THREADS)
        dbias[c] = a.dw_bias && c < a.c ? __ldg(a.dw_bias + c) : 0.0f;
    for (int n = threadIdx.x; n < np; n += PR_THREADS) {
        pbias[n] = a.bias && n < a.cout ? __ldg(a.bias + n) : 0.0f;
        slope[n] = a.act == GR_ACT_PRELU && n < a.cout ? __ldg(a.alpha + n)
                   : a.act == GR_ACT_NONE                ? 1.0f
                                                         : 0.0f;
    }
}

/* x on the tile's window (rows from iy0, columns from ix0 of item b), zeros
 * outside the image and past c. */
static __device__ void pr_stage_x(const cuda_dwpw_args &a, const pr_shape &s, unsigned xs, int b,
                                  int iy0, int ix0)
{
    const __half *x = static_cast<const __half *>(a.x);
    if (s.vx == 8)
        stage_window<8, PR_THREADS>(xs, s.psx, x, a.ih, a.iw, a.c, s.cpx, b, s.xr, s.xr, s.xc, iy0,
                                    ix0);
    else if (s.vx == 4)
        stage_window<4, PR_THREADS>(xs, s.psx, x, a.ih, a.iw, a.c, s.cpx, b, s.xr, s.xr, s.xc, iy0,
                                    ix0);
    else
        stage_window<2, PR_THREADS>(xs, s.psx, x, a.ih, a.iw, a.c, s.cpx, b, s.xr, s.xr, s.xc, iy0,
                                    ix0);
}

/* Rows g and g + 8 of the accumulators come from lanes g and g + 8. */
static __device__ __forceinline__ int pr_row(int v, int h)
{
    return __shfl_sync(0xffffffffu, v, (threadIdx.x % 32) / 4 + 8 * h);
}

static __device__ __forceinline__ float pr_act(float v, float slope, float hi)
{
    return fminf(v >= 0.0f ? v : v * slope, hi);
}

/* The tile of block (item, tile row, tile column) blockIdx.x. */
struct pr_tile {
    int b, oy0, ox0, rows, cols;
};

template <int NTA, int NTB, int FORM>
__global__ void __launch_bounds__(PR_THREADS, 2) dwpw_pair(const __grid_constant__ cuda_pair_args p,
                                                             const __grid_constant__ pr_shape s)
{
    extern __shared__ __align__(16) unsigned char pr_smem_buf[];
    unsigned char *sm = pr_smem_buf;
    const cuda_dwpw_args &A = p.a, &B = p.b;
    const pr_layout l = pr_smem(s);
    pr_tile t;
    {
        int i = blockIdx.x;
        const int tx = i % s.tiles_x;
        i /= s.tiles_x;
        const int ty = i % s.tiles_y;
        t.b = i / s.tiles_y, t.oy0 = ty * s.rows, t.ox0 = tx * s.cols;
        t.rows = min(s.rows, A.oh - t.oy0), t.cols = min(s.cols, A.ow - t.ox0);
    }
    const unsigned xs = smem_addr(sm), ys = smem_addr(sm + l.ys);
    /* Constants first; then, once the kernels before are done (pdl_begin),
     * the window of x. */
    pr_pw_filter(A, smem_addr(sm + l.pwa), s.npa, s.cpx, s.psx, s.vfa);
    pr_pw_filter(B, smem_addr(sm + l.pwb), s.npb, s.cpy, s.psy, s.vfb);
    pr_constants(A, s.cpx, s.npa, reinterpret_cast<unsigned *>(sm + l.dwa),
                 reinterpret_cast<float *>(sm + l.dba), reinterpret_cast<float *>(sm + l.pba),
                 reinterpret_cast<float *>(sm + l.sla));
    pr_constants(B, s.cpy, s.npb, reinterpret_cast<unsigned *>(sm + l.dwb),
                 reinterpret_cast<float *>(sm + l.dbb), reinterpret_cast<float *>(sm + l.pbb),
                 reinterpret_cast<float *>(sm + l.slb));
    if (threadIdx.x < 4)
        reinterpret_cast<unsigned *>(sm + l.zero)[threadIdx.x] = 0;
    pdl_begin();
    pr_stage_x(A, s, xs, t.b, t.oy0 - 2, t.ox0 - 2);
    asm volatile("cp.async.wait_all;\n" ::);
    __syncthreads();

    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, q = lane % 4;
    const bool diag = ((lane / 4) >> 1) == q;
    const unsigned zero = smem_addr(sm + l.zero);
    const unsigned hi_lane = 16 * (lane >> 4); /* bytes: + 8 channels for lanes 16-31 */

    /* ---- A: y on the tile and its margin -------------------------------- */
    {
        const int wc = t.cols + 2, P = (t.rows + 2) * wc;
        const float inv_wc = 1.0f / (float)wc;
        const unsigned bw = diag ? smem_addr(sm + l.dwa) + (lane / 4) * 8 : zero;
        const unsigned bstep = diag ? 64 : 0;
        const unsigned pb = smem_addr(sm + l.pwa) +
                            (unsigned)(((lane & 7) + 8 * (lane >> 4)) * s.psx +
                                       8 * ((lane >> 3) & 1)) * 2;
        const float *dbias = reinterpret_cast<const float *>(sm + l.dba);
        const float *pbias = reinterpret_cast<const float *>(sm + l.pba);
        const float *slope = reinterpret_cast<const float *>(sm + l.sla);
        const float hi = A.act == GR_ACT_RELU6 ? 6.0f : INFINITY;
        const __half *xh = reinterpret_cast<const __half *>(sm);
        __half *yh = reinterpret_cast<__half *>(sm + l.ys);
        for (int p0 = warp * 16; p0 < P; p0 += PR_WARPS * 16) {
            /* Pixel p0 + lane % 16 of the margin-extended tile: its taps'
             * top left in the x window, its place in the y window (-1 past
             * the tile), whether it is inside the image. */
            const int pp = min(p0 + (lane & 15), P - 1);
            const int wy = div_small(pp, inv_wc), wx = pp - wy * wc;
            const int gy = t.oy0 - 1 + wy, gx = t.ox0 - 1 + wx;
            const int win = (wy * s.xc + wx) * s.psx;
            int yat = (wy * s.yc + wx) * s.psy;
            if (p0 + (lane & 15) >= P)
                yat = -1;
            const int inside = gy >= 0 && gy < A.oh && gx >= 0 && gx < A.ow;
            float acc[NTA][4];
            dwpw_products<NTA, true>(xs + (unsigned)win * 2 + hi_lane,
                                     (unsigned)(s.xc * s.psx) * 2, (unsigned)s.psx * 2, 3, 3,
                                     s.cpx / 16, bw, bstep, dbias, pb, s.psx, s.npa, acc);
            int yr[2], in[2], rr[2];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                yr[h] = pr_row(yat, h);
                in[h] = pr_row(inside, h);
                rr[h] = pr_row(win + (s.xc + 1) * s.psx, h); /* x under the pixel */
            }
#pragma unroll
            for (int j = 0; j < NTA; j++) {
                const int n = 8 * j + 2 * q;
                if (n >= s.npa)
                    break;
                const float2 bias = *reinterpret_cast<const float2 *>(pbias + n);
                const float2 sl = *reinterpret_cast<const float2 *>(slope + n);
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    if (yr[h] < 0)
                        continue;
                    float v0 = acc[j][2 * h] + bias.x, v1 = acc[j][2 * h + 1] + bias.y;
                    if (FORM == CUDA_PAIR_OWN && n < A.rc) {
                        const float2 r =
                            __half22float2(*reinterpret_cast<const __half2 *>(xh + rr[h] + n));
                        v0 += r.x;
                        v1 += r.y;
                    }
                    v0 = in[h] ? pr_act(v0, sl.x, hi) : 0.0f;
                    v1 = in[h] ? pr_act(v1, sl.y, hi) : 0.0f;
                    *reinterpret_cast<__half2 *>(yh + yr[h] + n) = __floats2half2_rn(v0, v1);
                }
            }
        }
    }
    __syncthreads();

    /* ---- B: z on the tile ------------------------------------------------- */
    {
        const int P = t.rows * t.cols;
        const float inv_cols = 1.0f / (float)t.cols;
        const unsigned bw = diag ? smem_addr(sm + l.dwb) + (lane / 4) * 8 : zero;
        const unsigned bstep = diag ? 64 : 0;
        const unsigned pb = smem_addr(sm + l.pwb) +
                            (unsigned)(((lane & 7) + 8 * (lane >> 4)) * s.psy +
                                       8 * ((lane >> 3) & 1)) * 2;
        const float *dbias = reinterpret_cast<const float *>(sm + l.dbb);
        const float *pbias = reinterpret_cast<const float *>(sm + l.pbb);
        const float *slope = reinterpret_cast<const float *>(sm + l.slb);
        const float hi = B.act == GR_ACT_RELU6 ? 6.0f : INFINITY;
        /* The residual: x (SPAN) from its window, y (OWN) from its own. */
        const __half *rh = reinterpret_cast<const __half *>(FORM == CUDA_PAIR_OWN ? sm + l.ys : sm);
        __half *stage = reinterpret_cast<__half *>(sm + l.stage) + warp * 16 * PR_STAGE_PS;
        __half *z = static_cast<__half *>(B.y);
        for (int p0 = warp * 16; p0 < P; p0 += PR_WARPS * 16) {
            const int pp = min(p0 + (lane & 15), P - 1);
            const int ty = div_small(pp, inv_cols), tx = pp - ty * t.cols;
            const int win = (ty * s.yc + tx) * s.psy;
            int m = ((t.b * A.oh + t.oy0 + ty) * A.ow + t.ox0 + tx);
            if (p0 + (lane & 15) >= P)
                m = -1;
            const int rat = FORM == CUDA_PAIR_OWN ? win + (s.yc + 1) * s.psy
                                                  : ((ty + 2) * s.xc + tx + 2) * s.psx;
            float acc[NTB][4];
            dwpw_products<NTB, true>(ys + (unsigned)win * 2 + hi_lane,
                                     (unsigned)(s.yc * s.psy) * 2, (unsigned)s.psy * 2, 3, 3,
                                     s.cpy / 16, bw, bstep, dbias, pb, s.psy, B.cout, acc);
            int rr[2];
#pragma unroll
            for (int h = 0; h < 2; h++)
                rr[h] = pr_row(rat, h);
            const int g = lane / 4;
            /* PR_STAGE channels at a time: bias, residual, activation into
             * the warp's tile [16][PR_STAGE_PS], then whole pixels' pieces
             * of vz halves to memory. */
#pragma unroll
            for (int s0 = 0; s0 < NTB * 8; s0 += PR_STAGE) {
                if (s0 >= B.cout)
                    break;
#pragma unroll
                for (int jj = 0; jj < PR_STAGE / 8; jj++) {
                    const int j = s0 / 8 + jj, n = 8 * j + 2 * q;
                    if (j >= NTB || n >= B.cout)
                        break;
                    const float2 bias = *reinterpret_cast<const float2 *>(pbias + n);
                    const float2 sl = *reinterpret_cast<const float2 *>(slope + n);
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        float v0 = acc[j][2 * h] + bias.x, v1 = acc[j][2 * h + 1] + bias.y;
                        if (n < B.rc) {
                            const float2 r = __half22float2(
                                *reinterpret_cast<const __half2 *>(rh + rr[h] + n));
                            v0 += r.x;
                            v1 += r.y;
                        }
                        *reinterpret_cast<__half2 *>(stage + (g + 8 * h) * PR_STAGE_PS + n - s0) =
                            __floats2half2_rn(pr_act(v0, sl.x, hi), pr_act(v1, sl.y, hi));
                    }
                }
                __syncwarp();
                const int width = min(PR_STAGE, B.cout - s0), per = width / s.vz;
                const float inv_per = 1.0f / (float)per;
                for (int i0 = 0; i0 < 16 * per; i0 += 32) {
                    const int i = i0 + lane, px = min(div_small(i, inv_per), 15);
                    const int c = (i - px * per) * s.vz;
                    const int mp = __shfl_sync(0xffffffffu, m, px);
                    if (i < 16 * per && mp >= 0) {
                        const __half *src = stage + px * PR_STAGE_PS + c;
                        __half *dst = z + (size_t)mp * B.cout + s0 + c;
                        if (s.vz == 8)
                            *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(src);
                        else if (s.vz == 4)
                            *reinterpret_cast<uint2 *>(dst) = *reinterpret_cast<const uint2 *>(src);
                        else
                            *reinterpret_cast<unsigned *>(dst) =
                                *reinterpret_cast<const unsigned *>(src);
                    }
                }
                __syncwarp();
            }
        }
    }
}

/* ---- host ------------------------------------------------------------------ */

/* Shared memory per thread block: two per SM (H100: 228 KB an SM, 1 KB of
 * it reserved per block). */
#define PR_SMEM_BUDGET (112 * 1024)

static int pr_round16(int v)
{
    return (v + 15) / 16 * 16;
}

/* Rough issue cost of a tile of rows x cols (instructions per warp, the
 * eight warps' 16-pixel groups rounded up to whole turns): staging x, A on
 * the tile and its margin, B on the tile. */
static double pr_tile_cost(const pr_shape &s, int rows, int cols)
{
    const double ka = s.cpx / 16, kb = s.cpy / 16;
    const double per_a = ka * 40 + ka * (s.npa / 16) * 3 + s.npa / 8 * 12;
    const double per_b = kb * 40 + kb * (s.npb / 16) * 3 + s.npb / 8 * 16;
    const double turns_a = std::ceil((rows + 2) * (cols + 2) / 16.0 / PR_WARPS);
    const double turns_b = std::ceil(rows * cols / 16.0 / PR_WARPS);
    const double stage = (double)(rows + 4) * (cols + 4) * s.psx / 8 / PR_THREADS * 8;
    return turns_a * per_a + turns_b * per_b + stage + 200;
}

static void pr_set_tile(pr_shape *s, const cuda_pair_args *p, int rows, int cols)
{
    s->rows = rows, s->cols = cols;
    s->xr = rows + 4, s->xc = cols + 4, s->yr = rows + 2, s->yc = cols + 2;
    s->tiles_y = (p->a.oh + rows - 1) / rows;
    s->tiles_x = (p->a.ow + cols - 1) / cols;
}

/* The tile with the least cost per image whose shared memory fits two
 * blocks per SM; false when none does. */
static bool pr_plan(const cuda_pair_args *p, pr_shape *s)
{
    const cuda_dwpw_args &A = p->a, &B = p->b;
    s->cpx = pr_round16(A.c), s->psx = s->cpx + 8;
    s->cpy = pr_round16(B.c), s->psy = s->cpy + 8;
    s->npa = pr_round16(A.cout), s->npb = pr_round16(B.cout);
    s->vx = cuda_ops_vec(2, A.c, (size_t)A.x);
    s->vfa = cuda_ops_vec(2, A.c, (size_t)A.pw_w);
    s->vfb = cuda_ops_vec(2, B.c, (size_t)B.pw_w);
    s->vz = cuda_ops_vec(2, B.cout, (size_t)B.y);
    if (s->vx < 2 || s->vfa < 2 || s->vfb < 2 || s->vz < 2)
        return false;
    double best = 0.0;
    int br = 0, bc = 0;
    for (int rows = 1; rows <= A.oh && rows <= 32; rows++) {
        for (int cols = 8; cols <= A.ow + 7 && cols <= 128; cols += 8) {
            const int c = cols < A.ow ? cols : A.ow;
            pr_set_tile(s, p, rows, c);
            if (pr_smem(*s).total > PR_SMEM_BUDGET)
                break;
            const double cost = pr_tile_cost(*s, rows, c) * s->tiles_y * s->tiles_x;
            if (br == 0 || cost < best)
                best = cost, br = rows, bc = c;
            if (c == A.ow)
                break;
        }
    }
    if (br == 0)
        return false;
    pr_set_tile(s, p, br, bc);
    return true;
}

/* Output tiles of n8 columns per pass, by channel count. */
static int pr_nt(int np)
{
    return np <= 16 ? 2 : np <= 32 ? 4 : np <= 64 ? 8 : 16;
}

/* The forms the kernel is built for: the models' pairs (own residuals with
 * as many tiles in both blocks; narrow-then-wide pairs). */
static bool pr_built(int form, int nta, int ntb)
{
    if (form == CUDA_PAIR_OWN)
        return nta == ntb && nta <= 8;
    return form == CUDA_PAIR_SPAN && nta <= 4 && ntb >= 4 && ntb >= nta;
}

static bool pr_shape_ok(const cuda_pair_args *p)
{
    const cuda_dwpw_args &A = p->a, &B = p->b;
    const cuda_dwpw_args *both[2] = {&A, &B};
    for (const cuda_dwpw_args *a : both) {
        if (a->prec != CUDA_PREC_F16 || a->kh != 3 || a->kw != 3 || a->sh != 1 || a->sw != 1 ||
            a->dh != 1 || a->dw != 1 || a->pt != 1 || a->pl != 1 || a->oh != a->ih ||
            a->ow != a->iw || a->c % 2 != 0 || a->cout % 2 != 0 || a->pool_residual ||
            a->c > 128 || a->cout > 128)
            return false;
    }
    if (B.ih != A.oh || B.iw != A.ow || B.c != A.cout)
        return false;
    if (p->form == CUDA_PAIR_OWN) {
        if (A.rc < 1 || A.rc > A.c || B.rc < 1 || B.rc > B.c)
            return false;
    } else if (p->form == CUDA_PAIR_SPAN) {
        if (A.rc != 0 || B.rc < 1 || B.rc > A.c)
            return false;
    } else {
        return false;
    }
    if (A.rc % 2 != 0 || B.rc % 2 != 0)
        return false;
    return pr_built(p->form, pr_nt(pr_round16(A.cout)), pr_nt(pr_round16(B.cout)));
}

extern "C" bool cuda_dwpw_pair_fits(const cuda_pair_args *p)
{
    pr_shape s;
    return pr_shape_ok(p) && pr_plan(p, &s);
}

/* Where the pair beats its blocks one by one, measured on the H100 at
 * batch 128 (ncu, the two kernels against the pair's):
 * - where a block would run on dwpw_tc (its depthwise step on FFMA) on an
 *   image of at least 32x32: full range 48x48 48 -> 12 -> 48 84 -> 77 us,
 *   48 -> 16 -> 64 91 -> 82 us, short range 32x32 32 -> 36 -> 42 67 -> 49
 *   us;
 * - not where both blocks run on the tensor cores throughout (dwpw_mma):
 *   full range 96x96 32 -> 8 -> 32 175 -> 195 us, FaceMesh 96x96x16 122
 *   -> 136 us, short range 64x64x24 112 -> 120 us; the pair has two thread
 *   blocks of 8 warps per SM where dwpw_mma has three, and its phases wait
 *   on each other;
 * - nor on 24x24 images (full range 96 -> 32 -> 128 57 -> 63 us, 64 ->
 *   32 -> 64 38 -> 43 us), whose tiles are mostly margin;
 * - nor for narrow-then-wide pairs (CUDA_PAIR_SPAN) with more than 16
 *   channels between the blocks: full range 48x48 48 -> 24 -> 48 took
 *   40 + 57 -> 104 us at batch 128, 126 + 204 -> 347 us at 512.
 * And only with two tiles per SM at choice_batch items, whatever the
 * batch (the pair's sums are not its blocks' one by one). */
#define PR_MIN_IMAGE (32 * 32)
#define PR_SPAN_MAX_MID 16

extern "C" bool cuda_dwpw_pair_pays(const cuda_pair_args *p)
{
    int sms = 0;
    pr_shape s;
    if (cuda_ops_sm_count(&sms) != cudaSuccess || !pr_shape_ok(p) || !pr_plan(p, &s))
        return false;
    if ((long long)p->a.oh * p->a.ow < PR_MIN_IMAGE ||
        (cuda_dwpw_mma_ok(&p->a) && cuda_dwpw_mma_ok(&p->b)) ||
        (p->form == CUDA_PAIR_SPAN && p->b.c > PR_SPAN_MAX_MID))
        return false;
    return (long long)p->a.choice_batch * s.tiles_y * s.tiles_x >= 2LL * sms;
}

template <int NTA, int NTB, int FORM>
static cudaError_t pr_start(const cuda_pair_args *p, const pr_shape &s, unsigned blocks,
                            size_t smem, cudaStream_t st)
{
    return cuda_ops_start(dwpw_pair<NTA, NTB, FORM>, blocks, PR_THREADS, smem, st, *p, s);
}

extern "C" cudaError_t cuda_launch_dwpw_pair(const cuda_pair_args *p, cudaStream_t st)
{
    pr_shape s;
    if (!pr_shape_ok(p) || !pr_plan(p, &s) || !p->a.x || !p->b.y)
        return cudaErrorInvalidValue;
    size_t addr = (size_t)p->a.x | (size_t)p->b.y | (size_t)p->a.pw_w | (size_t)p->b.pw_w;
    if ((addr & 3) != 0 || (long long)p->a.batch * p->a.oh * p->a.ow >= INT_MAX)
        return cudaErrorInvalidValue;
    const size_t smem = pr_smem(s).total;
    const long long blocks = (long long)p->a.batch * s.tiles_y * s.tiles_x;
    if (blocks == 0)
        return cudaSuccess;
    const unsigned nb = (unsigned)blocks;
    const int nta = pr_nt(s.npa), ntb = pr_nt(s.npb);
    if (p->form == CUDA_PAIR_OWN) {
        if (nta == 2)
            return pr_start<2, 2, CUDA_PAIR_OWN>(p, s, nb, smem, st);
        if (nta == 4)
            return pr_start<4, 4, CUDA_PAIR_OWN>(p, s, nb, smem, st);
        return pr_start<8, 8, CUDA_PAIR_OWN>(p, s, nb, smem, st);
    }
    if (nta == 2 && ntb == 4)
        return pr_start<2, 4, CUDA_PAIR_SPAN>(p, s, nb, smem, st);
    if (nta == 2 && ntb == 8)
        return pr_start<2, 8, CUDA_PAIR_SPAN>(p, s, nb, smem, st);
    if (nta == 2)
        return pr_start<2, 16, CUDA_PAIR_SPAN>(p, s, nb, smem, st);
    if (ntb == 4)
        return pr_start<4, 4, CUDA_PAIR_SPAN>(p, s, nb, smem, st);
    if (ntb == 8)
        return pr_start<4, 8, CUDA_PAIR_SPAN>(p, s, nb, smem, st);
    return pr_start<4, 16, CUDA_PAIR_SPAN>(p, s, nb, smem, st);
}
