#!/bin/sh
# The omma command as a newcomer meets it (CPU backend only): help and
# --help/-h of every command and subcommand on stdout with exit 0, usage
# errors of one line plus "see 'omma COMMAND --help'" (exit 2), the option
# that lacks its value named, "did you mean" for an option and a command,
# no source file:line in user errors (unless OMMA_LOG=debug), --min-score
# changing what is found on the photo, out-of-range values refused, the
# small-face hint on a large picture with a small face, and the sample run
# without a GPU saying first that it uses the CPU backend.
# usage: test_cli.sh OMMA SMALL_FACE TESTDATA_DIR MODELS_DIR
omma=$1
small_face=$2
data=$3
models=$4
photo=$data/astronaut.png
fails=0
fail() {
    echo "FAIL: $*"
    fails=$((fails + 1))
}
[ -x "$omma" ] || { echo "FAIL: no omma at '$omma'"; exit 1; }
[ -f "$photo" ] || { echo "FAIL: no photo at '$photo'"; exit 1; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/omma-cli-XXXXXX") || exit 1
trap 'rm -rf "$dir"' EXIT

# --- Help: every command and subcommand, three ways, stdout, exit 0.
for cmd in "" run stream info models "models inspect" bench "bench context" "bench engine" \
    "bench pipeline" "bench runtime" "bench bus" "bench lsl" bus "bus ls" "bus watch" lsl "lsl ls" \
    "lsl read" help version; do
    for flag in --help -h; do
        # shellcheck disable=SC2086
        "$omma" $cmd $flag >"$dir/out" 2>"$dir/err"
        rc=$?
        [ $rc -eq 0 ] || fail "omma $cmd $flag: exit $rc"
        [ ! -s "$dir/err" ] || fail "omma $cmd $flag: stderr: $(cat "$dir/err")"
        grep -q "^usage: omma" "$dir/out" || fail "omma $cmd $flag: no usage on stdout"
    done
    # shellcheck disable=SC2086
    "$omma" help $cmd >"$dir/help" 2>"$dir/err"
    rc=$?
    [ $rc -eq 0 ] || fail "omma help $cmd: exit $rc"
    cmp -s "$dir/help" "$dir/out" || fail "omma help $cmd differs from omma $cmd -h"
done
"$omma" run --help | grep -q -- "--min-score S" || fail "run --help: no --min-score"
"$omma" run --help | grep -q -- "--min-presence P" || fail "run --help: no --min-presence"
"$omma" stream --help | grep -q -- "--min-score S" || fail "stream --help: no --min-score"
"$omma" help | grep -q "^  version " || fail "omma help does not list version"

# --- Usage errors: exit 2, exactly "omma: error: ..." and the see line.
# usage_error WANT_TEXT SEE_COMMAND ARGS...
usage_error() {
    want=$1 see=$2
    shift 2
    "$omma" "$@" >"$dir/out" 2>"$dir/err"
    rc=$?
    [ $rc -eq 2 ] || fail "omma $*: exit $rc, expected 2"
    [ "$(wc -l <"$dir/err")" -eq 2 ] || fail "omma $*: not two lines: $(cat "$dir/err")"
    [ "$(sed -n 1p "$dir/err")" = "omma: error: $want" ] ||
        fail "omma $*: first line '$(sed -n 1p "$dir/err")', expected 'omma: error: $want'"
    [ "$(sed -n 2p "$dir/err")" = "see 'omma $see--help'" ] ||
        fail "omma $*: second line '$(sed -n 2p "$dir/err")'"
    [ ! -s "$dir/out" ] || fail "omma $*: wrote to stdout"
}
usage_error "unknown option --max-face (did you mean --max-faces?)" "run " run --max-face 3 "$photo"
usage_error "--max-faces needs a value" "run " run "$photo" --max-faces
usage_error "--max-faces 0: expected an integer in 1..64" "run " run --max-faces 0 "$photo"
usage_error "unknown option --bogus" "run " run --bogus "$photo"
usage_error "unknown command 'rn' (did you mean run?)" "" rn
usage_error "unknown command 'strem' (did you mean stream?)" "" strem synthetic
usage_error "unknown command 'frobnicate'" "" frobnicate
usage_error "unknown command 'frobnicate'" "" help frobnicate
usage_error "unknown option --lane (did you mean --lanes?)" "stream " stream --lane 3 synthetic
usage_error "--lanes needs a value" "stream " stream synthetic --lanes
usage_error "no SOURCE given (a video, images, /dev/videoN or synthetic)" "stream " stream
usage_error "unknown option --jsno (did you mean --json?)" "info " info --jsno
usage_error "unexpected argument 'x'" "info " info x
usage_error "unknown benchmark 'contxt' (did you mean context?)" "bench " bench contxt
usage_error "unknown models command 'inspct' (did you mean inspect?)" "models " models inspct
usage_error "no model FILE given" "models inspect " models inspect
usage_error "--model needs a value" "bench engine " bench engine --backend cpu --model
usage_error "--backend and --model are required" "bench engine " bench engine --json
# The GPU benchmarks parse their options only in a build with CUDA (without
# it they say so and exit 3, --help aside).
if "$omma" --version | grep -q " cuda"; then
    usage_error "unknown option --camera (did you mean --cameras?)" "bench runtime " bench runtime --camera 4
    usage_error "--faces 7: not a valid value" "bench pipeline " bench pipeline --faces 7
    usage_error "--device x: expected an integer in 0..1024" "bench context " bench context --device x
else
    "$omma" bench runtime --camera 4 >/dev/null 2>"$dir/err"
    rc=$?
    [ $rc -eq 3 ] && grep -q "built without CUDA" "$dir/err" ||
        fail "bench runtime without CUDA: exit $rc, $(cat "$dir/err")"
fi

# --- Detector options: validated in 0..1, on run and stream.
usage_error "--min-score 2: expected a number in 0..1" "run " run --backend cpu --min-score 2 "$photo"
usage_error "--min-presence -0.1: expected a number in 0..1" "run " run --min-presence -0.1 "$photo"
usage_error "--min-score nan: expected a number in 0..1" "stream " stream --min-score nan synthetic
usage_error "--min-presence 1.5: expected a number in 0..1" "stream " stream --min-presence 1.5 synthetic

# --- User errors carry no source location; OMMA_LOG=debug keeps it.
printf 'this is not a model' >"$dir/bad.tflite"
"$omma" models inspect "$dir/bad.tflite" >/dev/null 2>"$dir/err"
[ $? -eq 1 ] || fail "inspect a corrupt model: exit code"
grep -q "^omma: error: cannot inspect $dir/bad.tflite: " "$dir/err" || fail "inspect: $(cat "$dir/err")"
! grep -q "src/\|\.c:[0-9]" "$dir/err" || fail "a source location in: $(cat "$dir/err")"
OMMA_LOG=debug "$omma" models inspect "$dir/bad.tflite" >/dev/null 2>"$dir/err"
grep -q " at src/[a-z_/]*\.c:[0-9]" "$dir/err" || fail "OMMA_LOG=debug: no source location: $(cat "$dir/err")"
# The corrupt model as omma run's detector (OMMA_DATA with a bad models/).
mkdir -p "$dir/data/models"
cp "$dir/bad.tflite" "$dir/data/models/face_detection_short_range.tflite"
cp "$models/face_landmark.tflite" "$dir/data/models/"
OMMA_DATA=$dir/data "$omma" run --backend cpu "$photo" >/dev/null 2>"$dir/err"
rc=$?
[ $rc -eq 1 ] || fail "run with a corrupt model: exit $rc: $(cat "$dir/err")"
grep -q "^omma: error: cannot load the face models from $dir/data/models" "$dir/err" ||
    fail "run with a corrupt model: $(cat "$dir/err")"
! grep -q "src/\|\.c:[0-9]" "$dir/err" || fail "a source location in: $(cat "$dir/err")"
"$omma" bench engine --backend cpu --model "$dir/bad.tflite" >/dev/null 2>"$dir/err"
[ $? -eq 1 ] || fail "bench engine with a corrupt model: exit code"
! grep -q "src/\|\.c:[0-9]" "$dir/err" || fail "a source location in: $(cat "$dir/err")"

# --- --min-score: the photo's face (score ~0.92) is found at the default,
# not at 0.99.
"$omma" run --backend cpu "$photo" >"$dir/default.jsonl" 2>"$dir/err" || fail "run: $(cat "$dir/err")"
"$omma" run --backend cpu --min-score 0.99 "$photo" >"$dir/strict.jsonl" 2>"$dir/err" ||
    fail "run --min-score 0.99: $(cat "$dir/err")"
grep -q '"faces":\[{"id":1,"score":0\.9' "$dir/default.jsonl" || fail "default: $(head -c 200 "$dir/default.jsonl")"
grep -q '"faces":\[\]' "$dir/strict.jsonl" || fail "--min-score 0.99 still finds: $(head -c 200 "$dir/strict.jsonl")"
! grep -q "model full" "$dir/err" || fail "--min-score 0.99: the small-face hint"
"$omma" run --backend cpu --min-score 0.3 --min-presence 0.3 "$photo" >"$dir/loose.jsonl" 2>/dev/null ||
    fail "run --min-score 0.3 --min-presence 0.3: exit $?"
grep -q '"faces":\[{"id":1,' "$dir/loose.jsonl" || fail "--min-score 0.3: no face"

# --- Small faces: the photo shrunk 2x into a 1024x1024 black canvas: the
# short-range model misses it and omma run says to try --model full, which
# finds it. No hint where a face was found.
"$small_face" "$photo" "$dir/small.png" 2 1024 || fail "small_face"
"$omma" run --backend cpu "$dir/small.png" >"$dir/small.jsonl" 2>"$dir/err" || fail "run small: $(cat "$dir/err")"
grep -q '"faces":\[\]' "$dir/small.jsonl" || fail "the short-range model found the small face: $(head -c 200 "$dir/small.jsonl")"
grep -q "^omma run: no face found in $dir/small.png; faces far from the camera may need --model full$" "$dir/err" ||
    fail "no small-face hint: $(cat "$dir/err")"
"$omma" run --backend cpu --model full "$dir/small.png" >"$dir/full.jsonl" 2>"$dir/err" || fail "run --model full"
grep -q '"faces":\[{"id":1,' "$dir/full.jsonl" || fail "--model full: no face: $(head -c 200 "$dir/full.jsonl")"
! grep -q "model full" "$dir/err" || fail "--model full: the hint"
"$omma" run --backend cpu "$photo" >/dev/null 2>"$dir/err"
! grep -q "model full" "$dir/err" || fail "a hint where the face was found"

# --- The sample without --backend on a machine without a GPU: the first
# line says so, as information; then it runs on the CPU.
"$omma" info >/dev/null 2>&1
if [ $? -eq 3 ]; then
    TMPDIR=$dir "$omma" run --max-frames 1 --out "$dir/sample.jsonl" 2>"$dir/err"
    rc=$?
    [ $rc -eq 0 ] || fail "sample without a GPU: exit $rc: $(cat "$dir/err")"
    [ "$(sed -n 1p "$dir/err")" = "omma run: no NVIDIA GPU or driver found; using the CPU backend (slower; --backend gpu insists on a GPU)" ] ||
        fail "sample without a GPU: first line: $(sed -n 1p "$dir/err")"
    ! grep -q "error" "$dir/err" || fail "sample without a GPU: an error: $(cat "$dir/err")"
    grep -q "(cpu backend," "$dir/err" || fail "sample: not on the CPU backend"
    "$omma" run --backend gpu --max-frames 1 >/dev/null 2>&1
    [ $? -eq 3 ] || fail "sample with --backend gpu and no GPU: not exit 3"
else
    echo "test_cli: a GPU is present; the sample's CPU fallback is not checked here"
fi

[ $fails -eq 0 ] && echo "ok test_cli"
exit $fails
