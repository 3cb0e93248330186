/* The frame bus (omma/bus.h) in a build without CUDA (OMMA_CUDA=OFF): it
 * shares GPU memory, so every call fails with "built without CUDA". */
#include "gpu/none.h"
#include "omma/bus.h"

#include <string.h>

void omma_bus_options_init(omma_bus_options *opt)
{
    if (!opt)
        return;
    memset(opt, 0, sizeof *opt);
    opt->max_holds = 2;
    opt->timeout_ms = 2000;
}

omma_status omma_bus_subscribe(omma_device *dev, const char *name, const omma_bus_options *opt,
                               omma_bus_subscriber **out)
{
    (void)dev, (void)name, (void)opt;
    if (out)
        *out = NULL;
    return GPU_NONE_FAIL("the frame bus");
}

int omma_bus_camera_count(const omma_bus_subscriber *sub)
{
    (void)sub;
    return 0;
}

omma_status omma_bus_camera_info_get(const omma_bus_subscriber *sub, int i,
                                     omma_bus_camera_info *out)
{
    (void)sub, (void)i, (void)out;
    return GPU_NONE_FAIL("the frame bus");
}

int omma_bus_subscribers_at_attach(const omma_bus_subscriber *sub)
{
    (void)sub;
    return 0;
}

int omma_bus_publisher_pid(const omma_bus_subscriber *sub)
{
    (void)sub;
    return 0;
}

int omma_bus_publisher_stopped(const omma_bus_subscriber *sub)
{
    (void)sub;
    return 0;
}

omma_status omma_bus_next(omma_bus_subscriber *sub, int timeout_ms, omma_bus_frame *out)
{
    (void)sub, (void)timeout_ms, (void)out;
    return GPU_NONE_FAIL("the frame bus");
}

omma_status omma_bus_wait(omma_bus_subscriber *sub, const omma_bus_frame *f, void *stream)
{
    (void)sub, (void)f, (void)stream;
    return GPU_NONE_FAIL("the frame bus");
}

omma_status omma_bus_release(omma_bus_subscriber *sub, omma_bus_frame *f, void *stream)
{
    (void)sub, (void)f, (void)stream;
    return GPU_NONE_FAIL("the frame bus");
}

omma_status omma_bus_results(const omma_bus_subscriber *sub, const omma_bus_frame *f,
                             omma_face *faces, int max, int *n)
{
    (void)sub, (void)f, (void)faces, (void)max;
    if (n)
        *n = 0;
    return GPU_NONE_FAIL("the frame bus");
}

void omma_bus_close(omma_bus_subscriber *sub)
{
    (void)sub;
}

omma_status omma_bus_list(const char *dir, omma_bus_listing *out, int max, int *n)
{
    (void)dir, (void)out, (void)max;
    if (n)
        *n = 0;
    return GPU_NONE_FAIL("the frame bus");
}
