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

/* DLPack's ABI (dlpack.h, v0.8; stable): what a consumer reads and a
 * producer fills. */
typedef struct {
    int32_t device_type;
    int32_t device_id;
} dl_device;
typedef struct {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} dl_dtype;
typedef struct {
    void *data;
    dl_device device;
    int32_t ndim;
    dl_dtype dtype;
    int64_t *shape;
    int64_t *strides;
    uint64_t byte_offset;
} dl_tensor;
typedef struct dl_managed_tensor {
    dl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct dl_managed_tensor *self);
} dl_managed_tensor;
enum { DL_CPU = 1, DL_CUDA = 2, DL_CUDA_HOST = 3, DL_CUDA_MANAGED = 13, DL_UINT = 1 };

/* omma.Error and one subclass per omma_status (index = status). */
extern PyObject *pyomma_error_types[OMMA_STATUS_COUNT];

/* Raises the exception of st with omma_last_error()'s message (or the
 * status' name when there is none). Returns NULL. */
PyObject *pyomma_raise(omma_status st);

/* Raises the exception of st with a formatted message. Returns NULL. */
PyObject *pyomma_raise_msg(omma_status st, const char *fmt, ...);

/* omma.Face (faces.c), omma.Box, omma.FaceBatch, omma.StreamResult (struct
 * sequences). */
extern PyTypeObject *pyomma_face_type;
extern PyTypeObject *pyomma_box_type;
extern PyTypeObject *pyomma_batch_type;
extern PyTypeObject *pyomma_result_type;

/* A results block: n (>= 1) C faces, uninitialised, in one Python object
 * (faces.c). The pipeline writes a call's faces into one; omma.Face objects
 * and their arrays view it and keep it alive. NULL with an exception. */
PyObject *pyomma_results_new(Py_ssize_t n);
omma_face *pyomma_results_faces(PyObject *results);
Py_ssize_t pyomma_results_size(PyObject *results);

/* An omma.Face viewing face i of a results block (read lazily). */
PyObject *pyomma_face_view(PyObject *results, Py_ssize_t i);

/* An omma.Face of a copy of *f; a list of n Faces of copies of faces[0..n)
 * (one block). NULL with an exception on failure. */
PyObject *pyomma_face_new(const omma_face *f);
PyObject *pyomma_faces_list(const omma_face *faces, int n);

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

/* What the frames of one call share while they are converted (frames.c):
 * zero it before the first frame. */
typedef struct pyomma_convert_ctx {
    int ordered; /* bit k: producers of kind k (PyTorch, CuPy) have ordered
                  * their current stream before the legacy stream */
    /* PyTorch's current stream of each device met (read once per call) */
    int n_torch;
    int torch_device[4];
    uintptr_t torch_stream[4];
} pyomma_convert_ctx;

/* Fills *frame from a Python frame object (an array, a tuple of planes,
 * an object with __cuda_array_interface__ or __dlpack__). format: NULL or
 * "rgb", "bgr", "rgba", "bgra", "nv12", "i420". index names the frame in
 * messages. On failure raises and releases what it took. */
int pyomma_frame_convert(PyObject *obj, const char *format, int index, pyomma_convert_ctx *ctx,
                         omma_frame *frame, pyomma_frame_hold *hold);

/* One array as read (any kind: NumPy, a buffer, a PyTorch tensor, DLPack,
 * the CUDA array interface): uint8, 2 to 4 dimensions, byte strides (all
 * filled, none negative). 4 dimensions: a stacked batch (N, H, W, C). */
typedef struct pyomma_array {
    uintptr_t ptr;
    int ndim;
    Py_ssize_t shape[4], strides[4];
    int device; /* 0 host, 1 device */
} pyomma_array;

/* Reads obj (an array, not a tuple of planes) into *a; hold keeps what it
 * points to alive (its device ordinal and producer streams with it) until
 * released. One attribute walk whatever the array's size: a stacked batch
 * of N frames is read once. On failure raises and releases what it took. */
int pyomma_array_read(PyObject *obj, pyomma_convert_ctx *ctx, pyomma_frame_hold *hold,
                      pyomma_array *a);

/* Fills *frame from an array read by pyomma_array_read: the array itself
 * (i < 0; 2 or 3 dimensions) or frame i of a stacked batch (a view at the
 * batch stride). format as pyomma_frame_convert's (rgb, bgr, rgba, bgra);
 * index names the frame in messages. Takes nothing; raises on failure. */
int pyomma_frame_from_array(const pyomma_array *a, Py_ssize_t i, const char *format, int index,
                            omma_frame *frame);
void pyomma_frame_release(pyomma_frame_hold *hold);

/* Synchronizes the CUDA streams the holds name, each once, in dev's
 * context (the driver loaded with dlopen). Call without the GIL. On
 * failure returns the status and writes the message to msg. */
omma_status pyomma_sync_streams(omma_device *dev, const pyomma_frame_hold *holds, int n, char *msg,
                                size_t msg_size);

/* Synchronizes n CUDA streams (CUstream handles) in dev's context. Call
 * without the GIL; on failure msg says why. */
omma_status pyomma_sync_stream_list(omma_device *dev, const uintptr_t *streams, int n, char *msg,
                                    size_t msg_size);

/* Checks that the device frames among frames[0..n) are on dev's GPU: by
 * the DLPack device when the hold has it, else by the driver (once per
 * allocation within the call). Call without the GIL; msg says why not. */
omma_status pyomma_check_device_frames(omma_device *dev, const omma_frame *frames,
                                       const pyomma_frame_hold *holds, int n, char *msg,
                                       size_t msg_size);

/* An int from a Python int; raises (TypeError, or InvalidArgumentError
 * naming what when out of range) and returns -1. */
int pyomma_as_int(PyObject *obj, const char *what, int *out);

int pyomma_add_faces(PyObject *m);
int pyomma_add_pipeline(PyObject *m);
int pyomma_add_stream(PyObject *m);
int pyomma_add_bus(PyObject *m);

/* Parses "rgb".."i420" (case-insensitive); -1 when unknown. */
int pyomma_parse_format(const char *s);

#endif
