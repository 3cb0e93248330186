/* Liveness-based activation memory planning (see plan.h).
 *
 * Greedy placement: tensors are placed one by one, each at the lowest offset
 * where it overlaps in memory no already-placed tensor whose lifetime
 * overlaps its own. A few placement orders are tried (largest first, first
 * used first, ...) and the smallest arena kept: simple, deterministic, and
 * at or near the peak of live bytes on these chain-like networks. */
#include "model/plan.h"

#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static size_t align_up(size_t v)
{
    return (v + PLAN_ALIGN - 1) / PLAN_ALIGN * PLAN_ALIGN;
}

static bool lifetimes_overlap(const plan_slot *a, const plan_slot *b)
{
    return a->first <= b->last && b->first <= a->last;
}

/* Placement orders tried; the smallest arena wins. Greedy by size alone
 * fragments on some block patterns that execution order handles, and the
 * other way round. */
enum { ORDER_SIZE, ORDER_FIRST_USE, ORDER_AREA, ORDER_LONGEST, ORDER_COUNT };
#define PLAN_SHUFFLES 64

static long long order_key(const plan_slot *s, int order, int t)
{
    long long len = (long long)s[t].last - s[t].first + 1;
    switch (order) {
    case ORDER_SIZE: return (long long)s[t].bytes;
    case ORDER_FIRST_USE: return -(long long)s[t].first;
    case ORDER_AREA: return (long long)(s[t].bytes / PLAN_ALIGN) * len;
    default: return len;
    }
}

/* Descending key; ties by size, then start of life, then index, so plans
 * are deterministic. */
static bool goes_before(const plan_slot *s, int order, int a, int b)
{
    long long ka = order_key(s, order, a), kb = order_key(s, order, b);
    if (ka != kb)
        return ka > kb;
    if (s[a].bytes != s[b].bytes)
        return s[a].bytes > s[b].bytes;
    if (s[a].first != s[b].first)
        return s[a].first < s[b].first;
    return a < b;
}

static void sort_slots(const plan_slot *s, int order, int *idx, int n)
{
    for (int i = 1; i < n; i++) {
        int v = idx[i], j = i;
        for (; j > 0 && goes_before(s, order, v, idx[j - 1]); j--)
            idx[j] = idx[j - 1];
        idx[j] = v;
    }
}

/* Places the slots listed in order[] (already sorted) and returns the
 * region's size. placed[] is scratch of the same length. */
static size_t place(plan_slot *slots, const int *order, int n, int *placed)
{
    size_t top = 0;
    for (int i = 0; i < n; i++) {
        plan_slot *s = &slots[order[i]];
        /* Candidate offsets: 0 and the end of every conflicting slot; take
         * the lowest that fits among the conflicts. */
        size_t best = (size_t)-1;
        for (int c = -1; c < i; c++) {
            size_t off = 0;
            if (c >= 0) {
                const plan_slot *o = &slots[placed[c]];
                if (!lifetimes_overlap(s, o))
                    continue;
                off = o->offset + o->bytes;
            }
            if (off >= best)
                continue;
            bool fits = true;
            for (int k = 0; k < i && fits; k++) {
                const plan_slot *o = &slots[placed[k]];
                if (lifetimes_overlap(s, o) && off < o->offset + o->bytes &&
                    o->offset < off + s->bytes)
                    fits = false;
            }
            if (fits)
                best = off;
        }
        s->offset = best;
        placed[i] = order[i];
        if (best + s->bytes > top)
            top = best + s->bytes;
    }
    return top;
}

omma_status plan_build(const gr_graph *g, const int *step_end, plan_layout **out)
{
    *out = NULL;
    int nt = g->n_tensors, nn = g->n_nodes;
    plan_layout *p = calloc(1, sizeof *p);
    size_t cnt = nt ? (size_t)nt : 1;
    if (p)
        p->slots = calloc(cnt, sizeof *p->slots);
    int *order = malloc(cnt * sizeof *order), *placed = malloc(cnt * sizeof *placed);
    size_t *best = malloc(cnt * sizeof *best);
    if (!p || !p->slots || !order || !placed || !best) {
        plan_free(p);
        free(order);
        free(placed);
        free(best);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "plan: %d tensors", nt);
    }
    p->n_tensors = nt;
    plan_slot *s = p->slots;
    for (int t = 0; t < nt; t++) {
        s[t].in_arena = g->tensors[t].data == NULL;
        s[t].first = s[t].last = -1;
    }
    for (int i = 0; i < g->n_inputs; i++) {
        s[g->inputs[i]].batched = true;
        s[g->inputs[i]].last = nn; /* inputs survive the run */
    }
    for (int i = 0; i < nn; i++) {
        const gr_node *n = &g->nodes[i];
        int r[GR_MAX_INPUTS + 2];
        int k = gr_node_reads(n, r);
        bool batched = false;
        for (int j = 0; j < k; j++) {
            batched = batched || s[r[j]].batched;
            if (s[r[j]].last < i)
                s[r[j]].last = i;
        }
        s[n->out].batched = batched;
        s[n->out].first = i;
        if (s[n->out].last < i)
            s[n->out].last = i;
    }
    for (int i = 0; i < g->n_outputs; i++)
        s[g->outputs[i]].last = nn;
    for (int i = 0; step_end && i < nn; i++) {
        int j = step_end[i];
        if (j <= i || j >= nn)
            continue;
        for (int t = 0; t < nt; t++) {
            if (s[t].first >= i && s[t].first <= j)
                s[t].first = i;
            if (s[t].last >= i && s[t].last <= j)
                s[t].last = j;
        }
        i = j;
    }

    /* A RESHAPE's output is its input's bytes: it shares the slot, which
     * then lives as long as either. In order, so chains end at one root. */
    for (int t = 0; t < nt; t++)
        s[t].alias_of = -1;
    for (int i = 0; i < nn; i++) {
        const gr_node *n = &g->nodes[i];
        int x = n->in[0], y = n->out;
        if (n->op != GR_RESHAPE || !s[x].in_arena || s[x].batched != s[y].batched)
            continue;
        int root = s[x].alias_of >= 0 ? s[x].alias_of : x;
        s[y].alias_of = root;
        if (s[y].last > s[root].last)
            s[root].last = s[y].last;
    }

    /* Two regions, planned apart: fixed tensors, then one batch item. */
    for (int pass = 0; pass < 2; pass++) {
        bool want_batched = pass == 1;
        int n = 0;
        size_t naive = 0;
        for (int t = 0; t < nt; t++) {
            if (!s[t].in_arena || s[t].batched != want_batched)
                continue;
            size_t item = gr_tensor_elems(&g->tensors[t]) * sizeof(float);
            if (want_batched && g->tensors[t].rank > 0 && g->tensors[t].dims[0] > 0)
                item /= (size_t)g->tensors[t].dims[0];
            s[t].bytes = align_up(item ? item : 1);
            naive += s[t].bytes;
            if (s[t].alias_of < 0)
                order[n++] = t;
        }
        size_t top = (size_t)-1;
        unsigned seed = 12345u;
        for (int o = 0; o < ORDER_COUNT + PLAN_SHUFFLES; o++) {
            if (o < ORDER_COUNT) {
                sort_slots(s, o, order, n);
            } else {
                /* Then the size order with a few neighbours swapped at
                 * random (a fixed seed: plans stay deterministic). */
                sort_slots(s, ORDER_SIZE, order, n);
                for (int k = 0; k + 1 < n; k++) {
                    seed = seed * 1664525u + 1013904223u;
                    if ((seed >> 16) % 3 == 0) {
                        int tmp = order[k];
                        order[k] = order[k + 1];
                        order[k + 1] = tmp;
                    }
                }
            }
            size_t t = place(s, order, n, placed);
            if (t < top) {
                top = t;
                for (int k = 0; k < n; k++)
                    best[order[k]] = s[order[k]].offset;
            }
        }
        for (int k = 0; k < n; k++)
            s[order[k]].offset = best[order[k]];
        /* The floor no placement can beat: the most bytes alive at once. */
        size_t peak = 0;
        for (int step = -1; step <= nn; step++) {
            size_t live = 0;
            for (int k = 0; k < n; k++)
                if (s[order[k]].first <= step && step <= s[order[k]].last)
                    live += s[order[k]].bytes;
            if (live > peak)
                peak = live;
        }
        for (int t = 0; t < nt; t++)
            if (s[t].in_arena && s[t].batched == want_batched && s[t].alias_of >= 0)
                s[t].offset = s[s[t].alias_of].offset;
        if (n == 0)
            top = 0;
        if (want_batched) {
            p->item_bytes = top;
            p->naive_bytes = naive;
            p->peak_bytes = peak;
        } else {
            p->fixed_bytes = top;
        }
    }
    free(order);
    free(placed);
    free(best);
    *out = p;
    return OMMA_OK;
}

void plan_free(plan_layout *p)
{
    if (!p)
        return;
    free(p->slots);
    free(p);
}

size_t plan_arena_bytes(const plan_layout *p, int batch)
{
    return p->fixed_bytes + (size_t)(batch > 0 ? batch : 0) * p->item_bytes;
}

size_t plan_offset(const plan_layout *p, int t, int batch)
{
    const plan_slot *s = &p->slots[t];
    if (!s->batched)
        return s->offset;
    return p->fixed_bytes + (size_t)batch * s->offset;
}
