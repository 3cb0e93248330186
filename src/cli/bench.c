/* omma bench: dispatches to the benchmark families. */
#include <stdio.h>
#include <string.h>

#include "cli/bench.h"
#include "cli/commands.h"

int cli_bench(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "context") == 0)
        return cli_bench_context(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "engine") == 0)
        return cli_bench_engine(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "pipeline") == 0)
        return cli_bench_pipeline(argc - 1, argv + 1);
    fprintf(stderr,
            "usage: omma bench context [--json]\n"
            "       omma bench engine --backend cpu --model FILE [--batch 1,8] [--json]\n"
            "       omma bench pipeline [--cameras N] [--resolution WxH] [--faces F] [--json]\n");
    return CLI_EXIT_USAGE;
}
