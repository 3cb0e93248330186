/* omma bench context|pipeline|runtime|bus|decode in a build without CUDA
 * (OMMA_CUDA=OFF): they measure the GPU only, so they exit 3 and say why.
 * omma bench engine --backend cpu works in both builds (bench_engine.c). */
#include <stdio.h>
#include <string.h>

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

/* --help still answers (on stdout, exit 0), saying what is missing. */
static int no_gpu_or_help(const char *family, int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            printf("usage: omma bench %s [OPTIONS]\n"
                   "  Measures the GPU; this omma was built without CUDA (OMMA_CUDA=OFF), so\n"
                   "  it exits 3. Build with the CUDA toolkit for its options.\n",
                   family);
            return CLI_EXIT_OK;
        }
    return no_gpu(family);
}

int cli_bench_context(int argc, char **argv)
{
    return no_gpu_or_help("context", argc, argv);
}

int cli_bench_pipeline(int argc, char **argv)
{
    return no_gpu_or_help("pipeline", argc, argv);
}

int cli_bench_runtime(int argc, char **argv)
{
    return no_gpu_or_help("runtime", argc, argv);
}

int cli_bench_bus(int argc, char **argv)
{
    return no_gpu_or_help("bus", argc, argv);
}

int cli_bench_decode(int argc, char **argv)
{
    return no_gpu_or_help("decode", argc, argv);
}
