"""Stacked batches: one uint8 array (N, H, W, C) holding the frames of N
cameras, read once and each frame viewed at its batch stride (no copy), on
the CPU backend: the same faces bit for bit as the list of N frames; every
layout it accepts (a strided batch dimension, padded rows, a broadcast
frame, per-frame formats; NumPy, a buffer, DLPack, PyTorch CPU tensors) and
every error. The CUDA forms (PyTorch, CuPy) are in test_gpu.py."""
import sys

import numpy as np
import pytest

import omma
from conftest import EXPECTED_BOX, iou


def fields(faces):
    return [(f.id, f.score, tuple(f.box), f.keypoints.tobytes(), f.landmarks.tobytes(),
             f.presence) for f in faces]


@pytest.fixture(scope="module")
def frames(photo):
    """Three different frames: the photo, the face moved right, the photo
    mirrored (BGR-swapped pixels of the third kept for the format test)."""
    moved = np.zeros_like(photo)
    moved[:, 40:] = photo[:, :-40]
    return [photo, moved, np.ascontiguousarray(photo[:, ::-1])]


def test_stacked_bitwise_as_list(cpu_pipeline, frames):
    """A stacked batch gives the faces of the list form, bit for bit, over
    two calls (tracking carried): a contiguous stack, then one with a
    strided batch dimension and padded rows (a crop of a wider stack)."""
    lists, stacks = cpu_pipeline(max_batch=3), cpu_pipeline(max_batch=3)
    stack = np.stack(frames)
    want = lists.process(frames, cameras=[3, 4, 5])
    got = stacks.process(stack, cameras=[3, 4, 5])
    assert [len(g) for g in got] == [1, 1, 1]
    assert iou(tuple(got[0][0].box), EXPECTED_BOX) > 0.7
    assert [fields(g) for g in got] == [fields(w) for w in want]
    # Every other frame of a wider, longer stack: batch stride 2 frames,
    # rows padded to 600 pixels; process_batched's arrays.
    wide = np.zeros((6, 512, 600, 3), np.uint8)
    wide[::2, :, :512] = stack
    view = wide[::2, :, :512]
    assert view.strides[0] == 2 * 512 * 600 * 3 and not view.flags["C_CONTIGUOUS"]
    want_b = lists.process_batched(frames, cameras=np.array([3, 4, 5]))
    got_b = stacks.process_batched(view, cameras=np.array([3, 4, 5]))
    assert got_b.counts.tolist() == [1, 1, 1] and got_b.camera.tolist() == [3, 4, 5]
    for name in ("id", "score", "box", "keypoints", "landmarks", "presence"):
        assert getattr(got_b, name).tobytes() == getattr(want_b, name).tobytes(), name
    assert stacks.stats()["frames"] == 6 and stacks.stats()["batches"] == 2


def test_stacked_forms(cpu_pipeline, photo, frames):
    """A broadcast frame (batch stride 0), formats per frame, BGRA, a
    buffer (memoryview) and DLPack: each as its list form."""
    p = cpu_pipeline(max_batch=2)
    ref = fields(p.process(photo, cameras=0))
    same = np.broadcast_to(photo, (2, 512, 512, 3))
    assert same.strides[0] == 0
    got = p.process(same, cameras=[1, 2])
    assert [fields(g) for g in got] == [ref, ref]
    bgr = np.stack([photo, photo[..., ::-1]])
    got = p.process(bgr, cameras=[3, 4], format=["rgb", "bgr"])
    assert [fields(g) for g in got] == [ref, ref]
    bgra = np.zeros((2, 512, 512, 4), np.uint8)
    bgra[..., :3] = photo[..., ::-1]
    got = p.process(bgra, cameras=[5, 6], format="bgra")
    assert [fields(g) for g in got] == [ref, ref]
    got = p.process(memoryview(np.stack([photo, photo])), cameras=[7, 8])
    assert [fields(g) for g in got] == [ref, ref]
    if hasattr(photo, "__dlpack__"):
        got = p.process(DLPackOnly(np.stack([photo, photo])), cameras=[9, 10])
        assert [fields(g) for g in got] == [ref, ref]
    # One camera's stack (N = 1) is a batch: a list of one list.
    assert [fields(g) for g in p.process(photo[None], cameras=[11])] == [ref]


class DLPackOnly:
    """Only the DLPack protocol (a host array)."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


class CAI:
    """The CUDA array interface over host memory: device frames to omma."""

    def __init__(self, a):
        self.a = a
        self.__cuda_array_interface__ = {"shape": a.shape, "typestr": "|u1",
                                         "data": (a.ctypes.data, False), "version": 3,
                                         "strides": None, "stream": None}


def test_stacked_errors(cpu_pipeline, photo):
    p = cpu_pipeline(max_batch=2)
    stack = np.stack([photo, photo])
    cases = [
        (stack[:0], omma.InvalidArgumentError, "stacked batch of 0 frames"),
        (stack.astype(np.float32), omma.InvalidArgumentError, "uint8"),
        (stack[None], omma.InvalidArgumentError, "a stacked batch 4 \\(N, H, W, C\\)"),
        (stack[::-1], omma.InvalidArgumentError, "negative strides"),
        (stack[:, :, ::-1], omma.InvalidArgumentError, "negative strides"),
        (stack[..., :2], omma.InvalidArgumentError, "contiguous within a row"),
        (np.zeros((2, 8, 8, 2), np.uint8), omma.InvalidArgumentError, "got 2 channel"),
        (np.zeros((2, 0, 8, 3), np.uint8), omma.InvalidArgumentError, "empty"),
        (np.zeros((4097, 1, 1, 3), np.uint8), omma.InvalidArgumentError, "at most 4096"),
        ([stack], omma.InvalidArgumentError, "passed alone, not in a list"),
        ((stack, stack), omma.InvalidArgumentError, "passed alone, not in a list or a tuple"),
        (CAI(stack), omma.InvalidArgumentError, "device frames need the GPU backend"),
    ]
    for frame, exc, msg in cases:
        with pytest.raises(exc, match=msg):
            p.process(frame)
    with pytest.raises(omma.InvalidArgumentError, match="2 frames but 3 cameras"):
        p.process(stack, cameras=[0, 1, 2])
    with pytest.raises(TypeError, match="sequence of 2 cameras"):
        p.process(stack, cameras=1)
    with pytest.raises(omma.InvalidArgumentError, match="camera 1 twice"):
        p.process(stack, cameras=[1, 1])
    with pytest.raises(omma.InvalidArgumentError, match="tuple of planes"):
        p.process(stack, format="nv12")
    with pytest.raises(omma.InvalidArgumentError, match="list of formats"):
        p.process(stack, format=["rgb"])
    with pytest.raises(omma.InvalidArgumentError, match="unknown format 'yuv'"):
        p.process(stack, format=["rgb", "yuv"])
    # The batch is held for the call only, on every path; no model ran.
    before = sys.getrefcount(stack)
    for _ in range(200):
        with pytest.raises(omma.InvalidArgumentError):
            p.process(stack, cameras=[0, 5000])  # refused by the C API
        with pytest.raises(omma.InvalidArgumentError):
            p.process(stack, cameras=[0])
    assert sys.getrefcount(stack) == before
    assert p.stats()["frames"] == 0


def test_stacked_torch_cpu(cpu_pipeline, frames, monkeypatch):
    """A CPU torch.Tensor batch is read through the tensor's getters once
    (DLPack refused here), the faces the NumPy list's bit for bit; a batch
    dimension that is not the outermost in memory (a permuted tensor)."""
    torch = pytest.importorskip("torch")

    def refuse(*a, **k):
        raise AssertionError("exported")
    monkeypatch.setattr(torch.Tensor, "__dlpack__", refuse)
    monkeypatch.setattr(torch.utils.dlpack, "to_dlpack", refuse)
    lists, stacks = cpu_pipeline(max_batch=2), cpu_pipeline(max_batch=2)
    two = frames[:2]
    want = lists.process(two)
    t = torch.from_numpy(np.stack(two))
    before = sys.getrefcount(t)
    assert [fields(g) for g in stacks.process(t)] == [fields(w) for w in want]
    # (H, N, W, C) in memory, seen as (N, H, W, C): batch stride one row.
    hn = torch.from_numpy(np.ascontiguousarray(np.stack(two).transpose(1, 0, 2, 3)))
    view = hn.permute(1, 0, 2, 3)
    assert view.stride()[0] == 512 * 3 and view.stride()[1] == 2 * 512 * 3
    want = lists.process(two)
    assert [fields(g) for g in stacks.process(view)] == [fields(w) for w in want]
    with pytest.raises(omma.InvalidArgumentError, match="uint8 \\(got torch.float32\\)"):
        stacks.process(t.float())
    with pytest.raises(omma.InvalidArgumentError, match="stacked batch of 0 frames"):
        stacks.process(t[:0])
    assert sys.getrefcount(t) == before
