"""Type stubs of omma's C extension (omma._omma). Use the omma package."""
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import numpy.typing as npt

Frame = Any  # uint8 (H, W, 3|4) array, tuple of planes, or a device array
Frames = Union[Frame, List[Frame]]

class Error(Exception):
    status: str
    code: int

class InvalidArgumentError(Error, ValueError): ...
class NoDeviceError(Error, RuntimeError): ...
class CudaError(Error, RuntimeError): ...
class OutOfMemoryError(Error, MemoryError): ...
class IOError(Error, OSError): ...
class FormatError(Error, ValueError): ...
class UnsupportedError(Error, ValueError): ...
class BusyError(Error, RuntimeError): ...
class TimeoutError(Error, TimeoutError): ...  # type: ignore[misc]
class ClosedError(Error, RuntimeError): ...
class DeviceLostError(Error, RuntimeError): ...
class InternalError(Error, RuntimeError): ...

class Box(Tuple[float, float, float, float]):
    xmin: float
    ymin: float
    xmax: float
    ymax: float

class Face(Tuple[Any, ...]):
    id: int
    score: float
    box: Box
    keypoints: npt.NDArray[np.float32]  # (6, 2)
    landmarks: npt.NDArray[np.float32]  # (468, 3)
    presence: float

class FaceBatch(Tuple[Any, ...]):
    counts: npt.NDArray[np.int32]  # (n_frames,)
    frame: npt.NDArray[np.int32]  # (N,)
    camera: npt.NDArray[np.int32]
    id: npt.NDArray[np.int32]
    score: npt.NDArray[np.float32]
    box: npt.NDArray[np.float32]  # (N, 4)
    keypoints: npt.NDArray[np.float32]  # (N, 6, 2)
    landmarks: npt.NDArray[np.float32]  # (N, 468, 3)
    presence: npt.NDArray[np.float32]

class StreamResult(Tuple[Any, ...]):
    camera: int
    gpu: int
    seq: int
    capture_ns: int
    done_ns: int
    dropped: int
    faces: List[Face]

class FacePipeline:
    closed: bool
    backend: str
    max_faces: int
    max_batch: int
    device: Optional[int]
    def __init__(self, *, backend: str = ..., detector_model: str, mesh_model: str,
                 max_faces: int = ..., precision: str = ..., device: int = ...,
                 max_batch: int = ..., threads: int = ..., detect_every: int = ...,
                 min_detection_score: float = ..., min_presence: float = ...) -> None: ...
    def process(self, frames: Frames, cameras: Union[None, int, Sequence[int]] = None,
                format: Union[None, str, Sequence[Optional[str]]] = None) -> Union[List[Face], List[List[Face]]]: ...
    def process_batched(self, frames: Frames, cameras: Union[None, int, Sequence[int]] = None,
                        format: Union[None, str, Sequence[Optional[str]]] = None) -> FaceBatch: ...
    def stats(self) -> Dict[str, int]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "FacePipeline": ...
    def __exit__(self, *exc: Any) -> None: ...

class Stream:
    closed: bool
    errors: List[Tuple[int, str, str]]
    def __init__(self, sources: Sequence[str], *, backend: str = ..., detector_model: str,
                 mesh_model: str, gpus: Optional[Sequence[int]] = ..., max_faces: int = ...,
                 precision: str = ..., max_batch: int = ..., threads: int = ...,
                 detect_every: int = ..., realtime: bool = ..., loop: bool = ...,
                 max_frames: int = ..., queue: int = ...) -> None: ...
    def __iter__(self) -> "Stream": ...
    def __next__(self) -> StreamResult: ...
    def stats(self) -> Dict[str, int]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "Stream": ...
    def __exit__(self, *exc: Any) -> bool: ...

class BusFrame:
    camera: int
    seq: int
    capture_ns: int
    announce_ns: int
    missed: int
    width: int
    height: int
    format: str
    pitch: Tuple[int, ...]
    shape: Tuple[int, ...]
    nbytes: int
    device: int
    data_ptr: int
    closed: bool
    def __dlpack__(self, *, stream: Optional[int] = None, max_version: Optional[Tuple[int, int]] = None,
                   dl_device: Optional[Tuple[int, int]] = None, copy: Optional[bool] = None) -> Any: ...
    def __dlpack_device__(self) -> Tuple[int, int]: ...
    def faces(self, timeout: float = 1.0) -> List[Face]: ...
    def close(self) -> None: ...
    def __enter__(self) -> "BusFrame": ...
    def __exit__(self, *exc: Any) -> None: ...

class BusSubscriber:
    name: str
    closed: bool
    skipped: int
    publisher_pid: int
    every_frame: bool
    device: int
    cameras: List[Dict[str, Any]]
    def __init__(self, name: str, cameras: Optional[Sequence[int]] = None,
                 every_frame: bool = False, *, device: int = ..., directory: Optional[str] = ...,
                 max_holds: int = ..., timeout: float = ...) -> None: ...
    def __iter__(self) -> "BusSubscriber": ...
    def __next__(self) -> BusFrame: ...
    def read(self, timeout: Optional[float] = None) -> BusFrame: ...
    def close(self) -> None: ...
    def __enter__(self) -> "BusSubscriber": ...
    def __exit__(self, *exc: Any) -> None: ...

def version() -> Tuple[str, str, str]: ...
def device_count() -> int: ...
def device_info(ordinal: int) -> Dict[str, Any]: ...
def load_image(path: Union[str, bytes, "os.PathLike[str]"]) -> npt.NDArray[np.uint8]: ...
