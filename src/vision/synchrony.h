/* Private: synchrony between two participants' facial signals, one pair
 * at a time (docs/OUTPUT.md, CoModulation). Each push gives both people's
 * values of the same C signals (the same frame time) and returns, per
 * signal:
 *
 * - r: the Pearson correlation of the two signals over the last W pushes
 *   (the window), counting only pushes where both values are finite:
 *     r = sum (a - mean a)(b - mean b) / sqrt(sum (a - mean a)^2 sum (b - mean b)^2)
 *   NaN until the window holds at least W/2 (at least 3) such pairs, or
 *   when either signal is constant over it.
 *
 * - comod (optional): the co-modulation detector of the lab's previous
 *   tool (its ChannelCorrelator), per signal: three components on a fast
 *   window F (60 pushes) and a slow one S (300, 5 F), max-combined:
 *     transient: smoothed derivatives d = k (x - x_prev) + (1 - k) d_prev of
 *       both people (k 0.3); when |d_a|, |d_b| > Td (0.03) with the same
 *       sign and similarity s = 1 - ||d_a| - |d_b|| / (|d_a| + |d_b| + 1e-6)
 *       > 0.7, T = max(0.8 T, (|d_a| + |d_b|) / 2 s), else T = 0.8 T
 *     brief: slow deviations e = x - mean over S; when |e_a|, |e_b| > D
 *       (0.005) and |e_a - e_b| < M (0.6), B = max(0.9 B, m) with
 *       m = (|e_a| + |e_b|) / 2, else B = 0.9 B
 *     sustained: a latch entered when the brief condition holds, m > D and
 *       both fast deviations |x - mean over F| < D/2 (stable), holding the
 *       largest m while the brief condition holds; left when the brief
 *       condition fails, or when stable and both |e| were < D/2 within
 *       the last R pushes (R = the frame rate, one second)
 *     comod = max(T, B, latched ? U : 0)
 *   NaN until S pushes with both values finite have been seen. A push
 *   where either value is not finite leaves that signal's state as it was
 *   and gives NaN for it. */
#ifndef OMMA_VISION_SYNCHRONY_H
#define OMMA_VISION_SYNCHRONY_H

#include "omma/status.h"

typedef struct vis_comod_params {
    int fast, slow; /* windows in pushes (60, 300) */
    double delta; /* D (0.005) */
    double similarity; /* M (0.6) */
    double derivative; /* Td (0.03) */
    double smooth; /* k (0.3) */
    double transient_decay, brief_decay; /* 0.8, 0.9 */
    int neutral_pushes; /* R (30: one second at 30 Hz) */
} vis_comod_params;

void vis_comod_params_init(vis_comod_params *p);

typedef struct vis_sync vis_sync;

/* A pair's state for `signals` signals (1..64), window 2..100000 pushes;
 * comod NULL: correlation only. */
omma_status vis_sync_create(int signals, int window, const vis_comod_params *comod, vis_sync **out);
void vis_sync_destroy(vis_sync *s);

/* One time-aligned pair of samples a[signals], b[signals]: r[signals] gets
 * the correlations; comod[signals] (ignored when made without comod; may
 * be NULL) the co-modulation magnitudes. One thread at a time. */
void vis_sync_push(vis_sync *s, const float *a, const float *b, float *r, float *comod);

#endif
