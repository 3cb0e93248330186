/* Private: the live view's previews (src/ui), between viewers and the
 * runtime's workers.
 *
 * A viewer asks for a camera's preview (rt_preview_want: a size and a
 * rate, valid for RT_PREVIEW_HOLD_NS): nothing is made for a camera nobody
 * watches. The worker that processes the camera's frames asks
 * rt_preview_due per frame (one relaxed atomic load when unwatched) and,
 * when a preview is due, makes a thumbnail of the frame it holds (GPU: a
 * kernel on the ring slot, only the thumbnail copied to the host; CPU: on
 * the host) and stores it with rt_preview_put (a copy under the camera's
 * own lock). Viewers copy the newest one out with rt_preview_get and encode
 * it on their own threads: the workers never encode, never wait for a
 * viewer and never allocate for one.
 *
 * Threads: create/destroy by the owner (no other call running); the rest
 * from any thread. Calls naming a camera out of range are ignored (want,
 * put) or return 0 (due, get). */
#ifndef OMMA_RUNTIME_PREVIEW_H
#define OMMA_RUNTIME_PREVIEW_H

#include <stddef.h>
#include <stdint.h>

#include "omma/status.h"

/* A want lasts this long (viewers renew it with each request). */
#define RT_PREVIEW_HOLD_NS 3000000000ull
/* Largest preview side (the large view). */
#define RT_PREVIEW_MAX_SIDE 640

typedef struct rt_preview rt_preview;

/* Errors: OMMA_ERR_INVALID_ARG (n_cameras < 1, NULL out),
 * OMMA_ERR_OUT_OF_MEMORY. */
omma_status rt_preview_create(int n_cameras, rt_preview **out);
void rt_preview_destroy(rt_preview *p);

/* A viewer wants previews of `camera` with the longer side at most
 * max_side (16..RT_PREVIEW_MAX_SIDE, clamped), at most one per
 * interval_ns (at least 50 ms), until now_ns + RT_PREVIEW_HOLD_NS. While
 * several wants are alive the largest and fastest wins. */
void rt_preview_want(rt_preview *p, int camera, int max_side, uint64_t interval_ns,
                     uint64_t now_ns);

/* Worker: 0 when no preview of `camera` is due at now_ns; else claims it
 * (the next is due one interval later) and returns the longest side it
 * may have. */
int rt_preview_due(rt_preview *p, int camera, uint64_t now_ns);

/* Worker: stores the newest preview of `camera`: w x h packed RGB8
 * (w, h in 1..RT_PREVIEW_MAX_SIDE), from frame seq captured at
 * capture_ns, of a frame of frame_w x frame_h pixels. Errors:
 * OMMA_ERR_INVALID_ARG (NULL, sizes out of range). */
omma_status rt_preview_put(rt_preview *p, int camera, const uint8_t *rgb, int w, int h, int frame_w,
                           int frame_h, uint64_t seq, uint64_t capture_ns);

/* A viewer's copy of a preview; rgb is the viewer's buffer (grown by get,
 * free()d by the viewer). */
typedef struct rt_preview_image {
    uint8_t *rgb;
    size_t cap;
    int w, h, frame_w, frame_h;
    uint64_t seq, capture_ns;
    uint64_t version; /* the camera's preview count when copied; 0: none */
} rt_preview_image;

/* Copies the newest preview of `camera` into *img when it is newer than
 * img->version: 1 copied, 0 nothing newer (or none yet), -1 out of memory. */
int rt_preview_get(rt_preview *p, int camera, rt_preview_image *img);

/* Previews stored so far, all cameras. */
uint64_t rt_preview_count(const rt_preview *p);

#endif
