/* Private: the multi-camera runtime, on GPUs or on the CPU (see "On the
 * CPU" below). Cameras, each captured by its own thread, feed GPU frame
 * rings (frame_ring.h); one worker thread per GPU
 * batches the newest ready frame of every camera placed on it and submits
 * the batch to its face pipeline without waiting on the GPU
 * (face_pipeline_async.h); one sink thread per GPU waits for each batch's
 * results in order and hands them to the caller's callback. Metrics go to
 * an metrics_registry registry (metrics.h).
 *
 * Cameras:
 *   - sources (source.h): video files, image sequences, V4L2 cameras.
 *     Frames are copied into pinned staging buffers (two per camera) and
 *     uploaded by the ring (one host-to-device copy per frame). Files block
 *     when their ring is full (nothing dropped), live cameras keep the
 *     newest frame (drops counted).
 *   - synthetic cameras: a synthetic pool per GPU (synthetic_pool.h) played
 *     at a given rate from each camera's own phase; pool frames in pinned
 *     memory are uploaded by the ring, in device memory handed over by
 *     reference (no copy). Live: keep the newest. A thread drives one or
 *     several of them (synthetic_per_thread), the groups' starts
 *     spread over detect_every frame periods.
 *
 * Batching: the worker runs a batch when max_batch cameras have a frame
 * ready, or when the oldest ready frame has waited max_wait_ms, whichever
 * comes first, and a lane of the pipeline is free (lanes = batches in
 * flight). A camera is in at most one batch in flight.
 *
 * On the CPU (pipeline.backend OMMA_BACKEND_CPU; runtime_cpu*.c, no GPU
 * needed): each camera's thread copies its frames into host buffers of its
 * own (three: the one it fills, the newest ready, the one being
 * processed); one worker takes the ready frame of every camera that has
 * one, oldest first, up to max_batch, runs them through the CPU face
 * pipeline (its models on pipeline.threads threads, all cores by default)
 * and reports them. A live camera (V4L2, synthetic) replaces a ready frame
 * the worker has not taken yet: that frame is dropped, counted in the next
 * result's `dropped` and the metrics. Files wait for the worker (nothing
 * dropped). Results have gpu -1 and the metrics register no GPU, no stage
 * times; the GPU fields (gpus, placement, ring_slots, lanes, graphs,
 * precision, pool_frames, pool_memory) are ignored, and so is max_wait_ms:
 * the worker runs whatever is ready as soon as it is free.
 *
 * Cameras added and removed while it runs (max_cameras):
 * rt_runtime_add_camera opens the camera and starts its thread as the
 * start gives each camera (on the GPUs: placed on one as the placement
 * says, least loaded or fewest cameras, its ring made there);
 * rt_runtime_remove_camera interrupts its source and returns once the
 * worker has reported its last frame and its resources are freed (on the
 * GPUs: no batch in flight holds its frames, its ring's device memory
 * freed). The other cameras' frames go on meanwhile. A published GPU
 * runtime (publish) has its cameras fixed at the start: it refuses
 * max_cameras.
 *
 * Shutdown: rt_runtime_stop (any thread; not async-signal-safe: from a
 * signal handler set a flag and call it from a thread) interrupts the
 * sources and closes the rings; frames already put are processed, results
 * delivered, then the threads end. rt_runtime_wait returns when every
 * thread has ended (all sources ended, or stop). */
#ifndef OMMA_RUNTIME_RUNTIME_H
#define OMMA_RUNTIME_RUNTIME_H

#include <stdint.h>

#include "omma/pipeline.h"
#include "omma/pose.h"
#include "io/image_file.h"
#include "metrics/metrics.h"
#include "runtime/source.h"
#include "runtime/synthetic_source.h"

#define RT_MAX_GPUS 16

typedef struct rt_runtime rt_runtime;

typedef enum rt_placement {
    RT_PLACE_ROUND_ROBIN = 0, /* camera i on GPU i mod n */
    RT_PLACE_LEAST_LOADED, /* each camera on the GPU with the fewest pixels
                            * per second so far */
} rt_placement;

typedef struct rt_camera_config {
    const char *spec; /* a source (source.h), or NULL: a synthetic camera */
    const char *name; /* metrics label; NULL: the spec, or "synthN" */
    long max_frames; /* stop after this many frames (0: until the end or stop) */
    io_recorder *record; /* --record: the camera's recorder (source.h's
                          * record; NULL: none); the caller's, closed after
                          * the runtime is destroyed */
    void *ctx; /* the caller's, in the camera's results and events */
} rt_camera_config;

/* One frame's results, to the result callback. */
typedef struct rt_result {
    int camera; /* index in the config */
    int gpu; /* index in the config's gpus; -1 on the CPU */
    uint64_t seq; /* frame number within the camera, from 1 */
    uint64_t capture_ns, done_ns; /* core_now_ns() */
    uint64_t dropped; /* frames of this camera dropped before this one */
    int n_faces;
    const omma_face *faces; /* valid during the callback */
    const omma_box *truth; /* synthetic cameras: the face's true box; else NULL */
    int width, height; /* the camera's frame size in pixels */
    double fps; /* the camera's nominal rate (0: unknown) */
    /* Pose (the config's pose.landmark_model set; else poses NULL and
     * n_poses 0): the people tracked in the frame, and for each the index
     * in faces of its face or -1 (vision/pose_attach.h's rule). */
    int n_poses;
    const omma_pose *poses; /* valid during the callback */
    const int *pose_face;
    /* Per face, its participant's name or NULL; NULL when the run has no
     * participants. The runtime leaves it NULL: omma stream's participants
     * (cli/stream_people.h) fill it in a copy for the outputs. */
    const char *const *participant;
    void *camera_ctx; /* its rt_camera_config's ctx */
} rt_result;

/* A camera's source ended (METRICS_CAMERA_ENDED) or failed (METRICS_CAMERA_FAILED,
 * with the error's status and detail). */
typedef struct rt_camera_event {
    int camera;
    metrics_camera_state state;
    omma_status status;
    const char *detail;
    void *camera_ctx; /* its rt_camera_config's ctx */
} rt_camera_event;

typedef struct rt_runtime_config {
    int n_cameras; /* 1..OMMA_PIPELINE_MAX_CAMERAS (0 with max_cameras) */
    const rt_camera_config *cameras;
    int max_cameras; /* cameras added live (rt_runtime_add_camera): room for
                      * this many at once, n_cameras..OMMA_PIPELINE_MAX_CAMERAS;
                      * the runtime then runs until stopped, with none left
                      * or none at the start. 0: none added, the runtime
                      * ends when its cameras have. The GPU runtime refuses
                      * it with publish (OMMA_ERR_UNSUPPORTED) */
    int n_gpus; /* 1..RT_MAX_GPUS (the CPU runtime ignores the GPUs) */
    const int *gpus; /* device ordinals, distinct */
    rt_placement placement;
    omma_face_pipeline_options pipeline; /* models, precision, max_faces,
                                          * detect_every, max_batch (the
                                          * batch size), lanes, graphs,
                                          * threads (CPU); backend picks
                                          * the runtime (CUDA: the GPUs,
                                          * CPU: see top); the device is
                                          * set per GPU */
    omma_pose_pipeline_options pose; /* body pose next to the faces in each
                                      * step (landmark_model NULL: none;
                                      * detector_model, landmark_model,
                                      * max_poses, min_detection_score,
                                      * min_presence, detect_every; backend,
                                      * device, precision and threads as
                                      * the face pipeline's). The GPU
                                      * runtime runs it batched on each
                                      * step's device frames
                                      * (runtime_pose.c) */
    int max_wait_ms; /* batching deadline, 0..10000 */
    int ring_slots; /* per camera, 2..RT_RING_MAX_SLOTS (4) */
    rt_source_options source; /* for the sources' cameras (its device is
                               * set per camera); decode GPU or AUTO puts
                               * a video camera on the GPU whose decoders
                               * decode it (round robin) */
    int measure_cpu; /* nonzero: each source camera's thread measures its
                      * CPU time by call kind (rt_runtime_stats.cpu; two
                      * thread-clock reads a call, ~20 a frame). 0 */
    int decode_gpu_streams; /* decode AUTO: 1080p30-equivalent streams
                             * (in pixels per second) each GPU's decoders
                             * take before further cameras decode on the
                             * CPU; 0: no limit (160: an H100 decodes 176
                             * 4 Mb/s H.264 1080p30 cameras with faces,
                             * omma bench decode) */
    /* Synthetic cameras. */
    const io_image *photo; /* NULL when there is none */
    rt_synthetic_options synthetic; /* size, fps, face box */
    int pool_frames; /* frames in each GPU's pool (one turn of the path) */
    int synthetic_per_thread; /* synthetic cameras driven by one thread,
                               * 1..4096 (1: a thread per camera, as the
                               * sources; more: fewer wake-ups for load
                               * tests of thousands of cameras) */
    omma_memory pool_memory; /* OMMA_MEMORY_HOST (pinned) or _DEVICE */
    /* Outputs (called from the GPUs' sink threads, or the CPU worker, and
     * the cameras' threads, concurrently: lock what they share). */
    const char *publish; /* GPU runtime: publish every camera's frames and
                          * faces on the frame bus under this name (NULL:
                          * not published; ipc/bus_publisher.h) */
    int publish_subscribers; /* subscribers at once, 1..64 (16) */
    int publish_holds; /* extra ring slots per subscriber (2): frames a
                        * subscriber holds are not overwritten */
    int publish_wait_ms; /* wait up to this long for a first subscriber
                          * before the cameras start (0: do not wait) */
    void (*on_result)(void *ctx, const rt_result *r);
    void (*on_camera)(void *ctx, const rt_camera_event *e);
    void *ctx;
    metrics_registry *metrics; /* NULL: none; else cameras and GPUs are
                                * registered in it, stages "step" */
    struct rt_preview *preview; /* the live view's previews (preview.h; at
                                 * least n_cameras (and max_cameras) of
                                 * them, outliving the runtime); NULL: none */
} rt_runtime_config;

/* Defaults: round-robin, pipeline defaults with the CUDA backend, batch 64,
 * 3 lanes, max_wait_ms 5, 4 ring slots, source defaults, synthetic
 * defaults, 64 pool frames in device memory, a thread per camera. */
void rt_runtime_config_init(rt_runtime_config *cfg);

/* The stage names the runtime times, for metrics_config. */
extern const char *const rt_runtime_stage_names[];
#define RT_RUNTIME_STAGES 1

/* Opens the GPUs, loads the models once per GPU, opens every source and
 * pool, creates the rings, and starts the threads (on the CPU: loads the
 * models once, opens the sources and their buffers, starts the threads).
 * A source that cannot be opened fails the start (the message names it).
 * Errors: OMMA_ERR_INVALID_ARG (the config, naming the field),
 * OMMA_ERR_NO_DEVICE (GPU backend), and those of the parts. *out NULL on
 * failure, nothing left running. */
omma_status rt_runtime_start(const rt_runtime_config *cfg, rt_runtime **out);

/* Asks every source to stop (see top). Any thread, idempotent. */
void rt_runtime_stop(rt_runtime *rt);

/* Waits until every thread has ended, up to timeout_ms (< 0: no limit).
 * OMMA_OK when they have, OMMA_ERR_TIMEOUT otherwise; then the first
 * runtime error if any (a GPU's step failing: its cameras stop). */
omma_status rt_runtime_wait(rt_runtime *rt, int timeout_ms);

/* Stops, waits, frees everything (device memory, threads joined). NULL ok. */
void rt_runtime_destroy(rt_runtime *rt);

/* Adds a camera while the runtime runs (cfg.max_cameras > 0), placed as
 * start-up places cameras: a source opened (a thread of its own) or a
 * synthetic camera (a thread of its own), registered in the metrics under
 * its name and given the lowest free index, written to *index: its
 * results' and events' `camera` until it is removed (a removed camera's
 * index is given to a later one, whose tracker starts afresh). The
 * runtime copies cam's strings. Errors: OMMA_ERR_INVALID_ARG (no room
 * left, max_cameras 0, a synthetic camera without a photo; naming the
 * camera), OMMA_ERR_CLOSED (stopping), those of opening the source and
 * (GPU runtime) of making its ring. *index
 * -1 on failure, nothing left of the camera. Any thread but the runtime's
 * callbacks; concurrently with the others of add and remove, stats,
 * metrics readers. */
omma_status rt_runtime_add_camera(rt_runtime *rt, const rt_camera_config *cam, int *index);

/* Removes camera `index` while the runtime runs (a start-up camera, too):
 * interrupts its source, waits until the worker has processed every frame
 * it had put and handed the results to on_result, then frees its source,
 * buffers and thread and unregisters it from the metrics. The other
 * cameras' frames go on meanwhile. Returns when it is gone. Errors:
 * OMMA_ERR_INVALID_ARG (no such camera, or being removed by another
 * call). Threads as rt_runtime_add_camera; not with rt_runtime_destroy. */
omma_status rt_runtime_remove_camera(rt_runtime *rt, int index);

/* Starts removing camera `index` without waiting: its source is
 * interrupted and its frames not yet taken by the worker are dropped
 * (counted; on the GPUs its ring is closed instead: the frames it holds,
 * ring_slots at most, are still processed); rt_runtime_remove_camera then
 * finishes (at most the batches in progress to wait for). For callers
 * that must not block (a cluster's release callback). No such camera:
 * nothing. */
void rt_runtime_interrupt_camera(rt_runtime *rt, int index);

/* What the runtime did so far (any thread). */
typedef struct rt_runtime_stats {
    uint64_t frames_in, frames_done, frames_dropped, faces;
    uint64_t poses; /* people with a pose reported (0 without pose) */
    uint64_t batches, launches; /* launches by the workers' submissions (0 on
                                 * the CPU) */
    uint64_t worker_cpu_ns; /* the workers' thread CPU time: waiting for
                             * frames and lanes, picking, taking, submitting */
    /* The GPUs' transfer counters (omma_device_get_transfers, summed): the
     * rings' uploads and the results, plus set-up copies (the pools). */
    uint64_t h2d_bytes, h2d_copies, d2h_bytes, d2h_copies;
    /* The video sources' time in their decoders' calls: elapsed and CPU
     * (io_video_stats; GPU runtime; the CPU with measure_cpu only). */
    uint64_t decode_ns, decode_cpu_ns;
    /* With measure_cpu: the source cameras' threads' CPU time by call kind
     * (core/cpu_parts.h; GPU runtime), zeros otherwise. */
    core_cpu_split cpu;
} rt_runtime_stats;
void rt_runtime_get_stats(rt_runtime *rt, rt_runtime_stats *out);

#endif
