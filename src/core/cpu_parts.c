/* The CPU breakdown's names and sums (cpu_parts.h). */
#include "core/cpu_parts.h"

static const char *const part_names[CORE_CPU_PARTS] = {
    "demux", "annexb", "parse", "submit", "status",  "decode_wait",
    "map",   "unmap",  "copy",  "pace",   "handoff", "thread",
};

const char *core_cpu_part_name(core_cpu_part k)
{
    return (unsigned)k < CORE_CPU_PARTS ? part_names[k] : "unknown";
}

void core_cpu_parts_init(core_cpu_parts *p)
{
    for (int k = 0; k < CORE_CPU_PARTS; k++) {
        atomic_init(&p->ns[k], 0);
        atomic_init(&p->calls[k], 0);
    }
}

void core_cpu_parts_add_to(const core_cpu_parts *p, core_cpu_split *sum)
{
    for (int k = 0; k < CORE_CPU_PARTS; k++) {
        sum->ns[k] += atomic_load_explicit(&p->ns[k], memory_order_relaxed);
        sum->calls[k] += atomic_load_explicit(&p->calls[k], memory_order_relaxed);
    }
}
