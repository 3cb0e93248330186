/* Detector and FaceMesh inputs from a photo. */
#include "support/face_inputs.h"

omma_status face_detector_input(const rgb_image *img, int size, float *out)
{
    rgb_image_sample(img, 0.0f, 0.0f, (float)img->width, (float)img->height, size, size,
                     1.0f / 127.5f, -1.0f, out);
    return OMMA_OK;
}

void face_mesh_input(const rgb_image *img, float cx, float cy, float side, float *out)
{
    rgb_image_sample(img, cx - side / 2, cy - side / 2, cx + side / 2, cy + side / 2, 192, 192,
                     1.0f / 255.0f, 0.0f, out);
}
