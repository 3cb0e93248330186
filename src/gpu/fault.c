/* Fault injection: the Nth fault point fails (see fault.h). */
#include "gpu/fault.h"

#include <stdatomic.h>

#include "core/error.h"

static atomic_long armed;  /* the point number that fails; 0 = none */
static atomic_long passed; /* points passed since arming */

void gpu_fault_arm(long n)
{
    atomic_store(&passed, 0);
    atomic_store(&armed, n < 0 ? 0 : n);
}

long gpu_fault_points(void) { return atomic_load(&passed); }

int gpu_fault_enabled(void)
{
#ifdef OMMA_FAULT_INJECTION
    return 1;
#else
    return 0;
#endif
}

omma_status gpu_fault_point(omma_status st, const char *what, const char *file, int line)
{
    long n = atomic_fetch_add(&passed, 1) + 1;
    long want = atomic_load(&armed);
    if (want == 0 || n != want)
        return OMMA_OK;
    return core_fail(st, file, line, "%s failed: injected fault at fault point %ld "
                                     "(OMMA_FAULT_INJECTION)", what, n);
}
