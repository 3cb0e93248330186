/* Test files for the io, pipeline and runtime tests: a scratch folder, files with given
 * bytes, JPEG files written with libjpeg. */
#ifndef OMMA_TESTS_SUPPORT_IMAGE_FILES_H
#define OMMA_TESTS_SUPPORT_IMAGE_FILES_H

#include <stddef.h>

/* Makes a fresh folder under $TMPDIR or /tmp; returns its path (static
 * buffer) or NULL. scratch_remove deletes it with the files made in it. */
const char *scratch_dir(void);
void scratch_remove(void);

/* Path of `name` in the scratch folder (a static buffer per call slot:
 * the result stays valid for 8 more calls). */
const char *scratch_path(const char *name);

/* Writes n bytes to path; 1 on success. */
int write_bytes(const char *path, const void *data, size_t n);

/* Reads a whole file (malloc'd, *n its size); NULL on failure. */
unsigned char *read_bytes(const char *path, size_t *n);

/* Writes width x height pixels of `components` channels (3: RGB, 1: grey,
 * 4: CMYK) as a baseline JPEG of the given quality; 1 on success, 0 on
 * failure or in a build without libjpeg. */
int write_jpeg(const char *path, const unsigned char *pixels, int width, int height,
               int components, int quality);

#endif
