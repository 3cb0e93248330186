"""omma: MediaPipe face detection and FaceMesh landmarks on many cameras.

A thin layer over libomma's C API (the library lies inside the extension
``omma._omma``). Frames are NumPy arrays (or any buffer) in host memory, or
device arrays (PyTorch, CuPy, anything with ``__cuda_array_interface__`` or
``__dlpack__``) read in place on the GPU::

    import omma
    with omma.FacePipeline(backend="cpu") as fp:
        faces = fp.process(omma.load_image("photo.png"))
        for face in faces:
            print(face.id, face.score, face.box, face.landmarks.shape)

Frames another omma process publishes on the frame bus (``omma stream ...
--publish NAME``) are read in place on the GPU with :func:`omma.bus.subscribe`
(DLPack: ``torch.from_dlpack(frame)``, ``cupy.from_dlpack(frame)``).

Threads: a FacePipeline or Stream is used by one thread at a time (a second
thread calling in meanwhile gets BusyError, never a crash); different
objects run concurrently. The GIL is released while models run, while the
GPU is waited for and while a Stream waits for results.

Errors are exceptions mapped from the C status codes, all subclasses of
:class:`omma.Error`, whose message is the C library's detail.
"""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Union

from . import _omma
from ._omma import (  # noqa: F401  (re-exported)
    Box,
    BusyError,
    ClosedError,
    CudaError,
    DeviceLostError,
    Error,
    Face,
    FaceBatch,
    FormatError,
    InternalError,
    InvalidArgumentError,
    IOError,
    NoDeviceError,
    OutOfMemoryError,
    StreamResult,
    TimeoutError,
    UnsupportedError,
    load_image,
)

from . import bus  # noqa: E402  (omma.bus.subscribe)

__version__: str = _omma.version()[0]

__all__ = [
    "__version__", "build_info", "devices", "load_image", "models_dir",
    "FacePipeline", "Stream", "stream", "bus",
    "Face", "Box", "FaceBatch", "StreamResult",
    "Error", "InvalidArgumentError", "NoDeviceError", "CudaError", "OutOfMemoryError",
    "IOError", "FormatError", "UnsupportedError", "BusyError", "TimeoutError",
    "ClosedError", "DeviceLostError", "InternalError",
]

DETECTOR_MODELS = {
    "short": "face_detection_short_range.tflite",
    "full": "face_detection_full_range.tflite",
}
MESH_MODEL = "face_landmark.tflite"


def build_info() -> Dict[str, Any]:
    """The library's version, git commit and built-in features (``cuda``, ``ffmpeg``...)."""
    version, commit, features = _omma.version()
    return {"version": version, "commit": commit, "features": features.split()}


def devices() -> List[Dict[str, Any]]:
    """The GPUs omma can use, as dicts (ordinal, name, pci_bus_id, uuid,
    compute_capability, sm_count, memory_total, memory_free, driver_version).

    Empty when there is no NVIDIA driver or GPU, or omma was built without
    CUDA; other failures raise.
    """
    try:
        n = _omma.device_count()
    except NoDeviceError:
        return []
    return [_omma.device_info(i) for i in range(n)]


def _data_dirs() -> List[str]:
    dirs = []
    if os.environ.get("OMMA_MODELS"):
        dirs.append(os.environ["OMMA_MODELS"])
    if os.environ.get("OMMA_DATA"):
        dirs.append(os.path.join(os.environ["OMMA_DATA"], "models"))
    try:
        from . import _build
        dirs.append(os.path.join(_build.DATA_DIR, "models"))
    except ImportError:
        pass
    dirs.append(os.path.join(os.getcwd(), "models"))
    return dirs


def models_dir(explicit: Optional[str] = None) -> str:
    """The folder the models are read from: ``explicit``, else ``$OMMA_MODELS``,
    else ``$OMMA_DATA/models``, else the models/ of the source tree omma was
    built from, else ./models; the first that holds face_landmark.tflite
    (the first candidate when none does: loading then names the missing file).

    The models are MediaPipe's (Apache-2.0), fetched by
    ``scripts/fetch-models.sh``; they are not shipped in the package.
    """
    if explicit is not None:
        return os.fspath(explicit)
    dirs = _data_dirs()
    for d in dirs:
        if os.path.isfile(os.path.join(d, MESH_MODEL)):
            return d
    return dirs[0]


def _model_paths(model: str, models: Optional[str]) -> Dict[str, str]:
    if model in DETECTOR_MODELS:
        d = models_dir(models)
        return {"detector_model": os.path.join(d, DETECTOR_MODELS[model]),
                "mesh_model": os.path.join(d, MESH_MODEL)}
    if isinstance(model, (str, os.PathLike)) and os.fspath(model).endswith(".tflite"):
        path = os.fspath(model)
        d = models_dir(models) if models is not None else os.path.dirname(path) or "."
        mesh = os.path.join(d, MESH_MODEL)
        if not os.path.isfile(mesh):
            mesh = os.path.join(models_dir(models), MESH_MODEL)
        return {"detector_model": path, "mesh_model": mesh}
    raise InvalidArgumentError(
        f"model {model!r}: 'short' (128x128, faces within 2 m), 'full' (192x192, "
        "up to 5 m) or a path to a BlazeFace .tflite")


Frame = Any
"""A frame: a uint8 (H, W, 3|4) array, a tuple of planes, or a device array.
Several cameras' frames: a list of frames, or one stacked (N, H, W, 3|4)
array."""


class FacePipeline(_omma.FacePipeline):
    """Frames in, tracked faces out: BlazeFace then FaceMesh, per camera.

    ``FacePipeline(backend="gpu", model="short", max_faces=4, precision="fp16",
    device=0)`` loads the models once; each camera index has its own tracker
    (face ids stable while tracked). ``process(frames, cameras=None,
    format=None)`` takes one frame, a list (one per camera) or a stacked
    batch (one uint8 array or tensor (N, H, W, 3|4) of N cameras' frames,
    read once and in place: the fast form for many device frames) and
    returns a list of :class:`omma.Face` (or a list of such lists, one per
    camera); ``process_batched`` returns one :class:`omma.FaceBatch` of
    arrays.
    Faces are read lazily: an omma.Face views its call's results (each
    field made when read, ``landmarks`` and ``keypoints`` NumPy views), which
    stay as they are while a face or one of its arrays is held.

    Arguments:
        backend: ``"gpu"`` (CUDA, on GPU ``device``) or ``"cpu"`` (the
            plain-C fp32 reference; no GPU needed). No silent fallback:
            ``"gpu"`` without a GPU raises NoDeviceError.
        model: ``"short"`` or ``"full"`` range detector, or a path to one.
        max_faces: faces tracked per camera, 1..64.
        precision: ``"fp16"`` or ``"fp32"`` (GPU; the CPU is always fp32).
        device: the GPU's ordinal.
        models: the models' folder (see :func:`omma.models_dir`).
        max_batch: frames per C batch, 1..256 (longer lists run in chunks).
        threads: CPU backend: threads, 0 = one per core.
        detect_every: also run the detector every this many frames (0: only
            when fewer than max_faces are tracked).
        min_detection_score, min_presence: thresholds (0.5).

    Threads: one thread at a time (another gets BusyError). Use it as a
    context manager, or call close(); it is also freed when collected.
    Errors: InvalidArgumentError (values out of range), NoDeviceError,
    IOError / FormatError (model files), UnsupportedError.
    """

    def __init__(self, backend: str = "gpu", model: str = "short", max_faces: int = 4,
                 precision: str = "fp16", device: int = 0, *, models: Optional[str] = None,
                 max_batch: int = 16, threads: int = 0, detect_every: int = 0,
                 min_detection_score: float = 0.5, min_presence: float = 0.5) -> None:
        super().__init__(backend=backend, max_faces=max_faces, precision=precision,
                         device=device, max_batch=max_batch, threads=threads,
                         detect_every=detect_every, min_detection_score=min_detection_score,
                         min_presence=min_presence, **_model_paths(model, models))

    def __repr__(self) -> str:
        if self.closed:
            return "<omma.FacePipeline closed>"
        where = f"gpu {self.device}" if self.backend == "gpu" else "cpu"
        return f"<omma.FacePipeline {where} max_faces={self.max_faces}>"


class Stream(_omma.Stream):
    """The multi-camera runtime: an iterator of :class:`omma.StreamResult`.

    Made by :func:`omma.stream`. Each camera is read by its own thread;
    frames are batched across cameras (one worker per GPU, or the CPU
    worker) and each frame's results come out here, in order per camera.
    Iterate from one thread; ``close()`` (any thread), leaving a ``with``
    block, or KeyboardInterrupt during iteration stops the cameras and
    joins every thread. ``errors`` lists cameras that failed;
    ``stats()`` gives the runtime's counters.
    """

    def run(self, callback: Callable[[StreamResult], Any]) -> None:
        """The callback form: calls ``callback(result)`` for every result until
        the sources end or the stream is closed (from the callback, or another
        thread); closes the stream afterwards."""
        try:
            for result in self:
                callback(result)
        finally:
            self.close()

    def __repr__(self) -> str:
        return f"<omma.Stream {'closed' if self.closed else 'running'}>"


def stream(sources: Sequence[str], gpus: Optional[Sequence[int]] = None, *,
           backend: str = "gpu", model: str = "short", models: Optional[str] = None,
           max_faces: int = 4, precision: str = "fp16", max_batch: int = 0,
           threads: int = 0, detect_every: int = 0, realtime: bool = True,
           loop: bool = False, max_frames: int = 0, queue: int = 256,
           callback: Optional[Callable[[StreamResult], Any]] = None) -> Optional[Stream]:
    """Runs the multi-camera runtime on ``sources`` and returns a :class:`Stream`.

    sources: video files, image folders or patterns, V4L2 devices
    (``/dev/video0``), as ``omma stream`` takes them. gpus: GPU ordinals
    (default [0]; ignored on the CPU). realtime: files play at their own
    rate (False: as fast as they decode). loop: files start again at the
    end. max_frames: stop each camera after this many frames (0: no limit).
    queue: results held for the consumer before the runtime waits.
    max_batch: frames per batch (0: 64 on the GPU, 16 on the CPU).
    With ``callback``, runs to the end calling it for each result and
    returns None (the callback form).

    Errors: InvalidArgumentError, NoDeviceError, IOError (a source that
    cannot be opened, naming it), FormatError, ...
    """
    if isinstance(sources, (str, bytes, os.PathLike)):
        raise InvalidArgumentError(
            "stream: sources is a list of sources, not one: stream([source])")
    s = Stream([os.fspath(x) for x in sources], backend=backend, gpus=None if gpus is None else list(gpus),
               max_faces=max_faces, precision=precision, max_batch=max_batch,
               threads=threads, detect_every=detect_every, realtime=realtime, loop=loop,
               max_frames=max_frames, queue=queue, **_model_paths(model, models))
    if callback is not None:
        s.run(callback)
        return None
    return s
