/* NVML through dlopen("libnvidia-ml.so.1"). The few types and entry points
 * omma needs are declared here with NVML's C ABI (nvml.h is not installed on
 * the build machines): results are an int enum (0 = success), a device is an
 * opaque pointer, and the structs below match nvml.h's layouts. */
#define _GNU_SOURCE
#include "gpu/nvml.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef int nvml_return; /* nvmlReturn_t */
typedef void *nvml_device; /* nvmlDevice_t */
enum {
    NVML_SUCCESS = 0,
    NVML_ERROR_INSUFFICIENT_SIZE = 7,
    NVML_TEMPERATURE_GPU = 0, /* nvmlTemperatureSensors_t */
    NVML_PCIE_UTIL_TX_BYTES = 0, /* nvmlPcieUtilCounter_t */
    NVML_PCIE_UTIL_RX_BYTES = 1,
    NVML_CLOCK_GRAPHICS = 0, /* nvmlClockType_t */
    NVML_CLOCK_SM = 1,
    NVML_CLOCK_MEM = 2,
};

typedef struct {
    unsigned int gpu, memory;
} nvml_utilization; /* nvmlUtilization_t */

typedef struct {
    unsigned long long total, free, used;
} nvml_memory; /* nvmlMemory_t (v1) */

typedef struct {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvml_process_info_v2; /* nvmlProcessInfo_v2_t, the layout of ..._v2 below */

static struct {
    nvml_return (*init)(void);
    const char *(*error_string)(nvml_return);
    nvml_return (*by_pci)(const char *, nvml_device *);
    nvml_return (*by_uuid)(const char *, nvml_device *);
    nvml_return (*utilization)(nvml_device, nvml_utilization *);
    nvml_return (*memory)(nvml_device, nvml_memory *);
    nvml_return (*temperature)(nvml_device, int, unsigned int *);
    nvml_return (*power)(nvml_device, unsigned int *);
    nvml_return (*power_limit)(nvml_device, unsigned int *);
    nvml_return (*pcie)(nvml_device, int, unsigned int *);
    nvml_return (*clock)(nvml_device, int, unsigned int *);
    nvml_return (*processes)(nvml_device, unsigned int *, nvml_process_info_v2 *);
    nvml_return (*decoder)(nvml_device, unsigned int *, unsigned int *);
} nv;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_failure[256]; /* "" when NVML is usable */

static void *sym(void *lib, const char *name, int required)
{
    void *p = dlsym(lib, name);
    if (!p && required && !load_failure[0])
        snprintf(load_failure, sizeof load_failure, "NVML lacks %s", name);
    return p;
}

static void load(void)
{
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(load_failure, sizeof load_failure,
                 "NVML unavailable: dlopen(libnvidia-ml.so.1) failed: %s", dlerror());
        return;
    }
    *(void **)&nv.init = sym(lib, "nvmlInit_v2", 1);
    *(void **)&nv.error_string = sym(lib, "nvmlErrorString", 1);
    *(void **)&nv.by_pci = sym(lib, "nvmlDeviceGetHandleByPciBusId_v2", 1);
    *(void **)&nv.by_uuid = sym(lib, "nvmlDeviceGetHandleByUUID", 0);
    *(void **)&nv.utilization = sym(lib, "nvmlDeviceGetUtilizationRates", 0);
    *(void **)&nv.memory = sym(lib, "nvmlDeviceGetMemoryInfo", 0);
    *(void **)&nv.decoder = sym(lib, "nvmlDeviceGetDecoderUtilization", 0);
    *(void **)&nv.temperature = sym(lib, "nvmlDeviceGetTemperature", 0);
    *(void **)&nv.power = sym(lib, "nvmlDeviceGetPowerUsage", 0);
    *(void **)&nv.power_limit = sym(lib, "nvmlDeviceGetEnforcedPowerLimit", 0);
    *(void **)&nv.pcie = sym(lib, "nvmlDeviceGetPcieThroughput", 0);
    *(void **)&nv.clock = sym(lib, "nvmlDeviceGetClockInfo", 0);
    *(void **)&nv.processes = sym(lib, "nvmlDeviceGetComputeRunningProcesses_v2", 0);
    if (load_failure[0])
        return;
    nvml_return rc = nv.init();
    if (rc != NVML_SUCCESS)
        snprintf(load_failure, sizeof load_failure, "NVML unavailable: nvmlInit_v2 failed: %s",
                 nv.error_string(rc));
    /* NVML stays initialized for the life of the process. */
}

static void read_process_memory(nvml_device d, omma_device_metrics *out)
{
    nvml_process_info_v2 procs[64];
    unsigned int n = sizeof procs / sizeof procs[0];
    if (!nv.processes || nv.processes(d, &n, procs) != NVML_SUCCESS)
        return;
    /* In a container NVML may report host PIDs; then this process is not
     * found and the reading stays out of `valid`. */
    unsigned int me = (unsigned int)getpid();
    for (unsigned int i = 0; i < n && i < sizeof procs / sizeof procs[0]; i++) {
        if (procs[i].pid == me) {
            out->process_mem_used = procs[i].usedGpuMemory;
            out->valid |= OMMA_METRIC_PROCESS_MEMORY;
        }
    }
}

void gpu_nvml_read(const char *pci_bus_id, const char *uuid, omma_device_metrics *out)
{
    pthread_once(&load_once, load);
    if (load_failure[0]) {
        snprintf(out->reason, sizeof out->reason, "%s", load_failure);
        return;
    }
    nvml_device d = NULL;
    nvml_return rc = nv.by_pci(pci_bus_id, &d);
    if (rc != NVML_SUCCESS && nv.by_uuid && uuid && uuid[0])
        rc = nv.by_uuid(uuid, &d);
    if (rc != NVML_SUCCESS) {
        snprintf(out->reason, sizeof out->reason,
                 "NVML does not know the GPU at PCI bus id %s (%s): %s", pci_bus_id, uuid,
                 nv.error_string(rc));
        return;
    }
    out->available = 1;
    nvml_utilization u;
    if (nv.utilization && nv.utilization(d, &u) == NVML_SUCCESS) {
        out->gpu_util_pct = u.gpu;
        out->mem_util_pct = u.memory;
        out->valid |= OMMA_METRIC_UTILIZATION;
    }
    nvml_memory m;
    if (nv.memory && nv.memory(d, &m) == NVML_SUCCESS) {
        out->mem_total = m.total;
        out->mem_used = m.used;
        out->mem_free = m.free;
        out->valid |= OMMA_METRIC_MEMORY;
    }
    if (nv.temperature &&
        nv.temperature(d, NVML_TEMPERATURE_GPU, &out->temperature_c) == NVML_SUCCESS)
        out->valid |= OMMA_METRIC_TEMPERATURE;
    if (nv.power && nv.power(d, &out->power_mw) == NVML_SUCCESS)
        out->valid |= OMMA_METRIC_POWER;
    if (nv.power_limit && nv.power_limit(d, &out->power_limit_mw) == NVML_SUCCESS)
        out->valid |= OMMA_METRIC_POWER_LIMIT;
    if (nv.pcie && nv.pcie(d, NVML_PCIE_UTIL_TX_BYTES, &out->pcie_tx_kbps) == NVML_SUCCESS &&
        nv.pcie(d, NVML_PCIE_UTIL_RX_BYTES, &out->pcie_rx_kbps) == NVML_SUCCESS)
        out->valid |= OMMA_METRIC_PCIE;
    if (nv.clock && nv.clock(d, NVML_CLOCK_SM, &out->clock_sm_mhz) == NVML_SUCCESS &&
        nv.clock(d, NVML_CLOCK_MEM, &out->clock_mem_mhz) == NVML_SUCCESS &&
        nv.clock(d, NVML_CLOCK_GRAPHICS, &out->clock_graphics_mhz) == NVML_SUCCESS)
        out->valid |= OMMA_METRIC_CLOCKS;
    unsigned int period_us = 0;
    if (nv.decoder && nv.decoder(d, &out->decoder_util_pct, &period_us) == NVML_SUCCESS)
        out->valid |= OMMA_METRIC_DECODER;
    read_process_memory(d, out);
}
