/* placeholder: replaced by the real command */
#include <stdio.h>
int cli_bench_engine(int argc, char **argv);
int cli_bench_engine(int argc, char **argv) { (void)argc; (void)argv; fprintf(stderr, "not built yet\n"); return 1; }
