/* Annotated pictures (io_annotate) and the PNG writer (io_image_save_png):
 * every pixel format converts as vis_frame_texel reads it; a box changes
 * exactly its outline and id label; landmark and keypoint dots land where
 * their points are; faces outside the frame, NaN and huge coordinates are
 * clipped without a write outside the picture (ASan watches); bad
 * arguments fail; a written PNG reads back bit for bit and no temporary
 * file is left, also when writing fails. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/annotate.h"
#include "io/image_file.h"
#include "testing.h"
#include "vision/frame.h"
#include "vision/vision_frames.h"

#define PAD 5 /* extra bytes per output row, must stay untouched */
#define SENTINEL 0x5A

static uint8_t to_u8(float v)
{
    return v <= 0.0f ? 0 : v >= 255.0f ? 255 : (uint8_t)(v + 0.5f);
}

/* An output picture with padded rows, the padding set to SENTINEL. */
static uint8_t *picture(int w, int h, int *pitch)
{
    *pitch = 3 * w + PAD;
    uint8_t *p = malloc((size_t)*pitch * (size_t)h);
    if (p)
        memset(p, SENTINEL, (size_t)*pitch * (size_t)h);
    return p;
}

static int padding_intact(const uint8_t *p, int w, int h, int pitch)
{
    for (int y = 0; y < h; y++)
        for (int k = 3 * w; k < pitch; k++)
            if (p[(size_t)y * pitch + k] != SENTINEL)
                return 0;
    return 1;
}

/* A 37x23 picture (odd sides: chroma planes round up) with every channel
 * varying. */
static void test_every_format_converts_like_texel(void)
{
    rgb_image img = {37, 23, malloc(37 * 23 * 3)};
    REQUIRE(img.rgb);
    for (int y = 0; y < img.height; y++)
        for (int x = 0; x < img.width; x++) {
            uint8_t *s = img.rgb + ((size_t)y * img.width + x) * 3;
            s[0] = (uint8_t)(x * 7), s[1] = (uint8_t)(y * 11), s[2] = (uint8_t)(x * y + 40);
        }
    int pitch;
    uint8_t *out = picture(img.width, img.height, &pitch);
    REQUIRE(out);
    for (int fmt = 0; fmt < OMMA_PIXEL_FORMAT_COUNT; fmt++) {
        vision_frame vf;
        if (!vision_frame_build(&img, (omma_pixel_format)fmt, &vf)) {
            CHECK(!"out of memory");
            break;
        }
        memset(out, SENTINEL, (size_t)pitch * img.height);
        omma_status st = io_annotate(&vf.f, NULL, 0, out, pitch);
        CHECK(st == OMMA_OK);
        int mismatches = 0, exact = 0;
        for (int y = 0; y < img.height; y++)
            for (int x = 0; x < img.width; x++) {
                float t[3];
                vis_frame_texel(&vf.f, x, y, t);
                const uint8_t *o = out + (size_t)y * pitch + (size_t)x * 3;
                const uint8_t *s = img.rgb + ((size_t)y * img.width + x) * 3;
                for (int c = 0; c < 3; c++) {
                    mismatches += o[c] != to_u8(t[c]);
                    exact += o[c] == s[c];
                }
            }
        if (mismatches)
            fprintf(stderr, "format %d: %d channel values differ from vis_frame_texel\n", fmt,
                    mismatches);
        CHECK(mismatches == 0);
        /* Packed formats are lossless; the YUV ones come close (checked by
         * the vision tests), so only the packed ones must be exact. */
        if (fmt <= OMMA_PIXEL_BGRA)
            CHECK(exact == img.width * img.height * 3);
        CHECK(padding_intact(out, img.width, img.height, pitch));
        vision_frame_free(&vf);
    }
    free(out);
    free(img.rgb);
}

/* A uniform grey RGB frame of w x h. */
typedef struct grey_frame {
    omma_frame f;
    uint8_t *px;
} grey_frame;

static int grey(int w, int h, grey_frame *g)
{
    memset(g, 0, sizeof *g);
    g->px = malloc((size_t)w * h * 3);
    if (!g->px)
        return 0;
    memset(g->px, 128, (size_t)w * h * 3);
    omma_frame f = {w, h, OMMA_PIXEL_RGB, {g->px, NULL, NULL}, {3 * w, 0, 0}, OMMA_MEMORY_HOST};
    g->f = f;
    return 1;
}

/* A face with only what the test sets: the rest NaN (not drawn). */
static omma_face blank_face(int id)
{
    omma_face f;
    memset(&f, 0, sizeof f);
    f.id = id;
    f.score = f.presence = 0.9f;
    f.box.xmin = f.box.ymin = f.box.xmax = f.box.ymax = NAN;
    for (int k = 0; k < OMMA_FACE_KEYPOINTS; k++)
        f.keypoints[k][0] = f.keypoints[k][1] = NAN;
    for (int k = 0; k < OMMA_FACE_LANDMARKS; k++)
        f.landmarks[k][0] = f.landmarks[k][1] = f.landmarks[k][2] = NAN;
    return f;
}

static int changed(const uint8_t *out, int pitch, int x, int y)
{
    const uint8_t *p = out + (size_t)y * pitch + (size_t)x * 3;
    return p[0] != 128 || p[1] != 128 || p[2] != 128;
}

static int in_rect(int x, int y, int x0, int y0, int x1, int y1)
{
    return x >= x0 && x < x1 && y >= y0 && y < y1;
}

/* Box (10.3, 20.7)-(40.2, 35.9): pixels 10..40 x 20..35, a 2-pixel outline
 * inside them; id 7's label (one digit: 6 + 2 * 2 = 10 wide, 10 + 2 * 2 =
 * 14 high) 1 pixel above the box: rows 5..18. Nothing else changes. */
static void test_box_changes_only_its_outline_and_label(void)
{
    grey_frame g;
    REQUIRE(grey(64, 48, &g));
    int pitch;
    uint8_t *out = picture(64, 48, &pitch);
    REQUIRE(out);
    omma_face f = blank_face(7);
    f.box.xmin = 10.3f, f.box.ymin = 20.7f, f.box.xmax = 40.2f, f.box.ymax = 35.9f;
    REQUIRE_OK(io_annotate(&g.f, &f, 1, out, pitch));
    int wrong = 0, drawn = 0;
    for (int y = 0; y < 48; y++)
        for (int x = 0; x < 64; x++) {
            int outline = in_rect(x, y, 10, 20, 41, 22) || in_rect(x, y, 10, 34, 41, 36) ||
                          in_rect(x, y, 10, 20, 12, 36) || in_rect(x, y, 39, 20, 41, 36);
            int label = in_rect(x, y, 10, 5, 20, 19);
            int want = outline || label;
            if (changed(out, pitch, x, y) != want) {
                if (wrong++ < 5)
                    fprintf(stderr, "pixel (%d, %d): %s\n", x, y,
                            want ? "not drawn" : "drawn outside the box and label");
            }
            drawn += want;
        }
    CHECK(wrong == 0);
    CHECK(drawn > 100);
    CHECK(padding_intact(out, 64, 48, pitch));

    /* Another id, another colour on the outline. */
    uint8_t c7[3];
    memcpy(c7, out + 20 * (size_t)pitch + 25 * 3, 3);
    f.id = 8;
    REQUIRE_OK(io_annotate(&g.f, &f, 1, out, pitch));
    CHECK(memcmp(c7, out + 20 * (size_t)pitch + 25 * 3, 3) != 0);
    /* The input frame is only read. */
    for (size_t i = 0; i < (size_t)64 * 48 * 3; i++)
        if (g.px[i] != 128) {
            CHECK(!"io_annotate wrote into the frame");
            break;
        }
    free(out);
    free(g.px);
}

/* A box with no room above: the label goes inside the box's top. */
static void test_label_inside_when_box_at_top(void)
{
    grey_frame g;
    REQUIRE(grey(40, 40, &g));
    int pitch;
    uint8_t *out = picture(40, 40, &pitch);
    REQUIRE(out);
    omma_face f = blank_face(3);
    f.box.xmin = 5, f.box.ymin = 2, f.box.xmax = 35, f.box.ymax = 35;
    REQUIRE_OK(io_annotate(&g.f, &f, 1, out, pitch));
    /* Label: x 5..14, y 5..18 (y0 + 3); its black background at (6, 6). */
    const uint8_t *p = out + 6 * (size_t)pitch + 6 * 3;
    CHECK(p[0] == 0 && p[1] == 0 && p[2] == 0);
    CHECK(!changed(out, pitch, 20, 20)); /* the box's inside */
    free(out);
    free(g.px);
}

/* A landmark at (5.5, 5.5): the 2x2 dot on pixels 5..6; a keypoint at
 * (30.5, 30.5): a 5x5 square, white centre 3x3 with a black rim. */
static void test_landmark_and_keypoint_dots(void)
{
    grey_frame g;
    REQUIRE(grey(48, 48, &g));
    int pitch;
    uint8_t *out = picture(48, 48, &pitch);
    REQUIRE(out);
    omma_face f = blank_face(1);
    f.landmarks[100][0] = 5.5f, f.landmarks[100][1] = 5.5f;
    f.keypoints[2][0] = 30.5f, f.keypoints[2][1] = 30.5f;
    REQUIRE_OK(io_annotate(&g.f, &f, 1, out, pitch));
    int n = 0;
    for (int y = 0; y < 48; y++)
        for (int x = 0; x < 48; x++)
            n += changed(out, pitch, x, y);
    CHECK(n == 4 + 25);
    CHECK(changed(out, pitch, 5, 5) && changed(out, pitch, 6, 6));
    CHECK(!changed(out, pitch, 4, 5) && !changed(out, pitch, 7, 6));
    const uint8_t *centre = out + 30 * (size_t)pitch + 30 * 3;
    const uint8_t *rim = out + 28 * (size_t)pitch + 28 * 3;
    CHECK(centre[0] == 255 && centre[1] == 255 && centre[2] == 255);
    CHECK(rim[0] == 0 && rim[1] == 0 && rim[2] == 0);
    CHECK(!changed(out, pitch, 27, 30) && !changed(out, pitch, 33, 30));
    free(out);
    free(g.px);
}

/* Faces partly and wholly outside, NaN and infinite and huge coordinates,
 * a box given upside down: no crash, no write outside the picture (ASan),
 * the visible part of the partly-outside box drawn. */
static void test_outside_and_nan_faces_are_clipped(void)
{
    grey_frame g;
    REQUIRE(grey(32, 24, &g));
    int pitch;
    uint8_t *out = picture(32, 24, &pitch);
    REQUIRE(out);
    omma_face f[6];
    f[0] = blank_face(1); /* partly outside at the right and bottom */
    f[0].box.xmin = 20, f[0].box.ymin = 15, f[0].box.xmax = 80, f[0].box.ymax = 90;
    f[1] = blank_face(2); /* wholly outside, up-left */
    f[1].box.xmin = -100, f[1].box.ymin = -90, f[1].box.xmax = -50, f[1].box.ymax = -40;
    f[2] = blank_face(123456789); /* huge and infinite */
    f[2].box.xmin = -1e30f, f[2].box.ymin = -INFINITY, f[2].box.xmax = 1e30f,
    f[2].box.ymax = INFINITY;
    f[3] = blank_face(-5); /* NaN everywhere but one box side */
    f[3].box.xmin = 3;
    f[4] = blank_face(4); /* points everywhere, many outside */
    for (int k = 0; k < OMMA_FACE_LANDMARKS; k++) {
        f[4].landmarks[k][0] = (float)(k % 60) - 15.0f;
        f[4].landmarks[k][1] = (float)(k / 12) - 10.0f;
    }
    for (int k = 0; k < OMMA_FACE_KEYPOINTS; k++)
        f[4].keypoints[k][0] = k % 2 ? -2.0f : 33.0f, f[4].keypoints[k][1] = (float)k * 5.0f;
    f[5] = blank_face(6); /* upside down and past the far corner */
    f[5].box.xmin = 31.5f, f[5].box.ymin = 23.5f, f[5].box.xmax = 1.0f, f[5].box.ymax = 1.0f;
    REQUIRE_OK(io_annotate(&g.f, f, 6, out, pitch));
    CHECK(padding_intact(out, 32, 24, pitch));
    REQUIRE_OK(io_annotate(&g.f, f, 1, out, pitch));
    CHECK(changed(out, pitch, 25, 15) && changed(out, pitch, 20, 20)); /* top and left edges */
    CHECK(!changed(out, pitch, 25, 20)); /* its inside */
    free(out);
    free(g.px);
}

static void test_bad_arguments(void)
{
    grey_frame g;
    REQUIRE(grey(8, 8, &g));
    uint8_t out[8 * 8 * 3];
    omma_face f = blank_face(1);
    CHECK_FAILS(io_annotate(NULL, NULL, 0, out, 24), OMMA_ERR_INVALID_ARG, "");
    CHECK_FAILS(io_annotate(&g.f, NULL, 0, NULL, 24), OMMA_ERR_INVALID_ARG, "NULL rgb");
    CHECK_FAILS(io_annotate(&g.f, NULL, 0, out, 23), OMMA_ERR_INVALID_ARG, "pitch 23");
    CHECK_FAILS(io_annotate(&g.f, NULL, 0, out, -24), OMMA_ERR_INVALID_ARG, "pitch");
    CHECK_FAILS(io_annotate(&g.f, &f, -1, out, 24), OMMA_ERR_INVALID_ARG, "-1 faces");
    CHECK_FAILS(io_annotate(&g.f, NULL, 1, out, 24), OMMA_ERR_INVALID_ARG, "1 faces");
    omma_frame bad = g.f;
    bad.width = 0;
    CHECK_FAILS(io_annotate(&bad, NULL, 0, out, 24), OMMA_ERR_INVALID_ARG, "");
    bad = g.f;
    bad.pitch[0] = 5;
    CHECK_FAILS(io_annotate(&bad, NULL, 0, out, 24), OMMA_ERR_INVALID_ARG, "");
    bad = g.f;
    bad.memory = OMMA_MEMORY_DEVICE;
    CHECK_FAILS(io_annotate(&bad, NULL, 0, out, 24), OMMA_ERR_INVALID_ARG, "host memory");
    free(g.px);
}

static int files_in(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* An annotated picture written and read back: the same pixels, one file. */
static void test_save_png_round_trip(void)
{
    char dir[] = "/tmp/omma-annotate-XXXXXX";
    REQUIRE(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/a.png", dir);
    grey_frame g;
    REQUIRE(grey(33, 17, &g));
    int pitch;
    uint8_t *out = picture(33, 17, &pitch);
    REQUIRE(out);
    omma_face f = blank_face(2);
    f.box.xmin = 3, f.box.ymin = 15, f.box.xmax = 20, f.box.ymax = 16;
    f.landmarks[0][0] = 30, f.landmarks[0][1] = 3;
    REQUIRE_OK(io_annotate(&g.f, &f, 1, out, pitch));
    REQUIRE_OK(io_image_save_png(path, out, 33, 17, pitch));
    /* Written again over itself: still one file. */
    REQUIRE_OK(io_image_save_png(path, out, 33, 17, pitch));
    CHECK(files_in(dir) == 1);
    io_image back;
    REQUIRE_OK(io_image_load(path, &back));
    CHECK(back.width == 33 && back.height == 17);
    int diff = 0;
    for (int y = 0; y < 17; y++)
        diff += memcmp(back.rgb + (size_t)y * 33 * 3, out + (size_t)y * pitch, 33 * 3) != 0;
    CHECK(diff == 0);
    io_image_free(&back);

    char missing[300];
    snprintf(missing, sizeof missing, "%s/no/such/dir/a.png", dir);
    CHECK_FAILS(io_image_save_png(missing, out, 33, 17, pitch), OMMA_ERR_IO, missing);
    CHECK_FAILS(io_image_save_png(NULL, out, 33, 17, pitch), OMMA_ERR_INVALID_ARG, "NULL");
    CHECK_FAILS(io_image_save_png(path, NULL, 33, 17, pitch), OMMA_ERR_INVALID_ARG, "NULL");
    CHECK_FAILS(io_image_save_png(path, out, 0, 17, pitch), OMMA_ERR_INVALID_ARG, path);
    CHECK_FAILS(io_image_save_png(path, out, 33, -1, pitch), OMMA_ERR_INVALID_ARG, path);
    CHECK_FAILS(io_image_save_png(path, out, 33, 17, 98), OMMA_ERR_INVALID_ARG, path);
    /* A directory where the file should go: rename fails, the temporary
     * file is removed. */
    char sub[300];
    snprintf(sub, sizeof sub, "%s/dirXXXXXX", dir);
    REQUIRE(mkdtemp(sub));
    CHECK_FAILS(io_image_save_png(sub, out, 33, 17, pitch), OMMA_ERR_IO, "rename");
    CHECK(files_in(dir) == 2); /* a.png and the directory, no temporary file */
    rmdir(sub);
    unlink(path);
    rmdir(dir);
    free(out);
    free(g.px);
}

int main(void)
{
    RUN(test_every_format_converts_like_texel);
    RUN(test_box_changes_only_its_outline_and_label);
    RUN(test_label_inside_when_box_at_top);
    RUN(test_landmark_and_keypoint_dots);
    RUN(test_outside_and_nan_faces_are_clipped);
    RUN(test_bad_arguments);
    RUN(test_save_png_round_trip);
    return testing_finish();
}
