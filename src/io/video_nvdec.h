/* Private to video_file.c (builds with FFmpeg, CUDA and nv-codec-headers:
 * OMMA_HAVE_NVDEC): decoding on the GPU's NVDEC engines through NVIDIA's
 * video decoder API directly, on omma's own primary context.
 *
 * libavformat demuxes (video_file.c); the packets, in Annex B for H.264 and
 * HEVC (converted by annexb.c where the container holds avcC/hvcC),
 * go to NVIDIA's parser, whose callbacks create the decoder (once: a new
 * parser after a rewind or a reconnection finds the same format and keeps
 * it), start each picture's decode and queue the pictures in display order.
 * A picture is handed out only once cuvidGetDecodeStatus says it is
 * decoded: the thread polls (sleeping between polls, never spinning) instead
 * of blocking inside the driver's map call, which is where FFmpeg's hwaccel
 * spent most of a camera thread's CPU. The decoded surface is then mapped on
 * the decoder's stream (NVDEC's post-processing writes it into an output
 * surface: the ring's copy reads it there, ordered on the same stream) and
 * handed out as NV12 in device memory; a frame given back is unmapped once
 * the stream has passed the point where it was given back (an event). The
 * parser is fed only while no decoded picture waits, so a picture is mapped
 * before the parser can reuse its surface. With io_video_options'
 * decode_ahead, video_file.c sends the next picture's packets right after
 * a frame is mapped (the parser's display queue then holds it, so no
 * surface of a picture not yet mapped is reused): NVDEC decodes it while
 * the consumer paces and copies this frame, and the next receive finds it
 * decoded at its first status query, without sleeping for it. The
 * compressed bytes are counted as the device's host-to-device traffic.
 * Nothing here creates a context. */
#ifndef OMMA_IO_VIDEO_NVDEC_H
#define OMMA_IO_VIDEO_NVDEC_H

#include <libavcodec/avcodec.h>

#include "core/cpu_parts.h"
#include "io/video_file.h"

typedef struct io_nvdec io_nvdec;

/* Frames handed out that may still be read on the stream (the one handed
 * out and those given back since). */
#define IO_NVDEC_PENDING 4

/* Opens a decoder for the stream par (time_base: its packets' timestamps)
 * on dev's GPU, after asking NVDEC whether it decodes that codec, bit depth,
 * chroma format and size. cpu: where the calling thread's CPU time in the
 * filter, the parser, the submissions, the status queries, the sleeps, the
 * maps and the unmaps is added (NULL: not measured). Errors:
 * OMMA_ERR_UNSUPPORTED with the reason (no NVDEC for the codec, not 8-bit
 * 4:2:0, too large for this GPU's decoders, no libnvcuvid),
 * OMMA_ERR_OUT_OF_MEMORY, OMMA_ERR_CUDA. */
omma_status io_nvdec_open(omma_device *dev, const AVCodecParameters *par, AVRational time_base,
                          core_cpu_parts *cpu, io_nvdec **out);

/* Sends a demuxed packet (NULL: the end of the stream: the pictures still
 * queued come out, then io_nvdec_receive gives AVERROR_EOF). Returns 0 or
 * an FFmpeg error code: AVERROR(EAGAIN) while a decoded picture waits
 * (receive it first), AVERROR(ENOMEM), AVERROR_INVALIDDATA (the parser
 * refused the data: damage), AVERROR_EXTERNAL (the GPU failed, or the
 * stream changed format: io_nvdec_why says what; nothing more decodes). */
int io_nvdec_send(io_nvdec *d, const AVPacket *pkt);

/* The next picture in display order: 0 with *f (NV12, device memory,
 * decoded and mapped on io_nvdec_stream's order), *pts (in the stream's time
 * base, AV_NOPTS_VALUE when unknown) and *damaged (1: NVDEC concealed
 * errors in it); AVERROR(EAGAIN) when it needs more packets; AVERROR_EOF
 * after the end; AVERROR_INVALIDDATA for a picture NVDEC could not decode
 * (skipped); AVERROR_EXTERNAL as for send. The frame handed out before
 * must have been given back. */
int io_nvdec_receive(io_nvdec *d, omma_frame *f, int64_t *pts, int *damaged);

/* 1 when a picture waits for io_nvdec_receive (sending more packets is
 * refused until it is received); 0 when it needs packets. */
int io_nvdec_ready(const io_nvdec *d);

/* Gives back the frame last handed out: unmapped once the stream has passed
 * this point (waits for the oldest only when IO_NVDEC_PENDING are
 * pending). Errors: OMMA_ERR_CUDA. */
omma_status io_nvdec_give_back(io_nvdec *d);

/* Starts again from the next packet (a rewind, a reconnection; time_base:
 * the new packets', or {0, 0} for the same): a new parser; the decoder is
 * kept when the stream's format is the same. Frames handed out stay valid
 * until given back. Errors: those of io_nvdec_status, OMMA_ERR_CUDA. */
omma_status io_nvdec_restart(io_nvdec *d, AVRational time_base);

/* What the last AVERROR_EXTERNAL / AVERROR_INVALIDDATA was about, and the
 * status an AVERROR_EXTERNAL stands for: OMMA_ERR_UNSUPPORTED (a format
 * NVDEC or omma's pipeline does not take, found in the stream),
 * OMMA_ERR_FORMAT (the stream changed format), OMMA_ERR_CUDA. */
const char *io_nvdec_why(const io_nvdec *d);
omma_status io_nvdec_status(const io_nvdec *d);

/* The stream the frames are mapped on, as a CUstream. */
void *io_nvdec_stream(const io_nvdec *d);

/* Waits on the host until the frame handed out is ready. Errors:
 * OMMA_ERR_CUDA. */
omma_status io_nvdec_wait(io_nvdec *d);

/* Copies the NV12 device frame f into dst (packed rows of f->width bytes,
 * the chroma after the luma) and waits for the copy. Errors: OMMA_ERR_CUDA. */
omma_status io_nvdec_download(io_nvdec *d, const omma_frame *f, uint8_t *dst);

/* Waits for the stream, unmaps every frame, destroys the parser and the
 * decoder. Accepts NULL. */
void io_nvdec_close(io_nvdec *d);

#endif
