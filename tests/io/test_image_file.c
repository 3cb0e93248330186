/* io_image_load: the astronaut PNG against an independent libpng decode, a
 * JPEG of it written here, grey images, and every kind of bad file: each
 * its documented status with a message naming the file. */
#include <png.h>
#include <stdint.h>

#include "support/image_files.h"
#include "io/image_file.h"
#include "support/face_inputs.h"
#include "support/png_image.h"
#include "testing.h"

static unsigned char *png_bytes;
static size_t png_size;

/* An independent decode of the same file with libpng's simplified API (the
 * library uses the low-level one), to compare every pixel against. */
static int decode_simplified(const char *path, rgb_image *out)
{
    png_image png;
    memset(&png, 0, sizeof png);
    png.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&png, path))
        return -1;
    png.format = PNG_FORMAT_RGB;
    out->rgb = malloc(PNG_IMAGE_SIZE(png));
    if (!out->rgb || !png_image_finish_read(&png, NULL, out->rgb, 0, NULL)) {
        png_image_free(&png);
        free(out->rgb);
        out->rgb = NULL;
        return -1;
    }
    out->width = (int)png.width;
    out->height = (int)png.height;
    return 0;
}

static void test_png_astronaut(void)
{
    rgb_image ref;
    io_image img;
    REQUIRE(decode_simplified(FACE_PHOTO, &ref) == 0);
    omma_status st = io_image_load(FACE_PHOTO, &img);
    CHECK(st == OMMA_OK);
    if (st != OMMA_OK) {
        fprintf(stderr, "%s\n", omma_last_error());
        rgb_image_free(&ref);
        return;
    }
    CHECK(img.width == 512 && img.height == 512);
    /* A few pixels by position (corners, the face, the flag), then all. */
    const int at[][2] = {{0, 0}, {511, 0}, {0, 511}, {511, 511}, {226, 130}, {200, 110},
                         {250, 150}, {40, 60}, {300, 400}};
    for (size_t k = 0; k < sizeof at / sizeof at[0]; k++) {
        size_t o = ((size_t)at[k][1] * 512 + (size_t)at[k][0]) * 3;
        fprintf(stderr, "  pixel (%d, %d): %u %u %u\n", at[k][0], at[k][1], img.rgb[o],
                img.rgb[o + 1], img.rgb[o + 2]);
        CHECK(memcmp(img.rgb + o, ref.rgb + o, 3) == 0);
    }
    CHECK(memcmp(img.rgb, ref.rgb, (size_t)512 * 512 * 3) == 0);
    /* Two values as recorded when the test was written (the file is pinned by sha256). */
    const uint8_t face[3] = {207, 164, 145}, corner[3] = {154, 147, 151};
    CHECK(memcmp(img.rgb + ((size_t)130 * 512 + 226) * 3, face, 3) == 0);
    CHECK(memcmp(img.rgb, corner, 3) == 0);
    omma_frame f = io_image_frame(&img);
    CHECK(f.width == 512 && f.height == 512 && f.format == OMMA_PIXEL_RGB);
    CHECK(f.planes[0] == img.rgb && f.pitch[0] == 1536);
    io_image_free(&img);
    CHECK(img.rgb == NULL && img.width == 0);
    io_image_free(&img);
    io_image_free(NULL);
    rgb_image_free(&ref);
}

/* A grey 8-bit PNG (written with libpng's simplified API) comes back as
 * R = G = B = the grey value. */
static void test_png_grey(void)
{
    unsigned char grey[7 * 5];
    for (int i = 0; i < 35; i++)
        grey[i] = (unsigned char)(i * 7);
    png_image w;
    memset(&w, 0, sizeof w);
    w.version = PNG_IMAGE_VERSION;
    w.width = 7, w.height = 5, w.format = PNG_FORMAT_GRAY;
    const char *path = scratch_path("grey.png");
    REQUIRE(png_image_write_to_file(&w, path, 0, grey, 0, NULL));
    io_image img;
    REQUIRE_OK(io_image_load(path, &img));
    CHECK(img.width == 7 && img.height == 5);
    int same = 1;
    for (int i = 0; i < 35; i++)
        for (int c = 0; c < 3; c++)
            same &= img.rgb[i * 3 + c] == grey[i];
    CHECK(same);
    io_image_free(&img);
}

/* 16-bit RGB (written linear: libpng stores the values as given, with a
 * gAMA of 1.0, which omma ignores): each sample becomes its high byte. RGBA:
 * alpha dropped, colour kept. */
static void test_png_16bit_and_alpha(void)
{
    uint16_t deep[6 * 4 * 3];
    for (int i = 0; i < 6 * 4 * 3; i++)
        deep[i] = (uint16_t)(i * 911 + 7);
    png_image w;
    memset(&w, 0, sizeof w);
    w.version = PNG_IMAGE_VERSION;
    w.width = 6, w.height = 4, w.format = PNG_FORMAT_LINEAR_RGB;
    const char *path = scratch_path("deep.png");
    REQUIRE(png_image_write_to_file(&w, path, 0, deep, 0, NULL));
    io_image img;
    REQUIRE_OK(io_image_load(path, &img));
    CHECK(img.width == 6 && img.height == 4);
    int ok = 1;
    for (int i = 0; i < 6 * 4 * 3; i++)
        ok &= img.rgb[i] == deep[i] >> 8;
    CHECK(ok);
    io_image_free(&img);

    unsigned char rgba[5 * 3 * 4];
    for (int i = 0; i < 5 * 3 * 4; i++)
        rgba[i] = (unsigned char)(i * 17 + 3);
    memset(&w, 0, sizeof w);
    w.version = PNG_IMAGE_VERSION;
    w.width = 5, w.height = 3, w.format = PNG_FORMAT_RGBA;
    path = scratch_path("alpha.png");
    REQUIRE(png_image_write_to_file(&w, path, 0, rgba, 0, NULL));
    REQUIRE_OK(io_image_load(path, &img));
    CHECK(img.width == 5 && img.height == 3);
    ok = 1;
    for (int i = 0; i < 15; i++)
        ok &= memcmp(img.rgb + i * 3, rgba + i * 4, 3) == 0;
    CHECK(ok);
    io_image_free(&img);
}

/* Every byte of a small file replaced by a few values: the decoder never
 * crashes (ASan watches), and answers OK or a documented error with the
 * file's name; never anything else. */
static void mutation_walk(const unsigned char *data, size_t size, const char *name)
{
    unsigned char *copy = malloc(size);
    REQUIRE(copy);
    const char *path = scratch_path(name);
    const unsigned char values[] = {0x00, 0xff, 0x80};
    int counts[OMMA_STATUS_COUNT] = {0};
    for (size_t at = 0; at < size; at++)
        for (size_t v = 0; v < sizeof values; v++) {
            memcpy(copy, data, size);
            copy[at] = copy[at] == values[v] ? (unsigned char)~values[v] : values[v];
            REQUIRE(write_bytes(path, copy, size));
            io_image img;
            omma_status st = io_image_load(path, &img);
            counts[st]++;
            if (st != OMMA_OK) {
                CHECK(st == OMMA_ERR_FORMAT || st == OMMA_ERR_UNSUPPORTED);
                CHECK(strstr(omma_last_error(), path) != NULL);
                CHECK(img.rgb == NULL);
            } else {
                CHECK(img.rgb != NULL && img.width > 0 && img.height > 0);
            }
            io_image_free(&img);
        }
    fprintf(stderr, "  %s: %zu mutations: %d OK, %d FORMAT, %d UNSUPPORTED, %d other\n", name,
            size * sizeof values, counts[OMMA_OK], counts[OMMA_ERR_FORMAT],
            counts[OMMA_ERR_UNSUPPORTED],
            (int)(size * sizeof values) - counts[OMMA_OK] - counts[OMMA_ERR_FORMAT] -
                counts[OMMA_ERR_UNSUPPORTED]);
    free(copy);
}

static void test_png_mutations(void)
{
    unsigned char rgb[12 * 10 * 3];
    for (int i = 0; i < 12 * 10 * 3; i++)
        rgb[i] = (unsigned char)(i * 29 + i / 7);
    png_image w;
    memset(&w, 0, sizeof w);
    w.version = PNG_IMAGE_VERSION;
    w.width = 12, w.height = 10, w.format = PNG_FORMAT_RGB;
    const char *path = scratch_path("small.png");
    REQUIRE(png_image_write_to_file(&w, path, 0, rgb, 0, NULL));
    size_t n;
    unsigned char *data = read_bytes(path, &n);
    REQUIRE(data);
    mutation_walk(data, n, "mutant.png");
    free(data);
}

static void check_fails(const char *path, omma_status want, const char *what)
{
    io_image img = {1, 1, (uint8_t *)&img};
    omma_status st = io_image_load(path, &img);
    fprintf(stderr, "  %s: %s: %s\n", what, omma_status_str(st), omma_last_error());
    CHECK(st == want);
    CHECK(strstr(omma_last_error(), path) != NULL);
    CHECK(img.rgb == NULL && img.width == 0 && img.height == 0);
}

/* The file cut at `n` bytes. */
static void check_truncated(const unsigned char *data, size_t n, const char *name)
{
    char label[64];
    snprintf(label, sizeof label, "%s cut at %zu", name, n);
    const char *path = scratch_path(name);
    REQUIRE(write_bytes(path, data, n));
    check_fails(path, OMMA_ERR_FORMAT, label);
}

/* The file with byte `at` replaced. */
static void check_flipped(const unsigned char *data, size_t size, size_t at, unsigned char v,
                          const char *name, omma_status want)
{
    unsigned char *copy = malloc(size);
    REQUIRE(copy);
    memcpy(copy, data, size);
    copy[at] = v;
    char label[64];
    snprintf(label, sizeof label, "%s byte %zu = 0x%02x", name, at, v);
    const char *path = scratch_path(name);
    if (write_bytes(path, copy, size))
        check_fails(path, want, label);
    else
        CHECK(0);
    free(copy);
}

static void test_png_damaged(void)
{
    REQUIRE(png_bytes);
    /* Inside the signature (not recognized), inside IHDR, inside the image
     * data, just before IEND's end. */
    const size_t cuts[] = {1, 7, 8, 20, 33, 100, 4096, png_size / 2, png_size - 13, png_size - 1};
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++)
        check_truncated(png_bytes, cuts[k], "cut.png");
    /* Signature byte, IHDR width (CRC mismatch), IHDR colour type, an IDAT
     * byte (CRC mismatch). */
    check_flipped(png_bytes, png_size, 1, 'X', "sig.png", OMMA_ERR_FORMAT);
    check_flipped(png_bytes, png_size, 18, 0x7f, "width.png", OMMA_ERR_FORMAT);
    check_flipped(png_bytes, png_size, 25, 0x05, "ctype.png", OMMA_ERR_FORMAT);
    check_flipped(png_bytes, png_size, png_size / 2, (unsigned char)~png_bytes[png_size / 2],
                  "idat.png", OMMA_ERR_FORMAT);
    CHECK(strstr(omma_last_error(), "PNG") != NULL);
}

static void test_bad_files(void)
{
    const char *empty = scratch_path("empty.png");
    REQUIRE(write_bytes(empty, "", 0));
    check_fails(empty, OMMA_ERR_FORMAT, "zero bytes");
    CHECK(strstr(omma_last_error(), "empty") != NULL);

    const char *text = scratch_path("notes.png");
    const char *words = "these are not pixels\n";
    REQUIRE(write_bytes(text, words, strlen(words)));
    check_fails(text, OMMA_ERR_FORMAT, "text named .png");
    CHECK(strstr(omma_last_error(), "not a PNG or JPEG") != NULL);

    check_fails(scratch_path("missing.png"), OMMA_ERR_IO, "missing");
    CHECK(strstr(omma_last_error(), "No such file") != NULL);
    check_fails(scratch_path(""), OMMA_ERR_IO, "a directory");

    io_image img;
    CHECK(io_image_load(NULL, &img) == OMMA_ERR_INVALID_ARG);
    CHECK(io_image_load(FACE_PHOTO, NULL) == OMMA_ERR_INVALID_ARG);
}

#ifdef OMMA_HAVE_JPEG
static void test_jpeg(void)
{
    rgb_image ref;
    REQUIRE_OK(rgb_image_load_png(FACE_PHOTO, &ref));
    const char *path = scratch_path("astronaut.jpg");
    REQUIRE(write_jpeg(path, ref.rgb, ref.width, ref.height, 3, 95));
    io_image img;
    omma_status st = io_image_load(path, &img);
    CHECK(st == OMMA_OK);
    if (st == OMMA_OK) {
        CHECK(img.width == 512 && img.height == 512);
        double sum = 0;
        int worst = 0;
        for (size_t i = 0; i < (size_t)512 * 512 * 3; i++) {
            int d = abs((int)img.rgb[i] - (int)ref.rgb[i]);
            sum += d;
            worst = d > worst ? d : worst;
        }
        double mean = sum / (512.0 * 512 * 3);
        fprintf(stderr, "  JPEG q95 vs PNG: mean |diff| %.3f, worst %d\n", mean, worst);
        CHECK(mean < 3.0);
        io_image_free(&img);
    }

    /* A file named .png holding a JPEG: the bytes decide. */
    size_t n;
    unsigned char *jpg = read_bytes(path, &n);
    REQUIRE(jpg);
    const char *named_png = scratch_path("really-a-jpeg.png");
    REQUIRE(write_bytes(named_png, jpg, n));
    st = io_image_load(named_png, &img);
    CHECK(st == OMMA_OK && img.width == 512);
    io_image_free(&img);

    /* Truncated: in the markers, in the scan, just before EOI. */
    const size_t cuts[] = {2, 3, 20, 200, 700, n / 4, n / 2, n - 2};
    for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++)
        check_truncated(jpg, cuts[k], "cut.jpg");
    /* Find SOF0 (FF C0): length(2) precision(1) height(2) width(2). */
    size_t sof = 0;
    for (size_t i = 2; i + 9 < n && !sof; i++)
        if (jpg[i] == 0xff && jpg[i + 1] == 0xc0)
            sof = i;
    CHECK(sof > 0);
    if (sof) {
        check_flipped(jpg, n, sof + 4, 7, "precision.jpg", OMMA_ERR_FORMAT);
        check_flipped(jpg, n, sof + 1, 0xc3, "lossless.jpg", OMMA_ERR_FORMAT);
        check_flipped(jpg, n, sof + 9, 9, "components.jpg", OMMA_ERR_FORMAT);
    }
    check_flipped(jpg, n, 3, 0x00, "marker.jpg", OMMA_ERR_FORMAT);
    CHECK(strstr(omma_last_error(), "JPEG") != NULL);
    free(jpg);

    /* CMYK: a valid JPEG omma does not take. */
    unsigned char *cmyk = malloc((size_t)16 * 16 * 4);
    REQUIRE(cmyk);
    for (int i = 0; i < 16 * 16 * 4; i++)
        cmyk[i] = (unsigned char)(i * 13);
    const char *cpath = scratch_path("cmyk.jpg");
    int ok = write_jpeg(cpath, cmyk, 16, 16, 4, 90);
    free(cmyk);
    REQUIRE(ok);
    check_fails(cpath, OMMA_ERR_UNSUPPORTED, "CMYK");
    CHECK(strstr(omma_last_error(), "CMYK") != NULL);

    /* Every byte of a small JPEG mutated. */
    unsigned char small[16 * 8 * 3];
    for (int i = 0; i < 16 * 8 * 3; i++)
        small[i] = (unsigned char)(i * 5);
    const char *spath = scratch_path("small.jpg");
    REQUIRE(write_jpeg(spath, small, 16, 8, 3, 90));
    size_t sn;
    unsigned char *sdata = read_bytes(spath, &sn);
    REQUIRE(sdata);
    mutation_walk(sdata, sn, "mutant.jpg");
    free(sdata);

    /* Grey JPEG: R = G = B. */
    unsigned char grey[32 * 8];
    for (int i = 0; i < 32 * 8; i++)
        grey[i] = (unsigned char)(i % 32 * 8);
    const char *gpath = scratch_path("grey.jpg");
    REQUIRE(write_jpeg(gpath, grey, 32, 8, 1, 95));
    REQUIRE_OK(io_image_load(gpath, &img));
    CHECK(img.width == 32 && img.height == 8);
    int same = 1, close = 1;
    for (int i = 0; i < 32 * 8; i++) {
        same &= img.rgb[i * 3] == img.rgb[i * 3 + 1] && img.rgb[i * 3] == img.rgb[i * 3 + 2];
        close &= abs((int)img.rgb[i * 3] - grey[i]) <= 8;
    }
    CHECK(same);
    CHECK(close);
    io_image_free(&img);
    rgb_image_free(&ref);
}
#endif

int main(void)
{
    if (!scratch_dir()) {
        fprintf(stderr, "cannot make a scratch folder\n");
        return 1;
    }
    png_bytes = read_bytes(FACE_PHOTO, &png_size);
    RUN(test_png_astronaut);
    RUN(test_png_grey);
    RUN(test_png_16bit_and_alpha);
    RUN(test_png_damaged);
    RUN(test_png_mutations);
    RUN(test_bad_files);
#ifdef OMMA_HAVE_JPEG
    RUN(test_jpeg);
#else
    fprintf(stderr, "skip test_jpeg: built without libjpeg\n");
#endif
    free(png_bytes);
    scratch_remove();
    return testing_finish();
}
