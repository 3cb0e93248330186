/* The scene-cut case of the face pipeline tests, shared by the CPU test
 * (test_scene_cut.c) and the GPU one (test_face_pipeline_gpu.c):
 * testdata/faces_cut.mp4, which scripts/fetch-testdata.sh makes from two
 * real photos (see there): 640x480, 24 frames; frames 0..11 show the
 * astronaut (astronaut.png), her face at x 141..280, y 48..203; frames
 * 12..23 Grace Hopper (grace_hopper.jpg scaled 0.7 and placed at x 107,
 * y 9 on a grey canvas), her face at x 227..356, y 101..242, partly inside
 * the region the tracker watched for the first face. Without the cut
 * checks (MediaPipe's loop) the first track stays on the old place and
 * drifts towards the new face beside its new track.
 * Expected: one id on the astronaut before the cut; from the cut frame on
 * no box where the astronaut was (IoU >= 0.4 with her last box) and never
 * her id again; Grace Hopper found with a new id within a frame of the cut
 * and kept to the end, and no other face. */
#ifndef OMMA_TESTS_PIPELINE_SCENE_CUT_H
#define OMMA_TESTS_PIPELINE_SCENE_CUT_H

#include "omma/pipeline.h"

#define SCENE_CUT_VIDEO OMMA_TESTDATA_DIR "/faces_cut.mp4"
#define SCENE_CUT_FRAMES 24
#define SCENE_CUT_AT 12 /* the first frame of the second photo */
#define SCENE_CUT_FACES 4 /* max_faces */

/* What the pipeline reported per frame. */
typedef struct scene_cut_result {
    int frames;
    int count[SCENE_CUT_FRAMES];
    int id[SCENE_CUT_FRAMES][SCENE_CUT_FACES];
    omma_box box[SCENE_CUT_FRAMES][SCENE_CUT_FACES];
    float presence[SCENE_CUT_FRAMES][SCENE_CUT_FACES];
} scene_cut_result;

/* Runs a pipeline made with *o (its max_faces set to SCENE_CUT_FACES) on
 * camera 0 over every frame of the video, given to it in the reader's
 * I420; 0 (the reason on stderr) when the video is missing or a call
 * failed. */
int scene_cut_run(const omma_face_pipeline_options *o, scene_cut_result *r);

/* Nonzero when r meets the expectation above; says on stderr what does
 * not (every frame when verbose). */
int scene_cut_ok(const scene_cut_result *r, int verbose);

#endif
