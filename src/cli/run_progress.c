/* The progress bar: one line redrawn in place with a carriage return. */
#define _POSIX_C_SOURCE 200809L /* fileno, isatty */
#include "cli/run_progress.h"

#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/args.h"
#include "core/clock.h"

#define BAR_WIDTH 30
#define REDRAW_NS 100000000ull /* 0.1 s */

/* Whether a bar is on screen now: stderr is one per process. */
static int bar_visible;

static void wipe(void)
{
    if (bar_visible) {
        fputs("\r\033[K", stderr);
        bar_visible = 0;
    }
}

void cli_progress_start(cli_progress *p, long total)
{
    p->enabled = isatty(fileno(stderr));
    p->total = total > 0 ? total : 0;
    p->start_ns = core_now_ns();
    p->drawn_ns = 0;
}

double cli_progress_elapsed(const cli_progress *p)
{
    return (double)(core_now_ns() - p->start_ns) / 1e9;
}

static void clock_text(char *buf, size_t n, double s)
{
    long t = s > 0 && s < 1e8 ? (long)(s + 0.5) : 0;
    if (t >= 3600)
        snprintf(buf, n, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, n, "%ld:%02ld", t / 60, t % 60);
}

void cli_progress_update(cli_progress *p, long done)
{
    if (!p->enabled)
        return;
    uint64_t now = core_now_ns();
    if (p->drawn_ns && now - p->drawn_ns < REDRAW_NS && done != p->total)
        return;
    p->drawn_ns = now;
    double secs = (double)(now - p->start_ns) / 1e9;
    double fps = secs > 0 ? (double)done / secs : 0;
    char line[160];
    if (p->total > 0) {
        long shown = done < p->total ? done : p->total;
        int fill = (int)(BAR_WIDTH * shown / p->total);
        char bar[BAR_WIDTH + 1];
        for (int i = 0; i < BAR_WIDTH; i++)
            bar[i] = i < fill ? '#' : '.';
        bar[BAR_WIDTH] = 0;
        char eta[32] = "?";
        if (fps > 0)
            clock_text(eta, sizeof eta, (double)(p->total - shown) / fps);
        snprintf(line, sizeof line, "[%s] %ld/%ld frames  %.1f frames/s  ETA %s", bar, done,
                 p->total, fps, eta);
    } else {
        char took[32];
        clock_text(took, sizeof took, secs);
        snprintf(line, sizeof line, "%ld frames  %.1f frames/s  %s elapsed", done, fps, took);
    }
    fprintf(stderr, "\r\033[K%s", line);
    fflush(stderr);
    bar_visible = 1;
}

void cli_progress_finish(cli_progress *p)
{
    if (p->enabled)
        wipe();
}

void cli_run_error(const char *fmt, ...)
{
    wipe();
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cli_error("%s", msg); /* without the library's source locations */
}
