/* MediaPipe's TensorsToDetectionsCalculator (box decoding, sigmoid score
 * with clipping, threshold), NonMaxSuppressionCalculator in WEIGHTED mode
 * with IoU overlap, and DetectionLetterboxRemovalCalculator. */
#include "vision/detect_decode.h"

#include <stdlib.h>

#include "core/error.h"

void vis_decode_options_init(vis_decode_options *opt, int input_size)
{
    opt->input_size = (float)input_size;
    opt->score_clip = 100.0f;
    opt->min_score = 0.5f;
    opt->min_suppression = 0.3f;
    opt->max_faces = 4;
}

/* qsort's view of vis_candidate_before. */
static int by_score(const void *pa, const void *pb)
{
    const vis_candidate *a = pa, *b = pb;
    return vis_candidate_before(a, b) ? -1 : vis_candidate_before(b, a) ? 1 : 0;
}

void vis_sort_candidates(vis_candidate *cand, int m)
{
    qsort(cand, (size_t)m, sizeof *cand, by_score);
}

omma_status vis_detect_decode(const vis_decode_options *opt, const vis_anchor *anchors, int n,
                              const float *raw_boxes, const float *raw_scores,
                              const vis_letterbox *lb, omma_detection *out, int *count)
{
    if (count)
        *count = 0;
    if (!opt || !anchors || !raw_boxes || !raw_scores || !lb || !out || !count)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "NULL argument to the detection decoder");
    if (n < 1)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "%d anchors", n);
    if (!(opt->input_size > 0.0f) || !(opt->score_clip > 0.0f) || opt->max_faces < 1 ||
        !(opt->min_suppression >= 0.0f && opt->min_suppression <= 1.0f) || !(lb->scale > 0.0f))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "decode options: input size %g, score clip %g, max faces %d, "
                         "suppression %g, letterbox scale %g",
                         opt->input_size, opt->score_clip, opt->max_faces, opt->min_suppression,
                         lb->scale);
    vis_candidate *cand = malloc((size_t)n * sizeof *cand);
    if (!cand)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "decoder scratch for %d anchors", n);
    int m = 0;
    for (int a = 0; a < n; a++) {
        float score = vis_detection_score(raw_scores[a], opt->score_clip);
        if (!(score >= opt->min_score))
            continue;
        vis_decode_anchor(opt, &anchors[a], a, score, raw_boxes + (size_t)16 * (size_t)a,
                          &cand[m++]);
    }
    vis_sort_candidates(cand, m);
    *count = vis_weighted_nms(opt, lb, cand, m, out);
    free(cand);
    return OMMA_OK;
}
