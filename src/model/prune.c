/* Pruning a graph to the outputs its user wants (prune.h). */
#include "model/prune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

/* "'a', 'b', 'c'": the graph's output names, for messages. */
static const char *output_names(const gr_graph *g, char *buf, size_t size)
{
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < g->n_outputs && n < size; i++) {
        int k =
            snprintf(buf + n, size - n, "%s'%s'", i ? ", " : "", g->tensors[g->outputs[i]].name);
        if (k < 0)
            break;
        n += (size_t)k;
    }
    return buf;
}

/* The index among g's outputs of the one named name, or -1. */
static int find_output(const gr_graph *g, const char *name)
{
    for (int i = 0; i < g->n_outputs; i++)
        if (strcmp(g->tensors[g->outputs[i]].name, name) == 0)
            return i;
    return -1;
}

static omma_status check_names(const gr_graph *g, const char *const *names, int count, int *sel)
{
    char list[1024];
    if (count < 1 || count > g->n_outputs)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "outputs: %d named, the model has %d (%s); name 1..%d of them, or none "
                         "for all",
                         count, g->n_outputs, output_names(g, list, sizeof list), g->n_outputs);
    if (!names)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "outputs: %d named but the list is NULL", count);
    for (int i = 0; i < count; i++) {
        if (!names[i])
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                             "outputs: name %d is NULL (the model's outputs: %s)", i,
                             output_names(g, list, sizeof list));
        sel[i] = find_output(g, names[i]);
        if (sel[i] < 0)
            return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                             "outputs: '%s' is not an output of the model (its outputs: %s)",
                             names[i], output_names(g, list, sizeof list));
        for (int j = 0; j < i; j++)
            if (sel[j] == sel[i])
                return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                                 "outputs: '%s' named twice (the model's outputs: %s)", names[i],
                                 output_names(g, list, sizeof list));
    }
    return OMMA_OK;
}

/* Marks the nodes to drop: groups from the last to the first (nodes are in
 * execution order and groups are runs of them, so a group's outputs are
 * read only by itself and later groups); a group is kept when any of its
 * nodes writes a needed tensor, and then everything its nodes read is
 * needed. ends: scratch of g->n_nodes entries. */
static int mark(const gr_graph *g, const int *groups, bool *needed, bool *drop, int *ends)
{
    int n_groups = 0, removed = 0;
    for (int i = 0; i < g->n_nodes;) {
        int end = groups && groups[i] > i && groups[i] < g->n_nodes ? groups[i] : i;
        ends[n_groups++] = end;
        i = end + 1;
    }
    for (int k = n_groups - 1; k >= 0; k--) {
        int first = k > 0 ? ends[k - 1] + 1 : 0, last = ends[k];
        bool keep = false;
        for (int i = first; i <= last; i++)
            keep = keep || needed[g->nodes[i].out];
        for (int i = first; i <= last; i++) {
            drop[i] = !keep;
            removed += !keep;
            int r[GR_MAX_INPUTS + 2];
            int n = keep ? gr_node_reads(&g->nodes[i], r) : 0;
            for (int j = 0; j < n; j++)
                needed[r[j]] = true;
        }
    }
    return removed;
}

void gr_prune_result_free(gr_prune_result *r)
{
    if (!r)
        return;
    free(r->node_map);
    free(r->lost_uses);
    memset(r, 0, sizeof *r);
}

omma_status gr_prune(gr_graph *g, const char *const *names, int count, const int *groups,
                     gr_prune_result *r)
{
    int sel[GR_MAX_IO];
    if (r)
        memset(r, 0, sizeof *r);
    OMMA_TRY(check_names(g, names, count, sel));
    size_t nt = g->n_tensors ? (size_t)g->n_tensors : 1, nn = g->n_nodes ? (size_t)g->n_nodes : 1;
    bool *needed = calloc(nt, sizeof *needed), *drop = calloc(nn, sizeof *drop);
    int *before = malloc(nt * sizeof *before), *after = malloc(nt * sizeof *after);
    int *tmap = malloc(nt * sizeof *tmap), *node_map = malloc(nn * sizeof *node_map);
    if (!needed || !drop || !before || !after || !tmap || !node_map) {
        free(needed);
        free(drop);
        free(before);
        free(after);
        free(tmap);
        free(node_map);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "outputs: pruning a graph of %d nodes",
                         g->n_nodes);
    }
    /* From here on nothing fails. */
    int kept[GR_MAX_IO];
    for (int i = 0; i < count; i++) {
        kept[i] = g->outputs[sel[i]];
        needed[kept[i]] = true;
    }
    int removed = mark(g, groups, needed, drop, node_map);
    int n_before = g->n_nodes;
    for (int i = 0, k = 0; i < n_before; i++)
        node_map[i] = drop[i] ? -1 : k++;
    gr_count_uses(g, before);
    memcpy(g->outputs, kept, (size_t)count * sizeof *kept);
    g->n_outputs = count;
    int n_tensors_before = g->n_tensors;
    gr_compact_map(g, drop, tmap);
    gr_count_uses(g, after);
    for (int t = 0; t < n_tensors_before; t++)
        if (tmap[t] >= 0)
            after[tmap[t]] = before[t] - after[tmap[t]];
    free(needed);
    free(drop);
    free(before);
    free(tmap);
    if (r) {
        r->nodes_removed = removed;
        r->node_map = node_map;
        r->n_nodes_before = n_before;
        r->lost_uses = after;
        r->n_tensors_after = g->n_tensors;
    } else {
        free(node_map);
        free(after);
    }
    return OMMA_OK;
}
