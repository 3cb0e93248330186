/* nvJPEG's loader and the GPU JPEG decoder's argument checks, on any
 * machine (CPU CI has neither a GPU nor nvJPEG): OMMA_NVJPEG names a
 * library that is not there, and loading fails with OMMA_ERR_UNSUPPORTED
 * naming it, the same on every call; opening a decoder without a device,
 * decoding without a decoder or data are OMMA_ERR_INVALID_ARG; close
 * accepts NULL. The fallback of decode auto to the CPU is in
 * test_cli_decode_jpeg.sh (it needs a device). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "gpu/nvjpeg.h"
#include "io/jpeg_gpu.h"
#include "testing.h"

static void missing_library_is_a_clear_error(void)
{
    CHECK_FAILS(gpu_nvjpeg_load(), OMMA_ERR_UNSUPPORTED, "/nonexistent/libnvjpeg.so.13");
    CHECK(strstr(omma_last_error(), "cannot be loaded") != NULL);
    /* Loaded once per process: the same answer again. */
    CHECK_FAILS(gpu_nvjpeg_load(), OMMA_ERR_UNSUPPORTED, "/nonexistent/libnvjpeg.so.13");
    CHECK(strcmp(gpu_nvjpeg_status_name(NVJPEG_STATUS_BAD_JPEG), "NVJPEG_STATUS_BAD_JPEG") == 0);
    CHECK(strcmp(gpu_nvjpeg_status_name((nvjpegStatus_t)99), "unknown nvJPEG status") == 0);
}

static void argument_checks(void)
{
    io_jpeg_gpu *d = (io_jpeg_gpu *)(uintptr_t)1;
    CHECK_FAILS(io_jpeg_gpu_open(NULL, &d), OMMA_ERR_INVALID_ARG, "device");
    CHECK(d == NULL);
    static const uint8_t soi[] = {0xff, 0xd8, 0xff, 0xd9};
    omma_frame f;
    memset(&f, 0xab, sizeof f);
    CHECK_FAILS(io_jpeg_gpu_decode(NULL, soi, sizeof soi, &f), OMMA_ERR_INVALID_ARG, "decoder");
    CHECK(f.width == 0 && f.planes[0] == NULL);
    CHECK(io_jpeg_gpu_give_back(NULL) == OMMA_OK);
    CHECK(!io_jpeg_gpu_failed(NULL));
    CHECK(strcmp(io_jpeg_gpu_backend(NULL), "none") == 0);
    CHECK(io_jpeg_gpu_stream(NULL) == NULL);
    io_jpeg_gpu_close(NULL);
}

int main(void)
{
    setenv("OMMA_NVJPEG", "/nonexistent/libnvjpeg.so.13", 1);
    RUN(missing_library_is_a_clear_error);
    RUN(argument_checks);
    return testing_finish();
}
