/* libFuzzer target for the recorder's option parsers (src/io/recorder.c),
 * which read the command line: the first byte picks one, the rest (NUL
 * ended) is its input.
 *   0: a --record-segment value (io_record_parse_segment): accepted values
 *      are one positive limit within the documented bounds, the other 0
 *   1: a --record-name template (io_record_check_name, both modes): an
 *      accepted one fills in (io_record_format_name) to a file name without
 *      '/' that ends in ".mkv"; a segmented-accepted one is accepted plain
 * A failure must be OMMA_ERR_INVALID_ARG with the parser's message prefix;
 * anything else traps, and ASan/UBSan catch the rest. Built and run by
 * fuzz/run.sh record (make fuzz; a short run inside make test). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "io/recorder.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void expect_invalid(omma_status st, const char *prefix)
{
    if (st != OMMA_ERR_INVALID_ARG || strncmp(omma_last_error(), prefix, strlen(prefix)) != 0)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1 || size > 4096)
        return 0;
    char *text = malloc(size);
    if (!text)
        return 0;
    memcpy(text, data + 1, size - 1);
    text[size - 1] = '\0';
    if (data[0] % 2 == 0) {
        int64_t ns = -1, bytes = -1;
        omma_status st = io_record_parse_segment(text, &ns, &bytes);
        if (st == OMMA_OK) {
            int time_ok = ns >= 1000000000LL && ns <= 2592000000000000LL && bytes == 0;
            int size_ok = bytes >= 1000000LL && bytes <= 1000000000000000LL && ns == 0;
            if (!time_ok && !size_ok)
                __builtin_trap();
        } else {
            if (ns != 0 || bytes != 0)
                __builtin_trap();
            expect_invalid(st, "segment limit");
        }
    } else {
        omma_status plain = io_record_check_name(text, 0);
        omma_status seg = io_record_check_name(text, 1);
        if (seg == OMMA_OK && plain != OMMA_OK)
            __builtin_trap();
        if (plain != OMMA_OK)
            expect_invalid(plain, "record name template");
        if (seg != OMMA_OK)
            expect_invalid(seg, "record name template");
        if (plain == OMMA_OK) {
            char out[4096];
            omma_status st = io_record_format_name(text, "cam/0", "a b", 1795619580123000000LL, 7,
                                                   out, sizeof out);
            size_t n = st == OMMA_OK ? strlen(out) : 0;
            if (st == OMMA_OK && (strchr(out, '/') || n < 5 || strcmp(out + n - 4, ".mkv") != 0))
                __builtin_trap();
            if (st != OMMA_OK)
                expect_invalid(st, "record name");
        }
    }
    free(text);
    return 0;
}
