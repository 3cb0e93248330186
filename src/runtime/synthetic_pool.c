/* The pool of synthetic frames (synthetic_pool.h): rendered on the host by
 * the synthetic camera, then kept packed in pinned or device memory. */
#include "runtime/synthetic_pool.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/memory.h"
#include "gpu/stream_pool.h"
#include "vision/frame.h"

struct rt_synthetic_pool {
    omma_device *dev;
    omma_memory memory;
    int frames, width, height;
    size_t frame_bytes;
    void *host; /* pinned, frames * frame_bytes (OMMA_MEMORY_HOST) */
    CUdeviceptr device; /* frames * frame_bytes (OMMA_MEMORY_DEVICE) */
    omma_box *truth;
};

void rt_synthetic_pool_destroy(rt_synthetic_pool *pool)
{
    if (!pool)
        return;
    if (pool->host)
        gpu_host_free(pool->dev, pool->host, pool->frame_bytes * (size_t)pool->frames);
    (void)gpu_mem_free(pool->dev, pool->device);
    free(pool->truth);
    free(pool);
}

/* Frame k rendered by the camera, packed into the pool. */
static omma_status render(rt_synthetic_pool *pool, rt_synthetic *cam, int k, uint8_t *staging,
                          CUstream stream)
{
    omma_frame f;
    double t;
    OMMA_TRY(rt_synthetic_frame(cam, k, &f, &t, &pool->truth[k]));
    uint8_t *to = pool->memory == OMMA_MEMORY_HOST
                      ? (uint8_t *)pool->host + (size_t)k * pool->frame_bytes
                      : staging;
    for (int p = 0; p < 2; p++) {
        size_t row = (size_t)vis_frame_row_bytes(&f, p), rows = (size_t)vis_frame_plane_rows(&f, p);
        for (size_t y = 0; y < rows; y++)
            memcpy(to + y * row, f.planes[p] + y * (size_t)f.pitch[p], row);
        to += row * rows;
    }
    if (pool->memory == OMMA_MEMORY_HOST)
        return OMMA_OK;
    OMMA_TRY(gpu_copy_h2d_async(pool->dev, pool->device + (CUdeviceptr)k * pool->frame_bytes,
                                staging, pool->frame_bytes, stream));
    return OMMA_CK(gpu_cu.cuStreamSynchronize(stream)); /* staging is reused */
}

static omma_status fill(rt_synthetic_pool *pool, const io_image *photo,
                        const rt_synthetic_options *opt)
{
    rt_synthetic_options o = *opt;
    o.period_s = pool->frames / o.fps;
    rt_synthetic *cam = NULL;
    OMMA_TRY(rt_synthetic_create(photo, &o, &cam));
    size_t total = pool->frame_bytes * (size_t)pool->frames;
    uint8_t *staging = NULL;
    omma_status st = OMMA_OK;
    if (pool->memory == OMMA_MEMORY_HOST) {
        st = gpu_host_alloc(pool->dev, total, &pool->host);
    } else {
        st = gpu_mem_alloc(pool->dev, total, &pool->device);
        staging = malloc(pool->frame_bytes);
        if (st == OMMA_OK && !staging)
            st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "synthetic pool: staging");
    }
    if (st == OMMA_OK) {
        omma_scope scope;
        st = omma_device_enter(pool->dev, &scope);
        if (st == OMMA_OK) {
            CUstream stream = NULL;
            st = gpu_stream_acquire(pool->dev, GPU_PRIORITY_LOW, &stream);
            for (int k = 0; k < pool->frames && st == OMMA_OK; k++)
                st = render(pool, cam, k, staging, stream);
            gpu_stream_release(pool->dev, stream);
            (void)omma_device_leave(&scope);
        }
    }
    free(staging);
    rt_synthetic_destroy(cam);
    return st;
}

omma_status rt_synthetic_pool_create(omma_device *dev, const io_image *photo,
                                     const rt_synthetic_options *opt, int frames,
                                     omma_memory memory, rt_synthetic_pool **out)
{
    if (out)
        *out = NULL;
    if (!dev || !photo || !opt || !out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_synthetic_pool_create: NULL argument");
    if (frames < 1 || frames > RT_POOL_MAX_FRAMES)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "synthetic pool: %d frames not in 1..%d", frames,
                         RT_POOL_MAX_FRAMES);
    if (memory != OMMA_MEMORY_HOST && memory != OMMA_MEMORY_DEVICE)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "synthetic pool: unknown memory %d", (int)memory);
    if (!(opt->fps > 0.0))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "synthetic pool: fps %g is not positive", opt->fps);
    rt_synthetic_pool *pool = calloc(1, sizeof *pool);
    if (!pool)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "synthetic pool");
    pool->dev = dev;
    pool->memory = memory;
    pool->frames = frames;
    pool->width = opt->width;
    pool->height = opt->height;
    pool->frame_bytes = (size_t)opt->width * (size_t)opt->height * 3 / 2;
    pool->truth = calloc((size_t)frames, sizeof *pool->truth);
    omma_status st = pool->truth ? fill(pool, photo, opt)
                                 : OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "synthetic pool: truth");
    if (st != OMMA_OK) {
        rt_synthetic_pool_destroy(pool);
        return st;
    }
    *out = pool;
    return OMMA_OK;
}

omma_frame rt_synthetic_pool_frame(const rt_synthetic_pool *pool, long k, omma_box *truth)
{
    k %= pool->frames;
    if (k < 0)
        k += pool->frames;
    omma_frame f = {pool->width, pool->height, OMMA_PIXEL_NV12, {0}, {0}, pool->memory};
    const uint8_t *base = pool->memory == OMMA_MEMORY_HOST
                              ? (const uint8_t *)pool->host
                              : (const uint8_t *)(uintptr_t)pool->device;
    base += (size_t)k * pool->frame_bytes;
    f.planes[0] = base;
    f.planes[1] = base + (size_t)pool->width * (size_t)pool->height;
    f.pitch[0] = f.pitch[1] = pool->width;
    if (truth)
        *truth = pool->truth[k];
    return f;
}
