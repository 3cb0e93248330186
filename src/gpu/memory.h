/* Private: device memory, pinned staging memory and counted copies.
 *
 * Device buffers come from a per-device stream-ordered pool
 * (cuMemPoolCreate + cuMemAllocFromPoolAsync) whose release threshold is
 * "keep everything": after warm-up, allocation is a pool hit and never waits
 * for the driver (omma_device_trim_memory gives the reserve back). Every
 * host<->device copy omma makes goes through the wrappers below, which count
 * bytes and copies per device (omma_device_get_transfers).
 * All functions enter the device's scope themselves and are thread-safe. */
#ifndef OMMA_GPU_MEMORY_H
#define OMMA_GPU_MEMORY_H

#include <stddef.h>
#include <stdint.h>

#include "gpu/driver.h"
#include "omma/device.h"
#include "omma/face.h"

/* Stream-ordered: the buffer may be used by work queued on `stream` after
 * this call (other streams must wait for an event recorded after it), and
 * freed with gpu_mem_free_async on the stream that last used it.
 * Errors: OMMA_ERR_INVALID_ARG (0 bytes), OMMA_ERR_OUT_OF_MEMORY (the detail
 * names the device, the size and the CUDA call), OMMA_ERR_CUDA. */
omma_status gpu_mem_alloc_async(omma_device *dev, size_t bytes, CUstream stream,
                                CUdeviceptr *out);
omma_status gpu_mem_free_async(omma_device *dev, CUdeviceptr ptr, CUstream stream);

/* Ready for any stream when it returns (long-lived buffers: weights, rings).
 * gpu_mem_free needs all work using the buffer to be finished or ordered
 * before it by the caller. Free accepts 0. */
omma_status gpu_mem_alloc(omma_device *dev, size_t bytes, CUdeviceptr *out);
omma_status gpu_mem_free(omma_device *dev, CUdeviceptr ptr);

/* Pinned (page-locked, portable) host memory for staging uploads and
 * downloads. Free with the same size (it keeps the pinned-bytes count).
 * Errors: OMMA_ERR_INVALID_ARG, OMMA_ERR_OUT_OF_MEMORY, OMMA_ERR_CUDA. */
omma_status gpu_host_alloc(omma_device *dev, size_t bytes, void **out);
void gpu_host_free(omma_device *dev, void *ptr, size_t bytes);

/* Counted asynchronous copies on `stream` (bytes may be 0: no copy, not
 * counted). Host memory should be pinned for the copy to be asynchronous. */
omma_status gpu_copy_h2d_async(omma_device *dev, CUdeviceptr dst, const void *src, size_t bytes,
                               CUstream stream);
/* A pitched host image (rows of row_bytes, src_pitch apart) to a pitched
 * device image, as one counted copy of rows * row_bytes bytes. */
omma_status gpu_copy_h2d_2d_async(omma_device *dev, CUdeviceptr dst, size_t dst_pitch,
                                  const void *src, size_t src_pitch, size_t row_bytes,
                                  size_t rows, CUstream stream);
omma_status gpu_copy_d2h_async(omma_device *dev, void *dst, CUdeviceptr src, size_t bytes,
                               CUstream stream);
omma_status gpu_copy_d2d_async(omma_device *dev, CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                               CUstream stream);
/* A pitched device image to a pitched device image (a decoder's surface
 * into a ring slot), as one counted device-to-device copy. */
omma_status gpu_copy_d2d_2d_async(omma_device *dev, CUdeviceptr dst, size_t dst_pitch,
                                  CUdeviceptr src, size_t src_pitch, size_t row_bytes, size_t rows,
                                  CUstream stream);

/* Waits until the work queued on stream so far has run (the host waits). */
omma_status gpu_stream_wait(omma_device *dev, CUstream stream);
/* An NV12 frame in device memory (f->planes, f->pitch) copied to dst as
 * tight rows (Y, then the interleaved chroma at dst + width * height) on
 * stream, which is then waited on. Not counted: a download for a host-side
 * consumer, not frame traffic. */
omma_status gpu_download_nv12(omma_device *dev, const omma_frame *f, uint8_t *dst,
                              CUstream stream);

/* Counts bytes a library moved to the device on omma's behalf, outside the
 * wrappers above (the compressed video a GPU decoder reads): host-to-device
 * bytes and one copy. */
void gpu_count_h2d(omma_device *dev, size_t bytes);

#endif
