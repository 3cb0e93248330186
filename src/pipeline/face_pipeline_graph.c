/* Whole-step CUDA graphs of the GPU face pipeline (face_pipeline_gpu.h).
 * A lane keeps one graph per step shape (frames, detector batch, FaceMesh
 * batch), captured from the step's launches one by one (fp_lane_enqueue)
 * at the shape's first step. The frames, the plan and the cameras change
 * from step to step but only the descriptor's load kernel sees them, as its
 * parameter; every other kernel reads the descriptor from device memory at
 * a fixed address. A replay therefore updates that one node's parameter
 * and launches the graph: one launch for the whole step. */
#include "core/error.h"
#include "gpu/check.h"
#include "pipeline/face_pipeline_gpu.h"

static int same_shape(const fp_step_shape *a, const fp_step_shape *b)
{
    return a->n == b->n && a->n_detect == b->n_detect && a->n_slots == b->n_slots;
}

static void free_graph(fp_step_graph *g)
{
    if (g->exec)
        (void)cudaGraphExecDestroy(g->exec);
    if (g->graph)
        (void)cudaGraphDestroy(g->graph);
    *g = (fp_step_graph){0};
}

void fp_graph_free_all(fp_lane *l)
{
    for (int i = 0; i < l->n_graphs; i++)
        free_graph(&l->graphs[i]);
    l->n_graphs = 0;
}

/* The root of a captured step: the descriptor's load, a kernel. */
static omma_status find_load(cudaGraph_t graph, cudaGraphNode_t *out)
{
    size_t roots = 0;
    OMMA_TRY(OMMA_CK(cudaGraphGetRootNodes(graph, NULL, &roots)));
    cudaGraphNode_t node = NULL;
    enum cudaGraphNodeType type = cudaGraphNodeTypeEmpty;
    if (roots == 1) {
        OMMA_TRY(OMMA_CK(cudaGraphGetRootNodes(graph, &node, &roots)));
        OMMA_TRY(OMMA_CK(cudaGraphNodeGetType(node, &type)));
    }
    if (roots != 1 || type != cudaGraphNodeTypeKernel)
        return OMMA_FAIL(OMMA_ERR_INTERNAL,
                         "face pipeline: a captured step has %zu root nodes, not one load kernel",
                         roots);
    *out = node;
    return OMMA_OK;
}

static omma_status capture(omma_face_pipeline *p, fp_backend *b, fp_lane *l, fp_step_graph *g)
{
    cudaStream_t s = (cudaStream_t)l->stream;
    *g = (fp_step_graph){.shape = l->shape};
    /* Thread-local mode: other threads' calls (the completing thread's
     * event waits, allocations) are not affected by this capture. */
    OMMA_TRY(OMMA_CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal)));
    omma_status st = fp_lane_enqueue(p, b, l);
    omma_status end = OMMA_CK(cudaStreamEndCapture(s, &g->graph));
    if (st == OMMA_OK)
        st = end;
    if (st == OMMA_OK)
        st = find_load(g->graph, &g->load);
    if (st == OMMA_OK)
        st = OMMA_CK(cudaGraphKernelNodeGetParams(g->load, &g->load_params));
    if (st == OMMA_OK)
        st = OMMA_CK(cudaGraphInstantiate(&g->exec, g->graph, 0));
    if (st != OMMA_OK)
        free_graph(g);
    return st;
}

/* The lane's graph for its shape: found, or captured in a free place (the
 * least recently used one when all are taken). */
static omma_status graph_for(omma_face_pipeline *p, fp_backend *b, fp_lane *l, fp_step_graph **out)
{
    int victim = 0;
    for (int i = 0; i < l->n_graphs; i++) {
        if (same_shape(&l->graphs[i].shape, &l->shape)) {
            *out = &l->graphs[i];
            return OMMA_OK;
        }
        if (l->graphs[i].last_used < l->graphs[victim].last_used)
            victim = i;
    }
    if (l->n_graphs < FP_MAX_GRAPHS)
        victim = l->n_graphs++;
    else
        free_graph(&l->graphs[victim]);
    fp_step_graph *g = &l->graphs[victim];
    omma_status st = capture(p, b, l, g);
    if (st != OMMA_OK) {
        /* Keep the array dense: the last graph takes the free place. */
        l->graphs[victim] = l->graphs[--l->n_graphs];
        l->graphs[l->n_graphs] = (fp_step_graph){0};
        return st;
    }
    *out = g;
    return OMMA_OK;
}

omma_status fp_graph_launch(omma_face_pipeline *p, fp_backend *b, fp_lane *l)
{
    fp_step_graph *g = NULL;
    OMMA_TRY(graph_for(p, b, l, &g));
    g->last_used = ++l->graph_clock;
    struct cudaKernelNodeParams kp = g->load_params;
    void *dev = (void *)(uintptr_t)l->step_dev;
    void *args[] = {&l->step, &dev};
    kp.kernelParams = args;
    kp.extra = NULL;
    OMMA_TRY(OMMA_CK(cudaGraphExecKernelNodeSetParams(g->exec, g->load, &kp)));
    OMMA_TRY(OMMA_CK(cudaGraphLaunch(g->exec, (cudaStream_t)l->stream)));
    l->launches = 1;
    return OMMA_OK;
}
