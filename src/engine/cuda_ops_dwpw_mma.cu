/* GR_DWPW on the tensor cores throughout, for blocks with few channels and
 * narrowing blocks on large images (cuda_dwpw_mma_ok): both the depthwise
 * and the pointwise convolution are mma.sync products. A block stages the
 * input window of a tile of output pixels in shared memory (cp.async); a
 * warp takes 16 output pixels, and per 16 input channels computes their
 * depthwise convolution as products with diagonal matrices (m16n8k8, one
 * per tap and 8 channels) whose fp32 accumulators, rounded to half, are
 * already the A operand of the pointwise m16n8k16. The depthwise output
 * never leaves registers, and a pixel costs a few instructions per channel
 * instead of the tens a SIMT depthwise with conversions takes, which is
 * what bounded the large few-channel layers (FaceMesh's 96x96x16,
 * BlazeFace's 64x64x24 and 96x96x32): those run 20-30% faster than with
 * dwpw_tc. With many channels (small images) dwpw_tc in cuda_ops_dwpw.cu
 * is faster: a warp here owns its pixels for every channel, too little
 * parallelism; and so it is for widening blocks, whose epilogue stores
 * pairs of halves per lane where dwpw_tc's stores 16 bytes.
 *
 * Why one file of ~830 lines: the staging, the product loop and the
 * epilogues share one tile layout and one register budget (changing one
 * moves the others' spills); read together they are one kernel.
 */
#include <climits>

#include "engine/cuda_ops_device.h"
#include "engine/cuda_ops_mma.h"

#define DM_THREADS 256

/* How dwpw_mma cuts the output into block tiles (made by dt_plan on the
 * host): a tile is nb whole items, or `rows` output rows x `cols` output
 * columns of one item. Its input window (srows x scols pixels per item,
 * zeros where it leaves the image) is staged in shared memory with cp
 * channels (C rounded up to 16, zeros past C) and ps = cp + 8 halves per
 * pixel: an odd number of 16-byte units, so the eight rows an ldmatrix
 * reads from consecutive pixels fall in different banks. */
struct dt_shape {
    int nb, rows, cols;           /* the tile, in output pixels */
    int tiles_y, tiles_x;         /* tiles along an item's rows and columns */
    int srows, scols;             /* its staged input window per item */
    int cp, ps, np;               /* padded channels, pixel stride, cout rounded to 16 */
    int vc;                       /* halves per staging copy: 8, 4 or 2 */
    int nchunk;                   /* output channels per block (gridDim.y splits cout) */
    int hn, hps;                  /* dwpw_mma_heads: head filter rows (32, else 0), their stride */
};

/* Shared memory of a dwpw_mma block, in bytes from its start: the input
 * window, the pointwise filter [np][ps], the depthwise filter as mma
 * operands (below), 8 bytes of zeros, the depthwise bias [cp], the
 * pointwise bias [np] (zeros when absent) and the slopes of negative
 * values [np] (dt_epilogue); with heads, their filters [hn][hps] (zeros
 * past each head's rows and the block's channels) and biases [hn]. */
struct dt_layout {
    size_t pw, dwb, zero, dbias, pbias, slope, head, hbias, total;
};

static __host__ __device__ inline size_t dt_align16(size_t n)
{
    return (n + 15) / 16 * 16;
}

static __host__ __device__ inline dt_layout dt_smem(const dt_shape &s, int taps)
{
    dt_layout l;
    l.pw = dt_align16((size_t)s.nb * s.srows * s.scols * s.ps * 2);
    l.dwb = l.pw + (size_t)s.np * s.ps * 2;
    l.zero = l.dwb + (size_t)taps * (s.cp / 16) * 64;
    l.dbias = l.zero + 16;
    l.pbias = l.dbias + (size_t)s.cp * 4;
    l.slope = l.pbias + (size_t)s.np * 4;
    l.head = dt_align16(l.slope + (size_t)s.np * 4);
    l.hbias = l.head + (size_t)s.hn * s.hps * 2;
    l.total = s.hn ? l.hbias + (size_t)s.hn * 4 : l.slope + (size_t)s.np * 4;
    return l;
}

/* The heads of dwpw_mma_heads (made by dh_heads on the host): their
 * filters and biases for dt_constants, which puts head j's rows from
 * col0[j]; and per n8 tile of the head outputs (column 8t on): the head's
 * output y, its width yn, the tile's first column as the head's channel
 * c0, float32 or half, and whether channel pairs go in one store (an even
 * width and an aligned output). */
#define DT_HEAD_TILES 4

struct dt_heads {
    int n;
    const __half *w[CUDA_HEADS_MAX];
    const float *bias[CUDA_HEADS_MAX];
    int col0[CUDA_HEADS_MAX], ch[CUDA_HEADS_MAX];
    void *y[DT_HEAD_TILES];
    int yn[DT_HEAD_TILES], c0[DT_HEAD_TILES], f32[DT_HEAD_TILES], pair[DT_HEAD_TILES];
};

/* Stages the constants of a block: the pointwise filter, the depthwise
 * filter, the biases and the slopes. The depthwise filter becomes the B
 * operands of m16n8k8 mmas that compute a depthwise convolution as a
 * product with a diagonal matrix: for tap t, 16-channel step k and lane
 * (g = lane / 4, q = lane % 4), the two 32-bit words [t][k][g][2] hold
 * channel k * 16 + h * 8 + g (h = 0, 1) in the low half when g is even,
 * the high half when odd, which is that lane's b register when g / 2 == q;
 * the other lanes read the 8 zero bytes. */
template <bool HEADS>
static __device__ void dt_constants(const cuda_dwpw_args &a, const dt_shape &s,
                                    unsigned char *smem, const dt_layout &l, const dt_heads &h)
{
    const int cpc = s.cp / s.vc;
    const float inv_cpc = 1.0f / (float)cpc;
    const __half *pw = static_cast<const __half *>(a.pw_w);
    const unsigned ps = smem_addr(smem + l.pw);
    for (int i = threadIdx.x; i < s.np * cpc; i += DM_THREADS) {
        const int n = div_small(i, inv_cpc), ch = (i - n * cpc) * s.vc;
        const unsigned sa = ps + (unsigned)(n * s.ps + ch) * 2;
        if (n < a.cout && ch < a.c)
            cp_async_halves(sa, pw + (size_t)n * a.c + ch, s.vc);
        else
            st_zero_halves(sa, s.vc);
    }
    const unsigned short *dw = static_cast<const unsigned short *>(a.dw_w);
    unsigned *dwb = reinterpret_cast<unsigned *>(smem + l.dwb);
    const int ks = s.cp / 16, words = a.kh * a.kw * ks * 16;
    for (int i = threadIdx.x; i < words; i += DM_THREADS) {
        const int h = i & 1, g = (i >> 1) & 7, tk = i >> 4, tap = tk / ks;
        const int c = (tk - tap * ks) * 16 + h * 8 + g;
        const unsigned w = c < a.c ? dw[tap * a.c + c] : 0u;
        dwb[i] = (g & 1) ? w << 16 : w;
    }
    if (threadIdx.x < 4)
        reinterpret_cast<unsigned *>(smem + l.zero)[threadIdx.x] = 0;
    float *dbias = reinterpret_cast<float *>(smem + l.dbias);
    for (int c = threadIdx.x; c < s.cp; c += DM_THREADS)
        dbias[c] = a.dw_bias && c < a.c ? __ldg(a.dw_bias + c) : 0.0f;
    float *pbias = reinterpret_cast<float *>(smem + l.pbias);
    float *slope = reinterpret_cast<float *>(smem + l.slope);
    for (int n = threadIdx.x; n < s.np; n += DM_THREADS) {
        pbias[n] = a.bias && n < a.cout ? __ldg(a.bias + n) : 0.0f;
        slope[n] = a.act == GR_ACT_PRELU && n < a.cout ? __ldg(a.alpha + n)
                   : a.act == GR_ACT_NONE                ? 1.0f
                                                         : 0.0f;
    }
    if (!HEADS)
        return;
    unsigned short *hw = reinterpret_cast<unsigned short *>(smem + l.head);
    for (int i = threadIdx.x; i < s.hn * s.hps; i += DM_THREADS) {
        const int r = i / s.hps, k = i - r * s.hps;
        unsigned short v = 0;
#pragma unroll
        for (int j = 0; j < CUDA_HEADS_MAX; j++)
            if (j < h.n && r >= h.col0[j] && r < h.col0[j] + h.ch[j] && k < a.cout)
                v = __ldg(reinterpret_cast<const unsigned short *>(h.w[j]) +
                          (r - h.col0[j]) * a.cout + k);
        hw[i] = v;
    }
    float *hbias = reinterpret_cast<float *>(smem + l.hbias);
    for (int r = threadIdx.x; r < s.hn; r += DM_THREADS) {
        float v = 0.0f;
#pragma unroll
        for (int j = 0; j < CUDA_HEADS_MAX; j++)
            if (j < h.n && r >= h.col0[j] && r < h.col0[j] + h.ch[j] && h.bias[j])
                v = __ldg(h.bias[j] + r - h.col0[j]);
        hbias[r] = v;
    }
}

/* The input window of a tile (nb items from b0, rows from iy0, columns
 * from ix0) at the start of shared memory, and waits for it and every copy
 * before it. */
static __device__ __forceinline__ void dt_stage_window(const cuda_dwpw_args &a, const dt_shape &s,
                                                       unsigned char *smem, int b0, int nb,
                                                       int iy0, int ix0)
{
    const __half *x = static_cast<const __half *>(a.x);
    const unsigned xs = smem_addr(smem);
    const int rows = nb * s.srows;
    if (s.vc == 8)
        stage_window<8, DM_THREADS>(xs, s.ps, x, a.ih, a.iw, a.c, s.cp, b0, rows, s.srows, s.scols,
                                    iy0, ix0);
    else if (s.vc == 4)
        stage_window<4, DM_THREADS>(xs, s.ps, x, a.ih, a.iw, a.c, s.cp, b0, rows, s.srows, s.scols,
                                    iy0, ix0);
    else
        stage_window<2, DM_THREADS>(xs, s.ps, x, a.ih, a.iw, a.c, s.cp, b0, rows, s.srows, s.scols,
                                    iy0, ix0);
    asm volatile("cp.async.wait_all;\n" ::);
    __syncthreads();
}

/* The extent of a block's tile (partial at the batch's and the image's
 * ends), with reciprocals for div_small. */
struct dt_tile {
    int b0, oy0, ox0, nb, rows, cols;
    float inv_rows, inv_cols;
};

static __device__ __forceinline__ dt_tile dt_tile_at(const cuda_dwpw_args &a, const dt_shape &s,
                                                     int i)
{
    dt_tile t;
    const int tx = i % s.tiles_x;
    i /= s.tiles_x;
    const int ty = i % s.tiles_y;
    t.b0 = i / s.tiles_y * s.nb, t.oy0 = ty * s.rows, t.ox0 = tx * s.cols;
    t.nb = min(s.nb, a.batch - t.b0), t.rows = min(s.rows, a.oh - t.oy0);
    t.cols = min(s.cols, a.ow - t.ox0);
    t.inv_rows = 1.0f / (float)t.rows, t.inv_cols = 1.0f / (float)t.cols;
    return t;
}

/* Residual forms of dwpw_mma: none, at the output pixel, max-pooled 2x2,
 * and the block's own input at the output pixel (stride 1, as many
 * channels as the input: the BlazeBlocks that keep their width), which is
 * read from the staged input window instead of memory. */
enum { DT_RES_NONE, DT_RES_PIXEL, DT_RES_POOL, DT_RES_WINDOW };

/* Where tile pixel p (below P) reads and writes: its input window's first
 * element in shared memory (halves from the window's start), its output
 * pixel (batch * oh * ow numbering) and its residual's first element (for
 * DT_RES_WINDOW in the window: the input pixel under the output pixel,
 * pt rows and pl columns into its window). */
template <int RES>
static __device__ __forceinline__ void dt_pixel(const cuda_dwpw_args &a, const dt_shape &s,
                                                const dt_tile &t, int p, int *win, int *m, int *r)
{
    const int q = div_small(p, t.inv_cols), ox = p - q * t.cols;
    const int item = div_small(q, t.inv_rows), oy = q - item * t.rows;
    *win = ((item * s.srows + oy * a.sh) * s.scols + ox * a.sw) * s.ps;
    const int b = t.b0 + item, gy = t.oy0 + oy, gx = t.ox0 + ox;
    *m = (b * a.oh + gy) * a.ow + gx;
    if (RES == DT_RES_POOL)
        *r = ((b * 2 * a.oh + 2 * gy) * 2 * a.ow + 2 * gx) * a.rc;
    else if (RES == DT_RES_WINDOW)
        *r = *win + (a.pt * s.scols + a.pl) * s.ps;
    else
        *r = *m * a.rc;
}

static __device__ __forceinline__ float2 dt_ld2(const __half *p)
{
    return __half22float2(__ldg(reinterpret_cast<const __half2 *>(p)));
}

/* The output pixel and residual offsets of the rows g and g + 8 a lane
 * holds in the accumulators (from lanes g and g + 8, which computed them
 * for pixel `lane`; m < 0: past the tile). */
struct dt_rows {
    int m[2], r[2];
};

static __device__ __forceinline__ dt_rows dt_share_rows(int m, int r)
{
    const int g = (threadIdx.x % 32) / 4;
    dt_rows o;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        o.m[h] = __shfl_sync(0xffffffffu, m, g + 8 * h);
        o.r[h] = __shfl_sync(0xffffffffu, r, g + 8 * h);
    }
    return o;
}

/* Whether the residual at the output pixel is loaded before the products
 * (dt_residual_early): up to 4 n8 tiles, 8 registers, or with heads (two
 * blocks per SM) up to 8; with more the registers would spill. */
template <int NT, int RES, bool HEADS> struct dt_early {
    static constexpr bool on = RES == DT_RES_PIXEL && NT <= (HEADS ? 8 : 4);
};

/* The residual at the output pixel for the epilogue of NT n8 tiles from
 * n0, where dt_early is on: loaded before the products are computed, so
 * that its latency hides behind them. Zeros where the epilogue adds none. */
template <int NT, int RES, bool HEADS>
static __device__ __forceinline__ void dt_residual_early(const cuda_dwpw_args &a, const dt_rows &w,
                                                         int n0, __half2 (*rv)[2])
{
    const int q = threadIdx.x % 4;
    const __half *res = static_cast<const __half *>(a.residual);
#pragma unroll
    for (int j = 0; j < NT; j++) {
        const int n = n0 + 8 * j + 2 * q;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            rv[j][h] = __float2half2_rn(0.0f);
            if (dt_early<NT, RES, HEADS>::on && w.m[h] >= 0 && n < a.cout && n < a.rc)
                rv[j][h] = __ldg(reinterpret_cast<const __half2 *>(res + w.r[h] + n));
        }
    }
}

/* The output of channels n, n + 1 (n = n0 + 8j + 2q) in row h of the
 * accumulators acc[j] of a lane: + bias + residual, activation. w: the
 * rows' output and residual offsets, rv the residual where it was loaded
 * early (DT_RES_PIXEL), res: the residual of the row at channel n. The
 * activation is v > 0 ? v : 0 where RELU, else v > 0 ? v : v * slope + 0,
 * then at most hi (slope: 0 for RELU and RELU6, 1 for none, the PRELU
 * slope; hi 6 for RELU6). Both forms give the same bits for RELU (+0 for
 * every v <= 0, never -0): which one runs follows NT, and NT the channel
 * split, which follows the batch (cuda_launch_dwpw_mma); so does dt_early
 * (a +0 residual added or not: +0 either way). */
template <int NT, int RES, bool HEADS, bool RELU>
static __device__ __forceinline__ float2 dt_value(const cuda_dwpw_args &a, float2 bias, float2 sl,
                                                  float hi, const float *acc, const dt_rows &w,
                                                  __half2 rv, int n, int h, const __half *res,
                                                  const __half *window)
{
    float v0 = acc[2 * h] + bias.x, v1 = acc[2 * h + 1] + bias.y;
    if (dt_early<NT, RES, HEADS>::on) {
        const float2 v = __half22float2(rv);
        v0 += v.x;
        v1 += v.y;
    } else if (RES == DT_RES_PIXEL && n < a.rc && w.m[h] >= 0) {
        const float2 v = dt_ld2(res);
        v0 += v.x;
        v1 += v.y;
    } else if (RES == DT_RES_WINDOW && n < a.rc && w.m[h] >= 0) {
        const float2 v = __half22float2(*reinterpret_cast<const __half2 *>(window + w.r[h] + n));
        v0 += v.x;
        v1 += v.y;
    } else if (RES == DT_RES_POOL && n < a.rc && w.m[h] >= 0) {
        const int right = a.rc, down = 2 * a.ow * a.rc;
        const float2 v0r = dt_ld2(res), v1r = dt_ld2(res + right), v2 = dt_ld2(res + down);
        const float2 v3 = dt_ld2(res + down + right);
        v0 += fmaxf(fmaxf(v0r.x, v1r.x), fmaxf(v2.x, v3.x));
        v1 += fmaxf(fmaxf(v0r.y, v1r.y), fmaxf(v2.y, v3.y));
    }
    if (RELU)
        return make_float2(v0 > 0.0f ? v0 : 0.0f, v1 > 0.0f ? v1 : 0.0f);
    return make_float2(fminf(v0 > 0.0f ? v0 : fmaf(v0, sl.x, 0.0f), hi),
                       fminf(v1 > 0.0f ? v1 : fmaf(v1, sl.y, 0.0f), hi));
}

/* The residual rows of a lane at channel n0 + 2q (tiles are immediate
 * offsets from there). */
static __device__ __forceinline__ void dt_res_rows(const cuda_dwpw_args &a, const dt_rows &w,
                                                   int n0, const __half **res)
{
    const int q = threadIdx.x % 4;
#pragma unroll
    for (int h = 0; h < 2; h++)
        res[h] = static_cast<const __half *>(a.residual) + w.r[h] + n0 + 2 * q;
}

/* NT * 8 output channels from n0 of the warp's 16 pixels (dt_value), as
 * half2 stores. Lane (g, q) holds rows g and g + 8, channels n0 + 8j + 2q
 * and + 1 of acc[j]; slopes and bias from shared memory. */
template <int NT, int RES, bool RELU>
static __device__ __forceinline__ void
dt_epilogue(const cuda_dwpw_args &a, const float *pbias, const float *slope, float hi,
            float (*acc)[4], const dt_rows &w, const __half2 (*rv)[2], int n0, const __half *window)
{
    const int q = threadIdx.x % 4;
    /* Row pointers at channel n0 + 2q; the tiles are immediate offsets. */
    __half2 *y[2];
    const __half *res[2];
    dt_res_rows(a, w, n0, res);
#pragma unroll
    for (int h = 0; h < 2; h++)
        y[h] = reinterpret_cast<__half2 *>(static_cast<__half *>(a.y) +
                                           (size_t)max(w.m[h], 0) * a.cout + n0 + 2 * q);
#pragma unroll
    for (int j = 0; j < NT; j++) {
        const int n = n0 + 8 * j + 2 * q;
        if (n >= a.cout)
            break;
        const float2 bias = *reinterpret_cast<const float2 *>(pbias + n);
        const float2 sl =
            RELU ? make_float2(0.0f, 0.0f) : *reinterpret_cast<const float2 *>(slope + n);
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const float2 v = dt_value<NT, RES, false, RELU>(a, bias, sl, hi, acc[j], w, rv[j][h],
                                                            n, h, res[h] + 8 * j, window);
            if (w.m[h] >= 0)
                y[h][4 * j] = __floats2half2_rn(v.x, v.y);
        }
    }
}

/* The heads of the warp's 16 pixels from the block's output (every
 * channel in acc, one pass: dt_value), rounded to half: each 16 channels
 * are the A operand of an m16n8k16 with the head filters' B operands (hb:
 * the lane's ldmatrix row, as the pointwise filter's), fp32 accumulators
 * for up to four n8 tiles of head outputs; + head bias, stored per tile as
 * h says. */
template <int NT, int RES, bool RELU>
static __device__ __forceinline__ void
dt_heads_epilogue(const cuda_dwpw_args &a, const dt_heads &h, const float *pbias,
                  const float *slope, float hi, float (*acc)[4], const dt_rows &w,
                  const __half2 (*rv)[2], const __half *window, unsigned hb, int hps,
                  const float *hbias)
{
    const int q = threadIdx.x % 4;
    const __half *res[2];
    dt_res_rows(a, w, 0, res);
    float hacc[DT_HEAD_TILES][4];
#pragma unroll
    for (int t = 0; t < DT_HEAD_TILES; t++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            hacc[t][e] = 0.0f;
#pragma unroll
    for (int kk = 0; kk < NT / 2; kk++) {
        if (16 * kk >= a.cout)
            break;
        unsigned A[4];
#pragma unroll
        for (int jj = 0; jj < 2; jj++) {
            const int j = 2 * kk + jj, n = 8 * j + 2 * q;
            float2 v[2] = {make_float2(0.0f, 0.0f), make_float2(0.0f, 0.0f)};
            if (n < a.cout) {
                const float2 bias = *reinterpret_cast<const float2 *>(pbias + n);
                const float2 sl =
                    RELU ? make_float2(0.0f, 0.0f) : *reinterpret_cast<const float2 *>(slope + n);
#pragma unroll
                for (int r = 0; r < 2; r++)
                    v[r] = dt_value<NT, RES, true, RELU>(a, bias, sl, hi, acc[j], w, rv[j][r], n,
                                                         r, res[r] + 8 * j, window);
            }
            A[2 * jj] = pack_half2(v[0].x, v[0].y);
            A[2 * jj + 1] = pack_half2(v[1].x, v[1].y);
        }
#pragma unroll
        for (int tp = 0; tp < DT_HEAD_TILES / 2; tp++) {
            unsigned bf[4];
            ldsm_x4(bf, hb + (unsigned)(16 * tp * hps + 16 * kk) * 2);
            mma_16816(hacc[2 * tp], A, bf);
            mma_16816(hacc[2 * tp + 1], A, bf + 2);
        }
    }
#pragma unroll
    for (int t = 0; t < DT_HEAD_TILES; t++) {
        if (!h.y[t])
            continue;
        const int c = h.c0[t] + 2 * q, yn = h.yn[t];
        const float b0 = hbias[8 * t + 2 * q], b1 = hbias[8 * t + 2 * q + 1];
#pragma unroll
        for (int r = 0; r < 2; r++) {
            if (w.m[r] < 0 || c >= yn)
                continue;
            const float v0 = hacc[t][2 * r] + b0, v1 = hacc[t][2 * r + 1] + b1;
            const size_t o = (size_t)w.m[r] * yn + c;
            if (h.f32[t]) {
                float *y = static_cast<float *>(h.y[t]) + o;
                if (h.pair[t]) {
                    *reinterpret_cast<float2 *>(y) = make_float2(v0, v1);
                } else {
                    y[0] = v0;
                    if (c + 1 < yn)
                        y[1] = v1;
                }
            } else {
                __half *y = static_cast<__half *>(h.y[t]) + o;
                if (h.pair[t]) {
                    *reinterpret_cast<__half2 *>(y) = __floats2half2_rn(v0, v1);
                } else {
                    y[0] = __float2half_rn(v0);
                    if (c + 1 < yn)
                        y[1] = __float2half_rn(v1);
                }
            }
        }
    }
}

/* Blocks of 8 warps; block (x, y) takes tile x and output channels from
 * y * nchunk. Each warp takes 16-pixel row groups of the tile in turn, and
 * for a group and each 16-channel step k: the depthwise convolution of
 * those channels on the tensor cores (per tap one ldmatrix of the 16
 * pixels' shifted inputs, two m16n8k8 with the diagonal filter operands,
 * fp32 accumulators starting at the depthwise bias; windows up to 3x3);
 * its accumulators, rounded to half, are exactly the A operand of the
 * pointwise m16n8k16 (k = those 16 channels), so the depthwise output
 * never leaves registers; the pointwise filter's B operands come by
 * ldmatrix. NT n8 tiles (up to 128 output channels) per pass. */
/* Up to four blocks per SM where the output is one pass of 16 channels
 * (64 registers; where the tile's shared memory leaves room): full range's
 * 96x96 32 -> 8 blocks 80 -> 77 us at batch 128. With NT = 4, 64
 * registers spill and the blocks took 3-10% longer. */
/* HEADS: the block's output goes to its heads instead (dt_heads_epilogue,
 * one pass of every channel). */
template <int NT, int RES, bool W3, bool HEADS>
static __device__ __forceinline__ void dt_block(const cuda_dwpw_args &a, const dt_shape &s,
                                                const dt_heads &h)
{
    extern __shared__ __align__(16) unsigned char dm_smem[];
    const int ks = s.cp / 16;
    const dt_layout l = dt_smem(s, a.kh * a.kw);
    const dt_tile t = dt_tile_at(a, s, blockIdx.x);
    const int P = t.nb * t.rows * t.cols;
    const int n_begin = blockIdx.y * s.nchunk, n_end = min(a.cout, n_begin + s.nchunk);
    dt_constants<HEADS>(a, s, dm_smem, l, h);
    /* The window after the constants: the kernels before this one have to
     * be done with it (pdl_begin, cuda_ops_device.h); the constants load
     * while they finish. */
    pdl_begin();
    dt_stage_window(a, s, dm_smem, t.b0, t.nb, t.oy0 * a.sh - a.pt, t.ox0 * a.sw - a.pl);

    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, g = lane / 4, q = lane % 4;
    const float *dbias = reinterpret_cast<const float *>(dm_smem + l.dbias);
    const float *pbias = reinterpret_cast<const float *>(dm_smem + l.pbias);
    const float *slope = reinterpret_cast<const float *>(dm_smem + l.slope);
    const float hi = a.act == GR_ACT_RELU6 ? 6.0f : INFINITY;
    const __half *window = reinterpret_cast<const __half *>(dm_smem);
    /* The lane's depthwise operand words (or the zeros) and its row of the
     * pointwise filter's ldmatrix: matrix lane / 8 is (n8 tile lane / 16,
     * k half (lane / 8) % 2). */
    const unsigned bw = (g >> 1) == q ? smem_addr(dm_smem + l.dwb) + g * 8
                                      : smem_addr(dm_smem + l.zero);
    const unsigned bstep = (g >> 1) == q ? 64 : 0;
    const unsigned pb = smem_addr(dm_smem + l.pw) +
                        (unsigned)(((lane & 7) + 8 * (lane >> 4)) * s.ps + 8 * ((lane >> 3) & 1)) * 2;
    const unsigned tap_dy = (unsigned)(a.dh * s.scols * s.ps) * 2, tap_dx = (unsigned)(a.dw * s.ps) * 2;
    const unsigned hb = smem_addr(dm_smem + l.head) +
                        (unsigned)(((lane & 7) + 8 * (lane >> 4)) * s.hps + 8 * ((lane >> 3) & 1)) * 2;
    const float *hbias = reinterpret_cast<const float *>(dm_smem + l.hbias);
    for (int p0 = warp * 16; p0 < P; p0 += 8 * 16) {
        /* Pixel p0 + lane % 16: this lane's ldmatrix row (channels + 8 for
         * lanes 16-31: matrices 2 and 3, the second k8 half), and the
         * output and residual offsets the epilogue's lanes fetch. */
        const int p = p0 + (lane & 15);
        int win, m, r;
        dt_pixel<RES>(a, s, t, min(p, P - 1), &win, &m, &r);
        if (p >= P)
            m = -1;
        const unsigned ab = smem_addr(dm_smem) + (unsigned)(win + 8 * (lane >> 4)) * 2;
        const dt_rows rows = dt_share_rows(m, r);
        for (int n0 = n_begin; n0 < n_end; n0 += NT * 8) {
            __half2 rv[NT][2];
            dt_residual_early<NT, RES, HEADS>(a, rows, n0, rv);
            float acc[NT][4];
            dwpw_products<NT, W3>(ab, tap_dy, tap_dx, a.kh, a.kw, ks, bw, bstep, dbias,
                                  pb + (unsigned)(n0 * s.ps) * 2, s.ps, n_end - n0, acc);
            /* (With more tiles or the pooled residual, a second epilogue
             * would spill registers.) */
            if (HEADS && a.act == GR_ACT_RELU)
                dt_heads_epilogue<NT, RES, true>(a, h, pbias, slope, hi, acc, rows, rv, window,
                                                 hb, s.hps, hbias);
            else if (HEADS)
                dt_heads_epilogue<NT, RES, false>(a, h, pbias, slope, hi, acc, rows, rv, window,
                                                  hb, s.hps, hbias);
            else if (NT <= 4 && RES != DT_RES_POOL && a.act == GR_ACT_RELU)
                dt_epilogue<NT, RES, true>(a, pbias, slope, hi, acc, rows, rv, n0, window);
            else
                dt_epilogue<NT, RES, false>(a, pbias, slope, hi, acc, rows, rv, n0, window);
        }
    }
}

template <int NT, int RES, bool W3>
__global__ void __launch_bounds__(DM_THREADS, NT == 16 ? 2 : NT == 2 ? 4 : 3)
    dwpw_mma(cuda_dwpw_args a, dt_shape s)
{
    dt_block<NT, RES, W3, false>(a, s, dt_heads{});
}

/* A block and its heads: 3x3 windows, up to 64 channels, two blocks per
 * SM (the head accumulators and operands would spill at three). */
template <int NT, int RES>
__global__ void __launch_bounds__(DM_THREADS, 2) dwpw_mma_heads(cuda_dwpw_args a, dt_shape s,
                                                                dt_heads h)
{
    dt_block<NT, RES, true, true>(a, s, h);
}

/* Output pixels a dwpw_mma tile aims at (fewer when that leaves fewer than
 * two tiles per SM), and the shared memory it may take before tiles shrink
 * (three blocks per SM), unless the filters alone need more. Large tiles
 * stage fewer halo rows per pixel: 768 against 256 took FaceMesh's
 * 96x96x16 blocks from 68 to 61 us on the H100 (8 rows of 96 pixels and a
 * 10-row window, where 4 rows had a 6-row one). */
#define DT_TILE_PIXELS 768
#define DT_SMEM_BUDGET (72 * 1024)

static void dt_window(const cuda_dwpw_args *a, dt_shape *s)
{
    s->srows = (s->rows - 1) * a->sh + (a->kh - 1) * a->dh + 1;
    s->scols = (s->cols - 1) * a->sw + (a->kw - 1) * a->dw + 1;
    s->tiles_y = (a->oh + s->rows - 1) / s->rows;
    s->tiles_x = (a->ow + s->cols - 1) / s->cols;
}

/* Rows per tile of an item ow pixels wide, about `target` pixels: the count between target / 2 and 2 * target whose 16-pixel
 * groups keep the eight warps most evenly busy, nearest the target on a
 * tie. */
static int dt_rows(int oh, int ow, long long target)
{
    int best = 1;
    double best_eff = -1.0, best_dist = 0.0;
    for (int r = 1; r <= oh; r++) {
        long long px = (long long)r * ow;
        if (px * 2 < target && r < oh)
            continue;
        if (px > 2 * target && r > 1)
            break;
        long long groups = (px + 15) / 16;
        double eff = (double)groups / (double)(8 * ((groups + 7) / 8));
        eff *= (double)oh / (double)(r * ((oh + r - 1) / r)); /* the last tile's rows */
        double dist = px > target ? (double)px / target : (double)target / px;
        if (eff > best_eff + 1e-9 || (eff > best_eff - 1e-9 && dist < best_dist)) {
            best = r;
            best_eff = eff;
            best_dist = dist;
        }
    }
    return best;
}

/* heads: with room for the head filters (dwpw_mma_heads). */
static dt_shape dt_plan(const cuda_dwpw_args *a, int sms, bool heads)
{
    dt_shape s;
    s.cp = (a->c + 15) / 16 * 16;
    s.ps = s.cp + 8;
    s.np = (a->cout + 15) / 16 * 16;
    s.hn = heads ? 8 * DT_HEAD_TILES : 0;
    s.hps = s.np + 8;
    s.vc = cuda_ops_vec(2, a->c, (size_t)a->x | (size_t)a->pw_w);
    s.nchunk = a->cout;
    const int taps = a->kh * a->kw;
    long long M = (long long)a->batch * a->oh * a->ow;
    long long target = M / (2LL * (sms > 0 ? sms : 1));
    target = target < 32 ? 32 : target > DT_TILE_PIXELS ? DT_TILE_PIXELS : target;
    long long img = (long long)a->oh * a->ow;
    s.nb = 1, s.rows = a->oh, s.cols = a->ow;
    if (img <= target)
        s.nb = (int)(target / img < a->batch ? target / img : a->batch);
    else if (a->ow <= 2 * target)
        s.rows = dt_rows(a->oh, a->ow, target);
    else
        s.rows = 1, s.cols = (int)target;
    dt_window(a, &s);
    dt_shape filters = s;
    filters.nb = 0; /* no input window: the filters' share */
    size_t budget = dt_smem(filters, taps).total + 32 * 1024;
    if (budget < DT_SMEM_BUDGET)
        budget = DT_SMEM_BUDGET;
    while (dt_smem(s, taps).total > budget && (s.nb > 1 || s.rows > 1 || s.cols > 1)) {
        if (s.nb > 1)
            s.nb = (s.nb + 1) / 2;
        else if (s.rows > 1)
            s.rows = (s.rows + 1) / 2;
        else
            s.cols = (s.cols + 1) / 2;
        dt_window(a, &s);
    }
    return s;
}

/* The tensor-core form: fp16, even channel counts and residual width
 * (pairs of halves in the staging copies, the epilogue and the residual),
 * windows up to 3x3, 4-byte aligned buffers, element offsets in 32 bits. */
static bool dt_form_ok(const cuda_dwpw_args *a)
{
    size_t addr = (size_t)a->x | (size_t)a->dw_w | (size_t)a->pw_w | (size_t)a->y |
                  (size_t)a->residual;
    long long out = (long long)a->batch * a->oh * a->ow * (a->cout > a->rc ? a->cout : a->rc);
    long long in = (long long)a->batch * a->ih * a->iw * a->c;
    return a->prec == CUDA_PREC_F16 && a->c % 2 == 0 && a->cout % 2 == 0 &&
           (!a->residual || a->rc % 2 == 0) && a->kh <= 3 && a->kw <= 3 && (addr & 3) == 0 &&
           4 * out < INT_MAX && in < INT_MAX;
}

template <int NT, bool W3>
static cudaError_t dt_launch_res(const cuda_dwpw_args *a, const dt_shape *s, dim3 grid, size_t smem,
                                 cudaStream_t st)
{
    if (!a->residual)
        return cuda_ops_start(dwpw_mma<NT, DT_RES_NONE, W3>, grid, DM_THREADS, smem, st, *a, *s);
    if (a->pool_residual)
        return cuda_ops_start(dwpw_mma<NT, DT_RES_POOL, W3>, grid, DM_THREADS, smem, st, *a, *s);
    if (a->residual == a->x && a->rc == a->c && a->oh == a->ih && a->ow == a->iw)
        return cuda_ops_start(dwpw_mma<NT, DT_RES_WINDOW, W3>, grid, DM_THREADS, smem, st, *a, *s);
    return cuda_ops_start(dwpw_mma<NT, DT_RES_PIXEL, W3>, grid, DM_THREADS, smem, st, *a, *s);
}

/* The 3x3 window (every model's) unrolled without a test per tap; others
 * test each tap of 3x3 against kh and kw. */
template <int NT>
static cudaError_t dt_launch_nt(const cuda_dwpw_args *a, const dt_shape *s, dim3 grid, size_t smem,
                                cudaStream_t st)
{
    if (a->kh == 3 && a->kw == 3)
        return dt_launch_res<NT, true>(a, s, grid, smem, st);
    return dt_launch_res<NT, false>(a, s, grid, smem, st);
}

/* Where this form beats dwpw_tc, measured per layer on the H100 at batch
 * 128 (stride 1 throughout; at stride 2 dwpw_tc is as fast or faster):
 * - at most 32 input and output channels (FaceMesh 96x96x16 111 -> 79 us,
 *   48x48x32 50 -> 40 us; BlazeFace full range 96x96 32 -> 8 122 -> 99
 *   us, 8 -> 32 130 -> 117 us);
 * - narrowing blocks (no more output than input channels, at most 64 out
 *   of at most 128) on images of at least 24x24, once the batch has 16384
 *   output pixels: full range 48x48 48 -> 12 54 -> 37 us, 48 -> 24 55 ->
 *   41 us, 24x24 64 -> 32 22 -> 17 us, 128 -> 32 35 -> 30 us; FaceMesh
 *   24x24 64 -> 64 31 -> 27 us. Widening blocks stay with dwpw_tc (full
 *   range 48x48 16 -> 64 54 -> 66 us), and so do 12x12 images (96 -> 48
 *   13 -> 21 us: their tiles of a few rows leave warps idle).
 * With 128 output channels dwpw_tc is up to 1.6x faster. The pixels are
 * counted at choice_batch items, whatever the batch: this form's
 * depthwise sums (tensor cores) are not dwpw_tc's (FFMA), so the choice
 * may follow the item's shape and the choice batch only. */
#define DT_MAX_CHANNELS 32
#define DT_NARROW_MAX_IN 128
#define DT_NARROW_MAX_OUT 64
#define DT_NARROW_MIN_IMAGE (24 * 24)
#define DT_NARROW_MIN_PIXELS 16384

static bool dt_faster(const cuda_dwpw_args *a)
{
    if (a->sh != 1 || a->sw != 1)
        return false;
    if (a->c <= DT_MAX_CHANNELS && a->cout <= DT_MAX_CHANNELS)
        return true;
    const long long image = (long long)a->oh * a->ow;
    return a->cout <= a->c && a->c <= DT_NARROW_MAX_IN && a->cout <= DT_NARROW_MAX_OUT &&
           image >= DT_NARROW_MIN_IMAGE && image * a->choice_batch >= DT_NARROW_MIN_PIXELS;
}

/* The plan with the largest tiles dt_plan makes for a's shapes at any batch
 * and device (one SM, enough items for DT_TILE_PIXELS), so that whether the
 * form fits does not follow the batch. */
static dt_shape dt_plan_largest(const cuda_dwpw_args *a, bool heads)
{
    cuda_dwpw_args big = *a;
    big.batch = 2 * DT_TILE_PIXELS;
    return dt_plan(&big, 1, heads);
}

extern "C" bool cuda_dwpw_mma_ok(const cuda_dwpw_args *a)
{
    if (!dt_form_ok(a) || !dt_faster(a))
        return false;
    dt_shape s = dt_plan_largest(a, false);
    return dt_smem(s, a->kh * a->kw).total <= CUDA_DWPW_SMEM_MAX;
}

extern "C" cudaError_t cuda_launch_dwpw_mma(const cuda_dwpw_args *a, cudaStream_t st)
{
    int sms = 0;
    cudaError_t e = cuda_ops_sm_count(&sms);
    if (e != cudaSuccess)
        return e;
    dt_shape s = dt_plan(a, sms, false);
    const size_t smem = dt_smem(s, a->kh * a->kw).total;
    if (smem > CUDA_DWPW_SMEM_MAX)
        return cudaErrorInvalidValue;
    const unsigned tiles = (unsigned)((a->batch + s.nb - 1) / s.nb) * s.tiles_y * s.tiles_x;
    /* Few tiles (small batches): blocks also split the output channels, in
     * 16s, so that there are about two blocks per SM. */
    int chunks = 1;
    while (tiles * (unsigned)chunks < 2u * (unsigned)sms && 16 * chunks < a->cout)
        chunks *= 2;
    s.nchunk = (a->cout + chunks - 1) / chunks;
    s.nchunk = (s.nchunk + 15) / 16 * 16;
    const dim3 grid(tiles, (unsigned)((a->cout + s.nchunk - 1) / s.nchunk));
    const int n8 = s.nchunk / 8;
    if (n8 <= 2)
        return dt_launch_nt<2>(a, &s, grid, smem, st);
    if (n8 <= 4)
        return dt_launch_nt<4>(a, &s, grid, smem, st);
    if (n8 <= 8)
        return dt_launch_nt<8>(a, &s, grid, smem, st);
    return dt_launch_nt<16>(a, &s, grid, smem, st);
}


/* ---- a block and its heads ------------------------------------------------- */

/* Head j's first filter row: the heads one after another, each from a
 * multiple of 8; the n8 tiles they take in all. */
static int dh_tiles(const cuda_heads_args *h, int *col0)
{
    int tiles = 0;
    for (int j = 0; j < h->n_heads; j++) {
        if (col0)
            col0[j] = 8 * tiles;
        tiles += (h->head[j].n + 7) / 8;
    }
    return tiles;
}

extern "C" bool cuda_dwpw_heads_fits(const cuda_heads_args *h)
{
    const cuda_dwpw_args *a = &h->block;
    if (h->n_heads < 1 || h->n_heads > CUDA_HEADS_MAX || !dt_form_ok(a) || a->sh != 1 ||
        a->sw != 1 || a->kh != 3 || a->kw != 3 || a->cout > 64 || a->pool_residual)
        return false;
    for (int j = 0; j < h->n_heads; j++)
        if (h->head[j].n < 1)
            return false;
    if (dh_tiles(h, NULL) > DT_HEAD_TILES)
        return false;
    dt_shape s = dt_plan_largest(a, true);
    return dt_smem(s, 9).total <= CUDA_DWPW_SMEM_MAX;
}

/* The kernel's view of the heads (dt_heads). */
static dt_heads dh_heads(const cuda_heads_args *h)
{
    dt_heads d = {};
    d.n = h->n_heads;
    dh_tiles(h, d.col0);
    for (int j = 0; j < h->n_heads; j++) {
        const cuda_head *hd = &h->head[j];
        d.w[j] = static_cast<const __half *>(hd->w);
        d.bias[j] = hd->bias;
        d.ch[j] = hd->n;
        const size_t es = hd->y_f32 ? 4 : 2;
        for (int t = d.col0[j] / 8; t < (d.col0[j] + hd->n + 7) / 8; t++) {
            d.y[t] = hd->y;
            d.yn[t] = hd->n;
            d.c0[t] = 8 * t - d.col0[j];
            d.f32[t] = hd->y_f32;
            d.pair[t] = hd->n % 2 == 0 && ((size_t)hd->y & (2 * es - 1)) == 0;
        }
    }
    return d;
}

template <int NT>
static cudaError_t dh_launch_res(const cuda_dwpw_args *a, const dt_shape *s, const dt_heads *d,
                                 dim3 grid, size_t smem, cudaStream_t st)
{
    if (!a->residual)
        return cuda_ops_start(dwpw_mma_heads<NT, DT_RES_NONE>, grid, DM_THREADS, smem, st, *a, *s,
                              *d);
    if (a->residual == a->x && a->rc == a->c && a->oh == a->ih && a->ow == a->iw)
        return cuda_ops_start(dwpw_mma_heads<NT, DT_RES_WINDOW>, grid, DM_THREADS, smem, st, *a,
                              *s, *d);
    return cuda_ops_start(dwpw_mma_heads<NT, DT_RES_PIXEL>, grid, DM_THREADS, smem, st, *a, *s,
                          *d);
}

extern "C" cudaError_t cuda_launch_dwpw_heads(const cuda_heads_args *h, cudaStream_t st)
{
    const cuda_dwpw_args *a = &h->block;
    if (!cuda_dwpw_heads_fits(h))
        return cudaErrorInvalidValue;
    for (int j = 0; j < h->n_heads; j++)
        if (!h->head[j].w || !h->head[j].y || ((size_t)h->head[j].w & 1))
            return cudaErrorInvalidValue;
    if ((long long)a->batch * a->oh * a->ow <= 0)
        return cudaSuccess;
    int sms = 0;
    cudaError_t e = cuda_ops_sm_count(&sms);
    if (e != cudaSuccess)
        return e;
    dt_shape s = dt_plan(a, sms, true);
    const size_t smem = dt_smem(s, 9).total;
    const dim3 grid((unsigned)((a->batch + s.nb - 1) / s.nb) * s.tiles_y * s.tiles_x);
    const dt_heads d = dh_heads(h);
    if (s.np <= 16)
        return dh_launch_res<2>(a, &s, &d, grid, smem, st);
    if (s.np <= 32)
        return dh_launch_res<4>(a, &s, &d, grid, smem, st);
    return dh_launch_res<8>(a, &s, &d, grid, smem, st);
}
