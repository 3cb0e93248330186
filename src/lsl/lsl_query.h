/* Private: the query language of LSL discovery. liblsl evaluates queries
 * as XPath 1.0 boolean expressions on the <info> element; resolvers send
 * the subset this file implements: comparisons of info fields with string
 * or number literals (= and !=), and, or, not(...), parentheses,
 * starts-with(a, b) and contains(a, b), e.g.
 *   session_id='default' and name='cam0_landmarks'
 * A path that is not a field of <info> (desc/...) is an empty node-set:
 * every comparison with it is false, as in XPath. */
#ifndef OMMA_LSL_QUERY_H
#define OMMA_LSL_QUERY_H

#include <stddef.h>

#include "lsl/lsl_info.h"

#define LSL_QUERY_MAX_BYTES 4096

/* Evaluates query (len bytes, not NUL-terminated necessarily) against
 * info: *match is 1 or 0. An empty query matches every stream. Fails with
 * OMMA_ERR_FORMAT, saying where, when the query is not in the subset. */
omma_status lsl_query_match(const char *query, size_t len, const lsl_info *info, int *match);

#endif
