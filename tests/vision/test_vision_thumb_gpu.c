/* The live view's thumbnail kernel (vis_cuda_thumb) against the CPU
 * reference (vis_thumb_ref), on the astronaut photo in every pixel format
 * with padded rows, at the grid's and the large view's sizes and an odd
 * one: the same bytes within 1 (float rounding). Skips (77) without a GPU. */
#include <stdlib.h>

#include "gpu/check.h"
#include "gpu/driver.h"
#include "gpu/gpu_testing.h"
#include "support/png_image.h"
#include "vision/cuda_vision.h"
#include "vision/thumb.h"
#include "vision_frames.h"

static void test_formats(void)
{
    gpu_test_require_device();
    rgb_image img;
    REQUIRE_OK(rgb_image_load_png(OMMA_TESTDATA_DIR "/astronaut.png", &img));
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    omma_scope scope;
    REQUIRE_OK(omma_device_enter(dev, &scope));
    const int sides[] = {320, 97, 640};
    for (int f = 0; f < OMMA_PIXEL_FORMAT_COUNT; f++) {
        vision_frame b;
        REQUIRE(vision_frame_build(&img, (omma_pixel_format)f, &b));
        /* The planes, pitch and all, into device memory. */
        omma_frame d = b.f;
        CUdeviceptr planes[3] = {0, 0, 0};
        for (int p = 0; p < 3; p++) {
            size_t bytes = (size_t)vis_frame_plane_rows(&b.f, p) * (size_t)b.f.pitch[p];
            if (!bytes)
                continue;
            REQUIRE(gpu_cu.cuMemAlloc(&planes[p], bytes) == CUDA_SUCCESS);
            REQUIRE(gpu_cu.cuMemcpyHtoDAsync(planes[p], b.f.planes[p], bytes, 0) == CUDA_SUCCESS);
            d.planes[p] = (const uint8_t *)planes[p];
        }
        d.memory = OMMA_MEMORY_DEVICE;
        for (size_t k = 0; k < sizeof sides / sizeof sides[0]; k++) {
            int tw, th;
            vis_thumb_size(img.width, img.height, sides[k], &tw, &th);
            size_t bytes = (size_t)tw * th * 3;
            uint8_t *want = malloc(bytes), *got = malloc(bytes);
            CUdeviceptr out = 0;
            REQUIRE(want && got);
            REQUIRE_OK(vis_thumb_ref(&b.f, tw, th, want));
            REQUIRE(gpu_cu.cuMemAlloc(&out, bytes) == CUDA_SUCCESS);
            REQUIRE_OK(OMMA_CK(vis_cuda_thumb(d, tw, th, (uint8_t *)out, 0)));
            REQUIRE(gpu_cu.cuCtxSynchronize() == CUDA_SUCCESS);
            REQUIRE(gpu_cu.cuMemcpyDtoHAsync(got, out, bytes, 0) == CUDA_SUCCESS);
            REQUIRE(gpu_cu.cuCtxSynchronize() == CUDA_SUCCESS);
            int worst = 0;
            for (size_t i = 0; i < bytes; i++) {
                int diff = abs(got[i] - want[i]);
                worst = diff > worst ? diff : worst;
            }
            fprintf(stderr, "  format %d, %dx%d: max |gpu - cpu| %d\n", f, tw, th, worst);
            CHECK(worst <= 1);
            gpu_cu.cuMemFree(out);
            free(want);
            free(got);
        }
        for (int p = 0; p < 3; p++)
            if (planes[p])
                gpu_cu.cuMemFree(planes[p]);
        vision_frame_free(&b);
    }
    omma_frame none = {0};
    CHECK(OMMA_CK(vis_cuda_thumb(none, 0, 4, NULL, 0)) != OMMA_OK); /* a zero size */
    omma_device_leave(&scope);
    omma_device_close(dev);
    rgb_image_free(&img);
}

int main(void)
{
    RUN(test_formats);
    return testing_finish();
}
