/* omma bench context|pipeline|runtime|bus in a build without CUDA
 * (OMMA_CUDA=OFF): they measure the GPU only, so they exit 3 and say why.
 * omma bench engine --backend cpu works in both builds (bench_engine.c). */
#include <stdio.h>

#include "cli/bench.h"
#include "cli/commands.h"

static int no_gpu(const char *family)
{
    fprintf(stderr,
            "omma: error: omma bench %s needs a GPU: omma was built without CUDA "
            "(OMMA_CUDA=OFF)\n",
            family);
    return CLI_EXIT_NO_DEVICE;
}

int cli_bench_context(int argc, char **argv)
{
    (void)argc, (void)argv;
    return no_gpu("context");
}

int cli_bench_pipeline(int argc, char **argv)
{
    (void)argc, (void)argv;
    return no_gpu("pipeline");
}

int cli_bench_runtime(int argc, char **argv)
{
    (void)argc, (void)argv;
    return no_gpu("runtime");
}

int cli_bench_bus(int argc, char **argv)
{
    (void)argc, (void)argv;
    return no_gpu("bus");
}
