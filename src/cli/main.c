/* omma: the command-line entry point; dispatches to subcommands, and
 * `omma help [COMMAND...]` to their --help. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "omma/status.h"
#include "omma/version.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv); /* NULL: handled before dispatch */
    const char *help;
} commands[] = {
    {"run", cli_run, "faces in images and videos: JSON Lines/CSV, annotated pictures"},
    {"stream", cli_stream, "the multi-camera runtime: sources -> GPUs (or CPU), live status"},
    {"info", cli_info, "GPUs with their facts and NVML readings"},
    {"models", cli_models, "inspect model files (models inspect FILE)"},
    {"bench", cli_bench, "benchmarks: bench context|engine|pipeline|runtime|bus|lsl"},
    {"bus", cli_bus, "frame buses between processes: bus ls | bus watch NAME"},
    {"lsl", cli_lsl, "Lab Streaming Layer streams: lsl ls | lsl read NAME"},
    {"cluster", cli_cluster, "cameras shared out across nodes: cluster ls|add|rm|drain"},
    {"help", NULL, "help of omma or of a command (help COMMAND)"},
    {"version", NULL, "omma's version (also --version)"},
};
enum { N_COMMANDS = sizeof commands / sizeof commands[0] };

static void usage(FILE *to)
{
    fprintf(to, "usage: omma COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(to, "  %-8s %s\n", commands[i].name, commands[i].help);
    fprintf(to, "\n'omma help COMMAND' or 'omma COMMAND --help' tells more.\n"
                "exit codes: 0 ok, 1 error, 2 usage, 3 no GPU or driver\n"
                "environment: OMMA_LOG=error|warn|info|debug (debug: errors name the source\n"
                "line), OMMA_DATA (the folder with models/ and testdata/)\n");
}

int cli_fail(int st, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (st != OMMA_OK)
        cli_error("%s: %s", msg, omma_last_error());
    else
        cli_error("%s", msg);
    if (st == OMMA_ERR_NO_DEVICE)
        return CLI_EXIT_NO_DEVICE;
    if (st == OMMA_ERR_INVALID_ARG)
        return CLI_EXIT_USAGE;
    return CLI_EXIT_ERROR;
}

static int is_help(const char *arg)
{
    return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0;
}

static int find_command(const char *name)
{
    for (int i = 0; i < N_COMMANDS; i++)
        if (strcmp(name, commands[i].name) == 0)
            return i;
    return -1;
}

static int unknown_command(const char *name)
{
    const char *names[N_COMMANDS];
    for (int i = 0; i < N_COMMANDS; i++)
        names[i] = commands[i].name;
    return cli_unknown(NULL, "command", name, names, N_COMMANDS);
}

/* omma help [COMMAND [SUBCOMMAND]]: the command's --help. */
static int help(int argc, char **argv)
{
    if (argc < 2) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (is_help(argv[1])) /* omma help --help */
        argv[1] = (char *)"help";
    int c = find_command(argv[1]);
    if (c < 0)
        return unknown_command(argv[1]);
    if (strcmp(argv[1], "help") == 0) {
        printf("usage: omma help [COMMAND [SUBCOMMAND]]\n"
               "  The help of omma, or of a command (as 'omma COMMAND --help').\n");
        return CLI_EXIT_OK;
    }
    if (!commands[c].run) {
        printf("usage: omma version (or omma --version)\n"
               "  Prints omma's version.\n");
        return CLI_EXIT_OK;
    }
    char help_flag[] = "--help";
    char *args[4] = {argv[1], argc > 2 ? argv[2] : help_flag, help_flag, NULL};
    return commands[c].run(argc > 2 ? 3 : 2, args);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(argv[1], "--version") == 0 ||
        (strcmp(argv[1], "version") == 0 && !(argc > 2 && is_help(argv[2])))) {
        if (argc > 2)
            return cli_usage_error("version", "unexpected argument '%s'", argv[2]);
        printf("omma %s (commit %s) features: %s\n", omma_version(), omma_build_commit(),
               omma_build_features());
        return CLI_EXIT_OK;
    }
    if (is_help(argv[1])) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(argv[1], "help") == 0)
        return help(argc - 1, argv + 1);
    int c = find_command(argv[1]);
    if (c >= 0 && commands[c].run)
        return commands[c].run(argc - 1, argv + 1);
    if (c >= 0 && argc > 2 && is_help(argv[2])) /* omma version --help */
        return help(2, argv);
    if (c >= 0)
        return cli_usage_error(NULL, "omma %s is not in this build", argv[1]);
    if (argv[1][0] == '-') {
        const char *names[] = {"--help", "--version"};
        const char *near = cli_nearest(argv[1], names, 2);
        if (near)
            cli_error("unknown option %s (did you mean %s?)", argv[1], near);
        else
            cli_error("unknown option %s", argv[1]);
        return cli_see_help(NULL);
    }
    return unknown_command(argv[1]);
}
