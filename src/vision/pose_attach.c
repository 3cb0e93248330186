/* Faces to poses (vision/pose_attach.h). */
#include "vision/pose_attach.h"

#include <math.h>

int vis_pose_head_region(const omma_pose *pose, omma_box *out)
{
    float x0 = INFINITY, y0 = INFINITY, x1 = -INFINITY, y1 = -INFINITY, sx = 0.0f, sy = 0.0f;
    for (int k = 0; k < VIS_POSE_HEAD_POINTS; k++) {
        float x = pose->landmarks[k].x, y = pose->landmarks[k].y;
        if (!isfinite(x) || !isfinite(y))
            return 0;
        x0 = fminf(x0, x), x1 = fmaxf(x1, x);
        y0 = fminf(y0, y), y1 = fmaxf(y1, y);
        sx += x, sy += y;
    }
    float side = fmaxf(x1 - x0, y1 - y0);
    if (!(side > 0.0f) || !isfinite(side))
        return 0;
    float cx = sx / VIS_POSE_HEAD_POINTS, cy = sy / VIS_POSE_HEAD_POINTS;
    *out = (omma_box){cx - side, cy - side, cx + side, cy + side};
    return 1;
}

void vis_pose_attach(const omma_face *faces, int n_faces, const omma_pose *poses, int n_poses,
                     int *face_of)
{
    omma_box head[OMMA_POSE_MAX_POSES];
    int has[OMMA_POSE_MAX_POSES];
    for (int p = 0; p < n_poses; p++)
        face_of[p] = -1;
    if (n_poses > OMMA_POSE_MAX_POSES)
        n_poses = OMMA_POSE_MAX_POSES; /* more than a pipeline tracks: the rest get none */
    for (int p = 0; p < n_poses; p++)
        has[p] = vis_pose_head_region(&poses[p], &head[p]);
    /* Greedy on distance: at most max poses pairs, each round the nearest
     * pair left among faces and poses not yet paired. */
    for (int round = 0; round < n_poses; round++) {
        int best_f = -1, best_p = -1;
        float best = INFINITY;
        for (int f = 0; f < n_faces; f++) {
            const omma_box *b = &faces[f].box;
            float fx = 0.5f * (b->xmin + b->xmax), fy = 0.5f * (b->ymin + b->ymax);
            if (!isfinite(fx) || !isfinite(fy))
                continue;
            int taken = 0;
            for (int p = 0; p < n_poses && !taken; p++)
                taken = face_of[p] == f;
            if (taken)
                continue;
            for (int p = 0; p < n_poses; p++) {
                if (!has[p] || face_of[p] >= 0)
                    continue;
                const omma_box *h = &head[p];
                if (fx < h->xmin || fx > h->xmax || fy < h->ymin || fy > h->ymax)
                    continue;
                float cx = 0.5f * (h->xmin + h->xmax), cy = 0.5f * (h->ymin + h->ymax);
                float d = hypotf(fx - cx, fy - cy);
                if (d < best) {
                    best = d;
                    best_f = f;
                    best_p = p;
                }
            }
        }
        if (best_p < 0)
            break;
        face_of[best_p] = best_f;
    }
}
