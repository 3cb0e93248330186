/* Face-shape signatures and their Procrustes distance (face_signature.h). */
#include "vision/face_signature.h"

#include <math.h>
#include <string.h>

#include "vision/sym_eigen.h"

/* MediaPipe FaceMesh indices: the face oval (36), the nose (10), the eye
 * corners (4), the brows (10). */
static const int points[VIS_SIGNATURE_POINTS] = {
    10,  338, 297, 332, 284, 251, 389, 356, 454, 323, 361, 288, 397, 365, 379,
    378, 400, 377, 152, 148, 176, 149, 150, 136, 172, 58,  132, 93,  234, 127,
    162, 21,  54,  103, 67,  109, 1,   4,   5,   6,   168, 197, 195, 2,   98,
    327, 33,  133, 263, 362, 70,  63,  105, 66,  107, 336, 296, 334, 293, 300};

/* Centres and scales s to unit size; 0 when degenerate. */
static int normalize(vis_signature *s)
{
    double m[3] = {0, 0, 0};
    for (int i = 0; i < VIS_SIGNATURE_POINTS; i++)
        for (int k = 0; k < 3; k++)
            m[k] += s->p[i][k];
    for (int k = 0; k < 3; k++)
        m[k] /= VIS_SIGNATURE_POINTS;
    double ss = 0;
    for (int i = 0; i < VIS_SIGNATURE_POINTS; i++)
        for (int k = 0; k < 3; k++) {
            double v = s->p[i][k] - m[k];
            ss += v * v;
        }
    if (!(ss > 0) || !isfinite(ss))
        return 0;
    double inv = 1.0 / sqrt(ss);
    for (int i = 0; i < VIS_SIGNATURE_POINTS; i++)
        for (int k = 0; k < 3; k++)
            s->p[i][k] = (float)((s->p[i][k] - m[k]) * inv);
    return 1;
}

int vis_signature_make(const float l[OMMA_FACE_LANDMARKS][3], vis_signature *out)
{
    for (int i = 0; i < VIS_SIGNATURE_POINTS; i++)
        memcpy(out->p[i], l[points[i]], sizeof out->p[i]);
    return normalize(out);
}

/* The largest eigenvalue of the symmetric 4x4 n and its eigenvector
 * (Jacobi rotations). */
static double top_eigen(double n[4][4], double v[4])
{
    double d[4], e[4][4];
    vis_sym_eigen(4, &n[0][0], 1e-24, d, &e[0][0]);
    int best = 0;
    for (int i = 1; i < 4; i++)
        if (d[i] > d[best])
            best = i;
    for (int k = 0; k < 4; k++)
        v[k] = e[k][best];
    return d[best];
}

/* Horn: the rotation R (row-major) maximizing trace(R applied to b, dot a);
 * returns that maximum. */
static double align(const vis_signature *a, const vis_signature *b, double r[3][3])
{
    double s[3][3] = {{0}};
    for (int i = 0; i < VIS_SIGNATURE_POINTS; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 3; k++)
                s[j][k] += (double)b->p[i][j] * a->p[i][k]; /* b onto a */
    double n[4][4] = {
        {s[0][0] + s[1][1] + s[2][2], s[1][2] - s[2][1], s[2][0] - s[0][2], s[0][1] - s[1][0]},
        {s[1][2] - s[2][1], s[0][0] - s[1][1] - s[2][2], s[0][1] + s[1][0], s[2][0] + s[0][2]},
        {s[2][0] - s[0][2], s[0][1] + s[1][0], -s[0][0] + s[1][1] - s[2][2], s[1][2] + s[2][1]},
        {s[0][1] - s[1][0], s[2][0] + s[0][2], s[1][2] + s[2][1], -s[0][0] - s[1][1] + s[2][2]}};
    double q[4];
    double best = top_eigen(n, q);
    double w = q[0], x = q[1], y = q[2], z = q[3];
    r[0][0] = w * w + x * x - y * y - z * z;
    r[0][1] = 2 * (x * y - w * z);
    r[0][2] = 2 * (x * z + w * y);
    r[1][0] = 2 * (x * y + w * z);
    r[1][1] = w * w - x * x + y * y - z * z;
    r[1][2] = 2 * (y * z - w * x);
    r[2][0] = 2 * (x * z - w * y);
    r[2][1] = 2 * (y * z + w * x);
    r[2][2] = w * w - x * x - y * y + z * z;
    return best;
}

double vis_signature_distance(const vis_signature *a, const vis_signature *b)
{
    double r[3][3];
    double t = align(a, b, r);
    double d2 = 2.0 - 2.0 * t;
    return d2 > 0 ? sqrt(d2) : 0.0;
}

void vis_signature_mean(const vis_signature *s, int n, vis_signature *out)
{
    double acc[VIS_SIGNATURE_POINTS][3] = {{0}};
    for (int k = 0; k < n; k++) {
        double r[3][3];
        align(&s[0], &s[k], r);
        for (int i = 0; i < VIS_SIGNATURE_POINTS; i++)
            for (int j = 0; j < 3; j++)
                acc[i][j] +=
                    r[j][0] * s[k].p[i][0] + r[j][1] * s[k].p[i][1] + r[j][2] * s[k].p[i][2];
    }
    for (int i = 0; i < VIS_SIGNATURE_POINTS; i++)
        for (int j = 0; j < 3; j++)
            out->p[i][j] = (float)(acc[i][j] / n);
    if (!normalize(out))
        *out = s[0];
}
