/* Annotated PNGs and video for omma run. */
#define _POSIX_C_SOURCE 200809L
#include "cli/run_annotate.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/run_progress.h"
#include "omma/status.h"
#include "io/annotate.h"
#include "io/image_file.h"

/* mkdir -p: each missing component made in turn, the last checked to be a
 * directory. */
static int make_dirs(const char *dir)
{
    size_t n = strlen(dir);
    char *p = malloc(n + 1);
    if (!p) {
        cli_run_error("%s: out of memory", dir);
        return 0;
    }
    memcpy(p, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] != '/' && p[i] != 0)
            continue;
        char c = p[i];
        p[i] = 0;
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
            cli_run_error("%s: cannot create the folder %s: %s", dir, p, strerror(errno));
            free(p);
            return 0;
        }
        p[i] = c;
    }
    free(p);
    struct stat sb;
    if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode)) {
        cli_run_error("%s: not a folder", dir);
        return 0;
    }
    return 1;
}

int cli_annotator_open(cli_annotator *a, const char *dir, const char *video_path, int video_camera,
                       double video_fps)
{
    memset(a, 0, sizeof *a);
    a->dir = dir;
    a->video_path = video_path;
    a->video_camera = video_camera;
    a->video_fps = video_fps > 0 && video_fps <= 1000 ? video_fps : 25;
    return !dir || make_dirs(dir);
}

int cli_annotator_wants(const cli_annotator *a, int camera)
{
    return a->dir || (a->video_path && camera == a->video_camera);
}

static int write_video(cli_annotator *a, int w, int h)
{
    if (!a->video) {
        omma_status st = io_video_writer_open(a->video_path, w, h, a->video_fps, &a->video);
        if (st != OMMA_OK) {
            cli_run_error("--annotate-video %s: %s", a->video_path, omma_last_error());
            a->video_path = NULL;
            return 0;
        }
        a->video_w = w, a->video_h = h;
    }
    if (w != a->video_w || h != a->video_h) {
        cli_run_error("--annotate-video %s: frame of %dx%d after %dx%d ones; the video stops "
                      "here",
                      a->video_path, w, h, a->video_w, a->video_h);
        return 0;
    }
    if (io_video_writer_write(a->video, a->rgb, 3 * w) != OMMA_OK) {
        cli_run_error("--annotate-video %s: %s", a->video_path, omma_last_error());
        return 0;
    }
    a->video_frames++;
    return 1;
}

int cli_annotator_frame(cli_annotator *a, int camera, long frame_index, const omma_frame *frame,
                        const omma_face *faces, int n)
{
    int to_video = a->video_path && camera == a->video_camera;
    if (!a->dir && !to_video)
        return 1;
    size_t bytes = (size_t)frame->width * (size_t)frame->height * 3;
    if (bytes > a->rgb_bytes) {
        uint8_t *p = realloc(a->rgb, bytes);
        if (!p) {
            cli_run_error("annotating camera %d frame %ld: out of memory (%zu bytes)", camera,
                          frame_index, bytes);
            a->failed = 1;
            return 0;
        }
        a->rgb = p;
        a->rgb_bytes = bytes;
    }
    if (io_annotate(frame, faces, n, a->rgb, 3 * frame->width) != OMMA_OK) {
        cli_run_error("annotating camera %d frame %ld: %s", camera, frame_index, omma_last_error());
        a->failed = 1;
        return 0;
    }
    int ok = 1;
    if (a->dir) {
        char path[4096];
        int len = snprintf(path, sizeof path, "%s/cam%d_%06ld.png", a->dir, camera, frame_index);
        omma_status st =
            len > 0 && (size_t)len < sizeof path
                ? io_image_save_png(path, a->rgb, frame->width, frame->height, 3 * frame->width)
                : OMMA_ERR_INVALID_ARG;
        if (st != OMMA_OK) {
            cli_run_error("--annotate %s: %s; no more annotated pictures", a->dir,
                          len > 0 && (size_t)len < sizeof path ? omma_last_error()
                                                               : "path too long");
            a->dir = NULL;
            ok = 0;
        } else {
            a->pngs++;
        }
    }
    if (to_video && !write_video(a, frame->width, frame->height)) {
        io_video_writer_abort(a->video);
        a->video = NULL;
        a->video_path = NULL;
        ok = 0;
    }
    if (!ok)
        a->failed = 1;
    return ok;
}

int cli_annotator_close(cli_annotator *a, int keep)
{
    int ok = !a->failed;
    if (a->video) { /* still open: no write to it failed */
        if (keep) {
            if (io_video_writer_finish(a->video) != OMMA_OK) {
                cli_run_error("--annotate-video %s: %s", a->video_path, omma_last_error());
                ok = 0;
            }
        } else {
            io_video_writer_abort(a->video);
        }
        a->video = NULL;
    }
    free(a->rgb);
    a->rgb = NULL;
    a->rgb_bytes = 0;
    return ok;
}
