/* The 478-point attention mesh on the GPU face pipeline (the refinement a
 * kernel of the step, vis_cuda_refine) against the CPU pipeline, on real
 * photos (testdata/astronaut.png, testdata/grace_hopper.jpg):
 * - each photo whole: one face on both backends, 478 landmarks, every
 *   point's x, y (irises included) within 1.5 px at FaceMesh's 192-px crop
 *   scale in fp16 (0.5 px in fp32): the tolerance test_cuda_engine holds
 *   the attention mesh model itself to, GPU vs CPU, and the one
 *   test_face_pipeline_gpu holds FaceMesh's pipeline to (the crops differ
 *   by float rounding only); an iris point's z is the mean z of its eye's
 *   16 contour points; head pose yaw, pitch, roll within 2 degrees of the
 *   CPU's (its landmarks are within the tolerance above: about 0.1 px at
 *   the photo's scale moves the angles by a fraction of a degree);
 * - the astronaut's irises inside their eye contours on the GPU, as the
 *   CPU test (test_face_mesh_478) checks them;
 * - four cameras in one batch (each photo panned over a grey canvas, two
 *   cameras each, detector every 3 frames), 5 steps: graphs on and off give
 *   bitwise the same faces (head poses included), and both give the CPU's
 *   faces: the same counts and ids, points within the tolerance. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_testing.h"
#include "io/image_file.h"
#include "omma/pipeline.h"
#include "support/face_inputs.h"
#include "testing.h"
#include "vision/face_refine.h"

#define HOPPER OMMA_TESTDATA_DIR "/grace_hopper.jpg"
#define CAMERAS 4
#define STEPS 5
#define MAX_FACES 2
#define W 600
#define H 620

static io_image photos[2];
static const char *const photo_names[2] = {FACE_PHOTO, HOPPER};
static double worst_fp16, worst_fp32, worst_angle;

static omma_face_pipeline *make(omma_backend backend, omma_precision prec, int graphs,
                                int max_batch)
{
    omma_face_pipeline_options o;
    omma_face_pipeline_options_init(&o);
    o.backend = backend;
    o.precision = prec;
    o.detector_model = FACE_MODEL_SHORT;
    o.mesh_model = FACE_MODEL_MESH_478;
    o.mesh_points = OMMA_FACE_LANDMARKS_WITH_IRISES;
    o.head_pose = 1;
    o.geometry_metadata = FACE_GEOMETRY;
    o.max_faces = MAX_FACES;
    o.max_batch = max_batch;
    o.detect_every = 3;
    o.graphs = graphs;
    omma_face_pipeline *p = NULL;
    omma_status st = omma_face_pipeline_create(&o, &p);
    if (st != OMMA_OK) {
        fprintf(stderr, "face pipeline (%s): %s\n", backend == OMMA_BACKEND_CUDA ? "GPU" : "CPU",
                omma_last_error());
        abort();
    }
    return p;
}

static const float *point(const omma_face *f, int k)
{
    return k < OMMA_FACE_LANDMARKS ? f->landmarks[k] : f->irises[k - OMMA_FACE_LANDMARKS];
}

/* GPU face g against CPU face c: ids, 478 points' x, y within tol px at
 * 192, head pose within 2 degrees. */
static void compare_face(const omma_face *g, const omma_face *c, float tol, const char *what)
{
    CHECK(g->id == c->id);
    CHECK(g->n_landmarks == OMMA_FACE_LANDMARKS_WITH_IRISES);
    CHECK(c->n_landmarks == OMMA_FACE_LANDMARKS_WITH_IRISES);
    float side = 1.5f * fmaxf(c->box.xmax - c->box.xmin, c->box.ymax - c->box.ymin);
    double worst = 0;
    for (int k = 0; k < OMMA_FACE_LANDMARKS_WITH_IRISES; k++)
        for (int d = 0; d < 2; d++)
            worst = fmax(worst, fabsf(point(g, k)[d] - point(c, k)[d]));
    worst /= side / 192.0f;
    double *w = tol < 1.0f ? &worst_fp32 : &worst_fp16;
    *w = fmax(*w, worst);
    CHECK(g->has_head_pose && c->has_head_pose);
    double angle =
        fmax(fabsf(g->yaw - c->yaw), fmax(fabsf(g->pitch - c->pitch), fabsf(g->roll - c->roll)));
    worst_angle = fmax(worst_angle, angle);
    if (!(worst <= tol) || !(angle <= 2.0))
        fprintf(stderr,
                "%s: points within %.3f px at 192 (tolerance %.1f); head pose GPU %.2f %.2f "
                "%.2f, CPU %.2f %.2f %.2f\n",
                what, worst, tol, g->yaw, g->pitch, g->roll, c->yaw, c->pitch, c->roll);
    CHECK(worst <= tol);
    CHECK(angle <= 2.0);
}

/* Iris point z = the mean z of its eye's contour (the GPU's own points). */
static void check_iris_depth(const omma_face *f)
{
    for (int e = 0; e < 2; e++) {
        const short *contour = e ? vis_right_eye_index : vis_left_eye_index;
        double z = 0;
        for (int k = 0; k < VIS_EYE_CONTOUR_POINTS; k++)
            z += f->landmarks[contour[k]][2];
        z /= VIS_EYE_CONTOUR_POINTS;
        for (int k = 0; k < VIS_IRIS_POINTS; k++)
            CHECK(fabs(f->irises[5 * e + k][2] - z) <= 1e-3 * (1 + fabs(z)));
    }
}

/* Even-odd rule, and the distance to the polygon's edges. */
static int inside(const omma_face *f, const int *poly, int n, const float *p)
{
    int in = 0;
    for (int i = 0, j = n - 1; i < n; j = i++) {
        const float *a = point(f, poly[i]), *b = point(f, poly[j]);
        if ((a[1] > p[1]) != (b[1] > p[1]) &&
            p[0] < (b[0] - a[0]) * (p[1] - a[1]) / (b[1] - a[1]) + a[0])
            in = !in;
    }
    return in;
}

static double edge_distance(const omma_face *f, const int *poly, int n, const float *p)
{
    double best = INFINITY;
    for (int i = 0, j = n - 1; i < n; j = i++) {
        const float *a = point(f, poly[i]), *b = point(f, poly[j]);
        double ex = b[0] - a[0], ey = b[1] - a[1], px = p[0] - a[0], py = p[1] - a[1];
        double t = (ex * px + ey * py) / fmax(ex * ex + ey * ey, 1e-12);
        t = t < 0 ? 0 : t > 1 ? 1 : t;
        best = fmin(best, hypot(px - t * ex, py - t * ey));
    }
    return best;
}

/* MediaPipe's eye contours as polygons (as test_face_mesh_478). */
static void check_irises_in_eyes(const omma_face *f)
{
    static const int contours[2][16] = {
        {33, 7, 163, 144, 145, 153, 154, 155, 133, 173, 157, 158, 159, 160, 161, 246},
        {263, 249, 390, 373, 374, 380, 381, 382, 362, 398, 384, 385, 386, 387, 388, 466}};
    for (int e = 0; e < 2; e++)
        for (int k = 0; k < VIS_IRIS_POINTS; k++) {
            const float *p = f->irises[5 * e + k];
            double d = edge_distance(f, contours[e], 16, p);
            int in = inside(f, contours[e], 16, p) || ((k == 2 || k == 4) && d <= 1.0);
            if (!in)
                fprintf(stderr, "  iris point %d (%.1f, %.1f) outside its eye, %.2f px away\n",
                        OMMA_FACE_LANDMARKS + 5 * e + k, p[0], p[1], d);
            CHECK(in);
        }
}

static void one_photo(omma_precision prec, float tol)
{
    omma_face_pipeline *gpu = make(OMMA_BACKEND_CUDA, prec, 1, 1);
    omma_face_pipeline *cpu = make(OMMA_BACKEND_CPU, OMMA_PRECISION_FP32, 0, 1);
    omma_face *g = calloc(MAX_FACES, sizeof *g), *c = calloc(MAX_FACES, sizeof *c);
    REQUIRE(g && c);
    for (int i = 0; i < 2; i++) {
        omma_frame f = io_image_frame(&photos[i]);
        int ng = 0, nc = 0;
        REQUIRE_OK(omma_face_pipeline_process(gpu, i, &f, g, MAX_FACES, &ng));
        REQUIRE_OK(omma_face_pipeline_process(cpu, i, &f, c, MAX_FACES, &nc));
        CHECK(ng == 1 && nc == 1);
        if (ng != 1 || nc != 1) {
            fprintf(stderr, "%s: GPU %d faces, CPU %d\n", photo_names[i], ng, nc);
            continue;
        }
        compare_face(g, c, tol, photo_names[i]);
        check_iris_depth(g);
        if (i == 0)
            check_irises_in_eyes(g);
    }
    free(g);
    free(c);
    omma_face_pipeline_destroy(gpu);
    omma_face_pipeline_destroy(cpu);
}

static void test_photos_fp16(void)
{
    one_photo(OMMA_PRECISION_FP16, 1.5f);
}

static void test_photos_fp32(void)
{
    one_photo(OMMA_PRECISION_FP32, 0.5f);
}

static uint8_t *canvases[STEPS][CAMERAS];

/* Camera c at step s: photo c % 2 at the camera's offset, moving 7 px a
 * step. */
static omma_frame frame_of(int s, int c)
{
    uint8_t *rgb = canvases[s][c];
    const io_image *ph = &photos[c % 2];
    if (!rgb) {
        rgb = malloc((size_t)W * H * 3);
        if (!rgb)
            abort();
        memset(rgb, 90, (size_t)W * H * 3);
        int ox = 10 + 20 * (c / 2) + 7 * s, oy = 5 + 3 * c;
        for (int y = 0; y < ph->height && y + oy < H; y++) {
            int n = ph->width < W - ox ? ph->width : W - ox;
            memcpy(rgb + ((size_t)(y + oy) * W + (size_t)ox) * 3,
                   ph->rgb + (size_t)y * (size_t)ph->width * 3, (size_t)n * 3);
        }
        canvases[s][c] = rgb;
    }
    omma_frame f = {W, H, OMMA_PIXEL_RGB, {rgb, NULL, NULL}, {W * 3, 0, 0}, OMMA_MEMORY_HOST};
    return f;
}

static void run_batches(omma_face_pipeline *p, omma_face *out, int *counts)
{
    int cams[CAMERAS] = {7, 2, 30, 11};
    for (int s = 0; s < STEPS; s++) {
        omma_frame frames[CAMERAS];
        for (int c = 0; c < CAMERAS; c++)
            frames[c] = frame_of(s, c);
        REQUIRE_OK(omma_face_pipeline_process_batch(
            p, CAMERAS, cams, frames, out + (size_t)s * CAMERAS * MAX_FACES, counts + s * CAMERAS));
    }
}

static void test_batch_graphs_and_cpu(void)
{
    size_t n = (size_t)STEPS * CAMERAS * MAX_FACES;
    omma_face *eager = calloc(n, sizeof *eager), *graphs = calloc(n, sizeof *graphs);
    omma_face *c = calloc(MAX_FACES, sizeof *c);
    int ce[STEPS * CAMERAS], cg[STEPS * CAMERAS];
    REQUIRE(eager && graphs && c);
    omma_face_pipeline *pe = make(OMMA_BACKEND_CUDA, OMMA_PRECISION_FP16, 0, CAMERAS);
    omma_face_pipeline *pg = make(OMMA_BACKEND_CUDA, OMMA_PRECISION_FP16, 1, CAMERAS);
    omma_face_pipeline *cpu = make(OMMA_BACKEND_CPU, OMMA_PRECISION_FP32, 0, 1);
    run_batches(pe, eager, ce);
    run_batches(pg, graphs, cg);
    int cams[CAMERAS] = {7, 2, 30, 11}, faces = 0;
    for (int s = 0; s < STEPS; s++)
        for (int k = 0; k < CAMERAS; k++) {
            int i = s * CAMERAS + k;
            const omma_face *fe = eager + (size_t)i * MAX_FACES,
                            *fg = graphs + (size_t)i * MAX_FACES;
            CHECK(ce[i] == cg[i]);
            CHECK(memcmp(fe, fg, (size_t)ce[i] * sizeof *fe) == 0);
            omma_frame f = frame_of(s, k);
            int nc = 0;
            REQUIRE_OK(omma_face_pipeline_process(cpu, cams[k], &f, c, MAX_FACES, &nc));
            CHECK(cg[i] == nc);
            char what[64];
            snprintf(what, sizeof what, "step %d camera %d", s, k);
            for (int j = 0; j < nc && j < cg[i]; j++)
                compare_face(&fg[j], &c[j], 1.5f, what);
            faces += cg[i];
        }
    CHECK(faces == STEPS * CAMERAS); /* the one face in every frame */
    omma_face_pipeline_destroy(pe);
    omma_face_pipeline_destroy(pg);
    omma_face_pipeline_destroy(cpu);
    free(eager);
    free(graphs);
    free(c);
}

int main(void)
{
    gpu_test_require_device();
    for (int i = 0; i < 2; i++)
        if (io_image_load(photo_names[i], &photos[i]) != OMMA_OK) {
            fprintf(stderr, "%s: %s (run scripts/fetch-testdata.sh)\n", photo_names[i],
                    omma_last_error());
            return 1;
        }
    RUN(test_photos_fp16);
    RUN(test_photos_fp32);
    RUN(test_batch_graphs_and_cpu);
    fprintf(stderr,
            "worst point error at 192: fp16 %.3f px, fp32 %.3f px; worst head pose angle %.2f "
            "degrees\n",
            worst_fp16, worst_fp32, worst_angle);
    for (int s = 0; s < STEPS; s++)
        for (int c = 0; c < CAMERAS; c++)
            free(canvases[s][c]);
    for (int i = 0; i < 2; i++)
        io_image_free(&photos[i]);
    return testing_finish();
}
