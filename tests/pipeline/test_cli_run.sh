#!/bin/sh
# `omma run` on the CPU backend: JSON Lines and CSV in files that are
# complete or absent, two inputs as two cameras, annotated PNGs that decode,
# a video (when this build reads video and testdata has astronaut_pan.mp4)
# with one id across frames and its annotated video, bad inputs (missing,
# empty, truncated, not an image, corrupt video) reported by name while the
# good inputs go on (exit 1), the sample run, a progress bar on a terminal,
# --backend gpu refused with exit 3 naming --backend cpu where there is no
# GPU, exit 2 for bad arguments. A few frames each (the CPU pipeline under
# ASan takes ~0.5 s a frame).
# usage: test_cli_run.sh PATH/TO/omma PATH/TO/astronaut.png
omma=$1
photo=$2
video=$(dirname "$photo")/astronaut_pan.mp4
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -x "$omma" ] || fail "no omma binary at '$omma'"
[ -f "$photo" ] || fail "no photo at '$photo'"
dir=$(mktemp -d "${TMPDIR:-/tmp}/omma-cli-run-XXXXXX") || fail "mktemp"
trap 'rm -rf "$dir"' EXIT
have_python=0
command -v python3 >/dev/null 2>&1 && have_python=1

# Runs omma run with the arguments; $rc is its exit code, $dir/err its stderr
# (also shown).
run() {
    "$omma" run "$@" 2>"$dir/err"
    rc=$?
    cat "$dir/err" >&2
}
no_tmp_left() {
    [ "$(find "$dir" -name '*.tmp.*' | wc -l)" -eq 0 ] || fail "temporary file left: $(find "$dir" -name '*.tmp.*')"
}

# check_jsonl FILE LINES [CAM:FRAME:FACES:SOURCE]... : FILE has LINES lines,
# each a complete JSON object, and for each spec a line of that camera and
# frame with that source and that many faces (468 landmarks x, y, z, 6
# keypoints, a 4-number box, score and presence >= 0.5; faces on the photo
# on its known box x 181..270).
check_jsonl() {
    file=$1
    lines=$2
    shift 2
    [ "$(wc -l <"$file")" -eq "$lines" ] || fail "$file: $(wc -l <"$file") lines, expected $lines"
    [ "$lines" -eq 0 ] || [ -z "$(tail -c 1 "$file")" ] || fail "$file: last line not terminated"
    if [ $have_python -eq 1 ]; then
        python3 - "$file" "$photo" "$@" <<'PY' || fail "$file: JSON check failed"
import json, sys
path, photo, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
rows = [json.loads(l) for l in open(path)]
for spec in specs:
    cam, frame, nfaces, src = spec.split(":", 3)
    cam, frame, nfaces = int(cam), int(frame), int(nfaces)
    row = [r for r in rows if r["camera"] == cam and r["frame"] == frame]
    assert len(row) == 1, (spec, row)
    row = row[0]
    assert row["source"] == src, (row["source"], src)
    assert len(row["faces"]) == nfaces, (spec, len(row["faces"]))
    for f in row["faces"]:
        assert len(f["landmarks"]) == 468 and all(len(p) == 3 for p in f["landmarks"])
        assert len(f["keypoints"]) == 6 and all(len(p) == 2 for p in f["keypoints"])
        assert len(f["box"]) == 4 and f["box"][0] < f["box"][2] and f["box"][1] < f["box"][3]
        assert 0.5 <= f["score"] <= 1 and 0.5 <= f["presence"] <= 1 and f["id"] >= 1
        if src == photo:
            assert 150 < f["box"][0] < 200 and 250 < f["box"][2] < 300, f["box"]
            assert row["timestamp_ms"] == 0, row["timestamp_ms"]
print("json ok:", path, len(rows), "lines", specs)
PY
    else
        for spec in "$@"; do
            cam=${spec%%:*}
            rest=${spec#*:}
            frame=${rest%%:*}
            src=${rest#*:*:}
            grep -q "^{\"camera\":$cam,\"source\":\"$src\",\"frame\":$frame," "$file" ||
                fail "$file: no line for camera $cam frame $frame"
        done
    fi
}

# A PNG file: non-empty, PNG signature.
check_png() {
    [ -s "$1" ] || fail "$1: missing or empty"
    [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = "89504e470d0a1a0a" ] || fail "$1: no PNG signature"
}

# --- One good input into a file; the summary.
out=$dir/faces.jsonl
run --backend cpu --out "$out" "$photo"
[ $rc -eq 0 ] || fail "run exited $rc"
check_jsonl "$out" 1 "0:0:1:$photo"
grep -q "1 input(s), 0 failed, 1 frame(s), 1 face(s), [0-9.]* frames/s, mean latency [0-9.]* ms per batch (1 batch(es) of up to 1 frames), host->device 0 B/frame, device->host 0 B/frame (cpu backend, [0-9]* threads*), written to $out" "$dir/err" ||
    fail "no summary line"
no_tmp_left

# --- Two inputs = two cameras, one batch; annotated PNGs in a folder that
# does not exist yet; the annotated picture decodes (omma reads it back and
# finds the face in it).
out=$dir/two.jsonl
run --backend cpu --out "$out" --annotate "$dir/ann/deeper" "$photo" "$photo"
[ $rc -eq 0 ] || fail "two inputs: exit $rc"
check_jsonl "$out" 2 "0:0:1:$photo" "1:0:1:$photo"
grep -q "2 input(s), 0 failed, 2 frame(s), 2 face(s), .*(1 batch(es) of up to 2 frames)" "$dir/err" ||
    fail "two inputs: not one batch of two"
grep -q "annotated output in $dir/ann/deeper (2 PNG(s))" "$dir/err" || fail "no annotated output line"
for c in 0 1; do check_png "$dir/ann/deeper/cam${c}_000000.png"; done
[ "$(ls "$dir/ann/deeper" | wc -l)" -eq 2 ] || fail "annotate: $(ls "$dir/ann/deeper")"
run --backend cpu --out "$dir/back.jsonl" "$dir/ann/deeper/cam1_000000.png"
[ $rc -eq 0 ] || fail "the annotated PNG does not decode (exit $rc)"
check_jsonl "$dir/back.jsonl" 1 "0:0:1:$dir/ann/deeper/cam1_000000.png"

# --max-batch 1: the two cameras in two batches.
run --backend cpu --max-batch 1 --out "$dir/mb.jsonl" "$photo" "$photo"
[ $rc -eq 0 ] || fail "--max-batch 1: exit $rc"
grep -q "(2 batch(es) of up to 1 frames)" "$dir/err" || fail "--max-batch 1: not two batches"
check_jsonl "$dir/mb.jsonl" 2 "0:0:1:$photo" "1:0:1:$photo"

# Options after the inputs count as options (only "--" ends them).
run --backend cpu "$photo" --out "$dir/after.jsonl" --max-faces 1
[ $rc -eq 0 ] || fail "options after the input: exit $rc"
check_jsonl "$dir/after.jsonl" 1 "0:0:1:$photo"

# --- CSV: a header, one row per face, a row with empty face fields for a
# frame without faces (a grey PNG made here), 1427 columns everywhere.
if [ $have_python -eq 1 ]; then
    python3 - "$dir/grey.png" <<'PY'
import struct, sys, zlib
w, h = 64, 48
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
raw = b"".join(b"\0" + bytes([128] * (3 * w)) for _ in range(h))
open(sys.argv[1], "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                               + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
PY
    run --backend cpu --csv --out "$dir/faces.csv" "$photo" "$dir/grey.png"
    [ $rc -eq 0 ] || fail "--csv: exit $rc"
    [ "$(wc -l <"$dir/faces.csv")" -eq 3 ] || fail "--csv: $(wc -l <"$dir/faces.csv") lines, expected 3"
    python3 - "$dir/faces.csv" "$photo" "$dir/grey.png" <<'PY' || fail "CSV check failed"
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="")))
head = rows[0]
assert head[:11] == "camera,source,frame,timestamp_ms,face_id,score,presence,x0,y0,x1,y1".split(","), head[:11]
assert head[11] == "kp0_x" and head[-1] == "lm467_z" and len(head) == 11 + 12 + 468 * 3, len(head)
assert all(len(r) == len(head) for r in rows), [len(r) for r in rows]
face = [r for r in rows[1:] if r[0] == "0"][0]
assert face[1] == sys.argv[2] and face[2] == "0" and face[4] == "1", face[:5]
x0, x1 = float(face[7]), float(face[9])
assert 150 < x0 < 200 and 250 < x1 < 300, (x0, x1)
assert all(v != "" for v in face), "empty field in a face row"
none = [r for r in rows[1:] if r[0] == "1"][0]
assert none[1] == sys.argv[3] and none[2] == "0" and all(v == "" for v in none[4:]), none[:8]
print("csv ok")
PY
    run --backend cpu --out "$dir/grey.jsonl" "$dir/grey.png"
    check_jsonl "$dir/grey.jsonl" 1 "0:0:0:$dir/grey.png"
else
    run --backend cpu --csv --out "$dir/faces.csv" "$photo"
    [ $rc -eq 0 ] || fail "--csv: exit $rc"
    [ "$(wc -l <"$dir/faces.csv")" -eq 2 ] || fail "--csv: not a header and one row"
    head -n 1 "$dir/faces.csv" | grep -q "^camera,source,frame,timestamp_ms,face_id,score,presence,x0,y0,x1,y1,kp0_x," ||
        fail "--csv: header"
fi
no_tmp_left

# --- Bad inputs around a good one: each named with its problem, the good
# one's line in a complete file, exit 1.
out=$dir/bad.jsonl
echo "not pixels" >"$dir/notes.png"
: >"$dir/empty.png"
head -c 3000 "$photo" >"$dir/cut.png"
run --backend cpu --out "$out" "$dir/missing.png" "$dir/notes.png" "$dir/empty.png" "$dir/cut.png" "$photo"
[ $rc -eq 1 ] || fail "bad inputs: exit $rc, expected 1"
grep -q "^omma: error: $dir/missing.png: cannot open" "$dir/err" || fail "no error naming the missing file"
grep -q "^omma: error: $dir/notes.png: not a PNG or JPEG" "$dir/err" || fail "no error naming the text file"
grep -q "^omma: error: $dir/empty.png: empty file (0 bytes)" "$dir/err" || fail "no error naming the empty file"
grep -q "^omma: error: $dir/cut.png: PNG: truncated" "$dir/err" || fail "no error naming the truncated PNG"
grep -q "5 input(s), 4 failed, 1 frame(s)" "$dir/err" || fail "summary does not count the failures"
check_jsonl "$out" 1 "4:0:1:$photo"
no_tmp_left

# An output that cannot be created: exit 1, nothing processed.
run --backend cpu --out "$dir/no/such/dir/x.jsonl" "$photo"
[ $rc -eq 1 ] || fail "unwritable --out: exit $rc"
grep -q "$dir/no/such/dir/x.jsonl: cannot create" "$dir/err" || fail "unwritable --out: no error"

# --- Video: 3 frames of the pan (the face moves 4 px left a frame) with
# the photo as camera 1; one id throughout; an annotated video of camera 0.
if [ -f "$video" ] && ! "$omma" run --backend cpu --max-frames 1 "$video" 2>&1 >/dev/null | grep -q "reads no video"; then
    out=$dir/video.jsonl
    run --backend cpu --max-frames 3 --out "$out" --annotate-video "$dir/ann.mp4" "$video" "$photo"
    [ $rc -eq 0 ] || fail "video: exit $rc"
    check_jsonl "$out" 4 "0:0:1:$video" "0:1:1:$video" "0:2:1:$video" "1:0:1:$photo"
    grep -q "annotated video $dir/ann.mp4 (3 frame(s))" "$dir/err" || fail "video: no annotated video line"
    [ -s "$dir/ann.mp4" ] || fail "video: no annotated video"
    if [ $have_python -eq 1 ]; then
        python3 - "$out" <<'PY' || fail "video: faces do not follow the pan"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if json.loads(l)["camera"] == 0]
rows.sort(key=lambda r: r["frame"])
ids = {r["faces"][0]["id"] for r in rows}
assert len(ids) == 1, ids
ts = [r["timestamp_ms"] for r in rows]
assert ts[0] == 0 and all(abs(b - a - 1000 / 15) < 1 for a, b in zip(ts, ts[1:])), ts
x = [r["faces"][0]["box"][0] for r in rows]
assert all(-6 < b - a < -2 for a, b in zip(x, x[1:])), x
print("video ok", x)
PY
    fi
    if command -v ffprobe >/dev/null 2>&1; then
        n=$(ffprobe -v error -count_frames -select_streams v:0 -show_entries stream=nb_read_frames -of csv=p=0 "$dir/ann.mp4")
        [ "$n" = 3 ] || fail "annotated video: $n frames, expected 3"
    fi
    no_tmp_left

    # A truncated copy (no frame decodes: named, the camera stops, exit 1), a
    # damaged copy (concealed: its 12 frames; tests/io/test_video_damaged.c
    # checks the line that counts the damage) and the photo's line there.
    head -c 20000 "$video" >"$dir/cut.mp4"
    python3 -c 'import sys; d = bytearray(open(sys.argv[1], "rb").read()); d[len(d) // 3:len(d) // 3 + 4000] = bytes(4000); open(sys.argv[2], "wb").write(d)' \
        "$video" "$dir/damaged.mp4" 2>/dev/null || head -c 20000 "$video" >"$dir/damaged.mp4"
    run --backend cpu --max-frames 12 --out "$dir/badvid.jsonl" "$dir/cut.mp4" "$dir/damaged.mp4" "$photo"
    [ $rc -eq 1 ] || fail "corrupt videos: exit $rc, expected 1"
    grep -q "^omma: error: $dir/cut.mp4: .*the camera stops" "$dir/err" || fail "no error naming the truncated video"
    ! grep -q "^omma: error: $dir/damaged.mp4" "$dir/err" || fail "the damaged video failed"
    grep -q "3 input(s), 1 failed, 13 frame(s)" "$dir/err" || fail "corrupt videos: summary"
    grep -q "\"camera\":2,\"source\":\"$photo\",\"frame\":0," "$dir/badvid.jsonl" || fail "corrupt videos: the photo's line is missing"
    python3 -c 'import json, sys; [json.loads(l) for l in open(sys.argv[1])]' "$dir/badvid.jsonl" 2>/dev/null ||
        [ $have_python -eq 0 ] || fail "corrupt videos: output not whole JSON lines"
else
    echo "test_cli_run: no video checks (no $video or no video in this build)"
fi

# --- No input: the sample, annotated into $TMPDIR/omma-run-sample, to stdout.
TMPDIR=$dir "$omma" run --backend cpu --max-frames 2 >"$dir/stdout.jsonl" 2>"$dir/err"
rc=$?
cat "$dir/err" >&2
[ $rc -eq 0 ] || fail "run on the sample exited $rc"
grep -q "running on the sample" "$dir/err" || fail "sample not announced"
grep -q "omma run: sample: [1-9][0-9]* face(s) found in [1-9][0-9]* frame(s); annotated output in $dir/omma-run-sample" "$dir/err" ||
    fail "sample: no 'faces found ... annotated output in' line"
grep -q '"source":"[^"]*testdata/astronaut.png"' "$dir/stdout.jsonl" || fail "sample not in the output"
check_png "$dir/omma-run-sample/cam0_000000.png"
if [ -f "$video" ] && grep -q "astronaut_pan.mp4 (camera 1)" "$dir/err"; then
    [ "$(wc -l <"$dir/stdout.jsonl")" -eq 3 ] || fail "sample: not 3 lines (photo + 2 video frames)"
    check_png "$dir/omma-run-sample/cam1_000001.png"
else
    [ "$(wc -l <"$dir/stdout.jsonl")" -eq 1 ] || fail "sample: not one line"
fi

# --- A progress bar on a terminal (util-linux script gives one), none in a pipe.
if command -v script >/dev/null 2>&1; then
    script -qc "'$omma' run --backend cpu --out '$dir/tty.jsonl' '$photo'" /dev/null >"$dir/tty.txt" 2>&1
    grep -q "1/1 frames .* frames/s  ETA" "$dir/tty.txt" || fail "no progress bar on a terminal: $(cat "$dir/tty.txt")"
fi
run --backend cpu --out "$dir/pipe.jsonl" "$photo"
! grep -q "ETA" "$dir/err" || fail "progress bar in a pipe"

# --- Models missing where OMMA_DATA points: exit 1, saying where it looked.
OMMA_DATA=$dir/nowhere "$omma" run --backend cpu "$photo" >/dev/null 2>"$dir/err"
rc=$?
cat "$dir/err" >&2
[ $rc -eq 1 ] || fail "missing models: exit $rc, expected 1"
grep -q "$dir/nowhere/models" "$dir/err" || fail "the error does not name the models folder"

# --- --backend gpu (also the default): never a CPU fallback. Without a GPU
# (omma info exit 3): exit 3, the message names --backend cpu, no output.
"$omma" info >/dev/null 2>&1
if [ $? -eq 3 ]; then
    for args in "--backend gpu" ""; do
        # shellcheck disable=SC2086
        run $args --out "$dir/gpu.jsonl" "$photo"
        [ $rc -eq 3 ] || fail "run $args without a GPU: exit $rc, expected 3"
        grep -q -- "use --backend cpu" "$dir/err" || fail "run $args: no hint of --backend cpu"
        [ ! -e "$dir/gpu.jsonl" ] || fail "run $args wrote an output file"
    done
else
    echo "test_cli_run: a GPU is present; the no-GPU refusal is not checked here"
fi

# --- Bad arguments: exit 2.
for args in "--backend tpu $photo" "--max-faces 0 $photo" "--max-faces 65 $photo" \
    "--max-faces x $photo" "--bogus $photo" "--backend cpu --out" "--max-batch 0 $photo" \
    "--max-batch 257 $photo" "--detect-every -1 $photo" "--precision fp8 $photo" \
    "--model mid $photo" "--max-frames 0 $photo" "--backend cpu --annotate" \
    "--backend cpu --pose tiny $photo" "--backend cpu --pose lite --csv $photo"; do
    # shellcheck disable=SC2086
    "$omma" run $args >/dev/null 2>&1
    rc=$?
    [ $rc -eq 2 ] || fail "run $args: exit $rc, expected 2"
done
"$omma" run --help | grep -q "usage: omma run" || fail "no usage with --help"
echo "ok test_cli_run"
