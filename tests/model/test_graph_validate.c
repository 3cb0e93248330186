/* Graph validation: hand-built graphs, each broken in one way, must be
 * rejected with OMMA_ERR_FORMAT and a message naming the node and tensor
 * (the DW_PW_BLOCK node, made only by a rewrite, included). */
#include "model/graph.h"
#include "support/test_graph.h"
#include "testing.h"

/* input [1,8,8,4] -> conv 3x3 pad 1 -> relu -> output. */
static gr_graph *small_graph(void)
{
    gr_graph *g = NULL;
    if (gr_create(&g) != OMMA_OK)
        return NULL;
    int x = tg_act(g, "input", 1, 8, 8, 4);
    int c = tg_conv(g, x, false, 6, 3, 3, 1, 1, 1, 1, 1, "conv", 1);
    int y = tg_unary(g, tg_node(GR_RELU), c, "relu", 1, 8, 8, 6);
    g->n_inputs = 1;
    g->inputs[0] = x;
    g->n_outputs = 1;
    g->outputs[0] = y;
    return g;
}

static void test_valid_graph_passes(void)
{
    gr_graph *g = small_graph();
    REQUIRE(g);
    REQUIRE_OK(gr_validate(g));
    gr_free(g);
}

static void test_filter_channels_mismatch(void)
{
    gr_graph *g = small_graph();
    REQUIRE(g);
    g->tensors[g->nodes[0].in[1]].dims[3] = 5; /* filter [6,3,3,5] on 4 channels */
    g->tensors[g->nodes[0].in[1]].bytes = 6 * 3 * 3 * 5 * 4;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "node 0 (CONV_2D");
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "expects 5 input channels, input 'input'");
    gr_free(g);
}

static void test_output_shape_mismatch(void)
{
    gr_graph *g = small_graph();
    REQUIRE(g);
    g->tensors[g->nodes[0].out].dims[1] = 7;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT,
                "output 'conv' is [1, 7, 8, 6], the window gives [1, 8, 8, 6]");
    gr_free(g);
}

static void test_constant_size_mismatch(void)
{
    gr_graph *g = small_graph();
    REQUIRE(g);
    g->tensors[g->nodes[0].in[2]].bytes = 8; /* bias [6] needs 24 bytes */
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "constant 2 ('bias') holds 8 bytes, its shape needs 24");
    gr_free(g);
}

static void test_produced_twice(void)
{
    gr_graph *g = small_graph();
    REQUIRE(g);
    gr_node n = g->nodes[1];
    n.in[0] = g->nodes[1].out; /* a second RELU writing 'conv' again */
    n.out = g->nodes[0].out;
    REQUIRE_OK(gr_add_node(g, &n, NULL));
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT,
                "node 2 (RELU, model op -1): writes tensor 3 ('conv'), already produced by node 0");
    gr_free(g);
}

static void test_unproduced_input(void)
{
    gr_graph *g = small_graph();
    REQUIRE(g);
    int orphan = tg_act(g, "orphan", 1, 8, 8, 6);
    g->nodes[1].in[0] = orphan;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "node 1 (RELU, model op -1): reads tensor 5 ('orphan'), which no node produces");
    gr_free(g);
}

static void test_operand_out_of_range(void)
{
    gr_graph *g = small_graph();
    REQUIRE(g);
    g->nodes[1].in[0] = 99;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "node 1 (RELU, model op -1): input 0 names tensor 99 of 5");
    gr_free(g);
}

static void test_cycle(void)
{
    /* relu_a reads b, relu_b reads a: neither can run first. */
    gr_graph *g = NULL;
    REQUIRE_OK(gr_create(&g));
    int x = tg_act(g, "input", 1, 4, 4, 2);
    int a = tg_act(g, "a", 1, 4, 4, 2), b = tg_act(g, "b", 1, 4, 4, 2);
    int y = tg_act(g, "y", 1, 4, 4, 2);
    gr_node n = tg_node(GR_RELU);
    n.n_in = 1;
    n.in[0] = b;
    n.out = a;
    REQUIRE_OK(gr_add_node(g, &n, NULL));
    n.in[0] = a;
    n.out = b;
    REQUIRE_OK(gr_add_node(g, &n, NULL));
    gr_node add = tg_node(GR_ADD);
    add.n_in = 2;
    add.in[0] = x;
    add.in[1] = b;
    add.out = y;
    REQUIRE_OK(gr_add_node(g, &add, NULL));
    g->n_inputs = 1;
    g->inputs[0] = x;
    g->n_outputs = 1;
    g->outputs[0] = y;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "is part of a cycle");
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "node 0 (RELU, model op -1)");
    gr_free(g);
}

static void test_not_in_order(void)
{
    gr_graph *g = small_graph();
    REQUIRE(g);
    gr_node t = g->nodes[0];
    g->nodes[0] = g->nodes[1];
    g->nodes[1] = t;
    gr_relink(g);
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT,
                "node 0 (RELU, model op -1): reads tensor 3 ('conv') before node 1 produces it "
                "(nodes are not in execution order)");
    gr_free(g);
}

static void test_add_shape_mismatch(void)
{
    gr_graph *g = small_graph();
    REQUIRE(g);
    int other = tg_act(g, "other", 1, 8, 8, 5);
    int y = tg_act(g, "sum", 1, 8, 8, 6);
    gr_node add = tg_node(GR_ADD);
    add.n_in = 2;
    add.in[0] = g->outputs[0];
    add.in[1] = other;
    add.out = y;
    REQUIRE_OK(gr_add_node(g, &add, NULL));
    g->inputs[g->n_inputs++] = other;
    g->outputs[0] = y;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT,
                "node 2 (ADD, model op -1): inputs 'relu' [1, 8, 8, 6] and 'other' [1, 8, 8, 5]");
    gr_free(g);
}

static void test_output_not_produced(void)
{
    gr_graph *g = small_graph();
    REQUIRE(g);
    g->outputs[0] = tg_act(g, "nowhere", 1, 2, 2, 2);
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "output 0 ('nowhere') is produced by no node");
    gr_free(g);
}

static void test_writes_constant(void)
{
    gr_graph *g = small_graph();
    REQUIRE(g);
    g->nodes[1].out = g->nodes[0].in[2];
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "writes tensor 2 ('bias'), which is a constant");
    gr_free(g);
}

static void test_pool_padding_too_large(void)
{
    gr_graph *g = small_graph();
    REQUIRE(g);
    gr_node p = tg_node(GR_MAXPOOL);
    p.p.pool.win = (gr_window){.kh = 2, .kw = 2, .stride_h = 2, .stride_w = 2, .dil_h = 1,
                               .dil_w = 1, .pad_top = 2};
    int y = tg_unary(g, p, g->outputs[0], "pool", 1, 5, 4, 6);
    REQUIRE(y >= 0);
    g->outputs[0] = y;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT,
                "node 2 (MAX_POOL_2D, model op -1): pooling padding 2,0,0,0 leaves windows without input");
    gr_free(g);
}

static void test_prelu_alpha_shape(void)
{
    gr_graph *g = small_graph();
    REQUIRE(g);
    gr_node p = tg_node(GR_PRELU);
    p.n_in = 2;
    p.in[1] = tg_const(g, "alpha", 1, 1, 5, 0, 3, 0, 1);
    int y = tg_unary(g, p, g->outputs[0], "prelu", 1, 8, 8, 6);
    REQUIRE(y >= 0);
    g->outputs[0] = y;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT,
                "alpha 'alpha' has shape [1, 1, 5], expected 6 per-channel values");
    gr_free(g);
}

static void test_filter_must_be_constant(void)
{
    gr_graph *g = small_graph();
    REQUIRE(g);
    g->nodes[0].in[1] = g->inputs[0];
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "filter 'input' must be a constant");
    gr_free(g);
}

/* input [1,8,8,4] -> DW_PW_BLOCK (3x3 depthwise, SAME; 1x1 to 6 channels)
 * with a pooled residual from a second input [1,16,16,4] -> output
 * [1,8,8,6]. Node 0 is the block; t receives its tensors. */
typedef struct block_tensors {
    int x, dwf, dwb, pwf, pwb, res, y;
} block_tensors;

static gr_graph *block_graph(block_tensors *t)
{
    gr_graph *g = NULL;
    if (gr_create(&g) != OMMA_OK)
        return NULL;
    t->x = tg_act(g, "input", 1, 8, 8, 4);
    t->res = tg_act(g, "skip", 1, 16, 16, 4);
    t->dwf = tg_const(g, "dw_filter", 1, 3, 3, 4, 1, -1, 1);
    t->dwb = tg_const(g, "dw_bias", 4, 0, 0, 0, 2, -1, 1);
    t->pwf = tg_const(g, "pw_filter", 6, 1, 1, 4, 3, -1, 1);
    t->pwb = tg_const(g, "pw_bias", 6, 0, 0, 0, 4, -1, 1);
    t->y = tg_act(g, "block", 1, 8, 8, 6);
    gr_node n = tg_node(GR_DWPW);
    n.n_in = 5;
    n.in[0] = t->x;
    n.in[1] = t->dwf;
    n.in[2] = t->dwb;
    n.in[3] = t->pwf;
    n.in[4] = t->pwb;
    n.out = t->y;
    n.p.conv.win = (gr_window){.kh = 3, .kw = 3, .stride_h = 1, .stride_w = 1, .dil_h = 1,
                               .dil_w = 1, .pad_top = 1, .pad_left = 1, .pad_bottom = 1,
                               .pad_right = 1};
    n.p.conv.residual = t->res;
    n.p.conv.pool_residual = true;
    if (gr_add_node(g, &n, NULL) != OMMA_OK) {
        gr_free(g);
        return NULL;
    }
    g->n_inputs = 2;
    g->inputs[0] = t->x;
    g->inputs[1] = t->res;
    g->n_outputs = 1;
    g->outputs[0] = t->y;
    return g;
}

static void test_dwpw_valid_forms(void)
{
    block_tensors t;
    gr_graph *g = block_graph(&t);
    REQUIRE(g);
    REQUIRE_OK(gr_validate(g));
    /* Both biases are optional. */
    g->nodes[0].in[2] = -1;
    g->nodes[0].in[4] = -1;
    CHECK(gr_validate(g) == OMMA_OK);
    /* A residual the output's size, with fewer channels (a channel PAD). */
    g->nodes[0].p.conv.pool_residual = false;
    g->tensors[t.res].dims[1] = g->tensors[t.res].dims[2] = 8;
    CHECK(gr_validate(g) == OMMA_OK);
    /* No residual at all, PRELU with 6 alphas. */
    g->nodes[0].p.conv.residual = -1;
    g->nodes[0].p.conv.act = GR_ACT_PRELU;
    g->nodes[0].p.conv.alpha = tg_const(g, "alpha", 6, 0, 0, 0, 5, 0, 1);
    g->n_inputs = 1;
    CHECK(gr_validate(g) == OMMA_OK);
    gr_free(g);
}

/* Each case breaks one thing of the valid block graph. */
static void test_dwpw_rejected(void)
{
    block_tensors t;
    gr_graph *g;
#define FRESH() \
    do {                                                                       \
        gr_free(g);                                                            \
        g = block_graph(&t);                                                   \
        REQUIRE(g);                                                            \
    } while (0)
    g = NULL;
    FRESH();
    g->nodes[0].n_in = 3;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT,
                "node 0 (DW_PW_BLOCK, model op -1): has 3 inputs, expected 5");

    FRESH();
    g->nodes[0].in[3] = t.x;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "pointwise filter 'input' must be a constant");

    FRESH();
    g->nodes[0].p.conv.depth_multiplier = 2;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "node 0 (DW_PW_BLOCK, model op -1): depth "
                "multiplier 2, expected 1");

    FRESH();
    g->tensors[t.dwf].dims[3] = 2;
    g->tensors[t.dwf].bytes = 9 * 2 * 4;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "depthwise filter 'dw_filter' [1, 3, 3, 2] "
                "does not fit input 'input' [1, 8, 8, 4] and the 3x3 window");

    FRESH();
    g->nodes[0].p.conv.win.kh = 5;
    g->nodes[0].p.conv.win.pad_top = g->nodes[0].p.conv.win.pad_bottom = 2;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "does not fit input 'input' [1, 8, 8, 4] and "
                "the 5x3 window");

    FRESH();
    g->tensors[t.pwf].dims[1] = 2;
    g->tensors[t.pwf].dims[0] = 3;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "pointwise filter 'pw_filter' [3, 2, 1, 4] is "
                "not [Cout, 1, 1, 4] for input 'input'");

    FRESH();
    g->tensors[t.pwf].dims[3] = 2;
    g->tensors[t.pwf].dims[0] = 12;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "is not [Cout, 1, 1, 4]");

    FRESH();
    g->tensors[t.dwb].dims[0] = 2;
    g->tensors[t.dwb].bytes = 8;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "depthwise bias 'dw_bias' has shape [2], "
                "expected 4 per-channel values");

    FRESH();
    g->tensors[t.pwb].dims[0] = 4;
    g->tensors[t.pwb].bytes = 16;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "pointwise bias 'pw_bias' has shape [4], "
                "expected 6 per-channel values");

    FRESH();
    g->tensors[t.y].dims[3] = 5;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "output 'block' is [1, 8, 8, 5], the window "
                "and pointwise filter give [1, 8, 8, 6]");

    FRESH();
    g->nodes[0].p.conv.win.stride_h = 2;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "the window and pointwise filter give "
                "[1, 4, 8, 6]");

    FRESH();
    g->nodes[0].p.conv.pool_residual = false; /* a 16x16 residual, not pooled */
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "residual 'skip' [1, 16, 16, 4] does not fit "
                "output 'block' [1, 8, 8, 6] (not pooled: [1, 8, 8, C <= 6] expected)");

    FRESH();
    g->tensors[t.res].dims[2] = 17; /* pooled, but not exactly twice the width */
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "residual 'skip' [1, 16, 17, 4] does not fit "
                "output 'block' [1, 8, 8, 6] (pooled 2x2: [1, 16, 16, C <= 6] expected)");

    FRESH();
    g->tensors[t.res].dims[3] = 7; /* more channels than the output */
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "residual 'skip' [1, 16, 16, 7] does not fit");

    FRESH();
    g->nodes[0].p.conv.residual = t.pwb;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT,
                "residual 'pw_bias' must be an activation, not a constant");

    FRESH();
    g->nodes[0].p.conv.residual = -1;
    g->n_inputs = 1;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "pool_residual is set without a residual");

    FRESH();
    g->nodes[0].p.conv.act = GR_ACT_PRELU;
    g->nodes[0].p.conv.alpha = tg_const(g, "alpha", 4, 0, 0, 0, 5, 0, 1);
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT,
                "alpha 'alpha' has shape [4], expected 6 per-channel values");

    FRESH();
    g->nodes[0].in[4] = 99;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT,
                "node 0 (DW_PW_BLOCK, model op -1): input 4 names tensor 99 of 7");
#undef FRESH
    gr_free(g);
}

static void test_pool_residual_only_on_blocks(void)
{
    gr_graph *g = small_graph();
    REQUIRE(g);
    g->nodes[0].p.conv.pool_residual = true;
    CHECK_FAILS(gr_validate(g), OMMA_ERR_FORMAT, "node 0 (CONV_2D, model op -1): pool_residual "
                "is set (only DW_PW_BLOCK pools its residual)");
    gr_free(g);
}

int main(void)
{
    RUN(test_valid_graph_passes);
    RUN(test_filter_channels_mismatch);
    RUN(test_output_shape_mismatch);
    RUN(test_constant_size_mismatch);
    RUN(test_produced_twice);
    RUN(test_unproduced_input);
    RUN(test_operand_out_of_range);
    RUN(test_cycle);
    RUN(test_not_in_order);
    RUN(test_add_shape_mismatch);
    RUN(test_output_not_produced);
    RUN(test_writes_constant);
    RUN(test_pool_padding_too_large);
    RUN(test_prelu_alpha_shape);
    RUN(test_filter_must_be_constant);
    RUN(test_dwpw_valid_forms);
    RUN(test_dwpw_rejected);
    RUN(test_pool_residual_only_on_blocks);
    return testing_finish();
}
