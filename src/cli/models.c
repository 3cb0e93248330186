/* omma models inspect FILE [--outputs NAME,NAME] [--json]: what a model file
 * declares (inputs, outputs, operators, parameters) and what loading makes
 * of it (nodes after the load-time rewrites and, with --outputs, after
 * pruning to those outputs; activation arena). */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/json.h"
#include "model/graph.h"
#include "model/plan.h"
#include "model/prune.h"
#include "model/rewrite.h"
#include "model/tflite.h"

typedef struct report {
    const char *path;
    gr_graph *g; /* as read */
    gr_graph *rw; /* after the rewrites */
    plan_layout *plan;
    rw_stats stats;
    int ops[GR_OP_COUNT];
    size_t params;
    const char *const *outputs; /* --outputs, or NULL */
    int n_outputs;
    int nodes_pruned;
    size_t params_kept; /* after pruning */
} report;

static void json_tensors(const gr_graph *g, const int *list, int n)
{
    putchar('[');
    for (int i = 0; i < n; i++) {
        const gr_tensor *t = &g->tensors[list[i]];
        printf("%s{\"name\":", i ? "," : "");
        cli_json_string(t->name);
        printf(",\"shape\":[");
        for (int d = 0; d < t->rank; d++)
            printf("%s%d", d ? "," : "", t->dims[d]);
        printf("]}");
    }
    putchar(']');
}

static void print_json(const report *r)
{
    printf("{\"model\":");
    cli_json_string(r->path);
    printf(",\"inputs\":");
    json_tensors(r->g, r->g->inputs, r->g->n_inputs);
    printf(",\"outputs\":");
    json_tensors(r->g, r->g->outputs, r->g->n_outputs);
    printf(",\"operators\":%d,\"op_counts\":{", r->g->n_nodes);
    int k = 0;
    for (int op = 0; op < GR_OP_COUNT; op++)
        if (r->ops[op])
            printf("%s\"%s\":%d", k++ ? "," : "", gr_op_name((gr_op)op), r->ops[op]);
    printf("},\"params\":%zu,\"nodes_loaded\":%d,\"nodes_rewritten\":%d,", r->params,
           r->stats.nodes_before, r->stats.nodes_after);
    printf("\"rewrites\":{\"dequantize_folded\":%d,\"pads_folded\":%d,\"bias_fused\":%d,"
           "\"residual_fused\":%d,\"activation_fused\":%d,\"blocks_fused\":%d},",
           r->stats.dequantize_folded, r->stats.pads_folded, r->stats.bias_fused,
           r->stats.residual_fused, r->stats.activation_fused, r->stats.blocks_fused);
    if (r->outputs) {
        printf("\"outputs_kept\":[");
        for (int i = 0; i < r->n_outputs; i++) {
            printf("%s", i ? "," : "");
            cli_json_string(r->outputs[i]);
        }
        printf("],\"nodes_pruned\":%d,\"nodes_kept\":%d,\"params_kept\":%zu,", r->nodes_pruned,
               r->rw->n_nodes, r->params_kept);
    }
    printf("\"arena_bytes_batch1\":%zu,\"arena_bytes_per_item\":%zu}\n",
           plan_arena_bytes(r->plan, 1), r->plan->item_bytes);
}

static void print_text(const report *r)
{
    char dims[96];
    printf("model: %s\n", r->path);
    printf("inputs:\n");
    for (int i = 0; i < r->g->n_inputs; i++) {
        const gr_tensor *t = &r->g->tensors[r->g->inputs[i]];
        printf("  %-32s %s\n", t->name, gr_dims_str(t, dims, sizeof dims));
    }
    printf("outputs:\n");
    for (int i = 0; i < r->g->n_outputs; i++) {
        const gr_tensor *t = &r->g->tensors[r->g->outputs[i]];
        printf("  %-32s %s\n", t->name, gr_dims_str(t, dims, sizeof dims));
    }
    printf("operators: %d\n", r->g->n_nodes);
    for (int op = 0; op < GR_OP_COUNT; op++)
        if (r->ops[op])
            printf("  %-20s %4d\n", gr_op_name((gr_op)op), r->ops[op]);
    printf("parameters: %zu\n", r->params);
    printf("nodes: %d as read, %d after load-time rewrites\n", r->stats.nodes_before,
           r->stats.nodes_after);
    printf("  dequantize folded %d, pads folded %d, bias fused %d, residual adds fused %d, "
           "activations fused %d, depthwise+pointwise blocks fused %d\n",
           r->stats.dequantize_folded, r->stats.pads_folded, r->stats.bias_fused,
           r->stats.residual_fused, r->stats.activation_fused, r->stats.blocks_fused);
    if (r->outputs) {
        printf("pruned to outputs");
        for (int i = 0; i < r->n_outputs; i++)
            printf("%s %s", i ? "," : "", r->outputs[i]);
        printf(": %d nodes (%d removed), %zu parameters\n", r->rw->n_nodes, r->nodes_pruned,
               r->params_kept);
    }
    printf("activation arena: %zu bytes at batch 1, + %zu bytes per extra batch item\n",
           plan_arena_bytes(r->plan, 1), r->plan->item_bytes);
}

static int inspect(const char *path, const char *const *outputs, int n_outputs, bool json)
{
    report r = {.path = path, .outputs = outputs, .n_outputs = n_outputs};
    tfl_model *m = NULL;
    int rc = CLI_EXIT_OK;
    omma_status st = tfl_model_read_file(path, &m);
    if (st == OMMA_OK)
        st = gr_build_tflite(m, &r.g);
    tfl_model_free(m);
    if (st == OMMA_OK) {
        gr_op_counts(r.g, r.ops);
        r.params = gr_param_count(r.g);
        st = gr_clone(r.g, &r.rw);
    }
    if (st == OMMA_OK)
        st = rw_apply_all(r.rw, &r.stats);
    if (st == OMMA_OK && outputs) {
        gr_prune_result pr;
        st = gr_prune(r.rw, outputs, n_outputs, NULL, &pr);
        r.nodes_pruned = pr.nodes_removed;
        r.params_kept = gr_param_count(r.rw);
        gr_prune_result_free(&pr);
    }
    if (st == OMMA_OK)
        st = plan_build(r.rw, NULL, &r.plan);
    if (st != OMMA_OK)
        rc = cli_fail(st, "cannot inspect %s", path);
    else if (json)
        print_json(&r);
    else
        print_text(&r);
    plan_free(r.plan);
    gr_free(r.rw);
    gr_free(r.g);
    return rc;
}

enum { OPT_JSON, OPT_OUTPUTS };

static const cli_option options[] = {
    [OPT_JSON] = {"--json", NULL, "one JSON object instead of the text report"},
    [OPT_OUTPUTS] = {"--outputs", "NAME,NAME",
                     "also: the nodes, parameters and arena when only these outputs are kept"},
    {NULL, NULL, NULL},
};

static void usage(FILE *to)
{
    fprintf(to, "usage: omma models inspect FILE [--outputs NAME,NAME] [--json]\n"
                "  Prints a model's inputs, outputs, operator counts, parameter count,\n"
                "  node count before and after the load-time rewrites (and after pruning\n"
                "  to --outputs) and the activation arena size (batch 1 and per extra\n"
                "  item).\n");
    cli_print_options(to, options);
}

static int inspect_command(int argc, char **argv)
{
    const char *path = NULL;
    bool json = false;
    char names_buf[1024];
    const char *names[GR_MAX_IO];
    int n_names = 0;
    cli_args args;
    cli_args_init(&args, "models inspect", options, argc, argv);
    const cli_option *opt;
    const char *v;
    for (cli_arg_kind k; (k = cli_next(&args, &opt, &v)) != CLI_ARG_END;) {
        if (k == CLI_ARG_HELP) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        if (k == CLI_ARG_ERROR)
            return CLI_EXIT_USAGE;
        if (k == CLI_ARG_OPTION && opt - options == OPT_JSON)
            json = true;
        else if (k == CLI_ARG_OPTION) {
            if (!cli_arg_names(opt->name, v, names_buf, sizeof names_buf, names, GR_MAX_IO,
                               &n_names))
                return cli_see_help("models inspect");
        } else if (path)
            return cli_usage_error("models inspect", "one FILE at a time ('%s' and '%s')", path, v);
        else
            path = v;
    }
    if (!path)
        return cli_usage_error("models inspect", "no model FILE given");
    return inspect(path, n_names ? names : NULL, n_names, json);
}

int cli_models(int argc, char **argv)
{
    static const char *const subcommands[] = {"inspect"};
    if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (argc < 2)
        return cli_usage_error("models", "no models command given (models inspect FILE)");
    if (strcmp(argv[1], "inspect") == 0)
        return inspect_command(argc - 1, argv + 1);
    return cli_unknown("models", "models command", argv[1], subcommands, 1);
}
