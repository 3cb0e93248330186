/* Face measures from landmarks (vision/face_measures.h): a synthetic face
 * turned by known angles gives those angles back, the openness ratios do
 * not change with the face's size or an in-plane tilt, and the astronaut
 * photo's face (the CPU pipeline's landmarks) reads as a frontal, upright
 * face with open eyes. */
#include <math.h>

#include "io/image_file.h"
#include "omma/pipeline.h"
#include "testing.h"
#include "vision/face_measures.h"

static float face[OMMA_FACE_LANDMARKS][3];

/* A frontal face centred at (200, 200): eye corners, lids, forehead,
 * chin, mouth corners and inner lips, in frame pixels (y down). */
static void frontal(float l[OMMA_FACE_LANDMARKS][3])
{
    memset(l, 0, sizeof(float) * OMMA_FACE_LANDMARKS * 3);
    const struct {
        int i;
        float x, y;
    } pts[] = {{33, -30, 0},  {133, -10, 0}, {159, -20, -5}, {145, -20, 5}, {263, 30, 0},
               {362, 10, 0},  {386, 20, -4}, {374, 20, 4},   {10, 0, -50},  {152, 0, 50},
               {61, -25, 30}, {291, 25, 30}, {13, 0, 28},    {14, 0, 34}};
    for (size_t k = 0; k < sizeof pts / sizeof pts[0]; k++) {
        l[pts[k].i][0] = pts[k].x;
        l[pts[k].i][1] = pts[k].y;
    }
}

/* Rotates every point by m (row-major 3x3) about the origin, then moves
 * the face to (200, 200). */
static void place(float l[OMMA_FACE_LANDMARKS][3], const double m[9])
{
    for (int i = 0; i < OMMA_FACE_LANDMARKS; i++) {
        double x = l[i][0], y = l[i][1], z = l[i][2];
        l[i][0] = (float)(m[0] * x + m[1] * y + m[2] * z + 200);
        l[i][1] = (float)(m[3] * x + m[4] * y + m[5] * z + 200);
        l[i][2] = (float)(m[6] * x + m[7] * y + m[8] * z);
    }
}

static void measure_rotated(char axis, double deg, float *m)
{
    double a = deg * 3.14159265358979323846 / 180, c = cos(a), s = sin(a);
    double ry[9] = {c, 0, -s, 0, 1, 0, s, 0, c}; /* normal toward +x: yaw */
    double rx[9] = {1, 0, 0, 0, c, s, 0, -s, c}; /* normal toward -y: pitch */
    double rz[9] = {c, -s, 0, s, c, 0, 0, 0, 1}; /* clockwise in the image: roll */
    frontal(face);
    place(face, axis == 'y' ? ry : axis == 'p' ? rx : rz);
    vis_face_measures(face, m);
}

static void test_known_angles(void)
{
    float m[VIS_MEASURE_COUNT];
    measure_rotated('r', 0, m);
    CHECK_NEAR(m[VIS_MEASURE_YAW], 0, 1e-3);
    CHECK_NEAR(m[VIS_MEASURE_PITCH], 0, 1e-3);
    CHECK_NEAR(m[VIS_MEASURE_ROLL], 0, 1e-3);
    CHECK_NEAR(m[VIS_MEASURE_RIGHT_EYE_OPEN], 0.5, 1e-5);
    CHECK_NEAR(m[VIS_MEASURE_LEFT_EYE_OPEN], 0.4, 1e-5);
    CHECK_NEAR(m[VIS_MEASURE_MOUTH_OPEN], 6.0 / 50.0, 1e-5);
    CHECK_NEAR(m[VIS_MEASURE_MOUTH_WIDTH], 50.0 / 60.0, 1e-5);
    const double angles[] = {-40, -12.5, 7, 30};
    for (size_t i = 0; i < sizeof angles / sizeof angles[0]; i++) {
        double a = angles[i];
        measure_rotated('y', a, m);
        CHECK_NEAR(m[VIS_MEASURE_YAW], a, 1e-2);
        CHECK_NEAR(m[VIS_MEASURE_PITCH], 0, 1e-2);
        CHECK_NEAR(m[VIS_MEASURE_ROLL], 0, 1e-2);
        measure_rotated('p', a, m);
        CHECK_NEAR(m[VIS_MEASURE_PITCH], a, 1e-2);
        CHECK_NEAR(m[VIS_MEASURE_YAW], 0, 1e-2);
        CHECK_NEAR(m[VIS_MEASURE_ROLL], 0, 1e-2);
        measure_rotated('r', a, m);
        CHECK_NEAR(m[VIS_MEASURE_ROLL], a, 1e-2);
        CHECK_NEAR(m[VIS_MEASURE_YAW], 0, 1e-2);
        /* An in-plane tilt keeps the 2-D ratios. */
        CHECK_NEAR(m[VIS_MEASURE_RIGHT_EYE_OPEN], 0.5, 1e-4);
        CHECK_NEAR(m[VIS_MEASURE_MOUTH_WIDTH], 50.0 / 60.0, 1e-4);
    }
    /* Twice the size: the same ratios. */
    frontal(face);
    double twice[9] = {2, 0, 0, 0, 2, 0, 0, 0, 2};
    place(face, twice);
    vis_face_measures(face, m);
    CHECK_NEAR(m[VIS_MEASURE_LEFT_EYE_OPEN], 0.4, 1e-5);
    CHECK_NEAR(m[VIS_MEASURE_MOUTH_OPEN], 6.0 / 50.0, 1e-5);
    /* Degenerate landmarks (all at one point): NaN, not a crash. */
    memset(face, 0, sizeof face);
    vis_face_measures(face, m);
    CHECK(isnan(m[VIS_MEASURE_YAW]) && isnan(m[VIS_MEASURE_RIGHT_EYE_OPEN]));
}

static void test_astronaut(void)
{
    omma_face_pipeline_options o;
    omma_face_pipeline_options_init(&o);
    o.backend = OMMA_BACKEND_CPU;
    o.detector_model = OMMA_MODELS_DIR "/face_detection_short_range.tflite";
    o.mesh_model = OMMA_MODELS_DIR "/face_landmark.tflite";
    io_image img;
    if (io_image_load(OMMA_TESTDATA_DIR "/astronaut.png", &img) != OMMA_OK)
        SKIP_TEST("testdata/astronaut.png missing (scripts/fetch-testdata.sh)");
    omma_face_pipeline *p = NULL;
    omma_status st = omma_face_pipeline_create(&o, &p);
    if (st != OMMA_OK) {
        io_image_free(&img);
        SKIP_TEST("models missing (scripts/fetch-models.sh)");
    }
    omma_frame f = io_image_frame(&img);
    static omma_face faces[4];
    int n = 0;
    CHECK(omma_face_pipeline_process(p, 0, &f, faces, 4, &n) == OMMA_OK && n == 1);
    if (n == 1) {
        float m[VIS_MEASURE_COUNT];
        vis_face_measures(faces[0].landmarks, m);
        fprintf(stderr,
                "astronaut: yaw %.1f pitch %.1f roll %.1f eyes %.3f %.3f mouth open %.3f width "
                "%.3f\n",
                m[0], m[1], m[2], m[3], m[4], m[5], m[6]);
        /* A face looking at the camera, upright, eyes open, smiling. */
        CHECK(fabsf(m[VIS_MEASURE_YAW]) < 20 && fabsf(m[VIS_MEASURE_PITCH]) < 25);
        CHECK(fabsf(m[VIS_MEASURE_ROLL]) < 10);
        CHECK(m[VIS_MEASURE_RIGHT_EYE_OPEN] > 0.15f && m[VIS_MEASURE_RIGHT_EYE_OPEN] < 0.6f);
        CHECK(m[VIS_MEASURE_LEFT_EYE_OPEN] > 0.15f && m[VIS_MEASURE_LEFT_EYE_OPEN] < 0.6f);
        CHECK(m[VIS_MEASURE_MOUTH_WIDTH] > 0.5f && m[VIS_MEASURE_MOUTH_WIDTH] < 1.5f);
    }
    omma_face_pipeline_destroy(p);
    io_image_free(&img);
}

int main(void)
{
    RUN(test_known_angles);
    RUN(test_astronaut);
    return testing_finish();
}
