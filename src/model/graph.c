/* The graph IR container: tensors, nodes, copying, compaction, counting. */
#include "model/graph.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

omma_status gr_create(gr_graph **out)
{
    *out = calloc(1, sizeof(gr_graph));
    if (!*out)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "graph: allocating the graph");
    return OMMA_OK;
}

static void free_tensor(gr_tensor *t)
{
    free(t->name);
    free(t->data);
    t->name = NULL;
    t->data = NULL;
}

void gr_free(gr_graph *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->n_tensors; i++)
        free_tensor(&g->tensors[i]);
    free(g->tensors);
    free(g->nodes);
    free(g);
}

static char *dup_string(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static omma_status copy_tensor(gr_tensor *dst, const gr_tensor *src)
{
    *dst = *src;
    dst->name = NULL;
    dst->data = NULL;
    dst->name = dup_string(src->name ? src->name : "");
    if (!dst->name)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "graph: copying tensor name");
    if (src->data) {
        dst->data = malloc(src->bytes ? src->bytes : 1);
        if (!dst->data) {
            free_tensor(dst);
            return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "graph: copying %zu bytes of '%s'",
                             src->bytes, src->name);
        }
        memcpy(dst->data, src->data, src->bytes);
    }
    return OMMA_OK;
}

omma_status gr_clone(const gr_graph *g, gr_graph **out)
{
    gr_graph *c = NULL;
    *out = NULL;
    OMMA_TRY(gr_create(&c));
    c->tensors = calloc(g->n_tensors ? (size_t)g->n_tensors : 1, sizeof(gr_tensor));
    c->nodes = calloc(g->n_nodes ? (size_t)g->n_nodes : 1, sizeof(gr_node));
    if (!c->tensors || !c->nodes) {
        gr_free(c);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "graph: cloning");
    }
    c->cap_tensors = g->n_tensors ? g->n_tensors : 1;
    c->cap_nodes = g->n_nodes ? g->n_nodes : 1;
    for (int i = 0; i < g->n_tensors; i++) {
        omma_status st = copy_tensor(&c->tensors[i], &g->tensors[i]);
        if (st != OMMA_OK) {
            gr_free(c);
            return st;
        }
        c->n_tensors = i + 1;
    }
    if (g->n_nodes)
        memcpy(c->nodes, g->nodes, (size_t)g->n_nodes * sizeof(gr_node));
    c->n_nodes = g->n_nodes;
    c->n_inputs = g->n_inputs;
    c->n_outputs = g->n_outputs;
    memcpy(c->inputs, g->inputs, sizeof c->inputs);
    memcpy(c->outputs, g->outputs, sizeof c->outputs);
    *out = c;
    return OMMA_OK;
}

omma_status gr_add_tensor(gr_graph *g, const char *name, int rank, const int *dims,
                          gr_dtype dtype, const void *data, size_t bytes, int *index)
{
    if (rank < 0 || rank > GR_MAX_RANK)
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "graph: tensor '%s' has rank %d (at most %d)",
                         name ? name : "", rank, GR_MAX_RANK);
    if (g->n_tensors == g->cap_tensors) {
        int cap = g->cap_tensors ? 2 * g->cap_tensors : 64;
        gr_tensor *t = realloc(g->tensors, (size_t)cap * sizeof *t);
        if (!t)
            return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "graph: growing tensors to %d", cap);
        g->tensors = t;
        g->cap_tensors = cap;
    }
    gr_tensor src = {0};
    src.name = (char *)(name ? name : "");
    src.rank = rank;
    for (int d = 0; d < rank; d++)
        src.dims[d] = dims[d];
    src.dtype = dtype;
    src.data = (void *)data;
    src.bytes = data ? bytes : 0;
    src.producer = -1;
    OMMA_TRY(copy_tensor(&g->tensors[g->n_tensors], &src));
    if (index)
        *index = g->n_tensors;
    g->n_tensors++;
    return OMMA_OK;
}

omma_status gr_add_node(gr_graph *g, const gr_node *n, int *index)
{
    if (g->n_nodes == g->cap_nodes) {
        int cap = g->cap_nodes ? 2 * g->cap_nodes : 64;
        gr_node *nn = realloc(g->nodes, (size_t)cap * sizeof *nn);
        if (!nn)
            return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "graph: growing nodes to %d", cap);
        g->nodes = nn;
        g->cap_nodes = cap;
    }
    g->nodes[g->n_nodes] = *n;
    if (n->out >= 0 && n->out < g->n_tensors && g->tensors[n->out].producer < 0)
        g->tensors[n->out].producer = g->n_nodes;
    if (index)
        *index = g->n_nodes;
    g->n_nodes++;
    return OMMA_OK;
}

void gr_relink(gr_graph *g)
{
    for (int i = 0; i < g->n_tensors; i++)
        g->tensors[i].producer = -1;
    for (int i = 0; i < g->n_nodes; i++) {
        int o = g->nodes[i].out;
        if (o >= 0 && o < g->n_tensors && g->tensors[o].producer < 0)
            g->tensors[o].producer = i;
    }
}

/* The ops whose parameters are p.conv (residual and alpha included). */
static bool uses_conv_params(gr_op op)
{
    return op == GR_CONV2D || op == GR_DWCONV2D || op == GR_DWPW;
}

/* Pointers to every tensor-index field of a node, so that one loop can read
 * or renumber them all. */
static int node_fields(gr_node *n, int **f)
{
    int k = 0;
    for (int i = 0; i < n->n_in && i < GR_MAX_INPUTS; i++)
        f[k++] = &n->in[i];
    f[k++] = &n->out;
    if (uses_conv_params(n->op)) {
        f[k++] = &n->p.conv.residual;
        f[k++] = &n->p.conv.alpha;
    } else if (n->op == GR_ADD) {
        f[k++] = &n->p.add.alpha;
    }
    return k;
}

int gr_node_reads(const gr_node *n, int tensors[GR_MAX_INPUTS + 2])
{
    int k = 0;
    for (int i = 0; i < n->n_in && i < GR_MAX_INPUTS; i++)
        if (n->in[i] >= 0)
            tensors[k++] = n->in[i];
    if (uses_conv_params(n->op)) {
        if (n->p.conv.residual >= 0)
            tensors[k++] = n->p.conv.residual;
        if (n->p.conv.act == GR_ACT_PRELU && n->p.conv.alpha >= 0)
            tensors[k++] = n->p.conv.alpha;
    } else if (n->op == GR_ADD) {
        if (n->p.add.act == GR_ACT_PRELU && n->p.add.alpha >= 0)
            tensors[k++] = n->p.add.alpha;
    }
    return k;
}

void gr_count_uses(const gr_graph *g, int *counts)
{
    memset(counts, 0, (size_t)g->n_tensors * sizeof *counts);
    int r[GR_MAX_INPUTS + 2];
    for (int i = 0; i < g->n_nodes; i++) {
        int k = gr_node_reads(&g->nodes[i], r);
        for (int j = 0; j < k; j++)
            if (r[j] >= 0 && r[j] < g->n_tensors)
                counts[r[j]]++;
    }
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] >= 0 && g->outputs[i] < g->n_tensors)
            counts[g->outputs[i]]++;
}

omma_status gr_compact(gr_graph *g, const bool *drop)
{
    int *map = malloc((g->n_tensors ? (size_t)g->n_tensors : 1) * sizeof *map);
    if (!map)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "graph: compacting");
    gr_compact_map(g, drop, map);
    free(map);
    return OMMA_OK;
}

void gr_compact_map(gr_graph *g, const bool *drop, int *map)
{
    int nt = g->n_tensors;
    int kept = 0;
    for (int i = 0; i < g->n_nodes; i++)
        if (!drop || !drop[i])
            g->nodes[kept++] = g->nodes[i];
    g->n_nodes = kept;

    /* A tensor survives when a kept node, an input or an output names it. */
    for (int i = 0; i < nt; i++)
        map[i] = -1;
    int *f[GR_MAX_INPUTS + 3];
    for (int i = 0; i < g->n_nodes; i++) {
        int k = node_fields(&g->nodes[i], f);
        for (int j = 0; j < k; j++)
            if (*f[j] >= 0 && *f[j] < nt)
                map[*f[j]] = 0;
    }
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] >= 0 && g->inputs[i] < nt)
            map[g->inputs[i]] = 0;
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] >= 0 && g->outputs[i] < nt)
            map[g->outputs[i]] = 0;
    int nk = 0;
    for (int i = 0; i < nt; i++) {
        if (map[i] < 0) {
            free_tensor(&g->tensors[i]);
            continue;
        }
        map[i] = nk;
        g->tensors[nk++] = g->tensors[i];
    }
    g->n_tensors = nk;
    for (int i = 0; i < g->n_nodes; i++) {
        int k = node_fields(&g->nodes[i], f);
        for (int j = 0; j < k; j++)
            if (*f[j] >= 0 && *f[j] < nt)
                *f[j] = map[*f[j]];
    }
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] >= 0 && g->inputs[i] < nt)
            g->inputs[i] = map[g->inputs[i]];
    for (int i = 0; i < g->n_outputs; i++)
        if (g->outputs[i] >= 0 && g->outputs[i] < nt)
            g->outputs[i] = map[g->outputs[i]];
    gr_relink(g);
}

size_t gr_dtype_size(gr_dtype dt)
{
    switch (dt) {
    case GR_F32: return 4;
    case GR_F16: return 2;
    case GR_I32: return 4;
    }
    return 0;
}

size_t gr_tensor_elems(const gr_tensor *t)
{
    size_t n = 1;
    for (int d = 0; d < t->rank; d++)
        n *= (size_t)(t->dims[d] > 0 ? t->dims[d] : 0);
    return n;
}

bool gr_is_const(const gr_graph *g, int tensor)
{
    return tensor >= 0 && tensor < g->n_tensors && g->tensors[tensor].data != NULL;
}

const char *gr_op_name(gr_op op)
{
    static const char *const names[GR_OP_COUNT] = {
        [GR_CONV2D] = "CONV_2D",
        [GR_DWCONV2D] = "DEPTHWISE_CONV_2D",
        [GR_ADD] = "ADD",
        [GR_RELU] = "RELU",
        [GR_PRELU] = "PRELU",
        [GR_MAXPOOL] = "MAX_POOL_2D",
        [GR_PAD] = "PAD",
        [GR_RESHAPE] = "RESHAPE",
        [GR_CONCAT] = "CONCATENATION",
        [GR_RESIZE_BILINEAR] = "RESIZE_BILINEAR",
        [GR_DEQUANTIZE] = "DEQUANTIZE",
        [GR_DWPW] = "DW_PW_BLOCK",
        [GR_LOGISTIC] = "LOGISTIC",
        [GR_DEPTH_TO_SPACE] = "DEPTH_TO_SPACE",
        [GR_MUL] = "MUL",
        [GR_STRIDED_SLICE] = "STRIDED_SLICE",
        [GR_LANDMARKS_TO_MATRIX] = "LANDMARKS_TO_MATRIX",
        [GR_TRANSFORM_BILINEAR] = "TRANSFORM_BILINEAR",
        [GR_TRANSFORM_LANDMARKS] = "TRANSFORM_LANDMARKS",
    };
    if ((int)op < 0 || op >= GR_OP_COUNT)
        return "UNKNOWN";
    return names[op];
}

const char *gr_act_name(gr_act act)
{
    switch (act) {
    case GR_ACT_NONE: return "none";
    case GR_ACT_RELU: return "relu";
    case GR_ACT_RELU6: return "relu6";
    case GR_ACT_PRELU: return "prelu";
    }
    return "unknown";
}

const char *gr_dtype_name(gr_dtype dt)
{
    switch (dt) {
    case GR_F32: return "float32";
    case GR_F16: return "float16";
    case GR_I32: return "int32";
    }
    return "unknown";
}

const char *gr_dims_str(const gr_tensor *t, char *buf, size_t size)
{
    size_t used = 0;
    if (!size)
        return buf;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < t->rank && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, "%s%d", d ? ", " : "", t->dims[d]);
    if (used < size)
        snprintf(buf + used, size - used, "]");
    return buf;
}

void gr_op_counts(const gr_graph *g, int *counts)
{
    memset(counts, 0, GR_OP_COUNT * sizeof *counts);
    for (int i = 0; i < g->n_nodes; i++)
        if ((int)g->nodes[i].op >= 0 && g->nodes[i].op < GR_OP_COUNT)
            counts[g->nodes[i].op]++;
}

size_t gr_param_count(const gr_graph *g)
{
    bool *seen = calloc(g->n_tensors ? (size_t)g->n_tensors : 1, 1);
    size_t n = 0;
    int r[GR_MAX_INPUTS + 2];
    for (int i = 0; seen && i < g->n_nodes; i++) {
        int k = gr_node_reads(&g->nodes[i], r);
        for (int j = 0; j < k; j++) {
            const gr_tensor *t = &g->tensors[r[j]];
            if (seen[r[j]] || !t->data || t->dtype == GR_I32)
                continue;
            seen[r[j]] = true;
            n += gr_tensor_elems(t);
        }
    }
    free(seen);
    return n;
}

float gr_half_to_float(unsigned short h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    uint32_t bits;
    if (exp == 0x1f) {
        bits = sign | 0x7f800000u | (man << 13); /* inf, NaN (payload kept) */
    } else if (exp != 0) {
        bits = sign | ((exp + 112u) << 23) | (man << 13);
    } else if (man == 0) {
        bits = sign; /* +-0 */
    } else {
        /* Subnormal: normalize the mantissa. */
        int e = -1;
        do {
            man <<= 1;
            e++;
        } while (!(man & 0x400u));
        bits = sign | ((uint32_t)(112 - e) << 23) | ((man & 0x3ffu) << 13);
    }
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}
