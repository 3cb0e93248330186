/* The device API in a build without CUDA (OMMA_CUDA=OFF): no device can be
 * opened, so every call that needs one fails with OMMA_ERR_NO_DEVICE and
 * says why; argument checks are those of device.c, scope.c and memory.c.
 * omma_schedule_name/parse (schedule.c) are built in both. */
#include <stddef.h>

#include "gpu/none.h"
#include "omma/device.h"

omma_status omma_device_count(int *n)
{
    if (!n)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_count: n is NULL");
    *n = 0;
    return OMMA_FAIL(OMMA_ERR_NO_DEVICE, GPU_NONE_TEXT);
}

omma_status omma_device_open(int ordinal, omma_device **out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_open: out is NULL");
    *out = NULL;
    (void)ordinal;
    return GPU_NONE_FAIL("omma_device_open");
}

omma_status omma_device_adopt(void *cu_context, omma_device **out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_adopt: out is NULL");
    *out = NULL;
    if (!cu_context)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_adopt: context is NULL");
    return GPU_NONE_FAIL("omma_device_adopt");
}

void omma_device_close(omma_device *dev)
{
    (void)dev;
}

int omma_device_ordinal(const omma_device *dev)
{
    (void)dev;
    return -1;
}

void *omma_device_context(const omma_device *dev)
{
    (void)dev;
    return NULL;
}

omma_status omma_device_enter(omma_device *dev, omma_scope *scope)
{
    if (!scope)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_enter: scope is NULL");
    scope->dev_ = NULL;
    if (!dev)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_enter: device is NULL");
    return GPU_NONE_FAIL("omma_device_enter");
}

omma_status omma_device_leave(omma_scope *scope)
{
    if (!scope)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_leave: scope is NULL");
    return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_leave: scope not entered "
                                           "(" GPU_NONE_TEXT ")");
}

omma_status omma_device_call(omma_device *dev, omma_status (*fn)(void *arg), void *arg)
{
    (void)arg;
    if (!fn)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_call: fn is NULL");
    if (!dev)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_call: device is NULL");
    return GPU_NONE_FAIL("omma_device_call");
}

unsigned omma_scope_depth(void)
{
    return 0;
}

omma_status omma_device_set_schedule(int ordinal, omma_schedule policy)
{
    (void)ordinal;
    if ((unsigned)policy > OMMA_SCHEDULE_BLOCKING)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_set_schedule: unknown policy %d",
                         (int)policy);
    return GPU_NONE_FAIL("omma_device_set_schedule");
}

/* The calls on an open device: there is none, so dev is NULL or invalid. */
#define NEED_DEVICE(dev, out, fn)                                                                  \
    do {                                                                                           \
        if (!(dev) || !(out))                                                                      \
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, fn ": NULL argument");                          \
        return GPU_NONE_FAIL(fn);                                                                  \
    } while (0)

omma_status omma_device_get_schedule(omma_device *dev, omma_schedule *out)
{
    NEED_DEVICE(dev, out, "omma_device_get_schedule");
}

omma_status omma_device_get_info(omma_device *dev, omma_device_info *out)
{
    NEED_DEVICE(dev, out, "omma_device_get_info");
}

omma_status omma_device_check_health(omma_device *dev)
{
    if (!dev)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_check_health: device is NULL");
    return GPU_NONE_FAIL("omma_device_check_health");
}

omma_status omma_device_read_metrics(omma_device *dev, omma_device_metrics *out)
{
    NEED_DEVICE(dev, out, "omma_device_read_metrics");
}

omma_status omma_device_get_transfers(const omma_device *dev, omma_transfer_counters *out)
{
    NEED_DEVICE(dev, out, "omma_device_get_transfers");
}

omma_status omma_device_get_memory_stats(omma_device *dev, omma_memory_stats *out)
{
    NEED_DEVICE(dev, out, "omma_device_get_memory_stats");
}

omma_status omma_device_trim_memory(omma_device *dev, uint64_t keep_bytes)
{
    (void)keep_bytes;
    if (!dev)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_trim_memory: device is NULL");
    return GPU_NONE_FAIL("omma_device_trim_memory");
}
