/* omma — logging to stderr with levels.
 *
 * The level comes from the environment variable OMMA_LOG
 * (error|warn|info|debug; default warn), read once on first use, and can be
 * changed with omma_log_set_level. Thread safety: any thread; each message is
 * written with one write so lines from threads never interleave. */
#ifndef OMMA_LOG_H
#define OMMA_LOG_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum omma_log_level {
    OMMA_LOG_ERROR = 0,
    OMMA_LOG_WARN,
    OMMA_LOG_INFO,
    OMMA_LOG_DEBUG
} omma_log_level;

void omma_log_set_level(omma_log_level level);
omma_log_level omma_log_get_level(void);

/* Parses "error", "warn", "info" or "debug" (case-insensitive).
 * Returns 0 and sets *out on success, -1 for anything else. */
int omma_log_parse_level(const char *text, omma_log_level *out);

/* printf-style message at a level; dropped when above the current level. */
void omma_log(omma_log_level level, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

#ifdef __cplusplus
}
#endif
#endif
