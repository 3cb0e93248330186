/* omma._omma.BusSubscriber and BusFrame: the frame bus (omma/bus.h) for
 * Python.
 *
 * A BusFrame holds one bus frame and exports it with DLPack (zero copy):
 * each tensor made from it (torch.from_dlpack, cupy.from_dlpack) keeps the
 * frame object alive. The frame goes back to the publisher once the object
 * is closed (close(), a with block) or collected, and every tensor made
 * from it is gone, after the reads enqueued on the consumers' streams (the
 * streams DLPack's stream argument named: an event recorded there, nothing
 * waits on the host but when several streams read one frame).
 *
 * Threads: the subscriber's C calls are serialized by its mutex, taken
 * without the GIL: the iterating thread waits for frames in slices of
 * 100 ms (letting Python handle signals and other threads release frames:
 * a tensor may die on any thread). */
#include "pyomma.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ipc/bus_socket.h"
#include "omma/bus.h"

#define WAIT_SLICE_MS 100
#define MAX_STREAMS 4 /* consumer streams remembered per frame */
#define MAX_FACES 64

typedef struct {
    PyObject_HEAD omma_bus_subscriber *sub;
    omma_device *dev;
    pthread_mutex_t lock; /* the C calls on sub */
    int lock_ready;
    char name[64];
    int every_frame;
    int closing; /* close() asked: closed once no frame is out and no read runs */
    int frames_out; /* BusFrame objects that still hold their frame */
    int in_read;
    omma_bus_frame *pending; /* frames taken, not yet handed out (every_frame=False) */
    int n_pending, cap_pending;
    unsigned long long skipped; /* older frames given back unread for newer ones */
} sub_obj;

typedef struct {
    PyObject_HEAD sub_obj *sub; /* a strong reference */
    omma_bus_frame f;
    int held; /* the frame is not given back yet */
    int closed; /* close() ran: no new exports; given back once exports is 0 */
    int exports; /* DLPack tensors alive */
    int exported; /* ever exported (read by a consumer) */
    uintptr_t streams[MAX_STREAMS]; /* the consumers' streams */
    int n_streams;
} frame_obj;

static PyTypeObject sub_type, frame_type;

static const char *format_name(omma_pixel_format f)
{
    static const char *names[] = {"rgb", "bgr", "rgba", "bgra", "nv12", "i420"};
    return (int)f >= 0 && (int)f < OMMA_PIXEL_FORMAT_COUNT ? names[f] : "?";
}

/* ---- The subscriber's end ------------------------------------------------ */

/* Closes the C subscriber once close() was asked, no frame is out and no
 * read runs. GIL held. */
static void finish_close(sub_obj *s)
{
    if (!s->closing || s->frames_out > 0 || s->in_read || (!s->sub && !s->dev))
        return;
    omma_bus_subscriber *sub = s->sub;
    omma_device *dev = s->dev;
    s->sub = NULL;
    s->dev = NULL;
    Py_BEGIN_ALLOW_THREADS omma_bus_close(sub);
    omma_device_close(dev);
    Py_END_ALLOW_THREADS
}

/* Gives back the pending frames, unread. GIL held; the lock is taken. */
static void drop_pending(sub_obj *s)
{
    int n = s->n_pending;
    s->n_pending = 0;
    if (!n || !s->sub)
        return;
    Py_BEGIN_ALLOW_THREADS pthread_mutex_lock(&s->lock);
    for (int i = 0; i < n; i++)
        omma_bus_release(s->sub, &s->pending[i], NULL);
    omma_clear_error();
    pthread_mutex_unlock(&s->lock);
    Py_END_ALLOW_THREADS
}

static void sub_close_now(sub_obj *s)
{
    s->closing = 1;
    drop_pending(s);
    finish_close(s);
}

/* ---- BusFrame ------------------------------------------------------------ */

/* Gives the frame back (once). Returns 0, or -1 with an exception. GIL
 * held. */
static int frame_give_back(frame_obj *fr)
{
    if (!fr->held)
        return 0;
    fr->held = 0;
    sub_obj *s = fr->sub;
    omma_status st = OMMA_OK;
    char msg[512] = "";
    int own_msg = 0;
    /* The reads of several streams: all but the last waited for here. */
    void *stream = NULL;
    if (fr->exported)
        stream = (void *)(fr->n_streams ? fr->streams[fr->n_streams - 1] : (uintptr_t)1);
    if (s->sub) {
        Py_BEGIN_ALLOW_THREADS pthread_mutex_lock(&s->lock);
        if (fr->n_streams > 1) {
            st = pyomma_sync_stream_list(s->dev, fr->streams, fr->n_streams - 1, msg, sizeof msg);
            own_msg = st != OMMA_OK;
        }
        if (st == OMMA_OK)
            st = omma_bus_release(s->sub, &fr->f, stream);
        pthread_mutex_unlock(&s->lock);
        Py_END_ALLOW_THREADS
    }
    s->frames_out--;
    finish_close(s);
    if (st == OMMA_OK || st == OMMA_ERR_CLOSED) /* a publisher gone takes nothing back */
        return 0;
    if (own_msg)
        pyomma_raise_msg(st, "bus %s: %s", s->name, msg);
    else
        pyomma_raise(st);
    return -1;
}

static void frame_give_back_unraisable(frame_obj *fr)
{
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    if (frame_give_back(fr) < 0)
        PyErr_WriteUnraisable((PyObject *)fr);
    PyErr_Restore(et, ev, tb);
}

static void frame_dealloc(frame_obj *fr)
{
    frame_give_back_unraisable(fr);
    Py_XDECREF(fr->sub);
    Py_TYPE(fr)->tp_free((PyObject *)fr);
}

static PyObject *frame_close(frame_obj *fr, PyObject *unused)
{
    (void)unused;
    fr->closed = 1;
    if (fr->exports == 0 && frame_give_back(fr) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *frame_enter(frame_obj *fr, PyObject *unused)
{
    (void)unused;
    Py_INCREF(fr);
    return (PyObject *)fr;
}

static PyObject *frame_exit(frame_obj *fr, PyObject *args)
{
    (void)args;
    return frame_close(fr, NULL);
}

/* One DLPack export: the managed tensor, its shape and strides. */
typedef struct {
    dl_managed_tensor mt;
    int64_t shape[3], strides[3];
    frame_obj *owner;
} export_t;

static void export_deleter(dl_managed_tensor *mt)
{
    export_t *e = (export_t *)mt;
#if PY_VERSION_HEX >= 0x030D0000
    if (Py_IsFinalizing()) /* the interpreter is going: nothing to give back to */
#else
    if (_Py_IsFinalizing())
#endif
        return;
    PyGILState_STATE g = PyGILState_Ensure();
    frame_obj *fr = e->owner;
    fr->exports--;
    if (fr->closed && fr->exports == 0)
        frame_give_back_unraisable(fr);
    Py_DECREF(fr);
    free(e);
    PyGILState_Release(g);
}

static void capsule_destructor(PyObject *cap)
{
    if (PyCapsule_IsValid(cap, "used_dltensor"))
        return; /* the consumer owns it now */
    PyObject *et, *ev, *tb;
    PyErr_Fetch(&et, &ev, &tb);
    dl_managed_tensor *mt = PyCapsule_GetPointer(cap, "dltensor");
    if (mt && mt->deleter)
        mt->deleter(mt);
    PyErr_Clear();
    PyErr_Restore(et, ev, tb);
}

/* The tensor's shape: (H, W, C) for RGB(A)/BGR(A); (H*3/2, W) for NV12
 * and I420 of even size (the planes follow each other, rows of the Y
 * plane's pitch); else the bytes (N,). */
static int frame_shape(const omma_bus_frame *f, int64_t shape[3], int64_t strides[3])
{
    const omma_frame *fr = &f->frame;
    int w = fr->width, h = fr->height;
    switch (fr->format) {
    case OMMA_PIXEL_RGB:
    case OMMA_PIXEL_BGR:
    case OMMA_PIXEL_RGBA:
    case OMMA_PIXEL_BGRA: {
        int c = fr->format == OMMA_PIXEL_RGB || fr->format == OMMA_PIXEL_BGR ? 3 : 4;
        shape[0] = h, shape[1] = w, shape[2] = c;
        strides[0] = fr->pitch[0], strides[1] = c, strides[2] = 1;
        return 3;
    }
    default:
        break;
    }
    const uint8_t *y = fr->planes[0];
    int64_t y_bytes = (int64_t)fr->pitch[0] * h;
    int64_t total;
    if (fr->format == OMMA_PIXEL_NV12)
        total = y_bytes + (int64_t)fr->pitch[1] * ((h + 1) / 2);
    else
        total = y_bytes + ((int64_t)fr->pitch[1] + fr->pitch[2]) * ((h + 1) / 2);
    int even = w % 2 == 0 && h % 2 == 0 && fr->pitch[0] == w && fr->planes[1] == y + y_bytes &&
               (fr->format == OMMA_PIXEL_NV12
                    ? fr->pitch[1] == w
                    : fr->pitch[1] == w / 2 && fr->pitch[2] == w / 2 &&
                          fr->planes[2] == fr->planes[1] + (int64_t)(w / 2) * (h / 2));
    if (even) {
        shape[0] = (int64_t)h * 3 / 2, shape[1] = w;
        strides[0] = w, strides[1] = 1;
        return 2;
    }
    shape[0] = total;
    strides[0] = 1;
    return 1;
}

static char *dlpack_kwlist[] = {"stream", "max_version", "dl_device", "copy", NULL};

static PyObject *frame_dlpack(frame_obj *fr, PyObject *args, PyObject *kwds)
{
    PyObject *stream_obj = Py_None, *max_version = Py_None, *dl_dev = Py_None, *copy = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|$OOOO:__dlpack__", dlpack_kwlist, &stream_obj,
                                     &max_version, &dl_dev, &copy))
        return NULL;
    (void)max_version; /* DLPack 0.8 capsules ("dltensor"), which every consumer takes */
    if (!fr->held || fr->closed)
        return pyomma_raise_msg(OMMA_ERR_CLOSED, "bus %s: camera %d frame %llu: closed",
                                fr->sub->name, fr->f.camera, (unsigned long long)fr->f.seq);
    if (copy != Py_None && PyObject_IsTrue(copy) == 1) {
        PyErr_SetString(PyExc_BufferError, "BusFrame.__dlpack__: copy=True: frames are "
                                           "exported in place only (copy the tensor)");
        return NULL;
    }
    int ordinal = omma_device_ordinal(fr->sub->dev);
    if (dl_dev != Py_None) {
        int t = 0, id = 0;
        if (!PyArg_ParseTuple(dl_dev, "ii", &t, &id))
            return NULL;
        if (t != DL_CUDA || id != ordinal) {
            PyErr_Format(PyExc_BufferError,
                         "BusFrame.__dlpack__: the frame is on CUDA device %d, not (%d, %d)",
                         ordinal, t, id);
            return NULL;
        }
    }
    /* DLPack's stream: None is the legacy default stream, -1 no ordering
     * (given back after the legacy stream's work), 1 legacy, 2 per-thread
     * default (given back after the legacy stream, which waits for it),
     * else a CUstream. 0 is not allowed on CUDA. */
    long long stream = 1;
    if (stream_obj != Py_None) {
        stream = PyLong_AsLongLong(stream_obj);
        if (stream == -1 && PyErr_Occurred())
            return NULL;
        if (stream == 0 || stream < -1) {
            PyErr_Format(PyExc_ValueError,
                         "BusFrame.__dlpack__: stream %lld: on CUDA the stream is -1, 1, 2 or "
                         "a CUstream",
                         stream);
            return NULL;
        }
    }
    uintptr_t read_on = stream == -1 || stream == 2 ? 1 : (uintptr_t)stream;
    sub_obj *s = fr->sub;
    omma_status st = OMMA_OK;
    if (stream != -1) { /* nothing to enqueue today: the frame is complete when announced */
        Py_BEGIN_ALLOW_THREADS pthread_mutex_lock(&s->lock);
        st = omma_bus_wait(s->sub, &fr->f, (void *)(uintptr_t)stream);
        pthread_mutex_unlock(&s->lock);
        Py_END_ALLOW_THREADS if (st != OMMA_OK) return pyomma_raise(st);
    }
    export_t *e = calloc(1, sizeof *e);
    if (!e)
        return PyErr_NoMemory();
    dl_tensor *t = &e->mt.dl_tensor;
    t->data = (void *)fr->f.frame.planes[0];
    t->device.device_type = DL_CUDA;
    t->device.device_id = ordinal;
    t->ndim = frame_shape(&fr->f, e->shape, e->strides);
    t->dtype.code = DL_UINT;
    t->dtype.bits = 8;
    t->dtype.lanes = 1;
    t->shape = e->shape;
    t->strides = e->strides;
    t->byte_offset = 0;
    e->mt.manager_ctx = fr;
    e->mt.deleter = export_deleter;
    e->owner = fr;
    PyObject *cap = PyCapsule_New(&e->mt, "dltensor", capsule_destructor);
    if (!cap) {
        free(e);
        return NULL;
    }
    Py_INCREF(fr);
    fr->exports++;
    fr->exported = 1;
    int known = 0;
    for (int i = 0; i < fr->n_streams; i++)
        known |= fr->streams[i] == read_on;
    if (!known && fr->n_streams < MAX_STREAMS)
        fr->streams[fr->n_streams++] = read_on;
    else if (!known) /* more streams than remembered: the legacy one waits for blocking ones */
        fr->streams[MAX_STREAMS - 1] = 1;
    return cap;
}

static PyObject *frame_dlpack_device(frame_obj *fr, PyObject *unused)
{
    (void)unused;
    return Py_BuildValue("(ii)", DL_CUDA, omma_device_ordinal(fr->sub->dev));
}

static PyObject *frame_faces(frame_obj *fr, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"timeout", NULL};
    double timeout = 1.0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|d:faces", kwlist, &timeout))
        return NULL;
    if (!(timeout >= 0.0) || timeout > 86400.0)
        return pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "faces: timeout %g s is not in 0..86400",
                                timeout);
    sub_obj *s = fr->sub;
    if (!s->sub)
        return pyomma_raise_msg(OMMA_ERR_CLOSED, "bus %s: the subscriber is closed", s->name);
    omma_face *faces = malloc(sizeof(omma_face) * MAX_FACES);
    if (!faces)
        return PyErr_NoMemory();
    int n = 0;
    omma_status st;
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        Py_BEGIN_ALLOW_THREADS st = omma_bus_results(s->sub, &fr->f, faces, MAX_FACES, &n);
        if (st == OMMA_ERR_TIMEOUT) {
            struct timespec nap = {0, 1000000};
            nanosleep(&nap, NULL);
        }
        Py_END_ALLOW_THREADS if (st != OMMA_ERR_TIMEOUT) break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        double waited = (double)(now.tv_sec - t0.tv_sec) + (now.tv_nsec - t0.tv_nsec) * 1e-9;
        if (waited >= timeout) {
            free(faces);
            return pyomma_raise_msg(OMMA_ERR_TIMEOUT,
                                    "bus %s: camera %d frame %llu: no results within %g s", s->name,
                                    fr->f.camera, (unsigned long long)fr->f.seq, timeout);
        }
        if (PyErr_CheckSignals() < 0) {
            free(faces);
            return NULL;
        }
    }
    if (st != OMMA_OK) {
        free(faces);
        return pyomma_raise(st);
    }
    PyObject *list = pyomma_faces_list(faces, n);
    free(faces);
    return list;
}

static PyObject *frame_get(frame_obj *fr, void *which)
{
    const omma_bus_frame *f = &fr->f;
    switch ((int)(intptr_t)which) {
    case 0:
        return PyLong_FromLong(f->camera);
    case 1:
        return PyLong_FromUnsignedLongLong(f->seq);
    case 2:
        return PyLong_FromUnsignedLongLong(f->capture_ns);
    case 3:
        return PyLong_FromUnsignedLongLong(f->announce_ns);
    case 4:
        return PyLong_FromUnsignedLongLong(f->missed);
    case 5:
        return PyLong_FromLong(f->frame.width);
    case 6:
        return PyLong_FromLong(f->frame.height);
    case 7:
        return PyUnicode_FromString(format_name(f->frame.format));
    case 8: {
        int n = f->frame.format == OMMA_PIXEL_NV12 ? 2 : f->frame.format == OMMA_PIXEL_I420 ? 3 : 1;
        PyObject *t = PyTuple_New(n);
        for (int i = 0; t && i < n; i++) {
            PyObject *v = PyLong_FromLong(f->frame.pitch[i]);
            if (!v)
                Py_CLEAR(t);
            else
                PyTuple_SET_ITEM(t, i, v);
        }
        return t;
    }
    case 9: {
        int64_t shape[3], strides[3];
        int nd = frame_shape(f, shape, strides);
        return nd == 3   ? Py_BuildValue("(LLL)", (long long)shape[0], (long long)shape[1],
                                         (long long)shape[2])
               : nd == 2 ? Py_BuildValue("(LL)", (long long)shape[0], (long long)shape[1])
                         : Py_BuildValue("(L)", (long long)shape[0]);
    }
    case 10: {
        int64_t shape[3], strides[3];
        int nd = frame_shape(f, shape, strides);
        long long bytes = nd == 1 ? shape[0] : strides[0] * shape[0];
        return PyLong_FromLongLong(bytes);
    }
    case 11:
        return PyLong_FromLong(omma_device_ordinal(fr->sub->dev));
    case 12:
        return PyLong_FromUnsignedLongLong((unsigned long long)(uintptr_t)f->frame.planes[0]);
    case 13:
        return PyBool_FromLong(!fr->held);
    default:
        Py_RETURN_NONE;
    }
}

#define FRAME_GET(name, i, doc)                                                                    \
    {                                                                                              \
        name, (getter)frame_get, NULL, doc, (void *)(intptr_t)(i)                                  \
    }
static PyGetSetDef frame_getset[] = {
    FRAME_GET("camera", 0, "The camera's index on the bus."),
    FRAME_GET("seq", 1, "The camera's frame number (gaps: frames dropped or missed)."),
    FRAME_GET("capture_ns", 2, "When the frame was captured (CLOCK_MONOTONIC, ns)."),
    FRAME_GET("announce_ns", 3, "When the publisher announced it (CLOCK_MONOTONIC, ns)."),
    FRAME_GET("missed", 4, "Frames of this camera this subscriber missed so far."),
    FRAME_GET("width", 5, "Width in pixels."),
    FRAME_GET("height", 6, "Height in pixels."),
    FRAME_GET("format", 7, "'rgb', 'bgr', 'rgba', 'bgra', 'nv12' or 'i420'."),
    FRAME_GET("pitch", 8, "Bytes per row of each plane (a tuple)."),
    FRAME_GET("shape", 9,
              "The exported tensor's shape: (H, W, C), (H*3/2, W) for NV12/I420 (the Y plane's "
              "rows, then the chroma's), or (bytes,) for odd sizes."),
    FRAME_GET("nbytes", 10, "Bytes of the frame."),
    FRAME_GET("device", 11, "The GPU's ordinal."),
    FRAME_GET("data_ptr", 12, "The device address of the first plane (this process)."),
    FRAME_GET("closed", 13, "True once given back (closed, and no tensor made from it remains)."),
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef frame_methods[] = {
    {"__dlpack__", (PyCFunction)(void (*)(void))frame_dlpack, METH_VARARGS | METH_KEYWORDS,
     "__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)\n--\n\n"
     "The frame as a DLPack capsule (uint8 on the GPU, in place: mapped read-only\n"
     "where the driver allows it, so never write to it). stream: the consumer's\n"
     "stream (DLPack's convention); the frame is given back after the reads\n"
     "enqueued there."},
    {"__dlpack_device__", (PyCFunction)frame_dlpack_device, METH_NOARGS,
     "__dlpack_device__()\n--\n\n(2, ordinal): CUDA memory of GPU ordinal."},
    {"faces", (PyCFunction)(void (*)(void))frame_faces, METH_VARARGS | METH_KEYWORDS,
     "faces(timeout=1.0)\n--\n\n"
     "The faces the publisher found in this frame (a list of omma.Face), waiting up\n"
     "to timeout seconds for them (the GIL released). Raises TimeoutError when they\n"
     "are not known in time, ClosedError when newer frames' results replaced them\n"
     "or the subscriber is closed."},
    {"close", (PyCFunction)frame_close, METH_NOARGS,
     "close()\n--\n\nGives the frame back to the publisher now, or once the last tensor\n"
     "made from it is gone (idempotent). Tensors made from it keep it until then."},
    {"__enter__", (PyCFunction)frame_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)frame_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyObject *frame_repr(frame_obj *fr)
{
    return PyUnicode_FromFormat("<omma.bus.Frame bus %s camera %d seq %llu %dx%d %s%s>",
                                fr->sub->name, fr->f.camera, (unsigned long long)fr->f.seq,
                                fr->f.frame.width, fr->f.frame.height,
                                format_name(fr->f.frame.format), fr->held ? "" : " (given back)");
}

static PyTypeObject frame_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "omma._omma.BusFrame",
    .tp_basicsize = sizeof(frame_obj),
    .tp_dealloc = (destructor)frame_dealloc,
    .tp_repr = (reprfunc)frame_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One frame of the bus, on the GPU (made by omma.bus.Subscriber): DLPack-capable\n"
              "(torch.from_dlpack(frame), cupy.from_dlpack(frame): zero copy), with its\n"
              "camera, seq, capture_ns, format, pitch and faces(). Given back to the\n"
              "publisher when closed or collected and no tensor made from it remains.",
    .tp_methods = frame_methods,
    .tp_getset = frame_getset,
};

/* ---- BusSubscriber ------------------------------------------------------- */

static int sub_init(sub_obj *self, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"name",      "cameras",   "every_frame", "device",
                             "directory", "max_holds", "timeout",     NULL};
    const char *name = NULL, *dir = NULL;
    PyObject *cameras = Py_None;
    int every_frame = 0, device = 0, max_holds = 2;
    double timeout = 2.0;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "s|Op$izid:BusSubscriber", kwlist, &name, &cameras,
                                     &every_frame, &device, &dir, &max_holds, &timeout))
        return -1;
    if (self->sub || self->lock_ready) {
        pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "bus.Subscriber: already initialised");
        return -1;
    }
    omma_bus_options opt;
    omma_bus_options_init(&opt);
    if (max_holds < 1 || max_holds > 8) {
        pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "bus %s: max_holds %d is not in 1..8", name,
                         max_holds);
        return -1;
    }
    if (!(timeout > 0.0) || timeout > 3600.0) {
        pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "bus %s: timeout %g s is not in (0, 3600]", name,
                         timeout);
        return -1;
    }
    opt.max_holds = max_holds;
    opt.every_frame = every_frame != 0;
    opt.timeout_ms = (int)(timeout * 1000.0 + 0.5);
    opt.dir = dir;
    int *cams = NULL;
    if (cameras != Py_None) {
        PyObject *seq = PySequence_Fast(cameras, "cameras must be a sequence of ints (or None)");
        if (!seq)
            return -1;
        Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
        if (n < 1 || n > 1024) {
            Py_DECREF(seq);
            pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "bus %s: %zd cameras (1..1024, or None for all)",
                             name, n);
            return -1;
        }
        cams = malloc(sizeof(int) * (size_t)n);
        if (!cams) {
            Py_DECREF(seq);
            PyErr_NoMemory();
            return -1;
        }
        for (Py_ssize_t i = 0; i < n; i++) {
            if (pyomma_as_int(PySequence_Fast_GET_ITEM(seq, i), "camera", &cams[i]) < 0) {
                free(cams);
                Py_DECREF(seq);
                return -1;
            }
            if (cams[i] < 0 || cams[i] >= 1024) {
                pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "bus %s: camera %d out of range (0..1023)",
                                 name, cams[i]);
                free(cams);
                Py_DECREF(seq);
                return -1;
            }
        }
        Py_DECREF(seq);
        opt.cameras = cams;
        opt.n_cameras = (int)n;
    }
    /* The name and directory first, and whether anybody publishes it: a
     * clear error without a GPU. */
    char path[256];
    omma_status st = bus_socket_path(dir, name, path, sizeof path);
    struct stat sb;
    if (st == OMMA_OK && stat(path, &sb) != 0) {
        free(cams);
        pyomma_raise_msg(OMMA_ERR_CLOSED, "bus %s: no publisher (nothing at %s)", name, path);
        return -1;
    }
    omma_device *dev = NULL;
    omma_bus_subscriber *sub = NULL;
    if (st == OMMA_OK) {
        Py_BEGIN_ALLOW_THREADS st = omma_device_open(device, &dev);
        if (st == OMMA_OK)
            st = omma_bus_subscribe(dev, name, &opt, &sub);
        if (st != OMMA_OK) {
            omma_device_close(dev);
            dev = NULL;
        }
        Py_END_ALLOW_THREADS
    }
    free(cams);
    if (st != OMMA_OK) {
        pyomma_raise(st);
        return -1;
    }
    int n_cams = omma_bus_camera_count(sub);
    self->cap_pending = n_cams * max_holds + 1;
    self->pending = malloc(sizeof(omma_bus_frame) * (size_t)self->cap_pending);
    if (!self->pending || pthread_mutex_init(&self->lock, NULL) != 0) {
        free(self->pending);
        self->pending = NULL;
        Py_BEGIN_ALLOW_THREADS omma_bus_close(sub);
        omma_device_close(dev);
        Py_END_ALLOW_THREADS PyErr_NoMemory();
        return -1;
    }
    self->lock_ready = 1;
    self->sub = sub;
    self->dev = dev;
    self->every_frame = every_frame;
    snprintf(self->name, sizeof self->name, "%s", name);
    return 0;
}

static void sub_dealloc(sub_obj *self)
{
    if (self->lock_ready) {
        sub_close_now(self);
        pthread_mutex_destroy(&self->lock);
    }
    free(self->pending);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Takes the next frame into *out, waiting up to timeout_ms (< 0: without
 * limit) in slices, the GIL and the lock released between them. Returns
 * OMMA_OK, OMMA_ERR_TIMEOUT, another status (omma's error set), or -1 for
 * a Python exception (a signal, close() from another thread). */
static int next_announced(sub_obj *s, long long timeout_ms, omma_bus_frame *out)
{
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        long long left = WAIT_SLICE_MS;
        if (timeout_ms >= 0) {
            clock_gettime(CLOCK_MONOTONIC, &now);
            long long waited =
                (now.tv_sec - t0.tv_sec) * 1000LL + (now.tv_nsec - t0.tv_nsec) / 1000000;
            left = timeout_ms - waited;
            if (left < 0)
                left = 0;
            if (left > WAIT_SLICE_MS)
                left = WAIT_SLICE_MS;
        }
        omma_status st;
        Py_BEGIN_ALLOW_THREADS pthread_mutex_lock(&s->lock);
        st = omma_bus_next(s->sub, (int)left, out);
        pthread_mutex_unlock(&s->lock);
        Py_END_ALLOW_THREADS if (st != OMMA_ERR_TIMEOUT) return st;
        if (timeout_ms >= 0 && left < WAIT_SLICE_MS)
            return OMMA_ERR_TIMEOUT;
        if (PyErr_CheckSignals() < 0)
            return -1;
        if (s->closing) {
            pyomma_raise_msg(OMMA_ERR_CLOSED, "bus %s: the subscriber was closed", s->name);
            return -1;
        }
    }
}

/* every_frame=False: frames announced meanwhile replace the pending frame
 * of their camera (the older one given back unread). */
static omma_status take_newer(sub_obj *s)
{
    for (;;) {
        omma_bus_frame f;
        omma_status st;
        Py_BEGIN_ALLOW_THREADS pthread_mutex_lock(&s->lock);
        st = omma_bus_next(s->sub, 0, &f);
        pthread_mutex_unlock(&s->lock);
        Py_END_ALLOW_THREADS if (st == OMMA_ERR_TIMEOUT) return OMMA_OK;
        if (st != OMMA_OK)
            return st;
        int i = 0;
        while (i < s->n_pending && s->pending[i].camera != f.camera)
            i++;
        if (i < s->n_pending) {
            omma_bus_frame old = s->pending[i];
            memmove(&s->pending[i], &s->pending[i + 1],
                    sizeof(omma_bus_frame) * (size_t)(s->n_pending - i - 1));
            s->n_pending--;
            Py_BEGIN_ALLOW_THREADS pthread_mutex_lock(&s->lock);
            st = omma_bus_release(s->sub, &old, NULL);
            pthread_mutex_unlock(&s->lock);
            Py_END_ALLOW_THREADS if (st != OMMA_OK) return st;
            s->skipped++;
        }
        if (s->n_pending == s->cap_pending) { /* cannot happen: the publisher bounds holds */
            Py_BEGIN_ALLOW_THREADS pthread_mutex_lock(&s->lock);
            omma_bus_release(s->sub, &f, NULL);
            pthread_mutex_unlock(&s->lock);
            Py_END_ALLOW_THREADS continue;
        }
        s->pending[s->n_pending++] = f;
    }
}

static PyObject *sub_read_timeout(sub_obj *s, long long timeout_ms)
{
    if (!s->sub || s->closing)
        return pyomma_raise_msg(OMMA_ERR_CLOSED, "bus %s: the subscriber is closed", s->name);
    if (s->in_read)
        return pyomma_raise_msg(OMMA_ERR_BUSY,
                                "bus %s: another thread is reading this subscriber (read it "
                                "from one thread)",
                                s->name);
    s->in_read = 1;
    int rc = OMMA_OK;
    if (s->n_pending == 0) {
        omma_bus_frame f;
        rc = next_announced(s, timeout_ms, &f);
        if (rc == OMMA_OK)
            s->pending[s->n_pending++] = f;
    }
    if (rc == OMMA_OK && !s->every_frame)
        rc = take_newer(s);
    s->in_read = 0;
    PyObject *out = NULL;
    if (rc == -1) {
        /* a Python exception is set */
    } else if (rc == OMMA_ERR_TIMEOUT) {
        pyomma_raise_msg(OMMA_ERR_TIMEOUT, "bus %s: no frame within %lld ms", s->name, timeout_ms);
    } else if (rc != OMMA_OK) {
        pyomma_raise((omma_status)rc);
    } else {
        frame_obj *fr = PyObject_New(frame_obj, &frame_type);
        if (fr) {
            fr->f = s->pending[0];
            memmove(&s->pending[0], &s->pending[1],
                    sizeof(omma_bus_frame) * (size_t)(s->n_pending - 1));
            s->n_pending--;
            Py_INCREF(s);
            fr->sub = s;
            fr->held = 1;
            fr->closed = fr->exports = fr->exported = fr->n_streams = 0;
            s->frames_out++;
            out = (PyObject *)fr;
        }
    }
    finish_close(s);
    return out;
}

static PyObject *sub_read(sub_obj *s, PyObject *args, PyObject *kwds)
{
    static char *kwlist[] = {"timeout", NULL};
    PyObject *timeout = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "|O:read", kwlist, &timeout))
        return NULL;
    long long ms = -1;
    if (timeout != Py_None) {
        double t = PyFloat_AsDouble(timeout);
        if (t == -1.0 && PyErr_Occurred())
            return NULL;
        if (!(t >= 0.0) || t > 86400.0)
            return pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "read: timeout %g s is not in 0..86400",
                                    t);
        ms = (long long)(t * 1000.0 + 0.5);
    }
    return sub_read_timeout(s, ms);
}

static PyObject *sub_iternext(sub_obj *s)
{
    return sub_read_timeout(s, -1);
}

static PyObject *sub_close(sub_obj *s, PyObject *unused)
{
    (void)unused;
    if (s->lock_ready)
        sub_close_now(s);
    Py_RETURN_NONE;
}

static PyObject *sub_enter(sub_obj *s, PyObject *unused)
{
    (void)unused;
    if (!s->sub)
        return pyomma_raise_msg(OMMA_ERR_CLOSED, "bus %s: the subscriber is closed", s->name);
    Py_INCREF(s);
    return (PyObject *)s;
}

static PyObject *sub_exit(sub_obj *s, PyObject *args)
{
    (void)args;
    return sub_close(s, NULL);
}

static PyObject *sub_cameras(sub_obj *s, void *c)
{
    (void)c;
    if (!s->sub)
        return pyomma_raise_msg(OMMA_ERR_CLOSED, "bus %s: the subscriber is closed", s->name);
    int n = omma_bus_camera_count(s->sub);
    PyObject *list = PyList_New(n);
    for (int i = 0; list && i < n; i++) {
        omma_bus_camera_info ci;
        omma_status st = omma_bus_camera_info_get(s->sub, i, &ci);
        PyObject *d = st != OMMA_OK
                          ? pyomma_raise(st)
                          : Py_BuildValue("{s:i,s:s,s:i,s:i,s:s,s:i,s:i,s:s,s:O}", "index",
                                          ci.index, "name", ci.name, "width", ci.width, "height",
                                          ci.height, "format", format_name(ci.format), "slots",
                                          ci.slots, "gpu", ci.gpu, "gpu_uuid", ci.gpu_uuid,
                                          "read_only", ci.read_only ? Py_True : Py_False);
        if (!d)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, d);
    }
    return list;
}

static PyObject *sub_get(sub_obj *s, void *which)
{
    switch ((int)(intptr_t)which) {
    case 0:
        return PyUnicode_FromString(s->name);
    case 1:
        return PyBool_FromLong(s->sub == NULL || s->closing);
    case 2:
        return PyLong_FromUnsignedLongLong(s->skipped);
    case 3:
        return PyLong_FromLong(s->sub ? omma_bus_publisher_pid(s->sub) : 0);
    case 4:
        return PyBool_FromLong(s->every_frame);
    case 5:
        return PyLong_FromLong(s->dev ? omma_device_ordinal(s->dev) : -1);
    default:
        Py_RETURN_NONE;
    }
}

#define SUB_GET(name, i, doc)                                                                      \
    {                                                                                              \
        name, (getter)sub_get, NULL, doc, (void *)(intptr_t)(i)                                    \
    }
static PyGetSetDef sub_getset[] = {
    SUB_GET("name", 0, "The bus' name."),
    SUB_GET("closed", 1, "True once close() ran."),
    SUB_GET("skipped", 2,
            "Frames given back unread because a newer one of their camera came first "
            "(every_frame=False)."),
    SUB_GET("publisher_pid", 3, "The publisher's process id."),
    SUB_GET("every_frame", 4, "Whether every frame announced is handed out."),
    SUB_GET("device", 5, "The GPU's ordinal the frames are mapped on."),
    {"cameras", (getter)sub_cameras, NULL,
     "The cameras attached: a list of dicts (index, name, width, height, format, slots, gpu, "
     "gpu_uuid, read_only).",
     NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef sub_methods[] = {
    {"read", (PyCFunction)(void (*)(void))sub_read, METH_VARARGS | METH_KEYWORDS,
     "read(timeout=None)\n--\n\n"
     "The next frame (an omma.bus.Frame), waiting up to timeout seconds (None: without\n"
     "limit) with the GIL released. Raises TimeoutError, ClosedError naming the bus when\n"
     "the publisher stopped or died, BusyError when another thread is reading."},
    {"close", (PyCFunction)sub_close, METH_NOARGS,
     "close()\n--\n\nDetaches from the bus (idempotent), once every frame handed out is given\n"
     "back; no frame is handed out after it."},
    {"__enter__", (PyCFunction)sub_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)sub_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL}};

static PyTypeObject sub_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "omma._omma.BusSubscriber",
    .tp_basicsize = sizeof(sub_obj),
    .tp_dealloc = (destructor)sub_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "A subscriber of the frame bus (C): use omma.bus.subscribe.",
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)sub_iternext,
    .tp_methods = sub_methods,
    .tp_getset = sub_getset,
    .tp_init = (initproc)sub_init,
    .tp_new = PyType_GenericNew,
};

int pyomma_add_bus(PyObject *m)
{
    if (PyType_Ready(&sub_type) < 0 || PyType_Ready(&frame_type) < 0)
        return -1;
    if (PyModule_AddObjectRef(m, "BusSubscriber", (PyObject *)&sub_type) < 0)
        return -1;
    return PyModule_AddObjectRef(m, "BusFrame", (PyObject *)&frame_type);
}
