/* omma: the command-line entry point; dispatches to subcommands. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "omma/status.h"
#include "omma/version.h"

static const struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} commands[] = {
    {"run", cli_run, "face pipeline on images, JSON Lines out (run [--backend cpu] FILE...)"},
    {"stream", cli_stream, "multi-camera runtime: sources -> GPUs, live status (stream SOURCE...)"},
    {"info", cli_info, "list GPUs with their facts and NVML readings (--json)"},
    {"models", cli_models, "inspect model files (models inspect FILE [--json])"},
    {"bench", cli_bench, "benchmarks (bench context | bench engine ...)"},
};

static void usage(FILE *to)
{
    fprintf(to, "usage: omma COMMAND [ARGS]\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(to, "  %-8s %s\n", commands[i].name, commands[i].help);
    fprintf(to, "\nexit codes: 0 ok, 1 error, 2 usage, 3 no GPU or driver\n"
                "environment: OMMA_LOG=error|warn|info|debug\n");
}

int cli_fail(int st, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (st != OMMA_OK)
        fprintf(stderr, "omma: error: %s: %s\n", msg, omma_last_error());
    else
        fprintf(stderr, "omma: error: %s\n", msg);
    if (st == OMMA_ERR_NO_DEVICE)
        return CLI_EXIT_NO_DEVICE;
    if (st == OMMA_ERR_INVALID_ARG)
        return CLI_EXIT_USAGE;
    return CLI_EXIT_ERROR;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "version") == 0)) {
        printf("omma %s (commit %s) features: %s\n", omma_version(), omma_build_commit(),
               omma_build_features());
        return CLI_EXIT_OK;
    }
    if (argc < 2 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? CLI_EXIT_USAGE : CLI_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[1], commands[i].name) == 0)
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "omma: error: unknown command '%s'\n\n", argv[1]);
    usage(stderr);
    return CLI_EXIT_USAGE;
}
