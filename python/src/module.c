/* omma._omma: the module, its exceptions, the result types, the library's
 * version and devices, and image files. */
#include "pyomma.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pyomma_ARRAY_API
#include <numpy/arrayobject.h>

#include "io/image_file.h"

PyObject *pyomma_error_types[OMMA_STATUS_COUNT];
PyTypeObject *pyomma_face_type;
PyTypeObject *pyomma_box_type;
PyTypeObject *pyomma_batch_type;
PyTypeObject *pyomma_result_type;

/* ---- Exceptions ---------------------------------------------------------- */

static const struct {
    omma_status status;
    const char *name; /* omma.<name> */
    const char *base; /* builtin second base, or NULL */
    const char *doc;
} error_table[] = {
    {OMMA_ERR_INVALID_ARG, "InvalidArgumentError", "ValueError",
     "A bad argument (OMMA_ERR_INVALID_ARG)."},
    {OMMA_ERR_NO_DEVICE, "NoDeviceError", "RuntimeError",
     "No driver, no GPU, or no GPU with that ordinal, or omma built without CUDA "
     "(OMMA_ERR_NO_DEVICE)."},
    {OMMA_ERR_CUDA, "CudaError", "RuntimeError",
     "A CUDA call failed; the message names it (OMMA_ERR_CUDA)."},
    {OMMA_ERR_OUT_OF_MEMORY, "OutOfMemoryError", "MemoryError",
     "A host or device allocation failed (OMMA_ERR_OUT_OF_MEMORY)."},
    {OMMA_ERR_IO, "IOError", "OSError",
     "A file or socket could not be read or written (OMMA_ERR_IO)."},
    {OMMA_ERR_FORMAT, "FormatError", "ValueError",
     "Malformed input data: model, image, video, config (OMMA_ERR_FORMAT)."},
    {OMMA_ERR_UNSUPPORTED, "UnsupportedError", "ValueError",
     "Valid input that omma does not handle (OMMA_ERR_UNSUPPORTED)."},
    {OMMA_ERR_BUSY, "BusyError", "RuntimeError",
     "An object owned by one user is in use by another thread (OMMA_ERR_BUSY)."},
    {OMMA_ERR_TIMEOUT, "TimeoutError", "TimeoutError",
     "A wait ran past its deadline (OMMA_ERR_TIMEOUT)."},
    {OMMA_ERR_CLOSED, "ClosedError", "RuntimeError",
     "The object or its peer was closed (OMMA_ERR_CLOSED)."},
    {OMMA_ERR_DEVICE_LOST, "DeviceLostError", "RuntimeError",
     "The device context is unusable (OMMA_ERR_DEVICE_LOST)."},
    {OMMA_ERR_INTERNAL, "InternalError", "RuntimeError", "A bug in omma (OMMA_ERR_INTERNAL)."},
};

static PyObject *raise_with(omma_status st, const char *msg)
{
    if (st <= OMMA_OK || st >= OMMA_STATUS_COUNT)
        st = OMMA_ERR_INTERNAL;
    PyObject *type = pyomma_error_types[st];
    PyObject *text = PyUnicode_DecodeUTF8(msg, (Py_ssize_t)strlen(msg), "replace");
    if (!text)
        return NULL;
    PyObject *exc = PyObject_CallOneArg(type, text);
    Py_DECREF(text);
    if (!exc)
        return NULL;
    PyObject *code = PyLong_FromLong((long)st);
    PyObject *name = PyUnicode_FromString(omma_status_str(st));
    if (!code || !name || PyObject_SetAttrString(exc, "code", code) < 0 ||
        PyObject_SetAttrString(exc, "status", name) < 0) {
        Py_XDECREF(code);
        Py_XDECREF(name);
        Py_DECREF(exc);
        return NULL;
    }
    Py_DECREF(code);
    Py_DECREF(name);
    PyErr_SetObject(type, exc);
    Py_DECREF(exc);
    return NULL;
}

PyObject *pyomma_raise(omma_status st)
{
    const char *msg = omma_last_error();
    return raise_with(st, msg && *msg ? msg : omma_status_str(st));
}

PyObject *pyomma_raise_msg(omma_status st, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return raise_with(st, buf);
}

static int add_errors(PyObject *m)
{
    PyObject *base = PyErr_NewExceptionWithDoc(
        "omma.Error",
        "Base of omma's errors. Attributes: status (the C status' name, "
        "e.g. 'OMMA_ERR_FORMAT') and code (its value); str() is omma's message.",
        NULL, NULL);
    if (!base)
        return -1;
    pyomma_error_types[OMMA_OK] = base; /* stands for the base class */
    if (PyModule_AddObjectRef(m, "Error", base) < 0)
        return -1;
    PyObject *builtins = PyEval_GetBuiltins();
    for (size_t i = 0; i < sizeof error_table / sizeof error_table[0]; i++) {
        PyObject *second = PyDict_GetItemString(builtins, error_table[i].base);
        PyObject *bases = PyTuple_Pack(2, base, second);
        if (!bases)
            return -1;
        char qual[96];
        snprintf(qual, sizeof qual, "omma.%s", error_table[i].name);
        PyObject *type = PyErr_NewExceptionWithDoc(qual, error_table[i].doc, bases, NULL);
        Py_DECREF(bases);
        if (!type)
            return -1;
        pyomma_error_types[error_table[i].status] = type;
        if (PyModule_AddObjectRef(m, error_table[i].name, type) < 0)
            return -1;
    }
    return 0;
}

/* ---- Result types -------------------------------------------------------- */

static PyStructSequence_Field box_fields[] = {{"xmin", "left edge, frame pixels"},
                                              {"ymin", "top edge"},
                                              {"xmax", "right edge"},
                                              {"ymax", "bottom edge"},
                                              {NULL, NULL}};
static PyStructSequence_Desc box_desc = {
    "omma.Box", "An axis-aligned box in frame pixels (continuous coordinates).", box_fields, 4};

static PyStructSequence_Field batch_fields[] = {
    {"counts", "(n_frames,) int32: faces per frame"},
    {"frame", "(N,) int32: index of each face's frame in the batch"},
    {"camera", "(N,) int32: each face's camera"},
    {"id", "(N,) int32 track ids"},
    {"score", "(N,) float32 detector scores"},
    {"box", "(N, 4) float32 boxes (xmin, ymin, xmax, ymax)"},
    {"keypoints", "(N, 6, 2) float32 keypoints"},
    {"landmarks", "(N, 468, 3) float32 landmarks"},
    {"presence", "(N,) float32 presence"},
    {NULL, NULL}};
static PyStructSequence_Desc batch_desc = {
    "omma.FaceBatch",
    "The faces of a batch of frames as arrays (FacePipeline.process_batched): "
    "face i is of frame frame[i]; faces of one frame are consecutive, oldest track first.",
    batch_fields, 9};

static PyStructSequence_Field result_fields[] = {
    {"camera", "index of the camera in the sources given to omma.stream"},
    {"gpu", "index of the GPU in gpus that ran it; -1 on the CPU"},
    {"seq", "frame number within the camera, from 1"},
    {"capture_ns", "when the frame was captured (monotonic clock, ns)"},
    {"done_ns", "when its results were ready (monotonic clock, ns)"},
    {"dropped", "frames of this camera dropped before this one"},
    {"faces", "list of omma.Face"},
    {NULL, NULL}};
static PyStructSequence_Desc result_desc = {
    "omma.StreamResult", "One frame's results from omma.stream.", result_fields, 7};

/* ---- Module functions ---------------------------------------------------- */

int pyomma_as_int(PyObject *obj, const char *what, int *out)
{
    int overflow = 0;
    long v = PyLong_AsLongAndOverflow(obj, &overflow);
    if (v == -1 && PyErr_Occurred())
        return -1;
    if (overflow || v < INT_MIN || v > INT_MAX) {
        pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "%s out of range", what);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static PyObject *m_version(PyObject *self, PyObject *args)
{
    (void)self, (void)args;
    return Py_BuildValue("(sss)", omma_version(), omma_build_commit(), omma_build_features());
}

static PyObject *m_device_count(PyObject *self, PyObject *args)
{
    (void)self, (void)args;
    int n = 0;
    omma_status st;
    Py_BEGIN_ALLOW_THREADS st = omma_device_count(&n);
    Py_END_ALLOW_THREADS if (st != OMMA_OK) return pyomma_raise(st);
    return PyLong_FromLong(n);
}

static PyObject *m_device_info(PyObject *self, PyObject *arg)
{
    (void)self;
    int ordinal;
    if (pyomma_as_int(arg, "ordinal", &ordinal) < 0)
        return NULL;
    omma_device *dev = NULL;
    omma_device_info info;
    omma_status st;
    Py_BEGIN_ALLOW_THREADS st = omma_device_open(ordinal, &dev);
    if (st == OMMA_OK)
        st = omma_device_get_info(dev, &info);
    omma_device_close(dev);
    Py_END_ALLOW_THREADS if (st != OMMA_OK) return pyomma_raise(st);
    return Py_BuildValue("{s:i,s:s,s:s,s:s,s:(ii),s:i,s:K,s:K,s:i}", "ordinal", info.ordinal,
                         "name", info.name, "pci_bus_id", info.pci_bus_id, "uuid", info.uuid,
                         "compute_capability", info.cc_major, info.cc_minor, "sm_count",
                         info.sm_count, "memory_total", (unsigned long long)info.memory_total,
                         "memory_free", (unsigned long long)info.memory_free, "driver_version",
                         info.driver_version);
}

static PyObject *m_load_image(PyObject *self, PyObject *arg)
{
    (void)self;
    PyObject *bytes = NULL;
    if (!PyUnicode_FSConverter(arg, &bytes))
        return NULL;
    io_image img = {0};
    omma_status st;
    const char *path = PyBytes_AS_STRING(bytes);
    Py_BEGIN_ALLOW_THREADS st = io_image_load(path, &img);
    Py_END_ALLOW_THREADS Py_DECREF(bytes);
    if (st != OMMA_OK)
        return pyomma_raise(st);
    npy_intp dims[3] = {img.height, img.width, 3};
    PyObject *a = PyArray_SimpleNew(3, dims, NPY_UINT8);
    if (a)
        memcpy(PyArray_DATA((PyArrayObject *)a), img.rgb, (size_t)img.width * img.height * 3);
    io_image_free(&img);
    return a;
}

static PyObject *m_raise_status(PyObject *self, PyObject *args)
{
    /* For tests of the mapping: raises the exception of a status. */
    (void)self;
    int st;
    const char *msg;
    if (!PyArg_ParseTuple(args, "is", &st, &msg))
        return NULL;
    if (st <= 0 || st >= OMMA_STATUS_COUNT)
        return pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "no omma status %d", st);
    return pyomma_raise_msg((omma_status)st, "%s", msg);
}

static PyMethodDef methods[] = {
    {"version", m_version, METH_NOARGS, "(version, commit, features) of the library."},
    {"device_count", m_device_count, METH_NOARGS,
     "Number of GPUs; raises NoDeviceError without driver or GPU."},
    {"device_info", m_device_info, METH_O, "A dict of facts about GPU `ordinal`."},
    {"load_image", m_load_image, METH_O,
     "load_image(path) -> (H, W, 3) uint8 RGB array of a PNG or JPEG file."},
    {"_raise_status", m_raise_status, METH_VARARGS, "Raises the exception of a status (tests)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef moddef = {PyModuleDef_HEAD_INIT,
                                    "omma._omma",
                                    "omma's C extension; use the omma package.",
                                    -1,
                                    methods,
                                    NULL,
                                    NULL,
                                    NULL,
                                    NULL};

static int add_struct_type(PyObject *m, const char *name, PyStructSequence_Desc *desc,
                           PyTypeObject **out)
{
    *out = PyStructSequence_NewType(desc);
    if (!*out)
        return -1;
    return PyModule_AddObjectRef(m, name, (PyObject *)*out);
}

PyMODINIT_FUNC PyInit__omma(void);
PyMODINIT_FUNC PyInit__omma(void)
{
    import_array();
    PyObject *m = PyModule_Create(&moddef);
    if (!m)
        return NULL;
    if (add_errors(m) < 0 || add_struct_type(m, "Box", &box_desc, &pyomma_box_type) < 0 ||
        pyomma_add_faces(m) < 0 ||
        add_struct_type(m, "FaceBatch", &batch_desc, &pyomma_batch_type) < 0 ||
        add_struct_type(m, "StreamResult", &result_desc, &pyomma_result_type) < 0 ||
        pyomma_add_pipeline(m) < 0 || pyomma_add_stream(m) < 0 || pyomma_add_bus(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
