#!/usr/bin/env python3
"""omma from Python vs the C API: per-call overhead and frames/s.

Each call of FacePipeline.process is timed from Python (perf_counter_ns)
and by the extension around the C call alone (FacePipeline._last_c_ns, the
C API's omma_face_pipeline_process_batch on the same pipeline, frames and
thread): the difference is what Python adds per call (argument parsing,
frame conversion, results as Python objects, and the interpreter's cold
caches after the C call). Freeing a call's results (the caller's, whenever
it drops them) is timed apart, after the call. A refused call (the same frames, cameras the C
API rejects at its argument checks: no model runs) times the wrapper's
round trip alone. Frames/s from Python is frames / wall time; the C
frames/s is frames / time in the C calls.

Where the overhead goes (the extension's FacePipeline._last_timing, medians
per call): convert (arguments parsed, frames read: NumPy fields, PyTorch's
getters, DLPack...), wait (device frames checked, the producers' streams
synchronized), results (Face objects or the batch's arrays made), release
(frames let go), and python: the rest of the wall time (the call from
Python, the interpreter's caches cold after the C call).

Several cameras' frames go in two forms (--form): a list of N arrays
(one per camera) and one stacked batch (N, H, W, C), one array read once
(the form a PyTorch user holding many cameras' frames in one tensor
passes); both are measured and printed by default.

    python3 python/bench/bench_python.py --backend cpu --cameras 1,4
    python3 python/bench/bench_python.py --backend gpu --cameras 1,64 \\
        --frames numpy,device  # and torch (or cupy) CUDA tensors, read in place

Warms up, repeats, prints median and p99 per configuration and one JSON
line each (prefix "json: "). Run from the build tree with
PYTHONPATH=BUILD/python, or after pip install ./python.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

import omma


def percentile(xs, q):
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(q / 100.0 * (len(s) - 1))))]


def device_frames(frames, stacked):
    """The frames on the GPU: a list of N tensors, or one (N, H, W, C)."""
    try:
        import torch
        if stacked:
            return torch.from_numpy(np.stack(frames)).cuda(), "torch"
        return [torch.from_numpy(f).cuda() for f in frames], "torch"
    except ImportError:
        pass
    try:
        import cupy
        if stacked:
            return cupy.asarray(np.stack(frames)), "cupy"
        return [cupy.asarray(f) for f in frames], "cupy"
    except ImportError:
        raise SystemExit("--frames device needs PyTorch or CuPy")


def read_faces(res, nested):
    """Reads every field of every face (Faces are made lazily: this is what
    a consumer reading them all pays, after the call); ns."""
    a = time.perf_counter_ns()
    if isinstance(res, omma.FaceBatch):
        _ = (res.id, res.score, res.box, res.landmarks)
    else:
        for faces in (res if nested else [res]):
            for f in faces:
                _ = (f.id, f.score, f.box, f.keypoints, f.landmarks, f.presence)
    return time.perf_counter_ns() - a


def run(args, cameras, frames_kind, form):
    photo_path = os.path.join(args.testdata, "astronaut.png")
    photo = omma.load_image(photo_path)
    if args.size:
        w, h = (int(v) for v in args.size.split("x"))
        canvas = np.zeros((h, w, 3), np.uint8)
        canvas[: min(h, 512), : min(w, 512)] = photo[: min(h, 512), : min(w, 512)]
        photo = canvas
    frames = [photo] * cameras
    kind = "numpy"
    stacked = form == "stacked"
    if frames_kind == "device":
        frames, kind = device_frames(frames, stacked)
    elif stacked:
        frames = np.stack(frames)
    p = omma.FacePipeline(backend=args.backend, model=args.model, max_batch=min(cameras, 256),
                          precision=args.precision, threads=args.threads)
    cams = list(range(cameras))
    arg = frames if cameras > 1 else frames[0]
    cam_arg = cams if cameras > 1 else 0
    process = p.process_batched if args.batched else p.process
    for _ in range(args.warmup):
        process(arg, cam_arg)
    walls, cs, frees, reads = [], [], [], []
    parts = {k: [] for k in ("convert", "wait", "results", "release")}
    t_end = time.perf_counter() + args.seconds
    t0 = time.perf_counter_ns()
    while len(walls) < args.min_calls or time.perf_counter() < t_end:
        a = time.perf_counter_ns()
        res = process(arg, cam_arg)
        b = time.perf_counter_ns()
        if args.read_faces:  # every field of every face, as a consumer would
            reads.append(read_faces(res, cameras > 1 and not args.batched))
        c = time.perf_counter_ns()
        del res  # the results are the caller's: freed after the timed call
        frees.append(time.perf_counter_ns() - c)
        walls.append(b - a)
        cs.append(p._last_c_ns)
        t = p._last_timing
        for k in parts:
            parts[k].append(t[k])
    total = time.perf_counter_ns() - t0
    over = [w - c for w, c in zip(walls, cs)]
    rest = [o - sum(parts[k][i] for k in parts) for i, o in enumerate(over)]
    breakdown = {k: statistics.median(v) / 1e3 for k, v in parts.items()}
    breakdown["python"] = statistics.median(rest) / 1e3
    # The wrapper alone: the same frames converted and handed to the C API,
    # which refuses them at its argument checks (a camera twice), so no
    # model runs; the exception carries the C message.
    bad = [0] * cameras if cameras > 1 else 4096
    wrapper = []
    for _ in range(max(200, args.min_calls)):
        a = time.perf_counter_ns()
        try:
            process(arg, bad)
        except omma.InvalidArgumentError:
            pass
        wrapper.append(time.perf_counter_ns() - a)
    calls = len(walls)
    res = {
        "bench": "python", "backend": args.backend, "frames": kind, "cameras": cameras,
        "form": form if cameras > 1 else "one",
        "size": f"{photo.shape[1]}x{photo.shape[0]}", "calls": calls,
        "batched": bool(args.batched),
        "overhead_us_median": statistics.median(over) / 1e3,
        "overhead_us_p99": percentile(over, 99) / 1e3,
        "refused_call_us_median": statistics.median(wrapper) / 1e3,
        "free_results_us_median": statistics.median(frees) / 1e3,
        "overhead_breakdown_us_median": breakdown,
        "read_faces_us_median": statistics.median(reads) / 1e3 if reads else None,
        "call_us_median": statistics.median(walls) / 1e3,
        "c_call_us_median": statistics.median(cs) / 1e3,
        "python_fps": cameras * calls / (total / 1e9),
        "c_fps": cameras * calls / (sum(cs) / 1e9),
        "stats": p.stats(),
    }
    res["python_vs_c"] = res["python_fps"] / res["c_fps"]
    p.close()
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--backend", default="cpu", choices=["cpu", "gpu"])
    ap.add_argument("--cameras", default="1,4", help="comma-separated camera counts")
    ap.add_argument("--frames", default="numpy",
                    help="numpy, device (torch or cupy CUDA tensors) or both: numpy,device")
    ap.add_argument("--form", default="list,stacked",
                    help="several cameras' frames as a list of arrays, one stacked (N, H, W, C) "
                         "array, or both: list,stacked")
    ap.add_argument("--size", default="", help="WxH canvas with the photo (default 512x512)")
    ap.add_argument("--model", default="short")
    ap.add_argument("--precision", default="fp16")
    ap.add_argument("--threads", type=int, default=0, help="CPU threads (0: all)")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--min-calls", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--batched", action="store_true", help="process_batched")
    ap.add_argument("--read-faces", action="store_true",
                    help="after each call, read every field of every face (timed apart)")
    ap.add_argument("--testdata", default=os.environ.get("OMMA_TESTDATA", "testdata"))
    args = ap.parse_args()
    print(f"omma {omma.__version__} ({omma.build_info()['commit']}), Python "
          f"{sys.version.split()[0]}, backend {args.backend}", file=sys.stderr)
    kinds = args.frames.split(",")
    for kind in kinds:
        if kind not in ("numpy", "device"):
            raise SystemExit(f"--frames {kind}: numpy or device")
    forms = args.form.split(",")
    for form in forms:
        if form not in ("list", "stacked"):
            raise SystemExit(f"--form {form}: list or stacked")
    runs = []
    for kind in kinds:
        for cameras in (int(c) for c in args.cameras.split(",")):
            runs += [(kind, cameras, f) for f in (forms if cameras > 1 else ["list"])]
    for kind, cameras, form in runs:
        r = run(args, cameras, kind, form)
        print(f"{cameras:4d} camera(s) {r['frames']:6s} {r['form']:7s} {r['size']}: overhead "
              f"{r['overhead_us_median']:.1f} us median ({r['overhead_us_p99']:.1f} p99) on "
              f"{r['c_call_us_median']:.0f} us in C per call (refused call "
              f"{r['refused_call_us_median']:.1f} us, freeing the results "
              f"{r['free_results_us_median']:.1f} us); {r['python_fps']:.1f} frames/s "
              f"from Python vs {r['c_fps']:.1f} in C ({100 * r['python_vs_c']:.1f}%)")
        print("     overhead per call (median us): " + ", ".join(
            f"{k} {v:.1f}" for k, v in r["overhead_breakdown_us_median"].items()) +
            (f"; reading every face afterwards {r['read_faces_us_median']:.1f} us"
             if r["read_faces_us_median"] is not None else ""))
        print("json: " + json.dumps(r))

if __name__ == "__main__":
    main()
