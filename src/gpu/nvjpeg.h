/* Private: NVIDIA's JPEG decoder library (nvJPEG), loaded at run time like
 * NVML and libnvcuvid (nvml.c, nvcuvid.c).
 *
 * The build machines have no nvJPEG headers, so the subset omma calls is
 * declared here from NVIDIA's nvJPEG documentation, with its C ABI: status
 * and enum values as documented (nvjpegStatus_t, nvjpegBackend_t,
 * nvjpegChromaSubsampling_t, nvjpegOutputFormat_t), nvjpegImage_t's layout
 * (NVJPEG_MAX_COMPONENT = 4 channel pointers, then 4 size_t pitches), the
 * allocators' two function pointers each, opaque handles as pointers. The
 * library is libnvjpeg.so.13 (CUDA 13), else libnvjpeg.so.12, else
 * libnvjpeg.so, on the loader's path, then in the library folder of the
 * CUDA toolkit omma was built with; the environment variable OMMA_NVJPEG
 * names another file instead (tests use it to check the failure path).
 * Built with CUDA (OMMA_HAVE_NVJPEG). */
#ifndef OMMA_GPU_NVJPEG_H
#define OMMA_GPU_NVJPEG_H

#include <stddef.h>

#include <cuda.h>

#include "omma/status.h"

#define GPU_NVJPEG_MAX_COMPONENT 4

typedef enum {
    NVJPEG_STATUS_SUCCESS = 0,
    NVJPEG_STATUS_NOT_INITIALIZED = 1,
    NVJPEG_STATUS_INVALID_PARAMETER = 2,
    NVJPEG_STATUS_BAD_JPEG = 3,
    NVJPEG_STATUS_JPEG_NOT_SUPPORTED = 4,
    NVJPEG_STATUS_ALLOCATOR_FAILURE = 5,
    NVJPEG_STATUS_EXECUTION_FAILED = 6,
    NVJPEG_STATUS_ARCH_MISMATCH = 7,
    NVJPEG_STATUS_INTERNAL_ERROR = 8,
    NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED = 9,
    NVJPEG_STATUS_INCOMPLETE_BITSTREAM = 10
} nvjpegStatus_t;

typedef enum {
    NVJPEG_CSS_444 = 0,
    NVJPEG_CSS_422 = 1,
    NVJPEG_CSS_420 = 2,
    NVJPEG_CSS_440 = 3,
    NVJPEG_CSS_411 = 4,
    NVJPEG_CSS_410 = 5,
    NVJPEG_CSS_GRAY = 6,
    NVJPEG_CSS_410V = 7,
    NVJPEG_CSS_UNKNOWN = -1
} nvjpegChromaSubsampling_t;

typedef enum {
    NVJPEG_OUTPUT_UNCHANGED = 0,
    NVJPEG_OUTPUT_YUV = 1, /* planar Y, Cb, Cr at the stream's subsampling */
    NVJPEG_OUTPUT_Y = 2
} nvjpegOutputFormat_t;

typedef enum {
    NVJPEG_BACKEND_DEFAULT = 0,
    NVJPEG_BACKEND_HYBRID = 1, /* Huffman decoding on the CPU */
    NVJPEG_BACKEND_GPU_HYBRID = 2, /* Huffman decoding on the GPU */
    NVJPEG_BACKEND_HARDWARE = 3, /* the NVJPG engines (A100, H100...): batched decoding */
    NVJPEG_BACKEND_GPU_HYBRID_DEVICE = 4,
    NVJPEG_BACKEND_HARDWARE_DEVICE = 5
} nvjpegBackend_t;

typedef struct {
    unsigned char *channel[GPU_NVJPEG_MAX_COMPONENT];
    size_t pitch[GPU_NVJPEG_MAX_COMPONENT];
} nvjpegImage_t;

typedef int (*tDevMalloc)(void **, size_t);
typedef int (*tDevFree)(void *);
typedef int (*tPinnedMalloc)(void **, size_t, unsigned int flags);
typedef int (*tPinnedFree)(void *);

typedef struct {
    tDevMalloc dev_malloc;
    tDevFree dev_free;
} nvjpegDevAllocator_t;

typedef struct {
    tPinnedMalloc pinned_malloc;
    tPinnedFree pinned_free;
} nvjpegPinnedAllocator_t;

typedef struct nvjpegHandle *nvjpegHandle_t;
typedef struct nvjpegJpegState *nvjpegJpegState_t;
typedef struct nvjpegBufferPinned *nvjpegBufferPinned_t;
typedef struct nvjpegBufferDevice *nvjpegBufferDevice_t;
typedef struct nvjpegJpegStream *nvjpegJpegStream_t;
typedef struct nvjpegDecodeParams *nvjpegDecodeParams_t;
typedef struct nvjpegJpegDecoder *nvjpegJpegDecoder_t;
typedef struct CUstream_st *gpu_nvjpeg_stream; /* cudaStream_t: the driver's CUstream */

typedef nvjpegStatus_t t_nvjpegCreateEx(nvjpegBackend_t backend, nvjpegDevAllocator_t *dev_alloc,
                                        nvjpegPinnedAllocator_t *pinned_alloc, unsigned int flags,
                                        nvjpegHandle_t *handle);
typedef nvjpegStatus_t t_nvjpegDestroy(nvjpegHandle_t handle);
typedef nvjpegStatus_t t_nvjpegJpegStateCreate(nvjpegHandle_t handle, nvjpegJpegState_t *state);
typedef nvjpegStatus_t t_nvjpegJpegStateDestroy(nvjpegJpegState_t state);
typedef nvjpegStatus_t t_nvjpegGetImageInfo(nvjpegHandle_t handle, const unsigned char *data,
                                            size_t length, int *components,
                                            nvjpegChromaSubsampling_t *subsampling, int *widths,
                                            int *heights);
typedef nvjpegStatus_t t_nvjpegDecodeBatchedInitialize(nvjpegHandle_t handle,
                                                       nvjpegJpegState_t state, int batch_size,
                                                       int max_cpu_threads,
                                                       nvjpegOutputFormat_t output_format);
typedef nvjpegStatus_t t_nvjpegDecodeBatched(nvjpegHandle_t handle, nvjpegJpegState_t state,
                                             const unsigned char *const *data,
                                             const size_t *lengths, nvjpegImage_t *destinations,
                                             gpu_nvjpeg_stream stream);
typedef nvjpegStatus_t t_nvjpegDecodeBatchedSupported(nvjpegHandle_t handle,
                                                      nvjpegJpegStream_t jpeg_stream,
                                                      int *is_supported);
typedef nvjpegStatus_t t_nvjpegBufferPinnedCreate(nvjpegHandle_t handle,
                                                  nvjpegPinnedAllocator_t *pinned_alloc,
                                                  nvjpegBufferPinned_t *buffer);
typedef nvjpegStatus_t t_nvjpegBufferPinnedDestroy(nvjpegBufferPinned_t buffer);
typedef nvjpegStatus_t t_nvjpegBufferDeviceCreate(nvjpegHandle_t handle,
                                                  nvjpegDevAllocator_t *dev_alloc,
                                                  nvjpegBufferDevice_t *buffer);
typedef nvjpegStatus_t t_nvjpegBufferDeviceDestroy(nvjpegBufferDevice_t buffer);
typedef nvjpegStatus_t t_nvjpegStateAttachPinnedBuffer(nvjpegJpegState_t state,
                                                       nvjpegBufferPinned_t buffer);
typedef nvjpegStatus_t t_nvjpegStateAttachDeviceBuffer(nvjpegJpegState_t state,
                                                       nvjpegBufferDevice_t buffer);
typedef nvjpegStatus_t t_nvjpegJpegStreamCreate(nvjpegHandle_t handle,
                                                nvjpegJpegStream_t *jpeg_stream);
typedef nvjpegStatus_t t_nvjpegJpegStreamDestroy(nvjpegJpegStream_t jpeg_stream);
typedef nvjpegStatus_t t_nvjpegJpegStreamParse(nvjpegHandle_t handle, const unsigned char *data,
                                               size_t length, int save_metadata, int save_stream,
                                               nvjpegJpegStream_t jpeg_stream);
typedef nvjpegStatus_t t_nvjpegDecodeParamsCreate(nvjpegHandle_t handle,
                                                  nvjpegDecodeParams_t *params);
typedef nvjpegStatus_t t_nvjpegDecodeParamsDestroy(nvjpegDecodeParams_t params);
typedef nvjpegStatus_t t_nvjpegDecodeParamsSetOutputFormat(nvjpegDecodeParams_t params,
                                                           nvjpegOutputFormat_t output_format);
typedef nvjpegStatus_t t_nvjpegDecoderCreate(nvjpegHandle_t handle, nvjpegBackend_t backend,
                                             nvjpegJpegDecoder_t *decoder);
typedef nvjpegStatus_t t_nvjpegDecoderDestroy(nvjpegJpegDecoder_t decoder);
typedef nvjpegStatus_t t_nvjpegDecoderStateCreate(nvjpegHandle_t handle,
                                                  nvjpegJpegDecoder_t decoder,
                                                  nvjpegJpegState_t *state);
typedef nvjpegStatus_t t_nvjpegDecodeJpegHost(nvjpegHandle_t handle, nvjpegJpegDecoder_t decoder,
                                              nvjpegJpegState_t state, nvjpegDecodeParams_t params,
                                              nvjpegJpegStream_t jpeg_stream);
typedef nvjpegStatus_t t_nvjpegDecodeJpegTransferToDevice(nvjpegHandle_t handle,
                                                          nvjpegJpegDecoder_t decoder,
                                                          nvjpegJpegState_t state,
                                                          nvjpegJpegStream_t jpeg_stream,
                                                          gpu_nvjpeg_stream stream);
typedef nvjpegStatus_t t_nvjpegDecodeJpegDevice(nvjpegHandle_t handle, nvjpegJpegDecoder_t decoder,
                                                nvjpegJpegState_t state, nvjpegImage_t *destination,
                                                gpu_nvjpeg_stream stream);

/* X(name): every entry point omma calls (each t_<name>). */
#define GPU_NVJPEG_FUNCTIONS(X)                                                                    \
    X(nvjpegCreateEx)                                                                              \
    X(nvjpegDestroy)                                                                               \
    X(nvjpegJpegStateCreate)                                                                       \
    X(nvjpegJpegStateDestroy)                                                                      \
    X(nvjpegGetImageInfo)                                                                          \
    X(nvjpegDecodeBatchedInitialize)                                                               \
    X(nvjpegDecodeBatched)                                                                         \
    X(nvjpegDecodeBatchedSupported)                                                                \
    X(nvjpegBufferPinnedCreate)                                                                    \
    X(nvjpegBufferPinnedDestroy)                                                                   \
    X(nvjpegBufferDeviceCreate)                                                                    \
    X(nvjpegBufferDeviceDestroy)                                                                   \
    X(nvjpegStateAttachPinnedBuffer)                                                               \
    X(nvjpegStateAttachDeviceBuffer)                                                               \
    X(nvjpegJpegStreamCreate)                                                                      \
    X(nvjpegJpegStreamDestroy)                                                                     \
    X(nvjpegJpegStreamParse)                                                                       \
    X(nvjpegDecodeParamsCreate)                                                                    \
    X(nvjpegDecodeParamsDestroy)                                                                   \
    X(nvjpegDecodeParamsSetOutputFormat)                                                           \
    X(nvjpegDecoderCreate)                                                                         \
    X(nvjpegDecoderDestroy)                                                                        \
    X(nvjpegDecoderStateCreate)                                                                    \
    X(nvjpegDecodeJpegHost)                                                                        \
    X(nvjpegDecodeJpegTransferToDevice)                                                            \
    X(nvjpegDecodeJpegDevice)

typedef struct {
#define GPU_NVJPEG_MEMBER(name) t_##name *name;
    GPU_NVJPEG_FUNCTIONS(GPU_NVJPEG_MEMBER)
#undef GPU_NVJPEG_MEMBER
} gpu_nvjpeg;

extern gpu_nvjpeg gpu_jpeg;

/* Loads nvJPEG once per process (later calls return the first outcome).
 * Errors: OMMA_ERR_UNSUPPORTED naming the library and what is missing. */
omma_status gpu_nvjpeg_load(void);

/* The name of an nvjpegStatus_t ("NVJPEG_STATUS_BAD_JPEG"). */
const char *gpu_nvjpeg_status_name(nvjpegStatus_t s);

#endif
