/* The attention mesh (478 points) and the head pose on the CPU backend, on
 * the astronaut photo (one frontal face; box x 181..270, y 84..176):
 * - the 478-point model gives 478 landmarks; each iris centre (468, 473)
 *   and its side edges lie inside the contour of its eye (MediaPipe's eye
 *   contour: lower lid from corner to corner, upper lid back; the model's
 *   "left" iris goes with the contour starting at 33), its top and bottom
 *   edges inside or on the lids (within 1 px: the lids cover them);
 * - its 468 shared points lie close to the 468-point model's;
 * - the head pose of the frontal face is within 10 degrees of 0 on yaw,
 *   pitch and roll, with either model; the matrix's rotation part is a
 *   rotation times the scale and its translation puts the face in front of
 *   the camera (z < 0);
 * - options: mesh_points that the model does not give, head_pose without
 *   metadata, a damaged metadata file. */
#define _POSIX_C_SOURCE 200809L /* mkstemp, fdopen */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/image_file.h"
#include "omma/pipeline.h"
#include "support/face_inputs.h"
#include "testing.h"
#include "vision/face_refine.h"

/* MediaPipe's eye contours as polygons (lower lid 9 points, upper lid 7
 * back to the first corner). */
static const int left_contour[16] = {33,  7,   163, 144, 145, 153, 154, 155,
                                     133, 173, 157, 158, 159, 160, 161, 246};
static const int right_contour[16] = {263, 249, 390, 373, 374, 380, 381, 382,
                                      362, 398, 384, 385, 386, 387, 388, 466};

static const float *point(const omma_face *f, int k)
{
    return k < OMMA_FACE_LANDMARKS ? f->landmarks[k] : f->irises[k - OMMA_FACE_LANDMARKS];
}

/* Even-odd rule. */
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

/* Distance from p to the polygon's edges. */
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

static int one_face(const char *mesh, int points, int head_pose, omma_face *out)
{
    omma_face_pipeline_options o;
    omma_face_pipeline_options_init(&o);
    o.detector_model = FACE_MODEL_SHORT;
    o.mesh_model = mesh;
    o.mesh_points = points;
    o.head_pose = head_pose;
    o.geometry_metadata = FACE_GEOMETRY;
    omma_face_pipeline *p = NULL;
    io_image img;
    if (io_image_load(FACE_PHOTO, &img) != OMMA_OK) {
        fprintf(stderr, "%s: %s\n", FACE_PHOTO, omma_last_error());
        return 0;
    }
    omma_status st = omma_face_pipeline_create(&o, &p);
    int n = 0;
    if (st == OMMA_OK) {
        omma_frame f = io_image_frame(&img);
        omma_face *faces = malloc(4 * sizeof *faces);
        st = faces ? omma_face_pipeline_process(p, 0, &f, faces, 4, &n) : OMMA_ERR_OUT_OF_MEMORY;
        if (st == OMMA_OK && n == 1)
            *out = faces[0];
        free(faces);
    }
    if (st != OMMA_OK)
        fprintf(stderr, "%s: %s\n", mesh, omma_last_error());
    omma_face_pipeline_destroy(p);
    io_image_free(&img);
    return st == OMMA_OK && n == 1;
}

static void check_frontal(const char *what, const omma_face *f)
{
    fprintf(stderr, "%s: head pose yaw %.2f pitch %.2f roll %.2f, translation (%.1f, %.1f, %.1f)\n",
            what, f->yaw, f->pitch, f->roll, f->head_pose[3], f->head_pose[7], f->head_pose[11]);
    CHECK(f->has_head_pose);
    CHECK(fabsf(f->yaw) <= 10.0f && fabsf(f->pitch) <= 10.0f && fabsf(f->roll) <= 10.0f);
    /* upper 3x3 = s R: columns of one length s, orthogonal */
    const float *m = f->head_pose;
    double len[3], dot01 = 0;
    for (int c = 0; c < 3; c++)
        len[c] = sqrt(m[c] * m[c] + m[4 + c] * m[4 + c] + m[8 + c] * m[8 + c]);
    dot01 = m[0] * m[1] + m[4] * m[5] + m[8] * m[9];
    CHECK(fabs(len[1] / len[0] - 1) < 1e-3 && fabs(len[2] / len[0] - 1) < 1e-3);
    CHECK(fabs(dot01) < 1e-3 * len[0] * len[0]);
    CHECK(m[11] < 0 && m[12] == 0 && m[13] == 0 && m[14] == 0 && m[15] == 1);
}

static void test_irises_and_pose(void)
{
    omma_face *f468 = malloc(sizeof *f468), *f478 = malloc(sizeof *f478);
    REQUIRE(f468 && f478);
    int ok468 = one_face(FACE_MODEL_MESH, OMMA_FACE_LANDMARKS, 1, f468);
    int ok478 = one_face(FACE_MODEL_MESH_478, OMMA_FACE_LANDMARKS_WITH_IRISES, 1, f478);
    CHECK(ok468 && ok478);
    if (ok468 && ok478) {
        CHECK(f468->n_landmarks == OMMA_FACE_LANDMARKS);
        CHECK(f478->n_landmarks == OMMA_FACE_LANDMARKS_WITH_IRISES);
        for (int e = 0; e < 2; e++) {
            const int *poly = e ? right_contour : left_contour;
            int first = OMMA_FACE_LANDMARKS + 5 * e;
            for (int k = 0; k < 5; k++) {
                const float *p = point(f478, first + k);
                /* the top and bottom edges (k 2, 4) lie on the lids, which
                 * cover the iris's top and bottom: inside, or within 1 px
                 * of the contour (about 1% of the face's width) */
                double d = edge_distance(f478, poly, 16, p);
                int in = inside(f478, poly, 16, p) || ((k == 2 || k == 4) && d <= 1.0);
                if (!in || testing_case_failed)
                    fprintf(stderr,
                            "  iris point %d (%.1f, %.1f): %s its eye, %.2f px from the "
                            "contour\n",
                            first + k, p[0], p[1], inside(f478, poly, 16, p) ? "inside" : "outside",
                            d);
                CHECK(in);
            }
            const float *c = point(f478, first);
            fprintf(stderr, "iris %d centre (%.1f, %.1f), ring (%.1f..%.1f, %.1f..%.1f)\n", first,
                    c[0], c[1], point(f478, first + 3)[0], point(f478, first + 1)[0],
                    point(f478, first + 2)[1], point(f478, first + 4)[1]);
        }
        /* the shared points: within a few pixels of the 468-point model's
         * on a face about 90 px wide */
        double sum = 0, worst = 0;
        for (int k = 0; k < OMMA_FACE_LANDMARKS; k++) {
            double d = hypot(f478->landmarks[k][0] - f468->landmarks[k][0],
                             f478->landmarks[k][1] - f468->landmarks[k][1]);
            sum += d;
            worst = fmax(worst, d);
        }
        fprintf(stderr, "468 shared points: mean distance %.2f px, worst %.2f px\n",
                sum / OMMA_FACE_LANDMARKS, worst);
        CHECK(sum / OMMA_FACE_LANDMARKS <= 2.5 && worst <= 8.0);
        check_frontal("468", f468);
        check_frontal("478", f478);
    }
    free(f468);
    free(f478);
}

static void test_options(void)
{
    omma_face_pipeline_options o;
    omma_face_pipeline_options_init(&o);
    o.detector_model = FACE_MODEL_SHORT;
    o.mesh_model = FACE_MODEL_MESH;
    omma_face_pipeline *p = NULL;
    o.mesh_points = OMMA_FACE_LANDMARKS_WITH_IRISES;
    CHECK_FAILS(omma_face_pipeline_create(&o, &p), OMMA_ERR_UNSUPPORTED,
                "a 468-point face mesh, 478 points asked for");
    CHECK(p == NULL);
    o.mesh_points = 470;
    CHECK_FAILS(omma_face_pipeline_create(&o, &p), OMMA_ERR_INVALID_ARG, "mesh_points 470");
    o.mesh_points = 0;
    o.head_pose = 1;
    CHECK_FAILS(omma_face_pipeline_create(&o, &p), OMMA_ERR_INVALID_ARG,
                "head_pose needs geometry_metadata");
    /* the metadata cut short: a length past the end */
    FILE *in = fopen(FACE_GEOMETRY, "rb");
    REQUIRE(in);
    unsigned char head[100];
    size_t got = fread(head, 1, sizeof head, in);
    fclose(in);
    REQUIRE(got == sizeof head);
    char path[] = "/tmp/omma-geometry-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    FILE *out = fdopen(fd, "wb");
    REQUIRE(out);
    CHECK(fwrite(head, 1, sizeof head, out) == sizeof head);
    fclose(out);
    o.geometry_metadata = path;
    CHECK_FAILS(omma_face_pipeline_create(&o, &p), OMMA_ERR_FORMAT,
                "face geometry metadata: length past the end of its message at byte");
    CHECK(p == NULL);
    remove(path);
}

int main(void)
{
    RUN(test_options);
    RUN(test_irises_and_pose);
    return testing_finish();
}
