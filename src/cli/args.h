/* Option values of the omma subcommands, checked and reported the same way
 * everywhere: "omma: error: OPT VALUE: expected ..." on stderr. */
#ifndef OMMA_CLI_ARGS_H
#define OMMA_CLI_ARGS_H

/* *v = s as a decimal integer in lo..hi. Returns 1, or 0 after the message. */
int cli_arg_long(const char *opt, const char *s, long lo, long hi, long *v);

/* *v = s as a number in lo..hi (NaN refused). Returns 1, or 0 after the
 * message. */
int cli_arg_double(const char *opt, const char *s, double lo, double hi, double *v);

#endif
