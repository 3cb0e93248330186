/* Private: the CPU backend's thread pool. A pool of T threads is the
 * calling thread plus T - 1 workers that sleep on a condition variable
 * between jobs. A job splits an index range [0, count) into at most T
 * contiguous parts, part k always [count * k / parts, count * (k + 1) /
 * parts), runs part 0 on the caller and the others on the workers, and
 * returns when every part is done. The kernels compute each output element
 * with the same loop nest whichever part holds it, so results are bitwise
 * those of one thread whatever T is.
 *
 * Threads: a pool runs one job at a time; its owner (one exec, used by one
 * thread at a time) serialises the calls. Create and destroy from that
 * owner. */
#ifndef OMMA_ENGINE_CPU_POOL_H
#define OMMA_ENGINE_CPU_POOL_H

#include "omma/status.h"

#define CPU_POOL_MAX_THREADS 256

typedef struct cpu_pool cpu_pool;

/* The threads that `threads` asks for: itself when 1..CPU_POOL_MAX_THREADS,
 * the online CPUs (sysconf(_SC_NPROCESSORS_ONLN), at most
 * CPU_POOL_MAX_THREADS) when 0. */
int cpu_pool_resolve(int threads);

/* A pool of `threads` threads in all (1..CPU_POOL_MAX_THREADS; 1 starts no
 * worker). Errors: OMMA_ERR_INVALID_ARG (out of range, NULL out),
 * OMMA_ERR_OUT_OF_MEMORY (allocating, pthread_create failing: the workers
 * already started are stopped). On failure *out is NULL. */
omma_status cpu_pool_create(int threads, cpu_pool **out);

/* Stops and joins the workers, frees the pool; NULL is ignored. */
void cpu_pool_destroy(cpu_pool *p);

/* Threads in all (1 for NULL). */
int cpu_pool_threads(const cpu_pool *p);

/* A part of a job: indices [begin, end) of the range, `part` its number
 * (0..parts-1: per-part scratch). */
typedef void (*cpu_pool_fn)(void *arg, int part, long begin, long end);

/* Runs fn over [0, count) in min(threads, count / grain) parts (at least
 * one; grain >= 1 is the fewest indices worth a thread of their own) and
 * returns when all are done. A NULL pool runs fn(arg, 0, 0, count) on the
 * caller. count <= 0 does nothing. fn must not fail. */
void cpu_pool_run(cpu_pool *p, long count, long grain, cpu_pool_fn fn, void *arg);

#endif
