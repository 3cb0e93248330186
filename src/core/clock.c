/* Monotonic and CPU-time clocks. */
#define _POSIX_C_SOURCE 200809L
#include "core/clock.h"

#include <time.h>

static uint64_t read_clock(clockid_t id)
{
    struct timespec ts;
    if (clock_gettime(id, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t core_now_ns(void) { return read_clock(CLOCK_MONOTONIC); }
uint64_t core_process_cpu_ns(void) { return read_clock(CLOCK_PROCESS_CPUTIME_ID); }
uint64_t core_thread_cpu_ns(void) { return read_clock(CLOCK_THREAD_CPUTIME_ID); }
