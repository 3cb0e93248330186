/* Device memory pool, pinned staging memory and counted copies (see
 * memory.h for the contract). */
#include "gpu/memory.h"

#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/device_private.h"
#include "gpu/fault.h"
#include "omma/log.h"

struct gpu_memory {
    CUmemoryPool pool;
    CUstream stream; /* for the synchronous alloc/free */
    uint64_t threshold;
};

static omma_status create_memory(omma_device *dev, struct gpu_memory **out)
{
    struct gpu_memory *m = calloc(1, sizeof *m);
    if (!m)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "memory pool state");
    CUmemPoolProps props = {0};
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = (int)dev->cu;
    omma_status st = GPU_FAULT_POINT(OMMA_ERR_OUT_OF_MEMORY, "cuMemPoolCreate");
    if (st == OMMA_OK)
        st = OMMA_CK(gpu_cu.cuMemPoolCreate(&m->pool, &props));
    if (st != OMMA_OK)
        goto fail;
    m->threshold = UINT64_MAX;
    st = OMMA_CK(
        gpu_cu.cuMemPoolSetAttribute(m->pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &m->threshold));
    if (st == OMMA_OK)
        st = GPU_FAULT_POINT(OMMA_ERR_CUDA, "cuStreamCreateWithPriority");
    if (st == OMMA_OK)
        st = OMMA_CK(gpu_cu.cuStreamCreateWithPriority(&m->stream, CU_STREAM_NON_BLOCKING, 0));
    if (st != OMMA_OK)
        goto fail;
    *out = m;
    return OMMA_OK;
fail:
    if (m->pool)
        gpu_cu.cuMemPoolDestroy(m->pool);
    free(m);
    return st;
}

/* dev->memory, created once; the context is current. */
static omma_status memory_of(omma_device *dev, struct gpu_memory **out)
{
    pthread_mutex_lock(&dev->lock);
    omma_status st = OMMA_OK;
    if (!dev->memory)
        st = create_memory(dev, &dev->memory);
    *out = dev->memory;
    pthread_mutex_unlock(&dev->lock);
    return st;
}

void gpu_memory_destroy(omma_device *dev)
{
    struct gpu_memory *m = dev->memory;
    if (!m)
        return;
    uint64_t live = atomic_load(&dev->live_allocations);
    if (live)
        omma_log(OMMA_LOG_WARN, "device %d closed with %llu device buffer(s) not freed",
                 dev->ordinal, (unsigned long long)live);
    gpu_cu.cuStreamSynchronize(m->stream);
    gpu_cu.cuStreamDestroy(m->stream);
    /* With buffers outstanding the driver frees the pool once they are. */
    gpu_cu.cuMemPoolDestroy(m->pool);
    free(m);
    dev->memory = NULL;
}

static omma_status alloc_async(omma_device *dev, size_t bytes, CUstream stream, CUdeviceptr *out)
{
    struct gpu_memory *m;
    OMMA_TRY(memory_of(dev, &m));
    OMMA_TRY(GPU_FAULT_POINT(OMMA_ERR_OUT_OF_MEMORY, "cuMemAllocFromPoolAsync"));
    omma_status st = OMMA_CK(gpu_cu.cuMemAllocFromPoolAsync(out, bytes, m->pool, stream));
    if (st != OMMA_OK) {
        *out = 0;
        char detail[1024];
        snprintf(detail, sizeof detail,
                 "device %d: allocating %zu bytes (%.1f MiB) of device "
                 "memory from omma's pool: %s",
                 dev->ordinal, bytes, (double)bytes / (1 << 20), omma_last_error());
        return core_fail_text(st, detail);
    }
    atomic_fetch_add(&dev->live_allocations, 1);
    return OMMA_OK;
}

omma_status gpu_mem_alloc_async(omma_device *dev, size_t bytes, CUstream stream, CUdeviceptr *out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "gpu_mem_alloc_async: out is NULL");
    *out = 0;
    if (!dev || bytes == 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "gpu_mem_alloc_async: %s",
                         dev ? "0 bytes" : "device is NULL");
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    return gpu_leave_keep(&scope, alloc_async(dev, bytes, stream, out));
}

omma_status gpu_mem_free_async(omma_device *dev, CUdeviceptr ptr, CUstream stream)
{
    if (!dev)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "gpu_mem_free_async: device is NULL");
    if (!ptr)
        return OMMA_OK;
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    omma_status st = OMMA_CK(gpu_cu.cuMemFreeAsync(ptr, stream));
    if (st == OMMA_OK)
        atomic_fetch_sub(&dev->live_allocations, 1);
    return gpu_leave_keep(&scope, st);
}

static omma_status alloc_sync(omma_device *dev, size_t bytes, CUdeviceptr *out)
{
    struct gpu_memory *m;
    OMMA_TRY(memory_of(dev, &m));
    OMMA_TRY(alloc_async(dev, bytes, m->stream, out));
    omma_status st = OMMA_CK(gpu_cu.cuStreamSynchronize(m->stream));
    if (st != OMMA_OK) {
        gpu_cu.cuMemFreeAsync(*out, m->stream);
        atomic_fetch_sub(&dev->live_allocations, 1);
        *out = 0;
    }
    return st;
}

omma_status gpu_mem_alloc(omma_device *dev, size_t bytes, CUdeviceptr *out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "gpu_mem_alloc: out is NULL");
    *out = 0;
    if (!dev || bytes == 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "gpu_mem_alloc: %s",
                         dev ? "0 bytes" : "device is NULL");
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    return gpu_leave_keep(&scope, alloc_sync(dev, bytes, out));
}

static omma_status free_sync(omma_device *dev, CUdeviceptr ptr)
{
    struct gpu_memory *m;
    OMMA_TRY(memory_of(dev, &m));
    OMMA_TRY(OMMA_CK(gpu_cu.cuMemFreeAsync(ptr, m->stream)));
    atomic_fetch_sub(&dev->live_allocations, 1);
    return OMMA_OK;
}

omma_status gpu_mem_free(omma_device *dev, CUdeviceptr ptr)
{
    if (!dev)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "gpu_mem_free: device is NULL");
    if (!ptr)
        return OMMA_OK;
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    return gpu_leave_keep(&scope, free_sync(dev, ptr));
}

static omma_status host_alloc(omma_device *dev, size_t bytes, void **out)
{
    OMMA_TRY(GPU_FAULT_POINT(OMMA_ERR_OUT_OF_MEMORY, "cuMemHostAlloc"));
    omma_status st = OMMA_CK(gpu_cu.cuMemHostAlloc(out, bytes, CU_MEMHOSTALLOC_PORTABLE));
    if (st != OMMA_OK) {
        *out = NULL;
        return st;
    }
    atomic_fetch_add(&dev->pinned_bytes, bytes);
    return OMMA_OK;
}

omma_status gpu_host_alloc(omma_device *dev, size_t bytes, void **out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "gpu_host_alloc: out is NULL");
    *out = NULL;
    if (!dev || bytes == 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "gpu_host_alloc: %s",
                         dev ? "0 bytes" : "device is NULL");
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    return gpu_leave_keep(&scope, host_alloc(dev, bytes, out));
}

void gpu_host_free(omma_device *dev, void *ptr, size_t bytes)
{
    if (!dev || !ptr)
        return;
    omma_scope scope;
    if (omma_device_enter(dev, &scope) != OMMA_OK) {
        omma_log(OMMA_LOG_WARN, "gpu_host_free: %s", omma_last_error());
        return;
    }
    if (OMMA_CK(gpu_cu.cuMemFreeHost(ptr)) == OMMA_OK)
        atomic_fetch_sub(&dev->pinned_bytes, bytes);
    else
        omma_log(OMMA_LOG_WARN, "gpu_host_free: %s", omma_last_error());
    omma_device_leave(&scope);
}

enum direction { H2D, D2H, D2D };

static void count(omma_device *dev, enum direction dir, size_t bytes)
{
    switch (dir) {
    case H2D:
        atomic_fetch_add(&dev->h2d_bytes, bytes);
        atomic_fetch_add(&dev->h2d_copies, 1);
        break;
    case D2H:
        atomic_fetch_add(&dev->d2h_bytes, bytes);
        atomic_fetch_add(&dev->d2h_copies, 1);
        break;
    case D2D:
        atomic_fetch_add(&dev->d2d_bytes, bytes);
        atomic_fetch_add(&dev->d2d_copies, 1);
        break;
    }
}

static omma_status copy(omma_device *dev, enum direction dir, void *dst_host, CUdeviceptr dst,
                        const void *src_host, CUdeviceptr src, size_t bytes, CUstream stream)
{
    if (!dev)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "gpu copy: device is NULL");
    if (bytes == 0)
        return OMMA_OK;
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    omma_status st;
    switch (dir) {
    case H2D:
        st = OMMA_CK(gpu_cu.cuMemcpyHtoDAsync(dst, src_host, bytes, stream));
        break;
    case D2H:
        st = OMMA_CK(gpu_cu.cuMemcpyDtoHAsync(dst_host, src, bytes, stream));
        break;
    default:
        st = OMMA_CK(gpu_cu.cuMemcpyDtoDAsync(dst, src, bytes, stream));
        break;
    }
    if (st == OMMA_OK)
        count(dev, dir, bytes);
    return gpu_leave_keep(&scope, st);
}

omma_status gpu_copy_h2d_async(omma_device *dev, CUdeviceptr dst, const void *src, size_t bytes,
                               CUstream stream)
{
    return copy(dev, H2D, NULL, dst, src, 0, bytes, stream);
}

/* A pitched image copied to a pitched device image as one counted copy of
 * rows * row_bytes bytes; c has the source side filled in. */
static omma_status copy_2d(omma_device *dev, enum direction dir, CUDA_MEMCPY2D *c, CUdeviceptr dst,
                           size_t dst_pitch, size_t row_bytes, size_t rows, CUstream stream)
{
    if (!dev)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "gpu copy: device is NULL");
    if (row_bytes == 0 || rows == 0)
        return OMMA_OK;
    c->dstMemoryType = CU_MEMORYTYPE_DEVICE;
    c->dstDevice = dst;
    c->dstPitch = dst_pitch;
    c->WidthInBytes = row_bytes;
    c->Height = rows;
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    omma_status st = OMMA_CK(gpu_cu.cuMemcpy2DAsync(c, stream));
    if (st == OMMA_OK)
        count(dev, dir, row_bytes * rows);
    return gpu_leave_keep(&scope, st);
}

omma_status gpu_copy_h2d_2d_async(omma_device *dev, CUdeviceptr dst, size_t dst_pitch,
                                  const void *src, size_t src_pitch, size_t row_bytes, size_t rows,
                                  CUstream stream)
{
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = CU_MEMORYTYPE_HOST;
    c.srcHost = src;
    c.srcPitch = src_pitch;
    return copy_2d(dev, H2D, &c, dst, dst_pitch, row_bytes, rows, stream);
}

omma_status gpu_copy_d2h_async(omma_device *dev, void *dst, CUdeviceptr src, size_t bytes,
                               CUstream stream)
{
    return copy(dev, D2H, dst, 0, NULL, src, bytes, stream);
}

omma_status gpu_copy_d2d_async(omma_device *dev, CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                               CUstream stream)
{
    return copy(dev, D2D, NULL, dst, NULL, src, bytes, stream);
}

omma_status gpu_copy_d2d_2d_async(omma_device *dev, CUdeviceptr dst, size_t dst_pitch,
                                  CUdeviceptr src, size_t src_pitch, size_t row_bytes, size_t rows,
                                  CUstream stream)
{
    CUDA_MEMCPY2D c;
    memset(&c, 0, sizeof c);
    c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
    c.srcDevice = src;
    c.srcPitch = src_pitch;
    return copy_2d(dev, D2D, &c, dst, dst_pitch, row_bytes, rows, stream);
}

void gpu_count_h2d(omma_device *dev, size_t bytes)
{
    if (dev && bytes)
        count(dev, H2D, bytes);
}

static omma_status pool_attr(struct gpu_memory *m, CUmemPool_attribute attr, uint64_t *out)
{
    cuuint64_t v = 0;
    OMMA_TRY(OMMA_CK(gpu_cu.cuMemPoolGetAttribute(m->pool, attr, &v)));
    *out = (uint64_t)v;
    return OMMA_OK;
}

static omma_status read_stats(omma_device *dev, omma_memory_stats *out)
{
    struct gpu_memory *m;
    OMMA_TRY(memory_of(dev, &m));
    OMMA_TRY(pool_attr(m, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &out->pool_reserved));
    OMMA_TRY(pool_attr(m, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &out->pool_used));
    OMMA_TRY(pool_attr(m, CU_MEMPOOL_ATTR_USED_MEM_HIGH, &out->pool_used_high));
    OMMA_TRY(pool_attr(m, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &out->pool_release_threshold));
    return OMMA_OK;
}

omma_status omma_device_get_memory_stats(omma_device *dev, omma_memory_stats *out)
{
    if (!dev || !out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_get_memory_stats: NULL argument");
    *out = (omma_memory_stats){0};
    out->pinned_bytes = atomic_load(&dev->pinned_bytes);
    out->live_allocations = atomic_load(&dev->live_allocations);
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    return gpu_leave_keep(&scope, read_stats(dev, out));
}

static omma_status trim(omma_device *dev, uint64_t keep)
{
    struct gpu_memory *m;
    OMMA_TRY(memory_of(dev, &m));
    /* Frees still queued on the pool's own stream must land first. */
    OMMA_TRY(OMMA_CK(gpu_cu.cuStreamSynchronize(m->stream)));
    return OMMA_CK(gpu_cu.cuMemPoolTrimTo(m->pool, (size_t)keep));
}

omma_status omma_device_trim_memory(omma_device *dev, uint64_t keep_bytes)
{
    if (!dev)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_trim_memory: device is NULL");
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    return gpu_leave_keep(&scope, trim(dev, keep_bytes));
}

omma_status gpu_stream_wait(omma_device *dev, CUstream stream)
{
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    return gpu_leave_keep(&scope, OMMA_CK(gpu_cu.cuStreamSynchronize(stream)));
}

static omma_status download_nv12(const omma_frame *f, uint8_t *dst, CUstream stream)
{
    size_t w = (size_t)f->width, h = (size_t)f->height;
    for (int p = 0; p < 2; p++) {
        CUDA_MEMCPY2D c;
        memset(&c, 0, sizeof c);
        c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
        c.srcDevice = (CUdeviceptr)(uintptr_t)f->planes[p];
        c.srcPitch = (size_t)f->pitch[p];
        c.dstMemoryType = CU_MEMORYTYPE_HOST;
        c.dstHost = p ? dst + w * h : dst;
        c.dstPitch = p ? 2 * ((w + 1) / 2) : w;
        c.WidthInBytes = c.dstPitch;
        c.Height = p ? (h + 1) / 2 : h;
        OMMA_TRY(OMMA_CK(gpu_cu.cuMemcpy2DAsync(&c, stream)));
    }
    return OMMA_CK(gpu_cu.cuStreamSynchronize(stream));
}

omma_status gpu_download_nv12(omma_device *dev, const omma_frame *f, uint8_t *dst,
                              CUstream stream)
{
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    return gpu_leave_keep(&scope, download_nv12(f, dst, stream));
}
