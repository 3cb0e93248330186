/* The activation memory plan: slots of tensors alive at the same time never
 * overlap, everything is 256-byte aligned, memory is reused, and the batch
 * layout scales. Checked on a hand-built chain (exact size, and with a step
 * of several nodes) and on the three models, rewritten and not. */
#include <stdlib.h>

#include "model/graph.h"
#include "model/plan.h"
#include "model/rewrite.h"
#include "model/tflite.h"
#include "support/face_inputs.h"
#include "support/test_graph.h"
#include "testing.h"

/* Invariants of any plan; returns the number of violations. */
static int check_plan(const gr_graph *g, const plan_layout *p)
{
    int bad = 0;
    for (int t = 0; t < p->n_tensors; t++) {
        const plan_slot *s = &p->slots[t];
        if (s->in_arena != (g->tensors[t].data == NULL))
            bad++;
        if (!s->in_arena)
            continue;
        size_t region = s->batched ? p->item_bytes : p->fixed_bytes;
        size_t item = gr_tensor_elems(&g->tensors[t]) * 4;
        if (s->offset % PLAN_ALIGN || s->bytes % PLAN_ALIGN || s->bytes < item ||
            s->offset + s->bytes > region) {
            fprintf(stderr, "tensor %d: offset %zu bytes %zu region %zu\n", t, s->offset,
                    s->bytes, region);
            bad++;
        }
        for (int u = 0; u < t; u++) {
            const plan_slot *o = &p->slots[u];
            if (!o->in_arena || o->batched != s->batched)
                continue;
            int rs = s->alias_of >= 0 ? s->alias_of : t, ro = o->alias_of >= 0 ? o->alias_of : u;
            if (rs == ro) { /* a RESHAPE alias: same bytes on purpose */
                if (s->offset != o->offset)
                    bad++;
                continue;
            }
            bool live = s->first <= o->last && o->first <= s->last;
            bool mem = s->offset < o->offset + o->bytes && o->offset < s->offset + s->bytes;
            if (live && mem) {
                fprintf(stderr, "tensors %d '%s' and %d '%s' overlap while both alive\n", t,
                        g->tensors[t].name, u, g->tensors[u].name);
                bad++;
            }
        }
    }
    for (int i = 0; i < g->n_inputs; i++)
        if (p->slots[g->inputs[i]].last != g->n_nodes || !p->slots[g->inputs[i]].batched)
            bad++;
    for (int i = 0; i < g->n_outputs; i++)
        if (p->slots[g->outputs[i]].last != g->n_nodes)
            bad++;
    if (p->item_bytes % PLAN_ALIGN || p->fixed_bytes % PLAN_ALIGN)
        bad++;
    /* Batch layout: fixed region first, then each slot scaled. */
    for (int t = 0; t < p->n_tensors; t++)
        if (p->slots[t].in_arena && p->slots[t].batched &&
            plan_offset(p, t, 8) != p->fixed_bytes + 8 * p->slots[t].offset)
            bad++;
    if (plan_arena_bytes(p, 8) != p->fixed_bytes + 8 * p->item_bytes)
        bad++;
    return bad;
}

/* input -> relu a -> relu b -> relu c -> relu out, each [1,16,16,4] (4096
 * bytes); the tensors' indices in x, a, b, c, y. */
static omma_status relu_chain(gr_graph **out, int *x, int *a, int *b, int *c, int *y)
{
    gr_graph *g = NULL;
    omma_status st = gr_create(&g);
    if (st != OMMA_OK)
        return st;
    *x = tg_act(g, "input", 1, 16, 16, 4);
    *a = tg_unary(g, tg_node(GR_RELU), *x, "a", 1, 16, 16, 4);
    *b = tg_unary(g, tg_node(GR_RELU), *a, "b", 1, 16, 16, 4);
    *c = tg_unary(g, tg_node(GR_RELU), *b, "c", 1, 16, 16, 4);
    *y = tg_unary(g, tg_node(GR_RELU), *c, "out", 1, 16, 16, 4);
    g->n_inputs = 1;
    g->inputs[0] = *x;
    g->n_outputs = 1;
    g->outputs[0] = *y;
    *out = g;
    return OMMA_OK;
}

static void test_chain_reuses_exactly(void)
{
    /* input -> relu a -> relu b -> relu c -> relu out, each [1,16,16,4]
     * (4096 bytes). Lifetimes in nodes: input [-1,4] (kept for the whole
     * run), a [0,1], b [1,2], c [2,3], out [3,4] (kept to the end). a and c
     * can share a slot, b and out another: 3 slots of 4096. */
    gr_graph *g = NULL;
    int x, a, b, c, y;
    REQUIRE_OK(relu_chain(&g, &x, &a, &b, &c, &y));
    plan_layout *p = NULL;
    REQUIRE_OK(gr_validate(g));
    REQUIRE_OK(plan_build(g, NULL, &p));
    CHECK(check_plan(g, p) == 0);
    CHECK(p->item_bytes == 3 * 4096);
    CHECK(p->naive_bytes == 5 * 4096);
    CHECK(p->fixed_bytes == 0);
    CHECK(p->slots[a].offset == p->slots[c].offset);
    CHECK(p->slots[b].offset == p->slots[y].offset);
    CHECK(p->slots[a].offset != p->slots[b].offset);
    CHECK(p->slots[x].offset != p->slots[a].offset && p->slots[x].offset != p->slots[b].offset);
    CHECK(plan_arena_bytes(p, 3) == 3 * 3 * 4096);
    plan_free(p);
    gr_free(g);
}

/* The same chain with nodes 0..2 as one step (one kernel runs a, b and c
 * at once): every tensor the step reads or writes lives from node 0 to
 * node 2, so input, a, b and c all get slots of their own (out may take
 * a's), and the plan still holds its invariants. */
static void test_step_keeps_its_tensors_apart(void)
{
    gr_graph *g = NULL;
    int x, a, b, c, y;
    REQUIRE_OK(relu_chain(&g, &x, &a, &b, &c, &y));
    const int step_end[4] = {2, 1, 2, 3};
    plan_layout *p = NULL;
    REQUIRE_OK(gr_validate(g));
    REQUIRE_OK(plan_build(g, step_end, &p));
    CHECK(check_plan(g, p) == 0);
    CHECK(p->slots[a].first == 0 && p->slots[a].last == 2);
    CHECK(p->slots[b].first == 0 && p->slots[b].last == 2);
    CHECK(p->slots[c].first == 0 && p->slots[c].last == 3);
    CHECK(p->slots[y].first == 3);
    const int t[4] = {x, a, b, c};
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < i; j++)
            CHECK(p->slots[t[i]].offset != p->slots[t[j]].offset);
    CHECK(p->item_bytes == 4 * 4096);
    plan_free(p);
    gr_free(g);
}

static void test_reshape_aliases_its_input(void)
{
    /* input -> relu a [1,8,8,4] -> reshape r [1,256] -> relu out: r is a's
     * bytes (the executor skips the copy), and a's slot lives until r's
     * last reader. */
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    int x = tg_act(g, "input", 1, 8, 8, 4);
    int a = tg_unary(g, tg_node(GR_RELU), x, "a", 1, 8, 8, 4);
    int r = tg_unary(g, tg_node(GR_RESHAPE), a, "r", 1, 256, 0, 0);
    int y = tg_unary(g, tg_node(GR_RELU), r, "out", 1, 256, 0, 0);
    g->n_inputs = 1;
    g->inputs[0] = x;
    g->n_outputs = 1;
    g->outputs[0] = y;
    plan_layout *p = NULL;
    REQUIRE_OK(gr_validate(g));
    REQUIRE_OK(plan_build(g, NULL, &p));
    CHECK(check_plan(g, p) == 0);
    CHECK(p->slots[r].alias_of == a && p->slots[r].offset == p->slots[a].offset);
    CHECK(p->slots[a].last == 2);
    CHECK(p->slots[y].offset != p->slots[a].offset);
    CHECK(p->item_bytes == 3 * 1024);
    plan_free(p);
    /* And it runs: out = relu(relu(x)) flattened. */
    float in[256], out[256];
    float *outs[GR_MAX_IO] = {out};
    tg_fill(in, 256, 5, -1, 1);
    REQUIRE_OK(tg_run(g, true, 1, in, outs, NULL));
    int wrong = 0;
    for (int i = 0; i < 256; i++)
        wrong += out[i] != (in[i] > 0 ? in[i] : 0.0f);
    CHECK(wrong == 0);
    gr_free(g);
}

static void plan_model(const char *path)
{
    tfl_model *m = NULL;
    gr_graph *g = NULL;
    plan_layout *p = NULL;
    REQUIRE_OK(tfl_model_read_file(path, &m));
    omma_status st = gr_build_tflite(m, &g);
    tfl_model_free(m);
    REQUIRE_OK(st);

    /* Unrewritten: the DEQUANTIZE outputs are batch-independent. */
    st = plan_build(g, NULL, &p);
    if (st == OMMA_OK) {
        CHECK(check_plan(g, p) == 0);
        CHECK(p->fixed_bytes > 0);
        CHECK(p->item_bytes < p->naive_bytes);
        fprintf(stderr, "%s unrewritten: fixed %zu, per item %zu (peak alive %zu, without reuse "
                "%zu)\n", path, p->fixed_bytes, p->item_bytes, p->peak_bytes, p->naive_bytes);
        plan_free(p);
        p = NULL;
    }
    CHECK(st == OMMA_OK);

    st = rw_apply_all(g, NULL);
    if (st == OMMA_OK)
        st = plan_build(g, NULL, &p);
    if (st == OMMA_OK) {
        CHECK(check_plan(g, p) == 0);
        CHECK(p->fixed_bytes == 0);
        /* Reuse must at least halve the memory of these chain-like nets. */
        CHECK(2 * p->item_bytes < p->naive_bytes);
        fprintf(stderr, "%s rewritten: per item %zu (peak alive %zu, without reuse %zu)\n", path,
                p->item_bytes, p->peak_bytes, p->naive_bytes);
        /* The placement reaches the floor (the most bytes alive at one
         * node) on all three models. */
        CHECK(p->item_bytes == p->peak_bytes);
    }
    CHECK(st == OMMA_OK);
    plan_free(p);
    gr_free(g);
}

static void test_short_range_plan(void) { plan_model(FACE_MODEL_SHORT); }
static void test_full_range_plan(void) { plan_model(FACE_MODEL_FULL); }
static void test_face_mesh_plan(void) { plan_model(FACE_MODEL_MESH); }

int main(void)
{
    RUN(test_chain_reuses_exactly);
    RUN(test_step_keeps_its_tensors_apart);
    RUN(test_reshape_aliases_its_input);
    RUN(test_short_range_plan);
    RUN(test_full_range_plan);
    RUN(test_face_mesh_plan);
    return testing_finish();
}
