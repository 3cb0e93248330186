#include "ipc/bus_memory.h"

#include <string.h>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/fault.h"
#include "omma/log.h"

static omma_status props(omma_device *dev, CUmemAllocationProp *p, size_t *granularity)
{
    CUdevice cu;
    OMMA_TRY(OMMA_CK(gpu_cu.cuDeviceGet(&cu, omma_device_ordinal(dev))));
    memset(p, 0, sizeof *p);
    p->type = CU_MEM_ALLOCATION_TYPE_PINNED;
    p->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p->location.id = cu;
    p->requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
    return OMMA_CK(
        gpu_cu.cuMemGetAllocationGranularity(granularity, p, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED));
}

/* Reserves, maps and sets access for m->handle (m->bytes). */
static omma_status map(bus_memory *m, CUmemAccess_flags flags)
{
    CUdevice cu;
    OMMA_TRY(OMMA_CK(gpu_cu.cuDeviceGet(&cu, omma_device_ordinal(m->dev))));
    OMMA_TRY(GPU_FAULT_POINT(OMMA_ERR_OUT_OF_MEMORY, "cuMemAddressReserve"));
    OMMA_TRY(OMMA_CK(gpu_cu.cuMemAddressReserve(&m->base, m->bytes, 0, 0, 0)));
    omma_status st = GPU_FAULT_POINT(OMMA_ERR_CUDA, "cuMemMap");
    if (st == OMMA_OK)
        st = OMMA_CK(gpu_cu.cuMemMap(m->base, m->bytes, 0, m->handle, 0));
    if (st != OMMA_OK) {
        gpu_cu.cuMemAddressFree(m->base, m->bytes);
        m->base = 0;
        return st;
    }
    CUmemAccessDesc access = {{CU_MEM_LOCATION_TYPE_DEVICE, cu}, flags};
    st = GPU_FAULT_POINT(OMMA_ERR_CUDA, "cuMemSetAccess");
    if (st == OMMA_OK)
        st = OMMA_CK(gpu_cu.cuMemSetAccess(m->base, m->bytes, &access, 1));
    if (st != OMMA_OK) {
        gpu_cu.cuMemUnmap(m->base, m->bytes);
        gpu_cu.cuMemAddressFree(m->base, m->bytes);
        m->base = 0;
    }
    return st;
}

omma_status bus_memory_create(omma_device *dev, size_t bytes, bus_memory *m)
{
    memset(m, 0, sizeof *m);
    if (!dev || bytes == 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "bus_memory_create: %s",
                         dev ? "0 bytes" : "NULL device");
    CUmemAllocationProp p;
    size_t g = 0;
    OMMA_TRY(props(dev, &p, &g));
    m->dev = dev;
    m->bytes = (bytes + g - 1) / g * g;
    OMMA_TRY(GPU_FAULT_POINT(OMMA_ERR_OUT_OF_MEMORY, "cuMemCreate"));
    omma_status st = OMMA_CK(gpu_cu.cuMemCreate(&m->handle, m->bytes, &p, 0));
    if (st != OMMA_OK) {
        memset(m, 0, sizeof *m);
        return st;
    }
    st = map(m, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    if (st != OMMA_OK) {
        gpu_cu.cuMemRelease(m->handle);
        memset(m, 0, sizeof *m);
    }
    return st;
}

omma_status bus_memory_export(const bus_memory *m, int *fd)
{
    *fd = -1;
    OMMA_TRY(GPU_FAULT_POINT(OMMA_ERR_CUDA, "cuMemExportToShareableHandle"));
    return OMMA_CK(gpu_cu.cuMemExportToShareableHandle(
        fd, m->handle, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, 0));
}

omma_status bus_memory_import(omma_device *dev, int fd, size_t bytes, bus_memory *m)
{
    memset(m, 0, sizeof *m);
    if (!dev || fd < 0 || bytes == 0)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "bus_memory_import: bad argument");
    CUmemAllocationProp p;
    size_t g = 0;
    OMMA_TRY(props(dev, &p, &g));
    if (bytes % g != 0)
        return OMMA_FAIL(OMMA_ERR_FORMAT,
                         "bus memory: %zu bytes is not a multiple of the granularity %zu", bytes,
                         g);
    m->dev = dev;
    m->bytes = bytes;
    OMMA_TRY(GPU_FAULT_POINT(OMMA_ERR_CUDA, "cuMemImportFromShareableHandle"));
    omma_status st = OMMA_CK(gpu_cu.cuMemImportFromShareableHandle(
        &m->handle, (void *)(uintptr_t)fd, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    if (st != OMMA_OK) {
        memset(m, 0, sizeof *m);
        return st;
    }
    /* Read-only where the driver allows it, so that a subscriber can never
     * write into the publisher's frames. */
    m->read_only = 1;
    st = map(m, CU_MEM_ACCESS_FLAGS_PROT_READ);
    if (st != OMMA_OK && st != OMMA_ERR_OUT_OF_MEMORY) {
        omma_log(OMMA_LOG_INFO, "bus memory: read-only mapping refused (%s); mapping read-write",
                 omma_last_error());
        m->read_only = 0;
        st = map(m, CU_MEM_ACCESS_FLAGS_PROT_READWRITE);
    }
    if (st != OMMA_OK) {
        gpu_cu.cuMemRelease(m->handle);
        memset(m, 0, sizeof *m);
    }
    return st;
}

void bus_memory_destroy(bus_memory *m)
{
    if (!m || !m->handle)
        return;
    if (m->base) {
        gpu_cu.cuMemUnmap(m->base, m->bytes);
        gpu_cu.cuMemAddressFree(m->base, m->bytes);
    }
    gpu_cu.cuMemRelease(m->handle);
    memset(m, 0, sizeof *m);
}
