/* omma stream --data DIR: per-frame CSV files, so the measurements survive
 * without an LSL recorder running. One file per camera, DIR/NAME.csv (the
 * camera's name as on LSL), one row per processed frame: its number, its
 * capture time on the LSL clock and as Unix time, the face's track id,
 * then the 1417 values of the NAME_landmarks LSL stream with the same
 * labels (docs/OUTPUT.md). Rows are formatted in the result callback and
 * written whole by a writer thread at least every half second, so a crash
 * loses at most the last half second and never leaves half a row; a disk
 * that stalls makes rows wait in a bounded buffer (16 MiB per camera),
 * then drop (counted), never the cameras. */
#ifndef OMMA_CLI_STREAM_DATA_H
#define OMMA_CLI_STREAM_DATA_H

#include "cli/stream_options.h"

typedef struct cli_data_sink cli_data_sink;

/* Makes DIR if missing and creates every camera's file (an existing file
 * is an error: data are never overwritten). Returns -1 when fine, else the
 * exit code (message printed). */
int cli_data_start(const cli_stream_opts *o, cli_data_sink **out);
/* From the result callback (any thread; one camera's results in order). */
void cli_data_result(cli_data_sink *d, const rt_result *r);
/* Participant mode (o->n_participants > 0): one file per participant,
 * DIR/NAME.csv, with a camera column before face_id; cli_data_result does
 * nothing and this writes participant p's row for frame r (face NULL:
 * missing). */
void cli_data_participant(cli_data_sink *d, int p, const rt_result *r, const omma_face *face);
/* Writes what is left, closes the files, prints the counts; returns 0 when
 * every row was written. */
int cli_data_stop(cli_data_sink *d);

#endif
