/* The scene-cut case (scene_cut.h). */
#include "pipeline/scene_cut.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/video_file.h"
#include "omma/status.h"
#include "vision/detect_decode.h"

/* The faces' boxes in the video: the landmarks' boxes the CPU pipeline
 * finds on the photos (omma run --backend cpu) through the video's
 * geometry. The astronaut: x 179..272, y 72..175 in astronaut.png, scaled
 * x1.5, window at (128, 60): x 141..280, y 48..203. */
static const omma_box astronaut = {179.0f * 1.5f - 128.0f, 72.0f * 1.5f - 60.0f,
                                   272.0f * 1.5f - 128.0f, 175.0f * 1.5f - 60.0f};
/* Grace Hopper: x 172..356, y 132..333 in grace_hopper.jpg, scaled x0.7,
 * placed at (107, 9): x 227..356, y 101..242 (IoU 0.17 with the above). */
static const omma_box hopper = {172.0f * 0.7f + 107.0f, 132.0f * 0.7f + 9.0f,
                                356.0f * 0.7f + 107.0f, 333.0f * 0.7f + 9.0f};

int scene_cut_run(const omma_face_pipeline_options *opt, scene_cut_result *r)
{
    memset(r, 0, sizeof *r);
    FILE *f = fopen(SCENE_CUT_VIDEO, "rb");
    if (!f) {
        fprintf(stderr, "%s is missing: run scripts/fetch-testdata.sh\n", SCENE_CUT_VIDEO);
        return 0;
    }
    fclose(f);
    omma_face_pipeline_options o = *opt;
    o.max_faces = SCENE_CUT_FACES;
    omma_face_pipeline *p = NULL;
    io_video *v = NULL;
    omma_face *faces = malloc(SCENE_CUT_FACES * sizeof *faces);
    int ok = faces != NULL;
    if (ok && (omma_face_pipeline_create(&o, &p) != OMMA_OK ||
               io_video_open(SCENE_CUT_VIDEO, &v) != OMMA_OK)) {
        fprintf(stderr, "%s: %s\n", SCENE_CUT_VIDEO, omma_last_error());
        ok = 0;
    }
    while (ok) {
        omma_frame fr;
        double ts;
        int eof = 0;
        if (io_video_read(v, &fr, &ts, &eof) != OMMA_OK) {
            fprintf(stderr, "read: %s\n", omma_last_error());
            ok = 0;
        }
        if (!ok || eof)
            break;
        if (r->frames == SCENE_CUT_FRAMES) {
            fprintf(stderr, "%s: more than %d frames\n", SCENE_CUT_VIDEO, SCENE_CUT_FRAMES);
            ok = 0;
            break;
        }
        int n = 0, i = r->frames;
        if (omma_face_pipeline_process(p, 0, &fr, faces, SCENE_CUT_FACES, &n) != OMMA_OK) {
            fprintf(stderr, "frame %d: %s\n", i, omma_last_error());
            ok = 0;
            break;
        }
        r->count[i] = n;
        for (int k = 0; k < n; k++) {
            r->id[i][k] = faces[k].id;
            r->box[i][k] = faces[k].box;
            r->presence[i][k] = faces[k].presence;
        }
        r->frames++;
    }
    io_video_close(v);
    omma_face_pipeline_destroy(p);
    free(faces);
    return ok && r->frames == SCENE_CUT_FRAMES;
}

int scene_cut_ok(const scene_cut_result *r, int verbose)
{
    int good = r->frames == SCENE_CUT_FRAMES, first = r->count[0] > 0 ? r->id[0][0] : 0;
    int second = 0; /* Grace Hopper's id */
    omma_box last = astronaut; /* the astronaut's box on the last frame before the cut */
    for (int i = 0; i < r->frames; i++) {
        const char *bad = NULL;
        if (i < SCENE_CUT_AT) {
            /* One face, one id, where the astronaut is. */
            if (r->count[i] != 1 || r->id[i][0] != first || first < 1)
                bad = "before the cut: not one face with the first id";
            else if (vis_box_iou(&r->box[i][0], &astronaut) < 0.5f)
                bad = "before the cut: the face is not the astronaut's";
            else
                last = r->box[i][0];
        } else {
            /* Nothing on the old place, never the old id; Grace Hopper,
             * with one new id, from the frame after the cut at the latest. */
            int hoppers = 0;
            for (int k = 0; k < r->count[i]; k++) {
                if (r->id[i][k] == first)
                    bad = "after the cut: the astronaut's id";
                else if (vis_box_iou(&r->box[i][k], &last) >= 0.4f)
                    bad = "after the cut: a box where the astronaut was";
                else if (vis_box_iou(&r->box[i][k], &hopper) >= 0.5f) {
                    hoppers++;
                    if (!second)
                        second = r->id[i][k];
                    else if (r->id[i][k] != second)
                        bad = "after the cut: Grace Hopper's id changed";
                } else {
                    bad = "after the cut: a face neither on Grace Hopper nor on the astronaut";
                }
            }
            if (!bad && r->count[i] > 1)
                bad = "after the cut: more than one face";
            if (!bad && hoppers == 0 && i > SCENE_CUT_AT)
                bad = "after the cut: Grace Hopper not found";
        }
        if (bad)
            good = 0;
        if (bad || verbose) {
            fprintf(stderr, "  frame %d: %d faces", i, r->count[i]);
            for (int k = 0; k < r->count[i]; k++)
                fprintf(stderr, " [id %d, x %.0f..%.0f, y %.0f..%.0f, presence %.4f]", r->id[i][k],
                        r->box[i][k].xmin, r->box[i][k].xmax, r->box[i][k].ymin, r->box[i][k].ymax,
                        r->presence[i][k]);
            fprintf(stderr, "%s%s\n", bad ? ": " : "", bad ? bad : "");
        }
    }
    if (good && second <= first)
        good = 0,
        fprintf(stderr, "  Grace Hopper's id %d is not a new one (first %d)\n", second, first);
    return good;
}
