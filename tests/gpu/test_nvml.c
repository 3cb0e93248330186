/* NVML readings are present and plausible, or cleanly unavailable with a
 * reason. */
#include "gpu/memory.h"
#include "gpu_testing.h"

static void readings_are_plausible_or_unavailable(void)
{
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    omma_device_info info;
    REQUIRE_OK(omma_device_get_info(dev, &info));
    /* Hold some memory so that this process shows up. */
    CUdeviceptr p = 0;
    REQUIRE_OK(gpu_mem_alloc(dev, 64 << 20, &p));
    omma_device_metrics m;
    REQUIRE_OK(omma_device_read_metrics(dev, &m));
    if (!m.available) {
        fprintf(stderr, "NVML unavailable: %s\n", m.reason);
        CHECK(strstr(m.reason, "NVML") != NULL);
        CHECK(m.valid == 0);
    } else {
        fprintf(stderr,
                "valid 0x%x: util %u%%/%u%%, mem %llu/%llu MiB, %u C, %.1f W of %.1f W, "
                "pcie tx %u rx %u KB/s, sm %u mem %u MHz, this process %llu MiB\n",
                m.valid, m.gpu_util_pct, m.mem_util_pct, (unsigned long long)(m.mem_used >> 20),
                (unsigned long long)(m.mem_total >> 20), m.temperature_c, m.power_mw / 1000.0,
                m.power_limit_mw / 1000.0, m.pcie_tx_kbps, m.pcie_rx_kbps, m.clock_sm_mhz,
                m.clock_mem_mhz, (unsigned long long)(m.process_mem_used >> 20));
        CHECK(m.reason[0] == '\0');
        CHECK(m.valid & OMMA_METRIC_MEMORY);
        /* NVML's total and the driver's agree within a few percent. */
        double ratio = (double)m.mem_total / (double)info.memory_total;
        CHECK(ratio > 0.95 && ratio < 1.05);
        CHECK(m.mem_used > 64ull << 20 && m.mem_used <= m.mem_total);
        if (m.valid & OMMA_METRIC_UTILIZATION)
            CHECK(m.gpu_util_pct <= 100 && m.mem_util_pct <= 100);
        if (m.valid & OMMA_METRIC_TEMPERATURE)
            CHECK(m.temperature_c > 5 && m.temperature_c < 120);
        if (m.valid & OMMA_METRIC_POWER)
            CHECK(m.power_mw > 1000 && m.power_mw < 2000000);
        if (m.valid & OMMA_METRIC_CLOCKS)
            CHECK(m.clock_sm_mhz > 0 && m.clock_mem_mhz > 0);
        if (m.valid & OMMA_METRIC_PROCESS_MEMORY)
            CHECK(m.process_mem_used >= 64ull << 20);
        else
            fprintf(stderr, "this process is not in NVML's list (PID namespace?)\n");
    }
    CHECK(gpu_mem_free(dev, p) == OMMA_OK);
    omma_device_close(dev);
}

int main(void)
{
    gpu_test_require_device();
    RUN(readings_are_plausible_or_unavailable);
    return testing_finish();
}
