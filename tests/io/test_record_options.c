/* The recorder's option parsers (--record-segment, --record-name), the
 * names they make, and io_recorder_create's errors. Table-driven: each row
 * an input and what must come out (a value, or the error's words). */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io/recorder.h"
#include "io/video_file.h"
#include "testing.h"

typedef struct seg_case {
    const char *text;
    int64_t ns, bytes; /* both 0: an error whose message holds `error` */
    const char *error;
} seg_case;

static const seg_case seg_cases[] = {
    {"10m", 600000000000LL, 0, NULL},
    {"90s", 90000000000LL, 0, NULL},
    {"1.5h", 5400000000000LL, 0, NULL},
    {"2500ms", 2500000000LL, 0, NULL},
    {"1min", 60000000000LL, 0, NULL},
    {"1s", 1000000000LL, 0, NULL},
    {"30.s", 30000000000LL, 0, NULL},
    {".5m", 30000000000LL, 0, NULL},
    {"720h", 2592000000000000LL, 0, NULL},
    {"500MB", 0, 500000000LL, NULL},
    {"2GB", 0, 2000000000LL, NULL},
    {"64MiB", 0, 67108864LL, NULL},
    {"1GiB", 0, 1073741824LL, NULL},
    {"1000kB", 0, 1000000LL, NULL},
    {"1000KB", 0, 1000000LL, NULL},
    {"1000000B", 0, 1000000LL, NULL},
    {"1TB", 0, 1000000000000LL, NULL},
    {"1000TB", 0, 1000000000000000LL, NULL},
    {"", 0, 0, "expected a number and a unit"},
    {"m", 0, 0, "expected a number and a unit"},
    {"-5m", 0, 0, "expected a number and a unit"},
    {"+5m", 0, 0, "expected a number and a unit"},
    {" 5m", 0, 0, "expected a number and a unit"},
    {"inf", 0, 0, "expected a number and a unit"},
    {"nan", 0, 0, "expected a number and a unit"},
    {".", 0, 0, "expected a number and a unit"},
    {"0x10m", 0, 0, "unknown unit 'x10m'"},
    {"1e3s", 0, 0, "unknown unit 'e3s'"},
    {"10", 0, 0, "no unit after '10'"},
    {"10M", 0, 0, "unknown unit 'M'"},
    {"10 m", 0, 0, "unknown unit ' m'"},
    {"10mm", 0, 0, "unknown unit 'mm'"},
    {"1.2.3s", 0, 0, "unknown unit '.3s'"},
    {"0s", 0, 0, "zero"},
    {"0.0MB", 0, 0, "zero"},
    {"0.5s", 0, 0, "too small"},
    {"999ms", 0, 0, "too small"},
    {"999999B", 0, 0, "too small"},
    {"721h", 0, 0, "too large"},
    {"1001TB", 0, 0, "too large"},
    {"99999999999999999999999999999999999h", 0, 0, "expected a number and a unit"},
    {"9999999999999999h", 0, 0, "too large"},
};

static void parse_segment(void)
{
    for (size_t i = 0; i < sizeof seg_cases / sizeof seg_cases[0]; i++) {
        const seg_case *c = &seg_cases[i];
        int64_t ns = -1, bytes = -1;
        omma_status st = io_record_parse_segment(c->text, &ns, &bytes);
        if (!c->error) {
            if (st != OMMA_OK || ns != c->ns || bytes != c->bytes) {
                fprintf(stderr, "'%s': status %d ns %lld bytes %lld (%s)\n", c->text, (int)st,
                        (long long)ns, (long long)bytes, omma_last_error());
                CHECK(0);
            }
            continue;
        }
        CHECK(st == OMMA_ERR_INVALID_ARG && ns == 0 && bytes == 0);
        if (!strstr(omma_last_error(), c->error) || !strstr(omma_last_error(), "segment limit")) {
            fprintf(stderr, "'%s': message '%s' lacks '%s'\n", c->text, omma_last_error(),
                    c->error);
            CHECK(0);
        }
    }
    int64_t ns, bytes;
    CHECK_FAILS(io_record_parse_segment(NULL, &ns, &bytes), OMMA_ERR_INVALID_ARG, "NULL");
    CHECK_FAILS(io_record_parse_segment("1s", NULL, &bytes), OMMA_ERR_INVALID_ARG, "NULL");
}

typedef struct name_case {
    const char *name;
    int segmented;
    const char *error; /* NULL: fine */
} name_case;

static const name_case name_cases[] = {
    {IO_RECORD_DEFAULT_NAME, 1, NULL},
    {"{camera}_{start}.mkv", 0, NULL},
    {"{participant}-{camera}-{segment}.mkv", 1, NULL},
    {"{camera}.mkv", 0, NULL},
    {"fixed.mkv", 0, NULL},
    {"{{literal}}_{segment}.mkv", 1, NULL},
    {"", 0, "empty"},
    {".mkv", 0, "must end in .mkv"},
    {"{camera}.mp4", 0, "must end in .mkv"},
    {"{camera}.MKV", 0, "must end in .mkv"},
    {"{camera}", 0, "must end in .mkv"},
    {"dir/{camera}.mkv", 0, "without '/'"},
    {"/abs.mkv", 0, "without '/'"},
    {"{cam}.mkv", 0, "unknown field {cam}"},
    {"{Camera}.mkv", 0, "unknown field {Camera}"},
    {"{camera.mkv", 0, "unknown field {camera.mkv"},
    {"{}.mkv", 0, "unknown field {}"},
    {"camera}.mkv", 0, "'}' at 7"},
    {"{camera}.mkv", 1, "{start} or {segment}"},
    {"{participant}.mkv", 1, "{start} or {segment}"},
};

static void check_names(void)
{
    for (size_t i = 0; i < sizeof name_cases / sizeof name_cases[0]; i++) {
        const name_case *c = &name_cases[i];
        omma_status st = io_record_check_name(c->name, c->segmented);
        if (!c->error) {
            if (st != OMMA_OK) {
                fprintf(stderr, "'%s': %s\n", c->name, omma_last_error());
                CHECK(0);
            }
            continue;
        }
        if (st != OMMA_ERR_INVALID_ARG || !strstr(omma_last_error(), c->error)) {
            fprintf(stderr, "'%s': status %d, message '%s' lacks '%s'\n", c->name, (int)st,
                    omma_last_error(), c->error);
            CHECK(0);
        }
    }
    char long_name[300];
    memset(long_name, 'a', sizeof long_name);
    strcpy(long_name + 280, ".mkv");
    CHECK_FAILS(io_record_check_name(long_name, 0), OMMA_ERR_INVALID_ARG, "longer than 255");
    CHECK_FAILS(io_record_check_name(NULL, 0), OMMA_ERR_INVALID_ARG, "empty");
}

static void format_names(void)
{
    char out[256];
    /* 2026-11-25 15:13:00.123 UTC */
    int64_t t = 1795619580123000000LL;
    REQUIRE_OK(io_record_format_name("{camera}_{start}.mkv", "front", NULL, t, 1, out, sizeof out));
    CHECK(strcmp(out, "front_20261125T151300.123Z.mkv") == 0);
    REQUIRE_OK(io_record_format_name("{participant}-{camera}-{segment}.mkv", "cam 0/x", "Ana", t,
                                     12, out, sizeof out));
    CHECK(strcmp(out, "Ana-cam_0_x-0012.mkv") == 0); /* no '/' or space from a name */
    REQUIRE_OK(io_record_format_name("{participant}.mkv", "side", NULL, t, 1, out, sizeof out));
    CHECK(strcmp(out, "side.mkv") == 0); /* no participant: the camera's name */
    REQUIRE_OK(io_record_format_name("{{x}}{camera}.mkv", "a", NULL, t, 1, out, sizeof out));
    CHECK(strcmp(out, "{x}a.mkv") == 0);
    REQUIRE_OK(io_record_format_name("{camera}.mkv", "", NULL, t, 1, out, sizeof out));
    CHECK(strcmp(out, "camera.mkv") == 0);
    CHECK_FAILS(io_record_format_name("{camera}.mkv", "abcdefghij", NULL, t, 1, out, 8),
                OMMA_ERR_INVALID_ARG, "longer than 7");
    CHECK_FAILS(io_record_format_name("{cam}.mkv", "a", NULL, t, 1, out, sizeof out),
                OMMA_ERR_INVALID_ARG, "unknown field");
}

static void create_errors(void)
{
    if (!io_video_available()) {
        io_recorder *r = NULL;
        io_record_options o = {.dir = "/tmp", .camera = "c"};
        CHECK_FAILS(io_recorder_create(&o, &r), OMMA_ERR_UNSUPPORTED, "without FFmpeg");
        CHECK(r == NULL);
        return;
    }
    char dir[] = "/tmp/omma_rec_XXXXXX";
    REQUIRE(mkdtemp(dir) != NULL);
    char file[64];
    snprintf(file, sizeof file, "%s/f", dir);
    FILE *f = fopen(file, "w");
    REQUIRE(f != NULL);
    fclose(f);
    io_recorder *r = (io_recorder *)1;
    io_record_options o = {.dir = dir, .camera = "c"};
    o.dir = "/nonexistent/omma";
    CHECK_FAILS(io_recorder_create(&o, &r), OMMA_ERR_IO, "/nonexistent/omma");
    CHECK(r == NULL);
    o.dir = file;
    CHECK_FAILS(io_recorder_create(&o, &r), OMMA_ERR_IO, "not a directory");
    o.dir = "/proc/self"; /* nobody can make files there, root neither */
    CHECK_FAILS(io_recorder_create(&o, &r), OMMA_ERR_IO, "not writable");
    o.dir = dir;
    o.name = "{camera}.mkv";
    o.segment_ns = 1000000000;
    CHECK_FAILS(io_recorder_create(&o, &r), OMMA_ERR_INVALID_ARG, "{start} or {segment}");
    o.segment_ns = -1;
    CHECK_FAILS(io_recorder_create(&o, &r), OMMA_ERR_INVALID_ARG, "negative");
    o.segment_ns = 0;
    o.camera = NULL;
    CHECK_FAILS(io_recorder_create(&o, &r), OMMA_ERR_INVALID_ARG, "camera");
    o.camera = "c";
    /* Nothing written before the first packet or frame; a frame that is
     * not in host memory is counted as dropped, never read. */
    REQUIRE_OK(io_recorder_create(&o, &r));
    omma_frame dev = {
        .width = 64, .height = 64, .format = OMMA_PIXEL_NV12, .memory = OMMA_MEMORY_DEVICE};
    io_recorder_frame(r, 0, 1, INT64_MIN, &dev);
    io_recorder_frame(r, 1, 2, INT64_MIN, NULL);
    io_recorder_stats s;
    CHECK(io_recorder_close(r, &s) == OMMA_OK);
    CHECK(s.frames == 0 && s.dropped == 2 && s.segments == 0);
    CHECK(io_recorder_close(NULL, &s) == OMMA_OK);
    CHECK(unlink(file) == 0);
    CHECK(rmdir(dir) == 0); /* empty: the probe file was removed */
}

int main(void)
{
    RUN(parse_segment);
    RUN(check_names);
    RUN(format_names);
    RUN(create_errors);
    return testing_finish();
}
