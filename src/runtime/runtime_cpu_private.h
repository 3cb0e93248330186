/* Private to the CPU runtime's files: runtime_cpu.c (set-up, the worker,
 * stop, wait, stats: rt_cpu_backend of runtime_backend.h) and
 * runtime_cpu_camera.c (each camera's frame slots and capture thread, the
 * synthetic cameras' drivers). No GPU header here: a build without CUDA
 * compiles these files.
 *
 * Frames move through three host buffers per camera: the camera's thread
 * fills `write` (packed copy of the source's frame) and swaps it with
 * `ready` under the runtime's lock; the worker swaps `ready` with `work`
 * and runs the pipeline on `work` outside the lock. A live camera replaces
 * a ready frame the worker has not taken yet (the worker sees the gap in
 * seq and counts it dropped); a file waits until the worker took it.
 *
 * Cameras added and removed live (rt_runtime_add_camera): the cameras'
 * array has room for max_cameras from the start (the worker and the
 * cameras' threads hold pointers into it); a slot is free, reserved (being
 * opened by an add), running or being removed (state, under the lock).
 * Removing interrupts the camera's source (its thread or driver then ends
 * it as a source that ended: closed), waits until the worker drained it
 * (closed, nothing ready, no frame of it in a batch: in_work 0), then frees
 * it. */
#ifndef OMMA_RUNTIME_RUNTIME_CPU_PRIVATE_H
#define OMMA_RUNTIME_RUNTIME_CPU_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "runtime/runtime.h"
#include "runtime/runtime_link.h"
#include "runtime/synthetic_source.h"

typedef struct rt_cpu_runtime rt_cpu_runtime;

/* A host frame buffer: a packed copy of one frame and what came with it. */
typedef struct rt_cpu_frame {
    uint8_t *data;
    size_t bytes; /* allocated */
    omma_frame frame; /* planes into data, packed pitches */
    uint64_t seq; /* from 1 */
    uint64_t capture_ns;
    int has_truth;
    omma_box truth; /* synthetic cameras: the face's true box */
} rt_cpu_frame;

typedef enum rt_cpu_slot {
    RT_CPU_SLOT_FREE = 0,
    RT_CPU_SLOT_RESERVED, /* an add opens it, outside the lock */
    RT_CPU_SLOT_RUNNING,
    RT_CPU_SLOT_REMOVING, /* a remove waits for its last frame */
} rt_cpu_slot;

typedef struct rt_cpu_driver rt_cpu_driver;

typedef struct rt_cpu_cam {
    rt_cpu_runtime *rt;
    int index;
    rt_camera_config cfg;
    char *spec_copy, *name_copy; /* an added camera's: cfg's strings */
    rt_cpu_driver *own; /* an added synthetic camera's driver (one camera) */
    atomic_int removing; /* its source's thread or driver ends it */
    rt_source *src; /* NULL: synthetic */
    rt_link_watch link; /* its status to the metrics (runtime_link.h) */
    int live;
    long phase; /* synthetic: its first frame index on the path */
    double fps; /* nominal rate, 0 when unknown (rt_result) */
    rt_cpu_frame bufs[3];
    pthread_t thread;
    int started;
    /* Camera thread (or driver) only. */
    int write; /* index in bufs */
    uint64_t seq_put; /* frames put so far */
    /* Under the runtime's lock. */
    rt_cpu_slot state;
    int in_work; /* a frame of it is in the worker's batch */
    int fresh; /* added into a slot: its tracker is reset before its first batch */
    int ready, work; /* indices in bufs */
    int has_ready; /* bufs[ready] holds a frame not taken yet */
    int queued; /* in the ready list */
    int closed; /* no frame will come after the ready one */
    int drained; /* the worker saw it closed with nothing ready */
    /* Worker only. */
    uint64_t last_seq; /* the last frame taken */
} rt_cpu_cam;

/* A thread driving synthetic cameras (synthetic_per_thread of them) with
 * one synthetic source rendering each camera's frames in turn. */
struct rt_cpu_driver {
    rt_cpu_runtime *rt;
    int *cams, count;
    char *done; /* per camera: ended or removed; the driver no longer touches it */
    rt_synthetic *synth;
    pthread_t thread;
    int started;
    int one_cam; /* an added camera's own driver: cams, done point here */
    char one_done;
};

struct rt_cpu_runtime {
    rt_runtime_config cfg;
    int n_cams; /* at the start */
    int cap; /* slots in cams: n_cams, or cfg.max_cameras */
    rt_cpu_cam *cams;
    rt_cpu_driver *drivers;
    int n_drivers;
    int *driver_cams;
    char *driver_done;
    omma_face_pipeline *pipe;
    omma_pose_pipeline *pose; /* cfg.pose's; NULL: no pose */
    pthread_t worker;
    int worker_started;
    atomic_int stopping;
    pthread_mutex_t lock; /* the cameras' slots, the ready list, the counts below */
    pthread_cond_t wake; /* worker: a frame ready, a camera closed */
    pthread_cond_t taken; /* file cameras: the worker took a ready frame; stop */
    pthread_cond_t ended; /* threads_left went down */
    int *ready_list; /* ring of camera indices with a frame ready or closed */
    int ready_head, ready_count;
    int open_cams; /* cameras not drained */
    int removals; /* removes under way: the worker tells `taken` after each batch */
    int worker_done;
    int threads_left;
    omma_status error;
    char error_detail[512];
    /* Stats (relaxed atomics). */
    atomic_uint_fast64_t frames_in, frames_done, frames_dropped, faces, poses, batches;
    atomic_uint_fast64_t worker_cpu_ns;
};

/* runtime_cpu.c */
int rt_cpu_stopping(const rt_cpu_runtime *rt);
void rt_cpu_thread_ended(rt_cpu_runtime *rt);
/* Records the first error and stops the runtime. */
void rt_cpu_fail(rt_cpu_runtime *rt, omma_status st, const char *detail);

/* runtime_cpu_camera.c */
/* Opens the camera's source (or the synthetic camera's size) and its
 * buffers. */
omma_status rt_cpu_cam_open(rt_cpu_runtime *rt, rt_cpu_cam *cam);
void rt_cpu_cam_close(rt_cpu_cam *cam);
void *rt_cpu_cam_thread(void *arg); /* a source's camera */
void *rt_cpu_synthetic_driver(void *arg); /* an rt_cpu_driver */
/* The camera's end: no frame of it will come after its ready one. */
void rt_cpu_cam_end(rt_cpu_cam *cam);
/* Under the runtime's lock: puts the camera in the ready list (once). */
void rt_cpu_cam_queue(rt_cpu_cam *cam);

#endif
