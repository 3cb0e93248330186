/* Private: planar YUV at any JPEG chroma subsampling (4:2:0, 4:2:2, 4:4:0,
 * 4:4:4, 4:1:1; grey) into NV12, the frame ring's format, on the GPU (for
 * io/jpeg_gpu.c: nvJPEG writes planar YUV). The luma is copied; each NV12
 * chroma sample is the rounded mean of the source chroma under its 2x2
 * luma block: (a + b + c + d + 2) >> 2 over the chroma sample of each of
 * the four luma pixels (edges clamped), which is the source sample itself
 * at 4:2:0 and the mean of the two or four covered samples at 4:2:2, 4:4:0
 * and 4:4:4. Grey gives chroma 128 (tests/io/test_jpeg_gpu.c checks the
 * rule on the CPU against the GPU).
 * The launcher enqueues and returns the launch's error; it neither
 * allocates nor synchronizes. */
#ifndef OMMA_VISION_CUDA_NV12_H
#define OMMA_VISION_CUDA_NV12_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A planar source: luma w x h; chroma cw x ch (0 x 0 for grey: u, v
 * unused). */
typedef struct vis_yuv_planes {
    const uint8_t *y, *u, *v;
    size_t y_pitch, u_pitch, v_pitch;
    int w, h, cw, ch;
} vis_yuv_planes;

/* src (device) -> dst_y / dst_uv (device, rows dst_pitch apart; the chroma
 * (h + 1) / 2 rows of 2 * ((w + 1) / 2) bytes). Errors: cudaErrorInvalidValue
 * for an empty or inconsistent source. */
cudaError_t vis_cuda_yuv_to_nv12(vis_yuv_planes src, uint8_t *dst_y, uint8_t *dst_uv,
                                 size_t dst_pitch, cudaStream_t stream);

#ifdef __cplusplus
}
#endif

#endif
