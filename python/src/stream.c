/* omma._omma.Stream: the multi-camera runtime (src/runtime/runtime.h) as a
 * Python iterator. The runtime's threads put each frame's results in a
 * bounded queue (they wait while it is full: files lose nothing, live
 * cameras drop at their rings); __next__ takes them with the GIL released,
 * waking every 100 ms to let Python handle signals (KeyboardInterrupt). */
#include "pyomma.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "runtime/runtime.h"

#define MAX_ERRORS 64

typedef struct entry {
    rt_result r;
    omma_face faces[];
} entry;

typedef struct {
    PyObject_HEAD rt_runtime *rt;
    rt_runtime_config cfg;
    rt_camera_config *cameras;
    char **specs;
    int n_specs;
    int *gpus;
    char *detector, *mesh;
    pthread_mutex_t lock;
    pthread_cond_t nonempty, nonfull, idle;
    int lock_ready;
    entry **ring;
    int cap, head, count;
    int closed, ended, waiters, in_next;
    omma_status end_status;
    char end_detail[512];
    struct {
        int camera;
        omma_status status;
        char *detail;
    } errors[MAX_ERRORS];
    int n_errors;
} stream_obj;

static void on_result(void *ctx, const rt_result *r)
{
    stream_obj *s = ctx;
    pthread_mutex_lock(&s->lock);
    while (s->count == s->cap && !s->closed)
        pthread_cond_wait(&s->nonfull, &s->lock);
    if (!s->closed) {
        int n = r->n_faces > 0 ? r->n_faces : 0;
        entry *e = malloc(sizeof *e + sizeof(omma_face) * (size_t)n);
        if (e) {
            e->r = *r;
            e->r.n_faces = n;
            memcpy(e->faces, r->faces, sizeof(omma_face) * (size_t)n);
            e->r.faces = NULL;
            e->r.truth = NULL;
            s->ring[(s->head + s->count) % s->cap] = e;
            s->count++;
            pthread_cond_signal(&s->nonempty);
        }
    }
    pthread_mutex_unlock(&s->lock);
}

static void on_camera(void *ctx, const rt_camera_event *ev)
{
    stream_obj *s = ctx;
    if (ev->state != METRICS_CAMERA_FAILED)
        return;
    pthread_mutex_lock(&s->lock);
    if (s->n_errors < MAX_ERRORS) {
        s->errors[s->n_errors].camera = ev->camera;
        s->errors[s->n_errors].status = ev->status;
        s->errors[s->n_errors].detail = strdup(ev->detail ? ev->detail : "");
        s->n_errors++;
    }
    pthread_mutex_unlock(&s->lock);
}

static char *dup_str(PyObject *o, const char *what)
{
    PyObject *b = NULL;
    if (!PyUnicode_FSConverter(o, &b))
        return NULL;
    char *s = strdup(PyBytes_AS_STRING(b));
    Py_DECREF(b);
    if (!s)
        PyErr_NoMemory();
    (void)what;
    return s;
}

static int stream_init(stream_obj *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {
        "sources",   "backend",   "detector_model", "mesh_model", "gpus",
        "max_faces", "precision", "max_batch",      "threads",    "detect_every",
        "realtime",  "loop",      "max_frames",     "queue",      NULL};
    PyObject *sources, *gpus = Py_None, *det = NULL, *mesh = NULL;
    const char *backend = "gpu", *precision = "fp16";
    int max_faces = 4, max_batch = -1, threads = 0, detect_every = 0, realtime = 1, loop = 0;
    int queue = 256;
    long max_frames = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|$sOOOisiiippli", kwlist, &sources, &backend,
                                     &det, &mesh, &gpus, &max_faces, &precision, &max_batch,
                                     &threads, &detect_every, &realtime, &loop, &max_frames,
                                     &queue))
        return -1;
    if (self->lock_ready || self->cameras || self->specs) {
        pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "Stream: already initialised");
        return -1;
    }
    if (!det || !mesh) {
        pyomma_raise_msg(OMMA_ERR_INVALID_ARG,
                         "Stream: detector_model and mesh_model are required");
        return -1;
    }
    if (queue < 1 || queue > 65536) {
        pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "Stream: queue %d not in 1..65536", queue);
        return -1;
    }
    if (max_frames < 0) {
        pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "Stream: max_frames %ld < 0", max_frames);
        return -1;
    }
    rt_runtime_config *c = &self->cfg;
    rt_runtime_config_init(c);
    if (strcasecmp(backend, "gpu") == 0 || strcasecmp(backend, "cuda") == 0)
        c->pipeline.backend = OMMA_BACKEND_CUDA;
    else if (strcasecmp(backend, "cpu") == 0)
        c->pipeline.backend = OMMA_BACKEND_CPU;
    else {
        pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "Stream: unknown backend '%s' (gpu, cpu)", backend);
        return -1;
    }
    if (strcasecmp(precision, "fp16") == 0)
        c->pipeline.precision = OMMA_PRECISION_FP16;
    else if (strcasecmp(precision, "fp32") == 0)
        c->pipeline.precision = OMMA_PRECISION_FP32;
    else {
        pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "Stream: unknown precision '%s' (fp16, fp32)",
                         precision);
        return -1;
    }
    if (PyUnicode_Check(sources) || PyBytes_Check(sources)) {
        pyomma_raise_msg(OMMA_ERR_INVALID_ARG,
                         "Stream: sources is a list of sources, not one string");
        return -1;
    }
    PyObject *seq = PySequence_Fast(sources, "Stream: sources must be a list of strings");
    if (!seq)
        return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n < 1 || n > OMMA_PIPELINE_MAX_CAMERAS) {
        Py_DECREF(seq);
        pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "Stream: %zd sources, not in 1..%d", n,
                         OMMA_PIPELINE_MAX_CAMERAS);
        return -1;
    }
    self->cameras = calloc((size_t)n, sizeof *self->cameras);
    self->specs = calloc((size_t)n, sizeof *self->specs);
    if (!self->cameras || !self->specs) {
        Py_DECREF(seq);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        self->specs[i] = dup_str(PySequence_Fast_GET_ITEM(seq, i), "source");
        if (!self->specs[i]) {
            Py_DECREF(seq);
            return -1;
        }
        self->n_specs++;
        self->cameras[i].spec = self->specs[i];
        self->cameras[i].max_frames = max_frames;
    }
    Py_DECREF(seq);
    int n_gpus = 1;
    if (gpus != Py_None) {
        PyObject *g = PySequence_Fast(gpus, "Stream: gpus must be a list of ordinals");
        if (!g)
            return -1;
        n_gpus = (int)PySequence_Fast_GET_SIZE(g);
        if (n_gpus < 1 || n_gpus > RT_MAX_GPUS) {
            Py_DECREF(g);
            pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "Stream: %d gpus, not in 1..%d", n_gpus,
                             RT_MAX_GPUS);
            return -1;
        }
        self->gpus = calloc((size_t)n_gpus, sizeof(int));
        for (int i = 0; self->gpus && i < n_gpus; i++)
            if (pyomma_as_int(PySequence_Fast_GET_ITEM(g, i), "gpu", &self->gpus[i]) < 0) {
                Py_DECREF(g);
                return -1;
            }
        Py_DECREF(g);
    } else {
        self->gpus = calloc(1, sizeof(int));
    }
    self->detector = dup_str(det, "detector_model");
    self->mesh = self->detector ? dup_str(mesh, "mesh_model") : NULL;
    self->ring = calloc((size_t)queue, sizeof *self->ring);
    if (!self->gpus || !self->detector || !self->mesh || !self->ring) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        return -1;
    }
    self->cap = queue;
    c->n_cameras = (int)n;
    c->cameras = self->cameras;
    c->n_gpus = n_gpus;
    c->gpus = self->gpus;
    c->pipeline.detector_model = self->detector;
    c->pipeline.mesh_model = self->mesh;
    c->pipeline.max_faces = max_faces;
    if (max_batch > 0)
        c->pipeline.max_batch = max_batch;
    else if (c->pipeline.backend == OMMA_BACKEND_CPU)
        c->pipeline.max_batch = 16;
    c->pipeline.threads = threads;
    c->pipeline.detect_every = detect_every;
    c->source.realtime = realtime;
    c->source.loop = loop;
    c->on_result = on_result;
    c->on_camera = on_camera;
    c->ctx = self;
    pthread_mutex_init(&self->lock, NULL);
    pthread_cond_init(&self->nonempty, NULL);
    pthread_cond_init(&self->nonfull, NULL);
    pthread_cond_init(&self->idle, NULL);
    self->lock_ready = 1;
    rt_runtime *rt = NULL;
    omma_status st;
    Py_BEGIN_ALLOW_THREADS st = rt_runtime_start(c, &rt);
    Py_END_ALLOW_THREADS if (st != OMMA_OK)
    {
        self->closed = 1;
        pyomma_raise(st);
        return -1;
    }
    self->rt = rt;
    return 0;
}

static void stream_close_now(stream_obj *self)
{
    if (!self->lock_ready)
        return;
    pthread_mutex_lock(&self->lock);
    self->closed = 1;
    rt_runtime *rt = self->rt;
    self->rt = NULL;
    pthread_cond_broadcast(&self->nonempty);
    pthread_cond_broadcast(&self->nonfull);
    pthread_mutex_unlock(&self->lock);
    Py_BEGIN_ALLOW_THREADS if (rt)
    {
        rt_runtime_stop(rt);
        pthread_mutex_lock(&self->lock);
        while (self->waiters > 0)
            pthread_cond_wait(&self->idle, &self->lock);
        pthread_mutex_unlock(&self->lock);
        rt_runtime_destroy(rt);
    }
    Py_END_ALLOW_THREADS pthread_mutex_lock(&self->lock);
    while (self->count > 0) {
        free(self->ring[self->head]);
        self->head = (self->head + 1) % self->cap;
        self->count--;
    }
    pthread_mutex_unlock(&self->lock);
}

static void stream_dealloc(stream_obj *self)
{
    stream_close_now(self);
    for (int i = 0; i < self->n_specs; i++)
        free(self->specs[i]);
    free(self->specs);
    free(self->cameras);
    free(self->gpus);
    free(self->detector);
    free(self->mesh);
    free(self->ring);
    for (int i = 0; i < self->n_errors; i++)
        free(self->errors[i].detail);
    if (self->lock_ready) {
        pthread_mutex_destroy(&self->lock);
        pthread_cond_destroy(&self->nonempty);
        pthread_cond_destroy(&self->nonfull);
        pthread_cond_destroy(&self->idle);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *stream_close(stream_obj *self, PyObject *unused)
{
    (void)unused;
    stream_close_now(self);
    Py_RETURN_NONE;
}

static PyObject *result_new(entry *e)
{
    PyObject *out = PyStructSequence_New(pyomma_result_type);
    PyObject *faces = pyomma_faces_list(e->faces, e->r.n_faces);
    if (!out || !faces)
        goto fail;
    PyObject *items[7] = {PyLong_FromLong(e->r.camera),
                          PyLong_FromLong(e->r.gpu),
                          PyLong_FromUnsignedLongLong(e->r.seq),
                          PyLong_FromUnsignedLongLong(e->r.capture_ns),
                          PyLong_FromUnsignedLongLong(e->r.done_ns),
                          PyLong_FromUnsignedLongLong(e->r.dropped),
                          faces};
    faces = NULL;
    int ok = 1;
    for (int i = 0; i < 7; i++) {
        ok = ok && items[i];
        PyStructSequence_SetItem(out, i, items[i]);
    }
    if (!ok)
        goto fail;
    return out;
fail:
    Py_XDECREF(out);
    Py_XDECREF(faces);
    return NULL;
}

static PyObject *stream_next(stream_obj *self)
{
    if (!self->lock_ready)
        return pyomma_raise_msg(OMMA_ERR_CLOSED, "Stream: not started");
    if (self->in_next)
        return pyomma_raise_msg(OMMA_ERR_BUSY,
                                "Stream: another thread is iterating it (one consumer thread)");
    self->in_next = 1;
    PyObject *ret = NULL;
    for (;;) {
        entry *e = NULL;
        pthread_mutex_lock(&self->lock);
        if (self->count > 0) {
            e = self->ring[self->head];
            self->head = (self->head + 1) % self->cap;
            self->count--;
            pthread_cond_signal(&self->nonfull);
        }
        int closed = self->closed, ended = self->ended;
        pthread_mutex_unlock(&self->lock);
        if (e) {
            ret = result_new(e);
            free(e);
            break;
        }
        if (closed || ended) {
            if (ended && self->end_status != OMMA_OK && !closed)
                pyomma_raise_msg(self->end_status, "%s", self->end_detail);
            else
                PyErr_SetNone(PyExc_StopIteration);
            break;
        }
        Py_BEGIN_ALLOW_THREADS pthread_mutex_lock(&self->lock);
        if (!self->closed) {
            rt_runtime *rt = self->rt; /* destroyed only once waiters is 0 */
            self->waiters++;
            if (self->count == 0) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_nsec += 100 * 1000000L;
                if (ts.tv_nsec >= 1000000000L) {
                    ts.tv_sec++;
                    ts.tv_nsec -= 1000000000L;
                }
                pthread_cond_timedwait(&self->nonempty, &self->lock, &ts);
            }
            int poll = self->count == 0 && !self->closed;
            pthread_mutex_unlock(&self->lock);
            if (poll) {
                omma_status st = rt_runtime_wait(rt, 0);
                if (st != OMMA_ERR_TIMEOUT) {
                    pthread_mutex_lock(&self->lock);
                    self->ended = 1;
                    self->end_status = st;
                    if (st != OMMA_OK)
                        snprintf(self->end_detail, sizeof self->end_detail, "%s",
                                 omma_last_error());
                    pthread_mutex_unlock(&self->lock);
                }
            }
            pthread_mutex_lock(&self->lock);
            if (--self->waiters == 0)
                pthread_cond_broadcast(&self->idle);
        }
        pthread_mutex_unlock(&self->lock);
        Py_END_ALLOW_THREADS if (PyErr_CheckSignals() < 0) break;
    }
    self->in_next = 0;
    return ret;
}

static PyObject *stream_iter(PyObject *self)
{
    Py_INCREF(self);
    return self;
}

static PyObject *stream_stats(stream_obj *self, PyObject *unused)
{
    (void)unused;
    if (!self->rt)
        return pyomma_raise_msg(OMMA_ERR_CLOSED, "Stream: closed");
    rt_runtime_stats s;
    rt_runtime_get_stats(self->rt, &s);
    return Py_BuildValue(
        "{s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:K}", "frames_in", (unsigned long long)s.frames_in,
        "frames_done", (unsigned long long)s.frames_done, "frames_dropped",
        (unsigned long long)s.frames_dropped, "faces", (unsigned long long)s.faces, "batches",
        (unsigned long long)s.batches, "launches", (unsigned long long)s.launches, "h2d_bytes",
        (unsigned long long)s.h2d_bytes, "h2d_copies", (unsigned long long)s.h2d_copies,
        "d2h_bytes", (unsigned long long)s.d2h_bytes, "d2h_copies",
        (unsigned long long)s.d2h_copies);
}

static PyObject *stream_errors(stream_obj *self, void *c)
{
    (void)c;
    if (!self->lock_ready)
        return PyList_New(0);
    pthread_mutex_lock(&self->lock);
    int n = self->n_errors;
    pthread_mutex_unlock(&self->lock);
    PyObject *list = PyList_New(n);
    for (int i = 0; list && i < n; i++) {
        PyObject *t =
            Py_BuildValue("(iss)", self->errors[i].camera, omma_status_str(self->errors[i].status),
                          self->errors[i].detail ? self->errors[i].detail : "");
        if (!t) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, i, t);
    }
    return list;
}

static PyObject *stream_get_closed(stream_obj *self, void *c)
{
    (void)c;
    return PyBool_FromLong(self->rt == NULL);
}

static PyObject *stream_enter(PyObject *self, PyObject *unused)
{
    (void)unused;
    Py_INCREF(self);
    return self;
}

static PyObject *stream_exit(stream_obj *self, PyObject *args)
{
    (void)args;
    stream_close_now(self);
    Py_RETURN_FALSE;
}

static PyMethodDef stream_methods[] = {
    {"close", (PyCFunction)stream_close, METH_NOARGS,
     "close()\n--\n\nStops the cameras, joins the runtime's threads and frees it (idempotent;\n"
     "any thread). Iteration then ends."},
    {"stats", (PyCFunction)stream_stats, METH_NOARGS,
     "stats()\n--\n\nThe runtime's counters: frames_in, frames_done, frames_dropped, faces,\n"
     "batches, launches and the GPUs' host<->device transfers."},
    {"__enter__", (PyCFunction)stream_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)stream_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef stream_getset[] = {
    {"errors", (getter)stream_errors, NULL,
     "Cameras that failed: a list of (camera, status, message).", NULL},
    {"closed", (getter)stream_get_closed, NULL, "True once closed (or never started).", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyTypeObject stream_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "omma._omma.Stream",
    .tp_basicsize = sizeof(stream_obj),
    .tp_dealloc = (destructor)stream_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "The multi-camera runtime (C): use omma.stream().",
    .tp_methods = stream_methods,
    .tp_getset = stream_getset,
    .tp_iter = stream_iter,
    .tp_iternext = (iternextfunc)stream_next,
    .tp_init = (initproc)stream_init,
    .tp_new = PyType_GenericNew,
};

int pyomma_add_stream(PyObject *m)
{
    if (PyType_Ready(&stream_type) < 0)
        return -1;
    return PyModule_AddObjectRef(m, "Stream", (PyObject *)&stream_type);
}
