/* The runtime's configuration checks (runtime/runtime.h), before any GPU is
 * touched: each bad field is refused with OMMA_ERR_INVALID_ARG naming it;
 * a good configuration on a machine without a GPU fails with
 * OMMA_ERR_NO_DEVICE (with one, it starts and stops); pose on the GPU
 * backend is OMMA_ERR_UNSUPPORTED (the CPU runtime only, for now). */
#include <string.h>

#include "runtime/runtime.h"
#include "support/face_inputs.h"
#include "testing.h"

static rt_camera_config cams[2] = {{NULL, NULL, 1, NULL, NULL}, {NULL, NULL, 1, NULL, NULL}};
static int gpus[2] = {0, 0};
static io_image photo = {2, 2, (uint8_t[12]){0}};

static void good(rt_runtime_config *c)
{
    rt_runtime_config_init(c);
    c->n_cameras = 2;
    c->cameras = cams;
    c->n_gpus = 1;
    c->gpus = gpus;
    c->photo = &photo;
    c->pipeline.detector_model = FACE_MODEL_SHORT;
    c->pipeline.mesh_model = FACE_MODEL_MESH;
}

/* Fields only the GPU runtime reads (runtime.c): in a build without CUDA
 * that runtime is src/runtime/runtime_none.c, which fails before them. */
#if OMMA_HAVE_CUDA
#define CHECK_GPU_FIELD(expr, text) CHECK_FAILS(expr, OMMA_ERR_INVALID_ARG, text)
#else
#define CHECK_GPU_FIELD(expr, text)                                                                \
    CHECK_FAILS(expr, OMMA_ERR_NO_DEVICE, "omma was built without CUDA (OMMA_CUDA=OFF)")
#endif

static void test_bad_fields_are_named(void)
{
    rt_runtime *rt = (rt_runtime *)&rt;
    rt_runtime_config c;
    CHECK_FAILS(rt_runtime_start(NULL, &rt), OMMA_ERR_INVALID_ARG, "config is NULL");
    CHECK(rt == NULL);
    good(&c);
    CHECK_FAILS(rt_runtime_start(&c, NULL), OMMA_ERR_INVALID_ARG, "out is NULL");
    c.n_cameras = 0;
    CHECK_FAILS(rt_runtime_start(&c, &rt), OMMA_ERR_INVALID_ARG, "0 cameras not in 1..4096");
    good(&c);
    c.n_gpus = 2;
    CHECK_GPU_FIELD(rt_runtime_start(&c, &rt), "GPU 0 named twice");
    good(&c);
    c.n_gpus = RT_MAX_GPUS + 1;
    CHECK_GPU_FIELD(rt_runtime_start(&c, &rt), "GPUs not in 1..16");
    good(&c);
    c.placement = (rt_placement)9;
    CHECK_GPU_FIELD(rt_runtime_start(&c, &rt), "unknown placement 9");
    good(&c);
    c.max_wait_ms = -1;
    CHECK_FAILS(rt_runtime_start(&c, &rt), OMMA_ERR_INVALID_ARG, "max wait -1 ms");
    good(&c);
    c.ring_slots = 1;
    CHECK_GPU_FIELD(rt_runtime_start(&c, &rt), "1 ring slots not in 2..64");
    good(&c);
    c.photo = NULL;
    CHECK_FAILS(rt_runtime_start(&c, &rt), OMMA_ERR_INVALID_ARG, "synthetic cameras need a photo");
    good(&c);
    c.pool_frames = 0;
    CHECK_GPU_FIELD(rt_runtime_start(&c, &rt), "0 pool frames");
    good(&c);
    c.synthetic_per_thread = 0;
    CHECK_FAILS(rt_runtime_start(&c, &rt), OMMA_ERR_INVALID_ARG, "0 synthetic cameras per thread");
    good(&c);
    c.synthetic.fps = 0;
    CHECK_FAILS(rt_runtime_start(&c, &rt), OMMA_ERR_INVALID_ARG, "synthetic fps 0");
    good(&c); /* pose runs on both runtimes: here its models are missing (a
               * GPU: the face pipeline is made, then the pose models fail to
               * load and everything made is freed) */
    c.pose.detector_model = "no-such-dir/pose_detection.tflite";
    c.pose.landmark_model = "no-such-dir/pose_landmark_lite.tflite";
    rt = (rt_runtime *)&rt;
    omma_status st = rt_runtime_start(&c, &rt);
    CHECK(st == OMMA_ERR_NO_DEVICE || st == OMMA_ERR_IO);
    CHECK(st != OMMA_ERR_IO || strstr(omma_last_error(), "no-such-dir/pose_detection.tflite"));
    CHECK(rt == NULL);
}

static void test_good_config(void)
{
    rt_runtime_config c;
    good(&c);
    rt_runtime *rt = NULL;
    omma_status st = rt_runtime_start(&c, &rt);
    if (st == OMMA_ERR_NO_DEVICE) {
        CHECK(rt == NULL);
        return;
    }
    /* With a GPU: two synthetic cameras of one frame each (a 2x2 photo is
     * refused by the pool: its face box is outside it). */
    CHECK(st == OMMA_ERR_INVALID_ARG);
}

/* Cameras added live (max_cameras) on the GPU runtime: the checks before
 * any GPU is touched; then, without a GPU, OMMA_ERR_NO_DEVICE (no longer
 * refused as the CPU runtime's only); with one, the argument checks of add
 * and remove. */
static void test_live_cameras(void)
{
    rt_runtime *rt = NULL;
    rt_runtime_config c;
    good(&c);
    c.n_cameras = 0;
    c.max_cameras = 4;
    c.publish = "omma-config-test";
#if OMMA_HAVE_CUDA
    CHECK_FAILS(rt_runtime_start(&c, &rt), OMMA_ERR_UNSUPPORTED,
                "max cameras 4: cameras added live cannot be published on the frame bus "
                "omma-config-test");
#else
    CHECK_FAILS(rt_runtime_start(&c, &rt), OMMA_ERR_NO_DEVICE, "built without CUDA");
#endif
    CHECK(rt == NULL);
    c.publish = NULL;
    c.pool_frames = 0; /* synthetic cameras may be added: the pool's size is checked */
    CHECK_GPU_FIELD(rt_runtime_start(&c, &rt), "0 pool frames");
    c.max_cameras = OMMA_PIPELINE_MAX_CAMERAS + 1;
    CHECK_FAILS(rt_runtime_start(&c, &rt), OMMA_ERR_INVALID_ARG, "max cameras 4097 not in 1..4096");
    good(&c);
    c.n_cameras = 0;
    c.max_cameras = 4;
    c.photo = NULL; /* no pool: none for the 2x2 photo to be refused by */
    omma_status st = rt_runtime_start(&c, &rt);
    if (st == OMMA_ERR_NO_DEVICE) {
        CHECK(rt == NULL);
        return;
    }
    CHECK(st == OMMA_OK);
    if (st != OMMA_OK)
        return;
    rt_camera_config synth = {NULL, "s", 0, NULL, NULL};
    int index = 5;
    CHECK_FAILS(rt_runtime_add_camera(rt, &synth, &index), OMMA_ERR_INVALID_ARG, "no photo");
    CHECK(index == -1);
    CHECK_FAILS(rt_runtime_add_camera(rt, NULL, &index), OMMA_ERR_INVALID_ARG, "NULL argument");
    CHECK_FAILS(rt_runtime_remove_camera(rt, 0), OMMA_ERR_INVALID_ARG, "camera 0: no such camera");
    CHECK_FAILS(rt_runtime_remove_camera(rt, 4), OMMA_ERR_INVALID_ARG, "camera 4: no such camera");
    rt_runtime_interrupt_camera(rt, 0); /* nothing there: nothing */
    rt_runtime_destroy(rt);
}

int main(void)
{
    RUN(test_bad_fields_are_named);
    RUN(test_good_config);
    RUN(test_live_cameras);
    return testing_finish();
}
