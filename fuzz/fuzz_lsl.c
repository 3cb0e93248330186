/* libFuzzer target for the parsers of LSL network input (src/lsl/): the
 * first byte picks one, the rest is its input.
 *   0: a discovery query (lsl_query_match), as an outlet evaluates every
 *      UDP "LSL:shortinfo" query it receives
 *   1: a stream's <info> document (lsl_info_parse), as a resolver reads
 *      every reply and an inlet the fullinfo; a parsed document must write
 *      back and parse again to the same fields and desc
 *   2: a streamfeed request header (lsl_feed_request_parse), as the data
 *      server reads every TCP consumer's
 *   3: a streamfeed response header (lsl_feed_response_parse), as the inlet
 * A failure must be OMMA_ERR_FORMAT with the parser's message prefix;
 * anything else traps, and ASan/UBSan catch the rest. Built and run by
 * fuzz/run.sh lsl (make fuzz; a short run inside make test). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lsl/lsl_feed.h"
#include "lsl/lsl_info.h"
#include "lsl/lsl_query.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void expect_format(omma_status st, const char *prefix)
{
    if (st != OMMA_ERR_FORMAT || strncmp(omma_last_error(), prefix, strlen(prefix)) != 0)
        __builtin_trap();
}

static void check_info(const char *text, size_t len)
{
    lsl_info a, b;
    omma_status st = lsl_info_parse(text, len, &a);
    if (st != OMMA_OK) {
        if (st != OMMA_ERR_FORMAT)
            __builtin_trap();
        return;
    }
    lsl_buf out = {0};
    lsl_info_write(&a, 1, &out);
    if (out.failed || lsl_info_parse(out.data, out.len, &b) != OMMA_OK)
        __builtin_trap();
    if (strcmp(a.name, b.name) || strcmp(a.type, b.type) || strcmp(a.uid, b.uid) ||
        strcmp(a.source_id, b.source_id) || strcmp(a.hostname, b.hostname) ||
        a.channel_count != b.channel_count || a.format != b.format ||
        a.v4data_port != b.v4data_port || a.nominal_srate != b.nominal_srate ||
        (a.desc == NULL) != (b.desc == NULL) || (a.desc && strcmp(a.desc, b.desc)))
        __builtin_trap();
    char *labels = NULL;
    int n = 0;
    if (lsl_info_channel_labels(&a, &labels, &n) == OMMA_OK)
        free(labels);
    lsl_info_clear(&a);
    lsl_info_clear(&b);
    lsl_buf_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    switch (data[0] % 4) {
    case 0: {
        lsl_info info = {0};
        memcpy(info.name, "cam0_landmarks", 15);
        memcpy(info.type, "Landmark", 9);
        memcpy(info.session_id, "default", 8);
        info.channel_count = 1417;
        info.format = LSL_FORMAT_FLOAT32;
        info.nominal_srate = 30;
        info.version = 110;
        int match = 0;
        omma_status st = lsl_query_match(text, len, &info, &match);
        if (st != OMMA_OK)
            expect_format(st, "LSL query");
        else if (match != 0 && match != 1)
            __builtin_trap();
        break;
    }
    case 1:
        check_info(text, len);
        break;
    case 2: {
        lsl_feed_request rq;
        omma_status st = lsl_feed_request_parse(text, len, &rq);
        if (st != OMMA_OK)
            expect_format(st, "LSL feed request");
        else if (rq.uid[sizeof rq.uid - 1] != '\0')
            __builtin_trap();
        break;
    }
    default: {
        lsl_feed_response rs;
        omma_status st = lsl_feed_response_parse(text, len, &rs);
        if (st != OMMA_OK)
            expect_format(st, "LSL feed response");
        break;
    }
    }
    return 0;
}
