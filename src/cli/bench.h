/* The benchmark families of `omma bench`; each returns an exit code. */
#ifndef OMMA_CLI_BENCH_H
#define OMMA_CLI_BENCH_H

int cli_bench_context(int argc, char **argv); /* bench_context.c */
int cli_bench_engine(int argc, char **argv);  /* bench_engine.c */
int cli_bench_pipeline(int argc, char **argv); /* bench_pipeline.c */

#endif
