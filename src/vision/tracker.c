/* The tracking half of MediaPipe's face_landmark_front graph: landmarks ->
 * next ROI (vis_roi_from_landmarks), detector gated on the face count
 * (plus our every-K-frames refresh), AssociationNormRectCalculator keeping
 * tracked ROIs over overlapping new detections. */
#include "vision/tracker.h"

#include <string.h>

#include "core/error.h"

void vis_tracker_options_init(vis_tracker_options *opt)
{
    opt->max_faces = 4;
    opt->detect_every = 0;
    opt->overlap_iou = 0.5f;
    opt->min_presence = 0.5f;
    opt->cut_move = 0.3f;
    opt->cut_agree = 0.22f;
    opt->cut_presence = 0.9f;
}

omma_status vis_tracker_init(vis_tracker *t, const vis_tracker_options *opt)
{
    vis_tracker_options o;
    if (!t)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "NULL tracker");
    if (opt)
        o = *opt;
    else
        vis_tracker_options_init(&o);
    if (o.max_faces < 1 || o.max_faces > VIS_TRACKER_MAX_FACES || o.detect_every < 0 ||
        !(o.overlap_iou >= 0.0f && o.overlap_iou <= 1.0f) ||
        !(o.min_presence >= 0.0f && o.min_presence <= 1.0f) ||
        !(o.cut_move >= 0.0f && o.cut_move <= 10.0f) ||
        !(o.cut_agree >= 0.0f && o.cut_agree <= 1.0f) ||
        !(o.cut_presence >= 0.0f && o.cut_presence <= 1.0f))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "tracker options: max faces %d (1..%d), detect every %d, overlap %g, "
                         "presence %g, cut move %g (0..10), cut agree %g, cut presence %g",
                         o.max_faces, VIS_TRACKER_MAX_FACES, o.detect_every, o.overlap_iou,
                         o.min_presence, o.cut_move, o.cut_agree, o.cut_presence);
    memset(t, 0, sizeof *t);
    t->opt = o;
    t->next_id = 1;
    return OMMA_OK;
}
