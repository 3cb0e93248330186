/* omma.Face: one face of a call's results, read lazily.
 *
 * The C API writes a call's faces into a results block (an array of
 * omma_face inside one Python object). A Face is a small object naming a
 * face of a block: its id, score, box and presence become Python numbers
 * when read, and its keypoints and landmarks are NumPy views of the block
 * (writable, their base the block). Making a Face is one small allocation,
 * whatever the face holds; nothing of it is converted unless it is read.
 *
 * A block lives while a Face of it or one of its arrays does. The pipeline
 * writes its next call's faces into the same block when nothing else holds
 * it (the results were dropped), else into a new one: results are never
 * overwritten. Neither type holds other Python objects than the block, so
 * neither takes part in garbage collection (no cycles; gc.get_objects()
 * never hands one out). A Face is immutable; its arrays are its own. */
#include "pyomma.h"

#include <stddef.h>
#include <string.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pyomma_ARRAY_API
#define NO_IMPORT_ARRAY
#include <numpy/arrayobject.h>

typedef struct {
    PyObject_VAR_HEAD omma_face faces[1]; /* ob_size faces */
} results_obj;

typedef struct {
    PyObject_HEAD PyObject *results; /* the block (a strong reference) */
    const omma_face *f; /* inside it */
} face_obj;

static PyTypeObject results_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "omma._omma._FaceResults",
    .tp_basicsize = offsetof(results_obj, faces),
    .tp_itemsize = sizeof(omma_face),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The faces of one call (the block omma.Face objects and their arrays view).",
};

PyObject *pyomma_results_new(Py_ssize_t n)
{
    if (n < 1)
        n = 1;
    return (PyObject *)PyObject_NewVar(results_obj, &results_type, n);
}

omma_face *pyomma_results_faces(PyObject *results)
{
    return ((results_obj *)results)->faces;
}

Py_ssize_t pyomma_results_size(PyObject *results)
{
    return Py_SIZE(results);
}

static PyTypeObject face_type;

PyObject *pyomma_face_view(PyObject *results, Py_ssize_t i)
{
    face_obj *f = PyObject_New(face_obj, &face_type);
    if (!f)
        return NULL;
    Py_INCREF(results);
    f->results = results;
    f->f = &((results_obj *)results)->faces[i];
    return (PyObject *)f;
}

PyObject *pyomma_faces_list(const omma_face *faces, int n)
{
    PyObject *results = pyomma_results_new(n);
    PyObject *list = results ? PyList_New(n) : NULL;
    if (list && n > 0)
        memcpy(pyomma_results_faces(results), faces, sizeof(omma_face) * (size_t)n);
    for (int i = 0; list && i < n; i++) {
        PyObject *f = pyomma_face_view(results, i);
        if (!f)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, f);
    }
    Py_XDECREF(results);
    return list;
}

PyObject *pyomma_face_new(const omma_face *f)
{
    PyObject *results = pyomma_results_new(1);
    if (!results)
        return NULL;
    memcpy(pyomma_results_faces(results), f, sizeof *f);
    PyObject *face = pyomma_face_view(results, 0);
    Py_DECREF(results);
    return face;
}

static void face_dealloc(face_obj *self)
{
    Py_DECREF(self->results);
    PyObject_Free(self);
}

/* A float32 view of rows x cols floats at data, inside self's block. */
static PyObject *view(face_obj *self, const float *data, npy_intp rows, npy_intp cols)
{
    npy_intp dims[2] = {rows, cols};
    PyObject *a = PyArray_New(&PyArray_Type, 2, dims, NPY_FLOAT32, NULL, (void *)data, 0,
                              NPY_ARRAY_CARRAY, NULL);
    if (!a)
        return NULL;
    Py_INCREF(self->results);
    if (PyArray_SetBaseObject((PyArrayObject *)a, self->results) < 0) {
        Py_DECREF(a);
        return NULL;
    }
    return a;
}

static PyObject *get_id(face_obj *self, void *c)
{
    (void)c;
    return PyLong_FromLong(self->f->id);
}
static PyObject *get_score(face_obj *self, void *c)
{
    (void)c;
    return PyFloat_FromDouble(self->f->score);
}
static PyObject *get_presence(face_obj *self, void *c)
{
    (void)c;
    return PyFloat_FromDouble(self->f->presence);
}
static PyObject *get_box(face_obj *self, void *c)
{
    (void)c;
    PyObject *box = PyStructSequence_New(pyomma_box_type);
    if (!box)
        return NULL;
    const float b[4] = {self->f->box.xmin, self->f->box.ymin, self->f->box.xmax, self->f->box.ymax};
    for (int i = 0; i < 4; i++) {
        PyObject *v = PyFloat_FromDouble(b[i]);
        if (!v) {
            Py_DECREF(box);
            return NULL;
        }
        PyStructSequence_SetItem(box, i, v);
    }
    return box;
}
static PyObject *get_keypoints(face_obj *self, void *c)
{
    (void)c;
    return view(self, &self->f->keypoints[0][0], OMMA_FACE_KEYPOINTS, 2);
}
static PyObject *get_landmarks(face_obj *self, void *c)
{
    (void)c;
    return view(self, &self->f->landmarks[0][0], OMMA_FACE_LANDMARKS, 3);
}

static getter fields[] = {(getter)get_id,        (getter)get_score,     (getter)get_box,
                          (getter)get_keypoints, (getter)get_landmarks, (getter)get_presence};
enum { N_FIELDS = sizeof fields / sizeof fields[0] };

static PyGetSetDef face_getset[] = {
    {"id", (getter)get_id, NULL, "Track id, stable while the face is tracked (int).", NULL},
    {"score", (getter)get_score, NULL,
     "Detector score of the detection that started the track (float).", NULL},
    {"box", (getter)get_box, NULL, "Bounding box of the landmarks (omma.Box).", NULL},
    {"keypoints", (getter)get_keypoints, NULL,
     "(6, 2) float32: right eye, left eye, nose tip, mouth centre, right and left ear "
     "tragion, (x, y) frame pixels.",
     NULL},
    {"landmarks", (getter)get_landmarks, NULL,
     "(468, 3) float32 FaceMesh points: x, y frame pixels, z relative depth.", NULL},
    {"presence", (getter)get_presence, NULL, "FaceMesh face presence, 0..1 (float).", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

/* A sequence of its six fields, as the named tuple it replaces:
 * id, score, box, keypoints, landmarks, presence = face. */
static Py_ssize_t face_len(PyObject *self)
{
    (void)self;
    return N_FIELDS;
}

static PyObject *face_item(PyObject *self, Py_ssize_t i)
{
    if (i < 0 || i >= N_FIELDS) {
        PyErr_SetString(PyExc_IndexError, "omma.Face index out of range (6 fields)");
        return NULL;
    }
    return fields[i](self, NULL);
}

static PySequenceMethods face_seq = {.sq_length = face_len, .sq_item = face_item};

static PyObject *face_repr(face_obj *self)
{
    const omma_face *f = self->f;
    char buf[200];
    /* PyUnicode_FromFormat has no %f. */
    snprintf(buf, sizeof buf,
             "omma.Face(id=%d, score=%.3f, box=(%.1f, %.1f, %.1f, %.1f), presence=%.3f, "
             "landmarks=(%d, 3))",
             f->id, f->score, f->box.xmin, f->box.ymin, f->box.xmax, f->box.ymax, f->presence,
             OMMA_FACE_LANDMARKS);
    return PyUnicode_FromString(buf);
}

/* Pickling (multiprocessing, copies): the C face's bytes. */
static PyObject *face_from_bytes(PyObject *mod, PyObject *arg)
{
    (void)mod;
    char *data;
    Py_ssize_t size;
    if (PyBytes_AsStringAndSize(arg, &data, &size) < 0)
        return NULL;
    if (size != (Py_ssize_t)sizeof(omma_face))
        return pyomma_raise_msg(OMMA_ERR_INVALID_ARG,
                                "omma.Face: %zd bytes, not a face of this build (%zu)", size,
                                sizeof(omma_face));
    return pyomma_face_new((const omma_face *)data);
}

static PyObject *from_bytes_fn;

static PyObject *face_reduce(face_obj *self, PyObject *unused)
{
    (void)unused;
    return Py_BuildValue("O(y#)", from_bytes_fn, (const char *)self->f,
                         (Py_ssize_t)sizeof(omma_face));
}

static PyMethodDef face_methods[] = {{"__reduce__", (PyCFunction)face_reduce, METH_NOARGS, NULL},
                                     {NULL, NULL, 0, NULL}};

static PyMethodDef from_bytes_def = {"_face_from_bytes", face_from_bytes, METH_O,
                                     "An omma.Face from a pickled face's bytes."};

static PyTypeObject face_type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "omma.Face",
    .tp_basicsize = sizeof(face_obj),
    .tp_dealloc = (destructor)face_dealloc,
    .tp_repr = (reprfunc)face_repr,
    .tp_as_sequence = &face_seq,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "One tracked face in one frame: id, score, box (omma.Box), keypoints (6, 2) and\n"
              "landmarks (468, 3) float32 NumPy arrays in frame pixels, presence.\n\n"
              "Read lazily from its call's results: each field is made when read (the\n"
              "arrays are views of the results, which live while a face or array of them\n"
              "does). Also a sequence of those six fields, in that order\n"
              "(id, score, box, keypoints, landmarks, presence = face). Made by omma only.",
    .tp_methods = face_methods,
    .tp_getset = face_getset,
};

int pyomma_add_faces(PyObject *m)
{
    if (PyType_Ready(&results_type) < 0 || PyType_Ready(&face_type) < 0)
        return -1;
    PyObject *name = PyModule_GetNameObject(m);
    if (!name)
        return -1;
    from_bytes_fn = PyCFunction_NewEx(&from_bytes_def, NULL, name);
    Py_DECREF(name);
    if (!from_bytes_fn || PyModule_AddObjectRef(m, "_face_from_bytes", from_bytes_fn) < 0)
        return -1;
    pyomma_face_type = &face_type;
    return PyModule_AddObjectRef(m, "Face", (PyObject *)&face_type);
}
