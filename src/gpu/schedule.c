/* Scheduling policies: names, the environment override, context flags.
 * Why BLOCKING is the default is told in include/omma/device.h and measured
 * by `omma bench context`. */
#define _POSIX_C_SOURCE 200809L
#include "gpu/schedule.h"

#include <stdlib.h>
#include <strings.h>

#include "core/error.h"
#include "omma/log.h"
#if OMMA_HAVE_CUDA
#include "gpu/driver.h"
#endif

static const char *const names[] = {
    [OMMA_SCHEDULE_DEFAULT] = "default", [OMMA_SCHEDULE_AUTO] = "auto",
    [OMMA_SCHEDULE_SPIN] = "spin",       [OMMA_SCHEDULE_YIELD] = "yield",
    [OMMA_SCHEDULE_BLOCKING] = "blocking",
};

const char *omma_schedule_name(omma_schedule policy)
{
    if ((unsigned)policy >= sizeof names / sizeof names[0])
        return "unknown";
    return names[policy];
}

omma_status omma_schedule_parse(const char *text, omma_schedule *out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_schedule_parse: out is NULL");
    for (unsigned i = 0; text && i < sizeof names / sizeof names[0]; i++) {
        if (strcasecmp(text, names[i]) == 0) {
            *out = (omma_schedule)i;
            return OMMA_OK;
        }
    }
    return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                     "unknown scheduling policy '%s': expected default, auto, spin, yield or "
                     "blocking",
                     text ? text : "(null)");
}

omma_schedule gpu_schedule_default(void)
{
    const char *env = getenv("OMMA_GPU_SCHEDULE");
    omma_schedule policy = OMMA_SCHEDULE_DEFAULT;
    if (env && *env && omma_schedule_parse(env, &policy) != OMMA_OK) {
        omma_log(OMMA_LOG_WARN, "OMMA_GPU_SCHEDULE=%s is not one of auto|spin|yield|blocking; "
                                "using blocking", env);
        policy = OMMA_SCHEDULE_DEFAULT;
    }
    return policy == OMMA_SCHEDULE_DEFAULT ? OMMA_SCHEDULE_BLOCKING : policy;
}

#if OMMA_HAVE_CUDA
unsigned gpu_schedule_flags(omma_schedule policy)
{
    switch (policy) {
    case OMMA_SCHEDULE_SPIN:
        return CU_CTX_SCHED_SPIN;
    case OMMA_SCHEDULE_YIELD:
        return CU_CTX_SCHED_YIELD;
    case OMMA_SCHEDULE_BLOCKING:
        return CU_CTX_SCHED_BLOCKING_SYNC;
    default:
        return CU_CTX_SCHED_AUTO;
    }
}

omma_schedule gpu_schedule_of_flags(unsigned flags)
{
    switch (flags & CU_CTX_SCHED_MASK) {
    case CU_CTX_SCHED_SPIN:
        return OMMA_SCHEDULE_SPIN;
    case CU_CTX_SCHED_YIELD:
        return OMMA_SCHEDULE_YIELD;
    case CU_CTX_SCHED_BLOCKING_SYNC:
        return OMMA_SCHEDULE_BLOCKING;
    default:
        return OMMA_SCHEDULE_AUTO;
    }
}
#endif
