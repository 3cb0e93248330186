/* Private: scheduling policies and the context flags they map to. */
#ifndef OMMA_GPU_SCHEDULE_H
#define OMMA_GPU_SCHEDULE_H

#include "omma/device.h"

/* The policy omma uses when none was set: OMMA_GPU_SCHEDULE if it names one
 * (a bad value is logged once and ignored), else OMMA_SCHEDULE_BLOCKING. */
omma_schedule gpu_schedule_default(void);

/* CU_CTX_SCHED_* bits of a resolved policy (DEFAULT is resolved first). */
unsigned gpu_schedule_flags(omma_schedule policy);

/* The policy of a context's flags (CU_CTX_SCHED_AUTO reads as AUTO). */
omma_schedule gpu_schedule_of_flags(unsigned flags);

#endif
