/* omma run: the face pipeline over image and video files, each input one
 * camera, all cameras stepped together (one frame of each camera that
 * still has frames per step, batched across cameras); results as JSON
 * Lines or CSV, annotated pictures or video, a progress bar and a summary.
 * Inputs: run_inputs.c; results: run_output.c; pictures: run_annotate.c;
 * progress and error lines: run_progress.c. */
#define _POSIX_C_SOURCE 200809L /* sigaction */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/run_annotate.h"
#include "cli/run_inputs.h"
#include "cli/run_output.h"
#include "cli/run_progress.h"
#include "core/clock.h"
#include "omma/device.h"
#include "omma/pipeline.h"
#include "omma/pose.h"
#include "io/video_file.h"

#define SAMPLE_PHOTO "testdata/astronaut.png"
#define SAMPLE_VIDEO "testdata/astronaut_pan.mp4"
#define SAMPLE_ANNOTATE_DIR "omma-run-sample" /* under $TMPDIR (else /tmp) */
#define SAMPLE_VIDEO_OUT "astronaut_pan_annotated.mp4"
#define DETECTOR_SHORT "models/face_detection_short_range.tflite"
#define DETECTOR_FULL "models/face_detection_full_range.tflite"
#define MESH_MODEL "models/face_landmark.tflite"
#define MESH_MODEL_478 "models/face_landmark_with_attention.tflite"
#define GEOMETRY_METADATA "models/geometry_pipeline_metadata_landmarks.binarypb"
#define POSE_DETECTOR "models/pose_detection.tflite"
#define EXIT_INTERRUPTED 130
/* The short-range detector's input side: a face much smaller than a fifth
 * of a picture over twice this size in both directions is below what it
 * sees, and the full-range model (192 px, trained on farther faces) may
 * find it. */
#define SHORT_RANGE_INPUT 128

#define STR_(x) #x
#define STR(x) STR_(x)

enum {
    OPT_BACKEND,
    OPT_THREADS,
    OPT_OUT,
    OPT_CSV,
    OPT_ANNOTATE,
    OPT_ANNOTATE_VIDEO,
    OPT_MAX_FACES,
    OPT_MAX_BATCH,
    OPT_DETECT_EVERY,
    OPT_MIN_SCORE,
    OPT_MIN_PRESENCE,
    OPT_PRECISION,
    OPT_MODEL,
    OPT_MAX_FRAMES,
    OPT_DECODE,
    OPT_POSE,
    OPT_FACE_MESH,
    OPT_HEAD_POSE,
    OPT_COUNT
};

static const cli_option options[] = {
    [OPT_BACKEND] = {"--backend", "gpu|cpu",
                     "gpu (default; never falls back to the CPU when an INPUT is\n"
                     "given) or cpu"},
    [OPT_THREADS] = {"--threads", "N",
                     "CPU backend: threads the models run on, 1..256, or 0\n"
                     "= one per CPU core (default 0); same faces for any N"},
    [OPT_OUT] = {"--out", "FILE",
                 "write there (complete records only; the file appears\n"
                 "when the run ends) instead of stdout"},
    [OPT_CSV] = {"--csv", NULL,
                 "a flat table instead: a header row, then one row per face\n"
                 "per frame (camera,source,frame,timestamp_ms,face_id,score,\n"
                 "presence,x0,y0,x1,y1, kp0_x,kp0_y..kp5_y,\n"
                 "lm0_x,lm0_y,lm0_z..lm467_z); a frame without faces gives\n"
                 "one row whose face fields are empty"},
    [OPT_ANNOTATE] = {"--annotate", "DIR",
                      "annotated PNGs: DIR/cam<i>_<frame, 6 digits>.png (boxes,\n"
                      "ids, keypoints, landmarks); DIR is created if missing"},
    [OPT_ANNOTATE_VIDEO] = {"--annotate-video", "FILE",
                            "an annotated video (.mp4, .mkv, .avi) of one camera at\n"
                            "its frame rate: the first video input, else camera 0"},
    [OPT_MAX_FACES] = {"--max-faces", "N",
                       "faces tracked per camera, 1.." STR(OMMA_PIPELINE_MAX_FACES) " (default 4)"},
    [OPT_MAX_BATCH] = {"--max-batch", "N",
                       "frames per pipeline batch, 1.." STR(
                           OMMA_PIPELINE_MAX_BATCH) " (default 16)"},
    [OPT_DETECT_EVERY] = {"--detect-every", "K",
                          "also run the detector every K frames while max-faces\n"
                          "faces are tracked; 0 = only when fewer (default 0)"},
    [OPT_MIN_SCORE] = {"--min-score", "S",
                       "detector: keep detections scoring at least S, 0..1\n"
                       "(default 0.5; lower finds more, and more false faces)"},
    [OPT_MIN_PRESENCE] = {"--min-presence", "P",
                          "FaceMesh: keep tracking a face while its presence is at\n"
                          "least P, 0..1 (default 0.5)"},
    [OPT_PRECISION] = {"--precision", "fp16|fp32",
                       "GPU engines' precision (default fp16; CPU is fp32)"},
    [OPT_MODEL] = {"--model", "short|full",
                   "detector: short range (default; faces within ~2 m of\n"
                   "the camera) or full range (within ~5 m: smaller faces)"},
    [OPT_MAX_FRAMES] = {"--max-frames", "N", "at most N frames of each input"},
    [OPT_DECODE] = {"--decode", "auto|gpu|cpu",
                    "where videos are decoded: auto (default) the GPU's NVDEC\n"
                    "engines (MJPEG: nvJPEG) when they can decode the video,\n"
                    "else the CPU; gpu: the GPU or an error; cpu: libavcodec\n"
                    "in software (the CPU backend always)"},
    [OPT_POSE] = {"--pose", "lite|full|heavy",
                  "also track body pose (BlazePose, the given landmark\n"
                  "model; off by default): a \"pose\" array in each JSON\n"
                  "record (docs/OUTPUT.md); not with --csv"},
    [OPT_FACE_MESH] = {"--face-mesh", "468|478",
                       "FaceMesh's points: 468 (default) or 478 (the attention\n"
                       "mesh: irises, refined eyes and lips; CSV: their x, y)"},
    [OPT_HEAD_POSE] = {"--head-pose", NULL,
                       "also each face's head pose (a \"head_pose\" object: 4x4\n"
                       "matrix, yaw, pitch, roll in degrees; docs/OUTPUT.md;\n"
                       "CSV: their columns)"},
    [OPT_COUNT] = {NULL, NULL, NULL},
};

static void usage(FILE *to)
{
    fprintf(to,
            "usage: omma run [OPTIONS] [INPUT...]\n"
            "  Runs face detection, FaceMesh and tracking on each INPUT, a PNG or JPEG image\n"
            "  (one frame) or a video file (FFmpeg's libavformat/libavcodec; the kind is told\n"
            "  by the file's content). Several inputs are several cameras, camera i = input i,\n"
            "  stepped together: each step takes the next frame of every camera that has one\n"
            "  and runs them as one batch (--max-batch frames per batch).\n"
            "  Writes one JSON line per frame per camera: camera, source, frame,\n"
            "  timestamp_ms, faces (id, score, box [x0,y0,x1,y1], 6 keypoints [x,y],\n"
            "  468 landmarks [x,y,z], presence), in frame pixels; with --pose also pose\n"
            "  (id, score, box, 33 landmarks [x,y,z,visibility,presence], 33 world\n"
            "  landmarks [x,y,z] in metres).\n");
    cli_print_options(to, options);
    fprintf(to,
            "  No INPUT: the sample, %s and %s\n"
            "  (when fetched), with annotated output in $TMPDIR/%s (/tmp when\n"
            "  TMPDIR is unset) unless --annotate says where. Without --backend, on a\n"
            "  machine without an NVIDIA GPU or driver, the sample runs on the CPU backend\n"
            "  (it says so first).\n"
            "  Options may come before or after the inputs (\"--\" ends them).\n"
            "  Models and the sample come from $OMMA_DATA (a folder with models/ and\n"
            "  testdata/), else from the source tree omma was built from.\n"
            "  stderr: a progress bar when it is a terminal; always a summary line (frames,\n"
            "  faces, frames/s, mean latency per batch, bytes host->device and\n"
            "  device->host per frame), and a hint when the short-range detector found\n"
            "  no face in a large picture (small faces need --model full).\n"
            "  Exit codes: 0 ok, 1 an input or the run failed (the other inputs are still\n"
            "  processed), 2 usage, 3 no GPU for --backend gpu, 130 interrupted (the output\n"
            "  then holds the frames done).\n",
            SAMPLE_PHOTO, SAMPLE_VIDEO, SAMPLE_ANNOTATE_DIR);
}

typedef struct run_args {
    omma_backend backend;
    int backend_given; /* --backend was on the command line */
    omma_precision precision;
    const char *out_path, *annotate_dir, *annotate_video;
    int csv, max_faces, max_batch, detect_every, full_range, threads;
    const char *pose; /* --pose: lite, full or heavy; NULL: off */
    int mesh_points, head_pose; /* --face-mesh (0: not given), --head-pose */
    double min_score, min_presence;
    long max_frames;
    io_decode decode;
    const char **inputs; /* the arguments that are not options, in order */
    int n_inputs;
} run_args;

/* One option's value into a. Returns 1, or 0 after the message. */
static int set_option(run_args *a, int id, const char *o, const char *v)
{
    static const char *const backends[] = {"gpu", "cpu"};
    static const char *const precisions[] = {"fp16", "fp32"};
    static const char *const models[] = {"short", "full"};
    long n = 0;
    int k = 0;
    switch (id) {
    case OPT_BACKEND:
        if (!cli_arg_choice(o, strcmp(v, "cuda") == 0 ? "gpu" : v, backends, 2, &k))
            return 0;
        a->backend = k == 1 ? OMMA_BACKEND_CPU : OMMA_BACKEND_CUDA;
        a->backend_given = 1;
        return 1;
    case OPT_PRECISION:
        if (!cli_arg_choice(o, v, precisions, 2, &k))
            return 0;
        a->precision = k ? OMMA_PRECISION_FP32 : OMMA_PRECISION_FP16;
        return 1;
    case OPT_MODEL:
        if (!cli_arg_choice(o, v, models, 2, &k))
            return 0;
        a->full_range = k;
        return 1;
    case OPT_OUT:
        a->out_path = v;
        return 1;
    case OPT_CSV:
        a->csv = 1;
        return 1;
    case OPT_ANNOTATE:
        a->annotate_dir = v;
        return 1;
    case OPT_ANNOTATE_VIDEO:
        a->annotate_video = v;
        return 1;
    case OPT_MAX_FACES:
        return cli_arg_long(o, v, 1, OMMA_PIPELINE_MAX_FACES, &n) && (a->max_faces = (int)n, 1);
    case OPT_MAX_BATCH:
        return cli_arg_long(o, v, 1, OMMA_PIPELINE_MAX_BATCH, &n) && (a->max_batch = (int)n, 1);
    case OPT_DETECT_EVERY:
        return cli_arg_long(o, v, 0, 1000000, &n) && (a->detect_every = (int)n, 1);
    case OPT_THREADS:
        return cli_arg_long(o, v, 0, 256, &n) && (a->threads = (int)n, 1);
    case OPT_MAX_FRAMES:
        return cli_arg_long(o, v, 1, 1000000000L, &n) && (a->max_frames = n, 1);
    case OPT_MIN_SCORE:
        return cli_arg_double(o, v, 0.0, 1.0, &a->min_score);
    case OPT_MIN_PRESENCE:
        return cli_arg_double(o, v, 0.0, 1.0, &a->min_presence);
    case OPT_FACE_MESH: {
        static const char *const meshes[] = {"468", "478"};
        if (!cli_arg_choice(o, v, meshes, 2, &k))
            return 0;
        a->mesh_points = k ? OMMA_FACE_LANDMARKS_WITH_IRISES : OMMA_FACE_LANDMARKS;
        return 1;
    }
    case OPT_HEAD_POSE:
        a->head_pose = 1;
        return 1;
    case OPT_POSE: {
        static const char *const poses[] = {"lite", "full", "heavy"};
        if (!cli_arg_choice(o, v, poses, 3, &k))
            return 0;
        a->pose = poses[k];
        return 1;
    }
    case OPT_DECODE:
        k = io_decode_parse(v);
        if (k < 0) {
            fprintf(stderr, "omma: error: %s %s: expected auto, gpu or cpu\n", o, v);
            return 0;
        }
        a->decode = (io_decode)k;
        return 1;
    }
    return 0;
}

/* CLI_EXIT_OK after --help, CLI_EXIT_USAGE on errors, -1 to go on.
 * Options may come before, between or after the inputs; after "--" every
 * argument is an input. a->inputs has room for argc entries. */
static int parse_args(int argc, char **argv, run_args *a)
{
    const char **inputs = a->inputs;
    memset(a, 0, sizeof *a);
    a->inputs = inputs;
    a->backend = OMMA_BACKEND_CUDA;
    a->decode = IO_DECODE_AUTO;
    a->precision = OMMA_PRECISION_FP16;
    a->max_faces = 4;
    a->max_batch = 16;
    a->min_score = 0.5;
    a->min_presence = 0.5;
    cli_args args;
    cli_args_init(&args, "run", options, argc, argv);
    const cli_option *opt;
    const char *v;
    for (;;) {
        switch (cli_next(&args, &opt, &v)) {
        case CLI_ARG_END:
            return -1;
        case CLI_ARG_HELP:
            usage(stdout);
            return CLI_EXIT_OK;
        case CLI_ARG_ERROR:
            return CLI_EXIT_USAGE;
        case CLI_ARG_POSITIONAL:
            a->inputs[a->n_inputs++] = v;
            break;
        case CLI_ARG_OPTION:
            if (!set_option(a, (int)(opt - options), opt->name, v))
                return cli_see_help("run");
            break;
        }
    }
}

static const char *backend_name(omma_backend b)
{
    return b == OMMA_BACKEND_CPU ? "cpu" : "gpu";
}

static int no_gpu(const char *why)
{
    cli_error("no GPU for the face pipeline (%s); omma run does not fall back to the CPU on "
              "its own: use --backend cpu",
              why);
    return CLI_EXIT_NO_DEVICE;
}

static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* Everything the stepping loop works with. */
typedef struct run_state {
    omma_face_pipeline *p;
    omma_pose_pipeline *pose; /* --pose, else NULL */
    omma_pose poses[1]; /* one person per camera (the pose pipeline's default) */
    long poses_found;
    cli_input *inputs;
    cli_output out;
    cli_annotator ann;
    cli_progress progress;
    int max_faces;
    omma_face *faces; /* batch * max_faces */
    int *counts;
    long *camera_faces; /* faces found per camera, over its frames */
    unsigned char *camera_large; /* a frame of the camera was large (small_faces_hint) */
    long frames, faces_found, batches;
    double batch_ms;
    int output_failed;
    omma_device *decode_dev; /* videos decoded on the GPU: its device */
} run_state;

/* Results of frame i of a batch: the record, the pictures. */
static void emit(run_state *s, int camera, long index, double ts, const omma_frame *frame,
                 const omma_face *faces, int n)
{
    s->frames++;
    s->faces_found += n;
    s->camera_faces[camera] += n;
    if (frame->width > 2 * SHORT_RANGE_INPUT && frame->height > 2 * SHORT_RANGE_INPUT)
        s->camera_large[camera] = 1;
    int n_poses = -1;
    if (s->pose) {
        omma_frame host; /* the pose pipeline reads host frames */
        n_poses = 0;
        if (!cli_input_host_frame(&s->inputs[camera], frame, &host) ||
            omma_pose_pipeline_process(s->pose, camera, &host, s->poses, &n_poses) != OMMA_OK) {
            cli_run_error("%s: frame %ld: pose: %s", s->inputs[camera].path, index,
                          omma_last_error());
            n_poses = 0;
        }
        s->poses_found += n_poses;
    }
    if (!cli_output_frame_poses(&s->out, camera, s->inputs[camera].path, index, ts, NULL, faces, n,
                                s->poses, n_poses))
        s->output_failed = 1;
    if (cli_annotator_wants(&s->ann, camera)) {
        omma_frame host; /* a GPU-decoded frame is drawn on in host memory */
        if (cli_input_host_frame(&s->inputs[camera], frame, &host))
            (void)cli_annotator_frame(&s->ann, camera, index, &host, faces, n); /* reported */
    }
}

/* One batch of k frames (distinct cameras). A batch that fails is run
 * again frame by frame, so that only the input at fault stops. */
static void run_batch(run_state *s, int k, const int *cams, const omma_frame *frames,
                      const long *index, const double *ts)
{
    uint64_t t0 = core_now_ns();
    omma_status st = omma_face_pipeline_process_batch(s->p, k, cams, frames, s->faces, s->counts);
    uint64_t t1 = core_now_ns();
    if (st == OMMA_OK) {
        s->batches++;
        s->batch_ms += (double)(t1 - t0) / 1e6;
        for (int i = 0; i < k; i++)
            emit(s, cams[i], index[i], ts[i], &frames[i], s->faces + (size_t)i * s->max_faces,
                 s->counts[i]);
        return;
    }
    if (k > 1) {
        for (int i = 0; i < k; i++)
            run_batch(s, 1, cams + i, frames + i, index + i, ts + i);
        return;
    }
    cli_input *in = &s->inputs[cams[0]];
    cli_run_error("%s: frame %ld: %s; camera %d stops", in->path, index[0], omma_last_error(),
                  cams[0]);
    in->state = CLI_INPUT_FAILED;
    cli_input_close(in);
}

/* Steps all cameras together until every input has ended or failed. */
static int run_loop(run_state *s, int n_inputs, int batch_cap)
{
    int *cams = malloc((size_t)n_inputs * sizeof *cams);
    omma_frame *frames = malloc((size_t)n_inputs * sizeof *frames);
    long *index = malloc((size_t)n_inputs * sizeof *index);
    double *ts = malloc((size_t)n_inputs * sizeof *ts);
    int ok = cams && frames && index && ts;
    if (!ok)
        cli_run_error("out of memory for %d cameras", n_inputs);
    while (ok && !interrupted && !s->output_failed) {
        int m = 0;
        for (int c = 0; c < n_inputs; c++)
            if (cli_input_next(&s->inputs[c], &frames[m], &index[m], &ts[m]))
                cams[m++] = c;
        if (m == 0)
            break;
        for (int b = 0; b < m && !s->output_failed; b += batch_cap) {
            int k = m - b < batch_cap ? m - b : batch_cap;
            run_batch(s, k, cams + b, frames + b, index + b, ts + b);
        }
        cli_progress_update(&s->progress, s->frames);
    }
    free(cams);
    free(frames);
    free(index);
    free(ts);
    return ok;
}

/* An input whose frames were large and held no face the short-range
 * detector (at its default score or below) could see: say that far faces
 * need the full-range model. */
static void small_faces_hint(const run_state *s, int n_inputs, int full_range, double min_score)
{
    if (full_range || min_score > 0.5) /* a stricter detector was asked for */
        return;
    for (int c = 0; c < n_inputs; c++) {
        const cli_input *in = &s->inputs[c];
        if (in->state != CLI_INPUT_FAILED && in->frames_read > 0 && s->camera_faces[c] == 0 &&
            s->camera_large[c])
            fprintf(stderr,
                    "omma run: no face found in %s; faces far from the camera may need "
                    "--model full\n",
                    in->path);
    }
}

/* The sample inputs: the photo, and the video where it was made and this
 * build reads video. */
static int sample_inputs(const char *data, char *photo, char *video, size_t size, const char **list)
{
    snprintf(photo, size, "%s/%s", data, SAMPLE_PHOTO);
    snprintf(video, size, "%s/%s", data, SAMPLE_VIDEO);
    list[0] = photo;
    struct stat sb;
    if (!io_video_available()) {
        fprintf(stderr,
                "omma run: no input given; running on the sample photo %s only (this "
                "build reads no video)\n",
                photo);
        return 1;
    }
    if (stat(video, &sb) != 0) {
        fprintf(stderr,
                "omma run: no input given; running on the sample photo %s only (the sample "
                "video %s is missing: scripts/fetch-testdata.sh makes it)\n",
                photo, video);
        return 1;
    }
    list[1] = video;
    fprintf(stderr,
            "omma run: no input given; running on the sample: %s (camera 0) and %s "
            "(camera 1)\n",
            photo, video);
    return 2;
}

static int run_parsed(run_args a)
{
    const char *const *inputs = a.inputs;
    int n_inputs = a.n_inputs;
    if (n_inputs > OMMA_PIPELINE_MAX_CAMERAS)
        return cli_usage_error("run", "%d inputs, at most %d (one camera each)", n_inputs,
                               OMMA_PIPELINE_MAX_CAMERAS);
    if (a.backend == OMMA_BACKEND_CUDA) {
        int n = 0;
        omma_status st = omma_device_count(&n);
        if ((st != OMMA_OK || n == 0) && n_inputs == 0 && !a.backend_given) {
            /* The sample without --backend: the first hour on a laptop. */
            fprintf(stderr, "omma run: no NVIDIA GPU or driver found; using the CPU backend "
                            "(slower; --backend gpu insists on a GPU)\n");
            a.backend = OMMA_BACKEND_CPU;
        } else if (st != OMMA_OK || n == 0) {
            return no_gpu(st == OMMA_OK ? "the driver sees no GPU" : omma_last_error());
        }
    }

    const char *data = cli_data_dir();
    char det_path[4096], mesh_path[4096], photo[4096], video[4096], sample_dir[4096];
    char geometry[4096];
    snprintf(geometry, sizeof geometry, "%s/%s", data, GEOMETRY_METADATA);
    snprintf(det_path, sizeof det_path, "%s/%s", data,
             a.full_range ? DETECTOR_FULL : DETECTOR_SHORT);
    snprintf(mesh_path, sizeof mesh_path, "%s/%s", data,
             a.mesh_points == OMMA_FACE_LANDMARKS_WITH_IRISES ? MESH_MODEL_478 : MESH_MODEL);
    const char *sample_list[2] = {NULL, NULL};
    int sample = n_inputs == 0;
    if (sample) {
        n_inputs = sample_inputs(data, photo, video, sizeof photo, sample_list);
        inputs = sample_list;
        if (!a.annotate_dir) {
            const char *tmp = getenv("TMPDIR");
            snprintf(sample_dir, sizeof sample_dir, "%s/%s", tmp && *tmp ? tmp : "/tmp",
                     SAMPLE_ANNOTATE_DIR);
            a.annotate_dir = sample_dir;
        }
    }

    omma_face_pipeline_options opt;
    omma_face_pipeline_options_init(&opt);
    opt.backend = a.backend;
    opt.precision = a.precision;
    opt.detector_model = det_path;
    opt.mesh_model = mesh_path;
    opt.mesh_points = a.mesh_points;
    opt.head_pose = a.head_pose;
    opt.geometry_metadata = geometry;
    opt.max_faces = a.max_faces;
    opt.max_batch = a.max_batch;
    opt.detect_every = a.detect_every;
    opt.threads = a.threads;
    opt.min_detection_score = (float)a.min_score;
    opt.min_presence = (float)a.min_presence;
    run_state s;
    memset(&s, 0, sizeof s);
    s.max_faces = a.max_faces;
    if (a.pose && a.csv)
        return cli_usage_error("run", "--pose writes JSON Lines only (not with --csv)");
    if (a.pose) {
        char pose_det[4096], pose_lm[4096];
        snprintf(pose_det, sizeof pose_det, "%s/%s", data, POSE_DETECTOR);
        snprintf(pose_lm, sizeof pose_lm, "%s/models/pose_landmark_%s.tflite", data, a.pose);
        omma_pose_pipeline_options po;
        omma_pose_pipeline_options_init(&po);
        po.backend = a.backend;
        po.precision = a.precision;
        po.threads = a.threads;
        po.detector_model = pose_det;
        po.landmark_model = pose_lm;
        omma_status pst = omma_pose_pipeline_create(&po, &s.pose);
        if (pst == OMMA_ERR_NO_DEVICE)
            return no_gpu(omma_last_error());
        if (pst != OMMA_OK)
            return cli_fail(pst,
                            "cannot load the pose models from %s/models (set OMMA_DATA, or run "
                            "scripts/fetch-models.sh)",
                            data);
    }
    omma_status st = omma_face_pipeline_create(&opt, &s.p);
    if (st != OMMA_OK)
        omma_pose_pipeline_destroy(s.pose);
    if (st == OMMA_ERR_NO_DEVICE)
        return no_gpu(omma_last_error());
    if (st != OMMA_OK && a.backend == OMMA_BACKEND_CUDA)
        return cli_fail(st,
                        "cannot create the GPU face pipeline (--backend cpu runs the CPU "
                        "one; models from %s/models)",
                        data);
    if (st != OMMA_OK)
        return cli_fail(st,
                        "cannot load the face models from %s/models (set OMMA_DATA, or run "
                        "scripts/fetch-models.sh)",
                        data);

    int batch_cap = a.max_batch < n_inputs ? a.max_batch : n_inputs;
    s.inputs = calloc((size_t)n_inputs, sizeof *s.inputs);
    s.faces = malloc((size_t)batch_cap * (size_t)a.max_faces * sizeof *s.faces);
    s.counts = malloc((size_t)batch_cap * sizeof *s.counts);
    s.camera_faces = calloc((size_t)n_inputs, sizeof *s.camera_faces);
    s.camera_large = calloc((size_t)n_inputs, sizeof *s.camera_large);
    if (!s.inputs || !s.faces || !s.counts || !s.camera_faces || !s.camera_large) {
        fprintf(stderr, "omma: error: out of memory\n");
        free(s.inputs), free(s.faces), free(s.counts);
        free(s.camera_faces), free(s.camera_large);
        omma_face_pipeline_destroy(s.p);
        omma_pose_pipeline_destroy(s.pose);
        return CLI_EXIT_ERROR;
    }
    long total = 0;
    int total_known = 1, video_camera = -1;
    /* Videos decoded on the GPU the pipeline runs on (omma's context on
     * device 0, shared), ready on the host when read. */
    io_video_options vo = {
        a.backend == OMMA_BACKEND_CPU ? IO_DECODE_CPU : a.decode, NULL, 1, NULL, 0, NULL};
    if (vo.decode != IO_DECODE_CPU && omma_device_open(0, &s.decode_dev) != OMMA_OK)
        vo.decode = IO_DECODE_CPU; /* the pipeline has its GPU: not reached in practice */
    vo.device = s.decode_dev;
    for (int c = 0; c < n_inputs; c++) {
        if (!cli_input_open(&s.inputs[c], inputs[c], a.max_frames, &vo))
            continue;
        long n = cli_input_frame_count(&s.inputs[c]);
        total += n;
        total_known &= n > 0;
        if (video_camera < 0 && s.inputs[c].is_video)
            video_camera = c;
    }
    if (video_camera < 0)
        video_camera = 0;
    const char *annotate_video = a.annotate_video;
    char sample_video_out[4200];
    if (sample && !annotate_video && n_inputs > 1 && s.inputs[1].is_video) {
        snprintf(sample_video_out, sizeof sample_video_out, "%s/%s", a.annotate_dir,
                 SAMPLE_VIDEO_OUT);
        annotate_video = sample_video_out;
    }

    unsigned columns = (a.mesh_points == OMMA_FACE_LANDMARKS_WITH_IRISES ? CLI_CSV_IRISES : 0) |
                       (a.head_pose ? CLI_CSV_HEAD_POSE : 0);
    int setup = cli_output_open_columns(&s.out, a.out_path, a.csv, columns);
    if (setup && !cli_annotator_open(&s.ann, a.annotate_dir, annotate_video, video_camera,
                                     cli_input_fps(&s.inputs[video_camera]))) {
        cli_output_close(&s.out, 0);
        setup = 0;
    }
    if (!setup) {
        for (int c = 0; c < n_inputs; c++)
            cli_input_close(&s.inputs[c]);
        free(s.inputs), free(s.faces), free(s.counts);
        free(s.camera_faces), free(s.camera_large);
        omma_face_pipeline_destroy(s.p);
        omma_pose_pipeline_destroy(s.pose);
        return CLI_EXIT_ERROR;
    }

    struct sigaction sa, old_int, old_term;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_interrupt;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);
    cli_progress_start(&s.progress, total_known ? total : 0);
    int loop_ok = run_loop(&s, n_inputs, batch_cap);
    cli_progress_finish(&s.progress);
    double secs = cli_progress_elapsed(&s.progress);
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);

    int failed = 0;
    for (int c = 0; c < n_inputs; c++) {
        failed += s.inputs[c].state == CLI_INPUT_FAILED;
        cli_input_close(&s.inputs[c]);
    }
    int written = cli_output_close(&s.out, 1);
    int annotated = cli_annotator_close(&s.ann, 1);
    omma_face_pipeline_stats stats;
    memset(&stats, 0, sizeof stats);
    omma_face_pipeline_get_stats(s.p, &stats);
    omma_face_pipeline_destroy(s.p);
    omma_pose_pipeline_destroy(s.pose);
    omma_device_close(s.decode_dev);
    free(s.faces), free(s.counts);

    double per = s.frames ? (double)s.frames : 1.0;
    char threads_note[32] = "";
    int threads = omma_cpu_thread_count(a.threads);
    if (a.backend == OMMA_BACKEND_CPU)
        snprintf(threads_note, sizeof threads_note, ", %d thread%s", threads,
                 threads == 1 ? "" : "s");
    fprintf(stderr,
            "omma run: %d input(s), %d failed, %ld frame(s), %ld face(s), %.1f frames/s, mean "
            "latency %.1f ms per batch (%ld batch(es) of up to %d frames), host->device %.0f "
            "B/frame, device->host %.0f B/frame (%s backend%s)%s%s\n",
            n_inputs, failed, s.frames, s.faces_found, secs > 0 ? (double)s.frames / secs : 0.0,
            s.batches ? s.batch_ms / (double)s.batches : 0.0, s.batches, batch_cap,
            (double)stats.h2d_bytes / per, (double)stats.d2h_bytes / per, backend_name(a.backend),
            threads_note, written && a.out_path ? ", written to " : "",
            written && a.out_path ? a.out_path : "");
    if (a.pose)
        fprintf(stderr, "omma run: pose (%s): %ld person(s) over %ld frame(s)\n", a.pose,
                s.poses_found, s.frames);
    if (sample)
        fprintf(stderr, "omma run: sample: %ld face(s) found in %ld frame(s);", s.faces_found,
                s.frames);
    else if (a.annotate_dir || annotate_video)
        fprintf(stderr, "omma run:");
    if (a.annotate_dir)
        fprintf(stderr, " annotated output in %s (%ld PNG(s))", a.annotate_dir, s.ann.pngs);
    if (annotate_video)
        fprintf(stderr, "%s annotated video %s (%ld frame(s)%s)", a.annotate_dir ? "," : "",
                annotate_video, s.ann.video_frames, annotated ? "" : ", failed");
    if (sample || a.annotate_dir || annotate_video)
        fputc('\n', stderr);
    for (int c = 0; c < n_inputs; c++) {
        const io_video_stats *vs = &s.inputs[c].video_stats;
        if (vs->damaged_frames || vs->dropped_packets)
            fprintf(stderr,
                    "omma run: %s: damaged video: %ld damaged frame(s) concealed, %ld "
                    "packet(s) dropped\n",
                    s.inputs[c].path, vs->damaged_frames, vs->dropped_packets);
    }
    small_faces_hint(&s, n_inputs, a.full_range, a.min_score);
    free(s.inputs), free(s.camera_faces), free(s.camera_large);
    if (interrupted) {
        fprintf(stderr, "omma run: interrupted; the output holds the %ld frame(s) done\n",
                s.frames);
        return EXIT_INTERRUPTED;
    }
    return failed || !written || !annotated || !loop_ok ? CLI_EXIT_ERROR : CLI_EXIT_OK;
}

int cli_run(int argc, char **argv)
{
    run_args a;
    a.inputs = malloc((size_t)argc * sizeof *a.inputs);
    if (!a.inputs) {
        fprintf(stderr, "omma: error: out of memory\n");
        return CLI_EXIT_ERROR;
    }
    int rc = parse_args(argc, argv, &a);
    if (rc < 0)
        rc = run_parsed(a);
    free(a.inputs);
    return rc;
}
