/* Private: device memory and events that other processes can map.
 *
 * Frames on the bus live in allocations made with the virtual memory
 * management API (cuMemCreate) as shareable allocations: the exporter gives
 * a POSIX file descriptor per subscriber (cuMemExportToShareableHandle),
 * which travels over the bus socket; the importer maps it into its own
 * address space, in its own primary context, read-only where the driver
 * allows it. The kernel reference-counts the fd, so the memory outlives
 * either side's death until the last mapping goes. Legacy cudaIpc memory
 * handles are not used: they name a cudaMalloc base (sub-allocations lose
 * their offset), fail across PID namespaces, and stream-ordered pools
 * reject them. Every call site passes a fault point. */
#ifndef OMMA_IPC_BUS_MEMORY_H
#define OMMA_IPC_BUS_MEMORY_H

#include <stddef.h>

#include "gpu/driver.h"
#include "omma/device.h"
#include "omma/status.h"

typedef struct bus_memory {
    omma_device *dev;
    CUmemGenericAllocationHandle handle;
    CUdeviceptr base; /* mapped here (0: not mapped) */
    size_t bytes; /* rounded up to the granularity */
    int read_only; /* importer: mapped without write access */
} bus_memory;

/* Exporter: a shareable allocation of at least bytes on dev, mapped
 * read-write in the calling process. The device's context must be current. */
omma_status bus_memory_create(omma_device *dev, size_t bytes, bus_memory *m);

/* Exporter: a new file descriptor for m (the caller sends and closes it). */
omma_status bus_memory_export(const bus_memory *m, int *fd);

/* Importer: maps the allocation behind fd (bytes long) on dev, read-only
 * when the driver supports it, else read-write (m->read_only says which).
 * The fd is not closed here. The device's context must be current. */
omma_status bus_memory_import(omma_device *dev, int fd, size_t bytes, bus_memory *m);

/* Unmaps and releases (both sides). All GPU work on it must be done.
 * Accepts a zeroed m. */
void bus_memory_destroy(bus_memory *m);

#endif
