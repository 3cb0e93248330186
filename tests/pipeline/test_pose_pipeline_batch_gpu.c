/* The batched GPU pose path (src/pipeline/pose_pipeline_batch.c) against
 * the CPU pose pipeline, on real photos in device memory: four cameras in
 * one batch (testdata/messi5.jpg as NV12, RGB and BGRA, astronaut.png as
 * I420; every plane's rows padded), three steps (the detector on the
 * first, tracking on the next two), each camera's poses vs the CPU
 * pipeline's on the same frame in host memory:
 *   - the same number of people and the same ids;
 *   - the landmarks the CPU's model sees (visibility >= 0.5; the others
 *     are its guesses, reported but not bounded):
 *   - fp32: landmarks within 0.5 px at detection and 1.5 px tracked (the
 *     region comes from each side's own previous landmarks), world
 *     landmarks within 5 mm, visibility and presence within 0.02;
 *   - fp16 (BlazePose full): as test_pose_pipeline_gpu's fp16 bounds, 2 px
 *     at detection and 8 px tracked, world 1 cm and 5 cm, on the
 *     footballer's full-length views (the astronaut's bust reported).
 * The GPU side's crops and letterbox are the face pipeline's kernels (the
 * CPU reference's sampling code), its heatmap refinement pose_refine.h
 * (the CPU's code): the differences are the engines' and float rounding.
 * Then: graphs on and off give bitwise the same poses; errors (a host
 * frame, a camera twice, bad counts); reset. Exits 77 without a GPU. */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_testing.h"
#include "io/image_file.h"
#include "omma/pose.h"
#include "pipeline/pose_pipeline_batch.h"
#include "support/png_image.h"
#include "testing.h"
#include "vision/frame.h"
#include "vision/vision_frames.h"

#define POSE_DETECTOR OMMA_MODELS_DIR "/pose_detection.tflite"
#define CAMERAS 4
#define STEPS 3
#define MAX_POSES 2

typedef struct camera_frame {
    rgb_image img;
    vision_frame host;
    omma_frame device; /* the same planes in device memory */
    void *mem[3];
} camera_frame;

static void load(const char *path, rgb_image *out)
{
    io_image im;
    REQUIRE_OK(io_image_load(path, &im));
    out->width = im.width;
    out->height = im.height;
    out->rgb = im.rgb;
}

static void frame_make(const char *path, omma_pixel_format fmt, camera_frame *c)
{
    memset(c, 0, sizeof *c);
    load(path, &c->img);
    REQUIRE(vision_frame_build(&c->img, fmt, &c->host));
    c->device = c->host.f;
    for (int k = 0; k < 3; k++) {
        size_t bytes = (size_t)c->host.f.pitch[k] * (size_t)vis_frame_plane_rows(&c->host.f, k);
        if (bytes == 0)
            continue;
        REQUIRE(cudaMalloc(&c->mem[k], bytes) == cudaSuccess);
        REQUIRE(cudaMemcpy(c->mem[k], c->host.f.planes[k], bytes, cudaMemcpyHostToDevice) ==
                cudaSuccess);
        c->device.planes[k] = c->mem[k];
    }
    c->device.memory = OMMA_MEMORY_DEVICE;
}

static void frame_free(camera_frame *c)
{
    for (int k = 0; k < 3; k++)
        if (c->mem[k])
            cudaFree(c->mem[k]);
    vision_frame_free(&c->host);
    free(c->img.rgb);
}

static void scenes(camera_frame *f)
{
    frame_make(OMMA_TESTDATA_DIR "/messi5.jpg", OMMA_PIXEL_NV12, &f[0]);
    frame_make(OMMA_TESTDATA_DIR "/messi5.jpg", OMMA_PIXEL_RGB, &f[1]);
    frame_make(OMMA_TESTDATA_DIR "/astronaut.png", OMMA_PIXEL_I420, &f[2]);
    frame_make(OMMA_TESTDATA_DIR "/messi5.jpg", OMMA_PIXEL_BGRA, &f[3]);
}

static void batch_make(omma_device *dev, const char *model, omma_precision prec, int graphs,
                       pp_batch **out)
{
    pp_batch_options o;
    pp_batch_options_init(&o);
    o.pose.device = dev;
    o.pose.precision = prec;
    o.pose.detector_model = POSE_DETECTOR;
    o.pose.landmark_model = model;
    o.pose.max_poses = MAX_POSES;
    o.max_batch = 8;
    o.graphs = graphs;
    REQUIRE_OK(pp_batch_create(&o, out));
}

typedef struct worst {
    float px, world, prob;
    float px_all; /* every landmark's, the ones the model says are out of
                   * sight included (reported, not bounded) */
} worst;

/* The landmarks' x, y within px for those the CPU's model sees
 * (visibility >= 0.5): a point out of the picture (the astronaut's legs)
 * is the model's guess, and fp16 moves guesses furthest. */
static void compare(const omma_pose *gpu, const omma_pose *cpu, worst *w)
{
    for (int k = 0; k < OMMA_POSE_LANDMARKS; k++) {
        const omma_pose_landmark *a = &gpu->landmarks[k], *b = &cpu->landmarks[k];
        float d = fmaxf(fabsf(a->x - b->x), fabsf(a->y - b->y));
        w->px_all = fmaxf(w->px_all, d);
        if (b->visibility >= 0.5f)
            w->px = fmaxf(w->px, d);
        w->prob = fmaxf(
            w->prob, fmaxf(fabsf(a->visibility - b->visibility), fabsf(a->presence - b->presence)));
        for (int c = 0; c < 3; c++)
            w->world = fmaxf(w->world, fabsf(gpu->world[k][c] - cpu->world[k][c]));
    }
}

static void against_cpu(const char *model, omma_precision prec, const float px[2],
                        const float metres[2], int bound_bust)
{
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    camera_frame f[CAMERAS];
    scenes(f);
    pp_batch *b = NULL;
    batch_make(dev, model, prec, 1, &b);
    omma_pose_pipeline_options o;
    omma_pose_pipeline_options_init(&o);
    o.detector_model = POSE_DETECTOR;
    o.landmark_model = model;
    o.max_poses = MAX_POSES;
    omma_pose_pipeline *cpu = NULL;
    REQUIRE_OK(omma_pose_pipeline_create(&o, &cpu));
    int cams[CAMERAS] = {3, 7, 1, 12}; /* any camera indices */
    omma_frame frames[CAMERAS];
    for (int i = 0; i < CAMERAS; i++)
        frames[i] = f[i].device;
    fprintf(stderr, "%s %s\n", model, prec == OMMA_PRECISION_FP16 ? "fp16" : "fp32");
    int people = 0;
    for (int step = 0; step < STEPS; step++) {
        omma_pose gpu[CAMERAS * MAX_POSES];
        int counts[CAMERAS];
        REQUIRE_OK(pp_batch_process(b, CAMERAS, cams, frames, NULL, gpu, counts));
        worst w = {0};
        for (int i = 0; i < CAMERAS; i++) {
            omma_pose ref[MAX_POSES];
            int n = -1;
            REQUIRE_OK(omma_pose_pipeline_process(cpu, cams[i], &f[i].host.f, ref, &n));
            CHECK(counts[i] == n);
            if (i != 2) /* the footballer: one person */
                CHECK(n == 1);
            worst wc = {0};
            for (int k = 0; k < n && k < counts[i]; k++) {
                CHECK(gpu[i * MAX_POSES + k].id == ref[k].id);
                compare(&gpu[i * MAX_POSES + k], &ref[k], &wc);
                people++;
            }
            fprintf(stderr,
                    "    camera %d: %d people, visible landmarks within %.3f px (all %.3f), "
                    "world %.4f m, probabilities %.4f%s\n",
                    cams[i], n, wc.px, wc.px_all, wc.world, wc.prob,
                    i == 2 && !bound_bust ? " (reported, not bounded)" : "");
            if (i == 2 && !bound_bust)
                continue;
            w.px = fmaxf(w.px, wc.px);
            w.px_all = fmaxf(w.px_all, wc.px_all);
            w.world = fmaxf(w.world, wc.world);
            w.prob = fmaxf(w.prob, wc.prob);
        }
        int tracked = step > 0;
        fprintf(stderr,
                "  step %d: visible landmarks within %.3f px (all %.3f), world within %.4f m, "
                "probabilities within %.4f\n",
                step, w.px, w.px_all, w.world, w.prob);
        CHECK(w.px <= px[tracked]);
        CHECK(w.world <= metres[tracked]);
        CHECK(w.prob <= 0.02f);
    }
    CHECK(people >= STEPS * 3); /* at least the footballer on three cameras */
    omma_pose_pipeline_destroy(cpu);
    pp_batch_destroy(b);
    for (int i = 0; i < CAMERAS; i++)
        frame_free(&f[i]);
    omma_device_close(dev);
}

static void test_lite_fp32(void)
{
    const float px[2] = {0.5f, 1.5f}, m[2] = {0.005f, 0.005f};
    against_cpu(OMMA_MODELS_DIR "/pose_landmark_lite.tflite", OMMA_PRECISION_FP32, px, m, 1);
}

static void test_full_fp16(void)
{
    /* World landmarks tracked: 5 cm (measured on an H200: 3.7 cm for the
     * footballer two tracked steps on, where test_pose_pipeline_gpu's one
     * frame at a time measured 1.8: each side's region follows its own
     * fp16-rounded landmarks). */
    const float px[2] = {2.0f, 8.0f}, m[2] = {0.01f, 0.05f};
    /* The astronaut's bust is reported, not bounded, in fp16: a body mostly
     * out of the picture, whose region each side takes from its own
     * previous landmarks, drifts apart under fp16's rounding (measured on
     * an H200: 0.4 px at detection, 11-24 px two steps later); fp32 bounds
     * it (test_lite_fp32), which is what shows the batched path right. */
    against_cpu(OMMA_MODELS_DIR "/pose_landmark_full.tflite", OMMA_PRECISION_FP16, px, m, 0);
}

/* Graphs on and off: bitwise the same poses, step after step, the cameras
 * in batches of changing sizes (4, then 3, then 4). */
static void test_graphs_bitwise(void)
{
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    camera_frame f[CAMERAS];
    scenes(f);
    pp_batch *on = NULL, *off = NULL;
    batch_make(dev, OMMA_MODELS_DIR "/pose_landmark_full.tflite", OMMA_PRECISION_FP16, 1, &on);
    batch_make(dev, OMMA_MODELS_DIR "/pose_landmark_full.tflite", OMMA_PRECISION_FP16, 0, &off);
    int cams[CAMERAS] = {0, 1, 2, 3};
    omma_frame frames[CAMERAS];
    for (int i = 0; i < CAMERAS; i++)
        frames[i] = f[i].device;
    int same = 1, people = 0;
    for (int step = 0; step < 4; step++) {
        int n = step == 1 ? 3 : CAMERAS;
        omma_pose a[CAMERAS * MAX_POSES], b[CAMERAS * MAX_POSES];
        int ca[CAMERAS], cb[CAMERAS];
        memset(a, 0, sizeof a);
        memset(b, 0, sizeof b);
        REQUIRE_OK(pp_batch_process(on, n, cams, frames, NULL, a, ca));
        REQUIRE_OK(pp_batch_process(off, n, cams, frames, NULL, b, cb));
        for (int i = 0; i < n; i++) {
            same &= ca[i] == cb[i];
            people += ca[i];
            for (int k = 0; k < ca[i] && k < cb[i]; k++)
                same &= memcmp(&a[i * MAX_POSES + k], &b[i * MAX_POSES + k], sizeof a[0]) == 0;
        }
    }
    CHECK(same);
    CHECK(people >= 4 * 3);
    pp_batch_destroy(on);
    pp_batch_destroy(off);
    for (int i = 0; i < CAMERAS; i++)
        frame_free(&f[i]);
    omma_device_close(dev);
}

static void test_errors(void)
{
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    pp_batch_options o;
    pp_batch_options_init(&o);
    pp_batch *b = (pp_batch *)&b;
    CHECK_FAILS(pp_batch_create(&o, &b), OMMA_ERR_INVALID_ARG, "no device");
    CHECK(b == NULL);
    o.pose.device = dev;
    o.pose.detector_model = POSE_DETECTOR;
    o.pose.landmark_model = OMMA_MODELS_DIR "/no_such_model.tflite";
    CHECK_FAILS(pp_batch_create(&o, &b), OMMA_ERR_IO, "no_such_model.tflite");
    o.pose.landmark_model = OMMA_MODELS_DIR "/pose_landmark_lite.tflite";
    o.max_batch = 0;
    CHECK_FAILS(pp_batch_create(&o, &b), OMMA_ERR_INVALID_ARG, "max batch 0");
    o.max_batch = 2;
    o.pose.max_poses = 9;
    CHECK_FAILS(pp_batch_create(&o, &b), OMMA_ERR_INVALID_ARG, "max_poses 9");
    o.pose.max_poses = 1;
    REQUIRE_OK(pp_batch_create(&o, &b));
    camera_frame f;
    frame_make(OMMA_TESTDATA_DIR "/messi5.jpg", OMMA_PIXEL_NV12, &f);
    omma_frame two[3] = {f.device, f.device, f.host.f};
    omma_pose poses[3];
    int counts[3], cams[3] = {0, 0, 1};
    CHECK_FAILS(pp_batch_process(b, 2, cams, two, NULL, poses, counts), OMMA_ERR_INVALID_ARG,
                "camera 0 twice");
    CHECK(counts[0] == 0 && counts[1] == 0);
    CHECK_FAILS(pp_batch_process(b, 3, cams, two, NULL, poses, counts), OMMA_ERR_INVALID_ARG,
                "3 frames not in 1..2");
    CHECK_FAILS(pp_batch_process(b, 0, cams, two, NULL, poses, counts), OMMA_ERR_INVALID_ARG,
                "0 frames");
    cams[1] = OMMA_PIPELINE_MAX_CAMERAS;
    CHECK_FAILS(pp_batch_process(b, 2, cams, two, NULL, poses, counts), OMMA_ERR_INVALID_ARG,
                "not in 0..");
    int other[2] = {5, 6};
    CHECK_FAILS(pp_batch_process(b, 2, other, two + 1, NULL, poses, counts), OMMA_ERR_UNSUPPORTED,
                "host memory");
    /* After the errors: a good batch finds the footballer on both cameras,
     * reset starts camera 0 afresh with a new id. */
    cams[1] = 1;
    int ids[2];
    REQUIRE_OK(pp_batch_process(b, 2, cams, two, NULL, poses, counts));
    CHECK(counts[0] == 1 && counts[1] == 1);
    ids[0] = poses[0].id, ids[1] = poses[1].id;
    REQUIRE_OK(pp_batch_reset(b, 0));
    CHECK_FAILS(pp_batch_reset(b, -1), OMMA_ERR_INVALID_ARG, "camera -1");
    REQUIRE_OK(pp_batch_process(b, 2, cams, two, NULL, poses, counts));
    CHECK(counts[0] == 1 && counts[1] == 1);
    CHECK(poses[0].id == ids[0] + 1); /* detected again: a new id */
    CHECK(poses[1].id == ids[1]); /* still tracked */
    pp_batch_destroy(b);
    pp_batch_destroy(NULL);
    frame_free(&f);
    omma_device_close(dev);
}

int main(void)
{
    gpu_test_require_device();
    RUN(test_lite_fp32);
    RUN(test_full_fp16);
    RUN(test_graphs_bitwise);
    RUN(test_errors);
    return testing_finish();
}
