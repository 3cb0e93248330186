/* omma run's progress bar on stderr (only when stderr is a terminal):
 * frames done of the total where known, frames/s, time left. Error lines
 * go through cli_run_error so that they never land in the middle of the
 * bar. One bar per process (stderr is one); the main thread only. */
#ifndef OMMA_CLI_RUN_PROGRESS_H
#define OMMA_CLI_RUN_PROGRESS_H

#include <stdint.h>

typedef struct cli_progress {
    int enabled; /* stderr is a terminal */
    long total; /* frames expected, 0 when unknown */
    uint64_t start_ns; /* when the run started */
    uint64_t drawn_ns; /* when the bar was last drawn */
} cli_progress;

/* Starts timing; draws nothing yet. total: frames expected (0: unknown). */
void cli_progress_start(cli_progress *p, long total);

/* Redraws the bar with `done` frames finished (at most ten times a second). */
void cli_progress_update(cli_progress *p, long done);

/* Removes the bar from the terminal. */
void cli_progress_finish(cli_progress *p);

/* Seconds since cli_progress_start. */
double cli_progress_elapsed(const cli_progress *p);

/* Prints "omma: error: MESSAGE" on stderr, first wiping the bar if one is
 * on screen (the next update redraws it). */
void cli_run_error(const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 1, 2)))
#endif
    ;

#endif
