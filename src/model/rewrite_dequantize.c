/* Rewrite: DEQUANTIZE of an fp16 constant folded into an fp32 constant. */
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/rewrite.h"

omma_status rw_fold_dequantize(gr_graph *g, int *count)
{
    rw_scratch s;
    OMMA_TRY(rw_scratch_begin(g, &s, "dequantize"));
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *n = &g->nodes[i];
        if (n->op != GR_DEQUANTIZE)
            continue;
        const gr_tensor *x = &g->tensors[n->in[0]];
        gr_tensor *y = &g->tensors[n->out];
        if (!x->data || x->dtype != GR_F16 || y->dtype != GR_F32)
            continue;
        size_t elems = gr_tensor_elems(x);
        float *v = malloc(elems ? elems * sizeof *v : 1);
        if (!v)
            return rw_scratch_end(g, &s,
                                  OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY,
                                            "rewrite: dequantize '%s' (%zu values)", x->name,
                                            elems),
                                  count);
        const unsigned char *src = x->data;
        for (size_t k = 0; k < elems; k++) {
            unsigned short h;
            memcpy(&h, src + 2 * k, 2);
            v[k] = gr_half_to_float(h);
        }
        y->data = v;
        y->bytes = elems * sizeof *v;
        y->producer = -1;
        s.drop[i] = true;
        s.changed++;
    }
    return rw_scratch_end(g, &s, OMMA_OK, count);
}
