"""omma.stream on the CPU runtime: results of every camera in order, the
callback form, close() from another thread, KeyboardInterrupt during
iteration, bad sources; every runtime thread gone afterwards."""
import os
import signal
import threading
import time

import pytest

import omma
from conftest import TESTDATA

PAN = os.path.join(TESTDATA, "astronaut_pan.mp4")


def threads_now():
    return len(os.listdir("/proc/self/task"))


def threads_back_to(base):
    """Threads of this process back to base or fewer (a Python thread that
    was joined, here or in an earlier test, may take a moment to leave the
    OS)."""
    for _ in range(100):
        if threads_now() <= base:
            return True
        time.sleep(0.02)
    return threads_now() <= base


@pytest.fixture(autouse=True)
def needs_video():
    if "ffmpeg" not in omma.build_info()["features"]:
        pytest.skip("omma built without FFmpeg")
    if not os.path.isfile(PAN):
        pytest.fail(f"{PAN} missing: run scripts/fetch-testdata.sh")


def test_two_cameras_in_order():
    base = threads_now()
    seqs = {0: [], 1: []}
    with omma.stream([PAN, PAN], backend="cpu", realtime=False, max_frames=4) as s:
        assert threads_now() > base
        for r in s:
            assert isinstance(r, omma.StreamResult)
            assert r.gpu == -1 and r.done_ns >= r.capture_ns
            seqs[r.camera].append(r.seq)
            assert len(r.faces) == 1
            assert r.faces[0].landmarks.shape == (468, 3)
        st = s.stats()
        assert st["frames_done"] == 8 and st["faces"] == 8
        assert s.errors == []
    assert seqs == {0: [1, 2, 3, 4], 1: [1, 2, 3, 4]}
    assert s.closed
    with pytest.raises(omma.ClosedError):
        s.stats()
    assert threads_back_to(base)


def test_callback_form():
    got = []
    assert omma.stream([PAN], backend="cpu", realtime=False, max_frames=3,
                       callback=got.append) is None
    assert [r.seq for r in got] == [1, 2, 3]


def test_close_from_another_thread():
    base = threads_now()
    s = omma.stream([PAN], backend="cpu", loop=True)
    first = next(s)
    assert first.seq == 1
    timer = threading.Timer(0.3, s.close)
    timer.start()
    n = sum(1 for _ in s)  # ends when closed
    timer.join()
    assert s.closed and n >= 0
    assert threads_back_to(base)


def test_keyboard_interrupt():
    base = threads_now()
    seen = 0
    with pytest.raises(KeyboardInterrupt):
        with omma.stream([PAN], backend="cpu", loop=True, queue=4) as s:
            for r in s:
                seen += 1
                if seen == 1:
                    # As Ctrl-C would: SIGINT while iteration waits in C.
                    threading.Timer(0.2, os.kill, (os.getpid(), signal.SIGINT)).start()
                if seen > 100000:
                    break
    assert seen >= 1
    assert s.closed
    assert threads_back_to(base)


def test_bad_sources(tmp_path):
    missing = str(tmp_path / "missing.mp4")
    with pytest.raises(omma.IOError, match="missing.mp4"):
        omma.stream([missing], backend="cpu")
    with pytest.raises(omma.InvalidArgumentError, match="list of sources"):
        omma.stream(PAN, backend="cpu")
    with pytest.raises(omma.InvalidArgumentError, match="0 sources"):
        omma.stream([], backend="cpu")
    with pytest.raises(omma.InvalidArgumentError, match="queue"):
        omma.stream([PAN], backend="cpu", queue=0)
