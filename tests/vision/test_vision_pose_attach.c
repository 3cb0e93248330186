/* Faces to poses (vision/pose_attach.h) on hand-made people: two people
 * side by side listed in the other order, a face outside every head
 * region, one face between two heads going to the nearer, a pose whose
 * head points are not finite, and more poses than a pipeline tracks. */
#include <math.h>
#include <string.h>

#include "testing.h"
#include "vision/pose_attach.h"

/* A person whose head points spread 40 px wide and 30 px high around (cx, cy). */
static omma_pose person(float cx, float cy)
{
    omma_pose p;
    memset(&p, 0, sizeof p);
    for (int k = 0; k < OMMA_POSE_LANDMARKS; k++) {
        p.landmarks[k].x = cx;
        p.landmarks[k].y = cy + 200.0f; /* the body, below */
    }
    static const float dx[VIS_POSE_HEAD_POINTS] = {0, -8, -10, -12, 8, 10, 12, -20, 20, -6, 6};
    static const float dy[VIS_POSE_HEAD_POINTS] = {0, -10, -10, -10, -10, -10, -10, -5, -5, 20, 20};
    for (int k = 0; k < VIS_POSE_HEAD_POINTS; k++) {
        p.landmarks[k].x = cx + dx[k];
        p.landmarks[k].y = cy + dy[k];
    }
    return p;
}

static omma_face face(float cx, float cy)
{
    omma_face f;
    memset(&f, 0, sizeof f);
    f.box = (omma_box){cx - 30, cy - 40, cx + 30, cy + 40};
    return f;
}

static void test_two_people(void)
{
    omma_pose poses[2] = {person(500, 200), person(150, 210)};
    omma_face faces[2] = {face(148, 215), face(505, 195)};
    int of[2];
    vis_pose_attach(faces, 2, poses, 2, of);
    CHECK(of[0] == 1 && of[1] == 0);
    omma_box h;
    REQUIRE(vis_pose_head_region(&poses[1], &h));
    /* mean of the head points (150, 210 + 1.36), side 2 x 40 */
    CHECK_NEAR(h.xmin, 150 - 40, 1e-3);
    CHECK_NEAR(h.xmax, 150 + 40, 1e-3);
    CHECK_NEAR(0.5 * (h.ymin + h.ymax), 210 - 30.0 / 11, 1e-3);
}

static void test_outside_and_nearer(void)
{
    omma_pose poses[2] = {person(100, 100), person(170, 100)};
    /* the second face in both head regions, 30 px from the first head's
     * centre and 40 from the second's */
    omma_face faces[2] = {face(400, 400), face(130, 100)};
    int of[2];
    vis_pose_attach(faces, 2, poses, 2, of);
    CHECK(of[0] == 1 && of[1] == -1);
    vis_pose_attach(faces, 1, poses, 2, of); /* the far face only */
    CHECK(of[0] == -1 && of[1] == -1);
    vis_pose_attach(NULL, 0, poses, 2, of);
    CHECK(of[0] == -1 && of[1] == -1);
}

static void test_bad_points(void)
{
    omma_pose poses[2] = {person(100, 100), person(100, 100)};
    poses[0].landmarks[7].x = NAN;
    for (int k = 0; k < VIS_POSE_HEAD_POINTS; k++)
        poses[1].landmarks[k].x = 100, poses[1].landmarks[k].y = 100; /* all one point */
    omma_face faces[1] = {face(100, 100)};
    int of[2];
    omma_box h;
    CHECK(!vis_pose_head_region(&poses[0], &h));
    CHECK(!vis_pose_head_region(&poses[1], &h));
    vis_pose_attach(faces, 1, poses, 2, of);
    CHECK(of[0] == -1 && of[1] == -1);
}

static void test_many(void)
{
    omma_pose poses[OMMA_POSE_MAX_POSES + 2];
    omma_face faces[OMMA_POSE_MAX_POSES + 2];
    for (int i = 0; i < OMMA_POSE_MAX_POSES + 2; i++) {
        poses[i] = person(100.0f + 200.0f * (float)i, 100);
        faces[OMMA_POSE_MAX_POSES + 1 - i] = face(100.0f + 200.0f * (float)i, 100);
    }
    int of[OMMA_POSE_MAX_POSES + 2];
    vis_pose_attach(faces, OMMA_POSE_MAX_POSES + 2, poses, OMMA_POSE_MAX_POSES + 2, of);
    for (int i = 0; i < OMMA_POSE_MAX_POSES; i++)
        CHECK(of[i] == OMMA_POSE_MAX_POSES + 1 - i);
    CHECK(of[OMMA_POSE_MAX_POSES] == -1 && of[OMMA_POSE_MAX_POSES + 1] == -1);
}

int main(void)
{
    RUN(test_two_people);
    RUN(test_outside_and_nearer);
    RUN(test_bad_points);
    RUN(test_many);
    return testing_finish();
}
