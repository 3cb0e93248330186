/* Private: finding LSL streams, as liblsl's resolver does: waves of
 * "LSL:shortinfo" queries over UDP, every half second, to LSL's discovery
 * port on this machine (127.0.0.1), the broadcast address and the
 * multicast groups, and to the local port range 16572..16603 (liblsl's
 * KnownPeers scan, which reaches every outlet on this machine even where
 * multicast and broadcast are unavailable), plus any known peers given.
 * Replies are "QUERY_ID\r\n" + the <info> document; a stream is listed
 * once per uid, its v4address set to the replying host. Any thread. */
#ifndef OMMA_LSL_RESOLVER_H
#define OMMA_LSL_RESOLVER_H

#include "lsl/lsl_info.h"

typedef struct lsl_resolve_options {
    const char *query; /* lsl_query.h; NULL or "": every stream */
    double wait_s; /* how long to listen, > 0 */
    int minimum; /* return once this many are found (0: wait wait_s) */
    const char *peers; /* comma-separated IPv4 addresses also asked; NULL: none */
} lsl_resolve_options;

/* The streams found (*infos, n; free with lsl_resolve_free), possibly 0.
 * Fails only when no query could be sent or the query is invalid. */
omma_status lsl_resolve(const lsl_resolve_options *opts, lsl_info **infos, int *n);
void lsl_resolve_free(lsl_info *infos, int n);

/* "session_id='default' and KEY='VALUE'", as liblsl's resolve_byprop. */
void lsl_query_byprop(char *out, size_t cap, const char *key, const char *value);

#endif
