/* omma bench: dispatches to the benchmark families. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench.h"
#include "cli/commands.h"

int cli_parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

int cli_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int cli_bench(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "context") == 0)
        return cli_bench_context(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "engine") == 0)
        return cli_bench_engine(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "pipeline") == 0)
        return cli_bench_pipeline(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "runtime") == 0)
        return cli_bench_runtime(argc - 1, argv + 1);
    fprintf(stderr,
            "usage: omma bench context [--json]\n"
            "       omma bench engine --backend cpu --model FILE [--batch 1,8] [--json]\n"
            "       omma bench pipeline [--cameras N] [--resolution WxH] [--faces F] [--json]\n"
            "       omma bench runtime [--cameras N,...] [--fps F] [--pool device|pinned] "
            "[--json]\n");
    return CLI_EXIT_USAGE;
}
