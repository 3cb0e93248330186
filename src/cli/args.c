/* Option values of the omma subcommands (args.h). */
#include "cli/args.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

int cli_arg_long(const char *opt, const char *s, long lo, long hi, long *v)
{
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (errno || *end || end == s || x < lo || x > hi) {
        fprintf(stderr, "omma: error: %s %s: expected an integer in %ld..%ld\n", opt, s, lo, hi);
        return 0;
    }
    *v = x;
    return 1;
}

int cli_arg_double(const char *opt, const char *s, double lo, double hi, double *v)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (errno || *end || end == s || !(x >= lo && x <= hi)) {
        fprintf(stderr, "omma: error: %s %s: expected a number in %g..%g\n", opt, s, lo, hi);
        return 0;
    }
    *v = x;
    return 1;
}
