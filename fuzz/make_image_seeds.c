/* Writes small, valid seed images for fuzz_image into a folder: PNGs in
 * the colour types the decoder converts (RGB, grey, 16-bit RGBA)
 * and JPEGs (colour, grey, progressive), 13x9 pixels each so the fuzzer
 * spends its time in headers and entropy data, not in pixels.
 *   make_image_seeds DIR */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h> /* after stdio.h and stddef.h, which it needs */
#include <png.h>

enum { W = 13, H = 9 };

static int write_png(const char *dir, const char *name, int format)
{
    png_image png;
    memset(&png, 0, sizeof png);
    png.version = PNG_IMAGE_VERSION;
    png.width = W;
    png.height = H;
    png.format = (png_uint_32)format;
    unsigned char buf[W * H * 8];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (unsigned char)(i * 37 + i / 5);
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int ok = png_image_write_to_file(&png, path, 0, buf, 0, NULL);
    png_image_free(&png);
    return ok ? 0 : -1;
}

static int write_jpeg(const char *dir, const char *name, int grey, int progressive)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr err;
    c.err = jpeg_std_error(&err);
    jpeg_create_compress(&c);
    jpeg_stdio_dest(&c, f);
    c.image_width = W;
    c.image_height = H;
    c.input_components = grey ? 1 : 3;
    c.in_color_space = grey ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 90, TRUE);
    if (progressive)
        jpeg_simple_progression(&c);
    jpeg_start_compress(&c, TRUE);
    unsigned char row[W * 3];
    while (c.next_scanline < H) {
        for (int i = 0; i < W * 3; i++)
            row[i] = (unsigned char)(i * 19 + c.next_scanline * 41);
        JSAMPROW r = row;
        jpeg_write_scanlines(&c, &r, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    return fclose(f) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: make_image_seeds DIR\n");
        return 2;
    }
    const char *d = argv[1];
    int bad = write_png(d, "rgb.png", PNG_FORMAT_RGB) | write_png(d, "grey.png", PNG_FORMAT_GRAY) |
              write_png(d, "rgba16.png", PNG_FORMAT_LINEAR_RGB_ALPHA) |
              write_jpeg(d, "rgb.jpg", 0, 0) | write_jpeg(d, "grey.jpg", 1, 0) |
              write_jpeg(d, "progressive.jpg", 0, 1);
    if (bad)
        fprintf(stderr, "make_image_seeds: could not write every seed into %s\n", d);
    return bad ? 1 : 0;
}
