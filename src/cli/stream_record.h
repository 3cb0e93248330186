/* omma stream --record DIR: each camera's video into DIR as it arrives,
 * through one io_recorder per camera (io/recorder.h; docs/RECORDING.md):
 * video files and network cameras remuxed from their packets, V4L2 and
 * image sources encoded with libx264. Synthetic cameras and frame bus
 * cameras have no video of their own to record: they are left out (said
 * once). */
#ifndef OMMA_CLI_STREAM_RECORD_H
#define OMMA_CLI_STREAM_RECORD_H

#include "cli/stream_options.h"

typedef struct cli_record cli_record;

/* Makes DIR if missing, checks it is writable and gives every camera with
 * a source its recorder (o->cameras[i].record). Returns -1 when fine, else
 * the exit code (message printed). */
int cli_record_start(cli_stream_opts *o, cli_record **out);

/* After the runtime is gone: writes what is queued, closes the files and
 * prints each camera's counts; returns 0 when every recorder finished
 * without a write error. Accepts NULL. */
int cli_record_stop(cli_record *r);

#endif
