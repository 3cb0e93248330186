"""The package: version, devices, the CLI, the exceptions (every one mapped
from its C status with the C message; the reachable ones raised for real)."""
import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import omma
from omma import _omma

ALL_ERRORS = [
    (1, omma.InvalidArgumentError, ValueError, "OMMA_ERR_INVALID_ARG"),
    (2, omma.NoDeviceError, RuntimeError, "OMMA_ERR_NO_DEVICE"),
    (3, omma.CudaError, RuntimeError, "OMMA_ERR_CUDA"),
    (4, omma.OutOfMemoryError, MemoryError, "OMMA_ERR_OUT_OF_MEMORY"),
    (5, omma.IOError, OSError, "OMMA_ERR_IO"),
    (6, omma.FormatError, ValueError, "OMMA_ERR_FORMAT"),
    (7, omma.UnsupportedError, ValueError, "OMMA_ERR_UNSUPPORTED"),
    (8, omma.BusyError, RuntimeError, "OMMA_ERR_BUSY"),
    (9, omma.TimeoutError, TimeoutError, "OMMA_ERR_TIMEOUT"),
    (10, omma.ClosedError, RuntimeError, "OMMA_ERR_CLOSED"),
    (11, omma.DeviceLostError, RuntimeError, "OMMA_ERR_DEVICE_LOST"),
    (12, omma.InternalError, RuntimeError, "OMMA_ERR_INTERNAL"),
]


def test_version():
    assert omma.__version__ == "0.1.0"
    info = omma.build_info()
    assert info["version"] == omma.__version__
    assert "libpng" in info["features"]
    assert isinstance(info["commit"], str) and info["commit"]


def test_devices():
    devs = omma.devices()
    assert isinstance(devs, list)
    if not devs:
        with pytest.raises(omma.NoDeviceError) as e:
            _omma.device_count()
        assert str(e.value)  # the C detail: no driver, no GPU, or no CUDA build
    for i, d in enumerate(devs):
        assert d["ordinal"] == i and d["name"] and d["memory_total"] > 0


@pytest.mark.parametrize("code,cls,builtin,name", ALL_ERRORS)
def test_error_mapping(code, cls, builtin, name):
    with pytest.raises(cls) as e:
        _omma._raise_status(code, f"detail of {name}")
    assert isinstance(e.value, omma.Error) and isinstance(e.value, builtin)
    assert str(e.value) == f"detail of {name}"
    assert e.value.status == name and e.value.code == code


def test_help_reads_well():
    for obj in (omma.FacePipeline, omma.FacePipeline.process, omma.stream, omma.Stream,
                omma.devices, omma.load_image, omma.Face, omma.FaceBatch):
        assert obj.__doc__ and len(obj.__doc__) > 30, obj
    assert "frames" in omma.FacePipeline.process.__doc__


def test_python_m_omma():
    out = subprocess.run([sys.executable, "-m", "omma", "version"], capture_output=True,
                         text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert omma.__version__ in out.stdout
    bad = subprocess.run([sys.executable, "-m", "omma", "no-such-command"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode != 0 and "no-such-command" in bad.stderr


# ---- Errors raised for real, with the C library's messages ----------------

def test_bad_backend_precision_range(cpu_pipeline):
    with pytest.raises(omma.InvalidArgumentError, match="unknown backend 'tpu'"):
        omma.FacePipeline(backend="tpu")
    with pytest.raises(omma.InvalidArgumentError, match="unknown precision 'int8'"):
        omma.FacePipeline(backend="cpu", precision="int8")
    with pytest.raises(omma.InvalidArgumentError, match="max_faces") as e:
        omma.FacePipeline(backend="cpu", max_faces=0)
    assert e.value.status == "OMMA_ERR_INVALID_ARG"
    with pytest.raises(omma.InvalidArgumentError, match="model 'medium'"):
        omma.FacePipeline(backend="cpu", model="medium")


def test_no_device():
    if omma.devices():
        pytest.skip("a GPU is present")
    with pytest.raises(omma.NoDeviceError) as e:
        omma.FacePipeline(backend="gpu")
    assert str(e.value)


def test_model_files(tmp_path):
    with pytest.raises(omma.IOError, match="nowhere"):
        omma.FacePipeline(backend="cpu", models=str(tmp_path / "nowhere"))
    junk = tmp_path / "junk.tflite"
    junk.write_bytes(b"this is not a flatbuffer" * 10)
    with pytest.raises(omma.FormatError) as e:
        omma.FacePipeline(backend="cpu", model=str(junk), models=omma.models_dir())
    assert "junk.tflite" in str(e.value)
    # FaceMesh given as the detector: a model, but not BlazeFace.
    with pytest.raises(omma.UnsupportedError) as e:
        omma.FacePipeline(backend="cpu", model=os.path.join(omma.models_dir(),
                                                            omma.MESH_MODEL))
    assert str(e.value)


def test_load_image_errors(tmp_path):
    with pytest.raises(omma.IOError, match="missing.png"):
        omma.load_image(tmp_path / "missing.png")
    bad = tmp_path / "bad.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 64)
    with pytest.raises(omma.FormatError, match="bad.png"):
        omma.load_image(bad)


def test_bad_frames(cpu_pipeline, photo):
    p = cpu_pipeline()
    cases = [
        (photo.astype(np.float32), omma.InvalidArgumentError, "uint8"),
        (photo[:, :, :2].copy(), omma.InvalidArgumentError, "channel"),
        (photo[:, :, 0].copy(), omma.InvalidArgumentError, "channel"),
        (photo[:, ::2], omma.InvalidArgumentError, "contiguous"),
        (photo[::-1], omma.InvalidArgumentError, "negative strides"),
        (np.zeros((0, 4, 3), np.uint8), omma.InvalidArgumentError, "empty"),
        ((photo[:, :, 0].copy(),), omma.InvalidArgumentError, "tuple of planes"),
        ((photo[:, :, 0].copy(), np.zeros((3, 3, 2), np.uint8)), omma.InvalidArgumentError,
         "plane 1"),
    ]
    for frame, cls, msg in cases:
        with pytest.raises(cls, match=msg):
            p.process(frame)
    with pytest.raises(TypeError, match="expected a uint8 array"):
        p.process("not a frame")
    with pytest.raises(omma.InvalidArgumentError, match="unknown format 'yuyv'"):
        p.process(photo, format="yuyv")
    with pytest.raises(omma.InvalidArgumentError, match="(?i)rgba frame is"):
        p.process(photo, format="rgba")
    with pytest.raises(omma.InvalidArgumentError, match="camera"):
        p.process(photo, cameras=5000)
    with pytest.raises(omma.InvalidArgumentError, match="2 frames but 1 cameras"):
        p.process([photo, photo], cameras=[0])
    with pytest.raises(omma.InvalidArgumentError, match="camera"):
        p.process([photo, photo], cameras=[3, 3])
    with pytest.raises(omma.InvalidArgumentError, match="as many frames"):
        p.process([photo, photo], format=["rgb"])
    with pytest.raises(omma.InvalidArgumentError, match="frame 1: format is not a str"):
        p.process([photo, photo], format=["rgb", 3])
    assert p.process([]) == []


class FakeDeviceArray:
    """Claims to be device memory (never read: the CPU pipeline refuses it)."""

    def __init__(self, shape):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "|u1",
                                         "data": (0xdead0000, False), "version": 3,
                                         "strides": None, "stream": None}


def test_device_frame_on_cpu(cpu_pipeline):
    p = cpu_pipeline()
    with pytest.raises(omma.InvalidArgumentError, match="device frames need the GPU backend"):
        p.process(FakeDeviceArray((64, 64, 3)))
    bad = FakeDeviceArray((64, 64, 3))
    bad.__cuda_array_interface__["typestr"] = "<f4"
    with pytest.raises(omma.InvalidArgumentError, match="uint8"):
        p.process(bad)


def test_closed(cpu_pipeline, photo):
    p = cpu_pipeline()
    p.close()
    p.close()
    assert p.closed
    with pytest.raises(omma.ClosedError, match="closed"):
        p.process(photo)
    with pytest.raises(omma.ClosedError):
        p.stats()
    with pytest.raises(omma.ClosedError):
        with p:
            pass


def test_busy_from_another_thread(cpu_pipeline, photo):
    p = cpu_pipeline(max_batch=8, threads=1)
    frames = [photo] * 8
    started = threading.Event()
    done = []

    def work():
        started.set()
        done.append(p.process(frames))

    t = threading.Thread(target=work)
    t.start()
    started.wait()
    time.sleep(0.05)
    busy = 0
    while t.is_alive():
        try:
            p.process(photo, cameras=100)
        except omma.BusyError as e:
            busy += 1
            assert "another thread" in str(e)
            try:
                p.close()
            except omma.BusyError:
                busy += 1
        time.sleep(0.01)
    t.join()
    assert busy >= 2
    assert len(done) == 1 and len(done[0]) == 8
    assert not p.closed
