/* Shared by the gpu tests: skip (exit 77) where there is no GPU. */
#ifndef OMMA_GPU_TESTING_H
#define OMMA_GPU_TESTING_H

#include "omma/device.h"
#include "testing.h"

/* Exits 77 when omma sees no driver or no GPU; otherwise returns. */
static inline void gpu_test_require_device(void)
{
    int n = 0;
    omma_status st = omma_device_count(&n);
    if (st == OMMA_ERR_NO_DEVICE)
        SKIP_TEST(omma_last_error());
    if (st != OMMA_OK) {
        fprintf(stderr, "omma_device_count: %s: %s\n", omma_status_str(st), omma_last_error());
        exit(1);
    }
}

#endif
