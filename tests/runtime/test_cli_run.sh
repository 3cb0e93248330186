#!/bin/sh
# `omma run` on the CPU backend: JSON Lines (one per input) in a file that is
# complete or absent, the other inputs processed past a bad one (exit 1), a
# clear refusal of --backend gpu, exit 2 for bad arguments.
# usage: test_cli_run.sh PATH/TO/omma PATH/TO/astronaut.png
omma=$1
photo=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
[ -x "$omma" ] || fail "no omma binary at '$omma'"
[ -f "$photo" ] || fail "no photo at '$photo'"
dir=$(mktemp -d "${TMPDIR:-/tmp}/omma-cli-run-XXXXXX") || fail "mktemp"
trap 'rm -rf "$dir"' EXIT

# Checks a JSON Lines file: LINES lines, each valid JSON; the line of
# camera CAM has source SRC and FACES faces of 468 landmarks (x, y, z), 6
# keypoints and a 4-number box.
check_jsonl() { # FILE LINES CAM SRC FACES
    [ "$(wc -l <"$1")" -eq "$2" ] || fail "$1: $(wc -l <"$1") lines, expected $2"
    [ -z "$(tail -c 1 "$1")" ] || fail "$1: last line not terminated"
    if command -v python3 >/dev/null 2>&1; then
        python3 - "$@" <<'PY' || fail "$1: JSON check failed"
import json, sys
path, lines, cam, src, nfaces = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
rows = [json.loads(l) for l in open(path)]
assert len(rows) == lines, rows
row = [r for r in rows if r["camera"] == cam][0]
assert row["source"] == src and row["frame"] == 0 and row["timestamp_ms"] == 0, row
assert len(row["faces"]) == nfaces, len(row["faces"])
for f in row["faces"]:
    assert len(f["landmarks"]) == 468 and all(len(p) == 3 for p in f["landmarks"])
    assert len(f["keypoints"]) == 6 and all(len(p) == 2 for p in f["keypoints"])
    assert len(f["box"]) == 4 and f["box"][0] < f["box"][2] and f["box"][1] < f["box"][3]
    assert 0.5 <= f["score"] <= 1 and 0.5 <= f["presence"] <= 1 and f["id"] >= 1
    # The astronaut's face: x 181..270, y 84..176.
    assert 150 < f["box"][0] < 200 and 250 < f["box"][2] < 300, f["box"]
print("json ok:", path, "camera", cam, "faces", nfaces)
PY
    else
        grep -q "\"camera\":$3,\"source\":\"$4\"" "$1" || fail "$1: no line for camera $3"
    fi
}

# One good input into a file.
out=$dir/faces.jsonl
"$omma" run --backend cpu --out "$out" "$photo" 2>"$dir/err"
rc=$?
cat "$dir/err"
[ $rc -eq 0 ] || fail "run exited $rc"
check_jsonl "$out" 1 0 "$photo" 1
grep -q "1 input(s), 0 failed, 1 frame(s), 1 face(s), mean latency" "$dir/err" || fail "no summary"
[ "$(ls "$dir" | grep -c tmp)" -eq 0 ] || fail "temporary file left: $(ls "$dir")"

# A missing input and a text file named .png before a good one: the good
# one's line, a complete file, errors naming the files, exit 1.
out2=$dir/two.jsonl
echo "not pixels" >"$dir/notes.png"
"$omma" run --backend cpu --out "$out2" "$dir/missing.png" "$dir/notes.png" "$photo" 2>"$dir/err"
rc=$?
cat "$dir/err"
[ $rc -eq 1 ] || fail "bad inputs: exit $rc, expected 1"
grep -q "^omma: error: $dir/missing.png: cannot open" "$dir/err" || fail "no error naming the missing file"
grep -q "^omma: error: $dir/notes.png: not a PNG or JPEG" "$dir/err" || fail "no error naming the text file"
grep -q "3 input(s), 2 failed" "$dir/err" || fail "summary does not count the failures"
check_jsonl "$out2" 1 2 "$photo" 1
[ "$(ls "$dir" | grep -c tmp)" -eq 0 ] || fail "temporary file left: $(ls "$dir")"

# No input: the sample photo, to stdout.
"$omma" run --backend cpu >"$dir/stdout.jsonl" 2>"$dir/err"
rc=$?
cat "$dir/err"
[ $rc -eq 0 ] || fail "run on the sample exited $rc"
grep -q "running on the sample" "$dir/err" || fail "sample not announced"
grep -q '"source":"[^"]*testdata/astronaut.png"' "$dir/stdout.jsonl" || fail "sample not in the output"
[ "$(wc -l <"$dir/stdout.jsonl")" -eq 1 ] || fail "stdout: not one line"

# Models missing where OMMA_DATA points: exit 1, saying where it looked.
OMMA_DATA=$dir/nowhere "$omma" run --backend cpu "$photo" >/dev/null 2>"$dir/err"
rc=$?
cat "$dir/err"
[ $rc -eq 1 ] || fail "missing models: exit $rc, expected 1"
grep -q "$dir/nowhere/models" "$dir/err" || fail "the error does not name the models folder"

# --backend gpu (also the default): not built yet; the message names --backend cpu.
for args in "--backend gpu" ""; do
    # shellcheck disable=SC2086
    "$omma" run $args --out "$dir/gpu.jsonl" "$photo" 2>"$dir/err"
    rc=$?
    cat "$dir/err"
    [ $rc -eq 1 ] || [ $rc -eq 3 ] || fail "run $args: exit $rc, expected 1 or 3"
    grep -q -- "use --backend cpu" "$dir/err" || fail "run $args: no hint of --backend cpu"
    [ ! -e "$dir/gpu.jsonl" ] || fail "run $args wrote an output file"
done

# Bad arguments: exit 2.
for args in "--backend tpu $photo" "--max-faces 0 $photo" "--max-faces 65 $photo" \
    "--max-faces x $photo" "--bogus $photo" "--backend cpu --out"; do
    # shellcheck disable=SC2086
    "$omma" run $args >/dev/null 2>&1
    rc=$?
    [ $rc -eq 2 ] || fail "run $args: exit $rc, expected 2"
done
"$omma" run --help | grep -q "usage: omma run" || fail "no usage with --help"
echo "ok test_cli_run"
