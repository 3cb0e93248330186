/* Test support: the real inputs the engine tests feed the face models,
 * made from testdata/astronaut.png. */
#ifndef OMMA_TESTS_FACE_INPUTS_H
#define OMMA_TESTS_FACE_INPUTS_H

#include "omma/status.h"
#include "support/png_image.h"

#define FACE_MODEL_SHORT OMMA_MODELS_DIR "/face_detection_short_range.tflite"
#define FACE_MODEL_FULL OMMA_MODELS_DIR "/face_detection_full_range.tflite"
#define FACE_MODEL_MESH OMMA_MODELS_DIR "/face_landmark.tflite"
#define FACE_MODEL_MESH_478 OMMA_MODELS_DIR "/face_landmark_with_attention.tflite"
#define FACE_GEOMETRY OMMA_MODELS_DIR "/geometry_pipeline_metadata_landmarks.binarypb"
#define FACE_PHOTO OMMA_TESTDATA_DIR "/astronaut.png"

/* The whole photo resized (bilinear) to size x size, values in [-1, 1]:
 * size * size * 3 floats, NHWC. */
omma_status face_detector_input(const rgb_image *img, int size, float *out);

/* A 192x192 FaceMesh input in [0, 1]: the square of side `side` pixels
 * centred on (cx, cy) in the photo. */
void face_mesh_input(const rgb_image *img, float cx, float cy, float side, float *out);

/* The astronaut's face crop used where the exact box matters little (rewrite
 * and determinism tests): centre and side derived in test_face_evidence.c. */
#define FACE_CROP_CX 226.0f
#define FACE_CROP_CY 130.0f
#define FACE_CROP_SIDE 140.0f

#endif
