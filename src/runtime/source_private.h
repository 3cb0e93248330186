/* Private: the capture source's shared object and its kinds. source.c owns
 * the public calls: arguments, the busy flag, sticky errors and the end,
 * the interrupt flag and pacing; each kind's file (source_video.c,
 * source_images.c, source_v4l2.c) opens its input and reads frames. */
#ifndef OMMA_RUNTIME_SOURCE_PRIVATE_H
#define OMMA_RUNTIME_SOURCE_PRIVATE_H

#include <pthread.h>
#include <stdatomic.h>

#include "runtime/source.h"

/* A kind: read gives the next frame with its time from the start of the
 * stream (files; kept increasing across loops) or its capture time
 * (cameras: *capture_ns), or *eof; close frees the kind's state (also a
 * partly opened one). */
typedef struct src_ops {
    omma_status (*read)(rt_source *s, omma_frame *frame, double *ts_ms, uint64_t *capture_ns,
                        int *eof);
    void (*close)(rt_source *s);
    void *(*stream)(const rt_source *s); /* NULL: frames in host memory */
    void (*video_stats)(const rt_source *s, io_video_stats *out); /* NULL: not a video */
} src_ops;

struct rt_source {
    rt_source_info info;
    rt_source_options opt;
    char *spec; /* the spec whole, for messages */
    const src_ops *ops;
    void *impl; /* the kind's state */
    long index; /* frames handed out so far */

    /* The first frame of a file, read by open, handed out by the first read. */
    int have_first;
    omma_frame first;
    double first_ts_ms;

    /* Pacing: frame times count from the first read. */
    int started;
    uint64_t start_ns;
    double start_ts_ms;

    atomic_int interrupted;
    atomic_int busy;
    pthread_mutex_t lock; /* with wake: the pacing wait, woken by interrupt */
    pthread_cond_t wake;

    /* The first frame's capture time (live sources that read one at open). */
    uint64_t first_capture_ns;

    /* Videos: the frame's pts in its stream's ticks (io_video_last_pts),
     * for the recorder; the first frame's, read at open. */
    int64_t pts, first_pts;

    pthread_mutex_t status_lock; /* status, between the reader and any thread */
    rt_source_status status;

    omma_status error; /* sticky, replayed with error_text */
    char *error_text;
    int ended;
};

/* Each fills s->info (but kind, name, live), s->ops and s->impl, and the
 * first frame for files. On failure the caller calls s->ops->close when
 * s->ops is set. */
omma_status src_video_open(rt_source *s);
omma_status src_images_open(rt_source *s);
omma_status src_v4l2_open(rt_source *s);

omma_status src_network_open(rt_source *s);

/* Sets the link's state, attempt and error (NULL: keep; "" clears) and
 * tells the observer (on the calling thread). */
void src_set_link(rt_source *s, rt_link_state state, int attempt, const char *error);

/* Sets the damage counts (all connections or loops so far) and tells the
 * observer when they changed. */
void src_set_damage(rt_source *s, long damaged_frames, long dropped_packets);

/* Sets where capture times come from (1: the stream's wall clock, 0:
 * arrival) and tells the observer when it changed. */
void src_set_clock(rt_source *s, int stream_clock);

/* 1 when the interrupt flag is up. */
int src_interrupted(rt_source *s);

#endif
