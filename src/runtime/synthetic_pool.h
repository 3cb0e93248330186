/* Private: a pool of synthetic camera frames for load tests at scale: one
 * turn of the synthetic camera's path (synthetic_source.h) rendered once
 * into K frames, packed NV12, in pinned host memory (frames a capture card
 * would have written by DMA: the runtime uploads them) or in device memory
 * (frames a GPU decoder would have made: the runtime reads them in place).
 * Any number of cameras play the pool, each from its own phase, at no CPU
 * cost per frame beyond the hand-off; each frame's ground-truth box is
 * known. Immutable after create: any thread may read it. */
#ifndef OMMA_RUNTIME_SYNTHETIC_POOL_H
#define OMMA_RUNTIME_SYNTHETIC_POOL_H

#include "omma/device.h"
#include "omma/face.h"
#include "omma/status.h"
#include "io/image_file.h"
#include "runtime/synthetic_source.h"

#define RT_POOL_MAX_FRAMES 1024

typedef struct rt_synthetic_pool rt_synthetic_pool;

/* Renders `frames` (1..RT_POOL_MAX_FRAMES) frames of the synthetic camera
 * of options *opt (size, face, patch; its seed's phase), its path making
 * one turn over the pool (period_s = frames / fps), into `memory` on dev
 * (OMMA_MEMORY_HOST: pinned host memory; OMMA_MEMORY_DEVICE: device
 * memory). Errors: OMMA_ERR_INVALID_ARG (NULL, frames or memory out of
 * range), OMMA_ERR_OUT_OF_MEMORY, OMMA_ERR_CUDA, and rt_synthetic_create's.
 * *out NULL on failure. */
omma_status rt_synthetic_pool_create(omma_device *dev, const io_image *photo,
                                     const rt_synthetic_options *opt, int frames,
                                     omma_memory memory, rt_synthetic_pool **out);

void rt_synthetic_pool_destroy(rt_synthetic_pool *pool);

/* Frame k (0..frames-1; taken modulo frames): packed NV12 in the pool's
 * memory; *truth (may be NULL) = the face box in it. */
omma_frame rt_synthetic_pool_frame(const rt_synthetic_pool *pool, long k, omma_box *truth);

#endif
