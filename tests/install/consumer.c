/* A program built against an installed omma (tests/install/test_install.sh):
 * the CPU face pipeline on a PNG photo, the face count printed.
 *   consumer PHOTO.png DETECTOR.tflite FACEMESH.tflite
 * Uses only <omma/omma.h> (and libpng to read the photo). */
#include <png.h>
#include <stdio.h>
#include <stdlib.h>

#include <omma/omma.h>

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: consumer PHOTO.png DETECTOR.tflite FACEMESH.tflite\n");
        return 2;
    }
    printf("omma %s (commit %s) features: %s\n", omma_version(), omma_build_commit(),
           omma_build_features());

    png_image img = {.version = PNG_IMAGE_VERSION};
    if (!png_image_begin_read_from_file(&img, argv[1])) {
        fprintf(stderr, "consumer: %s: %s\n", argv[1], img.message);
        return 1;
    }
    img.format = PNG_FORMAT_RGB;
    uint8_t *rgb = malloc(PNG_IMAGE_SIZE(img));
    if (!rgb || !png_image_finish_read(&img, NULL, rgb, 0, NULL)) {
        fprintf(stderr, "consumer: %s: %s\n", argv[1], rgb ? img.message : "out of memory");
        png_image_free(&img);
        free(rgb);
        return 1;
    }

    omma_face_pipeline_options opt;
    omma_face_pipeline_options_init(&opt);
    opt.backend = OMMA_BACKEND_CPU;
    opt.detector_model = argv[2];
    opt.mesh_model = argv[3];
    omma_face_pipeline *fp = NULL;
    omma_status st = omma_face_pipeline_create(&opt, &fp);
    int count = 0;
    if (st == OMMA_OK) {
        omma_frame frame = {.width = (int)img.width,
                            .height = (int)img.height,
                            .format = OMMA_PIXEL_RGB,
                            .planes = {rgb},
                            .pitch = {(int)img.width * 3},
                            .memory = OMMA_MEMORY_HOST};
        omma_face faces[4];
        st = omma_face_pipeline_process(fp, 0, &frame, faces, 4, &count);
    }
    if (st != OMMA_OK)
        fprintf(stderr, "consumer: %s: %s\n", omma_status_str(st), omma_last_error());
    else
        printf("faces: %d\n", count);
    omma_face_pipeline_destroy(fp);
    free(rgb);
    return st == OMMA_OK ? 0 : 1;
}
