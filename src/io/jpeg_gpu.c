/* MJPEG frames decoded on the GPU with nvJPEG (jpeg_gpu.h says how). */
#include "io/jpeg_gpu.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/memory.h"
#include "gpu/nvjpeg.h"
#include "gpu/stream_pool.h"
#include "io/image_file.h"
#include "io/jpeg_tables.h"
#include "vision/cuda_nv12.h"

/* Rows of the NV12 output buffers are padded to this. */
#define PITCH_ALIGN 256

typedef struct slot {
    void *staging; /* pinned copy of the JPEG */
    size_t staging_bytes;
    CUdeviceptr nv12;
    size_t nv12_bytes;
    CUevent passed; /* recorded when the frame was given back */
    int used; /* passed was recorded */
} slot;

/* The GPU-hybrid path: nvJPEG's decoupled phases, each of two pinned
 * buffers reused once the copy from it has run. */
typedef struct hybrid {
    nvjpegHandle_t handle;
    nvjpegJpegDecoder_t decoder;
    nvjpegJpegState_t state;
    nvjpegBufferPinned_t pinned[2];
    CUevent pinned_done[2];
    int pinned_used[2];
    int next;
    nvjpegBufferDevice_t device;
    nvjpegJpegStream_t jpeg;
    nvjpegDecodeParams_t params;
} hybrid;

struct io_jpeg_gpu {
    omma_device *dev;
    CUstream stream;
    /* The NVJPG engines: batched decoding of one image (hw_handle NULL when
     * the library or the GPU has none). */
    nvjpegHandle_t hw_handle;
    nvjpegJpegState_t hw_state;
    nvjpegJpegStream_t hw_jpeg; /* for nvjpegDecodeBatchedSupported */
    int hw_ready; /* nvjpegDecodeBatchedInitialize done since the last failure */
    int hw_format_ok; /* the hardware takes the current format */
    hybrid hy; /* made on first need */
    int hy_made;
    const char *backend; /* of the last frame */
    /* The current format and its planar buffer (Y, then Cb, then Cr). */
    int w, h, cw, ch, css;
    int ph; /* rows of each chroma plane in the planar buffer */
    CUdeviceptr planes;
    size_t planes_bytes, y_pitch, c_pitch;
    size_t pitch; /* the NV12 outputs' rows */
    slot slots[IO_JPEG_GPU_SLOTS];
    int next; /* the slot the next frame goes to */
    int out; /* the slot handed out, -1 when none */
    int failed;
};

static int dev_malloc(void **p, size_t bytes)
{
    CUdeviceptr d = 0;
    if (gpu_cu.cuMemAlloc(&d, bytes ? bytes : 1) != CUDA_SUCCESS)
        return 1;
    *p = (void *)(uintptr_t)d;
    return 0;
}

static int dev_free(void *p)
{
    return p && gpu_cu.cuMemFree((CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS;
}

static int pinned_malloc(void **p, size_t bytes, unsigned int flags)
{
    /* cudaHostAlloc's flags are the driver's CU_MEMHOSTALLOC_* bits. */
    return gpu_cu.cuMemHostAlloc(p, bytes ? bytes : 1, flags) != CUDA_SUCCESS;
}

static int pinned_free(void *p)
{
    return p && gpu_cu.cuMemFreeHost(p) != CUDA_SUCCESS;
}

/* nvJPEG allocates through these in omma's context (current in every
 * call): never a context of its own. */
static nvjpegDevAllocator_t dev_allocator = {dev_malloc, dev_free};
static nvjpegPinnedAllocator_t pinned_allocator = {pinned_malloc, pinned_free};

static omma_status jfail(nvjpegStatus_t s, const char *call)
{
    omma_status st = s == NVJPEG_STATUS_ALLOCATOR_FAILURE ? OMMA_ERR_OUT_OF_MEMORY
                     : s == NVJPEG_STATUS_ARCH_MISMATCH   ? OMMA_ERR_UNSUPPORTED
                                                          : OMMA_ERR_CUDA;
    return OMMA_FAIL(st, "nvJPEG: %s: %s", call, gpu_nvjpeg_status_name(s));
}

#define JTRY(call)                                                                                 \
    do {                                                                                           \
        nvjpegStatus_t s_ = (call);                                                                \
        if (s_ != NVJPEG_STATUS_SUCCESS)                                                           \
            return jfail(s_, #call);                                                               \
    } while (0)

/* A failed decode call: the JPEG's fault (this frame only), or the GPU's
 * (the decoder cannot go on). nvJPEG may answer damaged data with
 * EXECUTION_FAILED or INTERNAL_ERROR too, so anything but an allocation
 * failure is the data's while the stream (the context) is healthy. */
static int data_fault(const io_jpeg_gpu *d, nvjpegStatus_t s)
{
    if (s == NVJPEG_STATUS_ALLOCATOR_FAILURE || s == NVJPEG_STATUS_NOT_INITIALIZED ||
        s == NVJPEG_STATUS_ARCH_MISMATCH)
        return 0;
    CUresult r = gpu_cu.cuStreamQuery(d->stream);
    return r == CUDA_SUCCESS || r == CUDA_ERROR_NOT_READY;
}

/* nvJPEG's answer for a JPEG it will not decode on this backend (the
 * other may). */
static int not_supported(nvjpegStatus_t s)
{
    return s == NVJPEG_STATUS_JPEG_NOT_SUPPORTED || s == NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED;
}

static omma_status make_hybrid(io_jpeg_gpu *d)
{
    hybrid *y = &d->hy;
    d->hy_made = 1;
    JTRY(gpu_jpeg.nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, &dev_allocator, &pinned_allocator, 0,
                                 &y->handle));
    JTRY(gpu_jpeg.nvjpegDecoderCreate(y->handle, NVJPEG_BACKEND_GPU_HYBRID, &y->decoder));
    JTRY(gpu_jpeg.nvjpegDecoderStateCreate(y->handle, y->decoder, &y->state));
    for (int i = 0; i < 2; i++) {
        JTRY(gpu_jpeg.nvjpegBufferPinnedCreate(y->handle, &pinned_allocator, &y->pinned[i]));
        OMMA_TRY(gpu_event_acquire(d->dev, GPU_EVENT_SYNC, &y->pinned_done[i]));
    }
    JTRY(gpu_jpeg.nvjpegBufferDeviceCreate(y->handle, &dev_allocator, &y->device));
    JTRY(gpu_jpeg.nvjpegStateAttachDeviceBuffer(y->state, y->device));
    JTRY(gpu_jpeg.nvjpegJpegStreamCreate(y->handle, &y->jpeg));
    JTRY(gpu_jpeg.nvjpegDecodeParamsCreate(y->handle, &y->params));
    JTRY(gpu_jpeg.nvjpegDecodeParamsSetOutputFormat(y->params, NVJPEG_OUTPUT_YUV));
    return OMMA_OK;
}

static void free_hybrid(io_jpeg_gpu *d)
{
    hybrid *y = &d->hy;
    if (y->params)
        gpu_jpeg.nvjpegDecodeParamsDestroy(y->params);
    if (y->jpeg)
        gpu_jpeg.nvjpegJpegStreamDestroy(y->jpeg);
    if (y->state)
        gpu_jpeg.nvjpegJpegStateDestroy(y->state);
    if (y->decoder)
        gpu_jpeg.nvjpegDecoderDestroy(y->decoder);
    if (y->device)
        gpu_jpeg.nvjpegBufferDeviceDestroy(y->device);
    for (int i = 0; i < 2; i++) {
        if (y->pinned[i])
            gpu_jpeg.nvjpegBufferPinnedDestroy(y->pinned[i]);
        if (y->pinned_done[i])
            gpu_event_release(d->dev, y->pinned_done[i]);
    }
    if (y->handle)
        gpu_jpeg.nvjpegDestroy(y->handle);
    memset(y, 0, sizeof *y);
}

/* The hardware backend, when nvJPEG and the GPU have it; a GPU without
 * NVJPG engines is not an error. */
static omma_status make_hardware(io_jpeg_gpu *d)
{
    nvjpegStatus_t s = gpu_jpeg.nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, &dev_allocator,
                                               &pinned_allocator, 0, &d->hw_handle);
    if (s != NVJPEG_STATUS_SUCCESS) {
        d->hw_handle = NULL;
        return s == NVJPEG_STATUS_ALLOCATOR_FAILURE ? jfail(s, "nvjpegCreateEx(hardware)")
                                                    : OMMA_OK;
    }
    JTRY(gpu_jpeg.nvjpegJpegStateCreate(d->hw_handle, &d->hw_state));
    JTRY(gpu_jpeg.nvjpegJpegStreamCreate(d->hw_handle, &d->hw_jpeg));
    return OMMA_OK;
}

static void release(io_jpeg_gpu *d)
{
    if (d->stream)
        (void)gpu_cu.cuStreamSynchronize(d->stream);
    if (d->hy_made)
        free_hybrid(d);
    if (d->hw_jpeg)
        gpu_jpeg.nvjpegJpegStreamDestroy(d->hw_jpeg);
    if (d->hw_state)
        gpu_jpeg.nvjpegJpegStateDestroy(d->hw_state);
    if (d->hw_handle)
        gpu_jpeg.nvjpegDestroy(d->hw_handle);
    for (int i = 0; i < IO_JPEG_GPU_SLOTS; i++) {
        slot *s = &d->slots[i];
        if (s->staging)
            gpu_host_free(d->dev, s->staging, s->staging_bytes);
        if (s->nv12)
            (void)gpu_mem_free(d->dev, s->nv12);
        if (s->passed)
            gpu_event_release(d->dev, s->passed);
    }
    if (d->planes)
        (void)gpu_mem_free(d->dev, d->planes);
    if (d->stream)
        gpu_stream_release(d->dev, d->stream);
}

void io_jpeg_gpu_close(io_jpeg_gpu *d)
{
    if (!d)
        return;
    omma_scope scope;
    if (omma_device_enter(d->dev, &scope) == OMMA_OK) {
        release(d);
        (void)omma_device_leave(&scope);
    }
    free(d);
}

omma_status io_jpeg_gpu_open(omma_device *dev, io_jpeg_gpu **out)
{
    if (out)
        *out = NULL;
    if (!dev || !out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "nvJPEG decoder: NULL %s", dev ? "out" : "device");
    OMMA_TRY(gpu_nvjpeg_load());
    io_jpeg_gpu *d = calloc(1, sizeof *d);
    if (!d)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "nvJPEG decoder state");
    d->dev = dev;
    d->out = -1;
    d->css = -2; /* no format yet */
    omma_scope scope;
    omma_status st = omma_device_enter(dev, &scope);
    if (st != OMMA_OK) {
        free(d);
        return st;
    }
    st = gpu_stream_acquire(dev, GPU_PRIORITY_NORMAL, &d->stream);
    for (int i = 0; i < IO_JPEG_GPU_SLOTS && st == OMMA_OK; i++)
        st = gpu_event_acquire(dev, GPU_EVENT_SYNC, &d->slots[i].passed);
    if (st == OMMA_OK)
        st = make_hardware(d);
    if (st == OMMA_OK && !d->hw_handle)
        st = make_hybrid(d); /* now: a GPU nvJPEG cannot use fails at open */
    d->backend = d->hw_handle ? "hardware" : "gpu-hybrid";
    omma_status left = omma_device_leave(&scope);
    if (st == OMMA_OK)
        st = left;
    if (st != OMMA_OK) {
        io_jpeg_gpu_close(d);
        return st;
    }
    *out = d;
    return OMMA_OK;
}

/* Buffers for a w x h frame of this subsampling (chroma cw x ch), made
 * again when the format changes; the old ones are freed in the stream's
 * order. */
static omma_status set_format(io_jpeg_gpu *d, const unsigned char *data, size_t size, int w, int h,
                              int cw, int ch, int css)
{
    if (w == d->w && h == d->h && cw == d->cw && ch == d->ch && css == d->css)
        return OMMA_OK;
    d->css = -2; /* no format until the buffers are made */
    /* Grey gets full-size chroma planes too: nvJPEG's YUV output may
     * write neutral chroma there (the kernel does not read them). */
    int pw = cw > 0 ? cw : w, ph = ch > 0 ? ch : h;
    size_t y_pitch = ((size_t)w + PITCH_ALIGN - 1) & ~(size_t)(PITCH_ALIGN - 1);
    size_t c_pitch = ((size_t)pw + PITCH_ALIGN - 1) & ~(size_t)(PITCH_ALIGN - 1);
    size_t planes = y_pitch * (size_t)h + 2 * c_pitch * (size_t)ph;
    size_t nv12 = y_pitch * (size_t)((h + 1) & ~1) + y_pitch * (size_t)((h + 1) / 2);
    if (planes > d->planes_bytes) {
        if (d->planes)
            OMMA_TRY(gpu_mem_free_async(d->dev, d->planes, d->stream));
        d->planes = 0;
        d->planes_bytes = 0;
        OMMA_TRY(gpu_mem_alloc_async(d->dev, planes, d->stream, &d->planes));
        d->planes_bytes = planes;
    }
    for (int i = 0; i < IO_JPEG_GPU_SLOTS; i++) {
        slot *s = &d->slots[i];
        if (nv12 <= s->nv12_bytes)
            continue;
        if (s->nv12)
            OMMA_TRY(gpu_mem_free_async(d->dev, s->nv12, d->stream));
        s->nv12 = 0;
        s->nv12_bytes = 0;
        OMMA_TRY(gpu_mem_alloc_async(d->dev, nv12, d->stream, &s->nv12));
        s->nv12_bytes = nv12;
    }
    d->w = w;
    d->h = h;
    d->cw = cw;
    d->ch = ch;
    d->ph = ph;
    d->css = css;
    d->y_pitch = y_pitch;
    d->c_pitch = c_pitch;
    d->pitch = y_pitch;
    d->hw_format_ok = 0;
    if (d->hw_handle) { /* does the hardware take this format? */
        int unsupported = 1;
        if (gpu_jpeg.nvjpegJpegStreamParse(d->hw_handle, data, size, 0, 0, d->hw_jpeg) ==
                NVJPEG_STATUS_SUCCESS &&
            gpu_jpeg.nvjpegDecodeBatchedSupported(d->hw_handle, d->hw_jpeg, &unsupported) ==
                NVJPEG_STATUS_SUCCESS)
            d->hw_format_ok = unsupported == 0;
    }
    return OMMA_OK;
}

/* The staging buffer of the next slot, at least bytes large, once the
 * stream has passed its last use. */
static omma_status take_slot(io_jpeg_gpu *d, size_t bytes, slot **out)
{
    slot *s = &d->slots[d->next];
    if (s->used) {
        CUresult r = gpu_cu.cuEventQuery(s->passed);
        if (r == CUDA_ERROR_NOT_READY)
            r = gpu_cu.cuEventSynchronize(s->passed);
        OMMA_TRY(OMMA_CK(r));
        s->used = 0;
    }
    if (bytes > s->staging_bytes) {
        size_t n = bytes + bytes / 4 + 4096; /* room for the next frames' growth */
        void *p = NULL;
        OMMA_TRY(gpu_host_alloc(d->dev, n, &p));
        if (s->staging)
            gpu_host_free(d->dev, s->staging, s->staging_bytes);
        s->staging = p;
        s->staging_bytes = n;
    }
    *out = s;
    return OMMA_OK;
}

/* Decodes on the NVJPG engines into the planar buffer: OMMA_OK, or a
 * refused JPEG (*refused: the nvJPEG status) with OMMA_OK returned, or a
 * failure. */
static omma_status decode_hardware(io_jpeg_gpu *d, const unsigned char *data, size_t size,
                                   nvjpegImage_t *img, nvjpegStatus_t *refused)
{
    *refused = NVJPEG_STATUS_SUCCESS;
    if (!d->hw_ready) {
        nvjpegStatus_t s = gpu_jpeg.nvjpegDecodeBatchedInitialize(d->hw_handle, d->hw_state, 1, 1,
                                                                  NVJPEG_OUTPUT_YUV);
        if (s != NVJPEG_STATUS_SUCCESS) {
            *refused = NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED;
            return OMMA_OK;
        }
        d->hw_ready = 1;
    }
    nvjpegStatus_t s = gpu_jpeg.nvjpegDecodeBatched(d->hw_handle, d->hw_state, &data, &size, img,
                                                    (gpu_nvjpeg_stream)d->stream);
    if (s == NVJPEG_STATUS_SUCCESS)
        return OMMA_OK;
    d->hw_ready = 0; /* a failed batch needs nvjpegDecodeBatchedInitialize again */
    if (!data_fault(d, s))
        return jfail(s, "nvjpegDecodeBatched");
    *refused = s;
    return OMMA_OK;
}

/* Decodes with Huffman decoding on the GPU (nvJPEG's decoupled phases). */
static omma_status decode_hybrid(io_jpeg_gpu *d, const unsigned char *data, size_t size,
                                 nvjpegImage_t *img, nvjpegStatus_t *refused)
{
    *refused = NVJPEG_STATUS_SUCCESS;
    if (!d->hy_made) {
        omma_status st = make_hybrid(d);
        if (st != OMMA_OK) {
            free_hybrid(d); /* hy_made stays: not tried again */
            return st;
        }
    }
    hybrid *y = &d->hy;
    if (!y->handle)
        return OMMA_FAIL(OMMA_ERR_CUDA, "nvJPEG: the GPU-hybrid decoder could not be made before");
    int i = y->next;
    if (y->pinned_used[i]) { /* the copy out of this pinned buffer must have run */
        OMMA_TRY(OMMA_CK(gpu_cu.cuEventSynchronize(y->pinned_done[i])));
        y->pinned_used[i] = 0;
    }
    JTRY(gpu_jpeg.nvjpegStateAttachPinnedBuffer(y->state, y->pinned[i]));
    nvjpegStatus_t s = gpu_jpeg.nvjpegJpegStreamParse(y->handle, data, size, 0, 0, y->jpeg);
    if (s == NVJPEG_STATUS_SUCCESS)
        s = gpu_jpeg.nvjpegDecodeJpegHost(y->handle, y->decoder, y->state, y->params, y->jpeg);
    if (s == NVJPEG_STATUS_SUCCESS)
        s = gpu_jpeg.nvjpegDecodeJpegTransferToDevice(y->handle, y->decoder, y->state, y->jpeg,
                                                      (gpu_nvjpeg_stream)d->stream);
    if (s == NVJPEG_STATUS_SUCCESS) {
        OMMA_TRY(OMMA_CK(gpu_cu.cuEventRecord(y->pinned_done[i], d->stream)));
        y->pinned_used[i] = 1;
        y->next ^= 1;
        s = gpu_jpeg.nvjpegDecodeJpegDevice(y->handle, y->decoder, y->state, img,
                                            (gpu_nvjpeg_stream)d->stream);
    }
    if (s == NVJPEG_STATUS_SUCCESS)
        return OMMA_OK;
    if (!data_fault(d, s))
        return jfail(s, "decoding a JPEG (GPU-hybrid)");
    *refused = s;
    return OMMA_OK;
}

static const char *css_name(int css)
{
    switch (css) {
    case NVJPEG_CSS_444:
        return "4:4:4";
    case NVJPEG_CSS_422:
        return "4:2:2";
    case NVJPEG_CSS_420:
        return "4:2:0";
    case NVJPEG_CSS_440:
        return "4:4:0";
    case NVJPEG_CSS_411:
        return "4:1:1";
    case NVJPEG_CSS_410:
        return "4:1:0";
    case NVJPEG_CSS_GRAY:
        return "grey";
    default:
        return "an unknown subsampling";
    }
}

/* The frame in slot s: from the staged JPEG to NV12. */
static omma_status decode_into(io_jpeg_gpu *d, slot *s, size_t size, omma_frame *f)
{
    const unsigned char *data = s->staging;
    int n = 0, widths[GPU_NVJPEG_MAX_COMPONENT] = {0}, heights[GPU_NVJPEG_MAX_COMPONENT] = {0};
    nvjpegChromaSubsampling_t css = NVJPEG_CSS_UNKNOWN;
    nvjpegHandle_t info = d->hw_handle ? d->hw_handle : d->hy.handle;
    nvjpegStatus_t js = gpu_jpeg.nvjpegGetImageInfo(info, data, size, &n, &css, widths, heights);
    if (js != NVJPEG_STATUS_SUCCESS)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "nvJPEG cannot read the JPEG's header (%zu bytes): %s",
                         size, gpu_nvjpeg_status_name(js));
    int w = widths[0], h = heights[0];
    if (w < 1 || h < 1 || w > IO_IMAGE_MAX_SIDE || h > IO_IMAGE_MAX_SIDE)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "a JPEG of %dx%d pixels (at most %d a side)", w, h,
                         IO_IMAGE_MAX_SIDE);
    int grey = n == 1 || css == NVJPEG_CSS_GRAY;
    if (!grey && (n != 3 || css == NVJPEG_CSS_UNKNOWN || css == NVJPEG_CSS_410V))
        return OMMA_FAIL(OMMA_ERR_FORMAT,
                         "a JPEG of %d components at %s, which omma does not "
                         "decode on the GPU (YCbCr or grey only)",
                         n, css_name(css));
    int cw = grey ? 0 : widths[1], ch = grey ? 0 : heights[1];
    if (!grey && (cw < 1 || ch < 1 || cw > w || ch > h || widths[2] != cw || heights[2] != ch))
        return OMMA_FAIL(OMMA_ERR_FORMAT,
                         "a JPEG whose chroma planes are %dx%d and %dx%d for %dx%d", cw, ch,
                         widths[2], heights[2], w, h);
    OMMA_TRY(set_format(d, data, size, w, h, cw, ch, grey ? NVJPEG_CSS_GRAY : (int)css));

    nvjpegImage_t img;
    memset(&img, 0, sizeof img);
    unsigned char *base = (unsigned char *)(uintptr_t)d->planes;
    img.channel[0] = base;
    img.pitch[0] = d->y_pitch;
    img.channel[1] = base + d->y_pitch * (size_t)h;
    img.channel[2] = img.channel[1] + d->c_pitch * (size_t)d->ph;
    img.pitch[1] = img.pitch[2] = d->c_pitch;
    /* The NVJPG engines when they take the format; a JPEG they refuse goes
     * to the GPU-hybrid decoder, and when that decodes it while the engines
     * said not supported (not damaged), the format stays there. */
    nvjpegStatus_t refused = NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED, by_hw = refused;
    if (d->hw_handle && d->hw_format_ok) {
        OMMA_TRY(decode_hardware(d, data, size, &img, &refused));
        by_hw = refused;
        if (refused == NVJPEG_STATUS_SUCCESS)
            d->backend = "hardware";
    }
    if (refused != NVJPEG_STATUS_SUCCESS) {
        OMMA_TRY(decode_hybrid(d, data, size, &img, &refused));
        if (refused == NVJPEG_STATUS_SUCCESS) {
            d->backend = "gpu-hybrid";
            if (d->hw_format_ok &&
                !(by_hw == NVJPEG_STATUS_BAD_JPEG || by_hw == NVJPEG_STATUS_INCOMPLETE_BITSTREAM))
                d->hw_format_ok = 0; /* this format goes to the GPU-hybrid decoder from now */
        } else if (not_supported(refused) && !not_supported(by_hw)) {
            refused = by_hw; /* the engines' reason says more */
        }
    }
    if (refused != NVJPEG_STATUS_SUCCESS)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "nvJPEG refused a %dx%d %s JPEG of %zu bytes: %s", w, h,
                         css_name(css), size, gpu_nvjpeg_status_name(refused));

    vis_yuv_planes src = {
        .y = img.channel[0],
        .u = img.channel[1],
        .v = img.channel[2],
        .y_pitch = img.pitch[0],
        .u_pitch = img.pitch[1],
        .v_pitch = img.pitch[2],
        .w = w,
        .h = h,
        .cw = cw,
        .ch = ch,
    };
    uint8_t *y = (uint8_t *)(uintptr_t)s->nv12;
    uint8_t *uv = y + d->pitch * (size_t)((h + 1) & ~1);
    cudaError_t ce = vis_cuda_yuv_to_nv12(src, y, uv, d->pitch, (cudaStream_t)d->stream);
    if (ce != cudaSuccess)
        return OMMA_FAIL(OMMA_ERR_CUDA, "nvJPEG: the NV12 conversion kernel: %s",
                         cudaGetErrorName(ce));
    memset(f, 0, sizeof *f);
    f->width = w;
    f->height = h;
    f->format = OMMA_PIXEL_NV12;
    f->memory = OMMA_MEMORY_DEVICE;
    f->planes[0] = y;
    f->planes[1] = uv;
    f->pitch[0] = f->pitch[1] = (int)d->pitch;
    return OMMA_OK;
}

omma_status io_jpeg_gpu_decode(io_jpeg_gpu *d, const uint8_t *data, size_t size, omma_frame *f)
{
    if (f)
        memset(f, 0, sizeof *f);
    if (!d || !data || !f)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "io_jpeg_gpu_decode: NULL %s",
                         !d      ? "decoder"
                         : !data ? "data"
                                 : "frame");
    if (size == 0 || size > IO_JPEG_GPU_MAX_BYTES)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "a JPEG of %zu bytes (1 to %u)", size,
                         IO_JPEG_GPU_MAX_BYTES);
    if (d->failed)
        return OMMA_FAIL(OMMA_ERR_CUDA, "nvJPEG: the decoder failed before");
    if (d->out >= 0)
        return OMMA_FAIL(OMMA_ERR_BUSY, "nvJPEG: a frame is still handed out (give it back)");
    omma_scope scope;
    OMMA_TRY(omma_device_enter(d->dev, &scope));
    size_t dht_at = io_jpeg_missing_dht_at(data, size), extra = 0;
    const uint8_t *dht = dht_at ? io_jpeg_std_dht(&extra) : NULL;
    slot *s = NULL;
    omma_status st = take_slot(d, size + extra, &s);
    if (st == OMMA_OK) {
        uint8_t *to = s->staging;
        if (extra) { /* the standard tables before the scan */
            memcpy(to, data, dht_at);
            memcpy(to + dht_at, dht, extra);
            memcpy(to + dht_at + extra, data + dht_at, size - dht_at);
        } else {
            memcpy(to, data, size);
        }
        st = decode_into(d, s, size + extra, f);
    }
    if (st == OMMA_OK) {
        gpu_count_h2d(d->dev, size); /* the compressed bytes are all that crosses PCIe */
        d->out = d->next;
        d->next = (d->next + 1) % IO_JPEG_GPU_SLOTS;
    } else if (st == OMMA_ERR_FORMAT && s) {
        /* A refused JPEG may have had copies out of its staging buffer
         * enqueued: the slot is reused once the stream has passed here. */
        if (gpu_cu.cuEventRecord(s->passed, d->stream) == CUDA_SUCCESS) {
            s->used = 1;
            d->next = (d->next + 1) % IO_JPEG_GPU_SLOTS;
        } else {
            d->failed = 1;
            st = OMMA_FAIL(OMMA_ERR_CUDA, "nvJPEG: the stream failed after a refused JPEG");
        }
    } else if (st != OMMA_ERR_FORMAT) {
        d->failed = 1;
    }
    omma_status left = omma_device_leave(&scope);
    return st != OMMA_OK ? st : left;
}

omma_status io_jpeg_gpu_give_back(io_jpeg_gpu *d)
{
    if (!d || d->out < 0)
        return OMMA_OK;
    slot *s = &d->slots[d->out];
    d->out = -1;
    omma_scope scope;
    OMMA_TRY(omma_device_enter(d->dev, &scope));
    omma_status st = OMMA_CK(gpu_cu.cuEventRecord(s->passed, d->stream));
    if (st == OMMA_OK)
        s->used = 1;
    else
        d->failed = 1;
    omma_status left = omma_device_leave(&scope);
    return st != OMMA_OK ? st : left;
}

int io_jpeg_gpu_failed(const io_jpeg_gpu *d)
{
    return d && d->failed;
}

const char *io_jpeg_gpu_backend(const io_jpeg_gpu *d)
{
    return d && d->backend ? d->backend : "none";
}

void *io_jpeg_gpu_stream(const io_jpeg_gpu *d)
{
    return d ? (void *)d->stream : NULL;
}

omma_status io_jpeg_gpu_wait(io_jpeg_gpu *d)
{
    return gpu_stream_wait(d->dev, d->stream);
}

omma_status io_jpeg_gpu_download(io_jpeg_gpu *d, const omma_frame *f, uint8_t *dst)
{
    return gpu_download_nv12(d->dev, f, dst, d->stream);
}
