/* Private: NVML readings, loaded with dlopen (no nvml.h on build machines). */
#ifndef OMMA_GPU_NVML_H
#define OMMA_GPU_NVML_H

#include "omma/device.h"

/* Fills *out (zeroed by the caller) for the GPU with this PCI bus id, or this
 * UUID when the bus id is not found. Without NVML, or when it fails, sets
 * available = 0 and the reason; never fails otherwise. Thread-safe. */
void gpu_nvml_read(const char *pci_bus_id, const char *uuid, omma_device_metrics *out);

#endif
