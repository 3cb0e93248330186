/* Private: recording failures in the thread-local error detail. */
#ifndef OMMA_CORE_ERROR_H
#define OMMA_CORE_ERROR_H

#include "omma/status.h"

/* Formats the detail, appends " at FILE:LINE" and returns st, so a failure is
 * one line at the call site: return OMMA_FAIL(OMMA_ERR_IO, "open %s", p); */
omma_status core_fail(omma_status st, const char *file, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* Sets the detail to text verbatim (used to replay a remembered failure). */
omma_status core_fail_text(omma_status st, const char *text);

/* File path relative to the source tree, so messages read src/gpu/memory.c. */
const char *core_short_path(const char *file);

#define OMMA_FAIL(st, ...) core_fail((st), __FILE__, __LINE__, __VA_ARGS__)

/* Propagate a failure unchanged (the callee already set the detail). */
#define OMMA_TRY(expr)                     \
    do {                                   \
        omma_status omma_try_st_ = (expr); \
        if (omma_try_st_ != OMMA_OK)       \
            return omma_try_st_;           \
    } while (0)

#endif
