/* omma stream --record (stream_record.h). */
#include "cli/stream_record.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/commands.h"
#include "io/recorder.h"

struct cli_record {
    int n;
    io_recorder **recs; /* per camera; NULL: not recorded */
    char (*names)[CLI_CAMERA_NAME_MAX];
};

static int recordable(const char *spec)
{
    return spec && strncmp(spec, "bus:", 4) != 0;
}

int cli_record_start(cli_stream_opts *o, cli_record **out)
{
    *out = NULL;
    const char *dir = o->record_dir;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return cli_fail(OMMA_ERR_IO, "--record %s: cannot make it: %s", dir, strerror(errno));
    cli_record *r = calloc(1, sizeof *r);
    int n = o->rt.n_cameras;
    if (r) {
        r->recs = calloc((size_t)n, sizeof *r->recs);
        r->names = calloc((size_t)n, sizeof *r->names);
    }
    if (!r || !r->recs || !r->names) {
        if (r) {
            free(r->recs);
            free(r->names);
        }
        free(r);
        return cli_fail(OMMA_ERR_OUT_OF_MEMORY, "--record");
    }
    r->n = n;
    int skipped = 0;
    for (int i = 0; i < n; i++) {
        rt_camera_config *c = &o->cameras[i];
        if (!recordable(c->spec)) {
            skipped++;
            continue;
        }
        memcpy(r->names[i], o->names[i], sizeof r->names[i]);
        io_record_options ro = {
            .dir = dir,
            .name = o->record_name,
            .camera = o->names[i],
            .segment_ns = o->record_segment_ns,
            .segment_bytes = o->record_segment_bytes,
            .fps = o->rt.source.fps,
        };
        omma_status st = io_recorder_create(&ro, &r->recs[i]);
        if (st != OMMA_OK) {
            int rc = cli_fail(st, "--record %s", dir);
            o->cameras[i].record = NULL;
            cli_record_stop(r);
            for (int k = 0; k < n; k++)
                o->cameras[k].record = NULL;
            return rc;
        }
        c->record = r->recs[i];
    }
    if (skipped)
        fprintf(stderr,
                "omma stream: --record: %d synthetic or frame bus camera%s not recorded (no "
                "video of their own)\n",
                skipped, skipped == 1 ? "" : "s");
    *out = r;
    return -1;
}

int cli_record_stop(cli_record *r)
{
    if (!r)
        return 0;
    int failed = 0;
    for (int i = 0; i < r->n; i++) {
        if (!r->recs[i])
            continue;
        io_recorder_stats s;
        omma_status st = io_recorder_close(r->recs[i], &s);
        fprintf(stderr,
                "omma stream: record %s: %ld frame%s%s in %d segment%s (%.1f MB), %ld "
                "dropped%s%s\n",
                r->names[i], s.frames, s.frames == 1 ? "" : "s",
                !s.frames   ? ""
                : s.encoded ? " encoded"
                            : " remuxed",
                s.segments, s.segments == 1 ? "" : "s", (double)s.bytes / 1e6, s.dropped,
                st != OMMA_OK ? "; failed: " : "", st != OMMA_OK ? omma_last_error() : "");
        failed |= st != OMMA_OK;
    }
    free(r->recs);
    free(r->names);
    free(r);
    return failed;
}
