/* Private: the two runtimes behind runtime.h's entry points. rt_runtime_start
 * (runtime_backend.c) checks what both share, then hands the configuration
 * to the runtime of cfg->pipeline.backend: the GPU runtime (runtime.c,
 * runtime_camera.c, runtime_worker.c: frame rings, per-GPU workers and
 * sinks) or the CPU runtime (runtime_cpu*.c: host frame slots, one worker
 * running the CPU face pipeline). This header and runtime_backend.c include
 * no GPU header, so a build without CUDA keeps them and the CPU runtime. */
#ifndef OMMA_RUNTIME_RUNTIME_BACKEND_H
#define OMMA_RUNTIME_RUNTIME_BACKEND_H

#include "runtime/runtime.h"

/* A runtime: start checks the fields only it uses, builds and starts
 * everything (nothing left on failure: *out NULL); the others act as
 * runtime.h's functions of the same names say, on what start made. */
typedef struct rt_backend {
    const char *name;
    omma_status (*start)(const rt_runtime_config *cfg, void **out);
    void (*stop)(void *impl);
    omma_status (*wait)(void *impl, int timeout_ms);
    void (*destroy)(void *impl);
    void (*get_stats)(void *impl, rt_runtime_stats *out);
    omma_status (*add_camera)(void *impl, const rt_camera_config *cam, int *index);
    omma_status (*remove_camera)(void *impl, int index);
    void (*interrupt_camera)(void *impl, int index);
} rt_backend;

/* Both runtimes' camera helpers (runtime_backend.c). */
struct metrics_registry;
struct rt_source;
/* Camera `index` in the metrics registry m (NULL: nothing), named by
 * cfg->name, else "index:" + its source with any password hidden, else
 * "synthN"; on GPU `gpu` (-1: none); with src's decoder when it has a
 * source. Errors: metrics_add_camera's. */
omma_status rt_metrics_register(struct metrics_registry *m, int index,
                                const rt_camera_config *cfg, int gpu, const struct rt_source *src);
/* *to = a copy of from (NULL for NULL). Errors: OMMA_ERR_OUT_OF_MEMORY. */
omma_status rt_copy_string(const char *from, char **to);

extern const rt_backend rt_gpu_backend; /* runtime.c */
extern const rt_backend rt_cpu_backend; /* runtime_cpu.c */

#endif
