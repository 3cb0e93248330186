/* omma cluster ls | add | rm | drain: the cameras shared out among
 * omma stream --cluster nodes (docs/CLUSTER.md), through the cluster's
 * JetStream key-value buckets; no node needs to be running. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cluster/cluster.h"

static const cli_option options[] = {
    {"--cluster", "URL",
     "the cluster: nats://HOST:PORT[,HOST:PORT...][/BUCKET]\n"
     "(as given to omma stream --cluster; default bucket omma)"},
    {"--json", NULL, "ls: one JSON object (nodes, cameras with owner and lease)"},
    {"--max-frames", "N", "add: the camera stops after N frames (default: never)"},
    {"--undo", NULL, "drain: the node takes cameras again"},
    {"--timeout", "S", "connection and request timeout in seconds (5)"},
    {NULL, NULL, NULL},
};

static void usage(FILE *to)
{
    fprintf(to, "usage: omma cluster ls --cluster URL [--json]\n"
                "       omma cluster add CAMERA SOURCE --cluster URL [--max-frames N]\n"
                "       omma cluster rm CAMERA --cluster URL\n"
                "       omma cluster drain NODE --cluster URL [--undo]\n"
                "  The cameras that omma stream --cluster URL --node NAME nodes share out\n"
                "  (docs/CLUSTER.md). CAMERA and NODE: 1..63 of A-Z a-z 0-9 _ -. SOURCE: what\n"
                "  omma stream takes (a video, rtsp://..., synthetic...). Nodes pick up a camera\n"
                "  added or removed at once.\n"
                "  ls: the live nodes (weight, cameras held, draining) and every camera with\n"
                "  its owner. drain: the node hands its cameras over and takes none until\n"
                "  --undo.\n");
    fprintf(to, "options:\n");
    cli_print_options(to, options);
}

int cli_cluster(int argc, char **argv)
{
    static const char *const subs[] = {"ls", "add", "rm", "drain"};
    if (argc < 2)
        return cli_usage_error("cluster", "omma cluster needs ls, add, rm or drain");
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    int sub = -1;
    for (int i = 0; i < 4; i++)
        if (strcmp(argv[1], subs[i]) == 0)
            sub = i;
    if (sub < 0)
        return cli_unknown("cluster", "cluster command", argv[1], subs, 4);
    const char *url = NULL, *pos[2] = {NULL, NULL};
    int n_pos = 0, json = 0, undo = 0;
    long max_frames = 0;
    double timeout_s = 5.0;
    char command[32];
    snprintf(command, sizeof command, "cluster %s", argv[1]);
    cli_args args;
    cli_args_init(&args, command, options, argc - 1, argv + 1);
    const cli_option *opt;
    const char *v;
    for (cli_arg_kind k; (k = cli_next(&args, &opt, &v)) != CLI_ARG_END;) {
        if (k == CLI_ARG_HELP) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        if (k == CLI_ARG_ERROR)
            return CLI_EXIT_USAGE;
        if (k == CLI_ARG_POSITIONAL) {
            if (n_pos == 2)
                return cli_usage_error("cluster", "unexpected argument '%s'", v);
            pos[n_pos++] = v;
            continue;
        }
        int id = (int)(opt - options);
        if (id == 0)
            url = v;
        else if (id == 1)
            json = 1;
        else if (id == 2 && !cli_arg_long(opt->name, v, 1, 1000000000L, &max_frames))
            return cli_see_help("cluster");
        else if (id == 3)
            undo = 1;
        else if (id == 4 && !cli_arg_double(opt->name, v, 0.1, 600.0, &timeout_s))
            return cli_see_help("cluster");
    }
    static const int wants[] = {0, 2, 1, 1};
    static const char *const what[] = {"nothing", "CAMERA SOURCE", "CAMERA", "NODE"};
    if (n_pos != wants[sub])
        return cli_usage_error("cluster", "omma cluster %s takes %s", argv[1], what[sub]);
    if (!url)
        return cli_usage_error("cluster", "omma cluster %s needs --cluster URL", argv[1]);
    if ((json && sub != 0) || (max_frames && sub != 1) || (undo && sub != 3))
        return cli_usage_error("cluster", "an option that omma cluster %s does not take", argv[1]);
    int timeout_ms = (int)(timeout_s * 1000.0);
    omma_status st = OMMA_OK;
    if (sub == 0) {
        st = cluster_list(url, timeout_ms, json, stdout);
    } else if (sub == 1) {
        cluster_camera cam = {{0}, max_frames};
        if (strlen(pos[1]) >= sizeof cam.source)
            return cli_usage_error("cluster", "SOURCE is longer than %zu bytes",
                                   sizeof cam.source - 1);
        snprintf(cam.source, sizeof cam.source, "%s", pos[1]);
        st = cluster_add(url, timeout_ms, pos[0], &cam);
    } else if (sub == 2) {
        st = cluster_remove(url, timeout_ms, pos[0]);
    } else {
        st = cluster_drain(url, timeout_ms, pos[0], !undo);
    }
    if (st != OMMA_OK)
        return cli_fail(st, "omma cluster %s", argv[1]);
    return CLI_EXIT_OK;
}
