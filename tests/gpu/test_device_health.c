/* Health checks: a healthy context passes; a kernel that writes out of
 * bounds leaves a sticky error, reported as OMMA_ERR_DEVICE_LOST. The faulty
 * kernel runs in a child process (this binary re-executed with --child-oob)
 * so that the test itself survives; OMMA_TEST_NO_FAULT_CHILD=1 leaves that
 * case out (compute-sanitizer would report the deliberate fault). */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gpu/memory.h"
#include "gpu/stream_pool.h"
#include "gpu_testing.h"
#include "test_kernels.h"

static void healthy_device_passes(void)
{
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    REQUIRE_OK(omma_device_check_health(dev));
    REQUIRE_OK(omma_device_check_health(dev));
    omma_device_close(dev);
}

/* The child: poison the context, then expect the health check to say so. */
static int child_out_of_bounds(void)
{
    gpu_test_require_device();
    omma_device *dev = NULL;
    omma_status st = omma_device_open(0, &dev);
    if (st != OMMA_OK) {
        fprintf(stderr, "child: open: %s\n", omma_last_error());
        return 2;
    }
    omma_scope scope;
    if (omma_device_enter(dev, &scope) != OMMA_OK)
        return 2;
    int *p = NULL;
    if (cudaMalloc((void **)&p, 64) != cudaSuccess ||
        test_write_out_of_bounds(p, (cudaStream_t)0) != cudaSuccess) {
        fprintf(stderr, "child: could not launch the faulty kernel\n");
        return 2;
    }
    omma_device_leave(&scope);
    st = omma_device_check_health(dev);
    printf("first check: %s: %s\n", omma_status_str(st), omma_last_error());
    int ok = st == OMMA_ERR_DEVICE_LOST && strstr(omma_last_error(), "unusable") &&
             strstr(omma_last_error(), "sticky error") &&
             strstr(omma_last_error(), "CUDA_ERROR_");
    /* Remembered: a second check fails the same way without asking CUDA. */
    st = omma_device_check_health(dev);
    printf("second check: %s: %s\n", omma_status_str(st), omma_last_error());
    ok = ok && st == OMMA_ERR_DEVICE_LOST && strstr(omma_last_error(), "unusable");
    /* Other omma calls on the context fail too, and do not crash. */
    CUdeviceptr d = 0;
    st = gpu_mem_alloc(dev, 4096, &d);
    printf("allocation after the fault: %s: %s\n", omma_status_str(st), omma_last_error());
    ok = ok && st != OMMA_OK;
    omma_device_close(dev);
    fflush(stdout);
    return ok ? 0 : 1;
}

static void out_of_bounds_kernel_is_device_lost(void)
{
    const char *skip = getenv("OMMA_TEST_NO_FAULT_CHILD");
    if (skip && *skip && strcmp(skip, "0") != 0) {
        fprintf(stderr, "OMMA_TEST_NO_FAULT_CHILD is set: the out-of-bounds child is left out\n");
        return;
    }
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        /* Re-exec: the forked copy must not touch CUDA state it inherited. */
        char *args[] = {"test_device_health", "--child-oob", NULL};
        execv("/proc/self/exe", args);
        _exit(127);
    }
    int status = 0;
    for (int waited = 0; waited < 600; waited++) { /* 60 s */
        pid_t r = waitpid(pid, &status, WNOHANG);
        if (r == pid)
            break;
        usleep(100000);
        if (waited == 599) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fprintf(stderr, "the child hung\n");
        }
    }
    CHECK(WIFEXITED(status));
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    /* This process's own context is untouched by the child's fault. */
    omma_device *dev = NULL;
    REQUIRE_OK(omma_device_open(0, &dev));
    CHECK(omma_device_check_health(dev) == OMMA_OK);
    omma_device_close(dev);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--child-oob") == 0)
        return child_out_of_bounds();
    gpu_test_require_device();
    RUN(healthy_device_passes);
    RUN(out_of_bounds_kernel_is_device_lost);
    return testing_finish();
}
