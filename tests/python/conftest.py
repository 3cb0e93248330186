"""Fixtures of the Python package's tests: the models, the test photo, the
C reference helper (faces_ref), CPU pipelines. Run by CTest (test_python)
with the build's package on PYTHONPATH."""
import os

import numpy as np
import pytest

import omma

TESTDATA = os.environ.get("OMMA_TESTDATA", os.path.join(os.getcwd(), "testdata"))
# The face of testdata/astronaut.png (tests/engine/test_face_evidence.c).
EXPECTED_BOX = (181.0, 84.0, 270.0, 176.0)
# Under AddressSanitizer everything is several times slower.
SANITIZED = os.environ.get("OMMA_PY_SANITIZED") == "1"


def iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    area = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / area if area > 0 else 0.0


def rgb_to_yuv(rgb):
    """BT.601 limited range Y, U, V planes (U, V averaged over 2x2)."""
    f = rgb.astype(np.float32)
    r, g, b = f[..., 0], f[..., 1], f[..., 2]
    y = 16 + 0.257 * r + 0.504 * g + 0.098 * b
    u = 128 - 0.148 * r - 0.291 * g + 0.439 * b
    v = 128 + 0.439 * r - 0.368 * g - 0.071 * b
    h, w = rgb.shape[:2]
    u = u[: h // 2 * 2, : w // 2 * 2].reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))
    v = v[: h // 2 * 2, : w // 2 * 2].reshape(h // 2, 2, w // 2, 2).mean(axis=(1, 3))
    q = lambda p: np.clip(np.rint(p), 0, 255).astype(np.uint8)  # noqa: E731
    return q(y), q(u), q(v)


@pytest.fixture(scope="session")
def photo():
    path = os.path.join(TESTDATA, "astronaut.png")
    if not os.path.isfile(path):
        pytest.fail(f"{path} missing: run scripts/fetch-testdata.sh")
    img = omma.load_image(path)
    assert img.shape == (512, 512, 3) and img.dtype == np.uint8
    return img


@pytest.fixture(scope="session")
def photo_path():
    return os.path.join(TESTDATA, "astronaut.png")


@pytest.fixture
def cpu_pipeline():
    made = []

    def make(**kw):
        kw.setdefault("backend", "cpu")
        p = omma.FacePipeline(**kw)
        made.append(p)
        return p

    yield make
    for p in made:
        p.close()
