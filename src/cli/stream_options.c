#define _POSIX_C_SOURCE 200809L /* strdup */
/* omma stream's command line: sources, GPUs, batching, models, outputs. */
#include "cli/stream_options.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "io/recorder.h"
#include "omma/bus.h"
#include "ui/ui_request.h"
#include "omma/status.h"

#define DEFAULT_PHOTO "testdata/astronaut.png"

#define STR_(x) #x
#define STR(x) STR_(x)

enum {
    OPT_BACKEND,
    OPT_THREADS,
    OPT_GPUS,
    OPT_PLACEMENT,
    OPT_MAX_BATCH,
    OPT_MAX_WAIT_MS,
    OPT_LANES,
    OPT_GRAPHS,
    OPT_REALTIME,
    OPT_LOOP,
    OPT_RTSP_TRANSPORT,
    OPT_CONNECT_TIMEOUT,
    OPT_READ_TIMEOUT,
    OPT_RECONNECT_MAX,
    OPT_BACKOFF_MAX,
    OPT_FPS,
    OPT_RESOLUTION,
    OPT_PER_THREAD,
    OPT_POOL,
    OPT_MAX_FACES,
    OPT_DETECT_EVERY,
    OPT_MIN_SCORE,
    OPT_MIN_PRESENCE,
    OPT_PRECISION,
    OPT_MODEL,
    OPT_POSE,
    OPT_MAX_POSES,
    OPT_DURATION,
    OPT_MAX_FRAMES,
    OPT_OUT,
    OPT_RESULTS,
    OPT_STATUS,
    OPT_STATUS_EVERY,
    OPT_METRICS_PORT,
    OPT_METRICS_BIND,
    OPT_PUBLISH,
    OPT_PUBLISH_SUBSCRIBERS,
    OPT_PUBLISH_WAIT,
    OPT_DECODE,
    OPT_DECODE_GPU_STREAMS,
    OPT_LSL,
    OPT_LSL_NAME,
    OPT_LSL_BIND,
    OPT_DATA,
    OPT_RECORD,
    OPT_RECORD_NAME,
    OPT_RECORD_SEGMENT,
    OPT_SINK,
    OPT_SITE,
    OPT_NODE,
    OPT_SINK_DRAIN,
    OPT_PARTICIPANT,
    OPT_ENROLL,
    OPT_ENROLL_FRAMES,
    OPT_ENROLL_DISTANCE,
    OPT_SYNC_WINDOW,
    OPT_COMODULATION,
    OPT_CONFIG,
    OPT_UI,
    OPT_UI_TOKEN,
    OPT_CLUSTER,
    OPT_CLUSTER_WEIGHT,
    OPT_FACE_MESH,
    OPT_HEAD_POSE,
    OPT_COUNT
};

static const cli_option options[] = {
    [OPT_BACKEND] = {"--backend", "gpu|cpu",
                     "gpu (default; no GPU: exit 3) or cpu: the CPU face\n"
                     "pipeline, one worker taking the newest frame of each\n"
                     "camera (live cameras drop what it cannot keep up with;\n"
                     "files wait), results with gpu -1; the GPU options\n"
                     "(--gpus, --placement, --lanes, --graphs, --pool,\n"
                     "--precision, --max-wait-ms) do not apply"},
    [OPT_THREADS] = {"--threads", "N",
                     "CPU backend: threads the models run on, 1..256, or 0\n"
                     "= one per CPU core (default 0)"},
    [OPT_GPUS] = {"--gpus", "LIST|all", "GPUs to use, e.g. 0,1 (default 0)"},
    [OPT_PLACEMENT] = {"--placement", "round-robin|least-loaded",
                       "cameras to GPUs (default round-robin)"},
    [OPT_MAX_BATCH] = {"--max-batch", "N",
                       "frames per batch, 1.." STR(OMMA_PIPELINE_MAX_BATCH) " (default 64)"},
    [OPT_MAX_WAIT_MS] = {"--max-wait-ms", "MS",
                         "run a batch once its oldest frame waited this long (5)"},
    [OPT_LANES] = {"--lanes", "N",
                   "batches in flight per GPU, 1.." STR(OMMA_PIPELINE_MAX_LANES) " (default 3)"},
    [OPT_GRAPHS] = {"--graphs", "on|off", "each batch as one CUDA graph (default on)"},
    [OPT_REALTIME] = {"--realtime", "on|off", "files at their own rate (default on)"},
    [OPT_LOOP] = {"--loop", NULL, "files start again at their end"},
    [OPT_RTSP_TRANSPORT] = {"--rtsp-transport", "tcp|udp",
                            "rtsp:// cameras: RTP interleaved in the RTSP TCP\n"
                            "connection (default) or over UDP"},
    [OPT_CONNECT_TIMEOUT] = {"--connect-timeout", "S",
                             "network cameras: connecting, up to the stream's\n"
                             "parameters, must take at most S seconds (5)"},
    [OPT_READ_TIMEOUT] = {"--read-timeout", "S",
                          "network cameras: a stream silent for S seconds is\n"
                          "lost and reconnected (5)"},
    [OPT_RECONNECT_MAX] = {"--reconnect-max", "N",
                           "network cameras: fail after N reconnection attempts in\n"
                           "a row (0 = try forever; default 0)"},
    [OPT_BACKOFF_MAX] = {"--backoff-max", "S",
                         "network cameras: the wait before a reconnection starts\n"
                         "at 0.5 s and doubles up to S seconds (30)"},
    [OPT_FPS] = {"--fps", "F", "image sequences' and synthetic cameras' rate (30)"},
    [OPT_RESOLUTION] = {"--resolution", "WxH", "synthetic cameras' frames (1920x1080)"},
    [OPT_PER_THREAD] = {"--cameras-per-thread", "K", "one thread drives K synthetic cameras (1)"},
    [OPT_POOL] = {"--pool", "device|pinned",
                  "synthetic frames in device memory (default: read in\n"
                  "place) or pinned host memory (uploaded per frame)"},
    [OPT_MAX_FACES] = {"--max-faces", "N",
                       "faces tracked per camera, 1.." STR(OMMA_PIPELINE_MAX_FACES) " (default 4)"},
    [OPT_DETECT_EVERY] = {"--detect-every", "K",
                          "also run the detector every K frames while max-faces\n"
                          "faces are tracked; 0 = only when fewer (default 0)"},
    [OPT_MIN_SCORE] = {"--min-score", "S",
                       "detector: keep detections scoring at least S, 0..1 (0.5)"},
    [OPT_MIN_PRESENCE] = {"--min-presence", "P",
                          "FaceMesh: keep tracking a face while its presence is at\n"
                          "least P, 0..1 (default 0.5)"},
    [OPT_PRECISION] = {"--precision", "fp16|fp32", "GPU engines' precision (default fp16)"},
    [OPT_MODEL] = {"--model", "short|full",
                   "detector: short range (default; faces within ~2 m of\n"
                   "the camera) or full range (within ~5 m: smaller faces)"},
    [OPT_POSE] = {"--pose", "lite|full|heavy",
                  "also track body pose (BlazePose, the given landmark\n"
                  "model; off by default) in the same step as the faces,\n"
                  "each pose attached to its face: a \"pose\" array in\n"
                  "each record, NAME_pose LSL streams (both backends)"},
    [OPT_MAX_POSES] = {"--max-poses", "N",
                       "--pose: people tracked per camera, 1.." STR(OMMA_POSE_MAX_POSES) " (1)"},
    [OPT_DURATION] = {"--duration", "S", "stop after S seconds"},
    [OPT_MAX_FRAMES] = {"--max-frames", "N", "at most N frames of each camera"},
    [OPT_OUT] = {"--out", "FILE", "results there (complete when it ends) instead of stdout"},
    [OPT_RESULTS] = {"--results", "on|off", "write results (default on)"},
    [OPT_STATUS] = {"--status", "auto|table|json|off",
                    "live status on stderr: a table redrawn on a\n"
                    "terminal, a JSON line otherwise (auto)"},
    [OPT_STATUS_EVERY] = {"--status-every", "S", "seconds between status reports (1)"},
    [OPT_METRICS_PORT] = {"--metrics-port", "P",
                          "serve OpenMetrics at http://HOST:P/metrics (0: any port)"},
    [OPT_METRICS_BIND] = {"--metrics-bind", "ADDR", "the address it listens on (default all IPv4)"},
    [OPT_PUBLISH] = {"--publish", "NAME",
                     "share every camera's frames (GPU memory, no copy) and\n"
                     "faces with other processes on the frame bus NAME\n"
                     "(omma stream bus:NAME, omma bus ls|watch)"},
    [OPT_PUBLISH_SUBSCRIBERS] = {"--publish-subscribers", "N",
                                 "subscribers attached at once, 1..64 (16); each may\n"
                                 "hold 2 frames per camera"},
    [OPT_PUBLISH_WAIT] = {"--publish-wait", "S",
                          "wait up to S seconds for a first subscriber before the\n"
                          "sources start (a file then reaches it from frame 1)"},
    [OPT_DECODE] = {"--decode", "auto|gpu|cpu",
                    "where videos are decoded: auto (default) the GPU's\n"
                    "NVDEC engines when they can decode the stream and have\n"
                    "room (MJPEG, webcams' too: nvJPEG), else the CPU; gpu:\n"
                    "the GPU or an error; cpu: libavcodec in software (the\n"
                    "CPU backend always)"},
    [OPT_DECODE_GPU_STREAMS] = {"--decode-gpu-streams", "N",
                                "auto: 1080p30-equivalent streams each GPU decodes\n"
                                "before more go to the CPU (160; 0: no limit)"},
    [OPT_LSL] = {"--lsl", NULL,
                 "stream every camera on the Lab Streaming Layer:\n"
                 "NAME_landmarks (Landmark, 1417 float32 channels),\n"
                 "NAME_face (FaceMeasures: head pose, eyes, mouth) and\n"
                 "NAME_frames (VideoSync), stamped at capture time\n"
                 "(docs/OUTPUT.md)"},
    [OPT_LSL_NAME] = {"--lsl-name", "NAMES",
                      "the cameras' names on LSL and in --data files,\n"
                      "comma-separated, one per camera (default cam0,\n"
                      "cam1, ...)"},
    [OPT_LSL_BIND] = {"--lsl-bind", "ADDR",
                      "serve LSL on this IPv4 address: 127.0.0.1 (default,\n"
                      "this machine) or 0.0.0.0 (the lab network: LSL has no\n"
                      "authentication, use a trusted network)"},
    [OPT_DATA] = {"--data", "DIR",
                  "per-frame CSV files there (made if missing): NAME.csv\n"
                  "per camera, one row per frame with its capture time\n"
                  "and the landmarks as on LSL; whole rows, written at\n"
                  "least every half second; existing files are kept"},
    [OPT_RECORD] = {"--record", "DIR",
                    "record every camera's video there (made if missing) as\n"
                    "it arrives: compressed streams (videos, network\n"
                    "cameras) remuxed as they are, raw frames (V4L2, images)\n"
                    "encoded with libx264; Matroska files with a CSV beside\n"
                    "each: frame numbers (as NAME_frames on LSL), times in\n"
                    "the file, capture times (docs/RECORDING.md)"},
    [OPT_RECORD_NAME] = {"--record-name", "TEMPLATE",
                         "the files' names: {camera} (its name, as on LSL),\n"
                         "{participant}, {start} (UTC), {segment} (0001...),\n"
                         "ending in .mkv (default " IO_RECORD_DEFAULT_NAME ")"},
    [OPT_RECORD_SEGMENT] = {"--record-segment", "DURATION|SIZE",
                            "a new file after this long (90s, 10m, 1h) or this\n"
                            "size (500MB, 2GB), at a key frame; none by default"},
    [OPT_SINK] = {"--sink", "URL",
                  "also send every frame's result to a message system\n"
                  "(repeat for several): kafka://BROKERS/TOPIC,\n"
                  "nats://HOST:PORT[/PREFIX] (JetStream), mqtt://HOST:PORT\n"
                  "[/PREFIX]; options after '?' (docs/SINKS.md)"},
    [OPT_UI] = {"--ui", "[ADDR:]PORT",
                "a live view in the browser at http://ADDR:PORT/ (ADDR\n"
                "127.0.0.1 unless given; 0: any port): every camera,\n"
                "its faces and numbers, the GPUs (docs/UI.md)"},
    [OPT_UI_TOKEN] = {"--ui-token", "TOKEN",
                      "the live view's access token, 16..128 of A-Za-z0-9_-\n"
                      "(required on every request; off loopback one is\n"
                      "generated and printed when not given)"},
    [OPT_SITE] = {"--site", "NAME", "the sinks' {site} in subjects and topics (default)"},
    [OPT_NODE] = {"--node", "NAME", "this node's name in sink messages (the host name)"},
    [OPT_SINK_DRAIN] = {"--sink-drain", "S",
                        "at the end, wait up to S seconds for the sinks'\n"
                        "acknowledgements (10); what is left is dropped"},
    [OPT_PARTICIPANT] = {"--participant", "SPEC",
                         "NAME=CAMERA[:X,Y,W,H[px]]: a person measured on CAMERA\n"
                         "(its name or index), up to 16 (repeat): the face in\n"
                         "the region X,Y,W,H (fractions of the frame; pixels\n"
                         "with px), or without one by position (listed left to\n"
                         "right); then followed by its track. LSL streams and\n"
                         "--data files become per participant, plus\n"
                         "CoModulation (docs/OUTPUT.md)"},
    [OPT_ENROLL] = {"--enroll", NULL,
                    "take each participant's face-shape signature in its\n"
                    "first frames and re-identify it by that after a loss"},
    [OPT_ENROLL_FRAMES] = {"--enroll-frames", "N", "frames averaged into a signature (15)"},
    [OPT_ENROLL_DISTANCE] = {"--enroll-distance", "D",
                             "largest signature distance that re-identifies, 0..2\n"
                             "(0.025)"},
    [OPT_SYNC_WINDOW] = {"--sync-window", "S",
                         "participants' synchrony: correlation window in\n"
                         "seconds at the cameras' rate (2)"},
    [OPT_COMODULATION] = {"--comodulation", NULL,
                          "also the previous tool's co-modulation detector on\n"
                          "CoModulation (60 and 300 frame windows)"},
    [OPT_CONFIG] = {"--config", "FILE",
                    "settings from a JSON file (docs/CONFIG.md): every option\n"
                    "by its name, plus cameras, participants, regions,\n"
                    "outputs, thresholds; options given here win"},
    [OPT_CLUSTER] = {"--cluster", "URL",
                     "share cameras out with other nodes through NATS\n"
                     "JetStream's key-value store instead of SOURCEs:\n"
                     "nats://HOST:PORT[,HOST:PORT...][/BUCKET][?lease_ms=\n"
                     "&replicas=] (omma cluster add|rm|ls|drain;\n"
                     "docs/CLUSTER.md); needs --node"},
    [OPT_CLUSTER_WEIGHT] = {"--cluster-weight", "N",
                            "cameras this node takes at most, and its weight in\n"
                            "the split (default 0: no limit, weight 1)"},
    [OPT_FACE_MESH] = {"--face-mesh", "468|478",
                       "FaceMesh's points: 468 (default) or 478 (the attention\n"
                       "mesh: irises, refined eyes and lips; CPU backend)"},
    [OPT_HEAD_POSE] = {"--head-pose", NULL,
                       "also each face's head pose in the JSON records (a\n"
                       "\"head_pose\" object; docs/OUTPUT.md)"},
    [OPT_COUNT] = {NULL, NULL, NULL},
};

void cli_stream_usage(FILE *to)
{
    fprintf(to,
            "usage: omma stream [OPTIONS] SOURCE...\n"
            "  The multi-camera runtime: every SOURCE is a camera captured by its own thread\n"
            "  into a GPU frame ring; one worker per GPU batches the newest frame of each of\n"
            "  its cameras (face detection, FaceMesh, tracking) and results come out as JSON\n"
            "  Lines (as omma run's, plus gpu, latency_ms and dropped). Runs until every\n"
            "  source ends, --duration passes, or SIGINT/SIGTERM (a second one exits at once).\n"
            "  SOURCE: a video file (played at its rate; --realtime off: as fast as it\n"
            "  decodes), a directory of PNG/JPEG images or a pattern with %%d (--fps), a V4L2\n"
            "  camera /dev/videoN, a network camera rtsp://... (RTSP, H.264/HEVC/MJPEG...)\n"
            "  or http(s)://... (MJPEG multipart streams, HLS playlists): reconnected with\n"
            "  backoff when its stream is lost (the status says reconnecting, attempt N),\n"
            "  capture times from the stream's RTCP wall clock when it sends one,\n"
            "  synthetic[:N]: N synthetic cameras (default 1) moving the\n"
            "  photo's face over a frame at --fps (ground truth known; load tests), or\n"
            "  bus:NAME[/CAMERAS]: the cameras (all, or a list like 0,2) another omma\n"
            "  process publishes with --publish NAME, read in GPU memory.\n");
    cli_print_options(to, options);
    fprintf(to, "  Exit codes: 0 ok, 1 a source or the run failed, 2 usage, 3 no GPU (without\n"
                "  --backend cpu), 130 interrupted (outputs hold every result delivered).\n");
}

static int parse_onoff(const char *opt, const char *s, int *v)
{
    if (strcmp(s, "on") == 0 || strcmp(s, "off") == 0) {
        *v = strcmp(s, "on") == 0;
        return 1;
    }
    fprintf(stderr, "omma: error: %s %s: expected on or off\n", opt, s);
    return 0;
}

static int parse_gpus(const char *s, cli_stream_opts *o)
{
    if (strcmp(s, "all") == 0) {
        o->all_gpus = 1;
        return 1;
    }
    int n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        long g = strtol(p, &end, 10);
        if (errno || end == p || g < 0 || g > 63 || (*end && *end != ',') || n == RT_MAX_GPUS) {
            fprintf(stderr, "omma: error: --gpus %s: expected all or up to %d ordinals like 0,1\n",
                    s, RT_MAX_GPUS);
            return 0;
        }
        for (int i = 0; i < n; i++)
            if (o->gpus[i] == (int)g) {
                fprintf(stderr, "omma: error: --gpus %s: GPU %ld twice\n", s, g);
                return 0;
            }
        o->gpus[n++] = (int)g;
        p = *end ? end + 1 : end;
    }
    if (n == 0) {
        fprintf(stderr, "omma: error: --gpus: no GPU given\n");
        return 0;
    }
    o->rt.n_gpus = n;
    return 1;
}

/* A camera spec the options own (freed with them). */
static const char *own_spec(cli_stream_opts *o, const char *spec)
{
    char **more = realloc(o->owned, (size_t)(o->n_owned + 1) * sizeof *more);
    if (!more)
        return NULL;
    o->owned = more;
    o->owned[o->n_owned] = strdup(spec);
    return o->owned[o->n_owned] ? o->owned[o->n_owned++] : NULL;
}

/* bus:NAME (every camera the publisher has now) or bus:NAME/0,2: one
 * camera "bus:NAME/I" each. */
static int add_bus(cli_stream_opts *o, const char *arg, long max_frames)
{
    char name[64];
    const char *rest = arg + 4, *slash = strchr(rest, '/');
    size_t n = slash ? (size_t)(slash - rest) : strlen(rest);
    if (n == 0 || n >= sizeof name || (slash && !slash[1])) {
        fprintf(stderr, "omma: error: %s: expected bus:NAME or bus:NAME/CAMERAS\n", arg);
        return 0;
    }
    memcpy(name, rest, n);
    name[n] = '\0';
    int list[OMMA_PIPELINE_MAX_CAMERAS], count = 0;
    if (slash) {
        for (const char *p = slash + 1; *p;) {
            char *end;
            long v = strtol(p, &end, 10);
            if (end == p || v < 0 || v > 1023 || (*end && *end != ',') ||
                count == OMMA_PIPELINE_MAX_CAMERAS) {
                fprintf(stderr, "omma: error: %s: expected camera indices like 0,2\n", arg);
                return 0;
            }
            list[count++] = (int)v;
            p = *end ? end + 1 : end;
        }
    } else {
        omma_bus_options bo;
        omma_bus_options_init(&bo);
        bo.watch = 1;
        omma_bus_subscriber *w = NULL;
        omma_status st = omma_bus_subscribe(NULL, name, &bo, &w);
        if (st != OMMA_OK) {
            cli_error("%s: %s", arg, omma_last_error());
            return 0;
        }
        count = omma_bus_camera_count(w);
        for (int i = 0; i < count && i < OMMA_PIPELINE_MAX_CAMERAS; i++) {
            omma_bus_camera_info ci;
            list[i] = omma_bus_camera_info_get(w, i, &ci) == OMMA_OK ? ci.index : i;
        }
        omma_bus_close(w);
    }
    if (o->rt.n_cameras + count > OMMA_PIPELINE_MAX_CAMERAS) {
        fprintf(stderr, "omma: error: more than %d cameras\n", OMMA_PIPELINE_MAX_CAMERAS);
        return 0;
    }
    for (int i = 0; i < count; i++) {
        char spec[96];
        snprintf(spec, sizeof spec, "bus:%s/%d", name, list[i]);
        rt_camera_config *c = &o->cameras[o->rt.n_cameras++];
        c->spec = own_spec(o, spec);
        c->name = NULL;
        c->max_frames = max_frames;
        if (!c->spec) {
            fprintf(stderr, "omma: error: out of memory\n");
            return 0;
        }
    }
    return 1;
}

/* synthetic or synthetic:N adds N synthetic cameras, bus:... the cameras of
 * a frame bus; anything else is a source. */
static int add_source(cli_stream_opts *o, const char *arg, long max_frames)
{
    if (strncmp(arg, "bus:", 4) == 0)
        return add_bus(o, arg, max_frames);
    long n = 1;
    int synthetic = strcmp(arg, "synthetic") == 0 || strncmp(arg, "synthetic:", 10) == 0;
    if (synthetic && arg[9] == ':' && !cli_arg_long("synthetic:N", arg + 10, 1, 4096, &n))
        return 0;
    if (o->rt.n_cameras + n > OMMA_PIPELINE_MAX_CAMERAS) {
        fprintf(stderr, "omma: error: more than %d cameras\n", OMMA_PIPELINE_MAX_CAMERAS);
        return 0;
    }
    for (long i = 0; i < n; i++) {
        rt_camera_config *c = &o->cameras[o->rt.n_cameras++];
        c->spec = synthetic ? NULL : arg;
        c->name = NULL;
        c->max_frames = max_frames;
    }
    return 1;
}

static int valid_name(const char *s, size_t n)
{
    if (n == 0 || n >= CLI_CAMERA_NAME_MAX)
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.'))
            return 0;
    }
    return 1;
}

/* o->names from --lsl-name (one per camera, distinct) or cam0, cam1... */
static int name_cameras(cli_stream_opts *o)
{
    int n = o->rt.n_cameras;
    o->names = calloc((size_t)(n > 0 ? n : 1), sizeof *o->names);
    if (!o->names) {
        fprintf(stderr, "omma: error: out of memory\n");
        return 0;
    }
    const char *p = o->lsl_names;
    for (int i = 0; i < n; i++) {
        if (!o->lsl_names) {
            snprintf(o->names[i], sizeof o->names[i], "cam%d", i);
            continue;
        }
        const char *end = p ? strchr(p, ',') : NULL;
        size_t len = p ? (end ? (size_t)(end - p) : strlen(p)) : 0;
        if (!p || !valid_name(p, len)) {
            fprintf(stderr,
                    "omma: error: --lsl-name %s: expected %d name%s (letters, digits, _ - .; "
                    "comma-separated), one per camera\n",
                    o->lsl_names, n, n == 1 ? "" : "s");
            return 0;
        }
        memcpy(o->names[i], p, len);
        o->names[i][len] = '\0';
        p = end ? end + 1 : NULL;
        for (int k = 0; k < i; k++)
            if (strcmp(o->names[k], o->names[i]) == 0) {
                fprintf(stderr, "omma: error: --lsl-name %s: %s twice\n", o->lsl_names,
                        o->names[i]);
                return 0;
            }
    }
    if (o->lsl_names && p) {
        fprintf(stderr, "omma: error: --lsl-name %s: more names than the %d camera%s\n",
                o->lsl_names, n, n == 1 ? "" : "s");
        return 0;
    }
    return 1;
}

/* Whether two --participant values name the same participant. */
static int same_participant(const char *a, const char *b)
{
    size_t na = strcspn(a, "="), nb = strcspn(b, "=");
    return na == nb && strncmp(a, b, na) == 0;
}

/* NAME=CAMERA[:X,Y,W,H[px]] into *p, CAMERA a camera's name or index. */
static int parse_participant(const cli_stream_opts *o, const char *v, rt_participant_spec *p)
{
    memset(p, 0, sizeof *p);
    const char *eq = strchr(v, '=');
    size_t n = eq ? (size_t)(eq - v) : strlen(v);
    if (!valid_name(v, n) || n >= sizeof p->name) {
        fprintf(stderr,
                "omma: error: --participant %s: expected NAME=CAMERA[:X,Y,W,H[px]], NAME of "
                "letters, digits, _ - . (at most %d)\n",
                v, (int)sizeof p->name - 1);
        return 0;
    }
    memcpy(p->name, v, n);
    const char *cam = eq ? eq + 1 : "0";
    size_t cn = strcspn(cam, ":");
    p->camera = -1;
    for (int i = 0; i < o->rt.n_cameras; i++)
        if (strlen(o->names[i]) == cn && strncmp(o->names[i], cam, cn) == 0)
            p->camera = i;
    if (p->camera < 0) {
        char *end;
        long k = strtol(cam, &end, 10);
        if (end == cam + cn && cn > 0 && k >= 0 && k < o->rt.n_cameras)
            p->camera = (int)k;
    }
    if (p->camera < 0) {
        fprintf(stderr,
                "omma: error: --participant %s: no camera '%.*s' (a name from --lsl-name "
                "or cameras' names, or an index 0..%d)\n",
                v, (int)cn, cam, o->rt.n_cameras - 1);
        return 0;
    }
    if (!cam[cn])
        return 1;
    const char *r = cam + cn + 1;
    int used = 0;
    if (sscanf(r, "%lf,%lf,%lf,%lf%n", &p->region[0], &p->region[1], &p->region[2], &p->region[3],
               &used) != 4 ||
        (strcmp(r + used, "") != 0 && strcmp(r + used, "px") != 0)) {
        fprintf(stderr,
                "omma: error: --participant %s: expected the region as X,Y,W,H "
                "(fractions of the frame) or X,Y,W,Hpx (pixels)\n",
                v);
        return 0;
    }
    p->has_region = 1;
    p->region_pixels = r[used] == 'p';
    return 1;
}

/* The participants, once the cameras are named; their checks. */
static int parse_participants(cli_stream_opts *o)
{
    for (int i = 0; i < o->n_participants; i++)
        if (!parse_participant(o, o->participant_specs[i], &o->participants[i])) {
            const cli_config_item *it = o->participant_from[i];
            if (it)
                fprintf(stderr,
                        "omma: error: --config %s:%d: key %s: that participant is "
                        "refused\n",
                        o->config.path, it->line, it->key);
            return 0;
        }
    if (o->n_participants == 0)
        return 1;
    rt_participants_config pc = {o->n_participants, o->participants, o->enroll, o->enroll_frames,
                                 o->enroll_distance};
    rt_participants *ps = NULL;
    omma_status st = rt_participants_create(&pc, &ps);
    rt_participants_destroy(ps);
    if (st != OMMA_OK) {
        fprintf(stderr, "omma: error: --participant: %s\n", omma_last_error());
        return 0;
    }
    return 1;
}

/* --config's value on the command line (NULL: none); *positional: whether
 * SOURCEs are given there too. */
static const char *find_config(int argc, char **argv, int *positional)
{
    const char *path = NULL;
    *positional = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            *positional |= i + 1 < argc;
            break;
        }
        if (a[0] != '-' || !a[1]) {
            *positional = 1;
            continue;
        }
        if (strncmp(a, "--config=", 9) == 0) {
            path = a + 9;
            continue;
        }
        size_t n = strcspn(a, "=");
        for (const cli_option *op = options; op->name; op++)
            if (strlen(op->name) == n && strncmp(op->name, a, n) == 0 && op->value && !a[n] &&
                i + 1 < argc) {
                if (strcmp(op->name, "--config") == 0)
                    path = argv[i + 1];
                i++;
                break;
            }
    }
    return path;
}

/* One option's value into o. Returns 1, or 0 after the message. */
static int option(int id, const char *a, const char *v, cli_stream_opts *o, long *max_frames,
                  int *full_range)
{
    if (id == OPT_LOOP) {
        o->rt.source.loop = 1;
        return 1;
    }
    if (id == OPT_LSL) {
        o->lsl = 1;
        return 1;
    }
    if (id == OPT_LSL_NAME)
        return o->lsl_names = v, 1;
    if (id == OPT_LSL_BIND)
        return o->lsl_bind = v, o->lsl = 1, 1;
    if (id == OPT_DATA)
        return o->data_dir = v, 1;
    if (id == OPT_CONFIG)
        return 1; /* read before the rest */
    if (id == OPT_ENROLL)
        return o->enroll = 1, 1;
    if (id == OPT_COMODULATION)
        return o->comodulation = 1, 1;
    if (id == OPT_PARTICIPANT) {
        for (int i = 0; i < o->n_participants; i++) /* a config's, replaced */
            if (same_participant(o->participant_specs[i], v)) {
                o->participant_from[i] = NULL;
                return o->participant_specs[i] = v, 1;
            }
        if (o->n_participants == RT_PARTICIPANTS_MAX) {
            fprintf(stderr, "omma: error: --participant: at most %d participants\n",
                    RT_PARTICIPANTS_MAX);
            return 0;
        }
        return o->participant_specs[o->n_participants++] = v, 1;
    }
    if (id == OPT_RECORD)
        return o->record_dir = v, 1;
    if (id == OPT_RECORD_NAME)
        return o->record_name = v, 1;
    if (id == OPT_RECORD_SEGMENT) {
        if (io_record_parse_segment(v, &o->record_segment_ns, &o->record_segment_bytes) == OMMA_OK)
            return 1;
        fprintf(stderr, "omma: error: --record-segment: %s\n", omma_last_error());
        return 0;
    }
    long n;
    double d;
    rt_runtime_config *rt = &o->rt;
    if (strcmp(a, "--backend") == 0) {
        if (strcmp(v, "gpu") && strcmp(v, "cuda") && strcmp(v, "cpu")) {
            fprintf(stderr, "omma: error: --backend %s: expected gpu or cpu\n", v);
            return 0;
        }
        rt->pipeline.backend = strcmp(v, "cpu") ? OMMA_BACKEND_CUDA : OMMA_BACKEND_CPU;
        return 1;
    }
    if (id == OPT_MIN_SCORE && cli_arg_double(a, v, 0.0, 1.0, &d))
        return rt->pipeline.min_detection_score = (float)d, 1;
    if (id == OPT_MIN_PRESENCE && cli_arg_double(a, v, 0.0, 1.0, &d))
        return rt->pipeline.min_presence = (float)d, 1;
    if (strcmp(a, "--threads") == 0 && cli_arg_long(a, v, 0, 256, &n))
        return rt->pipeline.threads = (int)n, 1;
    if (strcmp(a, "--gpus") == 0)
        return parse_gpus(v, o);
    if (strcmp(a, "--placement") == 0) {
        if (strcmp(v, "round-robin") && strcmp(v, "least-loaded")) {
            fprintf(stderr, "omma: error: --placement %s: expected round-robin or least-loaded\n",
                    v);
            return 0;
        }
        rt->placement = strcmp(v, "round-robin") ? RT_PLACE_LEAST_LOADED : RT_PLACE_ROUND_ROBIN;
        return 1;
    }
    if (strcmp(a, "--max-batch") == 0 && cli_arg_long(a, v, 1, OMMA_PIPELINE_MAX_BATCH, &n))
        return rt->pipeline.max_batch = (int)n, 1;
    if (strcmp(a, "--max-wait-ms") == 0 && cli_arg_long(a, v, 0, 10000, &n))
        return rt->max_wait_ms = (int)n, 1;
    if (strcmp(a, "--lanes") == 0 && cli_arg_long(a, v, 1, OMMA_PIPELINE_MAX_LANES, &n))
        return rt->pipeline.lanes = (int)n, 1;
    if (strcmp(a, "--graphs") == 0)
        return parse_onoff(a, v, &rt->pipeline.graphs);
    if (strcmp(a, "--realtime") == 0)
        return parse_onoff(a, v, &rt->source.realtime);
    if (id == OPT_RTSP_TRANSPORT) {
        if (strcmp(v, "tcp") && strcmp(v, "udp")) {
            fprintf(stderr, "omma: error: --rtsp-transport %s: expected tcp or udp\n", v);
            return 0;
        }
        rt->source.rtsp_udp = strcmp(v, "udp") == 0;
        return 1;
    }
    if (id == OPT_CONNECT_TIMEOUT && cli_arg_double(a, v, 0.001, 3600.0, &d))
        return rt->source.connect_timeout_ms = (int)(d * 1000.0 + 0.5), 1;
    if (id == OPT_READ_TIMEOUT && cli_arg_double(a, v, 0.001, 3600.0, &d))
        return rt->source.read_timeout_ms = (int)(d * 1000.0 + 0.5), 1;
    if (id == OPT_RECONNECT_MAX && cli_arg_long(a, v, 0, 1000000, &n))
        return rt->source.reconnect_max = (int)n, 1;
    if (id == OPT_BACKOFF_MAX && cli_arg_double(a, v, 0.5, 3600.0, &d))
        return rt->source.backoff_max_ms = (int)(d * 1000.0 + 0.5), 1;
    if (strcmp(a, "--fps") == 0 && cli_arg_double(a, v, 0.001, 1000.0, &d))
        return rt->source.fps = d, rt->synthetic.fps = d, 1;
    if (strcmp(a, "--resolution") == 0) {
        int w = 0, h = 0;
        char tail;
        if (sscanf(v, "%dx%d%c", &w, &h, &tail) != 2 || w < 64 || h < 64 || w > 8192 || h > 8192 ||
            w % 2 || h % 2) {
            fprintf(stderr, "omma: error: --resolution %s: expected WxH, even, 64..8192\n", v);
            return 0;
        }
        rt->synthetic.width = w, rt->synthetic.height = h;
        return 1;
    }
    if (strcmp(a, "--pool") == 0) {
        if (strcmp(v, "device") && strcmp(v, "pinned")) {
            fprintf(stderr, "omma: error: --pool %s: expected device or pinned\n", v);
            return 0;
        }
        rt->pool_memory = strcmp(v, "device") ? OMMA_MEMORY_HOST : OMMA_MEMORY_DEVICE;
        return 1;
    }
    if (strcmp(a, "--max-faces") == 0 && cli_arg_long(a, v, 1, OMMA_PIPELINE_MAX_FACES, &n))
        return rt->pipeline.max_faces = (int)n, 1;
    if (strcmp(a, "--detect-every") == 0 && cli_arg_long(a, v, 0, 1000000, &n))
        return rt->pipeline.detect_every = (int)n, 1;
    if (strcmp(a, "--precision") == 0) {
        if (strcmp(v, "fp16") && strcmp(v, "fp32")) {
            fprintf(stderr, "omma: error: --precision %s: expected fp16 or fp32\n", v);
            return 0;
        }
        rt->pipeline.precision = strcmp(v, "fp16") ? OMMA_PRECISION_FP32 : OMMA_PRECISION_FP16;
        return 1;
    }
    if (strcmp(a, "--model") == 0) {
        if (strcmp(v, "short") && strcmp(v, "full")) {
            fprintf(stderr, "omma: error: --model %s: expected short or full\n", v);
            return 0;
        }
        *full_range = strcmp(v, "full") == 0;
        return 1;
    }
    if (id == OPT_POSE) {
        if (strcmp(v, "lite") && strcmp(v, "full") && strcmp(v, "heavy")) {
            fprintf(stderr, "omma: error: --pose %s: expected lite, full or heavy\n", v);
            return 0;
        }
        snprintf(o->pose, sizeof o->pose, "%s", v);
        return 1;
    }
    if (id == OPT_MAX_POSES && cli_arg_long(a, v, 1, OMMA_POSE_MAX_POSES, &n))
        return rt->pose.max_poses = (int)n, 1;
    if (strcmp(a, "--duration") == 0 && cli_arg_double(a, v, 0.001, 1e7, &d))
        return o->duration_s = d, 1;
    if (strcmp(a, "--max-frames") == 0 && cli_arg_long(a, v, 1, 1000000000L, &n))
        return *max_frames = n, 1;
    if (strcmp(a, "--out") == 0)
        return o->out = v, 1;
    if (strcmp(a, "--results") == 0)
        return parse_onoff(a, v, &o->results);
    if (strcmp(a, "--status") == 0) {
        static const char *const modes[] = {"auto", "table", "json", "off"};
        for (int k = 0; k < 4; k++)
            if (strcmp(v, modes[k]) == 0)
                return o->status = (cli_status_mode)k, 1;
        fprintf(stderr, "omma: error: --status %s: expected auto, table, json or off\n", v);
        return 0;
    }
    if (strcmp(a, "--status-every") == 0 && cli_arg_double(a, v, 0.1, 3600.0, &d))
        return o->status_interval_s = d, 1;
    if (strcmp(a, "--metrics-port") == 0 && cli_arg_long(a, v, 0, 65535, &n))
        return o->metrics_port = (int)n, 1;
    if (strcmp(a, "--cameras-per-thread") == 0 && cli_arg_long(a, v, 1, 4096, &n))
        return rt->synthetic_per_thread = (int)n, 1;
    if (strcmp(a, "--metrics-bind") == 0)
        return o->metrics_bind = v, 1;
    if (id == OPT_PUBLISH)
        return rt->publish = v, 1;
    if (id == OPT_PUBLISH_SUBSCRIBERS && cli_arg_long(a, v, 1, 64, &n))
        return rt->publish_subscribers = (int)n, 1;
    if (id == OPT_PUBLISH_WAIT && cli_arg_double(a, v, 0.0, 3600.0, &d))
        return rt->publish_wait_ms = (int)(d * 1000.0), 1;
    if (id == OPT_DECODE) {
        int m = io_decode_parse(v);
        if (m < 0) {
            fprintf(stderr, "omma: error: --decode %s: expected auto, gpu or cpu\n", v);
            return 0;
        }
        return rt->source.decode = (io_decode)m, 1;
    }
    if (id == OPT_DECODE_GPU_STREAMS && cli_arg_long(a, v, 0, 100000, &n))
        return rt->decode_gpu_streams = (int)n, 1;
    if (id == OPT_SINK) {
        if (o->n_sinks == CLI_MAX_SINKS) {
            fprintf(stderr, "omma: error: --sink: at most %d sinks\n", CLI_MAX_SINKS);
            return 0;
        }
        return o->sinks[o->n_sinks++] = v, 1;
    }
    if (id == OPT_UI) {
        char err[128];
        if (!ui_parse_listen(v, o->ui_addr, sizeof o->ui_addr, &o->ui_port, err, sizeof err)) {
            fprintf(stderr, "omma: error: --ui %s: %s\n", v, err);
            return 0;
        }
        return o->ui = v, 1;
    }
    if (id == OPT_UI_TOKEN) {
        if (!ui_token_valid(v)) {
            fprintf(stderr,
                    "omma: error: --ui-token: expected %d..%d characters of A-Z a-z 0-9 _ -\n",
                    UI_TOKEN_MIN, UI_TOKEN_MAX);
            return 0;
        }
        return o->ui_token = v, 1;
    }
    if (id == OPT_SITE)
        return o->site = v, 1;
    if (id == OPT_NODE)
        return o->node = v, 1;
    if (id == OPT_CLUSTER)
        return o->cluster = v, 1;
    if (id == OPT_CLUSTER_WEIGHT && cli_arg_long(a, v, 0, 1000000, &n))
        return o->cluster_weight = n, 1;
    if (id == OPT_FACE_MESH) {
        if (strcmp(v, "468") && strcmp(v, "478")) {
            fprintf(stderr, "omma: error: --face-mesh %s: expected 468 or 478\n", v);
            return 0;
        }
        return rt->pipeline.mesh_points = atoi(v), 1;
    }
    if (id == OPT_HEAD_POSE)
        return rt->pipeline.head_pose = 1, 1;
    if (id == OPT_SINK_DRAIN && cli_arg_double(a, v, 0.0, 3600.0, &d))
        return o->sink_drain_s = d, 1;
    if (id == OPT_ENROLL_FRAMES && cli_arg_long(a, v, 1, 1000, &n))
        return o->enroll_frames = (int)n, 1;
    if (id == OPT_ENROLL_DISTANCE && cli_arg_double(a, v, 0.0001, 2.0, &d))
        return o->enroll_distance = d, 1;
    if (id == OPT_SYNC_WINDOW && cli_arg_double(a, v, 0.1, 3600.0, &d))
        return o->sync_window_s = d, 1;
    return 0; /* a value that did not parse: said so above */
}

int cli_stream_parse(int argc, char **argv, cli_stream_opts *o)
{
    memset(o, 0, sizeof *o);
    rt_runtime_config_init(&o->rt);
    o->results = 1;
    o->status_interval_s = 1.0;
    o->metrics_port = -1;
    o->sink_drain_s = 10.0;
    o->enroll_frames = 15;
    o->enroll_distance = 0.025;
    o->sync_window_s = 2.0;
    o->rt.n_gpus = 1;
    o->gpus[0] = 0;
    o->rt.source.decode = IO_DECODE_AUTO;
    o->cameras = calloc(OMMA_PIPELINE_MAX_CAMERAS, sizeof *o->cameras);
    const char **sources = calloc((size_t)argc + 1, sizeof *sources);
    if (!o->cameras || !sources) {
        free(sources);
        fprintf(stderr, "omma: error: out of memory\n");
        return CLI_EXIT_ERROR;
    }
    long max_frames = 0;
    int full_range = 0, n_sources = 0, cli_sources = 0;
    const char *config = find_config(argc, argv, &cli_sources);
    if (config) {
        char err[1024];
        if (!cli_config_load(config, options, &o->config, err, sizeof err)) {
            free(sources);
            fprintf(stderr, "omma: error: --config %s\n", err);
            return cli_see_help("stream");
        }
        const char **more = realloc(sources, (size_t)(argc + 1 + o->config.n) * sizeof *more);
        if (!more) {
            free(sources);
            fprintf(stderr, "omma: error: out of memory\n");
            return CLI_EXIT_ERROR;
        }
        sources = more;
        for (int i = 0; i < o->config.n; i++) {
            const cli_config_item *it = &o->config.items[i];
            if (!it->option) {
                if (!cli_sources) /* the command line's SOURCEs replace the file's */
                    sources[n_sources++] = it->value;
                continue;
            }
            if (cli_sources && (int)(it->option - options) == OPT_LSL_NAME)
                continue; /* the file's cameras' names, with its cameras */
            int before = o->n_participants;
            int ok = option((int)(it->option - options), it->option->name, it->value, o,
                            &max_frames, &full_range);
            if (ok && o->n_participants > before)
                o->participant_from[before] = it;
            if (!ok) {
                fprintf(stderr, "omma: error: --config %s:%d: key %s: that value is refused\n",
                        o->config.path, it->line, it->key);
                free(sources);
                return cli_see_help("stream");
            }
        }
    }
    cli_args args;
    cli_args_init(&args, "stream", options, argc, argv);
    const cli_option *opt;
    const char *v;
    for (cli_arg_kind k; (k = cli_next(&args, &opt, &v)) != CLI_ARG_END;) {
        int rc = -1;
        if (k == CLI_ARG_HELP) {
            cli_stream_usage(stdout);
            rc = CLI_EXIT_OK;
        } else if (k == CLI_ARG_ERROR) {
            rc = CLI_EXIT_USAGE;
        } else if (k == CLI_ARG_POSITIONAL) {
            sources[n_sources++] = v;
        } else if (!option((int)(opt - options), opt->name, v, o, &max_frames, &full_range)) {
            rc = cli_see_help("stream");
        }
        if (rc >= 0) {
            free(sources);
            return rc;
        }
    }
    if (o->rt.pipeline.backend == OMMA_BACKEND_CPU && o->rt.source.decode == IO_DECODE_GPU) {
        free(sources);
        return cli_usage_error("stream", "--decode gpu needs the GPU backend (--backend gpu)");
    }
    if (o->ui_token && !o->ui) {
        free(sources);
        return cli_usage_error("stream", "--ui-token needs --ui");
    }
    if ((o->record_name || o->record_segment_ns || o->record_segment_bytes) && !o->record_dir) {
        free(sources);
        return cli_usage_error("stream", "--record-name and --record-segment need --record DIR");
    }
    if (o->record_dir &&
        io_record_check_name(o->record_name ? o->record_name : IO_RECORD_DEFAULT_NAME,
                             o->record_segment_ns > 0 || o->record_segment_bytes > 0) != OMMA_OK) {
        fprintf(stderr, "omma: error: --record-name: %s\n", omma_last_error());
        free(sources);
        return cli_see_help("stream");
    }
    if (o->cluster && (n_sources > 0 || o->lsl || o->data_dir || o->rt.publish || !o->node)) {
        free(sources);
        const char *why = n_sources > 0 ? "--cluster takes its cameras from the cluster's "
                                          "bucket, not SOURCEs (omma cluster add)"
                          : !o->node    ? "--cluster needs --node NAME"
                                     : "--cluster does not go with --lsl, --data or --publish yet";
        return cli_usage_error("stream", "%s", why);
    }
    if (n_sources == 0 && !o->cluster) {
        free(sources);
        return cli_usage_error("stream", "no SOURCE given (a video, images, /dev/videoN or "
                                         "synthetic)");
    }
    o->max_frames = max_frames;
    int ok = 1;
    for (int i = 0; i < n_sources && ok; i++)
        ok = add_source(o, sources[i], max_frames);
    free(sources);
    if (!ok)
        return cli_see_help("stream");
    if (!name_cameras(o) || !parse_participants(o))
        return cli_see_help("stream");
    const char *data = cli_data_dir();
    snprintf(o->detector, sizeof o->detector, "%s/models/face_detection_%s_range.tflite", data,
             full_range ? "full" : "short");
    snprintf(o->mesh, sizeof o->mesh, "%s/models/%s.tflite", data,
             o->rt.pipeline.mesh_points == OMMA_FACE_LANDMARKS_WITH_IRISES
                 ? "face_landmark_with_attention"
                 : "face_landmark");
    snprintf(o->photo, sizeof o->photo, "%s/%s", data, DEFAULT_PHOTO);
    o->rt.pipeline.detector_model = o->detector;
    o->rt.pipeline.mesh_model = o->mesh;
    if (o->pose[0]) {
        snprintf(o->pose_detector, sizeof o->pose_detector, "%s/models/pose_detection.tflite",
                 data);
        snprintf(o->pose_landmark, sizeof o->pose_landmark, "%s/models/pose_landmark_%s.tflite",
                 data, o->pose);
        o->rt.pose.detector_model = o->pose_detector;
        o->rt.pose.landmark_model = o->pose_landmark;
    }
    snprintf(o->geometry, sizeof o->geometry,
             "%s/models/geometry_pipeline_metadata_landmarks.binarypb", data);
    o->rt.pipeline.geometry_metadata = o->geometry;
    o->rt.cameras = o->cameras;
    o->rt.gpus = o->gpus;
    return -1;
}

void cli_stream_opts_free(cli_stream_opts *o)
{
    for (int i = 0; i < o->n_owned; i++)
        free(o->owned[i]);
    free(o->owned);
    o->owned = NULL;
    o->n_owned = 0;
    free(o->cameras);
    o->cameras = NULL;
    free(o->names);
    o->names = NULL;
    cli_config_free(&o->config);
}
