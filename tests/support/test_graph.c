/* Hand-built graphs and a runner over the engine's private graph entry. */
#include "support/test_graph.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_private.h"
#include "omma/engine.h"

static int rank_of(int d0, int d1, int d2, int d3, int *dims)
{
    int v[4] = {d0, d1, d2, d3}, r = 0;
    while (r < 4 && v[r] > 0) {
        dims[r] = v[r];
        r++;
    }
    return r;
}

int tg_act(gr_graph *g, const char *name, int d0, int d1, int d2, int d3)
{
    int dims[4], t;
    int r = rank_of(d0, d1, d2, d3, dims);
    return gr_add_tensor(g, name, r, dims, GR_F32, NULL, 0, &t) == OMMA_OK ? t : -1;
}

void tg_fill(float *v, size_t n, unsigned seed, float lo, float hi)
{
    unsigned s = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = lo + (hi - lo) * (float)(s >> 8) / (float)(1u << 24);
    }
}

int tg_const(gr_graph *g, const char *name, int d0, int d1, int d2, int d3, unsigned seed,
             float lo, float hi)
{
    int dims[4], t;
    int r = rank_of(d0, d1, d2, d3, dims);
    size_t n = 1;
    for (int i = 0; i < r; i++)
        n *= (size_t)dims[i];
    float *v = malloc(n * sizeof *v);
    if (!v)
        return -1;
    tg_fill(v, n, seed, lo, hi);
    omma_status st = gr_add_tensor(g, name, r, dims, GR_F32, v, n * sizeof *v, &t);
    free(v);
    return st == OMMA_OK ? t : -1;
}

gr_node tg_node(gr_op op)
{
    gr_node n;
    memset(&n, 0, sizeof n);
    n.op = op;
    n.src_index = -1;
    for (int i = 0; i < GR_MAX_INPUTS; i++)
        n.in[i] = -1;
    n.out = -1;
    if (op == GR_CONV2D || op == GR_DWCONV2D || op == GR_DWPW) {
        n.p.conv.residual = -1;
        n.p.conv.alpha = -1;
        n.p.conv.depth_multiplier = 1;
    } else if (op == GR_ADD) {
        n.p.add.alpha = -1;
    }
    return n;
}

int tg_conv(gr_graph *g, int x, bool depthwise, int cout, int kh, int kw, int s, int pt, int pl,
            int pb, int pr, const char *out_name, unsigned seed)
{
    const gr_tensor *xt = &g->tensors[x];
    int nb = xt->dims[0], h = xt->dims[1], w = xt->dims[2], cin = xt->dims[3];
    if (depthwise)
        cout = cin;
    int oh = (h + pt + pb - kh) / s + 1, ow = (w + pl + pr - kw) / s + 1;
    float bound = 1.0f / sqrtf((float)(kh * kw * (depthwise ? 1 : cin)));
    int f = depthwise ? tg_const(g, "filter", 1, kh, kw, cout, seed, -bound, bound)
                      : tg_const(g, "filter", cout, kh, kw, cin, seed, -bound, bound);
    int b = tg_const(g, "bias", cout, 0, 0, 0, seed + 1, -0.2f, 0.2f);
    int y = tg_act(g, out_name, nb, oh, ow, cout);
    gr_node n = tg_node(depthwise ? GR_DWCONV2D : GR_CONV2D);
    n.n_in = 3;
    n.in[0] = x;
    n.in[1] = f;
    n.in[2] = b;
    n.out = y;
    n.p.conv.win = (gr_window){.kh = kh, .kw = kw, .stride_h = s, .stride_w = s, .dil_h = 1,
                               .dil_w = 1, .pad_top = pt, .pad_left = pl, .pad_bottom = pb,
                               .pad_right = pr};
    if (f < 0 || b < 0 || y < 0 || gr_add_node(g, &n, NULL) != OMMA_OK)
        return -1;
    return y;
}

int tg_unary(gr_graph *g, gr_node n, int x, const char *out_name, int d0, int d1, int d2, int d3)
{
    int y = tg_act(g, out_name, d0, d1, d2, d3);
    if (y < 0)
        return -1;
    if (n.n_in < 1)
        n.n_in = 1;
    n.in[0] = x;
    n.out = y;
    return gr_add_node(g, &n, NULL) == OMMA_OK ? y : -1;
}

omma_status tg_run(const gr_graph *g, bool rewrites, int batch, const float *in, float **outs,
                   int *nodes)
{
    gr_graph *c = NULL;
    omma_engine *e = NULL;
    omma_exec *x = NULL;
    omma_engine_options opt;
    omma_engine_options_init(&opt);
    opt.rewrites = rewrites;
    omma_status st = gr_clone(g, &c);
    if (st != OMMA_OK)
        return st;
    if ((st = eng_engine_from_graph(c, &opt, &e)) != OMMA_OK)
        return st;
    if (nodes)
        *nodes = eng_engine_graph(e)->n_nodes;
    omma_tensor_info info;
    float *p;
    if ((st = omma_engine_input_info(e, 0, &info)) != OMMA_OK ||
        (st = omma_exec_create(e, batch, &x)) != OMMA_OK ||
        (st = omma_exec_input(x, 0, &p)) != OMMA_OK)
        goto done;
    memcpy(p, in, (size_t)batch * info.item_elems * sizeof *p);
    if ((st = omma_exec_run(x, batch)) != OMMA_OK)
        goto done;
    for (int o = 0; o < omma_engine_output_count(e); o++) {
        if ((st = omma_engine_output_info(e, o, &info)) != OMMA_OK ||
            (st = omma_exec_output(x, o, &p)) != OMMA_OK)
            goto done;
        memcpy(outs[o], p, (size_t)batch * info.item_elems * sizeof *p);
    }
done:
    omma_exec_destroy(x);
    omma_engine_release(e);
    return st;
}

int tg_alloc_outputs(const gr_graph *g, int batch, float **outs)
{
    memset(outs, 0, GR_MAX_IO * sizeof *outs);
    for (int o = 0; o < g->n_outputs; o++) {
        outs[o] = malloc((size_t)batch * gr_tensor_elems(&g->tensors[g->outputs[o]]) * sizeof(float));
        if (!outs[o]) {
            tg_free_outputs(outs);
            return -1;
        }
    }
    return 0;
}

void tg_free_outputs(float **outs)
{
    for (int o = 0; o < GR_MAX_IO; o++) {
        free(outs[o]);
        outs[o] = NULL;
    }
}

double tg_max_rel_diff(const float *a, const float *b, size_t n)
{
    double worst = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]) / fmax(1.0, fabs((double)b[i]));
        if (!(d <= worst)) /* NaN counts as worst */
            worst = isnan(d) ? INFINITY : d;
    }
    return worst;
}
