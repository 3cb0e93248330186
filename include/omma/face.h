/* omma — frames in, faces out: the public types of the face pipeline.
 *
 * Coordinates are frame pixels, continuous: pixel (i, j) covers
 * [i, i + 1) x [j, j + 1), so its centre is (i + 0.5, j + 0.5); x grows to
 * the right, y downwards.
 *
 * These are plain value types: any thread may use its own copies. */
#ifndef OMMA_FACE_H
#define OMMA_FACE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 8-bit pixel layouts of a frame. YUV formats are BT.601 limited range
 * (Y in 16..235, U and V in 16..240), chroma subsampled 2x2 (a chroma row
 * covers two luma rows; odd sizes round the chroma plane up). */
typedef enum omma_pixel_format {
    OMMA_PIXEL_RGB = 0, /* one plane, R G B per pixel */
    OMMA_PIXEL_BGR,     /* one plane, B G R */
    OMMA_PIXEL_RGBA,    /* one plane, R G B A (alpha ignored) */
    OMMA_PIXEL_BGRA,    /* one plane, B G R A (alpha ignored) */
    OMMA_PIXEL_NV12,    /* plane 0: Y; plane 1: interleaved U V, half size */
    OMMA_PIXEL_I420,    /* plane 0: Y; plane 1: U; plane 2: V, half size */
    OMMA_PIXEL_FORMAT_COUNT
} omma_pixel_format;

/* Where a frame's pixels live. */
typedef enum omma_memory {
    OMMA_MEMORY_HOST = 0, /* host memory, pageable or pinned (the default) */
    OMMA_MEMORY_DEVICE,   /* device memory of the GPU the pipeline runs on */
} omma_memory;

/* A frame the caller owns; omma only reads it during the call it is passed
 * to. pitch[i] is the distance in bytes between rows of plane i (at least
 * the row's bytes; padding allowed). Unused planes are ignored. A frame
 * zero-initialised but for its size, format and planes is in host memory. */
typedef struct omma_frame {
    int width, height;
    omma_pixel_format format;
    const uint8_t *planes[3];
    int pitch[3];
    omma_memory memory;
} omma_frame;

#define OMMA_FACE_KEYPOINTS 6
#define OMMA_FACE_LANDMARKS 468
#define OMMA_FACE_IRIS_LANDMARKS 10 /* the attention mesh's 468..477 */
#define OMMA_FACE_LANDMARKS_WITH_IRISES 478

/* An axis-aligned box in frame pixels. */
typedef struct omma_box {
    float xmin, ymin, xmax, ymax;
} omma_box;

/* One detector result after non-maximum suppression, in frame pixels.
 * Keypoints, in order: right eye, left eye (the person's own right and
 * left: the right eye appears on the image left of an upright face), nose
 * tip, mouth centre, right ear tragion, left ear tragion. */
typedef struct omma_detection {
    float score;                            /* sigmoid of the detector logit */
    omma_box box;
    float keypoints[OMMA_FACE_KEYPOINTS][2]; /* (x, y) */
} omma_detection;

/* One tracked face in one frame. */
typedef struct omma_face {
    int id;            /* stable while the face is tracked; never reused by
                        * one tracker */
    float score;       /* detector score of the detection that started the track */
    omma_box box;      /* bounding box of the landmarks */
    float keypoints[OMMA_FACE_KEYPOINTS][2]; /* as omma_detection's, taken from
                        * this frame's landmarks (eye centres from the corners
                        * 33/133 and 362/263, nose tip 1, mouth centre 13/14,
                        * ear tragions 234 and 454): they follow the face */
    float landmarks[OMMA_FACE_LANDMARKS][3]; /* FaceMesh points (x, y, z): x, y in
                        * frame pixels; z relative depth in pixels at the frame's
                        * scale (scaled like x), smaller = nearer the camera */
    float presence;    /* sigmoid of FaceMesh's face flag; tracked while >= 0.5 */
    int n_landmarks;   /* 468 (FaceMesh), or 478 with the attention mesh
                        * (omma_face_pipeline_options.mesh_points 478): its
                        * lips and eyes refine landmarks' x, y and irises
                        * holds points 468..477 */
    float irises[OMMA_FACE_IRIS_LANDMARKS][3]; /* landmarks 468..477 with 478
                        * landmarks (docs/OUTPUT.md): 468 the centre of the
                        * iris of the eye whose contour starts at landmark 33,
                        * 469..472 its edge; 473 the other's centre, 474..477
                        * its edge; z the mean z of the eye's contour. Zero
                        * with 468 landmarks. */
    int has_head_pose; /* omma_face_pipeline_options.head_pose: the fields below */
    float head_pose[16]; /* row-major 4x4 facial transformation matrix
                        * (MediaPipe's face geometry: canonical face model
                        * in cm -> camera space, docs/OUTPUT.md) */
    float yaw, pitch, roll; /* degrees, from head_pose (docs/OUTPUT.md) */
} omma_face;

#ifdef __cplusplus
}
#endif
#endif
