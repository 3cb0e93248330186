#!/bin/sh
# omma run --decode gpu on MJPEG (nvJPEG on omma's context) against
# --decode cpu on the clips of scripts/make-decode-clips.sh (4:2:0 and
# 4:2:2 AVI, 4:4:4 Matroska): the same records and faces; every number
# within 2 (pixels for landmarks; measured on the H100: 0.35 at 4:2:0,
# 1.53 at 4:2:2, where the two paths' inputs differ most: nvJPEG's IDCT
# rounds differently from libjpeg's, samples within +-1, and the CPU path
# converts 4:2:2 to RGB with swscale while the GPU path averages the
# chroma rows into NV12; the fp16 pipeline then moves points by up to a
# pixel or two on 640x480 frames). The log says the
# video went to nvJPEG. Without nvJPEG (OMMA_NVJPEG names a missing file)
# --decode gpu is an error naming the file and the library, and --decode
# auto decodes on the CPU and says why. Skipped (77) without a GPU or the
# clips or nvJPEG.
# usage: test_cli_decode_jpeg.sh PATH/TO/omma TESTDATA
omma=$1
clips=$2/decode
fail() { echo "FAIL: $*" >&2; exit 1; }
"$omma" info >/dev/null 2>&1 || { echo "SKIP: no GPU"; exit 77; }
[ -f "$clips/pan_mjpeg422.avi" ] || { echo "SKIP: no $clips/pan_mjpeg422.avi (scripts/make-decode-clips.sh)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: no python3"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
for clip in pan_mjpeg.avi pan_mjpeg422.avi pan_mjpeg444.mkv; do
    for mode in gpu cpu; do
        if ! "$omma" run --decode $mode --out "$work/$mode.jsonl" "$clips/$clip" 2>"$work/$mode.log"; then
            if [ $mode = gpu ] && grep -q "libnvjpeg" "$work/$mode.log"; then
                cat "$work/$mode.log"
                echo "SKIP: no nvJPEG on this machine"
                exit 77
            fi
            cat "$work/$mode.log"
            fail "$clip --decode $mode"
        fi
    done
    grep -q "decoding: gpu (nvjpeg" "$work/gpu.log" ||
        { cat "$work/gpu.log"; fail "$clip: the log does not say nvJPEG decodes it"; }
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
assert faces >= 24 and worst <= 2.0
PY
done
clip=$clips/pan_mjpeg422.avi
if OMMA_NVJPEG=/nonexistent/libnvjpeg.so.13 "$omma" run --decode gpu --out "$work/x.jsonl" "$clip" 2>"$work/err.log"; then
    fail "--decode gpu without nvJPEG succeeded"
fi
grep -q "pan_mjpeg422.avi" "$work/err.log" && grep -q "/nonexistent/libnvjpeg.so.13" "$work/err.log" ||
    { cat "$work/err.log"; fail "the refusal without nvJPEG does not say which file and why"; }
OMMA_NVJPEG=/nonexistent/libnvjpeg.so.13 "$omma" run --decode auto --out "$work/x.jsonl" "$clip" 2>"$work/err.log" ||
    { cat "$work/err.log"; fail "--decode auto without nvJPEG"; }
grep -q "decoding: cpu (mjpeg; not on the GPU: .*libnvjpeg" "$work/err.log" ||
    { cat "$work/err.log"; fail "--decode auto without nvJPEG does not say it decodes on the CPU and why"; }
[ "$(wc -l <"$work/x.jsonl")" -eq 24 ] || fail "--decode auto without nvJPEG: not 24 records"
echo "ok"
