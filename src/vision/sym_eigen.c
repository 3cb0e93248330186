/* Jacobi eigen-decomposition of a small symmetric matrix (sym_eigen.h). */
#include "vision/sym_eigen.h"

#include <math.h>

#define A(i, j) a[(i)*n + (j)]
#define V(i, j) v[(i)*n + (j)]

void vis_sym_eigen(int n, double *a, double tol, double *d, double *v)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            V(i, j) = i == j;
    for (int sweep = 0; sweep < 50; sweep++) {
        double off = 0;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++)
                off += A(p, q) * A(p, q);
        if (off <= tol)
            break;
        for (int p = 0; p < n; p++)
            for (int q = p + 1; q < n; q++) {
                if (fabs(A(p, q)) < 1e-300)
                    continue;
                double theta = (A(q, q) - A(p, p)) / (2 * A(p, q));
                double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
                double c = 1 / sqrt(t * t + 1), s = t * c;
                for (int k = 0; k < n; k++) { /* a = J^T a J */
                    double x = A(k, p), y = A(k, q);
                    A(k, p) = c * x - s * y;
                    A(k, q) = s * x + c * y;
                }
                for (int k = 0; k < n; k++) {
                    double x = A(p, k), y = A(q, k);
                    A(p, k) = c * x - s * y;
                    A(q, k) = s * x + c * y;
                }
                for (int k = 0; k < n; k++) {
                    double x = V(k, p), y = V(k, q);
                    V(k, p) = c * x - s * y;
                    V(k, q) = s * x + c * y;
                }
            }
    }
    for (int i = 0; i < n; i++)
        d[i] = A(i, i);
}
