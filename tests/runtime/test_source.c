/* Capture sources: image sequences (a directory, patterns) made here from
 * crops of testdata/astronaut.png, read back pixel for pixel; the end of
 * the stream, loops, realtime pacing (never faster than the frame rate),
 * reads as fast as they decode, an interrupt waking a paced read on
 * another thread; the test videos (640x480, 24 frames at 15 fps; skipped
 * without FFmpeg) whole, paced, looped and truncated; bad inputs: missing
 * and corrupt files, a size change, a file removed after open, paths that
 * are not V4L2 cameras, NULL arguments and bad options. */
#define _POSIX_C_SOURCE 200809L /* mkdir, nanosleep */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "support/image_files.h"
#include "core/clock.h"
#include "io/image_file.h"
#include "runtime/source.h"
#include "io/video_file.h"
#include "io/video_writer.h"
#include "testing.h"

#define PHOTO OMMA_TESTDATA_DIR "/astronaut.png"
#define PAN_VIDEO OMMA_TESTDATA_DIR "/astronaut_pan.mp4"
#define ROTATE_VIDEO OMMA_TESTDATA_DIR "/astronaut_rotate.mp4"
#define VIDEO_W 640
#define VIDEO_H 480
#define VIDEO_FRAMES 24
#define VIDEO_FPS 15.0

/* Sequence frames: crops of the photo, CROP_W x CROP_H, frame i taken 8 px
 * further right than frame i - 1, so every frame differs. */
#define CROP_W 160
#define CROP_H 120
#define SLACK_S 0.002 /* timer rounding allowed under the frame times */

static io_image photo;

static void crop(int i, uint8_t *rgb)
{
    int x0 = 100 + 8 * i, y0 = 100;
    for (int y = 0; y < CROP_H; y++)
        memcpy(rgb + (size_t)y * CROP_W * 3, photo.rgb + ((size_t)(y0 + y) * photo.width + x0) * 3,
               (size_t)CROP_W * 3);
}

/* Writes crop i as PNG at path; 1 on success. */
static int write_crop(const char *path, int i)
{
    uint8_t rgb[CROP_W * CROP_H * 3];
    crop(i, rgb);
    omma_status st = io_image_save_png(path, rgb, CROP_W, CROP_H, CROP_W * 3);
    if (st != OMMA_OK)
        fprintf(stderr, "%s: %s\n", path, omma_last_error());
    return st == OMMA_OK;
}

/* 1 when the frame is RGB CROP_W x CROP_H in host memory holding crop i. */
static int frame_is_crop(const omma_frame *f, int i)
{
    if (f->format != OMMA_PIXEL_RGB || f->width != CROP_W || f->height != CROP_H ||
        f->memory != OMMA_MEMORY_HOST || !f->planes[0] || f->pitch[0] < CROP_W * 3)
        return 0;
    uint8_t rgb[CROP_W * CROP_H * 3];
    crop(i, rgb);
    for (int y = 0; y < CROP_H; y++)
        if (memcmp(f->planes[0] + (size_t)y * f->pitch[0], rgb + (size_t)y * CROP_W * 3,
                   (size_t)CROP_W * 3) != 0)
            return 0;
    return 1;
}

/* Writes crops 0..n-1 into the scratch folder as name_fmt (one %d). */
static int write_sequence(const char *name_fmt, int first_number, int n)
{
    for (int i = 0; i < n; i++) {
        char name[64];
        snprintf(name, sizeof name, name_fmt, first_number + i);
        if (!write_crop(scratch_path(name), i))
            return 0;
    }
    return 1;
}

static double seconds(uint64_t ns)
{
    return (double)ns * 1e-9;
}

static void sleep_ms(int ms)
{
    struct timespec t = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

/* The scratch folder's path without the trailing '/'. */
static const char *scratch_folder(void)
{
    static char dir[1024];
    snprintf(dir, sizeof dir, "%s", scratch_path(""));
    dir[strlen(dir) - 1] = '\0';
    return dir;
}

static rt_source_options options(int realtime, double fps, int loop)
{
    rt_source_options o;
    rt_source_options_init(&o);
    o.realtime = realtime;
    o.fps = fps;
    o.loop = loop;
    return o;
}

static void test_options_and_names(void)
{
    rt_source_options o;
    memset(&o, 0x5a, sizeof o);
    rt_source_options_init(&o);
    CHECK(o.realtime == 1 && o.fps == 30.0 && o.loop == 0 && o.width == 0 && o.height == 0);
    CHECK(strcmp(rt_source_kind_name(RT_SOURCE_VIDEO), "video") == 0);
    CHECK(strcmp(rt_source_kind_name(RT_SOURCE_IMAGES), "images") == 0);
    CHECK(strcmp(rt_source_kind_name(RT_SOURCE_V4L2), "v4l2") == 0);
    CHECK(strcmp(rt_source_kind_name((rt_source_kind)42), "unknown") == 0);
}

/* A directory: its PNG files in name order, other entries ignored, every
 * pixel as written, then the end, which stays the end. */
static void test_directory(void)
{
    REQUIRE(scratch_dir());
    const char *dir = scratch_folder();
    /* Written out of order: only the names give the order. */
    static const int order[] = {3, 0, 4, 2, 1};
    for (int k = 0; k < 5; k++) {
        char name[32];
        snprintf(name, sizeof name, "frame_%03d.PNG", order[k]);
        REQUIRE(write_crop(scratch_path(name), order[k]));
    }
    REQUIRE(write_bytes(scratch_path("notes.txt"), "not an image\n", 13));
    REQUIRE(write_bytes(scratch_path(".hidden.png"), "junk", 4));
    REQUIRE(mkdir(scratch_path("folder.png"), 0700) == 0);

    rt_source_options o = options(0, 25.0, 0);
    rt_source *s = NULL;
    REQUIRE_OK(rt_source_open(dir, &o, &s));
    const rt_source_info *info = rt_source_get_info(s);
    CHECK(info->kind == RT_SOURCE_IMAGES && info->live == 0);
    CHECK(info->width == CROP_W && info->height == CROP_H && info->format == OMMA_PIXEL_RGB);
    CHECK(info->fps == 25.0 && info->frames == 5);
    CHECK(strcmp(info->name, dir) == 0);
    uint64_t last = 0;
    for (int i = 0; i < 5; i++) {
        omma_frame f;
        uint64_t t = 0;
        int eof = -1;
        REQUIRE_OK(rt_source_read(s, &f, &t, &eof));
        CHECK(eof == 0);
        CHECK(frame_is_crop(&f, i));
        CHECK(t >= last && t <= core_now_ns());
        last = t;
    }
    for (int k = 0; k < 2; k++) {
        omma_frame f;
        uint64_t t = 1;
        int eof = 0;
        REQUIRE_OK(rt_source_read(s, &f, &t, &eof));
        CHECK(eof == 1 && f.planes[0] == NULL && f.width == 0 && t == 0);
    }
    rt_source_close(s);

    /* The same with a trailing '/'. */
    REQUIRE_OK(rt_source_open(scratch_path(""), &o, &s));
    CHECK(rt_source_get_info(s)->frames == 5);
    rt_source_close(s);
    scratch_remove();
}

/* Patterns: numbered from 1 or from 0, zero-padded or not, "%%". */
static void test_patterns(void)
{
    REQUIRE(scratch_dir());
    REQUIRE(write_sequence("p%03d.png", 1, 4)); /* p001..p004 */
    REQUIRE(write_sequence("q_%d.png", 0, 3)); /* q_0..q_2 */
    REQUIRE(write_sequence("50%%_%d.png", 0, 2)); /* 50%_0, 50%_1 */
    REQUIRE(write_crop(scratch_path("p006.png"), 5)); /* after the gap: not read */
    struct {
        const char *pattern;
        int frames;
    } cases[] = {{"p%03d.png", 4}, {"q_%d.png", 3}, {"50%%_%d.png", 2}};
    rt_source_options o = options(0, 30.0, 0);
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *spec = scratch_path(cases[c].pattern);
        rt_source *s = NULL;
        omma_status st = rt_source_open(spec, &o, &s);
        if (st != OMMA_OK)
            fprintf(stderr, "%s: %s\n", spec, omma_last_error());
        CHECK(st == OMMA_OK);
        if (st != OMMA_OK)
            continue;
        const rt_source_info *info = rt_source_get_info(s);
        CHECK(info->kind == RT_SOURCE_IMAGES && info->frames == -1);
        CHECK(info->width == CROP_W && info->height == CROP_H);
        int n = 0, eof = 0;
        for (;;) {
            omma_frame f;
            uint64_t t;
            st = rt_source_read(s, &f, &t, &eof);
            if (st != OMMA_OK || eof)
                break;
            CHECK(frame_is_crop(&f, n));
            n++;
        }
        CHECK(st == OMMA_OK && eof == 1);
        CHECK(n == cases[c].frames);
        rt_source_close(s);
    }

    /* The end stays the end, even when the next number appears. */
    rt_source *s = NULL;
    REQUIRE_OK(rt_source_open(scratch_path("q_%d.png"), &o, &s));
    omma_frame f;
    uint64_t t;
    int eof = 0, n = 0;
    while (rt_source_read(s, &f, &t, &eof) == OMMA_OK && !eof)
        n++;
    CHECK(n == 3 && eof == 1);
    REQUIRE(write_crop(scratch_path("q_3.png"), 3));
    CHECK(rt_source_read(s, &f, &t, &eof) == OMMA_OK && eof == 1);
    rt_source_close(s);

    s = (rt_source *)&s;
    CHECK_FAILS(rt_source_open(scratch_path("x%s.png"), &o, &s), OMMA_ERR_INVALID_ARG, "x%s.png");
    CHECK(s == NULL);
    CHECK_FAILS(rt_source_open(scratch_path("a%d_%d.png"), &o, &s), OMMA_ERR_INVALID_ARG,
                "a%d_%d.png");
    CHECK_FAILS(rt_source_open(scratch_path("w%099d.png"), &o, &s), OMMA_ERR_INVALID_ARG,
                "w%099d.png");
    CHECK_FAILS(rt_source_open(scratch_path("none_%04d.png"), &o, &s), OMMA_ERR_IO,
                "none_%04d.png");
    CHECK(strstr(omma_last_error(), "none_0001.png") != NULL);
    CHECK(s == NULL);
    scratch_remove();
}

/* Reads n frames; the capture time of each in t (n of them). */
static omma_status read_times(rt_source *s, int n, uint64_t *t, int *crops, int ncrops)
{
    for (int i = 0; i < n; i++) {
        omma_frame f;
        int eof = 0;
        omma_status st = rt_source_read(s, &f, &t[i], &eof);
        if (st != OMMA_OK)
            return st;
        if (eof)
            return OMMA_ERR_INTERNAL;
        if (crops)
            crops[i] = -1;
        for (int c = 0; crops && c < ncrops; c++)
            if (frame_is_crop(&f, c))
                crops[i] = c;
    }
    return OMMA_OK;
}

/* Realtime: frame i no earlier than i / fps after frame 0; not realtime:
 * no waiting (at 0.5 fps, 6 paced frames would take 10 s); a loop starts
 * again at the first image and keeps pacing (times keep increasing). */
static void test_pacing_and_loop(void)
{
    REQUIRE(scratch_dir());
    REQUIRE(write_sequence("f%02d.png", 0, 3));
    const char *spec = scratch_path("f%02d.png");
    uint64_t t[8];
    int crops[8];

    rt_source_options o = options(1, 50.0, 0);
    rt_source *s = NULL;
    REQUIRE_OK(rt_source_open(spec, &o, &s));
    CHECK(read_times(s, 3, t, NULL, 0) == OMMA_OK);
    for (int i = 1; i < 3; i++)
        CHECK(seconds(t[i] - t[0]) >= i / 50.0 - SLACK_S);
    fprintf(stderr, "  realtime at 50 fps: 3 frames in %.1f ms (at least 40)\n",
            1e3 * seconds(t[2] - t[0]));
    rt_source_close(s);

    o = options(1, 40.0, 1);
    REQUIRE_OK(rt_source_open(spec, &o, &s));
    CHECK(read_times(s, 8, t, crops, 3) == OMMA_OK);
    for (int i = 0; i < 8; i++) {
        CHECK(crops[i] == i % 3);
        CHECK(seconds(t[i] - t[0]) >= i / 40.0 - SLACK_S);
    }
    fprintf(stderr, "  realtime loop at 40 fps: 8 frames in %.1f ms (at least 175)\n",
            1e3 * seconds(t[7] - t[0]));
    rt_source_close(s);

    o = options(0, 0.5, 1);
    REQUIRE_OK(rt_source_open(spec, &o, &s));
    uint64_t t0 = core_now_ns();
    CHECK(read_times(s, 7, t, crops, 3) == OMMA_OK);
    double took = seconds(core_now_ns() - t0);
    fprintf(stderr, "  not realtime at 0.5 fps: 7 frames in %.1f ms\n", 1e3 * took);
    CHECK(took < 6.0); /* paced, it would be 12 s */
    for (int i = 0; i < 7; i++)
        CHECK(crops[i] == i % 3);
    rt_source_close(s);
    scratch_remove();
}

struct reader {
    rt_source *s;
    int frames;
    omma_status st;
    uint64_t blocked_ns; /* when the read that the interrupt ends began */
    uint64_t returned_ns;
};

static void *read_until_error(void *arg)
{
    struct reader *r = arg;
    for (;;) {
        omma_frame f;
        uint64_t t;
        int eof = 0;
        r->blocked_ns = core_now_ns();
        r->st = rt_source_read(r->s, &f, &t, &eof);
        r->returned_ns = core_now_ns();
        if (r->st != OMMA_OK || eof)
            return NULL;
        r->frames++;
    }
}

/* An interrupt from another thread wakes a read waiting for a frame due in
 * 5 s; meanwhile a second reader is refused (BUSY); later reads say CLOSED;
 * an interrupt before any read makes the first read CLOSED. */
static void test_interrupt(void)
{
    REQUIRE(scratch_dir());
    REQUIRE(write_sequence("i%d.png", 0, 3));
    const char *spec = scratch_path("i%d.png");
    rt_source_options o = options(1, 0.2, 0);
    struct reader r = {0};
    REQUIRE_OK(rt_source_open(spec, &o, &r.s));
    pthread_t th;
    REQUIRE(pthread_create(&th, NULL, read_until_error, &r) == 0);
    sleep_ms(300);
    omma_frame f;
    uint64_t t;
    int eof;
    CHECK_FAILS(rt_source_read(r.s, &f, &t, &eof), OMMA_ERR_BUSY, "i%d.png");
    uint64_t asked = core_now_ns();
    rt_source_interrupt(r.s);
    rt_source_interrupt(r.s); /* idempotent */
    pthread_join(th, NULL);
    double after = seconds(r.returned_ns - asked);
    fprintf(stderr, "  interrupt: the paced read returned %.1f ms after it\n", 1e3 * after);
    CHECK(r.frames == 1);
    CHECK(r.st == OMMA_ERR_CLOSED);
    CHECK(after < 2.5); /* the frame was due 5 s after the first */
    CHECK_FAILS(rt_source_read(r.s, &f, &t, &eof), OMMA_ERR_CLOSED, "i%d.png");
    rt_source_close(r.s);

    rt_source *s = NULL;
    REQUIRE_OK(rt_source_open(spec, &o, &s));
    rt_source_interrupt(s);
    CHECK_FAILS(rt_source_read(s, &f, &t, &eof), OMMA_ERR_CLOSED, "interrupted");
    rt_source_close(s);
    rt_source_interrupt(NULL);
    scratch_remove();
}

/* Reads until an error or the end (at most 1000 frames: a loop that
 * should have failed ends too): frames read, *st the status. */
static int read_to_end(rt_source *s, omma_status *st, int *eof)
{
    int n = 0;
    *eof = 0;
    *st = OMMA_OK;
    while (n < 1000) {
        omma_frame f;
        uint64_t t;
        *st = rt_source_read(s, &f, &t, eof);
        if (*st != OMMA_OK) {
            CHECK(f.planes[0] == NULL && *eof == 0);
            return n;
        }
        if (*eof)
            return n;
        n++;
    }
    return n;
}

/* Damage in a sequence: the frames before it, then an error naming the
 * file and the frame, the same at every later read. */
static void test_bad_sequences(void)
{
    rt_source_options o = options(0, 30.0, 1);
    rt_source *s = NULL;
    omma_frame f;
    uint64_t t;
    int eof;
    omma_status st;
    char first[1024];

    /* A corrupt third image (a PNG cut in half) in a looping pattern. */
    REQUIRE(scratch_dir());
    REQUIRE(write_sequence("c%d.png", 0, 4));
    size_t size;
    unsigned char *png = read_bytes(scratch_path("c2.png"), &size);
    REQUIRE(png);
    int wrote = write_bytes(scratch_path("c2.png"), png, size / 2);
    free(png);
    REQUIRE(wrote);
    REQUIRE_OK(rt_source_open(scratch_path("c%d.png"), &o, &s));
    CHECK(read_to_end(s, &st, &eof) == 2);
    snprintf(first, sizeof first, "%s", omma_last_error());
    fprintf(stderr, "  corrupt: %s: %s\n", omma_status_str(st), first);
    CHECK(st == OMMA_ERR_FORMAT);
    CHECK(strstr(first, "c2.png") && strstr(first, "frame 2"));
    omma_clear_error();
    CHECK(rt_source_read(s, &f, &t, &eof) == OMMA_ERR_FORMAT);
    CHECK(strcmp(omma_last_error(), first) == 0);
    rt_source_close(s);

    /* Not an image at all, first: open fails naming it. */
    REQUIRE(write_bytes(scratch_path("n0.png"), "plain text, not a PNG\n", 22));
    s = (rt_source *)&s;
    CHECK_FAILS(rt_source_open(scratch_path("n%d.png"), &o, &s), OMMA_ERR_FORMAT, "n0.png");
    CHECK(s == NULL);
    scratch_remove();

    /* Another size second: FORMAT naming the file and both sizes. */
    REQUIRE(scratch_dir());
    REQUIRE(write_crop(scratch_path("a.png"), 0));
    uint8_t small[80 * 60 * 3];
    memset(small, 99, sizeof small);
    REQUIRE_OK(io_image_save_png(scratch_path("b.png"), small, 80, 60, 80 * 3));
    REQUIRE_OK(rt_source_open(scratch_folder(), &o, &s));
    CHECK(read_to_end(s, &st, &eof) == 1);
    fprintf(stderr, "  size change: %s: %s\n", omma_status_str(st), omma_last_error());
    CHECK(st == OMMA_ERR_FORMAT);
    CHECK(strstr(omma_last_error(), "b.png") && strstr(omma_last_error(), "80x60") &&
          strstr(omma_last_error(), "160x120") && strstr(omma_last_error(), "frame 1"));
    rt_source_close(s);
    scratch_remove();

    /* An image removed after open. */
    REQUIRE(scratch_dir());
    REQUIRE(write_sequence("r%d.png", 0, 3));
    REQUIRE_OK(rt_source_open(scratch_folder(), &o, &s));
    REQUIRE(unlink(scratch_path("r1.png")) == 0);
    CHECK(read_to_end(s, &st, &eof) == 1);
    fprintf(stderr, "  removed: %s: %s\n", omma_status_str(st), omma_last_error());
    CHECK(st == OMMA_ERR_IO);
    CHECK(strstr(omma_last_error(), "r1.png") && strstr(omma_last_error(), "frame 1"));
    /* The error stays, even with the file back. */
    REQUIRE(write_crop(scratch_path("r1.png"), 1));
    CHECK_FAILS(rt_source_read(s, &f, &t, &eof), OMMA_ERR_IO, "r1.png");
    rt_source_close(s);
    scratch_remove();

    /* A pattern's first image removed while looping: an error, not a spin. */
    REQUIRE(scratch_dir());
    REQUIRE(write_sequence("g%d.png", 0, 2));
    REQUIRE_OK(rt_source_open(scratch_path("g%d.png"), &o, &s));
    REQUIRE(unlink(scratch_path("g0.png")) == 0);
    CHECK(read_to_end(s, &st, &eof) == 2);
    CHECK_FAILS(st, OMMA_ERR_IO, "g0.png");
    rt_source_close(s);
    scratch_remove();

    /* Empty folders, and folders with no images, name the folder. */
    REQUIRE(scratch_dir());
    CHECK_FAILS(rt_source_open(scratch_folder(), &o, &s), OMMA_ERR_IO, scratch_folder());
    CHECK(s == NULL);
    REQUIRE(write_bytes(scratch_path("readme.txt"), "x", 1));
    CHECK_FAILS(rt_source_open(scratch_folder(), &o, &s), OMMA_ERR_IO, "no PNG or JPEG");
    scratch_remove();
}

/* Missing inputs, arguments and options. */
static void test_bad_arguments(void)
{
    rt_source_options o;
    rt_source_options_init(&o);
    rt_source *s = (rt_source *)&s;
    CHECK(rt_source_open(NULL, &o, &s) == OMMA_ERR_INVALID_ARG);
    CHECK(s == NULL);
    CHECK(rt_source_open(PHOTO, &o, NULL) == OMMA_ERR_INVALID_ARG);
    CHECK(rt_source_open("", &o, &s) == OMMA_ERR_INVALID_ARG);
    const double bad_fps[] = {0.0, -1.0, 1000.5, NAN, INFINITY};
    for (size_t i = 0; i < sizeof bad_fps / sizeof bad_fps[0]; i++) {
        o.fps = bad_fps[i];
        s = (rt_source *)&s;
        CHECK_FAILS(rt_source_open(PAN_VIDEO, &o, &s), OMMA_ERR_INVALID_ARG, "fps");
        CHECK(s == NULL);
    }
    rt_source_options_init(&o);
    o.width = 640; /* no height */
    CHECK_FAILS(rt_source_open("/dev/video0", &o, &s), OMMA_ERR_INVALID_ARG, "640x0");
    o.height = -480;
    CHECK_FAILS(rt_source_open("/dev/video0", &o, &s), OMMA_ERR_INVALID_ARG, "/dev/video0");

    /* Missing files, with and without FFmpeg. */
    rt_source_options_init(&o);
    omma_status want = io_video_available() ? OMMA_ERR_IO : OMMA_ERR_UNSUPPORTED;
    CHECK_FAILS(rt_source_open(OMMA_TESTDATA_DIR "/no-such-video.mp4", &o, &s), want,
                "no-such-video.mp4");
    CHECK(s == NULL);
    CHECK_FAILS(rt_source_open(OMMA_TESTDATA_DIR "/no-such-folder/%05d.png", &o, &s), OMMA_ERR_IO,
                "no-such-folder/%05d.png");

    /* Calls on NULL, and reads with NULL out-parameters. */
    CHECK(rt_source_get_info(NULL) == NULL);
    rt_source_close(NULL);
    omma_frame f;
    uint64_t t;
    int eof;
    CHECK(rt_source_read(NULL, &f, &t, &eof) == OMMA_ERR_INVALID_ARG);
    REQUIRE(scratch_dir());
    REQUIRE(write_sequence("z%d.png", 0, 1));
    REQUIRE_OK(rt_source_open(scratch_path("z%d.png"), NULL, &s)); /* NULL: the defaults */
    CHECK(rt_source_get_info(s)->fps == 30.0);
    CHECK(rt_source_read(s, NULL, &t, &eof) == OMMA_ERR_INVALID_ARG);
    CHECK(rt_source_read(s, &f, NULL, &eof) == OMMA_ERR_INVALID_ARG);
    CHECK(rt_source_read(s, &f, &t, NULL) == OMMA_ERR_INVALID_ARG);
    REQUIRE_OK(rt_source_read(s, &f, &t, &eof)); /* the bad calls took nothing */
    CHECK(!eof && frame_is_crop(&f, 0));
    rt_source_close(s);
    scratch_remove();
}

/* Paths under /dev/ that are no camera: each a clear error naming it. */
static void test_not_cameras(void)
{
    rt_source *s = (rt_source *)&s;
#ifdef OMMA_HAVE_LIBV4L2
    CHECK_FAILS(rt_source_open("/dev/null", NULL, &s), OMMA_ERR_UNSUPPORTED,
                "/dev/null: not a V4L2 capture device");
    fprintf(stderr, "  %s\n", omma_last_error());
    CHECK(s == NULL);
    CHECK_FAILS(rt_source_open("/dev/video-omma-missing", NULL, &s), OMMA_ERR_IO,
                "/dev/video-omma-missing: no such camera");
    CHECK_FAILS(rt_source_open("/dev/", NULL, &s), OMMA_ERR_UNSUPPORTED, "a directory");
    char path[64];
    snprintf(path, sizeof path, "/dev/shm/omma-test-source-%ld", (long)getpid());
    if (write_bytes(path, "not a camera", 12)) {
        CHECK_FAILS(rt_source_open(path, NULL, &s), OMMA_ERR_UNSUPPORTED, "a regular file");
        CHECK(strstr(omma_last_error(), path) != NULL);
        fprintf(stderr, "  %s\n", omma_last_error());
        CHECK(s == NULL);
        unlink(path);
    } else {
        fprintf(stderr, "  (no /dev/shm to put a regular file in: that case skipped)\n");
    }
#else
    CHECK_FAILS(rt_source_open("/dev/null", NULL, &s), OMMA_ERR_UNSUPPORTED,
                "/dev/null: omma was built without libv4l2");
    CHECK_FAILS(rt_source_open("/dev/video0", NULL, &s), OMMA_ERR_UNSUPPORTED, "/dev/video0");
    CHECK(s == NULL);
#endif
}

/* 1 when two frames of one layout hold the same pixels. */
static int same_pixels(const omma_frame *a, const omma_frame *b)
{
    if (a->format != b->format || a->width != b->width || a->height != b->height)
        return 0;
    int planes = a->format == OMMA_PIXEL_I420 ? 3 : a->format == OMMA_PIXEL_NV12 ? 2 : 1;
    for (int p = 0; p < planes; p++) {
        int h = p ? (a->height + 1) / 2 : a->height;
        int row = p == 0 ? (a->format == OMMA_PIXEL_RGB ? 3 * a->width : a->width)
                  : a->format == OMMA_PIXEL_NV12 ? 2 * ((a->width + 1) / 2)
                                                 : (a->width + 1) / 2;
        for (int y = 0; y < h; y++)
            if (memcmp(a->planes[p] + (size_t)y * a->pitch[p],
                       b->planes[p] + (size_t)y * b->pitch[p], (size_t)row) != 0)
                return 0;
    }
    return 1;
}

/* A copy of the frame's luma (or first plane) rows, for later comparison. */
static uint8_t *copy_plane0(const omma_frame *f, size_t *row)
{
    *row = f->format == OMMA_PIXEL_RGB ? 3 * (size_t)f->width : (size_t)f->width;
    uint8_t *c = malloc(*row * (size_t)f->height);
    for (int y = 0; c && y < f->height; y++)
        memcpy(c + (size_t)y * *row, f->planes[0] + (size_t)y * f->pitch[0], *row);
    return c;
}

static int plane0_is(const omma_frame *f, const uint8_t *c, size_t row)
{
    for (int y = 0; y < f->height; y++)
        if (memcmp(c + (size_t)y * row, f->planes[0] + (size_t)y * f->pitch[0], row) != 0)
            return 0;
    return 1;
}

/* The test video whole: the info, 24 frames of one layout, the first the
 * same as io_video's, then the end; paced to 15 fps; looped. */
static void test_video(void)
{
    if (!io_video_available()) {
        fprintf(stderr, "  skipped: this build reads no video (no FFmpeg)\n");
        return;
    }
    rt_source_options o = options(0, 30.0, 0);
    rt_source *s = NULL;
    REQUIRE_OK(rt_source_open(PAN_VIDEO, &o, &s));
    const rt_source_info *info = rt_source_get_info(s);
    CHECK(info->kind == RT_SOURCE_VIDEO && info->live == 0);
    CHECK(info->width == VIDEO_W && info->height == VIDEO_H);
    CHECK(info->format == OMMA_PIXEL_I420 || info->format == OMMA_PIXEL_NV12);
    CHECK_NEAR(info->fps, VIDEO_FPS, 1e-6);
    CHECK(info->frames == VIDEO_FRAMES);
    CHECK(strcmp(info->name, PAN_VIDEO) == 0);

    io_video *v = NULL;
    REQUIRE_OK(io_video_open(PAN_VIDEO, &v));
    omma_frame direct, f;
    double ts;
    uint64_t t;
    int eof = 0, n = 0;
    REQUIRE_OK(io_video_read(v, &direct, &ts, &eof));
    omma_status st;
    uint8_t *frame0 = NULL;
    size_t row = 0;
    while ((st = rt_source_read(s, &f, &t, &eof)) == OMMA_OK && !eof) {
        CHECK(f.width == info->width && f.height == info->height && f.format == info->format);
        CHECK(f.memory == OMMA_MEMORY_HOST);
        if (n == 0) {
            CHECK(same_pixels(&f, &direct));
            frame0 = copy_plane0(&f, &row);
        } else if (n == 10) {
            CHECK(frame0 && !plane0_is(&f, frame0, row)); /* the picture moves */
        }
        n++;
    }
    io_video_close(v);
    CHECK(st == OMMA_OK && eof == 1 && n == VIDEO_FRAMES);
    CHECK(rt_source_read(s, &f, &t, &eof) == OMMA_OK && eof == 1);
    rt_source_close(s);

    /* Realtime: 5 frames take at least 4 / 15 s. */
    o = options(1, 30.0, 0);
    REQUIRE_OK(rt_source_open(PAN_VIDEO, &o, &s));
    uint64_t times[5];
    CHECK(read_times(s, 5, times, NULL, 0) == OMMA_OK);
    for (int i = 1; i < 5; i++)
        CHECK(seconds(times[i] - times[0]) >= i / VIDEO_FPS - SLACK_S);
    rt_source_close(s);

    /* Looped: frame 24 is frame 0 again, with no end. */
    o = options(0, 30.0, 1);
    REQUIRE_OK(rt_source_open(PAN_VIDEO, &o, &s));
    n = 0;
    int again = 0;
    while (n < 2 * VIDEO_FRAMES + 3 && (st = rt_source_read(s, &f, &t, &eof)) == OMMA_OK && !eof) {
        if (n == VIDEO_FRAMES || n == 2 * VIDEO_FRAMES)
            again += frame0 && plane0_is(&f, frame0, row);
        n++;
    }
    CHECK(st == OMMA_OK && !eof && n == 2 * VIDEO_FRAMES + 3);
    CHECK(again == 2);
    rt_source_close(s);
    free(frame0);
}

/* A short video (3 frames at 30 fps, written here) looped in realtime:
 * the times keep increasing across loops, so 7 frames take 6 / 30 s. */
static void test_video_loop_pacing(void)
{
    if (!io_video_available()) {
        fprintf(stderr, "  skipped: this build reads no video (no FFmpeg)\n");
        return;
    }
    REQUIRE(scratch_dir());
    const char *path = scratch_path("short.mp4");
    io_video_writer *w = NULL;
    REQUIRE_OK(io_video_writer_open(path, CROP_W, CROP_H, 30.0, &w));
    uint8_t rgb[CROP_W * CROP_H * 3];
    for (int i = 0; i < 3; i++) {
        crop(i, rgb);
        omma_status st = io_video_writer_write(w, rgb, CROP_W * 3);
        if (st != OMMA_OK) {
            fprintf(stderr, "writing %s: %s\n", path, omma_last_error());
            io_video_writer_abort(w);
            CHECK(0);
            scratch_remove();
            return;
        }
    }
    REQUIRE_OK(io_video_writer_finish(w));
    rt_source_options o = options(1, 30.0, 1);
    rt_source *s = NULL;
    REQUIRE_OK(rt_source_open(path, &o, &s));
    CHECK_NEAR(rt_source_get_info(s)->fps, 30.0, 1e-3);
    uint64_t t[7];
    CHECK(read_times(s, 7, t, NULL, 0) == OMMA_OK);
    for (int i = 1; i < 7; i++)
        CHECK(seconds(t[i] - t[0]) >= i / 30.0 - SLACK_S);
    fprintf(stderr, "  3-frame video looped at 30 fps: 7 frames in %.1f ms (at least 200)\n",
            1e3 * seconds(t[6] - t[0]));
    rt_source_close(s);
    scratch_remove();
}

/* Truncated and broken videos: open fails naming the file, or the frames
 * the data gives (damage concealed by the reader) then the end or an error
 * naming the file; never a crash. Text named .mp4 is FORMAT. */
static void test_bad_videos(void)
{
    if (!io_video_available()) {
        fprintf(stderr, "  skipped: this build reads no video (no FFmpeg)\n");
        return;
    }
    REQUIRE(scratch_dir());
    struct {
        const char *src;
        double keep;
        const char *name;
    } cuts[] = {
        {PAN_VIDEO, 0.5, "pan_half.mp4"},
        {ROTATE_VIDEO, 0.67, "rotate_cut.mp4"},
        {ROTATE_VIDEO, 0.995, "rotate_tail.mp4"},
        {PAN_VIDEO, 0.01, "pan_head.mp4"},
    };
    rt_source_options o = options(0, 30.0, 0); /* no loop: a cut file ends */
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        size_t n;
        unsigned char *data = read_bytes(cuts[i].src, &n);
        REQUIRE(data);
        const char *p = scratch_path(cuts[i].name);
        int wrote = write_bytes(p, data, (size_t)((double)n * cuts[i].keep));
        free(data);
        REQUIRE(wrote);
        rt_source *s = (rt_source *)&s;
        omma_status st = rt_source_open(p, &o, &s);
        if (st != OMMA_OK) {
            fprintf(stderr, "  %s: open: %s: %s\n", cuts[i].name, omma_status_str(st),
                    omma_last_error());
            CHECK(s == NULL);
            CHECK(strstr(omma_last_error(), cuts[i].name) != NULL);
            continue;
        }
        int eof;
        int frames = read_to_end(s, &st, &eof);
        fprintf(stderr, "  %s: %d frames, then %s: %s\n", cuts[i].name, frames,
                eof ? "the end" : omma_status_str(st), eof ? "" : omma_last_error());
        CHECK(frames < VIDEO_FRAMES);
        CHECK(eof || st == OMMA_ERR_FORMAT || st == OMMA_ERR_IO);
        if (!eof)
            CHECK(strstr(omma_last_error(), cuts[i].name) != NULL);
        rt_source_close(s);
    }
    const char *notes = scratch_path("notes.mp4");
    REQUIRE(write_bytes(notes, "These are notes, not a video.\n", 30));
    rt_source *s = (rt_source *)&s;
    CHECK_FAILS(rt_source_open(notes, &o, &s), OMMA_ERR_FORMAT, "notes.mp4");
    CHECK(s == NULL);
    scratch_remove();
}

int main(void)
{
    if (io_image_load(PHOTO, &photo) != OMMA_OK) {
        fprintf(stderr, "%s: %s\n", PHOTO, omma_last_error());
        return 1;
    }
    RUN(test_options_and_names);
    RUN(test_directory);
    RUN(test_patterns);
    RUN(test_pacing_and_loop);
    RUN(test_interrupt);
    RUN(test_bad_sequences);
    RUN(test_bad_arguments);
    RUN(test_not_cameras);
    RUN(test_video);
    RUN(test_video_loop_pacing);
    RUN(test_bad_videos);
    io_image_free(&photo);
    return testing_finish();
}
