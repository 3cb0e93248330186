/* Leveled logging to stderr, one write per line. */
#define _DEFAULT_SOURCE
#include "omma/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <unistd.h>


/* -1 = not read from OMMA_LOG yet. */
static atomic_int current_level = -1;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

int omma_log_parse_level(const char *text, omma_log_level *out)
{
    if (!text)
        return -1;
    for (int i = 0; i <= OMMA_LOG_DEBUG; i++) {
        if (strcasecmp(text, level_names[i]) == 0) {
            *out = (omma_log_level)i;
            return 0;
        }
    }
    return -1;
}

omma_log_level omma_log_get_level(void)
{
    int lvl = atomic_load(&current_level);
    if (lvl >= 0)
        return (omma_log_level)lvl;
    omma_log_level parsed = OMMA_LOG_WARN;
    const char *env = getenv("OMMA_LOG");
    if (env && *env && omma_log_parse_level(env, &parsed) != 0) {
        fprintf(stderr, "omma: warn: OMMA_LOG=%s is not one of error|warn|info|debug; using warn\n",
                env);
        parsed = OMMA_LOG_WARN;
    }
    int expected = -1;
    atomic_compare_exchange_strong(&current_level, &expected, (int)parsed);
    return (omma_log_level)atomic_load(&current_level);
}

void omma_log_set_level(omma_log_level level) { atomic_store(&current_level, (int)level); }

void omma_log(omma_log_level level, const char *fmt, ...)
{
    if (level > omma_log_get_level())
        return;
    char line[2048];
    int n = snprintf(line, sizeof line, "omma: %s: ", level_names[level]);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, len);
    (void)w;
}
