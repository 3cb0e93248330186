#define _DEFAULT_SOURCE /* usleep */
/* The GPU face pipeline's batches in flight (pipeline/face_pipeline_async.h)
 * and whole-step graphs: six cameras watching the astronaut photo panned
 * over grey canvases, through
 *   - a reference pipeline: graphs off, one lane, all six cameras in one
 *     synchronous batch per step;
 *   - graphs on against graphs off, same batches: bitwise the same faces;
 *   - three lanes with graphs on, the cameras split into batches that change
 *     from step to step, two or three in flight at once and completed in
 *     reverse order: bitwise the same faces as the reference for every
 *     camera and step.
 * Hand-off without a host wait: a batch whose first frame waits on an event
 * held back by a kernel spinning on a host flag is submitted while the
 * kernel spins (the event is still pending when submit returns: submit did
 * not wait for it), and its results are right once the flag is set.
 * Misuse: a camera already in flight, every lane busy, completing a free
 * lane. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpu/gpu_testing.h"
#include "gpu/test_kernels.h"
#include "omma/pipeline.h"
#include "pipeline/face_pipeline_async.h"
#include "support/face_inputs.h"
#include "support/png_image.h"
#include "testing.h"

#define CAMERAS 6
#define STEPS 6
#define MAX_FACES 2
#define W 600
#define H 520

static rgb_image photo;
static uint8_t *canvases[STEPS][CAMERAS];

/* Camera c at step s: the photo at its own offset, moving 7 px a step. */
static omma_frame frame_of(int s, int c)
{
    uint8_t *rgb = canvases[s][c];
    if (!rgb) {
        rgb = malloc((size_t)W * H * 3);
        if (!rgb)
            abort();
        memset(rgb, 90, (size_t)W * H * 3);
        int ox = 20 + 11 * c + 7 * s, oy = 10 + 5 * c;
        for (int y = 0; y < photo.height && y + oy < H; y++) {
            int n = photo.width < W - ox ? photo.width : W - ox;
            memcpy(rgb + ((size_t)(y + oy) * W + (size_t)ox) * 3,
                   photo.rgb + (size_t)y * (size_t)photo.width * 3, (size_t)n * 3);
        }
        canvases[s][c] = rgb;
    }
    omma_frame f = {W, H, OMMA_PIXEL_RGB, {rgb, NULL, NULL}, {W * 3, 0, 0}, OMMA_MEMORY_HOST};
    return f;
}

static omma_face_pipeline *make(int lanes, int graphs)
{
    omma_face_pipeline_options o;
    omma_face_pipeline_options_init(&o);
    o.backend = OMMA_BACKEND_CUDA;
    o.detector_model = FACE_MODEL_SHORT;
    o.mesh_model = FACE_MODEL_MESH;
    o.max_faces = MAX_FACES;
    o.max_batch = CAMERAS;
    o.detect_every = 3;
    o.lanes = lanes;
    o.graphs = graphs;
    omma_face_pipeline *p = NULL;
    omma_status st = omma_face_pipeline_create(&o, &p);
    if (st != OMMA_OK) {
        fprintf(stderr, "face pipeline: %s\n", omma_last_error());
        abort();
    }
    return p;
}

static omma_face ref_faces[STEPS][CAMERAS][MAX_FACES];
static int ref_counts[STEPS][CAMERAS];

static void run_all(omma_face_pipeline *p, omma_face out[STEPS][CAMERAS][MAX_FACES],
                    int counts[STEPS][CAMERAS])
{
    int cams[CAMERAS] = {0, 1, 2, 3, 4, 5};
    for (int s = 0; s < STEPS; s++) {
        omma_frame frames[CAMERAS];
        for (int c = 0; c < CAMERAS; c++)
            frames[c] = frame_of(s, c);
        REQUIRE_OK(
            omma_face_pipeline_process_batch(p, CAMERAS, cams, frames, &out[s][0][0], counts[s]));
    }
}

static int same(const omma_face *a, const omma_face *b, int n)
{
    return memcmp(a, b, (size_t)n * sizeof *a) == 0;
}

static void test_graphs_match_eager(void)
{
    omma_face_pipeline *eager = make(1, 0), *graphs = make(1, 1);
    static omma_face gf[STEPS][CAMERAS][MAX_FACES];
    static int gc[STEPS][CAMERAS];
    run_all(eager, ref_faces, ref_counts);
    run_all(graphs, gf, gc);
    int faces = 0;
    for (int s = 0; s < STEPS; s++)
        for (int c = 0; c < CAMERAS; c++) {
            CHECK(gc[s][c] == ref_counts[s][c]);
            CHECK(same(gf[s][c], ref_faces[s][c], ref_counts[s][c]));
            faces += ref_counts[s][c];
        }
    CHECK(faces == STEPS * CAMERAS); /* the face in every frame */
    omma_face_pipeline_stats st;
    REQUIRE_OK(omma_face_pipeline_get_stats(graphs, &st));
    CHECK(st.d2h_copies == STEPS);
    CHECK(st.d2h_bytes == st.mesh_images * sizeof(omma_face) + st.frames * sizeof(int));
    omma_face_pipeline_destroy(eager);
    omma_face_pipeline_destroy(graphs);
}

/* The batches of step s: the cameras split three ways, differently each
 * step; -1 ends a batch. */
static int split(int s, int groups[3][CAMERAS + 1])
{
    static const int layouts[3][3][CAMERAS + 1] = {
        {{0, 1, 2, -1}, {3, 4, 5, -1}, {-1}},
        {{5, -1}, {0, 2, 4, -1}, {1, 3, -1}},
        {{4, 3, 2, 1, 0, -1}, {5, -1}, {-1}},
    };
    memcpy(groups, layouts[s % 3], sizeof layouts[0]);
    return groups[2][0] < 0 ? 2 : 3;
}

static void test_lanes_match_reference(void)
{
    omma_face_pipeline *p = make(3, 1);
    REQUIRE(fp_async_lanes(p) == 3);
    for (int s = 0; s < STEPS; s++) {
        int groups[3][CAMERAS + 1], lanes[3];
        int n_groups = split(s, groups);
        for (int g = 0; g < n_groups; g++) {
            int n = 0;
            omma_frame frames[CAMERAS];
            while (groups[g][n] >= 0) {
                frames[n] = frame_of(s, groups[g][n]);
                n++;
            }
            REQUIRE_OK(fp_async_submit(p, n, groups[g], frames, NULL, NULL, &lanes[g]));
            for (int i = 0; i < n; i++)
                CHECK(fp_async_camera_busy(p, groups[g][i]));
            CHECK(fp_async_launches(p, lanes[g]) == 2); /* the graph and the result copy */
        }
        for (int g = n_groups - 1; g >= 0; g--) {
            omma_face faces[CAMERAS * MAX_FACES];
            int counts[CAMERAS];
            REQUIRE_OK(fp_async_complete(p, lanes[g], faces, counts));
            for (int i = 0; groups[g][i] >= 0; i++) {
                int c = groups[g][i];
                CHECK(!fp_async_camera_busy(p, c));
                CHECK(counts[i] == ref_counts[s][c]);
                CHECK(same(&faces[i * MAX_FACES], ref_faces[s][c], ref_counts[s][c]));
            }
        }
    }
    omma_face_pipeline_destroy(p);
}

/* Opens the gate after 10 s if the test has not: a submit that waits on
 * the host then fails the checks instead of hanging. */
static void *watchdog(void *arg)
{
    volatile int *flag = arg;
    for (int i = 0; i < 1000 && !*flag; i++)
        usleep(10000);
    *flag = 1;
    return NULL;
}

/* The shapes the test below submits, once, so that their graphs and
 * staging buffers exist before the gate shuts. */
static void warm_up(omma_face_pipeline *p)
{
    int pair[2] = {20, 21}, one = 22, lane[2];
    omma_frame frames[2] = {frame_of(0, 0), frame_of(0, 1)};
    omma_face faces[2 * MAX_FACES];
    int counts[2];
    REQUIRE_OK(fp_async_submit(p, 2, pair, frames, NULL, NULL, &lane[0]));
    REQUIRE_OK(fp_async_submit(p, 1, &one, frames, NULL, NULL, &lane[1]));
    REQUIRE(lane[0] == 0 && lane[1] == 1);
    REQUIRE_OK(fp_async_complete(p, lane[0], faces, counts));
    REQUIRE_OK(fp_async_complete(p, lane[1], faces, counts));
}

static void test_no_host_wait(void)
{
    omma_face_pipeline *p = make(2, 1);
    warm_up(p);
    volatile int *flag = NULL;
    REQUIRE(cudaHostAlloc((void **)&flag, sizeof *flag, cudaHostAllocMapped) == cudaSuccess);
    *flag = 0;
    pthread_t dog;
    REQUIRE(pthread_create(&dog, NULL, watchdog, (void *)flag) == 0);
    cudaStream_t side;
    cudaEvent_t gate;
    REQUIRE(cudaStreamCreateWithFlags(&side, cudaStreamNonBlocking) == cudaSuccess);
    REQUIRE(cudaEventCreateWithFlags(&gate, cudaEventDisableTiming) == cudaSuccess);
    REQUIRE(test_wait_flag(flag, side) == cudaSuccess);
    REQUIRE(cudaEventRecord(gate, side) == cudaSuccess);

    int cams[2] = {0, 1}, lane = -1;
    omma_frame frames[2] = {frame_of(0, 0), frame_of(0, 1)};
    CUevent ready[2] = {(CUevent)gate, NULL};
    REQUIRE_OK(fp_async_submit(p, 2, cams, frames, ready, NULL, &lane));
    /* submit returned while the gate is still shut: it did not wait. */
    CHECK(cudaEventQuery(gate) == cudaErrorNotReady);
    CHECK(fp_async_launches(p, lane) == 3); /* a wait, the graph, the copy */

    /* Misuse while the batch is held. */
    int other = -1;
    CHECK_FAILS(fp_async_submit(p, 1, &cams[1], &frames[1], NULL, NULL, &other),
                OMMA_ERR_INVALID_ARG, "camera 1 already has a batch in flight");
    int cam2 = 2;
    omma_frame f2 = frame_of(0, 2);
    REQUIRE_OK(fp_async_submit(p, 1, &cam2, &f2, NULL, NULL, &other));
    int cam3 = 3;
    omma_frame f3 = frame_of(0, 3);
    int none = 7;
    CHECK_FAILS(fp_async_submit(p, 1, &cam3, &f3, NULL, NULL, &none), OMMA_ERR_BUSY, "all 2 lanes");
    CHECK(none == -1);

    *flag = 1;
    omma_face faces[2 * MAX_FACES];
    int counts[2];
    REQUIRE_OK(fp_async_complete(p, lane, faces, counts));
    CHECK(counts[0] == ref_counts[0][0] && counts[1] == ref_counts[0][1]);
    CHECK(same(&faces[0], ref_faces[0][0], counts[0]));
    CHECK(same(&faces[MAX_FACES], ref_faces[0][1], counts[1]));
    REQUIRE_OK(fp_async_complete(p, other, faces, counts));
    CHECK(counts[0] == ref_counts[0][2] && same(&faces[0], ref_faces[0][2], counts[0]));
    CHECK_FAILS(fp_async_complete(p, lane, faces, counts), OMMA_ERR_INVALID_ARG,
                "has no batch in flight");
    pthread_join(dog, NULL);
    omma_face_pipeline_destroy(p);
    cudaEventDestroy(gate);
    cudaStreamDestroy(side);
    cudaFreeHost((void *)flag);
}

int main(void)
{
    gpu_test_require_device();
    if (rgb_image_load_png(FACE_PHOTO, &photo) != OMMA_OK) {
        fprintf(stderr, "%s: %s (run scripts/fetch-testdata.sh)\n", FACE_PHOTO, omma_last_error());
        return 1;
    }
    RUN(test_graphs_match_eager);
    RUN(test_lanes_match_reference);
    RUN(test_no_host_wait);
    for (int s = 0; s < STEPS; s++)
        for (int c = 0; c < CAMERAS; c++)
            free(canvases[s][c]);
    rgb_image_free(&photo);
    return testing_finish();
}
