/* Video files: the reader over the test videos that scripts/fetch-testdata.sh
 * makes from astronaut.png (640x480, 24 frames at 15 fps, H.264 yuv420p or
 * MPEG-4; astronaut_pan.mp4 moves the picture 4 px per frame left), bad,
 * truncated and damaged inputs made here (concealed and counted), and the writer: a round trip
 * through the reader, abort, a missing folder. Skipped (77) in a build without FFmpeg. */
#define _POSIX_C_SOURCE 200809L /* mkdir */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <sys/stat.h>

#include "support/image_files.h"
#include "io/video_file.h"
#include "io/video_writer.h"
#include "testing.h"

#define PAN_VIDEO OMMA_TESTDATA_DIR "/astronaut_pan.mp4"
#define ROTATE_VIDEO OMMA_TESTDATA_DIR "/astronaut_rotate.mp4"
#define VIDEO_W 640
#define VIDEO_H 480
#define VIDEO_FRAMES 24
#define VIDEO_FPS 15.0
#define PAN_DX (-4) /* px per frame */

static int file_exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* Names in the scratch folder (to show nothing is left behind). */
static int scratch_entries(void)
{
    DIR *d = opendir(scratch_path(""));
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

/* The reader's counts after the last read_all (zeros when it did not open). */
static io_video_stats last_stats;

/* Reads the whole video: frames read, *status the status that ended it
 * (OMMA_OK at the end of the stream), the counts in last_stats. Checks every frame's layout and
 * that timestamps increase. Keeps a copy of luma planes 0 and `keep` in y0 / yk (w x h each) when
 * those are not NULL. */
static long read_all(const char *path, omma_status *status, int keep, uint8_t *y0, uint8_t *yk)
{
    io_video *v = NULL;
    memset(&last_stats, 0, sizeof last_stats);
    *status = io_video_open(path, &v);
    if (*status != OMMA_OK) {
        CHECK(v == NULL);
        return 0;
    }
    int w = io_video_width(v), h = io_video_height(v);
    long n = 0;
    double last_ts = -1.0;
    for (;;) {
        omma_frame f;
        double ts = -1.0;
        int eof = -1;
        *status = io_video_read(v, &f, &ts, &eof);
        if (*status != OMMA_OK) {
            CHECK(eof == 0 && f.planes[0] == NULL);
            break;
        }
        if (eof) {
            CHECK(f.width == 0 && f.planes[0] == NULL);
            /* The end stays the end. */
            CHECK(io_video_read(v, &f, &ts, &eof) == OMMA_OK && eof == 1);
            break;
        }
        CHECK(f.width == w && f.height == h);
        CHECK(f.memory == OMMA_MEMORY_HOST);
        CHECK(f.format == OMMA_PIXEL_I420);
        CHECK(f.planes[0] && f.planes[1] && f.planes[2]);
        CHECK(f.pitch[0] >= w && f.pitch[1] >= (w + 1) / 2 && f.pitch[2] >= (w + 1) / 2);
        CHECK(ts > last_ts);
        last_ts = ts;
        if (f.format == OMMA_PIXEL_I420 && f.pitch[0] >= w) {
            uint8_t *dst = n == 0 ? y0 : n == keep ? yk : NULL;
            for (int y = 0; dst && y < h; y++)
                memcpy(dst + (size_t)y * w, f.planes[0] + (size_t)y * f.pitch[0], (size_t)w);
        }
        n++;
    }
    io_video_get_stats(v, &last_stats);
    CHECK(last_stats.frames == n);
    io_video_close(v);
    return n;
}

static void require_testdata(const char *path)
{
    if (!file_exists(path)) {
        fprintf(stderr, "%s is missing: run scripts/fetch-testdata.sh\n", path);
        CHECK(0);
    }
}

static void test_test_videos(void)
{
    require_testdata(PAN_VIDEO);
    require_testdata(ROTATE_VIDEO);
    const char *videos[] = {PAN_VIDEO, ROTATE_VIDEO};
    for (int i = 0; i < 2; i++) {
        io_video *v = NULL;
        REQUIRE_OK(io_video_open(videos[i], &v));
        CHECK(io_video_width(v) == VIDEO_W && io_video_height(v) == VIDEO_H);
        CHECK_NEAR(io_video_fps(v), VIDEO_FPS, 1e-6);
        CHECK(io_video_frame_count(v) == VIDEO_FRAMES);
        /* Timestamps: n / 15 s. */
        for (int n = 0; n < 3; n++) {
            omma_frame f;
            double ts;
            int eof;
            REQUIRE_OK(io_video_read(v, &f, &ts, &eof));
            CHECK(!eof);
            CHECK_NEAR(ts, 1000.0 * n / VIDEO_FPS, 0.5);
        }
        io_video_close(v);

        omma_status st;
        long n = read_all(videos[i], &st, -1, NULL, NULL);
        if (st != OMMA_OK)
            fprintf(stderr, "%s: %s\n", videos[i], omma_last_error());
        CHECK(st == OMMA_OK);
        CHECK(n == VIDEO_FRAMES);
    }
    io_video_close(NULL);
}

/* The pan video's frame k is frame 0 moved k * PAN_DX px: luma matches
 * closely when shifted back, not when compared in place. */
static void test_pan_motion(void)
{
    require_testdata(PAN_VIDEO);
    const int k = 10, dx = -PAN_DX * k; /* frame k at x = frame 0 at x + dx */
    uint8_t *y0 = malloc((size_t)VIDEO_W * VIDEO_H), *yk = malloc((size_t)VIDEO_W * VIDEO_H);
    REQUIRE(y0 && yk);
    omma_status st;
    long n = read_all(PAN_VIDEO, &st, k, y0, yk);
    CHECK(st == OMMA_OK && n == VIDEO_FRAMES);
    if (n > k) {
        double shifted = 0, in_place = 0;
        long count = 0;
        for (int y = 0; y < VIDEO_H; y++)
            for (int x = 0; x + dx < VIDEO_W; x++) {
                shifted += abs(yk[y * VIDEO_W + x] - y0[y * VIDEO_W + x + dx]);
                in_place += abs(yk[y * VIDEO_W + x] - y0[y * VIDEO_W + x]);
                count++;
            }
        shifted /= (double)count;
        in_place /= (double)count;
        fprintf(stderr, "  frame %d vs frame 0: mean |dY| %.2f shifted by %d px, %.2f in place\n",
                k, shifted, dx, in_place);
        CHECK(shifted < 3.0);
        CHECK(in_place > 4.0 * shifted + 4.0);
    }
    free(y0);
    free(yk);
}

static void test_bad_inputs(void)
{
    REQUIRE(scratch_dir());
    io_video *v = (io_video *)&v;
    CHECK_FAILS(io_video_open(OMMA_TESTDATA_DIR "/no-such-video.mp4", &v), OMMA_ERR_IO,
                "no-such-video.mp4");
    CHECK(v == NULL);
    CHECK_FAILS(io_video_open(OMMA_TESTDATA_DIR, &v), OMMA_ERR_IO, OMMA_TESTDATA_DIR);
    CHECK(v == NULL);
    CHECK(io_video_open(NULL, &v) == OMMA_ERR_INVALID_ARG);
    CHECK(io_video_open(PAN_VIDEO, NULL) == OMMA_ERR_INVALID_ARG);

    const char *empty = scratch_path("empty.mp4");
    REQUIRE(write_bytes(empty, "", 0));
    CHECK_FAILS(io_video_open(empty, &v), OMMA_ERR_FORMAT, "empty.mp4");
    CHECK(v == NULL);

    /* Random bytes (a fixed generator: the same bytes every run). */
    uint8_t junk[4096];
    uint32_t s = 12345;
    for (size_t i = 0; i < sizeof junk; i++) {
        s = s * 1664525u + 1013904223u;
        junk[i] = (uint8_t)(s >> 24);
    }
    const char *random = scratch_path("random.mp4");
    REQUIRE(write_bytes(random, junk, sizeof junk));
    CHECK_FAILS(io_video_open(random, &v), OMMA_ERR_FORMAT, "random.mp4");
    CHECK(v == NULL);

    static const char text[] = "These are notes, not a video.\nLine two.\n";
    const char *notes_mp4 = scratch_path("notes.mp4");
    const char *notes_txt = scratch_path("notes.txt");
    REQUIRE(write_bytes(notes_mp4, text, sizeof text - 1));
    REQUIRE(write_bytes(notes_txt, text, sizeof text - 1));
    CHECK_FAILS(io_video_open(notes_mp4, &v), OMMA_ERR_FORMAT, "notes.mp4");
    CHECK_FAILS(io_video_open(notes_txt, &v), OMMA_ERR_FORMAT, "notes.txt");
    CHECK(v == NULL);

    /* Read arguments. */
    if (io_video_open(PAN_VIDEO, &v) == OMMA_OK) {
        omma_frame f;
        double ts;
        int eof;
        CHECK(io_video_read(v, NULL, &ts, &eof) == OMMA_ERR_INVALID_ARG);
        CHECK(io_video_read(v, &f, NULL, &eof) == OMMA_ERR_INVALID_ARG);
        CHECK(io_video_read(v, &f, &ts, NULL) == OMMA_ERR_INVALID_ARG);
        CHECK(io_video_read(NULL, &f, &ts, &eof) == OMMA_ERR_INVALID_ARG);
        io_video_close(v);
    } else {
        CHECK(0);
    }
    scratch_remove();
}

/* Cuts `path` to `keep` of its bytes in the scratch folder as `name`;
 * returns the new path or NULL. */
static const char *truncated_copy(const char *path, double keep, const char *name)
{
    size_t n;
    unsigned char *data = read_bytes(path, &n);
    if (!data)
        return NULL;
    const char *out = scratch_path(name);
    int ok = write_bytes(out, data, (size_t)(n * keep));
    free(data);
    return ok ? out : NULL;
}

/* Truncated and damaged files: the videos keep their index first
 * (+faststart), so they open; damage is concealed and counted, a file cut
 * short ends after the frames its data gives (OMMA_OK), and a file whose
 * data gives no frame at all is FORMAT naming the file, an error that stays. */
static void test_truncated(void)
{
    require_testdata(PAN_VIDEO);
    require_testdata(ROTATE_VIDEO);
    REQUIRE(scratch_dir());
    struct {
        const char *src;
        double keep;
        const char *name;
        long min_frames, max_frames; /* frames expected */
    } cuts[] = {
        {PAN_VIDEO, 0.5, "pan_half.mp4", 0, 0}, /* inside frame 0 (the big key frame) */
        {ROTATE_VIDEO, 0.67, "rotate_cut.mp4", 8, VIDEO_FRAMES - 1}, /* a third missing */
        {ROTATE_VIDEO, 0.995, "rotate_tail.mp4", VIDEO_FRAMES - 1, VIDEO_FRAMES}, /* the last cut */
    };
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        const char *p = truncated_copy(cuts[i].src, cuts[i].keep, cuts[i].name);
        REQUIRE(p);
        omma_status st;
        long n = read_all(p, &st, -1, NULL, NULL);
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", st == OMMA_OK ? "" : omma_last_error());
        fprintf(stderr, "  %s: %ld frames (%ld damaged, %ld corrupt packets), then %s %s\n",
                cuts[i].name, n, last_stats.damaged_frames, last_stats.corrupt_packets,
                omma_status_str(st), msg);
        CHECK(n >= cuts[i].min_frames && n <= cuts[i].max_frames);
        if (n == 0) {
            CHECK(st == OMMA_ERR_FORMAT);
            CHECK(strstr(msg, cuts[i].name) != NULL);
            CHECK(strstr(msg, "no frame could be decoded") != NULL);
        } else {
            CHECK(st == OMMA_OK);
            CHECK(last_stats.corrupt_packets + last_stats.dropped_packets > 0);
        }
    }

    /* Damage inside the frame data (64 junk bytes two thirds in): concealed,
     * every frame handed out (whether the decoder notices, and counts, such
     * small damage varies with its threads: test_video_damaged checks the
     * counts over many copies). */
    size_t size;
    unsigned char *data = read_bytes(ROTATE_VIDEO, &size);
    REQUIRE(data);
    uint32_t s = 777;
    for (size_t i = size * 2 / 3; i < size * 2 / 3 + 64; i++) {
        s = s * 1664525u + 1013904223u;
        data[i] = (uint8_t)(s >> 24);
    }
    const char *damaged = scratch_path("damaged.mp4");
    int wrote = write_bytes(damaged, data, size);
    free(data);
    REQUIRE(wrote);
    omma_status dst;
    long dn = read_all(damaged, &dst, -1, NULL, NULL);
    fprintf(stderr, "  damaged.mp4: %ld frames (%ld damaged, %ld dropped packets), then %s\n", dn,
            last_stats.damaged_frames, last_stats.dropped_packets, omma_status_str(dst));
    CHECK(dst == OMMA_OK);
    CHECK(dn >= VIDEO_FRAMES - 1 && dn <= VIDEO_FRAMES);

    /* The error is sticky. */
    io_video *v = NULL;
    const char *p = scratch_path("pan_half.mp4");
    REQUIRE_OK(io_video_open(p, &v));
    omma_frame f;
    double ts;
    int eof = 0;
    omma_status st;
    while ((st = io_video_read(v, &f, &ts, &eof)) == OMMA_OK && !eof) {
    }
    CHECK(st == OMMA_ERR_FORMAT);
    char first[1024];
    snprintf(first, sizeof first, "%s", omma_last_error());
    omma_clear_error();
    CHECK(io_video_read(v, &f, &ts, &eof) == OMMA_ERR_FORMAT);
    CHECK(strcmp(omma_last_error(), first) == 0);
    io_video_close(v);
    scratch_remove();
}

/* A test picture for frame i: smooth gradients with a square moving right. */
static void make_rgb(uint8_t *rgb, int w, int h, int i)
{
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            uint8_t *p = rgb + ((size_t)y * w + x) * 3;
            int in_box = x >= 20 + 4 * i && x < 52 + 4 * i && y >= 40 && y < 72;
            p[0] = (uint8_t)(in_box ? 230 : 40 + x * 150 / w);
            p[1] = (uint8_t)(in_box ? 60 : 30 + y * 180 / h);
            p[2] = (uint8_t)(in_box ? 50 : 200 - (x + y) * 120 / (w + h));
        }
}

/* Writes 10 frames of size w x h and reads them back: the size (rounded
 * up to even), 10 frames, and BT.601 limited-range YUV close to what the
 * RGB gives. */
static void roundtrip(const char *name, int w, int h)
{
    const char *path = scratch_path(name);
    uint8_t *rgb = malloc((size_t)w * h * 3);
    REQUIRE(rgb);
    io_video_writer *wr = NULL;
    omma_status st = io_video_writer_open(path, w, h, 15.0, &wr);
    if (st != OMMA_OK) {
        fprintf(stderr, "open %s: %s\n", name, omma_last_error());
        free(rgb);
        CHECK(0);
        return;
    }
    for (int i = 0; i < 10 && st == OMMA_OK; i++) {
        make_rgb(rgb, w, h, i);
        st = io_video_writer_write(wr, rgb, w * 3);
    }
    if (st != OMMA_OK) {
        fprintf(stderr, "write %s: %s\n", name, omma_last_error());
        io_video_writer_abort(wr);
        free(rgb);
        CHECK(0);
        return;
    }
    st = io_video_writer_finish(wr);
    if (st != OMMA_OK)
        fprintf(stderr, "finish %s: %s\n", name, omma_last_error());
    CHECK(st == OMMA_OK);

    io_video *v = NULL;
    st = io_video_open(path, &v);
    if (st != OMMA_OK)
        fprintf(stderr, "reopen %s: %s\n", name, omma_last_error());
    CHECK(st == OMMA_OK);
    if (st == OMMA_OK) {
        CHECK(io_video_width(v) == w + (w & 1) && io_video_height(v) == h + (h & 1));
        CHECK_NEAR(io_video_fps(v), 15.0, 1e-3);
        int frames = 0;
        double worst_y = 0, worst_c = 0;
        for (;;) {
            omma_frame f;
            double ts;
            int eof;
            st = io_video_read(v, &f, &ts, &eof);
            CHECK(st == OMMA_OK);
            if (st != OMMA_OK || eof)
                break;
            CHECK(f.format == OMMA_PIXEL_I420);
            CHECK_NEAR(ts, 1000.0 * frames / 15.0, 1.0);
            if (f.format != OMMA_PIXEL_I420)
                break;
            make_rgb(rgb, w, h, frames);
            double dy = 0, dc = 0;
            long ny = 0, nc = 0;
            for (int y = 0; y < h; y++)
                for (int x = 0; x < w; x++) {
                    const uint8_t *p = rgb + ((size_t)y * w + x) * 3;
                    double r = p[0], g = p[1], b = p[2];
                    double ey = 16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255;
                    dy += fabs(f.planes[0][(size_t)y * f.pitch[0] + x] - ey);
                    ny++;
                    if ((x & 1) || (y & 1))
                        continue;
                    double eu = 128 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255;
                    double ev = 128 + (112.0 * r - 93.786 * g - 18.214 * b) / 255;
                    size_t c = (size_t)(y / 2) * f.pitch[1] + x / 2;
                    size_t cv = (size_t)(y / 2) * f.pitch[2] + x / 2;
                    dc += fabs(f.planes[1][c] - eu) + fabs(f.planes[2][cv] - ev);
                    nc += 2;
                }
            dy /= (double)ny;
            dc /= (double)nc;
            worst_y = fmax(worst_y, dy);
            worst_c = fmax(worst_c, dc);
            frames++;
        }
        fprintf(stderr, "  %s: %d frames, worst mean |dY| %.2f, |dUV| %.2f\n", name, frames,
                worst_y, worst_c);
        CHECK(frames == 10);
        CHECK(worst_y < 3.0);
        CHECK(worst_c < 4.0); /* chroma also loses its 2x2 detail at the square's edges */
        io_video_close(v);
    }
    free(rgb);
}

static void test_writer(void)
{
    REQUIRE(scratch_dir());
    roundtrip("roundtrip.mp4", 160, 120);
    roundtrip("odd.mkv", 161, 121);
    roundtrip("clip.avi", 96, 64);
    /* Only the finished videos are there: no temporary file left. */
    CHECK(scratch_entries() == 3);

    /* The writer's MP4 keeps its index at the end: cut in half it does
     * not open. */
    const char *half = truncated_copy(scratch_path("roundtrip.mp4"), 0.5, "half.mp4");
    REQUIRE(half);
    io_video *v = NULL;
    CHECK_FAILS(io_video_open(half, &v), OMMA_ERR_FORMAT, "half.mp4");
    CHECK(v == NULL);
    scratch_remove();
}

static void test_writer_abort_and_errors(void)
{
    REQUIRE(scratch_dir());
    uint8_t rgb[64 * 48 * 3];
    make_rgb(rgb, 64, 48, 0);

    const char *path = scratch_path("aborted.mp4");
    io_video_writer *w = NULL;
    REQUIRE_OK(io_video_writer_open(path, 64, 48, 30.0, &w));
    CHECK(scratch_entries() == 1); /* the temporary file, not the video */
    CHECK(!file_exists(path));
    REQUIRE_OK(io_video_writer_write(w, rgb, 64 * 3));
    REQUIRE_OK(io_video_writer_write(w, rgb, 64 * 3));
    CHECK_FAILS(io_video_writer_write(w, rgb, 10), OMMA_ERR_INVALID_ARG, "pitch");
    CHECK(io_video_writer_write(w, NULL, 64 * 3) == OMMA_ERR_INVALID_ARG);
    io_video_writer_abort(w);
    CHECK(!file_exists(path));
    CHECK(scratch_entries() == 0);
    io_video_writer_abort(NULL);

    /* A folder that does not exist: IO, naming the path, nothing made. */
    const char *missing = scratch_path("no-such-dir/out.mp4");
    w = (io_video_writer *)&w;
    CHECK_FAILS(io_video_writer_open(missing, 64, 48, 30.0, &w), OMMA_ERR_IO, missing);
    CHECK(w == NULL);
    CHECK(scratch_entries() == 0);

    /* Arguments and unknown containers. */
    const char *ok = scratch_path("ok.mp4");
    CHECK_FAILS(io_video_writer_open(ok, 0, 48, 30.0, &w), OMMA_ERR_INVALID_ARG, "ok.mp4");
    CHECK_FAILS(io_video_writer_open(ok, 64, 16385, 30.0, &w), OMMA_ERR_INVALID_ARG, "16385");
    CHECK_FAILS(io_video_writer_open(ok, 64, 48, 0.0, &w), OMMA_ERR_INVALID_ARG, "frame rate");
    CHECK_FAILS(io_video_writer_open(ok, 64, 48, NAN, &w), OMMA_ERR_INVALID_ARG, "frame rate");
    CHECK_FAILS(io_video_writer_open(ok, 64, 48, 1001.0, &w), OMMA_ERR_INVALID_ARG, "frame rate");
    CHECK(io_video_writer_open(NULL, 64, 48, 30.0, &w) == OMMA_ERR_INVALID_ARG);
    CHECK(io_video_writer_open(ok, 64, 48, 30.0, NULL) == OMMA_ERR_INVALID_ARG);
    CHECK_FAILS(io_video_writer_open(scratch_path("out.notavideo"), 64, 48, 30.0, &w),
                OMMA_ERR_UNSUPPORTED, "out.notavideo");
    CHECK(w == NULL);
    CHECK(scratch_entries() == 0);
    CHECK(io_video_writer_finish(NULL) == OMMA_ERR_INVALID_ARG);

    /* Finishing a video of no frames still makes a file the reader opens
     * (or fails cleanly); it never leaves the temporary file. */
    REQUIRE_OK(io_video_writer_open(ok, 64, 48, 30.0, &w));
    omma_status st = io_video_writer_finish(w);
    CHECK(scratch_entries() == (st == OMMA_OK ? 1 : 0));
    scratch_remove();
}

int main(void)
{
    if (!io_video_available())
        SKIP_TEST("omma was built without FFmpeg (libavformat/libavcodec)");
    RUN(test_test_videos);
    RUN(test_pan_motion);
    RUN(test_bad_inputs);
    RUN(test_truncated);
    RUN(test_writer);
    RUN(test_writer_abort_and_errors);
    return testing_finish();
}
