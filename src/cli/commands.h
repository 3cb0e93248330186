/* The omma command's subcommands. Each returns the process exit code. */
#ifndef OMMA_CLI_COMMANDS_H
#define OMMA_CLI_COMMANDS_H

/* Exit codes shared by every subcommand (documented in the README). */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_ERROR = 1, /* the command failed; the message says why */
    CLI_EXIT_USAGE = 2, /* wrong arguments */
    CLI_EXIT_NO_DEVICE = 3, /* no NVIDIA driver or no GPU */
};

int cli_info(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_bus(int argc, char **argv);
int cli_models(int argc, char **argv);
int cli_run(int argc, char **argv);
int cli_stream(int argc, char **argv);
int cli_lsl(int argc, char **argv);
int cli_cluster(int argc, char **argv);

/* Prints "omma: error: MESSAGE" (and the omma_last_error detail when st is
 * not OK) to stderr and returns the exit code for st. */
int cli_fail(int st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#endif
