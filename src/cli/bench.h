/* The benchmark families of `omma bench`; each returns an exit code. */
#ifndef OMMA_CLI_BENCH_H
#define OMMA_CLI_BENCH_H

#include <stddef.h>

int cli_bench_context(int argc, char **argv); /* bench_context.c */
int cli_bench_engine(int argc, char **argv); /* bench_engine.c */
int cli_bench_pipeline(int argc, char **argv); /* bench_pipeline.c */
int cli_bench_runtime(int argc, char **argv); /* bench_runtime.c */
int cli_bench_bus(int argc, char **argv); /* bench_bus.c */
int cli_bench_decode(int argc, char **argv); /* bench_decode.c */
int cli_bench_lsl(int argc, char **argv); /* bench_lsl.c */
int cli_bench_sink(int argc, char **argv); /* bench_sink.c */

/* Helpers shared by the families (bench.c). */

/* *out = s as a decimal int in lo..hi; 0 on success, -1 otherwise. */
int cli_parse_int(const char *s, int lo, int hi, int *out);

/* qsort comparator of doubles, ascending. */
int cli_cmp_double(const void *a, const void *b);

/* The p-quantile (0..1, nearest rank) of v[0..n), which it sorts; 0 when
 * n is 0. */
double cli_percentile(double *v, size_t n, double p);

#endif
