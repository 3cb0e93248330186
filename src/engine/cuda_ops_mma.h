/* Private: the building blocks of the tensor-core block kernels
 * (cuda_ops_dwpw_mma.cu, cuda_ops_dwpw_chain.cu, cuda_ops_dwpw_pair.cu):
 * shared-memory addresses, ldmatrix, the m16n8k8 mma, asynchronous copies
 * of 4-16 bytes, a division by a small count through its reciprocal, the
 * staging of an input window, and the depthwise + pointwise products of 16
 * pixels. */
#ifndef OMMA_ENGINE_CUDA_OPS_MMA_H
#define OMMA_ENGINE_CUDA_OPS_MMA_H

#include <cuda_fp16.h>

/* The shared-memory address of p. */
static __device__ __forceinline__ unsigned smem_addr(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

/* Four 8x8 half matrices from shared memory; lane l gives the address of
 * row l % 8 of matrix l / 8 (16 bytes). */
static __device__ __forceinline__ void ldsm_x4(unsigned *r, unsigned addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

static __device__ __forceinline__ uint2 lds64(unsigned addr)
{
    uint2 v;
    asm volatile("ld.shared.v2.u32 {%0,%1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "r"(addr));
    return v;
}

/* d += a * b, one m16n8k8 tile: fp16 a (two registers) and b (one), fp32 d. */
static __device__ __forceinline__ void mma_1688(float *d, unsigned a0, unsigned a1, unsigned b)
{
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a0), "r"(a1), "r"(b));
}

/* Two floats as the half pair of one mma operand register. */
static __device__ __forceinline__ unsigned pack_half2(float lo, float hi)
{
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<unsigned *>(&h);
}

/* Starts copying n halves (8, 4 or 2: 16, 8 or 4 bytes) from global memory
 * to shared address sa; cp.async.wait_all waits for them. */
static __device__ __forceinline__ void cp_async_halves(unsigned sa, const __half *g, int n)
{
    if (n == 8)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(sa), "l"(g));
    else if (n == 4)
        asm volatile("cp.async.ca.shared.global [%0], [%1], 8;\n" ::"r"(sa), "l"(g));
    else
        asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(sa), "l"(g));
}

/* Zeros n halves (8, 4 or 2) at shared address sa. */
static __device__ __forceinline__ void st_zero_halves(unsigned sa, int n)
{
    if (n == 8)
        asm volatile("st.shared.v4.u32 [%0], {%1,%1,%1,%1};\n" ::"r"(sa), "r"(0));
    else if (n == 4)
        asm volatile("st.shared.v2.u32 [%0], {%1,%1};\n" ::"r"(sa), "r"(0));
    else
        asm volatile("st.shared.u32 [%0], %1;\n" ::"r"(sa), "r"(0));
}

/* q / d for 0 <= q < 2^20 and d <= 2^10, through a float reciprocal: the
 * quotient's fraction stays at least 1 / (2d) from the next integer, far
 * above the rounding error. */
static __device__ __forceinline__ int div_small(int q, float inv_d)
{
    return (int)(((float)q + 0.5f) * inv_d);
}

/* Stages a window of an NHWC half tensor x (ih x iw pixels of c channels)
 * in shared memory at sa: rows window rows (row r: item b0 + r / srows,
 * input row iy0 + r % srows) of scols pixels from column ix0, cp channels
 * per pixel (zeros past c) at a stride of ps halves, zeros outside the
 * image; V halves (8, 4 or 2) per cp.async, which cp.async.wait_all waits
 * for. Each warp takes whole window rows, so the row's tests and address
 * are worked out once; where the copies of a pixel divide 32 a lane keeps
 * one channel slice and steps over columns, else it divides per copy. */
template <int V, int THREADS>
static __device__ __forceinline__ void stage_window(unsigned sa, int ps, const __half *x, int ih,
                                                    int iw, int c, int cp, int b0, int rows,
                                                    int srows, int scols, int iy0, int ix0)
{
    const int lane = threadIdx.x % 32, cpc = cp / V, copies = scols * cpc;
    const float inv_srows = 1.0f / (float)srows, inv_cpc = 1.0f / (float)cpc;
    for (int r = threadIdx.x / 32; r < rows; r += THREADS / 32) {
        const int item = div_small(r, inv_srows), iy = iy0 + r - item * srows;
        const bool row_in = iy >= 0 && iy < ih;
        const __half *xr = x + ((size_t)(b0 + item) * ih + (row_in ? iy : 0)) * iw * c;
        const unsigned sr = sa + (unsigned)(r * scols * ps) * 2;
        if (32 % cpc == 0) {
            const int ch = lane % cpc * V, step = 32 / cpc;
            const bool ch_in = row_in && ch < c;
            for (int col = lane / cpc; col < scols; col += step) {
                const int ix = ix0 + col;
                const unsigned at = sr + (unsigned)(col * ps + ch) * 2;
                if (ch_in && (unsigned)ix < (unsigned)iw)
                    cp_async_halves(at, xr + (size_t)ix * c + ch, V);
                else
                    st_zero_halves(at, V);
            }
        } else {
            for (int j = lane; j < copies; j += 32) {
                const int col = div_small(j, inv_cpc), ch = (j - col * cpc) * V, ix = ix0 + col;
                const unsigned at = sr + (unsigned)(col * ps + ch) * 2;
                if (row_in && ch < c && (unsigned)ix < (unsigned)iw)
                    cp_async_halves(at, xr + (size_t)ix * c + ch, V);
                else
                    st_zero_halves(at, V);
            }
        }
    }
}

/* d0, d1 += the 3x3 depthwise convolution of 16 pixels x 16 channels on
 * the tensor cores: per tap, ldmatrix gathers the pixels' inputs (lane l:
 * row l % 16 of the tap at a + ky * dy + kx * dx; lanes 16-31 the channels
 * 8-15) and two m16n8k8 multiply them by diagonal matrices of the tap's
 * weights (lds64 at wa + tap * wstep: the lane's operand words, or zeros).
 * (Accumulating odd and even taps apart, with each tap's loads issued a
 * tap ahead, measured the same on the H100.) */
static __device__ __forceinline__ void dw3x3_mma(unsigned a, unsigned dy, unsigned dx, unsigned wa,
                                                 unsigned wstep, float *d0, float *d1)
{
#pragma unroll
    for (int ky = 0; ky < 3; ky++) {
#pragma unroll
        for (int kx = 0; kx < 3; kx++) {
            unsigned af[4];
            ldsm_x4(af, a + (unsigned)ky * dy + (unsigned)kx * dx);
            const uint2 w = lds64(wa);
            wa += wstep;
            mma_1688(d0, af[0], af[1], w.x);
            mma_1688(d1, af[2], af[3], w.y);
        }
    }
}

/* The depthwise convolution of a warp's 16 pixels over ks 16-channel steps
 * and its product with a pointwise filter, into acc (NT n8 tiles; tiles
 * from nn on are skipped). Per step the depthwise accumulators start at
 * the depthwise bias and, rounded to half, are exactly the A operand of
 * the pointwise m16n8k16 (k = those 16 channels), so the depthwise output
 * never leaves registers. ab: this lane's ldmatrix row, its pixel's top
 * left tap (+ 8 channels for lanes 16-31); dy, dx: a tap row and column,
 * in bytes; a kh x kw window (W3: 3x3, unrolled without a test per tap);
 * bw, bstep: the lane's depthwise operand words and their step per 16
 * channels; dbias: the depthwise bias; pb: the lane's ldmatrix row of the
 * pointwise filter's first tile ([n][ps] halves: matrix lane / 8 is n8
 * tile lane / 16, k half (lane / 8) % 2). mma_16816 comes from
 * cuda_ops_device.h. */
template <int NT, bool W3>
static __device__ __forceinline__ void dwpw_products(unsigned ab, unsigned dy, unsigned dx, int kh,
                                                     int kw, int ks, unsigned bw, unsigned bstep,
                                                     const float *dbias, unsigned pb, int ps,
                                                     int nn, float (*acc)[4])
{
    const int q = threadIdx.x % 4;
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int e = 0; e < 4; e++)
            acc[j][e] = 0.0f;
    for (int k = 0; k < ks; k++) {
        const float2 b0v = *reinterpret_cast<const float2 *>(dbias + k * 16 + 2 * q);
        const float2 b1v = *reinterpret_cast<const float2 *>(dbias + k * 16 + 8 + 2 * q);
        float d0[4] = {b0v.x, b0v.y, b0v.x, b0v.y}, d1[4] = {b1v.x, b1v.y, b1v.x, b1v.y};
        unsigned wa = bw + (unsigned)k * bstep;
        if (W3) {
            dw3x3_mma(ab + k * 32, dy, dx, wa, (unsigned)ks * bstep, d0, d1);
        } else {
            for (int ky = 0; ky < kh; ky++) {
                for (int kx = 0; kx < kw; kx++) {
                    unsigned af[4];
                    ldsm_x4(af, ab + ky * dy + kx * dx + k * 32);
                    const uint2 w = lds64(wa);
                    wa += (unsigned)ks * bstep;
                    mma_1688(d0, af[0], af[1], w.x);
                    mma_1688(d1, af[2], af[3], w.y);
                }
            }
        }
        const unsigned A[4] = {pack_half2(d0[0], d0[1]), pack_half2(d0[2], d0[3]),
                               pack_half2(d1[0], d1[1]), pack_half2(d1[2], d1[3])};
#pragma unroll
        for (int jp = 0; jp < NT / 2; jp++) {
            if (16 * jp >= nn)
                break;
            unsigned bf[4];
            ldsm_x4(bf, pb + (unsigned)(16 * jp * ps + k * 16) * 2);
            mma_16816(acc[2 * jp], A, bf);
            mma_16816(acc[2 * jp + 1], A, bf + 2);
        }
    }
}

#endif
