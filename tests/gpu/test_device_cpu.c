/* The device API where there is no NVIDIA driver (CI and build machines),
 * and the parts that need no GPU at all. On a machine with a driver the
 * no-driver cases are skipped and the rest still runs. */
#define _GNU_SOURCE
#include <dlfcn.h>

#include "omma/device.h"
#include "testing.h"

/* What the no-driver failures name: the driver library, or in a build
 * without CUDA (src/gpu/device_none.c) the build option. */
#if OMMA_HAVE_CUDA
#define NO_DRIVER_TEXT "libcuda.so.1"
#else
#define NO_DRIVER_TEXT "omma was built without CUDA (OMMA_CUDA=OFF)"
#endif

static int driver_present(void)
{
    if (!OMMA_HAVE_CUDA)
        return 0; /* the driver is never loaded */
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib)
        dlclose(lib);
    return lib != NULL;
}

static void count_without_driver_says_libcuda(void)
{
    int n = 42;
    CHECK_FAILS(omma_device_count(&n), OMMA_ERR_NO_DEVICE, NO_DRIVER_TEXT);
    CHECK(n == 0);
    if (OMMA_HAVE_CUDA)
        CHECK(strstr(omma_last_error(), "no NVIDIA driver") != NULL);
}

static void open_without_driver_fails_cleanly(void)
{
    omma_device *dev = (omma_device *)&dev; /* garbage that must be cleared */
    CHECK_FAILS(omma_device_open(0, &dev), OMMA_ERR_NO_DEVICE, NO_DRIVER_TEXT);
    CHECK(dev == NULL);
    dev = (omma_device *)&dev;
    int fake_context;
    CHECK_FAILS(omma_device_adopt(&fake_context, &dev), OMMA_ERR_NO_DEVICE, NO_DRIVER_TEXT);
    CHECK(dev == NULL);
    CHECK_FAILS(omma_device_set_schedule(0, OMMA_SCHEDULE_SPIN), OMMA_ERR_NO_DEVICE,
                NO_DRIVER_TEXT);
    /* Asking twice gives the same answer (the load is attempted once). */
    CHECK_FAILS(omma_device_open(1, &dev), OMMA_ERR_NO_DEVICE, NO_DRIVER_TEXT);
    omma_device_close(NULL);
}

static void bad_arguments(void)
{
    CHECK_FAILS(omma_device_count(NULL), OMMA_ERR_INVALID_ARG, "NULL");
    CHECK_FAILS(omma_device_open(0, NULL), OMMA_ERR_INVALID_ARG, "NULL");
    omma_device *dev = (omma_device *)&dev;
    CHECK_FAILS(omma_device_adopt(NULL, &dev), OMMA_ERR_INVALID_ARG, "context is NULL");
    CHECK(dev == NULL);
    omma_scope scope;
    CHECK_FAILS(omma_device_enter(NULL, &scope), OMMA_ERR_INVALID_ARG, "device is NULL");
    CHECK_FAILS(omma_device_leave(&scope), OMMA_ERR_INVALID_ARG, "not entered");
    CHECK_FAILS(omma_device_leave(NULL), OMMA_ERR_INVALID_ARG, "NULL");
    CHECK(omma_scope_depth() == 0);
    CHECK(omma_device_ordinal(NULL) == -1);
    CHECK(omma_device_context(NULL) == NULL);
    CHECK_FAILS(omma_device_check_health(NULL), OMMA_ERR_INVALID_ARG, "NULL");
    omma_device_metrics m;
    CHECK_FAILS(omma_device_read_metrics(NULL, &m), OMMA_ERR_INVALID_ARG, "NULL");
    CHECK_FAILS(omma_device_set_schedule(0, (omma_schedule)99), OMMA_ERR_INVALID_ARG,
                "unknown policy");
}

static void schedule_names_round_trip(void)
{
    const omma_schedule all[] = {OMMA_SCHEDULE_DEFAULT, OMMA_SCHEDULE_AUTO, OMMA_SCHEDULE_SPIN,
                                 OMMA_SCHEDULE_YIELD, OMMA_SCHEDULE_BLOCKING};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        omma_schedule got = (omma_schedule)-1;
        REQUIRE_OK(omma_schedule_parse(omma_schedule_name(all[i]), &got));
        CHECK(got == all[i]);
    }
    omma_schedule got;
    REQUIRE_OK(omma_schedule_parse("BLOCKING", &got));
    CHECK(got == OMMA_SCHEDULE_BLOCKING);
    CHECK_FAILS(omma_schedule_parse("fast", &got), OMMA_ERR_INVALID_ARG,
                "expected default, auto, spin, yield or blocking");
    CHECK_FAILS(omma_schedule_parse(NULL, &got), OMMA_ERR_INVALID_ARG, "(null)");
    CHECK(strcmp(omma_schedule_name((omma_schedule)42), "unknown") == 0);
    CHECK(strcmp(omma_schedule_name(OMMA_SCHEDULE_SPIN), "spin") == 0);
}

int main(void)
{
    if (driver_present()) {
        fprintf(stderr, "libcuda.so.1 is present: the no-driver cases are skipped\n");
    } else {
        RUN(count_without_driver_says_libcuda);
        RUN(open_without_driver_fails_cleanly);
    }
    RUN(bad_arguments);
    RUN(schedule_names_round_trip);
    return testing_finish();
}
