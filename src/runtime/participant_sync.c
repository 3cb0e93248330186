/* Pairwise synchrony over time-aligned frame sets (participant_sync.h). */
#include "runtime/participant_sync.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static const char *const signal_names[VIS_MEASURE_COUNT] = {
    "yaw", "pitch", "roll", "right_eye_open", "left_eye_open", "mouth_open", "mouth_width"};

struct rt_psync {
    pthread_mutex_t lock;
    int n, pairs, comod;
    vis_sync **pair; /* [pairs] */
    float (*value)[VIS_MEASURE_COUNT]; /* [n]: each participant's latest */
    int *fresh; /* [n]: pushed since the last sample */
    uint64_t latest_ns;
};

void rt_psync_destroy(rt_psync *s)
{
    if (!s)
        return;
    for (int i = 0; s->pair && i < s->pairs; i++)
        vis_sync_destroy(s->pair[i]);
    free(s->pair);
    free(s->value);
    free(s->fresh);
    pthread_mutex_destroy(&s->lock);
    free(s);
}

omma_status rt_psync_create(int n, int window, const vis_comod_params *comod, rt_psync **out)
{
    *out = NULL;
    if (n < 2 || n > 16)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "synchrony needs 2..16 participants, not %d", n);
    rt_psync *s = calloc(1, sizeof *s);
    if (!s)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "synchrony: out of memory");
    pthread_mutex_init(&s->lock, NULL);
    s->n = n;
    s->pairs = n * (n - 1) / 2;
    s->comod = comod != NULL;
    s->pair = calloc((size_t)s->pairs, sizeof *s->pair);
    s->value = calloc((size_t)n, sizeof *s->value);
    s->fresh = calloc((size_t)n, sizeof *s->fresh);
    if (!s->pair || !s->value || !s->fresh) {
        rt_psync_destroy(s);
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "synchrony: out of memory");
    }
    for (int i = 0; i < s->pairs; i++) {
        omma_status st = vis_sync_create(VIS_MEASURE_COUNT, window, comod, &s->pair[i]);
        if (st != OMMA_OK) {
            rt_psync_destroy(s);
            return st;
        }
    }
    *out = s;
    return OMMA_OK;
}

int rt_psync_channels(const rt_psync *s)
{
    return s->pairs * VIS_MEASURE_COUNT * (s->comod ? 2 : 1);
}

void rt_psync_channel(const rt_psync *s, int ch, int *a, int *b, const char **signal, int *comod)
{
    int per = VIS_MEASURE_COUNT * (s->comod ? 2 : 1), k = ch / per, rest = ch % per;
    *a = 0, *b = 1;
    for (int i = 0, m = 0; i < s->n; i++)
        for (int j = i + 1; j < s->n; j++, m++)
            if (m == k)
                *a = i, *b = j;
    *signal = signal_names[rest % VIS_MEASURE_COUNT];
    *comod = rest >= VIS_MEASURE_COUNT;
}

void rt_psync_label(const rt_psync *s, const char *const *names, int ch, char *out, size_t cap)
{
    int a, b, comod;
    const char *signal;
    rt_psync_channel(s, ch, &a, &b, &signal, &comod);
    snprintf(out, cap, "%s-%s_%s_%s", names[a], names[b], signal, comod ? "comod" : "r");
}

int rt_psync_push(rt_psync *s, int p, const float *signals, uint64_t t_ns, float *out,
                  uint64_t *time_ns)
{
    if (p < 0 || p >= s->n)
        return 0;
    pthread_mutex_lock(&s->lock);
    memcpy(s->value[p], signals, sizeof s->value[p]);
    s->fresh[p] = 1;
    if (t_ns > s->latest_ns)
        s->latest_ns = t_ns;
    int all = 1;
    for (int i = 0; i < s->n; i++)
        all &= s->fresh[i];
    if (all) {
        int per = VIS_MEASURE_COUNT * (s->comod ? 2 : 1);
        for (int i = 0, m = 0; i < s->n; i++)
            for (int j = i + 1; j < s->n; j++, m++) {
                float *o = out + (size_t)m * (size_t)per;
                vis_sync_push(s->pair[m], s->value[i], s->value[j], o,
                              s->comod ? o + VIS_MEASURE_COUNT : NULL);
            }
        memset(s->fresh, 0, (size_t)s->n * sizeof *s->fresh);
        *time_ns = s->latest_ns;
    }
    pthread_mutex_unlock(&s->lock);
    return all;
}
