/* omma stream --lsl: each camera's results as LSL streams (lsl/lsl_layout.h:
 * NAME_landmarks, NAME_face and NAME_frames), stamped with the frame's capture time
 * on LSL's clock. Outlets are made at a camera's first result (its frame
 * size and rate known then); a push copies the sample into the outlet's
 * ring and returns: the network is served by the LSL server's own thread,
 * and a slow consumer loses samples (counted) instead of slowing omma. */
#ifndef OMMA_CLI_STREAM_LSL_H
#define OMMA_CLI_STREAM_LSL_H

#include "cli/stream_options.h"

typedef struct cli_lsl_sink cli_lsl_sink;

/* Starts the LSL server for the cameras (named o->names).
 * Returns -1 when fine, else the exit code (message printed). */
int cli_lsl_start(const cli_stream_opts *o, cli_lsl_sink **out);
/* From the result callback (any thread; one camera's results in order). */
void cli_lsl_result(cli_lsl_sink *l, const rt_result *r);
/* Participant mode (o->n_participants > 0): cli_lsl_result serves only
 * the cameras' NAME_frames; each participant p has NAME_landmarks,
 * NAME_face, NAME_track and with --pose NAME_pose, one sample per frame of
 * its camera (face, pose NULL: missing; change: the code of NAME_track's
 * change channel). Without participants, --pose adds a camera's NAME_pose:
 * the pose attached to the face its other streams follow (without a face,
 * its oldest pose). */
void cli_lsl_participant(cli_lsl_sink *l, int p, const rt_result *r, const omma_face *face,
                         const omma_pose *pose, int change);
/* One CoModulation sample (n labelled channels, made at the first). */
void cli_lsl_sync(cli_lsl_sink *l, const float *sample, int n, const char *const *labels,
                  uint64_t t_ns, double rate);
/* Prints each stream's counts to stderr and closes everything. */
void cli_lsl_stop(cli_lsl_sink *l);

#endif
