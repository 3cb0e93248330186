/* Log levels: parsing, OMMA_LOG, and which messages reach stderr. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <unistd.h>

#include "omma/log.h"
#include "testing.h"

/* Runs fn with stderr redirected to a temp file; returns what was written. */
static void capture(void (*fn)(void), char *out, size_t cap)
{
    char path[] = "/tmp/omma_log_XXXXXX";
    int fd = mkstemp(path);
    int saved = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    fn();
    dup2(saved, STDERR_FILENO);
    close(saved);
    lseek(fd, 0, SEEK_SET);
    ssize_t n = read(fd, out, cap - 1);
    out[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
}

static void emit_all(void)
{
    omma_log(OMMA_LOG_ERROR, "e%d", 1);
    omma_log(OMMA_LOG_WARN, "w%d", 2);
    omma_log(OMMA_LOG_INFO, "i%d", 3);
    omma_log(OMMA_LOG_DEBUG, "d%d", 4);
}

static void parse_levels(void)
{
    omma_log_level l;
    CHECK(omma_log_parse_level("error", &l) == 0 && l == OMMA_LOG_ERROR);
    CHECK(omma_log_parse_level("WARN", &l) == 0 && l == OMMA_LOG_WARN);
    CHECK(omma_log_parse_level("info", &l) == 0 && l == OMMA_LOG_INFO);
    CHECK(omma_log_parse_level("Debug", &l) == 0 && l == OMMA_LOG_DEBUG);
    CHECK(omma_log_parse_level("verbose", &l) != 0);
    CHECK(omma_log_parse_level(NULL, &l) != 0);
}

static void env_sets_initial_level(void)
{
    /* OMMA_LOG=info was set by main() before the first log call. */
    CHECK(omma_log_get_level() == OMMA_LOG_INFO);
    char buf[512];
    capture(emit_all, buf, sizeof buf);
    CHECK(strcmp(buf, "omma: error: e1\nomma: warn: w2\nomma: info: i3\n") == 0);
}

static void levels_filter_messages(void)
{
    char buf[512];
    omma_log_set_level(OMMA_LOG_ERROR);
    capture(emit_all, buf, sizeof buf);
    CHECK(strcmp(buf, "omma: error: e1\n") == 0);
    omma_log_set_level(OMMA_LOG_DEBUG);
    capture(emit_all, buf, sizeof buf);
    CHECK(strstr(buf, "omma: debug: d4\n") != NULL);
    CHECK(strstr(buf, "omma: error: e1\n") == buf);
}

int main(void)
{
    setenv("OMMA_LOG", "info", 1);
    RUN(parse_levels);
    RUN(env_sets_initial_level);
    RUN(levels_filter_messages);
    return testing_finish();
}
