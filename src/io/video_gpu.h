/* Private to video_file.c (OMMA_HAVE_LIBAV builds): decoding on the GPU's
 * NVDEC engines through FFmpeg's CUDA hardware acceleration (the nvdec
 * hwaccel), on omma's own primary context. FFmpeg's CUDA device context is
 * made over the context omma holds (never one of its own: the use-the-
 * primary-context flag would fail on omma's schedule flag) with a stream of
 * the device's pool; the decoder maps each decoded surface (NV12) and the
 * frame is handed out over it in device memory, with no copy. The consumer
 * reads it on io_gpu_stream (the frame's data is ready in that stream's
 * order); a frame given back is unmapped only once that stream has passed
 * the point where it was given back (an event, queried without waiting
 * while few frames are pending), so the consumer's copies never race the
 * unmapping. The compressed packets sent to the decoder are counted as the
 * device's host-to-device bytes: what crosses PCIe for a GPU-decoded frame.
 * Builds without CUDA have video_gpu_none.c: GPU decoding is refused. */
#ifndef OMMA_IO_VIDEO_GPU_H
#define OMMA_IO_VIDEO_GPU_H

#include <libavcodec/avcodec.h>

#include "io/video_file.h"

typedef struct io_video_gpu io_video_gpu;

/* Frames handed out that may still be read on the stream (the one handed
 * out and those given back since); FFmpeg's decoder gets this many extra
 * surfaces. */
#define IO_GPU_PENDING 4

/* 1 when this build, this FFmpeg and omma's pixel formats allow decoding
 * the stream on the GPU as far as can be told before decoding (FFmpeg has
 * a CUDA hwaccel for the codec; 8-bit 4:2:0, which NVDEC gives as NV12);
 * 0 with the reason in why otherwise. The decoder itself may still refuse
 * (NVDEC's caps: size, profile), see io_gpu_refused. */
int io_gpu_can_decode(const AVCodec *codec, const AVCodecParameters *par, char *why, size_t size);

/* Sets dec (allocated, not opened) up to decode on dev's GPU: the CUDA
 * device context over dev's context and a pooled stream, the pixel format
 * choice, IO_GPU_PENDING extra surfaces, one thread. required: 1 when a
 * refusal by the decoder is an error (decode gpu), 0 when it falls back to
 * software frames (decode auto). Errors: OMMA_ERR_NO_DEVICE (a build
 * without CUDA), OMMA_ERR_UNSUPPORTED (FFmpeg cannot load CUDA),
 * OMMA_ERR_OUT_OF_MEMORY, OMMA_ERR_CUDA. On failure *out is NULL and dec
 * is as it was. */
omma_status io_gpu_attach(AVCodecContext *dec, omma_device *dev, int required, io_video_gpu **out);

/* 1 once the decoder refused to decode on the GPU (it gives software
 * frames from then on, or none when required), with why (NVDEC's or
 * FFmpeg's words) in why. */
int io_gpu_refused(const io_video_gpu *g, char *why, size_t size);

/* Counts a compressed packet of `bytes` sent to the decoder. */
void io_gpu_count_packet(io_video_gpu *g, size_t bytes);

/* Points *f at a decoded CUDA frame (AV_PIX_FMT_CUDA over NV12) in device
 * memory: NV12, planes and pitches as mapped. Errors: OMMA_ERR_UNSUPPORTED
 * (a surface format other than NV12). */
omma_status io_gpu_hand_over(io_video_gpu *g, const AVFrame *fr, omma_frame *f);

/* Gives back the frame last handed out: moves its reference out of fr into
 * the pending queue behind an event on the stream, then unmaps those whose
 * events completed (waits for the oldest only when IO_GPU_PENDING are
 * pending). Errors: OMMA_ERR_CUDA. fr is empty on return either way. */
omma_status io_gpu_give_back(io_video_gpu *g, AVFrame *fr);

/* Waits on the host until the stream has passed everything enqueued on
 * it (the frame just handed out is decoded). Errors: OMMA_ERR_CUDA. */
omma_status io_gpu_wait(io_video_gpu *g);

/* Copies the NV12 device frame f into dst (packed: rows of f->width
 * bytes, the chroma after the luma) and waits for the copy. Errors:
 * OMMA_ERR_CUDA. */
omma_status io_gpu_download(io_video_gpu *g, const omma_frame *f, uint8_t *dst);

/* The stream the frames are decoded on, as a CUstream. */
void *io_gpu_stream(const io_video_gpu *g);

/* Waits for the stream, unmaps every pending frame and gives the stream
 * and events back. Call after the decoder is freed (it holds the CUDA
 * device context, not the stream). Accepts NULL. */
void io_gpu_detach(io_video_gpu *g);

#endif
