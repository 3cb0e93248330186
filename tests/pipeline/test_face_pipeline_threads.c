/* The CPU face pipeline on several threads (omma_face_pipeline_options.
 * threads) finds bitwise the faces it finds on one thread:
 *   - the astronaut photo, as one camera over several frames and as a
 *     batch of two cameras (the photo and its mirror image);
 *   - the first VIDEO_FRAMES frames of testdata/astronaut_pan.mp4 and astronaut_rotate.mp4
 *     (one face in each; skipped without libav);
 * on 2, 3 and all threads against 1. A thread count out of range is
 * refused naming the option. */
#include <string.h>

#include "io/image_file.h"
#include "io/video_file.h"
#include "omma/pipeline.h"
#include "support/face_inputs.h"
#include "testing.h"

#define MAX_FACES 2
#define VIDEO_FRAMES 12 /* of the clips' 24 */
#define PHOTO_STEPS 3

static const int thread_counts[] = {2, 3, 0};
#define N_COUNTS (int)(sizeof thread_counts / sizeof thread_counts[0])

static omma_face_pipeline *make(int threads)
{
    omma_face_pipeline_options o;
    omma_face_pipeline_options_init(&o);
    o.backend = OMMA_BACKEND_CPU;
    o.detector_model = FACE_MODEL_SHORT;
    o.mesh_model = FACE_MODEL_MESH;
    o.max_faces = MAX_FACES;
    o.max_batch = 2;
    o.threads = threads;
    omma_face_pipeline *p = NULL;
    if (omma_face_pipeline_create(&o, &p) != OMMA_OK)
        fprintf(stderr, "pipeline on %d threads: %s\n", threads, omma_last_error());
    return p;
}

/* The faces of one frame on every pipeline, compared with pipeline 0's
 * (one thread); returns pipeline 0's count, -1 on an error. */
static int compare_frame(omma_face_pipeline **p, int n_cams, const int *cams,
                         const omma_frame *frames, const char *what)
{
    omma_face ref[2 * MAX_FACES], got[2 * MAX_FACES];
    int ref_n[2], got_n[2];
    memset(ref, 0, sizeof ref);
    if (omma_face_pipeline_process_batch(p[0], n_cams, cams, frames, ref, ref_n) != OMMA_OK) {
        fprintf(stderr, "%s, 1 thread: %s\n", what, omma_last_error());
        return -1;
    }
    for (int k = 0; k < N_COUNTS; k++) {
        memset(got, 0, sizeof got);
        if (omma_face_pipeline_process_batch(p[k + 1], n_cams, cams, frames, got, got_n) !=
            OMMA_OK) {
            fprintf(stderr, "%s, %d threads: %s\n", what, thread_counts[k], omma_last_error());
            return -1;
        }
        for (int c = 0; c < n_cams; c++)
            if (got_n[c] != ref_n[c] || memcmp(got + c * MAX_FACES, ref + c * MAX_FACES,
                                               (size_t)ref_n[c] * sizeof *ref) != 0) {
                fprintf(stderr, "%s, camera %d: %d threads give %d faces, 1 thread %d%s\n", what,
                        cams[c], thread_counts[k], got_n[c], ref_n[c],
                        got_n[c] == ref_n[c] ? " (different values)" : "");
                return -1;
            }
    }
    return ref_n[0];
}

static int make_all(omma_face_pipeline **p)
{
    p[0] = make(1);
    for (int k = 0; k < N_COUNTS; k++)
        p[k + 1] = make(thread_counts[k]);
    for (int k = 0; k <= N_COUNTS; k++)
        if (!p[k])
            return 0;
    return 1;
}

static void destroy_all(omma_face_pipeline **p)
{
    for (int k = 0; k <= N_COUNTS; k++)
        omma_face_pipeline_destroy(p[k]);
}

static void test_photo(void)
{
    io_image img = {0}, mirror = {0};
    REQUIRE_OK(io_image_load(FACE_PHOTO, &img));
    size_t bytes = (size_t)img.width * (size_t)img.height * 3;
    mirror = img;
    mirror.rgb = malloc(bytes);
    REQUIRE(mirror.rgb != NULL);
    for (int y = 0; y < img.height; y++)
        for (int x = 0; x < img.width; x++)
            memcpy(mirror.rgb + ((size_t)y * img.width + (size_t)(img.width - 1 - x)) * 3,
                   img.rgb + ((size_t)y * img.width + (size_t)x) * 3, 3);
    omma_frame frames[2] = {{img.width,
                             img.height,
                             OMMA_PIXEL_RGB,
                             {img.rgb, NULL, NULL},
                             {img.width * 3, 0, 0},
                             OMMA_MEMORY_HOST},
                            {img.width,
                             img.height,
                             OMMA_PIXEL_RGB,
                             {mirror.rgb, NULL, NULL},
                             {img.width * 3, 0, 0},
                             OMMA_MEMORY_HOST}};
    omma_face_pipeline *p[N_COUNTS + 1] = {0};
    int cams[2] = {0, 1};
    if (make_all(p)) {
        /* Frame 0 runs the detector, the next ones track. */
        for (int step = 0; step < PHOTO_STEPS; step++)
            CHECK(compare_frame(p, 1, cams, frames, "photo") == 1);
        for (int step = 0; step < PHOTO_STEPS; step++)
            CHECK(compare_frame(p, 2, (int[]){2, 3}, frames, "photo and mirror") == 1);
    } else {
        CHECK(0);
    }
    destroy_all(p);
    free(mirror.rgb);
    io_image_free(&img);
}

static void check_video(const char *path)
{
    if (!io_video_available()) {
        fprintf(stderr, "no libav in this build: %s not run\n", path);
        return;
    }
    io_video *v = NULL;
    REQUIRE_OK(io_video_open(path, &v));
    omma_face_pipeline *p[N_COUNTS + 1] = {0};
    int frames = 0, with_face = 0, ok = make_all(p);
    CHECK(ok);
    while (ok && frames < VIDEO_FRAMES) {
        omma_frame f;
        double ts;
        int eof = 0;
        if (io_video_read(v, &f, &ts, &eof) != OMMA_OK) {
            fprintf(stderr, "%s: %s\n", path, omma_last_error());
            CHECK(0);
            break;
        }
        if (eof)
            break;
        char what[64];
        snprintf(what, sizeof what, "frame %d", frames);
        int n = compare_frame(p, 1, (int[]){0}, &f, what);
        CHECK(n >= 0);
        with_face += n == 1;
        frames++;
    }
    CHECK(frames == VIDEO_FRAMES);
    CHECK(with_face == frames);
    destroy_all(p);
    io_video_close(v);
}

static void test_pan_video(void)
{
    check_video(OMMA_TESTDATA_DIR "/astronaut_pan.mp4");
}
static void test_rotate_video(void)
{
    check_video(OMMA_TESTDATA_DIR "/astronaut_rotate.mp4");
}

static void test_bad_threads(void)
{
    omma_face_pipeline_options o;
    omma_face_pipeline_options_init(&o);
    CHECK(o.threads == 0);
    o.detector_model = FACE_MODEL_SHORT;
    o.mesh_model = FACE_MODEL_MESH;
    o.threads = -2;
    omma_face_pipeline *p = (omma_face_pipeline *)1;
    CHECK_FAILS(omma_face_pipeline_create(&o, &p), OMMA_ERR_INVALID_ARG,
                "threads -2 not in 0..256");
    CHECK(p == NULL);
}

int main(void)
{
    RUN(test_photo);
    RUN(test_pan_video);
    RUN(test_rotate_video);
    RUN(test_bad_threads);
    return testing_finish();
}
