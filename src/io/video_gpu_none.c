/* GPU decoding in a build without CUDA: refused (video_gpu.h). */
#ifdef OMMA_HAVE_LIBAV

#include "io/video_gpu.h"

#include <stdio.h>

#include "core/error.h"

int io_gpu_can_decode(const AVCodec *codec, const AVCodecParameters *par, char *why, size_t size)
{
    (void)codec;
    (void)par;
    snprintf(why, size, "omma was built without CUDA (OMMA_CUDA=OFF)");
    return 0;
}

omma_status io_gpu_attach(AVCodecContext *dec, omma_device *dev, int required, io_video_gpu **out)
{
    (void)dec;
    (void)dev;
    (void)required;
    *out = NULL;
    return OMMA_FAIL(OMMA_ERR_NO_DEVICE,
                     "GPU decoding: omma was built without CUDA (OMMA_CUDA=OFF)");
}

int io_gpu_refused(const io_video_gpu *g, char *why, size_t size)
{
    (void)g;
    (void)why;
    (void)size;
    return 0;
}

void io_gpu_count_packet(io_video_gpu *g, size_t bytes)
{
    (void)g;
    (void)bytes;
}

omma_status io_gpu_hand_over(io_video_gpu *g, const AVFrame *fr, omma_frame *f)
{
    (void)g;
    (void)fr;
    (void)f;
    return OMMA_FAIL(OMMA_ERR_NO_DEVICE, "GPU decoding: omma was built without CUDA");
}

omma_status io_gpu_give_back(io_video_gpu *g, AVFrame *fr)
{
    (void)g;
    av_frame_unref(fr);
    return OMMA_OK;
}

omma_status io_gpu_wait(io_video_gpu *g)
{
    (void)g;
    return OMMA_FAIL(OMMA_ERR_NO_DEVICE, "GPU decoding: omma was built without CUDA");
}

omma_status io_gpu_download(io_video_gpu *g, const omma_frame *f, uint8_t *dst)
{
    (void)g;
    (void)f;
    (void)dst;
    return OMMA_FAIL(OMMA_ERR_NO_DEVICE, "GPU decoding: omma was built without CUDA");
}

void *io_gpu_stream(const io_video_gpu *g)
{
    (void)g;
    return NULL;
}

void io_gpu_detach(io_video_gpu *g)
{
    (void)g;
}

#endif
