#!/usr/bin/env bash
# The engine benchmarks on the GPU machine, with the PyTorch peer side by
# side in the same run: `omma bench engine` for the models (fp16 graphs
# on and off, fp32), then, when a peers folder is given, the peer's
# torch.compile figures (../shared/peers, copied into the repo because
# ../shared does not travel; the face models through its bench_peers.py,
# the others through scripts/peer_models.py, which adds the ops they need)
# and the table of ratios (ratio.txt: omma fp16 ms, torch.compile ms and
# their ratio at batch 1 and 128); then `omma bench pipeline` (the whole GPU
# face pipeline on 1080p NV12 cameras). Results as JSON lines and logs in
# OUTDIR.
#
# usage: scripts/gpu-bench.sh OUTDIR [PEERS_DIR]
#   BUILD_DIR  build folder with the omma binary (default build-gpu; built
#              here for sm_90 when missing)
#   MODELS     the engine's and peer's models: "face" (default: BlazeFace
#              short and full range, FaceMesh), "new" (BlazePose's detector,
#              landmark lite/full/heavy, the attention FaceMesh), "all", or
#              names of models/*.tflite without the extension
#   PARTS      which parts run (default "engine peers pipeline"; also
#              "runtime": omma bench runtime, "soak": its 5-minute soak,
#              "ui": the live view's cost, 1000 cameras with 0 and 10
#              simulated viewers in one run, docs/UI.md; "pose": face +
#              BlazePose full in each step, issue 24's 1000 cameras)
#   PEER_BATCHES  batch sizes of the peer's torch.compile part, e.g.
#              1,128,512 (its --batches option; default 1,128 for the
#              face models and the others). Results accumulate in OUTDIR: runs with a few MODELS
#              each (the 10-minute limit of a command) make one table.
set -u
OUT=${1:?usage: scripts/gpu-bench.sh OUTDIR [PEERS_DIR]}
PEERS=${2:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD_DIR:-$ROOT/build-gpu}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
failed=0
PARTS=${PARTS:-engine peers pipeline}
has() { case " $PARTS " in *" $1 "*) return 0 ;; esac; return 1; }

if [ ! -x "$BUILD/omma" ]; then
    cmake -S "$ROOT" -B "$BUILD" -DCMAKE_CUDA_ARCHITECTURES=90 >"$OUT/bench-build.log" 2>&1 &&
        cmake --build "$BUILD" -j "$(nproc)" --target omma_cli >>"$OUT/bench-build.log" 2>&1 ||
        { echo "gpu-bench: build failed (see bench-build.log)"; exit 1; }
fi

face_models="face_detection_short_range face_detection_full_range face_landmark"
new_models="pose_detection pose_landmark_lite pose_landmark_full pose_landmark_heavy"
new_models="$new_models face_landmark_with_attention"
case ${MODELS:-face} in
face) models=$face_models ;;
new) models=$new_models ;;
all) models="$face_models $new_models" ;;
*) models=$MODELS ;;
esac
models=$(echo $models)
for m in $models; do
    [ -f "$ROOT/models/$m.tflite" ] || { echo "gpu-bench: no model $ROOT/models/$m.tflite"; exit 2; }
done
# The models the peer's bench_peers.py covers, and the others.
peer_face= peer_new=
for m in $models; do
    case " $face_models " in
    *" $m "*) peer_face="$peer_face $m" ;;
    *) peer_new="${peer_new:+$peer_new,}$m" ;;
    esac
done

has engine && for cfg in "fp16 on" "fp16 off" "fp32 on"; do
    set -- $cfg
    for m in $models; do
        if ! timeout 120 "$BUILD/omma" bench engine --backend gpu --model "$ROOT/models/$m.tflite" \
            --precision "$1" --graphs "$2" --batch 1,8,32,128,512 --iters 100 --warmup 10 --json \
            >>"$OUT/engine.jsonl" 2>>"$OUT/engine.txt"; then
            echo "gpu-bench: omma bench engine $m $1 graphs $2 failed"
            failed=1
        fi
    done
done
has engine && cat "$OUT/engine.txt"

if has peers && [ -n "$PEERS" ]; then
    assets=$(mktemp -d)
    cp "$ROOT"/models/*.tflite "$ROOT/testdata/astronaut.png" "$ROOT/testdata/messi5.jpg" "$assets/"
    if [ -n "$peer_face" ]; then
        PYTHONUNBUFFERED=1 PEER_ASSETS=$assets timeout 480 python3 "$PEERS/bench_peers.py" \
            --part compile ${PEER_BATCHES:+--batches "$PEER_BATCHES"} --out "$OUT" \
            >"$OUT/peers-compile.log" 2>&1 ||
            { echo "gpu-bench: peer compile benchmark failed (see peers-compile.log)"; failed=1; }
        tail -n 20 "$OUT/peers-compile.log"
    fi
    # The other models: validated against the numpy reference on a real
    # input first, then torch.compile per batch, one JSON line per model.
    if [ -n "$peer_new" ]; then
        timeout 590 python3 "$ROOT/scripts/peer_models.py" --part compile --peers "$PEERS" \
            --assets "$assets" --models "$peer_new" --batches "${PEER_BATCHES:-1,128}" \
            >>"$OUT/peers_models.jsonl" 2>>"$OUT/peers-models.log" ||
            { echo "gpu-bench: peer_models.py failed (see peers-models.log)"; failed=1; }
        tail -n 30 "$OUT/peers-models.log"
    fi
    rm -rf "$assets"
    python3 "$ROOT/scripts/peer_models.py" --part table --out "$OUT" --models "${models// /,}" \
        >"$OUT/ratio.txt" || { echo "gpu-bench: ratio.txt lacks numbers"; failed=1; }
    cat "$OUT/ratio.txt"
fi

if has pipeline; then
    for args in "--cameras 16" "--cameras 64" "--cameras 128" "--cameras 256 --memory device" \
        "--cameras 16 --faces 4 --model full" "--cameras 64 --detect-every 0" \
        "--cameras 16 --face-mesh 478" "--cameras 128 --face-mesh 478" \
        "--cameras 128 --face-mesh 478 --head-pose"; do
        echo "== omma bench pipeline $args" >>"$OUT/pipeline.txt"
        if ! timeout 180 "$BUILD/omma" bench pipeline $args --steps 200 --warmup 20 --json \
            >>"$OUT/pipeline.jsonl" 2>>"$OUT/pipeline.txt"; then
            echo "gpu-bench: omma bench pipeline $args failed"
            failed=1
        fi
    done
    cat "$OUT/pipeline.txt"
fi

# The multi-camera runtime: camera counts at 1080p30 with frames in device
# memory and in pinned host memory (the bandwidth-limited count printed),
# graphs off for comparison, cameras driven in groups; RUNTIME_COUNTS_* pick
# the counts.
runtime_bench() { # LOG ARGS...
    local log=$1
    shift
    echo "== omma bench runtime $*" >>"$OUT/$log"
    if ! timeout 590 "$BUILD/omma" bench runtime "$@" --json >>"$OUT/runtime.jsonl" \
        2>>"$OUT/$log"; then
        echo "gpu-bench: omma bench runtime $* failed"
        failed=1
    fi
}
if has runtime; then
    runtime_bench runtime.txt --cameras "${RUNTIME_COUNTS_DEVICE:-2000,3000,3300,3600}"
    runtime_bench runtime.txt --cameras "${RUNTIME_COUNTS_GROUPED:-3000,3600}" --cameras-per-thread 32
    runtime_bench runtime.txt --cameras "${RUNTIME_COUNTS_EAGER:-3000}" --graphs off
    runtime_bench runtime.txt --cameras "${RUNTIME_COUNTS_PINNED:-500,520,560,600}" --pool pinned
    cat "$OUT/runtime.txt"
fi
# The live view's cost: 1000 cameras at 1080p30 without it, then with 10
# simulated browsers (--ui-viewers), each count twice in the same process.
if has ui; then
    runtime_bench ui.txt --cameras "${UI_COUNTS:-1000}" --ui-viewers 0,10 --duration 20
    runtime_bench ui.txt --cameras "${UI_COUNTS:-1000}" --ui-viewers 0,10 --duration 20
    cat "$OUT/ui.txt"
fi
# Face + pose (BlazePose full) in the GPU runtime's step: camera counts at
# 1080p30 with frames in device memory (issue 24's target: 1000 per H100).
if has pose; then
    runtime_bench pose.txt --cameras "${POSE_COUNTS:-500,1000,1200}" --pose full
    cat "$OUT/pose.txt"
fi
# The soak: 32 cameras at 1080p30 for 5 minutes, memory and threads each minute.
if has soak; then
    runtime_bench soak.txt --cameras 32 --warmup 5 --duration "${SOAK_SECONDS:-300}" \
        --report-every 60
    cat "$OUT/soak.txt"
fi
exit $failed
