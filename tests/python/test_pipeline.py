"""FacePipeline on the CPU backend: the real photo, bitwise the C API's
faces, batches of cameras in every pixel format, the batched form, device
array protocols on the host (DLPack), and the GIL released."""
import os
import subprocess
import tempfile
import threading

import numpy as np
import pytest

import omma
from conftest import EXPECTED_BOX, iou, rgb_to_yuv

FACE_DTYPE = np.dtype([("id", "<i4"), ("score", "<f4"), ("box", "<f4", (4,)),
                       ("keypoints", "<f4", (6, 2)), ("landmarks", "<f4", (468, 3)),
                       ("presence", "<f4"), ("n_landmarks", "<i4"), ("irises", "<f4", (10, 3)),
                       ("has_head_pose", "<i4"), ("head_pose", "<f4", (16,)), ("yaw", "<f4"),
                       ("pitch", "<f4"), ("roll", "<f4")])


def check_astronaut(face):
    assert iou(tuple(face.box), EXPECTED_BOX) > 0.7, face.box
    assert face.score > 0.5 and face.presence > 0.5
    assert face.landmarks.shape == (468, 3) and face.landmarks.dtype == np.float32
    assert face.keypoints.shape == (6, 2) and face.keypoints.dtype == np.float32
    nose = face.landmarks[1]
    assert EXPECTED_BOX[0] < nose[0] < EXPECTED_BOX[2]
    assert EXPECTED_BOX[1] < nose[1] < EXPECTED_BOX[3]
    # Keypoints: right eye left of the left eye on the image, nose below them.
    assert face.keypoints[0, 0] < face.keypoints[1, 0]
    assert face.keypoints[2, 1] > face.keypoints[0, 1]


def test_astronaut(cpu_pipeline, photo):
    p = cpu_pipeline()
    faces = p.process(photo)
    assert len(faces) == 1
    check_astronaut(faces[0])
    again = p.process(photo)
    assert len(again) == 1 and again[0].id == faces[0].id
    assert repr(faces[0]).startswith("omma.Face(id=")
    s = p.stats()
    assert s["frames"] == 2 and s["faces"] == 2 and s["h2d_bytes"] == 0
    assert p.backend == "cpu" and p.device is None and p.max_faces == 4


def test_bitwise_as_c_api(cpu_pipeline, photo, photo_path):
    """The same frames through the C API (faces_ref) and through Python:
    the same faces, bit for bit, over 2 frames of 3 cameras."""
    ref = os.environ.get("OMMA_FACES_REF")
    if not ref:
        pytest.skip("OMMA_FACES_REF not set (run by CTest)")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "faces.bin")
        r = subprocess.run([ref, omma.models_dir(), photo_path, "2", "3", out],
                           capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, r.stderr
        data = open(out, "rb").read()
    p = cpu_pipeline(max_batch=3)
    at = 0
    for _ in range(2):
        got = p.process([photo, photo, photo])
        for cam in range(3):
            n = int(np.frombuffer(data, "<i4", 1, at)[0])
            at += 4
            want = np.frombuffer(data, FACE_DTYPE, n, at)
            at += n * FACE_DTYPE.itemsize
            assert len(got[cam]) == n == 1
            for f, w in zip(got[cam], want):
                assert f.id == w["id"]
                assert np.float32(f.score).tobytes() == w["score"].tobytes()
                assert np.array(f.box, np.float32).tobytes() == w["box"].tobytes()
                assert f.keypoints.tobytes() == w["keypoints"].tobytes()
                assert f.landmarks.tobytes() == w["landmarks"].tobytes()
                assert np.float32(f.presence).tobytes() == w["presence"].tobytes()
    assert at == len(data)


def formats(photo):
    y, u, v = rgb_to_yuv(photo)
    uv = np.stack([u, v], axis=-1)
    rgba = np.concatenate([photo, np.full(photo.shape[:2] + (1,), 255, np.uint8)], axis=2)
    return [
        (photo, None),
        (np.ascontiguousarray(photo[..., ::-1]), "bgr"),
        (rgba, None),
        (np.ascontiguousarray(rgba[..., [2, 1, 0, 3]]), "bgra"),
        ((y, uv), None),
        ((y, uv.reshape(uv.shape[0], -1)), "nv12"),
        ((y, u, v), None),
    ]


def test_batch_of_cameras_every_format(cpu_pipeline, photo):
    p = cpu_pipeline(max_batch=4)
    cases = formats(photo)
    for frame, fmt in cases:  # each format alone, on a camera of its own
        faces = p.process(frame, cameras=50, format=fmt)
        assert len(faces) == 1, fmt
        check_astronaut(faces[0])
        p.close()
        p = cpu_pipeline(max_batch=4)
    # Cameras of different formats in one batch: 4 packed, 3 of planes.
    frames = [f for f, _ in cases[:4]]
    got = p.process(frames, cameras=[10, 11, 12, 13], format=[f for _, f in cases[:4]])
    assert [len(g) for g in got] == [1, 1, 1, 1]
    for g in got:
        check_astronaut(g[0])
    # RGB, BGR, RGBA, BGRA of the same pixels: the same faces, bitwise.
    for g in got[1:]:
        assert g[0].landmarks.tobytes() == got[0][0].landmarks.tobytes()
    planes = [f for f, _ in cases[4:]]
    got = p.process(planes, cameras=[20, 21, 22], format=["nv12", None, "i420"])
    assert [len(g) for g in got] == [1, 1, 1]
    for g in got:
        check_astronaut(g[0])
    # NV12 given as (H/2, W/2, 2) or (H/2, W) planes: the same bytes.
    assert got[0][0].landmarks.tobytes() == got[1][0].landmarks.tobytes()
    s = p.stats()
    assert s["batches"] == 2 and s["frames"] == 7


def test_padded_rows_and_chunks(cpu_pipeline, photo):
    big = np.zeros((512, 600, 3), np.uint8)
    big[:, :512] = photo
    view = big[:, :512]
    assert not view.flags["C_CONTIGUOUS"]
    p = cpu_pipeline(max_batch=2)
    got = p.process([photo, view, photo, view, photo])  # 3 C batches
    assert [len(g) for g in got] == [1] * 5
    ref = got[0][0].landmarks.tobytes()
    assert all(g[0].landmarks.tobytes() == ref for g in got)
    assert p.stats()["batches"] == 3


def test_batched_form(cpu_pipeline, photo):
    a = cpu_pipeline(max_batch=3)
    b = cpu_pipeline(max_batch=3)
    empty = np.zeros((256, 256, 3), np.uint8)
    frames = [photo, empty, photo]
    lists = a.process(frames, cameras=[4, 5, 6])
    batch = b.process_batched(frames, cameras=[4, 5, 6])
    assert batch.counts.tolist() == [1, 0, 1]
    assert batch.frame.tolist() == [0, 2] and batch.camera.tolist() == [4, 6]
    assert batch.landmarks.shape == (2, 468, 3) and batch.landmarks.dtype == np.float32
    assert batch.box.shape == (2, 4) and batch.keypoints.shape == (2, 6, 2)
    flat = [f for faces in lists for f in faces]
    for i, f in enumerate(flat):
        assert batch.id[i] == f.id
        assert batch.landmarks[i].tobytes() == f.landmarks.tobytes()
        assert batch.box[i].tolist() == list(np.array(f.box, np.float32))
        assert batch.presence[i] == np.float32(f.presence)


class DLPackOnly:
    """Only the DLPack protocol (as a CPU torch tensor): read as host memory."""

    def __init__(self, a):
        self.a = a

    def __dlpack__(self, stream=None):
        assert stream is None
        return self.a.__dlpack__()

    def __dlpack_device__(self):
        return self.a.__dlpack_device__()


def test_dlpack_host(cpu_pipeline, photo):
    if not hasattr(photo, "__dlpack__"):
        pytest.skip("NumPy without DLPack")
    a = cpu_pipeline().process(photo)
    b = cpu_pipeline().process(DLPackOnly(photo))
    assert len(a) == len(b) == 1
    assert a[0].landmarks.tobytes() == b[0].landmarks.tobytes()


def test_gil_released(cpu_pipeline, photo):
    p = cpu_pipeline(max_batch=4, threads=1)
    done = threading.Event()
    ticks = 0

    def work():
        p.process([photo] * 4)
        done.set()

    t = threading.Thread(target=work)
    t.start()
    while not done.is_set():
        ticks += 1
        done.wait(0.001)
    t.join()
    # The main thread ran while the models did: many wake-ups, not one.
    assert ticks > 20
