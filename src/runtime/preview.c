/* The previews' want / due / put / get (preview.h). The want fields are
 * relaxed atomics: a race between two viewers' wants or a want and a due
 * costs at most one preview of the other size, never a wrong image. */
#include "runtime/preview.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

#define MIN_INTERVAL_NS 50000000ull

typedef struct cam_preview {
    atomic_uint_fast64_t until; /* the wants' end, core_now_ns() */
    atomic_uint_fast64_t next_due;
    atomic_uint_fast64_t interval_ns;
    atomic_int side;
    pthread_mutex_t lock; /* the image below */
    uint8_t *rgb;
    size_t cap;
    int w, h, frame_w, frame_h;
    uint64_t seq, capture_ns, version;
} cam_preview;

struct rt_preview {
    int n;
    cam_preview *cams;
    atomic_uint_fast64_t count;
};

omma_status rt_preview_create(int n_cameras, rt_preview **out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_preview_create: NULL out");
    *out = NULL;
    if (n_cameras < 1)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_preview_create: %d cameras", n_cameras);
    rt_preview *p = calloc(1, sizeof *p);
    cam_preview *cams = calloc((size_t)n_cameras, sizeof *cams);
    if (!p || !cams) {
        free(p);
        free(cams);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "previews of %d cameras", n_cameras);
    }
    for (int i = 0; i < n_cameras; i++)
        pthread_mutex_init(&cams[i].lock, NULL);
    p->n = n_cameras;
    p->cams = cams;
    *out = p;
    return OMMA_OK;
}

void rt_preview_destroy(rt_preview *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->n; i++) {
        pthread_mutex_destroy(&p->cams[i].lock);
        free(p->cams[i].rgb);
    }
    free(p->cams);
    free(p);
}

void rt_preview_want(rt_preview *p, int camera, int max_side, uint64_t interval_ns, uint64_t now_ns)
{
    if (!p || camera < 0 || camera >= p->n)
        return;
    cam_preview *c = &p->cams[camera];
    max_side = max_side < 16 ? 16 : max_side > RT_PREVIEW_MAX_SIDE ? RT_PREVIEW_MAX_SIDE : max_side;
    interval_ns = interval_ns < MIN_INTERVAL_NS ? MIN_INTERVAL_NS : interval_ns;
    int alive = atomic_load_explicit(&c->until, memory_order_relaxed) > now_ns;
    if (!alive || max_side >= atomic_load_explicit(&c->side, memory_order_relaxed))
        atomic_store_explicit(&c->side, max_side, memory_order_relaxed);
    if (!alive || interval_ns < atomic_load_explicit(&c->interval_ns, memory_order_relaxed))
        atomic_store_explicit(&c->interval_ns, interval_ns, memory_order_relaxed);
    if (!alive) /* the first preview at once */
        atomic_store_explicit(&c->next_due, 0, memory_order_relaxed);
    atomic_store_explicit(&c->until, now_ns + RT_PREVIEW_HOLD_NS, memory_order_release);
}

int rt_preview_due(rt_preview *p, int camera, uint64_t now_ns)
{
    if (!p || camera < 0 || camera >= p->n)
        return 0;
    cam_preview *c = &p->cams[camera];
    if (atomic_load_explicit(&c->until, memory_order_acquire) <= now_ns)
        return 0;
    uint_fast64_t next = atomic_load_explicit(&c->next_due, memory_order_relaxed);
    if (now_ns < next)
        return 0;
    uint64_t interval = atomic_load_explicit(&c->interval_ns, memory_order_relaxed);
    if (!atomic_compare_exchange_strong_explicit(&c->next_due, &next, now_ns + interval,
                                                 memory_order_relaxed, memory_order_relaxed))
        return 0;
    return atomic_load_explicit(&c->side, memory_order_relaxed);
}

omma_status rt_preview_put(rt_preview *p, int camera, const uint8_t *rgb, int w, int h, int frame_w,
                           int frame_h, uint64_t seq, uint64_t capture_ns)
{
    if (!p || !rgb)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_preview_put: NULL argument");
    if (camera < 0 || camera >= p->n)
        return OMMA_OK;
    if (w < 1 || h < 1 || w > RT_PREVIEW_MAX_SIDE || h > RT_PREVIEW_MAX_SIDE)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_preview_put: size %dx%d out of 1..%d", w, h,
                         RT_PREVIEW_MAX_SIDE);
    cam_preview *c = &p->cams[camera];
    size_t bytes = (size_t)w * (size_t)h * 3;
    pthread_mutex_lock(&c->lock);
    if (c->cap < bytes) {
        /* Grows to the largest preview once; no allocation after that. */
        uint8_t *grown = realloc(c->rgb, (size_t)RT_PREVIEW_MAX_SIDE * RT_PREVIEW_MAX_SIDE * 3);
        if (!grown) {
            pthread_mutex_unlock(&c->lock);
            return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "a preview of camera %d", camera);
        }
        c->rgb = grown;
        c->cap = (size_t)RT_PREVIEW_MAX_SIDE * RT_PREVIEW_MAX_SIDE * 3;
    }
    memcpy(c->rgb, rgb, bytes);
    c->w = w, c->h = h, c->frame_w = frame_w, c->frame_h = frame_h;
    c->seq = seq, c->capture_ns = capture_ns;
    c->version++;
    pthread_mutex_unlock(&c->lock);
    atomic_fetch_add_explicit(&p->count, 1, memory_order_relaxed);
    return OMMA_OK;
}

int rt_preview_get(rt_preview *p, int camera, rt_preview_image *img)
{
    if (!p || !img || camera < 0 || camera >= p->n)
        return 0;
    cam_preview *c = &p->cams[camera];
    int rc = 0;
    pthread_mutex_lock(&c->lock);
    if (c->version > img->version) {
        size_t bytes = (size_t)c->w * (size_t)c->h * 3;
        if (img->cap < bytes) {
            uint8_t *grown = realloc(img->rgb, bytes);
            if (!grown) {
                pthread_mutex_unlock(&c->lock);
                return -1;
            }
            img->rgb = grown;
            img->cap = bytes;
        }
        memcpy(img->rgb, c->rgb, bytes);
        img->w = c->w, img->h = c->h, img->frame_w = c->frame_w, img->frame_h = c->frame_h;
        img->seq = c->seq, img->capture_ns = c->capture_ns, img->version = c->version;
        rc = 1;
    }
    pthread_mutex_unlock(&c->lock);
    return rc;
}

uint64_t rt_preview_count(const rt_preview *p)
{
    return p ? atomic_load_explicit(&((rt_preview *)p)->count, memory_order_relaxed) : 0;
}
