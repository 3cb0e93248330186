/* omma info: every GPU with its facts and NVML readings, as text or JSON. */
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/json.h"
#include "omma/device.h"

static const cli_option options[] = {
    {"--json", NULL, "one JSON object instead of the text listing"},
    {NULL, NULL, NULL},
};

static void usage(FILE *to)
{
    fprintf(to, "usage: omma info [--json]\n"
                "  Lists each GPU: name, PCI bus id, compute capability, SMs, L2, memory,\n"
                "  scheduling policy, and NVML readings (utilization, temperature, power,\n"
                "  PCIe throughput, clocks, this process's memory) when NVML is present.\n");
    cli_print_options(to, options);
    fprintf(to, "  Exit code 3 when there is no NVIDIA driver or GPU.\n");
}

static double mib(uint64_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}
static double gib(uint64_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0 * 1024.0);
}

static void print_text(const omma_device_info *in, const omma_device_metrics *m)
{
    printf("GPU %d  %s\n", in->ordinal, in->name);
    printf("  pci bus id          %s\n", in->pci_bus_id);
    printf("  uuid                %s\n", in->uuid);
    printf("  compute capability  %d.%d (%d SMs, L2 %.1f MiB)\n", in->cc_major, in->cc_minor,
           in->sm_count, mib((uint64_t)in->l2_bytes));
    printf("  memory              %.1f GiB total, %.1f GiB free\n", gib(in->memory_total),
           gib(in->memory_free));
    printf("  scheduling          %s\n", omma_schedule_name(in->schedule));
    printf("  driver              supports CUDA %d.%d\n", in->driver_version / 1000,
           in->driver_version % 1000 / 10);
    if (!m->available) {
        printf("  nvml                metrics unavailable: %s\n", m->reason);
        return;
    }
    if (m->valid & OMMA_METRIC_UTILIZATION)
        printf("  utilization         %u%% gpu, %u%% memory\n", m->gpu_util_pct, m->mem_util_pct);
    if (m->valid & OMMA_METRIC_MEMORY)
        printf("  memory (nvml)       %.1f GiB used of %.1f GiB\n", gib(m->mem_used),
               gib(m->mem_total));
    if (m->valid & OMMA_METRIC_TEMPERATURE)
        printf("  temperature         %u C\n", m->temperature_c);
    if (m->valid & OMMA_METRIC_POWER) {
        printf("  power               %.1f W", m->power_mw / 1000.0);
        if (m->valid & OMMA_METRIC_POWER_LIMIT)
            printf(" (limit %.1f W)", m->power_limit_mw / 1000.0);
        printf("\n");
    }
    if (m->valid & OMMA_METRIC_PCIE)
        printf("  pcie                tx %.1f MB/s, rx %.1f MB/s\n", m->pcie_tx_kbps / 1000.0,
               m->pcie_rx_kbps / 1000.0);
    if (m->valid & OMMA_METRIC_CLOCKS)
        printf("  clocks              sm %u MHz, memory %u MHz, graphics %u MHz\n", m->clock_sm_mhz,
               m->clock_mem_mhz, m->clock_graphics_mhz);
    if (m->valid & OMMA_METRIC_PROCESS_MEMORY)
        printf("  this process        %.1f MiB on the device\n", mib(m->process_mem_used));
    else
        printf("  this process        not reported by NVML (PID namespace?)\n");
}

static void print_json(const omma_device_info *in, const omma_device_metrics *m)
{
    printf("{\"ordinal\":%d,\"name\":", in->ordinal);
    cli_json_string(in->name);
    printf(",\"pci_bus_id\":");
    cli_json_string(in->pci_bus_id);
    printf(",\"uuid\":");
    cli_json_string(in->uuid);
    printf(",\"compute_capability\":\"%d.%d\",\"sm_count\":%d,\"l2_bytes\":%d,"
           "\"memory_total\":%llu,\"memory_free\":%llu,\"schedule\":\"%s\",\"driver_version\":%d,"
           "\"nvml\":",
           in->cc_major, in->cc_minor, in->sm_count, in->l2_bytes,
           (unsigned long long)in->memory_total, (unsigned long long)in->memory_free,
           omma_schedule_name(in->schedule), in->driver_version);
    if (!m->available) {
        printf("{\"available\":false,\"reason\":");
        cli_json_string(m->reason);
        printf("}}");
        return;
    }
    printf("{\"available\":true");
    if (m->valid & OMMA_METRIC_UTILIZATION)
        printf(",\"gpu_util_pct\":%u,\"mem_util_pct\":%u", m->gpu_util_pct, m->mem_util_pct);
    if (m->valid & OMMA_METRIC_MEMORY)
        printf(",\"mem_used\":%llu,\"mem_total\":%llu", (unsigned long long)m->mem_used,
               (unsigned long long)m->mem_total);
    if (m->valid & OMMA_METRIC_TEMPERATURE)
        printf(",\"temperature_c\":%u", m->temperature_c);
    if (m->valid & OMMA_METRIC_POWER)
        printf(",\"power_mw\":%u", m->power_mw);
    if (m->valid & OMMA_METRIC_POWER_LIMIT)
        printf(",\"power_limit_mw\":%u", m->power_limit_mw);
    if (m->valid & OMMA_METRIC_PCIE)
        printf(",\"pcie_tx_kbps\":%u,\"pcie_rx_kbps\":%u", m->pcie_tx_kbps, m->pcie_rx_kbps);
    if (m->valid & OMMA_METRIC_CLOCKS)
        printf(",\"clock_sm_mhz\":%u,\"clock_mem_mhz\":%u,\"clock_graphics_mhz\":%u",
               m->clock_sm_mhz, m->clock_mem_mhz, m->clock_graphics_mhz);
    if (m->valid & OMMA_METRIC_PROCESS_MEMORY)
        printf(",\"process_mem_used\":%llu", (unsigned long long)m->process_mem_used);
    printf("}}");
}

int cli_info(int argc, char **argv)
{
    int json = 0;
    cli_args args;
    cli_args_init(&args, "info", options, argc, argv);
    const cli_option *opt;
    const char *v;
    for (cli_arg_kind k; (k = cli_next(&args, &opt, &v)) != CLI_ARG_END;) {
        if (k == CLI_ARG_HELP) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        if (k == CLI_ARG_ERROR)
            return CLI_EXIT_USAGE;
        if (k == CLI_ARG_POSITIONAL)
            return cli_usage_error("info", "unexpected argument '%s'", v);
        json = 1; /* --json, the only option */
    }
    int n = 0;
    omma_status st = omma_device_count(&n);
    if (st != OMMA_OK)
        return cli_fail(st, "no NVIDIA GPU available");

    int failed = 0, printed = 0;
    if (json)
        printf("{\"devices\":[");
    else
        printf("%d GPU(s)\n", n);
    for (int i = 0; i < n; i++) {
        omma_device *dev = NULL;
        omma_device_info info;
        omma_device_metrics metrics;
        st = omma_device_open(i, &dev);
        if (st == OMMA_OK)
            st = omma_device_get_info(dev, &info);
        if (st == OMMA_OK)
            st = omma_device_read_metrics(dev, &metrics);
        omma_device_close(dev);
        if (st != OMMA_OK) {
            cli_error("GPU %d: %s", i, omma_last_error());
            failed = 1;
            continue;
        }
        if (json) {
            if (printed++)
                printf(",");
            print_json(&info, &metrics);
        } else {
            print_text(&info, &metrics);
        }
    }
    if (json)
        printf("]}\n");
    fflush(stdout);
    return failed ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}
