/* MediaPipe's face geometry for the head pose (head_pose.h), in double
 * precision (MediaPipe's is float: results agree to its rounding). The
 * 3x3 SVD of the Procrustes design matrix comes from the Jacobi
 * eigen-decomposition of its Gram matrix. */
#include "vision/head_pose.h"

#include <math.h>
#include <string.h>

#include "core/error.h"
#include "vision/sym_eigen.h"

#define N OMMA_FACE_LANDMARKS
#define PI 3.14159265358979323846

typedef struct frustum {
    double left, right, bottom, top, near;
} frustum;

static double det3(double m[3][3])
{
    return m[0][0] * (m[1][1] * m[2][2] - m[1][2] * m[2][1]) -
           m[0][1] * (m[1][0] * m[2][2] - m[1][2] * m[2][0]) +
           m[0][2] * (m[1][0] * m[2][1] - m[1][1] * m[2][0]);
}

/* The rotation of the SVD m = U S V^T: U V^T, U's last column negated when
 * det(U) det(V) < 0 (MediaPipe's ComputeOptimalRotation). */
static int optimal_rotation(double m[3][3], double r[3][3])
{
    double norm = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++)
            norm += m[i][j] * m[i][j];
    if (!(sqrt(norm) > 1e-9))
        return 0;
    double g[3][3], d[3], v[3][3], u[3][3];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            g[i][j] = 0;
            for (int k = 0; k < 3; k++)
                g[i][j] += m[k][i] * m[k][j];
        }
    vis_sym_eigen(3, &g[0][0], 0.0, d, &v[0][0]);
    int ord[3] = {0, 1, 2}; /* singular values, largest first */
    for (int i = 0; i < 3; i++)
        for (int j = i + 1; j < 3; j++)
            if (d[ord[j]] > d[ord[i]]) {
                int t = ord[i];
                ord[i] = ord[j];
                ord[j] = t;
            }
    double vs[3][3];
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 3; k++)
            vs[i][k] = v[i][ord[k]];
    for (int k = 0; k < 2; k++) { /* u_k = m v_k / s_k */
        double s = sqrt(d[ord[k]] > 0 ? d[ord[k]] : 0);
        if (!(s > 1e-12))
            return 0;
        for (int i = 0; i < 3; i++) {
            u[i][k] = 0;
            for (int j = 0; j < 3; j++)
                u[i][k] += m[i][j] * vs[j][k];
            u[i][k] /= s;
        }
    }
    /* the third: m v_2 / s_2 where defined, else u_0 x u_1 (either sign
     * is a valid SVD; the determinant rule below fixes the rotation) */
    double s2 = sqrt(d[ord[2]] > 0 ? d[ord[2]] : 0);
    if (s2 > 1e-9 * sqrt(d[ord[0]])) {
        for (int i = 0; i < 3; i++) {
            u[i][2] = 0;
            for (int j = 0; j < 3; j++)
                u[i][2] += m[i][j] * vs[j][2];
            u[i][2] /= s2;
        }
    } else {
        u[0][2] = u[1][0] * u[2][1] - u[2][0] * u[1][1];
        u[1][2] = u[2][0] * u[0][1] - u[0][0] * u[2][1];
        u[2][2] = u[0][0] * u[1][1] - u[1][0] * u[0][1];
    }
    if (det3(u) * det3(vs) < 0)
        for (int i = 0; i < 3; i++)
            u[i][2] = -u[i][2];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            r[i][j] = 0;
            for (int k = 0; k < 3; k++)
                r[i][j] += u[i][k] * vs[j][k];
        }
    return 1;
}

/* Weighted orthogonal Procrustes: t (4x4) with t * source ~ target. */
static int procrustes(const vis_geometry *geo, const double (*target)[3], double t[4][4])
{
    double total = 0, sc[3] = {0, 0, 0};
    for (int i = 0; i < N; i++) {
        total += geo->weight[i];
        for (int k = 0; k < 3; k++)
            sc[k] += geo->weight[i] * geo->canonical[i][k];
    }
    if (!(total > 1e-9))
        return 0;
    for (int k = 0; k < 3; k++)
        sc[k] /= total;
    /* design = sum w target (source - centre)^T */
    double m[3][3] = {{0}}, r[3][3];
    for (int i = 0; i < N; i++) {
        double w = geo->weight[i];
        if (w == 0)
            continue;
        for (int a = 0; a < 3; a++)
            for (int b = 0; b < 3; b++)
                m[a][b] += w * target[i][a] * (geo->canonical[i][b] - sc[b]);
    }
    if (!optimal_rotation(m, r))
        return 0;
    double num = 0, den = 0;
    for (int i = 0; i < N; i++) {
        double w = geo->weight[i];
        if (w == 0)
            continue;
        double c[3], rc[3];
        for (int k = 0; k < 3; k++)
            c[k] = geo->canonical[i][k] - sc[k];
        for (int a = 0; a < 3; a++)
            rc[a] = r[a][0] * c[0] + r[a][1] * c[1] + r[a][2] * c[2];
        for (int k = 0; k < 3; k++) {
            num += w * rc[k] * target[i][k];
            den += w * c[k] * geo->canonical[i][k];
        }
    }
    if (!(den > 1e-9) || !(num / den > 1e-9))
        return 0;
    double s = num / den, tr[3] = {0, 0, 0};
    for (int i = 0; i < N; i++) {
        double w = geo->weight[i];
        for (int a = 0; a < 3; a++) {
            double rs = 0;
            for (int b = 0; b < 3; b++)
                rs += s * r[a][b] * geo->canonical[i][b];
            tr[a] += w * (target[i][a] - rs);
        }
    }
    memset(t, 0, 16 * sizeof(double));
    for (int a = 0; a < 3; a++) {
        for (int b = 0; b < 3; b++)
            t[a][b] = s * r[a][b];
        t[a][3] = tr[a] / total;
    }
    t[3][3] = 1;
    return 1;
}

static double col0_norm(double t[4][4])
{
    return sqrt(t[0][0] * t[0][0] + t[1][0] * t[1][0] + t[2][0] * t[2][0]);
}

static void move_rescale_z(const frustum *f, double offset, double scale, double (*p)[3])
{
    for (int i = 0; i < N; i++)
        p[i][2] = (p[i][2] - offset + f->near) / scale;
}

static void unproject_xy(const frustum *f, double (*p)[3])
{
    for (int i = 0; i < N; i++) {
        p[i][0] = p[i][0] * p[i][2] / f->near;
        p[i][1] = p[i][1] * p[i][2] / f->near;
    }
}

static void flip_z(double (*p)[3])
{
    for (int i = 0; i < N; i++)
        p[i][2] = -p[i][2];
}

omma_status vis_head_pose(const vis_geometry *geo, const float *landmarks, int width, int height,
                          float matrix[16], float *yaw, float *pitch, float *roll)
{
    if (!geo || !landmarks || !matrix || !yaw || !pitch || !roll)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "head pose: NULL argument");
    if (width < 1 || height < 1)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "head pose: frame %dx%d", width, height);
    double h_near = 2 * VIS_CAMERA_NEAR * tan(0.5 * VIS_CAMERA_FOV_DEG * PI / 180);
    double w_near = width * h_near / height;
    frustum f = {-0.5 * w_near, 0.5 * w_near, -0.5 * h_near, 0.5 * h_near, VIS_CAMERA_NEAR};
    double screen[N][3], work[N][3];
    /* normalized (z scaled like x), too compact faces skipped */
    double mx = 0, my = 0, far2 = 0;
    for (int i = 0; i < N; i++) {
        screen[i][0] = landmarks[3 * i] / (double)width;
        screen[i][1] = landmarks[3 * i + 1] / (double)height;
        screen[i][2] = landmarks[3 * i + 2] / (double)width;
        if (!isfinite(screen[i][0]) || !isfinite(screen[i][1]) || !isfinite(screen[i][2]))
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "head pose: landmark %d is not finite", i);
        mx += screen[i][0];
        my += screen[i][1];
    }
    mx /= N, my /= N;
    for (int i = 0; i < N; i++) {
        double dx = screen[i][0] - mx, dy = screen[i][1] - my;
        far2 = fmax(far2, dx * dx + dy * dy);
    }
    if (sqrt(far2) <= 1e-3)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "head pose: the landmarks are too compact");
    /* ProjectXY: y from the top-left origin up, onto the near plane */
    double depth = 0;
    for (int i = 0; i < N; i++) {
        screen[i][1] = 1 - screen[i][1];
        screen[i][0] = screen[i][0] * (f.right - f.left) + f.left;
        screen[i][1] = screen[i][1] * (f.top - f.bottom) + f.bottom;
        screen[i][2] = screen[i][2] * (f.right - f.left);
        depth += screen[i][2];
    }
    depth /= N;
    double t[4][4];
    memcpy(work, screen, sizeof work);
    flip_z(work);
    if (!procrustes(geo, (const double(*)[3])work, t))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "head pose: no first-pass solution");
    double s1 = col0_norm(t);
    memcpy(work, screen, sizeof work);
    move_rescale_z(&f, depth, s1, work);
    unproject_xy(&f, work);
    flip_z(work);
    if (!procrustes(geo, (const double(*)[3])work, t))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "head pose: no second-pass solution");
    double s = s1 * col0_norm(t);
    move_rescale_z(&f, depth, s, screen);
    unproject_xy(&f, screen);
    flip_z(screen);
    if (!procrustes(geo, (const double(*)[3])screen, t))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "head pose: no solution");
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            matrix[4 * a + b] = (float)t[a][b];
    /* the rotation relative to the line of sight: V takes the camera's
     * -z onto the ray to the face's origin (V = Ry(al) Rx(be)); R' = V^T R
     * is the identity for a face looking into the camera anywhere in the
     * frame */
    double sc = col0_norm(t), q[3][3], r[3][3];
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            q[a][b] = t[a][b] / sc;
    double tl = sqrt(t[0][3] * t[0][3] + t[1][3] * t[1][3] + t[2][3] * t[2][3]);
    double dx = tl > 0 ? t[0][3] / tl : 0, dy = tl > 0 ? t[1][3] / tl : 0,
           dz = tl > 0 ? t[2][3] / tl : -1;
    double al = atan2(-dx, -dz), be = asin(dy > 1 ? 1 : dy < -1 ? -1 : dy);
    double ca = cos(al), sa = sin(al), cb = cos(be), sb = sin(be);
    const double v[3][3] = {{ca, sa * sb, sa * cb}, {0, cb, -sb}, {-sa, ca * sb, ca * cb}};
    for (int a = 0; a < 3; a++)
        for (int b = 0; b < 3; b++)
            r[a][b] = v[0][a] * q[0][b] + v[1][a] * q[1][b] + v[2][a] * q[2][b];
    double sp = -r[1][2];
    sp = sp > 1 ? 1 : sp < -1 ? -1 : sp;
    *pitch = (float)(asin(sp) * 180 / PI);
    *yaw = (float)(atan2(r[0][2], r[2][2]) * 180 / PI);
    *roll = (float)(atan2(r[1][0], r[1][1]) * 180 / PI);
    return OMMA_OK;
}
