/* The ops the attention mesh (face_landmark_with_attention.tflite) adds:
 * MUL (one element per thread, either operand repeating), STRIDED_SLICE
 * (one output element per thread) and MediaPipe's three custom ops, written
 * from their public definitions (mediapipe/util/tflite/operations/, the .cc files,
 * version 2): Landmarks2TransformMatrix (one thread per item: a box over
 * at most 128 landmark pairs), TransformTensorBilinear (one output element
 * per thread) and TransformLandmarks (one landmark per thread). The
 * arithmetic is the CPU reference's (cpu_ops.c), in fp32 whatever the
 * storage precision. All tiny next to the convolutions. */
#include "engine/cuda_ops_device.h"

template <typename T>
__global__ void __launch_bounds__(CUDA_OPS_THREADS) mul_kernel(cuda_mul_args a)
{
    pdl_begin();
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= a.n)
        return;
    float v = ld(static_cast<const T *>(a.a) + i % a.a_period) *
              ld(static_cast<const T *>(a.b) + i % a.b_period);
    if (a.act == GR_ACT_RELU)
        v = fmaxf(v, 0.0f);
    else if (a.act == GR_ACT_RELU6)
        v = fminf(fmaxf(v, 0.0f), 6.0f);
    st(static_cast<T *>(a.y) + i, v);
}

extern "C" cudaError_t cuda_launch_mul(const cuda_mul_args *a, cudaStream_t s)
{
    if (a->n <= 0)
        return cudaSuccess;
    if (a->a_period < 1 || a->b_period < 1)
        return cudaErrorInvalidValue;
    unsigned blocks = cuda_ops_blocks(a->n, CUDA_OPS_THREADS);
    if (a->prec == CUDA_PREC_F16)
        return cuda_ops_start(mul_kernel<__half>, blocks, CUDA_OPS_THREADS, 0, s, *a);
    return cuda_ops_start(mul_kernel<float>, blocks, CUDA_OPS_THREADS, 0, s, *a);
}

template <typename T>
__global__ void __launch_bounds__(CUDA_OPS_THREADS) slice_kernel(cuda_slice_args a)
{
    pdl_begin();
    long long total = (long long)a.batch * a.out[0] * a.out[1] * a.out[2];
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total)
        return;
    long long t = idx;
    int k = (int)(t % a.out[2]);
    t /= a.out[2];
    int j = (int)(t % a.out[1]);
    t /= a.out[1];
    int i = (int)(t % a.out[0]);
    long long b = t / a.out[0];
    size_t src = (((size_t)b * a.in[0] + a.begin[0] + (size_t)i * a.stride[0]) * a.in[1] +
                  a.begin[1] + (size_t)j * a.stride[1]) *
                     a.in[2] +
                 a.begin[2] + (size_t)k * a.stride[2];
    st(static_cast<T *>(a.y) + idx, ld(static_cast<const T *>(a.x) + src));
}

extern "C" cudaError_t cuda_launch_strided_slice(const cuda_slice_args *a, cudaStream_t s)
{
    long long total = (long long)a->batch * a->out[0] * a->out[1] * a->out[2];
    if (total <= 0)
        return cudaSuccess;
    unsigned blocks = cuda_ops_blocks(total, CUDA_OPS_THREADS);
    if (a->prec == CUDA_PREC_F16)
        return cuda_ops_start(slice_kernel<__half>, blocks, CUDA_OPS_THREADS, 0, s, *a);
    return cuda_ops_start(slice_kernel<float>, blocks, CUDA_OPS_THREADS, 0, s, *a);
}

/* Row-major 4x4 product r = a * b (r may be a), summed in MediaPipe's order. */
static __device__ void mat4_mul(const float *a, const float *b, float *r)
{
    float t[16];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            float sum = 0;
            for (int k = 0; k < 4; k++)
                sum = __fadd_rn(sum, __fmul_rn(a[i * 4 + k], b[k * 4 + j]));
            t[i * 4 + j] = sum;
        }
    for (int i = 0; i < 16; i++)
        r[i] = t[i];
}

template <typename T> __global__ void __launch_bounds__(64) l2m_kernel(cuda_l2m_args a)
{
    pdl_begin();
    int b = blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= a.batch)
        return;
    const T *lm = static_cast<const T *>(a.x) + (size_t)b * a.landmarks * 3;
    float lx = ld(lm + 3 * a.left), ly = ld(lm + 3 * a.left + 1);
    float rx = ld(lm + 3 * a.right), ry = ld(lm + 3 * a.right + 1);
    float rot = a.target_rotation - atan2f(ry - ly, rx - lx);
    float cr = cosf(rot), sr = sinf(rot);
    float x0 = 0, x1 = 0, y0 = 0, y1 = 0;
    for (int k = 0; k < a.n_subset; k++)
        for (int j = 0; j < 2; j++) {
            const T *p = lm + 3 * a.subset[k][j];
            float px = ld(p), py = ld(p + 1);
            float x = __fadd_rn(__fmul_rn(cr, px), __fmul_rn(-sr, py));
            float y = __fadd_rn(__fmul_rn(sr, px), __fmul_rn(cr, py));
            bool first = k == 0 && j == 0;
            if (first || x > x1)
                x1 = x;
            if (first || y > y1)
                y1 = y;
            if (first || x < x0)
                x0 = x;
            if (first || y < y0)
                y0 = y;
        }
    float w = x1 - x0, h = y1 - y0;
    float mx = (x0 + x1) / 2, my = (y0 + y1) / 2;
    float ci = cosf(-rot), si = sinf(-rot);
    float cx = __fadd_rn(__fmul_rn(ci, mx), __fmul_rn(-si, my));
    float cy = __fadd_rn(__fmul_rn(si, mx), __fmul_rn(ci, my));
    float t[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    const float shift[16] = {1, 0, 0, cx, 0, 1, 0, cy, 0, 0, 1, 0, 0, 0, 0, 1};
    mat4_mul(t, shift, t);
    const float rotm[16] = {ci, -si, 0, 0, si, ci, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    mat4_mul(t, rotm, t);
    float sx = __fdiv_rn(__fmul_rn(a.scale_x, w), (float)a.out_w);
    float sy = __fdiv_rn(__fmul_rn(a.scale_y, h), (float)a.out_h);
    const float scale[16] = {sx, 0, 0, 0, 0, sy, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    mat4_mul(t, scale, t);
    const float shift2[16] = {
        1, 0, 0, -0.5f * (float)a.out_w, 0, 1, 0, -0.5f * (float)a.out_h, 0, 0, 1, 0, 0, 0, 0, 1};
    mat4_mul(t, shift2, t);
    T *y = static_cast<T *>(a.y) + (size_t)b * 16;
    for (int i = 0; i < 16; i++)
        st(y + i, t[i]);
}

extern "C" cudaError_t cuda_launch_landmarks_to_matrix(const cuda_l2m_args *a, cudaStream_t s)
{
    if (a->batch <= 0)
        return cudaSuccess;
    unsigned blocks = cuda_ops_blocks(a->batch, 64);
    if (a->prec == CUDA_PREC_F16)
        return cuda_ops_start(l2m_kernel<__half>, blocks, 64, 0, s, *a);
    return cuda_ops_start(l2m_kernel<float>, blocks, 64, 0, s, *a);
}

template <typename T>
__global__ void __launch_bounds__(CUDA_OPS_THREADS) tbil_kernel(cuda_tbil_args a)
{
    pdl_begin();
    long long total = (long long)a.batch * a.oh * a.ow * a.c;
    long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= total)
        return;
    int ch = (int)(idx % a.c);
    long long t = idx / a.c;
    int ox = (int)(t % a.ow);
    t /= a.ow;
    int oy = (int)(t % a.oh);
    int b = (int)(t / a.oh);
    const T *m = static_cast<const T *>(a.m) + (size_t)b * 16;
    float m0 = ld(m), m1 = ld(m + 1), m2 = ld(m + 2), m3 = ld(m + 3);
    float m4 = ld(m + 4), m5 = ld(m + 5), m6 = ld(m + 6), m7 = ld(m + 7);
    float x3 = __fsub_rn(__fadd_rn(__fadd_rn(m3, __fmul_rn(m0, 0.5f)), __fmul_rn(m1, 0.5f)), 0.5f);
    float y3 = __fsub_rn(__fadd_rn(__fadd_rn(m7, __fmul_rn(m4, 0.5f)), __fmul_rn(m5, 0.5f)), 0.5f);
    float tx = __fadd_rn(__fadd_rn(__fadd_rn(__fmul_rn(m0, (float)ox), __fmul_rn(m1, (float)oy)),
                                   __fmul_rn(m2, 0.0f)),
                         x3);
    float ty = __fadd_rn(__fadd_rn(__fadd_rn(__fmul_rn(m4, (float)ox), __fmul_rn(m5, (float)oy)),
                                   __fmul_rn(m6, 0.0f)),
                         y3);
    float v = 0;
    if (tx >= 0 && tx <= (float)(a.w - 1) && ty >= 0 && ty <= (float)(a.h - 1)) {
        float fx = floorf(tx), fy = floorf(ty);
        int x0 = (int)fx, y0 = (int)fy;
        float rx = tx - fx, ry = ty - fy;
        const T *xb = static_cast<const T *>(a.x) + (size_t)b * a.h * a.w * a.c;
        const T *q11 = xb + ((size_t)y0 * a.w + x0) * a.c + ch;
        bool x1ok = x0 + 1 < a.w, y1ok = y0 + 1 < a.h;
        float q = ld(q11);
        float qr = x1ok ? ld(q11 + a.c) : 0.0f;
        float qd = y1ok ? ld(q11 + (size_t)a.w * a.c) : 0.0f;
        float qrd = x1ok && y1ok ? ld(q11 + (size_t)a.w * a.c + a.c) : 0.0f;
        float upper = __fadd_rn(__fmul_rn(1.0f - rx, q), __fmul_rn(rx, qr));
        float lower = __fadd_rn(__fmul_rn(1.0f - rx, qd), __fmul_rn(rx, qrd));
        v = __fadd_rn(__fmul_rn(ry, lower), __fmul_rn(1.0f - ry, upper));
    }
    st(static_cast<T *>(a.y) + idx, v);
}

extern "C" cudaError_t cuda_launch_transform_bilinear(const cuda_tbil_args *a, cudaStream_t s)
{
    long long total = (long long)a->batch * a->oh * a->ow * a->c;
    if (total <= 0)
        return cudaSuccess;
    unsigned blocks = cuda_ops_blocks(total, CUDA_OPS_THREADS);
    if (a->prec == CUDA_PREC_F16)
        return cuda_ops_start(tbil_kernel<__half>, blocks, CUDA_OPS_THREADS, 0, s, *a);
    return cuda_ops_start(tbil_kernel<float>, blocks, CUDA_OPS_THREADS, 0, s, *a);
}

template <typename T>
__global__ void __launch_bounds__(CUDA_OPS_THREADS) tlm_kernel(cuda_tlm_args a)
{
    pdl_begin();
    int idx = blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= a.batch * a.landmarks)
        return;
    int b = idx / a.landmarks;
    const T *m = static_cast<const T *>(a.m) + (size_t)b * 16;
    const T *p = static_cast<const T *>(a.x) + (size_t)idx * a.dims;
    T *q = static_cast<T *>(a.y) + (size_t)idx * a.dims;
    float px = ld(p), py = ld(p + 1);
    st(q, __fadd_rn(__fadd_rn(__fadd_rn(__fmul_rn(ld(m), px), __fmul_rn(ld(m + 1), py)),
                              __fmul_rn(ld(m + 2), 0.0f)),
                    ld(m + 3)));
    st(q + 1, __fadd_rn(__fadd_rn(__fadd_rn(__fmul_rn(ld(m + 4), px), __fmul_rn(ld(m + 5), py)),
                                  __fmul_rn(ld(m + 6), 0.0f)),
                        ld(m + 7)));
    if (a.dims == 3)
        st(q + 2, ld(p + 2));
}

extern "C" cudaError_t cuda_launch_transform_landmarks(const cuda_tlm_args *a, cudaStream_t s)
{
    int total = a->batch * a->landmarks;
    if (total <= 0)
        return cudaSuccess;
    if (a->dims != 2 && a->dims != 3)
        return cudaErrorInvalidValue;
    unsigned blocks = cuda_ops_blocks(total, CUDA_OPS_THREADS);
    if (a->prec == CUDA_PREC_F16)
        return cuda_ops_start(tlm_kernel<__half>, blocks, CUDA_OPS_THREADS, 0, s, *a);
    return cuda_ops_start(tlm_kernel<float>, blocks, CUDA_OPS_THREADS, 0, s, *a);
}
