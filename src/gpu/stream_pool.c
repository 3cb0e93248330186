/* Stream and event pools (see stream_pool.h). Every handle the pool made is
 * in one list with its class and whether it is out; lists are short (tens),
 * so a scan under the pool's mutex is all the bookkeeping needed. */
#include "gpu/stream_pool.h"

#include <stdlib.h>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/device_private.h"
#include "gpu/fault.h"
#include "omma/log.h"

typedef struct entry {
    void *handle;
    unsigned char cls; /* gpu_priority or gpu_event_kind */
    unsigned char out; /* handed out now */
} entry;

typedef struct list {
    entry *items;
    size_t n, cap;
    uint64_t acquired; /* acquire calls that succeeded */
} list;

struct gpu_streams {
    pthread_mutex_t lock;
    int priority[GPU_PRIORITY_COUNT];
    list streams, events;
};

/* Creates dev->streams once (the context is current). */
static omma_status pools_of(omma_device *dev, struct gpu_streams **out)
{
    pthread_mutex_lock(&dev->lock);
    omma_status st = OMMA_OK;
    if (!dev->streams) {
        int least = 0, greatest = 0;
        st = OMMA_CK(gpu_cu.cuCtxGetStreamPriorityRange(&least, &greatest));
        struct gpu_streams *p = NULL;
        if (st == OMMA_OK && !(p = calloc(1, sizeof *p)))
            st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "stream pool");
        if (st == OMMA_OK) {
            pthread_mutex_init(&p->lock, NULL);
            p->priority[GPU_PRIORITY_NORMAL] = 0;
            p->priority[GPU_PRIORITY_HIGH] = greatest;
            p->priority[GPU_PRIORITY_LOW] = least;
            dev->streams = p;
        }
    }
    *out = dev->streams;
    pthread_mutex_unlock(&dev->lock);
    return st;
}

static void *take_free(list *l, unsigned cls)
{
    for (size_t i = 0; i < l->n; i++) {
        if (!l->items[i].out && l->items[i].cls == cls) {
            l->items[i].out = 1;
            l->acquired++;
            return l->items[i].handle;
        }
    }
    return NULL;
}

static int append(list *l, void *handle, unsigned cls)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        entry *items = realloc(l->items, cap * sizeof *items);
        if (!items)
            return -1;
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n++] = (entry){handle, (unsigned char)cls, 1};
    l->acquired++;
    return 0;
}

static int give_back(list *l, void *handle)
{
    for (size_t i = 0; i < l->n; i++) {
        if (l->items[i].handle == handle) {
            if (!l->items[i].out)
                return -1;
            l->items[i].out = 0;
            return 0;
        }
    }
    return -1;
}

static omma_status create_stream(struct gpu_streams *p, gpu_priority priority, CUstream *out)
{
    OMMA_TRY(GPU_FAULT_POINT(OMMA_ERR_CUDA, "cuStreamCreateWithPriority"));
    CUstream s = NULL;
    OMMA_TRY(OMMA_CK(
        gpu_cu.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, p->priority[priority])));
    if (append(&p->streams, s, priority) != 0) {
        gpu_cu.cuStreamDestroy(s);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "stream pool list");
    }
    *out = s;
    return OMMA_OK;
}

static omma_status stream_acquire(omma_device *dev, gpu_priority priority, CUstream *out)
{
    struct gpu_streams *p;
    OMMA_TRY(pools_of(dev, &p));
    pthread_mutex_lock(&p->lock);
    omma_status st = OMMA_OK;
    *out = take_free(&p->streams, priority);
    if (!*out)
        st = create_stream(p, priority, out);
    pthread_mutex_unlock(&p->lock);
    return st;
}

omma_status gpu_stream_acquire(omma_device *dev, gpu_priority priority, CUstream *out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "gpu_stream_acquire: out is NULL");
    *out = NULL;
    if (!dev || (unsigned)priority >= GPU_PRIORITY_COUNT)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "gpu_stream_acquire: bad device or priority");
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    return gpu_leave_keep(&scope, stream_acquire(dev, priority, out));
}

static omma_status create_event(struct gpu_streams *p, gpu_event_kind kind, CUevent *out)
{
    OMMA_TRY(GPU_FAULT_POINT(OMMA_ERR_CUDA, "cuEventCreate"));
    CUevent e = NULL;
    unsigned flags = kind == GPU_EVENT_SYNC ? CU_EVENT_DISABLE_TIMING : CU_EVENT_DEFAULT;
    OMMA_TRY(OMMA_CK(gpu_cu.cuEventCreate(&e, flags)));
    if (append(&p->events, e, kind) != 0) {
        gpu_cu.cuEventDestroy(e);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "event pool list");
    }
    *out = e;
    return OMMA_OK;
}

static omma_status event_acquire(omma_device *dev, gpu_event_kind kind, CUevent *out)
{
    struct gpu_streams *p;
    OMMA_TRY(pools_of(dev, &p));
    pthread_mutex_lock(&p->lock);
    omma_status st = OMMA_OK;
    *out = take_free(&p->events, kind);
    if (!*out)
        st = create_event(p, kind, out);
    pthread_mutex_unlock(&p->lock);
    return st;
}

omma_status gpu_event_acquire(omma_device *dev, gpu_event_kind kind, CUevent *out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "gpu_event_acquire: out is NULL");
    *out = NULL;
    if (!dev || (unsigned)kind >= GPU_EVENT_KIND_COUNT)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "gpu_event_acquire: bad device or kind");
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    return gpu_leave_keep(&scope, event_acquire(dev, kind, out));
}

static void release(omma_device *dev, int streams, void *handle)
{
    if (!dev || !handle)
        return;
    pthread_mutex_lock(&dev->lock);
    struct gpu_streams *p = dev->streams;
    pthread_mutex_unlock(&dev->lock);
    int bad = 1;
    if (p) {
        pthread_mutex_lock(&p->lock);
        bad = give_back(streams ? &p->streams : &p->events, handle) != 0;
        pthread_mutex_unlock(&p->lock);
    }
    if (bad)
        omma_log(OMMA_LOG_ERROR, "device %d: %s %p given back to a pool that did not hand it "
                                 "out (or given back twice); ignored",
                 dev->ordinal, streams ? "stream" : "event", handle);
}

void gpu_stream_release(omma_device *dev, CUstream stream) { release(dev, 1, stream); }

void gpu_event_release(omma_device *dev, CUevent event) { release(dev, 0, event); }

static uint64_t count_out(const list *l)
{
    uint64_t n = 0;
    for (size_t i = 0; i < l->n; i++)
        n += l->items[i].out;
    return n;
}

void gpu_pool_stats_get(omma_device *dev, gpu_pool_stats *out)
{
    *out = (gpu_pool_stats){0};
    if (!dev)
        return;
    pthread_mutex_lock(&dev->lock);
    struct gpu_streams *p = dev->streams;
    pthread_mutex_unlock(&dev->lock);
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    out->streams_created = p->streams.n;
    out->streams_acquired = p->streams.acquired;
    out->streams_in_use = count_out(&p->streams);
    out->events_created = p->events.n;
    out->events_acquired = p->events.acquired;
    out->events_in_use = count_out(&p->events);
    pthread_mutex_unlock(&p->lock);
}

omma_status gpu_priority_value(omma_device *dev, gpu_priority priority, int *out)
{
    if (!dev || !out || (unsigned)priority >= GPU_PRIORITY_COUNT)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "gpu_priority_value: bad argument");
    omma_scope scope;
    OMMA_TRY(omma_device_enter(dev, &scope));
    struct gpu_streams *p = NULL;
    omma_status st = pools_of(dev, &p);
    if (st == OMMA_OK)
        *out = p->priority[priority];
    return gpu_leave_keep(&scope, st);
}

void gpu_streams_destroy(omma_device *dev)
{
    struct gpu_streams *p = dev->streams;
    if (!p)
        return;
    uint64_t leaked_streams = count_out(&p->streams), leaked_events = count_out(&p->events);
    if (leaked_streams || leaked_events)
        omma_log(OMMA_LOG_WARN, "device %d closed with %llu stream(s) and %llu event(s) still "
                                "taken from its pools; they are left to the context",
                 dev->ordinal, (unsigned long long)leaked_streams,
                 (unsigned long long)leaked_events);
    for (size_t i = 0; i < p->streams.n; i++)
        if (!p->streams.items[i].out)
            gpu_cu.cuStreamDestroy((CUstream)p->streams.items[i].handle);
    for (size_t i = 0; i < p->events.n; i++)
        if (!p->events.items[i].out)
            gpu_cu.cuEventDestroy((CUevent)p->events.items[i].handle);
    free(p->streams.items);
    free(p->events.items);
    pthread_mutex_destroy(&p->lock);
    free(p);
    dev->streams = NULL;
}
