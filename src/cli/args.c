/* The omma command line (args.h). */
#include "cli/args.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "omma/log.h"

void cli_args_init(cli_args *a, const char *command, const cli_option *options, int argc,
                   char **argv)
{
    memset(a, 0, sizeof *a);
    a->command = command;
    a->options = options;
    a->argc = argc;
    a->argv = argv;
    a->i = 1;
}

/* The option named by arg (up to its '=', if any), or NULL. */
static const cli_option *find(const cli_option *options, const char *arg)
{
    size_t len = strcspn(arg, "=");
    for (const cli_option *o = options; o && o->name; o++)
        if (strlen(o->name) == len && strncmp(o->name, arg, len) == 0)
            return o;
    return NULL;
}

static void unknown_option(const cli_args *a, const char *arg)
{
    char word[128];
    snprintf(word, sizeof word, "%.*s", (int)strcspn(arg, "="), arg);
    const char *names[64];
    size_t n = 0;
    for (const cli_option *o = a->options; o && o->name && n < 64; o++)
        if (o->help) /* hidden options are never suggested */
            names[n++] = o->name;
    const char *near = cli_nearest(word, names, n);
    if (near)
        cli_error("unknown option %s (did you mean %s?)", word, near);
    else
        cli_error("unknown option %s", word);
}

cli_arg_kind cli_next(cli_args *a, const cli_option **opt, const char **value)
{
    *opt = NULL;
    *value = NULL;
    if (a->i >= a->argc)
        return CLI_ARG_END;
    const char *arg = a->argv[a->i++];
    if (!a->rest && strcmp(arg, "--") == 0) {
        a->rest = 1;
        return cli_next(a, opt, value);
    }
    if (a->rest || arg[0] != '-' || arg[1] == '\0') {
        *value = arg;
        return CLI_ARG_POSITIONAL;
    }
    if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0)
        return CLI_ARG_HELP;
    const cli_option *o = find(a->options, arg);
    if (!o) {
        unknown_option(a, arg);
        cli_see_help(a->command);
        return CLI_ARG_ERROR;
    }
    const char *eq = strchr(arg, '=');
    if (!o->value) {
        if (eq) {
            cli_usage_error(a->command, "%s takes no value", o->name);
            return CLI_ARG_ERROR;
        }
    } else if (eq) {
        *value = eq + 1;
    } else if (a->i < a->argc) {
        *value = a->argv[a->i++];
    } else {
        cli_usage_error(a->command, "%s needs a value", o->name);
        return CLI_ARG_ERROR;
    }
    *opt = o;
    return CLI_ARG_OPTION;
}

void cli_print_options(FILE *to, const cli_option *options)
{
    enum { COLUMN = 23 }; /* where the help starts */
    for (const cli_option *o = options; o && o->name; o++) {
        if (!o->help)
            continue;
        char left[96];
        snprintf(left, sizeof left, "%s%s%s", o->name, o->value ? " " : "",
                 o->value ? o->value : "");
        int width = (int)strlen(left) + 2;
        fprintf(to, "  %s", left);
        const char *h = o->help;
        int pad = width + 2 <= COLUMN ? COLUMN - width : 2;
        for (;;) {
            size_t len = strcspn(h, "\n");
            fprintf(to, "%*s%.*s\n", pad, "", (int)len, h);
            if (!h[len])
                break;
            h += len + 1;
            pad = COLUMN;
        }
    }
}

int cli_edit_distance(const char *a, const char *b)
{
    enum { MAX = 64 };
    size_t n = strlen(a), m = strlen(b);
    if (n >= MAX || m >= MAX)
        return (int)(n > m ? n : m);
    int d[MAX][MAX];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            int cost = a[i - 1] != b[j - 1];
            int best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (d[i - 1][j - 1] + cost < best)
                best = d[i - 1][j - 1] + cost;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

const char *cli_nearest(const char *word, const char *const *names, size_t n)
{
    /* Leading dashes do not make a word longer for the threshold. */
    size_t len = strlen(word) - strspn(word, "-");
    const char *best = NULL;
    int best_d = 3;
    for (size_t i = 0; i < n; i++) {
        int d = cli_edit_distance(word, names[i]);
        if (d < best_d && (size_t)d * 2 <= len) {
            best = names[i];
            best_d = d;
        }
    }
    return best;
}

int cli_see_help(const char *command)
{
    fprintf(stderr, "see 'omma %s%s--help'\n", command ? command : "", command ? " " : "");
    return CLI_EXIT_USAGE;
}

int cli_usage_error(const char *command, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cli_error("%s", msg);
    return cli_see_help(command);
}

int cli_unknown(const char *command, const char *kind, const char *word, const char *const *names,
                size_t n)
{
    const char *near = cli_nearest(word, names, n);
    if (near)
        cli_error("unknown %s '%s' (did you mean %s?)", kind, word, near);
    else
        cli_error("unknown %s '%s'", kind, word);
    return cli_see_help(command);
}

/* Whether s (at " at ") starts a source location " at PATH.EXT:DIGITS"
 * ending at a space, a punctuation mark or the end; *len is its length. */
static int location_at(const char *s, size_t *len)
{
    if (strncmp(s, " at ", 4) != 0)
        return 0;
    const char *p = s + 4, *colon = NULL;
    while (*p && *p != ' ' && *p != ';' && *p != ')' && *p != ',') {
        if (*p == ':')
            colon = p;
        p++;
    }
    if (!colon || colon == s + 4 || !isdigit((unsigned char)colon[1]))
        return 0;
    for (const char *q = colon + 1; q < p; q++)
        if (!isdigit((unsigned char)*q))
            return 0;
    const char *dot = colon;
    while (dot > s + 4 && *dot != '.')
        dot--;
    static const char *const exts[] = {".c:", ".h:", ".cu:", ".cuh:"};
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++)
        if (strncmp(dot, exts[i], strlen(exts[i])) == 0) {
            *len = (size_t)(p - s);
            return 1;
        }
    return 0;
}

void cli_strip_locations(char *s)
{
    char *w = s;
    for (const char *r = s; *r;) {
        size_t len;
        if (location_at(r, &len)) {
            r += len;
            continue;
        }
        *w++ = *r++;
    }
    *w = '\0';
}

void cli_error(const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (omma_log_get_level() < OMMA_LOG_DEBUG)
        cli_strip_locations(msg);
    fprintf(stderr, "omma: error: %s\n", msg);
}

int cli_arg_long(const char *opt, const char *s, long lo, long hi, long *v)
{
    char *end;
    errno = 0;
    long x = strtol(s, &end, 10);
    if (errno || *end || end == s || x < lo || x > hi) {
        cli_error("%s %s: expected an integer in %ld..%ld", opt, s, lo, hi);
        return 0;
    }
    *v = x;
    return 1;
}

int cli_arg_names(const char *opt, const char *s, char *buf, size_t size, const char **names,
                  int max, int *n)
{
    *n = 0;
    if (strlen(s) >= size) {
        cli_error("%s %s: expected a shorter list (at most %zu characters)", opt, s, size - 1);
        return 0;
    }
    strcpy(buf, s);
    for (char *p = buf;;) {
        char *comma = strchr(p, ',');
        if (comma)
            *comma = '\0';
        if (!*p || *n == max) {
            cli_error("%s %s: expected 1..%d names separated by commas, none empty", opt, s, max);
            return 0;
        }
        names[(*n)++] = p;
        if (!comma)
            return 1;
        p = comma + 1;
    }
}

int cli_arg_double(const char *opt, const char *s, double lo, double hi, double *v)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (errno || *end || end == s || !(x >= lo && x <= hi)) {
        cli_error("%s %s: expected a number in %g..%g", opt, s, lo, hi);
        return 0;
    }
    *v = x;
    return 1;
}

int cli_arg_choice(const char *opt, const char *s, const char *const *choices, size_t n, int *v)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, choices[i]) == 0) {
            *v = (int)i;
            return 1;
        }
    char list[256] = "";
    size_t at = 0;
    for (size_t i = 0; i < n && at < sizeof list; i++)
        at += (size_t)snprintf(list + at, sizeof list - at, "%s%s",
                               i == 0       ? ""
                               : i + 1 == n ? " or "
                                            : ", ",
                               choices[i]);
    cli_error("%s %s: expected %s", opt, s, list);
    return 0;
}

const char *cli_data_dir(void)
{
    const char *d = getenv("OMMA_DATA");
    return d && *d ? d : OMMA_DEFAULT_DATA_DIR;
}
