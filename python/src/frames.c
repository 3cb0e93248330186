/* Python frames to omma_frame: NumPy arrays (read directly) and other
 * buffers (host), tuples of planes (NV12, I420), objects with __dlpack__ or
 * __cuda_array_interface__ (device memory read in place once the
 * producer's stream has reached it; DLPack tensors on the CPU are host
 * frames).
 *
 * PyTorch's tensors (torch.Tensor exactly) are read through the tensor's
 * own getters (torch_api: pointer, shape, strides, dtype, device), neither
 * exported by DLPack nor by the array interface (both run Python code and
 * allocate: microseconds a tensor). Their producer is PyTorch's current
 * stream on the tensor's device, read once per device and call and
 * synchronized: what torch's own __dlpack__ orders before the consumer's
 * stream.
 *
 * Streams: a DLPack producer is asked for the legacy default stream
 * (stream=1): it makes that stream wait for its own work, and the legacy
 * stream is synchronized before the pipeline reads the frame. An array
 * interface's stream (version 3) is synchronized itself. The host waits
 * (without the GIL); the C API takes no stream to chain on.
 *
 * A stacked batch (one array (N, H, W, C): pyomma_array_read, then
 * pyomma_frame_from_array for each frame) is read once, whatever N: one
 * attribute walk, one producer stream, each frame a view at the batch
 * stride; what holds it is held once for the call.
 *
 * A list of device frames is taken as a batch (pyomma_convert_ctx): the
 * streams of all its frames are synchronized once each, however many frames
 * name them; PyTorch's tensors read by DLPack (subclasses of torch.Tensor)
 * and CuPy's, whose __dlpack__ orders the library's *current* stream (not
 * the tensor's) before the stream asked for, are asked for stream=1 once
 * per library and call, the others for
 * stream=-1 (no ordering: already done); a device pointer without a device
 * ordinal (the array interface) is checked once per allocation (its range
 * from the driver) and call. Kept across calls: only which Python types
 * are PyTorch's and CuPy's tensor types (strong references: they cannot be
 * freed and their address reused) and torch.Tensor's getters; nothing
 * about memory or streams. */
#include "pyomma.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define PY_ARRAY_UNIQUE_SYMBOL pyomma_ARRAY_API
#define NO_IMPORT_ARRAY
#include <numpy/arrayobject.h>

/* CUDA array interface / DLPack stream numbers: 1 is the legacy default
 * stream, 2 the per-thread default stream; the driver takes both as
 * CUstream handles (CU_STREAM_LEGACY, CU_STREAM_PER_THREAD). */
#define STREAM_LEGACY ((uintptr_t)1)

typedef struct plane {
    uintptr_t ptr;
    Py_ssize_t h, w, c, pitch;
    int device; /* 0 host, 1 device */
} plane;

int pyomma_parse_format(const char *s)
{
    static const char *names[] = {"rgb", "bgr", "rgba", "bgra", "nv12", "i420"};
    for (int i = 0; i < OMMA_PIXEL_FORMAT_COUNT; i++)
        if (strcasecmp(s, names[i]) == 0)
            return i;
    return -1;
}

static int invalid(int index, const char *fmt, const char *detail)
{
    char msg[600];
    snprintf(msg, sizeof msg, fmt, detail);
    pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "frame %d: %s", index, msg);
    return -1;
}

#define NDIM_MESSAGE "a frame has 2 or 3 dimensions (H, W[, C]), a stacked batch 4 (N, H, W, C)"

/* Fills a's shape and strides (C-contiguous ones when the producer gives
 * none) after the checks every array passes: 2 to 4 dimensions, no
 * negative stride. */
static int array_set(int index, int ndim, const Py_ssize_t *shape, const Py_ssize_t *strides,
                     pyomma_array *a)
{
    if (ndim < 2 || ndim > 4)
        return invalid(index, "%s", NDIM_MESSAGE);
    a->ndim = ndim;
    Py_ssize_t step = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        if (strides && strides[i] < 0)
            return invalid(index, "%s", "negative strides (a flipped view): copy it first");
        a->shape[i] = shape[i];
        a->strides[i] = strides ? strides[i] : step;
        if (shape[i] > 0 && __builtin_mul_overflow(step, shape[i], &step))
            step = PY_SSIZE_T_MAX; /* the sizes are refused later */
    }
    return 0;
}

/* The layout checks every plane passes: uint8 rows of w pixels of c
 * contiguous channels, rows pitch bytes apart. */
static int check_layout(int index, Py_ssize_t ndim, const Py_ssize_t *shape,
                        const Py_ssize_t *strides, plane *p)
{
    if (ndim != 2 && ndim != 3)
        return invalid(index, "%s", "a plane must have 2 or 3 dimensions (H, W[, C])");
    p->h = shape[0];
    p->w = shape[1];
    p->c = ndim == 3 ? shape[2] : 1;
    if (p->h < 1 || p->w < 1 || p->c < 1 || p->h > INT_MAX || p->w > INT_MAX / 4)
        return invalid(index, "%s", "empty or oversized plane");
    Py_ssize_t sr = strides ? strides[0] : p->w * p->c;
    Py_ssize_t sp = strides ? strides[1] : p->c;
    Py_ssize_t sc = strides && ndim == 3 ? strides[2] : 1;
    if (p->h == 1)
        sr = p->w * p->c;
    if (p->w == 1)
        sp = p->c;
    if (p->c == 1)
        sc = 1;
    if (sc != 1 || sp != p->c || sr < p->w * p->c || sr > INT_MAX)
        return invalid(index, "%s",
                       "pixels must be contiguous within a row (channel stride 1, pixel "
                       "stride = channels, row stride >= row bytes; numpy.ascontiguousarray "
                       "makes such a copy)");
    p->pitch = sr;
    return 0;
}

static int array_from_buffer(PyObject *obj, int index, pyomma_frame_hold *hold, pyomma_array *a)
{
    Py_buffer *v = &hold->views[hold->n_views];
    if (PyObject_GetBuffer(obj, v, PyBUF_STRIDES | PyBUF_FORMAT) < 0)
        return -1;
    hold->n_views++;
    if (v->itemsize != 1 || (v->format && strcmp(v->format, "B") != 0))
        return invalid(index, "pixels must be uint8 (got format '%s')",
                       v->format ? v->format : "?");
    if (array_set(index, v->ndim, v->shape, v->strides, a) < 0)
        return -1;
    a->ptr = (uintptr_t)v->buf;
    a->device = 0;
    return 0;
}

/* A NumPy array, read through its fields (no buffer export: the array
 * itself is held). */
static int array_from_numpy(PyObject *obj, int index, pyomma_frame_hold *hold, pyomma_array *out)
{
    PyArrayObject *a = (PyArrayObject *)obj;
    if (PyArray_TYPE(a) != NPY_UBYTE) {
        char dt[32];
        snprintf(dt, sizeof dt, "%c%d", PyArray_DESCR(a)->kind, (int)PyArray_ITEMSIZE(a));
        return invalid(index, "pixels must be uint8 (got dtype '%s')", dt);
    }
    int nd = PyArray_NDIM(a);
    if (nd < 2 || nd > 4)
        return invalid(index, "%s", NDIM_MESSAGE);
    Py_ssize_t dims[4], st[4];
    for (int i = 0; i < nd; i++) {
        dims[i] = (Py_ssize_t)PyArray_DIMS(a)[i];
        st[i] = (Py_ssize_t)PyArray_STRIDES(a)[i];
    }
    if (array_set(index, nd, dims, st, out) < 0)
        return -1;
    out->ptr = (uintptr_t)PyArray_DATA(a);
    out->device = 0;
    Py_INCREF(obj);
    hold->objects[hold->n_objects++] = obj;
    return 0;
}

static int tuple_of_ssize(PyObject *t, Py_ssize_t *out, Py_ssize_t max, Py_ssize_t *n)
{
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) > max)
        return -1;
    *n = PyTuple_GET_SIZE(t);
    for (Py_ssize_t i = 0; i < *n; i++) {
        out[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(t, i));
        if (out[i] == -1 && PyErr_Occurred())
            return -1;
    }
    return 0;
}

static int array_from_cai(PyObject *obj, PyObject *cai, int index, pyomma_frame_hold *hold,
                          pyomma_array *a)
{
    if (!PyDict_Check(cai))
        return invalid(index, "%s", "__cuda_array_interface__ is not a dict");
    PyObject *shape = PyDict_GetItemString(cai, "shape");
    PyObject *typestr = PyDict_GetItemString(cai, "typestr");
    PyObject *data = PyDict_GetItemString(cai, "data");
    PyObject *strides = PyDict_GetItemString(cai, "strides");
    PyObject *mask = PyDict_GetItemString(cai, "mask");
    PyObject *stream = PyDict_GetItemString(cai, "stream");
    if (!shape || !typestr || !data)
        return invalid(index, "%s", "__cuda_array_interface__ lacks shape, typestr or data");
    const char *ts = PyUnicode_Check(typestr) ? PyUnicode_AsUTF8(typestr) : NULL;
    if (!ts || (strcmp(ts, "|u1") != 0 && strcmp(ts, "<u1") != 0 && strcmp(ts, ">u1") != 0))
        return invalid(index, "pixels must be uint8 (typestr '%s')", ts ? ts : "?");
    if (mask && mask != Py_None)
        return invalid(index, "%s", "masked arrays are not frames");
    Py_ssize_t dims[4], st[4], nd = 0, ns = 0;
    if (PyTuple_Check(shape) && (PyTuple_GET_SIZE(shape) < 2 || PyTuple_GET_SIZE(shape) > 4))
        return invalid(index, "%s", NDIM_MESSAGE);
    if (tuple_of_ssize(shape, dims, 4, &nd) < 0 ||
        (strides && strides != Py_None && tuple_of_ssize(strides, st, 4, &ns) < 0) ||
        (ns && ns != nd)) {
        PyErr_Clear();
        return invalid(index, "%s", "__cuda_array_interface__'s shape or strides are bad");
    }
    if (array_set(index, (int)nd, dims, ns ? st : NULL, a) < 0)
        return -1;
    if (!PyTuple_Check(data) || PyTuple_GET_SIZE(data) != 2)
        return invalid(index, "%s", "__cuda_array_interface__'s data is not (pointer, readonly)");
    a->ptr = (uintptr_t)PyLong_AsVoidPtr(PyTuple_GET_ITEM(data, 0));
    if (PyErr_Occurred())
        return -1;
    a->device = 1;
    if (stream && stream != Py_None) {
        uintptr_t s = (uintptr_t)PyLong_AsVoidPtr(stream);
        if (PyErr_Occurred())
            return -1;
        if (s == 0)
            return invalid(index, "%s", "stream 0 is not allowed by the CUDA array interface");
        if (hold->n_streams < 3)
            hold->streams[hold->n_streams++] = s;
    }
    Py_INCREF(obj);
    hold->objects[hold->n_objects++] = obj;
    return 0;
}

/* PyTorch's and CuPy's tensor types, recognised once (strong references:
 * a type kept alive cannot be freed and another take its address). */
enum { KIND_OTHER, KIND_TORCH, KIND_CUPY };
static struct {
    PyTypeObject *type;
    int kind;
} known_types[8];
static int n_known_types;
/* torch.utils.dlpack.to_dlpack (PyTorch's C exporter, no stream ordering). */
static PyObject *torch_to_dlpack;

/* PyTorch's tensors read through their own getters, looked up once on
 * torch.Tensor (descriptors called directly: no attribute lookup, no bound
 * method, no DLPack export, no Python code): dtype, layout, is_cuda,
 * is_cpu, shape, stride(), get_device(), data_ptr(). A PyTorch whose
 * Tensor lacks one of them (or overrides it in Python) goes by DLPack. */
static struct {
    PyTypeObject *type; /* torch.Tensor (exactly; subclasses go by DLPack) */
    PyObject *dtype, *layout, *is_cuda, *is_cpu, *shape; /* getset descriptors */
    PyObject *stride, *get_device, *data_ptr; /* method descriptors */
    PyObject *uint8, *strided; /* torch.uint8, torch.strided */
    /* The current stream of a device: torch._C._cuda_getCurrentRawStream
     * (an int), else torch.cuda.current_stream (its cuda_stream). */
    PyObject *raw_stream, *current_stream;
} torch_api;

static void torch_api_load(PyTypeObject *t)
{
    static const char *getsets[] = {"dtype", "layout", "is_cuda", "is_cpu", "shape"};
    static const char *methods[] = {"stride", "get_device", "data_ptr"};
    PyObject **gs[] = {&torch_api.dtype, &torch_api.layout, &torch_api.is_cuda, &torch_api.is_cpu,
                       &torch_api.shape};
    PyObject **ms[] = {&torch_api.stride, &torch_api.get_device, &torch_api.data_ptr};
    PyObject *torch = PyImport_ImportModule("torch");
    PyObject *tc = torch ? PyObject_GetAttrString(torch, "_C") : NULL;
    int ok = tc != NULL;
    for (int i = 0; ok && i < 5; i++) {
        *gs[i] = PyObject_GetAttrString((PyObject *)t, getsets[i]);
        ok = *gs[i] && Py_IS_TYPE(*gs[i], &PyGetSetDescr_Type);
    }
    for (int i = 0; ok && i < 3; i++) {
        *ms[i] = PyObject_GetAttrString((PyObject *)t, methods[i]);
        ok = *ms[i] && Py_IS_TYPE(*ms[i], &PyMethodDescr_Type);
    }
    if (ok) {
        torch_api.uint8 = PyObject_GetAttrString(torch, "uint8");
        torch_api.strided = PyObject_GetAttrString(torch, "strided");
        ok = torch_api.uint8 && torch_api.strided;
    }
    if (ok) {
        torch_api.raw_stream = PyObject_GetAttrString(tc, "_cuda_getCurrentRawStream");
        PyErr_Clear(); /* PyTorch without CUDA, or an older one */
    }
    PyErr_Clear();
    Py_XDECREF(tc);
    Py_XDECREF(torch);
    if (!ok) {
        for (int i = 0; i < 5; i++)
            Py_CLEAR(*gs[i]);
        for (int i = 0; i < 3; i++)
            Py_CLEAR(*ms[i]);
        Py_CLEAR(torch_api.uint8);
        Py_CLEAR(torch_api.strided);
        return;
    }
    Py_INCREF(t);
    torch_api.type = t;
}

static int producer_kind(PyTypeObject *t)
{
    for (int i = 0; i < n_known_types; i++)
        if (known_types[i].type == t)
            return known_types[i].kind;
    PyObject *mod = PyObject_GetAttrString((PyObject *)t, "__module__");
    if (!mod) {
        PyErr_Clear();
        return KIND_OTHER;
    }
    const char *m = PyUnicode_Check(mod) ? PyUnicode_AsUTF8(mod) : NULL;
    const char *dot = strrchr(t->tp_name, '.');
    const char *name = dot ? dot + 1 : t->tp_name;
    int kind = KIND_OTHER;
    if (!m)
        PyErr_Clear();
    else if (strcmp(m, "torch") == 0 && strcmp(name, "Tensor") == 0)
        kind = KIND_TORCH;
    else if (strncmp(m, "cupy", 4) == 0 && (m[4] == '\0' || m[4] == '.') &&
             strcmp(name, "ndarray") == 0)
        kind = KIND_CUPY;
    Py_DECREF(mod);
    if (kind == KIND_TORCH && !torch_api.type)
        torch_api_load(t);
    if (kind == KIND_TORCH && !torch_to_dlpack) {
        PyObject *dl = PyImport_ImportModule("torch.utils.dlpack");
        torch_to_dlpack = dl ? PyObject_GetAttrString(dl, "to_dlpack") : NULL;
        Py_XDECREF(dl);
        PyErr_Clear(); /* without it: __dlpack__ for every tensor */
    }
    if (kind != KIND_OTHER && n_known_types < (int)(sizeof known_types / sizeof known_types[0])) {
        Py_INCREF(t);
        known_types[n_known_types].type = t;
        known_types[n_known_types++].kind = kind;
    }
    return kind;
}

/* obj.__dlpack__(stream=stream), or obj.__dlpack__() when stream is 0. */
static PyObject *call_dlpack(PyObject *obj, int stream)
{
    static PyObject *name, *kwnames;
    if (!name) {
        name = PyUnicode_InternFromString("__dlpack__");
        kwnames = name ? Py_BuildValue("(s)", "stream") : NULL;
        if (!kwnames) {
            Py_CLEAR(name);
            return NULL;
        }
    }
    if (!stream) {
        PyObject *args[1] = {obj};
        return PyObject_VectorcallMethod(name, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, NULL);
    }
    PyObject *s = PyLong_FromLong(stream);
    if (!s)
        return NULL;
    PyObject *args[2] = {obj, s};
    PyObject *cap =
        PyObject_VectorcallMethod(name, args, 1 | PY_VECTORCALL_ARGUMENTS_OFFSET, kwnames);
    Py_DECREF(s);
    return cap;
}

static int array_from_dlpack(PyObject *obj, int index, pyomma_frame_hold *hold,
                             pyomma_convert_ctx *ctx, int kind, pyomma_array *a)
{
    int device = -1; /* not known yet: the tensor says */
    PyObject *cap;
    if (kind == KIND_TORCH && (ctx->ordered & (1 << KIND_TORCH)) && torch_to_dlpack) {
        /* PyTorch's stream ordered already in this call: its C exporter,
         * without __dlpack__'s Python code (microseconds a tensor). */
        cap = PyObject_CallOneArg(torch_to_dlpack, obj);
    } else {
        if (kind == KIND_CUPY) {
            device = 1;
        } else if (kind == KIND_TORCH) {
            PyObject *is_cuda = PyObject_GetAttrString(obj, "is_cuda");
            if (!is_cuda)
                return -1;
            device = PyObject_IsTrue(is_cuda);
            Py_DECREF(is_cuda);
            if (device < 0)
                return -1;
        } else {
            PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
            if (!dev)
                return -1;
            int dtype = 0, did = 0;
            int ok = PyArg_ParseTuple(dev, "ii", &dtype, &did);
            Py_DECREF(dev);
            if (!ok)
                return -1;
            device = dtype == DL_CUDA || dtype == DL_CUDA_MANAGED;
            if (!device && dtype != DL_CPU && dtype != DL_CUDA_HOST)
                return invalid(index, "%s",
                               "a DLPack tensor on a device other than the CPU or CUDA");
        }
        /* On the device, the producer orders its work before the legacy
         * default stream (stream=1), which is synchronized before the frame
         * is read; PyTorch and CuPy order their current stream, the same for
         * all their tensors: once per call is enough (stream=-1: no
         * ordering). */
        int stream = 0;
        if (device)
            stream = kind != KIND_OTHER && (ctx->ordered & (1 << kind)) ? -1 : 1;
        cap = call_dlpack(obj, stream);
    }
    if (!cap)
        return -1;
    dl_managed_tensor *mt = PyCapsule_GetPointer(cap, "dltensor");
    if (!mt || PyCapsule_SetName(cap, "used_dltensor") < 0) {
        Py_DECREF(cap);
        return -1;
    }
    hold->capsules[hold->n_capsules++] = cap;
    const dl_tensor *t = &mt->dl_tensor;
    int on_device = t->device.device_type == DL_CUDA || t->device.device_type == DL_CUDA_MANAGED;
    if (device >= 0 && on_device != device)
        return invalid(index, "%s", "__dlpack__ gave a tensor on another device than it said");
    if (!on_device && t->device.device_type != DL_CPU && t->device.device_type != DL_CUDA_HOST)
        return invalid(index, "%s", "a DLPack tensor on a device other than the CPU or CUDA");
    device = on_device;
    if (device && kind != KIND_OTHER)
        ctx->ordered |= 1 << kind;
    if (t->dtype.code != DL_UINT || t->dtype.bits != 8 || t->dtype.lanes != 1)
        return invalid(index, "%s", "pixels must be uint8");
    if (t->ndim < 2 || t->ndim > 4)
        return invalid(index, "%s", NDIM_MESSAGE);
    Py_ssize_t dims[4], st[4];
    for (int i = 0; i < t->ndim; i++) {
        dims[i] = (Py_ssize_t)t->shape[i];
        if (t->strides)
            st[i] = (Py_ssize_t)t->strides[i];
    }
    if (array_set(index, t->ndim, dims, t->strides ? st : NULL, a) < 0)
        return -1;
    a->ptr = (uintptr_t)t->data + (uintptr_t)t->byte_offset;
    a->device = device;
    if (device) {
        hold->device_ordinal = t->device.device_id;
        if (hold->n_streams < 3)
            hold->streams[hold->n_streams++] = STREAM_LEGACY;
    }
    return 0;
}

static PyObject *torch_get(PyObject *descr, PyObject *obj)
{
    return Py_TYPE(descr)->tp_descr_get(descr, obj, (PyObject *)Py_TYPE(obj));
}

static PyObject *torch_call(PyObject *descr, PyObject *obj)
{
    PyObject *args[1] = {obj};
    return PyObject_Vectorcall(descr, args, 1, NULL);
}

/* 1 when torch_get(descr, obj) is true, 0 when false, -1 on error. */
static int torch_flag(PyObject *descr, PyObject *obj)
{
    PyObject *v = torch_get(descr, obj);
    if (!v)
        return -1;
    int r = PyObject_IsTrue(v);
    Py_DECREF(v);
    return r;
}

/* PyTorch's current stream on a device, the stream its kernels writing the
 * frame were queued on (PyTorch's rule: a consumer orders itself after the
 * current stream); once per device and call. The legacy default stream is
 * 0 in PyTorch, CU_STREAM_LEGACY to the driver. */
static int torch_stream(pyomma_convert_ctx *ctx, int device, uintptr_t *out)
{
    for (int i = 0; i < ctx->n_torch; i++)
        if (ctx->torch_device[i] == device) {
            *out = ctx->torch_stream[i];
            return 0;
        }
    PyObject *dev = PyLong_FromLong(device);
    if (!dev)
        return -1;
    PyObject *s = NULL;
    if (torch_api.raw_stream) {
        s = PyObject_CallOneArg(torch_api.raw_stream, dev);
    } else {
        if (!torch_api.current_stream) {
            PyObject *cuda = PyImport_ImportModule("torch.cuda");
            torch_api.current_stream = cuda ? PyObject_GetAttrString(cuda, "current_stream") : NULL;
            Py_XDECREF(cuda);
        }
        PyObject *cs =
            torch_api.current_stream ? PyObject_CallOneArg(torch_api.current_stream, dev) : NULL;
        s = cs ? PyObject_GetAttrString(cs, "cuda_stream") : NULL;
        Py_XDECREF(cs);
    }
    Py_DECREF(dev);
    if (!s)
        return -1;
    uintptr_t v = (uintptr_t)PyLong_AsVoidPtr(s);
    Py_DECREF(s);
    if (PyErr_Occurred())
        return -1;
    if (v == 0)
        v = STREAM_LEGACY;
    if (ctx->n_torch < (int)(sizeof ctx->torch_device / sizeof ctx->torch_device[0])) {
        ctx->torch_device[ctx->n_torch] = device;
        ctx->torch_stream[ctx->n_torch++] = v;
    }
    *out = v;
    return 0;
}

/* A torch.Tensor through its getters (torch_api). The tensor is held for
 * the call (its memory with it); a CUDA tensor's device is known (no
 * driver query) and its device's current stream is synchronized before
 * the pipeline reads it. */
static int array_from_torch(PyObject *obj, int index, pyomma_frame_hold *hold,
                            pyomma_convert_ctx *ctx, pyomma_array *a)
{
    PyObject *dtype = torch_get(torch_api.dtype, obj);
    if (!dtype)
        return -1;
    Py_DECREF(dtype); /* compared by identity: torch.uint8 is kept by torch_api */
    if (dtype != torch_api.uint8) {
        PyObject *r = PyObject_Str(dtype);
        const char *name = r ? PyUnicode_AsUTF8(r) : NULL;
        PyErr_Clear();
        invalid(index, "pixels must be uint8 (got %s)", name ? name : "another dtype");
        Py_XDECREF(r);
        return -1;
    }
    PyObject *layout = torch_get(torch_api.layout, obj);
    if (!layout)
        return -1;
    Py_DECREF(layout);
    if (layout != torch_api.strided)
        return invalid(index, "%s",
                       "a sparse tensor: frames are dense (strided) tensors (to_dense())");
    int cuda = torch_flag(torch_api.is_cuda, obj);
    if (cuda < 0)
        return -1;
    int ordinal = -1;
    if (cuda) {
        PyObject *d = torch_call(torch_api.get_device, obj);
        if (!d)
            return -1;
        ordinal = (int)PyLong_AsLong(d);
        Py_DECREF(d);
        if (ordinal == -1 && PyErr_Occurred())
            return -1;
    } else {
        int cpu = torch_flag(torch_api.is_cpu, obj);
        if (cpu < 0)
            return -1;
        if (!cpu) {
            PyObject *dev = PyObject_GetAttrString(obj, "device");
            PyObject *r = dev ? PyObject_Str(dev) : NULL;
            const char *name = r ? PyUnicode_AsUTF8(r) : NULL;
            PyErr_Clear();
            invalid(index, "a tensor on device '%s': frames are on the CPU or a CUDA GPU",
                    name ? name : "?");
            Py_XDECREF(r);
            Py_XDECREF(dev);
            return -1;
        }
    }
    Py_ssize_t dims[4], st[4], nd = 0, ns = 0;
    PyObject *shape = torch_get(torch_api.shape, obj);
    if (!shape)
        return -1;
    if (!PyTuple_Check(shape) || PyTuple_GET_SIZE(shape) < 2 || PyTuple_GET_SIZE(shape) > 4) {
        Py_DECREF(shape);
        return invalid(index, "%s", NDIM_MESSAGE);
    }
    int bad = tuple_of_ssize(shape, dims, 4, &nd);
    Py_DECREF(shape);
    if (bad < 0)
        return -1;
    PyObject *strides = torch_call(torch_api.stride, obj);
    if (!strides)
        return -1;
    bad = tuple_of_ssize(strides, st, 4, &ns) < 0 || ns != nd;
    Py_DECREF(strides);
    if (bad) {
        if (!PyErr_Occurred())
            invalid(index, "%s", "the tensor's stride() does not match its shape");
        return -1;
    }
    if (array_set(index, (int)nd, dims, st, a) < 0)
        return -1;
    PyObject *ptr = torch_call(torch_api.data_ptr, obj);
    if (!ptr)
        return -1;
    a->ptr = (uintptr_t)PyLong_AsVoidPtr(ptr);
    Py_DECREF(ptr);
    if (PyErr_Occurred())
        return -1;
    a->device = cuda;
    if (cuda) {
        uintptr_t stream;
        if (torch_stream(ctx, ordinal, &stream) < 0)
            return -1;
        hold->device_ordinal = ordinal;
        if (hold->n_streams < 3)
            hold->streams[hold->n_streams++] = stream;
    }
    Py_INCREF(obj);
    hold->objects[hold->n_objects++] = obj;
    return 0;
}

static int array_from(PyObject *obj, int index, pyomma_frame_hold *hold, pyomma_convert_ctx *ctx,
                      pyomma_array *a)
{
    /* NumPy first, then PyTorch's and CuPy's tensors (DLPack), without
     * attribute lookups; then any buffer (CUDA tensors export none). */
    if (PyArray_Check(obj))
        return array_from_numpy(obj, index, hold, a);
    int kind = producer_kind(Py_TYPE(obj));
    if (kind == KIND_TORCH && Py_TYPE(obj) == torch_api.type)
        return array_from_torch(obj, index, hold, ctx, a);
    if (kind != KIND_OTHER)
        return array_from_dlpack(obj, index, hold, ctx, kind, a);
    if (PyObject_CheckBuffer(obj)) {
        int views = hold->n_views;
        int rc = array_from_buffer(obj, index, hold, a);
        /* Some device arrays have the buffer protocol but refuse it for
         * device memory: they go by DLPack or the CUDA array interface. */
        if (rc == 0 || hold->n_views != views ||
            !(PyObject_HasAttrString(obj, "__dlpack__") ||
              PyObject_HasAttrString(obj, "__cuda_array_interface__")))
            return rc;
        PyErr_Clear();
    }
    /* DLPack before the CUDA array interface: its producer orders its own
     * stream before ours (PyTorch's interface names no stream). */
    if (PyObject_HasAttrString(obj, "__dlpack__") &&
        PyObject_HasAttrString(obj, "__dlpack_device__"))
        return array_from_dlpack(obj, index, hold, ctx, KIND_OTHER, a);
    PyObject *cai = PyObject_GetAttrString(obj, "__cuda_array_interface__");
    if (cai) {
        int rc = array_from_cai(obj, cai, index, hold, a);
        Py_DECREF(cai);
        return rc;
    }
    if (!PyErr_ExceptionMatches(PyExc_AttributeError))
        return -1;
    PyErr_Clear();
    PyErr_Format(PyExc_TypeError,
                 "frame %d: expected a uint8 array (NumPy or any buffer, or a device array "
                 "with __cuda_array_interface__ or __dlpack__) or a tuple of planes, got %.100s",
                 index, Py_TYPE(obj)->tp_name);
    return -1;
}

/* Plane p of an array: the array itself (i < 0), or frame i of a stacked
 * batch (N, H, W, C), a view at the batch stride. */
static int plane_from_array(int index, const pyomma_array *a, Py_ssize_t i, plane *p)
{
    if (a->ndim == 4 && i < 0)
        return invalid(index, "%s",
                       "a plane must have 2 or 3 dimensions (H, W[, C]); a stacked batch (N, H, "
                       "W, C) is passed alone, not in a list or a tuple");
    const Py_ssize_t *shape = a->shape, *strides = a->strides;
    int nd = a->ndim;
    uintptr_t ptr = a->ptr;
    if (i >= 0) {
        if (a->ndim != 4 || i >= a->shape[0])
            return invalid(index, "%s", "not a frame of the stacked batch");
        if (a->strides[0] > 0 && i > PY_SSIZE_T_MAX / a->strides[0])
            return invalid(index, "%s", "the batch stride overflows");
        ptr += (uintptr_t)(i * a->strides[0]);
        shape++;
        strides++;
        nd--;
    }
    if (check_layout(index, nd, shape, strides, p) < 0)
        return -1;
    if (!a->ptr)
        return invalid(index, "%s", "an array without memory (a null data pointer)");
    p->ptr = ptr;
    p->device = a->device;
    return 0;
}

static int plane_from(PyObject *obj, int index, pyomma_frame_hold *hold, pyomma_convert_ctx *ctx,
                      plane *p)
{
    pyomma_array a;
    if (array_from(obj, index, hold, ctx, &a) < 0)
        return -1;
    return plane_from_array(index, &a, -1, p);
}

void pyomma_frame_release(pyomma_frame_hold *hold)
{
    for (int i = 0; i < hold->n_views; i++)
        PyBuffer_Release(&hold->views[i]);
    for (int i = 0; i < hold->n_objects; i++)
        Py_DECREF(hold->objects[i]);
    for (int i = 0; i < hold->n_capsules; i++) {
        dl_managed_tensor *mt = PyCapsule_GetPointer(hold->capsules[i], "used_dltensor");
        if (mt && mt->deleter)
            mt->deleter(mt);
        PyErr_Clear();
        Py_DECREF(hold->capsules[i]);
    }
    hold->n_views = hold->n_objects = hold->n_capsules = hold->n_streams = 0;
}

static int parse_format(const char *format, int index)
{
    int fmt = -1;
    if (format && (fmt = pyomma_parse_format(format)) < 0)
        pyomma_raise_msg(OMMA_ERR_INVALID_ARG,
                         "frame %d: unknown format '%s' (rgb, bgr, rgba, bgra, nv12, i420)", index,
                         format);
    return fmt;
}

/* Fills *frame from its n planes read (n = 1: one array) after the checks
 * of the format fmt (-1: the default) against them. */
static int frame_fill(const plane *pl, int n, int fmt, const char *format, int index,
                      omma_frame *frame)
{
    if (n == 1) {
        if (fmt < 0)
            fmt = pl[0].c == 3 ? OMMA_PIXEL_RGB : OMMA_PIXEL_RGBA;
        if (fmt >= OMMA_PIXEL_NV12) {
            pyomma_raise_msg(OMMA_ERR_INVALID_ARG,
                             "frame %d: %s frames are a tuple of planes (Y, UV) or (Y, U, V)",
                             index, format);
            return -1;
        }
        int want = fmt == OMMA_PIXEL_RGB || fmt == OMMA_PIXEL_BGR ? 3 : 4;
        if (pl[0].c != want) {
            pyomma_raise_msg(OMMA_ERR_INVALID_ARG,
                             "frame %d: an %s frame is (H, W, %d) uint8, got %zd channel(s)", index,
                             format ? format : (want == 3 ? "RGB" : "RGBA"), want, pl[0].c);
            return -1;
        }
    }
    Py_ssize_t ch = (pl[0].h + 1) / 2, cw = (pl[0].w + 1) / 2;
    if (fmt == OMMA_PIXEL_NV12 || fmt == OMMA_PIXEL_I420) {
        if (pl[0].c != 1) {
            pyomma_raise_msg(OMMA_ERR_INVALID_ARG, "frame %d: the Y plane is (H, W) uint8", index);
            return -1;
        }
        for (int i = 1; i < n; i++) {
            int good = fmt == OMMA_PIXEL_NV12 ? pl[i].h == ch && pl[i].w * pl[i].c == 2 * cw &&
                                                    (pl[i].c == 2 || pl[i].c == 1)
                                              : pl[i].h == ch && pl[i].w == cw && pl[i].c == 1;
            if (!good) {
                pyomma_raise_msg(
                    OMMA_ERR_INVALID_ARG,
                    "frame %d: plane %d of a %zdx%zd %s frame must be %s (%zd, %zd%s)", index, i,
                    pl[0].w, pl[0].h, fmt == OMMA_PIXEL_NV12 ? "NV12" : "I420",
                    fmt == OMMA_PIXEL_NV12 ? "interleaved UV" : "half size", ch,
                    fmt == OMMA_PIXEL_NV12 ? cw : cw, fmt == OMMA_PIXEL_NV12 ? ", 2" : "");
                return -1;
            }
        }
    }
    for (int i = 1; i < n; i++)
        if (pl[i].device != pl[0].device) {
            pyomma_raise_msg(OMMA_ERR_INVALID_ARG,
                             "frame %d: planes both in host and device memory", index);
            return -1;
        }
    frame->width = (int)pl[0].w;
    frame->height = (int)pl[0].h;
    frame->format = (omma_pixel_format)fmt;
    frame->memory = pl[0].device ? OMMA_MEMORY_DEVICE : OMMA_MEMORY_HOST;
    for (int i = 0; i < n; i++) {
        frame->planes[i] = (const uint8_t *)pl[i].ptr;
        frame->pitch[i] = (int)pl[i].pitch;
    }
    return 0;
}

int pyomma_frame_convert(PyObject *obj, const char *format, int index, pyomma_convert_ctx *ctx,
                         omma_frame *frame, pyomma_frame_hold *hold)
{
    memset(hold, 0, sizeof *hold);
    hold->device_ordinal = -1;
    memset(frame, 0, sizeof *frame);
    int fmt = parse_format(format, index);
    if (format && fmt < 0)
        return -1;
    plane pl[3];
    memset(pl, 0, sizeof pl); /* gcc -O2 cannot see every path fill pl[0] */
    int n = 1;
    if (PyTuple_Check(obj)) {
        n = (int)PyTuple_GET_SIZE(obj);
        if (n != 2 && n != 3) {
            pyomma_raise_msg(OMMA_ERR_INVALID_ARG,
                             "frame %d: a tuple of planes has 2 (NV12: Y, UV) or 3 (I420: Y, U, "
                             "V), not %d",
                             index, n);
            return -1;
        }
        if (fmt < 0)
            fmt = n == 2 ? OMMA_PIXEL_NV12 : OMMA_PIXEL_I420;
        if ((fmt == OMMA_PIXEL_NV12 && n != 2) || (fmt == OMMA_PIXEL_I420 && n != 3) ||
            fmt < OMMA_PIXEL_NV12) {
            pyomma_raise_msg(OMMA_ERR_INVALID_ARG,
                             "frame %d: format %s takes %s, not a tuple of %d planes", index,
                             format, fmt < OMMA_PIXEL_NV12 ? "one array" : "NV12: 2, I420: 3", n);
            return -1;
        }
        for (int i = 0; i < n; i++)
            if (plane_from(PyTuple_GET_ITEM(obj, i), index, hold, ctx, &pl[i]) < 0)
                goto fail;
    } else if (plane_from(obj, index, hold, ctx, &pl[0]) < 0) {
        goto fail;
    }
    if (frame_fill(pl, n, fmt, format, index, frame) < 0)
        goto fail;
    return 0;
fail:
    pyomma_frame_release(hold);
    return -1;
}

int pyomma_array_read(PyObject *obj, pyomma_convert_ctx *ctx, pyomma_frame_hold *hold,
                      pyomma_array *a)
{
    memset(hold, 0, sizeof *hold);
    hold->device_ordinal = -1;
    memset(a, 0, sizeof *a);
    if (array_from(obj, 0, hold, ctx, a) < 0) {
        pyomma_frame_release(hold);
        return -1;
    }
    return 0;
}

int pyomma_frame_from_array(const pyomma_array *a, Py_ssize_t i, const char *format, int index,
                            omma_frame *frame)
{
    memset(frame, 0, sizeof *frame);
    int fmt = parse_format(format, index);
    if (format && fmt < 0)
        return -1;
    plane p;
    if (plane_from_array(index, a, i, &p) < 0)
        return -1;
    return frame_fill(&p, 1, fmt, format, index, frame);
}

/* ---- The CUDA driver, for device frames ---------------------------------- */

typedef int (*fn_stream_sync)(void *stream);
typedef int (*fn_pointer_attrs)(unsigned n, int *attributes, void **data, unsigned long long ptr);
typedef int (*fn_error_name)(int err, const char **name);
static struct {
    void *lib;
    fn_stream_sync stream_sync;
    fn_pointer_attrs pointer_attrs;
    fn_error_name error_name;
} cu;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

static void cu_load(void)
{
    cu.lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!cu.lib)
        return;
    cu.stream_sync = (fn_stream_sync)dlsym(cu.lib, "cuStreamSynchronize");
    cu.pointer_attrs = (fn_pointer_attrs)dlsym(cu.lib, "cuPointerGetAttributes");
    cu.error_name = (fn_error_name)dlsym(cu.lib, "cuGetErrorName");
    if (!cu.stream_sync || !cu.pointer_attrs || !cu.error_name)
        cu.stream_sync = NULL;
}

static const char *cu_name(int err)
{
    const char *name = NULL;
    if (cu.error_name && cu.error_name(err, &name) == 0 && name)
        return name;
    return "CUDA_ERROR_UNKNOWN";
}

static omma_status cu_ready(char *msg, size_t msg_size)
{
    pthread_once(&cu_once, cu_load);
    if (!cu.stream_sync) {
        snprintf(msg, msg_size,
                 "device frames: the CUDA driver (libcuda.so.1) could not be loaded");
        return OMMA_ERR_NO_DEVICE;
    }
    return OMMA_OK;
}

/* The allocations already checked in one call: [start, end). */
typedef struct checked_ranges {
    unsigned long long start[32], end[32];
    int n;
} checked_ranges;

static omma_status check_pointer(omma_device *dev, uintptr_t ptr, checked_ranges *seen, char *msg,
                                 size_t msg_size)
{
    for (int i = 0; i < seen->n; i++)
        if (ptr >= seen->start[i] && ptr < seen->end[i])
            return OMMA_OK;
    omma_status st = cu_ready(msg, msg_size);
    if (st != OMMA_OK)
        return st;
    enum {
        ATTR_MEMORY_TYPE = 2,
        ATTR_DEVICE_ORDINAL = 9,
        ATTR_RANGE_START = 11,
        ATTR_RANGE_SIZE = 12,
        MEMORYTYPE_HOST = 1
    };
    int attrs[4] = {ATTR_MEMORY_TYPE, ATTR_DEVICE_ORDINAL, ATTR_RANGE_START, ATTR_RANGE_SIZE};
    unsigned int type = 0;
    int ordinal = -1;
    unsigned long long start = 0;
    size_t size = 0;
    void *data[4] = {&type, &ordinal, &start, &size};
    int rc = cu.pointer_attrs(4, attrs, data, (unsigned long long)ptr);
    /* Memory the driver does not know leaves the type 0. */
    if (rc != 0 || type == 0) {
        snprintf(msg, msg_size,
                 "device frame at 0x%llx: not CUDA memory (cuPointerGetAttributes: %s)",
                 (unsigned long long)ptr, rc ? cu_name(rc) : "unknown to the driver");
        return OMMA_ERR_INVALID_ARG;
    }
    if (type != MEMORYTYPE_HOST && ordinal != omma_device_ordinal(dev)) {
        snprintf(msg, msg_size, "device frame on GPU %d, the pipeline runs on GPU %d", ordinal,
                 omma_device_ordinal(dev));
        return OMMA_ERR_INVALID_ARG;
    }
    if (seen->n < (int)(sizeof seen->start / sizeof seen->start[0]) && size > 0) {
        seen->start[seen->n] = start;
        seen->end[seen->n++] = start + size;
    }
    return OMMA_OK;
}

omma_status pyomma_check_device_frames(omma_device *dev, const omma_frame *frames,
                                       const pyomma_frame_hold *holds, int n, char *msg,
                                       size_t msg_size)
{
    checked_ranges seen;
    seen.n = 0;
    int ordinal = omma_device_ordinal(dev);
    for (int i = 0; i < n; i++) {
        if (frames[i].memory != OMMA_MEMORY_DEVICE)
            continue;
        if (holds[i].device_ordinal >= 0) {
            if (holds[i].device_ordinal != ordinal) {
                snprintf(msg, msg_size, "frame %d: on GPU %d, the pipeline runs on GPU %d", i,
                         holds[i].device_ordinal, ordinal);
                return OMMA_ERR_INVALID_ARG;
            }
            continue;
        }
        for (int p = 0; p < 3 && frames[i].planes[p]; p++) {
            omma_status st =
                check_pointer(dev, (uintptr_t)frames[i].planes[p], &seen, msg, msg_size);
            if (st != OMMA_OK)
                return st;
        }
    }
    return OMMA_OK;
}

omma_status pyomma_sync_stream_list(omma_device *dev, const uintptr_t *streams, int n, char *msg,
                                    size_t msg_size)
{
    if (n == 0)
        return OMMA_OK;
    omma_status st = cu_ready(msg, msg_size);
    if (st != OMMA_OK)
        return st;
    omma_scope scope;
    st = omma_device_enter(dev, &scope);
    if (st != OMMA_OK) {
        snprintf(msg, msg_size, "%s", omma_last_error());
        return st;
    }
    for (int i = 0; i < n && st == OMMA_OK; i++) {
        int rc = cu.stream_sync((void *)streams[i]);
        if (rc != 0) {
            snprintf(msg, msg_size, "cuStreamSynchronize(the producer's stream 0x%llx): %s",
                     (unsigned long long)streams[i], cu_name(rc));
            st = OMMA_ERR_CUDA;
        }
    }
    omma_status st2 = omma_device_leave(&scope);
    if (st == OMMA_OK && st2 != OMMA_OK) {
        snprintf(msg, msg_size, "%s", omma_last_error());
        st = st2;
    }
    return st;
}

omma_status pyomma_sync_streams(omma_device *dev, const pyomma_frame_hold *holds, int n, char *msg,
                                size_t msg_size)
{
    /* Each stream once, however many frames name it. */
    uintptr_t streams[64];
    int k = 0;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < holds[i].n_streams; j++) {
            uintptr_t s = holds[i].streams[j];
            int dup = 0;
            for (int m = 0; m < k && !dup; m++)
                dup = streams[m] == s;
            if (dup)
                continue;
            if (k == (int)(sizeof streams / sizeof streams[0])) { /* many: in rounds */
                omma_status st = pyomma_sync_stream_list(dev, streams, k, msg, msg_size);
                if (st != OMMA_OK)
                    return st;
                k = 0;
            }
            streams[k++] = s;
        }
    return pyomma_sync_stream_list(dev, streams, k, msg, msg_size);
}
