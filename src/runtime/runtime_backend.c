#define _POSIX_C_SOURCE 200809L /* strdup */
/* The runtime's entry points (runtime.h): the configuration's defaults and
 * the checks both runtimes share, then the one place that picks the GPU or
 * the CPU runtime (runtime_backend.h) by cfg->pipeline.backend; and the
 * camera helpers both share. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "io/video_file.h"
#include "metrics/metrics.h"
#include "runtime/runtime_backend.h"
#include "runtime/source.h"

const char *const rt_runtime_stage_names[RT_RUNTIME_STAGES] = {"step"};

struct rt_runtime {
    const rt_backend *backend;
    void *impl;
};

void rt_runtime_config_init(rt_runtime_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    omma_face_pipeline_options_init(&cfg->pipeline);
    cfg->pipeline.backend = OMMA_BACKEND_CUDA;
    cfg->pipeline.max_batch = 64;
    cfg->pipeline.lanes = 3;
    cfg->max_wait_ms = 5;
    cfg->ring_slots = 4;
    cfg->publish_subscribers = 16;
    cfg->publish_holds = 2;
    rt_source_options_init(&cfg->source);
    cfg->decode_gpu_streams = 160;
    rt_synthetic_options_init(&cfg->synthetic);
    cfg->pool_frames = 64;
    cfg->pool_memory = OMMA_MEMORY_DEVICE;
    cfg->synthetic_per_thread = 1;
    omma_pose_pipeline_options_init(&cfg->pose);
}

static omma_status check_common(const rt_runtime_config *c)
{
    if (c->max_cameras != 0 &&
        (c->max_cameras < c->n_cameras || c->max_cameras > OMMA_PIPELINE_MAX_CAMERAS))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "runtime: max cameras %d not in %d..%d",
                         c->max_cameras, c->n_cameras > 1 ? c->n_cameras : 1,
                         OMMA_PIPELINE_MAX_CAMERAS);
    int least = c->max_cameras > 0 ? 0 : 1;
    if (c->n_cameras < least || c->n_cameras > OMMA_PIPELINE_MAX_CAMERAS ||
        (c->n_cameras > 0 && !c->cameras))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "runtime: %d cameras not in %d..%d", c->n_cameras,
                         least, OMMA_PIPELINE_MAX_CAMERAS);
    if (c->pipeline.backend != OMMA_BACKEND_CUDA && c->pipeline.backend != OMMA_BACKEND_CPU)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "runtime: unknown backend %d",
                         (int)c->pipeline.backend);
    if (c->max_wait_ms < 0 || c->max_wait_ms > 10000)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "runtime: max wait %d ms not in 0..10000",
                         c->max_wait_ms);
    int synthetic = 0;
    for (int i = 0; i < c->n_cameras; i++)
        synthetic |= !c->cameras[i].spec;
    if (synthetic && !c->photo)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "runtime: synthetic cameras need a photo");
    if (synthetic && (c->synthetic_per_thread < 1 || c->synthetic_per_thread > 4096))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "runtime: %d synthetic cameras per thread not in 1..4096",
                         c->synthetic_per_thread);
    if (synthetic && !(c->synthetic.fps > 0.0 && c->synthetic.fps <= 1000.0))
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "runtime: synthetic fps %g not in (0, 1000]",
                         c->synthetic.fps);
    return OMMA_OK;
}

omma_status rt_runtime_start(const rt_runtime_config *cfg, rt_runtime **out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_runtime_start: out is NULL");
    *out = NULL;
    if (!cfg)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_runtime_start: config is NULL");
    OMMA_TRY(check_common(cfg));
    rt_runtime *rt = calloc(1, sizeof *rt);
    if (!rt)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "runtime");
    rt->backend = cfg->pipeline.backend == OMMA_BACKEND_CPU ? &rt_cpu_backend : &rt_gpu_backend;
    omma_status st = rt->backend->start(cfg, &rt->impl);
    if (st != OMMA_OK) {
        free(rt);
        return st;
    }
    *out = rt;
    return OMMA_OK;
}

void rt_runtime_stop(rt_runtime *rt)
{
    if (rt)
        rt->backend->stop(rt->impl);
}

omma_status rt_runtime_wait(rt_runtime *rt, int timeout_ms)
{
    if (!rt)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_runtime_wait: runtime is NULL");
    return rt->backend->wait(rt->impl, timeout_ms);
}

void rt_runtime_destroy(rt_runtime *rt)
{
    if (!rt)
        return;
    rt->backend->destroy(rt->impl);
    free(rt);
}

omma_status rt_runtime_add_camera(rt_runtime *rt, const rt_camera_config *cam, int *index)
{
    if (index)
        *index = -1;
    if (!rt || !cam || !index)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_runtime_add_camera: NULL argument");
    return rt->backend->add_camera(rt->impl, cam, index);
}

omma_status rt_runtime_remove_camera(rt_runtime *rt, int index)
{
    if (!rt)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "rt_runtime_remove_camera: runtime is NULL");
    return rt->backend->remove_camera(rt->impl, index);
}

void rt_runtime_interrupt_camera(rt_runtime *rt, int index)
{
    if (rt && rt->backend->interrupt_camera)
        rt->backend->interrupt_camera(rt->impl, index);
}

void rt_runtime_get_stats(rt_runtime *rt, rt_runtime_stats *out)
{
    memset(out, 0, sizeof *out);
    if (rt)
        rt->backend->get_stats(rt->impl, out);
}

omma_status rt_metrics_register(struct metrics_registry *m, int index,
                                const rt_camera_config *cfg, int gpu, const struct rt_source *src)
{
    if (!m)
        return OMMA_OK;
    char name[METRICS_NAME_MAX];
    if (cfg->name)
        snprintf(name, sizeof name, "%s", cfg->name);
    else if (cfg->spec) {
        int k = snprintf(name, sizeof name, "%d:", index);
        io_video_url_redacted(cfg->spec, name + k, sizeof name - (size_t)k); /* no passwords */
    } else
        snprintf(name, sizeof name, "synth%d", index);
    OMMA_TRY(metrics_add_camera(m, index, name, gpu));
    if (src)
        metrics_camera_set_decoder(m, index, rt_source_get_info(src)->decoder);
    return OMMA_OK;
}

omma_status rt_copy_string(const char *from, char **to)
{
    *to = NULL;
    if (from && !(*to = strdup(from)))
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "runtime: a camera's name");
    return OMMA_OK;
}
