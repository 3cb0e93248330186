/* Damaged video never crashes or hangs the reader. Clips made here with
 * Debian's ffmpeg from testdata/astronaut.png then grace_hopper.jpg (320x240,
 * 2 s at 15 fps, a key frame every 10, the picture panning): MPEG-4 Part 2
 * in AVI (decoded with frame threading, where FFmpeg 5.1 used to abort),
 * H.264 in MP4 and in MPEG-TS, HEVC in Matroska, MJPEG in AVI. Each gets
 * ten deterministic damaged copies (byte flips in the middle third,
 * truncation, zeroed runs, two chunks swapped), read in a child process
 * with an alarm: no signal, no hang, the frames whose data lies before the
 * first damaged byte (from ffprobe's packet positions) all delivered, and
 * the end either OMMA_OK or an error naming the file. With FFmpeg's
 * AV_EF_EXPLODE (the reader's old setting) every MPEG-4 copy aborts. Then
 * omma run --backend cpu (argv[1]) on two damaged files: exit 0 or 1, never
 * a signal, and the line naming the file with its damage counted. Skipped (77) without FFmpeg. */
#define _POSIX_C_SOURCE 200809L
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "support/image_files.h"
#include "io/video_file.h"
#include "testing.h"

#define CLIP_FRAMES 30
#define CHILD_SECONDS 30 /* a read that takes longer has hung */
#define COPIES 10

typedef struct clip {
    const char *name;
    const char *args; /* ffmpeg's output options */
} clip;

static const clip clips[] = {
    {"mpeg4.avi", "-c:v mpeg4 -q:v 4 -g 10"},
    {"h264.mp4", "-c:v libx264 -preset veryfast -g 10 -pix_fmt yuv420p -movflags +faststart"},
    {"h264.ts", "-c:v libx264 -preset veryfast -g 10 -pix_fmt yuv420p -f mpegts"},
    {"hevc.mkv", "-c:v libx265 -preset fast -x265-params log-level=error:keyint=10 "
                 "-pix_fmt yuv420p"},
    {"mjpeg.avi", "-c:v mjpeg -q:v 5 -pix_fmt yuvj420p"},
};

/* Runs a shell command line in a child with a time limit; its exit status,
 * or -signal. */
static int run_cmd(const char *cmd, int seconds)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1000;
    if (pid == 0) {
        alarm((unsigned)seconds); /* kept across exec */
        execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
        _exit(127);
    }
    int ws = 0;
    if (waitpid(pid, &ws, 0) != pid)
        return -1000;
    return WIFSIGNALED(ws) ? -WTERMSIG(ws) : WEXITSTATUS(ws);
}

static int make_clip(const clip *c, const char *out)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "ffmpeg -nostdin -hide_banner -loglevel error -y "
             "-loop 1 -framerate 15 -t 1 -i %s/astronaut.png "
             "-loop 1 -framerate 15 -t 1 -i %s/grace_hopper.jpg -filter_complex "
             "\"[0]scale=400:300,crop=320:240:x='2*n':y=30,setsar=1,format=yuv420p[a];"
             "[1]scale=400:300,crop=320:240:x='2*n':y=30,setsar=1,format=yuv420p[b];"
             "[a][b]concat=n=2:v=1[v]\" -map [v] -frames:v %d -threads 2 %s '%s'",
             OMMA_TESTDATA_DIR, OMMA_TESTDATA_DIR, CLIP_FRAMES, c->args, out);
    return run_cmd(cmd, 120) == 0;
}

/* Where each video packet's bytes end in the clip (ffprobe), an upper
 * bound: MPEG-TS spreads a packet over 188-byte cells with headers.
 * Returns the count, at most max. */
static int packet_ends(const char *path, long *ends, int max)
{
    char cmd[2400], out[1100];
    snprintf(out, sizeof out, "%s.packets", path);
    snprintf(cmd, sizeof cmd,
             "ffprobe -v error -select_streams v:0 -show_entries packet=pos,size "
             "-of default=nw=1 '%s' > '%s'",
             path, out);
    if (run_cmd(cmd, 60) != 0)
        return -1;
    FILE *f = fopen(out, "r");
    if (!f)
        return -1;
    int n = 0;
    long size = -1, pos = -1;
    char line[128];
    while (n < max && fgets(line, sizeof line, f)) {
        if (sscanf(line, "size=%ld", &size) == 1 || sscanf(line, "pos=%ld", &pos) == 1) {
            if (size >= 0 && pos >= 0) {
                ends[n++] = pos + size + size / 40 + 188;
                size = pos = -1;
            }
        }
    }
    fclose(f);
    remove(out);
    return n;
}

/* What a child's read of a whole file gave. */
typedef struct read_result {
    long frames;
    omma_status status;
    io_video_stats stats;
    char message[768];
} read_result;

/* Reads path in a child (alarm after CHILD_SECONDS); 1 with *r filled, 0
 * when the child died (its signal in *sig). */
static int read_in_child(const char *path, read_result *r, int *sig)
{
    int fd[2];
    *sig = 0;
    memset(r, 0, sizeof *r);
    if (pipe(fd) != 0)
        return 0;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0)
        return 0;
    if (pid == 0) {
        close(fd[0]);
        alarm(CHILD_SECONDS);
        read_result res;
        memset(&res, 0, sizeof res);
        io_video *v = NULL;
        res.status = io_video_open(path, &v);
        while (res.status == OMMA_OK) {
            omma_frame f;
            double ts;
            int eof = 0;
            res.status = io_video_read(v, &f, &ts, &eof);
            if (res.status != OMMA_OK || eof)
                break;
            if (f.width != 320 || f.height != 240 || !f.planes[0])
                _exit(3);
            res.frames++;
        }
        if (res.status != OMMA_OK)
            snprintf(res.message, sizeof res.message, "%s", omma_last_error());
        io_video_get_stats(v, &res.stats);
        io_video_close(v);
        ssize_t w = write(fd[1], &res, sizeof res);
        _exit(w == (ssize_t)sizeof res ? 0 : 4);
    }
    close(fd[1]);
    ssize_t got = read(fd[0], r, sizeof *r);
    close(fd[0]);
    int ws = 0;
    waitpid(pid, &ws, 0);
    if (WIFSIGNALED(ws)) {
        *sig = WTERMSIG(ws);
        return 0;
    }
    return WIFEXITED(ws) && WEXITSTATUS(ws) == 0 && got == (ssize_t)sizeof *r;
}

static uint32_t rng(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return *s >> 8;
}

/* Damaged copy k of data (n bytes) into out: its size in *out_n, the first
 * damaged byte returned; a short description in what. */
static size_t damage(const unsigned char *data, size_t n, int k, unsigned char *out, size_t *out_n,
                     const char **what)
{
    memcpy(out, data, n);
    *out_n = n;
    size_t lo = n / 3, span = n / 3;
    uint32_t s = 1234u + 77u * (uint32_t)k;
    size_t first = n;
    switch (k) {
    case 0:
    case 1:
    case 2:
    case 3:
    case 4: { /* byte flips in the middle third: 16, or 200 for copy 4 */
        int flips = k == 4 ? 200 : 16;
        for (int i = 0; i < flips; i++) {
            size_t at = lo + rng(&s) % span;
            out[at] ^= (unsigned char)(1 + rng(&s) % 255);
            if (at < first)
                first = at;
        }
        *what = "byte flips";
        return first;
    }
    case 5:
    case 6: /* cut at a half, at 0.4 */
        *out_n = k == 5 ? n / 2 : n * 2 / 5;
        *what = "truncated";
        return *out_n;
    case 7:
    case 8: { /* zeroed runs: 4 KiB at a half, 512 B at 0.4 */
        size_t at = k == 7 ? n / 2 : n * 2 / 5, len = k == 7 ? 4096 : 512;
        if (at + len > n)
            len = n - at;
        memset(out + at, 0, len);
        *what = "zeroed run";
        return at;
    }
    default: { /* two 2 KiB chunks swapped */
        size_t a = lo + span / 8, b = lo + span * 3 / 4, len = 2048;
        if (b + len > n)
            len = n - b;
        memcpy(out + a, data + b, len);
        memcpy(out + b, data + a, len);
        *what = "chunks swapped";
        return a;
    }
    }
}

static char damaged_for_run[2][1024];

static void test_clip(const clip *c, int ci)
{
    const char *path = scratch_path(c->name);
    char clean[1024];
    snprintf(clean, sizeof clean, "%s", path);
    if (!make_clip(c, clean)) {
        fprintf(stderr, "ffmpeg could not make %s (%s)\n", c->name, c->args);
        CHECK(0);
        return;
    }
    long ends[256];
    int np = packet_ends(clean, ends, 256);
    CHECK(np == CLIP_FRAMES);
    read_result r;
    int sig;
    REQUIRE(read_in_child(clean, &r, &sig));
    CHECK(r.status == OMMA_OK && r.frames == CLIP_FRAMES);
    CHECK(r.stats.damaged_frames == 0 && r.stats.dropped_packets == 0);
    size_t n;
    unsigned char *data = read_bytes(clean, &n);
    REQUIRE(data);
    unsigned char *copy = malloc(n);
    REQUIRE(copy);
    long seen = 0;
    for (int k = 0; k < COPIES; k++) {
        size_t m;
        const char *what;
        size_t first = damage(data, n, k, copy, &m, &what);
        char name[64], dpath[1024];
        snprintf(name, sizeof name, "damaged%d_%s", k, c->name);
        snprintf(dpath, sizeof dpath, "%s", scratch_path(name));
        REQUIRE(write_bytes(dpath, copy, m));
        long before = 0; /* packets whose bytes all precede the damage */
        for (int i = 0; i < np; i++)
            before += ends[i] <= (long)first;
        int ok = read_in_child(dpath, &r, &sig);
        fprintf(stderr, "  %-24s %-14s at %5.1f%%: ", name, what, 100.0 * (double)first / n);
        if (!ok) {
            fprintf(stderr, "child died: %s\n",
                    sig == SIGALRM ? "hung (alarm)"
                    : sig          ? strsignal(sig)
                                   : "bad exit");
            CHECK(0);
            continue;
        }
        fprintf(stderr, "%ld frame(s) (>= %ld expected), %ld concealed, %ld dropped, %s%s%s\n",
                r.frames, before - 1, r.stats.damaged_frames, r.stats.dropped_packets,
                omma_status_str(r.status), r.status ? ": " : "", r.message);
        seen += r.stats.damaged_frames + r.stats.dropped_packets + r.stats.corrupt_packets;
        CHECK(r.frames >= before - 1);
        CHECK(r.frames <= CLIP_FRAMES + 2);
        if (r.status != OMMA_OK) {
            CHECK(r.status == OMMA_ERR_FORMAT || r.status == OMMA_ERR_IO);
            CHECK(strstr(r.message, name) != NULL);
        }
        if (k == 1 && ci == 0) /* MPEG-4 AVI with byte flips: the abort case */
            snprintf(damaged_for_run[0], sizeof damaged_for_run[0], "%s", dpath);
        if (k == 5 && ci == 1) /* H.264 MP4 cut in half: the last packet refused */
            snprintf(damaged_for_run[1], sizeof damaged_for_run[1], "%s", dpath);
    }
    /* The damage is seen: over the ten copies, concealed frames or refused
     * or flagged packets. */
    CHECK(seen > 0);
    free(copy);
    free(data);
}

static const char *omma_bin;
static size_t current; /* the clip test_each_clip works on */

static void test_each_clip(void)
{
    fprintf(stderr, "%s\n", clips[current].name);
    test_clip(&clips[current], (int)current);
}

static void test_omma_run(void)
{
    if (!omma_bin)
        return;
    for (int i = 0; i < 2; i++) {
        const char *p = damaged_for_run[i];
        REQUIRE(p[0]);
        char err[2100], cmd[6000];
        snprintf(err, sizeof err, "%s.err", p);
        snprintf(cmd, sizeof cmd, "'%s' run --backend cpu '%s' >/dev/null 2>'%s'", omma_bin, p,
                 err);
        int rc = run_cmd(cmd, 120);
        size_t n = 0;
        char *text = (char *)read_bytes(err, &n);
        char *t = text ? realloc(text, n + 1) : NULL;
        if (t)
            t[n] = '\0';
        fprintf(stderr, "  omma run %s: exit %d\n%s", p, rc, t ? t : "");
        CHECK(rc == 0 || rc == 1);
        CHECK(t && strstr(t, p) != NULL);
        char line[2200];
        snprintf(line, sizeof line, "omma run: %s: damaged video: ", p);
        CHECK(t && strstr(t, line) != NULL);
        free(t ? t : text);
    }
}

int main(int argc, char **argv)
{
    if (!io_video_available())
        SKIP_TEST("built without FFmpeg");
    if (run_cmd("command -v ffmpeg >/dev/null && command -v ffprobe >/dev/null", 10) != 0) {
        fprintf(stderr, "ffmpeg/ffprobe not found: scripts/install-deps.sh installs them\n");
        return 1;
    }
    omma_bin = argc > 1 ? argv[1] : NULL;
    if (!scratch_dir()) {
        fprintf(stderr, "no scratch folder\n");
        return 1;
    }
    for (current = 0; current < sizeof clips / sizeof clips[0]; current++)
        RUN(test_each_clip);
    RUN(test_omma_run);
    scratch_remove();
    return testing_finish();
}
