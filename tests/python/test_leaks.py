"""No leaks over 10,000 calls: Python objects (tracemalloc) and the
process' resident memory (RSS) stay flat.

The models cost 0.15 s a call on the CPU under AddressSanitizer, so of the
10,000 calls FULL (100 under AddressSanitizer, 1000 otherwise; OMMA_PY_LEAK_FULL sets it) run them and
return faces (process and process_batched, a face tracked); the others go
through the whole wrapper (frame conversion, the C call, the exception
with its message) and are refused, by the C library (camera out of range,
a camera twice; a stacked batch too) or by the extension (float pixels,
a device frame on the CPU, a stacked batch with too few cameras)."""
import gc
import os
import tracemalloc

import numpy as np

import omma
from conftest import SANITIZED

CALLS = 10_000
FULL = int(os.environ.get("OMMA_PY_LEAK_FULL", "100" if SANITIZED else "1000"))


class FakeDeviceArray:
    def __init__(self):
        self.__cuda_array_interface__ = {"shape": (64, 64, 3), "typestr": "|u1",
                                         "data": (0xdead0000, False), "version": 3}


def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_no_leaks_10000_calls(cpu_pipeline, photo):
    small = np.ascontiguousarray(photo[60:200, 160:300])  # the face, tracked
    p = cpu_pipeline(max_faces=1)
    refused = [
        (small, 5000, omma.InvalidArgumentError),            # C: camera range
        ([small, small], [7, 7], omma.InvalidArgumentError),  # C: camera twice
        (small.astype(np.float32), 0, omma.InvalidArgumentError),
        (FakeDeviceArray(), 0, omma.InvalidArgumentError),
        (np.stack([small, small]), [7, 7], omma.InvalidArgumentError),  # stacked: C
        (np.stack([small, small]), [0], omma.InvalidArgumentError),  # stacked: cameras
    ]
    full_every = CALLS // FULL

    def calls(start, stop):
        for i in range(start, stop):
            if i % full_every == 0:
                if (i // full_every) % 2:
                    faces = p.process(small, cameras=0)
                    assert len(faces) == 1 and faces[0].landmarks.shape == (468, 3)
                else:
                    b = p.process_batched([small], cameras=[0])
                    assert b.counts[0] == 1
            else:
                frame, cams, cls = refused[i % len(refused)]
                try:
                    p.process(frame, cameras=cams)
                    raise AssertionError("not refused")
                except cls as e:
                    assert str(e)

    warm = CALLS // 10
    calls(0, warm)  # trackers, buffers, allocator pools
    gc.collect()
    tracemalloc.start()
    before_py = tracemalloc.take_snapshot()
    before_rss = rss_kib()
    calls(warm, CALLS)
    gc.collect()
    after_py = tracemalloc.take_snapshot()
    after_rss = rss_kib()
    tracemalloc.stop()
    grown = sum(s.size_diff for s in after_py.compare_to(before_py, "filename"))
    assert grown < 64 * 1024, f"Python heap grew {grown} bytes over {CALLS - warm} calls"
    assert after_rss - before_rss < 8 * 1024, \
        f"RSS grew {after_rss - before_rss} KiB over {CALLS - warm} calls"
    s = p.stats()
    assert s["frames"] >= FULL - 1 and s["faces"] == s["frames"]
