/* The CPU face pipeline on the astronaut photo: one face on the expected
 * box, the same id when the frame comes again, a second camera with its
 * own tracker, the JPEG of the photo giving the same face; option and
 * argument errors. A few inferences only (slow under ASan).
 * Expected face box: x 181..270, y 84..176 (tests/engine/test_face_evidence.c). */
#define _POSIX_C_SOURCE 200809L /* pthreads, sched_yield */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sched.h>

#include "support/image_files.h"
#include "omma/device.h"
#include "omma/pipeline.h"
#include "io/image_file.h"
#include "support/face_inputs.h"
#include "testing.h"
#include "vision/detect_decode.h"

static const omma_box expected_face = {181.0f, 84.0f, 270.0f, 176.0f};

static void options(omma_face_pipeline_options *o)
{
    omma_face_pipeline_options_init(o);
    o->detector_model = FACE_MODEL_SHORT;
    o->mesh_model = FACE_MODEL_MESH;
}

static void print_face(const char *what, const omma_face *f)
{
    fprintf(stderr,
            "%s: id %d score %.4f box x %.1f..%.1f y %.1f..%.1f presence %.4f nose (%.1f, %.1f)\n",
            what, f->id, f->score, f->box.xmin, f->box.xmax, f->box.ymin, f->box.ymax,
            f->presence, f->landmarks[1][0], f->landmarks[1][1]);
}

static void test_astronaut_tracked(void)
{
    omma_face_pipeline_options o;
    options(&o);
    omma_face_pipeline *p = NULL;
    io_image img;
    REQUIRE_OK(io_image_load(FACE_PHOTO, &img));
    omma_status st = omma_face_pipeline_create(&o, &p);
    if (st != OMMA_OK)
        fprintf(stderr, "create: %s\n", omma_last_error());
    CHECK(st == OMMA_OK);
    if (st != OMMA_OK) {
        io_image_free(&img);
        return;
    }
    omma_frame f = io_image_frame(&img);
    omma_face *faces = malloc(4 * sizeof *faces);
    omma_face *first = malloc(sizeof *first);
    int n = -1;
    REQUIRE(faces && first);
    st = omma_face_pipeline_process(p, 0, &f, faces, 4, &n);
    CHECK(st == OMMA_OK);
    CHECK(n == 1);
    if (st == OMMA_OK && n == 1) {
        *first = faces[0];
        print_face("frame 0", first);
        float iou = vis_box_iou(&first->box, &expected_face);
        fprintf(stderr, "  IoU with the expected box %.3f\n", iou);
        CHECK(iou >= 0.6f);
        CHECK(first->presence > 0.9f && first->score > 0.5f);
        CHECK(first->id >= 1);
        /* Nose tip inside the expected box, keypoints too. */
        CHECK(first->landmarks[1][0] > expected_face.xmin && first->landmarks[1][0] < expected_face.xmax);
        CHECK(first->landmarks[1][1] > expected_face.ymin && first->landmarks[1][1] < expected_face.ymax);
        CHECK(first->keypoints[2][0] > expected_face.xmin && first->keypoints[2][0] < expected_face.xmax);

        /* The same frame again: tracked from the landmarks (no detector),
         * the same id, about the same place. */
        st = omma_face_pipeline_process(p, 0, &f, faces, 4, &n);
        CHECK(st == OMMA_OK && n == 1);
        if (n == 1) {
            print_face("frame 1", &faces[0]);
            CHECK(faces[0].id == first->id);
            CHECK(vis_box_iou(&faces[0].box, &first->box) > 0.85f);
            CHECK(hypotf(faces[0].landmarks[1][0] - first->landmarks[1][0],
                         faces[0].landmarks[1][1] - first->landmarks[1][1]) < 4.0f);
        }
        /* max 0: the frame is processed, nothing written. */
        st = omma_face_pipeline_process(p, 0, &f, NULL, 0, &n);
        CHECK(st == OMMA_OK && n == 0);
    }

#ifdef OMMA_HAVE_JPEG
    /* Camera 5, its own tracker, fed the JPEG of the photo: the same face. */
    const char *jpg = scratch_path("astronaut.jpg");
    io_image jimg;
    if (write_jpeg(jpg, img.rgb, img.width, img.height, 3, 95) &&
        io_image_load(jpg, &jimg) == OMMA_OK) {
        omma_frame jf = io_image_frame(&jimg);
        st = omma_face_pipeline_process(p, 5, &jf, faces, 4, &n);
        CHECK(st == OMMA_OK && n == 1);
        if (n == 1) {
            print_face("JPEG, camera 5", &faces[0]);
            float iou = vis_box_iou(&faces[0].box, &first->box);
            fprintf(stderr, "  IoU with the PNG's face %.3f\n", iou);
            CHECK(iou > 0.9f);
            CHECK(iou >= 0.6f || vis_box_iou(&faces[0].box, &expected_face) >= 0.6f);
            CHECK(faces[0].id == 1); /* a tracker of its own: ids start afresh */
        }
        io_image_free(&jimg);
    } else {
        CHECK(0);
    }
#endif

    /* Bad arguments leave the tracker alone. */
    omma_frame bad = f;
    bad.pitch[0] = 3;
    CHECK_FAILS(omma_face_pipeline_process(p, 0, &bad, faces, 4, &n), OMMA_ERR_INVALID_ARG, "pitch");
    CHECK(n == 0);
    CHECK_FAILS(omma_face_pipeline_process(p, -1, &f, faces, 4, &n), OMMA_ERR_INVALID_ARG, "camera");
    CHECK_FAILS(omma_face_pipeline_process(p, OMMA_PIPELINE_MAX_CAMERAS, &f, faces, 4, &n),
                OMMA_ERR_INVALID_ARG, "camera");
    CHECK(omma_face_pipeline_process(p, 0, NULL, faces, 4, &n) == OMMA_ERR_INVALID_ARG);
    CHECK(omma_face_pipeline_process(NULL, 0, &f, faces, 4, &n) == OMMA_ERR_INVALID_ARG);

    free(faces);
    free(first);
    omma_face_pipeline_destroy(p);
    omma_face_pipeline_destroy(NULL);
    io_image_free(&img);
}

static void test_options(void)
{
    omma_face_pipeline_options o;
    omma_face_pipeline *p = (omma_face_pipeline *)&o;
    omma_face_pipeline_options_init(&o);
    CHECK(o.backend == OMMA_BACKEND_CPU && o.max_faces == 4 && o.detect_every == 0);
    CHECK(o.min_detection_score == 0.5f && o.min_presence == 0.5f && o.nms_threshold == 0.3f);
    CHECK_FAILS(omma_face_pipeline_create(&o, &p), OMMA_ERR_INVALID_ARG, "model path");
    CHECK(p == NULL);
    options(&o);
    o.backend = OMMA_BACKEND_CUDA;
    int gpus = 0;
    if (omma_device_count(&gpus) != OMMA_OK || gpus == 0) {
        /* No GPU here: the CUDA backend says so (the GPU tests cover it). */
        p = (omma_face_pipeline *)&o;
        CHECK_FAILS(omma_face_pipeline_create(&o, &p), OMMA_ERR_NO_DEVICE, "");
        CHECK(p == NULL);
    }
    options(&o);
    o.max_batch = 0;
    CHECK_FAILS(omma_face_pipeline_create(&o, &p), OMMA_ERR_INVALID_ARG, "max_batch");
    options(&o);
    o.precision = (omma_precision)7;
    CHECK_FAILS(omma_face_pipeline_create(&o, &p), OMMA_ERR_INVALID_ARG, "precision");
    options(&o);
    o.device = (omma_device *)&o;
    CHECK_FAILS(omma_face_pipeline_create(&o, &p), OMMA_ERR_INVALID_ARG, "CPU backend");
    options(&o);
    o.max_faces = 0;
    CHECK_FAILS(omma_face_pipeline_create(&o, &p), OMMA_ERR_INVALID_ARG, "max_faces");
    options(&o);
    o.nms_threshold = NAN;
    CHECK_FAILS(omma_face_pipeline_create(&o, &p), OMMA_ERR_INVALID_ARG, "nms_threshold");
    options(&o);
    o.detect_every = -1;
    CHECK_FAILS(omma_face_pipeline_create(&o, &p), OMMA_ERR_INVALID_ARG, "detect_every");
    options(&o);
    o.mesh_model = OMMA_TESTDATA_DIR "/no-such-model.tflite";
    CHECK_FAILS(omma_face_pipeline_create(&o, &p), OMMA_ERR_IO, "no-such-model");
    CHECK(p == NULL);
    /* The detector given as FaceMesh and the other way round. */
    options(&o);
    o.detector_model = FACE_MODEL_MESH;
    CHECK_FAILS(omma_face_pipeline_create(&o, &p), OMMA_ERR_UNSUPPORTED, "BlazeFace");
    options(&o);
    o.mesh_model = FACE_MODEL_SHORT;
    CHECK_FAILS(omma_face_pipeline_create(&o, &p), OMMA_ERR_UNSUPPORTED, "not a FaceMesh model");
    CHECK(p == NULL);
    CHECK(omma_face_pipeline_create(NULL, &p) == OMMA_ERR_INVALID_ARG);
    CHECK(omma_face_pipeline_create(&o, NULL) == OMMA_ERR_INVALID_ARG);
}

/* Two threads on one pipeline at once: thread A announces itself and
 * processes a frame (a few hundred ms on the CPU); the main thread, on the
 * announcement, calls too. The two calls overlap, so exactly one returns
 * OMMA_ERR_BUSY at once (normally the main thread's) and the other runs the
 * frame. */
typedef struct busy_run {
    omma_face_pipeline *p;
    const omma_frame *f;
    omma_status st;
    atomic_int started;
} busy_run;

static void *busy_thread(void *arg)
{
    busy_run *r = arg;
    omma_face faces[4];
    int n;
    atomic_store(&r->started, 1);
    r->st = omma_face_pipeline_process(r->p, 0, r->f, faces, 4, &n);
    return NULL;
}

static void test_busy(void)
{
    omma_face_pipeline_options o;
    options(&o);
    omma_face_pipeline *p = NULL;
    io_image img;
    REQUIRE_OK(io_image_load(FACE_PHOTO, &img));
    omma_status st = omma_face_pipeline_create(&o, &p);
    CHECK(st == OMMA_OK);
    if (st != OMMA_OK) {
        io_image_free(&img);
        return;
    }
    omma_frame f = io_image_frame(&img);
    busy_run r = {p, &f, OMMA_ERR_INTERNAL, 0};
    pthread_t th;
    omma_face faces[4];
    int n = -1;
    if (pthread_create(&th, NULL, busy_thread, &r) == 0) {
        while (!atomic_load(&r.started))
            sched_yield();
        st = omma_face_pipeline_process(p, 0, &f, faces, 4, &n);
        char msg[512];
        snprintf(msg, sizeof msg, "%s", omma_last_error());
        pthread_join(th, NULL);
        fprintf(stderr, "  thread: %s; main: %s (%s)\n", omma_status_str(r.st),
                omma_status_str(st), st == OMMA_OK ? "" : msg);
        CHECK((st == OMMA_ERR_BUSY && r.st == OMMA_OK) || (st == OMMA_OK && r.st == OMMA_ERR_BUSY));
        if (st == OMMA_ERR_BUSY)
            CHECK(n == 0 && strstr(msg, "one pipeline per thread"));
    } else {
        CHECK(0);
    }
    /* Free again afterwards; the face is still tracked. */
    CHECK(omma_face_pipeline_process(p, 0, &f, faces, 4, &n) == OMMA_OK && n == 1);
    omma_face_pipeline_destroy(p);
    io_image_free(&img);
}

int main(void)
{
    if (!scratch_dir()) {
        fprintf(stderr, "cannot make a scratch folder\n");
        return 1;
    }
    RUN(test_options);
    RUN(test_astronaut_tracked);
    RUN(test_busy);
    scratch_remove();
    return testing_finish();
}
