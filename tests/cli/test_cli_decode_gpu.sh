#!/bin/sh
# omma run --decode gpu (NVDEC on omma's context) against --decode cpu on
# the clips of scripts/make-decode-clips.sh: the same records, faces and
# landmarks (2-decimal output: equal within 0.05 px), annotated pictures
# drawn from the GPU-decoded frames; 10-bit HEVC is refused with --decode
# gpu (naming the file and why) and read on the CPU with --decode auto;
# omma bench decode --cpu-breakdown reports every call kind.
# Skipped (77) without a GPU or the clips.
# usage: test_cli_decode_gpu.sh PATH/TO/omma TESTDATA
omma=$1
clips=$2/decode
fail() { echo "FAIL: $*" >&2; exit 1; }
"$omma" info >/dev/null 2>&1 || { echo "SKIP: no GPU"; exit 77; }
[ -f "$clips/pan_h264.mp4" ] || { echo "SKIP: no $clips (scripts/make-decode-clips.sh)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
for clip in pan_h264.mp4 pan_hevc.mp4; do
    for mode in gpu cpu; do
        "$omma" run --decode $mode --out "$work/$mode.jsonl" --annotate "$work/$mode" \
            "$clips/$clip" 2>"$work/$mode.log" || { cat "$work/$mode.log"; fail "$clip --decode $mode"; }
    done
    python3 - "$work/gpu.jsonl" "$work/cpu.jsonl" <<'PY' || fail "$clip: GPU and CPU decoding differ"
import json, sys
g = [json.loads(l) for l in open(sys.argv[1])]
c = [json.loads(l) for l in open(sys.argv[2])]
assert len(g) == len(c) == 24, (len(g), len(c))
worst, faces = 0.0, 0
def walk(a, b, path):
    global worst
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            if k not in ("latency_ms",):
                walk(a[k], b[k], path + "." + k)
    elif isinstance(a, list):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            walk(x, y, "%s[%d]" % (path, i))
    elif isinstance(a, (int, float)) and not isinstance(a, bool):
        worst = max(worst, abs(a - b))
    else:
        assert a == b, (path, a, b)
for x, y in zip(g, c):
    faces += len(x["faces"])
    walk(x["faces"], y["faces"], "frame %d" % x["frame"])
print("%d faces, largest difference %.3f" % (faces, worst))
assert faces >= 24 and worst <= 0.05
PY
    n_gpu=$(ls "$work/gpu" | wc -l)
    [ "$n_gpu" -ge 24 ] && [ "$n_gpu" = "$(ls "$work/cpu" | wc -l)" ] ||
        fail "$clip: $n_gpu annotated pictures from the GPU-decoded frames"
    rm -rf "$work/gpu" "$work/cpu"
done
if "$omma" run --decode gpu --out "$work/x.jsonl" "$clips/pan_hevc10.mkv" 2>"$work/err.log"; then
    fail "10-bit HEVC decoded with --decode gpu"
fi
grep -q "pan_hevc10.mkv" "$work/err.log" && grep -q "not 8-bit 4:2:0" "$work/err.log" ||
    { cat "$work/err.log"; fail "the 10-bit refusal does not say which file and why"; }
"$omma" run --decode auto --out "$work/x.jsonl" "$clips/pan_hevc10.mkv" 2>"$work/err.log" ||
    { cat "$work/err.log"; fail "--decode auto on 10-bit HEVC"; }
[ "$(wc -l <"$work/x.jsonl")" -eq 24 ] || fail "--decode auto on 10-bit HEVC: not 24 records"
# The camera threads' CPU breakdown: every part reported with its calls per
# frame; a picture submitted, queried and mapped for each frame; one
# demuxed packet a frame (the file has no other stream).
"$omma" bench decode --input "$clips/pan_h264.mp4" --decode gpu --streams 2 --warmup 1 \
    --duration 2 --cpu-breakdown --json >"$work/bench.jsonl" 2>"$work/bench.log" ||
    { cat "$work/bench.log"; fail "omma bench decode --cpu-breakdown"; }
python3 - "$work/bench.jsonl" <<'PY' || { cat "$work/bench.log"; fail "the CPU breakdown"; }
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
b = [l for l in lines if l.get("bench") == "decode-cpu"]
assert len(b) == 1, lines
b = b[0]
print(json.dumps(b))
parts = ("demux", "annexb", "parse", "submit", "status", "decode_wait", "map", "unmap", "copy",
         "pace", "handoff", "thread")
for p in parts:
    assert b[p]["us"] >= 0 and b[p]["calls"] >= 0, p
# A frame's picture is mapped, copied and handed off once; packets and
# submissions run ahead of or behind the frames in a 2 s window of a looped
# clip with B-frames (0.87-0.94 a frame on the H200).
for p in ("map", "copy", "handoff", "thread"):
    assert 0.9 <= b[p]["calls"] <= 1.1, (p, b[p])
for p in ("demux", "annexb", "submit"):
    assert 0.75 <= b[p]["calls"] <= 1.25, (p, b[p])
assert b["status"]["calls"] >= 0.9 and b["parse"]["calls"] >= 0.9, b
assert b["thread"]["us"] > 0 and b["clock_read_ns"] > 0, b
PY
echo "ok"
