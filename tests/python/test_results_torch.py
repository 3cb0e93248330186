"""Results read lazily (omma.Face views a call's results block) and
PyTorch tensors read through their getters, not DLPack, on the CPU
backend (CPU tensors; the CUDA ones are in test_gpu.py). The PyTorch
tests skip without PyTorch (Debian's python3-torch has it)."""
import pickle
import sys

import numpy as np
import pytest

import omma
from conftest import EXPECTED_BOX, iou


def fields(face):
    return (face.id, face.score, tuple(face.box), face.keypoints.copy(),
            face.landmarks.copy(), face.presence)


def same(a, b):
    return (a[0] == b[0] and a[1] == b[1] and a[2] == b[2] and a[5] == b[5]
            and a[3].tobytes() == b[3].tobytes() and a[4].tobytes() == b[4].tobytes())


def test_face_fields_sequence_pickle(cpu_pipeline, photo):
    p = cpu_pipeline(max_batch=2)
    faces = p.process([photo, photo])
    batch_p = cpu_pipeline(max_batch=2)
    b = batch_p.process_batched([photo, photo])
    for cam in range(2):
        f = faces[cam][0]
        assert isinstance(f, omma.Face) and len(f) == 6
        fid, score, box, kp, lm, presence = f  # the named tuple it was
        assert (fid, score, presence) == (f.id, f.score, f.presence)
        assert isinstance(box, omma.Box) and tuple(box) == tuple(f.box)
        assert f[4].shape == (468, 3) and f[-1] == f.presence
        with pytest.raises(IndexError):
            f[6]
        # The same values as the batched form's arrays (made by copying).
        assert f.id == b.id[cam] and np.float32(f.score) == b.score[cam]
        assert np.array(f.box, np.float32).tobytes() == b.box[cam].tobytes()
        assert f.landmarks.tobytes() == b.landmarks[cam].tobytes()
        assert f.keypoints.tobytes() == b.keypoints[cam].tobytes()
        assert f.landmarks.dtype == np.float32 and f.landmarks.flags.c_contiguous
        assert repr(f).startswith(f"omma.Face(id={f.id}, score=")
        g = pickle.loads(pickle.dumps(f))
        assert isinstance(g, omma.Face) and same(fields(g), fields(f))
    with pytest.raises(omma.InvalidArgumentError, match="not a face"):
        omma._omma._face_from_bytes(b"\0" * 8)
    with pytest.raises(TypeError):
        omma.Face()


def test_results_never_overwritten(cpu_pipeline, photo):
    """A call's faces stay as they were while anything of them is held (a
    Face, or only one of its arrays); dropped results' memory is reused."""
    p = cpu_pipeline()
    kept = p.process(photo)[0]
    before = fields(kept)
    lm = p.process(photo)[0].landmarks  # the Face dropped, its array kept
    lm_before = lm.copy()
    moved = np.zeros_like(photo)
    moved[:, 40:] = photo[:, :-40]  # the face 40 px to the right
    for _ in range(3):
        now = p.process(moved)
    assert same(fields(kept), before)
    assert lm.tobytes() == lm_before.tobytes()
    assert now[0].box.xmin > before[2][0] + 20  # the new call's own results
    # Writing into a face's array changes that face only.
    kept.landmarks[0, 0] = -1.0
    assert kept.landmarks[0, 0] == -1.0 and now[0].landmarks[0, 0] != -1.0
    assert sys.getrefcount(lm.base) >= 2


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def test_torch_cpu_tensors_bitwise(cpu_pipeline, photo, torch, monkeypatch):
    """torch.Tensor frames are read through the tensor's getters: no DLPack
    export, no array interface (both made to fail here), the same faces
    bit for bit as the NumPy frame's; views with padded rows, BGR."""
    def refuse(*a, **k):
        raise AssertionError("exported")
    monkeypatch.setattr(torch.Tensor, "__dlpack__", refuse)
    monkeypatch.setattr(torch.utils.dlpack, "to_dlpack", refuse)
    t = torch.from_numpy(photo.copy())
    wide = torch.zeros((512, 640, 3), dtype=torch.uint8)
    wide[:, 100:612] = t
    bgr = t.flip(-1).contiguous()
    p = cpu_pipeline(max_batch=4)
    got = p.process([photo, t, wide[:, 100:612], bgr], format=[None, None, None, "bgr"])
    want = fields(got[0][0])
    for cam in (1, 2, 3):
        assert len(got[cam]) == 1 and same(fields(got[cam][0]), want), cam
    assert iou(tuple(got[1][0].box), EXPECTED_BOX) > 0.7
    # One tensor alone, and a tuple of planes (NV12: Y, UV) from tensors.
    assert same(fields(p.process(t, cameras=5)[0]), want)
    y = torch.full((64, 64), 16, dtype=torch.uint8)
    uv = torch.full((32, 32, 2), 128, dtype=torch.uint8)
    assert p.process((y, uv), cameras=6) == []
    assert p.stats()["h2d_bytes"] == 0


def test_torch_errors_and_refcounts(cpu_pipeline, photo, torch):
    p = cpu_pipeline()
    t = torch.from_numpy(photo.copy())
    cases = [
        (t.float(), "uint8 \\(got torch.float32\\)"),
        (t[None, None], "2 or 3 dimensions"),  # (1, 1, H, W, C); (1, H, W, C) is a batch
        (t[:, :, 0:1].expand(512, 512, 3), "contiguous within a row"),
        (t.permute(2, 0, 1).contiguous().permute(1, 2, 0), "contiguous within a row"),
        (t[:0], "empty"),
        (torch.zeros((8, 8, 2), dtype=torch.uint8), "got 2 channel"),
        (torch.zeros((8, 8, 3), dtype=torch.uint8, device="meta"), "device 'meta'"),
        (t.reshape(-1, 3).to_sparse(), "sparse"),
    ]
    for frame, msg in cases:
        with pytest.raises(omma.InvalidArgumentError, match=msg):
            p.process(frame)
    # A subclass goes by DLPack (its getters may be its own) and works.
    sub = torch.nn.Parameter(t, requires_grad=False)
    assert len(p.process(sub, cameras=1)) == 1
    # The tensor is held for the call only, on every path.
    before = sys.getrefcount(t)
    for _ in range(200):
        with pytest.raises(omma.InvalidArgumentError):
            p.process(t, cameras=5000)  # refused by the C API
        with pytest.raises(omma.InvalidArgumentError):
            p.process([t, t.float()])  # refused while converting
    faces = p.process(t, cameras=2)
    assert len(faces) == 1
    assert sys.getrefcount(t) == before
