/* Private: a synthetic camera for load tests with known ground truth: a
 * real photo's face moving around a frame (1920x1080 NV12 by default) on a
 * smooth closed path, one frame per index at a given frame rate. Each
 * camera (seed) follows its own phase of the path. Rendering is a copy of a
 * background frame and of a pre-rendered face patch at even coordinates, so
 * a 1080p frame costs two memcpy-like passes. One owner at a time. */
#ifndef OMMA_RUNTIME_SYNTHETIC_SOURCE_H
#define OMMA_RUNTIME_SYNTHETIC_SOURCE_H

#include "omma/face.h"
#include "omma/status.h"
#include "io/image_file.h"

typedef struct rt_synthetic rt_synthetic;

typedef struct rt_synthetic_options {
    int width, height; /* frame size, even, 64..8192 (1920 x 1080) */
    double fps; /* frames per second, (0, 1000] (30) */
    int seed; /* the camera: its phase on the path (0) */
    float face_box[4]; /* the face in the photo: x0, y0, x1, y1 (the
                        * astronaut's: 181, 84, 270, 176) */
    float patch_fraction; /* patch side / frame height, (0, 1] (0.8): the
                           * photo's square around the face, scaled */
    double period_s; /* seconds for one turn of the path (8) */
} rt_synthetic_options;

/* The defaults above. */
void rt_synthetic_options_init(rt_synthetic_options *opt);

/* Prepares the source from an RGB photo (copied; the caller may free it).
 * Errors: OMMA_ERR_INVALID_ARG (NULL, options out of range, a face box not
 * inside the photo), OMMA_ERR_OUT_OF_MEMORY. On failure *out is NULL. */
omma_status rt_synthetic_create(const io_image *photo, const rt_synthetic_options *opt,
                                rt_synthetic **out);

void rt_synthetic_destroy(rt_synthetic *s);

/* Renders frame `index` (>= 0): *frame points into the source's buffer
 * (NV12, host memory, valid until the next call), *timestamp_ms = index /
 * fps, *truth = where the photo's face box is in this frame (x0, y0, x1,
 * y1; may be NULL). */
omma_status rt_synthetic_frame(rt_synthetic *s, long index, omma_frame *frame, double *timestamp_ms,
                               omma_box *truth);

#endif
