/* Scalar face measures from FaceMesh landmarks (face_measures.h). */
#include "vision/face_measures.h"

#include <math.h>

typedef struct v3 {
    double x, y, z;
} v3;

static v3 pt(const float l[OMMA_FACE_LANDMARKS][3], int i)
{
    return (v3){l[i][0], l[i][1], l[i][2]};
}

static v3 sub(v3 a, v3 b)
{
    return (v3){a.x - b.x, a.y - b.y, a.z - b.z};
}

static v3 cross(v3 a, v3 b)
{
    return (v3){a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x};
}

static double norm(v3 a)
{
    return sqrt(a.x * a.x + a.y * a.y + a.z * a.z);
}

static v3 unit(v3 a)
{
    double n = norm(a);
    return n > 0 ? (v3){a.x / n, a.y / n, a.z / n} : (v3){NAN, NAN, NAN};
}

/* 2-D distance between landmarks i and j in the image. */
static double dist2(const float l[OMMA_FACE_LANDMARKS][3], int i, int j)
{
    return hypot((double)l[i][0] - l[j][0], (double)l[i][1] - l[j][1]);
}

static float ratio(double a, double b)
{
    return b > 0 ? (float)(a / b) : NAN;
}

void vis_face_measures(const float l[OMMA_FACE_LANDMARKS][3], float *out)
{
    const double deg = 57.295779513082320876; /* 180 / pi */
    v3 x = unit(sub(pt(l, 263), pt(l, 33)));
    v3 up = sub(pt(l, 10), pt(l, 152));
    v3 z = unit(cross(x, up));
    out[VIS_MEASURE_YAW] = (float)(atan2(z.x, -z.z) * deg);
    out[VIS_MEASURE_PITCH] = (float)(atan2(-z.y, hypot(z.x, z.z)) * deg);
    out[VIS_MEASURE_ROLL] = (float)(atan2(x.y, x.x) * deg);
    out[VIS_MEASURE_RIGHT_EYE_OPEN] = ratio(dist2(l, 159, 145), dist2(l, 33, 133));
    out[VIS_MEASURE_LEFT_EYE_OPEN] = ratio(dist2(l, 386, 374), dist2(l, 263, 362));
    out[VIS_MEASURE_MOUTH_OPEN] = ratio(dist2(l, 13, 14), dist2(l, 61, 291));
    out[VIS_MEASURE_MOUTH_WIDTH] = ratio(dist2(l, 61, 291), dist2(l, 33, 263));
}
