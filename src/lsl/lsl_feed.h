/* Private: LSL's TCP data protocol 1.10 ("streamfeed"), both sides.
 *
 * An inlet connects to the outlet's data port and sends
 *   LSL:streamfeed/110 UID\r\n  then "Key: value\r\n" headers, then \r\n
 * (Native-Byte-Order, Endian-Performance, Has-IEEE754-Floats,
 * Supports-Subnormals, Value-Size, Data-Protocol-Version,
 * Max-Buffer-Length, Max-Chunk-Length, ...). The outlet answers
 *   LSL/110 200 OK\r\nUID: ..\r\nByte-Order: 1234\r\n
 *   Suppress-Subnormals: 0\r\nData-Protocol-Version: 110\r\n\r\n
 * then two test-pattern samples (offsets 4 and 2, timestamp 123456.789)
 * and then samples: a tag byte (1: timestamp deduced from the rate, 2:
 * an 8-byte double timestamp follows), then the channel values, in the
 * negotiated byte order. omma always sends its own (little-endian) order
 * and never needs conversion: liblsl inlets convert when they differ.
 * The same port answers "LSL:shortinfo\r\nQUERY\r\n" and
 * "LSL:fullinfo\r\n" with the <info> document. */
#ifndef OMMA_LSL_FEED_H
#define OMMA_LSL_FEED_H

#include <stddef.h>
#include <stdint.h>

#include "lsl/lsl_info.h"

#define LSL_FEED_MAX_REQUEST 16384
#define LSL_FEED_MAX_REQUEST_BYTES LSL_FEED_MAX_REQUEST
#define LSL_TAG_DEDUCED 1
#define LSL_TAG_TRANSMITTED 2
#define LSL_TEST_PATTERN_TIME 123456.789

typedef struct lsl_feed_request {
    int version; /* 100 ("LSL:streamfeed") or that of "LSL:streamfeed/NNN" */
    char uid[64]; /* "" when not given */
    int byte_order; /* 1234 or 4321 */
    int value_size; /* -1 when not given */
    int has_ieee754, supports_subnormals;
    int protocol_version; /* Data-Protocol-Version; the request's when absent */
    long max_buffer_length; /* -1 when not given */
    long max_chunk_length;
} lsl_feed_request;

/* Parses a whole request (through its blank line; for 1.00 the two lines).
 * OMMA_ERR_FORMAT says what is wrong. */
omma_status lsl_feed_request_parse(const char *text, size_t len, lsl_feed_request *req);

typedef struct lsl_feed_response {
    int status; /* 200, 404, 505... */
    int version;
    char uid[64];
    int byte_order;
    int suppress_subnormals;
    int data_protocol_version;
} lsl_feed_response;

/* Parses the outlet's answer through its blank line. */
omma_status lsl_feed_response_parse(const char *text, size_t len, lsl_feed_response *resp);

/* Fills n values of format f with liblsl's test pattern for offset. */
void lsl_test_pattern(lsl_format f, int n, int offset, void *values);

/* Bytes of one encoded sample with a transmitted timestamp. */
static inline size_t lsl_sample_bytes(const lsl_info *info)
{
    return 1 + 8 + (size_t)info->channel_count * lsl_format_size(info->format);
}

/* Writes tag 2, the timestamp and the values (host byte order). */
void lsl_sample_encode(uint8_t *out, double timestamp, const void *values, size_t value_bytes);

/* Byte-swaps n values of width bytes in place. */
void lsl_swap_values(void *values, int n, size_t width);

#endif
