#!/bin/sh
# The model commands of the omma CLI: `omma models inspect` (text and JSON,
# bad files, usage) and `omma bench engine` (CPU run, JSON line, the GPU
# backend refused clearly). Usage: test_cli_models.sh OMMA MODELS_DIR
set -u
omma=$1
models=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$omma" models inspect "$models/face_detection_short_range.tflite" >"$work/out" 2>"$work/err" ||
    fail "inspect exited $?: $(cat "$work/err")"
grep -q "regressors  *\[1, 896, 16\]" "$work/out" || fail "inspect: no regressors output: $(cat "$work/out")"
grep -q "DEQUANTIZE  *74" "$work/out" || fail "inspect: DEQUANTIZE count"
grep -q "parameters: 101390" "$work/out" || fail "inspect: parameter count"
grep -q "nodes: 164 as read, 27 after load-time rewrites" "$work/out" || fail "inspect: node counts"
grep -q "activations fused 17, depthwise+pointwise blocks fused 16" "$work/out" ||
    fail "inspect: rewrite counts: $(cat "$work/out")"
grep -q "activation arena: 1048576 bytes at batch 1, + 1048576 bytes per extra batch item" "$work/out" ||
    fail "inspect: arena: $(cat "$work/out")"

"$omma" models inspect "$models/face_landmark.tflite" --json >"$work/json" || fail "inspect --json exited $?"
[ "$(wc -l <"$work/json")" -eq 1 ] || fail "inspect --json: not one line"
grep -q '"outputs":\[{"name":"conv2d_21","shape":\[1,1,1,1404\]},{"name":"conv2d_31","shape":\[1,1,1,1\]}\]' "$work/json" ||
    fail "inspect --json outputs: $(cat "$work/json")"
grep -q '"nodes_loaded":210,"nodes_rewritten":25' "$work/json" || fail "inspect --json nodes"
grep -q '"activation_fused":23,"blocks_fused":20}' "$work/json" || fail "inspect --json rewrites: $(cat "$work/json")"
grep -q '"PRELU":23' "$work/json" || fail "inspect --json op counts"

# --outputs: the node count, parameters and arena with only those outputs
# (BlazePose full without its segmentation mask: the mask's 16 nodes go).
"$omma" models inspect "$models/pose_landmark_full.tflite" --outputs Identity,Identity_1,Identity_4,Identity_3 \
    >"$work/out" 2>"$work/err" || fail "inspect --outputs exited $?: $(cat "$work/err")"
grep -q "nodes: 332 as read, 111 after load-time rewrites" "$work/out" || fail "inspect --outputs: node counts"
grep -q "pruned to outputs Identity, Identity_1, Identity_4, Identity_3: 95 nodes (16 removed), 3167640 parameters" \
    "$work/out" || fail "inspect --outputs: pruned counts: $(cat "$work/out")"
grep -q "activation arena: 6029312 bytes at batch 1" "$work/out" || fail "inspect --outputs: arena: $(cat "$work/out")"
"$omma" models inspect "$models/face_landmark.tflite" --outputs conv2d_31 --json >"$work/json" ||
    fail "inspect --outputs --json exited $?"
grep -q '"outputs_kept":\["conv2d_31"\],"nodes_pruned":6,"nodes_kept":19,' "$work/json" ||
    fail "inspect --outputs --json: $(cat "$work/json")"
"$omma" models inspect "$models/face_landmark.tflite" --outputs conv2d_31,nope >/dev/null 2>"$work/err"
rc=$?
[ $rc -eq 2 ] || fail "inspect --outputs nope: exit $rc"
grep -q "'nope' is not an output of the model (its outputs: 'conv2d_21', 'conv2d_31')" "$work/err" ||
    fail "inspect --outputs nope: $(cat "$work/err")"
"$omma" models inspect "$models/face_landmark.tflite" --outputs conv2d_31, >/dev/null 2>"$work/err"
[ $? -eq 2 ] || fail "inspect --outputs with an empty name: exit code"
grep -q "none empty" "$work/err" || fail "inspect --outputs empty name: $(cat "$work/err")"

# A file that is no model: exit 1 and a message naming the file and the reason.
printf 'not a model at all' >"$work/bad.tflite"
"$omma" models inspect "$work/bad.tflite" >"$work/out" 2>"$work/err"
rc=$?
[ $rc -eq 1 ] || fail "bad file: exit $rc"
grep -q "omma: error: cannot inspect $work/bad.tflite: .*TFL3" "$work/err" || fail "bad file message: $(cat "$work/err")"
"$omma" models inspect "$work/missing.tflite" 2>"$work/err"
[ $? -eq 1 ] || fail "missing file: exit code"
grep -q "cannot open" "$work/err" || fail "missing file message: $(cat "$work/err")"
"$omma" models inspect 2>/dev/null
[ $? -eq 2 ] || fail "no file: exit code should be 2 (usage)"

# bench engine: one CPU run, table on stderr and one JSON line on stdout.
"$omma" bench engine --backend cpu --model "$models/face_detection_short_range.tflite" --batch 1,2 \
    --iters 2 --warmup 1 --json >"$work/bench" 2>"$work/table" || fail "bench exited $?: $(cat "$work/table")"
grep -q '"results":\[{"batch":1,"median_ms":[0-9.]*,"p99_ms":[0-9.]*,"min_ms":[0-9.]*,"images_per_s":[0-9.]*},{"batch":2,' "$work/bench" ||
    fail "bench JSON: $(cat "$work/bench")"
grep -q "median ms" "$work/table" || fail "bench table: $(cat "$work/table")"
# The CUDA backend: runs where there is a GPU, else exits 3 (no device).
"$omma" bench engine --backend gpu --model "$models/face_detection_short_range.tflite" --batch 1 \
    --iters 2 --warmup 1 >/dev/null 2>"$work/err"
rc=$?
if [ $rc -ne 0 ]; then
    [ $rc -eq 3 ] || fail "bench gpu: exit code $rc: $(cat "$work/err")"
fi
"$omma" bench engine --backend cpu --model "$models/face_detection_short_range.tflite" --batch 0 2>/dev/null
[ $? -eq 2 ] || fail "bench --batch 0: exit code"
# bench engine --outputs: only FaceMesh's face flag computed.
"$omma" bench engine --backend cpu --model "$models/face_landmark.tflite" --batch 1 --iters 1 --warmup 0 \
    --outputs conv2d_31 --json >"$work/bench" 2>"$work/table" || fail "bench --outputs exited $?: $(cat "$work/table")"
grep -q '"outputs":\["conv2d_31"\],' "$work/bench" || fail "bench --outputs JSON: $(cat "$work/bench")"
grep -q "outputs conv2d_31 only: 19 nodes (6 pruned)" "$work/table" || fail "bench --outputs table: $(cat "$work/table")"
"$omma" bench engine --backend cpu --model "$models/face_landmark.tflite" --batch 1 --iters 1 \
    --outputs conv2d_31,conv2d_31 >/dev/null 2>"$work/err"
[ $? -eq 2 ] || fail "bench --outputs twice: exit code"
grep -q "'conv2d_31' named twice" "$work/err" || fail "bench --outputs twice: $(cat "$work/err")"
echo "ok"
