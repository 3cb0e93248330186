/* Private: LSL's clock, liblsl's local_clock(): seconds of the monotonic
 * clock (std::chrono::steady_clock, CLOCK_MONOTONIC on Linux), so omma's
 * capture times (core_now_ns) map to it by a division. */
#ifndef OMMA_LSL_CLOCK_H
#define OMMA_LSL_CLOCK_H

#include <stdint.h>

#include "core/clock.h"

static inline double lsl_clock_from_ns(uint64_t ns)
{
    return (double)ns * 1e-9;
}
static inline double lsl_clock_now(void)
{
    return lsl_clock_from_ns(core_now_ns());
}

#endif
