/* Private: MJPEG frames decoded on the GPU with nvJPEG (gpu/nvjpeg.h,
 * loaded at run time), on omma's primary context and the decoder's own
 * stream from the device's pool: nothing here creates a context.
 *
 * Each JPEG (a frame of an MJPEG stream: a V4L2 webcam's buffer, an HTTP
 * multipart part, an AVI/Matroska packet) is copied into pinned staging
 * memory, and only those compressed bytes cross PCIe (counted as the
 * device's host-to-device traffic). nvJPEG decodes it to planar YUV in
 * device memory: on the GPU's NVJPG engines (NVJPEG_BACKEND_HARDWARE,
 * batched decoding of one image) when the library creates that backend and
 * nvjpegDecodeBatchedSupported takes the stream's format, else with
 * Huffman decoding on the GPU (NVJPEG_BACKEND_GPU_HYBRID, nvJPEG's
 * decoupled phases). A kernel (vision/cuda_nv12.h) turns the planes into
 * NV12, the frame ring's format, in one of IO_JPEG_GPU_SLOTS output
 * buffers handed out in turn. Baseline JPEG, 4:2:0, 4:2:2,
 * 4:4:0, 4:4:4, 4:1:1 and grey; a JPEG of another size than the last
 * reallocates the buffers (stream-ordered); a JPEG without Huffman tables
 * (Motion JPEG's AVI1 form, many webcams) gets the standard ones
 * (io/jpeg_tables.h). Nothing waits on the host per
 * frame except for a staging buffer still being read (IO_JPEG_GPU_SLOTS
 * frames behind). A damaged JPEG is refused with OMMA_ERR_FORMAT and the
 * decoder goes on with the next. One thread at a time per decoder. */
#ifndef OMMA_IO_JPEG_GPU_H
#define OMMA_IO_JPEG_GPU_H

#include <stddef.h>
#include <stdint.h>

#include "omma/device.h"
#include "omma/face.h"
#include "omma/status.h"

typedef struct io_jpeg_gpu io_jpeg_gpu;

/* Output buffers handed out in turn (the one handed out and those given
 * back whose reads on the stream may still run). */
#define IO_JPEG_GPU_SLOTS 4

/* Largest JPEG accepted (bytes). */
#define IO_JPEG_GPU_MAX_BYTES (64u << 20)

/* Opens a decoder on dev's GPU. Errors: OMMA_ERR_INVALID_ARG (NULL dev or
 * out), OMMA_ERR_UNSUPPORTED (nvJPEG cannot be loaded or refuses this GPU:
 * the message says which), OMMA_ERR_OUT_OF_MEMORY, OMMA_ERR_CUDA. */
omma_status io_jpeg_gpu_open(omma_device *dev, io_jpeg_gpu **out);

/* Decodes one JPEG (host memory, size bytes) into *f: NV12 in device
 * memory, ready in io_jpeg_gpu_stream's order; the frame handed out before
 * must have been given back. Errors: OMMA_ERR_INVALID_ARG (NULL, 0 bytes,
 * over IO_JPEG_GPU_MAX_BYTES), OMMA_ERR_FORMAT (a damaged JPEG or a kind
 * nvJPEG does not decode: this frame only, the next may decode),
 * OMMA_ERR_BUSY (a frame still handed out), OMMA_ERR_OUT_OF_MEMORY,
 * OMMA_ERR_CUDA (the decoder is unusable: io_jpeg_gpu_failed). */
omma_status io_jpeg_gpu_decode(io_jpeg_gpu *d, const uint8_t *data, size_t size, omma_frame *f);

/* Gives back the frame last handed out: its buffer is reused once the
 * stream has passed this point. Errors: OMMA_ERR_CUDA. */
omma_status io_jpeg_gpu_give_back(io_jpeg_gpu *d);

/* 1 once a failure left the decoder unusable (a CUDA error). */
int io_jpeg_gpu_failed(const io_jpeg_gpu *d);

/* Which nvJPEG backend decoded the last frame ("hardware", "gpu-hybrid";
 * before the first: the one it will try first). */
const char *io_jpeg_gpu_backend(const io_jpeg_gpu *d);

/* The stream the frames are decoded on, as a CUstream. */
void *io_jpeg_gpu_stream(const io_jpeg_gpu *d);

/* Waits on the host until the frame handed out is decoded. Errors:
 * OMMA_ERR_CUDA. */
omma_status io_jpeg_gpu_wait(io_jpeg_gpu *d);

/* Copies the NV12 device frame f (handed out by d) into dst (packed rows of
 * f->width bytes, the chroma after the luma) and waits. Errors:
 * OMMA_ERR_CUDA. */
omma_status io_jpeg_gpu_download(io_jpeg_gpu *d, const omma_frame *f, uint8_t *dst);

/* Waits for the stream and frees everything. Accepts NULL. */
void io_jpeg_gpu_close(io_jpeg_gpu *d);

#endif
