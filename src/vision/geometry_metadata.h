/* Private: MediaPipe's face geometry metadata (geometry_pipeline_metadata_
 * landmarks.binarypb, the GeometryPipelineMetadata protobuf message of
 * mediapipe/modules/face_geometry/protos): the canonical face model's 468
 * vertices (x, y, z in centimetres) and the Procrustes weight of each.
 *
 * A small strict reader of the protobuf wire format for this one message:
 * every varint, length and field is checked against the bytes (fields in
 * any order, unknown fields skipped by their wire type, packed and
 * unpacked repeated fields); the message must describe the landmark
 * pipeline's input (input_source DEFAULT or FACE_LANDMARK_PIPELINE), a
 * VERTEX_PT mesh (x, y, z, u, v per vertex) of exactly 468 vertices, and
 * weights that are finite, non-negative, of landmarks that exist, with a
 * positive total. A violation is OMMA_ERR_FORMAT naming `what`, the field
 * and the byte offset. Fuzzed by fuzz/fuzz_geometry.c. Any thread. */
#ifndef OMMA_VISION_GEOMETRY_METADATA_H
#define OMMA_VISION_GEOMETRY_METADATA_H

#include <stddef.h>
#include <stdint.h>

#include "omma/face.h"
#include "omma/status.h"

typedef struct vis_geometry {
    float canonical[OMMA_FACE_LANDMARKS][3]; /* the canonical face, cm */
    float weight[OMMA_FACE_LANDMARKS]; /* 0 for landmarks not in the basis */
    int n_basis; /* landmarks of positive weight */
} vis_geometry;

/* Parses size bytes at b into *out. */
omma_status vis_geometry_parse(const uint8_t *b, size_t size, const char *what, vis_geometry *out);

/* Reads and parses a file (at most 16 MiB). OMMA_ERR_IO naming the path
 * when it cannot be read. */
omma_status vis_geometry_load(const char *path, vis_geometry *out);

#endif
