/* The CPU backend's thread pool (cpu_pool.h): workers wait for a new job
 * generation, run their fixed part of it (or nothing when the job has
 * fewer parts), and the last one to finish wakes the caller. A model runs
 * tens of jobs back to back, so both sides spin briefly (CPU_POOL_SPIN_NS)
 * on the atomics before sleeping on the condition variables: a worker that
 * finished its part usually sees the next job within microseconds, without
 * a system call on either side. */
#define _POSIX_C_SOURCE 200809L /* sysconf */
#include "engine/cpu_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/error.h"

/* How long a worker waiting for a job, or the caller waiting for the
 * workers, checks the atomics before it sleeps. */
#define CPU_POOL_SPIN_NS 50000u

typedef struct pool_worker {
    cpu_pool *pool;
    int part; /* its part of every job: 1..threads-1 */
    pthread_t thread;
} pool_worker;

struct cpu_pool {
    int threads;
    int started; /* workers running */
    pool_worker *workers;
    pthread_mutex_t lock;
    pthread_cond_t go; /* a new job or quit (under lock) */
    pthread_cond_t done; /* every worker is done with the job (under lock) */
    /* The job: written by the caller before it publishes the generation
     * (release), read by the workers after they see it (acquire), and left
     * alone until every worker has decremented pending. */
    atomic_ulong generation;
    atomic_int pending; /* workers not done with the job */
    atomic_int quit;
    int parts;
    long count;
    cpu_pool_fn fn;
    void *arg;
};

int cpu_pool_resolve(int threads)
{
    if (threads > 0)
        return threads < CPU_POOL_MAX_THREADS ? threads : CPU_POOL_MAX_THREADS;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    if (n < 1)
        n = 1;
    return n < CPU_POOL_MAX_THREADS ? (int)n : CPU_POOL_MAX_THREADS;
}

static void part_range(long count, int parts, int k, long *begin, long *end)
{
    /* count * k cannot overflow: count is an element count of a tensor. */
    *begin = count * k / parts;
    *end = count * (k + 1) / parts;
}

/* Spins up to CPU_POOL_SPIN_NS until *v differs from `from`; returns
 * whether it did. */
static int spin_while_ulong(atomic_ulong *v, unsigned long from, const atomic_int *quit)
{
    uint64_t t0 = core_now_ns();
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(v, memory_order_acquire) != from ||
            atomic_load_explicit(quit, memory_order_relaxed))
            return 1;
        if (i % 64 == 0 && core_now_ns() - t0 > CPU_POOL_SPIN_NS)
            return 0;
    }
}

static int spin_while_positive(atomic_int *v)
{
    uint64_t t0 = core_now_ns();
    for (unsigned i = 1;; i++) {
        if (atomic_load_explicit(v, memory_order_acquire) <= 0)
            return 1;
        if (i % 64 == 0 && core_now_ns() - t0 > CPU_POOL_SPIN_NS)
            return 0;
    }
}

static void *worker_main(void *arg)
{
    pool_worker *w = arg;
    cpu_pool *p = w->pool;
    unsigned long seen = 0;
    for (;;) {
        if (!spin_while_ulong(&p->generation, seen, &p->quit)) {
            pthread_mutex_lock(&p->lock);
            while (atomic_load(&p->generation) == seen && !atomic_load(&p->quit))
                pthread_cond_wait(&p->go, &p->lock);
            pthread_mutex_unlock(&p->lock);
        }
        if (atomic_load(&p->quit))
            break;
        seen = atomic_load_explicit(&p->generation, memory_order_acquire);
        if (w->part < p->parts) {
            long begin, end;
            part_range(p->count, p->parts, w->part, &begin, &end);
            p->fn(p->arg, w->part, begin, end);
        }
        if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->lock);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->lock);
        }
    }
    return NULL;
}

omma_status cpu_pool_create(int threads, cpu_pool **out)
{
    if (!out)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cpu pool: out is NULL");
    *out = NULL;
    if (threads < 1 || threads > CPU_POOL_MAX_THREADS)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG, "cpu pool: %d threads not in 1..%d", threads,
                         CPU_POOL_MAX_THREADS);
    cpu_pool *p = calloc(1, sizeof *p);
    if (!p)
        return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "cpu pool of %d threads", threads);
    p->threads = threads;
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->go, NULL);
    pthread_cond_init(&p->done, NULL);
    if (threads > 1) {
        p->workers = calloc((size_t)threads - 1, sizeof *p->workers);
        if (!p->workers) {
            cpu_pool_destroy(p);
            return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "cpu pool of %d threads", threads);
        }
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    /* The kernels keep nothing big on the stack. */
    pthread_attr_setstacksize(&attr, 256 * 1024);
    for (int k = 1; k < threads; k++) {
        pool_worker *w = &p->workers[k - 1];
        w->pool = p;
        w->part = k;
        int rc = pthread_create(&w->thread, &attr, worker_main, w);
        if (rc != 0) {
            pthread_attr_destroy(&attr);
            cpu_pool_destroy(p);
            return OMMA_FAIL(OMMA_ERR_OUT_OF_MEMORY, "cpu pool: starting thread %d of %d: %s", k,
                             threads, strerror(rc));
        }
        p->started++;
    }
    pthread_attr_destroy(&attr);
    *out = p;
    return OMMA_OK;
}

void cpu_pool_destroy(cpu_pool *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->lock);
    atomic_store(&p->quit, 1);
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->lock);
    for (int k = 0; k < p->started; k++)
        pthread_join(p->workers[k].thread, NULL);
    pthread_cond_destroy(&p->go);
    pthread_cond_destroy(&p->done);
    pthread_mutex_destroy(&p->lock);
    free(p->workers);
    free(p);
}

int cpu_pool_threads(const cpu_pool *p)
{
    return p ? p->threads : 1;
}

void cpu_pool_run(cpu_pool *p, long count, long grain, cpu_pool_fn fn, void *arg)
{
    if (count <= 0)
        return;
    if (grain < 1)
        grain = 1;
    long parts = count / grain;
    if (!p || p->threads < 2 || parts < 2) {
        fn(arg, 0, 0, count);
        return;
    }
    if (parts > p->threads)
        parts = p->threads;
    /* Every worker takes part in every job (those beyond `parts` with
     * nothing to do), so that none can read the fields of a later job. */
    p->parts = (int)parts;
    p->count = count;
    p->fn = fn;
    p->arg = arg;
    atomic_store_explicit(&p->pending, p->threads - 1, memory_order_relaxed);
    pthread_mutex_lock(&p->lock);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_cond_broadcast(&p->go);
    pthread_mutex_unlock(&p->lock);
    long begin, end;
    part_range(count, (int)parts, 0, &begin, &end);
    fn(arg, 0, begin, end);
    if (spin_while_positive(&p->pending))
        return;
    pthread_mutex_lock(&p->lock);
    while (atomic_load(&p->pending) > 0)
        pthread_cond_wait(&p->done, &p->lock);
    pthread_mutex_unlock(&p->lock);
}
