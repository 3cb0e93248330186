/* A source's status to the metrics (state, attempt, error, damage) and,
 * when the link changes, a camera event: reconnecting (each attempt) and
 * running again. Failures are reported by the camera's thread when the
 * read returns them, as for every source. */
#include "runtime/runtime_link.h"

#include <stdio.h>

static void observe(void *ctx, const rt_source_status *st)
{
    rt_link_watch *w = ctx;
    const rt_runtime_config *cfg = w->cfg;
    metrics_camera_source(cfg->metrics, w->camera, (uint64_t)st->damaged_frames,
                          (uint64_t)st->dropped_packets, st->stream_clock);
    if (st->state == w->state && st->attempt == w->attempt)
        return;
    w->state = st->state;
    w->attempt = st->attempt;
    if (st->state == RT_LINK_FAILED)
        return; /* the camera's thread reports it with the read's error */
    metrics_camera_state state =
        st->state == RT_LINK_RECONNECTING ? METRICS_CAMERA_RECONNECTING : METRICS_CAMERA_RUNNING;
    metrics_camera_set_link(cfg->metrics, w->camera, state, st->attempt, (uint64_t)st->reconnects,
                            st->error);
    if (!cfg->on_camera)
        return;
    char detail[512];
    if (st->state == RT_LINK_RECONNECTING)
        snprintf(detail, sizeof detail, "attempt %d: %s", st->attempt, st->error);
    else
        snprintf(detail, sizeof detail, "reconnected (%ld reconnection%s so far)", st->reconnects,
                 st->reconnects == 1 ? "" : "s");
    rt_camera_event e = {w->camera, state, OMMA_OK, detail, w->camera_ctx};
    cfg->on_camera(cfg->ctx, &e);
}

void rt_link_watch_init(rt_link_watch *w, const rt_runtime_config *cfg, int camera,
                        rt_source_options *opt)
{
    w->cfg = cfg;
    w->camera = camera;
    w->camera_ctx = NULL;
    w->state = RT_LINK_CONNECTED;
    w->attempt = 0;
    *opt = cfg->source;
    opt->on_status = observe;
    opt->status_ctx = w;
}

void rt_link_watch_sync(rt_link_watch *w, rt_source *src)
{
    rt_source_status st;
    rt_source_get_status(src, &st);
    metrics_camera_source(w->cfg->metrics, w->camera, (uint64_t)st.damaged_frames,
                          (uint64_t)st.dropped_packets, st.stream_clock);
}
