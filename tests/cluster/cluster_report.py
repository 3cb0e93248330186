"""The cluster test's verdict: ownership and results around each failure.

usage: cluster_report.py WATCH RESULTS EVENTS CAMERAS

WATCH: cluster_check watch's lines "T_MS CAMERA OWNER REVISION".
RESULTS: cluster_check dump's lines "CAMERA NODE LEASE SEQ CAPTURE_MS".
EVENTS: the test's lines "KIND T_MS NODE CAM,CAM,..." (kill, drain, cut).
CAMERAS: the cameras that must be owned and publishing, comma-separated.

Checks, printing every number it bases a verdict on:
  - each camera's owner key changes by compare-and-set only (revisions
    rise), and a camera handed over ("-") has a new owner within 10 s;
  - after each event, each of the node's cameras has a new owner within
    10 s, and its results resume on the sink (reported);
  - a drained node's cameras: their results resume on the new owner within
    10 s of the drain (the gap the hand-over makes; the gap from the old
    owner's last result is reported too: it adds the camera's own interval
    between results, long on a loaded machine's CPU backend);
  - fencing: in capture order, no result carries an older lease than one
    already seen for the camera (two owners never publish at once).
Exits 1 when a check fails.
"""

import json
import sys

LIMIT_MS = 10000


def main() -> int:
    watch_path, results_path, events_path, cameras = sys.argv[1:5]
    cameras = cameras.split(",")
    watch = {}
    for line in open(watch_path):
        t, cam, owner, rev = line.split()
        watch.setdefault(cam, []).append((int(t), owner, int(rev)))
    results = {}
    for line in open(results_path):
        cam, node, lease, seq, capture = line.split()
        results.setdefault(cam, []).append((int(capture), node, int(lease), int(seq)))
    for r in results.values():
        r.sort()
    events = []
    for line in open(events_path):
        kind, t, node, cams = line.split()
        events.append((kind, int(t), node, cams.split(",") if cams != "-" else []))

    failures = []
    report = {"events": []}

    # Owner keys: revisions rise; a handed-over camera is owned again soon.
    longest_free = 0
    for cam in cameras:
        chain = watch.get(cam, [])
        if not chain:
            failures.append(f"{cam}: never owned")
            continue
        for (_, _, r0), (_, _, r1) in zip(chain, chain[1:]):
            if r1 <= r0:
                failures.append(f"{cam}: owner revision went from {r0} to {r1}")
        for i, (t, owner, _) in enumerate(chain):
            if owner == "-":
                nxt = next((x for x in chain[i + 1:] if x[1] != "-"), None)
                free = (nxt[0] if nxt else chain[-1][0]) - t
                if nxt:
                    longest_free = max(longest_free, free)
    report["longest_unowned_ms"] = longest_free
    if longest_free > LIMIT_MS:
        failures.append(f"a camera was unowned for {longest_free} ms")

    # Fencing: leases never go back in capture order.
    fenced_ok = True
    for cam in cameras:
        top = 0
        for capture, node, lease, _ in results.get(cam, []):
            if lease <= 0:
                failures.append(f"{cam}: a result without a lease from {node}")
                fenced_ok = False
                break
            if lease < top:
                failures.append(f"{cam}: {node} published lease {lease} at {capture} after "
                                f"lease {top} had published (two owners at once)")
                fenced_ok = False
                break
            top = max(top, lease)
    report["fencing_ok"] = fenced_ok

    for kind, t, node, cams in events:
        owned, resumed, gaps = [], [], []
        for cam in cams:
            nxt = next((x for x in watch.get(cam, []) if x[0] >= t and x[1] not in (node, "-")),
                       None)
            if not nxt:
                failures.append(f"{kind} {node}: {cam} never owned again")
                continue
            owned.append(nxt[0] - t)
            first = next((r for r in results.get(cam, []) if r[0] >= t and r[1] != node), None)
            if not first:
                failures.append(f"{kind} {node}: no result of {cam} after it")
                continue
            resumed.append(first[0] - t)
            last_old = max((r[0] for r in results.get(cam, []) if r[1] == node and r[0] <= first[0]),
                           default=None)
            if last_old is not None:
                gaps.append(first[0] - last_old)
        entry = {"kind": kind, "node": node, "cameras": len(cams),
                 "owned_again_ms_max": max(owned, default=None),
                 "owned_again_ms": sorted(owned),
                 "results_resumed_ms_max": max(resumed, default=None),
                 "result_gap_ms_max": max(gaps, default=None)}
        report["events"].append(entry)
        if owned and max(owned) > LIMIT_MS:
            failures.append(f"{kind} {node}: a camera owned again after {max(owned)} ms")
        if kind == "drain" and resumed and max(resumed) > LIMIT_MS:
            failures.append(f"drain {node}: a camera's results resumed {max(resumed)} ms after")
        if not cams:
            failures.append(f"{kind} {node}: the node held no camera then")

    counts = {cam: len(results.get(cam, [])) for cam in cameras}
    report["results_per_camera"] = counts
    for cam, n in counts.items():
        if n == 0:
            failures.append(f"{cam}: no result at all")
    print(json.dumps(report))
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
