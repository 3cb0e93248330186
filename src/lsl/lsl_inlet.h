/* Private: reading an LSL stream (omma's own inlet, for tests, benchmarks
 * and `omma lsl`): its full description over TCP ("LSL:fullinfo"), its
 * samples over the data protocol 1.10 (lsl_feed.h: the header exchange,
 * the two test-pattern samples checked, then samples), and the time
 * correction of liblsl (UDP "LSL:timedata" probes to the service port:
 * the offset of the probe with the smallest round trip, as NTP).
 * An inlet belongs to one thread at a time. */
#ifndef OMMA_LSL_INLET_H
#define OMMA_LSL_INLET_H

#include "lsl/lsl_info.h"

typedef struct lsl_inlet lsl_inlet;

/* Connects to a resolved stream (its v4address and ports). Every network
 * step is bounded by timeout_s. */
omma_status lsl_inlet_open(const lsl_info *stream, double timeout_s, lsl_inlet **out);
void lsl_inlet_close(lsl_inlet *in);

/* The full description (with desc), v4address as resolved. */
const lsl_info *lsl_inlet_info(const lsl_inlet *in);

/* The next sample: channel_count values of the stream's format into
 * values, its timestamp (the outlet's clock) into *timestamp.
 * OMMA_ERR_TIMEOUT after timeout_s without one, OMMA_ERR_CLOSED when the
 * outlet closed the connection. */
omma_status lsl_inlet_pull(lsl_inlet *in, void *values, double *timestamp, double timeout_s);

/* liblsl's time_correction: *correction is added to the outlet's
 * timestamps to get this machine's LSL clock; *rtt the best round trip.
 * probes: how many (8 as liblsl's default). */
omma_status lsl_inlet_time_correction(lsl_inlet *in, int probes, double timeout_s,
                                      double *correction, double *rtt);

#endif
