/* Private: a thread's CPU time split by the kind of call it spent it in,
 * for omma bench decode's breakdown of a GPU-decoded camera's CPU per
 * frame (demuxing, the conversion to Annex B, NVIDIA's parser, the decode
 * submissions, the status queries, mapping, the ring's copy, pacing...).
 *
 * A core_cpu_parts has one writer (the thread whose time it counts: a
 * camera's thread) and any number of readers (the stats): relaxed atomics,
 * added without a read-modify-write. Each measured call costs two reads of
 * the thread's CPU clock (CLOCK_THREAD_CPUTIME_ID: a system call; 4 to
 * 5 us each on the 2-core build machine), so the callers measure only when
 * given a core_cpu_parts (NULL: nothing is measured, no clock is read). */
#ifndef OMMA_CORE_CPU_PARTS_H
#define OMMA_CORE_CPU_PARTS_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/clock.h"

typedef enum core_cpu_part {
    CORE_CPU_DEMUX, /* libavformat's av_read_frame (calls: packets) */
    CORE_CPU_ANNEXB, /* MP4's H.264 / HEVC to Annex B (io/annexb.c; calls: packets) */
    CORE_CPU_PARSE, /* cuvidParseVideoData, less the submissions it made (calls: buffers) */
    CORE_CPU_SUBMIT, /* cuvidDecodePicture in the parser's callback (calls: pictures) */
    CORE_CPU_STATUS, /* cuvidGetDecodeStatus (calls: queries) */
    CORE_CPU_DECODE_WAIT, /* sleeping until NVDEC is done with a picture (calls: wake-ups) */
    CORE_CPU_MAP, /* cuvidMapVideoFrame (calls: maps) */
    CORE_CPU_UNMAP, /* giving frames back: the events, cuvidUnmapVideoFrame (calls: unmaps) */
    CORE_CPU_COPY, /* the ring slot's copy: planning and submitting it (calls: frames) */
    CORE_CPU_PACE, /* waiting for a file frame's time (calls: wake-ups) */
    CORE_CPU_HANDOFF, /* telling the GPU's worker a frame is in (calls: frames) */
    CORE_CPU_THREAD, /* the whole thread, frame by frame, the above included (calls: frames) */
    CORE_CPU_PARTS
} core_cpu_part;

typedef struct core_cpu_parts {
    atomic_uint_fast64_t ns[CORE_CPU_PARTS], calls[CORE_CPU_PARTS];
} core_cpu_parts;

/* A copy to add up and compare. */
typedef struct core_cpu_split {
    uint64_t ns[CORE_CPU_PARTS], calls[CORE_CPU_PARTS];
} core_cpu_split;

/* Short names for reports and JSON keys ("demux", "decode_wait", ...). */
const char *core_cpu_part_name(core_cpu_part k);

/* Zeros (before the first use; a memset is not an atomic's initialization). */
void core_cpu_parts_init(core_cpu_parts *p);

/* Adds p's counts to *sum (any thread). */
void core_cpu_parts_add_to(const core_cpu_parts *p, core_cpu_split *sum);

/* The calling thread's CPU clock when p measures, else 0 (no clock read). */
static inline uint64_t core_cpu_mark(const core_cpu_parts *p)
{
    return p ? core_thread_cpu_ns() : 0;
}

/* Adds ns and calls to part k (p's writer only). */
static inline void core_cpu_add(core_cpu_parts *p, core_cpu_part k, uint64_t ns, uint64_t calls)
{
    if (!p)
        return;
    atomic_store_explicit(&p->ns[k], atomic_load_explicit(&p->ns[k], memory_order_relaxed) + ns,
                          memory_order_relaxed);
    atomic_store_explicit(&p->calls[k],
                          atomic_load_explicit(&p->calls[k], memory_order_relaxed) + calls,
                          memory_order_relaxed);
}

/* Adds the CPU time since *mark (core_cpu_mark) and one call to part k;
 * *mark becomes now, for the next part. */
static inline void core_cpu_lap(core_cpu_parts *p, core_cpu_part k, uint64_t *mark)
{
    if (!p)
        return;
    uint64_t now = core_thread_cpu_ns();
    core_cpu_add(p, k, now > *mark ? now - *mark : 0, 1);
    *mark = now;
}

#endif
