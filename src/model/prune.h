/* Private: pruning a graph to the outputs its user wants (prune.c).
 *
 * A model may compute outputs a user never reads (BlazePose's landmark
 * models: a 256x256 segmentation mask next to the landmarks). Pruning keeps
 * the named outputs and every node they depend on, and removes the rest:
 * nodes, their tensors and constants. It runs after the load-time rewrites,
 * so every kept node is the node the unpruned graph computes (same fusions,
 * same operands) and the kept outputs are bitwise the same. */
#ifndef OMMA_MODEL_PRUNE_H
#define OMMA_MODEL_PRUNE_H

#include "model/graph.h"

/* What pruning did, for the engine: how to carry decisions made on the
 * graph before pruning (the CUDA backend's steps, its float32 I/O) over to
 * the graph after it. */
typedef struct gr_prune_result {
    int nodes_removed;
    int *node_map; /* per node before: its index after, or -1 (removed) */
    int n_nodes_before;
    int *lost_uses; /* per tensor after: the uses gr_count_uses counted
                     * before that pruning removed (reads by removed nodes,
                     * appearances among the outputs dropped) */
    int n_tensors_after;
} gr_prune_result;

/* Keeps the graph outputs named names[0..count-1], in that order, and every
 * node and tensor they depend on; removes the others (graph inputs stay).
 * groups (NULL: every node alone) has one entry per node, plan_build's
 * step_end: nodes i..groups[i] (groups[i] > i) are kept or removed
 * together, so that runs of nodes a backend computes as one stay whole.
 * r (may be NULL) receives the maps (free them with gr_prune_result_free).
 * Errors: OMMA_ERR_INVALID_ARG for count < 1 or above the graph's output
 * count, a NULL name, a name that is no output of the graph, a name given
 * twice; the message names the bad output and lists the graph's outputs.
 * OMMA_ERR_OUT_OF_MEMORY. The graph is unchanged on failure. */
omma_status gr_prune(gr_graph *g, const char *const *names, int count, const int *groups,
                     gr_prune_result *r);

/* Frees r's maps; accepts a zeroed result. */
void gr_prune_result_free(gr_prune_result *r);

#endif
