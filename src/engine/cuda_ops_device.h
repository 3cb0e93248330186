/* Private to the cuda_ops_*.cu files: element access in either storage
 * precision, 16-byte vector loads and stores, the fused epilogue. CUDA only. */
#ifndef OMMA_ENGINE_CUDA_OPS_DEVICE_H
#define OMMA_ENGINE_CUDA_OPS_DEVICE_H

#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "engine/cuda_ops.h"

#define CUDA_OPS_THREADS 256

static __device__ __forceinline__ float ld(const float *p) { return __ldg(p); }
static __device__ __forceinline__ float ld(const __half *p) { return __half2float(__ldg(p)); }
static __device__ __forceinline__ void st(float *p, float v) { *p = v; }
static __device__ __forceinline__ void st(__half *p, float v) { *p = __float2half_rn(v); }

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

static __device__ __forceinline__ void ld16(const __half *p, float *v)
{
    uint4 q = __ldg(reinterpret_cast<const uint4 *>(p));
    const __half2 *h = reinterpret_cast<const __half2 *>(&q);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 f = __half22float2(h[i]);
        v[2 * i] = f.x;
        v[2 * i + 1] = f.y;
    }
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

/* The activation of the fused epilogue; c is the channel (for PRELU). */
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

static inline unsigned cuda_ops_blocks(long long n, int threads)
{
    return (unsigned)((n + threads - 1) / threads);
}

#endif
