/* Scratch files and JPEG writing for the runtime tests. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include "support/image_files.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef OMMA_HAVE_JPEG
#include <jpeglib.h>
#endif

static char dir[512];

const char *scratch_dir(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/omma-runtime-XXXXXX", t && *t ? t : "/tmp");
    return mkdtemp(dir) ? dir : NULL;
}

void scratch_remove(void)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char p[1024];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        if (unlink(p) != 0)
            rmdir(p);
    }
    closedir(d);
    rmdir(dir);
}

const char *scratch_path(const char *name)
{
    static char paths[8][1024];
    static int next;
    char *p = paths[next++ % 8];
    snprintf(p, 1024, "%s/%s", dir, name);
    return p;
}

int write_bytes(const char *path, const void *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    int ok = fwrite(data, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

unsigned char *read_bytes(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0, got;
    unsigned char *buf = malloc(cap);
    while (buf && (got = fread(buf + len, 1, cap - len, f)) > 0) {
        len += got;
        if (len == cap) {
            unsigned char *b = realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
            cap *= 2;
        }
    }
    fclose(f);
    *n = len;
    return buf;
}

int write_jpeg(const char *path, const unsigned char *pixels, int width, int height,
               int components, int quality)
{
#ifdef OMMA_HAVE_JPEG
    FILE *f = fopen(path, "wb");
    if (!f)
        return 0;
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr err;
    c.err = jpeg_std_error(&err); /* test files: its default exit() on error is fine */
    jpeg_create_compress(&c);
    jpeg_stdio_dest(&c, f);
    c.image_width = (JDIMENSION)width;
    c.image_height = (JDIMENSION)height;
    c.input_components = components;
    c.in_color_space = components == 3 ? JCS_RGB : components == 1 ? JCS_GRAYSCALE : JCS_CMYK;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, quality, TRUE);
    jpeg_start_compress(&c, TRUE);
    while (c.next_scanline < c.image_height) {
        JSAMPROW row = (JSAMPROW)(pixels + (size_t)c.next_scanline * width * components);
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    return fclose(f) == 0;
#else
    (void)path, (void)pixels, (void)width, (void)height, (void)components, (void)quality;
    return 0;
#endif
}
