/* Private: monotonic and CPU clocks in nanoseconds. */
#ifndef OMMA_CORE_CLOCK_H
#define OMMA_CORE_CLOCK_H

#include <stdint.h>

uint64_t core_now_ns(void);        /* CLOCK_MONOTONIC */
uint64_t core_process_cpu_ns(void); /* CPU time of the whole process */
uint64_t core_thread_cpu_ns(void);  /* CPU time of the calling thread */

#endif
