/* The CPU reference implementation of the graph IR ops: plain loops, fp32,
 * NHWC, TFLite's reference arithmetic. Every output element is computed by
 * one loop nest whose summation order (filter row, filter column, input
 * channel) does not depend on the batch, so results are bit-identical for
 * any batch size. */
#include "engine/cpu_ops.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* What is being run, for messages: "cpu CONV2D (model op 12)", and the
 * threads it runs on (NULL: the caller alone). */
typedef struct cpu_ctx {
    const gr_graph *g;
    const gr_node *n;
    int batch;
    cpu_pool *pool;
} cpu_ctx;

/* The fewest multiply-adds (or elements) worth a thread of their own: a
 * part of a job should outweigh waking a worker (some microseconds). */
#define CPU_GRAIN_WORK 32768L

/* Rows of cost `row_cost` each, in parts of at least CPU_GRAIN_WORK. */
static long grain_rows(long row_cost)
{
    return row_cost >= CPU_GRAIN_WORK ? 1 : CPU_GRAIN_WORK / (row_cost > 0 ? row_cost : 1);
}

static omma_status cpu_fail(const cpu_ctx *c, omma_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static omma_status cpu_fail(const cpu_ctx *c, omma_status st, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return OMMA_FAIL(st, "cpu %s (model op %d): %s", gr_op_name(c->n->op), c->n->src_index, msg);
}

static const gr_tensor *tensor(const cpu_ctx *c, int t) { return &c->g->tensors[t]; }

static size_t item_elems(const gr_tensor *t)
{
    size_t e = 1;
    for (int d = 1; d < t->rank; d++)
        e *= (size_t)t->dims[d];
    return e;
}

/* Whether a tensor depends on a graph input (has a batch dimension at run
 * time); constants and tensors computed from constants only do not. */
static bool cpu_batched(const gr_graph *g, int t, int depth)
{
    if (t < 0 || t >= g->n_tensors || g->tensors[t].data)
        return false;
    for (int i = 0; i < g->n_inputs; i++)
        if (g->inputs[i] == t)
            return true;
    int p = g->tensors[t].producer;
    if (p < 0 || p >= g->n_nodes || depth > 64)
        return true; /* unknown: assume an activation */
    int r[GR_MAX_INPUTS + 2];
    int k = gr_node_reads(&g->nodes[p], r);
    for (int j = 0; j < k; j++)
        if (cpu_batched(g, r[j], depth + 1))
            return true;
    return false;
}

/* An activation operand: the caller's buffer. */
static omma_status act_in(const cpu_ctx *c, const float *const *inputs, int k, const float **p)
{
    int t = c->n->in[k];
    if (t < 0 || t >= c->g->n_tensors)
        return cpu_fail(c, OMMA_ERR_INVALID_ARG, "input %d names tensor %d of %d", k, t,
                        c->g->n_tensors);
    if (tensor(c, t)->dtype != GR_F32)
        return cpu_fail(c, OMMA_ERR_UNSUPPORTED, "input %d '%s' is %s, expected float32", k,
                        tensor(c, t)->name, gr_dtype_name(tensor(c, t)->dtype));
    *p = inputs[k];
    if (!*p)
        return cpu_fail(c, OMMA_ERR_INVALID_ARG, "no buffer for input %d '%s'", k,
                        tensor(c, t)->name);
    return OMMA_OK;
}

/* A constant operand (filter, bias, alpha): the caller's buffer when given
 * (a constant computed at run time, e.g. by DEQUANTIZE), else the tensor's
 * fp32 data. `want` elements are checked. */
static omma_status const_in(const cpu_ctx *c, const float *given, int t, const char *role,
                            size_t want, const float **p)
{
    if (t < 0 || t >= c->g->n_tensors)
        return cpu_fail(c, OMMA_ERR_INVALID_ARG, "%s names tensor %d of %d", role, t,
                        c->g->n_tensors);
    const gr_tensor *x = tensor(c, t);
    if (x->dtype != GR_F32)
        return cpu_fail(c, OMMA_ERR_UNSUPPORTED, "%s '%s' is %s, expected float32", role,
                        x->name, gr_dtype_name(x->dtype));
    if (gr_tensor_elems(x) != want)
        return cpu_fail(c, OMMA_ERR_FORMAT, "%s '%s' has %zu values, expected %zu", role,
                        x->name, gr_tensor_elems(x), want);
    *p = given ? given : (const float *)x->data;
    if (!*p)
        return cpu_fail(c, OMMA_ERR_INVALID_ARG, "no data for %s '%s'", role, x->name);
    return OMMA_OK;
}

static omma_status want_rank4(const cpu_ctx *c, const gr_tensor *t, const char *role)
{
    if (t->rank != 4)
        return cpu_fail(c, OMMA_ERR_FORMAT, "%s '%s' has rank %d, expected 4", role, t->name,
                        t->rank);
    return OMMA_OK;
}

/* Output size of a window along one dimension (0 if it does not fit). */
static int window_out(int size, int pad_a, int pad_b, int k, int stride, int dil)
{
    long long span = (long long)size + pad_a + pad_b - ((long long)(k - 1) * dil + 1);
    return span < 0 ? 0 : (int)(span / stride + 1);
}

static omma_status check_window(const cpu_ctx *c, const gr_window *w, int H, int W, int OH,
                                int OW, const char *out_name)
{
    if (w->kh < 1 || w->kw < 1 || w->stride_h < 1 || w->stride_w < 1 || w->dil_h < 1 ||
        w->dil_w < 1 || w->pad_top < 0 || w->pad_left < 0 || w->pad_bottom < 0 ||
        w->pad_right < 0)
        return cpu_fail(c, OMMA_ERR_FORMAT, "window %dx%d stride %dx%d dilation %dx%d padding "
                        "%d,%d,%d,%d", w->kh, w->kw, w->stride_h, w->stride_w, w->dil_h,
                        w->dil_w, w->pad_top, w->pad_left, w->pad_bottom, w->pad_right);
    int oh = window_out(H, w->pad_top, w->pad_bottom, w->kh, w->stride_h, w->dil_h);
    int ow = window_out(W, w->pad_left, w->pad_right, w->kw, w->stride_w, w->dil_w);
    if (oh != OH || ow != OW)
        return cpu_fail(c, OMMA_ERR_FORMAT, "the window gives %dx%d, output '%s' is %dx%d", oh,
                        ow, out_name, OH, OW);
    return OMMA_OK;
}

static float act_apply(gr_act act, float v, const float *alpha, int ch)
{
    switch (act) {
    case GR_ACT_RELU: return v > 0.0f ? v : 0.0f;
    case GR_ACT_RELU6: return v > 0.0f ? (v < 6.0f ? v : 6.0f) : 0.0f;
    case GR_ACT_PRELU: return v >= 0.0f ? v : v * alpha[ch];
    case GR_ACT_NONE: break;
    }
    return v;
}

static omma_status check_act(const cpu_ctx *c, gr_act act, int alpha_t, int channels,
                             const float **alpha)
{
    *alpha = NULL;
    if ((int)act < GR_ACT_NONE || act > GR_ACT_PRELU)
        return cpu_fail(c, OMMA_ERR_UNSUPPORTED, "activation %d", (int)act);
    if (act != GR_ACT_PRELU)
        return OMMA_OK;
    return const_in(c, NULL, alpha_t, "alpha", (size_t)channels, alpha);
}

/* ---- convolutions ---------------------------------------------------- */

/* A convolution's operands, checked, for its parts (output rows). */
typedef struct conv_job {
    const gr_node *n;
    const gr_window *w;
    const float *x, *f, *bias, *residual, *alpha;
    const float *ft; /* not depthwise: f as [KH][KW][C][OC] */
    float *scratch; /* OC floats per part: one pixel's sums */
    float *out;
    bool dw;
    int mult, H, W, C, OH, OW, OC;
} conv_job;

/* Output rows [r0, r1) of a convolution, row r = item r / OH, y r % OH. */
static void conv_rows(void *arg, int part, long r0, long r1)
{
    const conv_job *j = arg;
    const gr_window *w = j->w;
    const float *f = j->f, *ft = j->ft, *bias = j->bias, *residual = j->residual, *alpha = j->alpha;
    int H = j->H, W = j->W, C = j->C, OH = j->OH, OW = j->OW, OC = j->OC, mult = j->mult;
    int KH = w->kh, KW = w->kw;
    bool dw = j->dw;
    float *out = j->out;
    /* A pixel's OC sums side by side: each adds its terms in (ky, kx, ic)
     * order, as one sum per channel would (bitwise), in vector lanes. */
    float *acc = j->scratch + (size_t)part * (size_t)OC;
    for (long r = r0; r < r1; r++) {
        int b = (int)(r / OH), oy = (int)(r % OH);
        const float *xb = j->x + (size_t)b * H * W * C;
        for (int ox = 0; ox < OW; ox++) {
            size_t o = (((size_t)b * OH + oy) * OW + ox) * OC;
            int y0 = oy * w->stride_h - w->pad_top, x0 = ox * w->stride_w - w->pad_left;
            for (int oc = 0; oc < OC; oc++)
                acc[oc] = 0.0f;
            for (int ky = 0; ky < KH; ky++) {
                int iy = y0 + ky * w->dil_h;
                if (iy < 0 || iy >= H)
                    continue; /* zero padding */
                for (int kx = 0; kx < KW; kx++) {
                    int ix = x0 + kx * w->dil_w;
                    if (ix < 0 || ix >= W)
                        continue;
                    const float *px = xb + ((size_t)iy * W + ix) * C;
                    if (dw) {
                        const float *pf = f + ((size_t)ky * KW + kx) * OC;
                        if (mult == 1)
                            for (int oc = 0; oc < OC; oc++)
                                acc[oc] += px[oc] * pf[oc];
                        else
                            for (int oc = 0; oc < OC; oc++)
                                acc[oc] += px[oc / mult] * pf[oc];
                    } else {
                        const float *pf = ft + ((size_t)ky * KW + kx) * C * OC;
                        for (int ic = 0; ic < C; ic++) {
                            const float xv = px[ic];
                            const float *pw = pf + (size_t)ic * OC;
                            for (int oc = 0; oc < OC; oc++)
                                acc[oc] += xv * pw[oc];
                        }
                    }
                }
            }
            /* Epilogue in the IR's order: act(acc + bias + residual). */
            for (int oc = 0; oc < OC; oc++) {
                float v = acc[oc];
                if (bias)
                    v += bias[oc];
                if (residual)
                    v += residual[o + oc];
                out[o + oc] = act_apply(j->n->p.conv.act, v, alpha, oc);
            }
        }
    }
}

static omma_status run_conv(const cpu_ctx *c, const float *const *inputs, const float *residual,
                            float *out)
{
    const gr_node *n = c->n;
    bool dw = n->op == GR_DWCONV2D;
    if (n->n_in < 2)
        return cpu_fail(c, OMMA_ERR_FORMAT, "has %d inputs, expected input, filter, bias", n->n_in);
    const gr_tensor *xt = tensor(c, n->in[0]), *wt = tensor(c, n->in[1]), *yt = tensor(c, n->out);
    OMMA_TRY(want_rank4(c, xt, "input"));
    OMMA_TRY(want_rank4(c, wt, "filter"));
    OMMA_TRY(want_rank4(c, yt, "output"));
    const gr_window *w = &n->p.conv.win;
    int H = xt->dims[1], W = xt->dims[2], C = xt->dims[3];
    int OH = yt->dims[1], OW = yt->dims[2], OC = yt->dims[3];
    int mult = dw ? n->p.conv.depth_multiplier : 1;
    if (w->kh != wt->dims[1] || w->kw != wt->dims[2])
        return cpu_fail(c, OMMA_ERR_FORMAT, "window %dx%d for filter '%s' %dx%d", w->kh, w->kw,
                        wt->name, wt->dims[1], wt->dims[2]);
    OMMA_TRY(check_window(c, w, H, W, OH, OW, yt->name));
    if (dw ? (mult < 1 || wt->dims[0] != 1 || wt->dims[3] != C * mult || OC != C * mult)
           : (wt->dims[3] != C || wt->dims[0] != OC))
        return cpu_fail(c, OMMA_ERR_FORMAT, "filter '%s' [%d, %d, %d, %d] does not fit input '%s' "
                        "(%d channels) and output '%s' (%d channels)", wt->name, wt->dims[0],
                        wt->dims[1], wt->dims[2], wt->dims[3], xt->name, C, yt->name, OC);
    const float *x, *f, *bias = NULL, *alpha;
    OMMA_TRY(act_in(c, inputs, 0, &x));
    OMMA_TRY(const_in(c, inputs[1], n->in[1], "filter", gr_tensor_elems(wt), &f));
    if (n->n_in > 2 && n->in[2] >= 0)
        OMMA_TRY(const_in(c, inputs[2], n->in[2], "bias", (size_t)OC, &bias));
    OMMA_TRY(check_act(c, n->p.conv.act, n->p.conv.alpha, OC, &alpha));
    if (n->p.conv.residual >= 0 && !residual)
        return cpu_fail(c, OMMA_ERR_INVALID_ARG, "no buffer for residual '%s'",
                        tensor(c, n->p.conv.residual)->name);
    if (n->p.conv.residual >= 0 && item_elems(tensor(c, n->p.conv.residual)) != item_elems(yt))
        return cpu_fail(c, OMMA_ERR_FORMAT, "residual '%s' differs from output '%s'",
                        tensor(c, n->p.conv.residual)->name, yt->name);
    if (n->p.conv.residual < 0)
        residual = NULL;

    /* The filter with output channels innermost, and each part's sums. */
    int parts = cpu_pool_threads(c->pool);
    size_t taps = (size_t)w->kh * w->kw;
    float *ft = dw ? NULL : malloc(taps * (size_t)C * (size_t)OC * sizeof *ft);
    float *acc = malloc((size_t)parts * (size_t)OC * sizeof *acc);
    if ((!dw && !ft) || !acc) {
        free(ft);
        free(acc);
        return cpu_fail(c, OMMA_ERR_OUT_OF_MEMORY, "convolution scratch (%zu x %d x %d floats)",
                        taps, C, OC);
    }
    for (int oc = 0; ft && oc < OC; oc++)
        for (size_t t = 0; t < taps; t++)
            for (int ic = 0; ic < C; ic++)
                ft[(t * (size_t)C + (size_t)ic) * (size_t)OC + (size_t)oc] =
                    f[((size_t)oc * taps + t) * (size_t)C + (size_t)ic];
    conv_job j = {n, w, x, f, bias, residual, alpha, ft, acc, out, dw, mult, H, W, C, OH, OW, OC};
    cpu_pool_run(c->pool, (long)c->batch * OH,
                 grain_rows((long)OW * OC * w->kh * w->kw * (dw ? 1 : C)), conv_rows, &j);
    free(ft);
    free(acc);
    return OMMA_OK;
}

/* The residual term of GR_DWPW at output pixel (oy, ox), channel ch of
 * batch item b: R there, or the max of R's 2x2 cells (in run_maxpool's
 * order) when pooled, and 0 for the channels R lacks. */
static float dwpw_residual(const float *r, const gr_tensor *rt, bool pool, int b, int oy, int ox,
                           int ch)
{
    int RH = rt->dims[1], RW = rt->dims[2], RC = rt->dims[3];
    if (ch >= RC)
        return 0.0f;
    if (!pool)
        return r[(((size_t)b * RH + oy) * RW + ox) * RC + ch];
    float m = -INFINITY;
    for (int ky = 0; ky < 2; ky++)
        for (int kx = 0; kx < 2; kx++) {
            float v = r[(((size_t)b * RH + 2 * oy + ky) * RW + 2 * ox + kx) * RC + ch];
            if (v > m)
                m = v;
        }
    return m;
}

/* Pixels whose pointwise sums a part computes together: each sum still
 * adds its terms in channel order (bitwise the unblocked result); the
 * block only lets the compiler run the pixels in vector lanes. */
#define DWPW_PIXELS 8

/* A GR_DWPW node's operands, checked, for its parts (output rows). */
typedef struct dwpw_job {
    const gr_node *n;
    const gr_window *w;
    const float *x, *df, *db, *pf, *pb, *residual, *alpha;
    const gr_tensor *rt;
    bool pool;
    float *scratch; /* C * (DWPW_PIXELS + 1) floats per part */
    float *out;
    int H, W, C, OH, OW, OC;
} dwpw_job;

/* Output rows [r0, r1) of a GR_DWPW node, row r = item r / OH, y r % OH. */
static void dwpw_rows(void *arg, int part, long r0, long r1)
{
    const dwpw_job *j = arg;
    const gr_window *w = j->w;
    const float *df = j->df, *db = j->db, *pf = j->pf, *pb = j->pb, *alpha = j->alpha;
    int H = j->H, W = j->W, C = j->C, OH = j->OH, OW = j->OW, OC = j->OC;
    int KH = w->kh, KW = w->kw;
    /* The part's scratch: one pixel's depthwise sums (C), then the
     * depthwise vectors of DWPW_PIXELS pixels, channel-major. */
    float *a = j->scratch + (size_t)part * (size_t)C * (DWPW_PIXELS + 1);
    float *d = a + C;
    for (long r = r0; r < r1; r++) {
        int b = (int)(r / OH), oy = (int)(r % OH);
        const float *xb = j->x + (size_t)b * H * W * C;
        for (int ox0 = 0; ox0 < OW; ox0 += DWPW_PIXELS) {
            int np = OW - ox0 < DWPW_PIXELS ? OW - ox0 : DWPW_PIXELS;
            for (int p = 0; p < np; p++) {
                int y0 = oy * w->stride_h - w->pad_top;
                int x0 = (ox0 + p) * w->stride_w - w->pad_left;
                for (int ch = 0; ch < C; ch++)
                    a[ch] = 0.0f;
                for (int ky = 0; ky < KH; ky++) {
                    int iy = y0 + ky * w->dil_h;
                    if (iy < 0 || iy >= H)
                        continue; /* zero padding */
                    for (int kx = 0; kx < KW; kx++) {
                        int ix = x0 + kx * w->dil_w;
                        if (ix < 0 || ix >= W)
                            continue;
                        const float *px = xb + ((size_t)iy * W + ix) * C;
                        const float *pw = df + ((size_t)ky * KW + kx) * C;
                        for (int ch = 0; ch < C; ch++)
                            a[ch] += px[ch] * pw[ch];
                    }
                }
                for (int ch = 0; ch < C; ch++)
                    d[(size_t)ch * DWPW_PIXELS + p] = db ? a[ch] + db[ch] : a[ch];
            }
            for (int oc = 0; oc < OC; oc++) {
                const float *pfo = pf + (size_t)oc * C;
                float acc[DWPW_PIXELS] = {0};
                for (int ic = 0; ic < C; ic++) {
                    const float wv = pfo[ic];
                    const float *dv = d + (size_t)ic * DWPW_PIXELS;
                    for (int p = 0; p < DWPW_PIXELS; p++)
                        acc[p] += dv[p] * wv;
                }
                for (int p = 0; p < np; p++) {
                    int ox = ox0 + p;
                    float v = acc[p];
                    if (pb)
                        v += pb[oc];
                    if (j->rt)
                        v += dwpw_residual(j->residual, j->rt, j->pool, b, oy, ox, oc);
                    j->out[(((size_t)b * OH + oy) * OW + ox) * OC + oc] =
                        act_apply(j->n->p.conv.act, v, alpha, oc);
                }
            }
        }
    }
}

/* GR_DWPW, computed as the two convolutions it replaces would be: per output
 * pixel the depthwise vector (run_conv's summation order, then its bias),
 * then each pointwise dot product with run_conv's epilogue, so results match
 * the unfused graph bit for bit. */
static omma_status run_dwpw(const cpu_ctx *c, const float *const *inputs, const float *residual,
                            float *out)
{
    const gr_node *n = c->n;
    if (n->n_in != 5)
        return cpu_fail(c, OMMA_ERR_FORMAT, "has %d inputs, expected input, depthwise filter, "
                        "depthwise bias, pointwise filter, pointwise bias", n->n_in);
    const gr_tensor *xt = tensor(c, n->in[0]), *dt = tensor(c, n->in[1]);
    const gr_tensor *pt = tensor(c, n->in[3]), *yt = tensor(c, n->out);
    OMMA_TRY(want_rank4(c, xt, "input"));
    OMMA_TRY(want_rank4(c, dt, "depthwise filter"));
    OMMA_TRY(want_rank4(c, pt, "pointwise filter"));
    OMMA_TRY(want_rank4(c, yt, "output"));
    const gr_window *w = &n->p.conv.win;
    int H = xt->dims[1], W = xt->dims[2], C = xt->dims[3];
    int OH = yt->dims[1], OW = yt->dims[2], OC = yt->dims[3];
    if (w->kh != dt->dims[1] || w->kw != dt->dims[2])
        return cpu_fail(c, OMMA_ERR_FORMAT, "window %dx%d for depthwise filter '%s' %dx%d",
                        w->kh, w->kw, dt->name, dt->dims[1], dt->dims[2]);
    OMMA_TRY(check_window(c, w, H, W, OH, OW, yt->name));
    if (n->p.conv.depth_multiplier != 1 || dt->dims[0] != 1 || dt->dims[3] != C ||
        pt->dims[0] != OC || pt->dims[1] != 1 || pt->dims[2] != 1 || pt->dims[3] != C)
        return cpu_fail(c, OMMA_ERR_FORMAT, "filters '%s' [%d, %d, %d, %d] (multiplier %d) and "
                        "'%s' [%d, %d, %d, %d] do not fit input '%s' (%d channels) and output "
                        "'%s' (%d channels)", dt->name, dt->dims[0], dt->dims[1], dt->dims[2],
                        dt->dims[3], n->p.conv.depth_multiplier, pt->name, pt->dims[0],
                        pt->dims[1], pt->dims[2], pt->dims[3], xt->name, C, yt->name, OC);
    const float *x, *df, *db = NULL, *pf, *pb = NULL, *alpha;
    OMMA_TRY(act_in(c, inputs, 0, &x));
    OMMA_TRY(const_in(c, inputs[1], n->in[1], "depthwise filter", gr_tensor_elems(dt), &df));
    if (n->in[2] >= 0)
        OMMA_TRY(const_in(c, inputs[2], n->in[2], "depthwise bias", (size_t)C, &db));
    OMMA_TRY(const_in(c, inputs[3], n->in[3], "pointwise filter", gr_tensor_elems(pt), &pf));
    if (n->in[4] >= 0)
        OMMA_TRY(const_in(c, inputs[4], n->in[4], "pointwise bias", (size_t)OC, &pb));
    OMMA_TRY(check_act(c, n->p.conv.act, n->p.conv.alpha, OC, &alpha));
    bool pool = n->p.conv.pool_residual;
    const gr_tensor *rt = NULL;
    if (n->p.conv.residual >= 0) {
        rt = tensor(c, n->p.conv.residual);
        int f = pool ? 2 : 1;
        if (rt->rank != 4 || rt->dims[1] != f * OH || rt->dims[2] != f * OW ||
            rt->dims[3] < 1 || rt->dims[3] > OC)
            return cpu_fail(c, OMMA_ERR_FORMAT, "residual '%s' does not fit output '%s' %dx%dx%d "
                            "(%s)", rt->name, yt->name, OH, OW, OC,
                            pool ? "pooled 2x2" : "not pooled");
        if (!residual)
            return cpu_fail(c, OMMA_ERR_INVALID_ARG, "no buffer for residual '%s'", rt->name);
    } else if (pool) {
        return cpu_fail(c, OMMA_ERR_FORMAT, "pool_residual without a residual");
    }
    /* Each part's depthwise sums and vectors (zeroed: the lanes past a
     * row's last pixel are computed on zeros and never stored). */
    int parts = cpu_pool_threads(c->pool);
    float *d = calloc((size_t)parts * (size_t)C * (DWPW_PIXELS + 1), sizeof *d);
    if (!d)
        return cpu_fail(c, OMMA_ERR_OUT_OF_MEMORY, "%d x %d floats of depthwise scratch", parts,
                        C * (DWPW_PIXELS + 1));
    dwpw_job j = {n, w, x, df, db, pf, pb, residual, alpha, rt, pool, d, out, H, W, C, OH, OW, OC};
    cpu_pool_run(c->pool, (long)c->batch * OH, grain_rows((long)OW * C * (w->kh * w->kw + OC)),
                 dwpw_rows, &j);
    free(d);
    return OMMA_OK;
}

/* ---- pooling ----------------------------------------------------------- */

typedef struct maxpool_job {
    const gr_window *w;
    const float *x;
    float *out;
    int H, W, C, OH, OW;
} maxpool_job;

/* Output rows [r0, r1) of a max-pool, row r = item r / OH, y r % OH. */
static void maxpool_rows(void *arg, int part, long r0, long r1)
{
    (void)part;
    const maxpool_job *j = arg;
    const gr_window *w = j->w;
    const float *x = j->x;
    int H = j->H, W = j->W, C = j->C, OH = j->OH, OW = j->OW;
    for (long r = r0; r < r1; r++) {
        int b = (int)(r / OH), oy = (int)(r % OH);
        for (int ox = 0; ox < OW; ox++) {
            int y0 = oy * w->stride_h - w->pad_top, x0 = ox * w->stride_w - w->pad_left;
            float *po = j->out + (((size_t)b * OH + oy) * OW + ox) * C;
            for (int ch = 0; ch < C; ch++) {
                /* Padded cells are ignored (TFLite starts at the lowest float). */
                float m = -INFINITY;
                for (int ky = 0; ky < w->kh; ky++) {
                    int iy = y0 + ky;
                    if (iy < 0 || iy >= H)
                        continue;
                    for (int kx = 0; kx < w->kw; kx++) {
                        int ix = x0 + kx;
                        if (ix < 0 || ix >= W)
                            continue;
                        float v = x[(((size_t)b * H + iy) * W + ix) * C + ch];
                        if (v > m)
                            m = v;
                    }
                }
                po[ch] = m;
            }
        }
    }
}

static omma_status run_maxpool(const cpu_ctx *c, const float *const *inputs, float *out)
{
    const gr_node *n = c->n;
    const gr_tensor *xt = tensor(c, n->in[0]), *yt = tensor(c, n->out);
    OMMA_TRY(want_rank4(c, xt, "input"));
    OMMA_TRY(want_rank4(c, yt, "output"));
    const gr_window *w = &n->p.pool.win;
    int H = xt->dims[1], W = xt->dims[2], C = xt->dims[3];
    int OH = yt->dims[1], OW = yt->dims[2];
    if (yt->dims[3] != C || w->dil_h != 1 || w->dil_w != 1)
        return cpu_fail(c, OMMA_ERR_FORMAT, "input '%s' %d channels, output '%s' %d, dilation "
                        "%dx%d", xt->name, C, yt->name, yt->dims[3], w->dil_h, w->dil_w);
    OMMA_TRY(check_window(c, w, H, W, OH, OW, yt->name));
    const float *x;
    OMMA_TRY(act_in(c, inputs, 0, &x));
    maxpool_job j = {w, x, out, H, W, C, OH, OW};
    cpu_pool_run(c->pool, (long)c->batch * OH, grain_rows((long)OW * C * w->kh * w->kw),
                 maxpool_rows, &j);
    return OMMA_OK;
}

/* ---- element-wise ------------------------------------------------------ */

static omma_status run_add(const cpu_ctx *c, const float *const *inputs, float *out)
{
    const gr_node *n = c->n;
    if (n->n_in != 2)
        return cpu_fail(c, OMMA_ERR_FORMAT, "has %d inputs, expected 2", n->n_in);
    const gr_tensor *yt = tensor(c, n->out);
    size_t item = item_elems(yt);
    int C = yt->rank > 0 ? yt->dims[yt->rank - 1] : 1;
    const float *v[2];
    size_t stride[2];
    for (int k = 0; k < 2; k++) {
        int t = n->in[k];
        if (t < 0 || t >= c->g->n_tensors)
            return cpu_fail(c, OMMA_ERR_INVALID_ARG, "input %d names tensor %d", k, t);
        if (cpu_batched(c->g, t, 0)) {
            OMMA_TRY(act_in(c, inputs, k, &v[k]));
            if (item_elems(tensor(c, t)) != item)
                return cpu_fail(c, OMMA_ERR_FORMAT, "input '%s' and output '%s' differ in size",
                                tensor(c, t)->name, yt->name);
            stride[k] = item;
        } else { /* a constant: the same values for every batch item */
            OMMA_TRY(const_in(c, inputs[k], t, "constant input", item, &v[k]));
            stride[k] = 0;
        }
    }
    const float *alpha;
    OMMA_TRY(check_act(c, n->p.add.act, n->p.add.alpha, C, &alpha));
    for (int b = 0; b < c->batch; b++) {
        const float *a = v[0] + b * stride[0], *bb = v[1] + b * stride[1];
        float *y = out + (size_t)b * item;
        for (size_t i = 0; i < item; i++)
            y[i] = act_apply(n->p.add.act, a[i] + bb[i], alpha, C ? (int)(i % (size_t)C) : 0);
    }
    return OMMA_OK;
}

static omma_status run_relu(const cpu_ctx *c, const float *const *inputs, float *out)
{
    const float *x;
    OMMA_TRY(act_in(c, inputs, 0, &x));
    const gr_tensor *xt = tensor(c, c->n->in[0]), *yt = tensor(c, c->n->out);
    if (item_elems(xt) != item_elems(yt))
        return cpu_fail(c, OMMA_ERR_FORMAT, "input '%s' and output '%s' differ in size",
                        xt->name, yt->name);
    size_t total = (size_t)c->batch * item_elems(yt);
    for (size_t i = 0; i < total; i++)
        out[i] = x[i] > 0.0f ? x[i] : 0.0f;
    return OMMA_OK;
}

static omma_status run_logistic(const cpu_ctx *c, const float *const *inputs, float *out)
{
    const float *x;
    OMMA_TRY(act_in(c, inputs, 0, &x));
    const gr_tensor *xt = tensor(c, c->n->in[0]), *yt = tensor(c, c->n->out);
    if (item_elems(xt) != item_elems(yt))
        return cpu_fail(c, OMMA_ERR_FORMAT, "input '%s' and output '%s' differ in size",
                        xt->name, yt->name);
    size_t total = (size_t)c->batch * item_elems(yt);
    for (size_t i = 0; i < total; i++)
        out[i] = 1.0f / (1.0f + expf(-x[i]));
    return OMMA_OK;
}

static omma_status run_prelu(const cpu_ctx *c, const float *const *inputs, float *out)
{
    const gr_node *n = c->n;
    if (n->n_in != 2)
        return cpu_fail(c, OMMA_ERR_FORMAT, "has %d inputs, expected 2", n->n_in);
    const gr_tensor *xt = tensor(c, n->in[0]), *yt = tensor(c, n->out);
    if (item_elems(xt) != item_elems(yt) || xt->rank < 1)
        return cpu_fail(c, OMMA_ERR_FORMAT, "input '%s' and output '%s' differ in size",
                        xt->name, yt->name);
    int C = xt->dims[xt->rank - 1];
    const float *x, *alpha;
    OMMA_TRY(act_in(c, inputs, 0, &x));
    OMMA_TRY(const_in(c, inputs[1], n->in[1], "alpha", (size_t)C, &alpha));
    size_t total = (size_t)c->batch * item_elems(yt);
    for (size_t i = 0; i < total; i++)
        out[i] = act_apply(GR_ACT_PRELU, x[i], alpha, (int)(i % (size_t)C));
    return OMMA_OK;
}

/* ---- data movement ------------------------------------------------------ */

/* Dims padded on the left to rank 4, with the batch substituted. */
static void dims4(const gr_tensor *t, int batch, int d[4])
{
    int shift = 4 - t->rank;
    for (int i = 0; i < 4; i++)
        d[i] = i < shift ? 1 : t->dims[i - shift];
    if (t->rank > 0)
        d[shift] = batch;
}

static omma_status run_pad(const cpu_ctx *c, const float *const *inputs, float *out)
{
    const gr_node *n = c->n;
    const gr_tensor *xt = tensor(c, n->in[0]), *yt = tensor(c, n->out);
    if (xt->rank != yt->rank || xt->rank < 1 || xt->rank > 4)
        return cpu_fail(c, OMMA_ERR_FORMAT, "input '%s' rank %d, output '%s' rank %d", xt->name,
                        xt->rank, yt->name, yt->rank);
    if (n->p.pad.before[0] || n->p.pad.after[0])
        return cpu_fail(c, OMMA_ERR_UNSUPPORTED, "padding the batch dimension");
    int xd[4], yd[4], before[4] = {0};
    dims4(xt, c->batch, xd);
    dims4(yt, c->batch, yd);
    int shift = 4 - xt->rank;
    for (int d = 0; d < xt->rank; d++) {
        int p = n->p.pad.before[d], q = n->p.pad.after[d];
        if (p < 0 || q < 0 || (d > 0 && xt->dims[d] + p + q != yt->dims[d]))
            return cpu_fail(c, OMMA_ERR_FORMAT, "padding %d/%d on dimension %d: '%s' %d -> '%s' "
                            "%d", p, q, d, xt->name, xt->dims[d], yt->name, yt->dims[d]);
        before[shift + d] = p;
    }
    const float *x;
    OMMA_TRY(act_in(c, inputs, 0, &x));
    memset(out, 0, (size_t)yd[0] * yd[1] * yd[2] * yd[3] * sizeof *out);
    for (int i0 = 0; i0 < xd[0]; i0++)
        for (int i1 = 0; i1 < xd[1]; i1++)
            for (int i2 = 0; i2 < xd[2]; i2++) {
                size_t src = (((size_t)i0 * xd[1] + i1) * xd[2] + i2) * xd[3];
                size_t dst = ((((size_t)i0 + before[0]) * yd[1] + i1 + before[1]) * yd[2] + i2 +
                              before[2]) * yd[3] + before[3];
                memcpy(out + dst, x + src, (size_t)xd[3] * sizeof *out);
            }
    return OMMA_OK;
}

/* y[n, h*b + i, w*b + j, c] = x[n, h, w, (i*b + j)*C + c] (TFLite's DCR order). */
static omma_status run_depth_to_space(const cpu_ctx *c, const float *const *inputs, float *out)
{
    const gr_tensor *xt = tensor(c, c->n->in[0]), *yt = tensor(c, c->n->out);
    OMMA_TRY(want_rank4(c, xt, "input"));
    OMMA_TRY(want_rank4(c, yt, "output"));
    int b = c->n->p.d2s.block, H = xt->dims[1], W = xt->dims[2], C = yt->dims[3];
    if (b < 1 || yt->dims[1] != H * b || yt->dims[2] != W * b || xt->dims[3] != C * b * b)
        return cpu_fail(c, OMMA_ERR_FORMAT, "input '%s' %dx%dx%d, output '%s' %dx%dx%d, block %d",
                        xt->name, H, W, xt->dims[3], yt->name, yt->dims[1], yt->dims[2], C, b);
    const float *x;
    OMMA_TRY(act_in(c, inputs, 0, &x));
    for (int n = 0; n < c->batch; n++)
        for (int h = 0; h < H; h++)
            for (int w = 0; w < W; w++) {
                const float *px = x + (((size_t)n * H + h) * W + w) * (size_t)C * b * b;
                for (int i = 0; i < b; i++)
                    for (int j = 0; j < b; j++)
                        memcpy(out + (((size_t)n * H * b + (size_t)h * b + i) * W * b +
                                      (size_t)w * b + j) * C,
                               px + ((size_t)i * b + j) * C, (size_t)C * sizeof *out);
            }
    return OMMA_OK;
}

static omma_status run_reshape(const cpu_ctx *c, const float *const *inputs, float *out)
{
    const gr_tensor *xt = tensor(c, c->n->in[0]), *yt = tensor(c, c->n->out);
    if (item_elems(xt) != item_elems(yt))
        return cpu_fail(c, OMMA_ERR_FORMAT, "'%s' and '%s' differ in size", xt->name, yt->name);
    const float *x;
    OMMA_TRY(act_in(c, inputs, 0, &x));
    if (x != out)
        memmove(out, x, (size_t)c->batch * item_elems(yt) * sizeof *out);
    return OMMA_OK;
}

static omma_status run_concat(const cpu_ctx *c, const float *const *inputs, float *out)
{
    const gr_node *n = c->n;
    const gr_tensor *yt = tensor(c, n->out);
    int ax = n->p.concat.axis;
    if (ax < 1 || ax >= yt->rank || n->n_in < 1 || n->n_in > GR_MAX_INPUTS)
        return cpu_fail(c, OMMA_ERR_FORMAT, "axis %d of output '%s' rank %d, %d inputs", ax,
                        yt->name, yt->rank, n->n_in);
    /* [outer = batch x dims before the axis][dims[axis] x inner] */
    size_t outer = (size_t)c->batch, inner = 1;
    for (int d = 1; d < ax; d++)
        outer *= (size_t)yt->dims[d];
    for (int d = ax + 1; d < yt->rank; d++)
        inner *= (size_t)yt->dims[d];
    const float *x[GR_MAX_INPUTS];
    size_t run[GR_MAX_INPUTS], total = 0;
    for (int k = 0; k < n->n_in; k++) {
        OMMA_TRY(act_in(c, inputs, k, &x[k]));
        const gr_tensor *a = tensor(c, n->in[k]);
        bool ok = a->rank == yt->rank;
        for (int d = 1; ok && d < a->rank; d++)
            ok = d == ax || a->dims[d] == yt->dims[d];
        if (!ok)
            return cpu_fail(c, OMMA_ERR_FORMAT, "input %d '%s' does not fit output '%s' on axis "
                            "%d", k, a->name, yt->name, ax);
        run[k] = (size_t)a->dims[ax] * inner;
        total += run[k];
    }
    if (total != (size_t)yt->dims[ax] * inner)
        return cpu_fail(c, OMMA_ERR_FORMAT, "inputs add up to %zu along axis %d, output '%s' has "
                        "%d", total / (inner ? inner : 1), ax, yt->name, yt->dims[ax]);
    float *y = out;
    for (size_t o = 0; o < outer; o++)
        for (int k = 0; k < n->n_in; k++) {
            memcpy(y, x[k] + o * run[k], run[k] * sizeof *y);
            y += run[k];
        }
    return OMMA_OK;
}

/* TFLite's reference_ops::ComputeInterpolationValues, in float. */
static void resize_source(int o, float scale, bool half, int in, float *v, int *lo, int *hi)
{
    *v = half ? ((float)o + 0.5f) * scale - 0.5f : (float)o * scale;
    int f = (int)floorf(*v), cl = (int)ceilf(*v);
    *lo = f > 0 ? f : 0;
    *hi = cl < in - 1 ? cl : in - 1;
}

static float resize_scale(int in, int out, bool align_corners)
{
    if (align_corners && out > 1)
        return (float)(in - 1) / (float)(out - 1);
    return (float)in / (float)out;
}

typedef struct resize_job {
    const float *x;
    float *out;
    bool half;
    float sy, sx;
    int H, W, C, OH, OW;
} resize_job;

/* Output rows [r0, r1) of a bilinear resize, row r = item r / OH, y r % OH. */
static void resize_rows(void *arg, int part, long r0, long r1)
{
    (void)part;
    const resize_job *j = arg;
    int H = j->H, W = j->W, C = j->C, OH = j->OH, OW = j->OW;
    for (long r = r0; r < r1; r++) {
        int b = (int)(r / OH), oy = (int)(r % OH);
        const float *xb = j->x + (size_t)b * H * W * C;
        float fy;
        int y0, y1;
        resize_source(oy, j->sy, j->half, H, &fy, &y0, &y1);
        float ly = fy - (float)y0;
        for (int ox = 0; ox < OW; ox++) {
            float fx;
            int x0, x1;
            resize_source(ox, j->sx, j->half, W, &fx, &x0, &x1);
            float lx = fx - (float)x0;
            const float *p00 = xb + ((size_t)y0 * W + x0) * C;
            const float *p01 = xb + ((size_t)y0 * W + x1) * C;
            const float *p10 = xb + ((size_t)y1 * W + x0) * C;
            const float *p11 = xb + ((size_t)y1 * W + x1) * C;
            float *po = j->out + (((size_t)b * OH + oy) * OW + ox) * C;
            for (int ch = 0; ch < C; ch++)
                po[ch] = p00[ch] * (1.0f - ly) * (1.0f - lx) + p10[ch] * ly * (1.0f - lx) +
                         p01[ch] * (1.0f - ly) * lx + p11[ch] * ly * lx;
        }
    }
}

static omma_status run_resize(const cpu_ctx *c, const float *const *inputs, float *out)
{
    const gr_node *n = c->n;
    const gr_tensor *xt = tensor(c, n->in[0]), *yt = tensor(c, n->out);
    OMMA_TRY(want_rank4(c, xt, "input"));
    OMMA_TRY(want_rank4(c, yt, "output"));
    int H = xt->dims[1], W = xt->dims[2], C = xt->dims[3], OH = yt->dims[1], OW = yt->dims[2];
    if (yt->dims[3] != C || H < 1 || W < 1)
        return cpu_fail(c, OMMA_ERR_FORMAT, "input '%s' %dx%dx%d, output '%s' %d channels",
                        xt->name, H, W, C, yt->name, yt->dims[3]);
    bool half = n->p.resize.half_pixel_centers, align = n->p.resize.align_corners;
    if (half && align)
        return cpu_fail(c, OMMA_ERR_FORMAT, "align_corners and half_pixel_centers both set");
    const float *x;
    OMMA_TRY(act_in(c, inputs, 0, &x));
    resize_job j = {x, out, half, resize_scale(H, OH, align), resize_scale(W, OW, align),
                    H, W, C, OH, OW};
    cpu_pool_run(c->pool, (long)c->batch * OH, grain_rows((long)OW * C * 4), resize_rows, &j);
    return OMMA_OK;
}

static omma_status run_dequantize(const cpu_ctx *c, float *out)
{
    const gr_tensor *xt = tensor(c, c->n->in[0]), *yt = tensor(c, c->n->out);
    if (xt->dtype != GR_F16 || !xt->data)
        return cpu_fail(c, OMMA_ERR_UNSUPPORTED, "input '%s' must be a float16 constant",
                        xt->name);
    size_t count = gr_tensor_elems(xt);
    if (gr_tensor_elems(yt) != count || xt->bytes < count * 2)
        return cpu_fail(c, OMMA_ERR_FORMAT, "input '%s' and output '%s' differ in size",
                        xt->name, yt->name);
    const unsigned char *h = xt->data;
    for (size_t i = 0; i < count; i++) {
        unsigned short bits = (unsigned short)(h[2 * i] | h[2 * i + 1] << 8);
        out[i] = gr_half_to_float(bits);
    }
    return OMMA_OK;
}

/* ---- the attention mesh's ops ------------------------------------------- */

/* y = act(a * b): b of a's shape, or a constant of one value (either operand
 * may be the constant). */
static omma_status run_mul(const cpu_ctx *c, const float *const *inputs, float *out)
{
    const gr_node *n = c->n;
    if (n->n_in != 2)
        return cpu_fail(c, OMMA_ERR_FORMAT, "has %d inputs, expected 2", n->n_in);
    if (n->p.add.act == GR_ACT_PRELU)
        return cpu_fail(c, OMMA_ERR_UNSUPPORTED, "PRELU activation");
    const gr_tensor *yt = tensor(c, n->out);
    size_t item = item_elems(yt);
    const float *v[2];
    size_t stride[2], period[2];
    for (int k = 0; k < 2; k++) {
        int t = n->in[k];
        if (t < 0 || t >= c->g->n_tensors)
            return cpu_fail(c, OMMA_ERR_INVALID_ARG, "input %d names tensor %d", k, t);
        if (cpu_batched(c->g, t, 0)) {
            OMMA_TRY(act_in(c, inputs, k, &v[k]));
            if (item_elems(tensor(c, t)) != item)
                return cpu_fail(c, OMMA_ERR_FORMAT, "input '%s' and output '%s' differ in size",
                                tensor(c, t)->name, yt->name);
            stride[k] = period[k] = item;
        } else { /* a constant: the same values for every item, or one value */
            size_t want = gr_tensor_elems(tensor(c, t)) == 1 ? 1 : item;
            OMMA_TRY(const_in(c, inputs[k], t, "constant input", want, &v[k]));
            stride[k] = 0;
            period[k] = want;
        }
    }
    for (int b = 0; b < c->batch; b++) {
        const float *a = v[0] + b * stride[0], *bb = v[1] + b * stride[1];
        float *y = out + (size_t)b * item;
        for (size_t i = 0; i < item; i++)
            y[i] = act_apply(n->p.add.act, a[i % period[0]] * bb[i % period[1]], NULL, 0);
    }
    return OMMA_OK;
}

/* y[i0, i1, i2, i3] = x[b0 + i0 s0, ...] (ranks below 4 padded with leading 1s
 * after the batch). */
static omma_status run_strided_slice(const cpu_ctx *c, const float *const *inputs, float *out)
{
    const gr_node *n = c->n;
    const gr_tensor *xt = tensor(c, n->in[0]), *yt = tensor(c, n->out);
    if (xt->rank != yt->rank || xt->rank < 1)
        return cpu_fail(c, OMMA_ERR_FORMAT, "input '%s' and output '%s' differ in rank", xt->name,
                        yt->name);
    int xd[4] = {1, 1, 1, 1}, yd[4] = {1, 1, 1, 1}, b[4] = {0}, st[4] = {1, 1, 1, 1};
    int off = 4 - xt->rank;
    for (int d = 1; d < xt->rank; d++) {
        xd[d + off] = xt->dims[d];
        yd[d + off] = yt->dims[d];
        b[d + off] = n->p.slice.begin[d];
        st[d + off] = n->p.slice.stride[d];
        if (b[d + off] < 0 || st[d + off] < 1 || yd[d + off] < 1 ||
            b[d + off] + (long long)(yd[d + off] - 1) * st[d + off] >= xd[d + off])
            return cpu_fail(c, OMMA_ERR_FORMAT, "dimension %d: %d values from %d by %d exceed %d",
                            d, yd[d + off], b[d + off], st[d + off], xd[d + off]);
    }
    const float *x;
    OMMA_TRY(act_in(c, inputs, 0, &x));
    size_t xi = item_elems(xt), yi = item_elems(yt);
    for (int bt = 0; bt < c->batch; bt++) {
        const float *px = x + (size_t)bt * xi;
        float *py = out + (size_t)bt * yi;
        for (int i1 = 0; i1 < yd[1]; i1++)
            for (int i2 = 0; i2 < yd[2]; i2++)
                for (int i3 = 0; i3 < yd[3]; i3++)
                    *py++ =
                        px[(((size_t)(b[1] + i1 * st[1]) * xd[2]) + (size_t)(b[2] + i2 * st[2])) *
                               xd[3] +
                           (size_t)(b[3] + i3 * st[3])];
    }
    return OMMA_OK;
}

/* Row-major 4x4 product r = a * b, summed in MediaPipe's order. */
static void mat4_mul(const float *a, const float *b, float *r)
{
    float t[16];
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++) {
            float sum = 0;
            for (int k = 0; k < 4; k++)
                sum += a[i * 4 + k] * b[k * 4 + j];
            t[i * 4 + j] = sum;
        }
    memcpy(r, t, sizeof t);
}

/* MediaPipe's Landmarks2TransformMatrix v2 for one item (landmarks [L, 3]). */
static void landmarks_to_matrix(const gr_node *n, const float *lm, float *m)
{
    const float *l = lm + 3 * n->p.l2m.left, *r = lm + 3 * n->p.l2m.right;
    float rot = n->p.l2m.target_rotation - atan2f(r[1] - l[1], r[0] - l[0]);
    float cr = cosf(rot), sr = sinf(rot);
    float x0 = 0, x1 = 0, y0 = 0, y1 = 0;
    for (int k = 0; k < n->p.l2m.n_subset; k++)
        for (int j = 0; j < 2; j++) {
            const float *p = lm + 3 * n->p.l2m.subset[k][j];
            float x = cr * p[0] + -sr * p[1] + 0.0f * 1.0f;
            float y = sr * p[0] + cr * p[1] + 0.0f * 1.0f;
            if ((k == 0 && j == 0) || x > x1)
                x1 = x;
            if ((k == 0 && j == 0) || y > y1)
                y1 = y;
            if ((k == 0 && j == 0) || x < x0)
                x0 = x;
            if ((k == 0 && j == 0) || y < y0)
                y0 = y;
        }
    float w = x1 - x0, h = y1 - y0;
    float mx = (x0 + x1) / 2, my = (y0 + y1) / 2;
    float ci = cosf(-rot), si = sinf(-rot);
    float cx = ci * mx + -si * my + 0.0f * 1.0f, cy = si * mx + ci * my + 0.0f * 1.0f;
    float t[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    const float shift[16] = {1, 0, 0, cx, 0, 1, 0, cy, 0, 0, 1, 0, 0, 0, 0, 1};
    mat4_mul(t, shift, t);
    float cn = cosf(-rot), sn = sinf(-rot);
    const float rotm[16] = {cn, -sn, 0, 0, sn, cn, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    mat4_mul(t, rotm, t);
    float sx = n->p.l2m.scale_x * w / (float)n->p.l2m.out_w;
    float sy = n->p.l2m.scale_y * h / (float)n->p.l2m.out_h;
    const float scale[16] = {sx, 0, 0, 0, 0, sy, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
    mat4_mul(t, scale, t);
    float hx = (float)(-1.0 * (n->p.l2m.out_w / 2.0)), hy = (float)(-1.0 * (n->p.l2m.out_h / 2.0));
    const float shift2[16] = {1, 0, 0, hx, 0, 1, 0, hy, 0, 0, 1, 0, 0, 0, 0, 1};
    mat4_mul(t, shift2, m);
}

static omma_status run_landmarks_to_matrix(const cpu_ctx *c, const float *const *inputs, float *out)
{
    const gr_node *n = c->n;
    const gr_tensor *xt = tensor(c, n->in[0]), *yt = tensor(c, n->out);
    if (xt->rank != 3 || xt->dims[2] != 3 || item_elems(yt) != 16)
        return cpu_fail(c, OMMA_ERR_FORMAT, "input '%s' must be [N, L, 3], output '%s' [N, 4, 4]",
                        xt->name, yt->name);
    int L = xt->dims[1];
    bool ok = n->p.l2m.left >= 0 && n->p.l2m.left < L && n->p.l2m.right >= 0 &&
              n->p.l2m.right < L && n->p.l2m.n_subset >= 1 &&
              n->p.l2m.n_subset <= GR_L2M_MAX_SUBSET && n->p.l2m.out_w >= 1 && n->p.l2m.out_h >= 1;
    for (int k = 0; ok && k < n->p.l2m.n_subset; k++)
        ok = n->p.l2m.subset[k][0] >= 0 && n->p.l2m.subset[k][0] < L &&
             n->p.l2m.subset[k][1] >= 0 && n->p.l2m.subset[k][1] < L;
    if (!ok)
        return cpu_fail(c, OMMA_ERR_FORMAT, "a landmark index outside the %d landmarks", L);
    const float *x;
    OMMA_TRY(act_in(c, inputs, 0, &x));
    for (int b = 0; b < c->batch; b++)
        landmarks_to_matrix(n, x + (size_t)b * L * 3, out + (size_t)b * 16);
    return OMMA_OK;
}

static omma_status matrix_in(const cpu_ctx *c, const float *const *inputs, const float **m)
{
    const gr_tensor *mt = tensor(c, c->n->in[1]);
    if (item_elems(mt) != 16)
        return cpu_fail(c, OMMA_ERR_FORMAT, "matrix '%s' must be [N, 4, 4]", mt->name);
    return act_in(c, inputs, 1, m);
}

/* MediaPipe's TransformTensorBilinear v2: pixel centres (the matrix moved by
 * half a pixel each way), bilinear, 0 outside the input. */
static omma_status run_transform_bilinear(const cpu_ctx *c, const float *const *inputs, float *out)
{
    const gr_node *n = c->n;
    const gr_tensor *xt = tensor(c, n->in[0]), *yt = tensor(c, n->out);
    OMMA_TRY(want_rank4(c, xt, "input"));
    OMMA_TRY(want_rank4(c, yt, "output"));
    int H = xt->dims[1], W = xt->dims[2], C = xt->dims[3], OH = yt->dims[1], OW = yt->dims[2];
    if (yt->dims[3] != C)
        return cpu_fail(c, OMMA_ERR_FORMAT, "input '%s' and output '%s' differ in channels",
                        xt->name, yt->name);
    const float *x, *m;
    OMMA_TRY(act_in(c, inputs, 0, &x));
    OMMA_TRY(matrix_in(c, inputs, &m));
    for (int b = 0; b < c->batch; b++) {
        const float *mb = m + (size_t)b * 16, *xb = x + (size_t)b * H * W * C;
        float x3 = mb[3] + mb[0] * 0.5f + mb[1] * 0.5f - 0.5f;
        float y3 = mb[7] + mb[4] * 0.5f + mb[5] * 0.5f - 0.5f;
        for (int oy = 0; oy < OH; oy++)
            for (int ox = 0; ox < OW; ox++) {
                float tx = mb[0] * (float)ox + mb[1] * (float)oy + mb[2] * 0.0f + x3 * 1.0f;
                float ty = mb[4] * (float)ox + mb[5] * (float)oy + mb[6] * 0.0f + y3 * 1.0f;
                float *y = out + (((size_t)b * OH + oy) * OW + ox) * C;
                if (!(tx >= 0 && tx <= (float)(W - 1) && ty >= 0 && ty <= (float)(H - 1))) {
                    memset(y, 0, (size_t)C * sizeof *y);
                    continue;
                }
                float fx = floorf(tx), fy = floorf(ty);
                int x0 = (int)fx, y0 = (int)fy;
                float rx = tx - fx, ry = ty - fy;
                bool x1ok = x0 + 1 < W, y1ok = y0 + 1 < H;
                const float *q11 = xb + ((size_t)y0 * W + x0) * C;
                const float *q21 = x1ok ? q11 + C : NULL;
                const float *q12 = y1ok ? q11 + (size_t)W * C : NULL;
                const float *q22 = x1ok && y1ok ? q12 + C : NULL;
                for (int ch = 0; ch < C; ch++) {
                    float a = q11[ch], bq = q21 ? q21[ch] : 0, cq = q12 ? q12[ch] : 0,
                          d = q22 ? q22[ch] : 0;
                    float upper = (1.0f - rx) * a + rx * bq;
                    float lower = (1.0f - rx) * cq + rx * d;
                    y[ch] = ry * lower + (1.0f - ry) * upper;
                }
            }
    }
    return OMMA_OK;
}

/* MediaPipe's TransformLandmarks v2: (x, y) through the matrix's first two
 * rows, z kept. */
static omma_status run_transform_landmarks(const cpu_ctx *c, const float *const *inputs, float *out)
{
    const gr_node *n = c->n;
    const gr_tensor *xt = tensor(c, n->in[0]), *yt = tensor(c, n->out);
    if (xt->rank != 3 || (xt->dims[2] != 2 && xt->dims[2] != 3) || item_elems(xt) != item_elems(yt))
        return cpu_fail(c, OMMA_ERR_FORMAT, "input '%s' must be [N, L, 2 or 3] like output '%s'",
                        xt->name, yt->name);
    int L = xt->dims[1], D = xt->dims[2];
    const float *x, *m;
    OMMA_TRY(act_in(c, inputs, 0, &x));
    OMMA_TRY(matrix_in(c, inputs, &m));
    for (int b = 0; b < c->batch; b++) {
        const float *mb = m + (size_t)b * 16;
        for (int i = 0; i < L; i++) {
            const float *p = x + ((size_t)b * L + i) * D;
            float *q = out + ((size_t)b * L + i) * D;
            float px = p[0], py = p[1];
            q[0] = mb[0] * px + mb[1] * py + mb[2] * 0.0f + mb[3] * 1.0f;
            q[1] = mb[4] * px + mb[5] * py + mb[6] * 0.0f + mb[7] * 1.0f;
            if (D == 3)
                q[2] = p[2];
        }
    }
    return OMMA_OK;
}

omma_status cpu_op_run(const gr_graph *g, const gr_node *n, int batch,
                       const float *const *inputs, const float *residual, float *out)
{
    return cpu_op_run_pool(NULL, g, n, batch, inputs, residual, out);
}

omma_status cpu_op_run_pool(cpu_pool *pool, const gr_graph *g, const gr_node *n, int batch,
                            const float *const *inputs, const float *residual, float *out)
{
    if (!g || !n || !out || (!inputs && n->n_in > 0))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cpu_op_run: NULL argument");
    cpu_ctx c = {.g = g, .n = n, .batch = batch, .pool = pool};
    if (batch < 1)
        return cpu_fail(&c, OMMA_ERR_INVALID_ARG, "batch %d", batch);
    if (n->out < 0 || n->out >= g->n_tensors || n->n_in < 1 || n->n_in > GR_MAX_INPUTS ||
        n->in[0] < 0 || n->in[0] >= g->n_tensors)
        return cpu_fail(&c, OMMA_ERR_INVALID_ARG, "output tensor %d, %d inputs, input 0 tensor %d"
                        " (graph has %d tensors)", n->out, n->n_in, n->in[0], g->n_tensors);
    for (int k = 1; k < n->n_in; k++)
        if (n->in[k] >= g->n_tensors)
            return cpu_fail(&c, OMMA_ERR_INVALID_ARG, "input %d names tensor %d of %d", k,
                            n->in[k], g->n_tensors);
    if (n->op != GR_DEQUANTIZE && g->tensors[n->out].dtype != GR_F32)
        return cpu_fail(&c, OMMA_ERR_UNSUPPORTED, "output '%s' is %s, expected float32",
                        g->tensors[n->out].name, gr_dtype_name(g->tensors[n->out].dtype));
    switch (n->op) {
    case GR_CONV2D:
    case GR_DWCONV2D: return run_conv(&c, inputs, residual, out);
    case GR_DWPW: return run_dwpw(&c, inputs, residual, out);
    case GR_MAXPOOL: return run_maxpool(&c, inputs, out);
    case GR_ADD: return run_add(&c, inputs, out);
    case GR_RELU: return run_relu(&c, inputs, out);
    case GR_PRELU: return run_prelu(&c, inputs, out);
    case GR_PAD: return run_pad(&c, inputs, out);
    case GR_RESHAPE: return run_reshape(&c, inputs, out);
    case GR_CONCAT: return run_concat(&c, inputs, out);
    case GR_RESIZE_BILINEAR: return run_resize(&c, inputs, out);
    case GR_DEQUANTIZE: return run_dequantize(&c, out);
    case GR_LOGISTIC: return run_logistic(&c, inputs, out);
    case GR_DEPTH_TO_SPACE: return run_depth_to_space(&c, inputs, out);
    case GR_MUL:
        return run_mul(&c, inputs, out);
    case GR_STRIDED_SLICE:
        return run_strided_slice(&c, inputs, out);
    case GR_LANDMARKS_TO_MATRIX:
        return run_landmarks_to_matrix(&c, inputs, out);
    case GR_TRANSFORM_BILINEAR:
        return run_transform_bilinear(&c, inputs, out);
    case GR_TRANSFORM_LANDMARKS:
        return run_transform_landmarks(&c, inputs, out);
    case GR_OP_COUNT: break;
    }
    return OMMA_FAIL(OMMA_ERR_UNSUPPORTED, "cpu: op %d (model op %d) has no CPU implementation",
                     (int)n->op, n->src_index);
}
