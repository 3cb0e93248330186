#!/bin/sh
# The 478-point attention mesh end to end on the GPU backend:
# - `omma run --backend gpu --face-mesh 478 --head-pose` on the photo and 6
#   frames of the panning video against `--backend cpu`: the same records
#   and face ids, 478 landmarks each, every point within 1.5 px at
#   FaceMesh's 192-px crop scale (the fp16 tolerance of
#   test_face_mesh_478_gpu; + 0.01 for the 2-decimal output), yaw, pitch
#   and roll within 2 degrees;
# - with --csv: the 1466 documented columns, the irises and head pose
#   filled;
# - `omma stream --backend gpu --face-mesh 478 --head-pose` on the video:
#   478 landmarks and a head pose in every face of its 4 records.
# Skipped (77) without a GPU or in a build without FFmpeg (the video).
# usage: test_cli_mesh_gpu.sh PATH/TO/omma TESTDATA
omma=$1 data=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
"$omma" info >/dev/null 2>&1 || { echo "SKIP: no GPU"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
"$omma" version 2>/dev/null | grep -q " ffmpeg" ||
    { echo "SKIP: built without FFmpeg (the test's video)"; exit 77; }
photo=$data/astronaut.png video=$data/astronaut_pan.mp4
[ -f "$photo" ] && [ -f "$video" ] || fail "no $photo or $video: run scripts/fetch-testdata.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
# (--decode cpu: both backends read the same decoded frames)
for b in gpu cpu; do
    "$omma" run --backend $b --decode cpu --face-mesh 478 --head-pose --max-frames 6 --out "$work/$b.jsonl" \
        "$photo" "$video" 2>"$work/$b.log" || { cat "$work/$b.log"; fail "omma run --backend $b"; }
done
"$omma" run --backend gpu --face-mesh 478 --head-pose --csv --out "$work/gpu.csv" "$photo" \
    2>"$work/csv.log" || { cat "$work/csv.log"; fail "omma run --backend gpu --csv"; }
"$omma" stream --backend gpu --face-mesh 478 --head-pose --max-frames 4 --realtime off --status off \
    --out "$work/stream.jsonl" "$video" 2>"$work/stream.log" ||
    { cat "$work/stream.log"; fail "omma stream --backend gpu --face-mesh 478 --head-pose"; }
python3 - "$work/gpu.jsonl" "$work/cpu.jsonl" "$work/gpu.csv" "$work/stream.jsonl" <<'PY' ||
import csv, json, sys
g = [json.loads(l) for l in open(sys.argv[1])]
c = [json.loads(l) for l in open(sys.argv[2])]
assert len(g) == len(c) == 7, (len(g), len(c))
worst_px, worst_deg, faces = 0.0, 0.0, 0
for rg, rc in zip(g, c):
    assert (rg["camera"], rg["frame"]) == (rc["camera"], rc["frame"])
    assert len(rg["faces"]) == len(rc["faces"]) == 1, (rg["camera"], rg["frame"])
    for fg, fc in zip(rg["faces"], rc["faces"]):
        assert fg["id"] == fc["id"]
        assert len(fg["landmarks"]) == len(fc["landmarks"]) == 478
        box = fc["box"]
        scale = 1.5 * max(box[2] - box[0], box[3] - box[1]) / 192
        for pg, pc in zip(fg["landmarks"], fc["landmarks"]):
            for d in range(2):
                err = abs(pg[d] - pc[d])
                assert err <= 1.5 * scale + 0.01, ("frame", rg["frame"], pg, pc)
                worst_px = max(worst_px, err / scale)
        for k in ("yaw", "pitch", "roll"):
            err = abs(fg["head_pose"][k] - fc["head_pose"][k])
            assert err <= 2.0, (k, fg["head_pose"][k], fc["head_pose"][k])
            worst_deg = max(worst_deg, err)
        faces += 1
rows = list(csv.reader(open(sys.argv[3], newline="")))
assert len(rows) == 2 and len(rows[0]) == len(rows[1]) == 1466, [len(r) for r in rows]
row = dict(zip(rows[0], rows[1]))
assert row["lm468_x"] and row["lm477_y"] and row["yaw"] and row["hp15"] == "1.0000", row["hp15"]
s = [json.loads(l) for l in open(sys.argv[4])]
assert len(s) == 4 and all(len(f["landmarks"]) == 478 for r in s for f in r["faces"])
assert all(abs(f["head_pose"]["yaw"]) < 90 for r in s for f in r["faces"])
assert sum(len(r["faces"]) for r in s) == 4
print("GPU vs CPU: %d faces, points within %.3f px at 192, head pose within %.2f degrees; CSV "
      "of 1466 columns; stream: 4 records of 478 landmarks and a head pose" % (faces, worst_px,
                                                                         worst_deg))
PY
    fail "the GPU attention mesh differs"
echo ok
