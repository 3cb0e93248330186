/* The per-process device table: one omma_device per GPU ordinal (holding
 * one reference on the primary context), plus adopted application contexts.
 * The table is the only global mutable state of the gpu layer; one mutex
 * guards it, and opening or closing holds it for the whole retain/release so
 * that concurrent opens of an ordinal make exactly one context. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/device_private.h"
#include "gpu/nvml.h"
#include "gpu/schedule.h"
#include "omma/log.h"

static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static int table_size = -1;            /* GPUs visible; -1 before first use */
static omma_device **by_ordinal;       /* [table_size] */
static unsigned char *schedule_is_set; /* [table_size]: set_schedule was called */
static omma_device *adopted;           /* list of adopted contexts */

/* Called with table_lock held. */
static omma_status table_init(void)
{
    if (table_size >= 0)
        return OMMA_OK;
    OMMA_TRY(gpu_driver_load());
    int n = 0;
    OMMA_TRY(OMMA_CK(gpu_cu.cuDeviceGetCount(&n)));
    if (n <= 0)
        return OMMA_FAIL(OMMA_ERR_NO_DEVICE, "the NVIDIA driver is loaded but sees no GPU");
    by_ordinal = calloc((size_t)n, sizeof *by_ordinal);
    schedule_is_set = calloc((size_t)n, 1);
    if (!by_ordinal || !schedule_is_set) {
        free(by_ordinal);
        free(schedule_is_set);
        by_ordinal = NULL;
        schedule_is_set = NULL;
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "device table of %d entries", n);
    }
    table_size = n;
    return OMMA_OK;
}

static omma_status check_ordinal(int ordinal)
{
    if (ordinal >= 0 && ordinal < table_size)
        return OMMA_OK;
    const char *visible = getenv("CUDA_VISIBLE_DEVICES");
    return OMMA_FAIL(OMMA_ERR_NO_DEVICE,
                     "no GPU with ordinal %d: this process sees %d GPU(s), ordinals 0..%d "
                     "(CUDA_VISIBLE_DEVICES=%s)",
                     ordinal, table_size, table_size - 1, visible ? visible : "unset");
}

omma_status omma_device_count(int *n)
{
    if (!n)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_count: n is NULL");
    *n = 0;
    pthread_mutex_lock(&table_lock);
    omma_status st = table_init();
    if (st == OMMA_OK)
        *n = table_size;
    pthread_mutex_unlock(&table_lock);
    return st;
}

static omma_device *device_new(int ordinal, CUdevice cu, CUcontext ctx, int is_adopted)
{
    omma_device *dev = calloc(1, sizeof *dev);
    if (!dev)
        return NULL;
    if (pthread_mutex_init(&dev->lock, NULL) != 0) {
        free(dev);
        return NULL;
    }
    dev->ordinal = ordinal;
    dev->cu = cu;
    dev->ctx = ctx;
    dev->adopted = is_adopted;
    dev->refs = 1;
    atomic_init(&dev->lost, 0);
    return dev;
}

/* Retains the primary context of `ordinal` and wraps it (table_lock held). */
static omma_status open_primary(int ordinal, omma_device **out)
{
    CUdevice cu;
    OMMA_TRY(OMMA_CK(gpu_cu.cuDeviceGet(&cu, ordinal)));
    unsigned flags = 0;
    int active = 0;
    OMMA_TRY(OMMA_CK(gpu_cu.cuDevicePrimaryCtxGetState(cu, &flags, &active)));
    if (!schedule_is_set[ordinal]) {
        if (!active) {
            omma_schedule policy = gpu_schedule_default();
            unsigned want = (flags & ~(unsigned)CU_CTX_SCHED_MASK) | gpu_schedule_flags(policy);
            OMMA_TRY(OMMA_CK(gpu_cu.cuDevicePrimaryCtxSetFlags(cu, want)));
        } else {
            omma_log(OMMA_LOG_INFO,
                     "device %d: primary context already active (scheduling %s); omma keeps "
                     "its flags",
                     ordinal, omma_schedule_name(gpu_schedule_of_flags(flags)));
        }
    }
    CUcontext ctx = NULL;
    OMMA_TRY(OMMA_CK(gpu_cu.cuDevicePrimaryCtxRetain(&ctx, cu)));
    omma_device *dev = device_new(ordinal, cu, ctx, 0);
    if (!dev) {
        gpu_cu.cuDevicePrimaryCtxRelease(cu);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "omma_device for GPU %d", ordinal);
    }
    by_ordinal[ordinal] = dev;
    *out = dev;
    return OMMA_OK;
}

omma_status omma_device_open(int ordinal, omma_device **out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_open: out is NULL");
    *out = NULL;
    pthread_mutex_lock(&table_lock);
    omma_status st = table_init();
    if (st == OMMA_OK)
        st = check_ordinal(ordinal);
    if (st == OMMA_OK) {
        if (by_ordinal[ordinal]) {
            by_ordinal[ordinal]->refs++;
            *out = by_ordinal[ordinal];
        } else {
            st = open_primary(ordinal, out);
        }
    }
    pthread_mutex_unlock(&table_lock);
    return st;
}

/* The device of a context: push it, ask, pop it. */
static omma_status device_of_context(CUcontext ctx, CUdevice *out)
{
    OMMA_TRY(OMMA_CK(gpu_cu.cuCtxPushCurrent(ctx)));
    omma_status st = OMMA_CK(gpu_cu.cuCtxGetDevice(out));
    CUcontext popped;
    gpu_cu.cuCtxPopCurrent(&popped);
    return st;
}

static omma_status adopt_locked(CUcontext ctx, omma_device **out)
{
    for (omma_device *d = adopted; d; d = d->next) {
        if (d->ctx == ctx) {
            d->refs++;
            *out = d;
            return OMMA_OK;
        }
    }
    CUdevice cu;
    OMMA_TRY(device_of_context(ctx, &cu));
    int ordinal = -1;
    for (int i = 0; i < table_size; i++) {
        CUdevice di;
        if (gpu_cu.cuDeviceGet(&di, i) == CUDA_SUCCESS && di == cu)
            ordinal = i;
    }
    if (ordinal < 0)
        return OMMA_FAIL(OMMA_ERR_NO_DEVICE, "the adopted context's device is not visible");
    omma_device *prim = by_ordinal[ordinal];
    if (prim && prim->ctx == ctx) {
        prim->refs++;
        *out = prim;
        return OMMA_OK;
    }
    /* Is it the primary context that omma has not opened yet? Only ask when
     * the primary context is active: retaining an inactive one creates it. */
    unsigned flags;
    int active = 0;
    OMMA_TRY(OMMA_CK(gpu_cu.cuDevicePrimaryCtxGetState(cu, &flags, &active)));
    if (active && !prim) {
        CUcontext primary = NULL;
        OMMA_TRY(OMMA_CK(gpu_cu.cuDevicePrimaryCtxRetain(&primary, cu)));
        gpu_cu.cuDevicePrimaryCtxRelease(cu);
        if (primary == ctx)
            return open_primary(ordinal, out);
    }
    omma_device *dev = device_new(ordinal, cu, ctx, 1);
    if (!dev)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "omma_device for an adopted context");
    dev->next = adopted;
    adopted = dev;
    *out = dev;
    return OMMA_OK;
}

omma_status omma_device_adopt(void *cu_context, omma_device **out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_adopt: out is NULL");
    *out = NULL;
    if (!cu_context)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_adopt: context is NULL");
    pthread_mutex_lock(&table_lock);
    omma_status st = table_init();
    if (st == OMMA_OK)
        st = adopt_locked((CUcontext)cu_context, out);
    pthread_mutex_unlock(&table_lock);
    return st;
}

static void teardown(omma_device *dev)
{
    omma_scope scope;
    if (omma_device_enter(dev, &scope) == OMMA_OK) {
        gpu_streams_destroy(dev);
        gpu_memory_destroy(dev);
        gpu_busy_destroy(dev);
        omma_device_leave(&scope);
    } else {
        omma_log(OMMA_LOG_WARN, "device %d: closing without its context: %s", dev->ordinal,
                 omma_last_error());
    }
    if (!dev->adopted)
        gpu_cu.cuDevicePrimaryCtxRelease(dev->cu);
    pthread_mutex_destroy(&dev->lock);
    free(dev);
}

void omma_device_close(omma_device *dev)
{
    if (!dev)
        return;
    pthread_mutex_lock(&table_lock);
    if (--dev->refs > 0) {
        pthread_mutex_unlock(&table_lock);
        return;
    }
    if (dev->adopted) {
        for (omma_device **p = &adopted; *p; p = &(*p)->next) {
            if (*p == dev) {
                *p = dev->next;
                break;
            }
        }
    } else if (by_ordinal[dev->ordinal] == dev) {
        by_ordinal[dev->ordinal] = NULL;
    }
    teardown(dev);
    pthread_mutex_unlock(&table_lock);
}

int omma_device_ordinal(const omma_device *dev) { return dev ? dev->ordinal : -1; }

void *omma_device_context(const omma_device *dev) { return dev ? (void *)dev->ctx : NULL; }

omma_status omma_device_set_schedule(int ordinal, omma_schedule policy)
{
    if ((unsigned)policy > OMMA_SCHEDULE_BLOCKING)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_set_schedule: unknown policy %d",
                         (int)policy);
    pthread_mutex_lock(&table_lock);
    omma_status st = table_init();
    if (st == OMMA_OK)
        st = check_ordinal(ordinal);
    if (st == OMMA_OK && by_ordinal[ordinal])
        st = OMMA_FAIL(OMMA_ERR_BUSY,
                       "device %d is already open: set its scheduling policy before the first "
                       "omma_device_open",
                       ordinal);
    CUdevice cu = 0;
    unsigned flags = 0;
    int active = 0;
    if (st == OMMA_OK)
        st = OMMA_CK(gpu_cu.cuDeviceGet(&cu, ordinal));
    if (st == OMMA_OK)
        st = OMMA_CK(gpu_cu.cuDevicePrimaryCtxGetState(cu, &flags, &active));
    if (st == OMMA_OK && active)
        st = OMMA_FAIL(OMMA_ERR_BUSY,
                       "device %d: the primary context is already active (the CUDA runtime or "
                       "another library used it first, with scheduling %s); its policy can "
                       "only be set before that",
                       ordinal, omma_schedule_name(gpu_schedule_of_flags(flags)));
    if (st == OMMA_OK) {
        omma_schedule resolved =
            policy == OMMA_SCHEDULE_DEFAULT ? gpu_schedule_default() : policy;
        unsigned want = (flags & ~(unsigned)CU_CTX_SCHED_MASK) | gpu_schedule_flags(resolved);
        st = OMMA_CK(gpu_cu.cuDevicePrimaryCtxSetFlags(cu, want));
    }
    if (st == OMMA_OK)
        schedule_is_set[ordinal] = 1;
    pthread_mutex_unlock(&table_lock);
    return st;
}

omma_status omma_device_get_schedule(omma_device *dev, omma_schedule *out)
{
    if (!dev || !out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_get_schedule: NULL argument");
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    unsigned flags = 0;
    omma_status st = OMMA_CK(gpu_cu.cuCtxGetFlags(&flags));
    if (st == OMMA_OK)
        *out = gpu_schedule_of_flags(flags);
    return gpu_leave_keep(&scope, st);
}

static void format_uuid(const CUuuid *u, char *out, size_t size)
{
    const unsigned char *b = (const unsigned char *)u->bytes;
    snprintf(out, size,
             "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
             b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
             b[14], b[15]);
}

static omma_status read_facts(omma_device *dev, omma_device_info *info)
{
    CUdevice cu = dev->cu;
    info->ordinal = dev->ordinal;
    info->adopted = dev->adopted;
    OMMA_TRY(OMMA_CK(gpu_cu.cuDeviceGetName(info->name, (int)sizeof info->name, cu)));
    OMMA_TRY(OMMA_CK(
        gpu_cu.cuDeviceGetPCIBusId(info->pci_bus_id, (int)sizeof info->pci_bus_id, cu)));
    CUuuid uuid;
    OMMA_TRY(OMMA_CK(gpu_cu.cuDeviceGetUuid(&uuid, cu)));
    format_uuid(&uuid, info->uuid, sizeof info->uuid);
    OMMA_TRY(OMMA_CK(gpu_cu.cuDeviceGetAttribute(
        &info->cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cu)));
    OMMA_TRY(OMMA_CK(gpu_cu.cuDeviceGetAttribute(
        &info->cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cu)));
    OMMA_TRY(OMMA_CK(gpu_cu.cuDeviceGetAttribute(
        &info->sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, cu)));
    OMMA_TRY(OMMA_CK(
        gpu_cu.cuDeviceGetAttribute(&info->l2_bytes, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, cu)));
    OMMA_TRY(OMMA_CK(gpu_cu.cuDriverGetVersion(&info->driver_version)));
    size_t total = 0, free_bytes = 0;
    OMMA_TRY(OMMA_CK(gpu_cu.cuMemGetInfo(&free_bytes, &total)));
    info->memory_total = total;
    info->memory_free = free_bytes;
    unsigned flags = 0;
    OMMA_TRY(OMMA_CK(gpu_cu.cuCtxGetFlags(&flags)));
    info->schedule = gpu_schedule_of_flags(flags);
    return OMMA_OK;
}

omma_status omma_device_get_info(omma_device *dev, omma_device_info *out)
{
    if (!dev || !out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_get_info: NULL argument");
    memset(out, 0, sizeof *out);
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    return gpu_leave_keep(&scope, read_facts(dev, out));
}

void gpu_device_mark_lost(omma_device *dev, const char *detail)
{
    pthread_mutex_lock(&dev->lock);
    if (!atomic_load(&dev->lost)) {
        snprintf(dev->lost_detail, sizeof dev->lost_detail, "%s", detail);
        atomic_store(&dev->lost, 1);
    }
    pthread_mutex_unlock(&dev->lock);
}

static omma_status probe(omma_device *dev)
{
    OMMA_TRY(OMMA_CK(gpu_cu.cuCtxSynchronize()));
    CUdeviceptr p = 0;
    OMMA_TRY(OMMA_CK(gpu_cu.cuMemAlloc(&p, 256)));
    OMMA_TRY(OMMA_CK(gpu_cu.cuMemFree(p)));
    (void)dev;
    return OMMA_OK;
}

omma_status omma_device_check_health(omma_device *dev)
{
    if (!dev)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_check_health: device is NULL");
    if (atomic_load(&dev->lost))
        return core_fail_text(OMMA_ERR_DEVICE_LOST, dev->lost_detail);
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    omma_status st = gpu_leave_keep(&scope, probe(dev));
    if (st != OMMA_ERR_DEVICE_LOST)
        return st;
    char name[256] = "";
    gpu_cu.cuDeviceGetName(name, (int)sizeof name, dev->cu);
    char detail[1024];
    snprintf(detail, sizeof detail,
             "device %d (%s) is lost: its context is unusable after a sticky error (%s); "
             "close every omma object on it and restart the process",
             dev->ordinal, name, omma_last_error());
    gpu_device_mark_lost(dev, detail);
    return core_fail_text(OMMA_ERR_DEVICE_LOST, dev->lost_detail);
}

omma_status omma_device_read_metrics(omma_device *dev, omma_device_metrics *out)
{
    if (!dev || !out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_read_metrics: NULL argument");
    memset(out, 0, sizeof *out);
    char pci[32] = "", uuid_text[48] = "";
    CUuuid uuid;
    if (gpu_cu.cuDeviceGetPCIBusId(pci, (int)sizeof pci, dev->cu) != CUDA_SUCCESS)
        pci[0] = '\0';
    if (gpu_cu.cuDeviceGetUuid(&uuid, dev->cu) == CUDA_SUCCESS)
        format_uuid(&uuid, uuid_text, sizeof uuid_text);
    gpu_nvml_read(pci, uuid_text, out);
    return OMMA_OK;
}

omma_status omma_device_get_transfers(const omma_device *dev, omma_transfer_counters *out)
{
    if (!dev || !out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "omma_device_get_transfers: NULL argument");
    /* The atomics are only read; the cast drops const for C11's atomic_load. */
    omma_device *d = (omma_device *)dev;
    out->h2d_bytes = atomic_load(&d->h2d_bytes);
    out->h2d_copies = atomic_load(&d->h2d_copies);
    out->d2h_bytes = atomic_load(&d->d2h_bytes);
    out->d2h_copies = atomic_load(&d->d2h_copies);
    out->d2d_bytes = atomic_load(&d->d2d_bytes);
    out->d2d_copies = atomic_load(&d->d2d_copies);
    return OMMA_OK;
}
