/* MediaPipe's face geometry: the metadata reader on the real file (facts
 * read independently with a Python protobuf decoder: 468 vertices, vertex 0
 * (0, -3.406404, 5.979507), vertex 467 (4.53, 2.91, 3.339685), 33 basis
 * landmarks, the first 4 of weight 0.0709099, the last 425 of weight
 * 0.0472523) and on damaged copies (every truncation, a wrong vertex type,
 * a basis landmark past 468, a negative weight, a detection-pipeline
 * input); the head pose of the canonical face itself put in front of the
 * camera model at known angles (yaw, pitch, roll recovered within 1.5
 * degrees, each sign as docs/OUTPUT.md says), and off the camera's axis
 * looking into it (0, 0, 0: angles relative to the line of sight). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "support/face_inputs.h"
#include "testing.h"
#include "vision/geometry_metadata.h"
#include "vision/head_pose.h"

static const double pi = 3.14159265358979323846;

static unsigned char *load(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    unsigned char *b = malloc(1 << 20);
    *n = b ? fread(b, 1, 1 << 20, f) : 0;
    fclose(f);
    return b;
}

static void test_metadata(void)
{
    vis_geometry *g = malloc(sizeof *g);
    REQUIRE(g);
    REQUIRE_OK(vis_geometry_load(FACE_GEOMETRY, g));
    CHECK(g->n_basis == 33);
    CHECK(g->canonical[0][0] == 0.0f && fabsf(g->canonical[0][1] + 3.406404f) < 1e-5f &&
          fabsf(g->canonical[0][2] - 5.979507f) < 1e-5f);
    CHECK(fabsf(g->canonical[467][0] - 4.53f) < 1e-5f &&
          fabsf(g->canonical[467][2] - 3.339685f) < 1e-5f);
    CHECK(fabsf(g->weight[4] - 0.0709099f) < 1e-6f && fabsf(g->weight[425] - 0.0472523f) < 1e-6f);
    CHECK(g->weight[0] == 0.0f);

    size_t n = 0;
    unsigned char *b = load(FACE_GEOMETRY, &n);
    REQUIRE(b && n > 1000);
    /* every cut inside the mesh (bytes 4 .. 4 + 19050, its length
     * ea 94 01) is refused with a message; later cuts may end on a whole
     * basis entry and parse; none crashes */
    REQUIRE(b[0] == 0x0a && b[1] == 0xea && b[2] == 0x94 && b[3] == 0x01);
    int cuts = 0, refused = 0;
    for (size_t cut = 0; cut < n; cut += cut < 64 ? 1 : 97) {
        omma_status st = vis_geometry_parse(b, cut, "cut", g);
        if (cut < 4 + 19050) {
            cuts++;
            refused += st != OMMA_OK;
        }
    }
    CHECK(cuts > 200 && refused == cuts);
    /* byte 4 is the mesh's vertex_type (08 00): 1 is not VERTEX_PT */
    CHECK(b[3] == 0x01 && b[4] == 0x08 && b[5] == 0x00);
    b[5] = 1;
    CHECK_FAILS(vis_geometry_parse(b, n, "m.binarypb", g), OMMA_ERR_FORMAT,
                "m.binarypb: face geometry metadata: vertex_type is not VERTEX_PT at byte 4");
    b[5] = 0;
    REQUIRE_OK(vis_geometry_parse(b, n, "m.binarypb", g));
    /* the appended fields go after the mesh: a basis entry for landmark 468,
     * then one of negative weight, then a detection-pipeline input */
    unsigned char *c = malloc(n + 16);
    REQUIRE(c);
    memcpy(c, b, n);
    const unsigned char past[] = {0x12, 0x08, 0x08, 0xd4, 0x03, 0x15, 0x00, 0x00, 0x80, 0x3f};
    memcpy(c + n, past, sizeof past);
    CHECK_FAILS(vis_geometry_parse(c, n + sizeof past, "m", g), OMMA_ERR_FORMAT,
                "a basis landmark_id past the 468 landmarks");
    const unsigned char neg[] = {0x12, 0x07, 0x08, 0x05, 0x15, 0x00, 0x00, 0x80, 0xbf};
    memcpy(c + n, neg, sizeof neg);
    CHECK_FAILS(vis_geometry_parse(c, n + sizeof neg, "m", g), OMMA_ERR_FORMAT,
                "a basis weight negative or not finite");
    const unsigned char det[] = {0x18, 0x02};
    memcpy(c + n, det, sizeof det);
    CHECK_FAILS(vis_geometry_parse(c, n + sizeof det, "m", g), OMMA_ERR_UNSUPPORTED,
                "input_source 2");
    free(c);
    free(b);
    free(g);
}

/* R = Ry(yaw) Rx(pitch) Rz(roll) (radians), row-major. */
static void rotation(double yaw, double pitch, double roll, double r[3][3])
{
    double cy = cos(yaw), sy = sin(yaw), cp = cos(pitch), sp = sin(pitch), cr = cos(roll),
           sr = sin(roll);
    double ry[3][3] = {{cy, 0, sy}, {0, 1, 0}, {-sy, 0, cy}};
    double rx[3][3] = {{1, 0, 0}, {0, cp, -sp}, {0, sp, cp}};
    double rz[3][3] = {{cr, -sr, 0}, {sr, cr, 0}, {0, 0, 1}};
    double t[3][3];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            t[i][j] = 0;
            for (int k = 0; k < 3; k++)
                t[i][j] += ry[i][k] * rx[k][j];
        }
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            r[i][j] = 0;
            for (int k = 0; k < 3; k++)
                r[i][j] += t[i][k] * rz[k][j];
        }
}

/* The canonical face turned by R and put at (tx, ty, -50) cm before the
 * camera model, seen in a 640x480 frame: pixels, and z on x's scale. */
static void render(const vis_geometry *g, double r[3][3], double tx, double ty, float *lm)
{
    const int W = 640, H = 480;
    double hn = 2 * tan(0.5 * 63.0 * pi / 180), wn = W * hn / H;
    double p[OMMA_FACE_LANDMARKS][3], mz = 0;
    for (int i = 0; i < OMMA_FACE_LANDMARKS; i++) {
        for (int a = 0; a < 3; a++)
            p[i][a] = r[a][0] * g->canonical[i][0] + r[a][1] * g->canonical[i][1] +
                      r[a][2] * g->canonical[i][2];
        p[i][0] += tx, p[i][1] += ty, p[i][2] -= 50;
        mz += p[i][2];
    }
    mz /= OMMA_FACE_LANDMARKS;
    for (int i = 0; i < OMMA_FACE_LANDMARKS; i++) {
        double xn = p[i][0] / -p[i][2], yn = p[i][1] / -p[i][2]; /* near plane 1 */
        lm[3 * i] = (float)((xn + wn / 2) / wn * W);
        lm[3 * i + 1] = (float)((1 - (yn + hn / 2) / hn) * H);
        /* nearer = smaller z, on x's pixel scale at the face's depth */
        lm[3 * i + 2] = (float)(-(p[i][2] - mz) / -mz / wn * W);
    }
}

static void test_known_poses(void)
{
    vis_geometry *g = malloc(sizeof *g);
    float *lm = malloc(OMMA_FACE_LANDMARKS * 3 * sizeof *lm);
    REQUIRE(g && lm);
    REQUIRE_OK(vis_geometry_load(FACE_GEOMETRY, g));
    static const double poses[][3] = {{0, 0, 0},  {20, 0, 0},   {-25, 0, 0},
                                      {0, 15, 0}, {0, -12, 0},  {0, 0, 30},
                                      {0, 0, -8}, {18, -9, 12}, {-10, 20, -25}};
    for (size_t k = 0; k < sizeof poses / sizeof poses[0]; k++) {
        double r[3][3];
        rotation(poses[k][0] * pi / 180, poses[k][1] * pi / 180, poses[k][2] * pi / 180, r);
        render(g, r, 0, 0, lm);
        float m[16], yaw, pitch, roll;
        omma_status st = vis_head_pose(g, lm, 640, 480, m, &yaw, &pitch, &roll);
        CHECK(st == OMMA_OK);
        fprintf(
            stderr,
            "pose %+.0f %+.0f %+.0f: got yaw %+.2f pitch %+.2f roll %+.2f, t (%.1f, %.1f, %.1f)\n",
            poses[k][0], poses[k][1], poses[k][2], yaw, pitch, roll, m[3], m[7], m[11]);
        CHECK(fabs(yaw - poses[k][0]) <= 1.5 && fabs(pitch - poses[k][1]) <= 1.5 &&
              fabs(roll - poses[k][2]) <= 1.5);
        CHECK(m[11] < -40 && m[11] > -60);
    }
    /* off the axis, looking into the camera: the face turned by V (the
     * line of sight to (12, 9, -50): yaw atan2(-12, 50), pitch asin of the
     * ray's y) has 0, 0, 0 */
    {
        double len = sqrt(12.0 * 12 + 9 * 9 + 50 * 50);
        double r[3][3];
        rotation(atan2(-12.0, 50.0), asin(9.0 / len), 0, r);
        render(g, r, 12, 9, lm);
        float m[16], yaw, pitch, roll;
        CHECK(vis_head_pose(g, lm, 640, 480, m, &yaw, &pitch, &roll) == OMMA_OK);
        fprintf(stderr,
                "looking into the camera from (12, 9, -50): yaw %+.2f pitch %+.2f roll %+.2f\n",
                yaw, pitch, roll);
        CHECK(fabsf(yaw) <= 1.5f && fabsf(pitch) <= 1.5f && fabsf(roll) <= 1.5f);
    }
    /* degenerate: every landmark at one pixel */
    for (int i = 0; i < OMMA_FACE_LANDMARKS * 3; i++)
        lm[i] = 100;
    float m[16], y, p, r;
    CHECK_FAILS(vis_head_pose(g, lm, 640, 480, m, &y, &p, &r), OMMA_ERR_INVALID_ARG, "too compact");
    CHECK_FAILS(vis_head_pose(g, lm, 0, 480, m, &y, &p, &r), OMMA_ERR_INVALID_ARG, "frame 0x480");
    free(g);
    free(lm);
}

int main(void)
{
    RUN(test_metadata);
    RUN(test_known_poses);
    return testing_finish();
}
