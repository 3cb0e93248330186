/* Private: a source camera's link status (source.h's observer) carried to
 * the runtime's metrics and camera events, shared by the GPU and CPU
 * runtimes. Called on the camera's thread only. */
#ifndef OMMA_RUNTIME_RUNTIME_LINK_H
#define OMMA_RUNTIME_RUNTIME_LINK_H

#include "runtime/runtime.h"

typedef struct rt_link_watch {
    const rt_runtime_config *cfg;
    int camera;
    rt_link_state state; /* the last state seen */
    int attempt; /* the last attempt seen */
} rt_link_watch;

/* The options of camera `camera`'s source: the runtime's, observed by w. */
void rt_link_watch_init(rt_link_watch *w, const rt_runtime_config *cfg, int camera,
                        rt_source_options *opt);

#endif
