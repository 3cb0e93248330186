/* The runtime's "bus:NAME/I" cameras: camera I of the frame bus NAME,
 * published by another omma process (ipc/, omma/bus.h). The camera thread
 * takes each frame the bus announces (complete in its slot), copies it
 * device to device into the camera's ring (no host copy, nothing over
 * PCIe) and gives it back on the copy's stream: the publisher's slot is
 * free again as soon as the copy has run, whatever the worker does with
 * the ring's copy.
 * A publisher that stops ends the camera; one that dies is reported and
 * attached again when a publisher of that name comes back, until the
 * runtime stops. */
#define _POSIX_C_SOURCE 200809L /* nanosleep */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "omma/bus.h"
#include "runtime/runtime_private.h"

#define PREFIX "bus:"
#define RETRY_MS 500

int rt_bus_spec(const char *spec)
{
    return spec && strncmp(spec, PREFIX, strlen(PREFIX)) == 0;
}

/* "bus:NAME/I" -> NAME, I. */
static omma_status parse(rt_cam *cam)
{
    const char *spec = cam->cfg.spec + strlen(PREFIX);
    const char *slash = strrchr(spec, '/');
    char *end = NULL;
    long index = slash ? strtol(slash + 1, &end, 10) : -1;
    size_t n = slash ? (size_t)(slash - spec) : 0;
    if (!slash || end == slash + 1 || *end || index < 0 || index > 1023 || n == 0 ||
        n >= sizeof cam->bus_name)
        return OMMA_FAIL(OMMA_ERR_INVALID_ARG,
                         "camera %s: expected bus:NAME/CAMERA (CAMERA the index on the bus)",
                         cam->cfg.spec);
    memcpy(cam->bus_name, spec, n);
    cam->bus_name[n] = '\0';
    cam->bus_index = (int)index;
    return OMMA_OK;
}

static void options(const rt_cam *cam, omma_bus_options *o, int watch)
{
    omma_bus_options_init(o);
    o->cameras = &cam->bus_index;
    o->n_cameras = 1;
    o->watch = watch;
}

omma_status rt_bus_cam_open(rt_cam *cam)
{
    OMMA_TRY(parse(cam));
    omma_bus_options o;
    options(cam, &o, 1);
    omma_bus_subscriber *w = NULL;
    OMMA_TRY(omma_bus_subscribe(NULL, cam->bus_name, &o, &w));
    omma_bus_camera_info ci;
    omma_status st = omma_bus_camera_info_get(w, 0, &ci);
    omma_bus_close(w);
    OMMA_TRY(st);
    cam->fmt = (rt_ring_format){ci.width, ci.height, ci.format};
    cam->live = 1; /* the publisher's camera runs whether we keep up or not */
    cam->pixels_per_s = (double)ci.width * ci.height * 30.0;
    return OMMA_OK;
}

omma_status rt_bus_cam_prepare(rt_cam *cam)
{
    omma_bus_options o;
    options(cam, &o, 0);
    OMMA_TRY(omma_bus_subscribe(cam->gpu->dev, cam->bus_name, &o, &cam->bus));
    omma_bus_camera_info ci;
    OMMA_TRY(omma_bus_camera_info_get(cam->bus, 0, &ci));
    if (ci.width != cam->fmt.width || ci.height != cam->fmt.height || ci.format != cam->fmt.format)
        return OMMA_FAIL(OMMA_ERR_FORMAT, "camera %s: its format changed while attaching",
                         cam->cfg.spec);
    return OMMA_OK;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Attaches again after the publisher left; 0 when the runtime stops. */
static int reattach(rt_cam *cam)
{
    omma_bus_close(cam->bus);
    cam->bus = NULL;
    while (!rt_cam_stopping(cam)) {
        sleep_ms(RETRY_MS);
        if (rt_bus_cam_prepare(cam) == OMMA_OK) {
            rt_cam_report(cam, METRICS_CAMERA_RUNNING, OMMA_OK, "publisher back");
            return 1;
        }
        omma_bus_close(cam->bus);
        cam->bus = NULL;
        omma_clear_error();
    }
    return 0;
}

void rt_bus_cam_run(rt_cam *cam)
{
    const rt_runtime_config *cfg = &cam->rt->cfg;
    for (long k = 0; !rt_cam_stopping(cam);) {
        if (cam->cfg.max_frames > 0 && k >= cam->cfg.max_frames) {
            rt_cam_report(cam, METRICS_CAMERA_ENDED, OMMA_OK, "max frames");
            return;
        }
        omma_bus_frame f;
        omma_status st = omma_bus_next(cam->bus, 100, &f);
        if (st == OMMA_ERR_TIMEOUT)
            continue;
        if (st == OMMA_ERR_CLOSED && omma_bus_publisher_stopped(cam->bus)) {
            rt_cam_report(cam, METRICS_CAMERA_ENDED, OMMA_OK, "the publisher stopped");
            return;
        }
        if (st == OMMA_ERR_CLOSED) {
            rt_cam_failed(cam, st); /* "bus NAME: the publisher hung up" */
            if (!reattach(cam))
                return;
            continue;
        }
        if (st != OMMA_OK) {
            rt_cam_failed(cam, st);
            return;
        }
        metrics_frame_in(cfg->metrics, cam->index);
        atomic_fetch_add_explicit(&cam->rt->frames_in, 1, memory_order_relaxed);
        st = rt_ring_put_copy(cam->ring, &f.frame, NULL, cam->upload, f.capture_ns, 0);
        /* Given back after the copy (or untouched if nothing was enqueued). */
        omma_status rel = omma_bus_release(cam->bus, &f, st == OMMA_OK ? cam->upload : NULL);
        if (st == OMMA_ERR_CLOSED)
            return;
        if (st != OMMA_OK || (rel != OMMA_OK && rel != OMMA_ERR_CLOSED)) {
            rt_cam_failed(cam, st != OMMA_OK ? st : rel);
            return;
        }
        k++;
        rt_gpu_notify(cam->gpu, cam);
    }
}

void rt_bus_cam_close(rt_cam *cam)
{
    omma_bus_close(cam->bus);
    cam->bus = NULL;
}
