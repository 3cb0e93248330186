/* The C API's faces for tests/python/test_pipeline.py to compare with the
 * Python package's, bitwise: the CPU face pipeline on an image, given to
 * CAMERAS cameras as one batch, FRAMES times over.
 *   faces_ref MODELS_DIR IMAGE FRAMES CAMERAS OUT
 * OUT gets, for each frame of each camera in order, an int32 count then
 * that many omma_face structs as they lie in memory. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "io/image_file.h"
#include "omma/omma.h"

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: faces_ref MODELS_DIR IMAGE FRAMES CAMERAS OUT\n");
        return 2;
    }
    int frames = atoi(argv[3]), cameras = atoi(argv[4]);
    if (frames < 1 || cameras < 1 || cameras > 16) {
        fprintf(stderr, "faces_ref: FRAMES >= 1, CAMERAS 1..16\n");
        return 2;
    }
    char det[4096], mesh[4096];
    snprintf(det, sizeof det, "%s/face_detection_short_range.tflite", argv[1]);
    snprintf(mesh, sizeof mesh, "%s/face_landmark.tflite", argv[1]);
    io_image img = {0};
    omma_face_pipeline *p = NULL;
    omma_face_pipeline_options opt;
    omma_face_pipeline_options_init(&opt);
    opt.backend = OMMA_BACKEND_CPU;
    opt.detector_model = det;
    opt.mesh_model = mesh;
    opt.max_batch = cameras;
    omma_status st = io_image_load(argv[2], &img);
    if (st == OMMA_OK)
        st = omma_face_pipeline_create(&opt, &p);
    if (st != OMMA_OK) {
        fprintf(stderr, "faces_ref: %s: %s\n", omma_status_str(st), omma_last_error());
        io_image_free(&img);
        return 1;
    }
    FILE *out = fopen(argv[5], "wb");
    int rc = out ? 0 : 1;
    omma_frame fr[16];
    int cams[16], counts[16];
    omma_face *faces = calloc((size_t)cameras * (size_t)opt.max_faces, sizeof *faces);
    for (int c = 0; c < cameras; c++) {
        fr[c] = io_image_frame(&img);
        cams[c] = c;
    }
    for (int f = 0; f < frames && rc == 0 && faces; f++) {
        st = omma_face_pipeline_process_batch(p, cameras, cams, fr, faces, counts);
        if (st != OMMA_OK) {
            fprintf(stderr, "faces_ref: %s: %s\n", omma_status_str(st), omma_last_error());
            rc = 1;
            break;
        }
        for (int c = 0; c < cameras; c++) {
            int32_t n = counts[c];
            fwrite(&n, sizeof n, 1, out);
            fwrite(faces + (size_t)c * opt.max_faces, sizeof *faces, (size_t)n, out);
        }
    }
    if (!faces)
        rc = 1;
    if (out && fclose(out) != 0)
        rc = 1;
    free(faces);
    omma_face_pipeline_destroy(p);
    io_image_free(&img);
    return rc;
}
