/* Private: eigen-decomposition of a small symmetric matrix (Jacobi
 * rotations), for the Procrustes solvers (head_pose.c, face_signature.c).
 * Pure maths, any thread. */
#ifndef OMMA_VISION_SYM_EIGEN_H
#define OMMA_VISION_SYM_EIGEN_H

#define VIS_SYM_EIGEN_MAX 4

/* a: n x n (n <= VIS_SYM_EIGEN_MAX) symmetric, row-major, destroyed.
 * Up to 50 sweeps, stopping once the sum of the squared off-diagonal
 * entries is at most tol. Eigenvalues to d[n], eigenvectors to the columns
 * of v (n x n, row-major), in the same order. */
void vis_sym_eigen(int n, double *a, double tol, double *d, double *v);

#endif
