/* The pose pipeline on the CUDA engines against the CPU pipeline, on the
 * full-length photo (testdata/messi5.jpg) and its next (tracked) frame:
 * one person each, the same id, the 33 landmarks within 2 px in fp16
 * (0.5 px in fp32), visibility and presence within 0.02, world landmarks
 * within 1 cm (fp32: 3 mm). The tracked frame's region comes from each
 * pipeline's own previous landmarks, so fp16's differences compound there:
 * 8 px and 2.5 cm (measured on the H100: up to 6.8 px and 1.8 cm with
 * lite; fp32 stays within 0.001 px). pose_landmark_lite, full and heavy.
 * Exits 77 without a GPU. */
#include <math.h>
#include <stdio.h>

#include "gpu/gpu_testing.h"
#include "io/image_file.h"
#include "omma/pose.h"
#include "testing.h"

#define POSE_DETECTOR OMMA_MODELS_DIR "/pose_detection.tflite"

static void compare(const char *what, const omma_pose *gpu, const omma_pose *cpu, float px,
                    float metres)
{
    float worst = 0.0f, worst_w = 0.0f, worst_p = 0.0f;
    for (int k = 0; k < OMMA_POSE_LANDMARKS; k++) {
        const omma_pose_landmark *a = &gpu->landmarks[k], *b = &cpu->landmarks[k];
        worst = fmaxf(worst, fmaxf(fabsf(a->x - b->x), fabsf(a->y - b->y)));
        worst_p = fmaxf(
            worst_p, fmaxf(fabsf(a->visibility - b->visibility), fabsf(a->presence - b->presence)));
        for (int c = 0; c < 3; c++)
            worst_w = fmaxf(worst_w, fabsf(gpu->world[k][c] - cpu->world[k][c]));
    }
    fprintf(stderr,
            "  %s: landmarks within %.3f px, world within %.4f m, probabilities within %.4f\n",
            what, worst, worst_w, worst_p);
    CHECK(gpu->id == cpu->id);
    CHECK(worst <= px);
    CHECK(worst_w <= metres);
    CHECK(worst_p <= 0.02f);
}

static void run(const char *model, omma_precision prec)
{
    io_image img;
    REQUIRE_OK(io_image_load(OMMA_TESTDATA_DIR "/messi5.jpg", &img));
    omma_pose_pipeline_options o;
    omma_pose_pipeline *cpu = NULL, *gpu = NULL;
    omma_pose_pipeline_options_init(&o);
    o.detector_model = POSE_DETECTOR;
    o.landmark_model = model;
    REQUIRE_OK(omma_pose_pipeline_create(&o, &cpu));
    o.backend = OMMA_BACKEND_CUDA;
    o.precision = prec;
    REQUIRE_OK(omma_pose_pipeline_create(&o, &gpu));
    omma_frame f = io_image_frame(&img);
    fprintf(stderr, "%s %s\n", model, prec == OMMA_PRECISION_FP16 ? "fp16" : "fp32");
    for (int step = 0; step < 2; step++) {
        omma_pose a, b;
        int na = -1, nb = -1;
        REQUIRE_OK(omma_pose_pipeline_process(gpu, 0, &f, &a, &na));
        REQUIRE_OK(omma_pose_pipeline_process(cpu, 0, &f, &b, &nb));
        CHECK(na == 1 && nb == 1);
        if (na == 1 && nb == 1)
            compare(step ? "tracked" : "detected", &a, &b,
                    prec == OMMA_PRECISION_FP16 ? (step ? 8.0f : 2.0f) : 0.5f,
                    prec == OMMA_PRECISION_FP16 ? (step ? 0.025f : 0.01f) : 0.003f);
    }
    omma_pose_pipeline_destroy(gpu);
    omma_pose_pipeline_destroy(cpu);
    io_image_free(&img);
}

static void test_lite(void)
{
    run(OMMA_MODELS_DIR "/pose_landmark_lite.tflite", OMMA_PRECISION_FP16);
    run(OMMA_MODELS_DIR "/pose_landmark_lite.tflite", OMMA_PRECISION_FP32);
}

static void test_full(void)
{
    run(OMMA_MODELS_DIR "/pose_landmark_full.tflite", OMMA_PRECISION_FP16);
}

static void test_heavy(void)
{
    run(OMMA_MODELS_DIR "/pose_landmark_heavy.tflite", OMMA_PRECISION_FP16);
}

int main(void)
{
    gpu_test_require_device();
    RUN(test_lite);
    RUN(test_full);
    RUN(test_heavy);
    return testing_finish();
}
