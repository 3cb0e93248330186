/* Private: a source camera's link status (source.h's observer) carried to
 * the runtime's metrics and camera events, shared by the GPU and CPU
 * runtimes. Called on the camera's thread only. */
#ifndef OMMA_RUNTIME_RUNTIME_LINK_H
#define OMMA_RUNTIME_RUNTIME_LINK_H

#include "runtime/runtime.h"

typedef struct rt_link_watch {
    const rt_runtime_config *cfg;
    int camera;
    void *camera_ctx; /* its rt_camera_config's ctx, for the events */
    rt_link_state state; /* the last state seen */
    int attempt; /* the last attempt seen */
} rt_link_watch;

/* The options of camera `camera`'s source: the runtime's, observed by w. */
void rt_link_watch_init(rt_link_watch *w, const rt_runtime_config *cfg, int camera,
                        rt_source_options *opt);

/* Pushes the source's current status to the metrics whatever changed (the
 * camera's thread calls it when it starts: what the source saw while it
 * was opened, before the camera's metrics existed, is not lost). */
void rt_link_watch_sync(rt_link_watch *w, rt_source *src);

#endif
