/* Private: the activation memory plan of a graph, shared by the CPU and
 * CUDA executors.
 *
 * Every activation (graph inputs and outputs included) gets an offset in one
 * arena. Tensors whose lifetimes (from the node that writes them to the last
 * node that reads them) do not overlap share memory. Graph inputs and outputs
 * live for the whole run, so callers can fill inputs before a run and read
 * outputs after it, and an input survives the run unchanged.
 *
 * A RESHAPE's output aliases its input's slot (same bytes, same order): the
 * executor skips a RESHAPE whose input and output are the same memory.
 *
 * Batch: a tensor that depends on a graph input holds one item per batch
 * element ("batched"); a tensor computed from constants only (a DEQUANTIZE
 * output in an unrewritten graph) does not. The plan is made for one item,
 * with every slot a multiple of PLAN_ALIGN bytes; for an exec of max batch B
 * the batched region is that plan scaled by B (offsets and sizes times B),
 * which keeps slots disjoint and aligned. Layout:
 *   [fixed region: fixed_bytes][batched region: B * item_bytes] */
#ifndef OMMA_MODEL_PLAN_H
#define OMMA_MODEL_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "model/graph.h"

#define PLAN_ALIGN 256

typedef struct plan_slot {
    bool in_arena;   /* false for constants */
    bool batched;
    size_t offset;   /* in the fixed region, or in the one-item batched plan */
    size_t bytes;    /* bytes of one item (or of the whole tensor when fixed) */
    int first, last; /* lifetime in node indices (-1 = before the first node) */
    int alias_of;    /* a RESHAPE output shares this tensor's slot, or -1 */
} plan_slot;

typedef struct plan_layout {
    int n_tensors;
    plan_slot *slots;   /* one per graph tensor */
    size_t fixed_bytes; /* multiple of PLAN_ALIGN */
    size_t item_bytes;  /* multiple of PLAN_ALIGN */
    size_t naive_bytes; /* one item, without reuse (every slot apart): for reports */
    size_t peak_bytes;  /* one item, most bytes alive at one node: the floor */
} plan_layout;

/* Plans a validated graph. step_end (NULL: every node is a step of its
 * own) has one entry per node: step_end[i] > i when nodes i..step_end[i]
 * run as one step (one kernel): then every tensor those nodes read lives
 * until step_end[i] and every tensor they write from node i on, so none
 * shares memory with another the step touches. Entries inside a step are
 * not read. On failure *out is NULL. */
omma_status plan_build(const gr_graph *g, const int *step_end, plan_layout **out);

void plan_free(plan_layout *p);

/* Arena bytes for an exec of max batch `batch`: fixed + batch * item. */
size_t plan_arena_bytes(const plan_layout *p, int batch);

/* Byte offset of tensor t in an arena laid out for max batch `batch`;
 * meaningful only where slots[t].in_arena. */
size_t plan_offset(const plan_layout *p, int t, int batch);

#endif
