/* Makes a picture whose face is small: IN (a PNG or JPEG) shrunk FACTOR
 * times (box filter) in the middle of a SIDE x SIDE black canvas, written
 * to OUT as PNG. usage: small_face IN OUT FACTOR SIDE */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/image_file.h"
#include "omma/status.h"

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: small_face IN OUT FACTOR SIDE\n");
        return 2;
    }
    int factor = atoi(argv[3]), side = atoi(argv[4]);
    io_image in;
    if (io_image_load(argv[1], &in) != OMMA_OK) {
        fprintf(stderr, "small_face: %s\n", omma_last_error());
        return 1;
    }
    int w = factor > 0 ? in.width / factor : 0, h = factor > 0 ? in.height / factor : 0;
    if (w < 1 || h < 1 || w > side || h > side) {
        fprintf(stderr, "small_face: %dx%d / %d does not fit %d\n", in.width, in.height, factor,
                side);
        io_image_free(&in);
        return 2;
    }
    uint8_t *out = calloc((size_t)side * (size_t)side * 3, 1);
    if (!out) {
        io_image_free(&in);
        return 1;
    }
    int x0 = (side - w) / 2, y0 = (side - h) / 2;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++) {
                unsigned sum = 0;
                for (int j = 0; j < factor; j++)
                    for (int i = 0; i < factor; i++)
                        sum += in.rgb[((size_t)(y * factor + j) * (size_t)in.width +
                                       (size_t)(x * factor + i)) *
                                          3 +
                                      (size_t)c];
                out[((size_t)(y0 + y) * (size_t)side + (size_t)(x0 + x)) * 3 + (size_t)c] =
                    (uint8_t)((sum + (unsigned)(factor * factor) / 2) /
                              (unsigned)(factor * factor));
            }
    omma_status st = io_image_save_png(argv[2], out, side, side, side * 3);
    if (st != OMMA_OK)
        fprintf(stderr, "small_face: %s\n", omma_last_error());
    free(out);
    io_image_free(&in);
    return st == OMMA_OK ? 0 : 1;
}
