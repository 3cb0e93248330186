"""omma.bus: frames another process publishes, read in place on the GPU.

Without a GPU (CI): argument errors, a bus nobody publishes (ClosedError
naming it), a bus directory others may enter. On the GPU machine (PyTorch,
CuPy): ``omma stream DIR --publish NAME`` publishes a sequence of PNG
images written here (the real photo, each with its number in a band of
rows), and the frames read with torch.from_dlpack / cupy.from_dlpack must
equal the images bitwise, in order, with the publisher's faces; a frame
read on a side stream after a slow kernel is given back only after it;
the publisher's end raises ClosedError naming the bus."""
import os
import stat
import struct
import subprocess
import time
import zlib

import numpy as np
import pytest

import omma
from conftest import EXPECTED_BOX, iou


def test_bad_arguments(tmp_path):
    d = str(tmp_path / "bus")
    with pytest.raises(TypeError, match="str"):
        omma.bus.subscribe(3, directory=d)
    for name in ["", "../x", "a/b", ".hidden", "x" * 64]:
        with pytest.raises(omma.InvalidArgumentError, match="name"):
            omma.bus.subscribe(name, directory=d)
    with pytest.raises(omma.InvalidArgumentError, match="camera -1"):
        omma.bus.subscribe("cams", cameras=[-1], directory=d)
    with pytest.raises(omma.InvalidArgumentError, match="0 cameras"):
        omma.bus.subscribe("cams", cameras=[], directory=d)
    with pytest.raises(TypeError):
        omma.bus.subscribe("cams", cameras=["a"], directory=d)
    with pytest.raises(omma.InvalidArgumentError, match="max_holds 9"):
        omma.bus.subscribe("cams", max_holds=9, directory=d)
    with pytest.raises(omma.InvalidArgumentError, match="timeout"):
        omma.bus.subscribe("cams", timeout=0, directory=d)


def test_no_publisher(tmp_path):
    d = str(tmp_path / "bus")
    with pytest.raises(omma.ClosedError, match="bus nobody: no publisher") as e:
        omma.bus.subscribe("nobody", directory=d)
    assert e.value.status == "OMMA_ERR_CLOSED"
    assert stat.S_IMODE(os.stat(d).st_mode) == 0o700
    # A socket file nobody listens on (a dead publisher's): no GPU here, or
    # the publisher is not there.
    open(os.path.join(d, "dead.sock"), "w").close()
    with pytest.raises((omma.NoDeviceError, omma.ClosedError)):
        omma.bus.subscribe("dead", directory=d, timeout=0.2)


def test_open_directory_refused(tmp_path):
    d = tmp_path / "bus"
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)
    with pytest.raises(omma.InvalidArgumentError, match="others may enter"):
        omma.bus.subscribe("x", directory=str(d))


# ---- On the GPU -------------------------------------------------------------

gpu = pytest.mark.skipif(not omma.devices(), reason="no GPU")
N_IMAGES = 12


def write_png(path, rgb):
    """A plain RGB PNG (zlib, filter 0), no imaging library needed."""
    h, w, _ = rgb.shape
    raw = b"".join(b"\0" + rgb[y].tobytes() for y in range(h))

    def chunk(kind, data):
        c = struct.pack(">I", len(data)) + kind + data
        return c + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(raw, 6)))
        f.write(chunk(b"IEND", b""))


def marker(k):
    return (k * 19 + 7) % 256


def images(photo):
    out = []
    for k in range(N_IMAGES):
        img = photo.copy()
        img[480:496] = marker(k)  # the image's number, far from the face
        img[496:, :, 0] = np.arange(512, dtype=np.uint16).astype(np.uint8)[None, :] ^ k
        out.append(img)
    return out


def image_index(data):
    """Which image a frame shows (by its marker band); -1 for none."""
    for k in range(N_IMAGES):
        if data[488, 0, 0] == marker(k):
            return k
    return -1


@pytest.fixture
def publisher(tmp_path, photo):
    """Starts ``omma stream DIR --publish NAME`` (waiting for a subscriber)
    on the images; yields (name, bus directory, images, process)."""
    imgs = images(photo)
    src = tmp_path / "frames"
    src.mkdir()
    for k, img in enumerate(imgs):
        write_png(str(src / f"f{k:03d}.png"), img)
    assert np.array_equal(omma.load_image(str(src / "f003.png")), imgs[3])
    bus_dir = str(tmp_path / "bus")
    env = dict(os.environ, OMMA_BUS_DIR=bus_dir)
    name = f"py{os.getpid()}"
    err = open(tmp_path / "pub.err", "w")
    from omma import _build
    proc = subprocess.Popen(
        [_build.CLI, "stream", str(src), "--fps", "20", "--publish", name,
         "--publish-wait", "60", "--status", "off", "--out", str(tmp_path / "pub.jsonl")],
        env=env, stdout=subprocess.DEVNULL, stderr=err)
    sock = os.path.join(bus_dir, name + ".sock")
    deadline = time.monotonic() + 60
    while not os.path.exists(sock):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail("the publisher never appeared: " + open(tmp_path / "pub.err").read())
        time.sleep(0.05)
    yield name, bus_dir, imgs, proc
    if proc.poll() is None:
        proc.kill()
    proc.wait(30)
    err.close()


def read_all(sub, to_host):
    """Reads frames until the publisher ends: (seq, bytes, faces) each."""
    got = []
    with pytest.raises(omma.ClosedError, match=f"bus {sub.name}") as end:
        while True:
            with sub.read(timeout=30) as frame:
                assert frame.format == "rgb" and frame.shape == (512, 512, 3)
                assert frame.pitch == (512 * 3,) and frame.nbytes == 512 * 512 * 3
                assert frame.capture_ns > 0 and frame.device == sub.device
                got.append((frame.seq, to_host(frame), frame.faces(timeout=10), frame.missed))
            assert frame.closed
    assert end.value.status == "OMMA_ERR_CLOSED"
    return got


def check_frames(got, imgs):
    """Every frame bitwise its image, in order; all of them unless the
    subscriber missed some (it reads faster than 20 frames/s: at most a few)."""
    seqs = [g[0] for g in got]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    last = -1
    for seq, data, faces, missed in got:
        assert data.shape == (512, 512, 3) and data.dtype == np.uint8
        k = image_index(data)
        assert k > last, f"frame {seq}: image {k} after image {last}"
        assert np.array_equal(data, imgs[k]), f"frame {seq} differs from image {k}"
        assert len(faces) == 1 and iou(tuple(faces[0].box), EXPECTED_BOX) > 0.7
        assert faces[0].landmarks.shape == (468, 3)
        last = k
    assert len(got) + got[-1][3] == len(imgs) and len(got) >= len(imgs) - 2


@gpu
def test_torch(publisher):
    torch = pytest.importorskip("torch")
    name, bus_dir, imgs, proc = publisher
    with omma.bus.subscribe(name, every_frame=True, directory=bus_dir) as sub:
        assert [c["format"] for c in sub.cameras] == ["rgb"]
        assert sub.publisher_pid == proc.pid

        def to_host(frame):
            t = torch.from_dlpack(frame)
            assert t.is_cuda and t.dtype == torch.uint8 and t.shape == (512, 512, 3)
            assert t.data_ptr() == frame.data_ptr  # in place
            return t.cpu().numpy()

        got = read_all(sub, to_host)
    check_frames(got, imgs)
    assert proc.wait(30) == 0


@gpu
def test_cupy(publisher):
    cp = pytest.importorskip("cupy")
    name, bus_dir, imgs, proc = publisher
    with omma.bus.subscribe(name, cameras=[0], every_frame=True, directory=bus_dir) as sub:

        def to_host(frame):
            a = cp.from_dlpack(frame)
            assert a.shape == (512, 512, 3) and a.data.ptr == frame.data_ptr
            return cp.asnumpy(a)

        got = read_all(sub, to_host)
    check_frames(got, imgs)


@gpu
def test_torch_side_stream_and_lifetime(publisher):
    """A frame copied on a side stream after a slow kernel, the frame object
    closed at once: it is given back only after the copy ran (with 2 holds
    and 20 frames/s the publisher would otherwise write the slot again). A
    tensor made from a frame keeps it after close() until it is freed."""
    torch = pytest.importorskip("torch")
    name, bus_dir, imgs, proc = publisher
    copies = []
    with omma.bus.subscribe(name, every_frame=True, directory=bus_dir, max_holds=2) as sub:
        side = torch.cuda.Stream()
        while len(copies) < 6:
            frame = sub.read(timeout=30)
            seq = frame.seq
            with torch.cuda.stream(side):
                t = torch.from_dlpack(frame)
                torch.cuda._sleep(100_000_000)
                dst = torch.empty_like(t)
                dst.copy_(t)
            frame.close()
            assert not frame.closed  # t still holds it
            del t
            assert frame.closed
            copies.append((seq, dst, side))
        for _, dst, s in copies:
            s.synchronize()
    last = -1
    for seq, dst, _ in copies:
        data = dst.cpu().numpy()
        k = image_index(data)
        assert k > last and np.array_equal(data, imgs[k]), f"frame {seq}: overwritten"
        last = k
    with pytest.raises(omma.ClosedError, match="closed"):
        sub.read(timeout=0)


@gpu
def test_newest_only_and_publisher_killed(publisher):
    name, bus_dir, imgs, proc = publisher
    sub = omma.bus.subscribe(name, directory=bus_dir)
    assert not sub.every_frame
    first = sub.read(timeout=30)
    first.close()
    time.sleep(0.5)  # 2 frames announced meanwhile (2 holds): the newer is handed out
    second = sub.read(timeout=30)
    assert sub.skipped >= 1 and second.seq >= first.seq + 2
    second.close()
    proc.kill()
    proc.wait(30)
    with pytest.raises(omma.ClosedError, match=f"bus {name}"):
        while True:
            sub.read(timeout=10).close()
    sub.close()
    assert sub.closed
