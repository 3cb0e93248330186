/* Building the graph IR from a TFLite model read by tflite.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/graph.h"
#include "model/tflite.h"

/* TFLite's SAME split: the odd pixel goes after (bottom/right). */
static void same_pads(int size, int k, int stride, int dil, int *before, int *after)
{
    int ke = (k - 1) * dil + 1;
    int out = (size + stride - 1) / stride;
    int total = (out - 1) * stride + ke - size;
    if (total < 0)
        total = 0;
    *before = total / 2;
    *after = total - total / 2;
}

static omma_status map_act(int op_index, const char *op, tfl_activation a, gr_act *out)
{
    switch (a) {
    case TFL_ACT_NONE: *out = GR_ACT_NONE; return OMMA_OK;
    case TFL_ACT_RELU: *out = GR_ACT_RELU; return OMMA_OK;
    case TFL_ACT_RELU6: *out = GR_ACT_RELU6; return OMMA_OK;
    }
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "model op %d (%s): fused activation %d", op_index, op,
                     (int)a);
}

/* Checks the operator's tensor index k of its inputs (or outputs) exists. */
static omma_status operand(const tfl_model *m, int op_index, const tfl_operator *o, bool is_in,
                           int k, bool optional, int *out)
{
    int n = is_in ? o->n_inputs : o->n_outputs;
    const char *what = is_in ? "input" : "output";
    const char *name = tfl_opcode_name((int)o->opcode);
    if (k >= n) {
        if (optional) {
            *out = -1;
            return OMMA_OK;
        }
        return OMMA_FAIL(OMMA_ERR_FORMAT, "model op %d (%s): has %d %ss, needs %s %d", op_index,
                         name, n, what, what, k);
    }
    int t = is_in ? o->inputs[k] : o->outputs[k];
    if (t < 0 && optional) {
        *out = -1;
        return OMMA_OK;
    }
    if (t < 0 || t >= m->n_tensors)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "model op %d (%s): %s %d names tensor %d of %d",
                         op_index, name, what, k, t, m->n_tensors);
    *out = t;
    return OMMA_OK;
}

static omma_status const_i32(const tfl_model *m, int op_index, const char *op, int t,
                             size_t want, const int32_t **vals)
{
    const tfl_tensor *tt = &m->tensors[t];
    if (!tt->data || tt->type != TFL_INT32)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "model op %d (%s): operand '%s' must be a constant int32 tensor",
                         op_index, op, tt->name);
    if (tt->data_size != want * 4)
        return OMMA_FAIL(OMMA_ERR_FORMAT,
                         "model op %d (%s): operand '%s' has %zu bytes, expected %zu", op_index,
                         op, tt->name, tt->data_size, want * 4);
    *vals = (const int32_t *)(const void *)tt->data;
    return OMMA_OK;
}

static int32_t read_i32(const int32_t *p, size_t i)
{
    int32_t v;
    memcpy(&v, (const unsigned char *)p + 4 * i, 4); /* file data may be unaligned */
    return v;
}

/* STRIDED_SLICE with constant begin, end and strides (TFLite's rules for
 * negative indices, clamping and the begin/end masks), positive strides, the
 * batch dimension taken whole; the output's dims must be the counts. */
static omma_status build_slice(const tfl_model *m, const gr_graph *g, int idx,
                               const tfl_operator *o, gr_node *n)
{
    const char *name = tfl_opcode_name((int)o->opcode);
    const gr_tensor *x = &g->tensors[n->in[0]], *y = &g->tensors[n->out];
    const int32_t *v[3] = {NULL, NULL, NULL};
    static const char *const what[3] = {"begin", "end", "strides"};
    for (int k = 0; k < 3; k++) {
        int t;
        OMMA_TRY(operand(m, idx, o, true, k + 1, false, &t));
        OMMA_TRY(const_i32(m, idx, name, t, (size_t)x->rank, &v[k]));
    }
    if (y->rank != x->rank)
        return OMMA_FAIL(OMMA_ERR_FORMAT,
                         "model op %d (%s): input '%s' and output '%s' differ in rank", idx, name,
                         x->name, y->name);
    for (int d = 0; d < x->rank; d++) {
        long long dim = x->dims[d], b = read_i32(v[0], (size_t)d), e = read_i32(v[1], (size_t)d);
        long long st = read_i32(v[2], (size_t)d);
        if (st < 1)
            return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                             "model op %d (%s): %s %lld on dimension %d "
                             "(positive strides only)",
                             idx, name, what[2], st, d);
        if (o->opt.slice.begin_mask >> d & 1)
            b = 0;
        if (o->opt.slice.end_mask >> d & 1)
            e = dim;
        if (b < 0)
            b += dim;
        if (e < 0)
            e += dim;
        b = b < 0 ? 0 : b > dim ? dim : b;
        e = e < 0 ? 0 : e > dim ? dim : e;
        long long count = e > b ? (e - b + st - 1) / st : 0;
        if (count != y->dims[d])
            return OMMA_FAIL(OMMA_ERR_FORMAT,
                             "model op %d (%s): dimension %d takes %lld of %lld from %lld by %lld, "
                             "output '%s' has %d",
                             idx, name, d, count, dim, b, st, y->name, y->dims[d]);
        if (d == 0 && (b != 0 || count != dim))
            return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "model op %d (%s): slicing the batch dimension",
                             idx, name);
        n->p.slice.begin[d] = (int)b;
        n->p.slice.stride[d] = (int)st;
    }
    return OMMA_OK;
}

static omma_status build_node(const tfl_model *m, const gr_graph *g, int idx, gr_node *n)
{
    const tfl_operator *o = &m->operators[idx];
    const char *name = tfl_opcode_name((int)o->opcode);
    memset(n, 0, sizeof *n);
    n->src_index = idx;
    for (int i = 0; i < GR_MAX_INPUTS; i++)
        n->in[i] = -1;
    OMMA_TRY(operand(m, idx, o, false, 0, false, &n->out));
    if (o->n_outputs != 1)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "model op %d (%s): %d outputs (omma handles 1)",
                         idx, name, o->n_outputs);
    OMMA_TRY(operand(m, idx, o, true, 0, false, &n->in[0]));
    n->n_in = 1;
    const gr_tensor *x = &g->tensors[n->in[0]];

    switch (o->opcode) {
    case TFL_CONV_2D:
    case TFL_DEPTHWISE_CONV_2D: {
        bool dw = o->opcode == TFL_DEPTHWISE_CONV_2D;
        n->op = dw ? GR_DWCONV2D : GR_CONV2D;
        n->n_in = 3;
        OMMA_TRY(operand(m, idx, o, true, 1, false, &n->in[1]));
        OMMA_TRY(operand(m, idx, o, true, 2, true, &n->in[2]));
        const gr_tensor *w = &g->tensors[n->in[1]];
        if (w->rank != 4 || x->rank != 4)
            return OMMA_FAIL(OMMA_ERR_FORMAT,
                             "model op %d (%s): input '%s' and filter '%s' must be 4-D (ranks %d, %d)",
                             idx, name, x->name, w->name, x->rank, w->rank);
        gr_window *win = &n->p.conv.win;
        tfl_padding pad = dw ? o->opt.dwconv.padding : o->opt.conv.padding;
        win->kh = w->dims[1];
        win->kw = w->dims[2];
        win->stride_h = dw ? o->opt.dwconv.stride_h : o->opt.conv.stride_h;
        win->stride_w = dw ? o->opt.dwconv.stride_w : o->opt.conv.stride_w;
        win->dil_h = dw ? o->opt.dwconv.dilation_h : o->opt.conv.dilation_h;
        win->dil_w = dw ? o->opt.dwconv.dilation_w : o->opt.conv.dilation_w;
        if (win->dil_h <= 0)
            win->dil_h = 1;
        if (win->dil_w <= 0)
            win->dil_w = 1;
        if (win->stride_h <= 0 || win->stride_w <= 0)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "model op %d (%s): stride %dx%d", idx, name,
                             win->stride_h, win->stride_w);
        if (pad == TFL_PAD_SAME) {
            same_pads(x->dims[1], win->kh, win->stride_h, win->dil_h, &win->pad_top,
                      &win->pad_bottom);
            same_pads(x->dims[2], win->kw, win->stride_w, win->dil_w, &win->pad_left,
                      &win->pad_right);
        }
        n->p.conv.residual = -1;
        n->p.conv.alpha = -1;
        if (dw) {
            int mult = o->opt.dwconv.depth_multiplier;
            if (mult <= 0 && x->dims[3] > 0) /* some converters leave it 0 */
                mult = w->dims[3] / x->dims[3];
            n->p.conv.depth_multiplier = mult;
        } else {
            n->p.conv.depth_multiplier = 1;
        }
        return map_act(idx, name, dw ? o->opt.dwconv.act : o->opt.conv.act, &n->p.conv.act);
    }
    case TFL_MAX_POOL_2D: {
        n->op = GR_MAXPOOL;
        gr_window *win = &n->p.pool.win;
        if (x->rank != 4)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "model op %d (%s): input '%s' must be 4-D", idx,
                             name, x->name);
        win->kh = o->opt.pool.filter_h;
        win->kw = o->opt.pool.filter_w;
        win->stride_h = o->opt.pool.stride_h;
        win->stride_w = o->opt.pool.stride_w;
        win->dil_h = win->dil_w = 1;
        if (win->kh <= 0 || win->kw <= 0 || win->stride_h <= 0 || win->stride_w <= 0)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "model op %d (%s): filter %dx%d stride %dx%d", idx,
                             name, win->kh, win->kw, win->stride_h, win->stride_w);
        if (o->opt.pool.padding == TFL_PAD_SAME) {
            same_pads(x->dims[1], win->kh, win->stride_h, 1, &win->pad_top, &win->pad_bottom);
            same_pads(x->dims[2], win->kw, win->stride_w, 1, &win->pad_left, &win->pad_right);
        }
        if (o->opt.pool.act != TFL_ACT_NONE)
            return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                             "model op %d (%s): fused activation on a pooling op", idx, name);
        return OMMA_OK;
    }
    case TFL_ADD:
        n->op = GR_ADD;
        n->n_in = 2;
        OMMA_TRY(operand(m, idx, o, true, 1, false, &n->in[1]));
        n->p.add.alpha = -1;
        return map_act(idx, name, o->opt.add.act, &n->p.add.act);
    case TFL_RELU:
        n->op = GR_RELU;
        return OMMA_OK;
    case TFL_PRELU:
        n->op = GR_PRELU;
        n->n_in = 2;
        return operand(m, idx, o, true, 1, false, &n->in[1]);
    case TFL_PAD: {
        n->op = GR_PAD;
        int pt;
        OMMA_TRY(operand(m, idx, o, true, 1, false, &pt));
        const int32_t *v = NULL; /* set by const_i32 when it succeeds */
        OMMA_TRY(const_i32(m, idx, name, pt, (size_t)x->rank * 2, &v));
        for (int d = 0; d < x->rank; d++) {
            n->p.pad.before[d] = read_i32(v, 2 * (size_t)d);
            n->p.pad.after[d] = read_i32(v, 2 * (size_t)d + 1);
            if (n->p.pad.before[d] < 0 || n->p.pad.after[d] < 0)
                return OMMA_FAIL(OMMA_ERR_FORMAT, "model op %d (%s): negative padding %d/%d on dim %d",
                                 idx, name, n->p.pad.before[d], n->p.pad.after[d], d);
        }
        return OMMA_OK;
    }
    case TFL_RESHAPE:
        n->op = GR_RESHAPE; /* the output tensor's shape is the new shape */
        return OMMA_OK;
    case TFL_CONCATENATION: {
        n->op = GR_CONCAT;
        if (o->n_inputs > GR_MAX_INPUTS)
            return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "model op %d (%s): %d inputs (at most %d)", idx,
                             name, o->n_inputs, GR_MAX_INPUTS);
        n->n_in = o->n_inputs;
        for (int k = 1; k < o->n_inputs; k++)
            OMMA_TRY(operand(m, idx, o, true, k, false, &n->in[k]));
        int axis = o->opt.concat.axis;
        if (axis < 0)
            axis += x->rank;
        if (axis < 0 || axis >= x->rank)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "model op %d (%s): axis %d for rank %d", idx, name,
                             o->opt.concat.axis, x->rank);
        n->p.concat.axis = axis;
        if (o->opt.concat.act != TFL_ACT_NONE)
            return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                             "model op %d (%s): fused activation on a concatenation", idx, name);
        return OMMA_OK;
    }
    case TFL_RESIZE_BILINEAR: {
        n->op = GR_RESIZE_BILINEAR;
        n->p.resize.align_corners = o->opt.resize.align_corners != 0;
        n->p.resize.half_pixel_centers = o->opt.resize.half_pixel_centers != 0;
        int st;
        OMMA_TRY(operand(m, idx, o, true, 1, false, &st));
        const int32_t *v = NULL; /* set by const_i32 when it succeeds */
        OMMA_TRY(const_i32(m, idx, name, st, 2, &v));
        const gr_tensor *y = &g->tensors[n->out];
        if (y->rank != 4 || read_i32(v, 0) != y->dims[1] || read_i32(v, 1) != y->dims[2])
            return OMMA_FAIL(OMMA_ERR_FORMAT,
                             "model op %d (%s): size (%d, %d) does not match output '%s'", idx,
                             name, read_i32(v, 0), read_i32(v, 1), y->name);
        return OMMA_OK;
    }
    case TFL_DEQUANTIZE:
        n->op = GR_DEQUANTIZE;
        return OMMA_OK;
    case TFL_LOGISTIC:
        n->op = GR_LOGISTIC;
        return OMMA_OK;
    case TFL_DEPTH_TO_SPACE:
        n->op = GR_DEPTH_TO_SPACE;
        n->p.d2s.block = o->opt.d2s.block_size;
        return OMMA_OK;
    case TFL_DENSIFY: /* folded by fold_densify, never a node */
        break;
    case TFL_MUL:
        n->op = GR_MUL;
        n->n_in = 2;
        OMMA_TRY(operand(m, idx, o, true, 1, false, &n->in[1]));
        n->p.add.alpha = -1;
        return map_act(idx, name, o->opt.mul.act, &n->p.add.act);
    case TFL_STRIDED_SLICE:
        n->op = GR_STRIDED_SLICE;
        return build_slice(m, g, idx, o, n);
    case TFL_CUSTOM_LANDMARKS_TO_MATRIX: {
        n->op = GR_LANDMARKS_TO_MATRIX;
        const struct tfl_l2m *l = &o->opt.l2m;
        n->p.l2m.left = l->left;
        n->p.l2m.right = l->right;
        n->p.l2m.out_h = l->out_h;
        n->p.l2m.out_w = l->out_w;
        n->p.l2m.scale_x = l->scale_x;
        n->p.l2m.scale_y = l->scale_y;
        n->p.l2m.target_rotation = l->target_rotation;
        if (l->n_subset < 1 || l->n_subset > GR_L2M_MAX_SUBSET)
            return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "model op %d (%s): %d subset pairs", idx, name,
                             l->n_subset);
        n->p.l2m.n_subset = l->n_subset;
        for (int k = 0; k < l->n_subset; k++)
            for (int j = 0; j < 2; j++) {
                if (l->subset[k][j] < 0 || l->subset[k][j] > 32767)
                    return OMMA_FAIL(OMMA_ERR_FORMAT, "model op %d (%s): subset index %d", idx,
                                     name, l->subset[k][j]);
                n->p.l2m.subset[k][j] = (short)l->subset[k][j];
            }
        return OMMA_OK;
    }
    case TFL_CUSTOM_TRANSFORM_BILINEAR:
    case TFL_CUSTOM_TRANSFORM_LANDMARKS: {
        bool bil = o->opcode == TFL_CUSTOM_TRANSFORM_BILINEAR;
        n->op = bil ? GR_TRANSFORM_BILINEAR : GR_TRANSFORM_LANDMARKS;
        n->n_in = 2;
        OMMA_TRY(operand(m, idx, o, true, 1, false, &n->in[1]));
        const gr_tensor *y = &g->tensors[n->out];
        if (bil && (y->rank != 4 || y->dims[1] != o->opt.bilinear.out_h ||
                    y->dims[2] != o->opt.bilinear.out_w))
            return OMMA_FAIL(OMMA_ERR_FORMAT,
                             "model op %d (%s): output_height %d / output_width %d do not match "
                             "output '%s'",
                             idx, name, o->opt.bilinear.out_h, o->opt.bilinear.out_w, y->name);
        return OMMA_OK;
    }
    }
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "model op %d: operator code %d", idx, (int)o->opcode);
}

static omma_status map_dtype(const tfl_tensor *t, int index, gr_dtype *out)
{
    switch (t->type) {
    case TFL_FLOAT32: *out = GR_F32; return OMMA_OK;
    case TFL_FLOAT16: *out = GR_F16; return OMMA_OK;
    case TFL_INT32: *out = GR_I32; return OMMA_OK;
    }
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "tensor %d ('%s'): type %d", index, t->name,
                     (int)t->type);
}

/* DENSIFY of a sparse constant (densified by the reader): its output
 * becomes a plain constant holding the same values, and no node is made. */
static omma_status fold_densify(const tfl_model *m, gr_graph *g, int idx)
{
    const tfl_operator *o = &m->operators[idx];
    int xi, yi;
    OMMA_TRY(operand(m, idx, o, true, 0, false, &xi));
    OMMA_TRY(operand(m, idx, o, false, 0, false, &yi));
    gr_tensor *x = &g->tensors[xi], *y = &g->tensors[yi];
    if (!x->data)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "model op %d (DENSIFY): input '%s' is not a constant", idx, x->name);
    if (y->data || y->producer >= 0 || xi == yi)
        return OMMA_FAIL(OMMA_ERR_FORMAT,
                         "model op %d (DENSIFY): output '%s' is a constant or written twice", idx,
                         y->name);
    if (x->dtype != y->dtype || gr_tensor_elems(x) != gr_tensor_elems(y) ||
        x->bytes != gr_tensor_elems(y) * gr_dtype_size(y->dtype))
        return OMMA_FAIL(OMMA_ERR_FORMAT,
                         "model op %d (DENSIFY): input '%s' (%s, %zu values) and output '%s' (%s, "
                         "%zu values) differ",
                         idx, x->name, gr_dtype_name(x->dtype), gr_tensor_elems(x), y->name,
                         gr_dtype_name(y->dtype), gr_tensor_elems(y));
    void *copy = malloc(x->bytes ? x->bytes : 1);
    if (!copy)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "model op %d (DENSIFY): %zu bytes", idx, x->bytes);
    memcpy(copy, x->data, x->bytes);
    y->data = copy;
    y->bytes = x->bytes;
    return OMMA_OK;
}

static omma_status build(const tfl_model *m, gr_graph *g)
{
    for (int i = 0; i < m->n_tensors; i++) {
        const tfl_tensor *t = &m->tensors[i];
        gr_dtype dt = GR_F32;
        OMMA_TRY(map_dtype(t, i, &dt));
        if (t->rank > GR_MAX_RANK)
            return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "tensor %d ('%s'): rank %d (at most %d)", i,
                             t->name ? t->name : "", t->rank, GR_MAX_RANK);
        OMMA_TRY(gr_add_tensor(g, t->name, t->rank, t->shape, dt, t->data, t->data_size, NULL));
    }
    for (int i = 0; i < m->n_operators; i++) {
        if (m->operators[i].opcode == TFL_DENSIFY) {
            OMMA_TRY(fold_densify(m, g, i));
            continue;
        }
        gr_node n;
        OMMA_TRY(build_node(m, g, i, &n));
        OMMA_TRY(gr_add_node(g, &n, NULL));
    }
    if (m->n_inputs > GR_MAX_IO || m->n_outputs > GR_MAX_IO)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "model has %d inputs and %d outputs (at most %d each)",
                         m->n_inputs, m->n_outputs, GR_MAX_IO);
    for (int i = 0; i < m->n_inputs; i++) {
        if (m->inputs[i] < 0 || m->inputs[i] >= m->n_tensors)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "model input %d names tensor %d of %d", i,
                             m->inputs[i], m->n_tensors);
        g->inputs[i] = m->inputs[i];
    }
    for (int i = 0; i < m->n_outputs; i++) {
        if (m->outputs[i] < 0 || m->outputs[i] >= m->n_tensors)
            return OMMA_FAIL(OMMA_ERR_FORMAT, "model output %d names tensor %d of %d", i,
                             m->outputs[i], m->n_tensors);
        g->outputs[i] = m->outputs[i];
    }
    g->n_inputs = m->n_inputs;
    g->n_outputs = m->n_outputs;
    /* Drop what no node uses (PAD paddings, RESHAPE shapes, resize sizes). */
    return gr_compact(g, NULL);
}

omma_status gr_build_tflite(const tfl_model *m, gr_graph **out)
{
    gr_graph *g = NULL;
    *out = NULL;
    OMMA_TRY(gr_create(&g));
    omma_status st = build(m, g);
    if (st == OMMA_OK)
        st = gr_validate(g);
    if (st != OMMA_OK) {
        gr_free(g);
        return st;
    }
    *out = g;
    return OMMA_OK;
}
