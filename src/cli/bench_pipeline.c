/* omma bench pipeline: the GPU face pipeline over N cameras of synthetic
 * frames (the sample photo's face F times on a W x H NV12 frame, each
 * camera's shifted a little), all cameras one batch per step: detection +
 * FaceMesh + tracking. Frames sit in device memory (the pipeline reads them
 * in place) or in pinned host memory (one upload per frame per step); both
 * are measured by default. Reports frames/s, per-frame latency (the batch's
 * wall time: every frame of a batch completes with it) median and p99, CPU
 * time per frame and bytes per frame each way, as a table and a JSON line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/bench.h"
#include "cli/commands.h"
#include "cli/json.h"
#include "core/clock.h"
#include "gpu/check.h"
#include "gpu/driver.h"
#include "gpu/memory.h"
#include "omma/device.h"
#include "omma/pipeline.h"
#include "io/image_file.h"

#define STR_(x) #x
#define STR(x) STR_(x)
#define PHOTO "testdata/astronaut.png"

typedef struct bench_opts {
    int cameras, width, height, faces, steps, warmup, detect_every;
    omma_precision precision;
    int device_frames, pinned_frames;
    int full_range; /* the full-range detector (192 px, 2304 anchors) */
    int mesh_points; /* 468 (FaceMesh) or 478 (the attention mesh) */
    int head_pose;
    int json;
    const char *data;
} bench_opts;

typedef struct figures {
    const char *memory;
    double fps, median_ms, p99_ms, cpu_us_per_frame;
    double h2d_per_frame, d2h_per_frame, detector_share, faces_per_frame;
} figures;

enum {
    OPT_CAMERAS,
    OPT_RESOLUTION,
    OPT_FACES,
    OPT_MEMORY,
    OPT_STEPS,
    OPT_WARMUP,
    OPT_DETECT_EVERY,
    OPT_PRECISION,
    OPT_MODEL,
    OPT_FACE_MESH,
    OPT_HEAD_POSE,
    OPT_JSON
};

static const cli_option options[] = {
    [OPT_CAMERAS] = {"--cameras", "N",
                     "cameras, one batch per step, 1.." STR(OMMA_PIPELINE_MAX_BATCH) " (16)"},
    [OPT_RESOLUTION] = {"--resolution", "WxH", "frames' size, 64..8192 (1920x1080)"},
    [OPT_FACES] = {"--faces", "F", "the sample face F times per frame, 1..6 (1); max_faces = F"},
    [OPT_MEMORY] = {"--memory", "device|pinned|both", "where the frames are (both)"},
    [OPT_STEPS] = {"--steps", "N", "timed steps (200)"},
    [OPT_WARMUP] = {"--warmup", "N", "untimed steps first (20)"},
    [OPT_DETECT_EVERY] = {"--detect-every", "K", "detector every K frames (10)"},
    [OPT_PRECISION] = {"--precision", "fp16|fp32", "engines' precision (fp16)"},
    [OPT_MODEL] = {"--model", "short|full", "detector (short)"},
    [OPT_FACE_MESH] = {"--face-mesh", "468|478",
                       "FaceMesh (468) or the attention mesh with irises (478) (468)"},
    [OPT_HEAD_POSE] = {"--head-pose", NULL, "also each face's head pose (on the CPU, per step)"},
    [OPT_JSON] = {"--json", NULL, "the table on stderr, one JSON line on stdout"},
    {NULL, NULL, NULL},
};

static void usage(FILE *to)
{
    fprintf(to,
            "usage: omma bench pipeline [--cameras N] [--resolution WxH] [--faces F]\n"
            "                           [--memory device|pinned|both] [--steps N] [--warmup N]\n"
            "                           [--detect-every K] [--precision fp16|fp32]\n"
            "                           [--model short|full] [--face-mesh 468|478]\n"
            "                           [--head-pose] [--json]\n"
            "  The GPU face pipeline on N cameras of WxH NV12 frames showing the sample\n"
            "  face F times (large faces: the short-range detector's range), all cameras\n"
            "  one batch per step; frames in device memory and/or pinned host memory.\n");
    cli_print_options(to, options);
}

/* -1 to go on, else the exit code (0 after --help). */
static int parse_args(int argc, char **argv, bench_opts *o)
{
    memset(o, 0, sizeof *o);
    o->cameras = 16, o->width = 1920, o->height = 1080, o->faces = 1;
    o->steps = 200, o->warmup = 20, o->detect_every = 10;
    o->precision = OMMA_PRECISION_FP16;
    o->mesh_points = OMMA_FACE_LANDMARKS;
    o->device_frames = o->pinned_frames = 1;
    cli_args args;
    cli_args_init(&args, "bench pipeline", options, argc, argv);
    const cli_option *opt;
    const char *v;
    for (cli_arg_kind k; (k = cli_next(&args, &opt, &v)) != CLI_ARG_END;) {
        if (k == CLI_ARG_HELP) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        if (k == CLI_ARG_ERROR)
            return CLI_EXIT_USAGE;
        if (k == CLI_ARG_POSITIONAL)
            return cli_usage_error("bench pipeline", "unexpected argument '%s'", v);
        int bad = 0;
        switch (opt - options) {
        case OPT_JSON:
            o->json = 1;
            break;
        case OPT_CAMERAS:
            bad = cli_parse_int(v, 1, OMMA_PIPELINE_MAX_BATCH, &o->cameras);
            break;
        case OPT_FACES:
            bad = cli_parse_int(v, 1, 6, &o->faces);
            break;
        case OPT_STEPS:
            bad = cli_parse_int(v, 1, 1000000, &o->steps);
            break;
        case OPT_WARMUP:
            bad = cli_parse_int(v, 0, 1000000, &o->warmup);
            break;
        case OPT_DETECT_EVERY:
            bad = cli_parse_int(v, 0, 1000000, &o->detect_every);
            break;
        case OPT_RESOLUTION:
            bad = sscanf(v, "%dx%d", &o->width, &o->height) != 2 || o->width < 64 ||
                  o->height < 64 || o->width > 8192 || o->height > 8192;
            break;
        case OPT_PRECISION:
            bad = strcmp(v, "fp16") == 0   ? (o->precision = OMMA_PRECISION_FP16, 0)
                  : strcmp(v, "fp32") == 0 ? (o->precision = OMMA_PRECISION_FP32, 0)
                                           : 1;
            break;
        case OPT_MODEL:
            bad = strcmp(v, "short") == 0  ? (o->full_range = 0, 0)
                  : strcmp(v, "full") == 0 ? (o->full_range = 1, 0)
                                           : 1;
            break;
        case OPT_FACE_MESH:
            bad = strcmp(v, "468") == 0   ? (o->mesh_points = OMMA_FACE_LANDMARKS, 0)
                  : strcmp(v, "478") == 0 ? (o->mesh_points = OMMA_FACE_LANDMARKS_WITH_IRISES, 0)
                                          : 1;
            break;
        case OPT_HEAD_POSE:
            o->head_pose = 1;
            break;
        case OPT_MEMORY:
            o->device_frames = strcmp(v, "device") == 0 || strcmp(v, "both") == 0;
            o->pinned_frames = strcmp(v, "pinned") == 0 || strcmp(v, "both") == 0;
            bad = !o->device_frames && !o->pinned_frames;
            break;
        }
        if (bad)
            return cli_usage_error("bench pipeline", "%s %s: not a valid value", opt->name, v);
    }
    return -1;
}

/* BT.601 limited range, the inverse of the pipeline's conversion. */
static void rgb_to_nv12(const uint8_t *rgb, int w, int h, uint8_t *y, uint8_t *uv)
{
    for (int j = 0; j < h; j++)
        for (int i = 0; i < w; i++) {
            const uint8_t *p = rgb + ((size_t)j * (size_t)w + (size_t)i) * 3;
            y[(size_t)j * (size_t)w + (size_t)i] =
                (uint8_t)(16.5f + 0.257f * p[0] + 0.504f * p[1] + 0.098f * p[2]);
        }
    for (int j = 0; j < h / 2; j++)
        for (int i = 0; i < w / 2; i++) {
            float r = 0, g = 0, b = 0;
            for (int k = 0; k < 4; k++) {
                const uint8_t *p =
                    rgb + ((size_t)(2 * j + k / 2) * (size_t)w + (size_t)(2 * i + k % 2)) * 3;
                r += p[0] / 4.0f, g += p[1] / 4.0f, b += p[2] / 4.0f;
            }
            uint8_t *q = uv + (size_t)j * (size_t)w + (size_t)i * 2;
            q[0] = (uint8_t)(128.5f - 0.148f * r - 0.291f * g + 0.439f * b);
            q[1] = (uint8_t)(128.5f + 0.439f * r - 0.368f * g - 0.071f * b);
        }
}

/* Bilinear sample of the photo at (x, y) (pixel centres at +0.5), RGB. */
static void photo_at(const io_image *im, float x, float y, uint8_t out[3])
{
    float fx = x - 0.5f, fy = y - 0.5f;
    int x0 = (int)fx, y0 = (int)fy;
    float wx = fx - (float)x0, wy = fy - (float)y0;
    int x1 = x0 + 1 < im->width ? x0 + 1 : x0, y1 = y0 + 1 < im->height ? y0 + 1 : y0;
    for (int c = 0; c < 3; c++) {
        float a = im->rgb[((size_t)y0 * (size_t)im->width + (size_t)x0) * 3 + (size_t)c];
        float b = im->rgb[((size_t)y0 * (size_t)im->width + (size_t)x1) * 3 + (size_t)c];
        float d = im->rgb[((size_t)y1 * (size_t)im->width + (size_t)x0) * 3 + (size_t)c];
        float e = im->rgb[((size_t)y1 * (size_t)im->width + (size_t)x1) * 3 + (size_t)c];
        out[c] =
            (uint8_t)((a * (1 - wx) + b * wx) * (1 - wy) + (d * (1 - wx) + e * wx) * wy + 0.5f);
    }
}

/* Camera c's frame: grey, with faces cells on a grid (3 columns at most),
 * each showing the photo's 200-px square around the astronaut's face scaled
 * to 90% of the cell's short side, shifted by a few pixels per camera; NV12
 * (w, h even) in host memory. */
static int make_frame(const io_image *photo, const bench_opts *o, int c, uint8_t *nv12)
{
    const float crop_x = 126.0f, crop_y = 30.0f, crop_side = 200.0f;
    int w = o->width, h = o->height;
    uint8_t *rgb = malloc((size_t)w * (size_t)h * 3);
    if (!rgb)
        return -1;
    memset(rgb, 90, (size_t)w * (size_t)h * 3);
    int cols = o->faces < 3 ? o->faces : 3, rows = (o->faces + cols - 1) / cols;
    int cell_w = w / cols, cell_h = h / rows;
    int side = (int)(0.9f * (float)(cell_w < cell_h ? cell_w : cell_h));
    for (int f = 0; f < o->faces; f++) {
        int ox = (f % cols) * cell_w + (cell_w - side) / 2 + (c % 16) - 8;
        int oy = (f / cols) * cell_h + (cell_h - side) / 2 + (c / 16) % 8 - 4;
        for (int y = 0; y < side; y++)
            for (int x = 0; x < side; x++) {
                int X = ox + x, Y = oy + y;
                if (X >= 0 && Y >= 0 && X < w && Y < h)
                    photo_at(photo, crop_x + ((float)x + 0.5f) * crop_side / (float)side,
                             crop_y + ((float)y + 0.5f) * crop_side / (float)side,
                             rgb + ((size_t)Y * (size_t)w + (size_t)X) * 3);
            }
    }
    rgb_to_nv12(rgb, w, h, nv12, nv12 + (size_t)w * (size_t)h);
    free(rgb);
    return 0;
}

static int fail(const char *what, omma_status st)
{
    fprintf(stderr, "omma: bench pipeline: %s: %s: %s\n", what, omma_status_str(st),
            omma_last_error());
    return st == OMMA_ERR_NO_DEVICE ? CLI_EXIT_NO_DEVICE : CLI_EXIT_ERROR;
}

/* Steps the pipeline over frames (one per camera) and measures. */
static int measure(omma_face_pipeline *p, const bench_opts *o, const omma_frame *frames,
                   figures *out)
{
    int n = o->cameras;
    int *cams = malloc((size_t)n * sizeof *cams), *counts = malloc((size_t)n * sizeof *counts);
    omma_face *faces = malloc((size_t)n * (size_t)o->faces * sizeof *faces);
    double *ms = malloc((size_t)o->steps * sizeof *ms);
    if (!cams || !counts || !faces || !ms) {
        free(cams), free(counts), free(faces), free(ms);
        fprintf(stderr, "omma: bench pipeline: out of memory\n");
        return CLI_EXIT_ERROR;
    }
    for (int i = 0; i < n; i++)
        cams[i] = i;
    int rc = CLI_EXIT_OK;
    omma_face_pipeline_stats s0, s1;
    uint64_t faces_found = 0;
    for (int s = 0; s < o->warmup && rc == CLI_EXIT_OK; s++) {
        omma_status st = omma_face_pipeline_process_batch(p, n, cams, frames, faces, counts);
        if (st != OMMA_OK)
            rc = fail("warm-up", st);
    }
    omma_face_pipeline_get_stats(p, &s0);
    uint64_t cpu0 = core_process_cpu_ns(), t0 = core_now_ns();
    for (int s = 0; s < o->steps && rc == CLI_EXIT_OK; s++) {
        uint64_t a = core_now_ns();
        omma_status st = omma_face_pipeline_process_batch(p, n, cams, frames, faces, counts);
        ms[s] = (double)(core_now_ns() - a) / 1e6;
        if (st != OMMA_OK)
            rc = fail("step", st);
        for (int i = 0; i < n; i++)
            faces_found += (uint64_t)counts[i];
    }
    uint64_t t1 = core_now_ns(), cpu1 = core_process_cpu_ns();
    omma_face_pipeline_get_stats(p, &s1);
    if (rc == CLI_EXIT_OK) {
        double frames_done = (double)n * o->steps;
        qsort(ms, (size_t)o->steps, sizeof *ms, cli_cmp_double);
        out->fps = frames_done / ((double)(t1 - t0) / 1e9);
        out->median_ms = ms[o->steps / 2];
        out->p99_ms = ms[(int)((o->steps - 1) * 0.99)];
        out->cpu_us_per_frame = (double)(cpu1 - cpu0) / 1e3 / frames_done;
        out->h2d_per_frame = (double)(s1.h2d_bytes - s0.h2d_bytes) / frames_done;
        out->d2h_per_frame = (double)(s1.d2h_bytes - s0.d2h_bytes) / frames_done;
        out->detector_share = (double)(s1.detector_images - s0.detector_images) / frames_done;
        out->faces_per_frame = (double)faces_found / frames_done;
    }
    free(cams), free(counts), free(faces), free(ms);
    return rc;
}

static void print(const bench_opts *o, const figures *f, int nf)
{
    FILE *t = o->json ? stderr : stdout;
    fprintf(t,
            "pipeline: %d cameras, %dx%d NV12, %d face(s), %s, %s-range detector every %d "
            "frames, %d-point mesh%s\n",
            o->cameras, o->width, o->height, o->faces,
            o->precision == OMMA_PRECISION_FP16 ? "fp16" : "fp32", o->full_range ? "full" : "short",
            o->detect_every, o->mesh_points, o->head_pose ? ", head pose" : "");
    fprintf(t, "%-8s %12s %11s %11s %13s %12s %12s %9s %7s\n", "frames", "frames/s", "median ms",
            "p99 ms", "cpu us/frame", "h2d B/frame", "d2h B/frame", "detector", "faces");
    for (int i = 0; i < nf; i++)
        fprintf(t, "%-8s %12.0f %11.3f %11.3f %13.2f %12.0f %12.0f %9.3f %7.2f\n", f[i].memory,
                f[i].fps, f[i].median_ms, f[i].p99_ms, f[i].cpu_us_per_frame, f[i].h2d_per_frame,
                f[i].d2h_per_frame, f[i].detector_share, f[i].faces_per_frame);
    for (int i = 0; i < nf; i++)
        if (f[i].faces_per_frame < o->faces - 0.01)
            fprintf(stderr,
                    "omma: bench pipeline: warning: %.2f faces found per frame of %d shown "
                    "(%s frames): faces too small for the detector?\n",
                    f[i].faces_per_frame, o->faces, f[i].memory);
    if (!o->json)
        return;
    printf("{\"bench\":\"pipeline\",\"cameras\":%d,\"width\":%d,\"height\":%d,\"faces\":%d,"
           "\"precision\":\"%s\",\"detector\":\"%s\",\"detect_every\":%d,\"face_mesh\":%d,"
           "\"head_pose\":%s,\"results\":[",
           o->cameras, o->width, o->height, o->faces,
           o->precision == OMMA_PRECISION_FP16 ? "fp16" : "fp32", o->full_range ? "full" : "short",
           o->detect_every, o->mesh_points, o->head_pose ? "true" : "false");
    for (int i = 0; i < nf; i++)
        printf("%s{\"memory\":\"%s\",\"frames_per_s\":%.1f,\"median_ms\":%.4f,\"p99_ms\":%.4f,"
               "\"cpu_us_per_frame\":%.3f,\"h2d_bytes_per_frame\":%.1f,"
               "\"d2h_bytes_per_frame\":%.1f,\"detector_share\":%.4f,\"faces_per_frame\":%.3f}",
               i ? "," : "", f[i].memory, f[i].fps, f[i].median_ms, f[i].p99_ms,
               f[i].cpu_us_per_frame, f[i].h2d_per_frame, f[i].d2h_per_frame, f[i].detector_share,
               f[i].faces_per_frame);
    printf("]}\n");
}

/* One measurement: a fresh pipeline (trackers start empty) over frames. */
static int run_one(omma_device *dev, const bench_opts *o, const char *data, const char *memory,
                   const omma_frame *frames, figures *out)
{
    char det[4096], mesh[4096], geometry[4096];
    snprintf(det, sizeof det, "%s/models/face_detection_%s_range.tflite", data,
             o->full_range ? "full" : "short");
    snprintf(mesh, sizeof mesh, "%s/models/%s.tflite", data,
             o->mesh_points == OMMA_FACE_LANDMARKS_WITH_IRISES ? "face_landmark_with_attention"
                                                               : "face_landmark");
    snprintf(geometry, sizeof geometry, "%s/models/geometry_pipeline_metadata_landmarks.binarypb",
             data);
    omma_face_pipeline_options po;
    omma_face_pipeline_options_init(&po);
    po.backend = OMMA_BACKEND_CUDA;
    po.device = dev;
    po.precision = o->precision;
    po.detector_model = det;
    po.mesh_model = mesh;
    po.mesh_points = o->mesh_points;
    po.head_pose = o->head_pose;
    po.geometry_metadata = geometry;
    po.max_faces = o->faces;
    po.max_batch = o->cameras;
    po.detect_every = o->detect_every;
    omma_face_pipeline *p = NULL;
    omma_status st = omma_face_pipeline_create(&po, &p);
    if (st != OMMA_OK)
        return fail("pipeline", st);
    out->memory = memory;
    int rc = measure(p, o, frames, out);
    omma_face_pipeline_destroy(p);
    return rc;
}

int cli_bench_pipeline(int argc, char **argv)
{
    bench_opts o;
    int parsed = parse_args(argc, argv, &o);
    if (parsed >= 0)
        return parsed;
    o.width &= ~1, o.height &= ~1;
    const char *data = cli_data_dir();
    char path[4096];
    snprintf(path, sizeof path, "%s/" PHOTO, data);
    io_image photo;
    omma_status st = io_image_load(path, &photo);
    if (st != OMMA_OK)
        return fail("sample photo (run scripts/fetch-testdata.sh)", st);
    omma_device *dev = NULL;
    st = omma_device_open(0, &dev);
    if (st != OMMA_OK) {
        io_image_free(&photo);
        return fail("device 0", st);
    }
    size_t bytes = (size_t)o.width * (size_t)o.height * 3 / 2;
    int n = o.cameras, rc = CLI_EXIT_OK, nf = 0;
    figures fig[2];
    uint8_t **host = calloc((size_t)n, sizeof *host);
    CUdeviceptr *devp = calloc((size_t)n, sizeof *devp);
    omma_frame *frames = calloc((size_t)n, sizeof *frames);
    if (!host || !devp || !frames)
        rc = CLI_EXIT_ERROR;
    for (int c = 0; c < n && rc == CLI_EXIT_OK; c++) {
        if ((st = gpu_host_alloc(dev, bytes, (void **)&host[c])) != OMMA_OK ||
            (st = gpu_mem_alloc(dev, bytes, &devp[c])) != OMMA_OK)
            rc = fail("frame memory", st);
        else if (make_frame(&photo, &o, c, host[c]) != 0)
            rc = CLI_EXIT_ERROR;
        else if ((st = gpu_copy_h2d_async(dev, devp[c], host[c], bytes, NULL)) != OMMA_OK)
            rc = fail("frame upload", st);
    }
    /* The uploads (legacy stream) end before the pipeline's stream starts. */
    if (rc == CLI_EXIT_OK) {
        omma_scope sc;
        if ((st = omma_device_enter(dev, &sc)) == OMMA_OK) {
            st = OMMA_CK(gpu_cu.cuStreamSynchronize(NULL));
            omma_device_leave(&sc);
        }
        if (st != OMMA_OK)
            rc = fail("frame upload", st);
    }
    for (int m = 0; m < 2 && rc == CLI_EXIT_OK; m++) {
        int on_device = m == 0;
        if (on_device ? !o.device_frames : !o.pinned_frames)
            continue;
        for (int c = 0; c < n; c++) {
            const uint8_t *base = on_device ? (const uint8_t *)(uintptr_t)devp[c] : host[c];
            omma_frame f = {o.width,
                            o.height,
                            OMMA_PIXEL_NV12,
                            {base, base + (size_t)o.width * (size_t)o.height, NULL},
                            {o.width, o.width, 0},
                            on_device ? OMMA_MEMORY_DEVICE : OMMA_MEMORY_HOST};
            frames[c] = f;
        }
        rc = run_one(dev, &o, data, on_device ? "device" : "pinned", frames, &fig[nf]);
        if (rc == CLI_EXIT_OK)
            nf++;
    }
    if (rc == CLI_EXIT_OK)
        print(&o, fig, nf);
    for (int c = 0; c < n; c++) {
        if (host && host[c])
            gpu_host_free(dev, host[c], bytes);
        if (devp && devp[c])
            gpu_mem_free(dev, devp[c]);
    }
    free(host), free(devp), free(frames);
    io_image_free(&photo);
    omma_device_close(dev);
    return rc;
}
