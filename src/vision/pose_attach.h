/* Private: which tracked face belongs to which tracked body pose, in one
 * frame of one camera (docs/OUTPUT.md, Pose).
 *
 * A pose's head region is the square centred on the mean of its 11 head
 * points (0 nose, 1-6 eyes, 7-8 ears, 9-10 mouth) whose side is twice the
 * larger side of their bounding box. A face may belong to a pose when the
 * centre of its box lies inside that region; then faces and poses are
 * paired one to one, the pairs whose face centre is nearest the head
 * centre first (ties: the lower face index, then the lower pose index). A
 * pose with non-finite head points, or whose head points all coincide,
 * gets no face. Pure function: any thread. */
#ifndef OMMA_VISION_POSE_ATTACH_H
#define OMMA_VISION_POSE_ATTACH_H

#include "omma/face.h"
#include "omma/pose.h"

#define VIS_POSE_HEAD_POINTS 11

/* For each of the n_poses poses, the index in faces of its face, or -1,
 * to face_of[0..n_poses-1]. n_faces and n_poses may be 0. */
void vis_pose_attach(const omma_face *faces, int n_faces, const omma_pose *poses, int n_poses,
                     int *face_of);

/* The head region of a pose (as above); 0 when it has none. */
int vis_pose_head_region(const omma_pose *pose, omma_box *out);

#endif
