/* omma's CPython extension (omma._omma): what its files share.
 *
 * The extension is a thin layer over the public C API (include/omma/) plus
 * the runtime (src/runtime/runtime.h, linked from libomma.a) for
 * omma.stream. Every call that runs models, waits for the GPU or joins
 * threads releases the GIL. */
#ifndef OMMA_PYOMMA_H
#define OMMA_PYOMMA_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "omma/omma.h"

/* omma.Error and one subclass per omma_status (index = status). */
extern PyObject *pyomma_error_types[OMMA_STATUS_COUNT];

/* Raises the exception of st with omma_last_error()'s message (or the
 * status' name when there is none). Returns NULL. */
PyObject *pyomma_raise(omma_status st);

/* Raises the exception of st with a formatted message. Returns NULL. */
PyObject *pyomma_raise_msg(omma_status st, const char *fmt, ...);

/* omma.Face, omma.Box, omma.FaceBatch, omma.StreamResult (struct sequences). */
extern PyTypeObject *pyomma_face_type;
extern PyTypeObject *pyomma_box_type;
extern PyTypeObject *pyomma_batch_type;
extern PyTypeObject *pyomma_result_type;

/* A Python omma.Face from a C face; NULL with an exception on failure. */
PyObject *pyomma_face_new(const omma_face *f);

/* The frame types (frames.c). A frame_hold keeps what a converted frame
 * points to alive (buffer views, DLPack tensors) until released. */
typedef struct pyomma_frame_hold {
    Py_buffer views[3];
    int n_views;
    PyObject *objects[3]; /* references kept (CUDA array interface owners) */
    int n_objects;
    PyObject *capsules[3]; /* DLPack capsules taken ("used_dltensor") */
    int n_capsules;
    /* CUDA streams to synchronize before reading (producers' streams);
     * 0 = none. */
    uintptr_t streams[3];
    int n_streams;
    int device_ordinal; /* device memory: the ordinal the planes are on, else -1 */
} pyomma_frame_hold;

/* Fills *frame from a Python frame object (an array, a tuple of planes,
 * an object with __cuda_array_interface__ or __dlpack__). format: NULL or
 * "rgb", "bgr", "rgba", "bgra", "nv12", "i420". index names the frame in
 * messages. On failure raises and releases what it took. */
int pyomma_frame_convert(PyObject *obj, const char *format, int index, omma_frame *frame,
                         pyomma_frame_hold *hold);
void pyomma_frame_release(pyomma_frame_hold *hold);

/* Synchronizes the CUDA streams the holds name, in dev's context (the
 * driver loaded with dlopen). Call without the GIL. On failure returns
 * the status with omma's last error set... by the caller: *msg gets a
 * static description. */
omma_status pyomma_sync_streams(omma_device *dev, pyomma_frame_hold *holds, int n, char *msg,
                                size_t msg_size);

/* Whether ptr is device memory of GPU ordinal (through the driver). */
omma_status pyomma_check_device_pointer(omma_device *dev, uintptr_t ptr, char *msg,
                                        size_t msg_size);

/* An int from a Python int; raises (TypeError, or InvalidArgumentError
 * naming what when out of range) and returns -1. */
int pyomma_as_int(PyObject *obj, const char *what, int *out);

int pyomma_add_pipeline(PyObject *m);
int pyomma_add_stream(PyObject *m);

/* Parses "rgb".."i420" (case-insensitive); -1 when unknown. */
int pyomma_parse_format(const char *s);

#endif
