/* omma stream --participant: each frame's faces to the participants
 * (runtime/participants.h), their outputs (per participant LSL streams and
 * --data files, the participants' JSON lines: docs/OUTPUT.md) and their
 * synchrony (runtime/participant_sync.h, on LSL's CoModulation). */
#ifndef OMMA_CLI_STREAM_PEOPLE_H
#define OMMA_CLI_STREAM_PEOPLE_H

#include "cli/stream_data.h"
#include "cli/stream_lsl.h"
#include "cli/stream_options.h"
#include "ui/ui_server.h"

typedef struct cli_people cli_people;

/* Returns -1 when fine, else the exit code (message printed). */
int cli_people_start(const cli_stream_opts *o, cli_people **out);

/* One frame's results (any thread; one camera's frames in order): the
 * assignment, then the participants' LSL samples and --data rows (lsl,
 * data may be NULL), synchrony (to LSL and the live view's ui, which may be
 * NULL), and the JSON lines of the frame (its participants record, then
 * one per event) in *json (malloc'd, *len bytes; NULL when the camera has
 * no participant). names (room for r->n_faces; NULL: not wanted) gets each
 * face's participant name or NULL. Returns 0 when the camera has no
 * participant (nothing done, names untouched), else 1. */
int cli_people_result(cli_people *cp, const rt_result *r, double timestamp_ms, cli_lsl_sink *lsl,
                      cli_data_sink *data, ui_server *ui, const char **names, char **json,
                      size_t *len);

/* Prints each participant's assignment count and frees. */
void cli_people_stop(cli_people *cp);

#endif
