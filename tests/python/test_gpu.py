"""The GPU backend from Python (label gpu in spirit: skipped without a GPU,
and without PyTorch or CuPy for the device-array tests). Device frames are
read in place: the pipeline's host-to-device byte counter stays at 0;
faces equal the NumPy path's within fp16 tolerance; a frame written by a
slow kernel on a non-default stream is read only after it."""
import numpy as np
import pytest

import omma
from conftest import EXPECTED_BOX, iou

pytestmark = pytest.mark.skipif(not omma.devices(), reason="no GPU")


def close_faces(a, b, tol_px=2.0):
    assert len(a) == len(b) == 1
    assert iou(tuple(a[0].box), tuple(b[0].box)) > 0.9
    d = np.abs(a[0].landmarks[:, :2] - b[0].landmarks[:, :2])
    assert float(np.median(d)) < tol_px / 2 and float(d.max()) < 4 * tol_px


def test_numpy_on_gpu(photo):
    with omma.FacePipeline(backend="gpu") as p:
        faces = p.process(photo)
        assert len(faces) == 1 and iou(tuple(faces[0].box), EXPECTED_BOX) > 0.7
        assert p.stats()["h2d_bytes"] == photo.nbytes
    with omma.FacePipeline(backend="cpu") as c:
        close_faces(faces, c.process(photo))


def test_torch_in_place(photo):
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(photo).cuda()
    with omma.FacePipeline(backend="gpu") as p, omma.FacePipeline(backend="gpu") as q:
        got = p.process(t)
        assert p.stats()["h2d_bytes"] == 0  # no host copy
        close_faces(got, q.process(photo))
        bgr = t.flip(-1).contiguous()
        batch = p.process([t, bgr], cameras=[1, 2], format=["rgb", "bgr"])
        assert [len(b) for b in batch] == [1, 1] and p.stats()["h2d_bytes"] == 0
        rgba = torch.zeros((512, 512, 4), dtype=torch.uint8, device="cuda")
        rgba[..., :3] = t
        assert len(p.process(rgba, cameras=3)) == 1
        # A view with padded rows (a crop of a wider tensor), read in place.
        wide = torch.zeros((512, 640, 3), dtype=torch.uint8, device="cuda")
        wide[:, :512] = t
        assert len(p.process(wide[:, :512], cameras=4)) == 1
        assert p.stats()["h2d_bytes"] == 0


def test_cupy_in_place(photo):
    cp = pytest.importorskip("cupy")
    a = cp.asarray(photo)
    with omma.FacePipeline(backend="gpu") as p, omma.FacePipeline(backend="gpu") as q:
        got = p.process(a)
        assert p.stats()["h2d_bytes"] == 0
        close_faces(got, q.process(photo))

        class CAIOnly:  # the CUDA array interface alone, with CuPy's stream
            def __init__(self, arr):
                self.__cuda_array_interface__ = arr.__cuda_array_interface__
        close_faces(p.process(CAIOnly(a), cameras=1), got)
        assert p.stats()["h2d_bytes"] == 0


def test_torch_stream_ordering(photo):
    """A frame written on a side stream after a long sleep kernel: omma must
    read it after the write (it would find no face in the zeros before)."""
    torch = pytest.importorskip("torch")
    src = torch.from_numpy(photo).cuda()
    with omma.FacePipeline(backend="gpu") as p:
        for cam in range(3):
            frame = torch.zeros_like(src)
            torch.cuda.synchronize()
            side = torch.cuda.Stream()
            with torch.cuda.stream(side):
                torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU cycles
                frame.copy_(src)
                faces = p.process(frame, cameras=cam)
            assert len(faces) == 1, "read before the producer's kernel finished"
            assert iou(tuple(faces[0].box), EXPECTED_BOX) > 0.7


def test_device_frame_other_gpu(photo):
    torch = pytest.importorskip("torch")
    if torch.cuda.device_count() < 2:
        pytest.skip("one GPU")
    t = torch.from_numpy(photo).to("cuda:1")
    with omma.FacePipeline(backend="gpu", device=0) as p:
        with pytest.raises(omma.InvalidArgumentError, match="GPU 1"):
            p.process(t)


def test_batched_device_frames(photo):
    torch = pytest.importorskip("torch")
    frames = [torch.from_numpy(photo).cuda() for _ in range(8)]
    with omma.FacePipeline(backend="gpu", max_batch=8) as p:
        b = p.process_batched(frames)
        assert b.counts.tolist() == [1] * 8 and b.landmarks.shape == (8, 468, 3)
        s = p.stats()
        assert s["h2d_bytes"] == 0 and s["batches"] == 1 and s["d2h_copies"] >= 1


def test_stream_gpu():
    import os
    from conftest import TESTDATA
    if "ffmpeg" not in omma.build_info()["features"]:
        pytest.skip("omma built without FFmpeg")
    pan = os.path.join(TESTDATA, "astronaut_pan.mp4")
    got = []
    omma.stream([pan, pan], realtime=False, max_frames=5, callback=got.append)
    assert len(got) == 10 and all(len(r.faces) == 1 for r in got)


def test_torch_stream_ordering_batch(photo):
    """A batch of frames all written on a side stream after a slow kernel:
    PyTorch orders its current stream once for the whole list, and every
    frame is read after the writes."""
    torch = pytest.importorskip("torch")
    src = torch.from_numpy(photo).cuda()
    with omma.FacePipeline(backend="gpu", max_batch=8) as p:
        frames = [torch.zeros_like(src) for _ in range(8)]
        torch.cuda.synchronize()
        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            torch.cuda._sleep(200_000_000)
            for f in frames:
                f.copy_(src)
            got = p.process(frames)
        assert [len(faces) for faces in got] == [1] * 8, "read before the producer's kernel"
        assert all(iou(tuple(faces[0].box), EXPECTED_BOX) > 0.7 for faces in got)


def test_mixed_device_batch(photo):
    """PyTorch, CuPy and array-interface frames in one list (views into one
    allocation among them: checked once), one C batch, no host copy."""
    torch = pytest.importorskip("torch")
    cp = pytest.importorskip("cupy")

    class CAIOnly:
        def __init__(self, arr):
            self.__cuda_array_interface__ = arr.__cuda_array_interface__

    big = cp.zeros((2, 512, 512, 3), cp.uint8)
    big[0] = cp.asarray(photo)
    big[1] = cp.asarray(photo)
    frames = [torch.from_numpy(photo).cuda(), cp.asarray(photo), CAIOnly(big[0]), CAIOnly(big[1])]
    with omma.FacePipeline(backend="gpu", max_batch=4) as p:
        got = p.process(frames)
        assert [len(f) for f in got] == [1] * 4
        s = p.stats()
        assert s["h2d_bytes"] == 0 and s["batches"] == 1


def test_host_pointer_as_device_frame(photo):
    """An array interface claiming device memory at a host address: refused
    with the driver's word, not read."""

    class Liar:
        def __init__(self, arr):
            self.__cuda_array_interface__ = {"shape": arr.shape, "typestr": "|u1",
                                             "data": (arr.ctypes.data, False), "version": 3,
                                             "strides": None, "stream": None}

    with omma.FacePipeline(backend="gpu") as p:
        with pytest.raises(omma.InvalidArgumentError, match="not CUDA memory"):
            p.process(Liar(photo))


def test_torch_read_by_getters_no_export(photo, monkeypatch):
    """CUDA tensors are read through their getters: with DLPack export and
    the array interface made to fail, frames are still read in place, the
    faces as the NumPy frame's (fp16 tolerance), and a dtype error is clear."""
    torch = pytest.importorskip("torch")

    def refuse(*a, **k):
        raise AssertionError("exported")
    monkeypatch.setattr(torch.Tensor, "__dlpack__", refuse)
    monkeypatch.setattr(torch.Tensor, "__cuda_array_interface__", property(refuse))
    monkeypatch.setattr(torch.utils.dlpack, "to_dlpack", refuse)
    t = torch.from_numpy(photo).cuda()
    with omma.FacePipeline(backend="gpu", max_batch=4) as p, \
            omma.FacePipeline(backend="gpu") as q:
        ref = q.process(photo)
        got = p.process([t, t.clone(), t, t.clone()])
        for faces in got:
            close_faces(faces, ref)
        assert p.stats()["h2d_bytes"] == 0
        with pytest.raises(omma.InvalidArgumentError, match="uint8 \\(got torch.float32\\)"):
            p.process(t.float())


def test_torch_default_stream_ordering(photo):
    """A frame written on PyTorch's default stream after a slow kernel (no
    side stream): read only after it."""
    torch = pytest.importorskip("torch")
    src = torch.from_numpy(photo).cuda()
    with omma.FacePipeline(backend="gpu", max_batch=4) as p:
        for cam in range(2):
            frames = [torch.zeros_like(src) for _ in range(4)]
            torch.cuda.synchronize()
            torch.cuda._sleep(200_000_000)
            for f in frames:
                f.copy_(src)
            got = p.process(frames, cameras=[4 * cam + i for i in range(4)])
            assert [len(faces) for faces in got] == [1] * 4, "read before the producer's kernel"


def test_gpu_results_kept(photo):
    """Faces kept across GPU calls stay as they were (each call's results
    block is reused only once nothing holds it)."""
    torch = pytest.importorskip("torch")
    t = torch.from_numpy(photo).cuda()
    moved = torch.zeros_like(t)
    moved[:, 40:] = t[:, :-40]
    with omma.FacePipeline(backend="gpu") as p:
        kept = p.process(t)[0]
        lm = kept.landmarks.copy()
        for _ in range(3):
            now = p.process(moved)
        assert kept.landmarks.tobytes() == lm.tobytes()
        assert now[0].box.xmin > kept.box.xmin + 20


def batch_fields(b):
    return [getattr(b, k).tobytes() for k in ("counts", "id", "score", "box", "keypoints",
                                              "landmarks", "presence")]


def stacked_frames(photo):
    moved = np.zeros_like(photo)
    moved[:, 40:] = photo[:, :-40]
    return np.stack([photo, moved] * 4)  # (8, 512, 512, 3), two different frames


def test_torch_stacked_in_place(photo):
    """A stacked CUDA tensor (N, H, W, C): read once, in place (no host
    copy), the faces of the list of its N frames bit for bit (process and
    process_batched), also with a strided batch dimension."""
    torch = pytest.importorskip("torch")
    stack = torch.from_numpy(stacked_frames(photo)).cuda()
    frames = [stack[i].clone() for i in range(8)]
    with omma.FacePipeline(backend="gpu", max_batch=8) as lists, \
            omma.FacePipeline(backend="gpu", max_batch=8) as stacks:
        want = lists.process(frames)
        got = stacks.process(stack)
        assert [len(g) for g in got] == [1] * 8
        assert iou(tuple(got[0][0].box), EXPECTED_BOX) > 0.7
        for g, w in zip(got, want):
            assert g[0].landmarks.tobytes() == w[0].landmarks.tobytes()
            assert (g[0].id, g[0].score, tuple(g[0].box)) == (w[0].id, w[0].score, tuple(w[0].box))
        wide = torch.zeros((16, 512, 600, 3), dtype=torch.uint8, device="cuda")
        wide[::2, :, :512] = stack
        assert batch_fields(stacks.process_batched(wide[::2, :, :512])) == \
            batch_fields(lists.process_batched(frames))
        s = stacks.stats()
        assert s["h2d_bytes"] == 0 and s["h2d_copies"] == 0 and s["batches"] == 2


def test_cupy_stacked_in_place(photo):
    """A stacked CuPy array and the same through the CUDA array interface
    alone: in place, the list form's faces bit for bit."""
    cp = pytest.importorskip("cupy")

    class CAIOnly:
        def __init__(self, arr):
            self.__cuda_array_interface__ = arr.__cuda_array_interface__

    stack = cp.asarray(stacked_frames(photo))
    frames = [stack[i].copy() for i in range(8)]
    with omma.FacePipeline(backend="gpu", max_batch=8) as lists, \
            omma.FacePipeline(backend="gpu", max_batch=8) as stacks, \
            omma.FacePipeline(backend="gpu", max_batch=8) as cai:
        want = batch_fields(lists.process_batched(frames))
        assert batch_fields(stacks.process_batched(stack)) == want
        assert batch_fields(cai.process_batched(CAIOnly(stack))) == want
        for p in (stacks, cai):
            assert p.stats()["h2d_bytes"] == 0 and p.stats()["batches"] == 1


def test_torch_stacked_stream_ordering(photo):
    """A stacked batch written after a slow kernel, on a side stream and
    on the default stream: every frame read after the write."""
    import contextlib
    torch = pytest.importorskip("torch")
    src = torch.from_numpy(photo).cuda()
    with omma.FacePipeline(backend="gpu", max_batch=8) as p:
        for cam, side in ((0, torch.cuda.Stream()), (8, None)):
            stack = torch.zeros((8,) + tuple(src.shape), dtype=torch.uint8, device="cuda")
            torch.cuda.synchronize()
            with torch.cuda.stream(side) if side is not None else contextlib.nullcontext():
                torch.cuda._sleep(200_000_000)  # ~0.1 s of GPU cycles
                stack.copy_(src.expand(8, -1, -1, -1))
                got = p.process(stack, cameras=list(range(cam, cam + 8)))
            assert [len(f) for f in got] == [1] * 8, "read before the producer's kernel"


def test_cupy_stacked_stream_ordering(photo):
    """CuPy: a stacked array written on a non-default stream after a slow
    copy chain: read after it (CuPy's current stream ordered)."""
    cp = pytest.importorskip("cupy")
    src = cp.asarray(photo)
    with omma.FacePipeline(backend="gpu", max_batch=8) as p:
        stack = cp.zeros((8,) + photo.shape, cp.uint8)
        cp.cuda.Device().synchronize()
        with cp.cuda.Stream(non_blocking=True):
            junk = cp.zeros((64, 1024, 1024), cp.float32)
            for _ in range(100):  # slow work (~20 ms) queued before the write
                junk = cp.sqrt(junk + 1.0)
            stack[...] = src
            got = p.process(stack)
        assert [len(f) for f in got] == [1] * 8, "read before the producer's kernels"
