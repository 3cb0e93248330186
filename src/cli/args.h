/* The omma command line, the same for every subcommand: one option table
 * per command (parsing, the help text and "did you mean" suggestions all
 * read it), value checks, and usage errors of one line plus "see 'omma
 * COMMAND --help'" on stderr. Messages for users go through cli_error,
 * which drops the library's " at src/FILE.c:LINE" (kept with OMMA_LOG=debug). */
#ifndef OMMA_CLI_ARGS_H
#define OMMA_CLI_ARGS_H

#include <stddef.h>
#include <stdio.h>

/* One option of a command. Tables end with an entry whose name is NULL. */
typedef struct cli_option {
    const char *name; /* "--max-faces" */
    const char *value; /* what it takes, shown in the help ("N"); NULL: a flag */
    const char *help; /* help text, lines split by '\n'; NULL: not listed */
} cli_option;

/* The arguments of one command, read one at a time by cli_next. */
typedef struct cli_args {
    const char *command; /* as typed after omma: "run", "bench engine" */
    const cli_option *options;
    int argc;
    char **argv; /* argv[0] is the command's own name; parsing starts at 1 */
    int i; /* the next argument */
    int rest; /* after "--": every argument is positional */
} cli_args;

typedef enum cli_arg_kind {
    CLI_ARG_END = 0, /* no argument left */
    CLI_ARG_OPTION, /* an option of the table (with its value if it takes one) */
    CLI_ARG_POSITIONAL, /* anything else */
    CLI_ARG_HELP, /* -h or --help */
    CLI_ARG_ERROR, /* an unknown option or a missing value: already reported */
} cli_arg_kind;

void cli_args_init(cli_args *a, const char *command, const cli_option *options, int argc,
                   char **argv);

/* The next argument: *opt is the option and *value its value (NULL for a
 * flag), or *value the positional argument. "--name=value" is "--name
 * value". An unknown option ("omma: error: unknown option --max-face (did
 * you mean --max-faces?)") and an option without its value ("omma: error:
 * --max-faces needs a value") are reported as usage errors. */
cli_arg_kind cli_next(cli_args *a, const cli_option **opt, const char **value);

/* Prints the table's options as two columns: name and value, then the
 * help (its further lines indented under the first). */
void cli_print_options(FILE *to, const cli_option *options);

/* Edit distance between a and b (insertions, deletions, substitutions and
 * swaps of neighbours count one each). */
int cli_edit_distance(const char *a, const char *b);

/* The name of names[0..n) nearest to word, or NULL when none is near
 * enough to be what was meant (distance <= 2, and below half the word). */
const char *cli_nearest(const char *word, const char *const *names, size_t n);

/* Where the models/ and testdata/ folders are: $OMMA_DATA, else the
 * source tree omma was built from. */
const char *cli_data_dir(void);

/* "omma: error: MESSAGE" then "see 'omma COMMAND --help'" on stderr;
 * returns CLI_EXIT_USAGE. */
int cli_usage_error(const char *command, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* "omma: error: unknown KIND 'WORD' (did you mean NAME?)" and the see
 * line, names being what WORD could have been; returns CLI_EXIT_USAGE. */
int cli_unknown(const char *command, const char *kind, const char *word, const char *const *names,
                size_t n);

/* "omma: error: MESSAGE" on stderr. Where MESSAGE holds the library's
 * error detail, its source locations (" at src/x.c:12") are dropped unless
 * the log level is debug (OMMA_LOG=debug). */
void cli_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

/* Removes every " at PATH.c:LINE" (also .h, .cu) from s in place. */
void cli_strip_locations(char *s);

/* *v = s as a decimal integer in lo..hi. Returns 1, or 0 after the message
 * "omma: error: OPT S: expected an integer in LO..HI" (the caller then ends
 * with cli_see_help). */
int cli_arg_long(const char *opt, const char *s, long lo, long hi, long *v);

/* *v = s as a number in lo..hi (NaN refused). Returns 1, or 0 after the
 * message. */
int cli_arg_double(const char *opt, const char *s, double lo, double hi, double *v);

/* *v = the index of s in choices[0..n). Returns 1, or 0 after the message
 * "omma: error: OPT S: expected A, B or C". */
int cli_arg_choice(const char *opt, const char *s, const char *const *choices, size_t n, int *v);

/* Splits s, a comma-separated list of names, into names[0..*n) (at most
 * max), pointing into buf (size bytes, the list copied there). Returns 1, or
 * 0 after the message "omma: error: OPT S: expected ..." (an empty name,
 * too many, too long). */
int cli_arg_names(const char *opt, const char *s, char *buf, size_t size, const char **names,
                  int max, int *n);

/* Prints "see 'omma COMMAND --help'" on stderr; returns CLI_EXIT_USAGE.
 * Ends every usage error whose line was printed by a cli_arg_* call. */
int cli_see_help(const char *command);

#endif
