/* Private to the cuda_ops_*.cu files: element access in either storage
 * precision, 16-byte vector loads and stores, the fused epilogue. CUDA only. */
#ifndef OMMA_ENGINE_CUDA_OPS_DEVICE_H
#define OMMA_ENGINE_CUDA_OPS_DEVICE_H

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "engine/cuda_ops.h"

#define CUDA_OPS_THREADS 256

static __device__ __forceinline__ float ld(const float *p)
{
    return __ldg(p);
}
static __device__ __forceinline__ float ld(const __half *p)
{
    return __half2float(__ldg(p));
}
static __device__ __forceinline__ void st(float *p, float v)
{
    *p = v;
}
static __device__ __forceinline__ void st(__half *p, float v)
{
    *p = __float2half_rn(v);
}

/* v as st would store it and ld read it back: rounded to T. */
template <typename T> static __device__ __forceinline__ float ld_as_stored(float v);
template <> __device__ __forceinline__ float ld_as_stored<float>(float v)
{
    return v;
}
template <> __device__ __forceinline__ float ld_as_stored<__half>(float v)
{
    return __half2float(__float2half_rn(v));
}

/* Elements in 16 bytes. */
template <typename T> struct vec16 {
    enum { n = 16 / sizeof(T) };
};

/* 16 bytes at p (16-byte aligned) into vec16<T>::n floats. */
static __device__ __forceinline__ void ld16(const float *p, float *v)
{
    float4 q = __ldg(reinterpret_cast<const float4 *>(p));
    v[0] = q.x;
    v[1] = q.y;
    v[2] = q.z;
    v[3] = q.w;
}

/* The 8 halves of a 16-byte vector as floats. */
static __device__ __forceinline__ void unpack16(uint4 q, float *v)
{
    const __half2 *h = reinterpret_cast<const __half2 *>(&q);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 f = __half22float2(h[i]);
        v[2 * i] = f.x;
        v[2 * i + 1] = f.y;
    }
}

static __device__ __forceinline__ void ld16(const __half *p, float *v)
{
    unpack16(__ldg(reinterpret_cast<const uint4 *>(p)), v);
}

static __device__ __forceinline__ void st16(float *p, const float *v)
{
    *reinterpret_cast<float4 *>(p) = make_float4(v[0], v[1], v[2], v[3]);
}

static __device__ __forceinline__ void st16(__half *p, const float *v)
{
    uint4 q;
    __half2 *h = reinterpret_cast<__half2 *>(&q);
#pragma unroll
    for (int i = 0; i < 4; i++)
        h[i] = __floats2half2_rn(v[2 * i], v[2 * i + 1]);
    *reinterpret_cast<uint4 *>(p) = q;
}

/* n elements at p (n * sizeof(T) bytes: 16, 8 or 4, aligned to that; or one
 * element) into floats, and back. n is a constant after inlining, so each
 * call becomes one load or store of that width. */
static __device__ __forceinline__ void ldv(const float *p, float *v, const int n)
{
    if (n == 4) {
        ld16(p, v);
    } else if (n == 2) {
        float2 q = __ldg(reinterpret_cast<const float2 *>(p));
        v[0] = q.x;
        v[1] = q.y;
    } else {
        v[0] = __ldg(p);
    }
}

static __device__ __forceinline__ void ldv(const __half *p, float *v, const int n)
{
    if (n == 8) {
        ld16(p, v);
    } else if (n == 4) {
        uint2 q = __ldg(reinterpret_cast<const uint2 *>(p));
        const __half2 *h = reinterpret_cast<const __half2 *>(&q);
        float2 f0 = __half22float2(h[0]), f1 = __half22float2(h[1]);
        v[0] = f0.x;
        v[1] = f0.y;
        v[2] = f1.x;
        v[3] = f1.y;
    } else if (n == 2) {
        unsigned q = __ldg(reinterpret_cast<const unsigned *>(p));
        float2 f = __half22float2(*reinterpret_cast<const __half2 *>(&q));
        v[0] = f.x;
        v[1] = f.y;
    } else {
        v[0] = __half2float(__ldg(p));
    }
}

static __device__ __forceinline__ void stv(float *p, const float *v, const int n)
{
    if (n == 4)
        st16(p, v);
    else if (n == 2)
        *reinterpret_cast<float2 *>(p) = make_float2(v[0], v[1]);
    else
        *p = v[0];
}

static __device__ __forceinline__ void stv(__half *p, const float *v, const int n)
{
    if (n == 8) {
        st16(p, v);
    } else if (n == 4) {
        uint2 q;
        __half2 *h = reinterpret_cast<__half2 *>(&q);
        h[0] = __floats2half2_rn(v[0], v[1]);
        h[1] = __floats2half2_rn(v[2], v[3]);
        *reinterpret_cast<uint2 *>(p) = q;
    } else if (n == 2) {
        *reinterpret_cast<__half2 *>(p) = __floats2half2_rn(v[0], v[1]);
    } else {
        *p = __float2half_rn(v[0]);
    }
}

/* Host: the widest vector (elements) for rows of c elements of es bytes
 * whose pointers OR together to `addr`: 16, 8 or 4 bytes, at least 2
 * elements; 0 when none fits (scalar kernels). */
static inline int cuda_ops_vec(int es, long long c, size_t addr)
{
    for (int vb = 16; vb >= 4; vb /= 2) {
        int v = vb / es;
        if (v >= 2 && c % v == 0 && (addr & (size_t)(vb - 1)) == 0)
            return v;
    }
    return 0;
}

/* The activation of a fused epilogue, with the PRELU slope given (from a
 * register or shared memory). */
static __device__ __forceinline__ float activate_slope(float v, int act, float alpha)
{
    switch (act) {
    case GR_ACT_RELU:
        return fmaxf(v, 0.0f);
    case GR_ACT_RELU6:
        return fminf(fmaxf(v, 0.0f), 6.0f);
    case GR_ACT_PRELU:
        return v >= 0.0f ? v : v * alpha;
    default:
        return v;
    }
}

/* The activation of the fused epilogue; c is the channel (for PRELU). (Not
 * activate_slope with the slope loaded first: that changed the register
 * allocation of dwpw_tc's PRELU kernels, which then spilled more.) */
static __device__ __forceinline__ float activate(float v, int act, const float *alpha, int c)
{
    switch (act) {
    case GR_ACT_RELU:
        return fmaxf(v, 0.0f);
    case GR_ACT_RELU6:
        return fminf(fmaxf(v, 0.0f), 6.0f);
    case GR_ACT_PRELU:
        return v >= 0.0f ? v : v * __ldg(alpha + c);
    default:
        return v;
    }
}

/* A depthwise convolution's sums for input column j of a window row: each
 * of the R outputs along W it reaches (tap kx = j - r * S inside the K
 * wide window) gets acc[r][i] = fmaf(xv[i], wv[kx][i], acc[r][i]). Called
 * with j from an unrolled loop, the tap tests fold away (dwconv_rows,
 * dwconv_tile). */
template <int K, int S, int R, int N>
static __device__ __forceinline__ void dw_tap_column(int j, const float *xv, const float (*wv)[N],
                                                     float (*acc)[N])
{
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int kx = j - r * S; /* a constant after unrolling */
        if (kx < 0 || kx >= K)
            continue;
#pragma unroll
        for (int i = 0; i < N; i++)
            acc[r][i] = fmaf(xv[i], wv[kx][i], acc[r][i]);
    }
}

/* d += a * b on the tensor cores: one m16n8k16 tile, fp16 inputs (a: four
 * 32-bit registers of half pairs, b: two), fp32 accumulators (c: four). */
static __device__ __forceinline__ void mma_16816(float *c, const unsigned *a, const unsigned *b)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                 "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

/* One 16-deep step of a warp's 32x32 part of a 64x64 tile (gemm_tc16,
 * gemm_deep): the A rows wm..wm+31 and the B rows (output columns)
 * wn..wn+31 at column kb of shared-memory tiles of row stride ld, into
 * acc[2][4] m16n8 accumulators; g and t are the lane's group and thread
 * in group (lane / 4, lane % 4). */
static __device__ __forceinline__ void warp_tile_mma(float (*acc)[4][4], const __half *sa,
                                                     const __half *sb, int ld, int wm, int wn,
                                                     int g, int t, int kb)
{
    unsigned a[2][4], b[4][2];
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const __half *p = sa + (wm + 16 * i + g) * ld + kb + 2 * t;
        a[i][0] = *reinterpret_cast<const unsigned *>(p);
        a[i][1] = *reinterpret_cast<const unsigned *>(p + 8 * ld);
        a[i][2] = *reinterpret_cast<const unsigned *>(p + 8);
        a[i][3] = *reinterpret_cast<const unsigned *>(p + 8 * ld + 8);
    }
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const __half *p = sb + (wn + 8 * j + g) * ld + kb + 2 * t;
        b[j][0] = *reinterpret_cast<const unsigned *>(p);
        b[j][1] = *reinterpret_cast<const unsigned *>(p + 8);
    }
#pragma unroll
    for (int i = 0; i < 2; i++)
#pragma unroll
        for (int j = 0; j < 4; j++)
            mma_16816(acc[i][j], a[i], b[j]);
}

/* The epilogue of two adjacent fp16 outputs o, o + 1 (channels n, n + 1)
 * of a 1x1 convolution: the sums with their bias v0, v1, plus the
 * residual's pair, activated, stored as one half2. */
static __device__ __forceinline__ void store_pair_f16(__half *y, const __half *res, size_t o,
                                                      float v0, float v1, int act,
                                                      const float *alpha, int n)
{
    if (res) {
        float2 r = __half22float2(*reinterpret_cast<const __half2 *>(res + o));
        v0 += r.x;
        v1 += r.y;
    }
    v0 = activate(v0, act, alpha, n);
    v1 = activate(v1, act, alpha, n + 1);
    *reinterpret_cast<__half2 *>(y + o) = __floats2half2_rn(v0, v1);
}

/* TFLite's bilinear source coordinate (reference_ops::ResizeBilinear) of
 * output row or column o: (o + 0.5) * scale - 0.5 with half_pixel_centers,
 * o * scale otherwise; *lo = max(floor, 0), *hi = min(ceil, in - 1), and
 * the weight of *hi: the distance from the clamped *lo. */
static __device__ __forceinline__ void resize_source(int o, float scale, bool half, int in, int *lo,
                                                     int *hi, float *w)
{
    float v = half ? ((float)o + 0.5f) * scale - 0.5f : (float)o * scale;
    *lo = max((int)floorf(v), 0);
    *hi = min((int)ceilf(v), in - 1);
    *w = v - (float)*lo;
}

/* Host: the scale of a bilinear resize from in to out pixels. */
static inline float resize_scale(int in, int out, bool align_corners)
{
    if (align_corners && out > 1)
        return (float)(in - 1) / (float)(out - 1);
    return (float)in / (float)out;
}

/* The upsampled addend of an FPN level (cuda_conv_args.up): x [batch, h,
 * w, N] resized to the output's [oh, ow]. */
struct up_addend {
    const __half *x;
    int h, w, oh, ow;
    float sy, sx;
    bool half_pixel;
};

/* Host: a's addend (zeros without one). */
static inline up_addend up_addend_of(const cuda_conv_args *a)
{
    up_addend u = {};
    if (a->up) {
        u.x = static_cast<const __half *>(a->up);
        u.h = a->uh, u.w = a->uw, u.oh = a->oh, u.ow = a->ow;
        u.sy = resize_scale(a->uh, a->oh, a->up_align_corners);
        u.sx = resize_scale(a->uw, a->ow, a->up_align_corners);
        u.half_pixel = a->up_half_pixel;
    }
    return u;
}

/* Where output pixel m reads the addend: the element offsets of its four
 * source pixels (channel 0) and the weights of the lower ones. */
struct up_source {
    int o00, o01, o10, o11;
    float ly, lx;
};

static __device__ __forceinline__ up_source up_source_at(const up_addend &u, int N, int m)
{
    const int hw = u.oh * u.ow, b = m / hw, r = m - b * hw, oy = r / u.ow, ox = r - oy * u.ow;
    int y0, y1, x0, x1;
    up_source s;
    resize_source(oy, u.sy, u.half_pixel, u.h, &y0, &y1, &s.ly);
    resize_source(ox, u.sx, u.half_pixel, u.w, &x0, &x1, &s.lx);
    const int base = b * u.h * u.w;
    s.o00 = (base + y0 * u.w + x0) * N;
    s.o01 = (base + y0 * u.w + x1) * N;
    s.o10 = (base + y1 * u.w + x0) * N;
    s.o11 = (base + y1 * u.w + x1) * N;
    return s;
}

/* Host: the current device's number of SMs. */
static inline cudaError_t cuda_ops_sm_count(int *sms)
{
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e == cudaSuccess)
        e = cudaDeviceGetAttribute(sms, cudaDevAttrMultiProcessorCount, dev);
    return e;
}

/* Programmatic dependent launch (sm_90). Every kernel is launched with
 * programmatic stream serialization (cuda_ops_start), so the next kernel
 * on the stream may start while this one finishes: its blocks take the
 * SMs this one leaves and load what does not depend on it (filters), and
 * the launch latency between kernels is hidden, in CUDA graphs too.
 * Hence the rule for every kernel here: call pdl_begin() before the first
 * read of an activation and the first write to global memory (reads of
 * constants may come before it). pdl_begin waits until the kernels before
 * have finished and their writes are visible, then lets the next kernel
 * launch. Both are no-ops without a programmatic launch. */
static __device__ __forceinline__ void pdl_begin()
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

/* Launches kernel<<<grid, threads, smem, s>>>(args...) with programmatic
 * stream serialization (see pdl_begin), first raising the kernel's dynamic
 * shared-memory limit when smem is over the default 48 KB. */
template <typename... P, typename... A>
static inline cudaError_t cuda_ops_start(void (*kernel)(P...), dim3 grid, int threads, size_t smem,
                                         cudaStream_t s, A... args)
{
    if (smem > 48 * 1024) {
        cudaError_t e =
            cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
        if (e != cudaSuccess)
            return e;
    }
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3((unsigned)threads);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = s;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    return cudaLaunchKernelEx(&cfg, kernel, args...);
}

static inline unsigned cuda_ops_blocks(long long n, int threads)
{
    return (unsigned)((n + threads - 1) / threads);
}

#endif
