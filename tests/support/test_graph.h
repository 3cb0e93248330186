/* Test support: building small graphs by hand and running graphs through
 * the CPU executor, for the validation and rewrite tests. */
#ifndef OMMA_TESTS_TEST_GRAPH_H
#define OMMA_TESTS_TEST_GRAPH_H

#include <stddef.h>

#include "model/graph.h"

/* Appends an activation tensor of the given dims (rank = count of dims up to
 * the first 0); returns its index or -1 on failure. */
int tg_act(gr_graph *g, const char *name, int d0, int d1, int d2, int d3);

/* Appends an F32 constant filled with pseudo-random values in [lo, hi)
 * (deterministic for a seed). */
int tg_const(gr_graph *g, const char *name, int d0, int d1, int d2, int d3, unsigned seed,
             float lo, float hi);

/* A node with every tensor-index field set to -1 and the given op. */
gr_node tg_node(gr_op op);

/* Adds a convolution (CONV_2D, or DWCONV2D when depthwise) of x with a
 * random kh x kw filter and bias, stride s, explicit padding (t, l, b, r),
 * writing a new tensor named out_name; returns the output tensor. */
int tg_conv(gr_graph *g, int x, bool depthwise, int cout, int kh, int kw, int s, int pt, int pl,
            int pb, int pr, const char *out_name, unsigned seed);

/* Adds a node with one activation input and an output of the given dims. */
int tg_unary(gr_graph *g, gr_node n, int x, const char *out_name, int d0, int d1, int d2,
             int d3);

/* Deterministic pseudo-random floats in [lo, hi). */
void tg_fill(float *v, size_t n, unsigned seed, float lo, float hi);

/* Runs graph g (not consumed; cloned) through the CPU executor with the
 * load-time rewrites on or off, batch items from `in` (batch * item floats
 * of input 0); copies the batch items of every output o into outs[o]
 * (batch * item floats each). Returns the status; *nodes (may be NULL) gets
 * the node count that ran. */
omma_status tg_run(const gr_graph *g, bool rewrites, int batch, const float *in, float **outs,
                   int *nodes);

/* Allocates outs[o] for every output of g at batch `batch`; 0 or -1. */
int tg_alloc_outputs(const gr_graph *g, int batch, float **outs);
void tg_free_outputs(float **outs);

/* Largest |a - b| / max(1, |b|) over n values. */
double tg_max_rel_diff(const float *a, const float *b, size_t n);

#endif
