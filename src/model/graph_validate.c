/* Checking a graph before anyone executes it: operands, single production,
 * execution order, cycles and per-op shapes. Every failure names the node
 * and the tensor, because the graph may come from an untrusted file. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/graph.h"

typedef struct check {
    const gr_graph *g;
    int *produced_at; /* node writing each tensor, -1 none */
    bool *is_static;  /* constant, or computed from constants only */
    bool *is_input;
} check;

/* Shape text for messages; four rotating buffers so that one message can
 * show several shapes. */
static const char *dims_text(const gr_tensor *t)
{
    static _Thread_local char buf[4][96];
    static _Thread_local unsigned k;
    char *b = buf[k++ & 3];
    return gr_dims_str(t, b, sizeof buf[0]);
}

static omma_status node_fail(const gr_graph *g, int i, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static omma_status node_fail(const gr_graph *g, int i, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const gr_node *n = &g->nodes[i];
    return OMMA_FAIL(OMMA_ERR_FORMAT, "graph: node %d (%s, model op %d): %s", i,
                     gr_op_name(n->op), n->src_index, msg);
}

static const char *tname(const gr_graph *g, int t)
{
    return (t >= 0 && t < g->n_tensors && g->tensors[t].name) ? g->tensors[t].name : "?";
}

static bool same_dims(const gr_tensor *a, const gr_tensor *b)
{
    if (a->rank != b->rank)
        return false;
    for (int d = 0; d < a->rank; d++)
        if (a->dims[d] != b->dims[d])
            return false;
    return true;
}

static omma_status check_tensors(const gr_graph *g)
{
    for (int i = 0; i < g->n_tensors; i++) {
        const gr_tensor *t = &g->tensors[i];
        if (t->rank < 0 || t->rank > GR_MAX_RANK)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "graph: tensor %d ('%s') has rank %d", i, tname(g, i),
                             t->rank);
        for (int d = 0; d < t->rank; d++)
            if (t->dims[d] <= 0 || t->dims[d] > (1 << 24))
                return OMMA_FAIL(OMMA_ERR_FORMAT, "graph: tensor %d ('%s') has dimension %d = %d",
                                 i, tname(g, i), d, t->dims[d]);
        if ((int)t->dtype < 0 || t->dtype > GR_I32)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "graph: tensor %d ('%s') has dtype %d", i,
                             tname(g, i), (int)t->dtype);
        size_t elems = gr_tensor_elems(t);
        if (elems > ((size_t)1 << 31))
            return OMMA_FAIL(OMMA_ERR_FORMAT, "graph: tensor %d ('%s') has %zu elements", i,
                             tname(g, i), elems);
        if (t->data && t->bytes != elems * gr_dtype_size(t->dtype))
            return OMMA_FAIL(OMMA_ERR_FORMAT,
                             "graph: constant %d ('%s') holds %zu bytes, its shape needs %zu", i,
                             tname(g, i), t->bytes, elems * gr_dtype_size(t->dtype));
    }
    return OMMA_OK;
}

static omma_status check_io(const gr_graph *g, check *c)
{
    if (g->n_inputs < 1 || g->n_inputs > GR_MAX_IO || g->n_outputs < 1 || g->n_outputs > GR_MAX_IO)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "graph: %d inputs and %d outputs (1 to %d each)",
                         g->n_inputs, g->n_outputs, GR_MAX_IO);
    for (int i = 0; i < g->n_inputs; i++) {
        int t = g->inputs[i];
        if (t < 0 || t >= g->n_tensors)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "graph: input %d names tensor %d of %d", i, t,
                             g->n_tensors);
        const gr_tensor *x = &g->tensors[t];
        if (x->data || x->dtype != GR_F32)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "graph: input %d ('%s') must be a float32 activation",
                             i, tname(g, t));
        if (x->rank < 1 || x->dims[0] != 1)
            return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                             "graph: input %d ('%s') must have batch dimension 1", i, tname(g, t));
        if (c->is_input[t])
            return OMMA_FAIL(OMMA_ERR_FORMAT, "graph: tensor '%s' is listed twice as an input",
                             tname(g, t));
        c->is_input[t] = true;
    }
    for (int i = 0; i < g->n_outputs; i++) {
        int t = g->outputs[i];
        if (t < 0 || t >= g->n_tensors)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "graph: output %d names tensor %d of %d", i, t,
                             g->n_tensors);
    }
    return OMMA_OK;
}

/* Operands exist, each activation is produced once, never a constant or an
 * input. */
static omma_status check_operands(const gr_graph *g, check *c)
{
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *n = &g->nodes[i];
        if ((int)n->op < 0 || n->op >= GR_OP_COUNT)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "graph: node %d has unknown op %d", i, (int)n->op);
        if (n->n_in < 1 || n->n_in > GR_MAX_INPUTS)
            return node_fail(g, i, "%d inputs (1 to %d)", n->n_in, GR_MAX_INPUTS);
        for (int k = 0; k < n->n_in; k++) {
            int t = n->in[k];
            bool optional = ((n->op == GR_CONV2D || n->op == GR_DWCONV2D) && k == 2) ||
                            (n->op == GR_DWPW && (k == 2 || k == 4));
            if (t == -1 && optional)
                continue;
            if (t < 0 || t >= g->n_tensors)
                return node_fail(g, i, "input %d names tensor %d of %d", k, t, g->n_tensors);
        }
        int extra[2] = {-1, -1};
        if (n->op == GR_CONV2D || n->op == GR_DWCONV2D || n->op == GR_DWPW) {
            extra[0] = n->p.conv.residual;
            extra[1] = n->p.conv.act == GR_ACT_PRELU ? n->p.conv.alpha : -1;
            if (n->p.conv.act == GR_ACT_PRELU && extra[1] < 0)
                return node_fail(g, i, "PRELU activation without an alpha tensor");
        } else if (n->op == GR_ADD) {
            extra[1] = n->p.add.act == GR_ACT_PRELU ? n->p.add.alpha : -1;
            if (n->p.add.act == GR_ACT_PRELU && extra[1] < 0)
                return node_fail(g, i, "PRELU activation without an alpha tensor");
        }
        for (int k = 0; k < 2; k++)
            if (extra[k] < -1 || extra[k] >= g->n_tensors)
                return node_fail(g, i, "%s names tensor %d of %d", k ? "alpha" : "residual",
                                 extra[k], g->n_tensors);
        int o = n->out;
        if (o < 0 || o >= g->n_tensors)
            return node_fail(g, i, "output names tensor %d of %d", o, g->n_tensors);
        if (g->tensors[o].data)
            return node_fail(g, i, "writes tensor %d ('%s'), which is a constant", o, tname(g, o));
        if (c->is_input[o])
            return node_fail(g, i, "writes tensor %d ('%s'), which is a graph input", o,
                             tname(g, o));
        if (c->produced_at[o] >= 0)
            return node_fail(g, i, "writes tensor %d ('%s'), already produced by node %d", o,
                             tname(g, o), c->produced_at[o]);
        c->produced_at[o] = i;
    }
    for (int i = 0; i < g->n_outputs; i++) {
        int t = g->outputs[i];
        if (c->produced_at[t] < 0 && !c->is_input[t])
            return OMMA_FAIL(OMMA_ERR_FORMAT, "graph: output %d ('%s') is produced by no node", i,
                             tname(g, t));
    }
    return OMMA_OK;
}

/* Kahn's algorithm over node dependencies: true when some nodes can never
 * run because they wait on each other; *witness is one of them. */
static bool has_cycle(const gr_graph *g, const check *c, int *witness)
{
    int nn = g->n_nodes;
    bool *done = calloc(nn ? (size_t)nn : 1, 1);
    if (!done)
        return false;
    int left = nn;
    bool progress = true;
    while (left && progress) {
        progress = false;
        for (int i = 0; i < nn; i++) {
            if (done[i])
                continue;
            int r[GR_MAX_INPUTS + 2];
            int k = gr_node_reads(&g->nodes[i], r);
            bool ready = true;
            for (int j = 0; j < k && ready; j++) {
                int p = c->produced_at[r[j]];
                if (p >= 0 && !done[p])
                    ready = false;
            }
            if (ready) {
                done[i] = true;
                left--;
                progress = true;
            }
        }
    }
    for (int i = 0; left && i < nn; i++)
        if (!done[i]) {
            *witness = i;
            break;
        }
    free(done);
    return left > 0;
}

static omma_status check_order(const gr_graph *g, check *c)
{
    for (int i = 0; i < g->n_nodes; i++) {
        int r[GR_MAX_INPUTS + 2];
        int k = gr_node_reads(&g->nodes[i], r);
        for (int j = 0; j < k; j++) {
            int t = r[j];
            if (g->tensors[t].data || c->is_input[t])
                continue;
            int p = c->produced_at[t];
            if (p < 0)
                return node_fail(g, i, "reads tensor %d ('%s'), which no node produces", t,
                                 tname(g, t));
            if (p >= i) {
                int w = i;
                if (has_cycle(g, c, &w))
                    return node_fail(g, w, "is part of a cycle (tensor '%s' depends on itself)",
                                     tname(g, g->nodes[w].out));
                return node_fail(g, i, "reads tensor %d ('%s') before node %d produces it "
                                 "(nodes are not in execution order)", t, tname(g, t), p);
            }
        }
    }
    return OMMA_OK;
}

/* Static tensors are constants or computed from constants only (a DEQUANTIZE
 * output); weights must be static. In execution order, so one pass does. */
static void mark_static(const gr_graph *g, check *c)
{
    for (int t = 0; t < g->n_tensors; t++)
        c->is_static[t] = g->tensors[t].data != NULL;
    for (int i = 0; i < g->n_nodes; i++) {
        int r[GR_MAX_INPUTS + 2];
        int k = gr_node_reads(&g->nodes[i], r);
        bool s = true;
        for (int j = 0; j < k; j++)
            s = s && c->is_static[r[j]];
        c->is_static[g->nodes[i].out] = s;
    }
}

static int window_out(int size, int pad_a, int pad_b, int k, int stride, int dil)
{
    int ke = (k - 1) * dil + 1;
    int span = size + pad_a + pad_b - ke;
    return span < 0 ? 0 : span / stride + 1;
}

static omma_status check_window(const gr_graph *g, int i, const gr_window *w, bool pool)
{
    if (w->kh < 1 || w->kw < 1 || w->stride_h < 1 || w->stride_w < 1 || w->dil_h < 1 ||
        w->dil_w < 1)
        return node_fail(g, i, "window %dx%d stride %dx%d dilation %dx%d", w->kh, w->kw,
                         w->stride_h, w->stride_w, w->dil_h, w->dil_w);
    if (w->pad_top < 0 || w->pad_bottom < 0 || w->pad_left < 0 || w->pad_right < 0)
        return node_fail(g, i, "negative padding %d,%d,%d,%d", w->pad_top, w->pad_left,
                         w->pad_bottom, w->pad_right);
    if (pool && (w->pad_top >= w->kh || w->pad_bottom >= w->kh || w->pad_left >= w->kw ||
                 w->pad_right >= w->kw))
        return node_fail(g, i, "pooling padding %d,%d,%d,%d leaves windows without input",
                         w->pad_top, w->pad_left, w->pad_bottom, w->pad_right);
    return OMMA_OK;
}

static omma_status want_f32(const gr_graph *g, int i, int t, const char *role)
{
    if (g->tensors[t].dtype != GR_F32)
        return node_fail(g, i, "%s '%s' is %s, expected float32", role, tname(g, t),
                         gr_dtype_name(g->tensors[t].dtype));
    return OMMA_OK;
}

static omma_status want_static(const gr_graph *g, const check *c, int i, int t, const char *role)
{
    if (!c->is_static[t])
        return node_fail(g, i, "%s '%s' must be a constant", role, tname(g, t));
    return want_f32(g, i, t, role);
}

static omma_status want_activation(const gr_graph *g, const check *c, int i, int t,
                                   const char *role)
{
    if (c->is_static[t])
        return node_fail(g, i, "%s '%s' must be an activation, not a constant", role, tname(g, t));
    return want_f32(g, i, t, role);
}

static omma_status want_per_channel(const gr_graph *g, const check *c, int i, int t,
                                    const char *role, int channels)
{
    OMMA_TRY(want_static(g, c, i, t, role));
    if (gr_tensor_elems(&g->tensors[t]) != (size_t)channels)
        return node_fail(g, i, "%s '%s' has shape %s, expected %d per-channel values", role,
                         tname(g, t), dims_text(&g->tensors[t]), channels);
    return OMMA_OK;
}

/* The fused activation of a convolution: a known one, PRELU with one alpha
 * per output channel. */
static omma_status check_act(const gr_graph *g, const check *c, int i, int channels)
{
    const gr_node *n = &g->nodes[i];
    if ((int)n->p.conv.act < 0 || n->p.conv.act > GR_ACT_PRELU)
        return node_fail(g, i, "unknown activation %d", (int)n->p.conv.act);
    if (n->p.conv.act == GR_ACT_PRELU)
        OMMA_TRY(want_per_channel(g, c, i, n->p.conv.alpha, "alpha", channels));
    return OMMA_OK;
}

static omma_status check_conv(const gr_graph *g, const check *c, int i)
{
    const gr_node *n = &g->nodes[i];
    bool dw = n->op == GR_DWCONV2D;
    if (n->n_in != 3)
        return node_fail(g, i, "has %d inputs, expected 3 (input, filter, bias or -1)", n->n_in);
    const gr_tensor *x = &g->tensors[n->in[0]], *w = &g->tensors[n->in[1]];
    const gr_tensor *y = &g->tensors[n->out];
    OMMA_TRY(want_activation(g, c, i, n->in[0], "input"));
    OMMA_TRY(want_static(g, c, i, n->in[1], "filter"));
    if (x->rank != 4 || w->rank != 4 || y->rank != 4)
        return node_fail(g, i, "input '%s' %s, filter '%s' %s and output '%s' %s must be 4-D",
                         x->name, dims_text(x), w->name, dims_text(w), y->name, dims_text(y));
    const gr_window *win = &n->p.conv.win;
    OMMA_TRY(check_window(g, i, win, false));
    int cin = x->dims[3], cout;
    if (dw) {
        int m = n->p.conv.depth_multiplier;
        if (m < 1 || w->dims[0] != 1 || w->dims[3] != cin * m)
            return node_fail(g, i, "depthwise filter '%s' %s does not fit input '%s' %s with "
                             "depth multiplier %d", w->name, dims_text(w), x->name, dims_text(x), m);
        cout = w->dims[3];
    } else {
        if (w->dims[3] != cin)
            return node_fail(g, i, "filter '%s' %s expects %d input channels, input '%s' is %s",
                             w->name, dims_text(w), w->dims[3], x->name, dims_text(x));
        cout = w->dims[0];
    }
    if (w->dims[1] != win->kh || w->dims[2] != win->kw)
        return node_fail(g, i, "filter '%s' %s does not match the %dx%d window", w->name,
                         dims_text(w), win->kh, win->kw);
    if (n->p.conv.pool_residual)
        return node_fail(g, i, "pool_residual is set (only %s pools its residual)",
                         gr_op_name(GR_DWPW));
    if (n->in[2] >= 0)
        OMMA_TRY(want_per_channel(g, c, i, n->in[2], "bias", cout));
    int oh = window_out(x->dims[1], win->pad_top, win->pad_bottom, win->kh, win->stride_h,
                        win->dil_h);
    int ow = window_out(x->dims[2], win->pad_left, win->pad_right, win->kw, win->stride_w,
                        win->dil_w);
    if (y->dims[0] != x->dims[0] || y->dims[1] != oh || y->dims[2] != ow || y->dims[3] != cout)
        return node_fail(g, i, "output '%s' is %s, the window gives [%d, %d, %d, %d]", y->name,
                         dims_text(y), x->dims[0], oh, ow, cout);
    if (n->p.conv.residual >= 0) {
        const gr_tensor *r = &g->tensors[n->p.conv.residual];
        OMMA_TRY(want_activation(g, c, i, n->p.conv.residual, "residual"));
        if (!same_dims(r, y))
            return node_fail(g, i, "residual '%s' %s differs from output '%s' %s", r->name,
                             dims_text(r), y->name, dims_text(y));
    }
    return check_act(g, c, i, cout);
}

/* GR_DWPW: in = {x, dw filter [1,kh,kw,C], dw bias [C] | -1, pw filter
 * [Cout,1,1,C], pw bias [Cout] | -1}; the residual may have fewer channels
 * than the output and, pooled, twice its height and width (graph.h). */
static omma_status check_dwpw(const gr_graph *g, const check *c, int i)
{
    const gr_node *n = &g->nodes[i];
    if (n->n_in != 5)
        return node_fail(g, i, "has %d inputs, expected 5 (input, depthwise filter, depthwise "
                         "bias or -1, pointwise filter, pointwise bias or -1)", n->n_in);
    OMMA_TRY(want_activation(g, c, i, n->in[0], "input"));
    OMMA_TRY(want_static(g, c, i, n->in[1], "depthwise filter"));
    OMMA_TRY(want_static(g, c, i, n->in[3], "pointwise filter"));
    const gr_tensor *x = &g->tensors[n->in[0]], *dw = &g->tensors[n->in[1]];
    const gr_tensor *pw = &g->tensors[n->in[3]], *y = &g->tensors[n->out];
    if (x->rank != 4 || dw->rank != 4 || pw->rank != 4 || y->rank != 4)
        return node_fail(g, i, "input '%s' %s, filters '%s' %s and '%s' %s and output '%s' %s "
                         "must be 4-D", x->name, dims_text(x), dw->name, dims_text(dw), pw->name,
                         dims_text(pw), y->name, dims_text(y));
    const gr_window *win = &n->p.conv.win;
    OMMA_TRY(check_window(g, i, win, false));
    int cin = x->dims[3], cout = pw->dims[0];
    if (n->p.conv.depth_multiplier != 1)
        return node_fail(g, i, "depth multiplier %d, expected 1", n->p.conv.depth_multiplier);
    if (dw->dims[0] != 1 || dw->dims[1] != win->kh || dw->dims[2] != win->kw ||
        dw->dims[3] != cin)
        return node_fail(g, i, "depthwise filter '%s' %s does not fit input '%s' %s and the "
                         "%dx%d window", dw->name, dims_text(dw), x->name, dims_text(x), win->kh,
                         win->kw);
    if (pw->dims[1] != 1 || pw->dims[2] != 1 || pw->dims[3] != cin)
        return node_fail(g, i, "pointwise filter '%s' %s is not [Cout, 1, 1, %d] for input '%s' "
                         "%s", pw->name, dims_text(pw), cin, x->name, dims_text(x));
    if (n->in[2] >= 0)
        OMMA_TRY(want_per_channel(g, c, i, n->in[2], "depthwise bias", cin));
    if (n->in[4] >= 0)
        OMMA_TRY(want_per_channel(g, c, i, n->in[4], "pointwise bias", cout));
    int oh = window_out(x->dims[1], win->pad_top, win->pad_bottom, win->kh, win->stride_h,
                        win->dil_h);
    int ow = window_out(x->dims[2], win->pad_left, win->pad_right, win->kw, win->stride_w,
                        win->dil_w);
    if (y->dims[0] != x->dims[0] || y->dims[1] != oh || y->dims[2] != ow || y->dims[3] != cout)
        return node_fail(g, i, "output '%s' is %s, the window and pointwise filter give "
                         "[%d, %d, %d, %d]", y->name, dims_text(y), x->dims[0], oh, ow, cout);
    bool pool = n->p.conv.pool_residual;
    if (n->p.conv.residual >= 0) {
        const gr_tensor *r = &g->tensors[n->p.conv.residual];
        OMMA_TRY(want_activation(g, c, i, n->p.conv.residual, "residual"));
        int f = pool ? 2 : 1;
        if (r->rank != 4 || r->dims[0] != y->dims[0] || r->dims[1] != f * oh ||
            r->dims[2] != f * ow || r->dims[3] > cout)
            return node_fail(g, i, "residual '%s' %s does not fit output '%s' %s (%s: [%d, %d, "
                             "%d, C <= %d] expected)", r->name, dims_text(r), y->name,
                             dims_text(y), pool ? "pooled 2x2" : "not pooled", y->dims[0],
                             f * oh, f * ow, cout);
    } else if (pool) {
        return node_fail(g, i, "pool_residual is set without a residual");
    }
    return check_act(g, c, i, cout);
}

static omma_status check_node(const gr_graph *g, const check *c, int i)
{
    const gr_node *n = &g->nodes[i];
    const gr_tensor *x = &g->tensors[n->in[0]], *y = &g->tensors[n->out];
    if (n->op != GR_DEQUANTIZE && y->dtype != GR_F32)
        return node_fail(g, i, "output '%s' is %s, expected float32", y->name,
                         gr_dtype_name(y->dtype));
    switch (n->op) {
    case GR_CONV2D:
    case GR_DWCONV2D:
        return check_conv(g, c, i);
    case GR_DWPW:
        return check_dwpw(g, c, i);
    case GR_MAXPOOL: {
        if (n->n_in != 1)
            return node_fail(g, i, "has %d inputs, expected 1", n->n_in);
        OMMA_TRY(want_activation(g, c, i, n->in[0], "input"));
        const gr_window *w = &n->p.pool.win;
        OMMA_TRY(check_window(g, i, w, true));
        if (x->rank != 4 || y->rank != 4)
            return node_fail(g, i, "input '%s' %s and output '%s' %s must be 4-D", x->name,
                             dims_text(x), y->name, dims_text(y));
        int oh = window_out(x->dims[1], w->pad_top, w->pad_bottom, w->kh, w->stride_h, 1);
        int ow = window_out(x->dims[2], w->pad_left, w->pad_right, w->kw, w->stride_w, 1);
        if (y->dims[0] != x->dims[0] || y->dims[1] != oh || y->dims[2] != ow ||
            y->dims[3] != x->dims[3])
            return node_fail(g, i, "output '%s' is %s, the window gives [%d, %d, %d, %d]",
                             y->name, dims_text(y), x->dims[0], oh, ow, x->dims[3]);
        return OMMA_OK;
    }
    case GR_ADD: {
        if (n->n_in != 2)
            return node_fail(g, i, "has %d inputs, expected 2", n->n_in);
        const gr_tensor *b = &g->tensors[n->in[1]];
        OMMA_TRY(want_f32(g, i, n->in[0], "input"));
        OMMA_TRY(want_f32(g, i, n->in[1], "input"));
        if (c->is_static[n->in[0]] && c->is_static[n->in[1]])
            return node_fail(g, i, "adds two constants");
        if (!same_dims(x, b) || !same_dims(x, y))
            return node_fail(g, i, "inputs '%s' %s and '%s' %s and output '%s' %s differ "
                             "(broadcasting is not supported)", x->name, dims_text(x), b->name,
                             dims_text(b), y->name, dims_text(y));
        if ((int)n->p.add.act < 0 || n->p.add.act > GR_ACT_PRELU)
            return node_fail(g, i, "unknown activation %d", (int)n->p.add.act);
        if (n->p.add.act == GR_ACT_PRELU)
            OMMA_TRY(want_per_channel(g, c, i, n->p.add.alpha, "alpha", y->dims[y->rank - 1]));
        return OMMA_OK;
    }
    case GR_DEPTH_TO_SPACE: {
        if (n->n_in != 1)
            return node_fail(g, i, "has %d inputs, expected 1", n->n_in);
        OMMA_TRY(want_activation(g, c, i, n->in[0], "input"));
        int b = n->p.d2s.block;
        if (b < 1 || b > 64)
            return node_fail(g, i, "block size %d (1 to 64)", b);
        if (x->rank != 4 || y->rank != 4 || x->dims[3] % (b * b) || y->dims[0] != x->dims[0] ||
            y->dims[1] != x->dims[1] * b || y->dims[2] != x->dims[2] * b ||
            y->dims[3] != x->dims[3] / (b * b))
            return node_fail(g, i,
                             "input '%s' %s and output '%s' %s do not agree with block "
                             "size %d ([N, H*b, W*b, C/(b*b)] expected)",
                             x->name, dims_text(x), y->name, dims_text(y), b);
        return OMMA_OK;
    }
    case GR_MUL: {
        if (n->n_in != 2)
            return node_fail(g, i, "has %d inputs, expected 2", n->n_in);
        OMMA_TRY(want_f32(g, i, n->in[0], "input"));
        OMMA_TRY(want_f32(g, i, n->in[1], "input"));
        bool s0 = c->is_static[n->in[0]], s1 = c->is_static[n->in[1]];
        if (s0 && s1)
            return node_fail(g, i, "multiplies two constants");
        const gr_tensor *a = s0 ? &g->tensors[n->in[1]] : x, *b = s0 ? x : &g->tensors[n->in[1]];
        bool scalar = (s0 || s1) && gr_tensor_elems(b) == 1;
        if (!same_dims(a, y) || (!scalar && !same_dims(a, b)))
            return node_fail(g, i,
                             "inputs '%s' %s and '%s' %s and output '%s' %s: expected the same "
                             "shapes or a one-value constant",
                             x->name, dims_text(x), g->tensors[n->in[1]].name,
                             dims_text(&g->tensors[n->in[1]]), y->name, dims_text(y));
        if ((int)n->p.add.act < 0 || n->p.add.act >= GR_ACT_PRELU)
            return node_fail(g, i, "activation %d (NONE, RELU or RELU6)", (int)n->p.add.act);
        return OMMA_OK;
    }
    case GR_STRIDED_SLICE: {
        if (n->n_in != 1)
            return node_fail(g, i, "has %d inputs, expected 1", n->n_in);
        OMMA_TRY(want_activation(g, c, i, n->in[0], "input"));
        if (x->rank != y->rank || y->dims[0] != x->dims[0])
            return node_fail(g, i, "input '%s' %s and output '%s' %s differ in rank or batch",
                             x->name, dims_text(x), y->name, dims_text(y));
        for (int d = 0; d < x->rank; d++) {
            long long b = n->p.slice.begin[d], st = n->p.slice.stride[d];
            if (b < 0 || st < 1 || y->dims[d] < 1 || (d == 0 && (b != 0 || st != 1)) ||
                b + (y->dims[d] - 1) * st >= x->dims[d])
                return node_fail(g, i,
                                 "dimension %d: %d values from %lld by %lld do not fit in "
                                 "input '%s' %s",
                                 d, y->dims[d], b, st, x->name, dims_text(x));
        }
        return OMMA_OK;
    }
    case GR_LANDMARKS_TO_MATRIX: {
        if (n->n_in != 1)
            return node_fail(g, i, "has %d inputs, expected 1", n->n_in);
        OMMA_TRY(want_activation(g, c, i, n->in[0], "input"));
        const gr_node *l = n;
        if (x->rank != 3 || x->dims[2] != 3 || y->rank != 3 || y->dims[0] != x->dims[0] ||
            y->dims[1] != 4 || y->dims[2] != 4)
            return node_fail(g, i,
                             "input '%s' %s and output '%s' %s: expected [N, L, 3] -> "
                             "[N, 4, 4]",
                             x->name, dims_text(x), y->name, dims_text(y));
        int L = x->dims[1];
        bool ok = l->p.l2m.left >= 0 && l->p.l2m.left < L && l->p.l2m.right >= 0 &&
                  l->p.l2m.right < L && l->p.l2m.out_h >= 1 && l->p.l2m.out_w >= 1 &&
                  l->p.l2m.scale_x > 0 && l->p.l2m.scale_y > 0 && l->p.l2m.n_subset >= 1 &&
                  l->p.l2m.n_subset <= GR_L2M_MAX_SUBSET;
        for (int k = 0; ok && k < l->p.l2m.n_subset; k++)
            ok = l->p.l2m.subset[k][0] >= 0 && l->p.l2m.subset[k][0] < L &&
                 l->p.l2m.subset[k][1] >= 0 && l->p.l2m.subset[k][1] < L;
        if (!ok)
            return node_fail(g, i,
                             "parameters out of range for %d landmarks (rotation %d, %d; %d "
                             "subset pairs; crop %dx%d)",
                             L, l->p.l2m.left, l->p.l2m.right, l->p.l2m.n_subset, l->p.l2m.out_w,
                             l->p.l2m.out_h);
        return OMMA_OK;
    }
    case GR_TRANSFORM_BILINEAR:
    case GR_TRANSFORM_LANDMARKS: {
        if (n->n_in != 2)
            return node_fail(g, i, "has %d inputs, expected 2", n->n_in);
        OMMA_TRY(want_activation(g, c, i, n->in[0], "input"));
        OMMA_TRY(want_activation(g, c, i, n->in[1], "matrix"));
        const gr_tensor *mt = &g->tensors[n->in[1]];
        if (mt->rank != 3 || mt->dims[0] != x->dims[0] || mt->dims[1] != 4 || mt->dims[2] != 4)
            return node_fail(g, i, "matrix '%s' is %s, expected [N, 4, 4]", mt->name,
                             dims_text(mt));
        if (n->op == GR_TRANSFORM_LANDMARKS) {
            if (x->rank != 3 || (x->dims[2] != 2 && x->dims[2] != 3) || !same_dims(x, y))
                return node_fail(g, i,
                                 "input '%s' %s and output '%s' %s: expected [N, L, 2 or "
                                 "3], the same",
                                 x->name, dims_text(x), y->name, dims_text(y));
        } else if (x->rank != 4 || y->rank != 4 || y->dims[0] != x->dims[0] ||
                   y->dims[3] != x->dims[3]) {
            return node_fail(g, i,
                             "input '%s' %s and output '%s' %s: expected [N, H, W, C] -> "
                             "[N, OH, OW, C]",
                             x->name, dims_text(x), y->name, dims_text(y));
        }
        return OMMA_OK;
    }
    case GR_RELU:
    case GR_LOGISTIC:
    case GR_PRELU:
        if (n->n_in != (n->op == GR_PRELU ? 2 : 1))
            return node_fail(g, i, "has %d inputs", n->n_in);
        OMMA_TRY(want_activation(g, c, i, n->in[0], "input"));
        if (!same_dims(x, y))
            return node_fail(g, i, "input '%s' %s and output '%s' %s differ", x->name, dims_text(x),
                             y->name, dims_text(y));
        if (n->op == GR_PRELU)
            OMMA_TRY(want_per_channel(g, c, i, n->in[1], "alpha", x->dims[x->rank - 1]));
        return OMMA_OK;
    case GR_PAD:
        if (n->n_in != 1)
            return node_fail(g, i, "has %d inputs, expected 1", n->n_in);
        OMMA_TRY(want_activation(g, c, i, n->in[0], "input"));
        if (x->rank != y->rank)
            return node_fail(g, i, "input '%s' %s and output '%s' %s differ in rank", x->name,
                             dims_text(x), y->name, dims_text(y));
        for (int d = 0; d < x->rank; d++) {
            if (n->p.pad.before[d] < 0 || n->p.pad.after[d] < 0 ||
                (d == 0 && (n->p.pad.before[0] || n->p.pad.after[0])))
                return node_fail(g, i, "padding %d/%d on dimension %d is not supported",
                                 n->p.pad.before[d], n->p.pad.after[d], d);
            if (x->dims[d] + n->p.pad.before[d] + n->p.pad.after[d] != y->dims[d])
                return node_fail(g, i, "output '%s' is %s; input '%s' %s padded by %d/%d on "
                                 "dimension %d gives %d", y->name, dims_text(y), x->name, dims_text(x),
                                 n->p.pad.before[d], n->p.pad.after[d], d,
                                 x->dims[d] + n->p.pad.before[d] + n->p.pad.after[d]);
        }
        return OMMA_OK;
    case GR_RESHAPE:
        if (n->n_in != 1)
            return node_fail(g, i, "has %d inputs, expected 1", n->n_in);
        OMMA_TRY(want_activation(g, c, i, n->in[0], "input"));
        if (gr_tensor_elems(x) != gr_tensor_elems(y) || y->rank < 1 || y->dims[0] != x->dims[0])
            return node_fail(g, i, "cannot reshape '%s' %s into '%s' %s (same element count "
                             "and batch dimension needed)", x->name, dims_text(x), y->name, dims_text(y));
        return OMMA_OK;
    case GR_CONCAT: {
        int ax = n->p.concat.axis;
        if (ax < 1 || ax >= y->rank)
            return node_fail(g, i, "axis %d for output '%s' %s", ax, y->name, dims_text(y));
        int sum = 0;
        for (int k = 0; k < n->n_in; k++) {
            const gr_tensor *a = &g->tensors[n->in[k]];
            OMMA_TRY(want_activation(g, c, i, n->in[k], "input"));
            bool ok = a->rank == y->rank;
            for (int d = 0; ok && d < a->rank; d++)
                if (d != ax && a->dims[d] != y->dims[d])
                    ok = false;
            if (!ok)
                return node_fail(g, i, "input %d '%s' %s does not fit output '%s' %s on axis %d",
                                 k, a->name, dims_text(a), y->name, dims_text(y), ax);
            sum += a->dims[ax];
        }
        if (sum != y->dims[ax])
            return node_fail(g, i, "inputs add up to %d along axis %d, output '%s' %s", sum, ax,
                             y->name, dims_text(y));
        return OMMA_OK;
    }
    case GR_RESIZE_BILINEAR:
        if (n->n_in != 1)
            return node_fail(g, i, "has %d inputs, expected 1", n->n_in);
        OMMA_TRY(want_activation(g, c, i, n->in[0], "input"));
        if (x->rank != 4 || y->rank != 4 || x->dims[0] != y->dims[0] || x->dims[3] != y->dims[3])
            return node_fail(g, i, "input '%s' %s and output '%s' %s must be 4-D with the same "
                             "batch and channels", x->name, dims_text(x), y->name, dims_text(y));
        if (n->p.resize.align_corners && n->p.resize.half_pixel_centers)
            return node_fail(g, i, "align_corners and half_pixel_centers both set");
        return OMMA_OK;
    case GR_DEQUANTIZE:
        if (n->n_in != 1)
            return node_fail(g, i, "has %d inputs, expected 1", n->n_in);
        if (!x->data || x->dtype != GR_F16)
            return node_fail(g, i, "input '%s' must be a float16 constant", x->name);
        if (y->dtype != GR_F32 || !same_dims(x, y))
            return node_fail(g, i, "output '%s' %s %s must be float32 %s", y->name,
                             gr_dtype_name(y->dtype), dims_text(y), dims_text(x));
        return OMMA_OK;
    case GR_OP_COUNT:
        break;
    }
    return node_fail(g, i, "unknown op");
}

omma_status gr_validate(const gr_graph *g)
{
    size_t nt = g->n_tensors > 0 ? (size_t)g->n_tensors : 1;
    check c = {.g = g};
    c.produced_at = malloc(nt * sizeof *c.produced_at);
    c.is_static = calloc(nt, sizeof *c.is_static);
    c.is_input = calloc(nt, sizeof *c.is_input);
    omma_status st = OMMA_OK;
    if (!c.produced_at || !c.is_static || !c.is_input) {
        st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "graph: validating");
        goto done;
    }
    for (size_t t = 0; t < nt; t++)
        c.produced_at[t] = -1;
    if (g->n_tensors < 0 || g->n_nodes < 0) {
        st = OMMA_FAIL(OMMA_ERR_FORMAT, "graph: %d tensors, %d nodes", g->n_tensors, g->n_nodes);
        goto done;
    }
    if ((st = check_tensors(g)) != OMMA_OK || (st = check_io(g, &c)) != OMMA_OK ||
        (st = check_operands(g, &c)) != OMMA_OK || (st = check_order(g, &c)) != OMMA_OK)
        goto done;
    mark_static(g, &c);
    for (int i = 0; i < g->n_nodes; i++)
        if ((st = check_node(g, &c, i)) != OMMA_OK)
            goto done;
    for (int i = 0; i < g->n_outputs; i++)
        if (c.is_static[g->outputs[i]]) {
            st = OMMA_FAIL(OMMA_ERR_FORMAT, "graph: output %d ('%s') does not depend on an input",
                           i, tname(g, g->outputs[i]));
            goto done;
        }
done:
    free(c.produced_at);
    free(c.is_static);
    free(c.is_input);
    return st;
}
