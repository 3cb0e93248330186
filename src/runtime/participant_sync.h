/* Private: synchrony of every pair of participants, once per time-aligned
 * set of frames (docs/OUTPUT.md, CoModulation). Each participant's facial
 * signals (VIS_MEASURE_COUNT: vision/face_measures.h) arrive with its
 * camera's frames; when every participant has a value newer than the last
 * sample (each camera has delivered a frame since), one sample is made:
 * for every pair (i < j, in participant order) the windowed correlation of
 * each signal (vision/synchrony.h), then, with co-modulation on, each
 * signal's co-modulation magnitude. Its time is the latest capture time of
 * the set. Internally locked: any thread may push. */
#ifndef OMMA_RUNTIME_PARTICIPANT_SYNC_H
#define OMMA_RUNTIME_PARTICIPANT_SYNC_H

#include <stddef.h>
#include <stdint.h>

#include "omma/status.h"
#include "vision/face_measures.h"
#include "vision/synchrony.h"

typedef struct rt_psync rt_psync;

/* n participants (2..16); window in samples; comod NULL: correlation only. */
omma_status rt_psync_create(int n, int window, const vis_comod_params *comod, rt_psync **out);
void rt_psync_destroy(rt_psync *s);

/* Channels of a sample: pairs x signals x (1, or 2 with co-modulation). */
int rt_psync_channels(const rt_psync *s);

/* The label of channel ch: "A-B_yaw_r", "A-B_yaw_comod" (names[i] the
 * participants' names). */
void rt_psync_label(const rt_psync *s, const char *const *names, int ch, char *out, size_t cap);

/* Channel ch's pair (participants *a < *b), signal name ("yaw", ...) and
 * kind (*comod 0: the correlation, 1: the co-modulation magnitude). */
void rt_psync_channel(const rt_psync *s, int ch, int *a, int *b, const char **signal, int *comod);

/* Participant p's signals (NaN when its face is missing) at capture time
 * t_ns. Returns 1 when that completed a set: out[channels] and *time_ns
 * then hold the sample. */
int rt_psync_push(rt_psync *s, int p, const float *signals, uint64_t t_ns, float *out,
                  uint64_t *time_ns);

#endif
