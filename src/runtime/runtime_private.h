/* Private to the GPU runtime's files: runtime.c (set-up, stop, wait,
 * stats: rt_gpu_backend of runtime_backend.h), runtime_camera.c (the
 * cameras' threads), runtime_worker.c (each GPU's worker and sink
 * threads), runtime_live.c (cameras added and removed while it runs).
 *
 * Cameras added and removed live (cfg.max_cameras): the cameras' array and
 * every GPU's ready list have room for max_cameras from the start (the
 * threads hold pointers into the array); a slot is free, reserved (an add
 * opens it, outside the locks), running, being removed, or closing (its
 * last frames are out: freed outside the locks), under the runtime's lock.
 * Removing closes the camera's ring (its thread or driver then lets go of
 * it), waits until the worker drained it (rt_cam.drained) and no batch in
 * flight holds a frame of it (the sink reported them), then frees it.
 * Locks: the runtime's before a GPU's, never the other way; place_lock
 * alone. */
#ifndef OMMA_RUNTIME_RUNTIME_PRIVATE_H
#define OMMA_RUNTIME_RUNTIME_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>

#include "gpu/driver.h"
#include "runtime/frame_ring.h"
#include "runtime/runtime.h"
#include "runtime/runtime_link.h"
#include "runtime/synthetic_pool.h"

/* Every this many batches a lane's step is timed with CUDA events. */
#define RT_TIMING_EVERY 16

typedef struct rt_gpu rt_gpu;
typedef struct rt_gpu_runtime rt_gpu_runtime;
typedef struct rt_gpu_pose rt_gpu_pose;
typedef struct rt_driver rt_driver;

typedef enum rt_cam_state {
    RT_CAM_FREE = 0,
    RT_CAM_RESERVED, /* an add opens it, outside the locks */
    RT_CAM_RUNNING,
    RT_CAM_REMOVING, /* a remove waits for its last frames */
    RT_CAM_CLOSING, /* drained: a remove frees it, outside the locks */
} rt_cam_state;

typedef struct rt_cam {
    rt_gpu_runtime *rt;
    rt_gpu *gpu;
    int index;
    rt_camera_config cfg;
    char *spec_copy, *name_copy; /* an added camera's: cfg's strings */
    rt_driver *own; /* an added synthetic camera's driver (one camera) */
    atomic_int removing; /* its thread or driver lets go of it */
    rt_source *src; /* a source's camera (NULL: synthetic or bus) */
    rt_link_watch link; /* its status to the metrics (runtime_link.h) */
    struct omma_bus_subscriber *bus; /* a "bus:NAME/I" camera: frames of
                                      * another process (runtime_bus_camera.c) */
    char bus_name[64];
    int bus_index;
    long phase; /* synthetic: its first pool frame */
    rt_ring *ring;
    rt_ring_format fmt;
    int live;
    double pixels_per_s; /* for the least-loaded placement */
    double decode_px_per_s; /* what it takes of its GPU's decoders */
    double fps; /* nominal rate, 0 when unknown (rt_result) */
    CUstream upload; /* the ring's uploads (not for device pool frames) */
    void *staging[2]; /* sources: pinned, packed frames */
    CUevent staged[2]; /* the upload from staging[i] was enqueued before it */
    size_t frame_bytes;
    pthread_t thread;
    int started;
    /* Under the runtime's lock. */
    rt_cam_state state;
    int let_go; /* its thread or driver no longer touches it */
    /* Worker side, under the GPU's lock. */
    int queued; /* in the GPU's ready list */
    int drained; /* the worker saw its ring closed and empty */
    uint64_t last_seq; /* the last frame the worker took */
    int ended; /* synthetic: its driver is done with it */
    /* Its source's time in the decoder (io_video_stats), for the stats. */
    atomic_uint_fast64_t decode_ns, decode_cpu_ns;
    uint64_t seen_decode_ns, seen_decode_cpu_ns; /* the reader's totals last read */
    core_cpu_parts cpu; /* its thread's CPU time by call kind (measure_cpu) */
} rt_cam;

/* A thread driving synthetic cameras (rt_runtime_config.synthetic_per_thread
 * of them), their frames at the same times, offset_ns into the period. */
struct rt_driver {
    rt_gpu_runtime *rt;
    int *cams, count;
    char *done; /* per camera: ended or removed; the driver no longer touches it */
    uint64_t offset_ns;
    pthread_t thread;
    int started;
    int one_cam; /* an added camera's own driver: cams, done point here */
    char one_done;
};

/* Previews (rt_runtime_config.preview) a batch may make at most. */
#define RT_GPU_PREVIEWS 4

/* A batch in flight: what the sink needs to report it. */
typedef struct rt_batch {
    int lane;
    int n;
    int cams[OMMA_PIPELINE_MAX_BATCH];
    uint64_t seq[OMMA_PIPELINE_MAX_BATCH], capture_ns[OMMA_PIPELINE_MAX_BATCH];
    uint64_t dropped[OMMA_PIPELINE_MAX_BATCH];
    int timed; /* its step was timed with timing[lane] */
    /* Previews made from its frames: into set preview_set of the GPU's
     * preview buffers, done at preview_done[preview_set]. */
    int n_previews, preview_set;
    int preview_cam[RT_GPU_PREVIEWS], preview_w[RT_GPU_PREVIEWS], preview_h[RT_GPU_PREVIEWS];
    uint64_t preview_seq[RT_GPU_PREVIEWS], preview_capture_ns[RT_GPU_PREVIEWS];
    /* With pose: its frames, held until pose is done (runtime_pose.c). */
    rt_ring_item items[OMMA_PIPELINE_MAX_BATCH];
} rt_batch;

struct rt_gpu {
    rt_gpu_runtime *rt;
    int index, ordinal;
    omma_device *dev;
    omma_face_pipeline *pipe;
    rt_gpu_pose *pose; /* cfg.pose: its batched pose (NULL: none) */
    rt_synthetic_pool *pool;
    int n_cams; /* placed here (under the runtime's place_lock once running) */
    double load_px_per_s; /* its cameras' pixels per second (place_lock) */
    double decode_px_per_s; /* pixels per second its decoders take (place_lock) */
    pthread_mutex_t lock;
    pthread_cond_t wake; /* worker: frames ready, a lane freed, stop */
    pthread_cond_t sink_wake; /* sink: a batch submitted, the worker ended */
    pthread_cond_t gone; /* a remove: a camera drained, a batch reported */
    /* Under lock. */
    int *ready; /* ring of camera indices with a frame ready (ready_cap room) */
    int ready_cap; /* the runtime's slots */
    int removals; /* removes waiting on `gone` */
    int ready_head, ready_count;
    uint64_t first_ready_ns; /* when the oldest of them got ready */
    int open_cams; /* cameras not drained */
    /* Batches submitted and not yet reported, in `lanes` slots used in
     * turn (the sink frees them oldest first, so the next slot is free
     * whenever free_lanes is): not indexed by the pipeline's lane, which
     * the pipeline hands out again as soon as the sink has completed its
     * step, while the sink still reports and (pose) holds the batch. */
    rt_batch *batches;
    int *pending; /* slots submitted, oldest first (ring of slots) */
    int pending_head, pending_count;
    int next_slot; /* the worker's next batch slot */
    int free_lanes;
    int worker_done;
    /* Previews (cfg.preview): one set of RT_GPU_PREVIEWS thumbnails per
     * lane (batch_count % lanes: at most lanes - 1 batches are in flight
     * while the worker prepares one), in device memory and pinned. */
    CUstream preview_stream;
    CUdeviceptr preview_dev;
    uint8_t *preview_host;
    size_t preview_bytes;
    CUevent preview_done[OMMA_PIPELINE_MAX_LANES];
    /* Worker only. */
    CUevent timing[OMMA_PIPELINE_MAX_LANES][2];
    uint64_t batch_count;
    /* Sink only. */
    omma_face *faces;
    int *counts;
    pthread_t worker, sink;
    int worker_started, sink_started;
};

struct rt_gpu_runtime {
    rt_runtime_config cfg;
    struct bus_pub *bus; /* cfg.publish: the frame bus (NULL: none) */
    int n_cams, n_gpus; /* n_cams: at the start */
    int cap; /* slots in cams: n_cams, or cfg.max_cameras */
    rt_cam *cams;
    rt_driver *drivers;
    int n_drivers;
    int *driver_cams; /* the drivers' camera lists, back to back */
    char *driver_done; /* the drivers' done flags, back to back */
    rt_gpu gpus[RT_MAX_GPUS];
    atomic_int stopping;
    pthread_mutex_t lock; /* threads_left, error, the cameras' slots */
    pthread_mutex_t place_lock; /* the GPUs' loads and camera counts */
    pthread_cond_t ended;
    int threads_left;
    omma_status error;
    char error_detail[512];
    pthread_t monitor;
    int monitor_started;
    /* Stats (relaxed atomics). */
    atomic_uint_fast64_t frames_in, frames_done, frames_dropped, faces, batches, launches;
    atomic_uint_fast64_t worker_cpu_ns, poses;
    uint64_t removed_decode_ns, removed_decode_cpu_ns; /* removed cameras' (lock) */
    core_cpu_split removed_cpu; /* removed cameras' (lock) */
};

/* runtime.c */
void rt_gpu_runtime_stop(rt_gpu_runtime *rt);
void rt_thread_ended(rt_gpu_runtime *rt);
void rt_fail(rt_gpu_runtime *rt, omma_status st, const char *detail);
int rt_stopping(const rt_gpu_runtime *rt);
/* Starts a thread named name and number k (k < 0: none), counted in
 * threads_left (reserved: already counted by the caller). */
omma_status rt_start_thread(rt_gpu_runtime *rt, pthread_t *t, void *(*fn)(void *), void *arg,
                            int *started, const char *name, int k, int reserved);
/* A camera's metrics registration (its name, GPU, decoder). */
omma_status rt_register_camera(rt_gpu_runtime *rt, const rt_cam *cam);

/* The camera's thread or driver stops putting frames: the runtime stops
 * or the camera is being removed. */
static inline int rt_cam_stopping(rt_cam *cam)
{
    return rt_stopping(cam->rt) || atomic_load_explicit(&cam->removing, memory_order_relaxed);
}

/* runtime_camera.c */
omma_status rt_cam_open(rt_gpu_runtime *rt, rt_cam *cam);
/* The ring, staging and upload stream on the camera's GPU (placed). */
omma_status rt_cam_prepare(rt_cam *cam);
void rt_cam_close(rt_cam *cam);
void *rt_cam_thread(void *arg); /* a source's camera */

/* A camera's state change: metrics and the on_camera callback. */
void rt_cam_report(rt_cam *cam, metrics_camera_state state, omma_status st, const char *detail);
/* The camera failed with st (omma_last_error() as the detail). */
void rt_cam_failed(rt_cam *cam, omma_status st);

/* Synthetic cameras are those without a spec. */
static inline int rt_cam_synthetic(const rt_cam *cam)
{
    return cam->cfg.spec == NULL;
}

/* "bus:NAME/I" cameras (runtime_bus_camera.c): 1 when spec is one. */
int rt_bus_spec(const char *spec);
/* Reads the camera's format from the bus (watching, no memory mapped). */
omma_status rt_bus_cam_open(rt_cam *cam);
/* Subscribes on the camera's GPU (after placement). */
omma_status rt_bus_cam_prepare(rt_cam *cam);
/* The camera thread's loop: each frame copied on the GPU into the ring. */
void rt_bus_cam_run(rt_cam *cam);
void rt_bus_cam_close(rt_cam *cam);
void *rt_synthetic_driver(void *arg); /* an rt_driver */
/* The camera's thread or driver is done with it (a remove waits for it). */
void rt_cam_let_go(rt_cam *cam);
/* The pool frame (modulo the pool's size) a synthetic camera's frame seq
 * (from 1) showed. */
long rt_cam_pool_frame(const rt_cam *cam, uint64_t seq);

/* runtime_worker.c */
omma_status rt_gpu_prepare(rt_gpu *g);
void rt_gpu_close(rt_gpu *g);
void *rt_gpu_worker(void *arg);
void *rt_gpu_sink(void *arg);
/* A camera has a frame ready, or its ring was closed. */
void rt_gpu_notify(rt_gpu *g, rt_cam *cam);

/* runtime_pose.c: pose in the step (cfg.pose), each a no-op without it. */
omma_status rt_pose_prepare(rt_gpu *g); /* the GPU's batched pose */
void rt_pose_close(rt_gpu *g);
/* Worker, after a submit: 1 when the batch keeps its items (b->items)
 * for pose instead of releasing them. */
int rt_pose_hold(rt_gpu *g, rt_batch *b, const rt_ring_item *items);
/* Sink, before completing the face step: pose on the batch's frames. */
omma_status rt_pose_run(rt_gpu *g, const rt_batch *b);
/* Sink, after: each pose to its face, then into result i. */
void rt_pose_attach(rt_gpu *g, const rt_batch *b, const omma_face *faces, const int *counts);
void rt_pose_result(rt_gpu *g, int i, rt_result *r);
/* Sink, last: the batch's items back to the worker to release (or
 * released here once the worker has ended). */
omma_status rt_pose_done(rt_gpu *g, rt_batch *b);
/* Worker, under the GPU's lock: releases the items handed back. */
omma_status rt_pose_release_held(rt_gpu *g);
/* Under the GPU's lock: whether a frame of camera `index` waits there to
 * be released (a live remove waits for it: runtime_live.c). */
int rt_pose_holds(const rt_gpu *g, int index);
/* Camera `index` is a new camera's (runtime_live.c): the sink forgets its
 * predecessor's people before its first batch. */
void rt_pose_forget(rt_gpu *g, int index);

/* runtime_live.c: rt_gpu_backend's add_camera, remove_camera,
 * interrupt_camera (runtime.h). */
omma_status rt_gpu_add_camera(void *impl, const rt_camera_config *cam, int *index);
omma_status rt_gpu_remove_camera(void *impl, int index);
void rt_gpu_interrupt_camera(void *impl, int index);

#endif
