/* A lane of the GPU face pipeline (face_pipeline_gpu.h): its stream, execs
 * and buffers, the upload of host frames, and a step's kernels one by one
 * (what a step graph is captured from). */
#include <string.h>

#include "core/error.h"
#include "gpu/check.h"
#include "gpu/memory.h"
#include "gpu/stream_pool.h"
#include "pipeline/face_pipeline_gpu.h"
#include "vision/frame.h"

static omma_status open_execs(omma_face_pipeline *p, fp_backend *b, fp_lane *l)
{
    /* The execs launch node by node on the lane's stream: a step graph
     * captures them with the rest of the step. */
    omma_exec_options xo;
    omma_exec_options_init(&xo);
    xo.stream = l->stream;
    xo.graphs = 0;
    OMMA_TRY(omma_exec_create_with(b->det, p->opt.max_batch, &xo, &l->xdet));
    OMMA_TRY(omma_exec_input(l->xdet, 0, &l->det_in));
    OMMA_TRY(omma_exec_output(l->xdet, b->dspec.box_output, &l->det_boxes));
    OMMA_TRY(omma_exec_output(l->xdet, b->dspec.score_output, &l->det_scores));
    OMMA_TRY(omma_exec_create_with(b->mesh, b->max_slots, &xo, &l->xmesh));
    OMMA_TRY(omma_exec_input(l->xmesh, 0, &l->mesh_in));
    OMMA_TRY(omma_exec_output(l->xmesh, b->mspec.landmark_output, &l->mesh_lm));
    OMMA_TRY(omma_exec_output(l->xmesh, b->mspec.flag_output, &l->mesh_flag));
    if (b->mspec.points == OMMA_FACE_LANDMARKS_WITH_IRISES) {
        const int parts[5] = {b->mspec.lips, b->mspec.left_eye, b->mspec.right_eye,
                              b->mspec.left_iris, b->mspec.right_iris};
        for (int k = 0; k < 5; k++)
            OMMA_TRY(omma_exec_output(l->xmesh, parts[k], &l->mesh_parts[k]));
    }
    return OMMA_OK;
}

omma_status fp_lane_open(omma_face_pipeline *p, fp_backend *b, fp_lane *l)
{
    atomic_init(&l->busy, 0);
    OMMA_TRY(gpu_stream_acquire(b->dev, GPU_PRIORITY_NORMAL, &l->stream));
    /* Blocking: the thread completing a step sleeps until it is done
     * instead of spinning on a core for the whole step (the context's
     * scheduling policy would spin: see docs/PERFORMANCE.md, Context). */
    OMMA_TRY(
        OMMA_CK(gpu_cu.cuEventCreate(&l->done, CU_EVENT_DISABLE_TIMING | CU_EVENT_BLOCKING_SYNC)));
    OMMA_TRY(open_execs(p, b, l));
    size_t images = (size_t)p->opt.max_batch, n = (size_t)b->dspec.n_anchors;
    size_t faces = (size_t)p->opt.max_faces, slots = (size_t)b->max_slots;
    OMMA_TRY(gpu_mem_alloc(b->dev, images * n * sizeof(float), &l->key_score));
    OMMA_TRY(gpu_mem_alloc(b->dev, images * n * sizeof(int), &l->key_anchor));
    OMMA_TRY(gpu_mem_alloc(b->dev, images * n * sizeof(vis_candidate), &l->cand));
    OMMA_TRY(gpu_mem_alloc(b->dev, images * faces * sizeof(omma_detection), &l->dets));
    OMMA_TRY(gpu_mem_alloc(b->dev, images * sizeof(int), &l->det_counts));
    OMMA_TRY(gpu_mem_alloc(b->dev, slots * sizeof(vis_roi), &l->slot_roi));
    OMMA_TRY(gpu_mem_alloc(b->dev, slots * sizeof(int), &l->slot_valid));
    OMMA_TRY(gpu_mem_alloc(b->dev, slots * sizeof(int), &l->slot_frame));
    OMMA_TRY(gpu_mem_alloc(b->dev, sizeof(vis_gpu_step), &l->step_dev));
    if (b->mspec.points == OMMA_FACE_LANDMARKS_WITH_IRISES)
        OMMA_TRY(gpu_mem_alloc(b->dev, slots * OMMA_FACE_LANDMARKS_WITH_IRISES * 3 * sizeof(float),
                               &l->refined));
    l->results_bytes = slots * sizeof(omma_face) + images * sizeof(int);
    OMMA_TRY(gpu_mem_alloc(b->dev, l->results_bytes, &l->results));
    return gpu_host_alloc(b->dev, l->results_bytes, &l->host_results);
}

void fp_lane_close(fp_backend *b, fp_lane *l)
{
    if (l->stream)
        (void)gpu_cu.cuStreamSynchronize(l->stream);
    fp_graph_free_all(l);
    omma_exec_destroy(l->xdet);
    omma_exec_destroy(l->xmesh);
    CUdeviceptr bufs[] = {l->key_score,  l->key_anchor, l->cand,       l->dets,
                          l->det_counts, l->slot_roi,   l->slot_valid, l->slot_frame,
                          l->step_dev,   l->results,    l->refined};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++)
        (void)gpu_mem_free(b->dev, bufs[i]);
    for (int i = 0; i < VIS_GPU_MAX_FRAMES; i++)
        (void)gpu_mem_free(b->dev, l->frames[i].ptr);
    if (l->host_results)
        gpu_host_free(b->dev, l->host_results, l->results_bytes);
    if (l->done)
        (void)gpu_cu.cuEventDestroy(l->done);
    if (l->stream)
        gpu_stream_release(b->dev, l->stream);
    memset(l, 0, sizeof *l);
}

omma_status fp_lane_upload(fp_backend *b, fp_lane *l, int i, const omma_frame *in, omma_frame *out,
                           uint64_t *h2d_bytes, uint64_t *h2d_copies)
{
    *out = *in;
    if (in->memory == OMMA_MEMORY_DEVICE)
        return OMMA_OK;
    size_t bytes = 0;
    for (int k = 0; k < 3; k++)
        bytes += (size_t)vis_frame_row_bytes(in, k) * (size_t)vis_frame_plane_rows(in, k);
    fp_staging *s = &l->frames[i];
    if (s->bytes < bytes) {
        OMMA_TRY(gpu_mem_free(b->dev, s->ptr));
        s->ptr = 0;
        s->bytes = 0;
        OMMA_TRY(gpu_mem_alloc(b->dev, bytes, &s->ptr));
        s->bytes = bytes;
    }
    CUdeviceptr at = s->ptr;
    for (int k = 0; k < 3; k++) {
        size_t row = (size_t)vis_frame_row_bytes(in, k), rows = (size_t)vis_frame_plane_rows(in, k);
        if (!row)
            continue;
        OMMA_TRY(gpu_copy_h2d_2d_async(b->dev, at, row, in->planes[k], (size_t)in->pitch[k], row,
                                       rows, l->stream));
        out->planes[k] = (const uint8_t *)(uintptr_t)at;
        out->pitch[k] = (int)row;
        at += row * rows;
        ++*h2d_copies;
    }
    *h2d_bytes += bytes;
    out->memory = OMMA_MEMORY_DEVICE;
    return OMMA_OK;
}

static omma_status launched(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return OMMA_OK;
    return OMMA_FAIL(OMMA_ERR_CUDA, "face pipeline: %s launch failed: %s", what,
                     cudaGetErrorString(e));
}

static omma_status exec_launches(const omma_exec *x, int *launches)
{
    omma_exec_stats st;
    OMMA_TRY(omma_exec_get_stats(x, &st));
    *launches += st.launches;
    return OMMA_OK;
}

omma_status fp_lane_enqueue(omma_face_pipeline *p, fp_backend *b, fp_lane *l)
{
    const vis_gpu_step *s = (const vis_gpu_step *)(uintptr_t)l->step_dev;
    vis_gpu_shape shape = {l->shape.n, l->shape.n_slots};
    cudaStream_t st = (cudaStream_t)l->stream;
    int *counts = (int *)(uintptr_t)(l->results + (size_t)shape.n_slots * sizeof(omma_face));
    l->launches = 0;
    OMMA_TRY(launched(vis_cuda_step_load(&l->step, (vis_gpu_step *)(uintptr_t)l->step_dev, st),
                      "step load"));
    l->launches++;
    if (l->shape.n_detect > 0) {
        OMMA_TRY(launched(vis_cuda_letterbox(s, shape, b->dspec.size, l->det_in, st), "letterbox"));
        OMMA_TRY(omma_exec_run(l->xdet, l->shape.n_detect));
        OMMA_TRY(exec_launches(l->xdet, &l->launches));
        OMMA_TRY(launched(
            vis_cuda_decode(
                s, shape, &b->dopt, (const vis_anchor *)(uintptr_t)b->anchors, b->dspec.n_anchors,
                l->det_boxes, l->det_scores, (float *)(uintptr_t)l->key_score,
                (int *)(uintptr_t)l->key_anchor, (vis_candidate *)(uintptr_t)l->cand,
                (omma_detection *)(uintptr_t)l->dets, (int *)(uintptr_t)l->det_counts, st),
            "decode"));
        l->launches += 2;
    }
    OMMA_TRY(launched(vis_cuda_track_begin(s, shape, (vis_tracker *)(uintptr_t)b->trackers,
                                           &b->topt, (const omma_detection *)(uintptr_t)l->dets,
                                           (const int *)(uintptr_t)l->det_counts, p->opt.max_faces,
                                           (vis_roi *)(uintptr_t)l->slot_roi,
                                           (int *)(uintptr_t)l->slot_valid,
                                           (int *)(uintptr_t)l->slot_frame, counts, st),
                      "track begin"));
    l->launches++;
    if (shape.n_slots > 0) {
        OMMA_TRY(launched(vis_cuda_crop(s, shape, (const vis_roi *)(uintptr_t)l->slot_roi,
                                        (const int *)(uintptr_t)l->slot_valid,
                                        (const int *)(uintptr_t)l->slot_frame, VIS_MESH_SIZE,
                                        l->mesh_in, st),
                          "crop"));
        OMMA_TRY(omma_exec_run(l->xmesh, shape.n_slots));
        OMMA_TRY(exec_launches(l->xmesh, &l->launches));
        l->launches++;
        if (l->refined) {
            float *const *m = l->mesh_parts;
            OMMA_TRY(launched(vis_cuda_refine(shape, l->mesh_lm, m[0], m[1], m[2], m[3], m[4],
                                              (float *)(uintptr_t)l->refined, st),
                              "refine"));
            l->launches++;
        }
    }
    const float *lm = l->refined ? (const float *)(uintptr_t)l->refined : l->mesh_lm;
    OMMA_TRY(launched(vis_cuda_track_finish(s, shape, (vis_tracker *)(uintptr_t)b->trackers,
                                            VIS_MESH_SIZE, b->mspec.points, lm, l->mesh_flag,
                                            (omma_face *)(uintptr_t)l->results, counts, st),
                      "track finish"));
    l->launches++;
    return OMMA_OK;
}
