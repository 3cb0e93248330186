/* Windowed correlation and co-modulation of two people's signals
 * (synchrony.h). */
#include "vision/synchrony.h"

#include <math.h>
#include <stdlib.h>

#include "core/error.h"

typedef struct comod_signal {
    float *a, *b; /* the last `slow` valid values, a ring */
    long n; /* valid pushes so far */
    double sum_sa, sum_sb, sum_fa, sum_fb; /* over the slow and fast windows */
    int has_prev;
    double prev_a, prev_b, d_a, d_b; /* previous values, smoothed derivatives */
    double transient, brief, sustained;
    int latched;
    long since_neutral;
} comod_signal;

struct vis_sync {
    int signals, window;
    float *ra, *rb; /* [signals][window]: the correlation window, NaN = missing */
    long pushes;
    int comod;
    vis_comod_params p;
    comod_signal *cm;
};

void vis_comod_params_init(vis_comod_params *p)
{
    p->fast = 60;
    p->slow = 300;
    p->delta = 0.005;
    p->similarity = 0.6;
    p->derivative = 0.03;
    p->smooth = 0.3;
    p->transient_decay = 0.8;
    p->brief_decay = 0.9;
    p->neutral_pushes = 30;
}

void vis_sync_destroy(vis_sync *s)
{
    if (!s)
        return;
    if (s->cm)
        for (int i = 0; i < s->signals; i++) {
            free(s->cm[i].a);
            free(s->cm[i].b);
        }
    free(s->cm);
    free(s->ra);
    free(s->rb);
    free(s);
}

omma_status vis_sync_create(int signals, int window, const vis_comod_params *comod, vis_sync **out)
{
    *out = NULL;
    if (signals < 1 || signals > 64 || window < 2 || window > 100000)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "synchrony: %d signals (1..64), window %d (2..100000)", signals, window);
    if (comod && (comod->fast < 1 || comod->slow < comod->fast || comod->slow > 1000000 ||
                  comod->neutral_pushes < 0))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "co-modulation: windows %d and %d (1 <= fast <= slow <= 1000000)",
                         comod->fast, comod->slow);
    vis_sync *s = calloc(1, sizeof *s);
    if (!s)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "synchrony: out of memory");
    s->signals = signals;
    s->window = window;
    s->ra = malloc((size_t)signals * (size_t)window * sizeof *s->ra);
    s->rb = malloc((size_t)signals * (size_t)window * sizeof *s->rb);
    int ok = s->ra && s->rb;
    if (ok && comod) {
        s->comod = 1;
        s->p = *comod;
        s->cm = calloc((size_t)signals, sizeof *s->cm);
        ok = s->cm != NULL;
        for (int i = 0; ok && i < signals; i++) {
            s->cm[i].a = calloc((size_t)comod->slow, sizeof(float));
            s->cm[i].b = calloc((size_t)comod->slow, sizeof(float));
            ok = s->cm[i].a && s->cm[i].b;
        }
    }
    if (!ok) {
        vis_sync_destroy(s);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "synchrony: out of memory");
    }
    for (long i = 0; i < (long)signals * window; i++)
        s->ra[i] = s->rb[i] = NAN;
    *out = s;
    return OMMA_OK;
}

static float pearson(const float *a, const float *b, int w)
{
    double ma = 0, mb = 0;
    int n = 0;
    for (int i = 0; i < w; i++)
        if (isfinite(a[i]) && isfinite(b[i])) {
            ma += a[i];
            mb += b[i];
            n++;
        }
    int need = w / 2 > 3 ? w / 2 : 3;
    if (n < need)
        return NAN;
    ma /= n;
    mb /= n;
    double sab = 0, saa = 0, sbb = 0;
    for (int i = 0; i < w; i++)
        if (isfinite(a[i]) && isfinite(b[i])) {
            double da = a[i] - ma, db = b[i] - mb;
            sab += da * db;
            saa += da * da;
            sbb += db * db;
        }
    if (!(saa > 0) || !(sbb > 0))
        return NAN;
    double r = sab / sqrt(saa * sbb);
    return (float)(r > 1 ? 1 : r < -1 ? -1 : r);
}

static double maxd(double a, double b)
{
    return a > b ? a : b;
}

/* The old tool's detector on one signal (synchrony.h's formulas). */
static float comod_push(comod_signal *c, const vis_comod_params *p, double a, double b)
{
    long S = p->slow, F = p->fast, pos = c->n % S;
    if (c->n >= S) {
        c->sum_sa -= c->a[pos];
        c->sum_sb -= c->b[pos];
    }
    if (c->n >= F) {
        long old = (c->n - F) % S; /* read before it is overwritten (F == S) */
        c->sum_fa -= c->a[old];
        c->sum_fb -= c->b[old];
    }
    c->a[pos] = (float)a;
    c->b[pos] = (float)b;
    a = c->a[pos]; /* the stored value, so the sums stay exact */
    b = c->b[pos];
    c->sum_sa += a;
    c->sum_sb += b;
    c->sum_fa += a;
    c->sum_fb += b;
    c->n++;
    if (c->n < S)
        return NAN;
    double ea = a - c->sum_sa / (double)S, eb = b - c->sum_sb / (double)S;
    double fa = a - c->sum_fa / (double)F, fb = b - c->sum_fb / (double)F;
    double da = 0, db = 0;
    if (c->has_prev) {
        da = p->smooth * (a - c->prev_a) + (1 - p->smooth) * c->d_a;
        db = p->smooth * (b - c->prev_b) + (1 - p->smooth) * c->d_b;
        c->d_a = da;
        c->d_b = db;
    }
    /* transient */
    double ada = fabs(da), adb = fabs(db);
    double sim = 1.0 - fabs(ada - adb) / (ada + adb + 1e-6);
    c->transient *= p->transient_decay;
    if (ada > p->derivative && adb > p->derivative && (da > 0) == (db > 0) && sim > 0.7)
        c->transient = maxd(c->transient, (ada + adb) * 0.5 * sim);
    /* brief */
    double aea = fabs(ea), aeb = fabs(eb), m = (aea + aeb) * 0.5;
    int brief = aea > p->delta && aeb > p->delta && fabs(ea - eb) < p->similarity;
    c->brief *= p->brief_decay;
    if (brief)
        c->brief = maxd(c->brief, m);
    /* sustained */
    int stable = fabs(fa) < p->delta * 0.5 && fabs(fb) < p->delta * 0.5;
    int neutral = aea < p->delta * 0.5 && aeb < p->delta * 0.5;
    c->since_neutral = neutral ? 0 : c->since_neutral + 1;
    double held = brief ? m : 0.0;
    if (brief && held > p->delta && !c->latched && stable) {
        c->latched = 1;
        c->sustained = held;
    }
    if (c->latched && brief && held > c->sustained)
        c->sustained = held;
    int recent = c->since_neutral < p->neutral_pushes;
    if (c->latched && ((stable && (recent || neutral)) || !brief)) {
        c->latched = 0;
        c->sustained = 0;
    }
    c->prev_a = a;
    c->prev_b = b;
    c->has_prev = 1;
    return (float)maxd(maxd(c->transient, c->brief), c->latched ? c->sustained : 0.0);
}

void vis_sync_push(vis_sync *s, const float *a, const float *b, float *r, float *comod)
{
    int w = s->window, slot = (int)(s->pushes % w);
    s->pushes++;
    for (int i = 0; i < s->signals; i++) {
        float *ra = s->ra + (size_t)i * (size_t)w, *rb = s->rb + (size_t)i * (size_t)w;
        ra[slot] = a[i];
        rb[slot] = b[i];
        r[i] = pearson(ra, rb, w);
        if (s->comod && comod)
            comod[i] =
                isfinite(a[i]) && isfinite(b[i]) ? comod_push(&s->cm[i], &s->p, a[i], b[i]) : NAN;
    }
}
