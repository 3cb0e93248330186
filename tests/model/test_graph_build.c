/* Building the IR from the three model files: op counts, inputs and
 * outputs as the files declare them, SAME padding resolved with TFLite's
 * split, parameters counted. */
#include <string.h>

#include "model/graph.h"
#include "model/tflite.h"
#include "support/face_inputs.h"
#include "testing.h"

static gr_graph *build(const char *path)
{
    tfl_model *m = NULL;
    gr_graph *g = NULL;
    if (tfl_model_read_file(path, &m) != OMMA_OK) {
        fprintf(stderr, "%s: %s\n", path, omma_last_error());
        return NULL;
    }
    if (gr_build_tflite(m, &g) != OMMA_OK)
        fprintf(stderr, "%s: %s\n", path, omma_last_error());
    tfl_model_free(m);
    return g;
}

static bool dims_are(const gr_tensor *t, int rank, int d0, int d1, int d2, int d3)
{
    int d[4] = {d0, d1, d2, d3};
    if (t->rank != rank)
        return false;
    for (int i = 0; i < rank; i++)
        if (t->dims[i] != d[i])
            return false;
    return true;
}

/* Counts per op, in gr_op order: CONV2D, DWCONV2D, ADD, RELU, PRELU, MAXPOOL,
 * PAD, RESHAPE, CONCAT, RESIZE_BILINEAR, DEQUANTIZE (as the files declare:
 * 164, 354 and 210 operators). */
static void check_counts(const gr_graph *g, const int *want)
{
    int have[GR_OP_COUNT];
    gr_op_counts(g, have);
    for (int op = 0; op < GR_OP_COUNT; op++) {
        if (have[op] != want[op])
            fprintf(stderr, "%s: %d, expected %d\n", gr_op_name((gr_op)op), have[op], want[op]);
        CHECK(have[op] == want[op]);
    }
}

static void test_short_range(void)
{
    gr_graph *g = build(FACE_MODEL_SHORT);
    REQUIRE(g);
    static const int want[GR_OP_COUNT] = {21, 16, 16, 17, 0, 3, 11, 4, 2, 0, 74};
    check_counts(g, want);
    CHECK(g->n_nodes == 164);
    CHECK(g->n_inputs == 1 && g->n_outputs == 2);
    CHECK(strcmp(g->tensors[g->inputs[0]].name, "input") == 0);
    CHECK(dims_are(&g->tensors[g->inputs[0]], 4, 1, 128, 128, 3));
    CHECK(strcmp(g->tensors[g->outputs[0]].name, "regressors") == 0);
    CHECK(dims_are(&g->tensors[g->outputs[0]], 3, 1, 896, 16, 0));
    CHECK(strcmp(g->tensors[g->outputs[1]].name, "classificators") == 0);
    CHECK(dims_are(&g->tensors[g->outputs[1]], 3, 1, 896, 1, 0));
    /* The first CONV_2D: 5x5 stride 2 SAME on 128: 63 * 2 + 5 - 128 = 3
     * pixels of padding, split 1 before and 2 after (TFLite's split). */
    const gr_node *c = NULL;
    for (int i = 0; i < g->n_nodes && !c; i++)
        if (g->nodes[i].op == GR_CONV2D)
            c = &g->nodes[i];
    REQUIRE(c);
    CHECK(c->p.conv.win.kh == 5 && c->p.conv.win.stride_h == 2);
    CHECK(c->p.conv.win.pad_top == 1 && c->p.conv.win.pad_bottom == 2);
    CHECK(c->p.conv.win.pad_left == 1 && c->p.conv.win.pad_right == 2);
    CHECK(c->p.conv.act == GR_ACT_NONE && c->p.conv.residual == -1);
    /* Channel PADs: [0,0],[0,0],[0,0],[0,4] on the first one. */
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == GR_PAD) {
            CHECK(g->nodes[i].p.pad.before[3] == 0 && g->nodes[i].p.pad.after[3] == 4);
            CHECK(g->nodes[i].p.pad.before[1] == 0 && g->nodes[i].p.pad.after[2] == 0);
            break;
        }
    /* Concatenation along the anchors axis. */
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == GR_CONCAT)
            CHECK(g->nodes[i].p.concat.axis == 1 && g->nodes[i].n_in == 2);
    size_t params = gr_param_count(g);
    fprintf(stderr, "short range: %zu parameters\n", params);
    CHECK(params == 101390);
    gr_free(g);
}

static void test_full_range(void)
{
    gr_graph *g = build(FACE_MODEL_FULL);
    REQUIRE(g);
    static const int want[GR_OP_COUNT] = {49, 40, 23, 47, 0, 4, 8, 2, 0, 3, 178};
    check_counts(g, want);
    CHECK(g->n_nodes == 354);
    CHECK(dims_are(&g->tensors[g->inputs[0]], 4, 1, 192, 192, 3));
    CHECK(g->n_outputs == 2);
    CHECK(strcmp(g->tensors[g->outputs[0]].name, "reshaped_regressor_face_4") == 0);
    CHECK(dims_are(&g->tensors[g->outputs[0]], 3, 1, 2304, 16, 0));
    CHECK(strcmp(g->tensors[g->outputs[1]].name, "reshaped_classifier_face_4") == 0);
    CHECK(dims_are(&g->tensors[g->outputs[1]], 3, 1, 2304, 1, 0));
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == GR_RESIZE_BILINEAR)
            CHECK(!g->nodes[i].p.resize.align_corners && g->nodes[i].p.resize.half_pixel_centers);
    size_t params = gr_param_count(g);
    fprintf(stderr, "full range: %zu parameters\n", params);
    CHECK(params == 514069);
    gr_free(g);
}

static void test_face_mesh(void)
{
    gr_graph *g = build(FACE_MODEL_MESH);
    REQUIRE(g);
    static const int want[GR_OP_COUNT] = {25, 20, 20, 0, 23, 6, 3, 0, 0, 0, 113};
    check_counts(g, want);
    CHECK(g->n_nodes == 210);
    CHECK(strcmp(g->tensors[g->inputs[0]].name, "input_1") == 0);
    CHECK(dims_are(&g->tensors[g->inputs[0]], 4, 1, 192, 192, 3));
    CHECK(strcmp(g->tensors[g->outputs[0]].name, "conv2d_21") == 0);
    CHECK(dims_are(&g->tensors[g->outputs[0]], 4, 1, 1, 1, 1404));
    CHECK(strcmp(g->tensors[g->outputs[1]].name, "conv2d_31") == 0);
    CHECK(dims_are(&g->tensors[g->outputs[1]], 4, 1, 1, 1, 1));
    /* MAX_POOL_2D here is VALID 2x2 stride 2: no padding. */
    for (int i = 0; i < g->n_nodes; i++)
        if (g->nodes[i].op == GR_MAXPOOL) {
            const gr_window *w = &g->nodes[i].p.pool.win;
            CHECK(w->kh == 2 && w->stride_h == 2 && w->pad_top == 0 && w->pad_bottom == 0);
        }
    size_t params = gr_param_count(g);
    fprintf(stderr, "face mesh: %zu parameters\n", params);
    CHECK(params == 604685);
    gr_free(g);
}

static void test_clone_is_deep(void)
{
    gr_graph *g = build(FACE_MODEL_SHORT), *c = NULL;
    REQUIRE(g);
    omma_status st = gr_clone(g, &c);
    if (st == OMMA_OK) {
        CHECK(c->n_nodes == g->n_nodes && c->n_tensors == g->n_tensors);
        int t = 0;
        while (t < g->n_tensors && !g->tensors[t].data)
            t++;
        REQUIRE(t < g->n_tensors);
        CHECK(c->tensors[t].data != g->tensors[t].data);
        CHECK(memcmp(c->tensors[t].data, g->tensors[t].data, g->tensors[t].bytes) == 0);
        CHECK(gr_validate(c) == OMMA_OK);
    }
    CHECK(st == OMMA_OK);
    gr_free(c);
    gr_free(g);
}

int main(void)
{
    RUN(test_short_range);
    RUN(test_full_range);
    RUN(test_face_mesh);
    RUN(test_clone_is_deep);
    return testing_finish();
}
