/* A graph's constants in one device allocation (see cuda_weights.h).
 *
 * Two passes over the nodes with the same walker: the first only measures
 * (offsets and total size), the second converts and re-lays every constant
 * into a host staging buffer at those offsets; then one cudaMalloc and one
 * copy, landed before the upload returns (upload()). Device memory is
 * obtained and released only in dev_alloc() and dev_free(), the place to
 * switch to the gpu layer's pools. */
#include "engine/cuda_weights.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "core/error.h"
#include "gpu/check.h"

#define W_ALIGN 128
#define NO_OFFSET ((size_t)-1)

static omma_status dev_alloc(void **p, size_t bytes)
{
    *p = NULL;
    return OMMA_CK(cudaMalloc(p, bytes));
}

static void dev_free(void *p)
{
    if (p)
        cudaFree(p);
}

/* Copies bytes from pageable host memory to dev and returns once they have
 * landed. Not a plain cudaMemcpy: from pageable memory it may return once
 * the data is staged, before the DMA to dev is done, and it is ordered on
 * the legacy default stream, which the non-blocking streams that run the
 * kernels (exec streams, the stream pool's) do not wait for; a kernel
 * launched right after could read the weights before they land (seen with
 * several processes sharing the GPU: partly stale filters, garbage outputs).
 * A private stream, synchronized, waits for exactly this copy. */
static omma_status upload(void *dev, const void *host, size_t bytes)
{
    cudaStream_t s = NULL;
    omma_status st = OMMA_CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    if (st != OMMA_OK)
        return st;
    st = OMMA_CK(cudaMemcpyAsync(dev, host, bytes, cudaMemcpyHostToDevice, s));
    if (st == OMMA_OK)
        st = OMMA_CK(cudaStreamSynchronize(s));
    cudaStreamDestroy(s);
    return st;
}

/* float to IEEE half, round to nearest even; overflow to inf, NaN kept. */
static uint16_t f32_to_f16(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    uint32_t ax = x & 0x7fffffffu;
    if (ax >= 0x7f800000u) /* inf, NaN */
        return (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
    if (ax >= 0x477ff000u) /* >= 65520 rounds to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (ax < 0x38800000u) { /* below 2^-14: a multiple of 2^-24 */
        float a;
        memcpy(&a, &ax, sizeof a);
        float s = a * 16777216.0f; /* exact, < 1024 */
        uint32_t r = (uint32_t)s;
        float frac = s - (float)r;
        if (frac > 0.5f || (frac == 0.5f && (r & 1u)))
            r++;
        return (uint16_t)(sign | r); /* r = 1024 is the smallest normal */
    }
    uint32_t h = ((ax >> 23) - 127u + 15u) << 10 | ((ax >> 13) & 0x3ffu);
    uint32_t rem = ax & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u)))
        h++; /* a carry into the exponent is still right */
    return (uint16_t)(sign | h);
}

/* The values of a tensor read as a constant. */
typedef struct values {
    const void *data;
    bool f16;
    size_t elems;
} values;

static bool values_of(const gr_graph *g, int t, values *v)
{
    if (t < 0 || t >= g->n_tensors)
        return false;
    const gr_tensor *x = &g->tensors[t];
    if (!x->data && x->producer >= 0 && x->producer < g->n_nodes &&
        g->nodes[x->producer].op == GR_DEQUANTIZE) {
        int s = g->nodes[x->producer].in[0];
        if (s >= 0 && s < g->n_tensors)
            x = &g->tensors[s];
    }
    if (!x->data || (x->dtype != GR_F32 && x->dtype != GR_F16))
        return false;
    v->data = x->data;
    v->f16 = x->dtype == GR_F16;
    v->elems = gr_tensor_elems(x);
    return true;
}

static float value_at(const values *v, size_t i)
{
    if (v->f16)
        return gr_half_to_float(((const unsigned short *)v->data)[i]);
    return ((const float *)v->data)[i];
}

/* The walker's state: host is NULL while measuring. */
typedef struct stage {
    const gr_graph *g;
    cuda_prec prec;
    unsigned char *host;
    size_t size;
    size_t (*node_off)[5]; /* filter, bias, alpha, dw filter, dw bias per node */
    size_t *tensor_off;
} stage;

static size_t reserve(stage *s, size_t bytes)
{
    size_t off = s->size;
    s->size += (bytes + W_ALIGN - 1) / W_ALIGN * W_ALIGN;
    return off;
}

static void put(stage *s, size_t off, cuda_prec prec, size_t i, float v)
{
    if (prec == CUDA_PREC_F16) {
        uint16_t h = f32_to_f16(v);
        memcpy(s->host + off + 2 * i, &h, 2);
    } else {
        memcpy(s->host + off + 4 * i, &v, 4);
    }
}

static omma_status need(const stage *s, int node, int t, const char *role, size_t elems,
                        values *v)
{
    const gr_graph *g = s->g;
    if (!values_of(g, t, v))
        return OMMA_FAIL(OMMA_ERR_UNSUPPORTED,
                         "cuda weights: node %d (%s): %s tensor %d ('%s') has no float constant value",
                         node, gr_op_name(g->nodes[node].op), role, t,
                         t >= 0 && t < g->n_tensors && g->tensors[t].name ? g->tensors[t].name : "?");
    if (elems && v->elems != elems)
        return OMMA_FAIL(OMMA_ERR_FORMAT,
                         "cuda weights: node %d (%s): %s '%s' has %zu values, expected %zu", node,
                         gr_op_name(g->nodes[node].op), role, g->tensors[t].name, v->elems, elems);
    return OMMA_OK;
}

/* A float vector (bias, alpha) of n values. */
static omma_status add_floats(stage *s, int node, int slot, int t, const char *role, size_t n)
{
    values v = {0};
    OMMA_TRY(need(s, node, t, role, n, &v));
    size_t off = s->node_off[node][slot] = reserve(s, n * sizeof(float));
    if (s->host)
        for (size_t i = 0; i < n; i++)
            put(s, off, CUDA_PREC_F32, i, value_at(&v, i));
    return OMMA_OK;
}

/* A filter kept in its graph layout, in the storage precision, at slot. */
static omma_status add_plain_filter(stage *s, int node, int slot, int t)
{
    values v = {0};
    OMMA_TRY(need(s, node, t, "filter", gr_tensor_elems(&s->g->tensors[t]), &v));
    size_t off = s->node_off[node][slot] = reserve(s, v.elems * cuda_prec_size(s->prec));
    if (s->host)
        for (size_t i = 0; i < v.elems; i++)
            put(s, off, s->prec, i, value_at(&v, i));
    return OMMA_OK;
}

static omma_status add_filter(stage *s, int node)
{
    const gr_graph *g = s->g;
    const gr_node *n = &g->nodes[node];
    const gr_tensor *f = &g->tensors[n->in[1]];
    if (n->op == GR_DWCONV2D || cuda_conv_is_pointwise(g, n))
        return add_plain_filter(s, node, 0, n->in[1]);
    values v = {0};
    OMMA_TRY(need(s, node, n->in[1], "filter", gr_tensor_elems(f), &v));
    size_t es = cuda_prec_size(s->prec);
    /* OHWI -> [kh][kw][cin][coutp] */
    int cout = f->dims[0], kh = f->dims[1], kw = f->dims[2], cin = f->dims[3];
    size_t coutp = (size_t)(cout + CUDA_CONV_COUT_GROUP - 1) / CUDA_CONV_COUT_GROUP *
                   CUDA_CONV_COUT_GROUP;
    size_t taps = (size_t)kh * kw * cin;
    size_t off = s->node_off[node][0] = reserve(s, taps * coutp * es);
    if (s->host)
        for (int co = 0; co < cout; co++)
            for (size_t k = 0; k < taps; k++)
                put(s, off, s->prec, k * coutp + (size_t)co, value_at(&v, (size_t)co * taps + k));
    return OMMA_OK;
}

/* A constant operand, once per tensor, in the storage precision. */
static omma_status add_operand(stage *s, int node, int t)
{
    values v = {0};
    OMMA_TRY(need(s, node, t, "operand", 0, &v));
    if (s->tensor_off[t] != NO_OFFSET)
        return OMMA_OK;
    size_t off = s->tensor_off[t] = reserve(s, v.elems * cuda_prec_size(s->prec));
    if (s->host)
        for (size_t i = 0; i < v.elems; i++)
            put(s, off, s->prec, i, value_at(&v, i));
    return OMMA_OK;
}

static int channels(const gr_graph *g, int t)
{
    const gr_tensor *x = &g->tensors[t];
    return x->rank > 0 ? x->dims[x->rank - 1] : 1;
}

static omma_status walk(stage *s)
{
    const gr_graph *g = s->g;
    for (int i = 0; i < g->n_tensors; i++)
        s->tensor_off[i] = NO_OFFSET;
    for (int i = 0; i < g->n_nodes; i++) {
        const gr_node *n = &g->nodes[i];
        for (int k = 0; k < 5; k++)
            s->node_off[i][k] = NO_OFFSET;
        int cout = channels(g, n->out);
        switch (n->op) {
        case GR_CONV2D:
        case GR_DWCONV2D:
            OMMA_TRY(add_filter(s, i));
            if (n->in[2] >= 0)
                OMMA_TRY(add_floats(s, i, 1, n->in[2], "bias", (size_t)cout));
            if (n->p.conv.act == GR_ACT_PRELU)
                OMMA_TRY(add_floats(s, i, 2, n->p.conv.alpha, "alpha", (size_t)cout));
            break;
        case GR_DWPW:
            OMMA_TRY(add_plain_filter(s, i, 0, n->in[3]));
            if (n->in[4] >= 0)
                OMMA_TRY(add_floats(s, i, 1, n->in[4], "bias", (size_t)cout));
            if (n->p.conv.act == GR_ACT_PRELU)
                OMMA_TRY(add_floats(s, i, 2, n->p.conv.alpha, "alpha", (size_t)cout));
            OMMA_TRY(add_plain_filter(s, i, 3, n->in[1]));
            if (n->in[2] >= 0)
                OMMA_TRY(add_floats(s, i, 4, n->in[2], "depthwise bias",
                                    (size_t)channels(g, n->in[0])));
            break;
        case GR_ADD:
        case GR_MUL:
            for (int k = 0; k < 2; k++) {
                values v;
                if (values_of(g, n->in[k], &v))
                    OMMA_TRY(add_operand(s, i, n->in[k]));
            }
            if (n->p.add.act == GR_ACT_PRELU)
                OMMA_TRY(add_floats(s, i, 2, n->p.add.alpha, "alpha", (size_t)cout));
            break;
        case GR_PRELU:
            OMMA_TRY(add_floats(s, i, 2, n->in[1], "alpha", (size_t)cout));
            break;
        case GR_DEQUANTIZE:
            OMMA_TRY(add_operand(s, i, n->in[0]));
            break;
        default:
            break;
        }
    }
    return OMMA_OK;
}

void cuda_weights_free(cuda_weights *w)
{
    if (!w)
        return;
    dev_free(w->dev);
    free(w->nodes);
    free(w->consts);
    free(w);
}

omma_status cuda_weights_upload(const gr_graph *g, cuda_prec prec, cuda_weights **out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda weights: NULL out");
    *out = NULL;
    if (!g)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda weights: NULL graph");
    if (prec != CUDA_PREC_F32 && prec != CUDA_PREC_F16)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cuda weights: unknown precision %d", (int)prec);
    size_t nn = g->n_nodes > 0 ? (size_t)g->n_nodes : 1;
    size_t nt = g->n_tensors > 0 ? (size_t)g->n_tensors : 1;
    omma_status st = OMMA_OK;
    stage s = {.g = g, .prec = prec};
    cuda_weights *w = calloc(1, sizeof *w);
    s.node_off = malloc(nn * sizeof *s.node_off);
    s.tensor_off = malloc(nt * sizeof *s.tensor_off);
    if (w) {
        w->nodes = calloc(nn, sizeof *w->nodes);
        w->consts = calloc(nt, sizeof *w->consts);
    }
    if (!w || !s.node_off || !s.tensor_off || !w->nodes || !w->consts) {
        st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "cuda weights: tables for %d nodes", g->n_nodes);
        goto fail;
    }
    w->prec = prec;
    w->n_nodes = g->n_nodes;
    w->n_tensors = g->n_tensors;
    if ((st = walk(&s)) != OMMA_OK) /* measure */
        goto fail;
    size_t bytes = s.size ? s.size : W_ALIGN;
    s.host = calloc(1, bytes); /* zeros: padding of re-laid filters */
    if (!s.host) {
        st = OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "cuda weights: %zu bytes of staging", bytes);
        goto fail;
    }
    s.size = 0;
    if ((st = walk(&s)) != OMMA_OK) /* fill */
        goto fail;
    if ((st = dev_alloc(&w->dev, bytes)) != OMMA_OK)
        goto fail;
    w->bytes = bytes;
    if ((st = upload(w->dev, s.host, bytes)) != OMMA_OK)
        goto fail;
    unsigned char *base = w->dev;
    for (int i = 0; i < g->n_nodes; i++) {
        size_t *o = s.node_off[i];
        w->nodes[i].filter = o[0] != NO_OFFSET ? base + o[0] : NULL;
        w->nodes[i].bias = o[1] != NO_OFFSET ? (const float *)(const void *)(base + o[1]) : NULL;
        w->nodes[i].alpha = o[2] != NO_OFFSET ? (const float *)(const void *)(base + o[2]) : NULL;
        w->nodes[i].dw_filter = o[3] != NO_OFFSET ? base + o[3] : NULL;
        w->nodes[i].dw_bias = o[4] != NO_OFFSET ? (const float *)(const void *)(base + o[4]) : NULL;
    }
    for (int t = 0; t < g->n_tensors; t++)
        w->consts[t] = s.tensor_off[t] != NO_OFFSET ? base + s.tensor_off[t] : NULL;
    free(s.host);
    free(s.node_off);
    free(s.tensor_off);
    *out = w;
    return OMMA_OK;
fail:
    free(s.host);
    free(s.node_off);
    free(s.tensor_off);
    cuda_weights_free(w);
    return st;
}
