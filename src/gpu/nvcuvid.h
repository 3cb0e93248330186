/* Private: NVIDIA's video decoder API (NVDEC's cuvid parser and decoder),
 * loaded at run time like the driver (driver.h).
 *
 * The types come from nv-codec-headers (Debian's libffmpeg-nvenc-dev,
 * header only); the library is the driver's libnvcuvid.so.1, opened with
 * dlopen on first use, so a machine without it (CI, build hosts) loads omma
 * fine and gets OMMA_ERR_UNSUPPORTED with a clear message. Built when CMake
 * found the headers (OMMA_HAVE_NVDEC). */
#ifndef OMMA_GPU_NVCUVID_H
#define OMMA_GPU_NVCUVID_H

#include <cuda.h> /* first: nv-codec-headers then take CUDA's own types */

#include <ffnvcodec/dynlink_nvcuvid.h>

#include "omma/status.h"

/* X(member, type, symbol): every entry point omma calls. */
#define GPU_NVCUVID_FUNCTIONS(X)                                                                   \
    X(cuvidGetDecoderCaps, tcuvidGetDecoderCaps, "cuvidGetDecoderCaps")                            \
    X(cuvidCreateDecoder, tcuvidCreateDecoder, "cuvidCreateDecoder")                               \
    X(cuvidDestroyDecoder, tcuvidDestroyDecoder, "cuvidDestroyDecoder")                            \
    X(cuvidDecodePicture, tcuvidDecodePicture, "cuvidDecodePicture")                               \
    X(cuvidGetDecodeStatus, tcuvidGetDecodeStatus, "cuvidGetDecodeStatus")                         \
    X(cuvidMapVideoFrame, tcuvidMapVideoFrame, "cuvidMapVideoFrame64")                             \
    X(cuvidUnmapVideoFrame, tcuvidUnmapVideoFrame, "cuvidUnmapVideoFrame64")                       \
    X(cuvidCreateVideoParser, tcuvidCreateVideoParser, "cuvidCreateVideoParser")                   \
    X(cuvidParseVideoData, tcuvidParseVideoData, "cuvidParseVideoData")                            \
    X(cuvidDestroyVideoParser, tcuvidDestroyVideoParser, "cuvidDestroyVideoParser")

typedef struct {
#define GPU_NVCUVID_MEMBER(member, type, symbol) type *member;
    GPU_NVCUVID_FUNCTIONS(GPU_NVCUVID_MEMBER)
#undef GPU_NVCUVID_MEMBER
} gpu_nvcuvid;

extern gpu_nvcuvid gpu_cuvid;

/* Loads libnvcuvid.so.1 once per process (later calls return the first
 * outcome). Errors: OMMA_ERR_UNSUPPORTED naming what is missing. */
omma_status gpu_nvcuvid_load(void);

#endif
