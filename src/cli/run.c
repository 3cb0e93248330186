/* omma run: the face pipeline over inputs, results as JSON Lines.
 * This first slice takes still images (PNG, JPEG): each input is one
 * camera with one frame. */
#define _POSIX_C_SOURCE 200809L /* mkstemp, fchmod, fdopen */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "core/clock.h"
#include "omma/device.h"
#include "omma/pipeline.h"
#include "runtime/image_file.h"

#define SAMPLE_INPUT "testdata/astronaut.png"
#define DETECTOR_MODEL "models/face_detection_short_range.tflite"
#define MESH_MODEL "models/face_landmark.tflite"

static void usage(FILE *to)
{
    fprintf(to,
            "usage: omma run [--backend cpu|gpu] [--out FILE] [--max-faces N] [INPUT...]\n"
            "  Runs face detection, FaceMesh and tracking on each INPUT (a PNG or JPEG\n"
            "  image; each input is one camera, frame 0) and writes one JSON line per\n"
            "  frame per camera: camera, source, frame, timestamp_ms, faces (id, score,\n"
            "  box [x0,y0,x1,y1], 6 keypoints [x,y], 468 landmarks [x,y,z], presence),\n"
            "  in frame pixels.\n"
            "  --backend   gpu (default; the GPU pipeline is not built yet) or cpu\n"
            "  --out FILE  write there (complete or not at all) instead of stdout\n"
            "  --max-faces faces tracked per camera, 1..%d (default 4)\n"
            "  No INPUT: the sample photo testdata/astronaut.png.\n"
            "  Models and the sample come from $OMMA_DATA (a folder with models/ and\n"
            "  testdata/), else from the source tree omma was built from.\n"
            "  Exit codes: 0 ok, 1 an input or the run failed (the other inputs are still\n"
            "  processed), 2 usage, 3 no GPU for --backend gpu.\n",
            OMMA_PIPELINE_MAX_FACES);
}

static const char *data_dir(void)
{
    const char *d = getenv("OMMA_DATA");
    return d && *d ? d : OMMA_DEFAULT_DATA_DIR;
}

static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* A number with `digits` decimals; null for NaN and infinities (not JSON). */
static void json_num(FILE *f, float v, int digits)
{
    if (isfinite(v))
        fprintf(f, "%.*f", digits, (double)v);
    else
        fputs("null", f);
}

static void write_face(FILE *f, const omma_face *face)
{
    fprintf(f, "{\"id\":%d,\"score\":", face->id);
    json_num(f, face->score, 4);
    fputs(",\"box\":[", f);
    json_num(f, face->box.xmin, 2);
    fputc(',', f);
    json_num(f, face->box.ymin, 2);
    fputc(',', f);
    json_num(f, face->box.xmax, 2);
    fputc(',', f);
    json_num(f, face->box.ymax, 2);
    fputs("],\"keypoints\":[", f);
    for (int k = 0; k < OMMA_FACE_KEYPOINTS; k++) {
        fputs(k ? ",[" : "[", f);
        json_num(f, face->keypoints[k][0], 2);
        fputc(',', f);
        json_num(f, face->keypoints[k][1], 2);
        fputc(']', f);
    }
    fputs("],\"landmarks\":[", f);
    for (int k = 0; k < OMMA_FACE_LANDMARKS; k++) {
        fputs(k ? ",[" : "[", f);
        for (int c = 0; c < 3; c++) {
            if (c)
                fputc(',', f);
            json_num(f, face->landmarks[k][c], 2);
        }
        fputc(']', f);
    }
    fputs("],\"presence\":", f);
    json_num(f, face->presence, 4);
    fputc('}', f);
}

static void write_frame(FILE *f, int camera, const char *source, const omma_face *faces, int n)
{
    fprintf(f, "{\"camera\":%d,\"source\":", camera);
    json_string(f, source);
    fputs(",\"frame\":0,\"timestamp_ms\":0,\"faces\":[", f);
    for (int i = 0; i < n; i++) {
        if (i)
            fputc(',', f);
        write_face(f, &faces[i]);
    }
    fputs("]}\n", f);
}

/* --out: a temporary file beside the target, renamed over it at the end. */
typedef struct output {
    FILE *f;
    const char *path; /* NULL: stdout */
    char *tmp;
} output;

static int output_open(output *o, const char *path)
{
    memset(o, 0, sizeof *o);
    if (!path) {
        o->f = stdout;
        return 1;
    }
    o->path = path;
    size_t n = strlen(path) + sizeof ".tmp.XXXXXX";
    o->tmp = malloc(n);
    if (!o->tmp) {
        fprintf(stderr, "omma: error: %s: out of memory\n", path);
        return 0;
    }
    snprintf(o->tmp, n, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        fprintf(stderr, "omma: error: %s: cannot create a temporary file beside it: %s\n", path,
                strerror(errno));
        free(o->tmp);
        return 0;
    }
    (void)fchmod(fd, 0644);
    o->f = fdopen(fd, "w");
    if (!o->f) {
        fprintf(stderr, "omma: error: %s: %s\n", o->tmp, strerror(errno));
        close(fd);
        unlink(o->tmp);
        free(o->tmp);
        return 0;
    }
    return 1;
}

/* Flushes and, for a file, renames it into place (keep) or removes it. */
static int output_close(output *o, int keep)
{
    errno = 0;
    int ok = fflush(o->f) == 0 && !ferror(o->f);
    int err = errno;
    if (!o->path) {
        if (!ok)
            fprintf(stderr, "omma: error: writing to stdout failed: %s\n",
                    err ? strerror(err) : "I/O error");
        return ok;
    }
    if (fclose(o->f) != 0 && ok) {
        ok = 0;
        err = errno;
    }
    if (!ok)
        fprintf(stderr, "omma: error: %s: writing failed: %s\n", o->path,
                err ? strerror(err) : "I/O error");
    if (ok && keep && rename(o->tmp, o->path) != 0) {
        fprintf(stderr, "omma: error: %s: cannot rename %s to it: %s\n", o->path, o->tmp,
                strerror(errno));
        ok = 0;
    }
    if (!ok || !keep)
        unlink(o->tmp);
    free(o->tmp);
    return ok;
}

static int parse_backend(const char *s, omma_backend *b)
{
    if (strcmp(s, "cpu") == 0)
        *b = OMMA_BACKEND_CPU;
    else if (strcmp(s, "gpu") == 0 || strcmp(s, "cuda") == 0)
        *b = OMMA_BACKEND_CUDA;
    else
        return 0;
    return 1;
}

/* --backend gpu: what there is to say until the CUDA pipeline exists. */
static int gpu_not_ready(void)
{
    int n = 0;
    omma_status st = omma_device_count(&n);
    if (st == OMMA_ERR_NO_DEVICE || (st == OMMA_OK && n == 0)) {
        fprintf(stderr, "omma: error: no GPU on this machine (%s); use --backend cpu\n",
                st == OMMA_OK ? "no devices" : omma_last_error());
        return CLI_EXIT_NO_DEVICE;
    }
    fprintf(stderr, "omma: error: the GPU face pipeline is not built yet; use --backend cpu\n");
    return CLI_EXIT_ERROR;
}

int cli_run(int argc, char **argv)
{
    omma_backend backend = OMMA_BACKEND_CUDA;
    const char *out_path = NULL;
    int max_faces = 4, first_input = argc;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return CLI_EXIT_OK;
        }
        if (strcmp(a, "--") == 0) {
            first_input = i + 1;
            break;
        }
        if (a[0] != '-' || a[1] == 0) {
            first_input = i;
            break;
        }
        int has_value = i + 1 < argc;
        if (strcmp(a, "--backend") == 0 && has_value) {
            if (!parse_backend(argv[++i], &backend)) {
                fprintf(stderr, "omma: error: --backend %s: expected cpu or gpu\n", argv[i]);
                return CLI_EXIT_USAGE;
            }
        } else if (strcmp(a, "--out") == 0 && has_value && argv[i + 1][0]) {
            out_path = argv[++i];
        } else if (strcmp(a, "--max-faces") == 0 && has_value) {
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || end == argv[i] || v < 1 || v > OMMA_PIPELINE_MAX_FACES) {
                fprintf(stderr, "omma: error: --max-faces %s: expected 1..%d\n", argv[i],
                        OMMA_PIPELINE_MAX_FACES);
                return CLI_EXIT_USAGE;
            }
            max_faces = (int)v;
        } else {
            fprintf(stderr, "omma: error: %s: unknown option or missing value\n\n", a);
            usage(stderr);
            return CLI_EXIT_USAGE;
        }
    }
    if (backend == OMMA_BACKEND_CUDA)
        return gpu_not_ready();

    const char *data = data_dir();
    char det_path[4096], mesh_path[4096], sample[4096];
    snprintf(det_path, sizeof det_path, "%s/%s", data, DETECTOR_MODEL);
    snprintf(mesh_path, sizeof mesh_path, "%s/%s", data, MESH_MODEL);
    snprintf(sample, sizeof sample, "%s/%s", data, SAMPLE_INPUT);
    const char *sample_inputs[1] = {sample};
    const char *const *inputs = (const char *const *)(argv + first_input);
    int n_inputs = argc - first_input;
    if (n_inputs == 0) {
        inputs = sample_inputs;
        n_inputs = 1;
        fprintf(stderr, "omma run: no input given; running on the sample %s\n", sample);
    }
    if (n_inputs > OMMA_PIPELINE_MAX_CAMERAS) {
        fprintf(stderr, "omma: error: %d inputs, at most %d\n", n_inputs,
                OMMA_PIPELINE_MAX_CAMERAS);
        return CLI_EXIT_USAGE;
    }

    omma_face_pipeline_options opt;
    omma_face_pipeline_options_init(&opt);
    opt.backend = backend;
    opt.detector_model = det_path;
    opt.mesh_model = mesh_path;
    opt.max_faces = max_faces;
    omma_face_pipeline *p = NULL;
    omma_status st = omma_face_pipeline_create(&opt, &p);
    if (st != OMMA_OK)
        return cli_fail(st, "cannot load the face models from %s/models (set OMMA_DATA, or run "
                            "scripts/fetch-models.sh)", data);
    omma_face *faces = malloc((size_t)max_faces * sizeof *faces);
    output out;
    if (!faces || !output_open(&out, out_path)) {
        if (!faces)
            fprintf(stderr, "omma: error: out of memory\n");
        free(faces);
        omma_face_pipeline_destroy(p);
        return CLI_EXIT_ERROR;
    }

    int failed = 0, frames = 0, total_faces = 0;
    double total_ms = 0;
    for (int cam = 0; cam < n_inputs; cam++) {
        rt_image img;
        int n = 0;
        if ((st = rt_image_load(inputs[cam], &img)) != OMMA_OK) {
            fprintf(stderr, "omma: error: %s\n", omma_last_error());
            failed++;
            continue;
        }
        omma_frame f = rt_image_frame(&img);
        uint64_t t0 = core_now_ns();
        st = omma_face_pipeline_process(p, cam, &f, faces, max_faces, &n);
        uint64_t t1 = core_now_ns();
        rt_image_free(&img);
        if (st != OMMA_OK) {
            fprintf(stderr, "omma: error: %s: %s\n", inputs[cam], omma_last_error());
            failed++;
            continue;
        }
        total_ms += (double)(t1 - t0) / 1e6;
        frames++;
        total_faces += n;
        write_frame(out.f, cam, inputs[cam], faces, n);
    }
    int written = output_close(&out, 1);
    free(faces);
    omma_face_pipeline_destroy(p);
    fprintf(stderr,
            "omma run: %d input(s), %d failed, %d frame(s), %d face(s), mean latency %.1f ms "
            "(cpu backend)%s%s\n",
            n_inputs, failed, frames, total_faces, frames ? total_ms / frames : 0.0,
            out_path ? ", written to " : "", out_path ? out_path : "");
    return failed || !written ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}
