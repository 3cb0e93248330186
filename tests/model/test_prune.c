/* Pruning a graph to chosen outputs (model/prune.h) on a hand-built graph:
 *
 *   x -> A (conv 3x3) -> a -> B (conv 1x1) -> out_b
 *                        a -> C (depthwise 3x3) -> c -> D (conv 1x1) -> out_d
 *   x -> E (conv 1x1) -> out_e
 *
 * - the nodes and tensors no kept output needs are removed, the outputs are
 *   the kept ones in the order given, the maps (nodes, lost uses) are right,
 *   the result is valid and its outputs are bitwise the full graph's (CPU
 *   executor);
 * - groups (plan_build's steps) are kept or removed whole;
 * - bad names and counts fail with a message naming the output and listing
 *   the graph's outputs, leaving the graph unchanged. */
#include <stdlib.h>
#include <string.h>

#include "model/graph.h"
#include "model/prune.h"
#include "support/test_graph.h"
#include "testing.h"

enum { N_A, N_B, N_C, N_D, N_E };

static gr_graph *build(void)
{
    gr_graph *g = NULL;
    if (gr_create(&g) != OMMA_OK)
        return NULL;
    int x = tg_act(g, "x", 1, 6, 6, 4);
    int a = tg_conv(g, x, false, 8, 3, 3, 1, 1, 1, 1, 1, "a", 11);
    int b = tg_conv(g, a, false, 4, 1, 1, 1, 0, 0, 0, 0, "out_b", 12);
    int c = tg_conv(g, a, true, 8, 3, 3, 1, 1, 1, 1, 1, "c", 13);
    int d = tg_conv(g, c, false, 2, 1, 1, 1, 0, 0, 0, 0, "out_d", 14);
    int e = tg_conv(g, x, false, 3, 1, 1, 1, 0, 0, 0, 0, "out_e", 15);
    if (x < 0 || a < 0 || b < 0 || c < 0 || d < 0 || e < 0) {
        gr_free(g);
        return NULL;
    }
    g->n_inputs = 1;
    g->inputs[0] = x;
    g->n_outputs = 3;
    g->outputs[0] = b;
    g->outputs[1] = d;
    g->outputs[2] = e;
    gr_relink(g);
    if (gr_validate(g) != OMMA_OK) {
        fprintf(stderr, "hand-built graph: %s\n", omma_last_error());
        gr_free(g);
        return NULL;
    }
    return g;
}

static int find_tensor(const gr_graph *g, const char *name)
{
    for (int t = 0; t < g->n_tensors; t++)
        if (strcmp(g->tensors[t].name, name) == 0)
            return t;
    return -1;
}

static const char *out_name(const gr_graph *g, int i)
{
    return g->tensors[g->outputs[i]].name;
}

/* Runs full and pruned on the same input; pruned's output i must be
 * bitwise full's output full_index[i]. */
static void check_bitwise(const gr_graph *full, const gr_graph *pruned, const int *full_index)
{
    enum { BATCH = 2 };
    size_t in_n = BATCH * gr_tensor_elems(&full->tensors[full->inputs[0]]);
    float *in = malloc(in_n * sizeof *in);
    float *fo[GR_MAX_IO] = {0}, *po[GR_MAX_IO] = {0};
    REQUIRE(in);
    tg_fill(in, in_n, 7, -1.0f, 1.0f);
    int nf = 0, np = 0;
    if (tg_alloc_outputs(full, BATCH, fo) == 0 && tg_alloc_outputs(pruned, BATCH, po) == 0) {
        CHECK(tg_run(full, false, BATCH, in, fo, &nf) == OMMA_OK);
        CHECK(tg_run(pruned, false, BATCH, in, po, &np) == OMMA_OK);
        CHECK(np == pruned->n_nodes && nf == full->n_nodes);
        for (int i = 0; i < pruned->n_outputs; i++) {
            size_t n = BATCH * gr_tensor_elems(&pruned->tensors[pruned->outputs[i]]);
            CHECK(n == BATCH * gr_tensor_elems(&full->tensors[full->outputs[full_index[i]]]));
            CHECK(memcmp(po[i], fo[full_index[i]], n * sizeof(float)) == 0);
        }
    } else {
        CHECK(!"allocating outputs");
    }
    tg_free_outputs(fo);
    tg_free_outputs(po);
    free(in);
}

static void test_prune_keeps_what_outputs_need(void)
{
    gr_graph *full = build(), *g = NULL;
    REQUIRE(full);
    REQUIRE_OK(gr_clone(full, &g));
    const char *names[] = {"out_e", "out_d"};
    gr_prune_result r;
    REQUIRE_OK(gr_prune(g, names, 2, NULL, &r));
    CHECK(gr_validate(g) == OMMA_OK);
    CHECK(r.nodes_removed == 1 && g->n_nodes == 4 && r.n_nodes_before == 5);
    int want_map[] = {0, -1, 1, 2, 3};
    for (int i = 0; i < 5; i++)
        CHECK(r.node_map[i] == want_map[i]);
    /* B, its filter, bias and output are gone. */
    CHECK(g->n_tensors == full->n_tensors - 3 && find_tensor(g, "out_b") < 0);
    CHECK(g->n_outputs == 2 && strcmp(out_name(g, 0), "out_e") == 0 &&
          strcmp(out_name(g, 1), "out_d") == 0);
    CHECK(r.n_tensors_after == g->n_tensors);
    /* a lost B's read; nothing else lost a use. */
    int a = find_tensor(g, "a"), lost = 0;
    REQUIRE(a >= 0);
    CHECK(r.lost_uses[a] == 1);
    for (int t = 0; t < g->n_tensors; t++)
        lost += r.lost_uses[t];
    CHECK(lost == 1);
    int full_index[] = {2, 1};
    check_bitwise(full, g, full_index);
    gr_prune_result_free(&r);
    gr_free(g);

    /* One output: out_d. B and E go; x lost E's read. No result asked for. */
    REQUIRE_OK(gr_clone(full, &g));
    REQUIRE_OK(gr_prune(g, names + 1, 1, NULL, NULL));
    CHECK(gr_validate(g) == OMMA_OK);
    CHECK(g->n_nodes == 3 && g->n_outputs == 1 && strcmp(out_name(g, 0), "out_d") == 0);
    CHECK(g->nodes[0].op == GR_CONV2D && g->nodes[1].op == GR_DWCONV2D &&
          g->nodes[2].op == GR_CONV2D);
    int one[] = {1};
    check_bitwise(full, g, one);
    gr_free(g);

    /* All outputs, in another order: nothing removed. */
    const char *all[] = {"out_d", "out_b", "out_e"};
    REQUIRE_OK(gr_clone(full, &g));
    REQUIRE_OK(gr_prune(g, all, 3, NULL, &r));
    CHECK(r.nodes_removed == 0 && g->n_nodes == 5 && g->n_tensors == full->n_tensors);
    for (int t = 0; t < g->n_tensors; t++)
        CHECK(r.lost_uses[t] == 0);
    int order[] = {1, 0, 2};
    check_bitwise(full, g, order);
    gr_prune_result_free(&r);
    gr_free(g);
    gr_free(full);
}

static void test_prune_keeps_groups_whole(void)
{
    gr_graph *full = build(), *g = NULL;
    REQUIRE(full);
    /* Nodes B and C are one group (a step of two nodes). */
    int groups[] = {N_A, N_C, N_C, N_D, N_E};
    REQUIRE_OK(gr_clone(full, &g));
    const char *d[] = {"out_d"};
    gr_prune_result r;
    REQUIRE_OK(gr_prune(g, d, 1, groups, &r));
    CHECK(gr_validate(g) == OMMA_OK);
    /* B stays with C; only E goes. out_b stays as B's output, no longer a
     * graph output: that use is lost, as is x's read by E. */
    CHECK(r.nodes_removed == 1 && g->n_nodes == 4);
    int want_map[] = {0, 1, 2, 3, -1};
    for (int i = 0; i < 5; i++)
        CHECK(r.node_map[i] == want_map[i]);
    int b = find_tensor(g, "out_b"), x = find_tensor(g, "x");
    REQUIRE(b >= 0 && x >= 0);
    CHECK(r.lost_uses[b] == 1 && r.lost_uses[x] == 1);
    CHECK(g->n_outputs == 1 && strcmp(out_name(g, 0), "out_d") == 0);
    int one[] = {1};
    check_bitwise(full, g, one);
    gr_prune_result_free(&r);
    gr_free(g);

    /* out_e alone: the group goes whole, and A with it. */
    REQUIRE_OK(gr_clone(full, &g));
    const char *e[] = {"out_e"};
    REQUIRE_OK(gr_prune(g, e, 1, groups, &r));
    CHECK(r.nodes_removed == 4 && g->n_nodes == 1 && r.node_map[N_E] == 0);
    CHECK(gr_validate(g) == OMMA_OK);
    int two[] = {2};
    check_bitwise(full, g, two);
    gr_prune_result_free(&r);
    gr_free(g);
    gr_free(full);
}

static void test_prune_bad_names(void)
{
    gr_graph *g = build();
    REQUIRE(g);
    int nodes = g->n_nodes, tensors = g->n_tensors;
    const char *list = "'out_b', 'out_d', 'out_e'";
    const char *nope[] = {"out_d", "nope"};
    CHECK_FAILS(gr_prune(g, nope, 2, NULL, NULL), OMMA_ERR_INVALID_ARG,
                "'nope' is not an output of the model");
    CHECK(strstr(omma_last_error(), list));
    const char *twice[] = {"out_d", "out_e", "out_d"};
    CHECK_FAILS(gr_prune(g, twice, 3, NULL, NULL), OMMA_ERR_INVALID_ARG, "'out_d' named twice");
    CHECK(strstr(omma_last_error(), list));
    const char *null_name[] = {"out_d", NULL};
    CHECK_FAILS(gr_prune(g, null_name, 2, NULL, NULL), OMMA_ERR_INVALID_ARG, "name 1 is NULL");
    CHECK_FAILS(gr_prune(g, nope, 0, NULL, NULL), OMMA_ERR_INVALID_ARG, "0 named");
    CHECK(strstr(omma_last_error(), list));
    const char *four[] = {"out_b", "out_d", "out_e", "out_b"};
    CHECK_FAILS(gr_prune(g, four, 4, NULL, NULL), OMMA_ERR_INVALID_ARG, "4 named, the model has 3");
    CHECK_FAILS(gr_prune(g, NULL, 1, NULL, NULL), OMMA_ERR_INVALID_ARG, "the list is NULL");
    gr_prune_result r;
    memset(&r, 0xff, sizeof r);
    CHECK_FAILS(gr_prune(g, nope, 2, NULL, &r), OMMA_ERR_INVALID_ARG, "'nope'");
    CHECK(!r.node_map && !r.lost_uses);
    gr_prune_result_free(&r);
    /* Unchanged. */
    CHECK(g->n_nodes == nodes && g->n_tensors == tensors && g->n_outputs == 3);
    CHECK(gr_validate(g) == OMMA_OK);
    gr_free(g);
}

int main(void)
{
    RUN(test_prune_keeps_what_outputs_need);
    RUN(test_prune_keeps_groups_whole);
    RUN(test_prune_bad_names);
    return testing_finish();
}
