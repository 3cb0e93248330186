/* Status names and the thread-local error detail. */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define DETAIL_MAX 1024

static _Thread_local char detail[DETAIL_MAX];

static const char *const names[OMMA_STATUS_COUNT] = {
    [OMMA_OK] = "OMMA_OK",
    [OMMA_ERR_INVALID_ARG] = "OMMA_ERR_INVALID_ARG",
    [OMMA_ERR_NO_DEVICE] = "OMMA_ERR_NO_DEVICE",
    [OMMA_ERR_CUDA] = "OMMA_ERR_CUDA",
    [OMMA_ERR_OUT_OF_MEMORY] = "OMMA_ERR_OUT_OF_MEMORY",
    [OMMA_ERR_IO] = "OMMA_ERR_IO",
    [OMMA_ERR_FORMAT] = "OMMA_ERR_FORMAT",
    [OMMA_ERR_UNSUPPORTED] = "OMMA_ERR_UNSUPPORTED",
    [OMMA_ERR_BUSY] = "OMMA_ERR_BUSY",
    [OMMA_ERR_TIMEOUT] = "OMMA_ERR_TIMEOUT",
    [OMMA_ERR_CLOSED] = "OMMA_ERR_CLOSED",
    [OMMA_ERR_DEVICE_LOST] = "OMMA_ERR_DEVICE_LOST",
    [OMMA_ERR_INTERNAL] = "OMMA_ERR_INTERNAL",
};

const char *omma_status_str(omma_status st)
{
    if ((unsigned)st >= OMMA_STATUS_COUNT)
        return "OMMA_ERR_UNKNOWN";
    return names[st];
}

const char *omma_last_error(void) { return detail; }

void omma_clear_error(void) { detail[0] = '\0'; }

const char *core_short_path(const char *file)
{
    /* __FILE__ may be absolute; keep the part from the last src/ or tests/. */
    static const char *const roots[] = {"/src/", "/tests/", "/cli/", "/tools/"};
    const char *best = NULL;
    for (size_t i = 0; i < sizeof roots / sizeof roots[0]; i++) {
        const char *p = file, *hit;
        while ((hit = strstr(p, roots[i])) != NULL) {
            if (!best || hit > best)
                best = hit;
            p = hit + 1;
        }
    }
    return best ? best + 1 : file;
}

omma_status core_fail(omma_status st, const char *file, int line, const char *fmt, ...)
{
    char msg[DETAIL_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* Keep the location even when the message is long: cut the message. */
    char where[256];
    int wn = snprintf(where, sizeof where, " at %s:%d", core_short_path(file), line);
    size_t wlen = wn < 0 ? 0 : (size_t)wn >= sizeof where ? sizeof where - 1 : (size_t)wn;
    size_t mlen = strlen(msg);
    if (mlen > sizeof detail - 1 - wlen)
        mlen = sizeof detail - 1 - wlen;
    memcpy(detail, msg, mlen);
    memcpy(detail + mlen, where, wlen);
    detail[mlen + wlen] = '\0';
    return st;
}

omma_status core_fail_text(omma_status st, const char *text)
{
    snprintf(detail, sizeof detail, "%s", text);
    return st;
}
