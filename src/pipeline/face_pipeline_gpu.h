/* Private: the face pipeline's GPU backend, shared by its files:
 * face_pipeline_gpu.c (the backend: models, trackers, planning, results),
 * face_pipeline_lane.c (a lane: one step's buffers, execs, stream, and the
 * step's launches) and face_pipeline_graph.c (whole-step CUDA graphs).
 *
 * Lanes. A step (a batch of frames) runs on a lane: its own stream, its own
 * detector and FaceMesh execs (sharing the pipeline's engines), its scratch
 * and result buffers and its device copy of the step descriptor. With
 * several lanes, several steps are in flight at once (the runtime's worker
 * submits the next while the last ones run and their results come back);
 * the trackers, one per camera in device memory, are shared, so a camera
 * may be in one step in flight at a time.
 *
 * A step, on its lane's stream: [wait for the frames' events] load of the
 * descriptor, letterbox, detector, decode, track begin, crop, FaceMesh,
 * (the attention mesh's refinement), track finish, one device-to-host copy
 * of the results into the lane's pinned buffer, the lane's done event.
 * With graphs on, the kernels from the descriptor's load to track finish
 * are one CUDA graph per shape, replayed with the load kernel's parameter
 * updated; off, they launch one by one. The copy is launched on its own
 * either way (so that the
 * device's transfer counters count every one). */
#ifndef OMMA_PIPELINE_FACE_PIPELINE_GPU_H
#define OMMA_PIPELINE_FACE_PIPELINE_GPU_H

#include <stdatomic.h>

#include "gpu/driver.h"
#include "omma/device.h"
#include "pipeline/face_pipeline_private.h"
#include "vision/cuda_vision.h"

/* FaceMesh slots per step at most: the mesh exec's batch (its input is
 * 442 KiB per slot). */
#define FP_MAX_SLOTS 4096
/* Graphs kept per lane (least recently used ones go). */
#define FP_MAX_GRAPHS 32

/* What the host knows of a camera's tracker. */
typedef struct fp_camera_mirror {
    int count; /* faces tracked after its last frame */
    long frames_since_detect; /* as vis_tracker */
    int fresh; /* its device tracker must start afresh */
} fp_camera_mirror;

/* Device copy of a host frame, grown as needed. */
typedef struct fp_staging {
    CUdeviceptr ptr;
    size_t bytes;
} fp_staging;

/* A step's launch sizes: the graph key. */
typedef struct fp_step_shape {
    int n; /* frames */
    int n_detect; /* detector batch (0: detector not run) */
    int n_slots; /* FaceMesh batch */
} fp_step_shape;

typedef struct fp_step_graph {
    fp_step_shape shape;
    cudaGraph_t graph; /* kept: its load node is updated in exec */
    cudaGraphExec_t exec;
    cudaGraphNode_t load; /* the descriptor's load kernel, the graph's root */
    struct cudaKernelNodeParams load_params; /* its function and launch shape */
    uint64_t last_used;
} fp_step_graph;

typedef struct fp_lane {
    CUstream stream;
    CUevent done; /* recorded after the result copy */
    omma_exec *xdet, *xmesh;
    float *det_in, *det_boxes, *det_scores, *mesh_in, *mesh_lm, *mesh_flag;
    float *mesh_parts[5]; /* attention mesh: lips, eyes, irises (face_refine.h) */
    CUdeviceptr refined; /* attention mesh: 478 x 3 floats per slot, else 0 */
    CUdeviceptr key_score, key_anchor, cand, dets, det_counts;
    CUdeviceptr slot_roi, slot_valid, slot_frame, results, step_dev;
    size_t results_bytes;
    void *host_results; /* pinned, results_bytes */
    fp_staging frames[VIS_GPU_MAX_FRAMES];
    /* The step in flight (or last run). */
    vis_gpu_step step;
    fp_step_shape shape;
    int detected; /* frames the detector ran on */
    size_t d2h_bytes;
    uint64_t h2d_bytes, h2d_copies;
    atomic_int busy; /* a step submitted and not completed */
    fp_step_graph graphs[FP_MAX_GRAPHS];
    int n_graphs;
    uint64_t graph_clock;
    int launches; /* launches the last step made: kernels (1 with a graph),
                   * event waits, the result copy */
} fp_lane;

struct fp_backend {
    omma_device *dev;
    int own_device; /* opened by the pipeline (options gave none) */
    omma_engine *det, *mesh;
    fp_detector_spec dspec;
    fp_mesh_spec mspec;
    vis_decode_options dopt;
    vis_tracker_options topt;
    int max_slots;
    CUdeviceptr anchors, trackers;
    int n_lanes;
    fp_lane lanes[OMMA_PIPELINE_MAX_LANES];
    fp_camera_mirror mirror[OMMA_PIPELINE_MAX_CAMERAS];
    atomic_int camera_busy[OMMA_PIPELINE_MAX_CAMERAS]; /* in a step in flight */
};

/* face_pipeline_lane.c. Inside the device's scope. */
omma_status fp_lane_open(omma_face_pipeline *p, fp_backend *b, fp_lane *l);
void fp_lane_close(fp_backend *b, fp_lane *l);
/* Host frame i of the step into the lane's staging (one 2D copy per plane,
 * on the lane's stream); device frames are taken as they are. Adds the
 * bytes and copies to *h2d_bytes, *h2d_copies. */
omma_status fp_lane_upload(fp_backend *b, fp_lane *l, int i, const omma_frame *in, omma_frame *out,
                           uint64_t *h2d_bytes, uint64_t *h2d_copies);
/* The step's kernels (l->step and l->shape planned), one by one, from the
 * descriptor's load to track finish; l->launches counts them. */
omma_status fp_lane_enqueue(omma_face_pipeline *p, fp_backend *b, fp_lane *l);

/* face_pipeline_graph.c. Runs the lane's planned step from its graph for
 * l->shape (captured from fp_lane_enqueue and instantiated at the shape's
 * first step), the descriptor's load parameter set to l->step. */
omma_status fp_graph_launch(omma_face_pipeline *p, fp_backend *b, fp_lane *l);
void fp_graph_free_all(fp_lane *l);

#endif
