#define _POSIX_C_SOURCE 200809L /* strdup, strcasecmp */
/* Image sequences as a source: a directory's PNG/JPEG files, listed and
 * sorted at open, or a numbered pattern whose files are looked for as they
 * are read (the first missing number ends a pass). Each image is decoded
 * to RGB when its frame is read; the first one fixes the size. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "core/error.h"
#include "io/image_file.h"
#include "runtime/source_private.h"

#define MAX_PATTERN_WIDTH 20

typedef struct images_src {
    /* A directory: its image files (the spec joined with the name), sorted. */
    char **files;
    long count;
    /* A pattern: prefix, the number (width, zero-padded or not), suffix. */
    char *prefix, *suffix;
    int width, zero;
    long first_number; /* 0 or 1 */
    char *path; /* the pattern's name for the current number */
    size_t path_size;

    long pos; /* in this pass: the next file's index, or number - first_number */
    long read; /* images read over all passes: the next frame's time index */
    io_image image; /* the frame handed out last */
} images_src;

static int is_image_name(const char *name)
{
    if (name[0] == '.')
        return 0;
    const char *dot = strrchr(name, '.');
    return dot && (strcasecmp(dot, ".png") == 0 || strcasecmp(dot, ".jpg") == 0 ||
                   strcasecmp(dot, ".jpeg") == 0);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static omma_status list_directory(rt_source *s, images_src *is)
{
    const char *dir = s->spec;
    DIR *d = opendir(dir);
    if (!d)
        return OMMA_FAIL(OMMA_ERR_IO, "%s: cannot list the directory: %s", dir, strerror(errno));
    size_t dlen = strlen(dir);
    const char *sep = dlen && dir[dlen - 1] == '/' ? "" : "/";
    long cap = 0;
    omma_status st = OMMA_OK;
    struct dirent *e;
    errno = 0;
    while ((e = readdir(d)) != NULL) {
        if (!is_image_name(e->d_name))
            continue;
        size_t n = dlen + strlen(sep) + strlen(e->d_name) + 1;
        char *path = malloc(n);
        if (!path) {
            st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: %zu bytes for a file name", dir, n);
            break;
        }
        snprintf(path, n, "%s%s%s", dir, sep, e->d_name);
        struct stat sb;
        if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
            free(path); /* a subdirectory or a dangling link: not an image */
            continue;
        }
        if (is->count == cap) {
            long c = cap ? 2 * cap : 64;
            char **f = realloc(is->files, (size_t)c * sizeof *f);
            if (!f) {
                free(path);
                st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: a list of %ld files", dir, c);
                break;
            }
            is->files = f;
            cap = c;
        }
        is->files[is->count++] = path;
        errno = 0;
    }
    if (st == OMMA_OK && errno != 0)
        st = OMMA_FAIL(OMMA_ERR_IO, "%s: reading the directory: %s", dir, strerror(errno));
    closedir(d);
    if (st != OMMA_OK)
        return st;
    if (is->count == 0)
        return OMMA_FAIL(OMMA_ERR_IO,
                         "%s: no PNG or JPEG files (*.png, *.jpg, *.jpeg) in the "
                         "directory",
                         dir);
    qsort(is->files, (size_t)is->count, sizeof *is->files, by_name);
    return OMMA_OK;
}

/* Splits the pattern into prefix, conversion and suffix ("%%" is '%'). */
static omma_status parse_pattern(rt_source *s, images_src *is)
{
    const char *p = s->spec;
    size_t n = strlen(p);
    is->prefix = malloc(n + 1);
    is->suffix = malloc(n + 1);
    if (!is->prefix || !is->suffix)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: pattern", p);
    char *out = is->prefix;
    size_t o = 0;
    int conversions = 0;
    for (size_t i = 0; p[i]; i++) {
        if (p[i] != '%') {
            out[o++] = p[i];
            continue;
        }
        if (p[i + 1] == '%') {
            out[o++] = '%';
            i++;
            continue;
        }
        size_t j = i + 1;
        int zero = p[j] == '0', width = 0;
        j += (size_t)zero;
        while (isdigit((unsigned char)p[j]) && width <= MAX_PATTERN_WIDTH)
            width = 10 * width + (p[j++] - '0');
        if (p[j] != 'd' || width > MAX_PATTERN_WIDTH || conversions)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                             "%s: an image pattern takes exactly one %%d conversion (with an "
                             "optional 0 flag and a width up to %d, as in frames/%%05d.png; "
                             "%%%% for a '%%'); the problem is at \"%s\"",
                             p, MAX_PATTERN_WIDTH, p + i);
        conversions = 1;
        is->zero = zero;
        is->width = width;
        out[o] = '\0';
        out = is->suffix;
        o = 0;
        i = j;
    }
    out[o] = '\0';
    if (!conversions)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "%s: an image pattern takes exactly one %%d conversion (as in "
                         "frames/%%05d.png); this one has none",
                         p);
    is->path_size = strlen(is->prefix) + strlen(is->suffix) + MAX_PATTERN_WIDTH + 24;
    is->path = malloc(is->path_size);
    if (!is->path)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: pattern", p);
    return OMMA_OK;
}

static const char *numbered(images_src *is, long number)
{
    if (is->zero)
        snprintf(is->path, is->path_size, "%s%0*ld%s", is->prefix, is->width, number, is->suffix);
    else
        snprintf(is->path, is->path_size, "%s%*ld%s", is->prefix, is->width, number, is->suffix);
    return is->path;
}

static int missing(const char *path)
{
    struct stat sb;
    return stat(path, &sb) != 0 && (errno == ENOENT || errno == ENOTDIR);
}

/* The file at this pass's position, NULL at the end of the pass. */
static const char *file_at(images_src *is, long pos)
{
    if (is->files)
        return pos < is->count ? is->files[pos] : NULL;
    const char *path = numbered(is, is->first_number + pos);
    return missing(path) ? NULL : path;
}

/* Decodes path as the next frame. */
static omma_status load(rt_source *s, images_src *is, const char *path, omma_frame *frame,
                        double *ts_ms)
{
    io_image img;
    omma_status st = io_image_load(path, &img);
    if (st != OMMA_OK) {
        char why[768];
        snprintf(why, sizeof why, "%s", omma_last_error());
        return OMMA_FAIL(st, "%s: frame %ld: %s", s->spec, s->index, why);
    }
    if (s->info.width && (img.width != s->info.width || img.height != s->info.height)) {
        omma_status fst = OMMA_FAIL(
            OMMA_ERR_FORMAT, "%s: frame %ld: %s is %dx%d; the sequence's images are %dx%d", s->spec,
            s->index, path, img.width, img.height, s->info.width, s->info.height);
        io_image_free(&img);
        return fst;
    }
    io_image_free(&is->image);
    is->image = img;
    *frame = io_image_frame(&is->image);
    *ts_ms = 1000.0 * (double)is->read / s->opt.fps;
    is->read++;
    is->pos++;
    return OMMA_OK;
}

static omma_status images_read(rt_source *s, omma_frame *frame, double *ts_ms, uint64_t *capture_ns,
                               int *eof)
{
    (void)capture_ns;
    images_src *is = s->impl;
    const char *path = file_at(is, is->pos);
    if (!path && !s->opt.loop) {
        *eof = 1;
        return OMMA_OK;
    }
    if (!path) {
        is->pos = 0;
        path = file_at(is, 0);
        if (!path)
            return OMMA_FAIL(OMMA_ERR_IO, "%s: frame %ld: %s, the sequence's first image, is gone",
                             s->spec, s->index, numbered(is, is->first_number));
    }
    return load(s, is, path, frame, ts_ms);
}

static void images_close(rt_source *s)
{
    images_src *is = s->impl;
    if (!is)
        return;
    for (long i = 0; i < is->count; i++)
        free(is->files[i]);
    free(is->files);
    free(is->prefix);
    free(is->suffix);
    free(is->path);
    io_image_free(&is->image);
    free(is);
    s->impl = NULL;
}

static const src_ops images_ops = {images_read, images_close, NULL, NULL};

omma_status src_images_open(rt_source *s)
{
    s->ops = &images_ops;
    images_src *is = calloc(1, sizeof *is);
    if (!is)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "%s: image sequence", s->spec);
    s->impl = is;
    struct stat sb;
    if (stat(s->spec, &sb) == 0 && S_ISDIR(sb.st_mode)) {
        OMMA_TRY(list_directory(s, is));
        s->info.frames = is->count;
    } else {
        OMMA_TRY(parse_pattern(s, is));
        is->first_number = missing(numbered(is, 0)) ? 1 : 0;
    }
    const char *path = file_at(is, 0);
    if (!path) { /* only a pattern's first file can be missing */
        char zero[1024];
        snprintf(zero, sizeof zero, "%s", numbered(is, 0));
        return OMMA_FAIL(OMMA_ERR_IO, "%s: no image numbered 0 or 1 (neither %s nor %s exists)",
                         s->spec, zero, numbered(is, 1));
    }
    s->info.fps = s->opt.fps;
    s->info.format = OMMA_PIXEL_RGB;
    OMMA_TRY(load(s, is, path, &s->first, &s->first_ts_ms));
    s->info.width = is->image.width;
    s->info.height = is->image.height;
    s->have_first = 1;
    return OMMA_OK;
}
