/* Depthwise convolutions in tiles staged in shared memory (dwconv_tile):
 * the kernel cuda_launch_dwconv (cuda_ops_dwconv.cu) gives the large grids
 * of 3x3 and 5x5 windows at stride 1 or 2 on whole 16-byte channel
 * vectors.
 *
 * A tile is th output rows x tw output columns x cs 16-byte channel vectors
 * of one image. A thread block holds the input window of a tile (with its
 * halo, staged by cp.async) and the filter of its channels as float, and
 * computes every output of the tile from there: a thread takes DW_TILE_R
 * outputs along W of 4 channels (8 bytes of halves, 16 of floats: fp16's
 * registers no more than fp32's) on rpt rows (tr rows of threads).
 *
 * The kernel is bound by the instructions it issues, not by memory: the
 * activation is a template parameter (no switch per output), a thread
 * loads its bias and PRELU slopes once, and its outputs of a row are
 * addressed from one pointer.
 *
 * The sums are dwconv_rows' (ky, then kx, skipping taps outside the
 * input; then bias, residual, activation, one rounding), so the results
 * are its own and dwconv_vec's (test_cuda_dwconv compares them bitwise). */
#include "engine/cuda_ops_device.h"

#define DW_TILE_R 4 /* outputs a thread computes along W */
#define DW_TILE_MAX_THREADS 512
#define DW_TILE_MAX_SMEM (48 * 1024)

struct dw_tile {
    int cs, tw, tr, rpt; /* channel vectors, output columns (a multiple of
                          * DW_TILE_R), rows of threads, rows per thread */
    int pad; /* vectors of padding after every DW_TILE_R * S columns */
    int nslab, ncol, nrow; /* tiles along channels, W and H of an image */
};

static __device__ __forceinline__ void dw_cp16(void *s, const void *g)
{
    unsigned sa = (unsigned)__cvta_generic_to_shared(s);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa), "l"(g));
}

/* 4 elements at p (8 or 16 bytes, aligned to that, in shared memory
 * through a generic load) into floats. */
static __device__ __forceinline__ void ld4(const float *p, float *v)
{
    float4 q = *reinterpret_cast<const float4 *>(p);
    v[0] = q.x, v[1] = q.y, v[2] = q.z, v[3] = q.w;
}

static __device__ __forceinline__ void ld4(const __half *p, float *v)
{
    uint2 q = *reinterpret_cast<const uint2 *>(p);
    float2 f0 = __half22float2(*reinterpret_cast<const __half2 *>(&q.x));
    float2 f1 = __half22float2(*reinterpret_cast<const __half2 *>(&q.y));
    v[0] = f0.x, v[1] = f0.y, v[2] = f1.x, v[3] = f1.y;
}

/* Threads of a tile: 4 channels each (V / 4 a 16-byte vector). */
static __host__ __device__ __forceinline__ int dw_tile_threads(const dw_tile &t, int V)
{
    return t.cs * (V / 4) * (t.tw / DW_TILE_R) * t.tr;
}

/* Shared memory of a block: the filter [K * K][cs * V / 4][4] as float,
 * then the input window, (th - 1) * S + K rows of (tw - 1) * S + K columns
 * of cs 16-byte vectors, with `pad` vectors after every DW_TILE_R * S
 * columns (a thread's step along W): the lanes of a wavefront, which read
 * columns DW_TILE_R * S apart, then hit different banks. In 16-byte units. */
static __host__ __device__ __forceinline__ int dw_tile_filter_units(const dw_tile &t, int K, int V)
{
    return K * K * (V / 4) * t.cs;
}

static __host__ __device__ __forceinline__ int dw_tile_row_units(const dw_tile &t, int S, int K)
{
    const int iwt = (t.tw - 1) * S + K;
    return iwt * t.cs + (iwt + DW_TILE_R * S - 1) / (DW_TILE_R * S) * t.pad;
}

static __host__ __device__ __forceinline__ int dw_tile_smem(const dw_tile &t, int K, int S, int V)
{
    return 16 * (dw_tile_filter_units(t, K, V) +
                 ((t.tr * t.rpt - 1) * S + K) * dw_tile_row_units(t, S, K));
}

template <typename T, int K, int S, int ACT>
__global__ void __launch_bounds__(DW_TILE_MAX_THREADS)
dwconv_tile(cuda_conv_args a, dw_tile t)
{
    extern __shared__ __align__(16) unsigned char dw_smem[];
    const int V = vec16<T>::n, Q = V / 4, R = DW_TILE_R, NX = (R - 1) * S + K;
    const int groups = a.cout / V, cs = t.cs;
    const int th = t.tr * t.rpt, iwt = (t.tw - 1) * S + K, iht = (th - 1) * S + K;
    const int rowu = dw_tile_row_units(t, S, K), pad = t.pad;
    int blk = blockIdx.x;
    const int slab = blk % t.nslab;
    blk /= t.nslab;
    const int col = blk % t.ncol;
    blk /= t.ncol;
    const int row = blk % t.nrow, b = blk / t.nrow;
    const int cv0 = slab * cs, oy0 = row * th, ox0 = col * t.tw;
    const int iy0 = oy0 * S - a.pt, ix0 = ox0 * S - a.pl;
    float *ws = reinterpret_cast<float *>(dw_smem);
    T *xs = reinterpret_cast<T *>(dw_smem) + (size_t)dw_tile_filter_units(t, K, V) * V;

    /* The filter (a constant: before pdl_begin), as float. */
    for (int k = threadIdx.x; k < K * K * cs; k += blockDim.x) {
        const int c = k % cs, tap = k / cs;
        float v[V];
        if (cv0 + c < groups)
            ld16(static_cast<const T *>(a.w) + (size_t)tap * a.cout + (cv0 + c) * V, v);
        else
#pragma unroll
            for (int i = 0; i < V; i++)
                v[i] = 0.0f;
#pragma unroll
        for (int i = 0; i < V; i += 4)
            *reinterpret_cast<float4 *>(ws + ((size_t)tap * cs * Q + c * Q + i / 4) * 4) =
                make_float4(v[i], v[i + 1], v[i + 2], v[i + 3]);
    }
    pdl_begin();

    /* The input window: the pixels inside the input only (the taps outside
     * it are skipped below, never read). A thread takes a vector of a row
     * (k of span) on every rsplit-th row from r0, so all threads issue. */
    const T *x = static_cast<const T *>(a.x) + (size_t)b * a.ih * a.iw * a.cin + cv0 * V;
    const int span = iwt * cs, rsplit = (int)blockDim.x >= 2 * span ? blockDim.x / span : 1;
    const int kstep = rsplit > 1 ? span : blockDim.x, r0 = threadIdx.x / kstep;
    for (int k = threadIdx.x % kstep; k < span && r0 < rsplit; k += kstep) {
        const int c = k % cs, j = k / cs, ix = ix0 + j;
        if (ix < 0 || ix >= a.iw || cv0 + c >= groups)
            continue;
        T *sp = xs + (size_t)(k + j / (R * S) * pad) * V;
        for (int r = r0; r < iht; r += rsplit) {
            const int iy = iy0 + r;
            if (iy >= 0 && iy < a.ih)
                dw_cp16(sp + (size_t)r * rowu * V, x + ((size_t)iy * a.iw + ix) * a.cin + c * V);
        }
    }
    asm volatile("cp.async.wait_all;\n" ::);
    __syncthreads();

    /* The thread's 4 channels: c4 of the slab's cs * Q. */
    const int c4 = threadIdx.x % (cs * Q), q = threadIdx.x / (cs * Q);
    const int xg = q % (t.tw / R), tr = q / (t.tw / R);
    const int lx = xg * R, ox = ox0 + lx; /* the thread's first output column */
    const int ch = cv0 * V + c4 * 4;     /* its first channel */
    if (tr >= t.tr || ch >= a.cout || ox >= a.ow)
        return;
    const int ixt = ix0 + lx * S; /* the input column of its first tap */
    float bv[4], slope[4]; /* the bias and PRELU's slopes of its channels */
#pragma unroll
    for (int i = 0; i < 4; i++) {
        bv[i] = a.bias ? __ldg(a.bias + ch + i) : 0.0f;
        slope[i] = ACT == GR_ACT_PRELU ? __ldg(a.alpha + ch + i) : 0.0f;
    }
    for (int rr = 0; rr < t.rpt; rr++) {
        const int ly = tr * t.rpt + rr, oy = oy0 + ly;
        if (oy >= a.oh)
            break;
        float acc[R][4];
#pragma unroll
        for (int r = 0; r < R; r++)
#pragma unroll
            for (int i = 0; i < 4; i++)
                acc[r][i] = 0.0f;
#pragma unroll
        for (int ky = 0; ky < K; ky++) {
            const int iy = oy * S - a.pt + ky;
            if (iy < 0 || iy >= a.ih)
                continue;
            float wv[K][4];
#pragma unroll
            for (int kx = 0; kx < K; kx++)
                ld4(ws + ((size_t)(ky * K + kx) * cs * Q + c4) * 4, wv[kx]);
            const T *xr =
                xs + (size_t)((ly * S + ky) * rowu + xg * (R * S * cs + pad)) * V + c4 * 4;
#pragma unroll
            for (int j = 0; j < NX; j++) {
                const int ix = ixt + j;
                if (ix < 0 || ix >= a.iw)
                    continue;
                float xv[4];
                ld4(xr + (size_t)(j * cs + j / (R * S) * pad) * V, xv);
                dw_tap_column<K, S, R, 4>(j, xv, wv, acc);
            }
        }
        /* The thread's outputs of the row: R pixels from o on. */
        T *y = static_cast<T *>(a.y) + (((size_t)b * a.oh + oy) * a.ow + ox) * a.cout + ch;
        const T *res = a.residual ? static_cast<const T *>(a.residual) + (y - static_cast<T *>(a.y))
                                  : nullptr;
#pragma unroll
        for (int r = 0; r < R; r++) {
            if (ox + r >= a.ow)
                break;
            if (a.bias)
#pragma unroll
                for (int i = 0; i < 4; i++)
                    acc[r][i] += bv[i];
            if (res) {
                float rv[4];
                ldv(res + (size_t)r * a.cout, rv, 4);
#pragma unroll
                for (int i = 0; i < 4; i++)
                    acc[r][i] += rv[i];
            }
#pragma unroll
            for (int i = 0; i < 4; i++)
                acc[r][i] = activate_slope(acc[r][i], ACT, slope[i]); /* ACT a constant */
            stv(y + (size_t)r * a.cout, acc[r], 4);
        }
    }
}

/* The channel vectors of a tile: the divisor of the image's `groups`
 * nearest 8 (8 x 16 bytes: a 128-byte line a pixel) from 4 to 12, else
 * all of them up to 8, else 8 with a partial last slab. */
static int dw_tile_slab(int groups)
{
    int best = 0;
    for (int cs = 4; cs <= 12; cs++)
        if (groups % cs == 0 && (!best || abs(cs - 8) < abs(best - 8)))
            best = cs;
    if (best)
        return best;
    return groups < 8 ? groups : 8;
}

/* The vectors of padding per DW_TILE_R * S columns that leave the fewest
 * bank conflicts when the lanes of a wavefront read a column of their
 * window (4 elements a lane: 8 or 16 bytes, so 16 or 8 lanes a 128-byte
 * wavefront), the least of equals; counted on the first two warps. Tried:
 * 0, 1, 2, 4 and the pad that puts a row of threads' lanes on consecutive
 * banks (a thread's step of DW_TILE_R * S * cs + pad vectors = cs mod 8). */
static int dw_tile_pad(const dw_tile &t0, int K, int S, int V)
{
    const int Q = V / 4, xgs = t0.tw / DW_TILE_R, threads = dw_tile_threads(t0, V);
    const int slots = 2 * V; /* lanes a wavefront: 128 bytes / (4 elements) */
    const int pads[5] = {0, 1, 2, 4, ((t0.cs * (1 - DW_TILE_R * S)) % 8 + 8) % 8};
    int best = 0, best_deg = 99;
    for (int k = 0; k < 5; k++) {
        const int pad = pads[k];
        dw_tile p = t0;
        p.pad = pad;
        const int rowu = dw_tile_row_units(p, S, K);
        int deg = 1;
        for (int w0 = 0; w0 < threads && w0 < 64; w0 += slots) {
            int count[16] = {0};
            for (int i = w0; i < w0 + slots && i < threads; i++) {
                const int c4 = i % (t0.cs * Q), xg = (i / (t0.cs * Q)) % xgs;
                const int trow = i / (t0.cs * Q * xgs);
                const int unit =
                    (trow * t0.rpt * S * rowu + xg * (DW_TILE_R * S * t0.cs + pad)) * Q + c4;
                if (++count[unit % slots] > deg)
                    deg = count[unit % slots];
            }
        }
        if (deg < best_deg || (deg == best_deg && pad < best)) {
            best_deg = deg;
            best = pad;
        }
    }
    return best;
}

/* The tile of a K x K stride-S convolution with V-element vectors: of the
 * tiles that fit (DW_TILE_MAX_THREADS threads, DW_TILE_MAX_SMEM bytes),
 * the one that moves the fewest bytes per image through shared memory
 * (window with halo, outputs including those past the edges, the filter,
 * and a block's fixed cost), counted dearer where an SM holds fewer than
 * 768 of its threads. By the shape only. False where none fits. */
static bool dw_tile_pick(const cuda_conv_args *a, int K, int S, int V, dw_tile *out)
{
    const int groups = a->cout / V, cs = dw_tile_slab(groups);
    const int ow4 = (a->ow + DW_TILE_R - 1) / DW_TILE_R * DW_TILE_R;
    double best = 0;
    bool found = false;
    /* Widths 4 to 64, powers of 2 and the image's own (rounded up to 4);
     * rows per thread 1, 2, 4; rows of threads: the most that fit, and
     * those that split the image's rows into 1 to 8 tiles evenly. */
    for (int tw = DW_TILE_R; tw <= 64 && tw <= ow4;
         tw = tw * 2 <= ow4 || tw == ow4 ? tw * 2 : ow4) {
        const dw_tile t1 = {cs, tw, 1, 1, 7, 0, 0, 0};
        const int tr_max = DW_TILE_MAX_THREADS / dw_tile_threads(t1, V);
        for (int rpt = 1; rpt <= 4; rpt *= 2) {
            const int rows = (a->oh + rpt - 1) / rpt; /* thread rows to cover the image */
            for (int n = 0; n <= 8; n++) {
                int tr = n ? (rows + n - 1) / n : tr_max;
                if (tr > tr_max)
                    continue;
                if (tr > rows)
                    tr = rows;
                dw_tile t = {cs, tw, tr, rpt, 7, 0, 0, 0}; /* the most padding */
                const int threads = dw_tile_threads(t, V), smem = dw_tile_smem(t, K, S, V);
                if (tr < 1 || smem > DW_TILE_MAX_SMEM)
                    continue;
                const int th = tr * rpt;
                t.nslab = (groups + cs - 1) / cs;
                t.ncol = (a->ow + tw - 1) / tw;
                t.nrow = (a->oh + th - 1) / th;
                const double blocks = (double)t.nslab * t.ncol * t.nrow;
                const double bytes = (double)((th - 1) * S + K) * ((tw - 1) * S + K) * cs * 16 +
                                     (double)th * tw * cs * 16 + K * K * cs * 16 + 4096;
                /* Threads an SM holds: 228 KB of shared memory (1 KB a block
                 * reserved), 64K registers at 64 a thread; below 768, the
                 * latency of the staging and the shared-memory loads shows. */
                int per_sm = 228 * 1024 / (smem + 1024);
                if (per_sm > 1024 / threads)
                    per_sm = 1024 / threads;
                const int occ = per_sm * threads;
                double cost = blocks * bytes;
                if (occ < 768)
                    cost *= 1.0 + (768 - occ) / 768.0;
                /* Fewer than 4 blocks an SM: less of one's staging hides
                 * behind another's arithmetic. */
                if (per_sm < 4)
                    cost *= 1.0 + 0.1 * (4 - per_sm);
                if (!found || cost < best) {
                    best = cost;
                    *out = t;
                    found = true;
                }
            }
        }
    }
    if (found)
        out->pad = dw_tile_pad(*out, K, S, V);
    return found;
}

template <typename T, int K, int S>
static cudaError_t dw_tile_start(const cuda_conv_args *a, const dw_tile &t, cudaStream_t s)
{
    const unsigned blocks = (unsigned)((long long)a->batch * t.nrow * t.ncol * t.nslab);
    const int threads = dw_tile_threads(t, vec16<T>::n);
    const size_t smem = (size_t)dw_tile_smem(t, K, S, vec16<T>::n);
    switch (a->act) {
    case GR_ACT_RELU:
        return cuda_ops_start(dwconv_tile<T, K, S, GR_ACT_RELU>, blocks, threads, smem, s, *a, t);
    case GR_ACT_RELU6:
        return cuda_ops_start(dwconv_tile<T, K, S, GR_ACT_RELU6>, blocks, threads, smem, s, *a, t);
    case GR_ACT_PRELU:
        return cuda_ops_start(dwconv_tile<T, K, S, GR_ACT_PRELU>, blocks, threads, smem, s, *a, t);
    default:
        return cuda_ops_start(dwconv_tile<T, K, S, GR_ACT_NONE>, blocks, threads, smem, s, *a, t);
    }
}

extern "C" cudaError_t cuda_launch_dwconv_tile(const cuda_conv_args *a, cudaStream_t s)
{
    const bool f16 = a->prec == CUDA_PREC_F16;
    const int es = f16 ? 2 : 4, V = 16 / es, K = a->kh, S = a->sh;
    const size_t addr = (size_t)a->x | (size_t)a->w | (size_t)a->y | (size_t)a->residual;
    dw_tile t = {};
    if (a->mult != 1 || cuda_ops_vec(es, a->cout, addr) != V || a->kh != a->kw ||
        (K != 3 && K != 5) || a->sh != a->sw || (S != 1 && S != 2) || a->dh != 1 ||
        a->dw != 1 || a->ow < DW_TILE_R || !dw_tile_pick(a, K, S, V, &t))
        return cudaErrorNotSupported;
    if (f16)
        return K == 3 ? (S == 1 ? dw_tile_start<__half, 3, 1>(a, t, s)
                                : dw_tile_start<__half, 3, 2>(a, t, s))
                      : (S == 1 ? dw_tile_start<__half, 5, 1>(a, t, s)
                                : dw_tile_start<__half, 5, 2>(a, t, s));
    return K == 3 ? (S == 1 ? dw_tile_start<float, 3, 1>(a, t, s)
                            : dw_tile_start<float, 3, 2>(a, t, s))
                  : (S == 1 ? dw_tile_start<float, 5, 1>(a, t, s)
                            : dw_tile_start<float, 5, 2>(a, t, s));
}
