/* omma._omma.FacePipeline: omma_face_pipeline for Python. */
#include "pyomma.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pyomma_ARRAY_API
#define NO_IMPORT_ARRAY
#include <numpy/arrayobject.h>

typedef struct {
    PyObject_HEAD omma_face_pipeline *p;
    omma_device *dev;
    omma_backend backend;
    int max_faces, max_batch, device_ordinal;
    int in_call; /* a thread is in process (the GIL released) */
    /* Where the last process spent its time (python/bench), ns: frames
     * converted, device frames checked and their producers waited for, the
     * C API, results made, frames released. */
    long long t_ns[5];
    int capacity; /* frames the buffers below hold */
    int *counts, *cameras;
    omma_frame *frames;
    pyomma_frame_hold *holds;
    /* The results block the C API writes faces into (faces.c): reused by
     * the next call when nothing else holds it, else replaced. */
    PyObject *results;
} pipeline_obj;

enum { T_CONVERT, T_WAIT, T_C, T_RESULTS, T_RELEASE };

static long long now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000000000LL + t.tv_nsec;
}

static int pipeline_init(pipeline_obj *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"backend",      "detector_model",
                             "mesh_model",   "max_faces",
                             "precision",    "device",
                             "max_batch",    "threads",
                             "detect_every", "min_detection_score",
                             "min_presence", NULL};
    const char *backend = "gpu", *precision = "fp16", *det = NULL, *mesh = NULL;
    omma_face_pipeline_options opt;
    omma_face_pipeline_options_init(&opt);
    int device = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$sssisiiiiff", kwlist, &backend, &det, &mesh,
                                     &opt.max_faces, &precision, &device, &opt.max_batch,
                                     &opt.threads, &opt.detect_every, &opt.min_detection_score,
                                     &opt.min_presence))
        return -1;
    if (self->p || self->in_call) {
        pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "FacePipeline: already initialised");
        return -1;
    }
    if (!det || !mesh) {
        pyomma_raise_msg(OMMA_ERR_INVALID_ARG,
                         "FacePipeline: detector_model and mesh_model are required");
        return -1;
    }
    if (strcasecmp(backend, "gpu") == 0 || strcasecmp(backend, "cuda") == 0)
        opt.backend = OMMA_BACKEND_CUDA;
    else if (strcasecmp(backend, "cpu") == 0)
        opt.backend = OMMA_BACKEND_CPU;
    else {
        pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "FacePipeline: unknown backend '%s' (gpu, cpu)",
                         backend);
        return -1;
    }
    if (strcasecmp(precision, "fp16") == 0)
        opt.precision = OMMA_PRECISION_FP16;
    else if (strcasecmp(precision, "fp32") == 0)
        opt.precision = OMMA_PRECISION_FP32;
    else {
        pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "FacePipeline: unknown precision '%s' (fp16, fp32)",
                         precision);
        return -1;
    }
    opt.detector_model = det;
    opt.mesh_model = mesh;
    omma_status st = OMMA_OK;
    omma_device *dev = NULL;
    omma_face_pipeline *p = NULL;
    Py_BEGIN_ALLOW_THREADS if (opt.backend == OMMA_BACKEND_CUDA)
    {
        st = omma_device_open(device, &dev);
        opt.device = dev;
    }
    if (st == OMMA_OK)
        st = omma_face_pipeline_create(&opt, &p);
    if (st != OMMA_OK) {
        omma_device_close(dev);
        dev = NULL;
    }
    Py_END_ALLOW_THREADS if (st != OMMA_OK)
    {
        pyomma_raise(st);
        return -1;
    }
    self->p = p;
    self->dev = dev;
    self->backend = opt.backend;
    self->max_faces = opt.max_faces;
    self->max_batch = opt.max_batch;
    self->device_ordinal = opt.backend == OMMA_BACKEND_CUDA ? device : -1;
    return 0;
}

static void free_buffers(pipeline_obj *self)
{
    free(self->counts);
    free(self->cameras);
    free(self->frames);
    free(self->holds);
    self->counts = self->cameras = NULL;
    self->frames = NULL;
    self->holds = NULL;
    self->capacity = 0;
}

static void pipeline_close_now(pipeline_obj *self)
{
    omma_face_pipeline *p = self->p;
    omma_device *dev = self->dev;
    self->p = NULL;
    self->dev = NULL;
    if (p || dev) {
        Py_BEGIN_ALLOW_THREADS omma_face_pipeline_destroy(p);
        omma_device_close(dev);
        Py_END_ALLOW_THREADS
    }
    free_buffers(self);
    Py_CLEAR(self->results);
}

static void pipeline_dealloc(pipeline_obj *self)
{
    pipeline_close_now(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *pipeline_close(pipeline_obj *self, PyObject *unused)
{
    (void)unused;
    if (self->in_call)
        return pyomma_raise_msg(OMMA_ERR_BUSY,
                                "FacePipeline.close: another thread is in a call on it");
    pipeline_close_now(self);
    Py_RETURN_NONE;
}

static int grow(pipeline_obj *self, int n)
{
    if (n <= self->capacity)
        return 0;
    free_buffers(self);
    self->counts = malloc(sizeof(int) * (size_t)n);
    self->cameras = malloc(sizeof(int) * (size_t)n);
    self->frames = malloc(sizeof(omma_frame) * (size_t)n);
    self->holds = malloc(sizeof(pyomma_frame_hold) * (size_t)n);
    if (!self->counts || !self->cameras || !self->frames || !self->holds) {
        free_buffers(self);
        PyErr_NoMemory();
        return -1;
    }
    self->capacity = n;
    return 0;
}

/* Runs frames (a list, one frame, or a stacked batch (N, H, W, C): one
 * array read once, each camera's frame a view at its batch stride) through
 * the pipeline into self's buffers; *n_out frames. Returns 0, or -1 with an
 * exception. */
static int run_inner(pipeline_obj *self, PyObject *frames, PyObject *cameras, PyObject *format,
                     int *n_out, int *is_batch)
{
    long long t0 = now_ns();
    memset(self->t_ns, 0, sizeof self->t_ns);
    pyomma_convert_ctx ctx = {0};
    /* One array (a frame or a stacked batch): what it holds, for the call. */
    pyomma_frame_hold whole;
    pyomma_array arr;
    int have_array = 0, stacked = 0, converted = 0, rc = -1, any_device = 0;
    PyObject *formats = NULL;
    int list = PyList_Check(frames);
    Py_ssize_t n = list ? PyList_GET_SIZE(frames) : 1;
    if (!list && !PyTuple_Check(frames)) {
        if (pyomma_array_read(frames, &ctx, &whole, &arr) < 0)
            return -1;
        have_array = 1;
        stacked = arr.ndim == 4;
        if (stacked && (n = arr.shape[0]) < 1) {
            pyomma_raise_msg(OMMA_ERR_INVALID_ARG,
                             "process: a stacked batch of %zd frames (N, H, W, C): N must be at "
                             "least 1",
                             n);
            goto done;
        }
    }
    *is_batch = list || stacked;
    if (n > OMMA_PIPELINE_MAX_CAMERAS) {
        pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "process: %zd frames, at most %d cameras", n,
                         OMMA_PIPELINE_MAX_CAMERAS);
        goto done;
    }
    *n_out = (int)n;
    if (n == 0) {
        rc = 0;
        goto done;
    }
    if (grow(self, (int)n) < 0)
        goto done;
    /* Cameras: default 0..n-1; one int for one frame; else one per frame. */
    if (cameras == NULL || cameras == Py_None) {
        for (int i = 0; i < n; i++)
            self->cameras[i] = i;
    } else if (!*is_batch) {
        if (pyomma_as_int(cameras, "camera", &self->cameras[0]) < 0)
            goto done;
    } else {
        if (stacked && PyLong_Check(cameras)) {
            PyErr_Format(PyExc_TypeError,
                         "process: a stacked batch of %zd frames takes a sequence of %zd "
                         "cameras (or None: 0..%zd), not an int",
                         n, n, n - 1);
            goto done;
        }
        PyObject *seq = PySequence_Fast(cameras, "cameras must be a sequence of ints");
        if (!seq)
            goto done;
        if (PySequence_Fast_GET_SIZE(seq) != n) {
            pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "process: %zd frames but %zd cameras", n,
                             PySequence_Fast_GET_SIZE(seq));
            Py_DECREF(seq);
            goto done;
        }
        for (int i = 0; i < n; i++)
            if (pyomma_as_int(PySequence_Fast_GET_ITEM(seq, i), "camera", &self->cameras[i]) < 0) {
                Py_DECREF(seq);
                goto done;
            }
        Py_DECREF(seq);
    }
    /* Each camera once (the C API checks within a batch; chunks too). */
    if (n > self->max_batch) {
        static unsigned char seen[OMMA_PIPELINE_MAX_CAMERAS];
        memset(seen, 0, sizeof seen);
        for (int i = 0; i < n; i++) {
            int c = self->cameras[i];
            if (c < 0 || c >= OMMA_PIPELINE_MAX_CAMERAS) {
                pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "process: camera %d out of range (0..%d)", c,
                                 OMMA_PIPELINE_MAX_CAMERAS - 1);
                goto done;
            }
            if (seen[c]++) {
                pyomma_raise_msg(OMMA_ERR_INVALID_ARG,
                                 "process: camera %d twice (one frame per camera per call)", c);
                goto done;
            }
        }
    }
    /* Formats: None, one name for every frame, or one per frame. */
    const char *one_format = NULL;
    if (format && format != Py_None) {
        if (PyUnicode_Check(format)) {
            if (!(one_format = PyUnicode_AsUTF8(format)))
                goto done;
        } else {
            formats = PySequence_Fast(format, "format must be a str or a list of str");
            if (!formats)
                goto done;
            if (!*is_batch || PySequence_Fast_GET_SIZE(formats) != n) {
                pyomma_raise_msg(OMMA_ERR_INVALID_ARG,
                                 "process: a list of formats needs a list (or a stacked batch) of "
                                 "as many frames");
                goto done;
            }
        }
    }
    rc = 0;
    for (; converted < n; converted++) {
        const char *fmt = one_format;
        if (formats) {
            PyObject *o = PySequence_Fast_GET_ITEM(formats, converted);
            if (o != Py_None && (!PyUnicode_Check(o) || !(fmt = PyUnicode_AsUTF8(o)))) {
                if (!PyErr_Occurred())
                    pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "frame %d: format is not a str",
                                     converted);
                rc = -1;
                break;
            }
        }
        omma_frame *fr = &self->frames[converted];
        pyomma_frame_hold *h = &self->holds[converted];
        if (have_array) {
            /* A frame of the array: whole holds it; the frame's hold says
             * its device (and the first its producers' streams). */
            if (pyomma_frame_from_array(&arr, stacked ? converted : -1, fmt, converted, fr) < 0) {
                rc = -1;
                break;
            }
            memset(h, 0, sizeof *h);
            h->device_ordinal = whole.device_ordinal;
            if (converted == 0) {
                h->n_streams = whole.n_streams;
                memcpy(h->streams, whole.streams, sizeof h->streams);
            }
        } else if (pyomma_frame_convert(list ? PyList_GET_ITEM(frames, converted) : frames, fmt,
                                        converted, &ctx, fr, h) < 0) {
            rc = -1;
            break;
        }
        if (fr->memory == OMMA_MEMORY_DEVICE && self->backend != OMMA_BACKEND_CUDA) {
            pyomma_raise_msg(OMMA_ERR_INVALID_ARG,
                             "frame %d: in device memory: device frames need the GPU backend "
                             "(backend='gpu')",
                             converted);
            pyomma_frame_release(h);
            rc = -1;
            break;
        }
        any_device |= fr->memory == OMMA_MEMORY_DEVICE;
    }
    /* The faces go to the last call's results block when nobody else holds
     * it (its Faces and arrays were dropped), else to a new one. */
    Py_ssize_t need = (Py_ssize_t)n * self->max_faces;
    if (rc == 0 && (!self->results || Py_REFCNT(self->results) != 1 ||
                    pyomma_results_size(self->results) < need)) {
        Py_CLEAR(self->results);
        if (!(self->results = pyomma_results_new(need)))
            rc = -1;
    }
    long long t1 = now_ns();
    self->t_ns[T_CONVERT] = t1 - t0;
    if (rc == 0) {
        char msg[512] = "";
        omma_status st = OMMA_OK;
        int own_msg = 0;
        omma_face *faces = pyomma_results_faces(self->results);
        long long t2, t3;
        Py_BEGIN_ALLOW_THREADS if (any_device)
        {
            /* The whole batch at once: each allocation checked once, each
             * producer stream synchronized once. */
            st = pyomma_check_device_frames(self->dev, self->frames, self->holds, (int)n, msg,
                                            sizeof msg);
            if (st == OMMA_OK)
                st = pyomma_sync_streams(self->dev, self->holds, (int)n, msg, sizeof msg);
            own_msg = st != OMMA_OK;
        }
        t2 = now_ns();
        for (int at = 0; at < n && st == OMMA_OK; at += self->max_batch) {
            int k = (int)n - at < self->max_batch ? (int)n - at : self->max_batch;
            st = omma_face_pipeline_process_batch(self->p, k, self->cameras + at, self->frames + at,
                                                  faces + (size_t)at * self->max_faces,
                                                  self->counts + at);
        }
        t3 = now_ns();
        Py_END_ALLOW_THREADS self->in_call = 0;
        self->t_ns[T_WAIT] = t2 - t1;
        self->t_ns[T_C] = t3 - t2;
        if (st != OMMA_OK) {
            if (own_msg)
                pyomma_raise_msg(st, "%s", msg);
            else
                pyomma_raise(st);
            rc = -1;
        }
    }
done:;
    /* Releasing a frame may run its producer's code (a DLPack deleter, a
     * tensor's dealloc), which must not clear the exception being raised. */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    long long t4 = now_ns();
    for (int i = 0; i < converted; i++)
        pyomma_frame_release(&self->holds[i]);
    if (have_array)
        pyomma_frame_release(&whole);
    Py_XDECREF(formats);
    self->t_ns[T_RELEASE] = now_ns() - t4;
    PyErr_Restore(et, ev, tb);
    return rc;
}

/* The pipeline is taken for the whole call: converting frames may run
 * Python code (__dlpack__, properties) that lets another thread in, and the
 * models run without the GIL. */
static int run(pipeline_obj *self, PyObject *frames, PyObject *cameras, PyObject *format,
               int *n_out, int *is_batch)
{
    if (!self->p) {
        pyomma_raise_msg(OMMA_ERR_CLOSED, "FacePipeline: closed");
        return -1;
    }
    if (self->in_call) {
        pyomma_raise_msg(OMMA_ERR_BUSY,
                         "FacePipeline.process: another thread is in a call on this pipeline "
                         "(use one pipeline per thread)");
        return -1;
    }
    self->in_call = 1;
    int rc = run_inner(self, frames, cameras, format, n_out, is_batch);
    self->in_call = 0;
    return rc;
}

static char *process_kwlist[] = {"frames", "cameras", "format", NULL};

/* Frame i's faces: omma.Face objects viewing the results block. */
static PyObject *faces_list(pipeline_obj *self, int i)
{
    int c = self->counts[i];
    PyObject *list = PyList_New(c);
    if (!list)
        return NULL;
    for (int j = 0; j < c; j++) {
        PyObject *f = pyomma_face_view(self->results, (Py_ssize_t)i * self->max_faces + j);
        if (!f) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, j, f);
    }
    return list;
}

static PyObject *pipeline_process(pipeline_obj *self, PyObject *args, PyObject *kwds)
{
    PyObject *frames, *cameras = NULL, *format = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OO:process", process_kwlist, &frames, &cameras,
                                     &format))
        return NULL;
    int n, batch;
    if (run(self, frames, cameras, format, &n, &batch) < 0)
        return NULL;
    long long t0 = now_ns();
    PyObject *out = batch ? PyList_New(n) : faces_list(self, 0);
    for (int i = 0; batch && out && i < n; i++) {
        PyObject *l = faces_list(self, i);
        if (!l) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, l);
    }
    self->t_ns[T_RESULTS] = now_ns() - t0;
    return out;
}

static PyObject *pipeline_process_batched(pipeline_obj *self, PyObject *args, PyObject *kwds)
{
    PyObject *frames, *cameras = NULL, *format = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OO:process_batched", process_kwlist, &frames,
                                     &cameras, &format))
        return NULL;
    int n, batch;
    if (run(self, frames, cameras, format, &n, &batch) < 0)
        return NULL;
    long long t0 = now_ns();
    const omma_face *faces = self->results ? pyomma_results_faces(self->results) : NULL;
    npy_intp total = 0;
    for (int i = 0; i < n; i++)
        total += self->counts[i];
    npy_intp d_n[1] = {n}, d1[1] = {total}, d_box[2] = {total, 4},
             d_kp[3] = {total, OMMA_FACE_KEYPOINTS, 2}, d_lm[3] = {total, OMMA_FACE_LANDMARKS, 3};
    PyObject *a[9] = {
        PyArray_SimpleNew(1, d_n, NPY_INT32),    PyArray_SimpleNew(1, d1, NPY_INT32),
        PyArray_SimpleNew(1, d1, NPY_INT32),     PyArray_SimpleNew(1, d1, NPY_INT32),
        PyArray_SimpleNew(1, d1, NPY_FLOAT32),   PyArray_SimpleNew(2, d_box, NPY_FLOAT32),
        PyArray_SimpleNew(3, d_kp, NPY_FLOAT32), PyArray_SimpleNew(3, d_lm, NPY_FLOAT32),
        PyArray_SimpleNew(1, d1, NPY_FLOAT32)};
    PyObject *out = PyStructSequence_New(pyomma_batch_type);
    int ok = out != NULL;
    for (int i = 0; i < 9; i++)
        ok = ok && a[i];
    if (!ok) {
        for (int i = 0; i < 9; i++)
            Py_XDECREF(a[i]);
        Py_XDECREF(out);
        return NULL;
    }
#define DATA(i, T) ((T *)PyArray_DATA((PyArrayObject *)a[i]))
    npy_intp k = 0;
    for (int i = 0; i < n; i++) {
        DATA(0, int32_t)[i] = self->counts[i];
        for (int j = 0; j < self->counts[i]; j++, k++) {
            const omma_face *f = &faces[(size_t)i * self->max_faces + j];
            DATA(1, int32_t)[k] = i;
            DATA(2, int32_t)[k] = self->cameras[i];
            DATA(3, int32_t)[k] = f->id;
            DATA(4, float)[k] = f->score;
            memcpy(DATA(5, float) + 4 * k, &f->box, sizeof(float) * 4);
            memcpy(DATA(6, float) + k * OMMA_FACE_KEYPOINTS * 2, f->keypoints, sizeof f->keypoints);
            memcpy(DATA(7, float) + k * OMMA_FACE_LANDMARKS * 3, f->landmarks, sizeof f->landmarks);
            DATA(8, float)[k] = f->presence;
        }
    }
#undef DATA
    for (int i = 0; i < 9; i++)
        PyStructSequence_SetItem(out, i, a[i]);
    self->t_ns[T_RESULTS] = now_ns() - t0;
    return out;
}

static PyObject *pipeline_stats(pipeline_obj *self, PyObject *unused)
{
    (void)unused;
    if (!self->p)
        return pyomma_raise_msg(OMMA_ERR_CLOSED, "FacePipeline: closed");
    omma_face_pipeline_stats s;
    omma_status st = omma_face_pipeline_get_stats(self->p, &s);
    if (st != OMMA_OK)
        return pyomma_raise(st);
    return Py_BuildValue(
        "{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "frames", (unsigned long long)s.frames, "batches",
        (unsigned long long)s.batches, "detector_images", (unsigned long long)s.detector_images,
        "mesh_images", (unsigned long long)s.mesh_images, "faces", (unsigned long long)s.faces,
        "h2d_bytes", (unsigned long long)s.h2d_bytes, "h2d_copies",
        (unsigned long long)s.h2d_copies, "d2h_bytes", (unsigned long long)s.d2h_bytes,
        "d2h_copies", (unsigned long long)s.d2h_copies);
}

static PyObject *pipeline_enter(pipeline_obj *self, PyObject *unused)
{
    (void)unused;
    if (!self->p)
        return pyomma_raise_msg(OMMA_ERR_CLOSED, "FacePipeline: closed");
    Py_INCREF(self);
    return (PyObject *)self;
}

static PyObject *pipeline_exit(pipeline_obj *self, PyObject *args)
{
    (void)args;
    return pipeline_close(self, NULL);
}

static PyObject *get_closed(pipeline_obj *self, void *c)
{
    (void)c;
    return PyBool_FromLong(self->p == NULL);
}
static PyObject *get_backend(pipeline_obj *self, void *c)
{
    (void)c;
    return PyUnicode_FromString(self->backend == OMMA_BACKEND_CUDA ? "gpu" : "cpu");
}
static PyObject *get_max_faces(pipeline_obj *self, void *c)
{
    (void)c;
    return PyLong_FromLong(self->max_faces);
}
static PyObject *get_max_batch(pipeline_obj *self, void *c)
{
    (void)c;
    return PyLong_FromLong(self->max_batch);
}
static PyObject *get_device(pipeline_obj *self, void *c)
{
    (void)c;
    if (self->device_ordinal < 0)
        Py_RETURN_NONE;
    return PyLong_FromLong(self->device_ordinal);
}

static PyObject *get_last_c_ns(pipeline_obj *self, void *c)
{
    (void)c;
    return PyLong_FromLongLong(self->t_ns[T_C]);
}

static PyObject *get_last_timing(pipeline_obj *self, void *c)
{
    (void)c;
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L}", "convert", self->t_ns[T_CONVERT], "wait",
                         self->t_ns[T_WAIT], "c", self->t_ns[T_C], "results", self->t_ns[T_RESULTS],
                         "release", self->t_ns[T_RELEASE]);
}

static PyGetSetDef getset[] = {
    {"_last_c_ns", (getter)get_last_c_ns, NULL,
     "Nanoseconds the last process spent in the C pipeline (python/bench).", NULL},
    {"_last_timing", (getter)get_last_timing, NULL,
     "Where the last process spent its time, ns (python/bench): convert (arguments and\n"
     "frames read), wait (device frames checked, producers' streams synchronized), c\n"
     "(the C API), results (the faces made), release (the frames let go).",
     NULL},
    {"closed", (getter)get_closed, NULL, "True once close() ran.", NULL},
    {"backend", (getter)get_backend, NULL, "'gpu' or 'cpu'.", NULL},
    {"max_faces", (getter)get_max_faces, NULL, "Faces tracked per camera.", NULL},
    {"max_batch", (getter)get_max_batch, NULL,
     "Frames per batch of the C pipeline (longer lists run as several batches).", NULL},
    {"device", (getter)get_device, NULL, "The GPU's ordinal; None on the CPU.", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef pipeline_methods[] = {
    {"process", (PyCFunction)(void (*)(void))pipeline_process, METH_VARARGS | METH_KEYWORDS,
     "process(frames, cameras=None, format=None)\n--\n\n"
     "Runs frames through the pipeline and returns their faces.\n\n"
     "frames: one frame, a list of frames (one per camera), or a stacked batch. A\n"
     "frame is a uint8 array (H, W, 3) or (H, W, 4) (NumPy or any buffer; rows may be\n"
     "padded), a tuple of planes (Y, UV) for NV12 or (Y, U, V) for I420, or a device\n"
     "array on the pipeline's GPU (__cuda_array_interface__ or __dlpack__: read in\n"
     "place after the producer's stream). A stacked batch is one uint8 array\n"
     "(N, H, W, 3|4) (a torch tensor, CuPy or NumPy array, ...) holding the frames of\n"
     "N cameras: read once, each frame a view at its batch stride, no copy (any\n"
     "batch stride >= 0; each frame's rows as a frame's: channels then pixels\n"
     "contiguous, rows at a stride >= a row's bytes). It is the fast form for many\n"
     "device frames (one tensor read instead of N).\n"
     "cameras: the camera of each frame (default 0..n-1; an int for one frame, a\n"
     "sequence of N for a list or a stacked batch); each camera has its own\n"
     "tracker, so its frames must come in order.\n"
     "format: 'rgb' (default for 3 channels), 'bgr', 'rgba' (default for 4), 'bgra',\n"
     "'nv12' (default for 2 planes), 'i420' (3 planes); one for every frame, or a\n"
     "list with one per frame (None: the default).\n\n"
     "Returns a list of omma.Face for one frame, a list of such lists for a list or\n"
     "a stacked batch.\n"
     "Faces are read lazily from the call's results (kept while a face or one of\n"
     "its arrays is; the next call writes its own).\n"
     "The GIL is released while the models run.\n"
     "Raises InvalidArgumentError (a ValueError: bad frames (dtype, shape, strides,\n"
     "device), cameras (a stacked batch of N = 0, N not len(cameras))), TypeError\n"
     "(not a frame; an int as the cameras of a stacked batch), BusyError (another\n"
     "thread is in a call on this pipeline), ClosedError, and the C pipeline's\n"
     "errors."},
    {"process_batched", (PyCFunction)(void (*)(void))pipeline_process_batched,
     METH_VARARGS | METH_KEYWORDS,
     "process_batched(frames, cameras=None, format=None)\n--\n\n"
     "As process, but returns one omma.FaceBatch: the faces of all frames as\n"
     "arrays (landmarks (N, 468, 3) float32, ...)."},
    {"stats", (PyCFunction)pipeline_stats, METH_NOARGS,
     "stats()\n--\n\nCounters since creation: frames, batches, detector_images, mesh_images,\n"
     "faces, and host<->device transfers (h2d_bytes, h2d_copies, d2h_bytes, d2h_copies)."},
    {"close", (PyCFunction)pipeline_close, METH_NOARGS,
     "close()\n--\n\nFrees the pipeline now (idempotent); later calls raise ClosedError."},
    {"__enter__", (PyCFunction)pipeline_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)pipeline_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyTypeObject pipeline_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "omma._omma.FacePipeline",
    .tp_basicsize = sizeof(pipeline_obj),
    .tp_dealloc = (destructor)pipeline_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The face pipeline (C): use omma.FacePipeline.",
    .tp_methods = pipeline_methods,
    .tp_getset = getset,
    .tp_init = (initproc)pipeline_init,
    .tp_new = PyType_GenericNew,
};

int pyomma_add_pipeline(PyObject *m)
{
    if (PyType_Ready(&pipeline_type) < 0)
        return -1;
    return PyModule_AddObjectRef(m, "FacePipeline", (PyObject *)&pipeline_type);
}
